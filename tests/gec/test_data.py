"""GEC data steps: M2 -> pairs, split selection, BEA-2019 preparation, benchmark sets (small fixtures, fast)."""
import json
import subprocess
import sys
import tarfile
from pathlib import Path

import pytest

from fastdec.eval.m2 import parse_m2
from fastdec.tracks.gec import data

REPO = Path(__file__).resolve().parents[2]

M2 = """S This are a test .
A 1 2|||R:VERB:SVA|||is|||REQUIRED|||-NONE-|||0
A 2 3|||U:DET|||-NONE-|||REQUIRED|||-NONE-|||0
A 1 2|||R:VERB:SVA|||is|||REQUIRED|||-NONE-|||1
A 4 4|||M:ADV|||again||too|||REQUIRED|||-NONE-|||1

S Nothing wrong here .
A -1 -1|||noop|||-NONE-|||REQUIRED|||-NONE-|||0

S Unclear thing .
A 0 1|||UNK|||Unclear|||REQUIRED|||-NONE-|||0

S No annotation lines
"""


def test_apply_edits_and_overlaps():
    toks = "a b c d".split()
    assert data.apply_edits(toks, [(1, 2, "B"), (3, 3, "x y")]) == "a B c x y d"
    assert data.apply_edits(toks, [(0, 2, ""), (1, 3, "z")]) == "c d"  # overlapping later edit skipped
    assert data.apply_edits(toks, []) == "a b c d"


def test_m2_to_pairs_every_annotator_skips_noop_unk():
    pairs = data.m2_to_pairs(parse_m2(M2))
    assert pairs == [
        ("This are a test .", "This is test ."),
        ("This are a test .", "This is a test again ."),  # first alternative of "again||too"
        ("Nothing wrong here .", "Nothing wrong here ."),
        ("Unclear thing .", "Unclear thing ."),              # UNK edits are not corrections
        ("No annotation lines", "No annotation lines"),
    ]
    assert len(data.m2_to_pairs(parse_m2(M2), annotators="first")) == 4


def test_split_m2_blocks_round_trip():
    blocks = data.split_m2_blocks(M2)
    assert len(blocks) == 4 and blocks[0].startswith("S This are") and blocks[-1] == "S No annotation lines"


def _write(p: Path, lines):
    p.write_text("".join(x + "\n" for x in lines), encoding="utf-8")


@pytest.fixture()
def full(tmp_path):
    d = tmp_path / "full"
    d.mkdir()
    _write(d / "train.src", ["a b c", "", "x " * 30, "d e", "f g"])
    _write(d / "train.tgt", ["a b", "q", "x " * 30, "d e", "f h"])
    _write(d / "valid.src", ["v w", "y z"])
    _write(d / "valid.tgt", ["v W", "y z"])
    _write(d / "test.src", ["This are a test .", "Nothing wrong here ."])
    (d / "test.m2").write_text("\n\n".join(data.split_m2_blocks(M2)[:2]) + "\n\n", encoding="utf-8")
    return d


def test_select_splits_subset_drops_and_builds_valid_m2(full, tmp_path):
    out = tmp_path / "raw"
    rep = data.select_splits(full, out, subset={"train": 2, "test": 1}, max_words=10)
    assert rep["train"] == {"input": 5, "dropped_empty": 1, "dropped_long": 1, "first_dropped_lines": [2, 3],
                            "kept": 2}
    assert (out / "train.src").read_text().splitlines() == ["a b c", "d e"]
    assert (out / "test.src").read_text().splitlines() == ["This are a test ."]
    assert len(data.split_m2_blocks((out / "test.m2").read_text())) == 1
    valid = parse_m2((out / "valid.m2").read_text())
    assert [s.source for s in valid] == ["v w", "y z"]
    assert [(e.start, e.end, e.corrections) for e in valid[0].annotators[0]] == [(1, 2, ("W",))]
    assert valid[1].annotators == {0: []}
    assert json.loads((out / "report.json").read_text())["valid"]["m2_from"] == "pairs"


def test_select_splits_rejects_source_m2_mismatch(full, tmp_path):
    _write(full / "test.src", ["Something else", "Nothing wrong here ."])
    with pytest.raises(data.GECDataError, match="test sentence 1"):
        data.select_splits(full, tmp_path / "raw")


def test_prepare_m2_corpora_and_head(tmp_path):
    stats = data.prepare_m2_corpora([("a.m2", M2), ("b.m2", M2)], ("dev.m2", M2), ("test.m2", M2), tmp_path)
    assert stats["train"] == 10 and stats["valid"]["sentences"] == 4 and stats["test"]["annotators"] == [0, 1]
    assert (tmp_path / "valid.tgt").read_text().splitlines()[0] == "This is test ."
    assert (tmp_path / "test.src").read_text().splitlines()[-1] == "No annotation lines"
    # the layout select_splits expects
    rep = data.select_splits(tmp_path, tmp_path / "raw")
    assert rep["valid"]["m2_from"] == "file"
    n = data.head_files(2, [(tmp_path / "raw/test.src", tmp_path / "set.src")],
                        (tmp_path / "raw/test.m2", tmp_path / "set.m2"))
    assert n == 2 and len(data.split_m2_blocks((tmp_path / "set.m2").read_text())) == 2


def test_missing_licensed_corpus_names_the_config_key(tmp_path):
    with pytest.raises(data.GECDataError) as e:
        data.read_m2_source({"local": "lang8"}, archives={}, local={"lang8": str(tmp_path / "nope.m2")},
                            key="gec.data.bea19.train[0]")
    assert "gec.data.bea19.local.lang8" in str(e.value) and "nope.m2" in str(e.value)
    assert "bea2019st" in str(e.value)  # where to request it
    with pytest.raises(data.GECDataError, match="gec.data.bea19.local.nucle is not set"):
        data.read_m2_source({"local": "nucle"}, archives={}, local={"nucle": None}, key="k")


def test_bea19_cli_reads_archives_and_fails_clearly(tmp_path):
    m2 = tmp_path / "x.m2"
    m2.write_text(M2, encoding="utf-8")
    arch = tmp_path / "arch.tar.gz"
    with tarfile.open(arch, "w:gz") as t:
        t.add(m2, arcname="corpus/m2/x.m2")
    spec = {"train": [{"archive": "a", "member": "corpus/m2/x.m2"}, {"local": "lang8"}],
            "valid": {"archive": "a", "member": "corpus/m2/x.m2"}, "test": {"archive": "a", "member": "corpus/m2/x.m2"}}
    cmd = [sys.executable, "-m", "fastdec", "gec-data", "bea19", "--sources", json.dumps(spec),
           "--archive", f"a={arch}", "--out", str(tmp_path / "full")]
    r = subprocess.run(cmd + ["--local", f"lang8={tmp_path / 'missing.m2'}"], capture_output=True, text=True)
    assert r.returncode == 2 and "gec.data.bea19.local.lang8" in r.stderr
    assert not (tmp_path / "full").exists()  # nothing written before the check
    r = subprocess.run(cmd + ["--local", f"lang8={m2}"], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    assert len((tmp_path / "full/train.src").read_text().splitlines()) == 10
