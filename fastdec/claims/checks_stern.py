"""Stern et al. 2018 (blockwise parallel decoding): the hardware-independent claims, checked on the Blockwise
track's tables (cells ``"BLEU / mean block"``)."""
from __future__ import annotations

from typing import Dict, Tuple

import pandas as pd

from .claim import Audit, Claim, Figure, NotCheckable, cell_pair, falls, need, numeric

T1, APPROX, MINBLOCK, FIG4 = "blockwise_table1", "blockwise_approx", "blockwise_minblock", "blockwise_figure4"


def _column(df: pd.DataFrame, label: str, part: int) -> Dict[int, float]:
    """``{k: BLEU (part 0) or mean block (part 1)}`` of a column of cells, k > 1."""
    out = {}
    for k, cell in zip(need(df, "k", label)["k"], df[label]):
        v = cell_pair(cell)[part]
        if v is not None and str(k).isdigit() and int(k) > 1:
            out[int(k)] = v
    return out


def _blocks(df, label):
    return _column(df, label, 1)


def _bleu(df, label):
    return _column(df, label, 0)


def _common(*columns: Dict[int, float]):
    ks = sorted(set.intersection(*(set(c) for c in columns)))
    if not ks:
        raise NotCheckable("no block size with all the columns compared")
    return ks


def distillation_raises_blocks(df: pd.DataFrame) -> Tuple[str, bool]:
    reg, dis = _blocks(df, "Regular"), _blocks(df, "Distillation")
    ks = _common(reg, dis)
    return "; ".join(f"k={k}: {dis[k]:.2f} vs {reg[k]:.2f}" for k in ks), all(dis[k] > reg[k] for k in ks)


def both_gives_largest_blocks(df: pd.DataFrame) -> Tuple[str, bool]:
    blocks = {label: _blocks(df, label) for label in ("Regular", "Distillation", "Fine Tuning", "Both")}
    ks = _common(*blocks.values())
    nxt = {k: max(blocks[v][k] for v in blocks if v != "Both") for k in ks}
    return ("; ".join(f"k={k}: Both {blocks['Both'][k]:.2f}, next {nxt[k]:.2f}" for k in ks),
            all(blocks["Both"][k] >= nxt[k] for k in ks))


def fine_tuning_bleu_falls_with_k(df: pd.DataFrame) -> Tuple[str, bool]:
    ft = _bleu(df, "Fine Tuning")
    if len(ft) < 2:
        raise NotCheckable(f"{len(ft)} block size(s) with fine-tuned heads: a trend needs two or more")
    ks = sorted(ft)
    return "; ".join(f"k={k}: {ft[k]:.2f}" for k in ks), falls([ft[k] for k in ks])


def both_bleu_above_fine_tuning(df: pd.DataFrame) -> Tuple[str, bool]:
    ft, both = _bleu(df, "Fine Tuning"), _bleu(df, "Both")
    ks = _common(ft, both)
    return "; ".join(f"k={k}: {both[k]:.2f} vs {ft[k]:.2f}" for k in ks), all(both[k] > ft[k] for k in ks)


def _against_exact(df: pd.DataFrame, prefix: str, part: int, better) -> Tuple[str, bool]:
    """Every column named ``prefix...`` against ``exact`` at each k on the BLEU (``part`` 0) or the mean block (1):
    holds when ``better(theirs, exact)`` everywhere."""
    exact = _column(df, "exact", part)
    columns = [c for c in df.columns if c.startswith(prefix)]
    if not columns:
        raise NotCheckable(f"the table has no {prefix}... column")
    parts, ok = [], True
    for col in columns:
        theirs = _column(df, col, part)
        ks = _common(exact, theirs)
        parts += [f"{col} k={k}: {theirs[k]:.2f} vs exact {exact[k]:.2f}" for k in ks]
        ok = ok and all(better(theirs[k], exact[k]) for k in ks)
    return "; ".join(parts), ok


def top_t_raises_blocks(df: pd.DataFrame) -> Tuple[str, bool]:
    return _against_exact(df, "top-", 1, lambda theirs, exact: theirs > exact)


def min_block_costs_bleu(df: pd.DataFrame) -> Tuple[str, bool]:
    return _against_exact(df, "min block", 0, lambda theirs, exact: theirs < exact)


def speedup_below_mean_block(df: pd.DataFrame) -> Tuple[str, bool]:
    block, speed = numeric(df, "mean_block"), numeric(df, "speedup_vs_greedy")
    rows = [(k, b, s) for k, b, s in zip(need(df, "k")["k"], block, speed) if pd.notna(b) and pd.notna(s)]
    if not rows:
        raise NotCheckable("no block size with both a mean block and a speedup")
    return "; ".join(f"{k}: {s:.2f}x at block {b:.2f}" for k, b, s in rows), all(s < b for _, b, s in rows)


CLAIMS = [
    Claim("Stern", "Seq-KD raises the base model's agreement with the proposals: longer blocks on distilled data "
          "(frozen heads), at every k", "Stern Table 1 (newstest2013): Distillation above Regular at every k "
          "(k=8: 1.91 vs 1.76)", (T1,), distillation_raises_blocks),
    Claim("Stern", "fine-tuning + distillation ('Both') gives the largest blocks, at every k",
          "Stern Table 1: Both has the largest mean block at every k (k=8: 4.69)", (T1,), both_gives_largest_blocks),
    Claim("Stern", "with fine-tuned heads, BLEU falls as k grows",
          "Stern Table 1: Fine Tuning 25.74, 25.05, 24.69, 24.27, 23.51 BLEU for k = 2..10", (T1,),
          fine_tuning_bleu_falls_with_k),
    Claim("Stern", "distilled data lessens the fine-tuning BLEU drop: Both BLEU > Fine Tuning BLEU, at every k",
          "Stern Table 1 / §7.1: Both above Fine Tuning at every k (k=8: 26.11 vs 24.27)", (T1,),
          both_bleu_above_fine_tuning),
    Claim("Stern", "top-t approximate acceptance raises the mean accepted block",
          "Stern §7.1 (criterion §5.1): top-2 k=2: 1.92, k=10: 5.67 vs exact 1.88, 4.95", (APPROX,),
          top_t_raises_blocks),
    Claim("Stern", "a minimum block size costs BLEU", "Stern §7.1 (rule §5.3): minimum block size 2 or 3 gives "
          "much larger BLEU drops for minor gains in block size (no numbers)", (MINBLOCK,), min_block_costs_bleu),
    Claim("Stern", "the wall-clock speedup stays below the mean accepted block size",
          "Stern Figure 4 / §7.3: 3.3x wall-clock at mean block 4.7 (k=8); larger k gains iterations, not time",
          (FIG4,), speedup_below_mean_block),
]

T4 = "blockwise_table4"
HEADLINE = [
    Figure("Blockwise BLEU (test)", T4, ("system", r"blockwise k=\d+"), "bleu", "paper_bleu", "Stern Table 4"),
    Figure("mean accepted block", FIG4, ("k", r"k=\d+"), "mean_block", "paper_mean_block",
           "Stern Table 1, Both (dev)"),
    Figure("tokens / iteration", FIG4, ("k", r"k=\d+"), "tokens_per_iteration", "paper_mean_block",
           "Stern Table 1, Both (dev)"),
    Figure("wall-clock speedup vs greedy", FIG4, ("k", r"k=\d+"), "speedup_vs_greedy", "paper_speedup",
           "Stern Figure 4"),
]
AUDIT = [Audit(T4, "system", r"blockwise k=\d+")]
