"""Per-sentence analysis of one GEC benchmark run (scripts/benchmark_decoding.py outputs).

Inputs are the files the benchmark writes for each method label (``greedy``, ``iad``, ``fairseq-beam5``, ...):
``<stats-prefix>.<label>.jsonl`` (one JSON object per sentence: ``id``, ``n_tokens`` = output tokens incl. the
final EOS, ``time`` in seconds, and for engine methods ``iterations`` and the per-iteration ``drafted`` /
``accepted`` draft lengths) and ``<hyp-prefix>.<label>.txt`` (BPE'd hypotheses, one per line).

* speedup of a sentence = its engine-greedy time / its IAD time (the paper's Figure 5 and Table 2: "speedup
  over greedy decoding");
* edit ratio = word-level Levenshtein distance between input and output, divided by the input's word count
  (the paper's definition; output = IAD's de-BPE'd hypothesis);
* IAD blocks: iteration ``i`` of the draft -> verify -> accept loop appends ``accepted[i]`` draft tokens plus
  the verifier's own token, so the output splits into one block per iteration. A block with accepted draft
  tokens was decoded in parallel (one verifier pass for several tokens); a block of one token with no accepted
  draft token was decoded one by one, as greedy decoding would.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Sequence

from fastdec.report.tables import read_jsonl

__all__ = ["SentenceRow", "read_stats", "read_lines", "remove_bpe", "levenshtein", "edit_ratio", "iad_blocks",
           "per_sentence", "spearman", "AnalysisError"]


class AnalysisError(ValueError):
    pass


def read_lines(path) -> list[str]:
    with open(path, encoding="utf-8", newline="\n") as f:
        text = f.read()
    lines = text.split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    return lines


def read_stats(path) -> list[dict]:
    """Per-sentence JSONL stats, ordered by ``id``."""
    try:
        rows = read_jsonl(path)
    except ValueError as e:
        raise AnalysisError(str(e)) from None
    rows.sort(key=lambda r: r.get("id", 0))
    return rows


def remove_bpe(line: str, marker: str = "@@") -> str:
    """subword-nmt BPE -> words (fairseq's ``--remove-bpe``: drop ``"@@ "`` and a trailing ``"@@"``)."""
    s = (line + " ").replace(marker + " ", "").rstrip()
    return " ".join(s.split())


def levenshtein(a: Sequence[str], b: Sequence[str]) -> int:
    """Edit distance (insertions, deletions, substitutions of cost 1) between two token sequences."""
    if len(a) < len(b):
        a, b = b, a
    prev = list(range(len(b) + 1))
    for i, x in enumerate(a, start=1):
        cur = [i]
        for j, y in enumerate(b, start=1):
            cur.append(min(prev[j] + 1, cur[j - 1] + 1, prev[j - 1] + (x != y)))
        prev = cur
    return prev[-1]


def edit_ratio(source: str, output: str) -> float:
    """Word-level edit distance between input and output normalised by the input length (paper, Sec. 4.1.2)."""
    src, out = source.split(), output.split()
    if not src:
        return float(len(out) > 0)
    return levenshtein(src, out) / len(src)


def iad_blocks(tokens: Sequence[str], accepted: Sequence[int], drafted: Sequence[int] | None = None,
               n_tokens: int | None = None) -> list[dict] | None:
    """Split an IAD output (BPE tokens, without EOS) into one block per iteration.

    Each block: ``{"tokens": [...], "parallel": bool, "iteration": i}``; ``parallel`` = at least one draft
    token was accepted in that iteration. The EOS (the last token the loop appended) is not part of any block;
    a block that held only the EOS is dropped. Returns None when the counts do not add up (e.g. the
    hypothesis text lost special tokens), so callers can skip the sentence instead of showing wrong blocks.
    """
    total = len(tokens) + 1  # + EOS
    if n_tokens is not None and n_tokens != total:
        return None
    seq = list(tokens) + [None]
    blocks, pos = [], 0
    for i, a in enumerate(accepted):
        if pos >= total:
            return None
        take = min(int(a) + 1, total - pos)
        chunk = [t for t in seq[pos: pos + take] if t is not None]
        pos += take
        if chunk:
            blocks.append({"tokens": chunk, "parallel": int(a) > 0, "iteration": i,
                           "drafted": int(drafted[i]) if drafted is not None else None})
    if pos != total:
        return None
    return blocks


@dataclass
class SentenceRow:
    id: int
    source: str                 # words
    output: str                 # IAD output, words
    src_words: int
    edit_ratio: float
    greedy_time: float
    iad_time: float
    speedup: float
    iterations: int
    out_tokens: int             # BPE tokens incl. EOS
    identical: bool             # IAD tokens == engine greedy tokens (from the hypothesis text)
    blocks: list | None = field(default=None, repr=False)

    def as_dict(self) -> dict:
        return {"id": self.id, "src_words": self.src_words, "edit_ratio": round(self.edit_ratio, 4),
                "greedy_ms": round(1000 * self.greedy_time, 3), "iad_ms": round(1000 * self.iad_time, 3),
                "speedup": round(self.speedup, 3), "iterations": self.iterations, "out_tokens": self.out_tokens,
                "identical_to_greedy": self.identical, "source": self.source, "output": self.output}


def per_sentence(sources: Sequence[str], greedy_stats: Sequence[dict], iad_stats: Sequence[dict],
                 greedy_hyps: Sequence[str], iad_hyps: Sequence[str]) -> list[SentenceRow]:
    """Join the benchmark's per-sentence files of engine greedy and IAD (``sources`` = tokenised words)."""
    n = len(sources)
    for name, seq in (("greedy stats", greedy_stats), ("IAD stats", iad_stats), ("greedy hypotheses", greedy_hyps),
                      ("IAD hypotheses", iad_hyps)):
        if len(seq) != n:
            raise AnalysisError(f"{name}: {len(seq)} entries for {n} benchmark sentences")
    rows = []
    for i in range(n):
        g, d = greedy_stats[i], iad_stats[i]
        toks = iad_hyps[i].split()
        out = remove_bpe(iad_hyps[i])
        gt, it = float(g["time"]), float(d["time"])
        rows.append(SentenceRow(
            id=i, source=sources[i], output=out, src_words=len(sources[i].split()),
            edit_ratio=edit_ratio(sources[i], out), greedy_time=gt, iad_time=it,
            speedup=gt / it if it > 0 else math.nan, iterations=int(d.get("iterations", 0)),
            out_tokens=int(d.get("n_tokens", len(toks) + 1)), identical=iad_hyps[i] == greedy_hyps[i],
            blocks=iad_blocks(toks, d.get("accepted", []), d.get("drafted"), d.get("n_tokens"))))
    return rows


def _ranks(xs: Sequence[float]) -> list[float]:
    order = sorted(range(len(xs)), key=lambda i: xs[i])
    ranks = [0.0] * len(xs)
    i = 0
    while i < len(order):
        j = i
        while j + 1 < len(order) and xs[order[j + 1]] == xs[order[i]]:
            j += 1
        for k in range(i, j + 1):
            ranks[order[k]] = (i + j) / 2 + 1
        i = j + 1
    return ranks


def spearman(x: Sequence[float], y: Sequence[float]) -> float:
    """Spearman's rank correlation (average ranks for ties); NaN if undefined."""
    if len(x) != len(y) or len(x) < 2:
        return math.nan
    rx, ry = _ranks(x), _ranks(y)
    mx, my = sum(rx) / len(rx), sum(ry) / len(ry)
    cov = sum((a - mx) * (b - my) for a, b in zip(rx, ry))
    vx = sum((a - mx) ** 2 for a in rx)
    vy = sum((b - my) ** 2 for b in ry)
    return cov / math.sqrt(vx * vy) if vx > 0 and vy > 0 else math.nan


def write_per_sentence(rows: Sequence[SentenceRow], path) -> None:
    import csv

    Path(path).parent.mkdir(parents=True, exist_ok=True)
    with open(path, "w", newline="", encoding="utf-8") as f:
        w = csv.DictWriter(f, fieldnames=list(rows[0].as_dict()) if rows else ["id"])
        w.writeheader()
        for r in rows:
            w.writerow(r.as_dict())
