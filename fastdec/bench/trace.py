"""``fastdec trace``: decode one sentence with one method and write, step by step, what each iteration appended --
Stern et al. 2018, Sec. 7.4 ("Step 1, 10 tokens [Das_, James_, ...]"), for any drafting method of the grammar.

Example (the Blockwise track's rule)::

    fastdec trace --checkpoint blockwise/models/both_k8/model.pt --data-bin data-bin/raw --input data/bpe/test.en \\
        --method blockwise:k=8:precision=int8 --from-run blockwise/bench/test/both_k8 --output blockwise_example.csv

``--id N`` traces sentence N (0-based); ``--from-run`` instead picks a *typical* sentence from that benchmark run:
among the method's sentences with at least ``--min-tokens`` output tokens, the one whose tokens per iteration is
closest to the method's mean over the run (ties: the lowest id). The trace decodes with the same loop as the
benchmark, so its output is the method's output (checked against the run's output when ``--from-run`` is given).

Output CSV: ``sentence, step, tokens, planned, drafted, accepted_from_draft, text`` -- the first two rows (step
``input`` and ``output``) hold the de-BPE'd source and output, then one row per decoding step with the BPE pieces it
appended. ``planned`` is the draft length a ``policy=cost`` method allowed at that step (0: the drafter was not
asked; empty for fixed-k methods); the policy first decodes up to 20 other sentences of the input, so that its
acceptance counts are those of a running decode, not of an empty start. The trace runs on the method's backend.
"""
from __future__ import annotations

import argparse
import json
import sys
from typing import Optional


def add_arguments(ap: argparse.ArgumentParser) -> None:
    ap.add_argument("--checkpoint", required=True, help="fairseq checkpoint of the verifier (or Blockwise model)")
    ap.add_argument("--data-bin", required=True, help="folder with the dictionaries")
    ap.add_argument("--input", required=True, help="BPE'd source sentences, one per line")
    ap.add_argument("--method", required=True, help="one drafting method, e.g. blockwise:k=8 or gad:k=10")
    ap.add_argument("--drafter-arg", action="append", metavar="KEY=VALUE", help="drafter argument (repeatable)")
    which = ap.add_mutually_exclusive_group(required=True)
    which.add_argument("--id", type=int, help="the sentence to trace (0-based line number)")
    which.add_argument("--from-run", help="a benchmark run of the method: trace its typical sentence")
    ap.add_argument("--min-tokens", type=int, default=10,
                    help="--from-run: only sentences with this many output tokens")
    ap.add_argument("--max-len-a", type=float, default=0.0)
    ap.add_argument("--max-len-b", type=int, default=200)
    ap.add_argument("--user-dir", help="fairseq --user-dir plugin (default: fastdec_fairseq)")
    ap.add_argument("--output", required=True)


def typical_sentence(records, min_tokens: int) -> int:
    """The id of the sentence whose tokens per iteration is closest to the method's mean over the run."""
    total_tokens = sum(len(r.tokens) for r in records)
    total_iterations = sum(r.iterations for r in records)
    if not total_iterations:
        raise ValueError("the run has no decoded sentences for this method")
    mean = total_tokens / total_iterations
    pool = [r for r in records if len(r.tokens) >= min_tokens] or list(records)
    return min(pool, key=lambda r: (abs(len(r.tokens) / r.iterations - mean), r.id)).id


def trace_rows(sentence: int, source: str, output: str, iterations, symbol) -> list:
    empty = {"tokens": None, "planned": None, "drafted": None, "accepted_from_draft": None}
    rows = [{"sentence": sentence, "step": "input", **empty, "text": source},
            {"sentence": sentence, "step": "output", **empty, "text": output}]
    for step, it in enumerate(iterations, 1):
        rows.append({"sentence": sentence, "step": str(step), "tokens": len(it.appended), "planned": it.planned,
                     "drafted": len(it.draft), "accepted_from_draft": it.accepted,
                     "text": " ".join(symbol(t) for t in it.appended)})
    return rows


def drafting_method(spec: str, drafter_args: Optional[dict] = None):
    """The one drafting method of the engine that ``spec`` names (ValueError otherwise)."""
    from .methods import parse_methods

    (m,) = parse_methods(spec, drafter_args=drafter_args or {})
    if not m.drafter or m.kind != "engine":
        raise ValueError(f"method {spec!r}: a trace needs a drafting method of the engine (iad, gad, blockwise)")
    return m


class MethodTracer:
    """One loaded verifier and the engine's drafting methods of the grammar on it: decode or trace one sentence with
    any of them exactly as the benchmark decodes it (also GAD's case study, fastdec/tracks/gad/case_study_cli.py)."""

    def __init__(self, checkpoint: str, data_bin: str, *, max_len_a: float, max_len_b: int,
                 user_dir: Optional[str] = None):
        from fastdec.engine.load import load_model
        from fastdec.engine.verifier import Verifier

        from .runner import Context, _Systems

        self.loaded = loaded = load_model(checkpoint, data_bin, user_dir=user_dir)
        self.ctx = Context(loaded, Verifier(loaded.model, device=loaded.device, dtype=loaded.dtype), max_len_a,
                           max_len_b)
        self._systems = _Systems(self.ctx)

    def _parts(self, m, policy) -> dict:
        from .runner import acceptance_rule, draft_policy

        return dict(verifier=self.ctx.verifier_of(m.backend), drafter=self._systems.drafter(m),
                    rule=acceptance_rule(m, self.loaded.tgt_dict.symbols), max_len_a=self.ctx.max_len_a,
                    max_len_b=self.ctx.max_len_b, max_draft_len=m.max_draft_len,
                    policy=draft_policy(m) if policy is None else policy)

    def drafter(self, m):
        return self._systems.drafter(m)

    def decode(self, m, src, policy=None):
        """The method's output of one encoded source (a DecodeResult); ``policy``: a running one to go on with."""
        from fastdec.engine.loop import draft_verify_accept

        kw = self._parts(m, policy)
        return draft_verify_accept(kw.pop("verifier"), src, kw.pop("drafter"), kw.pop("rule"), **kw)

    def trace(self, m, src, policy=None):
        """The method's decoding of one encoded source, iteration by iteration (fastdec.engine.tracing.Trace)."""
        from fastdec.engine.tracing import trace

        kw = self._parts(m, policy)
        return trace(kw.pop("verifier"), src, kw.pop("drafter"), kw.pop("rule"), **kw)

    def greedy(self, src):
        from fastdec.engine.loop import greedy_decode

        return greedy_decode(self.ctx.verifier, src, max_len_a=self.ctx.max_len_a, max_len_b=self.ctx.max_len_b)


def trace_table(checkpoint: str, data_bin: str, input: str, method: str, *, sentence: Optional[int] = None,
                run: Optional[str] = None, min_tokens: int = 10, max_len_a: float = 0.0, max_len_b: int = 200,
                drafter_args: Optional[dict] = None, user_dir: Optional[str] = None):
    """The trace of one sentence as a DataFrame (module docstring): ``sentence``, or the typical one of ``run``."""
    from fastdec.text import read_lines

    from .runner import draft_policy

    m = drafting_method(method, drafter_args)
    lines = read_lines(input)
    expected = None
    if run:
        from .results import read_run

        records = read_run(run).records()
        if not records.get(m.label):
            raise ValueError(f"{run}: no sentences of {m.label} (it has {', '.join(records)})")
        sentence = typical_sentence(records[m.label], min_tokens)
        expected = next(r.tokens for r in records[m.label] if r.id == sentence)
    if sentence is None or not 0 <= sentence < len(lines):
        raise ValueError(f"sentence {sentence}: {input} has {len(lines)} lines")

    import pandas as pd

    from fastdec.text import remove_bpe

    tracer = MethodTracer(checkpoint, data_bin, max_len_a=max_len_a, max_len_b=max_len_b, user_dir=user_dir)
    loaded = tracer.loaded
    policy = draft_policy(m)
    if policy is not None:  # acceptance counts of a running decode: up to 20 other sentences first
        for i in [i for i in range(len(lines)) if i != sentence][:20]:
            tracer.decode(m, loaded.encode(lines[i]), policy)
    tr = tracer.trace(m, loaded.encode(lines[sentence]), policy)
    if expected is not None and tr.tokens != expected:
        raise ValueError(f"the trace of sentence {sentence} differs from {m.label}'s output in {run}")
    d = loaded.tgt_dict
    eos = d.eos()
    output = remove_bpe(" ".join(d[t] for t in tr.tokens if t != eos))
    rows = trace_rows(sentence, remove_bpe(lines[sentence]), output, tr.iterations,
                      lambda t: "<EOS>" if t == eos else d[t])
    return pd.DataFrame(rows)


def main(a: argparse.Namespace) -> int:
    from .methods import parse_key_values

    df = trace_table(a.checkpoint, a.data_bin, a.input, a.method, sentence=a.id, run=a.from_run,
                     min_tokens=a.min_tokens, max_len_a=a.max_len_a, max_len_b=a.max_len_b,
                     drafter_args=parse_key_values(a.drafter_arg),
                     user_dir=a.user_dir)
    df.to_csv(a.output, index=False)
    steps = df[~df["step"].isin(["input", "output"])]
    print(json.dumps({"sentence": int(df["sentence"].iloc[0]), "steps": len(steps),
                      "tokens": int(steps["tokens"].sum())}), file=sys.stderr)
    return 0
