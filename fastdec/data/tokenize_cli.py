"""``fastdec tokenize-text``: Moses-normalise and tokenise a text file (one sentence per line)."""
import argparse


def add_arguments(ap: argparse.ArgumentParser) -> None:
    ap.add_argument("--lang", required=True)
    ap.add_argument("--input", required=True)
    ap.add_argument("--output", required=True)


def main(a: argparse.Namespace) -> int:
    from fastdec.data.parallel import read_lines, write_lines
    from fastdec.text import tokenize

    lines = read_lines(a.input)
    out = []
    for i, line in enumerate(lines):
        out.append(tokenize(line, a.lang))
        if (i + 1) % 20000 == 0:
            print(f"  {i + 1}/{len(lines)} lines", flush=True)
    write_lines(a.output, out)
    print(f"tokenised {len(out)} lines of {a.input}", flush=True)
