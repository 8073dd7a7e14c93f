"""The HTML report: one self-contained page for one or several experiments (``results/<experiment>`` folders). Per
experiment it opens with a summary (one card per paper: headline figures, claims, lossless audit, hardware; built
by fastdec.claims.summary), then every figure inline, then every table with a delta column (ours minus the paper's)
beside each paper column that has a counterpart of ours and the scorers' signatures under it; the papers' coverage
comes last. A caption shows its first sentences, a wide table its key columns; the rest is one click away, and
displayed text has its BPE markers removed.

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
from typing import Callable, Dict, List, Optional, Sequence

import pandas as pd

from .display import counterpart, debpe, key_columns, split_caption
from .markdown import ExtraRows, _integral_columns, read_caption

__all__ = ["build_html", "counterpart", "item_html", "read_items", "section_html", "table_html", "with_deltas",
           "write_items"]
_SIGNATURES = ("signature", "bleu_signature", "m2_signature", "rouge_signature", "sari_signature")

_CSS = """
body { font-family: system-ui, sans-serif; margin: 1em auto; padding: 0 12px; max-width: 1400px; color: #222;
       box-sizing: border-box; }
table { border-collapse: collapse; font-size: 13px; margin: 0.5em 0 1em; }
th, td { border: 1px solid #ccc; padding: 3px 6px; text-align: right; }
th { background: #f3f3f3; } td:first-child, th:first-child { text-align: left; }
th.paper, td.paper { background: #f1f8f1; } th.delta, td.delta { background: #fdf6e3; }
tr.cited td { color: #666; font-style: italic; }
img { max-width: 100%; border: 1px solid #ddd; } .caption { max-width: 1100px; margin: 0.3em 0; }
code { font-size: 12px; } .wide { max-width: 100%; overflow-x: auto; } td { max-width: 40em; overflow-wrap: break-word; }
td.text { text-align: left; } details > summary { cursor: pointer; color: #345; } .figures img { max-width: 48%; vertical-align: top; }
"""


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


def _cell(v, integral: bool = False) -> str:
    if v is None or (isinstance(v, float) and pd.isna(v)):
        return "–"
    if isinstance(v, float) and integral:
        return str(int(v))
    if isinstance(v, float):
        return f"{v:.2f}" if v == 0 or abs(v) >= 0.01 else f"{v:.2g}"
    return html.escape(debpe(str(v)) if isinstance(v, str) else str(v))


def table_html(df: pd.DataFrame) -> str:
    cls = {c: ("paper" if c.startswith("paper") else "delta" if c.startswith("delta ") else "")
           + ("" if pd.api.types.is_numeric_dtype(df[c]) else " text") for c in df.columns}
    integral = _integral_columns(df)
    head = "".join(f'<th class="{cls[c]}">{html.escape(str(c))}</th>' for c in df.columns)
    rows = []
    for _, r in df.iterrows():
        cited = "source" in df.columns and str(r["source"]).startswith("paper only")
        cells = "".join(f'<td class="{cls[c]}">{_cell(r[c], c in integral)}</td>' for c in df.columns)
        rows.append(f'<tr class="{"cited" if cited else ""}">{cells}</tr>')
    return f"<div class='wide'><table><thead><tr>{head}</tr></thead><tbody>{''.join(rows)}</tbody></table></div>"


def capped_table_html(df: pd.DataFrame, table: str) -> str:
    """The key columns of ``df`` (:func:`fastdec.report.display.key_columns`); all of them behind <details>."""
    keep = key_columns(df, table)
    if len(keep) == len(df.columns):
        return table_html(df)
    return (table_html(df[keep]) + f"<details><summary>all {len(df.columns)} columns "
            f"({len(df.columns) - len(keep)} more)</summary>{table_html(df)}</details>")


def caption_html(note: str) -> str:
    lead, rest = split_caption(note)
    more = f"<details><summary>more</summary><p class='caption'>{html.escape(rest)}</p></details>" if rest else ""
    return f'<p class="caption">{html.escape(lead)}</p>{more}'


def section_html(title: str, text: str, df: pd.DataFrame) -> str:
    return f"<h2>{html.escape(title)}</h2><p>{html.escape(text)}</p>{table_html(df)}"


def item_html(path: str, captions_dir: Optional[str], experiment: Optional[str] = None,
              extra_rows: Optional[ExtraRows] = None) -> str:
    stem = Path(path).stem
    title, note = read_caption(captions_dir, stem)
    parts = [f"<h3>{html.escape(title)}</h3>", caption_html(note)]
    if path.endswith(".png"):
        data = base64.b64encode(Path(path).read_bytes()).decode("ascii")
        parts.append(f'<img alt="{html.escape(title)}" src="data:image/png;base64,{data}">')
    else:
        df = pd.read_csv(path)
        sigs = sorted({str(v) for c in _SIGNATURES if c in df.columns for v in df[c].dropna()})
        df = df.drop(columns=[c for c in _SIGNATURES if c in df.columns])
        parts.append(capped_table_html(with_deltas(df, stem), stem))
        parts += [f"<p>Signature: <code>{html.escape(s)}</code></p>" for s in sigs]
    gpu = extra_rows(stem, experiment) if extra_rows else None
    if gpu is not None:
        parts += [caption_html(gpu[0]), capped_table_html(gpu[1], stem)]
    parts.append(f"<p><small>Source: <code>{html.escape(path)}</code></small></p>")
    return "\n".join(parts)


def build_html(experiments: Dict[str, Sequence[str]], captions_dir: Optional[str] = None, preamble: str = "",
               extra_rows: Optional[ExtraRows] = None, summary: Optional[Callable[[Sequence[str]], str]] = None,
               appendix: str = "") -> str:
    """One page: ``experiments`` maps an experiment name to its items (CSV/PNG paths, report order); ``preamble``:
    HTML after the heading; ``summary``: an experiment's items -> the HTML opening its section; then its figures,
    then its tables; ``extra_rows``: more rows under a table (e.g. measured on a GPU); ``appendix``: HTML at the
    end."""
    now = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    names = ", ".join(experiments)
    body = [f"<h1>fastdec report: {html.escape(names)}</h1>",
            f"<p>Generated {now} on {platform.machine()} ({os.cpu_count()} CPUs). Paper columns are green, "
            "<i>delta</i> columns (ours minus the paper's) yellow; rows the paper cites are in italics.</p>",
            preamble]
    for name, items in experiments.items():
        body.append(f"<h2>Experiment <code>{html.escape(name)}</code></h2>")
        if summary is not None:
            body.append(summary(items))
        figures, tables = [p for p in items if p.endswith(".png")], [p for p in items if not p.endswith(".png")]
        for heading, group in (("Figures", figures), ("Tables", tables)):
            if group:
                body.append(f"<h2>{heading} <small>({html.escape(name)})</small></h2>")
                body += [item_html(p, captions_dir, name, extra_rows) for p in group]
    body.append(appendix)
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
