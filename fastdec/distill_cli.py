"""``fastdec distill``: sequence-level knowledge distillation, sharded: split the BPE'd training source, translate
one shard with the teacher (beam search, BPE kept), and gather the shards into the distilled training set."""
import argparse
import json
import sys
import tempfile
from pathlib import Path


def shard(a):
    from fastdec.data.parallel import read_lines, write_lines

    src, tgt = read_lines(a.src), read_lines(a.tgt)
    n = len(a.outputs) // 2
    size = -(-len(src) // n)
    for i in range(n):
        write_lines(a.outputs[2 * i], src[i * size:(i + 1) * size])
        write_lines(a.outputs[2 * i + 1], tgt[i * size:(i + 1) * size])
    print(f"{len(src)} pairs -> {n} shards of <= {size}", flush=True)


def translate(a):
    import subprocess

    from fastdec.data.parallel import read_lines, write_lines
    from fastdec.fairseq_generate import generate_command, run_generate

    with tempfile.TemporaryDirectory() as tmp:
        prefix = Path(tmp) / "shard"
        for lang, path in ((a.src_lang, a.src), (a.tgt_lang, a.tgt)):
            Path(f"{prefix}.{lang}").write_text(Path(path).read_text(encoding="utf-8"), encoding="utf-8")
        exe = str(Path(sys.executable).with_name("fairseq-preprocess"))
        subprocess.run([exe, "--source-lang", a.src_lang, "--target-lang", a.tgt_lang, "--testpref", str(prefix),
                        "--destdir", f"{tmp}/bin", "--srcdict", a.dict, "--tgtdict", a.dict, "--workers", "1"],
                       check=True, capture_output=True)
        cmd = generate_command(f"{tmp}/bin", a.checkpoint, subset="test", beam=a.beam, max_tokens=a.max_tokens,
                               max_len_a=a.max_len_a, max_len_b=a.max_len_b, device=a.device, remove_bpe=False)
        hyps, timing = run_generate(cmd, threads=a.threads, log=sys.stdout)
    n_src = len(read_lines(a.src))
    if len(hyps) != n_src:
        raise RuntimeError(f"teacher returned {len(hyps)} translations for {n_src} lines of {a.src}")
    write_lines(a.output, hyps)
    print(json.dumps(timing), flush=True)


def gather(a):
    from fastdec.data.parallel import read_lines, write_lines

    src, hyp = [], []
    for s_path, h_path in zip(a.src_shards, a.hyp_shards):
        src += read_lines(s_path)
        hyp += read_lines(h_path)
    keep = [(s, h) for s, h in zip(src, hyp) if h.strip()]
    write_lines(a.src_out, [s for s, _ in keep])
    write_lines(a.tgt_out, [h for _, h in keep])
    report = {"pairs": len(src), "kept": len(keep), "dropped_empty_translation": len(src) - len(keep)}
    Path(a.report).write_text(json.dumps(report, indent=2))
    print(json.dumps(report), flush=True)


def add_arguments(ap: argparse.ArgumentParser) -> None:
    sub = ap.add_subparsers(dest="cmd", required=True)
    p = sub.add_parser("shard")
    p.add_argument("--src", required=True)
    p.add_argument("--tgt", required=True)
    p.add_argument("--outputs", nargs="+", required=True, help="src_0 tgt_0 src_1 tgt_1 ...")
    p.set_defaults(fn=shard)
    p = sub.add_parser("translate")
    for name in ("--src", "--tgt", "--src-lang", "--tgt-lang", "--dict", "--output"):
        p.add_argument(name, required=True)
    p.add_argument("--checkpoint", required=True, help="the teacher, or several joined by ':' (an ensemble)")
    p.add_argument("--beam", type=int, default=5)
    p.add_argument("--max-tokens", type=int, default=8000)
    p.add_argument("--max-len-a", type=float, default=1.2)
    p.add_argument("--max-len-b", type=int, default=10)
    p.add_argument("--device", default="cpu")
    p.add_argument("--threads", type=int, default=1)
    p.set_defaults(fn=translate)
    p = sub.add_parser("gather")
    p.add_argument("--src-shards", nargs="+", required=True)
    p.add_argument("--hyp-shards", nargs="+", required=True)
    p.add_argument("--src-out", required=True)
    p.add_argument("--tgt-out", required=True)
    p.add_argument("--report", required=True)
    p.set_defaults(fn=gather)


def main(a: argparse.Namespace) -> int:
    a.fn(a)
