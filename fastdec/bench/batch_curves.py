"""Batch-size curves: Figure 6 (IAD) and Figure 7 (GAD/GAD++) of Ge et al. 2022, and Blockwise decoding's
(beyond Stern et al.), each from one benchmark run.

A track lists its methods at every batch size of its config (:func:`at_batch_sizes`: ``iad`` -> ``iad``,
``iad:batch=2`` ...) in one ``fastdec bench`` run; :func:`batch_table` reads the run back as one row per (method,
batch size) and :func:`batch_figure` draws latency per batch and speedup against the paper's baseline.

The paper's baseline (1x) is autoregressive beam search (beam 5) at batch 32; here it is the fairseq beam row at the
largest batch size of the run (32 in the default configs). The paper gives its curves only as images (P100 fp32,
V100/A100 fp16), not as numbers in the text, so the figure states the paper's setting and its footnote instead of
plotting invented values: its batched implementation recomputes without a KV cache ("a naive and under-optimized
implementation ... its result is probably much underestimated"); the engine's batched path keeps per-row caches.
"""
from __future__ import annotations

import json
from typing import Dict, List, Sequence

import pandas as pd

from .methods import parse_method
from .results import backend_identical_pct

__all__ = ["at_batch_sizes", "batch_table", "batch_figure", "write_batch_curve", "PAPER_NOTES"]

PAPER_NOTES = {
    "figure6": ("Ge et al. Figure 6: IAD latency per batch, Transformer-big 6+6 and BART 12+2 on CoNLL-14, batch 1-32 "
                "on P100 (fp32), V100 and A100 (fp16); 1x = beam 5 at batch 32. Curve values are in the figure "
                "image only (not in the paper's text)."),
    "figure7": ("Ge et al. Figure 7: GAD/GAD++-Base (k=25, top-5, tau=3.0) latency per batch on WMT14 En-De, batch "
                "1-32 on P100 (fp32), V100 and A100 (fp16); 1x = beam 5 at batch 32. Curve values are in the figure "
                "image only (not in the paper's text)."),
    "blockwise": ("Stern et al. time batch 1 only (Table 4: P100); no batched figure in the paper. Beyond it: exact "
                  "blockwise decoding with per-row rollback at every batch size, the same weights."),
}
_COLUMNS = ["method", "batch_size", "label", "n_sentences", "ms_per_batch", "ms_per_sentence", "sent_per_s",
            "speedup_vs_beam_at_max_batch", "speedup_vs_greedy_same_batch", "identical_to_greedy_pct",
            "identical_to_backend_greedy_pct", "tokens_per_iteration", "paper_note"]


def at_batch_sizes(specs: Sequence[str], batch_sizes: Sequence[int]) -> List[str]:
    """Every method of ``specs`` at every batch size (``:batch=B``; batch 1 is the plain method)."""
    out = []
    for b in batch_sizes:
        for s in specs:
            if parse_method(s).batch_size != 1:
                raise ValueError(f"method {s!r} already has a batch size; give the batch sizes separately")
            out.append(s if int(b) == 1 else f"{s}:batch={int(b)}")
    return out


def _family(m) -> str:
    """A method's label without its batch-size suffix (the curve it belongs to)."""
    return m.label[: -len(f"-bs{m.batch_size}")] if m.batch_size > 1 and not m.custom_label else m.label


def batch_table(run, specs: Sequence[str], batch_sizes: Sequence[int], beam_spec: str, paper: str) -> pd.DataFrame:
    """One row per (method of ``specs``, batch size) of ``run`` (a :class:`~fastdec.bench.results.Run`);
    ``beam_spec`` (e.g. ``fairseq:beam=5``) at the largest batch size is the 1x of ``speedup_vs_beam_at_max_batch``."""
    wanted = at_batch_sizes(specs, batch_sizes)
    beam = parse_method(at_batch_sizes([beam_spec], [max(batch_sizes)])[0]).label
    base = run.row(beam)
    if base is None:
        raise ValueError(f"{run.path}: no row {beam!r} (the speed baseline at the largest batch size); rerun the "
                         "benchmark with the config's batch sizes")
    rows = []
    for s in wanted:
        m = parse_method(s)
        r = run.row(m.label)
        if r is None:
            raise ValueError(f"{run.path}: no row {m.label!r}; rerun the benchmark (snakemake regenerates it)")
        rows.append({"method": _family(m), "batch_size": m.batch_size, "label": m.label,
                     "n_sentences": r["n_sentences"], "ms_per_batch": r["ms_per_batch"],
                     "ms_per_sentence": r["ms_per_sentence"], "sent_per_s": r["sent_per_s"],
                     "speedup_vs_beam_at_max_batch": base["total_time_s"] / r["total_time_s"],
                     "speedup_vs_greedy_same_batch": r["speedup_vs_greedy_same_batch"],
                     "identical_to_greedy_pct": r["identical_to_greedy_pct"],
                     "identical_to_backend_greedy_pct": backend_identical_pct(r),
                     "tokens_per_iteration": r["tokens_per_iteration"], "paper_note": PAPER_NOTES[paper]})
    return pd.DataFrame(rows, columns=_COLUMNS)


def batch_figure(df: pd.DataFrame, output: str, *, title: str, paper: str) -> Dict[str, float]:
    """Latency per batch (left) and speedup over beam search at the largest batch (right) against the batch size;
    returns the speedup of each curve at each batch size (for the log)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, (ax1, ax2) = plt.subplots(1, 2, figsize=(11, 4.4))
    for method, g in df.groupby("method", sort=False):
        g = g.sort_values("batch_size")
        ax1.plot(g["batch_size"], g["ms_per_batch"], marker="o", label=method)
        ax2.plot(g["batch_size"], g["speedup_vs_beam_at_max_batch"], marker="o", label=method)
    for ax in (ax1, ax2):
        ax.set_xscale("log", base=2)
        ax.set_xticks(sorted(df["batch_size"].unique()))
        ax.get_xaxis().set_major_formatter(matplotlib.ticker.ScalarFormatter())
        ax.set_xlabel("batch size")
        ax.grid(alpha=0.3)
    ax1.set_ylabel("latency per batch (ms)")
    ax1.set_yscale("log")
    ax2.axhline(1.0, color="grey", lw=0.8, ls="--")
    ax2.set_ylabel(f"speedup vs beam search at batch {int(df['batch_size'].max())} (1x)")
    ax2.legend(fontsize=8)
    fig.suptitle(title, fontsize=9)
    fig.text(0.01, 0.01, "paper: " + PAPER_NOTES[paper], fontsize=6.5, wrap=True)
    fig.tight_layout(rect=(0, 0.07, 1, 0.95))
    fig.savefig(output, dpi=120)
    plt.close(fig)
    return {f"{r.label}": round(float(r.speedup_vs_beam_at_max_batch), 3) for r in df.itertuples()}


def write_batch_curve(run, specs: Sequence[str], batch_sizes: Sequence[int], beam_spec: str, paper: str,
                      output: str, *, title: str) -> None:
    """A track's batch curve written as its table (``output`` ``.csv``) or its figure (``.png``), the table or the
    speedups printed for the rule's log; the arguments are :func:`batch_table`'s and :func:`batch_figure`'s."""
    df = batch_table(run, specs, batch_sizes, beam_spec, paper)
    if output.endswith(".png"):
        print(json.dumps(batch_figure(df, output, title=title, paper=paper)), flush=True)
    else:
        df.to_csv(output, index=False)
        print(df.drop(columns=["paper_note"]).to_string(index=False), flush=True)
