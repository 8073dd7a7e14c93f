"""The batch-1 choice: a sentence's draft length before each iteration, its counting after it, and a held "no draft"
that lets the loop take greedy steps without asking."""
from __future__ import annotations

from typing import Optional

from .counts import wait_steps

# the iterations a padded choice that took every position worth 1 % or more stands for (:meth:`choose_batch`)
_STANDING = 16
_NO_SKIP = (-1, False, 0, 0.0, 0.0)  # CostAwarePolicy._skip where no batch-1 "no draft" is held
_NO_STAND = (0, [0], (0.0, 0.0))  # CostAwarePolicy._first_stands' entry where no batch-1 first choice stands


class BatchOneChoice:
    """:class:`~fastdec.engine.policy.CostAwarePolicy` at batch 1 (its attributes are made in
    ``CostAwarePolicy.__init__``)."""

    def new_sentence(self) -> None:
        """A batch-1 sentence starts (:meth:`prepare` calls this). A held "no draft" (:attr:`hold`, and the choice the
        next iterations would reuse) carries into it unless the new sentence's first draft, by the input's first
        drafts, promises ``resume`` times a greedy step's rate: one sentence whose drafts were rejected at once would
        otherwise keep the next sentences greedy (up to 63 steps each time the choice is reused), while a drafter that
        only just pays stays held (drafts that promise a few per cent lose them to the estimates' errors). Greedy steps
        the ended hold had counted towards the next probe and not taken are taken off that count."""
        if self._own_hold:  # (a sentence's own wait ends with it)
            self.hold, self._own_hold = 0, False
        if not (self.hold or self._skip[0] == self._version) or self.cost is None or not self.reach[1]:
            return
        if self._held_on == self._version:
            return  # asked at an earlier sentence, and nothing the answer depends on has changed since (no count, no cost)
        if not self._best_length(self.horizon, False, None, self.greedy_pass_s(1, self.cost), self.resume):
            self._held_on = self._version
            return
        if self.hold:
            self._give_back_skipped(self.hold * self._skip[3])
            self.hold = 0
        self._skip = _NO_SKIP

    def observe_iteration(self, state, drafted: int, accepted: int, seconds: float,
                          drafter_s: Optional[float] = None, asked: int = 0, start_s: Optional[float] = None,
                          last: bool = False) -> None:
        """A batch-1 iteration in one call: the drafter started in ``start_s`` (None: it had started before;
        :meth:`observe_start`), its call took ``drafter_s`` (None: it was not asked) for ``asked`` tokens
        (:meth:`observe`), ``drafted`` were verified, ``accepted`` of them accepted, and the pass took ``seconds``
        (what :meth:`observe_start`, :meth:`observe_drafter`, :meth:`observe` and :meth:`observe_pass` count). The
        sentence's counts are added now (its next choice reads them; after its ``last`` iteration none does: not
        added); the rest waits in a list until it holds a quarter of the input's counts or 32 iterations
        (:meth:`_flush_iterations`): counted one by one between two passes of the C backend, each iteration's counting
        cost 3-4 times what it costs among the others (the pass leaves the caches cold), and what the choice reads of
        them moves little in 32 iterations (a sentence's start too: its later choices do not price it, and a start
        counted at once took 6 us of the 40-50 the policy spent on a sentence)."""
        if drafted > 0:  # (_reached, inlined: every iteration of a batch-1 decode comes here)
            top = min(accepted + 1, drafted, self.horizon)
            got = accepted if accepted < top else top
        else:
            top, got = (1, 0) if asked else (0, 0)
        if not top:
            first = False
        elif last:
            first = "policy_counts" not in state.extra
        else:
            sent = state.extra.get("policy_counts")
            if sent is None or self._native is None:
                first = self._count_sentence(state, top, got)
            else:  # (the C loop: native/choice.c)
                self._native.count_sentence(sent[0], sent[1], top, got)
                first = False
        pending = self._waiting_iterations
        pending.append((top, got, first, accepted, drafted, seconds, drafter_s, start_s))
        if len(pending) >= 32 or 4 * len(pending) >= self.reach[1]:
            self._flush_iterations()

    def _flush_iterations(self) -> None:
        """Count the batch-1 iterations :meth:`observe_iteration` kept waiting: the drafter's starts and calls, the
        input's counts and the passes (in C where the compiled choices are at hand: ``native/choice.c``'s
        ``flush_iterations``, the same numbers; in Python 4-5 us an iteration between two passes of the C backend, a
        quarter of the policy's time at batch 1)."""
        pending, self._waiting_iterations = self._waiting_iterations, []
        if self._native is not None and self._native.flush_iterations(self, pending):
            return  # (False: a batched choice's promise waits to be judged, by the loop below)
        for top, got, first, accepted, drafted, seconds, drafter_s, start_s in pending:
            if start_s is not None:
                self.observe_start(start_s)
            if drafter_s is not None:  # (observe_drafter at one row: batch 1 judges no batch pass by it)
                self._mean(self._drafter_s, 1, drafter_s)
                self._version += 1
            if top:
                self._iter_accepted += accepted
                self._count(top, got, first)
            self._observe_row_pass(seconds, drafted)

    def _hold_for(self, step_s: float, cost: float) -> int:
        """Set :attr:`hold` to the greedy steps left before a probe costing ``cost`` is due and return it."""
        self.hold, self._own_hold = self._steps_before_probe(step_s, cost), False
        return self.hold

    def _best_length(self, limit: int, started: bool, sent, step: float, margin: float) -> int:
        """The batch-1 draft length ``1 .. limit`` with the most expected tokens per second, where it promises
        ``margin`` times a greedy step's (``step`` seconds); else 0. ``sent``: the sentence's counts (None: none yet)."""
        table, factor = self._table, self.extra_factor  # (_scale is 1 at batch 1)
        d, s = self._drafter_s, self._start_s
        drafter = ((d[1] if 1 in d else self.drafter_cost(1)) + self.extra_fixed
                   + (0.0 if started else (s[1] if 1 in s else self.start_cost(1))))
        base = step + drafter
        if sent is not None and self._native is not None:  # (the loop below in C: native/choice.c)
            return self._native.best_length(limit, sent[0], sent[1], self.q, self._least_after, table, self.weight,
                                            base, factor, margin / step)
        first = sent is None and not started
        if first:  # a sentence's first draft: the standing answers by limit, while what they were made with holds
            left, upto, made = self._first_stands.get(margin, _NO_STAND)
            if left > 0 and 0.5 * made[0] < base < 2.0 * made[0] and 0.5 * made[1] < factor < 2.0 * made[1]:
                self._first_stands[margin] = (left - 1, upto, made)
                return upto[limit if limit < len(upto) else -1]
        best_n, best = 0, margin / step
        expected, p = 1.0, 1.0
        least = self._least_after  # the smallest cost one more position adds, from position n on
        bar = factor * best  # (this loop runs every iteration of a batch-1 decode: kept to plain arithmetic)
        if sent is None:  # the sentence's first draft: the refreshed values
            values, expected_at = self._first_p, self._first_e
            upto = [0]  # the answer at each limit; a first choice that will stand reads to the last position worth 1 %
            for n in range(1, len(values) if first else min(limit, len(values) - 1) + 1):
                p = values[n]
                if p < bar * least[n - 1]:
                    break
                rate = expected_at[n] / (base + factor * table[n])
                if rate > best:
                    best_n, best, bar = n, rate, factor * rate
                upto.append(best_n)
            if first:
                self._first_stands[margin] = (_STANDING - 1, upto, (base, factor))
            return upto[limit if limit < len(upto) else -1]
        w = self.weight
        q, (s_reach, s_acc) = self.q, sent
        for n in range(1, limit + 1):  # _values' products, computed as the choice reads them
            seen = s_reach[n]
            p *= (s_acc[n] + w * q[n]) / (seen + w) if seen else q[n]
            if p < 0.01 or p < bar * least[n - 1]:
                break  # no position from n on can pay for its place: the values only fall
            expected += p
            rate = expected / (base + factor * table[n])
            if rate > best:
                best_n, best, bar = n, rate, factor * rate
        return best_n

    def choose(self, state, verifier=None) -> int:
        """The draft length for this sentence's next iteration, ``0 .. state.max_draft``."""
        limit = min(state.max_draft, self.horizon)
        if limit <= 0:
            return 0
        started = bool(state.extra.get("drafter_started"))
        held = self._skip
        if held[0] == self._version and held[1] == started and held[2] < 64:
            # the last "no draft" holds (no count, cost or start changed since): only the probe's budget is counted,
            # and the loop is told how many greedy steps it may take before the probe is due without asking
            # (:attr:`hold`), so a decode whose drafter does not pay (a greedy pass of 0.1 ms) pays the policy almost
            # nothing
            if self._probe_due(held[3], held[4]):
                return min(limit, self.probe_len)
            self._skip = (held[0], started, held[2] + 1 + self._hold_for(held[3], held[4]), held[3], held[4])
            return 0
        if self.cost is None:
            raise RuntimeError("call CostAwarePolicy.prepare(verifier) before decoding")
        if not self.reach[1]:  # nothing known yet: a probe's worth of draft to learn from
            return min(limit, self.probe_len)
        step = self._greedy.get(1, self.cost.step_s)  # (greedy_pass_s at one row)
        best_n = self._best_length(limit, started, state.extra.get("policy_counts"), step, self.margin)
        if best_n == 0:
            return self._no_length_pays(limit, started, step, state)
        self._skipped_s = 0.0
        return best_n

    def _no_length_pays(self, limit: int, started: bool, step: float, state=None) -> int:
        """:meth:`choose` where no draft length up to ``limit`` pays (a greedy step takes ``step`` seconds): where
        only ``state``'s sentence's own counts say so, 0 and a wait (:meth:`_wait_for_sentence`); else a probe where
        its budget is due, else 0, a "no draft" held while nothing it depends on changes."""
        sent = state.extra.get("policy_counts") if state is not None else None
        if sent is not None and self._best_length(limit, started, None, step, self.margin):
            return self._wait_for_sentence(state, sent)
        n = min(self.probe_len, self.horizon)
        probe_cost = self._probe_cost(self.extra_fixed + self.extra_factor * self._table[n], 1)
        if self._probe_due(step, probe_cost):
            return min(limit, n)
        self._skip = (self._version, started, self._hold_for(step, probe_cost), step, probe_cost)
        return 0

    def _wait_for_sentence(self, state, sent) -> int:
        """A sentence whose own counts say "no draft" where its input's first drafts would draft (IAD's drafts
        rejected at an edit, where the copy of the source is out of line for a few tokens): its first position's
        counts halve (:meth:`_forget_first`), and it asks again after 1, 2, 4 .. 16 greedy steps (doubling each time
        it waits: :func:`~.counts.wait_steps`). A sentence's counts only change where it drafts, so one that stopped
        drafting decoded the rest of itself greedily even where the copy was in line again (on the fast backend 21
        of 500 GEC sentences ended that way; fixed IAD copied the last 12-26 tokens of seven of them in one pass).
        Returns 0."""
        waits = state.extra.get("policy_waits", 0)
        self._forget_first(state.extra, sent, waits)
        self.hold = wait_steps(waits) - 1  # (greedy steps after this one)
        self._own_hold = self.hold > 0
        return 0
