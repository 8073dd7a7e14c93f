"""The batched choice: every row's draft length for one pass over all rows (positions ranked by value, the pass's
cost read as they are taken), what drafted batch passes gave against their promise, and a batch's held "no draft"."""
from __future__ import annotations

import time
from functools import partial
from typing import List, Optional, Sequence, Tuple

import numpy as np

from . import native_choice
from .batch_one import _STANDING
from .counts import wait_steps
from .measured_costs import _nearest
from .pass_cost import _CHUNK, PassCost

# a padded batch's choice is made in numpy where about this many positions would be read (CostAwarePolicy._depth)
_MANY_POSITIONS = 96
# a drafted batch pass that gave at least this share of its promise lets later choices bet twice as much a row
_BET_KEPT = 0.9
# what drafted passes realised of their promise is judged over sums that fade by this factor a pass (_judge)
_JUDGED_FADE = 0.85
# a batched choice's time per position read is measured on choices that read at least this many (where its setup is a
# small share of it)
_READ_AT_LEAST = 32
# a drafted batch pass that took this many times what its choice promised is a stall of the machine until the next
# judged pass is as slow (BatchedChoice._judge_batch_pass)
_STALLED = 3.0


def _counted(states) -> bool:
    """Whether any of these rows has counts of its own (a sentence that has drafted)."""
    return any(st.extra.get("policy_counts") is not None for st in states)


class BatchedChoice:
    """:class:`~fastdec.engine.policy.CostAwarePolicy` in batches (its attributes are made in
    ``CostAwarePolicy.__init__``)."""

    def new_batch(self) -> None:
        """A new batch starts (:meth:`prepare` calls this): what a greedy pass costs in it is not known yet, and its
        drafted passes wait for one (:meth:`observe_pass`); a "no draft" held over from the last batch is made again
        for the new rows where it came from the last rows' own counts, else it holds on (it was made for rows like
        these, from the input's rates: GAD's batches at B = 32 on the fast backend made the same "no draft" at 32, 16,
        6, 3 and 1 rows in every batch, at 0.1-0.25 ms a choice). Batch-1 iterations still waiting to be counted (a
        batch of one sentence runs the batch-1 loop) are counted first, so that none is judged against a batch's
        choice. (In C where the compiled choices are at hand: ``native/choice.c``'s ``new_batch``.)"""
        native = self._native
        if native is not None:
            native.new_batch(self, _JUDGED_FADE)
            return
        if self._waiting_iterations:
            self._flush_iterations()
        self._relax_judged()
        self._relax_fits()
        self._batch_greedy, self._pending = {}, {}
        if self._batch_hold_len or self.batch_hold:
            self._end_batch_hold()
        if self._batch_skips:
            self._batch_skips = {k: held for k, held in self._batch_skips.items() if not held[0][2]}

    def _relax_judged(self) -> None:
        """At a new batch what drafted passes realised moves ``1 - _JUDGED_FADE`` of the way back to their promise:
        a row count that stopped drafting is judged by no new pass, and one pass that gave 0.5 of its promise (the
        first drafted pass of 4 rows on the fast backend) kept every later batch of 4 greedy, at 0.97x greedy where
        fixed IAD was at 1.18x. A row count whose drafts do not pay drafts again a few batches later, judged afresh."""
        f = _JUDGED_FADE  # (without the compiled choices: with them, native/choice.c's new_batch does this)
        for key, (got, expected, seconds, promised_s) in list(self._judged.items()):
            self._store_judged(key, (expected - f * (expected - got), expected, promised_s + f * (seconds - promised_s),
                                     promised_s))

    def _relax_fits(self) -> None:
        """At a new batch each row class's fit of what drafts add (:meth:`_fit_batch`) moves ``1 - _JUDGED_FADE`` of
        the way back to the calibration (:meth:`_ExtraFit.relax`), as what drafted passes realised moves back to their
        promise: a fit that a few passes of the first batch set at 1.48 times the calibration's price (B = 16 on the C
        backend; 1.0-1.1 in other runs) kept the later batches from drafting (223 drafted iterations of 5,029), and no
        drafted pass came to move it back. (Without the compiled choices: with them, native/choice.c's new_batch does
        this.)"""
        for fit in self._batch_fits.values():
            fit.relax(_JUDGED_FADE)

    def _store_judged(self, key: int, sums: tuple) -> None:
        """Keep a row class's judged sums ``(tokens got, tokens expected, seconds spent, seconds promised)`` and the
        share of their promise they realised (what :meth:`_bar` reads)."""
        got, expected, seconds, promised_s = self._judged[key] = sums
        self._realized[key] = (got / expected) * (promised_s / seconds)

    def _judge_batch_pass(self, rows: int, seconds: float, drafted: int = 0) -> None:
        """Judge a drafted batch pass of ``rows`` rows that took ``seconds`` against what its choice promised (when a
        choice of as many rows promised one) and start counting the next. A pass of ``drafted`` tokens that gave
        at least ``_BET_KEPT`` of its promise lets the next choices bet twice as many a row (:meth:`_first_bet`). A
        pass that took more than ``_STALLED`` times the seconds promised is set aside where the pass judged before it
        was not that slow too (``_judge_held``): one stall of the machine (20 ms inside one drafted pass of a batch of
        16 on the C backend, where an iteration was promised 1-3 ms) left the row class at 0.84-0.89 of its promise
        after 16 batches of relaxing, under the bar for the rest of the input."""
        promised = self._promised
        if promised is not None and promised[0] == rows:
            got, spent = rows + self._iter_accepted, seconds + self._iter_s + promised[2]
            promised_s = promised[3] / promised[1]
            slow = spent > _STALLED * promised_s
            if slow and not self._judge_held:
                self._judge_held = True
            else:
                self._judge_held = slow
                ratio = got / spent / promised[1]
                self._judge(rows, got, spent, promised[3], promised_s)
                if ratio >= _BET_KEPT:
                    self._bet_per_row = max(self._bet_per_row, 2 * drafted / rows)
        self._iter_s, self._iter_accepted, self._promised = 0.0, 0, None

    def _first_bet(self, rows: int):
        """The most draft tokens a batch of ``rows`` rows may be asked for (more while what they add stays under
        :meth:`_bet_cap`): a probe's worth (``probe_rows`` times ``probe_len``), or twice as many a row as the largest
        drafted pass that kept its promise drafted, whatever its rows (what the bet guards against is acceptance
        overrated past what was seen, not a pass's cost, which the choice prices). What a wrong estimate costs is then
        one pass about twice as large a row as the best one judged: priced by the calibration alone, the fast
        backend's first batch drafted 160 tokens at B = 32, a pass of 6-7 greedy ones for 4.4-4.5 greedy passes'
        tokens; let loose after one good probe of 32 tokens, its first batch at B = 8 drafted all 509 of its rows'
        positions worth 1 % or more (a sentence's first copy, accepted early, was taken to be accepted to its end) and
        took 10-25 % longer than greedy's."""
        return max(self.probe_rows * self.probe_len, int(self._bet_per_row * rows))

    def _bet_cap(self, step: float) -> float:
        """What a first bet may add to a pass beyond its ``_first_bet`` tokens: a quarter of a greedy pass by the
        prediction. Even 4 times off (the fast backend's first batch at B = 32: 6-7 greedy passes where 1.5 were
        predicted) that loses about one greedy pass, and on a GPU, where a padded pass of every row's whole draft costs
        1.2 greedy passes at B = 64, the first batch need not draft 32 tokens at a time (it took 37 passes where fixed
        IAD took 31)."""
        return 0.25 * step

    def _judge(self, rows: int, got: float, seconds: float, expected: float, promised_s: float) -> None:
        """A drafted pass of ``rows`` rows gave ``got`` tokens in ``seconds`` where its choice expected ``expected``
        in ``promised_s``: what drafted passes of about as many rows realise of their promise is the tokens per
        second of the last passes together (sums that fade by ``_JUDGED_FADE`` a pass, from one pass that kept its
        promise) over what they promised together. A pass's own ratio is mostly its acceptance's luck: judged by a
        running mean of them (0.3 a pass), two drafts rejected early at B = 2 on the fast backend (0.3-0.5 of their
        promise) raised the bar by half, and the row count drafted no more for the rest of the input (1.7 tokens per
        iteration against 6-7, one run in three or four)."""
        key = rows.bit_length()
        sums = self._judged.get(key) or (expected, expected, promised_s, promised_s)
        f = _JUDGED_FADE
        self._store_judged(key, (f * sums[0] + got, f * sums[1] + expected, f * sums[2] + seconds,
                                 f * sums[3] + promised_s))

    def _bar(self, rows: int, step: float) -> float:
        """The tokens per second a batched draft must promise: ``margin`` times a greedy pass's, over what drafted
        passes of about as many rows realised of their promise."""
        seen, key = self._realized, rows.bit_length()
        realized = seen.get(key) or (seen[_nearest(seen, key)] if seen else 1.0)
        return self.margin * rows / (step * min(realized, 1.0))

    def _probe_rows(self, limits: Sequence[int], most: Optional[int] = None, unbounded: bool = False) -> List[int]:
        """A probe asks a few rows (``most``, default ``probe_rows``) for a probe's length each: a draft of every row
        of a batch can cost many greedy steps, and every row asked is a drafter start. It asks the last rows: a batch
        is cut longest first, so those are its shortest sentences, which can wait out a pass where their draft was
        accepted in part (the batched loop's ``_waiting_rows``), and the batch's rows are of equal length again. (A
        probe on the longest row, which cannot wait without making the batch longer, left GAD's first batch of 16 on
        this CPU with rows of unequal lengths to its end: 92 against 75 ms of verifier time.)"""
        out = [0] * len(limits)
        asked, most = 0, self.probe_rows if most is None else most
        for r in range(len(limits) - 1, -1, -1):
            lim = limits[r]
            if lim > 0:
                out[r] = lim if unbounded else min(lim, self.probe_len)
                asked += 1
                if asked == most:
                    break
        return out

    @staticmethod
    def _tokens_left(state) -> int:
        """About how many tokens a sentence has left to decode: its source's length less those decoded (an output taken
        to be as long as its source; one longer than that is charged more of a drafter start, not less)."""
        return max(len(state.src_list) + 1 - len(state.prefix), 1)

    def _choose_padded(self, states, limits: Sequence[int], cost: PassCost, B: int, fixed: float, factor: float,
                       step: float) -> Optional[Tuple[List[int], float]]:
        """:meth:`choose_batch`'s choice for a padded pass (a GPU), every candidate position at once: positions ranked
        as :meth:`_ranked` ranks them, and the number of them that maximises expected tokens per second, where the
        t best cost the drafter of the rows they ask, the pass's extra tokens, the projected rows (exact acceptance
        projects the padded batch's first 8 positions of every row at once, then one row per draft token past the
        8th) and the padding to the widest draft: ``(draft lengths, the tokens per second they promise, whether they
        took about every position ranked, the tokens they expect)``, None where no draft clears :meth:`_bar`."""
        H = max(limits, default=0)  # (limits are at most the horizon)
        if H <= 0:
            return None
        lim = np.asarray(limits, dtype=np.int64)
        # a row without counts of its own drafts as a sentence's first draft: the products of q_first (computed once
        # for every such row: each numpy call here costs microseconds, the arrays are small)
        value = np.tile(np.cumprod(np.asarray(self.q_first[1: H + 1], dtype=float)), (B, 1))
        counted = [r for r, st in enumerate(states) if st.extra.get("policy_counts") is not None]
        if counted:
            w, q = self.weight, np.asarray(self.q[1: H + 1], dtype=float)
            got = [states[r].extra["policy_counts"] for r in counted]
            reach = np.array([c[0][1: H + 1] for c in got], dtype=np.int64)
            acc = np.array([c[1][1: H + 1] for c in got], dtype=np.int64)
            # q_m for each row's sentence, as _ranked has it
            value[counted] = np.cumprod(np.where(reach > 0, (acc + w * q) / (reach + w), q), axis=1)
        # rates are at most 1, so a row's values only fall and what is kept is a prefix of its positions
        keep = (np.arange(1, H + 1) <= lim[:, None]) & (value >= 0.01)
        rows, pos = np.nonzero(keep)
        if rows.size == 0:
            return None
        value = value[rows, pos]
        # the best value first; ties: the lower row, then the lower position (nonzero's order, which a stable sort keeps)
        order = np.argsort(-value, kind="stable")
        value, rows, pos = value[order], rows[order], pos[order] + 1
        t = np.arange(1, rows.size + 1)
        expected = B + np.cumsum(value)
        # a row's first position asks the drafter for it: its best, so it comes before the row's others
        first = pos == 1
        fresh = np.array([not st.extra.get("drafter_started") for st in states], dtype=bool)
        new_first = first & fresh[rows]
        asked, asked_new = np.cumsum(first), np.cumsum(new_first)
        drafter_by = np.array([self.drafter_cost(k) for k in range(B + 1)])
        start_by = np.array([self.start_cost(k) for k in range(B + 1)])
        # a start is paid once a sentence and serves its later drafts too: an iteration is charged the share of it that
        # the fresh rows' expected tokens make of the tokens they have left (as choose_batch charges it)
        new_tokens = asked_new + np.cumsum(np.where(fresh[rows], value, 0.0))
        left = np.array([self._tokens_left(st) for st in states], dtype=float)
        new_left = np.cumsum(np.where(new_first, left[rows], 0.0))
        start_share = np.minimum(new_tokens / np.maximum(new_left, 1.0), 1.0)
        width = np.maximum.accumulate(pos) + 1
        late = np.cumsum(pos >= _CHUNK)
        fed_extra, projected_extra = self._padded_tables(cost, B, int(t[-1]), int(B * _CHUNK + late[-1]))
        added = fed_extra[t] + projected_extra[B * np.minimum(width, _CHUNK) + late - B]
        if cost.pad_s:
            added = added + cost.pad_s * (B * (width - 1) - t)
        per_s = expected / (step + fixed + drafter_by[asked] + start_by[asked_new] * start_share + factor * added)
        most = self._first_bet(B)
        if most < t.size:  # (a first bet: beyond its tokens, positions while what they add stays under the cap)
            over = np.flatnonzero(factor * added > self._bet_cap(step))
            most = max(most, int(over[0]) if over.size else t.size)
        best = int(np.argmax(per_s[:most]))
        if not per_s[best] > self._bar(B, step):
            return None
        # (where the deepest positions, worth a few per cent each, did not pay for the pass's last few microseconds,
        # the choice still took about everything)
        took_all = expected[best] - B >= 0.9 * (expected[-1] - B)
        return np.bincount(rows[: best + 1], minlength=B).tolist(), float(per_s[best]), took_all, float(expected[best])

    def _hold_batch(self, rows: int, step_s: float, cost: float, key: int) -> None:
        """A batch of ``rows`` rows holds its "no draft" (kept under ``key``): the loop may take the greedy passes left
        before the probe is due without asking (:meth:`take_held_step`), each counted as a reuse of the held choice."""
        steps = self._steps_before_probe(step_s, cost)
        self.batch_hold = self._batch_hold_len = steps
        self._batch_hold_rows, self._batch_hold_step, self._batch_hold_key = rows, step_s, key

    def _end_batch_hold(self) -> None:
        """End a batched hold: the steps taken count as reuses of the held choice, and those it counted towards the
        next probe and did not take (it ended early) are given back."""
        key = self._batch_hold_key
        taken, held = self._batch_hold_len - self.batch_hold, self._batch_skips.get(key)
        if taken and held is not None:
            self._batch_skips[key] = (held[0], held[1] + taken, held[2], held[3])
        if self.batch_hold:
            self._give_back_skipped(self.batch_hold * self._batch_hold_step)
        self.batch_hold = self._batch_hold_len = 0

    def take_held_step(self, rows: int) -> bool:
        """Whether the batched loop's next pass, over ``rows`` rows, is a greedy one the held "no draft" covers (then
        counted): the loop neither asks :meth:`choose_batch` nor does per-row work for it, so a batch whose drafter
        does not pay (a batch-32 greedy pass of 0.4 ms on the fast backend) pays the policy almost nothing. A hold
        ends where half its rows have left (fewer rows make a pass cheaper per row, so a draft may pay again)."""
        if self.batch_hold and rows > self._batch_hold_rows // 2:
            self.batch_hold -= 1
            return True
        if self._batch_hold_len:
            self._end_batch_hold()
        return False

    def lend_hold(self) -> tuple:
        """The greedy passes left to the held "no draft" and the row count they need more than, ``(steps, rows)``,
        lent to the batched loop after a held step: it takes them itself (no call a pass: a step's call, read cold
        after a pass, cost 5-6 us beside a PyTorch pass of 0.8 ms at B = 2) and gives back what it did not take
        (:meth:`return_hold`) before it asks again. ``(0, 0)``: nothing to lend, or a :meth:`take_held_step` of a
        subclass's own, which sees every step."""
        steps = self.batch_hold
        if not steps or type(self).take_held_step is not BatchedChoice.take_held_step:
            return 0, 0
        self.batch_hold = 0
        return steps, self._batch_hold_rows // 2

    def return_hold(self, steps: int) -> None:
        """The passes of a lent hold the loop did not take (:meth:`lend_hold`): the hold is where
        :meth:`take_held_step` would have left it."""
        self.batch_hold = steps

    def observe_pass(self, seconds: float, drafted: Sequence[int]) -> None:
        """:meth:`MeasuredCosts.observe_pass`; a drafted fused pass of two rows or more is observed in C where the
        compiled choices are at hand (``native/choice.c``'s ``observe_fused``: the judgement against the choice's
        promise, the prediction and the fit, the same numbers), the rest (and the rest of such passes, where the C
        hands back: the tables of its rows not made for the cost or too short) in Python."""
        native = self._native
        if native is not None and native.observe_fused(self, seconds, drafted if type(drafted) is list else
                                                       list(drafted), _JUDGED_FADE, _BET_KEPT):
            return
        super().observe_pass(seconds, drafted)

    def batch_calls(self):
        """The batched loop's calls, ``(start, step, observe)``: ``start(verifier, B)``, :meth:`prepare` for a batch of
        ``B`` rows; ``step(states, verifier)``, None where the held "no draft" covers the next pass
        (:meth:`take_held_step`), else the rows' draft lengths (:meth:`choose_batch`); ``observe``,
        :meth:`observe_batch_pass`. Where the compiled choices are at hand (and those methods are not overridden) C
        functions that make their common case in C and call the methods for the rest (``native/choice.c``'s
        ``start_batch``, ``batch_step`` and ``observe_batch``): a Python method's frame and first lines, read cold
        after a pass, cost 4-6 us of a choice at B = 2 on the C backend. Made once a policy (a snapshot leaves them
        out)."""
        native, cls, made = self._native, type(self), self._calls
        if made is not None and made[0] is native and made[1] is cls:
            return made[2]
        own = (cls.take_held_step is BatchedChoice.take_held_step and cls.choose_batch is BatchedChoice.choose_batch)
        calls = (partial(native.start_batch, self, _JUDGED_FADE) if native is not None and self._own_prepare()
                 else self.prepare,
                 partial(native.batch_step, self, _READ_AT_LEAST, cls._observe_read is BatchedChoice._observe_read)
                 if native is not None and own else self._step,
                 partial(native.observe_batch, self, _JUDGED_FADE, _BET_KEPT)
                 if native is not None and cls.observe_batch_pass is BatchedChoice.observe_batch_pass
                 else self.observe_batch_pass)
        self._calls = (native, cls, calls)
        return calls

    def _step(self, states, verifier) -> Optional[List[int]]:
        """:meth:`batch_calls`'s ``step`` by the methods."""
        return None if self.take_held_step(len(states)) else self.choose_batch(states, verifier)

    def observe_batch_pass(self, states, asked: Sequence[int], seconds: Optional[float], drafted: Sequence[int],
                           start_s: Optional[float] = None, start_rows: int = 0, drafter_s: Optional[float] = None,
                           drafter_rows: int = 0) -> None:
        """A drafted batch iteration after its pass: the drafter's start for ``start_rows`` new rows
        (:meth:`observe_start`) and its call for ``drafter_rows`` (:meth:`observe_drafter`; None: none), the rows
        counted (:meth:`observe_rows`) and, unless ``seconds`` is None (a batch's first pass, which also allocates its
        caches), the pass observed (:meth:`observe_pass`). In one C call where the compiled choices are at hand
        (``native/choice.c``'s ``observe_batch``: the drafter's costs, the counting, a batch's last row's pass and a
        drafted fused pass of two rows or more, the same numbers), the pass in Python where the C hands it back
        (:meth:`_observe_handed_back`)."""
        native = self._native
        if native is not None:
            native.observe_batch(self, _JUDGED_FADE, _BET_KEPT, states if type(states) is list else list(states),
                                 asked if type(asked) is list else list(asked), seconds,
                                 drafted if type(drafted) is list else list(drafted), start_s, start_rows, drafter_s,
                                 drafter_rows)
            return
        if start_s is not None:
            self.observe_start(start_s, start_rows)
        if drafter_s is not None:
            self.observe_drafter(drafter_s, drafter_rows)
        self.observe_rows(states, asked)
        if seconds is not None:
            super().observe_pass(seconds, drafted)

    def _observe_handed_back(self, seconds: float, drafted: list) -> None:
        """A pass ``observe_batch`` handed back, observed by :meth:`MeasuredCosts.observe_pass` (no drafts, a padded
        pass, tables not made for the cost or too short)."""
        super().observe_pass(seconds, drafted)

    def _observe_read(self, seconds: float) -> None:
        """A batched choice on a fused pass took ``seconds`` per position it read (its setup included: it read at least
        ``_READ_AT_LEAST``)."""
        self._read_s = seconds if not self._read_s else 0.7 * self._read_s + 0.3 * seconds

    def _limits(self, states, cost: PassCost) -> List[int]:
        """Each row's draft positions at most: its ``max_draft``, at most the horizon, and on a padded pass of two rows
        or more at most what the widest pass of ``cost`` (the batch's calibration) fed a row, less the row's own token.
        Past it a padded pass is priced by a straight line out, and it costs more than that line says: with padded
        attention (PyTorch on this CPU before its attention left padding out) a padding position cost 10-12 us beside
        the GEC batch's 50-90-token sources, 6.2 us priced, and up to the horizon cost-aware IAD at B = 32 ran at
        0.89-0.92 of fixed IAD capped at 8 tokens (its first batch drafted rows 30-64 tokens wide beside rows of 1-14),
        capped here at 0.94-0.99. With the attention in blocks the cap still pays: 1.425x greedy capped against 1.386x
        up to the horizon (one run, the two interleaved batch by batch). (The C backend feeds real tokens only, and a
        GPU's calibration measures the horizon's width.)"""
        most = self.horizon
        if len(states) > 1 and not self._real_tokens_only:
            most = min(most, max(-(-cost.fed[-1] // cost.batch) - 1, 1))
        return [min(st.max_draft, most) for st in states]

    def _stand(self, states, n: Sequence[int], rows: int) -> None:
        """A padded choice of ``n`` that took every position worth 1 % or more stands (:meth:`choose_batch`)."""
        self._standing = (rows, _STANDING)
        for st, k in zip(states, n):
            st.extra["policy_standing"] = k > 0

    def _no_draft(self, states, limits: Sequence[int], cost: PassCost, fixed: float, factor: float, step: float,
                  key: int) -> List[int]:
        """:meth:`choose_batch` where no draft pays: a probe where one is due, else "no draft", held (under ``key``)
        while nothing it depends on changes. (A method, not a closure in the choice: a closure's variables are cells,
        read more slowly by every line of the choice.)"""
        B = len(states)
        own = _counted(states)
        if own and self._rows_wait(states, limits, cost, fixed, factor, step, key):
            return [0] * B
        probe_n = self._probe_rows(limits)  # (made only here: most choices draft)
        probed = sum(1 for n in probe_n if n)
        if not probed:
            return [0] * B
        probe_cost = self._probe_cost(fixed + factor * cost.extra(B + sum(probe_n), self._projected(probe_n), base=B),
                                      probed)
        if self._probe_due(step, probe_cost):
            return probe_n
        self._batch_skips[key] = ((self._version, B, own), 0, step, probe_cost)
        self._hold_batch(B, step, probe_cost, key)
        return [0] * B

    def choose_batch(self, states, verifier) -> List[int]:
        """The draft length of every row of a batch (one pass verifies them all)."""
        B = len(states)
        self._promised, self._iter_s, self._iter_accepted = None, 0.0, 0  # (a first pass is not observed)
        if self._batch_hold_len:  # a hold ran out, or was asked inside (not by the loop, which takes its steps)
            self._end_batch_hold()
        key = B.bit_length()
        held = None
        # (made at up to twice as many rows: of this row class or the next)
        for k in (key, key + 1) if self._batch_skips else ():
            held = self._batch_skips.get(k)
            if (held is not None and held[0][1] >= B > held[0][1] // 2 and held[1] < 64
                    and (held[0][0] == self._version or not (held[0][2] or _counted(states)))):
                key = k
                break
            held = None
        if held is not None:
            # the last "no draft" holds (no count, cost or start changed since, and at least half its rows are left;
            # one made for rows with no counts of their own holds for such rows while counts and costs move, up to its
            # 64 uses or its probe: a batch's first choice at B = 8 on the fast backend, a close call each time, read
            # 65 positions in 0.1 ms to say "no draft" again in every batch): only the probe's budget is checked, so a
            # batch that never drafts pays the policy almost nothing per iteration (a full choice costs about a tenth
            # of a batch-32 pass on the fast backend)
            if not self._probe_due(held[2], held[3]):
                self._batch_skips[key] = (held[0], held[1] + 1, held[2], held[3])
                self._hold_batch(B, held[2], held[3], key)
                return [0] * B
            del self._batch_skips[key]
            self._last = self.batch_cost(verifier, B)
            return self._probe_rows(self._limits(states, self._last))
        t0 = time.perf_counter()  # (a draft is judged with what choosing it cost)
        standing, self._standing = self._standing, None
        cost = self._last = self.batch_cost(verifier, B)
        if standing is not None and standing[1] > 0:
            # the last padded choice took every position worth 1 % or more: no position's cost outweighed its value,
            # and positions past 1 % are left out only to bound what a choice reads. So for a few iterations, in this
            # batch and the next, each row that drafted (and each sentence new since then) drafts as far as it may,
            # as fixed k does, before the choice is made again. On a GPU a padded pass costs about the same whatever
            # it verifies; made every iteration, the choice took 0.2-0.5 ms of the GPU machine's processor, 10-12 % of
            # batched IAD's time, where a pass took 1-2 ms. (Its passes are not judged: it promised nothing.)
            n = [lim if st.extra.get("policy_standing", True) else 0
                 for st, lim in zip(states, self._limits(states, cost))]
            if any(n):
                self._standing = (standing[0], standing[1] - 1)
                self._skipped_s = 0.0
                return n
        if not self.reach[1]:
            # the run's first draft, to learn from, asks one row: what the drafter's start costs is not known yet
            # (GAD's drafter started on four of the longest rows took 2.2 ms, 1.2 % of a batched run on the fast
            # backend)
            return self._probe_rows(self._limits(states, cost), 1)
        # the run's first batch of about this many rows drafts once it has measured a greedy pass of its own (below:
        # None): drafts are priced by how much dearer real passes are than the calibration's. Priced by the
        # calibration alone (dummy sentences of 24 tokens), the fast backend drafted 160 tokens at B = 32 in the first
        # batch at 40 us a token, what a greedy row costs there, where 20 were expected. (Every batch measuring its own
        # first cost two greedy passes a batch: IAD at B = 2 drafted 5.6 tokens per iteration against 13.3.)
        module = self._native if self._rows_fused else None
        if module is not None:
            # (the terms below and the choice, in one C call: made in Python, the terms took 20-25 us of a 35 us
            # choice at B = 2 on the C backend)
            # (a chosen draft's promise and time per position read are kept in C too: only its lengths come back)
            if not isinstance(states, list):
                states = list(states)
            got = module.choose_priced(self, states, cost, B, t0, _READ_AT_LEAST)
            return got if type(got) is list else self._priced_in_c(states, cost, B, got, t0, key)
        limits = self._limits(states, cost)
        measured = self._batch_greedy_near(B)
        if measured is None:
            measured = self._run_greedy_near(B)
        if measured is None:
            return [0] * B
        fixed, factor = self.batch_line(B)
        factor *= self._scale(B, cost, measured)
        step = self.greedy_pass_s(B, cost)
        chosen = self._priced_choice(states, limits, cost, B, fixed, factor, step, t0)
        return self._settle(states, limits, cost, B, fixed, factor, step, chosen, t0, key)

    def _priced_in_c(self, states: list, cost: PassCost, B: int, got: tuple, t0: float, key: int) -> List[int]:
        """:meth:`choose_batch` after a C choice (``native_choice.choose_priced``'s answer ``got``, started at ``t0``)
        that chose no draft, or could not choose yet (its tables to make first, or no greedy pass measured near
        ``B`` rows: then no draft)."""
        if got[0] < 0:  # (the helper makes the tables and asks again)
            got = native_choice.choose_priced(self._native, self, states, cost, B, t0, _READ_AT_LEAST)
            if got is None:
                return [0] * B
            if type(got) is list:
                return got
        best_t, n, rate, expected, read, limits, (fixed, factor, step, *_) = got
        if read >= _READ_AT_LEAST:
            self._observe_read((time.perf_counter() - t0) / read)
        chosen = (n, rate, False, expected) if best_t else None
        return self._settle(states, limits, cost, B, fixed, factor, step, chosen, t0, key)

    def _settle(self, states, limits: Sequence[int], cost: PassCost, B: int, fixed: float, factor: float, step: float,
                chosen, t0: float, key: int) -> List[int]:
        """:meth:`choose_batch` once its priced choice is made (``chosen``: :meth:`_priced_choice`'s answer): a bet
        on a probe's rows where the bet bounded a choice that found no draft, a "no draft" (:meth:`_no_draft`), or the
        draft and its promise."""
        shaped = False
        if chosen is None and B > self.probe_rows and self._first_bet(B) < sum(limits):
            # the bet bounded the choice (and no draft paid within it): the bet again on a probe's rows alone, each as
            # deep as it pays. A bet's tokens taken best value first go to every row's first positions, and each row
            # asked pays its drafter: at B = 32 on the C backend a first bet of 32 tokens paid for 32 drafter calls
            # and never cleared the bar, the batch's "no draft" was held and carried to later batches, and probes
            # (not judged) never let the bet grow; the same tokens on 4 rows can pay, and a pass that keeps its
            # promise doubles the bet (_judge_batch_pass)
            # (timed from its own start: what it reads a position is not charged the first choice's time)
            chosen = self._priced_choice(states, self._probe_rows(limits, unbounded=True), cost, B, fixed, factor,
                                         step, time.perf_counter())
            shaped = True
        if chosen is None:
            # (which holds the choice while nothing it depends on changes)
            return self._no_draft(states, limits, cost, fixed, factor, step, key)
        self._skipped_s = 0.0
        n, rate, took_all, expected = chosen
        if took_all and not shaped:  # (a bet on a probe's rows is judged: it does not stand, unjudged, for the batch)
            self._stand(states, n, B)
        self._promised = (B, rate, time.perf_counter() - t0, expected)
        return n

    def _rows_wait(self, states, limits: Sequence[int], cost: PassCost, fixed: float, factor: float, step: float,
                   key: int) -> bool:
        """:meth:`_no_draft` where rows have counts of their own: whether those counts are why no draft pays -- the
        same choice made as if those rows had none (a sentence's first draft, by the input's first drafts) drafts.
        Then the batch waits as a batch-1 sentence does (a batch of two whose rows both stopped, a batch's last row):
        each such row's first-position counts halve, and the batch takes 1, 2, 4 .. 16 greedy passes (by the row that
        waited least: :func:`~.counts.wait_steps`) before it chooses again, no "no draft" kept to reuse and no probe's
        budget spent. Else (the input's drafts do not pay either: GAD's, Blockwise's on a CPU) False: the "no draft"
        is held as before."""
        counted = [(st.extra, st.extra.pop("policy_counts")) for st in states
                   if st.extra.get("policy_counts") is not None]
        try:
            fresh = self._priced_choice(states, limits, cost, len(states), fixed, factor, step, time.perf_counter())
        finally:
            for extra, sent in counted:
                extra["policy_counts"] = sent
        if fresh is None:
            return False
        waits = min(extra.get("policy_waits", 0) for extra, _ in counted)
        for extra, sent in counted:
            self._forget_first(extra, sent, extra.get("policy_waits", 0))
        # (greedy passes after this one; none counted towards a probe, so none given back when the hold ends early)
        self.batch_hold = self._batch_hold_len = wait_steps(waits) - 1
        self._batch_hold_rows, self._batch_hold_step, self._batch_hold_key = len(states), 0.0, key
        return True

    def _priced_choice(self, states, limits: Sequence[int], cost: PassCost, B: int, fixed: float, factor: float,
                       step: float, t0: float) -> Optional[Tuple[List[int], float, bool, float]]:
        """:meth:`choose_batch`'s priced choice of draft lengths up to ``limits``, started at ``t0`` (what it takes a
        position read is measured from there): ``(draft lengths, the tokens per second they promise, whether they took
        every position worth 1 % or more on a padded pass, the tokens they expect)``, None where no draft clears the
        bar."""
        fused = self._rows_fused
        depth = 0 if fused else self._depth()  # (a fused CPU pass prices real positions: the loop, at no extra cost)
        if depth and sum(min(lim, depth) for lim in limits) > _MANY_POSITIONS:
            # a padded pass (a GPU) costs about the same whatever it verifies, so where drafts are accepted the choice
            # reads most of every row's positions: the same choice in numpy (the loop below cost 2-12 ms a choice at
            # B = 16-64 there; numpy's calls cost more than the loop where few positions are read)
            return self._choose_padded(states, limits, cost, B, fixed, factor, step)
        # a position adds p tokens and at least the cheapest token's share of the pass: below this value it cannot pay
        # (where a draft token costs what a greedy row does -- a batch on a CPU -- no position can, and nothing is
        # ranked)
        # (with the bar: a draft clears it only where one of its positions does, value over least cost)
        bar = self._bar(B, step)
        floor = factor * self._min_marginal(cost, B) * bar if fused else 0.0
        module = self._native if fused else None
        if module is not None:  # (the same choice, bit for bit: below, a position read cost 2.7 us)
            par = (self.weight, floor, step, fixed, factor, self._read_s, cost.pad_s, self._bet_cap(step), bar)
            best_t, n, best, best_expected, read = native_choice.choose_fused(module, self, states, limits, cost, B,
                                                                              par, self._first_bet(B))
            took_all = False
        else:
            best_t, n, best, best_expected, read, took_all = self._choose_ranked(states, limits, cost, B, fixed, factor,
                                                                                 step, floor)
        if fused and read >= _READ_AT_LEAST:
            self._observe_read((time.perf_counter() - t0) / read)
        if best_t == 0:
            return None
        return n, best, took_all, best_expected

    def _choose_ranked(self, states, limits: Sequence[int], cost: PassCost, B: int, fixed: float, factor: float,
                       step: float, floor: float) -> Tuple[int, List[int], float, float, int, bool]:
        """:meth:`choose_batch`'s choice, positions read best value first (:meth:`_ranked`) while one more can pay:
        ``(positions taken, draft lengths, the tokens per second they promise, the tokens they expect, positions read,
        whether the choice took every position worth 1 % or more on a padded pass)``."""
        fused = self._rows_fused
        # the drafter is asked for (and starts) only the rows that draft: its cost grows as rows join the choice. A start
        # is paid once a sentence and serves its later drafts too: an iteration is charged the share of it that the
        # fresh rows' expected tokens make of the tokens they have left (charged whole, the starts of a batch of long
        # sentences -- IAD's n-gram index, when its start built one: 1.3-1.5 ms for the four longest of 256 GEC
        # sentences, 10-12 ms priced for 32 rows against a 2.8-3.6 ms greedy pass -- kept the longest batch greedy
        # though its copies were accepted)
        asked, asked_new, drafter = set(), 0, fixed
        new_tokens, new_left, start, charged = 0.0, 0, 0.0, 0.0
        best_t, best, best_expected = 0, self._bar(B, step), 0.0
        most = self._first_bet(B)
        expected = float(B)
        # exact acceptance projects (on a CPU) each row's real positions, chunk by chunk, else (a GPU) the padded batch's
        # first 8 positions of every row at once, then only the rows still accepting: the projected rows grow with the
        # widest draft, then one per draft token past the 8th
        width, late = 1, 0
        if fused:
            # what t tokens fed and t rows projected add to the pass (real rows), as far as read, and the least one
            # more token adds from t on (the reading's stop): its feeding (its projection may not be made, below)
            fed_s, rows_s, least = self._fused_tables(cost, B, 16)
            extra = fed_s if len(fed_s) <= len(rows_s) else rows_s  # (the shorter: what both are read as far as)
        else:
            extra = self._extra_upto(cost, B, 16)  # what t draft tokens add to the pass, as far as read
            least = self._least_steps(cost, B, extra)  # the least one more token adds from t on (the reading's stop)
        # on a CPU the exact rule projects a row's positions in chunks of 8, 16, 32 ..., each only where every draft
        # before it was accepted: a position past a row's 8th is charged its projection times the row's value at its
        # chunk's start (the chance that it is projected), and the rows projected are counted in expectation. Charged
        # whole, fixed IAD's whole-source drafts at B = 32 on the C backend cost 39.6 us a drafted token where the
        # cost-aware choice's stopped inside the first chunk at 49.5 us a token (and 0.92 of fixed IAD's speed)
        projected, chunk_at, chunk_p = 0.0, {}, {}
        base, inv_best = step + drafter, 1.0 / best  # (per candidate token: locals only)
        # on a CPU's fused pass a position read costs the choice's own time, about a tenth of what the C backend's pass
        # takes for the token it drafts: counted with it (fast IAD's first batch at B = 16 drafted 959 tokens in one
        # choice and took 16 % longer than greedy's, 4.8 ms of it the policy's)
        read = self._read_s if fused else 0.0
        pad = cost.pad_s  # every row shorter than the widest draft is padded to it
        taken = []  # the rows of the positions read, in order
        took_all = False
        cap = self._bet_cap(step)
        fresh_rows = [not st.extra.get("drafter_started") for st in states]
        for t, (p, r, m) in enumerate(self._ranked(states, limits, floor) if floor < 1.0 else (), 1):
            taken.append(r)
            expected += p
            fresh = fresh_rows[r]
            if t + 1 >= len(extra):
                if fused:
                    fed_s, rows_s, least = self._fused_tables(cost, B, 2 * t + 2)
                    extra = fed_s if len(fed_s) <= len(rows_s) else rows_s
                else:
                    extra = self._extra_upto(cost, B, 2 * t + 2)
                    least = self._least_steps(cost, B, extra)
            if r not in asked:
                asked.add(r)
                if fresh:
                    asked_new += 1
                    new_tokens += 1.0
                    new_left += self._tokens_left(states[r])
                    start = self.start_cost(asked_new)
                drafter = fixed + self.drafter_cost(len(asked))
            if fresh:
                new_tokens += p
                charged = start * min(new_tokens / new_left, 1.0)
            base = step + drafter + charged
            if m >= width:
                width = m + 1
            if fused:
                if m < _CHUNK:
                    projected += 1.0
                else:
                    if m == chunk_at.get(r, _CHUNK):  # (a row's positions are read in order)
                        chunk_p[r], chunk_at[r] = p, 2 * m + _CHUNK
                    projected += chunk_p[r]
                k = int(projected)
                added = fed_s[t] + (rows_s[k] + (projected - k) * (rows_s[k + 1] - rows_s[k]))
            else:
                late += m >= _CHUNK
                added = self._padded_extra(cost, B, t, B * min(width, _CHUNK) + late)
            if pad:
                added += pad * (B * (width - 1) - t)
            if t > most and factor * added > cap:
                break  # a first bet's tokens are spent and this position would take its cost past the cap
            rate = expected / (base + factor * added + t * read)
            if rate > best:
                best_t, best, inv_best, best_expected = t, rate, 1.0 / rate, expected
            elif p * inv_best < factor * (least[t] - pad) + read:
                # the values only fall, and a token costs at least this from here (filling a padding position): the
                # least step of the curve from here on, not the next one's, for a measured curve climbs in steps (the
                # fast backend's int8 layers at B = 2: 65 us a token from 4 to 6 tokens, 10 us past them; stopped at
                # the first steep step, its choices drafted 3 tokens a pass for dozens of passes, each accepted whole)
                break
        else:  # every position worth 1 % or more was read: taken, on a padded pass, the choice stands
            took_all = not fused and best_t == len(taken)
        n = [0] * B
        for r in taken[:best_t]:
            n[r] += 1
        return best_t, n, best, best_expected, len(taken), took_all
