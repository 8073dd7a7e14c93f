"""``fastdec bench``: decode one input with several methods on the same weights and write a results run.

Example::

    fastdec bench --checkpoint models/verifier/model.pt --data-bin data-bin/distill --input data/bpe/test.en \\
        --ref data/raw/test.de --lang de --drafter-arg checkpoint=gad/models/drafter_k10/model.pt \\
        --methods fairseq:beam=5,fairseq:beam=1,greedy,nat:k=10,gad:k=10,gad:k=10:beta=3:tau=1 --out-dir bench/test

The engine's ``greedy`` is always decoded (added when not listed): it is the reference of ``identical_to_greedy``.
Output: ``summary.csv``, ``sentences.jsonl``, ``hyps/<label>.txt``, ``meta.json`` (see fastdec.bench.results).
"""
from __future__ import annotations

import argparse
import sys
import time


def add_arguments(ap: argparse.ArgumentParser) -> None:
    ap.add_argument("--checkpoint", required=True, help="fairseq checkpoint of the verifier (or Blockwise model)")
    ap.add_argument("--data-bin", required=True, help="folder with the dictionaries")
    ap.add_argument("--input", required=True, help="BPE'd source sentences, one per line")
    ap.add_argument("--ref", help="raw references: BLEU per method (needs --lang)")
    ap.add_argument("--lang", help="target language of the Moses detokeniser")
    ap.add_argument("--methods", required=True, help="comma-separated methods, e.g. fairseq:beam=5,greedy,iad")
    ap.add_argument("--drafter-arg", action="append", metavar="KEY=VALUE",
                    help="default drafter argument of every drafting method (repeatable; e.g. checkpoint=PATH)")
    ap.add_argument("--user-dir", help="fairseq --user-dir plugin (default: fastdec_fairseq)")
    ap.add_argument("--limit", type=int, help="only the first N lines")
    ap.add_argument("--warmup", type=int, default=2,
                    help="untimed warm-up sentences per method (default 2; a batched method: its first batch)")
    ap.add_argument("--repeats", type=int, default=1, help="decode each sentence N times, keep the fastest")
    ap.add_argument("--block", type=int, default=1,
                    help="batch 1: each method decodes N consecutive sentences in its turn (default 1: methods "
                         "interleaved sentence by sentence; larger turns keep a method's code and data in the caches, "
                         "as a run of one method does)")
    ap.add_argument("--max-len-a", type=float, default=0.0)
    ap.add_argument("--max-len-b", type=int, default=200)
    ap.add_argument("--device", default="cpu")
    ap.add_argument("--dtype", default="float32", choices=["float32", "float64", "float16", "bfloat16"])
    ap.add_argument("--threads", type=int, help="torch intra-op threads (CPU)")
    ap.add_argument("--no-sync-timing", action="store_true", help="CUDA: no synchronisation around each module")
    ap.add_argument("--out-dir", required=True)


def main(a: argparse.Namespace) -> int:
    if ((a.threads is not None and a.threads < 1) or a.warmup < 0 or a.repeats < 1 or a.block < 1
            or (a.limit is not None and a.limit < 1)):
        raise ValueError("--threads, --repeats, --block and --limit must be >= 1, --warmup >= 0")
    if a.ref and not a.lang:
        raise ValueError("--ref needs --lang (the detokeniser's language)")
    from .methods import parse_key_values, parse_methods

    methods = parse_methods(a.methods, drafter_args=parse_key_values(a.drafter_arg))
    if "greedy" not in [m.label for m in methods]:
        methods.append(parse_methods("greedy")[0])

    import torch

    from fastdec.engine.load import load_model, make_verifier
    from fastdec.engine.verifier import resolve_device_dtype
    from fastdec.text import read_lines

    from .results import write_run
    from .runner import Context, run_benchmark

    if a.threads:
        torch.set_num_threads(a.threads)
    resolve_device_dtype(a.device, a.dtype)  # fail fast on a bad device/dtype
    lines = read_lines(a.input)
    refs = read_lines(a.ref) if a.ref else None
    if refs is not None and len(refs) != len(lines):
        raise ValueError(f"{a.ref}: {len(refs)} references for {len(lines)} source lines in {a.input}")
    lines = lines[: a.limit] if a.limit else lines
    if not lines:
        raise ValueError(f"{a.input} is empty")
    loaded = load_model(a.checkpoint, a.data_bin, device=a.device, dtype=a.dtype, user_dir=a.user_dir)
    verifier = make_verifier(loaded.model, device=loaded.device, dtype=loaded.dtype)
    if any(m.kind == "engine" and m.batch_size > 1 for m in methods):
        from fastdec.engine.batched import check_batchable

        check_batchable(verifier)  # before the batch-1 rows spend their minutes
    sources = [loaded.encode(line) for line in lines]
    for i, s in enumerate(sources):
        if s.numel() > verifier.max_source_positions:
            raise ValueError(f"{a.input}:{i + 1}: {s.numel()} source tokens exceed the model's "
                             f"max_source_positions ({verifier.max_source_positions})")
    ctx = Context(loaded, verifier, a.max_len_a, a.max_len_b, sync_timing=not a.no_sync_timing)
    t0 = time.time()

    def progress(i, n):
        if (i + 1) % 50 == 0 or i + 1 == n:
            print(f"[{time.time() - t0:7.1f}s] {i + 1}/{n} sentences", file=sys.stderr, flush=True)

    records = run_benchmark(methods, ctx, sources, warmup=min(a.warmup, len(sources)), repeats=a.repeats,
                            progress=progress, block=a.block)
    meta = {"checkpoint": a.checkpoint, "data_bin": a.data_bin, "input": a.input, "ref": a.ref, "lang": a.lang,
            "sentences": len(sources), "device": str(loaded.device), "dtype": a.dtype,
            "threads": torch.get_num_threads(), "max_len_a": a.max_len_a, "max_len_b": a.max_len_b,
            "warmup": a.warmup, "repeats": a.repeats, "block": a.block, "wall_s": round(time.time() - t0, 2),
            # which verifier implementation decoded each engine row (a fast row falls back to torch with a warning)
            "verifier_backends": {m.label: getattr(ctx.verifier_of(m.backend), "backend", "torch")
                                  for m in methods if m.kind == "engine"}}
    df = write_run(a.out_dir, methods, records, loaded.decode, refs=refs[: len(sources)] if refs else None,
                   lang=a.lang, meta=meta)
    cols = ["label", "bleu", "identical_to_greedy_pct", "tokens_per_iteration", "mean_accepted", "ms_per_sentence",
            "speedup_vs_beam", "speedup_vs_greedy"]
    print(df[cols].to_string(index=False), flush=True)
    return 0
