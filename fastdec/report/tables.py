"""Helpers the tables of every track share: reading a CSV cell, and the paper-only rows a table shows below ours."""
from __future__ import annotations

import math
from typing import List, Optional

import pandas as pd

# the ``source`` column of a table with cited rows: ours, or a row the paper prints (no model of ours behind it)
PAPER_ONLY = "paper only (cited)"
OURS = "ours"


def to_float(v) -> Optional[float]:
    """A CSV cell as a float, or None when it is missing, NaN or not a number."""
    if v is None:
        return None
    try:
        f = float(v)
    except (TypeError, ValueError):
        return None
    return None if math.isnan(f) else f


def append_paper_only(df: pd.DataFrame, rows: List[dict]) -> pd.DataFrame:
    """``df`` (ours, marked ``source = ours``) followed by the paper-only ``rows`` (columns of ours left empty)."""
    ours = df.assign(source=OURS)
    cited = pd.DataFrame([{**r, "source": PAPER_ONLY} for r in rows])
    return pd.concat([ours, cited], ignore_index=True)
