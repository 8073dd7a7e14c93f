"""SARI (Xu et al. 2016, *Optimizing Statistical Machine Translation for Text Simplification*) and multi-reference
BLEU, the two scores of Ge et al. Table 4's Wikilarge columns.

SARI here is the sentence-level score of Xu et al.'s reference code (``SARIsent`` of
github.com/cocoxu/simplification, the script the Wikilarge systems of DRESS and its successors were scored with),
averaged over the corpus: for n = 1..4, F1 of the n-grams kept, precision of the n-grams deleted and F1 of the
n-grams added, each judged against the source and all references; SARI = (mean keep + mean delete + mean add) / 3,
times 100. The original's conventions are kept on purpose, because they move the number: source and output n-gram
counts are multiplied by the number of references while reference counts are summed over references; additions are
counted as n-gram *types*; keep recall averages per-n-gram ratios; a score with nothing to score (e.g. 4-grams of a
3-word sentence) is 0, not 1. (The HF ``evaluate`` port changes the last two: 0/0 = 1 and keep recall over counts.)

torchmetrics 1.x, the maintained implementation suggested for this, ships no SARI (checked: 1.9.0 has BLEU, chrF,
ROUGE, TER, ... but no SARIScore), and EASSE / HF evaluate need downloads, so the port lives here and
tests/eval/test_sari.py checks it on hand-worked cases.
"""
from __future__ import annotations

from collections import Counter
from typing import List, Sequence

__all__ = ["sari_sentence", "corpus_sari", "multi_bleu", "read_references"]

MAX_N = 4


def _ngrams(tokens: Sequence[str], n: int) -> List[str]:
    return [" ".join(tokens[i:i + n]) for i in range(len(tokens) - n + 1)]


def _f1(p: float, r: float) -> float:
    return 2 * p * r / (p + r) if p > 0 or r > 0 else 0.0


def _sari_ngram(source: List[str], output: List[str], refs: List[List[str]]) -> tuple:
    """(keep F1, delete precision, add F1) of one n-gram order."""
    nref = len(refs)
    ref_counts = Counter(g for r in refs for g in r)
    src = Counter({g: c * nref for g, c in Counter(source).items()})
    out = Counter({g: c * nref for g, c in Counter(output).items()})

    keep = src & out                # kept by the output
    keep_good = keep & ref_counts   # ... and by the references
    keep_all = src & ref_counts     # kept by the references
    keep_p = sum(keep_good[g] / keep[g] for g in keep) / len(keep) if keep else 0.0
    keep_r = sum(keep_good[g] / keep_all[g] for g in keep_all) / len(keep_all) if keep_all else 0.0

    deleted = src - out             # deleted by the output
    del_good = deleted - ref_counts  # ... and not in the references
    del_p = sum(del_good[g] / deleted[g] for g in deleted) / len(deleted) if deleted else 0.0

    added = set(out) - set(src)
    add_good = added & set(ref_counts)
    add_all = set(ref_counts) - set(src)
    add_p = len(add_good) / len(added) if added else 0.0
    add_r = len(add_good) / len(add_all) if add_all else 0.0
    return _f1(keep_p, keep_r), del_p, _f1(add_p, add_r)


def sari_sentence(source: str, output: str, references: Sequence[str], lowercase: bool = True) -> float:
    """SARI of one output in [0, 1] (the reference code lowercases; tokens are split on single spaces)."""
    if not references:
        raise ValueError("SARI needs at least one reference")
    norm = (lambda s: s.lower()) if lowercase else (lambda s: s)
    s1, o1 = norm(source).split(" "), norm(output).split(" ")
    r1 = [norm(r).split(" ") for r in references]
    keep, delete, add = [], [], []
    for n in range(1, MAX_N + 1):
        k, d, a = _sari_ngram(_ngrams(s1, n), _ngrams(o1, n), [_ngrams(r, n) for r in r1])
        keep.append(k)
        delete.append(d)
        add.append(a)
    return (sum(keep) / MAX_N + sum(delete) / MAX_N + sum(add) / MAX_N) / 3


def corpus_sari(sources: Sequence[str], outputs: Sequence[str], references: Sequence[Sequence[str]]) -> float:
    """Mean sentence SARI times 100; ``references[i]`` are the references of sentence i."""
    if not (len(sources) == len(outputs) == len(references)):
        raise ValueError(f"SARI: {len(sources)} sources, {len(outputs)} outputs and {len(references)} reference "
                         f"sets; they must be parallel (is the benchmark run incomplete?)")
    if not sources:
        raise ValueError("SARI of an empty corpus")
    return 100 * sum(sari_sentence(s, o, r) for s, o, r in zip(sources, outputs, references)) / len(sources)


def multi_bleu(outputs: Sequence[str], references: Sequence[Sequence[str]], tokenize: str = "none") -> dict:
    """sacreBLEU over several references per sentence (``references[i]``: those of sentence i, all of one count).
    ``tokenize="none"``: the data are already tokenised (Wikilarge and TurkCorpus are)."""
    from sacrebleu.metrics import BLEU

    counts = {len(r) for r in references}
    if len(counts) != 1:
        raise ValueError(f"BLEU: sentences have different numbers of references {sorted(counts)}")
    metric = BLEU(tokenize=tokenize)
    streams = [list(stream) for stream in zip(*references)]
    score = metric.corpus_score(list(outputs), streams)
    return {"bleu": round(score.score, 2), "signature": str(metric.get_signature())}


def read_references(path: str) -> List[List[str]]:
    """A references file: one line per sentence, its references separated by tabs."""
    from fastdec.text import read_lines

    return [line.split("\t") for line in read_lines(path)]
