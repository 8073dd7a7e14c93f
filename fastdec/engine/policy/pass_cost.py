"""What a verifier pass costs: :class:`PassCost`, measured on the verifier at hand -- its model, backend, device,
precision and batch size -- by :func:`measure_pass_cost` (the cost-aware policy's calibration, see
:mod:`fastdec.engine.policy`)."""
from __future__ import annotations

import dataclasses
import time
from dataclasses import dataclass
from typing import List, Optional, Sequence

import numpy as np
import torch

_CHUNK = 8  # the exact rule projects rows in chunks of 8, 16, 32 ... on a CPU (acceptance.accept_top1)
_FED_SIZES = (1, 2, 3, 4, 6, 8, 12, 16, 24, 32, 48, 64, 96, 128)


def _interpolate(xs: Sequence[float], ys: Sequence[float], x: float) -> float:
    """Piecewise-linear through the measured points, extended linearly on both sides (below the first point by the
    first segment's slope: fewer rows than measured still pay per token)."""
    if len(xs) == 1 or x == xs[0]:
        return ys[0] if len(xs) > 1 or x == xs[0] else ys[0] * x / xs[0]
    if x < xs[0]:
        slope = max((ys[1] - ys[0]) / (xs[1] - xs[0]), 0.0)
        return max(ys[0] - slope * (xs[0] - x), 0.0)
    for i in range(1, len(xs)):
        if x <= xs[i]:
            x0, x1, y0, y1 = xs[i - 1], xs[i], ys[i - 1], ys[i]
            return y0 + (y1 - y0) * (x - x0) / (x1 - x0)
    x0, x1, y0, y1 = xs[-2], xs[-1], ys[-2], ys[-1]
    return y1 + max(y1 - y0, 0.0) * (x - x1) / (x1 - x0)


def _interpolate_from(xs: Sequence[float], ys: Sequence[float], start: int, stop: int) -> np.ndarray:
    """:func:`_interpolate` at every integer ``start <= x < stop`` at once, each number by the same operations in the
    same order (a table of thousands of points is made in one go when a batched choice reads that far: one point at a
    time it took 3 us each)."""
    x = np.arange(start, stop, dtype=float)
    if x.size == 0 or len(xs) == 1:
        return np.array([_interpolate(xs, ys, v) for v in x.tolist()], dtype=float)
    xa, ya = np.asarray(xs, dtype=float), np.asarray(ys, dtype=float)
    # the segment (xs[i - 1], xs[i]] that holds x, clipped to the first and the last segment
    i = np.clip(np.searchsorted(xa, x, side="left"), 1, len(xs) - 1)
    x0, x1, y0, y1 = xa[i - 1], xa[i], ya[i - 1], ya[i]
    out = y0 + (y1 - y0) * (x - x0) / (x1 - x0)
    past = x > xa[-1]
    out[past] = (ya[-1] + max(ys[-1] - ys[-2], 0.0) * (x[past] - xa[-1]) / (xa[-1] - xa[-2]))
    before = x < xa[0]
    if before.any():  # (the first segment's slope, read only where a point lies below it, as _interpolate reads it)
        slope = max((ys[1] - ys[0]) / (xs[1] - xs[0]), 0.0)
        out[before] = np.maximum(ya[0] - slope * (xa[0] - x[before]), 0.0)
    out[x == xa[0]] = ys[0]
    return out


@dataclass
class PassCost:
    """Measured seconds of one iteration's parts for ``batch`` rows (see the module docstring).

    ``fed`` / ``pass_s``: a decoder pass of that many tokens in all (over all rows); ``rows`` / ``rows_s``: the
    vocabulary projection of that many rows; ``step_s``: one greedy iteration of the loop (draft nothing, verify one
    token per row, accept, bookkeeping); ``pad_s``: what one padding position adds to a batched pass (a pass is as
    wide as its longest draft: on a GPU the PyTorch backend computes every shorter row's padding; on a CPU its linear
    layers run on the real tokens and its attention in blocks that leave most padding out, about 0 at B = 32, where
    padded attention had cost 12 us a padding position; the C backend feeds real tokens only, about 0)."""

    batch: int
    fed: List[int]
    pass_s: List[float]
    rows: List[int]
    rows_s: List[float]
    step_s: float
    seconds_to_measure: float = 0.0
    pad_s: float = 0.0

    def __deepcopy__(self, memo) -> "PassCost":
        # a measured cost is not changed once measured, and a policy keeps tables by its identity: a policy's snapshot
        # (CostAwarePolicy.snapshot) shares it, so that those tables stay its own
        return self

    def extra(self, fed: float, rows: float, base: Optional[int] = None) -> float:
        """Seconds an iteration feeding ``fed`` tokens and projecting ``rows`` rows costs beyond a greedy step of
        ``base`` rows (default: the measured batch size)."""
        return self.fed_extra(fed, base) + self.rows_extra(rows, base)

    def _shifted(self, x: float, base: Optional[int]) -> tuple:
        b = self.batch if base is None else base
        # fewer rows than measured (a batch whose rows finished): the same draft tokens on the measured batch -- a
        # drafted token costs about the same beside fewer rows, and below the measured points the curves are guesses
        # (a straight line down from the smallest pass would lose what any draft adds to a pass)
        shift = max(self.batch - b, 0)
        return x + shift, b + shift

    def fed_extra(self, fed: float, base: Optional[int] = None) -> float:
        """The decoder pass's part of :meth:`extra`: feeding ``fed`` tokens beyond ``base`` rows' greedy ones."""
        fed, b = self._shifted(fed, base)
        return max(_interpolate(self.fed, self.pass_s, fed) - _interpolate(self.fed, self.pass_s, b), 0.0)

    def rows_extra(self, rows: float, base: Optional[int] = None) -> float:
        """The projection's part of :meth:`extra`: projecting ``rows`` rows beyond ``base`` rows' greedy ones."""
        rows, b = self._shifted(rows, base)
        return max(_interpolate(self.rows, self.rows_s, rows) - _interpolate(self.rows, self.rows_s, b), 0.0)

    def table(self, horizon: int) -> List[float]:
        """``extra`` of a batch-1 iteration with a draft of ``n`` tokens, every row projected, for n = 0 .. horizon
        (a lookup table for the per-iteration choice)."""
        return [self.extra(n + 1, min(n + 1, _CHUNK)) for n in range(horizon + 1)]


def _dummy_source(verifier, length: int = 16) -> torch.Tensor:
    first = 4 if verifier.vocab_size > 8 else 0  # past fairseq's specials
    ids = [first + i % max(verifier.vocab_size - first, 1) for i in range(length - 1)]
    ids = [t for t in ids if t not in (verifier.eos, verifier.pad)] or [verifier.unk]
    return torch.tensor(ids + [verifier.eos], dtype=torch.long)


class _Clock:
    def __init__(self, device: torch.device):
        self.cuda = device.type == "cuda"

    def time(self, fn, repeats: int) -> float:
        """The fastest of ``repeats`` calls (the least disturbed), after one warm-up call."""
        fn()
        best = float("inf")
        for _ in range(repeats):
            if self.cuda:
                torch.cuda.synchronize()
            t0 = time.perf_counter()
            fn()
            if self.cuda:
                torch.cuda.synchronize()
            best = min(best, time.perf_counter() - t0)
        return best


@torch.inference_mode()
def measure_pass_cost(verifier, horizon: int, batch: int = 1, *, repeats: int = 3) -> PassCost:
    """Measure :class:`PassCost` on ``verifier`` for drafts of up to ``horizon`` tokens at batch size ``batch``.

    Drives the verifier itself (a dummy source; the cost does not depend on the token ids) and leaves no state the
    next decode reads: every sentence starts with ``verifier.start``."""
    from ..loop import draft_verify_accept
    from ..projection import MaskedLogProbs

    t_start = time.perf_counter()
    clock = _Clock(verifier.device)
    wide_s = None
    # a sentence of typical length, some way into its output: attention over a few positions only would make every
    # pass look cheaper than in decoding, and a draft token's cost is judged against a greedy row's
    src = _dummy_source(verifier, 24)
    prefix = 24
    ids = src[:-1].tolist()
    feed_ids = [ids[i % len(ids)] for i in range(prefix + horizon + 1)]
    per_row = sorted({s for s in _FED_SIZES if s <= horizon + 1} | {horizon + 1})
    per_row = [s for s in per_row if prefix + s < verifier.max_positions] or [1]
    if batch <= 1:
        verifier.start(src)
        verifier.forward(torch.tensor([verifier.eos] + feed_ids[: prefix - 1]), need_logits=False)
        fed, pass_s = [], []
        for s in per_row:
            feed = torch.tensor(feed_ids[prefix: prefix + s])

            def one_pass(feed=feed):
                verifier.forward(feed, need_logits=False)
                verifier.rollback(prefix)
            fed.append(s)
            pass_s.append(clock.time(one_pass, repeats))
        hidden = verifier.forward(torch.tensor(feed_ids[prefix: prefix + _CHUNK * 2]), need_logits=False).hidden
        verifier.rollback(prefix)
        proj = MaskedLogProbs(verifier, max_len=10 ** 6).of(hidden, prefix)
        rows = [r for r in (1, _CHUNK, 2 * _CHUNK) if r <= hidden.size(0)]
        rows_s = [clock.time(lambda r=r: proj.top1(0, r), repeats) for r in rows]

        def greedy():
            res = draft_verify_accept(verifier, src, None, max_len_b=24, sync_timing=False)
            return (res.stats.time - res.stats.time_encoder) / max(res.stats.iterations, 1)
        step = min(greedy() for _ in range(repeats))
    else:
        from ..batched import batched_verifier, decode_batch
        from ..projection import BatchedMaskedLogProbs

        bver = batched_verifier(verifier)
        sources = [src] * batch
        bver.start(sources)
        bver.forward(torch.tensor([[verifier.eos] + feed_ids[: prefix - 1]] * batch), [prefix] * batch)
        fed, pass_s = [], []
        # a greedy step keeps the rows' lengths equal (the batch-1 slicing); drafting makes them ragged (per-row
        # positions, masks and packed linear layers): one token per row is measured on equal lengths, longer passes
        # on ragged ones, so what drafting adds to a pass is in the difference
        ragged = [prefix - b % 3 for b in range(batch)]
        # one token per row; one row drafting one token (what any draft adds to a pass: ragged positions and masks,
        # the padded attention); then every row drafting. A wide batched pass is slow to measure; the rest is
        # extrapolated
        shapes = [[1] * batch, [2] + [1] * (batch - 1)] + [[s - b % 2 for b in range(batch)] for s in per_row[1:8]]
        if verifier.device.type == "cuda" and len(per_row) > 8:
            # on a GPU the widest pass costs little to measure and about what the short ones do: measured, it keeps
            # the straight line through the last two short passes (their noise) from pricing wide drafts
            shapes.append([per_row[-1]] * batch)
        def timed(n_valid):
            s = max(n_valid)
            tokens = torch.tensor([feed_ids[prefix: prefix + s]] * batch)
            starts = [prefix] * batch if s == 1 else ragged

            def one_pass():
                bver.lengths = list(starts)
                bver.forward(tokens, n_valid)
            return clock.time(one_pass, repeats)
        for n_valid in shapes:
            if fed and sum(n_valid) <= fed[-1]:
                continue  # (a batch of two: one row drafting is half the rows)
            fed.append(sum(n_valid))
            pass_s.append(timed(n_valid))
        # one row drafting wide beside one-token rows: what the padding of the other rows costs where it is attended
        # (a CPU's pass leaves it out in blocks only where they save a quarter of the attention's work: priced as left
        # out, about 0, a choice that drafts rows unevenly met padded passes at full price, and cost-aware IAD ran
        # 0.6-1.8 % behind the policy on passes without blocks at B = 8, 16 and 32; priced where attended, 1.6 %
        # behind to 3.4 % ahead)
        wide = min(max(per_row), 17)
        if wide > 2:
            blocked = getattr(bver, "blocked", None)
            if blocked is not None:
                bver.blocked = False
            wide_s = timed([wide] + [1] * (batch - 1))
            if blocked is not None:
                bver.blocked = blocked
        bver.lengths = [prefix] * batch
        chunk = feed_ids[prefix: prefix + _CHUNK]  # (shorter where the horizon is: no row projects more than it feeds)
        hidden = bver.forward(torch.tensor([chunk] * batch), [len(chunk)] * batch)
        rows, rows_s = [], []
        # the batched loop's own projection (on a CPU every row's real positions; the fast backend's in one C call)
        proj = BatchedMaskedLogProbs(verifier).of(hidden, [prefix] * batch, [10 ** 6] * batch)

        def project(r):
            return proj.top1(list(range(batch)), 0, r, [r] * batch)
        for r in [r for r in (1, 2, 4, _CHUNK) if r <= hidden.size(1)]:  # (a wide projection costs more per row)
            rows.append(r * batch)
            rows_s.append(clock.time(lambda r=r: project(r), repeats))

        def greedy():
            res = decode_batch(bver, sources, None, max_len_b=24, sync_timing=False)
            st = res[0].stats
            return (st.time - st.time_encoder) * batch / max(st.iterations, 1)
        step = min(greedy() for _ in range(repeats))
    # a pass of more tokens (a projection of more rows) costs no less than one of fewer: a measurement that says
    # otherwise met noise (each is the fastest of a few, so noise only adds), and the fewer tokens' time is lowered to
    # the least measured for more
    cost = PassCost(batch=max(batch, 1), fed=fed, pass_s=_no_dearer_than_more(pass_s), rows=rows,
                    rows_s=_no_dearer_than_more(rows_s), step_s=step)
    if wide_s is not None:  # beyond what as many real tokens in even rows cost
        real = batch - 1 + wide
        cost.pad_s = max(wide_s - _interpolate(cost.fed, cost.pass_s, real), 0.0) / (batch * wide - real)
    cost.seconds_to_measure = time.perf_counter() - t_start
    return cost


def _projection_no_dearer_per_row(cost: PassCost) -> PassCost:
    """``cost`` with each projection of more rows costing no more per row than the one of fewer rows before it. A
    projection does the same work for each row (a product with the output layer, a softmax over the vocabulary), and a
    measurement that says otherwise met the allocator: on this CPU the GEC model's projection of 128 rows measured 53
    µs a row against 29 at 64 (its large tensors mapped afresh and faulted in at each call), which decoding, its memory
    in use, does not meet. Extended from there at 78 µs a row, it priced the drafted passes of a PyTorch batch of 16 at
    twice what they took (24 against 13 ms for 272 drafted tokens), and the policy drafted a few tokens where all of
    them paid."""
    rows_s = list(cost.rows_s)
    for k in range(1, len(rows_s)):
        rows_s[k] = min(rows_s[k], rows_s[k - 1] * cost.rows[k] / cost.rows[k - 1])
    return cost if rows_s == list(cost.rows_s) else dataclasses.replace(cost, rows_s=rows_s)


def _no_dearer_than_more(seconds: List[float]) -> List[float]:
    out, least = [], float("inf")
    for s in reversed(seconds):
        least = min(least, s)
        out.append(least)
    return out[::-1]
