"""Character-level tokenisation for Chinese GEC (NLPCC-18, Ge et al. Table 4): every non-space character is a token,
in the text the model sees and in the gold M2, so the project's M2 scorer scores at character level.

NLPCC-18's gold M2 (``gold.01``) is word-segmented (PKUNLP); :func:`m2_block_to_chars` maps each word-level edit to
the characters it covers (span ``i..j`` of words becomes the span of their characters; the correction is split into
characters). A word-level edit thus becomes one multi-character gold edit, which the MaxMatch scorer's lattice matches
by merging the system's character edits, as it merges word edits for English.
"""
from __future__ import annotations

from typing import List

__all__ = ["to_chars", "m2_block_to_chars"]


def to_chars(line: str) -> str:
    """``"我 爱北京"`` -> ``"我 爱 北 京"``: whitespace dropped, one token per character."""
    return " ".join(ch for ch in line if not ch.isspace())


def _offsets(words: List[str]) -> List[int]:
    """Character offset at which each word starts, plus the total."""
    out = [0]
    for w in words:
        out.append(out[-1] + len(w))
    return out


def m2_block_to_chars(block: str, name: str = "<m2>") -> str:
    """One M2 block (``S`` line, ``A`` lines) with word spans and corrections rewritten at character level."""
    lines = block.split("\n")
    if not lines[0].startswith("S"):
        raise ValueError(f"{name}: an M2 block must start with an 'S' line, got {lines[0][:40]!r}")
    words = lines[0][2:].split()
    off = _offsets(words)
    out = ["S " + to_chars("".join(words))]
    for line in lines[1:]:
        if not line.startswith("A "):
            out.append(line)  # comments ("I" lines) pass through, as the scorer ignores them
            continue
        fields = line[2:].split("|||")
        try:
            start, end = (int(x) for x in fields[0].split())
        except ValueError:
            raise ValueError(f"{name}: bad span in {line[:60]!r} (block starting {lines[0][:40]!r})") from None
        if start == -1 and end == -1:
            out.append(line)
            continue
        if not 0 <= start <= end <= len(words):
            raise ValueError(f"{name}: edit span {start} {end} outside the sentence ({len(words)} words): "
                             f"{lines[0][:60]!r}")
        corrections = ["-NONE-" if c.strip() in ("", "-NONE-") else to_chars(c) for c in fields[2].split("||")]
        fields[0] = f"{off[start]} {off[end]}"
        fields[2] = "||".join(corrections)
        out.append("A " + "|||".join(fields))
    return "\n".join(out)
