#!/usr/bin/env python
"""Write the Markdown report from the workflow's tables (CSV) and figures (PNG)."""
import argparse
from pathlib import Path

from _common import run_cli


def main():
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--experiment", required=True)
    ap.add_argument("--items", nargs="+", required=True)
    ap.add_argument("--captions", help="folder of <stem>.rst captions")
    ap.add_argument("--output", required=True)
    a = ap.parse_args()
    from fastdec.report.markdown import build_report

    out = Path(a.output)
    out.parent.mkdir(parents=True, exist_ok=True)
    text = build_report(a.experiment, a.items, a.captions, out_dir=str(out.parent))
    out.write_text(text)
    print(text, flush=True)


if __name__ == "__main__":
    run_cli(main)
