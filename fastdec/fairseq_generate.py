"""Run fairseq-generate and read its output: hypotheses in input order and fairseq's own timing line."""
from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

_TIMING = re.compile(r"Translated ([\d,]+) sentences \(([\d,]+) tokens\) in ([\d.]+)s "
                     r"\(([\d.]+) sentences/s, ([\d.]+) tokens/s\)")


def generate_command(data_bin: str, checkpoint: str, *, subset: str, beam: int, max_tokens: int | None = None,
                     batch_size: int | None = None, max_len_a: float = 1.2, max_len_b: int = 10,
                     device: str = "cpu", user_dir: str | None = None, extra: list[str] | None = None,
                     remove_bpe: bool = True) -> list[str]:
    exe = str(Path(sys.executable).with_name("fairseq-generate"))
    cmd = [exe, data_bin, "--path", checkpoint, "--gen-subset", subset, "--beam", str(beam),
           "--nbest", "1", "--max-len-a", str(max_len_a), "--max-len-b", str(max_len_b),
           "--required-batch-size-multiple", "1", "--num-workers", "0"]
    if remove_bpe:
        cmd += ["--remove-bpe"]
    if batch_size:
        cmd += ["--batch-size", str(batch_size)]
    if max_tokens:
        cmd += ["--max-tokens", str(max_tokens)]
    if device == "cpu":
        cmd += ["--cpu"]
    if user_dir:
        cmd += ["--user-dir", user_dir]
    return cmd + (extra or [])


def parse_generate_output(text: str, log_text: str = "") -> tuple[list[str], dict]:
    """Hypotheses (H- lines) sorted by sentence id from stdout, and fairseq's timing summary (logged to stderr)."""
    hyps: dict[int, str] = {}
    for line in text.splitlines():
        if line.startswith("H-"):
            head, _score, *rest = line.split("\t")
            hyps[int(head[2:])] = rest[0] if rest else ""
    n = len(hyps)
    if n and sorted(hyps) != list(range(n)):
        raise RuntimeError(f"fairseq-generate returned ids {min(hyps)}..{max(hyps)} with gaps ({n} hypotheses)")
    timing = {}
    if m := _TIMING.search(log_text or text):
        sentences, per_s = int(m.group(1).replace(",", "")), float(m.group(4))
        # fairseq prints the seconds rounded to 0.1 s (a fast batch-1 run of 40 sentences reads "0.0s"); its
        # sentences/s has two decimals, so the time is recovered from it when it is finite.
        seconds = sentences / per_s if per_s > 0 else float(m.group(3))
        timing = {"sentences": sentences, "tokens": int(m.group(2).replace(",", "")),
                  "seconds": seconds, "sentences_per_s": per_s, "tokens_per_s": float(m.group(5))}
    return [hyps[i] for i in range(n)], timing


def run_generate(cmd: list[str], threads: int = 1, log=None) -> tuple[list[str], dict]:
    env = {**os.environ, "OMP_NUM_THREADS": str(threads), "MKL_NUM_THREADS": str(threads)}
    if log:
        print("+ " + " ".join(cmd), file=log, flush=True)
    proc = subprocess.run(cmd, env=env, capture_output=True, text=True)
    if log:
        log.write(proc.stderr[-20000:])
    if proc.returncode != 0:
        raise RuntimeError(f"fairseq-generate failed ({proc.returncode}):\n{proc.stderr[-3000:]}")
    hyps, timing = parse_generate_output(proc.stdout, proc.stderr)
    if not timing:
        raise RuntimeError("fairseq-generate printed no 'Translated N sentences' timing line:\n" + proc.stderr[-2000:])
    return hyps, timing
