"""While no draft pays, the drafter is asked again (a probe) once the greedy time since it was last asked is
``1 / probe_share`` times what the probe costs -- times 2, 4 .. ``PROBE_BACKOFF`` after probes that no paying draft
followed: a drafter that does not pay (GAD's or Blockwise's on a CPU) is asked ever more rarely, and one that starts
to pay is still noticed, within ``PROBE_BACKOFF`` times the interval."""
from __future__ import annotations

# how much rarer than ``probe_share`` says the probes of a drafter that never paid since may become. Probes at the
# share itself took 0.8-1.1 % of a Blockwise run at B = 2 on a CPU against the 0.5 % they were priced at: each also cost
# the choices after it and the caches it left cold
PROBE_BACKOFF = 8.0


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
        self._since_probe_s += step_s
        if self._skipped_s * self.probe_share < cost * self._probe_scale:
            return False
        # a paying draft since the last probe set the greedy time since the drafter was asked back to 0 (the time
        # since the probe is not): the drafter pays at times, so the probes go back to their share
        paid = self._skipped_s < self._since_probe_s
        self._probe_scale = 1.0 if paid else min(2.0 * self._probe_scale, PROBE_BACKOFF)
        self._skipped_s = self._since_probe_s = 0.0
        self.probes += 1
        return True

    def _steps_before_probe(self, step_s: float, cost: float) -> int:
        """The greedy steps left before a probe costing ``cost`` is due (at most 63; their time is counted now)."""
        steps = int((cost * self._probe_scale / self.probe_share - self._skipped_s) / step_s) - 1 if step_s > 0 else 0
        steps = min(max(steps, 0), 63)
        self._skipped_s += steps * step_s
        self._since_probe_s += steps * step_s
        return steps

    def _give_back_skipped(self, seconds: float) -> None:
        """Greedy time counted towards the next probe ahead of steps a hold did not take, taken off again."""
        self._skipped_s = max(self._skipped_s - seconds, 0.0)
        self._since_probe_s = max(self._since_probe_s - seconds, 0.0)
