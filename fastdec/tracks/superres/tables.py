"""Stern et al. 2018 Table 2 and Figure 4's super-resolution series from the track's benchmark runs.

* :func:`table2` -- mean accepted block size per k (rows; k = 1 is greedy decoding) and column: Regular (frozen base,
  exact), Approximate (frozen base, distance-based selection within ε), Fine Tuning (fine-tuned, exact), Both
  (fine-tuned, within ε), the paper's value beside each; per column the share of patches identical to greedy
  decoding (100 % for the exact columns: lossless) and the mean absolute pixel error against the true
  high-resolution patch (greedy decoding's error on the k = 1 row).
* :func:`figure4_table` / :func:`plot_figure4` -- wall-clock speedup against greedy decoding of the same model and
  run, against mean block size, for the "Both" column (the paper: 4.0x at k = 6, block 5.3).
"""
from __future__ import annotations

from typing import Callable, Dict, List, Optional, Sequence

import numpy as np
import pandas as pd

from fastdec.tracks.superres.paper import STERN_FIGURE4_SUPERRES_PEAK, STERN_TABLE2, TABLE2_COLUMNS

__all__ = ["pixel_error", "table2", "figure4_table", "plot_figure4"]


def pixel_error(hyps: Sequence[str], truth: Sequence[str], pixels: int) -> float:
    """Mean absolute intensity error of hypotheses against the true patches, over ``pixels`` per patch (a missing
    or non-numeric pixel counts as 255 off)."""
    total = 0.0
    for h, t in zip(hyps, truth):
        true = np.array([int(x) for x in t.split()][:pixels], dtype=np.int64)
        got = np.full(pixels, -10_000, dtype=np.int64)
        vals = [int(x) if x.isdigit() else -10_000 for x in h.split()[:pixels]]
        got[: len(vals)] = vals
        total += float(np.where(got < 0, 255, np.abs(got - true)).mean())
    return total / max(1, len(hyps))


Label = Callable[[int, int], str]  # (k, epsilon) -> the row's label (k = 1: greedy decoding)


def table2(runs: Dict[str, "object"], block_sizes: Sequence[int], epsilon: int, truth: Sequence[str],
           pixels: int, label: Label) -> pd.DataFrame:
    """``runs``: variant (regular / finetune) -> its benchmark :class:`~fastdec.bench.results.Run`. Identical: to
    greedy decoding on the same verifier backend."""
    rows: List[dict] = []
    for k in [1, *sorted(block_sizes)]:
        row: Dict[str, object] = {"k": k}
        for col, (variant, eps) in TABLE2_COLUMNS.items():
            run = runs.get(variant)
            eps = epsilon if eps is None else eps
            name = label(k, eps)
            r = run.row(name) if run is not None else None
            row[col] = None if r is None else round(float(r["mean_block"]) if k > 1 else 1.0, 2)
            row[f"paper_{col}"] = STERN_TABLE2.get(k, {}).get(col)
            if r is not None:
                n = int(r["n_sentences"])
                same = float(r["identical_to_backend_greedy"])
                row[f"{col}_identical_pct"] = round(100.0 * same / n, 1) if n else None
                row[f"{col}_pixel_error"] = round(pixel_error(run.hyps(name), truth[:n], pixels), 2)
        rows.append(row)
    return pd.DataFrame(rows)


def figure4_table(run, block_sizes: Sequence[int], epsilon: int, label: Label) -> pd.DataFrame:
    """The "Both" column's points: k, mean block size, wall-clock speedup against greedy decoding on the same verifier
    backend in the same run."""
    rows = []
    for k in sorted(block_sizes):
        r = run.row(label(k, epsilon)) if run is not None else None
        if r is None:
            continue
        rows.append({"k": k, "mean_block": round(float(r["mean_block"]), 2),
                     "speedup_vs_greedy": round(float(r["speedup_vs_greedy_same_batch"]), 2),
                     "ms_per_patch": round(float(r["ms_per_sentence"]), 2)})
    out = pd.DataFrame(rows, columns=["k", "mean_block", "speedup_vs_greedy", "ms_per_patch"])
    peak = STERN_FIGURE4_SUPERRES_PEAK
    out["paper_note"] = ""
    if len(out):
        out.loc[out.index[0], "paper_note"] = (f"paper (CelebA, P100): {peak['speedup']}x at k = {peak['k']}, mean "
                                               f"block {peak['mean_block']}")
    return out


def plot_figure4(df: pd.DataFrame, output: str, title: Optional[str] = "") -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(5, 4))
    ax.plot(df["mean_block"], df["speedup_vs_greedy"], "o-", label="ours (fine-tuned, within ε)")
    for _, r in df.iterrows():
        ax.annotate(f"k={int(r['k'])}", (r["mean_block"], r["speedup_vs_greedy"]), textcoords="offset points",
                    xytext=(4, 4), fontsize=8)
    peak = STERN_FIGURE4_SUPERRES_PEAK
    ax.plot([peak["mean_block"]], [peak["speedup"]], "s", color="gray", label=f"paper peak (k={peak['k']}, P100)")
    lim = max([1.0, peak["mean_block"], *df["mean_block"].tolist()]) + 0.5
    ax.plot([1, lim], [1, lim], ":", color="lightgray", label="speedup = mean block")
    ax.set_xlabel("mean accepted block size")
    ax.set_ylabel("wall-clock speedup over greedy")
    ax.set_title(f"{title}: super-resolution, Figure 4" if title else "super-resolution, Figure 4", fontsize=9)
    ax.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(output, dpi=120)
    plt.close(fig)
