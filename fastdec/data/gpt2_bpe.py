"""GPT-2 byte-level BPE, as fairseq's BART recipe applies it (examples/roberta/multiprocessing_bpe_encoder.py): each
line stripped, encoded with the release's ``encoder.json`` / ``vocab.bpe`` into BPE ids written as space-separated
integers, which ``fairseq-preprocess --srcdict dict.txt`` binarises. Decoding turns such id lines back into text."""
from __future__ import annotations

from functools import lru_cache
from pathlib import Path
from typing import Iterable, List, Optional

__all__ = ["load_encoder", "encode_line", "decode_line", "encode_file", "decode_lines"]


@lru_cache(maxsize=4)
def load_encoder(encoder_json: str, vocab_bpe: str):
    """fairseq's GPT-2 encoder over the two files (clear error naming a missing one)."""
    for path in (encoder_json, vocab_bpe):
        if not Path(path).is_file():
            raise ValueError(f"GPT-2 BPE file not found: {path} (the fetch rule downloads it; config bart.files)")
    from fairseq.data.encoders.gpt2_bpe_utils import get_encoder

    return get_encoder(str(encoder_json), str(vocab_bpe))


def encode_line(encoder, line: str, max_tokens: Optional[int] = None) -> str:
    """One text line -> space-separated BPE ids, the first ``max_tokens`` only (fairseq's ``--truncate-source``
    keeps the first max_source_positions - 1 tokens and the EOS: sources longer than BART's 1,024 positions)."""
    ids = encoder.encode(line.strip())
    if max_tokens is not None:
        ids = ids[:max_tokens]
    return " ".join(map(str, ids))


def decode_line(encoder, line: str) -> str:
    """Space-separated BPE ids (a hypothesis of a model trained on them) -> text; symbols that are no ids (``<unk>``,
    ``<mask>``) are dropped."""
    return encoder.decode([int(t) for t in line.split() if t.isdigit()]).strip()


def encode_file(encoder_json: str, vocab_bpe: str, src: str, dst: str, max_tokens: Optional[int] = None) -> int:
    encoder = load_encoder(str(encoder_json), str(vocab_bpe))
    n = 0
    with open(src, encoding="utf-8") as fin, open(dst, "w", encoding="utf-8") as fout:
        for line in fin:
            fout.write(encode_line(encoder, line, max_tokens) + "\n")
            n += 1
    return n


def decode_lines(encoder_json: str, vocab_bpe: str, lines: Iterable[str]) -> List[str]:
    encoder = load_encoder(str(encoder_json), str(vocab_bpe))
    return [decode_line(encoder, line) for line in lines]
