"""Policies with synthetic pass costs, and the sentence state a policy reads (the cost-aware policy's tests)."""
from hypothesis import strategies as st

from fastdec.engine.policy import CostAwarePolicy, PassCost, native_choice


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


def every_position_ranked(policy: CostAwarePolicy, batch: int) -> None:
    """Flatten the last stretch of the policy's pass at ``batch`` rows (past what any choice here reads): its least
    slope, what one more position costs at least, is then 0, and a choice reads every position it may take."""
    cost = policy._costs[batch]
    policy.use_cost(PassCost(**{**cost.__dict__, "pass_s": cost.pass_s[:-1] + [cost.pass_s[-2]]}))


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


def unjudged_batch(B: int, per_token: float, drafter_row: float, fused: bool):
    """A policy on a batch of ``B`` rows (drafted tokens cost ``per_token`` each against a 2 ms greedy pass, a drafter
    call ``drafter_row`` a row; ``fused``: a CPU's pass of real tokens, else a padded one) whose drafts are accepted
    at 97 %, no drafted pass judged yet (a first bet of a probe's worth: 4 rows of 2 tokens), horizon 10, no probe
    due; and its rows, their drafters started. What a fused choice reads a position in is its own time on the clock:
    pinned at 0 here (at 30 us a position, as a loaded machine can make it, the next choices draft nothing)."""
    policy = policy_with({B: (1e-4, per_token, 0.0, 2e-3)}, horizon=10, probe_len=2)
    policy._rows_fused = fused
    policy._observe_read = lambda seconds: None
    accepted_at(policy, 970)
    policy._skipped_s = -1e9
    not_judged(policy)
    policy._drafter_s = {1: drafter_row}
    rows = [State(10) for _ in range(B)]
    for st_ in rows:
        st_.extra["drafter_started"] = True
    return policy, rows


def batch_policy(cost: PassCost, horizon: int, q, drafter_s: float, fused: bool) -> CostAwarePolicy:
    """A policy that decides a batch of ``cost.batch`` rows with ``cost`` (its greedy pass seen, its drafts judged),
    the input's rates ``q`` by position, and a drafter whose call and start cost in proportion to the rows asked;
    ``fused``: a CPU's pass of real tokens (the C backend's), else a padded one."""
    B = cost.batch
    policy = CostAwarePolicy(horizon)
    policy.use_cost(cost)
    seen_greedy(policy, B, cost.step_s)
    judged(policy, B)
    policy._rows_fused = policy._real_tokens_only = fused
    policy.q[1: horizon + 1] = q
    policy.reach[1] = 100.0  # (counts seen: the choice is made, not a first probe)
    policy._drafter_s = {r: drafter_s * r for r in range(1, B + 1)}
    policy._start_s = {r: drafter_s / 2 * r for r in range(1, B + 1)}
    return policy


def rows_of(counts, started, limits, src_lens) -> list:
    """A batch's rows: each its own counts (reached, accepted by position; None: none yet), drafter started or not,
    draft limit and source length."""
    states = []
    for row, on, lim, src_len in zip(counts, started, limits, src_lens):
        state = State(lim, src_len=src_len)
        state.extra["drafter_started"] = on
        if row is not None:
            state.extra["policy_counts"] = ([0] + [n for n, _ in row] + [0], [0] + [min(a, n) for n, a in row] + [0])
        states.append(state)
    return states


def batch_rows(draw, rates, most: int = 12) -> tuple:
    """A batch's horizon (at most ``most``) and rows: the input's rates by position (drawn from ``rates``), each row's
    draft limit and own counts (reached, accepted by position; None: none yet)."""
    horizon, rows = draw(st.integers(1, most)), draw(st.integers(2, 6))
    q = draw(st.lists(st.sampled_from(rates), min_size=horizon, max_size=horizon))
    limits = draw(st.lists(st.integers(0, horizon), min_size=rows, max_size=rows))
    counts = [draw(st.none() | st.lists(st.tuples(st.integers(0, 4), st.integers(0, 4)), min_size=horizon,
                                        max_size=horizon)) for _ in range(rows)]
    return horizon, rows, q, limits, counts


@st.composite
def fused_case(draw):
    # (past 24 positions: a row's third chunk of projected positions, 8, 16, 32 ...)
    horizon, rows, q, limits, counts = batch_rows(draw, [0.5, 0.8, 0.9, 0.97, 0.995, 1.0], most=40)
    # a CPU pass that climbs in steps: flat stretches, then a token that costs a greedy row or more
    fed = [rows + n for n in (0, 1, 2, 4, 8, 16, 32, 72)]
    pass_s = [1e-3]
    for _ in fed[1:]:
        pass_s.append(pass_s[-1] + draw(st.sampled_from([1e-6, 2e-5, 1e-4, 8e-4])))
    return (horizon, q, limits, counts, fed, pass_s, draw(st.sampled_from([0.0, 2e-5, 3e-4])),
            draw(st.lists(st.booleans(), min_size=rows, max_size=rows)),
            draw(st.lists(st.integers(0, 40), min_size=rows, max_size=rows)),
            draw(st.sampled_from([0.0, 1e-6, 2e-5, 1e-4])))  # (what projecting one more row costs)


def projection_rows(B: int, per_row: float) -> dict:
    """A pass's projection costs for ``fused_case``'s ``per_row``: ``PassCost``'s ``rows`` and ``rows_s``."""
    return dict(rows=[B, 8 * B], rows_s=[1e-5, 1e-5 + 7 * B * per_row])


def ranking_spy(policy: CostAwarePolicy, monkeypatch) -> list:
    """The rows of every batched choice that read at least one ranked position from now on, whether the Python loop
    (:meth:`_ranked`) or the C choice (:func:`native_choice.choose_fused`, or the module's ``choose_priced``) made
    it."""
    ranked = []
    python_ranked, c_choice = policy._ranked, native_choice.choose_fused

    def in_python(states, *a):
        for i, position in enumerate(python_ranked(states, *a)):
            if i == 0:
                ranked.append(len(states))
            yield position

    def in_c(module, policy_, states, *a):
        chosen = c_choice(module, policy_, states, *a)
        if chosen[4]:
            ranked.append(len(states))
        return chosen

    def in_c_priced(args, chosen):  # (a list: a draft chosen, its promise kept in C)
        if type(chosen) is list or (chosen[0] >= 0 and chosen[4]):
            ranked.append(len(args[1]))

    monkeypatch.setattr(policy, "_ranked", in_python)
    monkeypatch.setattr(native_choice, "choose_fused", in_c)
    if policy._native is not None:
        monkeypatch.setattr(policy, "_native", Watched(policy._native, "choose_priced", in_c_priced))
    return ranked


class Watched:
    """The compiled choices with one function's calls reported (``seen(args, answer)`` after each): the policy calls
    them on the module it holds."""

    def __init__(self, module, name: str, seen):
        self._module, self._name, self._seen = module, name, seen

    def __getattr__(self, name):
        function = getattr(self._module, name)
        if name != self._name:
            return function

        def watched(*args):
            answer = function(*args)
            self._seen(args, answer)
            return answer
        return watched
