"""GEC track data: the workflow's split files, subsets, BEA-2019 M2 corpora, benchmark sets.

Layout (every GEC source ends up in the same files, one tokenised sentence per line)::

    full/   train.{src,tgt} valid.{src,tgt} test.src test.m2 [valid.m2] stats.json   (prepare step)
    raw/    the same after :func:`select_splits` (subset, long training pairs dropped, valid.m2 always present)

* UA-GEC: ``full/`` is written by :func:`fastdec.tracks.gec.uagec.prepare_uagec`; its validation split has no M2
  file, so :func:`select_splits` builds one from the (source, target) pairs (one annotator per pair).
* BEA-2019 restricted (the IAD paper's English setting): :func:`prepare_m2_corpora` turns M2 files (W&I+LOCNESS,
  FCE, Lang-8, NUCLE for training, CoNLL-2013 for validation, CoNLL-2014 for test) into the same layout; training
  pairs come from applying each annotator's edits (the BEA-2019 ``corr_from_m2.py`` way: ``noop``, ``UNK`` and
  ``Um`` edits are skipped, the first alternative of a correction is used).

Valid/test sentences are never dropped (that would change the benchmark); empty or over-long *training* pairs
are dropped and counted in the report JSON.
"""
from __future__ import annotations

import json
from pathlib import Path
from typing import Iterable, Sequence

from fastdec.eval.m2 import M2Sentence, extract_edits, format_m2_block, parse_m2
from fastdec.text import CorpusError, read_lines

__all__ = [
    "GECDataError", "split_m2_blocks", "apply_edits", "m2_to_pairs", "select_splits", "prepare_m2_corpora",
    "read_m2_source", "head_files", "SKIP_EDIT_TYPES", "LOCAL_HELP",
]

SKIP_EDIT_TYPES = frozenset({"noop", "UNK", "Um"})

# What to tell the user when a licence-restricted corpus is missing (key under gec.data.bea19.local).
LOCAL_HELP = {
    "lang8": "Lang-8 Corpus of Learner English (BEA-2019 release, lang8.train.auto.bea19.m2) is distributed "
             "after a licence form: see https://www.cl.cam.ac.uk/research/nl/bea2019st/#data",
    "nucle": "NUCLE 3.3 (bea2019/nucle.train.gold.bea19.m2) is distributed after a licence agreement: see "
             "https://www.cl.cam.ac.uk/research/nl/bea2019st/#data",
}


class GECDataError(ValueError):
    """Bad or missing GEC input data (the message names the file or config key)."""


# ----------------------------------------------------------------------------------------------------------------
# small file helpers
# ----------------------------------------------------------------------------------------------------------------
def _read_lines(path: str | Path) -> list[str]:
    try:
        return read_lines(path)
    except CorpusError as e:  # the GEC stages report GECDataError
        raise GECDataError(str(e)) from None


def _write_lines(path: str | Path, lines: Iterable[str]) -> int:
    n = 0
    with open(path, "w", encoding="utf-8", newline="\n") as f:
        for line in lines:
            if "\n" in line or "\r" in line:
                raise GECDataError(f"line break inside a sentence written to {path}")
            f.write(line + "\n")
            n += 1
    return n


def split_m2_blocks(text: str) -> list[str]:
    """The raw text of each M2 block (blank-line separated), without trailing blank lines."""
    blocks, cur = [], []
    for line in text.split("\n"):
        if line.strip() == "":
            if cur:
                blocks.append("\n".join(cur))
                cur = []
        else:
            cur.append(line.rstrip("\r"))
    if cur:
        blocks.append("\n".join(cur))
    return blocks


def _write_m2(path: str | Path, blocks: Sequence[str]) -> None:
    with open(path, "w", encoding="utf-8", newline="\n") as f:
        for b in blocks:
            f.write(b + "\n\n")


def _m2_source(block: str) -> str:
    first = block.split("\n", 1)[0]
    return " ".join(first[2:].split()) if first.startswith("S") else ""


# ----------------------------------------------------------------------------------------------------------------
# M2 -> parallel
# ----------------------------------------------------------------------------------------------------------------
def apply_edits(tokens: Sequence[str], edits) -> str:
    """Apply (start, end, correction) edits (non-overlapping; overlapping later ones are skipped) to tokens."""
    out: list[str] = []
    pos = 0
    for start, end, corr in sorted(edits, key=lambda e: (e[0], e[1])):
        if start < pos:  # overlaps an applied edit
            continue
        out.extend(tokens[pos:start])
        if corr:
            out.extend(corr.split())
        pos = end
    out.extend(tokens[pos:])
    return " ".join(out)


def m2_to_pairs(sentences: Sequence[M2Sentence], annotators: str = "all",
                skip_types: frozenset = SKIP_EDIT_TYPES) -> list[tuple[str, str]]:
    """(source, corrected) pairs: one per annotator (``annotators="all"``) or for the first one only.

    A sentence without annotation lines is its own correction.
    """
    if annotators not in ("all", "first"):
        raise ValueError(f"annotators must be 'all' or 'first', got {annotators!r}")
    pairs = []
    for s in sentences:
        toks = s.tokens
        src = " ".join(toks)
        anns = list(s.annotators.items()) or [(0, [])]
        if annotators == "first":
            anns = anns[:1]
        for _, edits in anns:
            kept = [(e.start, e.end, e.corrections[0] if e.corrections else "")
                    for e in edits if e.etype not in skip_types]
            pairs.append((src, apply_edits(toks, kept)))
    return pairs


def read_m2_source(spec: dict, *, archives: dict[str, str], local: dict[str, str | None],
                   key: str) -> str:
    """Text of one M2 source of the config: ``{archive, member}`` (a downloaded archive) or ``{local}``.

    ``archives`` maps archive names to downloaded paths, ``local`` local-file names to paths; ``key`` is the
    config path of ``spec`` for error messages.
    """
    from fastdec.data.download import read_member

    if "local" in spec:
        name = spec["local"]
        path = local.get(name)
        lkey = f"gec.data.bea19.local.{name}"
        if not path:
            raise GECDataError(f"config key {lkey} is not set ({key} refers to it). "
                               + LOCAL_HELP.get(name, "Set it to the path of the M2 file."))
        if not Path(path).is_file():
            raise GECDataError(f"config key {lkey}: file not found: {path}. "
                               + LOCAL_HELP.get(name, "Place the M2 file there or change the key."))
        data = Path(path).read_bytes()
        origin = path
    else:
        name = spec["archive"]
        if name not in archives:
            raise GECDataError(f"{key}: archive {name!r} is not under gec.data.bea19.archives")
        data = read_member(archives[name], spec["member"])
        origin = f"{archives[name]}::{spec['member']}"
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as e:
        raise GECDataError(f"{origin} ({key}): not UTF-8 at byte {e.start}") from None


# ----------------------------------------------------------------------------------------------------------------
# prepare (BEA-2019) and select (all sources)
# ----------------------------------------------------------------------------------------------------------------
def prepare_m2_corpora(train: Sequence[tuple[str, str]], valid: tuple[str, str], test: tuple[str, str],
                       out_dir: str | Path) -> dict:
    """Write the ``full/`` layout from M2 texts: ``train`` = [(name, m2 text)], ``valid``/``test`` = (name, text).

    Training pairs: every annotator's correction; validation pairs: the first annotator's (fairseq's valid
    loss); ``valid.m2``/``test.m2`` are the original blocks, ``valid.src``/``test.src`` their ``S`` lines.
    """
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    stats: dict = {"train_sources": {}}
    src_all, tgt_all = [], []
    for name, text in train:
        pairs = m2_to_pairs(parse_m2(text, name=name), annotators="all")
        stats["train_sources"][name] = {"pairs": len(pairs), "unchanged": sum(s == t for s, t in pairs)}
        src_all += [s for s, _ in pairs]
        tgt_all += [t for _, t in pairs]
    _write_lines(out / "train.src", src_all)
    _write_lines(out / "train.tgt", tgt_all)
    for split, (name, text) in (("valid", valid), ("test", test)):
        blocks = split_m2_blocks(text)
        sents = parse_m2(text, name=name)
        if len(blocks) != len(sents):  # pragma: no cover - both split on blank lines
            raise GECDataError(f"{name}: {len(blocks)} blocks but {len(sents)} sentences")
        _write_m2(out / f"{split}.m2", blocks)
        _write_lines(out / f"{split}.src", [" ".join(s.tokens) for s in sents])
        if split == "valid":
            _write_lines(out / "valid.tgt", [t for _, t in m2_to_pairs(sents, annotators="first")])
        stats[split] = {"source": name, "sentences": len(sents),
                        "annotators": sorted({a for s in sents for a in s.annotators})}
    stats["train"] = len(src_all)
    with open(out / "stats.json", "w", encoding="utf-8") as f:
        json.dump(stats, f, indent=2, ensure_ascii=False)
        f.write("\n")
    return stats


def _valid_m2_from_pairs(src: Sequence[str], tgt: Sequence[str]) -> list[str]:
    return [format_m2_block(s.split(), [extract_edits(s.split(), t.split())]) for s, t in zip(src, tgt)]


def select_splits(full_dir: str | Path, out_dir: str | Path, *, subset: dict | None = None,
                  max_words: int | None = None, tokenisation: str = "word") -> dict:
    """``full/`` -> ``raw/``: first-N subsets, over-long/empty training pairs dropped, ``valid.m2`` ensured.

    ``subset`` maps train/valid/test to N (None = all). ``tokenisation="char"``: every sentence and M2 block becomes
    one token per character (Chinese GEC, :mod:`fastdec.tracks.gec.chars`) before anything is counted. A corpus with
    references instead of M2 (``full/test.refs``: simplification, scored with SARI/BLEU) gets ``valid.refs`` (its
    target) and ``test.refs`` instead of M2 files. Returns (and writes to ``raw/report.json``) the counts.
    """
    from fastdec.tracks.gec.chars import m2_block_to_chars, to_chars

    if tokenisation not in ("word", "char"):
        raise ValueError(f"tokenisation must be 'word' or 'char', got {tokenisation!r}")
    char = tokenisation == "char"
    full, out = Path(full_dir), Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    subset = subset or {}
    report: dict = {"subset": subset, "max_words": max_words, "tokenisation": tokenisation}
    refs = (full / "test.refs").exists()

    def read(name):
        lines = _read_lines(full / name)
        return [to_chars(x) for x in lines] if char else lines

    def blocks_of(name):
        blocks = split_m2_blocks((full / name).read_text(encoding="utf-8"))
        return [m2_block_to_chars(b, name=str(full / name)) for b in blocks] if char else blocks

    def limit(split, items):
        n = subset.get(split)
        return list(items[:n]) if n else list(items)

    # train: drop empty / over-long pairs (counted), then take the first N kept pairs
    src, tgt = read("train.src"), read("train.tgt")
    if len(src) != len(tgt):
        raise GECDataError(f"{full}/train.src has {len(src)} lines but train.tgt has {len(tgt)}")
    kept, empty, long_, first_dropped = [], 0, 0, []
    for i, (s, t) in enumerate(zip(src, tgt), start=1):
        if not s.strip() or not t.strip():
            empty += 1
        elif max_words and (len(s.split()) > max_words or len(t.split()) > max_words):
            long_ += 1
        else:
            kept.append((s, t))
            continue
        if len(first_dropped) < 10:
            first_dropped.append(i)
    kept = limit("train", kept)
    _write_lines(out / "train.src", [s for s, _ in kept])
    _write_lines(out / "train.tgt", [t for _, t in kept])
    report["train"] = {"input": len(src), "dropped_empty": empty, "dropped_long": long_,
                       "first_dropped_lines": first_dropped, "kept": len(kept)}

    # valid and test: nothing dropped
    vsrc, vtgt = read("valid.src"), read("valid.tgt")
    if len(vsrc) != len(vtgt):
        raise GECDataError(f"{full}/valid.src has {len(vsrc)} lines but valid.tgt has {len(vtgt)}")
    vsrc, vtgt = limit("valid", vsrc), limit("valid", vtgt)
    _write_lines(out / "valid.src", vsrc)
    _write_lines(out / "valid.tgt", vtgt)
    tsrc = limit("test", read("test.src"))
    _write_lines(out / "test.src", tsrc)
    report["test"] = {"sentences": len(tsrc)}
    if refs:  # references instead of M2: the validation target is its one reference
        trefs = limit("test", _read_lines(full / "test.refs"))
        if len(trefs) != len(tsrc):
            raise GECDataError(f"{full}/test.refs has {len(trefs)} lines but test.src has {len(tsrc)}")
        _write_lines(out / "valid.refs", vtgt)
        _write_lines(out / "test.refs", trefs)
        report["valid"] = {"sentences": len(vsrc), "refs_from": "valid.tgt"}
    else:
        # valid.m2 from the file when the source has one, else from the pairs
        if (full / "valid.m2").exists():
            vblocks = limit("valid", blocks_of("valid.m2"))
        else:
            vblocks = _valid_m2_from_pairs(vsrc, vtgt)
        _write_m2(out / "valid.m2", vblocks)
        report["valid"] = {"sentences": len(vsrc), "m2_from": "file" if (full / "valid.m2").exists() else "pairs"}
        tblocks = limit("test", blocks_of("test.m2"))
        _write_m2(out / "test.m2", tblocks)
        for split, lines, blocks in (("valid", vsrc, vblocks), ("test", tsrc, tblocks)):
            if len(lines) != len(blocks):
                raise GECDataError(f"{split}: {len(lines)} source lines but {len(blocks)} M2 blocks")
            for i, (line, block) in enumerate(zip(lines, blocks), start=1):
                if " ".join(line.split()) != _m2_source(block):
                    raise GECDataError(f"{split} sentence {i}: the source line differs from the M2 'S' line")
    with open(out / "report.json", "w", encoding="utf-8") as f:
        json.dump(report, f, indent=2)
        f.write("\n")
    return report


def head_files(n: int | None, pairs: Sequence[tuple[str, str]], m2: tuple[str, str] | None = None) -> int:
    """Copy the first ``n`` lines (None = all) of each (input, output) text file and the first ``n`` blocks of
    the M2 file ``m2 = (input, output)``; all inputs must have at least ``n`` entries. Returns the count."""
    counts = set()
    for src, dst in pairs:
        lines = _read_lines(src)
        lines = lines[:n] if n else lines
        counts.add(_write_lines(dst, lines))
    if m2 is not None:
        blocks = split_m2_blocks(Path(m2[0]).read_text(encoding="utf-8"))
        blocks = blocks[:n] if n else blocks
        _write_m2(m2[1], blocks)
        counts.add(len(blocks))
    if len(counts) > 1:
        raise GECDataError(f"benchmark set files disagree in length: {sorted(counts)} "
                           f"({', '.join(p for p, _ in pairs)})")
    return counts.pop() if counts else 0
