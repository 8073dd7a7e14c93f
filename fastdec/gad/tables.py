"""Tables of the GAD track, from benchmark summaries (:mod:`fastdec.gad.bench`), with the paper's numbers beside
ours (``paper_*`` columns; :data:`fastdec.report.paper.GAD_TABLE1` and :mod:`fastdec.report.paper_gad`)."""
from __future__ import annotations

import math
from typing import Dict, List, Optional, Sequence

import pandas as pd

from fastdec.report.paper import GAD_TABLE1
from fastdec.report.paper_gad import (GAD_TABLE2, GAD_TABLE3, GAD_TABLE3_GREEDY_BLEU, GAD_TABLE7, GAD_TABLE8,
                                      GAD_TABLE8_TOTAL_MIB, GAD_TABLE9)

from .systems import paper_key, parse_system

__all__ = ["table1", "table2_block_size", "table3_beta_tau", "table7_modules", "table8_memory",
           "table9_repetition", "speed_column"]


def _r(x, nd=2):
    if x is None or (isinstance(x, float) and math.isnan(x)):
        return None
    return round(float(x), nd)


def speed_column(df: pd.DataFrame) -> str:
    cols = [c for c in df.columns if c.startswith("speed_vs_")]
    if not cols:
        raise ValueError("summary has no speed_vs_<baseline> column")
    return cols[0]


def _row(df: pd.DataFrame, system: str) -> Optional[pd.Series]:
    hit = df[df["system"] == system]
    return None if hit.empty else hit.iloc[0]


def paper_table1(reference: str = "wmt14_en-de") -> Dict[str, dict]:
    """Paper rows for Table 1: the GAD paper's Table 1 (WMT14 En-De) or, for another benchmark direction, the
    journal version's Table 14 (``wmt14_de-en``, ``wmt16_en-ro``, ``wmt16_ro-en``)."""
    from fastdec.report.paper_gad import GAD_TABLE14

    if reference == "wmt14_en-de":
        return GAD_TABLE1
    if reference not in GAD_TABLE14:
        raise ValueError(f"unknown paper reference {reference!r}; choose wmt14_en-de or one of {sorted(GAD_TABLE14)}")
    return GAD_TABLE14[reference]


def table1(summary: pd.DataFrame, reference: str = "wmt14_en-de") -> pd.DataFrame:
    """GAD Table 1 rows of our systems on the test set: iterations, BLEU, speed vs beam 5, identical to greedy."""
    speed = speed_column(summary)
    ref = paper_table1(reference)
    out = []
    for _, r in summary.iterrows():
        spec = parse_system(r["system"])
        paper = ref.get(paper_key(spec) or "", {})
        autoregressive = spec.kind in ("fairseq", "greedy")
        out.append({
            "system": r["system"],
            "label": r["label"],
            "iterations": _r(r["mean_iterations"]),
            "paper_iterations": "N" if autoregressive and paper else paper.get("iterations"),
            "tokens_per_iteration": _r(r["tokens_per_iteration"]),
            "mean_accepted_draft": _r(r["mean_accepted"]) if spec.kind in ("gad", "gadpp") else None,
            "bleu": r["bleu"],
            "paper_bleu": paper.get("bleu"),
            "latency_ms": _r(r["mean_latency_ms"]),
            "speed_vs_beam5": _r(r[speed]),
            "paper_speed": paper.get("speed"),
            "identical_to_greedy_pct": r["identical_to_greedy_pct"],
            "identical_to_greedy": r["identical_to_greedy"],
            "sentences": r["n_sentences"],
            "signature": r.get("signature"),
        })
    return pd.DataFrame(out)


def table2_block_size(summary: pd.DataFrame, block_sizes: Sequence[int], beta: int = 3, tau: float = 1.0,
                      baseline: str = "at_b5") -> pd.DataFrame:
    """GAD Table 2: per block size k, GAD++ (top-beta, tau) mean tokens per iteration, BLEU and speed (plus vanilla
    GAD's tokens per iteration and speed), on the validation subset; first row the AT beam-5 baseline."""
    speed = speed_column(summary)
    rows = []
    b = _row(summary, baseline)
    if b is not None:
        p = GAD_TABLE2["at_b5"]
        rows.append({"system": baseline, "k": "-", "tok": _r(b["tokens_per_iteration"]), "accepted_draft": None,
                     "bleu": b["bleu"], "speed": _r(b[speed]), "gad_tok": None, "gad_speed": None,
                     "gad_identical_pct": None, "paper_tok": p["tok"], "paper_bleu": p["bleu"],
                     "paper_speed": p["speed"]})
    g = _row(summary, "greedy")
    if g is not None:
        rows.append({"system": "greedy", "k": "-", "tok": _r(g["tokens_per_iteration"]), "accepted_draft": 0.0,
                     "bleu": g["bleu"], "speed": _r(g[speed]), "gad_tok": None, "gad_speed": None,
                     "gad_identical_pct": None, "paper_tok": None, "paper_bleu": GAD_TABLE3_GREEDY_BLEU,
                     "paper_speed": None})
    for k in block_sizes:
        pp = _row(summary, f"gadpp_k{k}_b{beta}_t{tau:g}")
        gd = _row(summary, f"gad_k{k}")
        if pp is None and gd is None:
            raise ValueError(f"the validation run has no GAD/GAD++ system for block size k={k}")
        p = GAD_TABLE2.get(int(k), {})
        rows.append({
            "system": f"GAD++ (top-{beta}, tau={tau:g})", "k": str(int(k)),
            "tok": _r(pp["tokens_per_iteration"]) if pp is not None else None,
            "accepted_draft": _r(pp["mean_accepted"]) if pp is not None else None,
            "bleu": pp["bleu"] if pp is not None else None,
            "speed": _r(pp[speed]) if pp is not None else None,
            "gad_tok": _r(gd["tokens_per_iteration"]) if gd is not None else None,
            "gad_speed": _r(gd[speed]) if gd is not None else None,
            "gad_identical_pct": gd["identical_to_greedy_pct"] if gd is not None else None,
            "paper_tok": p.get("tok"), "paper_bleu": p.get("bleu"), "paper_speed": p.get("speed"),
        })
    return pd.DataFrame(rows)


def table3_beta_tau(summary: pd.DataFrame, k: int, betas: Sequence[int], taus: Sequence[float]) -> pd.DataFrame:
    """GAD Table 3: GAD++ (block size k) mean tokens per iteration and BLEU per (beta, tau) on the validation subset.

    One row per tau, columns ``top<beta>_tok / _bleu / _speed`` and the paper's ``paper_top<beta>_tok / _bleu``
    (paper: k=25); the first row is greedy decoding (its BLEU; paper 26.62).
    """
    speed = speed_column(summary)
    g = _row(summary, "greedy")
    first = {"tau": "greedy"}
    for beta in betas:
        first.update({f"top{beta}_tok": _r(g["tokens_per_iteration"]) if g is not None else None,
                      f"top{beta}_bleu": g["bleu"] if g is not None else None,
                      f"top{beta}_speed": _r(g[speed]) if g is not None else None,
                      f"paper_top{beta}_tok": 1.0, f"paper_top{beta}_bleu": GAD_TABLE3_GREEDY_BLEU})
    rows = [first]
    for tau in taus:
        row = {"tau": f"{float(tau):g}"}
        for beta in betas:
            r = _row(summary, f"gadpp_k{k}_b{beta}_t{float(tau):g}")
            if r is None:
                raise ValueError(f"the validation run has no GAD++ system for k={k}, beta={beta}, tau={tau}")
            p = GAD_TABLE3.get((int(beta), float(tau)), (None, None))
            row.update({f"top{beta}_tok": _r(r["tokens_per_iteration"]), f"top{beta}_bleu": r["bleu"],
                        f"top{beta}_speed": _r(r[speed]),
                        f"paper_top{beta}_tok": p[0], f"paper_top{beta}_bleu": p[1]})
        rows.append(row)
    return pd.DataFrame(rows)


_MODULES = [("at_encoder", "AT encoder", "at_encoder_s"), ("nat_encoder", "NAT encoder", "nat_encoder_s"),
            ("nat_decoder", "NAT decoder", "nat_decoder_s"), ("at_decoder", "AT decoder", "at_decoder_s"),
            ("others", "Others", "other_s")]


def table7_modules(summary: pd.DataFrame, systems: Sequence[str]) -> pd.DataFrame:
    """GAD Table 7: mean time per sentence (ms) and share of each module, for each engine system given.

    Columns ``<system>_ms`` / ``<system>_pct`` for every system, then the paper's GAD++ (k=25, top-5, tau=3.0).
    AT decoder = the verifier's passes incl. the acceptance rule; Others = the loop's bookkeeping.
    """
    cols: Dict[str, Dict[str, float]] = {}
    for name in systems:
        r = _row(summary, name)
        if r is None:
            raise ValueError(f"the test run has no system {name!r}")
        if r.get("at_encoder_s") is None or (isinstance(r.get("at_encoder_s"), float) and math.isnan(r["at_encoder_s"])):
            raise ValueError(f"{name!r} has no module times (only engine systems do)")
        n = r["n_sentences"]
        cols[name] = {key: 1000.0 * r[col] / n for key, _, col in _MODULES}
    rows = []
    for key, label, _ in _MODULES + [("total", "Total", None)]:
        row = {"module": label}
        for name, times in cols.items():
            total = sum(times.values())
            v = total if key == "total" else times[key]
            row[f"{name}_ms"] = _r(v, 3)
            row[f"{name}_pct"] = _r(100.0 * v / total if total else None)
        row["paper_ms"], row["paper_pct"] = GAD_TABLE7[key]
        rows.append(row)
    return pd.DataFrame(rows)


def table8_memory(measurements: List[dict]) -> pd.DataFrame:
    """GAD Table 8 from :func:`fastdec.gad.memory.measure_all` rows (one per system, each in a fresh process)."""
    rows = []
    for m in measurements:
        spec = parse_system(m["system"])
        key = {"fairseq": "at_b5" if spec.beam > 1 else "greedy", "greedy": "greedy", "gad": "gad",
               "gadpp": "gadpp"}.get(spec.kind)
        paper = GAD_TABLE8.get(key, (None, None)) if key else (None, None)
        rows.append({
            "system": m["system"], "label": spec.label, "device": m["device"],
            "peak_mb": _r(m["peak_mb"], 1), "after_load_mb": _r(m["after_load_mb"], 1),
            "decode_extra_mb": _r(m["peak_mb"] - m["after_load_mb"], 1),
            "weights_mb": _r(m["weights_mb"], 1), "measure": m["measure"],
            "paper_mib": paper[0], "paper_pct": paper[1], "paper_total_mib": GAD_TABLE8_TOTAL_MIB,
            "sentences": m["sentences"],
        })
    return pd.DataFrame(rows)


def table9_repetition(summary: pd.DataFrame, systems: Sequence[str], hq: Optional[str] = None) -> pd.DataFrame:
    """GAD Table 9: BLEU and token repetition ratio (%) of our systems, the paper's beside (and its CMLM rows).

    ``hq`` names the GAD++ system compared with the paper's GAD++ row (top-3, tau=1.0).
    """
    rows = []
    for name in systems:
        r = _row(summary, name)
        if r is None:
            raise ValueError(f"the test run has no system {name!r}")
        spec = parse_system(name)
        key = {"greedy": "greedy", "gad": "gad"}.get(spec.kind)
        if spec.kind == "fairseq" and spec.beam == 1:
            key = "greedy"
        if spec.kind == "gadpp" and name == hq:
            key = "gadpp_hq"
        p = GAD_TABLE9.get(key, {}) if key else {}
        rows.append({"system": name, "label": r["label"], "bleu": r["bleu"], "rep_ratio_pct": _r(r["rep_ratio_pct"], 3),
                     "paper_bleu": p.get("bleu"), "paper_rep_pct": p.get("rep")})
    for key in ("cmlm_t4", "cmlm_t10"):
        p = GAD_TABLE9[key]
        rows.append({"system": key, "label": p["label"] + " (paper only)", "bleu": None, "rep_ratio_pct": None,
                     "paper_bleu": p["bleu"], "paper_rep_pct": p["rep"]})
    return pd.DataFrame(rows)
