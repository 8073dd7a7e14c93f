"""Watching the draft -> verify -> accept loop: :func:`trace` decodes one sentence with the engine exactly as usual
(same loop, same output) and records, per iteration, the draft the loop verified, the verifier's top-1 token at every
drafted position plus the one after, how many draft tokens were accepted and what was appended. The GAD case study
(GAD Table 11) and ``fastdec trace`` (Stern et al. Sec. 7.4) render it.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import List, Optional

from .loop import draft_verify_accept
from .projection import MaskedLogProbs

__all__ = ["Iteration", "Trace", "trace"]


@dataclass
class Iteration:
    draft: List[int]
    top1: List[int]          # verifier top-1 for rows 0..k (k+1 tokens)
    accepted: int
    appended: List[int]
    planned: Optional[int] = None  # the draft length the cost-aware policy allowed (None: the drafter's own k)


@dataclass
class Trace:
    tokens: List[int]
    iterations: List[Iteration] = field(default_factory=list)


def trace(verifier, src, drafter, rule, *, max_len_a: float, max_len_b: int,
          max_draft_len: Optional[int] = None, policy=None) -> Trace:
    """Decode ``src`` with the draft -> verify -> accept loop, recording every iteration (see module doc).

    Iterations with an empty draft (a plain greedy step) are recorded with ``draft=[]``; with a ``policy`` each
    iteration also records the draft length it allowed (``planned``; 0: the drafter was not asked).
    """
    its: List[Iteration] = []

    def record(state, draft, accepted, appended):
        # the verifier's top-1 at every fed row, also past the bifurcation (the exact rule stops projecting there)
        j = state.num_generated - len(appended)
        lp = MaskedLogProbs(verifier, state.max_len).of(state.hidden, j)(0, len(draft) + 1)
        planned = state.max_draft if policy is not None else None
        its.append(Iteration(list(draft), lp.argmax(dim=-1).tolist(), accepted, list(appended), planned))

    res = draft_verify_accept(verifier, src, drafter, rule, max_len_a=max_len_a, max_len_b=max_len_b,
                              max_draft_len=max_draft_len, on_iteration=record, policy=policy)
    return Trace(tokens=list(res.tokens), iterations=its)
