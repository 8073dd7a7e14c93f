"""Tables and figures of the Blockwise track from its benchmark runs (the results schema of fastdec.bench.results),
with the paper's numbers (fastdec.tracks.blockwise.paper) beside ours.

:func:`load_runs` stacks the runs' ``summary.csv`` rows, tagged with the run's split, variant and trained block size
K. A model trained with K serves every k <= K (its first k heads); when several models could serve a cell the one
trained for exactly that k wins, else the smallest K >= k. Blockwise cells are read at one head ``precision`` (the
config's default; Table 4 and the comparison also show the other one). Columns read: the schema's ``bleu``,
``mean_block`` (the paper's mean accepted block size k̂), ``tokens_per_iteration``, ``identical_to_greedy_pct``,
``speedup_vs_greedy``, ``speedup_vs_beam``, ``ms_per_sentence``, the module times and the method's settings.

* :func:`table1`, :func:`plot_table1`  -- Table 1 (valid): BLEU / mean accepted block size, k x variant; scatter plot
* :func:`approx_table`                 -- top-t approximate acceptance on the "both" models (Sec. 5.1)
* :func:`min_block_table`              -- minimum block size ℓ on the "both" models (Sec. 5.3)
* :func:`figure4_table`, :func:`plot_figure4` -- wall-clock speedup over greedy vs mean accepted block size
* :func:`table4`                       -- test: BLEU and wall-clock speedup at batch 1 per k, fairseq beam beside
* :func:`comparison_table`             -- Blockwise vs GAD / GAD++ rows of the GAD track's run on the same sentences
"""
from __future__ import annotations

from pathlib import Path
from typing import Dict, List, Optional, Sequence, Tuple

import pandas as pd

from fastdec.bench.results import read_run
from fastdec.tracks.blockwise import paper as P
from fastdec.report.tables import append_paper_only
from fastdec.report.tables import to_float as _num

__all__ = ["load_runs", "table1", "plot_table1", "approx_table", "min_block_table", "figure4_table",
           "plot_figure4", "table4", "comparison_table", "cell"]


def load_runs(runs: Dict[str, Tuple[str, str, int]]) -> pd.DataFrame:
    """One row per (run, method): run dir -> (split, variant, trained K); greedy rows get k = 1."""
    frames = []
    for path, (split, variant, trained_k) in runs.items():
        df = read_run(path).summary.reset_index(drop=True)
        df = df.assign(split=split, variant=variant, trained_k=int(trained_k))
        df.loc[df["method"] == "greedy", "k"] = 1
        # a blockwise method run without a precision key used the drafter's default: float heads
        df["precision"] = df["precision"].where(df["precision"].notna() | (df["method"] != "blockwise"), "float")
        # runs written before the fast backend existed have no backend column: the PyTorch reference decoded them
        df["backend"] = df["backend"].fillna("torch") if "backend" in df else "torch"
        frames.append(df)
    return pd.concat(frames, ignore_index=True) if frames else pd.DataFrame()


def cell(bleu, block, identical_pct=None) -> Optional[str]:
    """``"26.58 / 1.88"`` (``"26.58 / 1.88 (100%)"`` with the identical-to-greedy share)."""
    bleu, block = _num(bleu), _num(block)
    if bleu is None and block is None:
        return None
    text = f"{bleu:.2f} / {block:.2f}" if bleu is not None else f"– / {block:.2f}"
    ident = _num(identical_pct)
    return text + (f" ({ident:.0f}%)" if ident is not None else "")


def _cell(r, ident: bool = True) -> Optional[str]:
    if r is None:
        return None
    return cell(r["bleu"], r["mean_block"], r["identical_to_greedy_pct"] if ident else None)


def _pick(df: pd.DataFrame, *, variant: str, k: int, precision: Optional[str], topk: int = 1, min_block: int = 1,
          split: str = "valid", method: str = "blockwise", backend: str = "torch",
          policy: str = "fixed") -> Optional[pd.Series]:
    """The row of one cell: the model trained for exactly k wins, else the smallest trained K >= k."""
    if df.empty:
        return None
    m = (df["variant"] == variant) & (df["split"] == split) & (df["method"] == method) & (df["backend"] == backend)
    m &= (df["policy"].fillna("fixed") if "policy" in df else pd.Series("fixed", index=df.index)) == policy
    if method == "blockwise":
        m &= (df["k"] == k) & (df["topk"] == topk) & (df["min_block"] == min_block) & (df["precision"] == precision)
    sub = df[m]
    if sub.empty:
        return None
    return sub.assign(_other=(sub["trained_k"] != k).astype(int)).sort_values(["_other", "trained_k"]).iloc[0]


def _greedy(df: pd.DataFrame, variant: str, split: str = "valid", backend: str = "torch") -> Optional[pd.Series]:
    return _pick(df, variant=variant, k=1, precision=None, split=split, method="greedy", backend=backend)


def _block_sizes(df: pd.DataFrame, split: str = "valid") -> List[int]:
    if df.empty:
        return []
    return sorted({int(k) for k in df.loc[(df["method"] == "blockwise") & (df["split"] == split), "k"].dropna()})


# ---------------------------------------------------------------------------------------------------- Table 1
def _table1_row(df, v, k, precision):
    if k == 1:
        return _greedy(df, v) if v in ("regular", "distill") else None
    return _pick(df, variant=v, k=k, precision=precision)


def table1(df: pd.DataFrame, block_sizes: Optional[Sequence[int]], precision: str) -> pd.DataFrame:
    """Table 1 on the valid set: per k one row, per variant ``ours`` and ``paper`` cells "BLEU / block"."""
    ks = sorted(set(block_sizes or _block_sizes(df)) - {1})
    rows = []
    for k in [1] + ks:
        row, idents = {"k": k}, []
        for v in P.VARIANTS:
            label = P.VARIANT_LABELS[v]
            r = _table1_row(df, v, k, precision)
            row[label] = _cell(r, ident=False)
            paper = P.TABLE1.get(k, {}).get(v)
            row[f"paper {label}"] = cell(*paper) if paper else None
            if r is not None:
                idents.append(float(r["identical_to_greedy_pct"]))
        row["identical to greedy p_1 (min %)"] = min(idents) if idents else None
        rows.append(row)
    return pd.DataFrame(rows)


_STYLE = {"regular": ("o", "tab:blue"), "distill": ("s", "tab:orange"), "finetune": ("^", "tab:green"),
          "both": ("D", "tab:red")}


def _pyplot():
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def _save(plt, fig, out_png: str) -> None:
    fig.tight_layout()
    Path(out_png).parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(out_png, dpi=120)
    plt.close(fig)


def plot_table1(df: pd.DataFrame, out_png: str, block_sizes: Optional[Sequence[int]], precision: str,
                title: str = "") -> None:
    """Scatter plot of Table 1: BLEU (x) vs mean accepted block size (y), ours (left) and the paper's (right)."""
    plt = _pyplot()
    ks = [1] + sorted(set(block_sizes or _block_sizes(df)) - {1})
    ours = {v: [(k, float(r["bleu"]), float(r["mean_block"])) for k in ks
                for r in [_table1_row(df, v, k, precision)] if r is not None and _num(r["bleu"]) is not None]
            for v in P.VARIANTS}
    paper = {v: [(k, *P.TABLE1[k][v]) for k in sorted(P.TABLE1) if v in P.TABLE1[k]] for v in P.VARIANTS}
    fig, axes = plt.subplots(1, 2, figsize=(10, 4.2))
    for ax, pts, name in ((axes[0], ours, "ours" + (f" ({title})" if title else "")),
                          (axes[1], paper, "paper (WMT14 newstest2013)")):
        for v in P.VARIANTS:
            if not pts[v]:
                continue
            marker, color = _STYLE[v]
            ax.scatter([p[1] for p in pts[v]], [p[2] for p in pts[v]], marker=marker, color=color,
                       label=P.VARIANT_LABELS[v])
            for k, x, y in pts[v]:
                ax.annotate(f"k={k}", (x, y), textcoords="offset points", xytext=(3, 3), fontsize=7)
        ax.set_xlabel("BLEU")
        ax.set_ylabel("mean accepted block size")
        ax.set_title(name)
        ax.grid(alpha=0.3)
        ax.legend(fontsize=8)
    _save(plt, fig, out_png)


# --------------------------------------------------------------------- approximate decoding, minimum block size
def approx_table(df: pd.DataFrame, topks: Sequence[int], precision: str, variant: str = "both") -> pd.DataFrame:
    """Top-t approximate selection (Sec. 5.1) on the ``variant`` models: per k exact vs top-t, paper beside."""
    rows = []
    for k in [k for k in _block_sizes(df) if k > 1]:
        exact = _pick(df, variant=variant, k=k, precision=precision)
        row = {"k": k, "exact": _cell(exact),
               "paper exact": cell(*P.TABLE1[k]["both"]) if k in P.TABLE1 and variant == "both" else None}
        found = exact is not None
        for t in topks:
            r = _pick(df, variant=variant, k=k, topk=t, precision=precision)
            found |= r is not None
            row[f"top-{t}"] = _cell(r)
            paper = P.APPROX.get(t, {}).get(k) if variant == "both" else None
            row[f"paper top-{t}"] = cell(*paper) if paper else None
        if found:
            rows.append(row)
    return pd.DataFrame(rows)


def min_block_table(df: pd.DataFrame, min_blocks: Sequence[int], precision: str,
                    variant: str = "both") -> pd.DataFrame:
    """Minimum block size ℓ (Sec. 5.3) on the ``variant`` models: per k exact vs ℓ; the paper gives no numbers."""
    rows = []
    for k in [k for k in _block_sizes(df) if k > 1]:
        exact = _pick(df, variant=variant, k=k, precision=precision)
        row = {"k": k, "exact": _cell(exact)}
        found = exact is not None
        for ell in min_blocks:
            r = _pick(df, variant=variant, k=k, min_block=ell, precision=precision) if ell <= k else None
            found |= r is not None
            row[f"min block ℓ={ell}"] = _cell(r)
        row["paper"] = P.MIN_BLOCK_NOTE
        if found:
            rows.append(row)
    return pd.DataFrame(rows)


# ------------------------------------------------------------------------------------------------- Figure 4
def _ms_per_call(r, module: str) -> Optional[float]:
    """Milliseconds one decoder call (iteration) spends in ``module`` (verifier | drafter)."""
    calls = _num(r["mean_iterations"]) * _num(r["n_sentences"]) if r is not None else None
    t = _num(r[f"time_{module}_s"]) if r is not None else None
    return 1000.0 * t / calls if t is not None and calls else None


def figure4_table(df: pd.DataFrame, precision: str, variant: str = "both", split: str = "valid") -> pd.DataFrame:
    """Wall-clock speedup over greedy (same process, batch 1) vs mean accepted block size, per k; paper beside."""
    rows = []
    greedy_call = _ms_per_call(_greedy(df, variant, split), "verifier")
    for k in sorted(set(_block_sizes(df, split)) | set(P.FIGURE4)):
        r = _pick(df, variant=variant, k=k, split=split, precision=precision) if k > 1 else None
        paper = P.FIGURE4.get(k)
        if r is None and paper is None:
            continue
        verify, draft = _ms_per_call(r, "verifier"), _ms_per_call(r, "drafter")
        get = (lambda col: _num(r[col])) if r is not None else (lambda col: None)
        rows.append({
            "k": f"k={k}",  # text, so the Markdown report does not print it as a float
            "mean_block": get("mean_block"),
            "tokens_per_iteration": get("tokens_per_iteration"),
            "speedup_vs_greedy": get("speedup_vs_greedy"),
            # cost of one blockwise iteration relative to one greedy step: speedup ~ tokens_per_iteration / cost
            "call_cost_vs_greedy_step": (verify + (draft or 0.0)) / greedy_call
            if verify is not None and greedy_call else None,
            "verify_ms_per_call": verify,
            "draft_ms_per_call": draft,
            "bleu": get("bleu"),
            "paper_mean_block": paper[0] if paper else None,
            "paper_speedup": paper[1] if paper else None,
        })
    return pd.DataFrame(rows)


def plot_figure4(fig_df: pd.DataFrame, out_png: str, title: str = "") -> None:
    plt = _pyplot()
    fig, ax = plt.subplots(figsize=(5.5, 4.2))
    ours = fig_df.dropna(subset=["mean_block", "speedup_vs_greedy"])
    paper = fig_df.dropna(subset=["paper_mean_block", "paper_speedup"])
    if len(ours):
        ax.plot(ours["mean_block"], ours["speedup_vs_greedy"], "o-", color="tab:red",
                label="ours" + (f" ({title})" if title else ""))
        for _, r in ours.iterrows():
            ax.annotate(r["k"], (r["mean_block"], r["speedup_vs_greedy"]), textcoords="offset points",
                        xytext=(3, -10), fontsize=7)
    if len(paper):
        ax.plot(paper["paper_mean_block"], paper["paper_speedup"], "s--", color="gray", label="paper (MT, P100)")
        for _, r in paper.iterrows():
            ax.annotate(r["k"], (r["paper_mean_block"], r["paper_speedup"]), textcoords="offset points",
                        xytext=(3, 3), fontsize=7, color="gray")
    hi = max([1.0] + [float(x) for x in list(ours["mean_block"]) + list(paper["paper_mean_block"])])
    ax.plot([1, hi], [1, hi], ":", color="lightgray", label="speedup = block size")
    ax.axhline(1.0, color="black", lw=0.5)
    ax.set_xlabel("mean accepted block size")
    ax.set_ylabel("wall-clock speedup over greedy (batch 1)")
    ax.grid(alpha=0.3)
    ax.legend(fontsize=8)
    _save(plt, fig, out_png)


# -------------------------------------------------------------------------------------------------- Table 4
def _beam_row(df: pd.DataFrame, variant: str, split: str, beam: int) -> Optional[pd.Series]:
    sub = df[(df["variant"] == variant) & (df["split"] == split) & (df["method"] == "fairseq") & (df["beam"] == beam)]
    return sub.iloc[0] if len(sub) else None


def _other(precision: str) -> str:
    return "float" if precision == "int8" else "int8"


def table4(df: pd.DataFrame, beam: int, precision: str, variant: str = "both", split: str = "test") -> pd.DataFrame:
    """Test set, batch 1: greedy (k = 1) and blockwise per k -- BLEU, wall-clock speedup; fairseq beam beside."""
    def row(system, r, paper, heads=None):
        return {"system": system, "heads": heads, "bleu": _num(r["bleu"]), "paper_bleu": paper[0] if paper else None,
                "speedup_vs_greedy": _num(r["speedup_vs_greedy"]), "paper_speedup": paper[1] if paper else None,
                **{c: _num(r[c]) for c in ("speedup_vs_beam", "mean_block", "ms_per_sentence",
                                           "identical_to_greedy_pct")},
                "n_sentences": int(r["n_sentences"])}

    rows = []
    b = _beam_row(df, variant, split, beam)
    if b is not None:
        rows.append(row(f"fairseq beam {beam}", b, None))
    g = _greedy(df, variant, split)
    if g is not None:
        rows.append(row("greedy, k = 1 (p_1 of the blockwise model; paper: distilled Transformer)", g, P.TABLE4[1]))
    for k in [k for k in _block_sizes(df, split) if k > 1]:
        for prec in (precision, _other(precision)):
            r = _pick(df, variant=variant, k=k, split=split, precision=prec)
            if r is not None:
                rows.append(row(f"blockwise k={k}", r, P.TABLE4.get(k) if prec == precision else None, prec))
    # the same decoders on another verifier implementation (blockwise.decode.backends; not in the paper)
    for backend in sorted(set(df["backend"]) - {"torch"}) if len(df) else []:
        g = _greedy(df, variant, split, backend)
        if g is not None:
            rows.append(row(f"greedy, k = 1 ({backend} backend)", g, None))
        for k in [k for k in _block_sizes(df, split) if k > 1]:
            r = _pick(df, variant=variant, k=k, split=split, precision=precision, backend=backend)
            if r is not None:
                rows.append(row(f"blockwise k={k} ({backend} backend)", r, None, precision))
    # the largest k with draft lengths chosen by what a pass costs (blockwise.decode.policies; not in the paper)
    policies = sorted(set(df["policy"].dropna()) - {"fixed"}) if len(df) and "policy" in df else []
    for policy in policies:
        for backend in ["torch", *sorted(set(df["backend"]) - {"torch"})]:
            for k in [k for k in _block_sizes(df, split) if k > 1]:
                r = _pick(df, variant=variant, k=k, split=split, precision=precision, backend=backend, policy=policy)
                if r is not None:
                    where = "" if backend == "torch" else f", {backend} backend"
                    rows.append(row(f"blockwise k={k} ({policy}-aware draft length{where})", r, None, precision))
    return append_paper_only(pd.DataFrame(rows), P.stern_table4_rows())


# ------------------------------------------------------------------------------------ comparison with GAD
_CMP = ["bleu", "speedup_vs_beam", "speedup_vs_greedy", "tokens_per_iteration", "ms_per_sentence",
        "identical_to_greedy_pct"]


def comparison_table(df: pd.DataFrame, gad: Optional[pd.DataFrame], beam: int, variant: str = "both",
                     split: str = "test") -> pd.DataFrame:
    """Blockwise (beam, greedy, the two fastest exact settings) beside the GAD track's fairseq, greedy, GAD and GAD++
    rows (``gad``: the GAD run's summary, recomputed on the sentences ours decoded: ``Run.resummarize``). Each track's
    speedups are against its own fairseq beam search and engine greedy decoding, measured in its own process."""
    def row(system, track, r):
        out = {"system": system, "track": track, **{c: _num(r[c]) for c in _CMP}, "n_sentences": int(r["n_sentences"])}
        if r["method"] == "fairseq":
            out["tokens_per_iteration"] = None  # beam search: one decoder step per position and beam
        return out

    rows = []
    b, g = _beam_row(df, variant, split, beam), _greedy(df, variant, split)
    if b is not None:
        rows.append(row(f"AT fairseq beam {beam} (blockwise model's p_1)", "blockwise", b))
    if g is not None:
        rows.append(row("AT greedy (blockwise model's p_1)", "blockwise", g))
    sub = df[(df["variant"] == variant) & (df["split"] == split) & (df["method"] == "blockwise")] if len(df) else df
    exact = sub[(sub["topk"] == 1) & (sub["min_block"] == 1)] if len(sub) else sub
    for _, r in exact.sort_values("speedup_vs_greedy", ascending=False).head(2).iterrows():
        backend = "" if r.get("backend", "torch") == "torch" else f", {r['backend']} backend"
        rows.append(row(f"Blockwise k={int(r['k'])} ({r['precision']} heads{backend})", "blockwise", r))
    if gad is not None:
        rows += [row(r["label"], "gad", r) for _, r in gad.iterrows() if r["method"] in ("fairseq", "greedy", "gad")]
    return pd.DataFrame(rows, columns=["system", "track", *_CMP, "n_sentences"])
