"""The two downloaded corpora of Ge et al. Table 4 (IAD beyond English GEC), written in the GEC track's ``full/``
layout (see :mod:`fastdec.tracks.gec.data`).

* **Wikilarge** (text simplification; config ``gec.data.wikilarge``): training and validation pairs from the DRESS
  ``data-simplification`` archive (Zhang & Lapata 2017), test = TurkCorpus test (Xu et al. 2016: 359 sentences with
  8 human simplifications each, from github.com/cocoxu/simplification). ``full/test.refs`` holds each test
  sentence's references, tab-separated; ``lowercase`` lowercases every side (the TurkCorpus files are lowercased).
* **NLPCC-18** (Chinese GEC; config ``gec.data.nlpcc18``): the shared task's training file (``data.train``, one line
  per learner sentence: ``id <TAB> number of corrections <TAB> source <TAB> correction ...``; Lang-8 data), a
  validation set carved from its last lines, and the test gold M2 (``gold.01``, word-segmented; the source side of
  its ``S`` lines is the test input). Character-level tokenisation is applied later, by the select step
  (``gec.data.tokenisation: char``, :mod:`fastdec.tracks.gec.chars`).

Every member is named by the config (archive name + path inside it), so a changed upstream layout is a config edit;
a missing member is an error naming the archive, the member and the config key.
"""
from __future__ import annotations

import json
from pathlib import Path
from typing import Dict, List, Sequence

from fastdec.tracks.gec.data import GECDataError, _write_lines, _write_m2, split_m2_blocks

__all__ = ["prepare_wikilarge", "prepare_nlpcc18", "nlpcc18_pairs"]


def _member_lines(archives: Dict[str, str], archive: str, member: str, key: str) -> List[str]:
    from fastdec.data.download import DownloadError, read_member

    if archive not in archives:
        raise GECDataError(f"config {key}.archive: {archive!r} was not downloaded (no --archive {archive}=PATH)")
    try:
        data = read_member(archives[archive], member)
    except DownloadError as e:
        raise GECDataError(f"config {key}: {e}; fix the member path in the config") from None
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as e:
        raise GECDataError(f"{archives[archive]}::{member} ({key}): not UTF-8 at byte {e.start}") from None
    lines = [line.rstrip("\r") for line in text.split("\n")]
    return lines[:-1] if lines and lines[-1] == "" else lines


def _parallel(archives, spec: dict, key: str, lowercase: bool) -> tuple:
    src = _member_lines(archives, spec["archive"], spec["src"], key)
    tgt = _member_lines(archives, spec["archive"], spec["tgt"], key)
    if len(src) != len(tgt):
        raise GECDataError(f"config {key}: {spec['src']} has {len(src)} lines but {spec['tgt']} has {len(tgt)}")
    norm = (lambda s: s.lower()) if lowercase else (lambda s: s)
    return [norm(s) for s in src], [norm(t) for t in tgt]


def _stats(out: Path, stats: dict) -> dict:
    with open(out / "stats.json", "w", encoding="utf-8") as f:
        json.dump(stats, f, indent=2, ensure_ascii=False)
        f.write("\n")
    return stats


def prepare_wikilarge(spec: dict, archives: Dict[str, str], out_dir: str | Path) -> dict:
    """``spec`` = config ``gec.data.wikilarge``; ``archives`` maps its archive names to downloaded paths."""
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    key, low = "gec.data.wikilarge", spec.get("lowercase", True)
    stats: dict = {"lowercase": low}
    for split in ("train", "valid"):
        src, tgt = _parallel(archives, spec[split], f"{key}.{split}", low)
        _write_lines(out / f"{split}.src", src)
        _write_lines(out / f"{split}.tgt", tgt)
        stats[split] = len(src)
    test = spec["test"]
    src = _member_lines(archives, test["archive"], test["src"], f"{key}.test")
    refs = [_member_lines(archives, test["archive"], m, f"{key}.test.refs[{i}]") for i, m in enumerate(test["refs"])]
    for member, lines in zip(test["refs"], refs):
        if len(lines) != len(src):
            raise GECDataError(f"config {key}.test: reference {member} has {len(lines)} lines but the source "
                               f"{test['src']} has {len(src)}")
    norm = (lambda s: s.lower()) if low else (lambda s: s)
    for i, group in enumerate(zip(*refs), start=1):
        if any("\t" in r for r in group):
            raise GECDataError(f"config {key}.test: reference line {i} contains a tab")
    _write_lines(out / "test.src", [norm(s) for s in src])
    _write_lines(out / "test.refs", ["\t".join(norm(r) for r in group) for group in zip(*refs)])
    stats["test"] = {"sentences": len(src), "references": len(refs)}
    return _stats(out, stats)


def nlpcc18_pairs(lines: Sequence[str], name: str) -> tuple:
    """(pairs per line, malformed line numbers) of NLPCC-18's ``data.train``: one pair per correction, the source
    paired with itself when it has none (as an M2 sentence without edits)."""
    per_line, bad = [], []
    for i, line in enumerate(lines, start=1):
        fields = line.split("\t")
        try:
            n = int(fields[1])
        except (IndexError, ValueError):
            n = -1
        if len(fields) < 3 or n < 0 or len(fields) < 3 + n or not fields[2].strip():
            bad.append(i)
            continue
        src = fields[2].strip()
        per_line.append([(src, c.strip()) for c in fields[3:3 + n]] or [(src, src)])
    return per_line, bad


def prepare_nlpcc18(spec: dict, archives: Dict[str, str], out_dir: str | Path) -> dict:
    """``spec`` = config ``gec.data.nlpcc18``. Malformed training lines are dropped and counted (first line numbers
    in stats.json); more than 1% of them means the member is not the training file, an error."""
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    key = "gec.data.nlpcc18"
    train = spec["train"]
    lines = _member_lines(archives, train["archive"], train["member"], f"{key}.train")
    per_line, bad = nlpcc18_pairs(lines, train["member"])
    if len(bad) > max(1, len(lines) // 100):
        raise GECDataError(f"config {key}.train: {len(bad)} of {len(lines)} lines of {train['member']} are not "
                           f"'id<TAB>n<TAB>source<TAB>corrections' (first: line {bad[0]}); is it data.train?")
    n_valid = spec.get("valid_size", 5000)
    if n_valid >= len(per_line):
        raise GECDataError(f"config {key}.valid_size: {n_valid} but the training file has {len(per_line)} sentences")
    train_pairs = [p for group in per_line[:-n_valid] for p in group]
    valid_pairs = [group[0] for group in per_line[-n_valid:]]  # the first correction, for fairseq's valid loss
    for split, pairs in (("train", train_pairs), ("valid", valid_pairs)):
        _write_lines(out / f"{split}.src", [s for s, _ in pairs])
        _write_lines(out / f"{split}.tgt", [t for _, t in pairs])
    test = spec["test"]
    gold = "\n".join(_member_lines(archives, test["archive"], test["member"], f"{key}.test")) + "\n"
    blocks = split_m2_blocks(gold)
    if not blocks or not all(b.startswith("S ") for b in blocks):
        raise GECDataError(f"config {key}.test: {test['member']} is not an M2 file (blocks must start with 'S ')")
    _write_m2(out / "test.m2", blocks)
    _write_lines(out / "test.src", [" ".join(b.split("\n", 1)[0][2:].split()) for b in blocks])
    return _stats(out, {"train": len(train_pairs), "train_sentences": len(per_line) - n_valid,
                        "malformed_train_lines": len(bad), "first_malformed_lines": bad[:10],
                        "valid": len(valid_pairs), "test": {"sentences": len(blocks)}})
