"""Decode one sentence with blockwise parallel decoding (Stern et al. 2018) through the engine, the way the bench
runner does for a ``blockwise`` method (tests/blockwise/test_blockwise_decoding.py).

The method's settings are those of the one method grammar (fastdec.bench.methods): block size ``k`` (heads p_1 ..
p_k; ``k = 1`` is greedy decoding with p_1), ``topk`` (1 = exact, the output equals greedy decoding with p_1; t >= 2 =
top-t approximate selection, Sec. 5.1) and ``min_block`` (minimum block size ℓ, Sec. 5.3). Corpus statistics (the
mean accepted block size k̂ = ``mean_block``, tokens per decoder call) are the results schema's
(fastdec.bench.results).
"""
from __future__ import annotations

from typing import Optional

from fastdec.bench.methods import Method
from fastdec.bench.runner import acceptance_rule
from fastdec.engine.blockwise_drafter import BlockwiseDrafter, check_blockwise_settings
from fastdec.engine.loop import DecodeResult, draft_verify_accept

__all__ = ["blockwise_decode"]


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
    method = Method("blockwise", k=drafter.block_size, topk=topk, min_block=min_block)
    kwargs.setdefault("method", method.label)
    return draft_verify_accept(verifier, src_tokens, drafter, acceptance_rule(method), **kwargs)
