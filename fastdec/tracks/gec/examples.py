"""IAD paper, Table 2: example sentences, their speedup over greedy and how IAD decoded them.

The output column shows one bracket per decoding iteration, as the paper does:

* ``[tokens]ₙ`` -- iteration ``n`` accepted at least one drafted token: the block was decoded **in parallel**
  (one verifier pass over a draft copied from the input);
* ``⟨token⟩ₙ`` -- iteration ``n`` accepted no draft token: the token was decoded **one by one**, as greedy
  decoding would (the paper's red blocks: re-decoding after a bifurcation, or no unique input match).

Blocks are in BPE tokens (a word split over two blocks keeps its ``@@`` marker at the block end).

Which sentences: for each of the paper's seven examples we take, among our sentences not taken yet, the one
with the nearest edit ratio, then the nearest input length in words -- so the rows span the same range of
edit ratios as the paper's and the paper's speedup stands beside a comparable sentence of ours.
"""
from __future__ import annotations

import math
from typing import Sequence

import pandas as pd

from fastdec.tracks.gec.paper import IAD_TABLE2

from .analysis import SentenceRow

__all__ = ["render_blocks", "select_examples", "table2", "SUBSCRIPTS"]

SUBSCRIPTS = str.maketrans("0123456789", "₀₁₂₃₄₅₆₇₈₉")


def _join(tokens: Sequence[str]) -> str:
    s = " ".join(tokens)
    return s.replace("@@ ", "")


def render_blocks(blocks: Sequence[dict], max_blocks: int = 60) -> str:
    """``[a b]₀ ⟨c⟩₁ [d e f]₂`` (see the module docstring); after ``max_blocks`` blocks: ``… (+N blocks)``."""
    parts = []
    for k, b in enumerate(blocks):
        if k == max_blocks:
            parts.append(f"… (+{len(blocks) - max_blocks} blocks)")
            break
        sub = str(k).translate(SUBSCRIPTS)
        text = b.get("text") or _join(b["tokens"])  # "text": decoded by the BPE's own decoder (GPT-2)
        parts.append(f"[{text}]{sub}" if b["parallel"] else f"⟨{text}⟩{sub}")
    return " ".join(parts)


def select_examples(rows: Sequence[SentenceRow], targets: Sequence[dict] = IAD_TABLE2) -> list[tuple[dict, SentenceRow]]:
    """Pair each paper example with the nearest (edit ratio, then length) sentence of ours; each used once."""
    pool = [r for r in rows if r.blocks is not None and r.src_words > 0 and not math.isnan(r.speedup)]
    used: set[int] = set()
    out = []
    for t in targets:
        cands = [r for r in pool if r.id not in used]
        if not cands:
            break
        best = min(cands, key=lambda r: (round(abs(r.edit_ratio - t["edit_ratio"]), 2),
                                         abs(r.src_words - t["input_words"]), r.id))
        used.add(best.id)
        out.append((t, best))
    return out


def table2(rows: Sequence[SentenceRow], targets: Sequence[dict] = IAD_TABLE2) -> pd.DataFrame:
    recs = []
    for t, r in select_examples(rows, targets):
        par = sum(len(b["tokens"]) for b in r.blocks if b["parallel"])
        tot = sum(len(b["tokens"]) for b in r.blocks)
        recs.append({
            "speedup": round(r.speedup, 2),
            "edit_ratio": round(r.edit_ratio, 2),
            "paper_speedup": t["speedup"],
            "paper_edit_ratio": t["edit_ratio"],
            "sentence": r.id + 1,
            "input_words": r.src_words,
            "iterations": r.iterations,
            "parallel_tokens_pct": round(100.0 * par / tot, 1) if tot else None,
            "input": r.source,
            "output": render_blocks(r.blocks),
        })
    cols = ["speedup", "edit_ratio", "paper_speedup", "paper_edit_ratio", "sentence", "input_words", "iterations",
            "parallel_tokens_pct", "input", "output"]
    return pd.DataFrame(recs, columns=cols)
