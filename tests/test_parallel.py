import gzip

import pytest

from fastdec.data.parallel import CorpusError, check_parallel, read_lines


def write(p, text: bytes):
    p.write_bytes(text)
    return p


def test_mismatched_line_counts_name_both_files(tmp_path):
    s = write(tmp_path / "a.en", b"one two three\nfour five six\n")
    t = write(tmp_path / "a.de", b"eins zwei drei\n")
    with pytest.raises(CorpusError, match=r"a\.en has 2 lines, .*a\.de has 1"):
        check_parallel(s, t, strict=False, max_words=80)


def test_non_utf8_names_file_and_line(tmp_path):
    s = write(tmp_path / "a.en", b"fine line here\nbad \xe9 byte\n")
    with pytest.raises(CorpusError, match=r"a\.en:2: not valid UTF-8 \(byte 0xe9 at column 5\)"):
        read_lines(s)


def test_train_filter_drops_and_counts(tmp_path):
    s = write(tmp_path / "t.en", b"a b c\n\nx " + b"w " * 100 + b"\nok then fine\n")
    t = write(tmp_path / "t.de", b"a b c\nleer\nx y z\nalles gut so\n")
    src, tgt, rep = check_parallel(s, t, strict=False, max_words=80)
    assert src == ["a b c", "ok then fine"] and tgt == ["a b c", "alles gut so"]
    assert rep.dropped == {"empty": 1, "too_long": 1}
    assert rep.examples == {"empty": [2], "too_long": [3]}
    assert rep.kept == 2


def test_strict_split_reports_empty_line(tmp_path):
    s = write(tmp_path / "test.en", b"a b c\n\n")
    t = write(tmp_path / "test.de", b"a b c\nd e f\n")
    with pytest.raises(CorpusError, match=r"test\.en:2: empty line"):
        check_parallel(s, t, strict=True, max_words=80)


def test_strict_split_reports_overlong_line(tmp_path):
    s = write(tmp_path / "test.en", b"a b c d e\n")
    t = write(tmp_path / "test.de", b"a b\n")
    with pytest.raises(CorpusError, match=r"test\.en:1: too long line.*data\.max_words=4"):
        check_parallel(s, t, strict=True, max_words=4)


def test_gzip_and_limit(tmp_path):
    s = tmp_path / "x.en.gz"
    t = tmp_path / "x.de.gz"
    with gzip.open(s, "wb") as fh:
        fh.write(b"a\nb\nc\n")
    with gzip.open(t, "wb") as fh:
        fh.write(b"A\nB\nC\n")
    src, tgt, _ = check_parallel(s, t, strict=True, max_words=5, limit=2)
    assert src == ["a", "b"] and tgt == ["A", "B"]


def test_ratio_filter(tmp_path):
    s = write(tmp_path / "r.en", b"a\na b\n")
    t = write(tmp_path / "r.de", b"a b c d e f g h i j\na b\n")
    src, _, rep = check_parallel(s, t, strict=False, max_words=80, max_ratio=3)
    assert src == ["a b"] and rep.dropped == {"length_ratio": 1}
