"""Text in and out: reading/writing line files, Moses (de)tokenisation, BPE removal.

Every stage and table reads text through here, so one convention holds everywhere: UTF-8, ``\\n`` line ends,
optional ``.gz``; a missing file or a non-UTF-8 byte is an error naming the file and line.
"""
from __future__ import annotations

import gzip
from functools import lru_cache
from pathlib import Path
from typing import Iterable

__all__ = ["CorpusError", "open_text", "read_lines", "write_lines", "tokenize", "detokenize", "remove_bpe",
           "postprocess"]


class CorpusError(ValueError):
    """Bad text input; the message names the file, the line and the fix."""


def open_text(path: str | Path, mode: str = "rt"):
    path = Path(path)
    if path.suffix == ".gz":
        return gzip.open(path, mode, encoding="utf-8", newline="\n") if "t" in mode else gzip.open(path, mode)
    return open(path, mode, encoding="utf-8", newline="\n") if "t" in mode else open(path, mode)


def read_lines(path: str | Path) -> list[str]:
    """Lines of a UTF-8 text file (optionally .gz) without their newline; non-UTF-8 bytes raise CorpusError."""
    if not Path(path).is_file():
        raise CorpusError(f"{path}: file not found")
    with open_text(path, "rb") as fh:
        raw = fh.read()
    lines = raw.split(b"\n")
    if lines and lines[-1] == b"":
        lines.pop()
    out = []
    for i, line in enumerate(lines, 1):
        try:
            out.append(line.decode("utf-8").rstrip("\r"))
        except UnicodeDecodeError as e:
            raise CorpusError(
                f"{path}:{i}: not valid UTF-8 (byte {line[e.start]:#04x} at column {e.start + 1}). "
                f"Re-encode the file to UTF-8 (e.g. `iconv -f latin1 -t utf-8`) or remove the line "
                f"from both sides of the parallel corpus."
            ) from None
    return out


def write_lines(path: str | Path, lines: Iterable[str]) -> None:
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "w", encoding="utf-8", newline="\n") as fh:
        for line in lines:
            fh.write(line + "\n")


@lru_cache(maxsize=None)
def _moses(lang: str):
    from sacremoses import MosesDetokenizer, MosesPunctNormalizer, MosesTokenizer

    return MosesPunctNormalizer(lang=lang), MosesTokenizer(lang=lang), MosesDetokenizer(lang=lang)


def tokenize(line: str, lang: str) -> str:
    norm, tok, _ = _moses(lang)
    # escape=False keeps &, <, > readable (fairseq does not need XML escapes); dashes are not split,
    # so detokenize() is an exact inverse for the common cases.
    return tok.tokenize(norm.normalize(line), escape=False, return_str=True)


def detokenize(line: str, lang: str) -> str:
    return _moses(lang)[2].detokenize(line.split())


def remove_bpe(line: str, marker: str = "@@") -> str:
    """subword-nmt BPE -> words (fairseq's ``--remove-bpe``: drop ``"@@ "`` and a trailing ``"@@"``)."""
    return " ".join((line + " ").replace(marker + " ", "").split())


def postprocess(bpe_line: str, lang: str) -> str:
    """A BPE'd, Moses-tokenised hypothesis -> plain text (what sacreBLEU scores)."""
    return detokenize(remove_bpe(bpe_line), lang)
