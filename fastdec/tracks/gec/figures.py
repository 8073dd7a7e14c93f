"""IAD paper, Figure 5: per-sentence speedup of IAD over greedy decoding against the sentence's edit ratio."""
from __future__ import annotations

import math
from pathlib import Path
from typing import Sequence

from .analysis import SentenceRow, spearman

__all__ = ["figure5", "binned_means"]


def binned_means(rows: Sequence[SentenceRow], edges=(0.0, 1e-9, 0.05, 0.1, 0.2, 0.3, 0.5, float("inf"))):
    """[(lo, hi, n, mean speedup)] over edit-ratio bins (the first bin holds the unedited sentences)."""
    out = []
    for lo, hi in zip(edges[:-1], edges[1:]):
        xs = [r.speedup for r in rows if lo <= r.edit_ratio < hi and not math.isnan(r.speedup)]
        out.append((lo, hi, len(xs), sum(xs) / len(xs) if xs else math.nan))
    return out


def figure5(rows: Sequence[SentenceRow], path, *, title: str = "", dpi: int = 120) -> dict:
    """Write the scatter plot (PNG, matplotlib Agg) and return its summary numbers."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    pts = [(r.edit_ratio, r.speedup) for r in rows if not math.isnan(r.speedup)]
    xs, ys = [p[0] for p in pts], [p[1] for p in pts]
    rho = spearman(xs, ys)
    bins = binned_means(rows)
    fig, ax = plt.subplots(figsize=(6.4, 4.2))
    ax.scatter(xs, ys, s=9, alpha=0.45, color="#1f77b4", edgecolors="none", label="sentence")
    centers = [((lo + min(hi, max(xs, default=1.0))) / 2 if lo > 0 else 0.0, m) for lo, hi, n, m in bins
               if n and not math.isnan(m)]
    if centers:
        ax.plot([c[0] for c in centers], [c[1] for c in centers], "o-", color="#d62728", ms=4, lw=1.5,
                label="mean per edit-ratio bin")
    ax.axhline(1.0, color="gray", lw=0.8, ls="--")
    ax.set_xlabel("edit ratio (word edit distance / input words)")
    ax.set_ylabel("speedup of IAD over greedy (per sentence)")
    sub = f"{len(pts)} sentences, Spearman rho = {rho:.2f}" if not math.isnan(rho) else f"{len(pts)} sentences"
    ax.set_title((title + "\n" if title else "") + sub, fontsize=10)
    ax.legend(loc="upper right", fontsize=8)
    ax.grid(alpha=0.3)
    fig.tight_layout()
    Path(path).parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=dpi)
    plt.close(fig)
    unedited = [r.speedup for r in rows if r.edit_ratio == 0 and not math.isnan(r.speedup)]
    return {
        "sentences": len(pts),
        "spearman_rho": None if math.isnan(rho) else round(rho, 4),
        "mean_speedup": round(sum(ys) / len(ys), 3) if ys else None,
        "mean_speedup_unedited": round(sum(unedited) / len(unedited), 3) if unedited else None,
        "unedited_sentences": len(unedited),
        "bins": [{"lo": lo, "hi": None if math.isinf(hi) else hi, "n": n,
                  "mean_speedup": None if math.isnan(m) else round(m, 3)} for lo, hi, n, m in bins],
    }
