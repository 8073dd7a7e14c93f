#!/usr/bin/env python
"""GAD paper, Table 8: peak memory per decoding system, each system decoded in a fresh child process.

    gad_memory.py --verifier v.pt --drafter d.pt --data-bin DIR --input test.bpe.en \\
        --systems at_b5,greedy,gad_k10,gadpp_k10_b5_t3 --limit 50 --output gad_table8_memory.csv
"""
import argparse
import json
import os
import sys

from _common import run_cli


def build_parser():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--verifier", required=True)
    ap.add_argument("--drafter")
    ap.add_argument("--data-bin", required=True)
    ap.add_argument("--input", required=True, help="BPE'd source sentences")
    ap.add_argument("--systems", help="comma-separated systems (parent mode)")
    ap.add_argument("--child", help=argparse.SUPPRESS)
    ap.add_argument("--limit", type=int, default=50, help="sentences decoded per system (default 50)")
    ap.add_argument("--max-len-a", type=float, default=1.2)
    ap.add_argument("--max-len-b", type=int, default=10)
    ap.add_argument("--device", default="cpu")
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--output", help="CSV (parent mode)")
    ap.add_argument("--raw", help="also write the raw measurements (JSON)")
    return ap


def child(a):
    import torch

    from fastdec.engine.load import load_model, read_lines
    from fastdec.engine.nat_drafter import load_nat_drafter
    from fastdec.engine.verifier import Verifier
    from fastdec.gad.memory import child_result
    from fastdec.gad.systems import SystemRunner, parse_system

    torch.set_num_threads(a.threads)
    spec = parse_system(a.child)
    lines = read_lines(a.input)[: a.limit]
    box = {}

    def load():
        loaded = load_model(a.verifier, a.data_bin, device=a.device)
        ver = Verifier(loaded.model, device=loaded.device, dtype=loaded.dtype)
        drafter = None
        if spec.uses_drafter:
            if not a.drafter:
                raise ValueError(f"{spec.name} needs --drafter")
            drafter = load_nat_drafter(a.drafter, a.data_bin, k=spec.k, verifier=ver, verifier_dict=loaded.tgt_dict,
                                       cache=False)
        runner = SystemRunner(loaded, ver, (lambda k: drafter), max_len_a=a.max_len_a, max_len_b=a.max_len_b)
        runner.prepare([spec])
        box.update(runner=runner, sources=[loaded.encode(x) for x in lines])
        return (loaded.model, drafter.model if drafter is not None else None)

    def decode():
        with torch.inference_mode():
            for i, s in enumerate(box["sources"]):
                box["runner"].run(spec, s, i)
        return len(box["sources"])

    import torch as _t

    dev = _t.device(a.device)
    print(json.dumps(child_result(spec.name, dev, load, decode)), flush=True)
    return 0


def main(argv=None):
    a = build_parser().parse_args(argv)
    if a.limit < 1 or a.threads < 1:
        raise ValueError("--limit and --threads must be >= 1")
    if a.child:
        return child(a)
    if not a.systems or not a.output:
        raise ValueError("--systems and --output are required")
    from fastdec.gad.memory import measure_all
    from fastdec.gad.systems import parse_system
    from fastdec.gad.tables import table8_memory

    systems = [s.strip() for s in a.systems.split(",") if s.strip()]
    for s in systems:
        parse_system(s)
    base = [sys.executable, os.path.abspath(__file__), "--verifier", a.verifier, "--data-bin", a.data_bin,
            "--input", a.input, "--limit", str(a.limit), "--max-len-a", str(a.max_len_a), "--max-len-b",
            str(a.max_len_b), "--device", a.device, "--threads", str(a.threads)]
    if a.drafter:
        base += ["--drafter", a.drafter]
    env = dict(os.environ, OMP_NUM_THREADS=str(a.threads), MKL_NUM_THREADS=str(a.threads))
    rows = measure_all(systems, lambda s: base + ["--child", s], env=env)
    if a.raw:
        with open(a.raw, "w") as f:
            json.dump(rows, f, indent=2)
    df = table8_memory(rows)
    df.to_csv(a.output, index=False)
    print(df.to_string(index=False), flush=True)
    return 0


if __name__ == "__main__":
    run_cli(main)
