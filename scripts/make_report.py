#!/usr/bin/env python
"""Write the report from the workflow's tables (CSV) and figures (PNG): Markdown, a self-contained HTML page beside
it, and ``items.json`` (what ``fastdec report`` reads to put several experiments on one page)."""
import argparse
from pathlib import Path

from _common import run_cli


def main():
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--experiment", required=True)
    ap.add_argument("--items", nargs="+", required=True)
    ap.add_argument("--captions", help="folder of <stem>.rst captions")
    ap.add_argument("--output", required=True, help="the Markdown report")
    ap.add_argument("--html", help="the HTML report")
    ap.add_argument("--results", help="results/<experiment>: writes report/items.json there")
    a = ap.parse_args()
    from fastdec.claims.report import build_html, build_report
    from fastdec.report.html import write_items

    out = Path(a.output)
    out.parent.mkdir(parents=True, exist_ok=True)
    text = build_report(a.experiment, a.items, a.captions, out_dir=str(out.parent))
    out.write_text(text)
    if a.html:
        Path(a.html).write_text(build_html({a.experiment: a.items}, a.captions), encoding="utf-8")
    if a.results:
        write_items(a.results, a.items)
    print(text, flush=True)


if __name__ == "__main__":
    run_cli(main)
