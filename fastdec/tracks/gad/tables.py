"""Tables and Figure 4 of the GAD track, read from benchmark runs in the one results schema (fastdec.bench.results),
with the paper's numbers beside ours (``paper_*`` columns: :data:`fastdec.tracks.gad.paper.GAD_TABLE1` and
:mod:`fastdec.tracks.gad.paper`). Rows are named by method labels (``fairseq-beam5``, ``greedy``, ``nat-k10``,
``gad-k10``, ``gad-k10-top3-tau1`` ...); which paper row a method compares with follows from its fields."""
from __future__ import annotations

import math
from typing import Dict, Iterable, List, Optional, Sequence

import pandas as pd

from fastdec.bench.methods import Method, parse_method
from fastdec.bench.results import backend_identical_pct
from fastdec.report.tables import OURS, append_paper_only
from fastdec.tracks.gad.beside import (method_setting, paper_beside, paper_speed_same_impl, setting_columns_together,
                                       speed_same_impl)
from fastdec.tracks.gad.paper import (GAD_BIG_K, GAD_BIG_REFERENCE, GAD_DEV_ACCEPTED, GAD_DEV_ACCEPTED_K, GAD_TABLE1,
                                      GAD_TABLE2, GAD_TABLE3, GAD_TABLE3_GREEDY_BLEU, GAD_TABLE3_K, GAD_TABLE4,
                                      GAD_TABLE5, GAD_TABLE5_K, GAD_TABLE6, GAD_TABLE6_SETTINGS, GAD_TABLE7, GAD_TABLE8,
                                      GAD_TABLE8_TOTAL_MIB, GAD_TABLE9, GAD_TABLE14, GE_TABLE5_DIRECTIONS,
                                      gad_table1_rows, gad_table4_rows, ge_table5_rows)
from fastdec.text import remove_bpe

__all__ = ["paper_en_de_only", "paper_key", "table1", "table2_block_size", "table3_beta_tau", "table4_big",
           "table5_nat_big", "table6_teachers", "table7_modules", "table8_memory", "table9_repetition", "repetition_ratio",
           "per_sentence_speedup", "speedup_histogram"]


def _r(x, nd: Optional[int] = 2):
    """A summary value for a table: None for missing/NaN, rounded to ``nd`` digits (an int for ``nd=None``)."""
    if x is None or (isinstance(x, float) and math.isnan(x)):
        return None
    return int(x) if nd is None else round(float(x), nd)


def _row(run, label: str, required: bool = True) -> Optional[pd.Series]:
    r = run.row(label)
    if r is None and required:
        raise ValueError(f"{run.path} has no method {label} (it has {', '.join(run.summary.index)}); "
                         "rerun its benchmark (snakemake regenerates it from the config)")
    return r


def _gad(k, beta=1, tau=0.0) -> str:
    """The label of GAD (beta = 1) or GAD++ at block size k."""
    return parse_method(f"gad:k={k}:beta={beta}:tau={tau}").label


# the paper's reference rows of Table 1 by benchmark: the GAD paper's Table 1 (WMT14 En-De, base models), the journal
# version's Table 14 (the other directions), and the GAD paper's Table 4 (WMT14 En-De, big models)
BIG = GAD_BIG_REFERENCE
REFERENCES = ("wmt14_en-de", "wmt14_de-en", "wmt16_en-ro", "wmt16_ro-en", BIG)


def paper_table1(reference: str = "wmt14_en-de") -> Dict[str, dict]:
    """Paper rows for Table 1: the GAD paper's Table 1 (WMT14 En-De), the journal version's Table 14 for another
    benchmark direction (``wmt14_de-en``, ``wmt16_en-ro``, ``wmt16_ro-en``), or the GAD paper's Table 4 for its
    big models (``wmt14_en-de_big``)."""
    if reference not in REFERENCES:
        raise ValueError(f"unknown paper reference {reference!r}; choose one of {', '.join(REFERENCES)}")
    if reference == BIG:
        return GAD_TABLE4
    return GAD_TABLE1 if reference == "wmt14_en-de" else GAD_TABLE14[reference]


def paper_k(reference: str) -> int:
    """The block size of the paper's Table 1 rows of ``reference`` (25; Table 4's big models: 30)."""
    return GAD_BIG_K if reference == BIG else 25


def paper_en_de_only(df: pd.DataFrame, reference: str, table: str) -> pd.DataFrame:
    """``df`` as is for WMT14 En-De; for another ``reference`` the paper columns empty, the paper-only rows dropped
    and a ``paper_note`` column saying why: the GAD paper reports ``table`` for WMT14 En-De only."""
    if reference == "wmt14_en-de":
        return df
    if "label" in df:
        df = df[~df["label"].astype(str).str.endswith("(paper only)")]
    df = df.assign(**{c: None for c in df.columns if c.startswith("paper_")})
    df["paper_note"] = f"the GAD paper reports {table} for WMT14 En-De only (none for {reference})"
    return df.reset_index(drop=True)


def paper_key(m: Method, reference: str = "wmt14_en-de") -> Optional[str]:
    """The paper's Table 1/4/14 row ``m`` compares with: GAD++ rows by the paper's (beta, tau) of ``reference``. The
    block size is not matched here: :func:`fastdec.tracks.gad.beside.paper_beside` puts a row of another k in its
    own column."""
    if m.backend != "torch" or m.policy != "fixed":  # another verifier implementation or draft policy: not in the paper
        return None
    if m.name == "fairseq":
        return {5: "verifier_b5", 1: "verifier_b1"}.get(m.beam) if m.batch_size == 1 else None
    if m.name in ("greedy", "nat") or (m.name == "gad" and m.beta == 1):
        return {"greedy": "verifier_b1", "nat": "nat_drafter", "gad": "gad"}[m.name]
    rows = GAD_TABLE4 if reference == BIG else GAD_TABLE14.get(reference, {})
    return next((key for key in ("gad_pp_hq", "gad_pp_he") if m.name == "gad" and key in rows
                 and (rows[key]["beta"], float(rows[key]["tau"])) == (m.beta, m.tau)), None)


def paper_setting(m: Method, key: Optional[str], k: int) -> Dict[str, object]:
    """The settings the paper measured its row ``key`` at, as :func:`method_setting` names ours (k: ``k``)."""
    if key in ("nat_drafter", "gad"):
        return {"k": k}
    if key in ("gad_pp_hq", "gad_pp_he"):
        return {"k": k, "beta": m.beta, "tau": m.tau}
    return {}


def table1(run, reference: str = "wmt14_en-de") -> pd.DataFrame:
    """GAD Table 1: every method of the test run, its iterations, BLEU, speedup over beam search and identical-to-
    greedy count, the paper's numbers beside (a row of another block size than the paper's: in ``paper_k<K>_*``).
    ``speed_same_impl`` sits beside the paper's speed (module :mod:`fastdec.tracks.gad.beside`)."""
    ref, k = paper_table1(reference), paper_k(reference)
    greedy_speed = ref.get("verifier_b1", {}).get("speed")
    out = []
    for m in run.methods():
        key = paper_key(m, reference)
        r, paper = _row(run, m.label), ref.get(key or "", {})
        values = {"iterations": "N" if m.name in ("fairseq", "greedy") and paper else paper.get("iterations"),
                  "bleu": paper.get("bleu"), "speed": paper.get("speed"),
                  "speed_same_impl": paper_speed_same_impl(m, paper.get("speed"), greedy_speed)}
        cells = paper_beside(values, method_setting(m), paper_setting(m, key, k))
        out.append({
            "label": m.label, "mean_iterations": _r(r["mean_iterations"]),
            "paper_iterations": cells.pop("paper_iterations"),
            "tokens_per_iteration": _r(r["tokens_per_iteration"]),
            "mean_accepted": _r(r["mean_accepted"]) if m.name == "gad" else None,
            "bleu": _r(r["bleu"]), "paper_bleu": cells.pop("paper_bleu"), "ms_per_sentence": _r(r["ms_per_sentence"]),
            # what one draft-and-verify iteration costs: the price of the tokens it gets accepted
            "ms_per_iteration": _r(r["ms_per_sentence"] / r["mean_iterations"]
                                   if r["mean_iterations"] and not math.isnan(r["mean_iterations"]) else None, 3),
            "speedup_vs_beam": _r(r["speedup_vs_beam"]), "speedup_vs_greedy": _r(r["speedup_vs_greedy"]),
            "speed_same_impl": speed_same_impl(run, m), "paper_speed": cells.pop("paper_speed"),
            "paper_speed_same_impl": cells.pop("paper_speed_same_impl"), **cells,
            "identical_to_greedy_pct": _r(r["identical_to_greedy_pct"]),
            "identical_to_greedy": _r(r["identical_to_greedy"], None),
            "identical_to_backend_greedy": _r(r.get("identical_to_backend_greedy"), None),
            "identical_to_backend_greedy_pct": _r(backend_identical_pct(r)),
            "n_sentences": _r(r["n_sentences"], None), "signature": r["bleu_signature"] if isinstance(r["bleu_signature"], str) else None,
        })
    df = setting_columns_together(pd.DataFrame(out))
    # the NAT systems the papers cite: Xia's Table 1 and Ge's Table 5 for WMT14 En-De, Ge's Table 5 for the others
    cited = gad_table1_rows() + ge_table5_rows(reference) if reference == "wmt14_en-de" else \
        ge_table5_rows(reference) if reference in GE_TABLE5_DIRECTIONS else []
    return append_paper_only(df, cited)


def table2_block_size(run, block_sizes: Sequence[int], beta: int = 3, tau: float = 1.0) -> pd.DataFrame:
    """GAD Table 2: per block size k, GAD++ (top-beta, tau) tokens per iteration, BLEU and speedup over beam search,
    and vanilla GAD's (``gad_*``), on the validation subset; first the speed baseline and greedy decoding. The paper
    gives vanilla GAD's tokens per iteration only in footnote 8 (k = 25: ``paper_gad_tok``). The paper's rows are
    top-3, tau = 1.0: for another (beta, tau) they go in ``paper_top3_tau1_*``; ``speed_same_impl`` (against the
    engine's greedy decoding for the engine rows) sits beside the paper's speed."""
    empty = {"gad_tokens_per_iteration": None, "gad_speedup_vs_beam": None, "gad_speedup_vs_greedy": None,
             "gad_identical_to_greedy_pct": None, "paper_gad_tok": None}
    methods = {m.label: m for m in run.methods()}
    rows = []
    for label, mean_accepted, paper in ((run.meta.get("speed_baseline"), None, GAD_TABLE2["at_b5"]),
                                        ("greedy", 0.0, {"bleu": GAD_TABLE3_GREEDY_BLEU})):
        r = run.row(label) if label else None
        if r is not None:
            rows.append({"label": label, "k": "-", "tokens_per_iteration": _r(r["tokens_per_iteration"]),
                         "mean_accepted": mean_accepted, "bleu": _r(r["bleu"]),
                         "speedup_vs_beam": _r(r["speedup_vs_beam"]),
                         "speedup_vs_greedy": _r(r["speedup_vs_greedy"]), **empty,
                         "speed_same_impl": speed_same_impl(run, methods[label]), "paper_tok": paper.get("tok"),
                         "paper_bleu": paper["bleu"], "paper_speed": paper.get("speed")})
    for k in block_sizes:
        pp, gd = _row(run, _gad(k, beta, tau), required=False), _row(run, _gad(k), required=False)
        if pp is None and gd is None:
            raise ValueError(f"{run.path} has no GAD/GAD++ method for block size k={k}")
        p = GAD_TABLE2.get(int(k), {})
        get = (lambda col: _r(pp[col]) if pp is not None else None)
        rows.append({"label": _gad(k, beta, tau), "k": str(int(k)),
                     "tokens_per_iteration": get("tokens_per_iteration"), "mean_accepted": get("mean_accepted"),
                     "bleu": get("bleu"), "speedup_vs_beam": get("speedup_vs_beam"),
                     "speedup_vs_greedy": get("speedup_vs_greedy"), **empty,
                     "speed_same_impl": speed_same_impl(run, methods[_gad(k, beta, tau)]) if pp is not None
                     else None,
                     **paper_beside({"tok": p.get("tok"), "bleu": p.get("bleu"), "speed": p.get("speed")},
                                    {"beta": int(beta), "tau": float(tau)}, {"beta": 3, "tau": 1.0})})
        if int(k) == GAD_DEV_ACCEPTED_K:
            rows[-1]["paper_gad_tok"] = GAD_DEV_ACCEPTED["gad"]
        if gd is not None:
            rows[-1].update(gad_tokens_per_iteration=_r(gd["tokens_per_iteration"]),
                            gad_speedup_vs_beam=_r(gd["speedup_vs_beam"]),
                            gad_speedup_vs_greedy=_r(gd["speedup_vs_greedy"]),
                            gad_identical_to_greedy_pct=_r(gd["identical_to_greedy_pct"]))
    return setting_columns_together(pd.DataFrame(rows))


def table3_beta_tau(run, k: int, betas: Sequence[int], taus: Sequence[float]) -> pd.DataFrame:
    """GAD Table 3: GAD++ (block size k) tokens per iteration, BLEU and speedup over beam search per (beta, tau) on
    the validation subset: one row per tau, columns ``top<beta>_tok / _bleu / _speed`` and the paper's
    ``paper_top<beta>_tok / _bleu``, measured at k = 25 (for another k in ``paper_k25_top<beta>_*``); the first row is
    greedy decoding (paper BLEU 26.62, whatever k)."""
    def cells(r, beta, paper, setting):
        return {f"top{beta}_tok": _r(r["tokens_per_iteration"]), f"top{beta}_bleu": _r(r["bleu"]),
                f"top{beta}_speed": _r(r["speedup_vs_beam"]),
                **paper_beside({f"top{beta}_tok": paper[0], f"top{beta}_bleu": paper[1]}, {"k": int(k)}, setting)}

    g = _row(run, "greedy")
    rows = [{"tau": "greedy", **{c: v for b in betas for c, v in cells(g, b, (1.0, GAD_TABLE3_GREEDY_BLEU), {}).items()}}]
    for tau in taus:
        row = {"tau": f"{float(tau):g}"}
        for beta in betas:
            row.update(cells(_row(run, _gad(k, beta, tau)), beta,
                             GAD_TABLE3.get((int(beta), float(tau)), (None, None)), {"k": GAD_TABLE3_K}))
        rows.append(row)
    return setting_columns_together(pd.DataFrame(rows))


def table4_big(run) -> pd.DataFrame:
    """GAD Table 4 (= Ge et al. Table 8): the big verifier's and big NAT drafter's test run (Table 1's columns) beside
    the paper's big-model rows (k = 30; GAD++ top-3 tau = 1.0 and top-5 tau = 6.0), then the paper's teacher and
    Stern et al.'s Blockwise rows as cited rows."""
    df = table1(run, BIG)
    return append_paper_only(df[df["source"] == OURS].drop(columns="source"), gad_table4_rows())


def table5_nat_big(run, specs: Sequence[str], suffix: str) -> pd.DataFrame:
    """GAD Table 5 (= Ge et al. Table 9): engine greedy, then each GAD/GAD++ method of ``specs`` with the base NAT
    drafter and again with the NAT-big drafter (its label + ``suffix``), one base verifier: tokens per iteration,
    iterations, BLEU and speedup over the engine's greedy decoding, the paper's (k = 30) beside."""
    def row(label, size, key, setting):
        r, p = _row(run, label), GAD_TABLE5.get((key, size), {}) if key else {}
        return {"label": label, "drafter": size, "tokens_per_iteration": _r(r["tokens_per_iteration"]),
                "mean_iterations": _r(r["mean_iterations"]), "bleu": _r(r["bleu"]),
                "speedup_vs_greedy": _r(r["speedup_vs_greedy"]),
                **paper_beside({"tok": p.get("tok"), "iterations": p.get("iterations"), "bleu": p.get("bleu")},
                               setting, {"k": GAD_TABLE5_K} if key != "greedy" else {})}

    rows = [row("greedy", "base", "greedy", {})]
    for spec in specs:
        m = parse_method(spec)
        key = "gad" if m.beta == 1 else next((k for (k, size), p in GAD_TABLE5.items() if size == "base" and
                                              (p.get("beta"), p.get("tau")) == (m.beta, m.tau)), None)
        for size, label in (("base", m.label), ("big", m.label + suffix)):
            rows.append(row(label, size, key, {"k": int(m.k)}))
    return setting_columns_together(pd.DataFrame(rows))


def table6_teachers(run, teachers: str, size: str, teacher_bleu: Optional[float] = None) -> pd.DataFrame:
    """GAD Table 6: this run's half of the single-teacher vs 3-teacher-ensemble comparison (``teachers``: single or
    ensemble, ``size``: base or big models): the paper's rows the run's methods compare with (Table 1/4 settings),
    the paper's same half beside ours and its other half in ``paper_<single|ensemble>_*``. ``teacher_bleu``: our
    teacher's beam search (one model: the paper's ensemble teacher goes in the ``ensemble`` columns)."""
    reference = BIG if size == "big" else "wmt14_en-de"
    k, greedy_speed = GAD_TABLE6_SETTINGS[size]["k"], GAD_TABLE6[(teachers, size)]["verifier_b1"]["speed"]

    def paper(key, m, setting):
        """Both halves' figures of the paper's row ``key``, each by the rule of :func:`paper_beside`."""
        ours = {"teachers": teachers if m else "single", **(method_setting(m) if m else {})}
        cells: Dict[str, object] = {}
        for half in ("single", "ensemble"):
            p = GAD_TABLE6[(half, size)][key]
            values = {"iterations": p.get("iterations", "N"), "bleu": p["bleu"], "speed": p.get("speed"),
                      "speed_same_impl": paper_speed_same_impl(m, p.get("speed"), greedy_speed) if m else None}
            for c, v in paper_beside(values, ours, {"teachers": half, **setting}).items():
                if cells.get(c) is None:
                    cells[c] = v
        return cells

    rows = [{"label": "teacher (beam search)", "mean_iterations": None, "bleu": _r(teacher_bleu),
             "speedup_vs_beam": None, "speed_same_impl": None, **paper("teacher_b5", None, {})}]
    for m in run.methods():
        key = paper_key(m, reference)
        if key is None:
            continue
        r = _row(run, m.label)
        rows.append({"label": m.label, "mean_iterations": _r(r["mean_iterations"]), "bleu": _r(r["bleu"]),
                     "speedup_vs_beam": _r(r["speedup_vs_beam"]), "speed_same_impl": speed_same_impl(run, m),
                     **paper(key, m, paper_setting(m, key, k))})
    return setting_columns_together(pd.DataFrame(rows))


# the GAD++ setting of the paper's Tables 7 and 8 (high efficiency, base models)
GAD_PP_HE_SETTING = {"k": 25, "beta": 5, "tau": 3.0}

# Table 7 module -> (row name, summary column); "others" = the rest of each sentence's time
_MODULES = [("at_encoder", "AT encoder", "time_encoder_s"), ("nat_encoder", "NAT encoder", "time_drafter_encoder_s"),
            ("nat_decoder", "NAT decoder", "time_drafter_decoder_s"), ("at_decoder", "AT decoder", "time_verifier_s")]


def table7_modules(run, labels: Sequence[str]) -> pd.DataFrame:
    """GAD Table 7: mean time per sentence (ms) and share of each module, for each engine method of ``labels``.

    Columns ``<label>_ms`` / ``<label>_pct``, then the paper's GAD++ (k=25, top-5, tau=3.0): ``paper_ms`` /
    ``paper_pct`` where the first of ``labels`` has that setting, else ``paper_k25_top5_tau3_*``. AT decoder = the
    verifier's passes incl. the acceptance rule; Others = the total minus the four modules (the loop's bookkeeping
    and the drafter's own outside its encoder and decoder passes).
    """
    kinds = {m.label: m.kind for m in run.methods()}
    cols: Dict[str, Dict[str, float]] = {}
    for label in labels:
        r = _row(run, label)
        if kinds.get(label) != "engine":
            raise ValueError(f"{label} has no module times of the draft-verify loop (only engine methods do)")
        n = r["n_sentences"]
        ms = {key: 1000.0 * (r[col] if not math.isnan(r[col]) else 0.0) / n for key, _, col in _MODULES}
        ms["others"] = max(1000.0 * r["total_time_s"] / n - sum(ms.values()), 0.0)
        ms["total"] = 1000.0 * r["total_time_s"] / n
        cols[label] = ms
    first = next(m for m in run.methods() if m.label == labels[0])
    rows = []
    for key, name in [(k, n) for k, n, _ in _MODULES] + [("others", "Others"), ("total", "Total")]:
        row = {"module": name}
        for label, ms in cols.items():
            row[f"{label}_ms"] = _r(ms[key], 3)
            row[f"{label}_pct"] = _r(100.0 * ms[key] / ms["total"] if ms["total"] else None)
        row.update(paper_beside(dict(zip(("ms", "pct"), GAD_TABLE7[key])), method_setting(first), GAD_PP_HE_SETTING))
        rows.append(row)
    return pd.DataFrame(rows)


def table8_memory(measurements: List[dict]) -> pd.DataFrame:
    """GAD Table 8 from :func:`fastdec.tracks.gad.memory.measure_all` rows (one per method, each in a fresh process)."""
    rows = []
    for x in measurements:
        m = parse_method(x["method"])
        key = {"fairseq": "at_b5" if m.beam > 1 else "greedy", "greedy": "greedy",
               "gad": "gad" if m.beta == 1 else "gadpp"}.get(m.name)
        paper = GAD_TABLE8.get(key, (None, None))
        rows.append({"label": m.label, "device": x["device"], "peak_mb": _r(x["peak_mb"], 1),
                     "after_load_mb": _r(x["after_load_mb"], 1),
                     "decode_extra_mb": _r(x["peak_mb"] - x["after_load_mb"], 1), "weights_mb": _r(x["weights_mb"], 1),
                     "measure": x["measure"],
                     **paper_beside({"mib": paper[0], "pct": paper[1]}, method_setting(m),
                                    {"gad": {"k": 25}, "gadpp": GAD_PP_HE_SETTING}.get(key, {})),
                     "paper_total_mib": GAD_TABLE8_TOTAL_MIB, "n_sentences": x["sentences"]})
    return setting_columns_together(pd.DataFrame(rows))


def repetition_ratio(lines: Iterable[str]) -> float:
    """Token repetition ratio: the share of tokens identical to the token just before them (in the same line).

    Computed on whitespace tokens of the BPE-merged, Moses-tokenised output (``remove_bpe`` of the hypotheses),
    the proxy of NAT's multi-modality problem used in the GAD paper's Table 9 (e.g. AT greedy 0.18 %).
    Returns a fraction in [0, 1] (0.0 for an empty corpus).
    """
    total = repeats = 0
    for line in lines:
        toks: List[str] = remove_bpe(line).split()
        total += len(toks)
        repeats += sum(1 for a, b in zip(toks, toks[1:]) if a == b)
    return repeats / total if total else 0.0


def table9_repetition(run, labels: Sequence[str], hq: Optional[str] = None) -> pd.DataFrame:
    """GAD Table 9: BLEU and token repetition ratio (%) of the methods ``labels`` (from the run's hypotheses), the
    paper's beside (and its CMLM rows). ``hq`` labels the GAD++ method compared with the paper's (top-3, tau=1.0)."""
    methods = {m.label: m for m in run.methods()}
    rows = []
    for label in labels:
        r, m = _row(run, label), methods.get(label)
        key = "gadpp_hq" if label == hq else "greedy" if m.name == "greedy" or (m.name == "fairseq" and m.beam == 1) \
            else "gad" if m.name == "gad" and m.beta == 1 else None
        p = GAD_TABLE9.get(key, {})
        paper = {"gad": {"k": 25}, "gadpp_hq": {"k": 25, "beta": 3, "tau": 1.0}}.get(key, {})
        rows.append({"label": label, "bleu": _r(r["bleu"]),
                     "rep_ratio_pct": _r(100 * repetition_ratio(run.hyps(label)), 3),
                     **paper_beside({"bleu": p.get("bleu"), "rep_pct": p.get("rep")}, method_setting(m), paper)})
    for key in ("cmlm_t4", "cmlm_t10"):
        p = GAD_TABLE9[key]
        rows.append({"label": p["label"] + " (paper only)", "bleu": None, "rep_ratio_pct": None,
                     "paper_bleu": p["bleu"], "paper_rep_pct": p["rep"]})
    return setting_columns_together(pd.DataFrame(rows))


def per_sentence_speedup(records: Dict[str, list], label: str, baseline: str) -> pd.Series:
    """``time(baseline) / time(label)`` per sentence id (both decoded in the same interleaved run)."""
    for name in (label, baseline):
        if name not in records:
            raise ValueError(f"the run has no method {name!r} (it has {', '.join(records)})")
    mine, base = {r.id: r.time for r in records[label]}, {r.id: r.time for r in records[baseline]}
    ids = sorted(set(mine) & set(base))
    if any(mine[i] <= 0 for i in ids):
        raise ValueError(f"{label}: non-positive sentence time")
    return pd.Series([base[i] / mine[i] for i in ids], index=ids, name="speedup")


def speedup_histogram(speedup: pd.Series, out_png: str, *, title: str, xlabel: str, bin_width: float = 0.5) -> Dict:
    """Histogram of per-sentence speedups (bins of ``bin_width``), like Figure 4; returns summary statistics."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import numpy as np

    if speedup.empty:
        raise ValueError("no sentences to plot")
    bins = np.arange(0.0, max(float(speedup.max()), 1.0) + bin_width, bin_width)
    fig, ax = plt.subplots(figsize=(6.4, 3.6), dpi=120)
    ax.hist(speedup.values, bins=bins, color="#4878cf", edgecolor="white")
    ax.axvline(1.0, color="grey", linestyle=":", linewidth=1)
    med = float(speedup.median())
    ax.axvline(med, color="#d65f5f", linestyle="--", linewidth=1.2, label=f"median {med:.2f}x")
    ax.set_xlabel(xlabel)
    ax.set_ylabel("sentences")
    ax.set_title(title, fontsize=10)
    ax.legend(frameon=False)
    fig.tight_layout()
    fig.savefig(out_png)
    plt.close(fig)
    q = speedup.quantile([0.1, 0.9])
    return {"sentences": int(speedup.size), "mean": float(speedup.mean()), "median": med, "p10": float(q.loc[0.1]),
            "p90": float(q.loc[0.9]), "min": float(speedup.min()), "max": float(speedup.max()),
            "share_3_to_6": float(((speedup >= 3) & (speedup <= 6)).mean())}
