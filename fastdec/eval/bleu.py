"""sacreBLEU on local files (no test-set downloads), with its signature."""
from __future__ import annotations


def corpus_bleu(hyps: list[str], refs: list[str]) -> dict:
    from sacrebleu.metrics import BLEU

    if len(hyps) != len(refs):
        raise ValueError(f"{len(hyps)} hypotheses for {len(refs)} references: the decode run is incomplete")
    metric = BLEU()
    score = metric.corpus_score(hyps, [refs])
    return {"bleu": round(score.score, 2), "signature": str(metric.get_signature())}


def identical_count(a: list[str], b: list[str]) -> int:
    if len(a) != len(b):
        raise ValueError(f"cannot compare {len(a)} outputs with {len(b)}")
    return sum(x == y for x, y in zip(a, b))
