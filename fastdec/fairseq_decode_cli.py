"""``fastdec fairseq-decode``: decode a binarised split with fairseq-generate; write BPE-free tokenised and
detokenised hypotheses + timing."""
import argparse
import json
import sys


def add_arguments(ap: argparse.ArgumentParser) -> None:
    ap.add_argument("--data-bin", required=True)
    ap.add_argument("--checkpoint", required=True)
    ap.add_argument("--subset", default="test")
    ap.add_argument("--beam", type=int, required=True)
    ap.add_argument("--batch-size", type=int)
    ap.add_argument("--max-tokens", type=int)
    ap.add_argument("--max-len-a", type=float, default=1.2)
    ap.add_argument("--max-len-b", type=int, default=10)
    ap.add_argument("--device", default="cpu")
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--lang", required=True, help="target language (detokeniser)")
    ap.add_argument("--tok-out", required=True, help="hypotheses, Moses-tokenised, BPE removed")
    ap.add_argument("--detok-out", help="hypotheses, detokenised")
    ap.add_argument("--timing", required=True)


def main(a: argparse.Namespace) -> int:
    if a.beam < 1:
        raise ValueError(f"--beam must be >= 1, got {a.beam}")
    from fastdec.data.parallel import write_lines
    from fastdec.text import detokenize
    from fastdec.fairseq_generate import generate_command, run_generate

    cmd = generate_command(a.data_bin, a.checkpoint, subset=a.subset, beam=a.beam, max_tokens=a.max_tokens,
                           batch_size=a.batch_size, max_len_a=a.max_len_a, max_len_b=a.max_len_b,
                           device=a.device)
    hyps, timing = run_generate(cmd, threads=a.threads, log=sys.stdout)
    write_lines(a.tok_out, hyps)
    if a.detok_out:
        write_lines(a.detok_out, [detokenize(h, a.lang) for h in hyps])
    timing.update(beam=a.beam, batch_size=a.batch_size, max_tokens=a.max_tokens, threads=a.threads,
                  device=a.device, latency_ms=(1000 * timing["seconds"] / max(timing["sentences"], 1))
                  if timing else None)
    with open(a.timing, "w") as fh:
        json.dump(timing, fh, indent=2)
    print(json.dumps(timing), flush=True)
