"""Evaluate one combined scoring/proposal model: greedy decoding with p_1, blockwise settings and fairseq beam
search, in ONE process on the same weights, batch size 1.

For every source sentence the greedy reference (p_1, the engine loop without a drafter), every requested
blockwise setting and every fairseq beam baseline are decoded back to back, so wall-clock ratios are robust to
load drifting on a shared machine. Per system the result holds BLEU (sacreBLEU on de-BPE'd, detokenised output
against the raw references), the mean accepted block size, decoder calls, the number of outputs identical to
greedy decoding with p_1, and the wall-clock speedups over that greedy decoding and over fairseq beam search.
"""
from __future__ import annotations

import time
from typing import Dict, List, Optional, Sequence

import torch

from fastdec.engine.blockwise_drafter import BlockwiseDrafter
from fastdec.engine.loop import draft_verify_accept

from .decoding import Setting, block_metrics, make_rule

__all__ = ["evaluate_settings", "detok_hypotheses"]


def detok_hypotheses(bpe_lines: Sequence[str], lang: str) -> List[str]:
    """BPE'd model output -> detokenised text (the form sacreBLEU scores)."""
    from fastdec.data.tokenize import detokenize, remove_bpe

    return [detokenize(remove_bpe(line), lang) for line in bpe_lines]


def evaluate_settings(loaded, sources: Sequence[torch.Tensor], settings: Sequence[Setting], *,
                      max_len_a: float, max_len_b: int, refs: Optional[Sequence[str]] = None,
                      lang: Optional[str] = None, warmup: int = 2, verifier=None,
                      head_precision: str = "float", beams: Sequence[int] = (),
                      progress=None) -> Dict[str, dict]:
    """Decode ``sources`` with greedy (label ``greedy``), every setting and fairseq beam search
    (label ``fairseq-beam<N>`` for N in ``beams``); return label -> result dict.

    Each result: ``hyps`` (BPE'd strings), ``tokens_ids``, block metrics, ``identical_to_greedy``(``_pct``),
    ``time`` (s), ``speedup_vs_greedy``, ``speedup_vs_beam<N>``, and ``bleu``/``signature`` when ``refs``
    and ``lang`` are given. ``head_precision`` (``float`` | ``int8``) is the default precision of the
    proposal heads (a setting may override it); verification always uses the model's dtype.
    """
    from fastdec.engine.fairseq_baseline import FairseqGenerator
    from fastdec.engine.verifier import Verifier

    if not settings:
        raise ValueError("no blockwise settings to evaluate")
    labels = [s.label for s in settings]
    if len(set(labels)) != len(labels):
        raise ValueError(f"duplicate settings: {labels}")
    for b in beams:
        if isinstance(b, bool) or not isinstance(b, int) or b < 1:
            raise ValueError(f"beam sizes must be integers >= 1, got {b!r}")
    if refs is not None and len(refs) != len(sources):
        raise ValueError(f"{len(refs)} references for {len(sources)} sources")
    ver = verifier or Verifier(loaded.model, device=loaded.device, dtype=loaded.dtype)
    drafters = {}
    for s in settings:  # one drafter per (k, precision), built after the verifier placed the model
        key = (s.k, s.precision or head_precision)
        if key not in drafters:
            drafters[key] = BlockwiseDrafter(ver.model, block_size=s.k, head_precision=key[1])
    kw = dict(max_len_a=max_len_a, max_len_b=max_len_b)

    def engine_run(drafter, rule):
        def run(src, i):
            r = draft_verify_accept(ver, src, drafter, rule, sent_id=i, **kw)
            return r.tokens, r.stats
        return run

    runs = [("greedy", engine_run(None, make_rule(1, 1)))]
    runs += [(s.label, engine_run(drafters[(s.k, s.precision or head_precision)], make_rule(s.topk, s.min_block)))
             for s in settings]
    for b in beams:
        gen = FairseqGenerator(ver.model, loaded.tgt_dict, beam=b, max_len_a=max_len_a, max_len_b=max_len_b,
                               device=ver.device)

        def beam_run(src, i, gen=gen):
            with torch.inference_mode():
                return gen.generate([src], batch_size=1)[0].tokens, None
        runs.append((f"fairseq-beam{b}", beam_run))

    for i, src in enumerate(sources[:warmup]):
        for _, run in runs:
            run(src, i)
    out = {label: {"tokens": [], "stats": [], "time": 0.0} for label, _ in runs}
    for i, src in enumerate(sources):
        for label, run in runs:
            t0 = time.perf_counter()
            tokens, stats = run(src, i)
            dt = time.perf_counter() - t0
            o = out[label]
            o["tokens"].append(tokens)
            if stats is not None:
                o["stats"].append(stats)
            o["time"] += dt
        if progress is not None:
            progress(i)
    greedy = out["greedy"]
    n = len(sources)
    results = {}
    for label, _ in runs:
        o = out[label]
        res = {"label": label, "n_sentences": n, "time": o["time"],
               "ms_per_sentence": 1000 * o["time"] / max(n, 1),
               "speedup_vs_greedy": greedy["time"] / o["time"] if o["time"] > 0 else None}
        for b in beams:
            bt = out[f"fairseq-beam{b}"]["time"]
            res[f"speedup_vs_beam{b}"] = bt / o["time"] if o["time"] > 0 else None
        res["identical_to_greedy"] = sum(a == b for a, b in zip(o["tokens"], greedy["tokens"]))
        res["identical_pct"] = 100.0 * res["identical_to_greedy"] / max(n, 1)
        if o["stats"]:
            res.update(block_metrics(o["stats"]))
            calls = max(res["decoder_calls"], 1)
            # where the time goes, per decoder call: the verification pass and the proposal heads
            res["verify_ms_per_call"] = 1000 * sum(st.time_verifier for st in o["stats"]) / calls
            res["draft_ms_per_call"] = 1000 * sum(st.time_drafter for st in o["stats"]) / calls
        else:  # fairseq beam search: one decoder call per output position (per beam)
            toks = sum(len(t) for t in o["tokens"])
            res.update(sentences=n, tokens=toks, decoder_calls=None, mean_block=None, tokens_per_call=None)
        res["hyps"] = [loaded.decode(t) for t in o["tokens"]]
        res["tokens_ids"] = o["tokens"]
        if refs is not None and lang:
            from fastdec.eval.bleu import corpus_bleu

            res.update(corpus_bleu(detok_hypotheses(res["hyps"], lang), list(refs)))
        results[label] = res
    return results
