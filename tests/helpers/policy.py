"""Policies with synthetic pass costs, and the sentence state a policy reads (the cost-aware policy's tests)."""
from fastdec.engine.policy import CostAwarePolicy, PassCost


def synthetic_cost(batch: int, fixed: float, per_token: float, per_row: float, step: float) -> PassCost:
    """A pass of ``f`` fed tokens costs ``fixed + per_token * f``; projecting ``r`` rows ``per_row * r``."""
    fed = [batch * n for n in (1, 2, 4, 8, 16, 32, 64)]
    return PassCost(batch=batch, fed=fed, pass_s=[fixed + per_token * f for f in fed], rows=[batch, 8 * batch],
                    rows_s=[per_row * batch, per_row * 8 * batch], step_s=step)


def policy_with(costs, horizon: int = 64, **kw) -> CostAwarePolicy:
    """A policy deciding with ``{batch: (fixed, per_token, per_row, step)}`` synthetic costs; a batch size's greedy pass
    is also seen once in the current batch, at the calibration's cost (a batch drafts once it has measured one), and
    its drafted passes judged to give what they promised (a batch drafts more than a probe's tokens once they were)."""
    policy = CostAwarePolicy(horizon, **kw)
    for batch, (fixed, per_token, per_row, step) in costs.items():
        policy.use_cost(synthetic_cost(batch, fixed, per_token, per_row, step))
        if batch > 1:
            seen_greedy(policy, batch, step)
            judged(policy, batch)
    return policy


def judged(policy: CostAwarePolicy, rows: int, share: float = 1.0) -> None:
    """Drafted passes of about ``rows`` rows were judged to give ``share`` of the tokens per second they promised, and
    the next choices may bet every draft token they want."""
    policy._realized[rows.bit_length()] = share
    policy._bet_per_row = float(1 << 20)


def not_judged(policy: CostAwarePolicy) -> None:
    """No drafted batch pass was judged at any row count: the next choices bet a probe's worth."""
    policy._realized.clear()
    policy._bet_per_row = 0.0


def seen_greedy(policy: CostAwarePolicy, rows: int, step: float) -> None:
    """The current batch has had a greedy pass of ``rows`` rows that took ``step`` seconds (what a batch waits for
    before it drafts), leaving the run's greedy step by row count as it was."""
    policy._batch_greedy[rows] = step


class State:
    """What the policy reads of a sentence's decoding state."""

    def __init__(self, max_draft=10, src_len=0, decoded=0):
        """``src_len``: the source's tokens (what a drafter start is charged against in a batch: 0 charges a start
        whole to one iteration); ``decoded``: the output's tokens so far."""
        self.extra, self.max_draft = {}, max_draft
        self.src_list, self.prefix = [4] * src_len, [2] * (decoded + 1)


def accepted_at(policy: CostAwarePolicy, per_thousand: float) -> None:
    """Input-wide counts: positions 1 .. 10 each reached 1,000 times and accepted ``per_thousand`` of them."""
    policy.reach[1:11] = [1000.0] * 10
    policy.acc[1:11] = [float(per_thousand)] * 10
    policy._refresh()


def started_batch(per_token: float):
    """A policy on a fused CPU batch of 8 rows (drafted tokens cost ``per_token`` each against a 2 ms greedy pass) whose
    drafts are accepted at 95 % and whose drafter has started in every row, no probe due; and the rows."""
    policy = policy_with({8: (1e-4, per_token, 0.0, 2e-3)}, horizon=10)
    policy._rows_fused = True
    accepted_at(policy, 950)
    policy._skipped_s = -1e9
    rows = [State(10) for _ in range(8)]
    for st_ in rows:
        st_.extra["drafter_started"] = True
    return policy, rows
