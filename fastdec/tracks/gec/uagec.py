"""UA-GEC (Ukrainian GEC corpus, ``ua-gec`` package) to sentence-level training/test files.

Everything is read offline from the installed ``ua_gec`` package (``Corpus(partition,
annotation_layer)``); the default layer is GEC-only (``AnnotationLayer.GecOnly``).

Sentences and alignment
    Each annotated document has line-aligned sentence files shipped with the package:
    ``Document.source_sentences_tokenized`` (one per source document) and
    ``Document.target_sentences_tokenized`` (one per annotator).  Line *i* of the source is corrected
    by line *i* of each annotator's target.  A document annotated twice gives two training pairs per
    source sentence.

Tokenisation (decision)
    We use the tokenisation **shipped with ua-gec** (the ``*-tokenized`` sentence files, made by the
    UA-GEC authors with Stanza; the same tokenisation their M2/ERRANT evaluation uses) rather than a
    tokeniser of our own: it is deterministic, needs no model, and is the community's standard for
    this corpus.  We only normalise it: invisible format characters (U+200B/C/D, U+2060, U+FEFF,
    soft hyphen U+00AD) are removed and whitespace runs (incl. U+00A0) collapse to one space, so a line
    is ``" ".join(line.split())`` -- exactly what the M2 scorer splits on.  The model is trained and
    evaluated on these token strings (BPE on top), so system output can be scored directly.

M2 for the test set
    ``test.m2`` has the tokenised source as the ``S`` line and, per annotator (0 = the document's
    first annotator id, 1 = the second; in ua-gec 2.1.3 these are annotators 1 and 2), the token edits
    from source to that annotator's tokenised target, made the way the official m2scorer's
    ``edit_creator.py`` makes them (:func:`fastdec.eval.m2.extract_edits`: shortest Levenshtein
    edit path, adjacent changed tokens merged, ``max_unchanged_words=0``).  An annotator with no edit
    in a sentence gets a ``noop`` line.  Error types are not carried over (type ``UNK``).  By
    construction scoring ``test.ref0`` against ``test.m2`` gives P = R = F0.5 = 1 exactly (and so does
    ``test.ref1``); scoring the unchanged source proposes no edit: P = 1.0 (the official 0/0
    convention), R = 0, F0.5 = 0.

Validation split
    Carved from train **by document** (no document in both): document ids are ordered by
    ``sha256(f"{seed}:{doc_id}")`` and taken in that order until at least ``valid_size`` sentence pairs
    are in; all annotators' versions of a chosen document go to valid.

Empty lines
    Training/validation pairs whose source or target is empty after normalisation are dropped and
    counted; test sentences with an empty source would be dropped and counted (an empty *target* is a
    legitimate whole-sentence deletion and is kept).  ua-gec 2.1.3 has none of either.
"""
from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Sequence

from fastdec.eval.m2 import extract_edits, format_m2_block

__all__ = [
    "UAGECError",
    "DocPairs",
    "normalize_line",
    "load_partition",
    "split_by_document",
    "build_test",
    "prepare_uagec",
    "EXPECTED",
]

# Invisible format characters removed before tokens are compared or written.
_INVISIBLE = dict.fromkeys(map(ord, "\u200b\u200c\u200d\u2060\ufeff\u00ad"), None)

# What ua-gec 2.1.3 (GEC-only layer) gives: a sanity reference for tests and the stats file.
EXPECTED = {
    "train_documents": 1706,
    "train_annotated_documents": 1749,
    "train_source_sentences": 31037,
    "train_pairs": 32306,
    "test_documents": 166,
    "test_sentences": 2696,
    "test_annotators": 2,
}


class UAGECError(ValueError):
    """Inconsistent corpus data (misaligned sentence files, missing annotators, ...)."""


@dataclass
class DocPairs:
    doc_id: str
    annotator_id: int
    source: list[str]  # tokenised, normalised sentences
    target: list[str]  # line-aligned with source


def normalize_line(line: str) -> str:
    """Drop invisible format characters and collapse whitespace to single spaces."""
    return " ".join(line.translate(_INVISIBLE).split())


def load_partition(partition: str, layer: str = "gec-only") -> list[DocPairs]:
    """All (document, annotator) sentence lists of a ua-gec partition, tokenised and normalised."""
    try:
        from ua_gec import AnnotationLayer, Corpus
    except ImportError as e:  # pragma: no cover - environment problem
        raise UAGECError("the 'ua-gec' package is not installed (pip install ua-gec==2.1.3)") from e
    corpus = Corpus(partition=partition, annotation_layer=AnnotationLayer(layer))
    out = []
    for doc in corpus.iter_documents():
        src = [normalize_line(s) for s in doc.source_sentences_tokenized]
        tgt = [normalize_line(s) for s in doc.target_sentences_tokenized]
        if len(src) != len(tgt):
            raise UAGECError(
                f"ua-gec {partition} document {doc.doc_id} annotator {doc.meta.annotator_id}: "
                f"{len(src)} source sentences but {len(tgt)} target sentences"
            )
        out.append(DocPairs(doc.doc_id, int(doc.meta.annotator_id), src, tgt))
    out.sort(key=lambda d: (d.doc_id, d.annotator_id))
    return out


def _doc_order_key(seed: int, doc_id: str) -> str:
    return hashlib.sha256(f"{seed}:{doc_id}".encode()).hexdigest()


def split_by_document(docs: Sequence[DocPairs], valid_size: int, seed: int = 1):
    """(train, valid) lists of DocPairs; valid = whole documents, >= valid_size pairs (unless too few)."""
    by_id: dict[str, list[DocPairs]] = {}
    for d in docs:
        by_id.setdefault(d.doc_id, []).append(d)
    valid_ids: set[str] = set()
    n = 0
    for doc_id in sorted(by_id, key=lambda i: _doc_order_key(seed, i)):
        if n >= valid_size:
            break
        valid_ids.add(doc_id)
        n += sum(len(d.source) for d in by_id[doc_id])
    train = [d for d in docs if d.doc_id not in valid_ids]
    valid = [d for d in docs if d.doc_id in valid_ids]
    return train, valid


def _pairs(docs: Sequence[DocPairs]):
    """Non-empty (src, tgt) pairs and the number of dropped empty ones."""
    pairs, dropped = [], 0
    for d in docs:
        for s, t in zip(d.source, d.target):
            if s and t:
                pairs.append((s, t))
            else:
                dropped += 1
    return pairs, dropped


def _write_lines(path: Path, lines: Sequence[str]) -> None:
    with open(path, "w", encoding="utf-8", newline="\n") as f:
        for line in lines:
            if "\n" in line or "\r" in line:
                raise UAGECError(f"line break inside a sentence written to {path}")
            f.write(line + "\n")


def build_test(docs: Sequence[DocPairs]):
    """Test sources, the two references and M2 blocks (annotator 0 = lower annotator id)."""
    by_id: dict[str, list[DocPairs]] = {}
    for d in docs:
        by_id.setdefault(d.doc_id, []).append(d)
    sources: list[str] = []
    refs: list[list[str]] = [[], []]
    blocks: list[str] = []
    annotator_ids: set[tuple[int, ...]] = set()
    dropped = edits = 0
    for doc_id in sorted(by_id):
        anns = sorted(by_id[doc_id], key=lambda d: d.annotator_id)
        if len(anns) != 2:
            raise UAGECError(f"ua-gec test document {doc_id} has {len(anns)} annotators, expected 2")
        annotator_ids.add(tuple(a.annotator_id for a in anns))
        if anns[0].source != anns[1].source:
            raise UAGECError(f"ua-gec test document {doc_id}: the annotators' source sentences differ")
        for i, src in enumerate(anns[0].source):
            if not src:
                dropped += 1
                continue
            src_tok = src.split()
            per_ann = []
            for k, a in enumerate(anns):
                refs[k].append(a.target[i])
                e = extract_edits(src_tok, a.target[i].split())
                edits += len(e)
                per_ann.append(e)
            sources.append(src)
            blocks.append(format_m2_block(src_tok, per_ann))
    info = {
        "test_documents": len(by_id),
        "test_sentences": len(sources),
        "test_dropped_empty_source": dropped,
        "test_annotator_ids": sorted(list(t) for t in annotator_ids),
        "test_gold_edits": edits,
        "test_unchanged_ref0": sum(s == r for s, r in zip(sources, refs[0])),
        "test_unchanged_ref1": sum(s == r for s, r in zip(sources, refs[1])),
    }
    return sources, refs, blocks, info


def prepare_uagec(out_dir: str | Path, valid_size: int = 1000, seed: int = 1, layer: str = "gec-only") -> dict:
    """Write train/valid/test files and ``stats.json`` into ``out_dir``; return the stats."""
    if valid_size < 0:
        raise UAGECError(f"valid_size must be >= 0, got {valid_size}")
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    train_docs = load_partition("train", layer)
    test_docs = load_partition("test", layer)

    tr_docs, va_docs = split_by_document(train_docs, valid_size, seed)
    train, train_dropped = _pairs(tr_docs)
    valid, valid_dropped = _pairs(va_docs)
    if not train:
        raise UAGECError("no training pairs left (valid_size too large?)")
    for name, pairs in (("train", train), ("valid", valid)):
        _write_lines(out / f"{name}.src", [s for s, _ in pairs])
        _write_lines(out / f"{name}.tgt", [t for _, t in pairs])

    sources, refs, blocks, test_info = build_test(test_docs)
    _write_lines(out / "test.src", sources)
    _write_lines(out / "test.ref0", refs[0])
    _write_lines(out / "test.ref1", refs[1])
    with open(out / "test.m2", "w", encoding="utf-8", newline="\n") as f:
        for b in blocks:
            f.write(b + "\n\n")

    import ua_gec

    stats = {
        "ua_gec_version": ua_gec.__version__,
        "layer": layer,
        "tokenization": "ua-gec shipped *-tokenized sentences, invisible chars removed, whitespace collapsed",
        "m2_edits": "m2scorer edit_creator procedure (fastdec.eval.m2.extract_edits, max_unchanged_words=0)",
        "seed": seed,
        "valid_size_requested": valid_size,
        "train_documents_total": len({d.doc_id for d in train_docs}),
        "train_annotated_documents_total": len(train_docs),
        "train_pairs_total": sum(len(d.source) for d in train_docs),
        "train_documents": len({d.doc_id for d in tr_docs}),
        "valid_documents": len({d.doc_id for d in va_docs}),
        "train": len(train),
        "valid": len(valid),
        "train_unchanged": sum(s == t for s, t in train),
        "valid_unchanged": sum(s == t for s, t in valid),
        "dropped_empty": {"train": train_dropped, "valid": valid_dropped,
                          "test": test_info["test_dropped_empty_source"]},
        "valid_doc_ids": sorted({d.doc_id for d in va_docs}),
        **test_info,
    }
    with open(out / "stats.json", "w", encoding="utf-8") as f:
        json.dump(stats, f, indent=2, ensure_ascii=False)
        f.write("\n")
    return stats
