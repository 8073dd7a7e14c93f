"""While no draft pays, the drafter is asked again (a probe) once the greedy time since it was last asked is
``1 / probe_share`` times what the probe costs."""
from __future__ import annotations


class ProbeBudget:
    """:class:`~fastdec.engine.policy.CostAwarePolicy`'s probes (its attributes are made in
    ``CostAwarePolicy.__init__``)."""

    def _probe_cost(self, extra_s: float, rows: int) -> float:
        """What asking the drafter again costs (its call, a sentence start, the longer pass): the drafter is asked again
        once the greedy time since it was last asked is ``1 / probe_share`` times this (:meth:`_probe_due`), so probes
        cost at most ``probe_share`` of the time, and a drafter that starts to pay is still noticed."""
        cost = self.drafter_cost(rows) + self.start_cost(rows) + extra_s
        if rows not in self._start_s or rows not in self._drafter_s:
            cost *= 4  # not measured at this batch size: a scaled guess, so wait longer before paying it
        return cost

    def _probe_due(self, step_s: float, cost: float) -> bool:
        self._skipped_s += step_s
        if self._skipped_s * self.probe_share < cost:
            return False
        self._skipped_s = 0.0
        self.probes += 1
        return True

    def _steps_before_probe(self, step_s: float, cost: float) -> int:
        """The greedy steps left before a probe costing ``cost`` is due (at most 63; their time is counted now)."""
        steps = int((cost / self.probe_share - self._skipped_s) / step_s) - 1 if step_s > 0 else 0
        steps = min(max(steps, 0), 63)
        self._skipped_s += steps * step_s
        return steps
