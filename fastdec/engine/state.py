"""What one sentence's decode carries from iteration to iteration, and the iteration's accept step.

* :class:`DecodeState` -- what a drafter sees (the source, the accepted prefix, the last verifier pass);
* :class:`DecodeResult` -- a decoded sentence: its tokens and :class:`~fastdec.engine.stats.DecodeStats`;
* :func:`advance` -- the accept -> append -> EOS -> rollback step of one iteration, shared by the batch-1 loop
  (:mod:`fastdec.engine.loop`) and every row of the batched one (:mod:`fastdec.engine.batched`).

Drafters import this module, not the loops, so the loops may import the drafters.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Dict, List, Optional, Tuple

from torch import Tensor

from .acceptance import Decision
from .stats import DecodeStats

__all__ = ["DecodeState", "DecodeResult", "advance"]


@dataclass
class DecodeState:
    """What a drafter sees. Attributes are read-only for drafters except ``extra``.

    * ``src_tokens`` -- 1-D LongTensor of the source (incl. trailing EOS) on the verifier's device;
      ``src_list`` the same as a Python list.
    * ``prefix`` -- accepted target prefix ``[BOS(=EOS), o_1 .. o_j]`` (Python list).
    * ``encoder_out`` -- the verifier's fairseq encoder output dict (``encoder_out``: ``[S, 1, C]``).
    * ``hidden`` -- final decoder features ``[n, C]`` of the last verifier pass (``None`` before the
      first); ``last_row`` is the row that predicted the newest token, so ``last_hidden`` (=
      ``hidden[last_row]``) is the feature vector of position ``j - 1`` -- the one a Blockwise
      head reads to propose ``o_{j+1} ..``. ``last_log_probs`` is the masked log-prob row that
      produced ``o_j`` when the acceptance rule needed log-probs (else ``None``).
    * ``max_draft`` -- drafts longer than this are truncated by the loop.
    * ``iteration``, ``last_drafted``, ``last_accepted`` -- bookkeeping of the previous iteration.
    * ``extra`` -- a free dict for drafter-private per-sentence state.
    * ``time_modules`` -- the sentence's ``DecodeStats.time_modules``; drafters add to it with :meth:`charge`.
    * ``sync_timing`` -- the loop synchronises CUDA around its module timings; drafters timing their own parts
      follow it (off: no host sync for timing at all).
    """

    src_tokens: Tensor
    src_list: List[int]
    prefix: List[int]
    encoder_out: Dict[str, List[Tensor]]
    eos: int
    pad: int
    unk: int
    vocab_size: int
    max_len: int
    max_draft: int = 0
    iteration: int = 0
    hidden: Optional[Tensor] = None
    last_row: int = 0
    last_log_probs: Optional[Tensor] = None
    last_drafted: int = 0
    last_accepted: int = 0
    extra: Dict[str, Any] = field(default_factory=dict)
    time_modules: Dict[str, float] = field(default_factory=dict)
    sync_timing: bool = True

    def charge(self, module: str, seconds: float) -> None:
        """Add ``seconds`` to the time of sub-module ``module`` (e.g. ``drafter_encoder``) of this sentence."""
        self.time_modules[module] = self.time_modules.get(module, 0.0) + seconds

    @property
    def bos(self) -> int:
        return self.prefix[0]

    @property
    def output(self) -> List[int]:
        """The accepted output tokens without the BOS."""
        return self.prefix[1:]

    @property
    def num_generated(self) -> int:
        return len(self.prefix) - 1

    @property
    def last_hidden(self) -> Optional[Tensor]:
        return None if self.hidden is None else self.hidden[self.last_row]


@dataclass
class DecodeResult:
    tokens: List[int]  # o_1 .. o_m, ending with EOS
    stats: DecodeStats

    eos: int = 2

    @property
    def tokens_no_eos(self) -> List[int]:
        t = self.tokens
        return t[:-1] if t and t[-1] == self.eos else t


def advance(state: DecodeState, stats: DecodeStats, draft: List[int], decision: Decision,
            hidden: Tensor) -> Tuple[List[int], int, bool]:
    """Apply one iteration's ``decision`` on ``draft`` (verified by the pass whose final features are ``hidden``,
    rows ``0 .. len(draft)``) to ``state`` and ``stats``.

    Appends the accepted ``draft[:a]`` and the verifier's token of row ``a`` to ``state.prefix``, cut after the first
    EOS. Returns ``(appended, cache_length, finished)``: the caller rolls its KV cache back to ``cache_length``
    (``j + 1 + a``: the prefix ``o_0 .. o_{j+a}``) and stops the sentence when ``finished`` (an EOS was appended).
    """
    a, top1, lp = decision
    k = len(draft)
    if a < 0 or a > k:
        raise RuntimeError(f"acceptance rule returned {a} for a draft of {k} tokens")
    prefix, eos = state.prefix, state.eos
    j = len(prefix) - 1
    new = draft[:a]
    new.append(top1[a])
    finished = False
    for i, t in enumerate(new):
        if t == eos:
            new = new[: i + 1]
            finished = True
            break
    prefix.extend(new)
    state.iteration += 1
    state.hidden = hidden
    state.last_row = a
    state.last_log_probs = None if lp is None else lp[a]
    state.last_drafted, state.last_accepted = k, a
    stats.drafted.append(k)
    stats.accepted.append(a)
    return new, j + 1 + a, finished
