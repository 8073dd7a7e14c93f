"""Joint BPE with subword-nmt (the papers' setup: one merge table over source and target)."""
from __future__ import annotations

import codecs
import io
from collections import Counter

from fastdec.text import read_lines, write_lines


def learn_joint_bpe(inputs: list[str], codes_path: str, merges: int, min_frequency: int = 2):
    from subword_nmt.learn_bpe import learn_bpe

    vocab = Counter()
    for path in inputs:
        for line in read_lines(path):
            vocab.update(line.split())
    if not any(len(w) > 1 for w in vocab):
        # character-level text (Chinese GEC): no pair of symbols inside a token, nothing to merge; subword-nmt would
        # fail on its empty statistics, so write a merge table without merges (applying it changes nothing)
        with codecs.open(codes_path, "w", encoding="utf-8") as out:
            out.write("#version: 0.2\n")
        return
    # learn_bpe reads "word count" lines when is_dict=True: counting once here avoids a second corpus pass.
    dict_stream = io.StringIO("".join(f"{w} {c}\n" for w, c in vocab.items()))
    with codecs.open(codes_path, "w", encoding="utf-8") as out:
        learn_bpe(dict_stream, out, merges, min_frequency=min_frequency, is_dict=True, total_symbols=False)


def apply_bpe(codes_path: str, input_path: str, output_path: str):
    from subword_nmt.apply_bpe import BPE

    with codecs.open(codes_path, encoding="utf-8") as fh:
        codes = fh.read()
    if not codes.strip().split("\n")[1:]:  # only the version line: no merges (character-level text), nothing to do
        write_lines(output_path, read_lines(input_path))
        return
    bpe = BPE(io.StringIO(codes))
    write_lines(output_path, [bpe.process_line(line) for line in read_lines(input_path)])
