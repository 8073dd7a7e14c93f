"""What a reader sees of a table or caption: text without BPE markers, a caption's lead (the rest one click away),
and the key columns of a wide table (identifiers, each paper column beside ours, then the first others)."""
from __future__ import annotations

import re
from typing import List, Optional, Tuple

import pandas as pd

MAX_COLUMNS = 10       # a table wider than this shows its key columns, the full table behind <details>
LONG_TEXT = 60         # a column whose cells average more characters is left to the full table
CAPTION_LEAD = 320     # characters of a caption shown before "more"
_ID_COLUMNS = ("label", "system", "method", "model", "k", "tau", "module", "hyperparameter", "threads", "depth")
_MEASURES = ("bleu", "f0.5", "speedup", "speed", "tok", "iteration", "block", "identical")
_GPT2 = {"Ġ": " ", "Ċ": "\n", "ĉ": "\t"}


def debpe(text: str) -> str:
    """``text`` with subword-nmt markers (``Gut@@ acht`` -> ``Gutacht``) and GPT-2 byte-level markers removed."""
    text = re.sub(r"@@( |$)", "", text).replace("@@", "")
    if "Ġ" in text or "Ċ" in text:
        text = "".join(_GPT2.get(c, c) for c in text)
    return text


def split_caption(note: str, limit: int = CAPTION_LEAD) -> Tuple[str, str]:
    """``(lead, rest)``: the caption's first sentences up to ``limit`` characters, and what follows."""
    if len(note) <= limit:
        return note, ""
    cut = note.rfind(". ", 0, limit)
    cut = cut + 1 if cut > 0 else note.rfind(" ", 0, limit)
    cut = cut if cut > 0 else limit
    return note[:cut].strip(), note[cut:].strip()


# a paper column's counterpart of ours when it is not simply the name without "paper_"
_ALIASES = {"paper_speed": "speedup_vs_beam", "paper_tok": "tokens_per_iteration",
            "paper_iterations": "mean_iterations", "paper_identical_pct": "identical_to_greedy_pct",
            "paper_speedup": "speedup_vs_beam"}
# Stern et al. report speedups over greedy decoding
_TABLE_ALIASES = {"blockwise": {"paper_speedup": "speedup_vs_greedy"}}


def counterpart(df: pd.DataFrame, paper_col: str, table: str) -> Optional[str]:
    """The column of ours a paper column (``paper_X`` or ``paper X``) is compared with, if the table has it."""
    ours = paper_col[len("paper_"):]
    if ours in df.columns:
        return ours
    alias = _TABLE_ALIASES.get(table.split("_")[0], {}).get(paper_col, _ALIASES.get(paper_col))
    return alias if alias in df.columns else None


def _long_text(series: pd.Series) -> bool:
    text = series.dropna().astype(str)
    return not pd.api.types.is_numeric_dtype(series) and len(text) > 0 and text.str.len().mean() > LONG_TEXT


def _numeric(series: pd.Series) -> bool:
    return pd.to_numeric(series, errors="coerce").notna().any()


def _rank(ours: str) -> int:
    """Headline measures first: quality, then speed, then the rest (a column name's place in _MEASURES)."""
    name = ours.lower()
    return next((i for i, m in enumerate(_MEASURES) if m in name), len(_MEASURES))


def key_columns(df: pd.DataFrame, table: str, limit: int = MAX_COLUMNS) -> List[str]:
    """The columns a reader needs first, in the table's order: the identifying columns, the ours / paper / delta
    groups of the headline measures (``df`` as :func:`fastdec.report.html.with_deltas` writes it), then other short
    columns, ``limit`` in all."""
    cols = list(df.columns)
    if len(cols) <= limit:
        return cols
    chosen = [cols[0]] + [c for c in cols[1:4] if c in _ID_COLUMNS]
    groups = []
    for i, c in enumerate(cols):
        ours = counterpart(df, c, table) if c.startswith("paper") else None
        if ours and _numeric(df[c]):
            groups.append([ours, c] + [d for d in cols[i + 1:i + 2] if d.startswith("delta ")])
    for group in sorted(groups, key=lambda g: _rank(g[0])):
        if len(set(chosen) | set(group)) <= limit:
            chosen += group
    # then the text a row shows (examples), the headline measures, the rest; a note repeated on every row is left out
    others = [c for c in cols if not c.startswith(("delta ", "paper")) and c not in chosen]
    varying_text = [c for c in others if _long_text(df[c]) and df[c].nunique() > 1]
    short = sorted((c for c in others if not _long_text(df[c])), key=lambda c: (_rank(c), cols.index(c)))
    for c in varying_text + short:
        if len(set(chosen)) >= limit:
            break
        chosen.append(c)
    return [c for c in cols if c in set(chosen)]
