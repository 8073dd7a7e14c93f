"""LibreOffice-help En->De corpus: extraction/pairing/splitting/filters on hand-written HTML,
and the shipped corpus in resources/ende_libreoffice."""
import gzip
import hashlib
import json
import subprocess
import sys
from collections import Counter
from pathlib import Path

import pytest

from fastdec.data import libreoffice as lo

REPO = Path(__file__).resolve().parents[1]
CORPUS = REPO / "resources" / "ende_libreoffice"
SPLITS = ("train", "valid", "test")


def page(body: str, lang: str = "en-US") -> str:
    return (f'<!DOCTYPE html><html lang="{lang}"><head><meta charset="utf-8"><title>T</title></head>'
            f'<body><div id="DisplayArea">{body}</div></body></html>')


# --------------------------------------------------------------------------- extraction

def test_extract_strips_tags_unescapes_and_collapses_whitespace():
    html = page('<p id="par_id1" class="paragraph" dir="auto">Choose <span class="menuitem">Tools\n'
                '   - Options</span> &amp; click&nbsp;<a href="x.html">OK</a>&#8230;<br>Done.</p>')
    assert lo.extract_paragraphs(html) == {"par_id1": "Choose Tools - Options & click OK… Done."}


def test_extract_keys_par_and_hd_ids_on_p_and_headings_only():
    html = page('<h1 id="hd_id1">Title here</h1><h2 id="par_id2">Heading with par id</h2>'
                '<p id="bm_id3"></p><p id="lang_id4">English</p><p dir="auto">No id at all.</p>'
                '<table><tr><td><p id="par_id5" class="tablecontent">In a cell.</p></td></tr></table>'
                '<ol><li><p id="par_id6" class="listitem">In a list.</p></li></ol>')
    assert lo.extract_paragraphs(html) == {"hd_id1": "Title here", "par_id2": "Heading with par id",
                                           "par_id5": "In a cell.", "par_id6": "In a list."}


def test_switchinline_keeps_only_default_variant():
    html = page('<p id="par_id1">Choose <span id="sw1" class="switchinline">'
                '<span hidden="true" id="MACtext_1" class="MAC"><span class="emph">LibreOffice - Preferences</span></span>'
                '<span hidden="true" id="defaulttext_1"><span class="emph">Tools - Options</span></span></span>'
                '<span class="emph"> - Language Settings</span>.</p>')
    assert lo.extract_paragraphs(html) == {"par_id1": "Choose Tools - Options - Language Settings."}


def test_switch_without_default_keeps_first_variant():
    html = page('<p id="par_id1"><span id="sw" class="switchinline">'
                '<span hidden="true" id="CALCt_5" class="CALC">Choose <span class="emph">Format - Cells</span> tab.</span>'
                '<span hidden="true" id="WRITERt_5" class="WRITER">Writer text.</span></span></p>')
    assert lo.extract_paragraphs(html) == {"par_id1": "Choose Format - Cells tab."}


def test_paragraphs_inside_block_switch_variants_are_kept():
    html = page('<span id="swl" class="switch"><span hidden="true" id="WINt_1" class="WIN">'
                '<div class="tip"><p id="par_id8">Install a 64-bit JRE.</p></div></span>'
                '<span hidden="true" id="defaultt_1"></span></span><p id="par_id9">Next.</p>')
    assert lo.extract_paragraphs(html) == {"par_id8": "Install a 64-bit JRE.", "par_id9": "Next."}


def test_code_paragraphs_and_code_blocks_are_skipped():
    stats = Counter()
    html = page('<p id="par_id1" class="code">SELECT a FROM b</p>'
                '<div class="bascode"><pre><code>Dim a As Integer</code></pre></div>'
                '<p id="par_id2" class="paragraph">Prose <span class="literal">intVar</span> here.</p>')
    assert lo.extract_paragraphs(html, stats) == {"par_id2": "Prose intVar here."}
    assert stats["units_code_skipped"] == 1


def test_repeated_ids_are_numbered_in_document_order():
    stats = Counter()
    html = page('<h2 id="hd_id7">Basic service</h2><p id="par_id1">One.</p>'
                '<div class="embedded"><h2 id="hd_id7">Calc service</h2></div>'
                '<h2 id="hd_id7">Dialog service</h2>')
    assert lo.extract_paragraphs(html, stats) == {
        "hd_id7": "Basic service", "par_id1": "One.", "hd_id7#2": "Calc service",
        "hd_id7#3": "Dialog service"}
    assert stats["units_repeated_id"] == 2


def test_soft_hyphen_and_zero_width_removed_and_stray_end_tags_tolerated():
    html = page('<p id="par_id1">Auto\u00admatic\u200b text</span></b> here</p><p id="par_id2">x</p>')
    assert lo.extract_paragraphs(html) == {"par_id1": "Automatic text here", "par_id2": "x"}


# --------------------------------------------------------------------------- pairing

def test_pairing_by_path_and_id_independent_of_order():
    en = {("a.html", "par_id1"): "First one.", ("a.html", "par_id2"): "Second one.",
          ("b.html", "par_id1"): "Other file.", ("a.html", "par_id3"): "Only English.",
          ("a.html", "par_id4"): ""}
    de = {("b.html", "par_id1"): "Andere Datei.", ("a.html", "par_id2"): "Zweiter.",
          ("a.html", "par_id1"): "Erster.", ("c.html", "hd_id9"): "Nur Deutsch.",
          ("a.html", "par_id4"): ""}
    stats = Counter()
    pairs = lo.pair_paragraphs(en, de, stats)
    assert pairs == [(("a.html", "par_id1"), "First one.", "Erster."),
                     (("a.html", "par_id2"), "Second one.", "Zweiter."),
                     (("b.html", "par_id1"), "Other file.", "Andere Datei.")]
    assert (stats["unpaired_src_only"], stats["unpaired_tgt_only"], stats["empty"]) == (1, 1, 1)


# --------------------------------------------------------------------------- sentence splitting

@pytest.mark.parametrize("text, expected", [
    ("One sentence here. Another one follows! And a third? Yes.",
     ["One sentence here.", "Another one follows!", "And a third?", "Yes."]),
    ('He said "stop." Then left.', ['He said "stop."', "Then left."]),
    ("Use e.g. Writer for this. Then save.", ["Use e.g. Writer for this.", "Then save."]),
    ("Wählen Sie z. B. Extras. Dann speichern.", ["Wählen Sie z. B. Extras.", "Dann speichern."]),
    ("Das gilt ab dem 1. Januar für alle.", ["Das gilt ab dem 1. Januar für alle."]),
    ("Choose Format - Character... Options appear.", ["Choose Format - Character... Options appear."]),
    ("Version 7.4. The end.", ["Version 7.4. The end."]),
    ("Click the Options tab. The dialog opens.", ["Click the Options tab.", "The dialog opens."]),
    ("file.ods is saved. next lower-case stays.", ["file.ods is saved. next lower-case stays."]),
    ("", []),
])
def test_split_sentences(text, expected):
    assert lo.split_sentences(text) == expected


def test_split_pairs_only_when_both_sides_split_alike():
    pairs = [(("a", "p1"), "First. Second.", "Erster. Zweiter."),
             (("a", "p2"), "First. Second.", "Erster und zweiter."),
             (("a", "p3"), "Just one.", "Nur einer.")]
    stats = Counter()
    out = lo.split_pairs(pairs, stats)
    assert out == [(("a", "p1", 0), "First.", "Erster."), (("a", "p1", 1), "Second.", "Zweiter."),
                   (("a", "p2", 0), "First. Second.", "Erster und zweiter."),
                   (("a", "p3", 0), "Just one.", "Nur einer.")]
    assert (stats["paragraphs_split"], stats["paragraphs_count_mismatch"],
            stats["paragraphs_kept_whole"], stats["sentence_pairs"]) == (1, 1, 1, 4)


# --------------------------------------------------------------------------- filters

def _filter(pairs, **kw):
    stats = Counter()
    kept = lo.filter_pairs([((str(i),), s, t) for i, (s, t) in enumerate(pairs)], stats, **kw)
    return [(s, t) for _, s, t in kept], stats


def test_filter_untranslated_after_normalisation():
    kept, stats = _filter([("SUMIF(A1:A10; 5) returns x", "sumif(a1:a10;5) returns X"),
                           ("Click the button now", "Klicken Sie jetzt die Schaltfläche")])
    assert kept == [("Click the button now", "Klicken Sie jetzt die Schaltfläche")]
    assert stats["dropped_untranslated"] == 1


def test_filter_word_limits_each_side():
    long_en, long_de = " ".join(["word"] * 81), " ".join(["Wort"] * 81)
    ok80 = (" ".join(["word"] * 80), " ".join(["Wort"] * 80))
    kept, stats = _filter([("Two words", "Drei Wörter hier"), ("Three words here", "Zwei Wörter"),
                           (long_en, long_de), ("three words here", "drei Wörter da"), ok80])
    assert kept == [("three words here", "drei Wörter da"), ok80]
    assert (stats["dropped_too_short"], stats["dropped_too_long"]) == (2, 1)


def test_filter_length_ratio_bounds_inclusive():
    kept, stats = _filter([("a b c d e f g", "eins zwei drei"),          # 7/3 > 2
                           ("a b c d e f", "eins zwei drei"),            # 6/3 == 2
                           ("a b c", "eins zwei drei vier fünf sechs"),  # 3/6 == 0.5
                           ("a b c", "eins zwei drei vier fünf sechs sieben")])  # 3/7 < 0.5
    assert kept == [("a b c d e f", "eins zwei drei"), ("a b c", "eins zwei drei vier fünf sechs")]
    assert stats["dropped_length_ratio"] == 2


def test_filter_dedup_on_source_keeps_first():
    kept, stats = _filter([("Save the file now", "Speichern Sie die Datei"),
                           ("Save the file now", "Datei jetzt speichern"),
                           ("Close the file now", "Schließen Sie die Datei")])
    assert kept == [("Save the file now", "Speichern Sie die Datei"),
                    ("Close the file now", "Schließen Sie die Datei")]
    assert stats["dropped_duplicate_source"] == 1 and stats["kept"] == 2


def test_filter_counts_every_filter_even_when_zero():
    _, stats = _filter([("one two three", "eins zwei drei")])
    for name in ("untranslated", "too_short", "too_long", "length_ratio", "duplicate_source"):
        assert stats[f"dropped_{name}"] == 0 and f"dropped_{name}" in stats


# --------------------------------------------------------------------------- split

def _items(n):
    return [((f"f{i:03d}.html", "par_id1", 0), f"src {i} a b", f"tgt {i} a b") for i in range(n)]


def test_split_is_deterministic_and_order_independent():
    items = _items(50)
    a = lo.split_corpus(items, valid=5, test=7, seed=3)
    b = lo.split_corpus(list(reversed(items)), valid=5, test=7, seed=3)
    assert a == b
    assert [len(a[k]) for k in ("valid", "test", "train")] == [5, 7, 38]
    keys = [p[0] for k in ("valid", "test", "train") for p in a[k]]
    assert sorted(keys) == sorted(p[0] for p in items)  # a partition
    assert lo.split_corpus(items, valid=5, test=7, seed=4) != a


def test_split_needs_enough_pairs():
    with pytest.raises(ValueError):
        lo.split_corpus(_items(3), valid=2, test=2)


def test_build_corpus_end_to_end_on_tiny_pages():
    en = {"a/x.html": page('<p id="par_id1">Open the dialog first. Then click OK.</p>'
                           '<p id="par_id2">LibreOffice Calc</p><p id="par_id3">Select a cell range now.</p>'
                           '<p id="par_id4">Enter a formula in the cell.</p>')}
    de = {"a/x.html": page('<p id="par_id1">Öffnen Sie zuerst den Dialog. Dann klicken Sie OK.</p>'
                           '<p id="par_id2">LibreOffice Calc</p><p id="par_id3">Wählen Sie einen Zellbereich.</p>'
                           '<p id="par_id4">Geben Sie eine Formel in die Zelle ein.</p>', "de")}
    splits, counts = lo.build_corpus(en, de, valid=1, test=1, seed=0)
    pairs = sorted((s, t) for k in splits for _, s, t in splits[k])
    assert pairs == sorted([("Open the dialog first.", "Öffnen Sie zuerst den Dialog."),
                            ("Then click OK.", "Dann klicken Sie OK."),
                            ("Select a cell range now.", "Wählen Sie einen Zellbereich."),
                            ("Enter a formula in the cell.", "Geben Sie eine Formel in die Zelle ein.")])
    assert counts["dropped_untranslated"] == 1 and counts["kept"] == 4
    assert (counts["split_valid"], counts["split_test"], counts["split_train"]) == (1, 1, 2)
    json.dumps(counts)


def test_cli_help():
    out = subprocess.run([sys.executable, "-m", "fastdec", "build-libreoffice-corpus", "--help"],
                         capture_output=True, text=True, check=True).stdout
    assert "--debs" in out and "--out" in out


# --------------------------------------------------------------------------- shipped corpus

@pytest.fixture(scope="module")
def manifest():
    return json.loads((CORPUS / "MANIFEST.json").read_text(encoding="utf-8"))


@pytest.fixture(scope="module")
def shipped():
    data = {}
    for split in SPLITS:
        for lang in ("en", "de"):
            raw = (CORPUS / f"{split}.{lang}.gz").read_bytes()
            assert raw[4:8] == b"\0\0\0\0", "gzip mtime must be 0 for reproducible rebuilds"
            data[split, lang] = gzip.decompress(raw)
    return data


def test_shipped_corpus_split_sizes_and_parallel_lines(manifest, shipped):
    assert manifest["splits"]["valid"] == 1000 and manifest["splits"]["test"] == 1000
    for split in SPLITS:
        en = shipped[split, "en"].decode("utf-8").split("\n")  # strict UTF-8
        de = shipped[split, "de"].decode("utf-8").split("\n")
        assert en[-1] == "" and de[-1] == "", "files end with a newline"
        en, de = en[:-1], de[:-1]
        assert len(en) == len(de) == manifest["splits"][split]
        for line in en + de:
            assert line.strip() and line == line.strip() and "\t" not in line and "\r" not in line
    srcs = [line for split in SPLITS for line in shipped[split, "en"].decode().splitlines()]
    assert len(srcs) == len(set(srcs)), "sources are de-duplicated across all splits"


def test_shipped_manifest_matches_files(manifest, shipped):
    counts = manifest["counts"]
    assert counts["kept"] == sum(manifest["splits"].values())
    for split in SPLITS:
        assert counts[f"split_{split}"] == manifest["splits"][split]
        for lang in ("en", "de"):
            info = manifest["files"][f"{split}.{lang}.gz"]
            data = shipped[split, lang]
            assert info["lines"] == data.count(b"\n") == manifest["splits"][split]
            assert info["sha256_uncompressed"] == hashlib.sha256(data).hexdigest()
    dropped = sum(v for k, v in counts.items() if k.startswith("dropped_"))
    assert counts["sentence_pairs"] - dropped == counts["kept"]
    assert manifest["filters"] == lo.FILTER_DEFAULTS
    assert {p["package"] for p in manifest["packages"]} == {"libreoffice-help-en-us", "libreoffice-help-de"}
    assert all(len(p["sha256"]) == 64 and p["version"] for p in manifest["packages"])
    assert "MPL-2.0" in (CORPUS / "NOTICE").read_text(encoding="utf-8")


def test_shipped_corpus_is_small():
    assert sum(p.stat().st_size for p in CORPUS.iterdir()) < 5 * 1024 * 1024
