"""How a paper figure sits beside ours in every GAD table (and the CNN-DM table).

One rule: the paper's figure goes in the ``paper_<col>`` column of a row only where the paper measured that row's
setting (block size k, GAD++ top-beta and tau, teacher, model size); otherwise the same-setting column stays empty
and the figure goes in a column named for the paper's setting (``paper_k25_bleu``: the paper's k = 25 figure beside
our k = 10 row).

Speed: the paper's speedups are over the beam search of the implementation it timed (fairseq). Ours beside them is
``speed_same_impl``, against the same implementation's own baseline: an engine row against the engine's greedy
decoding on the same verifier backend (at the same batch size), a fairseq or CTranslate2 row against that engine's
beam search; ``paper_speed_same_impl`` is the paper's figure over the matching baseline (over its greedy decoding for
rows we time against greedy). ``speedup_vs_beam`` (against fairseq beam search, whatever implementation decoded the
row) stays its own column: an engine row's ratio there holds the engine's reimplementation gain too.
"""
from __future__ import annotations

import math
import re
from typing import Dict, List, Optional

import pandas as pd

__all__ = ["paper_beside", "setting_tag", "setting_columns_together", "speed_same_impl", "paper_speed_same_impl",
           "method_setting"]

_TAGS = {"k": "k{}", "beta": "top{}", "tau": "tau{:g}"}


def setting_tag(setting: Dict[str, object]) -> str:
    """``{"k": 25, "beta": 5, "tau": 3.0}`` -> ``k25_top5_tau3``; other keys by their value (``ensemble``, ``big``)."""
    return "_".join(_TAGS[k].format(v) if k in _TAGS else str(v) for k, v in setting.items())


def paper_beside(values: Dict[str, object], ours: Dict[str, object], paper: Dict[str, object],
                 prefix: str = "paper") -> Dict[str, object]:
    """The paper's ``values`` of one row as table cells: ``<prefix>_<col>`` where ``ours`` has every setting the
    paper's figures were measured at (``paper``), else that column empty and ``<prefix>_<paper setting>_<col>``
    holding them (only the settings that differ name the column)."""
    differ = {k: v for k, v in paper.items() if ours.get(k) != v}
    cells = {f"{prefix}_{c}": (None if differ else v) for c, v in values.items()}
    if differ:
        tag = setting_tag(differ)
        cells.update({f"{prefix}_{tag}_{c}": v for c, v in values.items()})
    return cells


_SETTING = re.compile(r"k\d+|top\d+|tau[\d.]+|single|ensemble|base|big")


def _untagged(col: str, cols: List[str], prefix: str) -> Optional[str]:
    """The column of ``cols`` that ``col`` = ``<prefix>_<setting>_<x>`` holds another setting of (``<prefix>_<x>``;
    the longest setting tag that leaves one), or None."""
    if not col.startswith(prefix + "_"):
        return None
    parts = col[len(prefix) + 1:].split("_")
    n = 0
    while n < len(parts) - 1 and _SETTING.fullmatch(parts[n]):
        n += 1
    return next((f"{prefix}_{'_'.join(parts[i:])}" for i in range(n, 0, -1)
                 if f"{prefix}_{'_'.join(parts[i:])}" in cols), None)


def setting_columns_together(df: pd.DataFrame, prefix: str = "paper") -> pd.DataFrame:
    """``df`` with each ``<prefix>_<setting>_<col>`` column moved right after its ``<prefix>_<col>``, and our
    ``speed_same_impl`` right before the paper's speed."""
    cols = list(df.columns)
    tagged = {}
    for c in cols:
        base = _untagged(c, cols, prefix)
        if base:
            tagged.setdefault(base, []).append(c)
    moved = {t for ts in tagged.values() for t in ts}
    out: List[str] = []
    for c in cols:
        if c in moved or (c == "speed_same_impl" and "paper_speed" in cols):
            continue
        out += (["speed_same_impl"] if c == "paper_speed" and "speed_same_impl" in cols else []) + [c]
        out += tagged.get(c, [])
    return df[out]


def method_setting(m) -> Dict[str, object]:
    """The settings of an engine method the paper's figures are measured at: k for a drafting method, with top-beta
    and tau for GAD++."""
    if not m.k:
        return {}
    return {"k": int(m.k), **({"beta": int(m.beta), "tau": float(m.tau)} if m.beta > 1 else {})}


def _ms(run, label: str) -> Optional[float]:
    r = run.row(label)
    v = None if r is None else r["ms_per_sentence"]
    return None if v is None or (isinstance(v, float) and math.isnan(v)) else float(v)


def speed_same_impl(run, m) -> Optional[float]:
    """Our speedup of method ``m`` against its own implementation's baseline in ``run`` (module docstring)."""
    if m.kind in ("engine", "drafter"):
        v = run.row(m.label)["speedup_vs_greedy_same_batch"]
        return None if v is None or (isinstance(v, float) and math.isnan(v)) else round(float(v), 2)
    beam = next((b for b in run.methods() if b.kind == m.kind and b.beam > 1 and b.batch_size == m.batch_size
                 and b.precision == m.precision), None)
    mine, base = _ms(run, m.label), _ms(run, beam.label) if beam else None
    return round(base / mine, 2) if base and mine else None


def paper_speed_same_impl(m, paper_speed, paper_greedy_speed):
    """The paper's speed figure of ``m``'s row over the baseline ``speed_same_impl`` uses for ``m``: as printed
    (over beam search) for a beam-search engine's row, over the paper's greedy decoding for an engine row."""
    if paper_speed is None or isinstance(paper_speed, str):
        return None
    if m.kind in ("engine", "drafter"):
        return round(paper_speed / paper_greedy_speed, 2) if paper_greedy_speed else None
    return paper_speed
