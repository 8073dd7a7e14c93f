"""Tables and figures of the Blockwise track, with the paper's numbers (fastdec.report.paper_blockwise) beside ours.

Inputs are the JSON files written by ``scripts/blockwise_eval.py`` (one per model and split; top-level ``variant``,
``split``, ``trained_block_size`` and a ``results`` list with one row per system: ``greedy``, blockwise settings
``k<K>[-top<T>][-min<L>][-float|-int8]``, ``fairseq-beam<N>``). A model trained with block size K serves every
k <= K (its first k heads); when several models could serve a cell the one trained for exactly that k wins,
else the smallest K >= k.

* :func:`table1`            -- Table 1 (valid): BLEU / mean accepted block size, k x {regular, distill, finetune, both}
* :func:`plot_table1`       -- its scatter plot (BLEU vs mean accepted block size), ours beside the paper's
* :func:`approx_table`      -- top-2 / top-3 approximate selection on the "both" models (Sec. 5.1)
* :func:`min_block_table`   -- minimum block size ℓ on the "both" models (Sec. 5.3)
* :func:`figure4_table`, :func:`plot_figure4` -- wall-clock speedup vs mean accepted block size (Figure 4)
* :func:`table4`            -- test: BLEU and wall-clock speedup at batch 1 per k (Table 4), fairseq beam beside
* :func:`comparison_table`  -- Blockwise vs GAD / GAD++ on the same data and hardware (reads the GAD track's CSV)
"""
from __future__ import annotations

import json
from pathlib import Path
from typing import Dict, Iterable, List, Optional, Sequence

import pandas as pd

from fastdec.report import paper_blockwise as P
from fastdec.report.tables import read_jsonl, to_float as _num

from .decoding import parse_setting

__all__ = ["load_evals", "table1", "plot_table1", "approx_table", "min_block_table", "figure4_table",
           "plot_figure4", "table4", "comparison_table", "cell"]


# ---------------------------------------------------------------------------------------------------- inputs
def load_evals(paths: Iterable[str]) -> pd.DataFrame:
    """One row per (model, system) from blockwise_eval.py JSON files, with the setting's fields parsed."""
    rows = []
    for path in paths:
        doc = json.loads(Path(path).read_text())
        if "results" not in doc:
            raise ValueError(f"{path}: not a blockwise_eval.py result (no 'results')")
        base = {"variant": doc.get("variant"), "split": doc.get("split"), "trained_k": doc.get("trained_block_size"),
                "default_precision": doc.get("head_precision", "float"), "source": str(path)}
        for r in doc["results"]:
            row = {**base, **r}
            label = r["label"]
            if label == "greedy":
                row.update(kind="greedy", k=1, topk=1, min_block=1, precision=None)
            elif label.startswith("fairseq-beam"):
                row.update(kind="beam", k=None, topk=None, min_block=None, precision=None,
                           beam=int(label[len("fairseq-beam"):]))
            else:
                s = parse_setting(label)
                row.update(kind="blockwise", k=s.k, topk=s.topk, min_block=s.min_block, precision=s.precision)
            rows.append(row)
    return pd.DataFrame(rows)


def cell(bleu, block, identical_pct=None) -> Optional[str]:
    """``"26.58 / 1.88"`` (``"26.58 / 1.88 (100%)"`` with the identical-to-greedy share)."""
    bleu, block = _num(bleu), _num(block)
    if bleu is None and block is None:
        return None
    text = f"{bleu:.2f} / {block:.2f}" if bleu is not None else f"– / {block:.2f}"
    ident = _num(identical_pct)
    if ident is not None:
        text += f" ({ident:.0f}%)"
    return text


def _pick(df: pd.DataFrame, *, variant: str, k: int, topk: int = 1, min_block: int = 1,
          split: str = "valid", precision=None, kind: str = "blockwise") -> Optional[pd.Series]:
    """The row of one cell: the model trained for exactly k wins, else the smallest trained K >= k."""
    if df.empty:
        return None
    m = (df["variant"] == variant) & (df["split"] == split) & (df["kind"] == kind)
    if kind == "blockwise":
        m &= (df["k"] == k) & (df["topk"] == topk) & (df["min_block"] == min_block)
        m &= df["precision"].isna() if precision is None else (df["precision"] == precision)
    sub = df[m]
    if sub.empty:
        return None
    sub = sub.assign(_exact=(sub["trained_k"] != k).astype(int)).sort_values(["_exact", "trained_k"])
    return sub.iloc[0]


def _block_sizes(df: pd.DataFrame, split: str = "valid") -> List[int]:
    if df.empty:
        return []
    sub = df[(df["kind"] == "blockwise") & (df["split"] == split)]
    return sorted({int(k) for k in sub["k"].dropna()})


# ---------------------------------------------------------------------------------------------------- Table 1
def table1(df: pd.DataFrame, block_sizes: Optional[Sequence[int]] = None) -> pd.DataFrame:
    """Table 1 on the valid set: per k one row, per variant ``ours`` and ``paper`` cells "BLEU / block"."""
    ks = sorted(set(block_sizes or _block_sizes(df)))
    rows = []
    for k in [1] + [k for k in ks if k > 1]:
        row = {"k": k}
        idents = []
        for v in P.VARIANTS:
            label = P.VARIANT_LABELS[v]
            if k == 1:
                r = _pick(df, variant=v, k=1, kind="greedy") if v in ("regular", "distill") else None
            else:
                r = _pick(df, variant=v, k=k)
            row[label] = cell(r["bleu"], r["mean_block"]) if r is not None and "bleu" in r else None
            paper = P.TABLE1.get(k, {}).get(v)
            row[f"paper {label}"] = cell(*paper) if paper else None
            if r is not None:
                idents.append(float(r["identical_pct"]))
        row["identical to greedy p_1 (min %)"] = min(idents) if idents else None
        rows.append(row)
    return pd.DataFrame(rows)


def _points(df: pd.DataFrame, ks: Sequence[int]) -> Dict[str, List[tuple]]:
    out = {}
    for v in P.VARIANTS:
        pts = []
        for k in ks:
            r = _pick(df, variant=v, k=k) if k > 1 else (
                _pick(df, variant=v, k=1, kind="greedy") if v in ("regular", "distill") else None)
            if r is not None and _num(r.get("bleu")) is not None:
                pts.append((k, float(r["bleu"]), float(r["mean_block"])))
        out[v] = pts
    return out


_STYLE = {"regular": ("o", "tab:blue"), "distill": ("s", "tab:orange"), "finetune": ("^", "tab:green"),
          "both": ("D", "tab:red")}


def plot_table1(df: pd.DataFrame, out_png: str, block_sizes: Optional[Sequence[int]] = None,
                title: str = "") -> None:
    """Scatter plot of Table 1: BLEU (x) vs mean accepted block size (y), ours (left) and the paper's (right)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    ks = [1] + sorted(set(block_sizes or _block_sizes(df)) - {1})
    ours = _points(df, ks)
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
    fig.tight_layout()
    Path(out_png).parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(out_png, dpi=120)
    plt.close(fig)


# ------------------------------------------------------------------------------------- approximate decoding
def approx_table(df: pd.DataFrame, topks: Sequence[int] = (2, 3), variant: str = "both") -> pd.DataFrame:
    """Top-k approximate selection (Sec. 5.1) on the ``variant`` models: per k exact vs top-t, paper beside."""
    rows = []
    for k in [k for k in _block_sizes(df) if k > 1]:
        exact = _pick(df, variant=variant, k=k)
        row = {"k": k, "exact": cell(exact["bleu"], exact["mean_block"], exact["identical_pct"])
               if exact is not None else None,
               "paper exact": cell(*P.TABLE1[k]["both"]) if k in P.TABLE1 and variant == "both" else None}
        any_t = False
        for t in topks:
            r = _pick(df, variant=variant, k=k, topk=t)
            any_t |= r is not None
            row[f"top-{t}"] = cell(r["bleu"], r["mean_block"], r["identical_pct"]) if r is not None else None
            paper = P.APPROX.get(t, {}).get(k) if variant == "both" else None
            row[f"paper top-{t}"] = cell(*paper) if paper else None
        if any_t or exact is not None:
            rows.append(row)
    return pd.DataFrame(rows)


def min_block_table(df: pd.DataFrame, min_blocks: Sequence[int] = (2, 3), variant: str = "both") -> pd.DataFrame:
    """Minimum block size ℓ (Sec. 5.3) on the ``variant`` models: per k exact vs ℓ; the paper gives no numbers."""
    rows = []
    for k in [k for k in _block_sizes(df) if k > 1]:
        exact = _pick(df, variant=variant, k=k)
        row = {"k": k, "exact": cell(exact["bleu"], exact["mean_block"], exact["identical_pct"])
               if exact is not None else None}
        found = exact is not None
        for ell in min_blocks:
            r = _pick(df, variant=variant, k=k, min_block=ell) if ell <= k else None
            found |= r is not None
            row[f"min block ℓ={ell}"] = cell(r["bleu"], r["mean_block"], r["identical_pct"]) if r is not None else None
        row["paper"] = P.MIN_BLOCK_NOTE
        if found:
            rows.append(row)
    return pd.DataFrame(rows)


# ------------------------------------------------------------------------------------------------- Figure 4
def figure4_table(df: pd.DataFrame, variant: str = "both", split: str = "valid") -> pd.DataFrame:
    """Wall-clock speedup over greedy (same process, batch 1) vs mean accepted block size, per k; paper beside."""
    rows = []
    ks = sorted(set(_block_sizes(df, split)) | set(P.FIGURE4))
    g = _pick(df, variant=variant, k=1, split=split, kind="greedy")
    greedy_call = _num(g.get("verify_ms_per_call")) if g is not None else None
    for k in ks:
        r = _pick(df, variant=variant, k=k, split=split) if k > 1 else None
        paper = P.FIGURE4.get(k)
        if r is None and paper is None:
            continue
        verify = _num(r.get("verify_ms_per_call")) if r is not None else None
        draft = _num(r.get("draft_ms_per_call")) if r is not None else None
        rows.append({
            "k": k,
            "mean_block": _num(r["mean_block"]) if r is not None else None,
            "tokens_per_call": _num(r.get("tokens_per_call")) if r is not None else None,
            "speedup_vs_greedy": _num(r["speedup_vs_greedy"]) if r is not None else None,
            # cost of one blockwise iteration relative to one greedy step: speedup ~ tokens_per_call / call_cost
            "call_cost_vs_greedy_step": (verify + (draft or 0.0)) / greedy_call
            if verify is not None and greedy_call else None,
            "verify_ms_per_call": verify,
            "draft_ms_per_call": draft,
            "bleu": _num(r.get("bleu")) if r is not None else None,
            "paper_mean_block": paper[0] if paper else None,
            "paper_speedup": paper[1] if paper else None,
        })
    return pd.DataFrame(rows)


def plot_figure4(fig_df: pd.DataFrame, out_png: str, title: str = "") -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(5.5, 4.2))
    ours = fig_df.dropna(subset=["mean_block", "speedup_vs_greedy"])
    paper = fig_df.dropna(subset=["paper_mean_block", "paper_speedup"])
    if len(ours):
        ax.plot(ours["mean_block"], ours["speedup_vs_greedy"], "o-", color="tab:red",
                label="ours" + (f" ({title})" if title else ""))
        for _, r in ours.iterrows():
            ax.annotate(f"k={int(r['k'])}", (r["mean_block"], r["speedup_vs_greedy"]), textcoords="offset points",
                        xytext=(3, -10), fontsize=7)
    if len(paper):
        ax.plot(paper["paper_mean_block"], paper["paper_speedup"], "s--", color="gray",
                label="paper (MT, P100)")
        for _, r in paper.iterrows():
            ax.annotate(f"k={int(r['k'])}", (r["paper_mean_block"], r["paper_speedup"]), textcoords="offset points",
                        xytext=(3, 3), fontsize=7, color="gray")
    hi = max([1.0] + [float(x) for x in list(ours.get("mean_block", [])) + list(paper.get("paper_mean_block", []))])
    ax.plot([1, hi], [1, hi], ":", color="lightgray", label="speedup = block size")
    ax.axhline(1.0, color="black", lw=0.5)
    ax.set_xlabel("mean accepted block size")
    ax.set_ylabel("wall-clock speedup over greedy (batch 1)")
    ax.grid(alpha=0.3)
    ax.legend(fontsize=8)
    fig.tight_layout()
    Path(out_png).parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(out_png, dpi=120)
    plt.close(fig)


# -------------------------------------------------------------------------------------------------- Table 4
def table4(df: pd.DataFrame, variant: str = "both", split: str = "test", beam: int = 5) -> pd.DataFrame:
    """Test set, batch 1: greedy (k = 1) and blockwise per k -- BLEU, wall-clock speedup; fairseq beam beside."""
    rows = []
    g = _pick(df, variant=variant, k=1, split=split, kind="greedy")
    beam_rows = df[(df["variant"] == variant) & (df["split"] == split) & (df["kind"] == "beam")] if not df.empty \
        else df
    if len(beam_rows) and "beam" in beam_rows:
        beam_rows = beam_rows[beam_rows["beam"] == beam]
    speed_beam = f"speedup_vs_beam{beam}"

    def row(system, k, r, paper, heads=None):
        return {
            "system": system, "heads": heads,
            "bleu": _num(r.get("bleu")) if r is not None else None,
            "paper_bleu": paper[0] if paper else None,
            "speedup_vs_greedy": _num(r.get("speedup_vs_greedy")) if r is not None else None,
            "paper_speedup": paper[1] if paper else None,
            f"speedup_vs_fairseq_beam{beam}": _num(r.get(speed_beam)) if r is not None else None,
            "mean_block": _num(r.get("mean_block")) if r is not None else None,
            "ms_per_sentence": _num(r.get("ms_per_sentence")) if r is not None else None,
            "identical_to_greedy_pct": _num(r.get("identical_pct")) if r is not None else None,
            "sentences": int(r["n_sentences"]) if r is not None else None,
        }

    if len(beam_rows):
        rows.append(row(f"fairseq beam {beam}", None, beam_rows.iloc[0], None))
    rows.append(row("greedy, k = 1 (p_1 of the blockwise model; paper: distilled Transformer)", 1, g, P.TABLE4[1]))
    for k in [k for k in _block_sizes(df, split) if k > 1]:
        for prec in (None, "float", "int8"):
            r = _pick(df, variant=variant, k=k, split=split, precision=prec)
            if r is None:
                continue
            heads = prec or r.get("default_precision") or "float"
            rows.append(row(f"blockwise k={k}", k, r, P.TABLE4.get(k) if prec is None else None, heads))
    return pd.DataFrame(rows)


# ------------------------------------------------------------------------------------ comparison with GAD
def comparison_table(df: pd.DataFrame, gad_summary: Optional[str], *, gad_sentences: Optional[str] = None,
                     refs: Optional[Sequence[str]] = None, lang: Optional[str] = None, variant: str = "both",
                     split: str = "test", beam: int = 5) -> pd.DataFrame:
    """Blockwise (the two fastest exact settings) beside the GAD track's rows of its test benchmark.

    ``gad_summary`` is the GAD track's ``summary.csv`` (one row per system). When its per-sentence records
    (``gad_sentences``, ``sentences.jsonl``) are given, the GAD rows are recomputed on the SAME first N test sentences
    the blockwise benchmark decoded (N = our ``n_sentences``): total times, speedups against the GAD run's own
    fairseq beam search and engine greedy decoding, tokens per decoder call, identical-to-greedy share, and BLEU (from
    the records' hypotheses against ``refs`` when given). Each track's speedups are against its own baselines, measured
    in its own single process on the same machine.
    """
    rows = []
    n_ours = None
    if not df.empty:
        sub = df[(df["variant"] == variant) & (df["split"] == split)]
        bw = sub[(sub["kind"] == "blockwise") & (sub["topk"] == 1) & (sub["min_block"] == 1)]
        for kind, name in (("beam", f"AT fairseq beam {beam} (blockwise model's p_1)"),
                           ("greedy", "AT greedy (blockwise model's p_1)")):
            r = sub[sub["kind"] == kind]
            if kind == "beam" and "beam" in r:
                r = r[r["beam"] == beam]
            if len(r):
                rows.append(_cmp_row(name, "blockwise", r.iloc[0], beam))
                n_ours = int(r.iloc[0]["n_sentences"])
        if len(bw):
            for _, r in bw.sort_values("speedup_vs_greedy", ascending=False).head(2).iterrows():
                heads = r["precision"] if isinstance(r["precision"], str) else (r.get("default_precision") or "float")
                rows.append(_cmp_row(f"Blockwise k={int(r['k'])} ({heads} heads)", "blockwise", r, beam))
    if gad_summary and Path(gad_summary).exists():
        g = pd.read_csv(gad_summary)
        keep = g[g["kind"].isin(["fairseq", "greedy", "gad", "gadpp"])]
        if gad_sentences and Path(gad_sentences).exists():
            rows += _gad_rows_from_sentences(keep, gad_sentences, n_ours, refs, lang, beam)
        else:
            speed_col = f"speed_vs_at_b{beam}" if f"speed_vs_at_b{beam}" in g else next(
                (c for c in g.columns if c.startswith("speed_vs_")), None)
            greedy_time = g.loc[g["system"] == "greedy", "total_time_s"]
            for _, r in keep.iterrows():
                rows.append({
                    "system": r.get("label") or r["system"], "track": "gad", "bleu": _num(r.get("bleu")),
                    f"speedup_vs_fairseq_beam{beam}": _num(r.get(speed_col)) if speed_col else None,
                    "speedup_vs_greedy": (float(greedy_time.iloc[0]) / float(r["total_time_s"]))
                    if len(greedy_time) and _num(r.get("total_time_s")) else None,
                    "tokens_per_call": _num(r.get("tokens_per_iteration")),
                    "ms_per_sentence": _num(r.get("mean_latency_ms")),
                    "identical_to_greedy_pct": _num(r.get("identical_to_greedy_pct")),
                    "sentences": int(r["n_sentences"]) if _num(r.get("n_sentences")) is not None else None,
                })
    return pd.DataFrame(rows, columns=["system", "track", "bleu", f"speedup_vs_fairseq_beam{beam}",
                                       "speedup_vs_greedy", "tokens_per_call", "ms_per_sentence",
                                       "identical_to_greedy_pct", "sentences"])


def _gad_rows_from_sentences(summary: pd.DataFrame, jsonl: str, n: Optional[int], refs, lang, beam: int) -> list:
    recs = read_jsonl(jsonl)
    if not recs:
        return []
    s = pd.DataFrame(recs)
    if n is not None:
        s = s[s["id"] < n]
    by = {name: grp.sort_values("id") for name, grp in s.groupby("system")}
    base = by.get(f"at_b{beam}")
    greedy = by.get("greedy")
    rows = []
    for _, r in summary.iterrows():
        grp = by.get(r["system"])
        if grp is None or grp.empty:
            continue
        total = float(grp["time"].sum())
        toks = sum(len(t) for t in grp["tokens"])
        iters = float(grp["iterations"].sum()) if "iterations" in grp else None
        ident = None
        if greedy is not None and len(greedy) == len(grp):
            ident = 100.0 * sum(a == b for a, b in zip(grp["tokens"], greedy["tokens"])) / len(grp)
        bleu = None
        if refs is not None and lang and "hyp" in grp:
            from fastdec.eval.bleu import corpus_bleu

            from .evaluate import detok_hypotheses

            ids = list(grp["id"])
            if max(ids) < len(refs):
                bleu = corpus_bleu(detok_hypotheses(list(grp["hyp"]), lang), [refs[i] for i in ids])["bleu"]
        rows.append({
            "system": r.get("label") or r["system"], "track": "gad", "bleu": bleu,
            f"speedup_vs_fairseq_beam{beam}": float(base["time"].sum()) / total if base is not None and total else None,
            "speedup_vs_greedy": float(greedy["time"].sum()) / total if greedy is not None and total else None,
            "tokens_per_call": toks / iters if iters and r["kind"] != "fairseq" else None,
            "ms_per_sentence": 1000.0 * total / len(grp),
            "identical_to_greedy_pct": ident,
            "sentences": len(grp),
        })
    return rows


def _cmp_row(name: str, track: str, r: pd.Series, beam: int) -> dict:
    return {
        "system": name, "track": track, "bleu": _num(r.get("bleu")),
        f"speedup_vs_fairseq_beam{beam}": _num(r.get(f"speedup_vs_beam{beam}")),
        "speedup_vs_greedy": _num(r.get("speedup_vs_greedy")),
        "tokens_per_call": _num(r.get("tokens_per_call")),
        "ms_per_sentence": _num(r.get("ms_per_sentence")),
        "identical_to_greedy_pct": _num(r.get("identical_pct")),
        "sentences": int(r["n_sentences"]) if _num(r.get("n_sentences")) is not None else None,
    }
