"""The GEC track's tables (IAD paper, Tables 1 and 12) from benchmark runs (:mod:`fastdec.bench.results`) and the
M2 scores of ``fastdec m2score --json`` (``precision``, ``recall``, ``f0.5``, ``approximate_sentences``).

Every table carries the paper's figure beside ours (``paper_*`` columns, :mod:`fastdec.tracks.gec.paper`).
"""
from __future__ import annotations

from typing import List, Mapping, Optional, Tuple

import pandas as pd

from fastdec.bench.methods import Method
from fastdec.bench.results import Run, backend_identical_pct
from fastdec.report.tables import OURS, append_paper_only
from fastdec.tracks.gec.paper import IAD_TABLE1, IAD_TABLE1_SYNTHETIC, IAD_TABLE12, IAD_TABLE4, ge_table3_rows
from fastdec.report.tables import to_float

__all__ = ["system", "table_methods", "table1", "table4", "not_lossless", "table12"]


def _r(v, scale: float = 1.0) -> Optional[float]:
    f = to_float(v)
    return None if f is None else round(scale * f, 2)


def system(m: Method) -> Tuple[str, Optional[str]]:
    """(display name, key of the paper's row in IAD_TABLE1) of a method of the GEC benchmark."""
    if m.name == "fairseq":
        return (f"fairseq beam={m.beam}", "fairseq-beam") if m.beam > 1 else ("fairseq greedy (beam=1)", "fairseq-greedy")
    if m.name == "ct2":  # a peer engine, not in the paper
        return f"CTranslate2 {'greedy' if m.beam == 1 else f'beam={m.beam}'} ({m.precision})", None
    name = {"greedy": "engine greedy", "iad": "engine IAD"}.get(m.name, m.label)
    key = m.name
    if m.backend != "torch":  # not in the paper: the same algorithm on another verifier implementation
        name, key = f"{name} ({m.backend} backend)", None
    if m.policy != "fixed":  # not in the paper: draft lengths chosen by what a pass costs
        name, key = f"{name}, {m.policy}-aware draft length", None
    if m.max_draft_len is not None:  # not in the paper: IAD with a cap on the draft length
        return f"{name}, drafts of at most {m.max_draft_len} tokens", None
    return name, key


def table_methods(run: Run) -> List[Method]:
    """The run's batch-1 methods in table order: as benchmarked, draft-capped variants last by cap."""
    return sorted((m for m in run.methods() if m.batch_size == 1), key=lambda m: m.max_draft_len or 0)


def _paper_vs_greedy(paper: Mapping, greedy: Mapping) -> Optional[float]:
    """The paper's speedup of a drafting row over its own greedy decoding (the paper's speedups are over its beam
    search, in the one implementation it timed): beside ours against the engine's greedy on the same backend
    (``speedup_vs_greedy``), so a gain of our implementation over fairseq is not credited to the method. None for
    the greedy row itself and for rows the paper gives no speedup."""
    if paper is greedy or not paper.get("speedup") or not greedy.get("speedup"):
        return None
    return round(paper["speedup"] / greedy["speedup"], 2)


def table1(run: Run, m2: Mapping[str, dict], *, split: str = "test", corpus: str = "",
           synthetic: bool = False) -> pd.DataFrame:
    """IAD paper, Table 1: total time, speedups over beam 5 and greedy, P/R/F0.5, identical-to-greedy %,
    iterations; ``m2`` maps a method label to its M2 scores. ``synthetic``: our model was pretrained on synthetic
    pairs (gec.pretrain), so its rows sit beside the paper's synthetic-data rows and the others are paper-only."""
    reference, other = (IAD_TABLE1_SYNTHETIC, IAD_TABLE1) if synthetic else (IAD_TABLE1, IAD_TABLE1_SYNTHETIC)
    rows = []
    for m in table_methods(run):
        r, s = run.row(m.label), m2.get(m.label, {})
        name, key = system(m)
        paper = reference.get(key, {})
        rows.append({
            "system": name, "method": m.label, "n_sentences": int(r["n_sentences"]),
            **{c: _r(r[c]) for c in ("total_time_s", "ms_per_sentence", "speedup_vs_beam", "speedup_vs_greedy")},
            "paper_speedup_vs_greedy": _paper_vs_greedy(paper, reference["fairseq-greedy"]) if paper else None,
            "P": _r(s.get("precision"), 100), "R": _r(s.get("recall"), 100),
            "F0.5": _r(s.get("f0.5", s.get("f")), 100),
            "identical_to_greedy_pct": _r(r["identical_to_greedy_pct"]),
            "identical_to_backend_greedy_pct": _r(backend_identical_pct(r)),
            "m2_approximate_sentences": s.get("approximate_sentences", 0) if s else None,
            "mean_iterations": _r(r["mean_iterations"]), "tokens_per_iteration": _r(r["tokens_per_iteration"]),
            "paper_system": paper.get("label"), "paper_latency_s": paper.get("latency_s"),
            "paper_speedup": paper.get("speedup"), "paper_P": paper.get("p"), "paper_R": paper.get("r"),
            "paper_F0.5": paper.get("f05"), "paper_identical_pct": paper.get("identical_pct"),
            "device": run.meta.get("device"), "threads": run.meta.get("threads"),
            "eval_set": f"{corpus} {split}".strip(),
        })
    if not rows:
        raise ValueError(f"{run.path}: no batch-1 methods in the run")
    # the same table's rows of the paper's other model (with or without synthetic pretraining): the paper's only
    cited = [{"system": p["label"], "paper_system": p["label"], "paper_latency_s": p["latency_s"],
              "paper_speedup": p["speedup"], "paper_P": p["p"], "paper_R": p["r"], "paper_F0.5": p["f05"],
              "paper_identical_pct": p.get("identical_pct")} for p in other.values()]
    return append_paper_only(pd.DataFrame(rows), cited)


def table4(run: Run, scores: Mapping[str, dict], *, dataset: str, split: str = "test") -> pd.DataFrame:
    """IAD paper, Table 4, the columns of one dataset (``nlpcc18``: F0.5; ``wikilarge``: SARI and BLEU) and the
    speedup over beam 5; ``scores`` maps a method label to its M2 (``f0.5``, ...) or SARI (``sari``, ``bleu``) JSON."""
    if dataset not in IAD_TABLE4:
        raise ValueError(f"Table 4 has no {dataset!r} columns; it has {', '.join(IAD_TABLE4)}")
    sari = dataset == "wikilarge"
    rows = []
    for m in table_methods(run):
        r, s = run.row(m.label), scores.get(m.label, {})
        name, key = system(m)
        paper = IAD_TABLE4[dataset].get(key, {})
        quality = ({"SARI": _r(s.get("sari")), "BLEU": _r(s.get("bleu"))} if sari else
                   {"P": _r(s.get("precision"), 100), "R": _r(s.get("recall"), 100),
                    "F0.5": _r(s.get("f0.5", s.get("f")), 100)})
        paper_quality = ({"paper_SARI": paper.get("sari"), "paper_BLEU": paper.get("bleu")} if sari else
                         {"paper_F0.5": paper.get("f05")})
        rows.append({
            "system": name, "method": m.label, "n_sentences": int(r["n_sentences"]),
            **{c: _r(r[c]) for c in ("total_time_s", "ms_per_sentence", "speedup_vs_beam", "speedup_vs_greedy")},
            "paper_speedup_vs_greedy": _paper_vs_greedy(paper, IAD_TABLE4[dataset]["fairseq-greedy"]) if paper else None,
            **quality, "identical_to_greedy_pct": _r(r["identical_to_greedy_pct"]),
            "tokens_per_iteration": _r(r["tokens_per_iteration"]),
            "paper_system": paper.get("label"), **paper_quality, "paper_speedup": paper.get("speedup"),
            "device": run.meta.get("device"), "threads": run.meta.get("threads"), "eval_set": f"{dataset} {split}",
            **({"bleu_signature": s.get("signature")} if sari else {}),
        })
    if not rows:
        raise ValueError(f"{run.path}: no batch-1 methods in the run")
    return pd.DataFrame(rows)


# our method label -> the paper's 12+2 BART-Init row it reproduces (config/gec_bart.yaml)
BART_12_2 = {"fairseq-greedy": "12+2 BART-Init (beam=1)", "iad": "12+2 BART-Init (IAD)"}


def table3(table1_df: pd.DataFrame, bart_12_2: bool = False) -> pd.DataFrame:
    """IAD paper, Table 3 (efficient GEC models, CoNLL-14): our Table 1 systems on our benchmark set (its
    ``eval_set`` says which), F0.5 and speedup over beam search, then the cited rows as paper-only rows. With
    ``bart_12_2`` (the BART-initialised 12-layer encoder / 2-layer decoder model, config/gec_bart.yaml) our greedy
    and IAD rows carry the paper's 12+2 BART-Init numbers; otherwise those are paper-only too. The paper's speedup is
    over a Transformer-big's beam search, ours over the same model's beam search."""
    ours = table1_df[table1_df["source"] == OURS]
    rows = pd.DataFrame({"system": ours["system"], "method": ours["method"], "eval_set": ours["eval_set"],
                         "F0.5": ours["F0.5"], "speedup_vs_beam": ours["speedup_vs_beam"],
                         "speedup_vs_greedy": ours["speedup_vs_greedy"],
                         "identical_to_greedy_pct": ours["identical_to_greedy_pct"]})
    cited = ge_table3_rows()
    if bart_12_2:
        paper = {r["system"].split(" [")[0]: r for r in cited}
        greedy = {"speedup": paper[BART_12_2["fairseq-greedy"]]["paper_speedup"]}
        for col in ("paper_system", "paper_F0.5", "paper_speedup", "paper_speedup_vs_greedy"):
            rows[col] = None
        for i, method in rows["method"].items():
            if method in BART_12_2:
                p = paper[BART_12_2[method]]
                vs_greedy = None if method == "fairseq-greedy" else _paper_vs_greedy({"speedup": p["paper_speedup"]},
                                                                                       greedy)
                rows.loc[i, ["paper_system", "paper_F0.5", "paper_speedup", "paper_speedup_vs_greedy"]] = [
                    BART_12_2[method], p["paper_F0.5"], p["paper_speedup"], vs_greedy]
        cited = [r for r in cited if r["system"].split(" [")[0] not in BART_12_2.values()]
    return append_paper_only(rows, cited)


def not_lossless(run: Run) -> List[str]:
    """``"label: identical/sentences"`` of every exact method (IAD, capped or not) whose outputs are not all
    token-identical to the greedy output of its own verifier backend (the engine's greedy for the reference)."""
    out = []
    for m in run.methods():
        r = run.row(m.label)
        same = to_float(r.get("identical_to_backend_greedy"))
        same = int(r["identical_to_greedy"]) if same is None else int(same)
        if m.exact and same != int(r["n_sentences"]):
            out.append(f"{m.label}: {same}/{int(r['n_sentences'])}")
    return out


def table12(runs: Mapping[int, Run], *, model: str = "", beam: int = 5) -> pd.DataFrame:
    """IAD paper, Table 12: CPU latency and speedup over beam 5 by thread count (``runs``: threads -> run).

    One row per thread count of ours or of the paper's (8 and 2 threads), ours and the paper's side by side.
    """
    base = f"fairseq-beam{beam}"
    rows = []
    for threads in sorted(set(runs) | set(IAD_TABLE12), reverse=True):
        paper = IAD_TABLE12.get(threads, {})
        row = {"threads": threads, "model": None}
        if threads in runs:
            run = runs[threads]
            if run.row(base) is None:
                raise ValueError(f"{run.path}: no {base} row (the baseline of Table 12)")

            def col(label, c):
                return _r(run.row(label)[c]) if run.row(label) is not None else None

            row.update({
                "model": model or None, "sentences": int(run.row(base)["n_sentences"]),
                f"beam{beam}_latency_s": col(base, "total_time_s"),
                "fairseq_greedy_latency_s": col("fairseq-greedy", "total_time_s"),
                "engine_greedy_latency_s": col("greedy", "total_time_s"), "iad_latency_s": col("iad", "total_time_s"),
                f"beam{beam}_speedup": 1.0, "fairseq_greedy_speedup": col("fairseq-greedy", "speedup_vs_beam"),
                "iad_speedup": col("iad", "speedup_vs_beam"),
                # the same implementation's ratio: the paper gives none (its Table 12 has no greedy row)
                "iad_speedup_vs_engine_greedy": col("iad", "speedup_vs_greedy"),
                "iad_identical_to_greedy_pct": col("iad", "identical_to_greedy_pct"),
            })
        row.update({"paper_model": paper.get("model"), "paper_beam5_speedup": paper.get("beam5_speedup"),
                    "paper_iad_speedup": paper.get("iad_speedup")})
        rows.append(row)
    cols = ["threads", "model", "sentences", f"beam{beam}_latency_s", "fairseq_greedy_latency_s",
            "engine_greedy_latency_s", "iad_latency_s", f"beam{beam}_speedup", "fairseq_greedy_speedup",
            "iad_speedup", "iad_speedup_vs_engine_greedy", "iad_identical_to_greedy_pct", "paper_model",
            "paper_beam5_speedup", "paper_iad_speedup"]
    return pd.DataFrame(rows).reindex(columns=cols)
