"""Hsu et al. 2020 (efficient inference for NMT): the hardware-independent claims, checked on the students track's
tables."""
from __future__ import annotations

from typing import Optional, Tuple

import pandas as pd

from .claim import Audit, Claim, Figure, NotCheckable, need, numeric

T1, T2, T3 = "students_table1", "students_table2", "students_table3"


def ffn_share_of_decoder(df: pd.DataFrame, paper_shape: Optional[Tuple[int, int]] = None) -> Tuple[str, bool]:
    """The share depends on the shape (width, FFN size, layers, vocabulary): it holds when the plugin's student built
    at the paper's shape (``paper_shape``: decoder and FFN parameters; default: built here) gives the paper's 33 %
    rounded; the run's own students (Table 1's rows with a decoder FFN) are shown beside it."""
    from fastdec.tracks.students.sizes import paper_shape_split

    rows = need(df, "model", "ffn", "decoder_params", "decoder_ffn_params")
    rows = rows[rows["ffn"].astype(bool)]
    decoder, ffn = paper_shape if paper_shape is not None else paper_shape_split()
    share = ffn / decoder
    ours = numeric(rows, "decoder_ffn_params") / numeric(rows, "decoder_params")
    run = ", ".join(f"{m}: {s:.0%}" for m, s in zip(rows["model"], ours) if pd.notna(s))
    return (f"the paper's shape (6-layer SSRU decoder, 512/2048, 32K vocabulary): {ffn / 1e6:.1f}M of "
            f"{decoder / 1e6:.1f}M = {share:.1%}; this run's students: {run or 'none with a decoder FFN'}",
            round(100 * share) == 33)


def light_decoders_faster_at_batch_1(df: pd.DataFrame) -> Tuple[str, bool]:
    """SSRU and AAN against the attention decoder with the same feed-forward setting (Table 1's models share their
    depth)."""
    rows = need(df, "model", "self_attn", "ffn", "wps_cpu_b1_beam")
    wps = numeric(rows, "wps_cpu_b1_beam")
    base = {bool(f): w for a, f, w in zip(rows["self_attn"], rows["ffn"], wps) if a == "attention"}
    pairs = [(m, w, base[bool(f)]) for m, a, f, w in zip(rows["model"], rows["self_attn"], rows["ffn"], wps)
             if a in ("ssru", "aan") and bool(f) in base]
    if not pairs:
        raise NotCheckable("no SSRU/AAN decoder beside an attention decoder with the same feed-forward setting")
    return "; ".join(f"{m}: {w:.0f} vs {b:.0f} wps" for m, w, b in pairs), all(w > b for _, w, b in pairs)


def _heads(cell) -> int:
    return sum(int(p) for p in str(cell).split("/") if p.strip().isdigit())


def pruning_removes_heads(df: pd.DataFrame) -> Tuple[str, bool]:
    rows = need(df, "model", "lambda", "heads")
    pruned = rows[numeric(rows, "lambda").notna()]
    full = rows[numeric(rows, "lambda").isna()]
    if pruned.empty or full.empty:
        raise NotCheckable("needs an unpruned and a pruned model")
    before = _heads(full["heads"].iloc[0])
    pairs = [(m, h) for m, h in zip(pruned["model"], pruned["heads"])]
    return (f"{full['model'].iloc[0]}: {full['heads'].iloc[0]}; " + "; ".join(f"{m}: {h}" for m, h in pairs),
            all(_heads(h) < before for _, h in pairs))


CLAIMS = [
    Claim("Hsu", "the feed-forward layers hold a third of the decoder's parameters",
          "Hsu §2.3: the feed-forward sub-layer is 33% of the 6-layer decoder's parameters", (T1,),
          ffn_share_of_decoder),
    Claim("Hsu", "SSRU/AAN decoders are faster than the self-attention decoder at batch 1",
          "Hsu Table 3: SSRU +12% wps on one CPU core at batch 1 (Table 1: AAN +18%, SSRU +25% on GPU)", (T1,),
          light_decoders_faster_at_batch_1),
    Claim("Hsu", "L0 pruning removes attention heads",
          "Hsu Table 2 (12-1, SSRU w/o ffn): 96/8/- heads -> 18/8/- after pruning", (T2,), pruning_removes_heads),
]

HEADLINE = [
    Figure("BLEU of the pruned student", T3, ("model", r".*pruned.*"), "bleu", 31.4,
           "Hsu Table 3, + Prune heads (newstest2015)"),
    Figure("CPU batch-1 speedup over the Transformer student, %", T3, ("model", r".*pruned.*"), "speedup_cpu_b1_pct",
           109, "Hsu Table 3 (over Transformer-base)"),
    Figure("CPU batch-1 speedup, SSRU w/o ffn, %", T3, ("model", r"ssru_noffn_\d+_\d+"), "speedup_cpu_b1_pct", 49,
           "Hsu Table 3, + Remove ffn"),
]
AUDIT = [Audit("students_gad_verifier", "model", r".*", "as GAD verifier")]
