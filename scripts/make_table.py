#!/usr/bin/env python
"""Assemble a results table (CSV) from per-system JSON results, with the paper's numbers beside ours."""
import argparse

from _common import run_cli


def main():
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("kind", choices=["at"])
    ap.add_argument("--inputs", nargs="+", required=True)
    ap.add_argument("--output", required=True)
    a = ap.parse_args()
    from fastdec.report.tables import at_table

    df = at_table(a.inputs)
    df.to_csv(a.output, index=False)
    print(df.to_string(index=False), flush=True)


if __name__ == "__main__":
    run_cli(main)
