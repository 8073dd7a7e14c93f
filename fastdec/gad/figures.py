"""GAD paper, Figure 4: distribution of the per-sentence speedup over beam search (matplotlib, Agg backend)."""
from __future__ import annotations

from typing import Dict

import pandas as pd

__all__ = ["per_sentence_speedup", "speedup_histogram"]


def per_sentence_speedup(sentences: pd.DataFrame, system: str, baseline: str = "at_b5") -> pd.Series:
    """``time(baseline) / time(system)`` per sentence id (both decoded in the same interleaved run)."""
    t = sentences.pivot_table(index="id", columns="system", values="time", aggfunc="min")
    for name in (system, baseline):
        if name not in t.columns:
            raise ValueError(f"the run has no system {name!r} (has {sorted(t.columns)})")
    if (t[system] <= 0).any():
        raise ValueError(f"{system}: non-positive sentence time")
    return (t[baseline] / t[system]).rename("speedup")


def speedup_histogram(speedup: pd.Series, out_png: str, *, title: str, bin_width: float = 0.5) -> Dict:
    """Histogram of per-sentence speedups (bins of ``bin_width``), like Figure 4; returns summary statistics."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import numpy as np

    if speedup.empty:
        raise ValueError("no sentences to plot")
    hi = max(float(speedup.max()), 1.0)
    bins = np.arange(0.0, hi + bin_width, bin_width)
    fig, ax = plt.subplots(figsize=(6.4, 3.6), dpi=120)
    ax.hist(speedup.values, bins=bins, color="#4878cf", edgecolor="white")
    ax.axvline(1.0, color="grey", linestyle=":", linewidth=1)
    med = float(speedup.median())
    ax.axvline(med, color="#d65f5f", linestyle="--", linewidth=1.2, label=f"median {med:.2f}x")
    ax.set_xlabel("speedup over beam search (b=5), per sentence")
    ax.set_ylabel("sentences")
    ax.set_title(title, fontsize=10)
    ax.legend(frameon=False)
    fig.tight_layout()
    fig.savefig(out_png)
    plt.close(fig)
    q = speedup.quantile([0.1, 0.5, 0.9])
    return {"sentences": int(speedup.size), "mean": float(speedup.mean()), "median": med,
            "p10": float(q.loc[0.1]), "p90": float(q.loc[0.9]), "min": float(speedup.min()),
            "max": float(speedup.max()), "share_3_to_6": float(((speedup >= 3) & (speedup <= 6)).mean())}
