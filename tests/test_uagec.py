"""UA-GEC preparation (real data from the installed ua-gec 2.1.3 package, offline; ~15 s in all)."""
import json
import subprocess
import sys
from pathlib import Path

import pytest

from fastdec.eval import m2
from fastdec.tracks.gec import uagec
from fastdec.tracks.gec.uagec import DocPairs, normalize_line, split_by_document

pytest.importorskip("ua_gec")
REPO = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def prepared(tmp_path_factory):
    out = tmp_path_factory.mktemp("uagec")
    r = subprocess.run(
        [sys.executable, "-m", "fastdec", "prepare-uagec", "--out", str(out), "--valid-size", "1000"],
        capture_output=True, text=True,
    )
    assert r.returncode == 0, r.stderr
    return out


def lines(path):
    with open(path, encoding="utf-8") as f:
        return f.read().split("\n")[:-1]


def test_counts(prepared):
    stats = json.loads((prepared / "stats.json").read_text(encoding="utf-8"))
    exp = uagec.EXPECTED
    assert stats["ua_gec_version"] == "2.1.3"
    assert stats["train_documents_total"] == exp["train_documents"]
    assert stats["train_annotated_documents_total"] == exp["train_annotated_documents"]
    assert stats["train_pairs_total"] == exp["train_pairs"]  # ~32k sentence pairs
    # One pair of doc 0370 is empty on both sides (the source line is only invisible characters).
    assert stats["dropped_empty"] == {"train": 1, "valid": 0, "test": 0}
    assert stats["train"] + stats["valid"] == exp["train_pairs"] - 1
    assert 1000 <= stats["valid"] < 1300 and 30000 < stats["train"] < 31400
    assert stats["train_documents"] + stats["valid_documents"] == exp["train_documents"]
    assert stats["test_documents"] == exp["test_documents"]
    assert stats["test_sentences"] == exp["test_sentences"]
    assert stats["test_annotator_ids"] == [[1, 2]]
    # About half the sentences need no correction.
    assert 0.4 < stats["train_unchanged"] / stats["train"] < 0.65
    for name, n in (("train", stats["train"]), ("valid", stats["valid"]), ("test", stats["test_sentences"])):
        for suffix in (("src", "tgt") if name != "test" else ("src", "ref0", "ref1")):
            assert len(lines(prepared / f"{name}.{suffix}")) == n, (name, suffix)


def test_aligned_and_normalised(prepared):
    for name in ("train", "valid"):
        src, tgt = lines(prepared / f"{name}.src"), lines(prepared / f"{name}.tgt")
        assert len(src) == len(tgt)
        assert all(s and t for s, t in zip(src, tgt))  # no empty lines
        assert all(s == normalize_line(s) and t == normalize_line(t) for s, t in zip(src, tgt))
        # aligned: most pairs share most tokens (a shifted file would not)
        close = sum(len(set(s.split()) & set(t.split())) >= 0.5 * len(set(s.split())) for s, t in zip(src, tgt))
        assert close > 0.97 * len(src)
    # A known pair (test doc 0002, first sentence; annotator 1 and 2 corrections).
    src, r0, r1 = (lines(prepared / f"test.{s}") for s in ("src", "ref0", "ref1"))
    assert src[0].startswith("Наступного ранку рівно о одинадцятій годині , коли я сидів сам , дядько Том шаштався")
    assert r0[0].startswith("Наступного ранку рівно об одинадцятій годині , коли я сидів сам , дядько Том шастав у")
    assert r1[0].startswith("Наступного ранку рівно об одинадцятій годині , коли я сидів сам , дядько Том шаштався")


def test_m2_parses_and_matches_sources(prepared):
    sents = m2.read_m2(prepared / "test.m2")
    src = lines(prepared / "test.src")
    assert len(sents) == len(src) == uagec.EXPECTED["test_sentences"]
    assert [s.source for s in sents] == src
    assert all(list(s.annotators) == [0, 1] for s in sents)
    stats = json.loads((prepared / "stats.json").read_text(encoding="utf-8"))
    assert sum(len(g) for s in sents for g in s.annotators.values()) == stats["test_gold_edits"]


def _apply(tokens, edits):
    out, pos = [], 0
    for g in sorted(edits, key=lambda g: (g.start, g.end)):
        assert g.start >= pos
        out += tokens[pos:g.start] + (g.corrections[0].split() if g.corrections[0] else [])
        pos = g.end
    return out + tokens[pos:]


def test_m2_edits_rebuild_the_references(prepared):
    # The M2 is consistent with the tokenised source: applying annotator k's edits gives test.ref{k}.
    sents = m2.read_m2(prepared / "test.m2")
    for k in (0, 1):
        refs = lines(prepared / f"test.ref{k}")
        assert all(_apply(s.tokens, s.annotators[k]) == r.split() for s, r in zip(sents, refs))


def _score(hyp_path, m2_path):
    return m2.score(m2.read_hypotheses(hyp_path), m2.read_m2(m2_path))


def test_scoring_references_and_source(prepared):
    stats = json.loads((prepared / "stats.json").read_text(encoding="utf-8"))
    gold = m2.read_m2(prepared / "test.m2")
    n0 = sum(len(s.annotators[0]) for s in gold)
    # Reference 0 against the M2: exactly P = R = F0.5 = 1 (each sentence: annotator 0's edits are all
    # lattice arcs of (source, ref0), so the best path proposes exactly them).
    res = _score(prepared / "test.ref0", prepared / "test.m2")
    assert (res.precision, res.recall, res.f) == (1.0, 1.0, 1.0)
    assert res.correct == res.proposed == res.gold == n0
    assert res.approximate_sentences == 0
    # Reference 1 likewise.  (Sentences where both annotators agree are credited to annotator 0, the
    # first one, by the official tie rule.)
    res = _score(prepared / "test.ref1", prepared / "test.m2")
    assert (res.precision, res.recall, res.f) == (1.0, 1.0, 1.0)
    assert res.correct == stats["test_gold_edits"] - n0
    # The unchanged source proposes nothing: P = 1.0 (official 0/0 convention), R = 0, F0.5 = 0; the
    # gold count is that of the annotator with fewer edits per sentence (the one maximising F).
    res = _score(prepared / "test.src", prepared / "test.m2")
    assert (res.correct, res.proposed) == (0, 0)
    assert (res.precision, res.recall, res.f) == (1.0, 0.0, 0.0)
    assert res.gold == sum(min(len(s.annotators[0]), len(s.annotators[1])) for s in gold)


def test_split_by_document_is_deterministic_and_leak_free():
    docs = [DocPairs(f"{i:04d}", a, [f"s{i}.{j}" for j in range(3 + i % 5)], [f"t{i}.{j}" for j in range(3 + i % 5)])
            for i in range(60) for a in ((1, 2) if i % 7 == 0 else (1,))]
    tr, va = split_by_document(docs, 40, seed=1)
    assert not {d.doc_id for d in tr} & {d.doc_id for d in va}
    assert len(tr) + len(va) == len(docs)
    n = sum(len(d.source) for d in va)
    assert 40 <= n < 40 + 2 * 7  # whole documents, both annotators of a doc together
    assert all(sum(d.doc_id == x.doc_id for x in va) == (2 if int(d.doc_id) % 7 == 0 else 1) for d in va)
    tr2, va2 = split_by_document(docs, 40, seed=1)
    assert [d.doc_id for d in va2] == [d.doc_id for d in va]
    _, va3 = split_by_document(docs, 40, seed=2)
    assert {d.doc_id for d in va3} != {d.doc_id for d in va}
    assert split_by_document(docs, 0, seed=1)[1] == []


def test_normalize_line():
    assert normalize_line("a\u00a0\u00a0b  c\u200b d\ufeff\u00ad ") == "a b c d"
    assert normalize_line("\u200b") == ""
