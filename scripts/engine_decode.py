#!/usr/bin/env python
"""Decode BPE'd source lines with the fastdec engine (greedy, IAD, ...) or fairseq's SequenceGenerator.

Writes the hypotheses (BPE'd target tokens, one line per input line, input order), optionally a JSONL
file of per-sentence statistics (id, time, iterations, accepted draft tokens per iteration, module
times, output tokens) and a summary JSON.

Examples::

    engine_decode.py --checkpoint ckpt.pt --data-bin data-bin --input test.bpe.src --method iad \\
        --output hyp.bpe --stats stats.jsonl --summary summary.json --threads 1
    engine_decode.py ... --method fairseq-beam --beam 5 --batch-size 32
    engine_decode.py ... --method gad --acceptance top-beta --beta 3 --tau 1.0 \\
        --drafter-module fastdec.engine.nat_drafter --drafter-arg drafter_checkpoint=nat.pt
"""
import argparse
import json
import sys
import time

from _common import run_cli


def build_parser():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--checkpoint", required=True, help="fairseq checkpoint of the (verifier) model")
    ap.add_argument("--data-bin", required=True, help="folder with dict.<src>.txt / dict.<tgt>.txt")
    ap.add_argument("--input", required=True, help="BPE'd source sentences, one per line")
    ap.add_argument("--output", required=True, help="hypotheses (BPE'd target tokens), one per line")
    ap.add_argument("--method", default="greedy",
                    help="greedy | iad | fairseq-beam | fairseq-greedy | any registered drafter (default greedy)")
    ap.add_argument("--beam", type=int, default=5, help="beam size of fairseq-beam (default 5)")
    ap.add_argument("--batch-size", type=int, default=1, help="fairseq methods only (engine: 1)")
    ap.add_argument("--acceptance", choices=["top1", "top-beta", "top-k"],
                    help="engine acceptance rule (default top1; top-beta if --beta/--tau, top-k if --topk)")
    ap.add_argument("--beta", type=int, help="GAD++ top-beta (default 3 with --acceptance top-beta)")
    ap.add_argument("--tau", type=float, help="GAD++ log-likelihood gap tau (default 1.0)")
    ap.add_argument("--topk", type=int, help="Blockwise approximate top-k (default 2 with --acceptance top-k)")
    ap.add_argument("--max-draft-len", type=int,
                    help="engine: cap on drafted tokens per iteration (default: unlimited, as in the papers)")
    ap.add_argument("--min-block-size", type=int, default=1, help="Blockwise minimum block size (default 1)")
    ap.add_argument("--drafter-arg", action="append", metavar="KEY=VALUE",
                    help="keyword argument for the drafter factory (repeatable; JSON values)")
    ap.add_argument("--drafter-module", action="append", default=[],
                    help="python module to import that registers extra drafters (repeatable)")
    ap.add_argument("--user-dir", help="fairseq --user-dir plugin (default: import fastdec_fairseq)")
    ap.add_argument("--max-len-a", type=float, default=0.0, help="fairseq max_len_a (default 0)")
    ap.add_argument("--max-len-b", type=int, default=200, help="fairseq max_len_b (default 200)")
    ap.add_argument("--device", default="cpu", help="cpu | cuda | cuda:N")
    ap.add_argument("--fp16", action="store_true", help="float16 weights (CUDA only)")
    ap.add_argument("--dtype", choices=["float32", "float64", "float16", "bfloat16"],
                    help="override the weight dtype (float64 for exactness checks)")
    ap.add_argument("--threads", type=int, default=None, help="torch intra-op threads (CPU)")
    ap.add_argument("--warmup", type=int, default=0, help="decode the first N sentences once untimed")
    ap.add_argument("--limit", type=int, help="decode only the first N lines")
    ap.add_argument("--no-sync-timing", action="store_true",
                    help="CUDA: do not synchronise around each module (only total times are exact)")
    ap.add_argument("--stats", help="JSONL per-sentence statistics")
    ap.add_argument("--summary", help="summary JSON")
    return ap


def main(argv=None):
    a = build_parser().parse_args(argv)
    if a.threads is not None and a.threads < 1:
        raise ValueError(f"--threads must be >= 1, got {a.threads}")
    if a.warmup < 0:
        raise ValueError(f"--warmup must be >= 0, got {a.warmup}")
    if a.limit is not None and a.limit < 0:
        raise ValueError(f"--limit must be >= 0, got {a.limit}")
    if a.max_len_b < 0 or a.max_len_a < 0:
        raise ValueError("--max-len-a/--max-len-b must be >= 0")
    if a.fp16 and a.dtype not in (None, "float16"):
        raise ValueError("--fp16 conflicts with --dtype " + a.dtype)
    dtype = "float16" if a.fp16 else (a.dtype or "float32")

    import torch

    from fastdec.engine.load import load_model, read_lines
    from fastdec.engine.runner import (import_drafter_modules, parse_key_values, parse_method, run_method,
                                       summarize)
    from fastdec.engine.verifier import Verifier, resolve_device_dtype

    if a.threads:
        torch.set_num_threads(a.threads)
    resolve_device_dtype(a.device, dtype)  # fail fast on bad device/dtype
    import_drafter_modules(a.drafter_module)
    spec = parse_method(a.method, beam=a.beam, batch_size=a.batch_size, acceptance=a.acceptance, beta=a.beta,
                        tau=a.tau, topk=a.topk, min_block_size=a.min_block_size,
                        drafter_args=parse_key_values(a.drafter_arg), max_draft_len=a.max_draft_len)
    lines = read_lines(a.input)
    if a.limit is not None:
        lines = lines[: a.limit]
    loaded = load_model(a.checkpoint, a.data_bin, device=a.device, dtype=dtype, user_dir=a.user_dir)
    sources = [loaded.encode(line) for line in lines]
    verifier = Verifier(loaded.model, device=loaded.device, dtype=loaded.dtype) if spec.kind == "engine" else None
    if verifier is not None:
        for i, s in enumerate(sources):
            if s.numel() > verifier.max_source_positions:
                raise ValueError(f"line {i + 1}: {s.numel()} source tokens exceed the model's "
                                 f"max_source_positions ({verifier.max_source_positions})")
    t0 = time.perf_counter()
    results = run_method(spec, loaded=loaded, verifier=verifier, sources=sources, max_len_a=a.max_len_a,
                         max_len_b=a.max_len_b, warmup=min(a.warmup, len(sources)),
                         sync_timing=not a.no_sync_timing)
    wall = time.perf_counter() - t0
    with open(a.output, "w", encoding="utf-8") as f:
        for r in results:
            f.write(loaded.decode(r.tokens) + "\n")
    if a.stats:
        with open(a.stats, "w", encoding="utf-8") as f:
            for r in results:
                f.write(json.dumps({"id": r.id, "n_tokens": len(r.tokens), **r.stats}) + "\n")
    # drafter arguments stay nested under "drafter_args", so none can clash with these keys
    summary = summarize(results, **{**spec.params, "method": spec.method, "label": spec.label,
                                    "max_len_a": a.max_len_a, "max_len_b": a.max_len_b,
                                    "device": str(loaded.device), "dtype": str(loaded.dtype).replace("torch.", ""),
                                    "threads": torch.get_num_threads(), "checkpoint": str(a.checkpoint),
                                    "wall_time": wall})
    if a.summary:
        with open(a.summary, "w", encoding="utf-8") as f:
            json.dump(summary, f, indent=2)
    print(json.dumps({k: summary[k] for k in ("label", "n_sentences", "total_time", "sent_per_s",
                                              "tokens_per_iteration")}), file=sys.stderr)
    return 0


if __name__ == "__main__":
    run_cli(main)
