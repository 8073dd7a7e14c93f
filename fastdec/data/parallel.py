"""Reading and checking parallel text: every problem names the file and line, nothing is lost silently.

Policy (documented in README "Bad input"):
- different line counts, or bytes that are not UTF-8: always an error;
- empty lines, over-long lines, extreme length ratios: dropped from *training* data and counted in the
  stage's report; in valid/test data they are an error, because dropping a test line changes the benchmark.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from fastdec.text import CorpusError, open_text, read_lines, write_lines  # noqa: F401  (re-exported)


@dataclass
class FilterReport:
    kept: int = 0
    dropped: dict[str, int] = field(default_factory=dict)
    examples: dict[str, list[int]] = field(default_factory=dict)

    def drop(self, reason: str, line_no: int):
        self.dropped[reason] = self.dropped.get(reason, 0) + 1
        self.examples.setdefault(reason, [])
        if len(self.examples[reason]) < 5:
            self.examples[reason].append(line_no)

    def as_dict(self) -> dict:
        return {"kept": self.kept, "dropped": self.dropped, "first_dropped_lines": self.examples}


def check_parallel(
    src_path: str | Path,
    tgt_path: str | Path,
    *,
    strict: bool,
    max_words: int,
    max_ratio: float | None = None,
    limit: int | None = None,
) -> tuple[list[str], list[str], FilterReport]:
    """Read a parallel corpus, check it, and (for training data, strict=False) drop bad pairs.

    ``limit`` keeps only the first N pairs (smoke configs); it applies before filtering.
    """
    src = read_lines(src_path)
    tgt = read_lines(tgt_path)
    if len(src) != len(tgt):
        raise CorpusError(
            f"parallel files differ in length: {src_path} has {len(src)} lines, {tgt_path} has {len(tgt)}. "
            f"Each line of one must translate the same line of the other; realign them before running."
        )
    if limit is not None:
        src, tgt = src[:limit], tgt[:limit]
    report = FilterReport()
    keep_src, keep_tgt = [], []
    for i, (s, t) in enumerate(zip(src, tgt), 1):
        s, t = " ".join(s.split()), " ".join(t.split())
        reason = None
        where = None
        if not s or not t:
            reason, where = "empty", (src_path if not s else tgt_path)
        else:
            ns, nt = len(s.split()), len(t.split())
            if max(ns, nt) > max_words:
                reason, where = "too_long", (src_path if ns > nt else tgt_path)
            elif max_ratio is not None and max(ns, nt) / min(ns, nt) > max_ratio:
                reason, where = "length_ratio", src_path
        if reason is None:
            keep_src.append(s)
            keep_tgt.append(t)
            continue
        if strict:
            fixes = {
                "empty": "an evaluation set must not have empty lines; remove the pair from both files",
                "too_long": f"the line has more than data.max_words={max_words} words; raise data.max_words "
                "or shorten the line",
                "length_ratio": "the pair's length ratio is extreme; check the alignment",
            }
            raise CorpusError(f"{where}:{i}: {reason.replace('_', ' ')} line: {fixes[reason]}.")
        report.drop(reason, i)
    report.kept = len(keep_src)
    if not keep_src:
        raise CorpusError(f"{src_path}: no usable sentence pairs left after filtering ({report.as_dict()}).")
    return keep_src, keep_tgt, report
