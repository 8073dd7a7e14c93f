"""The HTML report: one self-contained page for one or several experiments (``results/<experiment>`` folders), the
papers' coverage first, then every table with a delta column (ours minus the paper's) beside each paper column that
has a counterpart of ours, every figure inline, and the scorers' signatures under their tables.

The workflow's report rule writes ``report/report.html`` for its experiment and ``report/items.json`` (the tables and
figures in report order); ``fastdec report results/demo results/smoke ... --output report.html`` puts several
experiments on one page from those lists.
"""
from __future__ import annotations

import base64
import datetime
import html
import json
import os
import platform
from pathlib import Path
from typing import Dict, List, Optional, Sequence

import pandas as pd

from .markdown import ExtraRows, read_caption

# a paper column's counterpart of ours when it is not simply the name without "paper_"
_ALIASES = {"paper_speed": "speedup_vs_beam", "paper_tok": "tokens_per_iteration",
            "paper_iterations": "mean_iterations", "paper_identical_pct": "identical_to_greedy_pct",
            "paper_speedup": "speedup_vs_beam"}
# Stern et al. report speedups over greedy decoding
_TABLE_ALIASES = {"blockwise": {"paper_speedup": "speedup_vs_greedy"}}
_SIGNATURES = ("signature", "bleu_signature", "m2_signature", "rouge_signature", "sari_signature")

_CSS = """
body { font-family: system-ui, sans-serif; margin: 2em auto; max-width: 1400px; color: #222; }
table { border-collapse: collapse; font-size: 13px; margin: 0.5em 0 1em; }
th, td { border: 1px solid #ccc; padding: 3px 6px; text-align: right; }
th { background: #f3f3f3; } td:first-child, th:first-child { text-align: left; }
th.paper, td.paper { background: #f1f8f1; } th.delta, td.delta { background: #fdf6e3; }
tr.cited td { color: #666; font-style: italic; }
img { max-width: 100%; border: 1px solid #ddd; } .caption { max-width: 1100px; } code { font-size: 12px; }
"""


def counterpart(df: pd.DataFrame, paper_col: str, table: str) -> Optional[str]:
    """The column of ours a paper column is compared with, if the table has it."""
    ours = paper_col[len("paper_"):]
    if ours in df.columns:
        return ours
    alias = _TABLE_ALIASES.get(table.split("_")[0], {}).get(paper_col, _ALIASES.get(paper_col))
    return alias if alias in df.columns else None


def with_deltas(df: pd.DataFrame, table: str) -> pd.DataFrame:
    """``df`` with ``delta <X>`` = ours - ``paper_<X>`` right after each numeric paper column that has a counterpart."""
    out = df.copy()
    for col in [c for c in df.columns if c.startswith("paper_")]:
        ours = counterpart(df, col, table)
        if ours is None:
            continue
        a, b = pd.to_numeric(df[ours], errors="coerce"), pd.to_numeric(df[col], errors="coerce")
        if b.notna().any() and a.notna().any():
            out.insert(out.columns.get_loc(col) + 1, f"delta {col[len('paper_'):]}", (a - b).round(2))
    return out


def _cell(v) -> str:
    if v is None or (isinstance(v, float) and pd.isna(v)):
        return "–"
    if isinstance(v, float):
        return f"{v:.2f}" if v == 0 or abs(v) >= 0.01 else f"{v:.2g}"
    return html.escape(str(v))


def table_html(df: pd.DataFrame) -> str:
    cls = {c: "paper" if c.startswith("paper_") else "delta" if c.startswith("delta ") else "" for c in df.columns}
    head = "".join(f'<th class="{cls[c]}">{html.escape(str(c))}</th>' for c in df.columns)
    rows = []
    for _, r in df.iterrows():
        cited = "source" in df.columns and str(r["source"]).startswith("paper only")
        cells = "".join(f'<td class="{cls[c]}">{_cell(r[c])}</td>' for c in df.columns)
        rows.append(f'<tr class="{"cited" if cited else ""}">{cells}</tr>')
    return f"<table><thead><tr>{head}</tr></thead><tbody>{''.join(rows)}</tbody></table>"


def section_html(title: str, text: str, df: pd.DataFrame) -> str:
    return f"<h2>{html.escape(title)}</h2><p>{html.escape(text)}</p>{table_html(df)}"


def item_html(path: str, captions_dir: Optional[str], experiment: Optional[str] = None,
              extra_rows: Optional[ExtraRows] = None) -> str:
    stem = Path(path).stem
    title, note = read_caption(captions_dir, stem)
    parts = [f"<h3>{html.escape(title)}</h3>", f'<p class="caption">{html.escape(note)}</p>']
    if path.endswith(".png"):
        data = base64.b64encode(Path(path).read_bytes()).decode("ascii")
        parts.append(f'<img alt="{html.escape(title)}" src="data:image/png;base64,{data}">')
    else:
        df = pd.read_csv(path)
        sigs = sorted({str(v) for c in _SIGNATURES if c in df.columns for v in df[c].dropna()})
        df = df.drop(columns=[c for c in _SIGNATURES if c in df.columns])
        parts.append(table_html(with_deltas(df, stem)))
        parts += [f"<p>Signature: <code>{html.escape(s)}</code></p>" for s in sigs]
    gpu = extra_rows(stem, experiment) if extra_rows else None
    if gpu is not None:
        parts += [f'<p class="caption">{html.escape(gpu[0])}</p>', table_html(gpu[1])]
    parts.append(f"<p><small>Source: <code>{html.escape(path)}</code></small></p>")
    return "\n".join(parts)


def build_html(experiments: Dict[str, Sequence[str]], captions_dir: Optional[str] = None, preamble: str = "",
               extra_rows: Optional[ExtraRows] = None) -> str:
    """One page: ``experiments`` maps an experiment name to its items (CSV/PNG paths, report order); ``preamble``:
    HTML after the heading; ``extra_rows``: more rows under a table (e.g. measured on a GPU)."""
    now = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    names = ", ".join(experiments)
    body = [f"<h1>fastdec report: {html.escape(names)}</h1>",
            f"<p>Generated {now} on {platform.machine()} ({os.cpu_count()} CPUs). Paper columns are green, "
            "<i>delta</i> columns (ours minus the paper's) yellow; rows the paper cites are in italics.</p>",
            preamble]
    for name, items in experiments.items():
        body.append(f"<h2>Experiment <code>{html.escape(name)}</code></h2>")
        body += [item_html(p, captions_dir, name, extra_rows) for p in items]
    return (f"<!DOCTYPE html><html><head><meta charset='utf-8'><title>fastdec report: {html.escape(names)}</title>"
            f"<style>{_CSS}</style></head><body>{''.join(body)}</body></html>")


def write_items(results_dir: str, items: Sequence[str]) -> None:
    """``report/items.json``: the items relative to the experiment's folder (the page can be built from anywhere)."""
    path = os.path.join(results_dir, "report", "items.json")
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w", encoding="utf-8") as f:
        json.dump([os.path.relpath(p, results_dir) for p in items], f, indent=1)


def read_items(results_dir: str) -> List[str]:
    """The report items of one experiment, as its report rule listed them (``report/items.json``)."""
    path = os.path.join(results_dir, "report", "items.json")
    if not os.path.isfile(path):
        raise ValueError(f"{path} not found: run the workflow's report rule for that experiment first "
                         f"(snakemake ... {results_dir}/report/report.md)")
    with open(path, encoding="utf-8") as f:
        items = [os.path.join(results_dir, p) for p in json.load(f)]
    missing = [p for p in items if not os.path.isfile(p)]
    if missing:
        raise ValueError(f"{path} lists files that are gone: {', '.join(missing[:3])}; rerun the workflow")
    return items
