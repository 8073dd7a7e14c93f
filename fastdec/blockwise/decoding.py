"""Blockwise decoding settings (k, top-k, ℓ), their engine objects, and the mean accepted block size.

A *setting* is one decoding configuration of a combined scoring/proposal model:

* ``k``          block size: heads p_1 .. p_k (``k = 1`` is greedy decoding with p_1);
* ``topk``       acceptance: 1 = exact (the verified prefix equals greedy decoding with p_1), ``t >= 2`` =
                 top-t approximate selection (Sec. 5.1 of Stern et al. 2018);
* ``min_block``  minimum block size ℓ (Sec. 5.3): at least ℓ tokens are added per iteration, ``1 <= ℓ <= k``;
* ``precision``  of the proposal heads: ``None`` (the run's default), ``float`` or ``int8`` (see
                 :class:`~fastdec.engine.blockwise_drafter.BlockwiseDrafter`; verification never changes).

Labels: ``k4`` (exact), ``k4-top2``, ``k8-min2``, ``k8-top2-min2``, ``k8-int8``, ``k8-float``.

Mean accepted block size (the paper's k̂, Table 1): tokens added per *verification* step. The engine's
first iteration of a sentence has no hidden state yet and adds exactly one token (it is the initial
"predict" call of the paper's combined model, Sec. 4); the paper counts only the verification steps,
so ``mean_block = sum(out_len - 1) / sum(iterations - 1)`` over the corpus (1.00 for greedy decoding).
``tokens_per_call = sum(out_len) / sum(iterations)`` counts every decoder call (what wall-clock time
sees; ``m / (m/k + 1)`` at best).
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Iterable, Optional

from fastdec.engine.acceptance import make_acceptance
from fastdec.engine.blockwise_drafter import BlockwiseDrafter, check_blockwise_settings
from fastdec.engine.loop import DecodeResult, draft_verify_accept

__all__ = ["Setting", "parse_setting", "make_rule", "blockwise_decode", "block_metrics"]

_LABEL = re.compile(r"^k(\d+)(?:-top(\d+))?(?:-min(\d+))?(?:-(float|int8))?$")
PRECISIONS = ("float", "int8")


@dataclass(frozen=True)
class Setting:
    k: int
    topk: int = 1
    min_block: int = 1
    precision: Optional[str] = None

    def __post_init__(self):
        check_blockwise_settings(self.k, self.topk, self.min_block)
        if self.precision is not None and self.precision not in PRECISIONS:
            raise ValueError(f"head precision must be one of {PRECISIONS} or None, got {self.precision!r}")

    @property
    def label(self) -> str:
        s = f"k{self.k}"
        if self.topk > 1:
            s += f"-top{self.topk}"
        if self.min_block > 1:
            s += f"-min{self.min_block}"
        if self.precision is not None:
            s += f"-{self.precision}"
        return s

    @property
    def exact(self) -> bool:
        return self.topk == 1 and self.min_block == 1


def parse_setting(label: str) -> Setting:
    """``"k4"`` / ``"k4-top2"`` / ``"k8-min2"`` / ``"k8-top3-min2-int8"`` -> :class:`Setting` (clear error otherwise)."""
    m = _LABEL.match(str(label).strip().lower())
    if not m:
        raise ValueError(f"bad blockwise setting {label!r}: expected k<K>[-top<T>][-min<L>][-float|-int8], "
                         f"e.g. k4, k4-top2, k8-min2, k8-int8")
    k, t, ell = (int(g) if g is not None else None for g in m.groups()[:3])
    return Setting(k, 1 if t is None else t, 1 if ell is None else ell, m.group(4))


def make_rule(topk: int = 1, min_block: int = 1):
    """The engine acceptance rule of a setting: exact, top-k approximate, optionally with a minimum block size."""
    topk = int(topk)
    if topk > 1:
        return make_acceptance("top-k", k=topk, min_block_size=min_block)
    return make_acceptance("top1", min_block_size=min_block)


def blockwise_decode(verifier, src_tokens, k: Optional[int] = None, *, topk: int = 1, min_block: int = 1,
                     drafter: Optional[BlockwiseDrafter] = None, **kwargs) -> DecodeResult:
    """Decode one sentence with blockwise parallel decoding (the verifier's model must be a blockwise model).

    ``k`` defaults to the model's trained block size. Bad settings (k < 1, top-k < 1, ℓ > k, k above the
    trained block size) raise ``ValueError``.
    """
    if drafter is None:
        drafter = BlockwiseDrafter(verifier.model, block_size=k)
    elif k is not None and k != drafter.block_size:
        raise ValueError(f"k = {k} but the drafter was built for k = {drafter.block_size}")
    check_blockwise_settings(drafter.block_size, topk, min_block)
    rule = make_rule(topk, min_block)
    kwargs.setdefault("method", f"blockwise-{Setting(drafter.block_size, topk, min_block).label}")
    return draft_verify_accept(verifier, src_tokens, drafter, rule, **kwargs)


def block_metrics(stats: Iterable) -> dict:
    """Corpus-level block statistics from engine ``DecodeStats`` (objects or their ``to_dict()``)."""
    tokens = iters = 0
    verify_tokens = verify_steps = 0
    n = 0
    for s in stats:
        out_len = s["out_len"] if isinstance(s, dict) else s.out_len
        it = s["iterations"] if isinstance(s, dict) else s.iterations
        n += 1
        tokens += out_len
        iters += it
        if it > 1:
            verify_tokens += out_len - 1
            verify_steps += it - 1
    return {
        "sentences": n,
        "tokens": tokens,
        "decoder_calls": iters,
        "mean_block": verify_tokens / verify_steps if verify_steps else 1.0,
        "tokens_per_call": tokens / iters if iters else None,
    }
