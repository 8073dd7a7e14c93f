"""GAD paper, Table 11: how GAD / GAD++ decode a sentence, iteration by iteration.

:func:`~fastdec.engine.tracing.trace` decodes one sentence with the engine exactly as usual but records, per
iteration, the draft the loop verified (``D``), the verifier's top-1 token at every drafted position plus the one
after (``V``), how many draft tokens were accepted and what was appended. :func:`format_trace` renders the paper's
notation in Markdown:

* ``V`` row -- accepted tokens plain; ``[top1, draft]`` where GAD++ accepted a draft token that is not the
  verifier's top-1 (it is within top-beta and tau); **bold** the verifier's own token appended at the bifurcation
  (or after a fully accepted draft); ~~struck~~ the verifier's predictions after the bifurcation (discarded);
* ``[EOS]`` stands for the end-of-sentence token.
"""
from __future__ import annotations

from typing import Callable, List, Sequence

from fastdec.engine.tracing import Iteration, Trace, trace

__all__ = ["Iteration", "Trace", "trace", "format_trace", "select_examples", "case_study_rows"]


def _tok(symbol: Callable[[int], str], t: int, eos: int) -> str:
    return "[EOS]" if t == eos else symbol(t)


def format_trace(tr: Trace, symbol: Callable[[int], str], eos: int) -> List[dict]:
    """Rows ``{"iteration", "step": "D"|"V", "accepted", "text"}`` in the paper's notation (module docstring)."""
    rows = []
    done: List[str] = []
    for i, it in enumerate(tr.iterations, 1):
        prev = " ".join(done)
        d = " ".join(_tok(symbol, t, eos) for t in it.draft)
        rows.append({"iteration": i, "step": "D", "accepted": None,
                     "text": (f"_{prev}_ " if prev else "") + (d if d else "(no draft)")})
        v = []
        for j, t in enumerate(it.top1):
            s = _tok(symbol, t, eos)
            if j < it.accepted:
                v.append(s if it.draft[j] == t else f"[{s}, {_tok(symbol, it.draft[j], eos)}]")
            elif j == it.accepted:
                v.append(f"**{s}**")
            else:
                v.append(f"~~{s}~~")
        rows.append({"iteration": i, "step": "V", "accepted": it.accepted,
                     "text": (f"_{prev}_ " if prev else "") + " ".join(v)})
        done.extend(_tok(symbol, t, eos) for t in it.appended)
    return rows


def select_examples(candidates: Sequence[dict], n: int) -> List[int]:
    """Pick ``n`` example ids: first those whose GAD++ output differs from greedy and that take 2..6 iterations,
    then any with >= 2 iterations, then the rest (each candidate: ``{"id", "differs", "iterations", "src_len"}``).
    """
    if n < 0:
        raise ValueError(f"n must be >= 0, got {n}")
    tiers = [
        [c for c in candidates if c["differs"] and 2 <= c["iterations"] <= 6 and c["src_len"] <= 40],
        [c for c in candidates if 2 <= c["iterations"] <= 6 and c["src_len"] <= 40],
        [c for c in candidates if c["iterations"] >= 2],
        list(candidates),
    ]
    picked: List[int] = []
    for tier in tiers:
        for c in tier:
            if len(picked) >= n:
                return picked
            if c["id"] not in picked:
                picked.append(c["id"])
    return picked


def case_study_rows(example: int, source: str, greedy: str, traces: Sequence[tuple], symbol, eos: int,
                    decode: Callable[[Sequence[int]], str]) -> List[dict]:
    """All rows of one example: SOURCE, GREEDY, then per (system label, Trace) its D/V rows and RESULT."""
    rows = [{"example": example, "system": "", "iteration": None, "step": "SOURCE", "accepted": None,
             "text": source},
            {"example": example, "system": "greedy", "iteration": None, "step": "GREEDY", "accepted": None,
             "text": greedy}]
    for label, tr in traces:
        for r in format_trace(tr, symbol, eos):
            rows.append({"example": example, "system": label, **r})
        rows.append({"example": example, "system": label, "iteration": len(tr.iterations), "step": "RESULT",
                     "accepted": None, "text": decode(tr.tokens)})
    return rows
