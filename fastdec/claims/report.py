"""The report with the claims: the coverage of the papers first, then every table and figure with the GPU rows
recorded for it (fastdec.report renders; this module decides what goes in)."""
from __future__ import annotations

from typing import Dict, Optional, Sequence

from fastdec.claims.coverage import coverage_html, coverage_markdown
from fastdec.claims.gpu import gpu_rows
from fastdec.report import html, markdown


def build_report(experiment: str, items: list, captions_dir: Optional[str] = None, out_dir: str = ".") -> str:
    """The Markdown report of one experiment."""
    return markdown.build_report(experiment, items, captions_dir, out_dir, preamble=coverage_markdown(),
                                 extra_rows=gpu_rows)


def build_html(experiments: Dict[str, Sequence[str]], captions_dir: Optional[str] = None) -> str:
    """One HTML page for one or several experiments."""
    return html.build_html(experiments, captions_dir, preamble=coverage_html(), extra_rows=gpu_rows)
