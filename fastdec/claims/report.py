"""The report with the claims: per experiment a summary card per paper first (:mod:`.summary`), then every figure,
then every table with the GPU rows recorded for it, the coverage of the papers last (fastdec.report renders; this
module decides what goes in)."""
from __future__ import annotations

from typing import Dict, Optional, Sequence

from fastdec.claims.coverage import coverage_html, coverage_markdown
from fastdec.claims.gpu import gpu_rows
from fastdec.claims.summary import cards
from fastdec.report import html, markdown
from fastdec.report.cards import cards_html, cards_markdown


def _summary_html(items: Sequence[str]) -> str:
    return cards_html(cards(items))


def _summary_markdown(items: Sequence[str]) -> str:
    return cards_markdown(cards(items))


def build_report(experiment: str, items: list, captions_dir: Optional[str] = None, out_dir: str = ".") -> str:
    """The Markdown report of one experiment."""
    return markdown.build_report(experiment, items, captions_dir, out_dir, extra_rows=gpu_rows,
                                 summary=_summary_markdown, appendix=coverage_markdown())


def build_html(experiments: Dict[str, Sequence[str]], captions_dir: Optional[str] = None) -> str:
    """One HTML page for one or several experiments."""
    appendix = f"<details><summary>Coverage of the papers (every table and figure)</summary>{coverage_html()}</details>"
    return html.build_html(experiments, captions_dir, extra_rows=gpu_rows, summary=_summary_html, appendix=appendix)
