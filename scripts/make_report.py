#!/usr/bin/env python
"""Write the Markdown report from the workflow's tables."""
import argparse
from pathlib import Path

from _common import run_cli


def main():
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--experiment", required=True)
    ap.add_argument("--tables", nargs="+", required=True)
    ap.add_argument("--output", required=True)
    a = ap.parse_args()
    from fastdec.report.markdown import build_report

    text = build_report(a.experiment, a.tables)
    Path(a.output).parent.mkdir(parents=True, exist_ok=True)
    Path(a.output).write_text(text)
    print(text, flush=True)


if __name__ == "__main__":
    run_cli(main)
