"""``fastdec report``: one HTML page for one or several experiments, from the tables and figures their workflow runs
wrote (each ``results/<experiment>/report/items.json``, written by the report rule).

Example::

    fastdec report results/demo results/wmt14_ende --output report.html
"""
from __future__ import annotations

import argparse
import os


def add_arguments(ap: argparse.ArgumentParser) -> None:
    ap.add_argument("results", nargs="+", help="results/<experiment> folders")
    ap.add_argument("--captions", default=os.path.join(os.path.dirname(__file__), "..", "..", "workflow", "report"),
                    help="folder of the <stem>.rst captions (default: the repository's workflow/report)")
    ap.add_argument("--output", required=True, help="the HTML file to write")


def main(a: argparse.Namespace) -> int:
    from fastdec.claims.report import build_html
    from fastdec.report.html import read_items

    experiments = {os.path.basename(os.path.normpath(r)): read_items(r) for r in a.results}
    if len(experiments) != len(a.results):
        raise ValueError("two results folders have the same experiment name; give each experiment once")
    os.makedirs(os.path.dirname(os.path.abspath(a.output)), exist_ok=True)
    with open(a.output, "w", encoding="utf-8") as f:
        f.write(build_html(experiments, os.path.normpath(a.captions)))
    print(f"wrote {a.output}: {', '.join(f'{k} ({len(v)} items)' for k, v in experiments.items())}")
    return 0
