"""``fastdec gad-memory``: GAD paper, Table 8: peak memory per decoding method, each method decoded in a fresh child
process by the common benchmark layer (fastdec.bench: the same method grammar and decoders as ``fastdec bench``).

    fastdec gad-memory --checkpoint verifier.pt --data-bin DIR --input test.bpe.en \\
        --drafter-arg checkpoint=drafter.pt --methods fairseq:beam=5,greedy,gad:k=10,gad:k=10:beta=5:tau=3 --limit 50 --output gad_table8_memory.csv
"""
import argparse
import json
import os
import sys


def add_arguments(ap: argparse.ArgumentParser) -> None:
    ap.add_argument("--checkpoint", required=True, help="fairseq checkpoint of the AT verifier")
    ap.add_argument("--data-bin", required=True)
    ap.add_argument("--input", required=True, help="BPE'd source sentences")
    ap.add_argument("--methods", help="comma-separated methods (fastdec.bench.methods), e.g. greedy,gad:k=10")
    ap.add_argument("--drafter-arg", action="append", metavar="KEY=VALUE",
                    help="default drafter argument of every drafting method (repeatable; e.g. checkpoint=PATH)")
    ap.add_argument("--child", help=argparse.SUPPRESS)
    ap.add_argument("--limit", type=int, default=50, help="sentences decoded per method (default 50)")
    ap.add_argument("--max-len-a", type=float, default=1.2)
    ap.add_argument("--max-len-b", type=int, default=10)
    ap.add_argument("--device", default="cpu")
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--output", help="CSV")
    ap.add_argument("--paper-reference", default="wmt14_en-de",
                    help="the config's gad.paper_reference: paper numbers only for wmt14_en-de (the paper's pair)")
    ap.add_argument("--raw", help="also write the raw measurements (JSON)")


def child(a):
    import torch

    from fastdec.bench.methods import parse_method
    from fastdec.bench.runner import Context, method_decoder
    from fastdec.engine.load import load_model
    from fastdec.engine.verifier import Verifier
    from fastdec.tracks.gad.memory import child_result
    from fastdec.text import read_lines

    torch.set_num_threads(a.threads)
    m = parse_method(a.child)
    if m.drafter == "gad":
        import fastdec.engine.nat_drafter  # noqa: F401  (imported before the measurement: module code is not the drafter)
    lines = read_lines(a.input)[: a.limit]
    box = {}

    def load():
        loaded = load_model(a.checkpoint, a.data_bin, device=a.device)
        ver = Verifier(loaded.model, device=loaded.device, dtype=loaded.dtype)
        box["one"], drafter = method_decoder(Context(loaded, ver, a.max_len_a, a.max_len_b), m)
        box["sources"] = [loaded.encode(x) for x in lines]
        return loaded.model, getattr(drafter, "model", None)

    def decode():
        with torch.inference_mode():
            for i, s in enumerate(box["sources"]):
                box["one"](i, s)
        return len(box["sources"])

    print(json.dumps(child_result(m.spec, torch.device(a.device), load, decode)), flush=True)
    return 0


def main(a: argparse.Namespace) -> int:
    if a.limit < 1 or a.threads < 1:
        raise ValueError("--limit and --threads must be >= 1")
    if a.child:
        return child(a)
    if not a.methods or not a.output:
        raise ValueError("--methods and --output are required")
    from fastdec.bench.methods import parse_key_values, parse_methods
    from fastdec.tracks.gad.memory import measure_all
    from fastdec.tracks.gad.tables import paper_en_de_only, table8_memory

    methods = parse_methods(a.methods, drafter_args=parse_key_values(a.drafter_arg))
    base = [sys.executable, "-m", "fastdec", "gad-memory", "--checkpoint", a.checkpoint, "--data-bin", a.data_bin,
            "--input", a.input, "--limit", str(a.limit), "--max-len-a", str(a.max_len_a), "--max-len-b",
            str(a.max_len_b), "--device", a.device, "--threads", str(a.threads)]
    env = dict(os.environ, OMP_NUM_THREADS=str(a.threads), MKL_NUM_THREADS=str(a.threads))
    rows = measure_all([m.spec for m in methods], lambda spec: base + ["--child", spec], env=env)
    if a.raw:
        with open(a.raw, "w") as f:
            json.dump(rows, f, indent=2)
    df = paper_en_de_only(table8_memory(rows), a.paper_reference, "Table 8")
    df.to_csv(a.output, index=False)
    print(df.to_string(index=False), flush=True)
    return 0
