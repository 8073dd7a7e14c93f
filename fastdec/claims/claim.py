"""One claim of a paper checked on a run's tables: what the paper states, the tables it reads, and the check that
turns those tables into what this run shows and whether the claim holds.

A claim whose table the run does not write (its track off, a paper-scale table) is *not run*; one whose table lacks
the rows or columns it needs is *not checkable*; neither counts as failed.
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Callable, Dict, List, Optional, Tuple

import pandas as pd

from fastdec.bench.results import lossless_pct

HOLDS, FAILS, NOT_RUN, NOT_CHECKABLE = "holds", "fails", "not run", "not checkable"
STATUSES = (HOLDS, FAILS, NOT_RUN, NOT_CHECKABLE)
COLUMNS = ["study", "claim", "paper", "ours", "status"]
# the paper each study name stands for
STUDIES = {"Xia": "Xia et al. 2022 (GAD)", "Ge": "Ge et al. 2022 (IAD + GAD)",
           "Stern": "Stern et al. 2018 (Blockwise)", "Hsu": "Hsu et al. 2020 (efficient students)"}


class NotCheckable(Exception):
    """The table is there but lacks the rows or columns the claim needs (the message says which)."""


# a check: the claim's tables, in order -> (what this run shows, whether the claim holds)
Check = Callable[..., Tuple[str, bool]]


@dataclass(frozen=True)
class Claim:
    study: str     # a key of STUDIES
    claim: str     # the statement, in the paper's terms
    paper: str     # where the paper states it and its numbers
    tables: Tuple[str, ...]  # the stems of the tables it reads
    check: Check

    def __post_init__(self):
        assert self.study in STUDIES, self.study

    def row(self, tables: Dict[str, pd.DataFrame]) -> dict:
        """The claim's row of ``tables/orderings.csv`` on a run whose tables (by stem) are ``tables``."""
        missing = [t for t in self.tables if t not in tables]
        if missing:
            ours, status = f"not in this run: {', '.join(missing)}", NOT_RUN
        else:
            try:
                ours, holds = self.check(*(tables[t] for t in self.tables))
                status = HOLDS if holds else FAILS
            except NotCheckable as e:
                ours, status = str(e), NOT_CHECKABLE
        return {"study": self.study, "claim": self.claim, "paper": self.paper, "ours": ours, "status": status}


def need(df: pd.DataFrame, *columns: str) -> pd.DataFrame:
    """``df``, or NotCheckable naming the first of ``columns`` it lacks."""
    for c in columns:
        if c not in df.columns:
            raise NotCheckable(f"the table has no column {c!r}")
    return df


def numeric(df: pd.DataFrame, column: str) -> pd.Series:
    return pd.to_numeric(need(df, column)[column], errors="coerce")


def rows_matching(df: pd.DataFrame, column: str, pattern: str) -> pd.DataFrame:
    """The rows whose ``column`` fully matches the regular expression ``pattern``."""
    return df[need(df, column)[column].astype(str).str.fullmatch(pattern)]


def lossless_text(label: str, own: float, reference: float) -> str:
    """``"label: own%"``, and the share identical to the PyTorch reference's greedy where that differs."""
    differs = reference == reference and abs(reference - own) >= 0.05
    return f"{label}: {own:.1f}%" + (f" ({reference:.1f}% of the PyTorch greedy's)" if differs else "")


def identical_to_greedy(df: pd.DataFrame, label: str, pattern: str) -> Tuple[str, bool]:
    """The exact methods' rows (``label`` fully matching ``pattern``): each identical to its own verifier's greedy
    output on every sentence (:func:`lossless_pct` = 100)."""
    rows = rows_matching(df, label, pattern)
    pct = lossless_pct(need(rows, "identical_to_greedy_pct"))
    if pct.notna().sum() == 0:
        raise NotCheckable(f"no row whose {label} matches {pattern}")
    reference = numeric(rows, "identical_to_greedy_pct")
    return (", ".join(lossless_text(m, p, r) for m, p, r in zip(rows[label], pct, reference)),
            bool((pct == 100).all()))


def cell_pair(cell) -> Tuple[Optional[float], Optional[float]]:
    """``(BLEU, mean block)`` of a Blockwise cell ``"BLEU / block"`` or ``"BLEU / block (x%)"``; None where absent."""
    m = re.match(r"\s*([-\d.]+)\s*/\s*([-\d.]+)", cell) if isinstance(cell, str) else None
    return (float(m.group(1)), float(m.group(2))) if m else (None, None)


def rises(values: List[float]) -> bool:
    """Never falls and ends above where it starts."""
    return len(values) >= 2 and all(b >= a for a, b in zip(values, values[1:])) and values[-1] > values[0]


def falls(values: List[float]) -> bool:
    return rises([-v for v in values])


def run_claims(claims: List[Claim], tables: Dict[str, pd.DataFrame]) -> pd.DataFrame:
    return pd.DataFrame([c.row(tables) for c in claims], columns=COLUMNS)


@dataclass(frozen=True)
class Figure:
    """A headline figure of a paper's card: ``ours`` in the last row of ``table`` whose ``row[0]`` column fully
    matches ``row[1]`` and that has the value (and the paper's, when ``paper`` names columns); ``paper``: the
    paper's column in that row (or a tuple: the same setting's column first, then another setting's such as
    ``paper_k25_bleu``, which the card names), or its number (None: the paper gives none); ``cite``: where the paper
    states it."""
    what: str
    table: str
    row: Tuple[str, str]
    ours: str
    paper: object
    cite: str


@dataclass(frozen=True)
class Audit:
    """The lossless methods of a table: the rows whose ``label`` column fully matches ``pattern`` must decode
    exactly what greedy decoding of their own verifier does (:func:`lossless_pct` = 100)."""
    table: str
    label: str
    pattern: str
    name: str = ""   # what the rows are, when the label alone does not say


def lossless_claim(study: str, method: str, paper: str, audit: Audit) -> Claim:
    """The claim that ``method`` (the rows ``audit`` names) decodes exactly what greedy decoding does."""
    def check(df: pd.DataFrame) -> Tuple[str, bool]:
        return identical_to_greedy(df, audit.label, audit.pattern)

    return Claim(study, f"{method}'s output is identical to greedy decoding's", paper, (audit.table,), check)
