"""The steps behind the synthetic pretraining data of the GEC track (``gec.pretrain``, rules in
fastdec/tracks/gec/pretrain.smk): clean monolingual text out of the downloaded files into shards, confusion sets from
its vocabulary, and each shard noised into (source, target) pairs (fastdec.tracks.gec.synthetic)."""
from __future__ import annotations

import json
from collections import Counter
from contextlib import ExitStack
from itertools import islice
from pathlib import Path
from typing import List, Optional, Tuple

from fastdec.data.download import iter_member_lines
from fastdec.tracks.gec.synthetic import Noiser, NoiseParams, build_confusion_sets, load_confusion, noise_lines, \
    save_confusion


def moses_en(line: str) -> str:
    """The clean text is raw (News Crawl); the GEC corpora are tokenised, so it is tokenised like the MT data."""
    from fastdec.text import tokenize

    return tokenize(line, "en")


def split_clean(files: List[Tuple[str, Optional[str]]], out_dir: str, sentences: Optional[int],
                valid_sentences: int, shards: int) -> dict:
    """The first ``valid_sentences`` non-blank lines of the files (in order) -> valid.txt, the next ``sentences``
    (None: all) round-robin -> train.<k>.txt, k < shards. Fewer lines than asked for is an error."""
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    lines = (line for archive, member in files for line in iter_member_lines(archive, member) if line.strip())
    n_valid = 0
    with open(out / "valid.txt", "w", encoding="utf-8") as fh:
        for line in islice(lines, valid_sentences):
            fh.write(line + "\n")
            n_valid += 1
    n_train = 0
    with ExitStack() as stack:
        outs = [stack.enter_context(open(out / f"train.{k}.txt", "w", encoding="utf-8")) for k in range(shards)]
        for line in islice(lines, sentences):
            outs[n_train % shards].write(line + "\n")
            n_train += 1
    wanted = (valid_sentences or 0) + (sentences or 0)
    if n_valid + n_train < wanted or n_train == 0:
        raise ValueError(f"gec.pretrain: the files of gec.pretrain.text hold {n_valid + n_train} non-blank lines, "
                         f"fewer than gec.pretrain.valid_sentences + gec.pretrain.sentences = {wanted}; add files "
                         f"under gec.pretrain.text.files or lower gec.pretrain.sentences")
    stats = {"valid": n_valid, "train": n_train, "shards": shards}
    (out / "stats.json").write_text(json.dumps(stats, indent=1))
    return stats


def build_confusion(text: str, out: str, sample: Optional[int], vocab_size: int, max_candidates: int,
                    tokenize: bool) -> dict:
    """Confusion sets and the insertion vocabulary from the first ``sample`` lines of one clean shard."""
    counts = Counter()
    with open(text, encoding="utf-8") as fh:
        for line in islice(fh, sample):
            counts.update((moses_en(line) if tokenize else line).split())
    confusion = build_confusion_sets(counts, vocab_size, max_candidates)
    vocab = [w for w, _ in counts.most_common(vocab_size)]
    save_confusion(out, confusion, vocab)
    return {"types": len(counts), "vocab": len(vocab), "with_confusion_set": len(confusion)}


def corrupt(text: str, confusion_path: str, out_src: str, out_tgt: str, noise: dict, shard: int,
            max_words: Optional[int], tokenize: bool) -> dict:
    """Noise one clean shard into parallel files; the counts of every operation come back (and go to the log)."""
    confusion, vocab = load_confusion(confusion_path)
    noiser = Noiser(NoiseParams.from_config(noise), confusion, vocab, shard=shard)
    with open(text, encoding="utf-8") as fh, open(out_src, "w", encoding="utf-8") as src, \
            open(out_tgt, "w", encoding="utf-8") as tgt:
        for noised, clean in noise_lines((line.rstrip("\n") for line in fh), noiser,
                                         moses_en if tokenize else None, max_words):
            src.write(noised + "\n")
            tgt.write(clean + "\n")
    stats = dict(noiser.stats)
    stats["word_change_rate"] = round(stats.get("chosen", 0) / max(stats.get("words", 0), 1), 4)
    return stats
