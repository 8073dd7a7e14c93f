"""Ge et al. 2022 (IAD): the hardware-independent claims, checked on the GEC track's tables and benchmark run."""
from __future__ import annotations

import math
from typing import Tuple

import pandas as pd

from .claim import Audit, Claim, Figure, NotCheckable, lossless_claim, need

T1 = "gec_table1"
# not a table of the report: the GEC benchmark's per-sentence edit ratio and times (orderings.py builds it)
SENTENCES = "gec_iad_sentences"
EXACT_IAD = r"iad.*"   # every IAD variant verifies against greedy decoding


def iad_speedup_falls_with_edits(df: pd.DataFrame) -> Tuple[str, bool]:
    """``df``: one row per sentence with ``edit_ratio``, ``greedy_time`` and ``iad_time``."""
    from fastdec.tracks.gec.analysis import spearman

    rows = need(df, "edit_ratio", "greedy_time", "iad_time")
    rows = rows[rows["iad_time"] > 0]
    if len(rows) < 3:
        raise NotCheckable(f"{len(rows)} sentence(s): a correlation needs three or more")
    rho = spearman(list(rows["edit_ratio"]), list(rows["greedy_time"] / rows["iad_time"]))
    return (f"Spearman rho(edit ratio, speedup) = {rho:.3f} over {len(rows)} sentences",
            not math.isnan(rho) and rho < 0)


AUDIT = [Audit(T1, "method", EXACT_IAD)]
CLAIMS = [
    Claim("Ge", "IAD's speedup over greedy decoding falls as the edit ratio rises",
          "Ge Figure 5 (CoNLL-13): sentences with fewer edits reach higher speedup", (SENTENCES,),
          iad_speedup_falls_with_edits),
    lossless_claim("Ge", "IAD", "Ge §3 and Table 1: IAD yields exactly greedy decoding's predictions (the same F0.5 "
                   "as beam=1)", AUDIT[0]),
]

HEADLINE = [
    Figure("IAD F0.5", T1, ("method", "iad"), "F0.5", "paper_F0.5", "Ge Table 1 (CoNLL-13)"),
    Figure("IAD tokens / iteration", T1, ("method", "iad"), "tokens_per_iteration", None, "not in the paper"),
    Figure("IAD speedup vs greedy", T1, ("method", "iad"), "speedup_vs_greedy", 7.4, "Ge Table 1: 397 s / 54 s"),
]
