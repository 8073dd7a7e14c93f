#!/usr/bin/env python
"""Moses-normalise and tokenise a text file (one sentence per line)."""
import argparse

from _common import run_cli


def main():
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--lang", required=True)
    ap.add_argument("--input", required=True)
    ap.add_argument("--output", required=True)
    a = ap.parse_args()
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


if __name__ == "__main__":
    run_cli(main)
