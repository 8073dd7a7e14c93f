#!/usr/bin/env python
"""Download one archive named in the config (paper-scale data)."""
import argparse

from _common import run_cli


def main():
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--url", required=True)
    ap.add_argument("--sha256")
    ap.add_argument("--output", required=True)
    ap.add_argument("--timeout", type=float, default=60)
    a = ap.parse_args()
    from fastdec.data.download import download

    download(a.url, a.output, a.sha256, timeout=a.timeout, log=lambda m: print(m, flush=True))


if __name__ == "__main__":
    run_cli(main)
