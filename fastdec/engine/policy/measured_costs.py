"""What the cost-aware policy knows of costs: the calibration (:mod:`.pass_cost`, read from :mod:`.cost_cache` or
measured), and what decoding measures -- a greedy pass by its rows, the drafter's call and start, and how the
measured cost of drafted passes relates to the calibration's prediction (:class:`_ExtraFit`, by batch size)."""
from __future__ import annotations

from array import array
from typing import Dict, List, Optional, Sequence, Tuple

import numpy as np

from .cost_cache import cached_pass_cost, pass_cost_key, store_pass_cost
from .pass_cost import (_CHUNK, PassCost, _interpolate, _interpolate_from, _projection_no_dearer_per_row,
                        measure_pass_cost)


def _nearest(keys, key: int) -> int:
    """The key of ``keys`` nearest ``key`` (the smaller of two as near)."""
    return min(keys, key=lambda k: (abs(k - key), k))


def _rises(xs: Sequence[float], ys: Sequence[float], origin: int, start: int, stop: int) -> array:
    """What the measured curve rises from ``origin`` to ``origin + i``, for ``start <= i < stop`` (0 where it falls)."""
    return _doubles(np.maximum(_interpolate_from(xs, ys, origin + start, origin + stop) - _interpolate(xs, ys, origin),
                               0.0))


def _doubles(values: np.ndarray) -> array:
    """``values`` as an ``array('d')``: the tables a choice reads after each pass are contiguous doubles (a list's
    float objects, read by the C choice after a pass of the C backend, were each a cache miss: 7-8 us of a 14 us
    choice at B = 2)."""
    return array("d", np.ascontiguousarray(values, dtype=np.float64).tobytes())


class _ExtraFit:
    """What drafted passes really add beyond a greedy pass, against what the calibration predicts for them: a running
    least-squares line ``seen = fixed + factor * predicted`` over recent passes (each weighs ``decay`` times the next).
    The fixed part is what any draft adds to a pass whatever its length (ragged positions and masks); a running mean
    of ratios would read it as a factor and swing to its bounds on passes with one drafted token. Too little spread
    in the predictions to tell the two apart: a factor alone (the ratio of the sums). The calibration is its prior.
    A pass more than three times dearer than the line says is set aside (``held``: the last pass was that dear) and
    counts only where the next pass is too: a stall of the machine inside one pass is not what drafts cost."""

    __slots__ = ("decay", "sums", "line", "held")

    def __init__(self, decay: float = 0.9):
        self.decay = decay
        self.sums = (0.0,) * 5  # weight, x, y, x*x, x*y
        self.line = (0.0, 1.0)  # the last solve's (fixed, factor)
        self.held = False  # the last pass was more than three times dearer than the line (the first of them set aside)

    def add(self, predicted: float, seen: float) -> tuple:
        """Count a pass; returns :meth:`solve`'s answer with it (the line as it was where the pass is set aside)."""
        x = predicted  # (once per drafted pass: plain arithmetic)
        fixed, factor = self.line
        expect = fixed + factor * x
        # one stall (20 ms inside one drafted pass of a B = 16 batch on the C backend, where a pass takes 1-3 ms) made
        # drafted tokens three times dearer by the line, and the batch drafted in 55 of its 5,888 iterations from then
        # on: no drafted pass came to move the line back. Where the next pass is that dear too, it counts, and every
        # one after it while they stay that dear (as any pass counts, at most three times the line): a lasting change
        # comes through from its second pass on
        dear = seen > 3.0 * expect
        if dear and not self.held:
            self.held = True
            return self.line
        self.held = dear
        d, (n, sx, sy, sxx, sxy) = self.decay, self.sums
        if n == 0.0:  # the calibration as a prior: three passes that cost what it predicts, fading as passes come
            n, sx, sxx = 3.0, 3.5 * predicted, 5.25 * predicted * predicted  # at 0.5, 1 and 2 times this prediction
            sy, sxy = sx, sxx
        # one pass counts at most a third or three times what the line says it costs: a pass that met a cold cache or
        # a new shape's first allocation moves the line a step, not to a cost that stops drafting from then on;
        # a lasting change moves it over a few passes
        seen = min(max(seen, expect / 3.0), 3.0 * expect)
        self.sums = (d * n + 1.0, d * sx + x, d * sy + seen, d * sxx + x * x, d * sxy + x * seen)
        self.line = self.solve()
        return self.line

    def relax(self, keep: float) -> None:
        """Move the sums ``1 - keep`` of the way to the calibration's line (drafts cost what it predicts), with the
        sums' own weight and mean prediction: passes at 0.5, 1 and 1.5 times that prediction that cost what it says.
        (What a new batch does to a batch's fit: :meth:`BatchedChoice._relax_fits`.)"""
        n, sx, sy, sxx, sxy = self.sums
        if n <= 0.0:
            return
        mx, w = sx / n, 1.0 - keep
        pxx = n * 3.5 / 3.0 * mx * mx
        self.sums = (n, sx, keep * sy + w * sx, keep * sxx + w * pxx, keep * sxy + w * pxx)
        self.line = self.solve()

    def solve(self) -> tuple:
        """``(fixed seconds >= 0, factor in [0.25, 8])``; ``(0, 1)`` before any pass."""
        n, sx, sy, sxx, sxy = self.sums
        if n <= 0 or sx <= 0:
            return 0.0, 1.0
        mx, my = sx / n, sy / n
        var = sxx / n - mx * mx
        factor = (sxy / n - mx * my) / var if n >= 3 and var > (0.25 * mx) ** 2 else sy / sx
        factor = min(max(factor, 0.25), 8.0)
        return max(my - factor * mx, 0.0), factor


class MeasuredCosts:
    """:class:`~fastdec.engine.policy.CostAwarePolicy`'s costs: the calibration by batch size and what decoding
    measured (its attributes are made in ``CostAwarePolicy.__init__``)."""

    def calibrate(self, verifier, batch: int = 1) -> PassCost:
        """Measure the verifier's pass cost at this batch size now (kept per batch size, and in the cost cache for the
        next policy on the same model, backend, device and batch size; call again to re-measure)."""
        return self._measure(verifier, batch, pass_cost_key(verifier, self.horizon, batch))

    def _measure(self, verifier, batch: int, key: str) -> PassCost:
        cost = measure_pass_cost(verifier, self.horizon, batch)
        store_pass_cost(key, cost)
        return self.use_cost(cost)

    def _cached_or_measured(self, verifier, batch: int) -> PassCost:
        key = pass_cost_key(verifier, self.horizon, batch)  # hashes the weights: once per measurement
        cached = cached_pass_cost(key)
        return self.use_cost(cached) if cached is not None else self._measure(verifier, batch, key)

    def use_cost(self, cost: PassCost) -> PassCost:
        """Decide with ``cost`` (measured elsewhere, or read back) for its batch size; a projection measured dearer per
        row than one of fewer rows is read at the fewer rows' rate (:func:`_projection_no_dearer_per_row`)."""
        cost = _projection_no_dearer_per_row(cost)
        self._costs[cost.batch] = cost
        self._first_stands.clear()
        self._extras.clear()
        self._cost_for.clear()
        if cost.batch == 1:
            self.cost = cost
            self._table = cost.table(self.horizon)
            # the least that positions after n add per position, on average over any run of them (the choice stops
            # where even that cannot pay: positions n+1 .. m add at most (m - n) times position n+1's value); an
            # average, not the least single step, so one flat step of a noisy measurement does not keep every
            # choice reading to the horizon
            t = self._table
            last = len(t) - 1
            self._least_after = [min((max(t[m] - t[n], 0.0) / (m - n) for m in range(n + 1, last + 1)),
                                     default=float("inf")) for n in range(last + 1)] + [float("inf")]
        return cost

    @property
    def greedy_s(self) -> Optional[float]:
        """The measured greedy pass of one row (batch 1), None before one was seen."""
        return self._greedy.get(1)

    def greedy_pass_s(self, rows: int, cost: Optional[PassCost] = None) -> Optional[float]:
        """Seconds of a greedy pass of ``rows`` rows: measured at that row count, else between the nearest measured
        counts (``cost``'s calibration one of them), else in proportion to the nearest; None when nothing is known."""
        measured = self._greedy.get(rows)
        if measured is not None:
            return measured
        pts = dict(self._greedy)
        if cost is not None:
            pts.setdefault(cost.batch, cost.step_s)
        if not pts:
            return None
        if rows in pts:
            return pts[rows]
        lo = max((r for r in pts if r < rows), default=None)
        hi = min((r for r in pts if r > rows), default=None)
        if lo is not None and hi is not None:
            return pts[lo] + (pts[hi] - pts[lo]) * (rows - lo) / (hi - lo)
        near = lo if hi is None else hi
        return pts[near] * rows / near

    def batch_cost(self, verifier, batch: int) -> PassCost:
        """The cost measured at the smallest measured batch size >= ``batch`` (else the largest); measured now at
        ``batch`` when none was: a batch whose rows finish one by one is not measured again at every size (the
        loops call :meth:`prepare` with a batch's full size first)."""
        if batch in self._cost_for:
            return self._cost_for[batch]
        sizes = sorted(b for b in self._costs if b > 1)
        if not sizes:
            return self._cached_or_measured(verifier, batch)
        cost = self._cost_for[batch] = self._costs[next((b for b in sizes if b >= batch), sizes[-1])]
        return cost

    @staticmethod
    def _mean(table: Dict[int, float], rows: int, seconds: float) -> None:
        old = table.get(rows)
        # a new number of rows is known at once; later calls refine it
        table[rows] = seconds if old is None else 0.8 * old + 0.2 * seconds

    @classmethod
    def _first_at_most(cls, table: Dict[int, float], rows: int, seconds: float) -> None:
        """:meth:`_mean` for a drafter's calls and starts, where the first call at a new number of rows is taken at
        most at twice what the nearest measured count scales to (:meth:`_lookup`): that one call is often all there
        is at that count, for a count that does not draft is not measured again. One first call of IAD's drafter at
        4 rows took 0.95 ms on the fast backend (at 1 row: 10 us), and no batch of 4 drafted again in that run
        (1.01 tokens per iteration at 0.97x greedy, where fixed IAD was at 1.18x)."""
        if rows not in table and table:
            seconds = min(seconds, 2.0 * cls._lookup(table, rows))
        cls._mean(table, rows, seconds)

    @staticmethod
    def _lookup(table: Dict[int, float], rows: int) -> float:
        """The running mean at ``rows``, else the nearest measured row count's, scaled up by the row ratio when
        ``rows`` is larger (a drafter call costs at most proportionally more: a safe guess until it is measured)."""
        if not table:
            return 0.0
        if rows in table:
            return table[rows]
        near = _nearest(table, rows)
        return table[near] * max(rows / near, 1.0)

    def drafter_cost(self, rows: int = 1) -> float:
        return self._lookup(self._drafter_s, rows)

    def start_cost(self, rows: int = 1) -> float:
        return self._lookup(self._start_s, rows) if rows > 0 else 0.0

    def observe_start(self, seconds: float, rows: int = 1) -> None:
        """The drafter's start (lazy: when first asked) for ``rows`` sentences took ``seconds``."""
        self._first_at_most(self._start_s, rows, seconds)
        self._version += 1

    def observe_drafter(self, seconds: float, rows: int = 1) -> None:
        """One drafter call for ``rows`` sentences took ``seconds``."""
        self._first_at_most(self._drafter_s, rows, seconds)
        self._iter_s += seconds
        self._version += 1

    def observe_pass(self, seconds: float, drafted: Sequence[int]) -> None:
        """One verification pass took ``seconds`` with drafts of ``drafted`` tokens (one per row): a pass without
        drafts updates the greedy step, one with drafts the fit of the measured extra cost on the predicted one."""
        rows = len(drafted)
        projected, self._pass_projected = self._pass_projected, None  # (what observe_rows counted of this pass)
        if rows == 1:
            self._observe_row_pass(seconds, drafted[0])
        elif not any(drafted):
            self.observe_greedy_pass(seconds, rows)
            return
        else:
            self._judge_batch_pass(rows, seconds, sum(drafted))
            if self._last is None:
                return
            cost = self._last
            fed = rows + sum(drafted)
            if fed + max(cost.batch - rows, 0) > 1.5 * cost.fed[-1]:
                return  # past the measured passes the prediction is a straight line out: its error says little of
                # the passes the choice usually weighs
            # what drafts add is this pass less a greedy pass of the same rows *in this batch*: a batch's passes cost
            # what its sentences' lengths make them (the longest batch first), and a greedy pass measured in another
            # batch (or the calibration's) would put that difference into the line's fixed part. A drafted pass
            # waits for the batch's greedy pass of its rows, and one that never comes leaves it out
            base = self._batch_greedy_near(rows)
            if self._rows_fused:  # (the choice's tables, the same numbers; the rows the pass projected, as counted)
                t = fed - rows
                projected = t if projected is None else min(projected, t)
                fed_s, rows_s = self._fused_lists(cost, rows, t)
                extra_s = fed_s[t] + rows_s[projected]
            else:
                extra_s = cost.extra(fed, self._projected(drafted), base=rows)
            if cost.pad_s:
                extra_s += cost.pad_s * (rows * (1 + max(drafted)) - fed)
            predicted = extra_s * self._scale(rows, cost, base if base is not None else self._run_greedy_near(rows))
            if predicted <= 0:
                return
            if base is None:
                self._pending.setdefault(rows, []).append((predicted, seconds))
            else:
                self._fit_batch(rows, predicted, seconds - base)

    def _observe_row_pass(self, seconds: float, k: int) -> None:
        """:meth:`observe_pass` of one row (every iteration of a batch-1 decode: the short way; ``_scale`` is 1)."""
        if self._promised is not None:  # the last row of a batch, drafting by choose_batch
            self._judge_batch_pass(1, seconds, k)
        if not k:
            self._mean(self._greedy, 1, seconds)
            return
        cost = self.cost
        if cost is None:
            return
        predicted = self._table[k if k < self.horizon else self.horizon]
        if predicted > 0:
            base = self._greedy.get(1, cost.step_s)  # (greedy_pass_s at one row)
            seen = max(seconds - base, 0.0)
            if self._native is None:
                self.extra_fixed, self.extra_factor = self._fit.add(predicted, seen)
            else:  # (the same numbers, in C: native/choice.c)
                self.extra_fixed, self.extra_factor = self._native.fit_add(self._fit, predicted, seen)

    def observe_greedy_pass(self, seconds: float, rows: int) -> None:
        """A batched greedy pass of ``rows`` rows took ``seconds`` (:meth:`observe_pass` without drafts; the batched
        loop's held steps call it directly): the greedy step at that many rows, and this batch's greedy pass, against
        which the drafted passes waiting for one of about as many rows are judged. A pass counts at most twice what
        the run's greedy passes say it takes (at that many rows, else the nearest count's, scaled up by the row
        ratio): one stall of the machine inside a greedy pass of 8 rows (20 ms where they took 0.5) became the run's
        greedy pass of 8 rows, every drafted token beside about as many rows was priced up to four times dearer from
        then on (:meth:`_scale`), and the batches of that size drafted in 225 of 5,025 iterations."""
        g = self._greedy
        if g:
            seconds = min(seconds, 2.0 * self._lookup(g, rows))
        self._mean(g, rows, seconds)
        self._batch_greedy[rows] = seconds
        if self._pending:
            for r in [r for r in self._pending if rows // 2 <= r <= 2 * rows]:
                for predicted, seen in self._pending.pop(r):
                    self._fit_batch(r, predicted, seen - seconds * r / rows)

    def _run_greedy_near(self, rows: int) -> Optional[float]:
        """The run's greedy pass of ``rows`` rows (a batch's): measured at that count, else in proportion from the
        nearest count measured within a factor of two, else None."""
        g = self._greedy
        seconds = g.get(rows)
        if seconds is not None or rows <= 1:
            return seconds
        near = min((r for r in g if r > 1), key=lambda r: abs(r - rows), default=None)
        return g[near] * rows / near if near is not None and near // 2 <= rows <= 2 * near else None

    def _batch_greedy_near(self, rows: int) -> Optional[float]:
        """This batch's greedy pass of ``rows`` rows: measured at that count, else in proportion from the nearest count
        measured in this batch within a factor of two (a batch's rows finish within a few drafted passes, so one of
        exactly as many rows seldom comes; a pass of fewer rows costs a little more per row, so the estimate errs
        towards pricing drafts dearer), else None."""
        g = self._batch_greedy
        seconds = g.get(rows)
        if seconds is not None or not g:
            return seconds
        near = min(g, key=lambda r: abs(r - rows))
        if not near // 2 <= rows <= 2 * near:
            return None
        cost = self._last
        at_rows, at_near = self.greedy_pass_s(rows, cost), self.greedy_pass_s(near, cost)
        return g[near] * (at_rows / at_near if at_rows and at_near else rows / near)

    def _fit_batch(self, rows: int, predicted: float, extra_s: float) -> None:
        fit = self._batch_fits.get(rows.bit_length())
        if fit is None:
            fit = self._batch_fits[rows.bit_length()] = _ExtraFit()
        if self._native is None:
            fit.add(predicted, max(extra_s, 0.0))
        else:  # (the same numbers, in C: in Python 7-10 us of a pass's observation at B = 2 to 8 on the C backend)
            self._native.fit_add(fit, predicted, max(extra_s, 0.0))

    def batch_line(self, rows: int) -> tuple:
        """``(fixed seconds, factor)`` of what drafts add to a pass of ``rows`` rows beyond the prediction: learned at
        about that many rows, else at half or twice as many, else the factor learned at the nearest row count (what a
        batch's real sentences add per drafted token beyond the calibration's dummy one carries over; a fixed part,
        what any draft adds to a pass, does not), else ``(0, 1)``; batch 1's own at one row. (Each row count learning
        alone, the first batch on the fast backend paid a lesson at 32, 15, 12, 9 and 6 rows: drafted tokens there cost
        twice the calibration's, greedy rows 1.5-1.6 times.)"""
        if rows <= 1:
            return self.extra_fixed, self.extra_factor
        key = rows.bit_length()
        fits = self._batch_fits
        fit = fits.get(key) or fits.get(key + 1) or fits.get(key - 1)
        if fit is not None:
            return fit.line
        if not fits:
            return 0.0, 1.0
        return 0.0, fits[_nearest(fits, key)].line[1]

    def _scale(self, rows: int, cost: PassCost, measured: Optional[float] = None) -> float:
        """How much dearer a real greedy pass of ``rows`` rows (a batch) is than the calibration's (1 to 4): the
        calibration's dummy sentences attend over fewer positions than a batch of real ones (the longest first), and
        what a drafted token adds grows the same way. The factor learned from drafted passes then corrects only what
        is left. Only where a pass feeds the rows' real tokens alone (the C backend's, where a drafted token costs about
        what a greedy row does): on a PyTorch pass, padded to the widest draft whatever the device (on a CPU it
        projects real positions only, and is priced as such), what grows with the sentences' lengths is in the greedy
        pass itself, not in what a drafted token adds. Scaled there, a batch of 32 GEC rows priced its drafts at twice
        their cost (the first batch's drafted passes fitted 0.55-0.58 of the scaled prediction, and later batches,
        which take no greedy pass of their rows, fit none of theirs), drafted 8-9 tokens a row where fixed IAD
        drafted whole sources, and fell to 0.79-0.84 of fixed IAD's speed at B = 16 (0.97 and 0.91 unscaled)."""
        if rows <= 1 or not self._real_tokens_only:  # batch 1: its calibration decodes like the loop
            return 1.0
        if measured is None:  # (the batched choice hands over what it looked up)
            measured = self._batch_greedy_near(rows) or self._run_greedy_near(rows)  # this batch's first
        if measured is None:
            return 1.0
        return min(max(measured / (cost.step_s * min(rows / cost.batch, 1.0)), 1.0), 4.0)

    def _extra_upto(self, cost: PassCost, rows: int, upto: int) -> List[float]:
        """``cost.extra(rows + t, rows + t, base=rows)`` for t = 0 .. at least ``upto``: one list per cost and row
        count, extended only as far as a choice reads it (the batched choice reads it once per candidate token)."""
        rows = max(rows, cost.batch)  # (fewer rows than measured read the measured batch's curves: PassCost.extra)
        table = self._extras.setdefault((id(cost), rows), [])
        while len(table) <= upto:
            t = len(table)
            table.append(cost.extra(rows + t, rows + t, base=rows))
        return table

    def _fused_lists(self, cost: PassCost, rows: int, upto: int) -> Tuple[array, array]:
        """What t tokens fed and what t rows projected add to a fused pass of ``rows`` rows, t = 0 .. at least ``upto``
        (:meth:`_padded_lists` at the measured batch where ``rows`` is fewer: their sum is :meth:`_extra_upto`'s)."""
        rows = max(rows, cost.batch)
        return self._padded_lists(cost, rows, upto, rows + upto)

    def _fused_tables(self, cost: PassCost, rows: int, upto: int) -> Tuple[array, array, array]:
        """What a CPU's fused choice reads, as far as ``upto`` at least: :meth:`_fused_lists` and the least one more
        token's feeding adds from t on (the reading's stop: its projection may not be made). Made at once as far as a
        choice of the measured batch's rows can read (every row's every position: tables made again each time a
        choice read further took 2-3 ms a decode at B = 8 to 32 on the C backend, 0.3-0.5 % of it)."""
        fed, projected = self._fused_lists(cost, rows, max(upto, max(rows, cost.batch) * self.horizon + 2))
        return fed, projected, self._least_steps(cost, rows, fed, "least fed")

    def _least_steps(self, cost: PassCost, rows: int, extra: Sequence[float], kind: str = "least") -> array:
        """For each t of ``extra`` (:meth:`_extra_upto`, or the fed tokens' list of :meth:`_fused_lists`: ``kind``
        keeps them apart), the least that one more token adds from t on: the smallest step of the table from t, and
        past its end the least slope of the measured pass (:meth:`_min_marginal`), which no step of its interpolation
        is below. Kept per table and least slope, so shared by the row counts that read one table (fewer rows than the
        measured batch read its tables), and made again when the table grew: made for each row count, in a Python
        loop, they took half the policy's time at B = 32 on the C backend (0.1-0.3 ms each time)."""
        low = self._min_marginal(cost, rows)
        key = (kind, id(cost), max(rows, cost.batch), low)
        have = self._extras.get(key)
        if have is None or len(have) != len(extra):
            if extra:  # (each the least of its table's steps from t on, and of low; the last entry low)
                steps = np.diff(np.asarray(extra, dtype=float))
                have = _doubles(np.append(np.minimum(np.minimum.accumulate(steps[::-1])[::-1], low), low))
            else:
                have = array("d")
            self._extras[key] = have
        return have

    def _padded_extra(self, cost: PassCost, rows: int, t: int, projected: int) -> float:
        """``cost.extra(rows + t, projected, base=rows)`` from two tables (what the fed tokens add and what the projected
        rows add are separate terms), each extended only as far as a choice reads it: the batched choice reads one per
        candidate token, and four interpolations each cost a padded choice 0.1-0.2 ms at B = 4."""
        fed, proj = self._padded_lists(cost, rows, t, projected)
        return fed[t] + proj[projected - rows]

    def _padded_lists(self, cost: PassCost, rows: int, t: int, projected: int) -> Tuple[array, array]:
        """The two tables of :meth:`_padded_extra` (by fed tokens past ``rows``, by projected rows past ``rows``),
        extended to at least ``t`` and ``projected``, and to twice their length at least (a table is read as far as a
        choice reads, and the lists made from it -- :meth:`_least_steps` -- are made again each time it grows)."""
        origin = rows + max(cost.batch - rows, 0)
        return (self._rise_table(("fed", id(cost), rows), cost.fed, cost.pass_s, origin, t),
                self._rise_table(("projected", id(cost), rows), cost.rows, cost.rows_s, origin, projected - rows))

    def _rise_table(self, key: tuple, xs: Sequence[float], ys: Sequence[float], origin: int, upto: int) -> array:
        """:func:`_rises` from ``origin`` kept under ``key``, extended to at least ``upto`` and twice its length."""
        table = self._extras.get(key)
        if table is None:
            table = self._extras[key] = array("d")
        if len(table) <= upto:
            table.extend(_rises(xs, ys, origin, len(table), max(upto, 2 * len(table)) + 1))
        return table

    def _padded_tables(self, cost: PassCost, rows: int, t: int, projected: int) -> Tuple[np.ndarray, np.ndarray]:
        """:meth:`_padded_lists` as arrays."""
        key = ("arrays", id(cost), rows)
        have = self._extras.get(key)
        if have is None or have[0].size <= t or have[1].size <= projected - rows:
            fed, proj = self._padded_lists(cost, rows, t, projected)
            have = self._extras[key] = (np.asarray(fed), np.asarray(proj))
        return have

    def _min_marginal(self, cost: PassCost, rows: int) -> float:
        """The least that one more drafted token adds to a pass of ``rows`` rows or more: the smallest slope of the
        measured pass above ``rows``, its feeding alone -- the exact rule projects a row's positions past its first
        chunk only where the chunk's drafts were all accepted (kept per cost and row count)."""
        key = ("marginal", id(cost), rows)
        if key not in self._extras:
            xs, ys = cost.fed, cost.pass_s
            slopes = [max((ys[i + 1] - ys[i]) / (xs[i + 1] - xs[i]), 0.0) for i in range(len(xs) - 1)
                      if xs[i + 1] > rows and xs[i + 1] > xs[i]]
            self._extras[key] = [min(slopes) if slopes else 0.0]
        return self._extras[key][0]

    @staticmethod
    def _projected_rows(drafted: int, accepted: int) -> int:
        """Positions past its first the exact rule projects on a CPU for a row that drafted ``drafted`` tokens and had
        ``accepted`` of them accepted: chunks of 8, 16, 32 ... positions, each only where every draft of the chunks
        before it was accepted (acceptance.ExactRule.accept_batch)."""
        total, start = min(_CHUNK, drafted + 1), _CHUNK
        while drafted >= start and accepted >= start:
            end = 2 * start + _CHUNK  # (a chunk starting at s holds s + 8 positions)
            total += min(end, drafted + 1) - start
            start = end
        return total - 1

    def _projected(self, drafted: Sequence[int]) -> int:
        """Rows an exact pass projects for these drafts (at most: a rejection stops the chunks): each row's real
        positions on a CPU or the fast backend, else the padded batch's first 8 positions and each row's past them."""
        if self._rows_fused:
            return len(drafted) + sum(drafted)
        late = sum(max(k + 1 - _CHUNK, 0) for k in drafted)
        return len(drafted) * min(max(drafted) + 1, _CHUNK) + late
