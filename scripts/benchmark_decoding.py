#!/usr/bin/env python
"""Benchmark several decoding methods on the SAME loaded weights in one process.

Engine methods run at batch size 1; fairseq methods at batch size 1 and at every size given by
``--batch-sizes``. Writes one CSV row per (method, batch size): wall time, sent/s, speedup against
fairseq beam ``--beam`` at batch 1 (the paper's baseline), how many outputs are identical to greedy
decoding (the engine's greedy output is computed as the reference even when ``greedy`` is not listed),
iterations and tokens per iteration, peak memory.

Each method may carry its own options as ``NAME:KEY=VALUE:...`` (acceptance, beta, tau, topk,
min_block_size, max_draft_len, label; any other key is a drafter argument), so one run can compare
GAD with GAD++ or several Blockwise settings on the same weights. ``--acceptance/--beta/...`` and
``--drafter-arg`` are defaults for every drafting method.

Examples::

    benchmark_decoding.py --checkpoint ckpt.pt --data-bin data-bin --input test.bpe.src \\
        --methods fairseq-beam,fairseq-greedy,greedy,iad --batch-sizes 1,32 --threads 1 --csv bench.csv
    benchmark_decoding.py ... --drafter-module fastdec.engine.nat_drafter --drafter-arg drafter_checkpoint=nat.pt \\
        --methods fairseq-beam,greedy,gad,gad:beta=3:tau=1,gad:beta=5:tau=3 --interleave --csv gad.csv
"""
import argparse
import csv
import json
import sys

from _common import run_cli


def build_parser():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--checkpoint", required=True)
    ap.add_argument("--data-bin", required=True)
    ap.add_argument("--input", required=True, help="BPE'd source sentences, one per line")
    ap.add_argument("--methods", default="fairseq-beam,fairseq-greedy,greedy,iad",
                    help="comma-separated: fairseq-beam, fairseq-greedy, greedy, iad, registered drafters")
    ap.add_argument("--beam", type=int, default=5, help="beam of fairseq-beam and of the speedup baseline")
    ap.add_argument("--batch-sizes", default="1",
                    help="comma-separated batch sizes for the fairseq methods (1 is always included)")
    ap.add_argument("--acceptance", choices=["top1", "top-beta", "top-k"])
    ap.add_argument("--beta", type=int)
    ap.add_argument("--tau", type=float)
    ap.add_argument("--topk", type=int)
    ap.add_argument("--max-draft-len", type=int,
                    help="engine: cap on drafted tokens per iteration (default: unlimited, as in the papers)")
    ap.add_argument("--min-block-size", type=int, default=1)
    ap.add_argument("--drafter-arg", action="append", metavar="KEY=VALUE",
                    help="keyword argument for every drafter (repeatable; JSON values)")
    ap.add_argument("--drafter-module", action="append", default=[],
                    help="python module to import that registers extra drafters (repeatable)")
    ap.add_argument("--user-dir")
    ap.add_argument("--max-len-a", type=float, default=0.0)
    ap.add_argument("--max-len-b", type=int, default=200)
    ap.add_argument("--device", default="cpu")
    ap.add_argument("--fp16", action="store_true")
    ap.add_argument("--dtype", choices=["float32", "float64", "float16", "bfloat16"])
    ap.add_argument("--threads", type=int)
    ap.add_argument("--limit", type=int, help="only the first N lines")
    ap.add_argument("--warmup", type=int, default=2, help="untimed warm-up sentences per method (default 2)")
    ap.add_argument("--repeats", type=int, default=1,
                    help="run each method N times and keep the fastest total (default 1)")
    ap.add_argument("--interleave", action="store_true",
                    help="run the batch-1 methods round-robin per sentence (stabler ratios on a busy machine); "
                         "with --repeats N the whole round-robin is repeated and each method keeps its fastest")
    ap.add_argument("--max-draft-lens", default=None,
                    help="comma-separated extra draft caps: each non-greedy engine method is also run with each cap")
    ap.add_argument("--csv", required=True, help="output CSV")
    ap.add_argument("--hyp-prefix", help="also write hypotheses to <prefix>.<label>.txt")
    ap.add_argument("--stats-prefix", help="also write per-sentence JSONL stats to <prefix>.<label>.jsonl")
    return ap


COLUMNS = ["label", "method", "batch_size", "n_sentences", "wall_time", "sent_per_s", "mean_time_ms",
           "speedup_vs_beam", "identical_to_greedy", "mean_iterations", "tokens_per_iteration",
           "mean_accepted_per_iteration", "time_encoder", "time_drafter", "time_verifier", "time_other",
           "peak_mem_mb", "device", "dtype", "threads", "params"]


def main(argv=None):
    a = build_parser().parse_args(argv)
    if a.threads is not None and a.threads < 1:
        raise ValueError(f"--threads must be >= 1, got {a.threads}")
    if a.repeats < 1 or a.warmup < 0:
        raise ValueError("--repeats must be >= 1 and --warmup >= 0")
    try:
        batch_sizes = sorted({1, *(int(b) for b in a.batch_sizes.split(",") if b.strip())})
    except ValueError:
        raise ValueError(f"--batch-sizes must be comma-separated integers, got {a.batch_sizes!r}") from None
    if batch_sizes[0] < 1:
        raise ValueError("--batch-sizes must be >= 1")
    if a.fp16 and a.dtype not in (None, "float16"):
        raise ValueError("--fp16 conflicts with --dtype " + a.dtype)
    dtype = "float16" if a.fp16 else (a.dtype or "float32")
    methods = [m.strip() for m in a.methods.split(",") if m.strip()]
    if not methods:
        raise ValueError("--methods is empty")

    import torch

    from fastdec.engine.load import load_model, read_lines
    from fastdec.engine.runner import (import_drafter_modules, parse_key_values, parse_method,
                                       parse_method_string, run_interleaved, run_method, summarize)
    from fastdec.engine.verifier import Verifier, resolve_device_dtype

    if a.threads:
        torch.set_num_threads(a.threads)
    resolve_device_dtype(a.device, dtype)
    import_drafter_modules(a.drafter_module)
    drafter_args = parse_key_values(a.drafter_arg)
    defaults = dict(acceptance=a.acceptance, beta=a.beta, tau=a.tau, topk=a.topk,
                    min_block_size=a.min_block_size if a.min_block_size != 1 else None)
    caps = list(dict.fromkeys([a.max_draft_len] + [int(c) for c in (a.max_draft_lens or "").split(",") if c.strip()]))
    specs = []
    for m in methods:
        name = m.split(":", 1)[0].strip().lower()
        if name in ("fairseq-beam", "fairseq-greedy"):
            for bs in batch_sizes:
                specs.append(parse_method_string(m, beam=a.beam, batch_size=bs))
        elif name == "greedy":
            specs.append(parse_method_string(m))
        else:
            for cap in caps:
                specs.append(parse_method_string(m, drafter_args=drafter_args, max_draft_len=cap, **defaults))
    labels = [sp.label for sp in specs]
    dup = sorted({x for x in labels if labels.count(x) > 1})
    if dup:
        raise ValueError(f"--methods gives several rows the label {', '.join(dup)}; name them apart with "
                         f"':label=NAME' (e.g. 'blockwise:block_size=4:label=bw-k4')")
    methods = [sp.method for sp in specs]
    lines = read_lines(a.input)
    if a.limit is not None:
        lines = lines[: a.limit]
    loaded = load_model(a.checkpoint, a.data_bin, device=a.device, dtype=dtype, user_dir=a.user_dir)
    sources = [loaded.encode(line) for line in lines]
    verifier = Verifier(loaded.model, device=loaded.device, dtype=loaded.dtype)
    kw = dict(loaded=loaded, verifier=verifier, sources=sources, max_len_a=a.max_len_a, max_len_b=a.max_len_b)
    warm = min(a.warmup, len(sources))

    greedy_ref = None
    if "greedy" not in methods:
        greedy_ref = [r.tokens for r in run_method(parse_method("greedy"), **kw)]
    rows = []
    done = {}
    if a.interleave:
        one = [sp for sp in specs if sp.batch_size == 1]
        best = {}
        for rep in range(a.repeats):
            res = run_interleaved(one, warmup=warm if rep == 0 else 0, **kw)
            for label, r in res.items():
                summ = summarize(r)
                if label not in best or summ["total_time"] < best[label][1]["total_time"]:
                    best[label] = (r, summ)
        done.update(best)
    for spec in specs:
        if spec.label in done:
            res, summ = done[spec.label]
        else:
            best = None
            for rep in range(a.repeats):
                res = run_method(spec, warmup=warm if rep == 0 else 0, **kw)
                summ = summarize(res)
                if best is None or summ["total_time"] < best[1]["total_time"]:
                    best = (res, summ)
            res, summ = best
        if spec.method == "greedy":
            greedy_ref = [r.tokens for r in res]
        rows.append((spec, res, summ))
        print(f"{spec.label}: {summ['total_time']:.3f}s {summ['sent_per_s'] or 0:.2f} sent/s", file=sys.stderr)
        if a.hyp_prefix:
            with open(f"{a.hyp_prefix}.{spec.label}.txt", "w", encoding="utf-8") as f:
                for r in res:
                    f.write(loaded.decode(r.tokens) + "\n")
        if a.stats_prefix:
            with open(f"{a.stats_prefix}.{spec.label}.jsonl", "w", encoding="utf-8") as f:
                for r in res:
                    f.write(json.dumps({"id": r.id, "n_tokens": len(r.tokens), **r.stats}) + "\n")

    base = next((s for sp, _, s in rows if sp.kind == "fairseq" and sp.beam == a.beam and sp.batch_size == 1), None)
    with open(a.csv, "w", newline="", encoding="utf-8") as f:
        w = csv.DictWriter(f, fieldnames=COLUMNS)
        w.writeheader()
        for spec, res, summ in rows:
            ident = sum(r.tokens == g for r, g in zip(res, greedy_ref))
            w.writerow({
                "label": spec.label, "method": spec.method, "batch_size": spec.batch_size,
                "n_sentences": summ["n_sentences"], "wall_time": summ["total_time"],
                "sent_per_s": summ["sent_per_s"], "mean_time_ms": summ["mean_time_ms"],
                "speedup_vs_beam": (base["total_time"] / summ["total_time"]) if base and summ["total_time"] else None,
                "identical_to_greedy": ident, "mean_iterations": summ["mean_iterations"],
                "tokens_per_iteration": summ["tokens_per_iteration"],
                "mean_accepted_per_iteration": summ["mean_accepted_per_iteration"],
                "time_encoder": summ.get("time_encoder"), "time_drafter": summ.get("time_drafter"),
                "time_verifier": summ.get("time_verifier"), "time_other": summ.get("time_other"),
                "peak_mem_mb": summ["peak_mem_mb"], "device": str(loaded.device),
                "dtype": str(loaded.dtype).replace("torch.", ""), "threads": torch.get_num_threads(),
                "params": json.dumps({k: v for k, v in spec.params.items() if v is not None}),
            })
    return 0


if __name__ == "__main__":
    run_cli(main)
