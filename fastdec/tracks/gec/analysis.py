"""Per-sentence analysis of one GEC benchmark run (a ``fastdec bench`` run, :mod:`fastdec.bench.results`): the
records of the engine's ``greedy`` and of ``iad`` (time, output tokens ending with EOS, per-iteration ``drafted`` /
``accepted`` draft lengths) and IAD's BPE'd hypotheses.

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
from typing import Sequence

from fastdec.text import remove_bpe

__all__ = ["SentenceRow", "levenshtein", "edit_ratio", "iad_blocks", "per_sentence", "spearman", "AnalysisError"]


class AnalysisError(ValueError):
    pass


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
                           "drafted": int(drafted[i]) if drafted else None})
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
    identical: bool             # IAD tokens == engine greedy tokens
    blocks: list | None = field(default=None, repr=False)


def per_sentence(sources: Sequence[str], greedy: Sequence, iad: Sequence, iad_hyps: Sequence[str], *,
                 debpe=remove_bpe) -> list[SentenceRow]:
    """Join the run's records (:class:`fastdec.bench.results.Record`) of engine greedy and IAD with IAD's BPE'd
    hypotheses (``sources`` = the benchmark sentences, tokenised words). ``debpe`` turns BPE tokens into words
    (subword-nmt's ``@@`` by default; a GPT-2 decoder for BART's BPE ids, which also sets each block's ``text``)."""
    n = len(sources)
    for name, seq in (("greedy records", greedy), ("IAD records", iad), ("IAD hypotheses", iad_hyps)):
        if len(seq) != n:
            raise AnalysisError(f"{name}: {len(seq)} entries for {n} benchmark sentences")
    rows = []
    for i, (g, d, hyp) in enumerate(zip(greedy, iad, iad_hyps)):
        toks, out = hyp.split(), debpe(hyp)
        blocks = iad_blocks(toks, d.accepted, d.drafted, len(d.tokens))
        if blocks and debpe is not remove_bpe:
            for b in blocks:
                b["text"] = debpe(" ".join(b["tokens"]))
        rows.append(SentenceRow(
            id=i, source=sources[i], output=out, src_words=len(sources[i].split()),
            edit_ratio=edit_ratio(sources[i], out), greedy_time=g.time, iad_time=d.time,
            speedup=g.time / d.time if d.time > 0 else math.nan, iterations=d.iterations,
            out_tokens=len(d.tokens), identical=d.tokens == g.tokens,
            blocks=blocks))
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
