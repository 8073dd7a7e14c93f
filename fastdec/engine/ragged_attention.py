"""Attention of a ragged batched pass in blocks that leave out most of its padding.

A batched pass is as wide as its longest draft: right-padded to ``[B, n]``, every row's attention is computed for
``n`` query columns whatever the row feeds. The packed linear layers (:class:`~fastdec.engine.batched.BatchedVerifier`
on a CPU) skip the padding; attention did not, and on a CPU it is most of such a pass: on the default run's GEC model
at B = 32 one row drafting 16 tokens beside 31 one-token rows took 5.5 ms more than a greedy pass (11 us a padding
position), two thirds of it in the batched matrix products, masks and softmax; in blocks, 4.3 ms in all where it
had taken 8.7 (30-token prefixes, one thread). :func:`plan_blocks` cuts the columns into levels, each over the rows
that still feed a token there (a slice of the batch where they lie together, else those rows gathered), and
:func:`blocked_attention` computes each block with the verifier's own attention. A real token's query, keys (its
row's, up to the block's widest position) and mask are those of the padded pass, so the block changes what is left
out, not what is computed for a real token (the batched products may round a row differently at another width, as a
padded pass's already do against the batch-1 pass; docs/RESULTS.md).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, List, Optional, Sequence

import torch
from torch import Tensor

__all__ = ["Block", "plan_blocks", "blocked_attention"]

# what one more block costs beside its arithmetic, in row-columns (a row's query column attended over its keys): a
# block is four or five tensor calls in each attention of each layer, measured on the default run's GEC model (three
# decoder layers, one thread) at about 0.6 ms a pass where a row-column cost about 8 us (one row drafting 40 tokens
# beside 31 one-token rows: 17.2 ms padded, 8.7 in two blocks; four rows drafting 17 beside rows of 9, 2 and 1 at
# B = 8: 4.3 ms padded, 4.6 in two blocks, which a cost of 16 had planned)
_BLOCK_COST = 64.0
# the share of the padded attention's row-columns a plan must cost at most
_LEAST_SAVED = 0.75
# what gathering a row costs (its query, keys, values and mask copied out of the batch), in row-columns
_GATHER_COST = 2.0
# the most levels a plan weighs: the widths are thinned to this many candidates (a plan is made every ragged pass)
_MOST_CANDIDATES = 8


@dataclass(frozen=True)
class Block:
    """Query columns ``cols`` (start, stop) of the rows ``rows`` (a slice of the batch) or ``index`` (the rows
    gathered), whose self-attention reads the first ``keys`` positions of their caches."""

    rows: slice
    index: Optional[Tensor]
    cols: tuple
    keys: int


def plan_blocks(n_valid: Sequence[int], lengths: Sequence[int]) -> Optional[List[Block]]:
    """The blocks of a pass feeding ``n_valid[b]`` tokens to row ``b`` at cache positions ``lengths[b] ..``, or None
    where the blocks would not leave out a quarter of the padded attention's work (no row's draft wider than the
    others', or most rows drafting about as wide)."""
    B, n = len(n_valid), max(n_valid)
    # (a plan computes at least every real token's cell and costs a block more than the padded pass: where that is
    # already too much, nothing is weighed -- a plan is made every ragged pass)
    if B < 2 or sum(n_valid) + _BLOCK_COST > _LEAST_SAVED * B * n:
        return None
    widths = sorted({w for w in n_valid if w > 0})  # (0: a row waiting the pass out feeds nothing)
    if len(widths) > _MOST_CANDIDATES:  # (the widest always a candidate: the last level ends there)
        step = len(widths) / _MOST_CANDIDATES
        widths = sorted({widths[int(i * step)] for i in range(_MOST_CANDIDATES)} | {n})
    starts = [0] + [w for w in widths if w < n]
    # the rows that feed a token past each candidate start, and what a level over them costs a column
    feeding = {a: [b for b in range(B) if n_valid[b] > a] for a in starts}
    best = {0: (0.0, None)}  # a level's end -> the least cost to cover the columns before it, and the level before
    for c in widths:
        options = []
        for a in starts:
            if a >= c or a not in best:
                continue
            rows = feeding[a]
            span = rows[-1] - rows[0] + 1
            per_col = min(span, len(rows) * (1.0 + _GATHER_COST / (c - a)))
            options.append((best[a][0] + per_col * (c - a) + (_BLOCK_COST if a else 0.0), a))
        best[c] = min(options)
    # (a plan a quarter cheaper, or none: where it saves less, the blocks' smaller products ran no faster -- sixteen
    # rows drafting 20, 18 .. 1 tokens: 6.1 ms padded, 6.4 in two blocks the plan priced 18 % cheaper)
    if best[n][0] > _LEAST_SAVED * B * n:
        return None
    ends = [n]
    while ends[-1]:
        ends.append(best[ends[-1]][1])
    ends.reverse()
    blocks = []
    for a, c in zip(ends, ends[1:]):
        rows = feeding[a]
        lo, hi = rows[0], rows[-1] + 1
        gather = len(rows) * (1.0 + _GATHER_COST / (c - a)) < hi - lo
        index = torch.tensor(rows, dtype=torch.long) if gather else None
        blocks.append(Block(rows=slice(lo, hi), index=index, cols=(a, c),
                            keys=max(lengths[b] for b in (rows if gather else range(lo, hi))) + c))
    return blocks


def _rows_of(t: Tensor, block: Block) -> Tensor:
    return t.index_select(0, block.index.to(t.device)) if block.index is not None else t[block.rows]


def blocked_attention(attend: Callable, blocks: List[Block]) -> Callable:
    """``attend(q, k, v, mask)`` over ``[B, H, n, D]`` queries computed block by block: a function of ``(q, k, v,
    mask, causal)`` for :meth:`~fastdec.engine.verifier.Verifier.decoder_layers` (``causal``: the self-attention,
    whose keys a block reads only as far as its widest position). Columns no block covers (padding) hold whatever
    the memory held: the packed pass reads the real tokens alone."""
    def blocked(q: Tensor, k: Tensor, v: Tensor, mask: Optional[Tensor], causal: bool) -> Tensor:
        out = q.new_empty(q.shape)  # (padding: left as it is, never read)
        for block in blocks:
            a, c = block.cols
            T = block.keys if causal else k.size(2)
            part_mask = None
            if mask is not None:
                part_mask = mask if mask.dim() < 4 or mask.size(0) == 1 else _rows_of(mask, block)
                if part_mask.size(-2) > 1:
                    part_mask = part_mask[..., a:c, :]
                part_mask = part_mask[..., :T]
            # (sliced before the rows are gathered: a gather copies only the keys the block reads)
            got = attend(_rows_of(q[:, :, a:c], block), _rows_of(k[:, :, :T], block), _rows_of(v[:, :, :T], block),
                         part_mask)
            if block.index is not None:
                out[:, :, a:c].index_copy_(0, block.index.to(out.device), got)
            else:
                out[block.rows, :, a:c] = got
        return out
    return blocked
