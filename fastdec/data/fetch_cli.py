"""``fastdec fetch-archive``: download one archive named in the config (paper-scale data)."""
import argparse


def add_arguments(ap: argparse.ArgumentParser) -> None:
    ap.add_argument("--url", required=True)
    ap.add_argument("--sha256")
    ap.add_argument("--output", required=True)
    ap.add_argument("--timeout", type=float, default=60)


def main(a: argparse.Namespace) -> int:
    from fastdec.data.download import download

    download(a.url, a.output, a.sha256, timeout=a.timeout, log=lambda m: print(m, flush=True))
