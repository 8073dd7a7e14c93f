#!/usr/bin/env python
"""GAD track benchmark: decode BPE'd sentences with several systems in ONE process, batch 1, interleaved.

Systems (comma-separated): at_b<N> (fairseq beam N), greedy (engine), nat_k<K> (NAT drafter alone),
gad_k<K> (GAD, exact top-1), gadpp_k<K>_b<BETA>_t<TAU> (GAD++ top-BETA within TAU). Every sentence is decoded by
every system back to back (rotating order), on the same loaded weights; per-system BLEU (sacreBLEU on detokenised
output), identical-to-greedy counts, iterations, tokens per iteration, module times and speed vs --baseline.

Example::

    gad_bench.py --verifier verifier.pt --drafter drafter.pt --data-bin data-bin/distill \\
        --input data/bpe/test.en --ref data/raw/test.de --lang de \\
        --systems at_b5,at_b1,greedy,nat_k10,gad_k10,gadpp_k10_b3_t1,gadpp_k10_b5_t3 --out-dir gad/bench/test
"""
import argparse
import json
import sys
import time

from _common import run_cli


def build_parser():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--verifier", required=True, help="AT verifier checkpoint (fairseq transformer)")
    ap.add_argument("--drafter", help="NAT drafter checkpoint (nat_block_drafter); decoded at any block size k")
    ap.add_argument("--drafter-for", action="append", default=[], metavar="K=CHECKPOINT",
                    help="a drafter trained for block size K (used for systems with that k; repeatable)")
    ap.add_argument("--data-bin", required=True, help="data-bin with dict.<src>.txt / dict.<tgt>.txt")
    ap.add_argument("--input", required=True, help="BPE'd source sentences, one per line")
    ap.add_argument("--ref", help="raw (untokenised) references for sacreBLEU (same lines as --input)")
    ap.add_argument("--lang", required=True, help="target language (Moses detokeniser)")
    ap.add_argument("--systems", required=True, help="comma-separated system names (see above)")
    ap.add_argument("--baseline", default="at_b5", help="speed baseline system (default at_b5)")
    ap.add_argument("--limit", type=int, help="only the first N lines")
    ap.add_argument("--warmup", type=int, default=3, help="untimed warm-up sentences (default 3)")
    ap.add_argument("--repeats", type=int, default=1, help="decode each sentence N times, keep the fastest")
    ap.add_argument("--max-len-a", type=float, default=1.2)
    ap.add_argument("--max-len-b", type=int, default=10)
    ap.add_argument("--device", default="cpu")
    ap.add_argument("--dtype", default="float32", choices=["float32", "float64", "float16", "bfloat16"])
    ap.add_argument("--threads", type=int, default=1, help="torch intra-op threads (CPU)")
    ap.add_argument("--out-dir", required=True)
    return ap


def parse_drafter_for(items):
    out = {}
    for item in items:
        k, sep, path = item.partition("=")
        if not sep or not k.strip().isdigit() or not path:
            raise ValueError(f"--drafter-for expects K=CHECKPOINT, got {item!r}")
        out[int(k)] = path
    return out


def main(argv=None):
    a = build_parser().parse_args(argv)
    if a.threads < 1 or a.warmup < 0 or a.repeats < 1 or (a.limit is not None and a.limit < 1):
        raise ValueError("--threads and --repeats must be >= 1, --warmup >= 0, --limit >= 1")
    import torch

    from fastdec.engine.load import load_model, read_lines
    from fastdec.engine.nat_drafter import load_nat_drafter
    from fastdec.engine.verifier import Verifier
    from fastdec.gad.bench import write_run
    from fastdec.gad.systems import SystemRunner, parse_system, run_interleaved

    torch.set_num_threads(a.threads)
    specs = [parse_system(s.strip()) for s in a.systems.split(",") if s.strip()]
    if not specs:
        raise ValueError("--systems is empty")
    drafter_for = parse_drafter_for(a.drafter_for)
    if any(s.uses_drafter for s in specs) and not (a.drafter or drafter_for):
        raise ValueError("nat/gad/gadpp systems need --drafter (or --drafter-for)")
    lines = read_lines(a.input)
    refs = read_lines(a.ref) if a.ref else None
    if refs is not None and len(refs) != len(lines):
        raise ValueError(f"{a.input} has {len(lines)} lines but {a.ref} has {len(refs)}")
    if a.limit is not None:
        lines = lines[: a.limit]
        refs = refs[: a.limit] if refs is not None else None
    if not lines:
        raise ValueError(f"{a.input} is empty")

    loaded = load_model(a.verifier, a.data_bin, device=a.device, dtype=a.dtype)
    verifier = Verifier(loaded.model, device=loaded.device, dtype=loaded.dtype)

    def drafter_for_k(k):
        path = drafter_for.get(k, a.drafter)
        if path is None:
            raise ValueError(f"no drafter for block size k={k} (give --drafter or --drafter-for {k}=...)")
        return load_nat_drafter(path, a.data_bin, k=k, verifier=verifier, verifier_dict=loaded.tgt_dict)

    runner = SystemRunner(loaded, verifier, drafter_for_k, max_len_a=a.max_len_a, max_len_b=a.max_len_b)
    sources = [loaded.encode(line) for line in lines]
    t0 = time.time()

    def progress(i, n):
        if (i + 1) % 50 == 0 or i + 1 == n:
            print(f"[{time.time() - t0:7.1f}s] {i + 1}/{n} sentences", file=sys.stderr, flush=True)

    records = run_interleaved(runner, specs, sources, warmup=min(a.warmup, len(sources)), repeats=a.repeats,
                              progress=progress)
    meta = {"verifier": a.verifier, "drafter": a.drafter, "drafter_for": drafter_for, "input": a.input,
            "sentences": len(sources), "device": str(loaded.device), "dtype": a.dtype, "threads": a.threads,
            "max_len_a": a.max_len_a, "max_len_b": a.max_len_b, "warmup": a.warmup, "repeats": a.repeats,
            "wall_s": round(time.time() - t0, 2),
            "drafters": {str(k): repr(d) for k, d in runner._drafters.items()}}
    greedy = "greedy" if any(s.name == "greedy" for s in specs) else None
    df = write_run(a.out_dir, specs, records, loaded.decode, refs, a.lang, baseline=a.baseline,
                   greedy=greedy or "greedy", meta=meta)
    cols = [c for c in ("system", "bleu", "identical_to_greedy_pct", "mean_iterations", "tokens_per_iteration",
                        "mean_accepted", "mean_latency_ms", f"speed_vs_{a.baseline}") if c in df.columns]
    print(df[cols].to_string(index=False), flush=True)
    print(json.dumps(meta), flush=True)
    return 0


if __name__ == "__main__":
    run_cli(main)
