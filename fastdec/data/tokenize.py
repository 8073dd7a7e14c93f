"""Moses-style normalisation and tokenisation (sacremoses), and its inverse for scoring."""
from __future__ import annotations

from functools import lru_cache


@lru_cache(maxsize=None)
def _tools(lang: str):
    from sacremoses import MosesDetokenizer, MosesPunctNormalizer, MosesTokenizer

    return MosesPunctNormalizer(lang=lang), MosesTokenizer(lang=lang), MosesDetokenizer(lang=lang)


def tokenize(line: str, lang: str) -> str:
    norm, tok, _ = _tools(lang)
    # escape=False keeps &, <, > readable (fairseq does not need XML escapes); dashes are not split,
    # so detokenize() is an exact inverse for the common cases.
    return tok.tokenize(norm.normalize(line), escape=False, return_str=True)


def detokenize(line: str, lang: str) -> str:
    _, _, detok = _tools(lang)
    return detok.detokenize(line.split())


def remove_bpe(line: str, marker: str = "@@ ") -> str:
    return (line + " ").replace(marker, "").rstrip()
