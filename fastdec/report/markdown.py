"""The Markdown report in the HTML report's order: a summary (fastdec.claims.summary), then one section per figure,
then one per table (the paper's figures in their own columns, text without BPE markers), then the coverage of the
papers (fastdec.claims.coverage).

Captions come from ``workflow/report/<stem>.rst`` (the same files `snakemake --report` shows): the first line is the
section title, the rest its explanation.
"""
from __future__ import annotations

import datetime
import os
import platform
from pathlib import Path

from typing import Callable, Optional, Sequence, Tuple

import pandas as pd

from .display import debpe

# stem, experiment -> (caption, rows) shown under a table, or None
ExtraRows = Callable[[str, Optional[str]], Optional[Tuple[str, pd.DataFrame]]]


def _fmt(v, integral: bool = False):
    if v is None or (isinstance(v, float) and pd.isna(v)):
        return "–"
    if isinstance(v, float):
        if integral:
            return str(int(v))
        # two decimals, but keep small non-zero values (e.g. seconds per token) readable
        return f"{v:.2f}" if v == 0 or abs(v) >= 0.01 else f"{v:.2g}"
    return debpe(str(v)).replace("|", "\\|")


def _integral_columns(df: pd.DataFrame) -> set:
    """Float columns whose values are all whole numbers: counts that pandas read as float because of gaps."""
    out = set()
    for c in df.columns:
        col = df[c].dropna()
        if df[c].dtype.kind == "f" and len(col) and (col == col.round()).all():
            out.add(c)
    return out


def df_to_markdown(df: pd.DataFrame) -> str:
    cols = list(df.columns)
    integral = _integral_columns(df)
    lines = ["| " + " | ".join(cols) + " |", "|" + "---|" * len(cols)]
    for _, row in df.iterrows():
        lines.append("| " + " | ".join(_fmt(row[c], c in integral) for c in cols) + " |")
    return "\n".join(lines)


def read_caption(captions_dir: str | None, stem: str) -> tuple[str, str]:
    path = Path(captions_dir or "", f"{stem}.rst")
    if not captions_dir or not path.exists():
        return stem, ""
    title, _, body = path.read_text().strip().partition("\n")
    return title.strip(), " ".join(body.split())


def build_report(experiment: str, items: list[str], captions_dir: str | None = None, out_dir: str = ".",
                 preamble: str = "", extra_rows: Optional[ExtraRows] = None,
                 summary: Optional[Callable[[Sequence[str]], str]] = None, appendix: str = "") -> str:
    """``preamble``: Markdown after the heading; ``summary``: the items -> the Markdown before the figures;
    ``extra_rows``: more rows under a table (e.g. measured on a GPU); ``appendix``: Markdown at the end."""
    now = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    parts = [f"# fastdec report: `{experiment}`", "",
             f"Generated {now} on {platform.machine()} ({os.cpu_count()} CPUs).", "", preamble]
    if summary is not None:
        parts += ["## Summary", "", summary(items), ""]
    for path in [p for p in items if p.endswith(".png")] + [p for p in items if not p.endswith(".png")]:
        stem = Path(path).stem
        title, note = read_caption(captions_dir, stem)
        parts += [f"## {title}", "", note, ""]
        if path.endswith(".png"):
            parts += [f"![{title}]({os.path.relpath(path, out_dir)})", ""]
        else:
            df = pd.read_csv(path)
            signature = None
            if "signature" in df.columns:
                sigs = df["signature"].dropna()
                signature = sigs.iloc[0] if len(sigs) else None
                df = df.drop(columns=["signature"])
            parts += [df_to_markdown(df), ""]
            if signature:
                parts += [f"sacreBLEU signature: `{signature}`", ""]
        gpu = extra_rows(stem, experiment) if extra_rows else None
        if gpu is not None:
            parts += [gpu[0], "", df_to_markdown(gpu[1]), ""]
        parts += [f"Source: `{path}`", ""]
    parts.append(appendix)
    return "\n".join(parts)
