"""``fastdec report``: the report as one HTML page, from the tables and figures the workflow wrote.

Several experiments on one page, from the ``results/<experiment>/report/items.json`` each report rule wrote::

    fastdec report results/demo results/wmt14_ende --output report.html

One experiment from its tables (CSV) and figures (PNG), as the report rule runs it: the Markdown report, the HTML page
beside it and ``items.json`` (what the first form reads)::

    fastdec report --experiment demo --items results/demo/tables/*.csv ... --markdown report.md --output report.html \\
        --results results/demo
"""
from __future__ import annotations

import argparse
import os
from pathlib import Path


def add_arguments(ap: argparse.ArgumentParser) -> None:
    ap.add_argument("results", nargs="*", help="results/<experiment> folders (their report/items.json)")
    ap.add_argument("--experiment", help="with --items: the one experiment's name")
    ap.add_argument("--items", nargs="+", help="the one experiment's tables and figures, in report order")
    ap.add_argument("--captions", default=os.path.join(os.path.dirname(__file__), "..", "..", "workflow", "report"),
                    help="folder of the <stem>.rst captions (default: the repository's workflow/report)")
    ap.add_argument("--output", required=True, help="the HTML file to write")
    ap.add_argument("--markdown", help="with --items: the Markdown report to write")


def _one_experiment(a: argparse.Namespace) -> dict:
    """The report rule's outputs for ``--items``: Markdown, items.json under ``results``; the page's experiments."""
    from fastdec.claims.report import build_report
    from fastdec.report.html import write_items

    if a.markdown:
        out = Path(a.markdown)
        out.parent.mkdir(parents=True, exist_ok=True)
        text = build_report(a.experiment, a.items, a.captions, out_dir=str(out.parent))
        out.write_text(text)
        print(text, flush=True)
    for results in a.results:
        write_items(results, a.items)
    return {a.experiment: a.items}


def main(a: argparse.Namespace) -> int:
    from fastdec.claims.report import build_html
    from fastdec.report.html import read_items

    if a.items:
        if not a.experiment or len(a.results) > 1:
            raise ValueError("--items needs --experiment and at most one results folder (where items.json goes)")
        experiments = _one_experiment(a)
    elif a.results:
        experiments = {os.path.basename(os.path.normpath(r)): read_items(r) for r in a.results}
        if len(experiments) != len(a.results):
            raise ValueError("two results folders have the same experiment name; give each experiment once")
    else:
        raise ValueError("give results folders, or --experiment and --items")
    os.makedirs(os.path.dirname(os.path.abspath(a.output)), exist_ok=True)
    with open(a.output, "w", encoding="utf-8") as f:
        f.write(build_html(experiments, os.path.normpath(a.captions)))
    print(f"wrote {a.output}: {', '.join(f'{k} ({len(v)} items)' for k, v in experiments.items())}")
    return 0
