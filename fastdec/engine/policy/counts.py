"""How often each draft position is accepted: running counts by position across the input and per sentence, the
smoothed rates a choice reads, and a batch's positions ranked by their value."""
from __future__ import annotations

import heapq
from typing import Optional, Sequence, Tuple

# the most greedy steps a sentence whose own drafts stopped paying waits before its first position's counts halve
# again (AcceptanceCounts._forget_first)
LONGEST_WAIT = 16


def wait_steps(waits: int) -> int:
    """The greedy steps (or passes) of a sentence's wait after ``waits`` earlier ones: 1, 2, 4 .. LONGEST_WAIT."""
    return min(1 << waits, LONGEST_WAIT)


class AcceptanceCounts:
    """:class:`~fastdec.engine.policy.CostAwarePolicy`'s acceptance statistics (its attributes are made in
    ``CostAwarePolicy.__init__``)."""

    def observe(self, state, drafted: int, accepted: int, asked: Optional[int] = None) -> None:
        """Count an iteration: positions ``1 .. accepted`` accepted, ``accepted + 1`` rejected (when drafted). An empty
        proposal where ``asked`` tokens were asked for counts as a rejected first position: a drafter with nothing to
        propose (IAD past its source's end) gives nothing, and a choice that counted only proposed positions would go
        on asking it every step. (A shorter proposal is counted as drafted: counted as rejected where it ends, IAD's
        copies of short sources would cut every sentence's first draft to their lengths.)"""
        top, got = self._reached(drafted, accepted, asked)
        if not top:
            return
        self._iter_accepted += accepted
        self._count(top, got, self._count_sentence(state, top, got))

    def observe_rows(self, states, asked: Sequence[int]) -> None:
        """:meth:`observe` for each row of a batched pass asked for a draft (``asked[r]`` tokens; 0: a row that waited
        and was asked nothing), in one call: a call of :meth:`observe` a row (and of what it calls) cost the policy 6-8
        us a row between two passes of the C backend. It also counts the positions past each row's first that the
        pass projected (for :meth:`observe_pass`'s prediction)."""
        native, horizon = self._native, self.horizon
        if native is not None:
            # the loop in C (native/choice.c's count_batch, a sentence's first counts made there too, the rates
            # refreshed by a call of _refresh where due). In Python the loop cost 3-4 us a row, and a sentence's first
            # count 8-9 us.
            native.count_batch(self, states if type(states) is list else list(states),
                               asked if type(asked) is list else list(asked))
            return
        projected = 0
        for st, n in zip(states, asked):
            if not n:
                sent = st.extra.get("policy_counts")
                if sent is not None:
                    self._idle_row(st.extra, sent)
                continue
            drafted, accepted = st.last_drafted, st.last_accepted
            projected += self._projected_rows(drafted, accepted)
            if drafted > 0:  # (_reached, for a row that was asked)
                top = min(accepted + 1, drafted, horizon)
                got = accepted if accepted < top else top
            else:
                top, got = 1, 0
            self._iter_accepted += accepted
            self._count(top, got, self._count_sentence(st, top, got))
        self._pass_projected = projected

    def _idle_row(self, extra: dict, sent) -> None:
        """A batched pass that asked a row whose sentence has counts of its own (``sent``; ``extra``: its state's
        dict) for no draft: after 1, 2, 4 .. :data:`LONGEST_WAIT` such passes (doubling each time) its first
        position's counts halve (:meth:`_forget_first`), so a row ranked out by its own rejected drafts is asked
        again once its drafts may be in line (IAD's copy after an edit), as a batch-1 sentence waits
        (:meth:`~fastdec.engine.policy.batch_one.BatchOneChoice._wait_for_sentence`)."""
        idle, waits = extra.get("policy_idle", 0) + 1, extra.get("policy_waits", 0)
        if idle < wait_steps(waits):
            extra["policy_idle"] = idle
            return
        self._forget_first(extra, sent, waits)

    @staticmethod
    def _forget_first(extra: dict, sent, waits: int) -> None:
        """Halve a sentence's first-position counts after its ``waits``-th wait (its idle passes counted afresh):
        what a wait forgets is whether the drafts are in line again -- the first position --, not how far drafts in
        line are accepted (halving every position, a sentence rewritten throughout drafted 11 tokens again and again
        where 2 were accepted)."""
        extra["policy_idle"], extra["policy_waits"] = 0, waits + 1
        reach, acc = sent
        reach[1] *= 0.5
        acc[1] *= 0.5

    def _reached(self, drafted: int, accepted: int, asked: Optional[int]) -> Tuple[int, int]:
        """The deepest position an iteration counts (``top``: the first rejected, or the draft's last) and how many of
        them were accepted (:meth:`observe`); ``(0, 0)`` where nothing was drafted or asked."""
        if drafted > 0:
            top = min(accepted + 1, drafted, self.horizon)
            return top, (accepted if accepted < top else top)
        return (1, 0) if asked else (0, 0)

    def _count_sentence(self, state, top: int, got: int) -> bool:
        """Add an iteration that reached position ``top`` and accepted ``got`` to its sentence's counts; whether it was
        the sentence's first drafted iteration."""
        sent = state.extra.get("policy_counts")
        first = sent is None
        if first:
            sent = state.extra["policy_counts"] = ([0] * (self.horizon + 2), [0] * (self.horizon + 2))
        s_reach, s_acc = sent
        if self._native is not None:  # (the C loops: native/choice.c)
            self._native.count_sentence(s_reach, s_acc, top, got)
            return first
        for m in range(1, got + 1):
            s_reach[m] += 1
            s_acc[m] += 1
        for m in range(got + 1, top + 1):
            s_reach[m] += 1
        return first

    def _count(self, top: int, got: int, first: bool) -> None:
        """Add an iteration that reached position ``top`` and accepted ``got`` to the input's counts."""
        self._version += 1
        if first:
            self._ends_first[top] += 1
            self._gots_first[got] += 1
        self._ends[top] += 1  # (the counts by position are added up at the refresh)
        self._gots[got] += 1
        if top > self._fold_top:
            self._fold_top = top
            if top > self._deepest:
                self._deepest = top
        self._stale += 1
        if 4 * self._stale >= self.reach[1]:
            # the rates are refreshed once the observations since the last refresh are a quarter of those counted
            # (every one of the first four): a few per cent of them move the rates by less than that, and a refresh
            # reads every position (30 us; made at every eighth, refreshes took 4-6 us of a fast-backend batch-1
            # sentence of 1.1-1.3 ms, half of what counting its iterations took)
            self._refresh()

    def _fold(self) -> None:
        """Add the observations counted since the last refresh to the counts by position (old counts fade: the
        estimate follows the input)."""
        top, native = self._fold_top, self._native
        if top:
            for ends, gots, reach, acc in ((self._ends, self._gots, self.reach, self.acc),
                                           (self._ends_first, self._gots_first, self.reach_first, self.acc_first)):
                if native is not None:  # (the loop below in C: native/choice.c)
                    native.fold(ends, gots, reach, acc, top)
                    continue
                reached = got = 0
                for m in range(top, 0, -1):  # position m: every observation that ends at m or deeper
                    reached += ends[m]
                    got += gots[m]
                    ends[m] = gots[m] = 0
                    if reached:
                        reach[m] += reached
                        acc[m] += got
            self._fold_top = 0
        if self.reach[1] > 4096:
            self.reach = [x * 0.5 for x in self.reach]
            self.acc = [x * 0.5 for x in self.acc]
            self.reach_first = [x * 0.5 for x in self.reach_first]
            self.acc_first = [x * 0.5 for x in self.acc_first]

    def _refresh(self) -> None:
        """Smoothed rate by position: each position leans on the one before it until it has counts of its own."""
        self._fold()
        top = min(self._deepest or self.horizon, self.horizon)  # (counts set directly: every position)
        if self._native is not None:  # (the same numbers in C: in Python a refresh took 25-55 us between two passes)
            self.q_first, self._first_p, self._first_e = self._native.rates(
                self.q, self.acc, self.reach, self.acc_first, self.reach_first, self.weight, self.prior, top,
                self.horizon)
            self._first_stands.clear()
            self._stale = 0
            return
        w, prev = self.weight, self.prior
        q, acc, reach = self.q, self.acc, self.reach
        for m in range(1, top + 1):
            prev = q[m] = (acc[m] + w * prev) / (reach[m] + w)
        # past the deepest position ever counted each position leans on the one before it all the way
        q[top + 1: self.horizon + 1] = [prev] * (self.horizon - top)
        if self.reach_first[1]:
            reach, acc = self.reach_first, self.acc_first
            # positions no first draft reached keep q: past the deepest position counted, every one of them (most of
            # the list at the default horizon of 64; that they are all 0 is checked by any(), in C)
            read = range(1, top + 1) if not (reach[0] or any(reach[top + 1:])) else range(len(q))
            q_first = q[:]
            for m in read:
                if reach[m]:
                    q_first[m] = (acc[m] + w * q[m]) / (reach[m] + w)
            self.q_first = q_first
        else:
            self.q_first = q
        p, e, values, expected = 1.0, 1.0, [1.0], [1.0]
        for qm in self.q_first[1: self.horizon + 1]:
            p *= qm
            if p < 0.01:
                break
            e += p
            values.append(p)
            expected.append(e)
        self._first_p, self._first_e = values, expected
        self._first_stands.clear()
        self._stale = 0

    def _ranked(self, states, limits: Sequence[int], floor: float):
        """Every row's draft positions ``(value, row, position)``, the best value first (ties: the lower row, then the
        lower position), where a position's value is ``prod_{l<=m} q_l`` for its sentence; positions past a row's
        limit, below 1 % or below ``floor`` (a value with which no position can pay for its place) are left out.
        A row's values only fall, so a heap of each row's next position yields them in order, computed only as far as
        the choice reads them (a full sort of every row's positions cost 0.3-0.9 ms a choice at B = 32)."""
        q, w = self.q, self.weight
        least = max(0.01, floor)
        counts = [st.extra.get("policy_counts") for st in states]
        first = self.q_first  # (a row whose sentence has no counts yet: its first draft)

        def rate(r: int, m: int) -> float:  # q_m for row r's sentence, leaning on its own counts
            sent = counts[r]
            if sent is None:
                return first[m]
            return (sent[1][m] + w * q[m]) / (sent[0][m] + w) if sent[0][m] else q[m]
        heap = []
        for r, lim in enumerate(limits):
            p = rate(r, 1) if lim > 0 else 0.0
            if p >= least:
                heap.append((-p, r, 1))
        heapq.heapify(heap)
        replace, pop = heapq.heapreplace, heapq.heappop
        while heap:
            p, r, m = heap[0]
            p = -p
            yield p, r, m
            m += 1
            if m <= limits[r]:
                p *= rate(r, m)
                if p >= least:
                    replace(heap, (-p, r, m))  # (the row's next position in its place: one sift, not two)
                    continue
            pop(heap)

    def _depth(self) -> int:
        """How deep a draft's positions keep a value of 1 % or more by the rates across the input: about how many of a
        row's positions a choice reads."""
        p, n = 1.0, 0
        for qm in self.q[1: self.horizon + 1]:
            p *= qm
            if p < 0.01:
                break
            n += 1
        return n
