"""Ge et al. 2022, Table 10: GAD / GAD++ on CNN-DM abstractive summarization (BART-base drafter and verifier, the
Seq-KD data from a BART teacher), ROUGE-1/2/L beside the paper's numbers.

Rows (ours <- benchmark run and method):

* Teacher BART <- ``gad/bench/teacher``, fairseq beam search (the config's teacher: BART-large fine-tuned here);
* AR baseline BART-base w/o Seq-KD <- ``gad/bench/baseline``, beam search;
* NAR drafter, AR verifier (beam 5 / beam 1), GAD, GAD++ x 2 <- ``gad/bench/test``, all on the same weights in one
  process (speed relative to the verifier's beam search there; the paper's 1.0x is the baseline's beam search,
  which has the verifier's architecture and decoding cost); ``speed_same_impl`` beside the paper's speed
  (fastdec.tracks.gad.beside), and the paper's k = 25 figures beside a row of another k in ``paper_k25_*``.

The hypotheses are GPT-2 BPE ids (``hyps/<label>.txt``), decoded to text with the release's encoder before ROUGE.
"""
from __future__ import annotations

from typing import Dict, List, Optional

import pandas as pd

from fastdec.bench.methods import parse_method
from fastdec.tracks.gad.beside import (method_setting, paper_beside, paper_speed_same_impl, setting_columns_together,
                                       setting_tag, speed_same_impl)

__all__ = ["PAPER", "table10"]

# (paper row, Iteration, R-1, R-2, R-L, Speed); "N" = one iteration per token (autoregressive)
PAPER = {
    "teacher": ("Teacher: BART (Lewis et al., 2020)", "N", 44.16, 21.28, 40.90, None),
    "baseline": ("AR baseline: BART-base (beam = 5) w/o Seq-KD", "N", 42.84, 20.08, 39.51, 1.0),
    "nat": ("NAR drafter (k = 25)", 3.3, 37.10, 14.87, 33.47, 15.0),
    "beam": ("AR verifier (beam = 5)", "N", 42.55, 19.83, 39.31, 1.0),
    "greedy": ("AR verifier (beam = 1)", "N", 43.00, 20.28, 39.96, 1.1),
    "gad": ("GAD (k = 25)", 14.0, 43.00, 20.28, 39.96, 3.0),
    "hq": ("GAD++ (k = 25, top-3, tau = 1.0)", 10.8, 42.95, 20.24, 39.73, 3.7),
    "he": ("GAD++ (k = 25, top-5, tau = 3.0)", 7.9, 42.02, 19.42, 38.66, 4.8),
}
PAPER_K = 25


def _rouge(run, label: str, refs: List[str], encoder: str, vocab: str) -> Dict[str, float]:
    from fastdec.data.gpt2_bpe import decode_lines
    from fastdec.eval.rouge import corpus_rouge

    hyps = decode_lines(encoder, vocab, run.hyps(label))
    return corpus_rouge(hyps, refs[: len(hyps)])


def table10(test, ar_runs: Dict[str, object], plan, ref_path: str, encoder: str, vocab: str) -> pd.DataFrame:
    """One row per Table 10 system (see the module docstring); ``plan`` is the GAD track's plan."""
    from fastdec.text import read_lines

    refs = read_lines(ref_path)
    beam, k = parse_method(plan.baseline).label, plan.k
    base_ms = float(test.row(beam)["ms_per_sentence"])
    rows: List[dict] = []

    def add(key: str, run, label: str, ours: str):
        row = run.row(label)
        if row is None:
            raise ValueError(f"{run.path}: no method {label!r}; rerun the benchmark (snakemake)")
        paper = PAPER[key]
        autoregressive = key in ("teacher", "baseline", "beam", "greedy")
        m = next(x for x in run.methods() if x.label == label)
        setting = {"k": PAPER_K, **({"beta": m.beta, "tau": m.tau} if key in ("hq", "he") else {})}
        values = {**dict(zip(("iteration", "rouge1", "rouge2", "rougeL", "speed"), paper[1:])),
                  "speed_same_impl": paper_speed_same_impl(m, paper[5], PAPER["greedy"][5])}
        cells = paper_beside(values, method_setting(m), setting if key in ("nat", "gad", "hq", "he") else {})
        rouge = _rouge(run, label, refs, encoder, vocab)
        rows.append({
            "system": paper[0], "ours": ours, "label": label,
            "iteration": "N" if autoregressive else round(float(row["mean_iterations"]), 2),
            "rouge1": round(rouge["rouge1"], 2), "rouge2": round(rouge["rouge2"], 2),
            "rougeL": round(rouge["rougeL"], 2), "rougeLsum": round(rouge["rougeLsum"], 2),
            "speedup": round(base_ms / float(row["ms_per_sentence"]), 2),
            "speed_same_impl": speed_same_impl(run, m),
            "identical_to_greedy_pct": row["identical_to_greedy_pct"] if run is test else None,
            "sentences": int(row["n_sentences"]), **cells,
            "note": "" if cells["paper_rouge1"] is not None or autoregressive else
            f"paper k = {PAPER_K}, ours k = {k}: the paper's figures in the paper_{setting_tag(setting)}_* columns",
        })

    for key in ("teacher", "baseline"):
        run = ar_runs[key]
        add(key, run, beam, f"{key} model, {beam} (separate process; speed vs the verifier's {beam})")
    add("nat", test, parse_method(f"nat:k={k}").label, "the NAT drafter alone")
    add("beam", test, beam, f"verifier, {beam}")
    add("greedy", test, "fairseq-greedy", "verifier, fairseq greedy")
    for key, spec in (("gad", plan.gad), ("hq", plan.hq), ("he", plan.he)):
        add(key, test, parse_method(spec).label, spec)
    df = setting_columns_together(pd.DataFrame(rows))
    from fastdec.eval.rouge import SIGNATURE

    df["rouge_signature"] = SIGNATURE
    return df
