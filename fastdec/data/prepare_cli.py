"""``fastdec prepare-data``: check and clean one split of a parallel corpus; write plain UTF-8 files and a JSON report.

Sources: plain/gzip text files (--src/--tgt), or members of downloaded archives (--member ARCHIVE::SRC::TGT::FORMAT,
repeatable; the members are concatenated in order). Training data is filtered (counted in the report); valid/test
data is checked strictly (any bad line is an error naming file and line).
"""
import argparse
import json
import tempfile
from pathlib import Path


def add_arguments(ap: argparse.ArgumentParser) -> None:
    ap.add_argument("--src")
    ap.add_argument("--tgt")
    ap.add_argument("--member", action="append", default=[], help="ARCHIVE::SRC_MEMBER::TGT_MEMBER::FORMAT")
    ap.add_argument("--split", required=True, choices=["train", "valid", "test", "final"])
    ap.add_argument("--max-words", type=int, required=True)
    ap.add_argument("--max-ratio", type=float)
    ap.add_argument("--limit", type=int)
    ap.add_argument("--src-out", required=True)
    ap.add_argument("--tgt-out", required=True)
    ap.add_argument("--report", required=True)


def main(a: argparse.Namespace) -> int:
    from fastdec.data.download import extract_lines
    from fastdec.data.parallel import check_parallel, write_lines

    with tempfile.TemporaryDirectory() as tmp:
        src, tgt = a.src, a.tgt
        if a.member:  # materialise archive members as plain files so errors can name a file and line
            src, tgt = Path(tmp) / "src", Path(tmp) / "tgt"
            s_lines, t_lines = [], []
            for spec in a.member:
                archive, sm, tm, fmt = spec.split("::")
                s_lines += extract_lines(archive, sm, fmt)
                t_lines += extract_lines(archive, tm, fmt)
            write_lines(src, s_lines)
            write_lines(tgt, t_lines)
        strict = a.split != "train"
        s, t, rep = check_parallel(src, tgt, strict=strict, max_words=a.max_words,
                                   max_ratio=None if strict else a.max_ratio, limit=a.limit)
    write_lines(a.src_out, s)
    write_lines(a.tgt_out, t)
    report = {"split": a.split, "sources": a.member or [a.src, a.tgt], **rep.as_dict()}
    Path(a.report).write_text(json.dumps(report, indent=2))
    dropped = sum(rep.dropped.values())
    print(f"{a.split}: kept {rep.kept} pairs, dropped {dropped} {rep.dropped or ''}", flush=True)
