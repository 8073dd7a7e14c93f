"""Scoring of the GAD track: detokenised sacreBLEU and the token repetition ratio (GAD paper, Table 9)."""
from __future__ import annotations

from typing import Dict, Iterable, List, Sequence

from fastdec.data.tokenize import detokenize, remove_bpe

__all__ = ["postprocess", "bleu", "repetition_ratio", "identical_fraction"]


def postprocess(bpe_line: str, lang: str) -> str:
    """A BPE'd, Moses-tokenised hypothesis -> plain text (remove ``@@ ``, Moses-detokenise)."""
    return detokenize(remove_bpe(bpe_line), lang)


def bleu(hyps_bpe: Sequence[str], refs: Sequence[str], lang: str) -> Dict:
    """sacreBLEU of BPE'd hypotheses (post-processed here) against raw references; ``{"bleu", "signature"}``."""
    from fastdec.eval.bleu import corpus_bleu

    return corpus_bleu([postprocess(h, lang) for h in hyps_bpe], list(refs))


def repetition_ratio(lines: Iterable[str]) -> float:
    """Token repetition ratio: the share of tokens identical to the token just before them (in the same line).

    Computed on whitespace tokens of the BPE-merged, Moses-tokenised output (``remove_bpe`` of the hypotheses),
    the proxy of NAT's multi-modality problem used in the GAD paper's Table 9 (e.g. AT greedy 0.18 %).
    Returns a fraction in [0, 1] (0.0 for an empty corpus).
    """
    total = repeats = 0
    for line in lines:
        toks: List[str] = remove_bpe(line).split()
        total += len(toks)
        repeats += sum(1 for a, b in zip(toks, toks[1:]) if a == b)
    return repeats / total if total else 0.0


def identical_fraction(a: Sequence, b: Sequence) -> float:
    if len(a) != len(b):
        raise ValueError(f"cannot compare {len(a)} outputs with {len(b)}")
    return sum(x == y for x, y in zip(a, b)) / len(a) if a else float("nan")
