"""One benchmark run of the GAD track: per-system summary rows and the files a run leaves behind.

A run directory holds ``summary.csv`` (one row per system, columns below), ``sentences.jsonl`` (one
:class:`~fastdec.gad.systems.Record` per system and sentence, plus the BPE'd hypothesis) and ``hyps/<system>.txt``
(BPE'd) / ``hyps/<system>.detok`` (plain text, what sacreBLEU scored).

Summary columns: ``system, label, kind, k, beta, tau, n_sentences, bleu, identical_to_greedy,
identical_to_greedy_pct, mean_iterations, tokens_per_iteration`` (output tokens incl. EOS per decoder pass -- the
paper's "Tok.", 1.0 for autoregressive decoding), ``mean_accepted`` (accepted *draft* tokens per iteration, the
verifier's own token not counted), ``mean_drafted, mean_out_len, total_time_s, mean_latency_ms, speed_vs_<base>``
(total time of the baseline system / this system's, same sentences, same process), ``at_encoder_s,
nat_encoder_s, nat_decoder_s, at_decoder_s, other_s`` (module times, engine systems only), ``peak_mem_mb,
rep_ratio_pct, signature``.
"""
from __future__ import annotations

import json
import math
import os
from typing import Dict, List, Optional, Sequence

import pandas as pd

from fastdec.report.tables import read_jsonl

from .scoring import bleu, postprocess, repetition_ratio
from .systems import Record, SystemSpec

__all__ = ["summarize", "write_run", "read_sentences"]


def _mean(xs):
    xs = list(xs)
    return sum(xs) / len(xs) if xs else float("nan")


def summarize(specs: Sequence[SystemSpec], records: Dict[str, List[Record]], hyps: Dict[str, List[str]],
              refs: Optional[Sequence[str]], lang: str, *, baseline: str = "at_b5",
              greedy: str = "greedy") -> pd.DataFrame:
    """One row per system (see the module docstring). ``hyps`` are the BPE'd hypotheses per system."""
    base = records.get(baseline)
    base_time = sum(r.time for r in base) if base else None
    ref_tokens = [r.tokens for r in records[greedy]] if greedy in records else None
    rows = []
    for s in specs:
        recs = records[s.name]
        n = len(recs)
        total = sum(r.time for r in recs)
        iters = sum(r.iterations for r in recs)
        out_tok = sum(len(r.tokens) for r in recs)
        acc = [a for r in recs for a in r.accepted]
        drafted = [d for r in recs for d in r.drafted]
        row = {"system": s.name, "label": s.label, "kind": s.kind, "k": s.k,
               "beta": s.beta if s.kind == "gadpp" else None, "tau": s.tau if s.kind == "gadpp" else None,
               "n_sentences": n}
        if refs is not None:
            score = bleu(hyps[s.name], refs[:n], lang)
            row["bleu"], signature = score["bleu"], score["signature"]
        else:
            row["bleu"], signature = None, None
        if ref_tokens is not None:
            same = sum(r.tokens == g for r, g in zip(recs, ref_tokens))
            row["identical_to_greedy"] = same
            row["identical_to_greedy_pct"] = round(100.0 * same / n, 2) if n else None
        else:
            row["identical_to_greedy"] = row["identical_to_greedy_pct"] = None
        row.update({
            "mean_iterations": iters / n if n else None,
            "tokens_per_iteration": out_tok / iters if iters else None,
            "mean_accepted": _mean(acc) if acc else (0.0 if s.kind in ("greedy", "gad", "gadpp") else None),
            "mean_drafted": _mean(drafted) if drafted else None,
            "mean_out_len": out_tok / n if n else None,
            "total_time_s": total,
            "mean_latency_ms": 1000.0 * total / n if n else None,
            f"speed_vs_{baseline}": (base_time / total) if base_time and total > 0 else None,
        })
        if s.kind in ("greedy", "gad", "gadpp"):
            at_enc = sum(r.time_encoder for r in recs)
            nat_enc = sum(r.nat_encoder for r in recs)
            nat_dec = sum(r.nat_decoder for r in recs)
            at_dec = sum(r.time_verifier for r in recs)
            row.update(at_encoder_s=at_enc, nat_encoder_s=nat_enc, nat_decoder_s=nat_dec, at_decoder_s=at_dec,
                       other_s=max(total - at_enc - nat_enc - nat_dec - at_dec, 0.0))
        elif s.kind == "nat":
            nat_enc = sum(r.nat_encoder for r in recs)
            row.update(at_encoder_s=0.0, nat_encoder_s=nat_enc, nat_decoder_s=total - nat_enc, at_decoder_s=0.0,
                       other_s=0.0)
        else:
            row.update(at_encoder_s=None, nat_encoder_s=None, nat_decoder_s=None, at_decoder_s=None, other_s=None)
        row["peak_mem_mb"] = max((r.peak_mem_mb for r in recs), default=None)
        row["rep_ratio_pct"] = 100.0 * repetition_ratio(hyps[s.name])
        row["signature"] = signature
        rows.append(row)
    return pd.DataFrame(rows)


def write_run(out_dir: str, specs: Sequence[SystemSpec], records: Dict[str, List[Record]], decode, refs,
              lang: str, *, baseline: str = "at_b5", greedy: str = "greedy", meta: Optional[dict] = None):
    """Write ``summary.csv``, ``sentences.jsonl``, ``hyps/`` and ``meta.json`` under ``out_dir``.

    ``decode(tokens) -> BPE'd string`` (the target dictionary's ``string``). Returns the summary DataFrame.
    """
    os.makedirs(os.path.join(out_dir, "hyps"), exist_ok=True)
    hyps = {s.name: [decode(r.tokens) for r in records[s.name]] for s in specs}
    for s in specs:
        with open(os.path.join(out_dir, "hyps", f"{s.name}.txt"), "w", encoding="utf-8") as f:
            f.writelines(h + "\n" for h in hyps[s.name])
        with open(os.path.join(out_dir, "hyps", f"{s.name}.detok"), "w", encoding="utf-8") as f:
            f.writelines(postprocess(h, lang) + "\n" for h in hyps[s.name])
    with open(os.path.join(out_dir, "sentences.jsonl"), "w", encoding="utf-8") as f:
        for s in specs:
            for r, h in zip(records[s.name], hyps[s.name]):
                f.write(json.dumps({**r.to_dict(), "hyp": h}) + "\n")
    df = summarize(specs, records, hyps, refs, lang, baseline=baseline, greedy=greedy)
    df.to_csv(os.path.join(out_dir, "summary.csv"), index=False)
    if meta is not None:
        with open(os.path.join(out_dir, "meta.json"), "w", encoding="utf-8") as f:
            json.dump(meta, f, indent=2, default=str)
    return df


def read_sentences(path: str) -> pd.DataFrame:
    """``sentences.jsonl`` as a DataFrame (one row per system and sentence)."""
    rows = read_jsonl(path)
    if not rows:
        raise ValueError(f"{path} holds no sentences")
    return pd.DataFrame(rows)


def finite(x) -> bool:
    return x is not None and not (isinstance(x, float) and math.isnan(x))
