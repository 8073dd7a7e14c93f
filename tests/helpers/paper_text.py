"""The papers' text (../shared/papers beside the repository, or $FASTDEC_PAPERS): a table's rows as printed, to read
a transcription in fastdec against its source. A test using it is skipped where the papers are not there."""
from __future__ import annotations

import os
import re
from pathlib import Path
from typing import List, Optional, Union

import pytest

REPO = Path(__file__).resolve().parents[2]
XIA = "gad-lossless-speedup-translation.txt"
GE = "aggressive-decoding-iad-gad.txt"


def paper_path(name: str) -> Path:
    for folder in (os.environ.get("FASTDEC_PAPERS"), REPO.parent / "shared" / "papers"):
        if folder and (Path(folder) / name).is_file():
            return Path(folder) / name
    pytest.skip(f"the paper {name} is not beside the repository (set FASTDEC_PAPERS)")


def table_rows(name: str, number: int) -> List[List[str]]:
    """The rows of Table ``number`` of paper ``name``: the tab-separated block right above its caption, each row's
    non-empty cells."""
    lines = paper_path(name).read_text(encoding="utf-8").splitlines()
    caption = next(i for i, line in enumerate(lines) if line.startswith(f"Table {number}:"))
    end = caption
    while not lines[end - 1].strip():
        end -= 1
    start = end
    while start > 0 and lines[start - 1].strip():
        start -= 1
    return [[c.strip() for c in line.split("\t") if c.strip()] for line in lines[start:end]]


def value(cell: str) -> Union[float, str, None]:
    """A printed cell as a number (``$3.5\\times^\\dagger$`` -> 3.5), ``"N"``, or None for ``/``."""
    if cell in ("N", "/"):
        return None if cell == "/" else cell
    m = re.match(r"\$?(\d+(?:\.\d+)?)", cell.replace(" ", ""))
    if not m:
        raise ValueError(f"not a table value: {cell!r}")
    return float(m.group(1))


def row_values(row: List[str], n: int) -> List[Optional[Union[float, str]]]:
    """The last ``n`` cells of a row, as :func:`value`."""
    return [value(c) for c in row[-n:]]
