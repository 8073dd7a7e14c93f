"""The report's first screen, per paper: the headline figures each ``checks_*`` module declares (``HEADLINE``), the
claims of ``tables/orderings.csv``, the lossless audit of its exact methods (``AUDIT``) and the hardware its tables
were measured on -- read from a run's report items (CSV paths)."""
from __future__ import annotations

import re
from pathlib import Path
from typing import Dict, List, Sequence, Tuple

import pandas as pd

from fastdec.bench.results import lossless_pct
from fastdec.report.cards import Card

from . import checks_ge, checks_hsu, checks_stern, checks_xia
from .claim import COLUMNS, STUDIES, Audit, Figure, lossless_text

MODULES = {"Xia": checks_xia, "Ge": checks_ge, "Stern": checks_stern, "Hsu": checks_hsu}
# the tables each study's hardware line reads (their ``device`` / ``threads`` columns)
TABLE_PREFIX = {"Xia": "gad_", "Ge": "gec_", "Stern": "blockwise_", "Hsu": "students_"}


def _tables(items: Sequence[str]) -> Dict[str, pd.DataFrame]:
    return {Path(p).stem: pd.read_csv(p) for p in items if p.endswith(".csv")}


def _value(df: pd.DataFrame, column: str, i) -> object:
    return df.at[i, column] if column in df.columns and pd.notna(df.at[i, column]) else None


def _paper_columns(f: Figure) -> Tuple[str, ...]:
    """The paper's columns of ``f``, same setting first (a figure of another setting sits in ``paper_k25_…``)."""
    return (f.paper,) if isinstance(f.paper, str) else f.paper if isinstance(f.paper, tuple) else ()


def _paper_value(df: pd.DataFrame, f: Figure, i) -> Tuple[object, str]:
    for column in _paper_columns(f):
        value = _value(df, column, i)
        if value is not None:
            return value, column
    return None, ""


def figure_row(f: Figure, tables: Dict[str, pd.DataFrame]) -> dict:
    """The headline row of ``f`` on a run's tables (ours and the row "–" when the table or row is absent)."""
    columns = _paper_columns(f)
    out = {"figure": f.what, "row": "", "paper": None if columns else f.paper, "ours": None, "source": f.cite}
    df = tables.get(f.table)
    if df is None or f.row[0] not in df.columns:
        out["row"] = "(not in this run)"
        return out
    found = [i for i in df.index if re.fullmatch(f.row[1], str(df.at[i, f.row[0]])) and _value(df, f.ours, i) is not None]
    with_paper = [i for i in found if not columns or _paper_value(df, f, i)[0] is not None]
    if found:
        i = (with_paper or found)[-1]
        out.update(row=str(df.at[i, f.row[0]]), ours=_value(df, f.ours, i))
        if columns:
            out["paper"], column = _paper_value(df, f, i)
            setting = re.match(r"paper_(k\d+)_", column or "")
            if setting:  # the paper's figure is of another setting than our row's
                out["source"] = f"{f.cite}, the paper's {setting.group(1).replace('k', 'k = ')}"
    return out


def audit_lines(audits: List[Audit], tables: Dict[str, pd.DataFrame]) -> List[str]:
    out = []
    for a in audits:
        df = tables.get(a.table)
        if df is None or a.label not in df.columns or "identical_to_greedy_pct" not in df.columns:
            continue
        rows = df[df[a.label].astype(str).str.fullmatch(a.pattern)]
        labels = rows[a.label].astype(str)
        # rows sharing a label: the lowest
        worst = lossless_pct(rows).groupby(labels, sort=False).min().dropna()
        reference = pd.to_numeric(rows["identical_to_greedy_pct"], errors="coerce").groupby(labels, sort=False).min()
        out += [lossless_text(label + (' ' + a.name if a.name else ''), p, reference[label])
                for label, p in worst.items()]
    return out


def hardware_line(study: str, tables: Dict[str, pd.DataFrame], config_device: str = "") -> str:
    """The devices (and CPU threads) the study's tables name in rows of ours; else the run's config ``device``."""
    devices, threads = set(), set()
    for stem, df in tables.items():
        if stem.startswith(TABLE_PREFIX[study]) and "device" in df.columns:
            ours = df[df["device"].notna()]
            devices |= {str(v) for v in ours["device"]}
            if "threads" in df.columns:
                threads |= {int(v) for v in pd.to_numeric(ours["threads"], errors="coerce").dropna()}
    if not devices:
        return f"{config_device} (the run's config)" if config_device else "not recorded in its tables"
    line = ", ".join(sorted(devices))
    return line + (f", {'/'.join(map(str, sorted(threads)))} CPU thread(s)" if threads else "")


def drafting_line(study: str, tables: Dict[str, pd.DataFrame]) -> str:
    """The answer of the study's table of cost-aware draft lengths (``<prefix>policy``, fastdec.bench.policy_table);
    "" where the run has none."""
    from fastdec.bench.policy_table import summary_line

    df = tables.get(f"{TABLE_PREFIX[study]}policy")
    line = summary_line(df) if df is not None else None
    return f"{line} (table: {TABLE_PREFIX[study]}policy)" if line else ""


def _config_device(items: Sequence[str]) -> str:
    """The ``device`` of the run's config.yaml, in the folder all ``items`` share (results/<experiment>)."""
    import os

    import yaml

    if len(items) < 2:
        return ""
    path = os.path.join(os.path.commonpath([os.path.abspath(p) for p in items]), "config.yaml")
    if not os.path.isfile(path):
        return ""
    with open(path, encoding="utf-8") as f:
        return str((yaml.safe_load(f) or {}).get("device", ""))


def _claims(tables: Dict[str, pd.DataFrame]) -> pd.DataFrame:
    df = tables.get("orderings")
    if df is None or "status" not in df.columns:
        return pd.DataFrame(columns=COLUMNS)
    return df


def cards(items: Sequence[str]) -> List[Card]:
    """One card per paper for a run whose report items are ``items``."""
    tables = _tables(items)
    claims, device = _claims(tables), _config_device(items)
    out = []
    for study, module in MODULES.items():
        headline = pd.DataFrame([figure_row(f, tables) for f in module.HEADLINE])
        out.append(Card(STUDIES[study], headline, claims[claims["study"] == study].reset_index(drop=True),
                        audit_lines(module.AUDIT, tables), hardware_line(study, tables, device),
                        drafting_line(study, tables)))
    return out
