"""The batch-1 counting and choice in C: a sentence's counts, its next draft length and the fit of a drafted pass's cost
as the Python code makes them, bit for bit, on random rates, costs, sentences and passes; and the Python code where
the module cannot be built."""
import pytest
from hypothesis import example, given
from hypothesis import strategies as st
from helpers.policy import State, policy_with
from helpers.properties import property_settings

from fastdec.engine.policy import native_choice
from fastdec.engine.policy.measured_costs import _ExtraFit

SETTINGS = property_settings(3)  # (cheap: 1-2 ms an example)
HORIZON = 24


def _needs_module():
    if native_choice.choice_module() is None:
        pytest.skip("no C compiler or no Python headers: the Python loops count and choose")


@st.composite
def sentence_case(draw):
    """A policy's input-wide rates and costs, and a sentence's iterations (position reached, accepted) so far."""
    high = draw(st.booleans())  # (rates near 1 draft long: most choices read many positions)
    rates = draw(st.lists(st.floats(0.8 if high else 0.0, 1.0), min_size=HORIZON, max_size=HORIZON))
    per_token = draw(st.sampled_from([1e-8, 1e-6, 2e-5, 5e-5, 2e-4]))  # (1e-8: drafts read to the 1 % floor)
    iterations = draw(st.lists(st.tuples(st.integers(1, HORIZON), st.integers(0, HORIZON)), max_size=12))
    factor = draw(st.sampled_from([0.25, 1.0, 1.7, 8.0]))
    fixed = draw(st.sampled_from([0.0, 3e-5, 1e-3]))
    step = draw(st.sampled_from([5e-5, 1e-4, 1e-3]))
    margin = draw(st.sampled_from([1.0, 1.05, 1.25]))
    return rates, per_token, [(top, min(got, top)) for top, got in iterations], factor, fixed, step, margin


def _decide(case, python: bool):
    """The sentence's counts after its iterations and the draft length chosen at every limit, in C or in Python."""
    rates, per_token, iterations, factor, fixed, step, margin = case
    policy = policy_with({1: (1e-4, per_token, 1e-5, step)}, horizon=HORIZON)
    policy.q[1:HORIZON + 1] = rates
    policy.extra_fixed, policy.extra_factor = fixed, factor
    if python:
        policy._native = None
    state = State(max_draft=HORIZON)
    for top, got in iterations:
        policy._count_sentence(state, top, got)
    sent = state.extra.get("policy_counts")
    chosen = [policy._best_length(limit, True, sent, step, margin) for limit in range(1, HORIZON + 1)]
    return sent, chosen


@SETTINGS
@given(case=sentence_case())
@example(case=([0.8] * HORIZON, 1e-8, [(1, 1)], 1.0, 0.0, 1e-4, 1.0))  # (read to the 1 % floor: position 21)
def test_the_c_counting_and_choice_are_the_python_loops_bit_for_bit(case):
    _needs_module()
    assert _decide(case, False) == _decide(case, True)


@SETTINGS
@given(passes=st.lists(st.tuples(st.floats(0.0, 1e-2), st.one_of(st.floats(0.0, 1e-2), st.just(0.0))), min_size=1,
                       max_size=40),
       decay=st.sampled_from([0.5, 0.9]))
def test_the_c_fit_of_a_pass_s_cost_is_the_python_fit_bit_for_bit(passes, decay):
    one = native_choice.choice_module()
    if one is None:
        pytest.skip("no C compiler or no Python headers: the Python fit counts every pass")
    in_python, in_c = _ExtraFit(decay), _ExtraFit(decay)
    for predicted, seen in passes:
        assert one.fit_add(in_c, predicted, seen) == in_python.add(predicted, seen)
        assert (in_c.sums, in_c.line, in_c.held) == (in_python.sums, in_python.line, in_python.held)


def test_the_c_choice_drafts_where_the_sentence_s_drafts_were_accepted_and_not_where_they_were_rejected():
    _needs_module()
    accepted = ([0.5] * HORIZON, 2e-6, [(10, 10)] * 6, 1.0, 0.0, 1e-4, 1.05)  # whole drafts of 10 accepted
    rejected = ([0.5] * HORIZON, 2e-6, [(1, 0)] * 6, 1.0, 0.0, 1e-4, 1.05)  # every first position rejected
    assert _decide(accepted, False)[1][-1] >= 10
    assert _decide(rejected, False)[1][-1] == 0


@st.composite
def counts_case(draw):
    """A policy's counts by position (floats, or ints as a test sets them; the first drafts' own or none), the
    observations waiting to be added to them, and the deepest position counted."""
    horizon = draw(st.integers(1, HORIZON))
    count = st.one_of(st.integers(0, 40), st.sampled_from([0.0, 0.5, 3.0, 17.25, 4000.0]))
    counts = [draw(st.lists(count, min_size=horizon + 2, max_size=horizon + 2)) for _ in range(4)]
    if draw(st.booleans()):  # (no first draft counted: the input's rates serve a sentence's first draft)
        counts[2] = [0] * (horizon + 2)
    waiting = [draw(st.lists(st.integers(0, 5), min_size=horizon + 2, max_size=horizon + 2)) for _ in range(4)]
    return horizon, counts, waiting, draw(st.integers(0, horizon)), draw(st.integers(0, horizon)), \
        draw(st.sampled_from([0.5, 2.0])), draw(st.sampled_from([0.3, 0.8]))


@SETTINGS
@given(case=counts_case())
def test_the_c_refresh_of_the_rates_is_the_python_refresh_bit_for_bit(case):
    """The counts folded in (waiting observations added by where they end) and the rates made from them -- by position,
    for first drafts, and a first draft's values and expected tokens -- are the Python loops' numbers, bit for bit."""
    _needs_module()
    horizon, counts, waiting, fold_top, deepest, weight, prior = case

    def refreshed(native: bool):
        policy = policy_with({}, horizon=horizon, weight=weight, prior=prior)
        if not native:
            policy._native = None
        policy.reach, policy.acc, policy.reach_first, policy.acc_first = (list(c) for c in counts)
        policy._ends, policy._gots, policy._ends_first, policy._gots_first = (list(c) for c in waiting)
        policy._fold_top, policy._deepest = fold_top, deepest
        policy._refresh()
        got = (policy.q, policy.q_first, policy._first_p, policy._first_e, policy.reach, policy.acc,
               policy.reach_first, policy.acc_first, policy._ends, policy._gots, policy._ends_first, policy._gots_first)
        return repr(got), policy.q_first is policy.q
    assert refreshed(True) == refreshed(False)


def test_the_c_loops_refuse_what_the_python_loops_would_refuse():
    one = native_choice.choice_module()
    if one is None:
        pytest.skip("no C compiler or no Python headers")
    with pytest.raises(IndexError):
        one.count_sentence([0] * 4, [0] * 4, 5, 2)
    with pytest.raises(TypeError):
        one.count_sentence((0,) * 8, [0] * 8, 3, 2)
    with pytest.raises(IndexError):  # a table shorter than the limit
        one.best_length(6, [0] * 8, [0] * 8, [0.9] * 8, [0.0] * 8, [0.0] * 3, 2.0, 1e-4, 1.0, 1.0)


class _Row:
    def __init__(self, drafted, accepted, counts):
        self.last_drafted, self.last_accepted, self.extra = drafted, accepted, {"policy_counts": counts}


def test_the_c_row_counting_refuses_counts_shorter_than_a_draft_and_makes_a_sentence_s_first_counts(monkeypatch):
    _needs_module()
    policy = policy_with({1: (1e-4, 2e-5, 1e-5, 1e-4)}, horizon=8)
    one = policy._native
    policy.reach[1] = 100.0  # (no refresh due)
    with pytest.raises(IndexError):  # a sentence's counts shorter than its draft
        one.count_batch(policy, [_Row(6, 6, ([0] * 4, [0] * 4))], [6])
    with pytest.raises(ValueError):  # one asked a row
        one.count_batch(policy, [_Row(2, 1, ([0] * 10, [0] * 10))], [2, 2])
    rows = [_Row(3, 1, ([0] * 10, [0] * 10)), _Row(2, 2, None), _Row(4, 4, ([0] * 10, [0] * 10))]
    version = policy._version
    # the second row's sentence has no counts yet: made as the Python code makes them, and counted as a first draft
    one.count_batch(policy, rows, [3, 2, 0])
    assert (policy._iter_accepted, policy._version - version, policy._stale, policy._fold_top, policy._deepest,
            policy._pass_projected) == (3, 2, 2, 2, 2, 5)
    assert rows[0].extra["policy_counts"] == ([0, 1, 1] + [0] * 7, [0, 1] + [0] * 8)
    assert rows[1].extra["policy_counts"] == ([0, 1, 1] + [0] * 7, [0, 1, 1] + [0] * 7)  # (horizon + 2 positions)
    assert (policy._ends[2] == 2 and policy._gots[1] == policy._gots[2] == 1 and policy._ends_first[2] ==
            policy._gots_first[2] == 1 and sum(policy._ends_first) == 1)
    # a refresh due (4 * stale >= reach[1]) is made after the row that made it due, and the counting goes on
    refreshed, refresh = [], policy._refresh
    monkeypatch.setattr(policy, "_refresh", lambda: (refreshed.append(policy._stale), refresh()))
    policy.reach[1] = 12.0
    one.count_batch(policy, rows, [3, 2, 4])
    assert refreshed == [3] and policy._stale == 2 and policy._deepest == 4