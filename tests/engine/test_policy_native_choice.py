"""The batched policy in C: the choice on a fused pass (the same draft lengths, promise and positions read as the
Python loop, bit for bit, on random batches: sparse drafter tables, padding, a choice's own time per position, rows
past the tables' first length), the batched loop's calls (its choice, held step and a pass counted and observed), a
batch's start, each leaving what the Python methods leave; and the Python loop where no C compiler is found."""
import time

import pytest
import torch
from hypothesis import given
from hypothesis import strategies as st
from helpers.policy import State, Watched, batch_policy, fused_case, policy_with, projection_rows, rows_of
from helpers.properties import property_settings

from fastdec.engine.policy import CostAwarePolicy, PassCost, native_choice
from fastdec.engine.policy.measured_costs import _ExtraFit

SETTINGS = property_settings(1)


@st.composite
def measured(draw):
    """What a policy measured that a batched choice is priced with, row counts as multiples of the batch's rows: greedy
    passes by rows (the run's and this batch's), drafted passes' lines by row class (as offsets from the batch's) and
    batch 1's, what drafted passes realised of their promise by row class, the tokens a row may bet, and whether a
    pass feeds the rows' real tokens only (the C backend's)."""
    times = st.sampled_from([0.3, 0.5, 0.75, 1.0, 1.5, 2.0, 3.0])
    seconds = st.sampled_from([5e-4, 1e-3, 1.7e-3, 4e-3])
    line = st.tuples(st.sampled_from([0.0, 2e-5, 1e-4]), st.sampled_from([0.25, 0.9, 1.6, 8.0]))
    by_class = st.integers(-2, 2)
    return (draw(st.dictionaries(times, seconds, max_size=4)), draw(st.dictionaries(times, seconds, max_size=3)),
            draw(st.dictionaries(by_class, line, max_size=3)), draw(line),
            draw(st.dictionaries(by_class, st.sampled_from([0.3, 0.8, 1.0, 1.4]), max_size=3)),
            draw(st.sampled_from([0.0, 0.5, 3.0, float(1 << 20)])), draw(st.booleans()))


def _measured_at(policy, B: int, seen_before) -> None:
    """Give ``policy`` the measurements :func:`measured` drew, for a batch of ``B`` rows."""
    greedy, batch_greedy, lines, line_one, realized, bet, real_only = seen_before
    policy._greedy = {max(round(B * m), 1): t for m, t in greedy.items()}
    policy._batch_greedy = {max(round(B * m), 1): t for m, t in batch_greedy.items()}
    policy._realized = {B.bit_length() + k: share for k, share in realized.items()}
    policy.extra_fixed, policy.extra_factor = line_one
    policy._batch_fits = {}
    for k, fit_line in lines.items():
        fit = policy._batch_fits[B.bit_length() + k] = _ExtraFit()
        fit.line = fit_line
    policy._bet_per_row, policy._real_tokens_only = bet, real_only


def _policy_for(c, extra, seen_before=None, rows: str = "as drawn"):
    """A policy made for case ``c`` and its batch's rows; ``seen_before``: what it measured (:func:`measured`; None: a
    greedy pass of the batch's rows at the calibration's cost, drafts judged to keep their promise); ``rows``: "wide",
    more rows than the tables' first length (16 positions: the C choice asks for longer ones), "fewer", half the batch's
    rows (the others finished), or "one", its last row."""
    horizon, q, limits, counts, fed, pass_s, drafter_s, started, src_lens, per_row = c
    read_s, pad_s, d_keys, s_keys, wide = extra
    if wide or rows == "wide":
        limits, counts, started, src_lens = limits * 4, counts * 4, started * 4, src_lens * 4
    B = len(limits)
    fed = [B + f - fed[0] for f in fed]
    cost = PassCost(batch=B, fed=fed, pass_s=pass_s, step_s=pass_s[0], pad_s=pad_s, **projection_rows(B, per_row))
    policy = batch_policy(cost, horizon, q, drafter_s, fused=True)
    if rows in ("fewer", "one"):  # (priced with the batch's cost, as the rows left in a batch are)
        left = 1 if rows == "one" else max(B // 2, 1)
        limits, counts, started, src_lens = limits[:left], counts[:left], started[:left], src_lens[:left]
    if seen_before is not None:
        _measured_at(policy, len(limits), seen_before)
    policy._read_s = read_s
    policy._drafter_s = {k: drafter_s * k for k in d_keys}
    policy._start_s = {k: drafter_s / 3 * k for k in s_keys}
    return policy, rows_of(counts, started, limits, src_lens)


def _choose(c, extra, python: bool, seen_before=None, rows: str = "as drawn", loop_s_call: bool = False,
            tables: bool = False, situation: str = "common"):
    """The choice (draft lengths, promise, positions read as the choice measured them, a "no draft" held) of a policy
    made for case ``c`` (:func:`_policy_for`), in Python or in C; ``loop_s_call``: by the batched loop's call
    (``batch_calls``), the batch's cost found by an earlier choice (its common case in C), and what it leaves too;
    ``tables``: the fused tables made first (to 16 positions), as an earlier choice leaves them; ``situation``: the
    common case, or one the method decides (a padded choice standing, a hold on, a "no draft" held, no counts yet)."""
    policy, states = _policy_for(c, extra, seen_before, rows)
    with pytest.MonkeyPatch.context() as m:
        if python:
            m.setattr(policy, "_native", None)
        seen = []
        m.setattr(policy, "_observe_read", seen.append)
        if loop_s_call:
            cost = policy.batch_cost(None, len(states))
            if tables:
                native_choice._tables(policy, cost, len(states), 16)
            B = len(states)
            if situation == "standing":
                policy._standing = (B, 2)
            elif situation == "hold":
                policy._batch_hold_len = policy.batch_hold = 2
            elif situation == "held":
                policy._batch_skips = {B.bit_length(): ((policy._version, B, False), 0, 1e-3, 1.0)}
            elif situation == "no counts":
                policy.reach[1] = 0
            policy._iter_s, policy._iter_accepted, policy._skipped_s = 1e-3, 5, 2e-3
            got = policy.batch_calls()[1](states, None)
            left = (policy._last is cost, policy._iter_s, policy._iter_accepted, policy._batch_hold_len,
                    policy.batch_hold, policy._standing)
        else:
            got, left = policy.choose_batch(states, None), ()
    return got, policy._promised and policy._promised[1::2], len(seen), policy._batch_skips, policy._skipped_s, left


@SETTINGS
@given(c=fused_case(), read_s=st.sampled_from([0.0, 1e-7, 3e-6]), pad_s=st.sampled_from([0.0, 1e-6]),
       d_keys=st.sets(st.integers(1, 30), max_size=4), s_keys=st.sets(st.integers(1, 30), max_size=4),
       wide=st.booleans())
def test_the_c_choice_is_the_python_choice_bit_for_bit(c, read_s, pad_s, d_keys, s_keys, wide):
    if native_choice.choice_module() is None:
        pytest.skip("no C compiler: the Python loop makes every choice")
    extra = (read_s, pad_s, d_keys, s_keys, wide)
    assert _choose(c, extra, False) == _choose(c, extra, True)


@property_settings(4)  # (cheap: a choice on a few rows)
@given(c=fused_case(), seen_before=measured(), rows=st.sampled_from(["as drawn", "wide", "fewer", "one"]),
       read_s=st.sampled_from([0.0, 3e-6]), pad_s=st.sampled_from([0.0, 1e-6]))
def test_the_c_terms_are_the_python_terms_bit_for_bit(c, seen_before, rows, read_s, pad_s):
    """What the C choice prices with -- each row's limit, the greedy pass of this batch or the run nearest the batch's
    rows, the drafted pass's line and scale, the bar, the floor, a first bet -- is what the Python methods make of the
    same measurements (none measured near the batch's rows: no choice, in both), and so is the choice it makes."""
    module = native_choice.choice_module()
    if module is None:
        pytest.skip("no C compiler: the Python loop makes every choice")
    extra = (read_s, pad_s, {1, 2, 4}, {1, 3}, False)
    policy, states = _policy_for(c, extra, seen_before, rows)
    B, cost = len(states), policy.batch_cost(None, len(states))
    policy._last = cost  # (as choose_batch sets it)
    got = native_choice.choose_priced(module, policy, states, cost, B)
    measured_s = policy._batch_greedy_near(B)
    if measured_s is None:
        measured_s = policy._run_greedy_near(B)
    if measured_s is None:
        assert got is None
    else:
        fixed, factor = policy.batch_line(B)
        factor *= policy._scale(B, cost, measured_s)
        step = policy.greedy_pass_s(B, cost)
        bar = policy._bar(B, step)
        limits = policy._limits(states, cost)
        assert got[5:] == (limits, (fixed, factor, step, bar, factor * policy._min_marginal(cost, B) * bar,
                                    policy._first_bet(B)))
    assert _choose(c, extra, False, seen_before, rows) == _choose(c, extra, True, seen_before, rows)


@property_settings(4)  # (cheap: a choice on a few rows)
@given(c=fused_case(), seen_before=st.one_of(st.none(), measured()),
       rows=st.sampled_from(["as drawn", "wide", "fewer", "one"]), read_s=st.sampled_from([0.0, 3e-6]),
       tables=st.booleans(), situation=st.sampled_from(["common", "common", "standing", "hold", "held", "no counts"]))
def test_the_batched_loop_s_c_call_chooses_what_the_method_chooses(c, seen_before, rows, read_s, tables, situation):
    """The batched loop's choice call (its common case -- the batch's cost found, nothing held or standing -- in C, the
    rest, and any other case, by the method) makes the draft lengths, promise and measurement of a position's reading that the Python
    method makes, and resets the iteration's time and tokens, keeps the cost and counts the greedy time since the last
    draft as the method does."""
    if native_choice.choice_module() is None:
        pytest.skip("no C compiler: the Python loop makes every choice")
    extra = (read_s, 0.0, {1, 2, 4}, {1, 3}, False)
    assert (_choose(c, extra, False, seen_before, rows, loop_s_call=True, tables=tables, situation=situation) ==
            _choose(c, extra, True, seen_before, rows, loop_s_call=True, tables=tables, situation=situation))


def test_without_a_c_compiler_the_python_loop_chooses(tmp_path, monkeypatch):
    monkeypatch.setattr(native_choice, "_LOADED", {})
    monkeypatch.setenv("FASTDEC_NATIVE_CACHE", str(tmp_path))
    monkeypatch.setenv("CC", str(tmp_path / "no-such-cc"))
    assert native_choice.choice_module() is None
    case = (4, [0.97] * 4, [4, 4], [None, None], [2, 3, 4, 6, 10, 18, 34, 74], [1e-3] + [1.000001e-3] * 7, 0.0,
            [True, True], [20, 20], 0.0)
    got, promised, *_ = _choose(case, (0.0, 0.0, {1, 2}, {1, 2}, False), False)
    assert got == [4, 4] and promised[0] > 0


@st.composite
def drafted_pass(draw):
    """A batched pass to observe: its seconds; each row's drafted tokens (a share of its limit, cycled over the rows);
    the positions it projected as the rows' counting counted them (None: not counted); what its choice promised
    (rows as an offset from the pass's: another row count's choice; None: none); the tokens accepted and the drafter's
    seconds since; the tokens a row may bet (None: as measured); the judged sums of row classes near its own; a pass
    waiting for a greedy one; whether the pass judged before it was a stall; whether a cost is at hand, and whether
    the fused tables of its rows were made for it, for another cost, or not at all."""
    share = st.sampled_from([0.0, 0.3, 1.0])
    sums = st.tuples(*[st.sampled_from([0.5, 3.0, 40.0, 1e-3])] * 4)
    return dict(seconds=draw(st.sampled_from([2e-4, 1e-3, 3.5e-3, 2e-2])),
                drafts=draw(st.lists(share, min_size=1, max_size=6)),
                projected=draw(st.one_of(st.none(), st.integers(0, 300))),
                promise=draw(st.one_of(st.none(), st.tuples(st.integers(-1, 1), st.sampled_from([500.0, 4e3, 2e4]),
                                                            st.sampled_from([0.0, 1e-4]),
                                                            st.sampled_from([2.0, 30.0, 200.0])))),
                accepted=draw(st.integers(0, 40)), iter_s=draw(st.sampled_from([0.0, 3e-4])),
                bet=draw(st.sampled_from([None, 0.0, 1.5])),
                judged=draw(st.dictionaries(st.integers(-1, 1), sums, max_size=2)),
                pending=draw(st.booleans()), judge_held=draw(st.booleans()),
                cost=draw(st.sampled_from([True, True, False])),
                tables=draw(st.sampled_from(["made", "made", "none", "another cost"])))


def _observed(c, seen_before, rows: str, pad_s: float, p: dict, python: bool, counted=None):
    """What observing pass ``p`` (:func:`drafted_pass`) leaves in a policy made for case ``c`` (:func:`_policy_for`),
    in Python or where C may observe it, and whether the C observed it. ``counted``: the pass's rows counted too, in the
    same call (``observe_batch_pass``), as ``(the share of each row's draft accepted, whether it is the batch's first
    pass, the rows counted since the rates' last refresh, the deepest position counted before, the drafter's start and
    call before the pass: (seconds or None, rows) each)``; None: the pass alone (``observe_pass``)."""
    module = native_choice.choice_module()
    policy, states = _policy_for(c, (0.0, pad_s, {1, 2, 4}, {1, 3}, False), seen_before, rows)
    B = len(states)
    cost = policy.batch_cost(None, B)
    if p["tables"] != "none":
        # (another cost: the same numbers in another object, as a cost measured again makes them)
        native_choice._tables(policy, cost if p["tables"] == "made" else PassCost(**cost.__dict__), B, 16)
    policy._last = cost if p["cost"] else None
    limits = [min(st_.max_draft, policy.horizon) for st_ in states]
    drafted = [int(p["drafts"][r % len(p["drafts"])] * lim) for r, lim in enumerate(limits)]
    policy._pass_projected = p["projected"]
    if p["promise"] is not None:
        rows_off, rate, seconds, expected = p["promise"]
        policy._promised = (B + rows_off, rate, seconds, expected)
    policy._iter_accepted, policy._iter_s = p["accepted"], p["iter_s"]
    policy._judge_held = p.get("judge_held", False)
    if p["bet"] is not None:
        policy._bet_per_row = p["bet"]
    for k, sums in p["judged"].items():
        policy._store_judged(B.bit_length() + k, sums)
    if p["pending"]:
        policy._pending = {B: [(1e-4, 2e-3)]}
    handled = []
    with pytest.MonkeyPatch.context() as m:
        if python:
            m.setattr(policy, "_native", None)
        else:
            m.setattr(policy, "_native", Watched(module, "observe_fused" if counted is None else "observe_batch",
                                                 lambda args, answer: handled.append(answer)))
        if counted is None:
            policy.observe_pass(p["seconds"], drafted)
        else:
            share, first, policy._stale, policy._deepest, start, call = counted
            for st_, k in zip(states, drafted):
                st_.last_drafted, st_.last_accepted = k, int(share * k)
            policy.observe_batch_pass(states, limits, None if first else p["seconds"], drafted, *start, *call)
    fits = {k: (fit.sums, fit.line, fit.held) for k, fit in policy._batch_fits.items()}
    left = (policy._judged, policy._realized, policy._judge_held,
            policy._bet_per_row, policy._pending, fits, policy._iter_s,
            policy._iter_accepted, policy._promised, policy._pass_projected, policy._greedy, policy._batch_greedy,
            policy._fit.sums, policy._fit.held, policy.extra_fixed, policy.extra_factor)
    if counted is not None:
        left += tuple(getattr(policy, a) for a in ("_ends", "_gots", "_ends_first", "_gots_first", "_stale", "_version",
                                                   "_fold_top", "_deepest", "reach", "acc", "q", "q_first",
                                                   "_drafter_s", "_start_s"))
        left += tuple(st_.extra.get("policy_counts") for st_ in states)
    return repr(left), handled == [True]


@property_settings(4)  # (cheap: one pass of a few rows)
@given(c=fused_case(), seen_before=st.one_of(st.none(), measured()),
       rows=st.sampled_from(["as drawn", "wide", "fewer", "one"]), pad_s=st.sampled_from([0.0, 1e-6]), p=drafted_pass())
def test_a_drafted_pass_observed_in_c_leaves_what_python_leaves_bit_for_bit(c, seen_before, rows, pad_s, p):
    """A drafted fused pass observed in C (its judgement against its choice's promise, the bet it lets grow, what its
    drafts added beyond the prediction, handed to the batch's fit or kept for a greedy pass) leaves the policy's
    judged sums, realised shares, bet, pending passes, fits and counters as the Python method leaves them, bit for bit;
    where C hands the pass back (one row, no drafts, its rows' tables not made for the cost), Python observes it."""
    if native_choice.choice_module() is None:
        pytest.skip("no C compiler: Python observes every pass")
    in_c, handled = _observed(c, seen_before, rows, pad_s, p, python=False)
    assert in_c == _observed(c, seen_before, rows, pad_s, p, python=True)[0]


@property_settings(4)  # (cheap: one pass of a few rows)
@given(c=fused_case(), seen_before=st.one_of(st.none(), measured()),
       rows=st.sampled_from(["as drawn", "wide", "fewer", "one"]), p=drafted_pass(),
       counted=st.tuples(st.sampled_from([0.0, 0.5, 1.0]), st.booleans(), st.sampled_from([0, 23]),
                         st.sampled_from([0, 3, 40]), *[st.tuples(st.sampled_from([None, 1e-5, 3e-3]),
                                                                  st.integers(1, 6))] * 2))
def test_a_pass_counted_and_observed_in_one_c_call_leaves_what_python_leaves_bit_for_bit(c, seen_before, rows, p,
                                                                                         counted):
    """The drafter's start and call, a batched pass's rows counted and the pass observed in one C call (a batch's last
    row's pass and a drafted fused pass of two rows or more observed there, the rest handed back) leave the drafter's
    costs, the sentences' and the input's counts, rates, judged sums, fits and counters as Python's four methods leave
    them, bit for bit (a batch's first pass:
    counted, not observed; the rates refreshed where the rows counted since the last refresh come to a quarter of
    those counted)."""
    if native_choice.choice_module() is None:
        pytest.skip("no C compiler: Python counts and observes every pass")
    in_c, _ = _observed(c, seen_before, rows, 0.0, p, python=False, counted=counted)
    assert in_c == _observed(c, seen_before, rows, 0.0, p, python=True, counted=counted)[0]


@property_settings(20)  # (cheap: a few rows counted)
@given(rows=st.lists(st.tuples(st.sampled_from([0, 0, 3]), st.booleans(), st.integers(0, 20), st.integers(0, 6),
                               st.sampled_from([0, 1, 2.5])), min_size=1, max_size=8))
def test_rows_asked_for_no_draft_wait_and_forget_in_c_as_in_python(rows):
    """Rows a batched pass asked for no draft, whose sentences have counts of their own, count their idle passes and
    after 1, 2, 4 .. 16 of them halve their first position's counts, in C as in Python, bit for bit (the rows asked
    are counted as before)."""
    if native_choice.choice_module() is None:
        pytest.skip("no C compiler: Python counts every pass")

    def counted(python: bool) -> str:
        policy = CostAwarePolicy(8)
        policy.reach[1] = 1e6  # (no refresh due while the rows are counted)
        states = []
        for asked, has_counts, idle, waits, first in rows:
            row = State(8)
            row.last_drafted, row.last_accepted = asked, min(asked, 1)
            if has_counts:
                row.extra["policy_counts"] = ([0, first, 1, 0, 0, 0, 0, 0, 0, 0], [0, first, 0, 0, 0, 0, 0, 0, 0, 0])
                row.extra.update({"policy_idle": idle, "policy_waits": waits} if idle else {})
            states.append(row)
        with pytest.MonkeyPatch.context() as m:
            if python:
                m.setattr(policy, "_native", None)
            policy.observe_rows(states, [r[0] for r in rows])
        return repr(([row.extra for row in states], policy._ends, policy._gots, policy._stale))
    assert counted(False) == counted(True)


@pytest.mark.parametrize("greedy_seen", [True, False])
def test_a_drafted_pass_of_a_batch_is_observed_in_c(greedy_seen):
    """The common pass -- a batch's rows drafted, their choice's tables made, a promise -- is observed in C, whether
    the batch's greedy pass was seen (the fit learns) or not (the pass waits for one), and leaves what Python leaves."""
    if native_choice.choice_module() is None:
        pytest.skip("no C compiler: Python observes every pass")
    case = (4, [0.97] * 4, [4, 4], [None, None], [2, 3, 4, 6, 10, 18, 34, 74], [1e-3] + [1.000001e-3] * 7, 0.0,
            [True, True], [20, 20], 0.0)
    seen_before = None if greedy_seen else ({}, {}, {}, (0.0, 1.0), {}, 0.0, True)
    p = dict(seconds=1.3e-3, drafts=[1.0, 0.3], projected=3, promise=(0, 4e3, 1e-4, 30.0), accepted=4, iter_s=0.0,
             bet=0.0, judged={}, pending=False, cost=True, tables="made")
    in_c, handled = _observed(case, seen_before, "as drawn", 0.0, p, python=False)
    assert handled and in_c == _observed(case, seen_before, "as drawn", 0.0, p, python=True)[0]


@property_settings(4)  # (cheap: a few attributes)
@given(hold=st.integers(0, 3), hold_rows=st.integers(0, 9), hold_len=st.integers(0, 4), rows=st.integers(1, 9),
       skipped=st.booleans())
def test_the_c_held_step_is_the_method_s(hold, hold_rows, hold_len, rows, skipped):
    """The batched loop's held step in C (a greedy pass the held "no draft" covers while more than half its rows are
    left; a hold that ran out or lost half its rows ended by the method) answers and leaves what the method does."""
    module = native_choice.choice_module()
    if module is None:
        pytest.skip("no C compiler: the method answers")

    def step(in_c: bool):
        policy = policy_with({4: (1e-4, 2e-5, 1e-5, 1e-3)}, horizon=8)
        policy.batch_hold, policy._batch_hold_rows, policy._batch_hold_len = hold, hold_rows, max(hold_len, hold)
        policy._batch_hold_step, policy._batch_hold_key, policy._skipped_s = 1e-3, 3, 5e-3
        if skipped:
            policy._batch_skips = {3: ((0, 4, False), 2, 1e-3, 1e-4)}
        took = module.take_held_step(policy, rows) if in_c else policy.take_held_step(rows)
        return took, policy.batch_hold, policy._batch_hold_len, policy._batch_skips, policy._skipped_s

    assert step(True) == step(False)


@property_settings(4)  # (cheap: a few dicts)
@given(judged=st.dictionaries(st.integers(1, 6), st.tuples(*[st.sampled_from([0.5, 3.0, 40.0, 1e-3])] * 4),
                              max_size=3),
       hold=st.sampled_from([(0, 0), (0, 2), (1, 3), (2, 0)]), own=st.lists(st.booleans(), max_size=3),
       waiting=st.booleans(),
       fits=st.dictionaries(st.integers(1, 6), st.lists(st.tuples(st.sampled_from([1e-5, 2e-4, 3e-3]),
                                                                  st.sampled_from([0.0, 1e-5, 4e-4, 2e-2])),
                                                        max_size=5), max_size=3))
def test_a_batch_started_in_c_leaves_what_the_method_leaves(judged, hold, own, waiting, fits):
    """A new batch in C (waiting batch-1 iterations counted, judged sums relaxed towards their promise, each row
    class's fit relaxed towards the calibration, the batch's greedy and pending passes emptied, a hold ended, a "no
    draft" held for rows with counts of their own dropped) leaves what the Python method leaves, bit for bit."""
    if native_choice.choice_module() is None:
        pytest.skip("no C compiler: the method starts every batch")

    def started(in_c: bool):
        policy = policy_with({4: (1e-4, 2e-5, 1e-5, 1e-3)}, horizon=8)
        if not in_c:
            policy._native = None
        for key, sums in judged.items():
            policy._store_judged(key, sums)
        policy._batch_greedy, policy._pending = {2: 1e-3}, {2: [(1e-4, 2e-3)]}
        policy.batch_hold, policy._batch_hold_len = hold
        policy._batch_hold_step, policy._batch_hold_key, policy._skipped_s = 1e-3, 2, 5e-3
        policy._batch_skips = {k + 1: ((0, 4, o), 2, 1e-3, 1e-4) for k, o in enumerate(own)}
        if waiting:
            policy._waiting_iterations = [(2, 1, True, 1, 2, 1e-3, 2e-5, None)]
        for key, passes in fits.items():
            fit = policy._batch_fits[key] = _ExtraFit()
            for predicted, seen in passes:
                fit.add(predicted, seen)
        policy.new_batch()
        return repr((policy._judged, policy._realized, policy._batch_greedy, policy._pending, policy.batch_hold,
                     policy._batch_hold_len, policy._batch_skips, policy._skipped_s, policy._waiting_iterations,
                     policy.reach, policy._drafter_s,
                     {k: (f.sums, f.line, f.held) for k, f in policy._batch_fits.items()}))

    assert started(True) == started(False)


@pytest.mark.parametrize("before", [0.0, 2e-6])
def test_the_batched_loop_s_c_call_measures_a_position_s_reading_as_the_method(before):
    """Where the loop's C call chooses a draft that read enough positions, it measures the time a position's reading
    took as the method does -- the first reading taken whole, later ones into a running mean (0.7 of the old) -- and
    a policy's own measurement (a test's pin) is called instead."""
    if native_choice.choice_module() is None:
        pytest.skip("no C compiler: the method measures")
    case = (16, [0.995] * 16, [16] * 4, [None] * 4, [2, 3, 4, 6, 10, 18, 34, 74], [1e-3] + [1.000001e-3] * 7, 0.0,
            [True] * 4, [40] * 4, 0.0)

    def chosen(pin):
        policy, states = _policy_for(case, (before, 0.0, {1, 2, 4}, {1, 3}, False))
        native_choice._tables(policy, policy.batch_cost(None, len(states)), len(states), 16)
        seen = []
        if pin:
            policy._observe_read = seen.append
        choose = policy.batch_calls()[1]
        t0 = time.perf_counter()
        n = choose(states, None)
        return n, policy._read_s, seen, (time.perf_counter() - t0) / sum(n)  # (at least what a position took)

    n, read_s, _, most = chosen(False)
    assert sum(n) >= 32 and 0.7 * before < read_s <= (most if before == 0.0 else 0.7 * before + 0.3 * most)
    n_pinned, read_pinned, seen, most = chosen(True)
    assert n_pinned == n and read_pinned == before and len(seen) == 1 and 0.0 < seen[0] <= most


def test_the_batched_loop_s_calls_are_made_once_and_again_for_a_restored_policy():
    """A policy makes the batched loop's calls once; a restored snapshot makes them again, bound to itself, and a
    policy without the compiled choices gets its methods."""
    policy = policy_with({4: (1e-4, 2e-5, 1e-5, 1e-3)}, horizon=8)
    calls = policy.batch_calls()
    assert policy.batch_calls() is calls
    policy.restore(policy.snapshot())
    again = policy.batch_calls()
    assert again is not calls and all(getattr(c, "args", (policy,))[0] is policy for c in again)
    policy._native = None
    start, step, observe = policy.batch_calls()
    assert start == policy.prepare and step == policy._step and observe == policy.observe_batch_pass


@pytest.mark.parametrize("measured", [(), (1,), (4,), (8,), (2, 16)])
@pytest.mark.parametrize("prepared", [False, True])
def test_the_batched_loop_s_c_start_of_a_batch_leaves_what_prepare_leaves(measured, prepared):
    """The batched loop's start of a batch in C (``batch_calls``) starts the batch as ``prepare`` does and reads the
    costs where none was measured at its rows or more, by the same calls of ``load_costs``."""
    if native_choice.choice_module() is None:
        pytest.skip("no C compiler: the Python method starts a batch")

    class Cpu:
        device = torch.device("cpu")
    verifier, left = Cpu(), []
    for python in (False, True):
        policy = policy_with({B: (1e-4, 2e-5, 1e-5, 1e-3) for B in measured}, horizon=8)
        if prepared:
            policy._prepared_for = verifier
        policy._waiting_iterations = [(2, 1, True, 1, 2, 1e-3, 2e-5, None)]
        policy._store_judged(3, (1.0, 2.0, 3e-3, 2e-3))
        loaded = []

        def reading(v, b, policy=policy, loaded=loaded):  # (load_costs, where it reads: no cost at b rows or more)
            if max(policy._costs, default=0) < b:
                loaded.append((v is verifier, b))
        policy.load_costs = reading
        if python:
            policy._native = None
        policy.batch_calls()[0](verifier, 4)
        left.append(repr((loaded, policy._prepared_for is verifier, policy._rows_fused, policy._judged,
                          policy._realized, policy._waiting_iterations, policy._batch_greedy, policy._stale)))
    assert left[0] == left[1]


@pytest.mark.parametrize("in_c", [True, False])
@pytest.mark.parametrize("real_only, rows, most", [(False, 4, 7), (True, 4, 30), (False, 1, 30)])
def test_a_padded_pass_drafts_no_row_past_the_widest_pass_measured(in_c, real_only, rows, most):
    """A pass padded to its widest draft (PyTorch's) drafts no row of a batch past what the calibration's widest pass
    fed a row (8 tokens here) less the row's own token: past it the pass is priced by a straight line out. The C
    backend's pass of real tokens, and a batch's last row, draft to the horizon, drafts all but sure to be accepted
    and a drafted token 1 us against a 2 ms greedy pass."""
    if in_c and native_choice.choice_module() is None:
        pytest.skip("no C compiler: the Python loop makes every choice")
    fed = [4, 8, 16, 32]
    cost = PassCost(batch=4, fed=fed, pass_s=[1e-3 + 1e-6 * f for f in fed], step_s=2e-3,
                    **projection_rows(4, 1e-7))
    policy = batch_policy(cost, 30, [0.999] * 30, 1e-7, fused=True)
    policy._real_tokens_only = real_only
    policy._greedy[1] = 1e-3
    if not in_c:
        policy._native = None
    states = rows_of([None] * rows, [True] * rows, [30] * rows, [40] * rows)
    assert max(policy.choose_batch(states, None)) == most
