"""The cost-aware policy on a padded batch (a GPU): a choice that took every position worth drafting stands for the next
iterations (each row drafts as far as it may, no choice made), a first bet is capped by what it adds to a pass rather
than by its tokens alone, and the padded choice's cost tables are the cost model's own numbers."""
import random

import pytest
from helpers.policy import State, accepted_at, not_judged, policy_with

from fastdec.engine.policy import CostAwarePolicy, PassCost, batch_one, batched_choice


def padded_batch(per_token: float, rows: int = 8, limit: int = 16, judged: bool = True):
    """A policy on a padded batch of ``rows`` rows (drafted tokens cost ``per_token`` each against a 1.2 ms greedy
    pass), drafts accepted at 95 %, every row's drafter started, no probe due; and the rows."""
    policy = policy_with({rows: (1e-3, per_token, 0.0, 1.2e-3)}, horizon=limit)
    policy._rows_fused = False
    if not judged:
        not_judged(policy)
    accepted_at(policy, 950)
    policy._skipped_s = -1e9
    states = [State(limit) for _ in range(rows)]
    for st in states:
        st.extra["drafter_started"] = True
    return policy, states


@pytest.fixture(params=[0, 10 ** 9], ids=["numpy", "loop"])
def many(request, monkeypatch):
    """Both padded choices: in numpy (many positions to read) and the loop (few)."""
    monkeypatch.setattr(batched_choice, "_MANY_POSITIONS", request.param)
    return request.param


def counting_choices(policy, monkeypatch) -> list:
    """A list that grows by one each time ``policy`` makes a padded choice (rather than letting one stand)."""
    made = []
    ranked, padded = policy._ranked, policy._choose_padded

    def ranked_counted(*a):
        made.append("loop")
        return ranked(*a)

    def padded_counted(*a):
        made.append("numpy")
        return padded(*a)
    monkeypatch.setattr(policy, "_ranked", ranked_counted)
    monkeypatch.setattr(policy, "_choose_padded", padded_counted)
    return made


def test_a_padded_choice_that_took_everything_stands_then_is_made_again(many, monkeypatch):
    policy, rows = padded_batch(per_token=1e-9)  # a pass costs the same whatever it verifies
    made = counting_choices(policy, monkeypatch)
    rows[0].max_draft = 0  # a row that cannot draft now
    first = policy.choose_batch(rows, None)
    assert first[0] == 0 and all(first[1:]) and len(made) == 1
    fresh = State(16)  # a sentence new since the choice (the next batch's)
    for st, limit in zip(rows, range(3, 11)):
        st.max_draft = limit
    for _ in range(3):
        assert policy.choose_batch(rows + [fresh], None) == [0] + list(range(4, 11)) + [16]
    for _ in range(batch_one._STANDING - 3):
        policy.choose_batch(rows, None)
    assert len(made) == 1  # no choice made while it stood
    policy.choose_batch(rows, None)
    assert len(made) == 2


def test_a_padded_choice_that_left_positions_out_does_not_stand(many, monkeypatch):
    policy, rows = padded_batch(per_token=4e-5)  # every drafted token costs a greedy row's share of a pass
    made = counting_choices(policy, monkeypatch)
    first = policy.choose_batch(rows, None)
    assert 0 < sum(first) < 8 * 16
    policy.choose_batch(rows, None)
    assert len(made) == 2


def test_a_first_bet_is_capped_by_what_it_adds_to_a_pass(many):
    """Until drafted passes of about as many rows were judged, a batch drafts a probe's worth of tokens, and more only
    while what they add stays under a quarter of a greedy pass: on a flat pass (a GPU) its first choice drafts
    everything, on a steep one (a CPU) 32 tokens."""
    flat, rows = padded_batch(per_token=1e-9, judged=False)
    assert sum(flat.choose_batch(rows, None)) == 8 * 16
    steep, rows = padded_batch(per_token=2e-5, judged=False)
    assert sum(steep.choose_batch(rows, None)) == steep.probe_rows * steep.probe_len


def kept_or_broke_its_promise(policy, rows, n, share: float) -> None:
    """The drafted pass of choice ``n`` gave ``share`` of the tokens per second it promised (every draft accepted; the
    choice's own seconds, which count against it, taken off the pass's)."""
    _, rate, choosing_s, _ = policy._promised
    for st, k in zip(rows, n):
        policy.observe(st, k, k)
    policy.observe_pass((len(rows) + sum(n)) / (rate * share) - choosing_s, n)


def test_a_bet_doubles_after_each_pass_that_kept_its_promise(many):
    """A steep pass (a CPU) bets a probe's worth, then twice as many tokens a row as the largest pass that gave at least
    90 % of its promise drafted, never everything at once: the fast backend's first batch at B = 8, let loose after one
    good probe of 32 tokens, drafted 509 and took 10-25 % longer than greedy's. A pass that broke its promise does not
    raise the bet."""
    policy, rows = padded_batch(per_token=2e-5, judged=False)
    policy.observe_greedy_pass(1.2e-3, 8)
    drafted, bet = [], []
    for share in (1.0, 1.0, 0.5):
        n = policy.choose_batch(rows, None)
        drafted.append(sum(n))
        kept_or_broke_its_promise(policy, rows, n, share)
        bet.append(policy._first_bet(8))
    first = policy.probe_rows * policy.probe_len
    assert drafted[:2] == [first, 2 * first] and 2 * first < drafted[2] <= 4 * first
    assert bet == [2 * first, 4 * first, 4 * first]  # (the broken promise raised nothing)
    assert policy._first_bet(32) == 4 * bet[-1]  # a bet is by the row, whatever rows it was earned with


def test_the_padded_choice_s_tables_are_the_cost_model_s_extra():
    cost = PassCost(batch=64, fed=[64, 65, 96, 160, 480, 992, 4160], pass_s=[1.15e-3, 1.34e-3, 1.34e-3, 1.34e-3,
                    1.34e-3, 1.38e-3, 1.42e-3], rows=[64, 128, 256, 512], rows_s=[1.78e-4, 1.78e-4, 1.78e-4, 1.79e-4],
                    step_s=1.77e-3, pad_s=4e-8)
    policy = policy_with({})
    rng = random.Random(0)
    for rows in (64, 63, 40, 17, 2):
        for _ in range(200):
            t, projected = rng.randint(0, 500), rows * rng.randint(1, 8) + rng.randint(0, 200)
            assert policy._padded_extra(cost, rows, t, projected) == cost.extra(rows + t, projected, base=rows)
