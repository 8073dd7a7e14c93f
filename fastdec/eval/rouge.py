"""ROUGE-1/2/L of summaries with Google's ``rouge-score`` (the maintained reimplementation of the ROUGE-1.5.5 Perl
script): the mean F1 over the corpus x 100, with the Porter stemmer, as the summarization literature reports it.

``rougeL`` is the sentence-level LCS; ``rougeLsum`` (summary-level, the R-L of files2rouge that BART and Ge et al.
report) splits both texts into sentences at newlines -- the CNN-DM lines hold none, so sentences are split after
``.``, ``!``, ``?`` followed by a space here.
"""
from __future__ import annotations

import re
from typing import Dict, Sequence

__all__ = ["corpus_rouge", "split_sentences", "SIGNATURE"]

SIGNATURE = "rouge-score 0.1.2, F1 x 100, Porter stemmer; rougeLsum with sentences split after .!? + space"
_SENT = re.compile(r"(?<=[.!?])\s+")


def split_sentences(text: str) -> str:
    return "\n".join(s for s in _SENT.split(text.strip()) if s)


def corpus_rouge(hyps: Sequence[str], refs: Sequence[str]) -> Dict[str, float]:
    """Mean F1 (x 100) of ``rouge1``, ``rouge2``, ``rougeL`` and ``rougeLsum`` over aligned hypothesis/reference
    lines (clear error when the counts differ)."""
    if len(hyps) != len(refs):
        raise ValueError(f"ROUGE: {len(hyps)} hypotheses but {len(refs)} references")
    if not hyps:
        raise ValueError("ROUGE: no hypotheses to score")
    from rouge_score import rouge_scorer

    keys = ("rouge1", "rouge2", "rougeL", "rougeLsum")
    scorer = rouge_scorer.RougeScorer(list(keys), use_stemmer=True)
    total = dict.fromkeys(keys, 0.0)
    for h, r in zip(hyps, refs):
        scores = scorer.score(split_sentences(r), split_sentences(h))  # (target, prediction)
        for k in keys:
            total[k] += scores[k].fmeasure
    return {k: 100.0 * v / len(hyps) for k, v in total.items()}
