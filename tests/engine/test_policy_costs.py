"""What the cost-aware policy learns of real passes and how it reads its costs: the fit of measured on predicted extra
cost, the measured batch's curves for fewer rows, the batch-1 choice's early stop (a full scan's answer, before and
after a sentence has counts of its own), the batched loop's measurements, and the batched projection of real
positions only on a CPU."""
import pytest
import torch
from hypothesis import given
from hypothesis import strategies as st
from helpers.properties import property_settings
from helpers.policy import (accepted_at, batch_policy, batch_rows, every_position_ranked, fused_case, judged,
                            policy_with, projection_rows, rows_of, ranking_spy, started_batch, State)

from conftest import random_model
from fastdec.engine import InputCopyDrafter, accept_top1, greedy_decode
from fastdec.engine.batched import BatchedVerifier, decode_batched
from fastdec.engine.loop import draft_verify_accept
from fastdec.engine.policy import CostAwarePolicy, PassCost, batched_choice
from fastdec.engine.policy.measured_costs import _ExtraFit
from fastdec.engine.policy.pass_cost import _interpolate, _interpolate_from
from fastdec.engine.projection import BatchedMaskedLogProbs, MaskedLogProbs, projects_real_positions

SETTINGS = property_settings(1 / 2)


def test_the_fit_separates_a_fixed_cost_from_a_factor_and_starts_from_the_calibration():
    fit = _ExtraFit()
    assert fit.solve() == (0.0, 1.0)
    fit.add(2e-4, 2e-4)  # the calibration's prediction as it is: the prior and the pass agree
    assert fit.solve() == pytest.approx((0.0, 1.0))
    for i in range(200):  # every draft adds 3e-4 whatever its length, and twice what the calibration says per token
        predicted = 1e-4 * (1 + i % 7)
        fixed, factor = fit.add(predicted, 3e-4 + 2 * predicted)
    assert fixed == pytest.approx(3e-4, rel=1e-3) and factor == pytest.approx(2.0, rel=1e-3)
    one_length = _ExtraFit()
    for _ in range(50):  # one draft length only: a fixed part cannot be told from a factor, so a factor alone
        one_length.add(1e-4, 4e-4)
    assert one_length.solve() == pytest.approx((0.0, 4.0), rel=1e-2)  # (the prior has faded to a trace)
    bounded = _ExtraFit()
    for _ in range(50):
        bounded.add(1e-4, 1.0)
    assert bounded.solve()[1] == 8.0


def test_one_pass_far_dearer_than_the_line_is_set_aside_and_a_second_one_counts():
    """A stall of the machine inside one drafted pass (more than three times what the line says) leaves the line as
    it was; a pass as dear right after it counts, and so does every one after that while they stay that dear; an
    ordinary pass between two stalls sets the next one aside again."""
    fit = _ExtraFit()
    for _ in range(5):
        fit.add(1e-4, 1e-4)
    line = fit.line
    assert fit.add(1e-4, 2e-2) == line and fit.held  # set aside: the line does not move
    assert fit.add(1e-4, 1.1e-4) != line and not fit.held  # an ordinary pass counts
    steady = fit.line

    def at(line):  # what the line says a pass predicted at 1e-4 adds
        return line[0] + line[1] * 1e-4
    assert fit.add(1e-4, 2e-2) == steady and fit.held
    assert at(fit.add(1e-4, 2e-2)) > at(steady) and fit.held  # the second dear pass in a row counts ...
    after = fit.line
    assert at(fit.add(1e-4, 2e-2)) > at(after)  # ... and the third
    lasting = _ExtraFit()
    for _ in range(40):  # a lasting change of 5x: every pass but the first counts, and the line gets there
        lasting.add(1e-4, 5e-4)
    assert at(lasting.line) == pytest.approx(5e-4, rel=1e-2)


def test_a_fit_relaxed_at_a_new_batch_moves_back_towards_the_calibration():
    """A batch's fit that learned drafts cost 1.5 times the calibration's price moves back by 15 % of the way at each
    new batch where no drafted pass came (and keeps its weight and mean prediction); a fit with no pass stays as it
    is."""
    policy = policy_with({4: (1e-4, 2e-5, 1e-5, 1e-3)}, horizon=8)
    fit = policy._batch_fits[3] = _ExtraFit()
    for predicted in (1e-4, 2e-4, 3e-4) * 10:
        fit.add(predicted, 1.5 * predicted)
    empty = policy._batch_fits[4] = _ExtraFit()

    def at(line):
        return line[0] + line[1] * 2e-4
    before, weight, mean = at(fit.line), fit.sums[0], fit.sums[1] / fit.sums[0]
    assert before == pytest.approx(3e-4, rel=1e-2)  # (the calibration's prior has faded to a trace)
    policy.new_batch()
    assert at(fit.line) == pytest.approx(2e-4 + 0.85 * (before - 2e-4), rel=1e-2)
    assert fit.sums[0] == weight and fit.sums[1] / fit.sums[0] == pytest.approx(mean)
    for _ in range(20):
        policy.new_batch()
    assert at(fit.line) == pytest.approx(2e-4, rel=0.05)
    assert empty.sums == (0.0,) * 5 and empty.line == (0.0, 1.0)


def test_a_stalled_batch_pass_is_not_judged_until_a_second_one_is_as_slow():
    """A drafted batch pass more than three times slower than its choice promised (a stall of the machine) leaves what
    drafted passes realised as it was; a second one right after it is judged, and an ordinary pass between two stalls
    sets the next one aside again."""
    policy = policy_with({4: (1e-4, 2e-5, 1e-5, 1e-3)}, horizon=8)
    promise = (4, 4e3, 1e-5, 8.0)  # 8 tokens promised at 4,000 a second: 2 ms

    def judge(seconds):
        policy._promised = promise
        policy._judge_batch_pass(4, seconds, 8)
        return dict(policy._realized), policy._judge_held
    judge(2e-3)
    kept = dict(policy._realized)
    assert judge(2e-2) == (kept, True)  # set aside
    assert judge(2e-3)[1] is False  # an ordinary pass is judged
    kept = dict(policy._realized)
    assert judge(2e-2) == (kept, True)
    realized, held = judge(2e-2)
    assert held and realized[3] < kept[3]  # the second stall in a row is judged


def test_a_stalled_greedy_pass_counts_at_most_twice_the_run_s_greedy_pass():
    """A greedy batch pass stalled 20 ms moves the run's greedy pass at its row count by at most a fifth of twice it,
    and the first pass at a new row count is taken at most at twice what the nearest count scales to."""
    policy = CostAwarePolicy(8)
    policy.observe_greedy_pass(5e-4, 8)
    policy.observe_greedy_pass(2e-2, 8)
    assert policy._greedy[8] == pytest.approx(0.8 * 5e-4 + 0.2 * 1e-3)
    assert policy._batch_greedy[8] == pytest.approx(2 * 5e-4)
    policy.observe_greedy_pass(2e-2, 16)
    assert policy._greedy[16] == pytest.approx(2 * policy._greedy[8] * 2)
    policy.observe_greedy_pass(4e-4, 4)  # (faster is taken as it is)
    assert policy._greedy[4] == 4e-4


def test_a_stalled_drafted_pass_does_not_stop_the_drafting():
    """Batch 1: one drafted pass stalled 20 ms leaves the learned cost of a drafted token and the choice where they
    were (before, the line took it as drafts costing three times more)."""
    policy = policy_with({1: (1e-4, 2e-5, 1e-5, 2e-4)}, horizon=16)
    policy.observe_pass(2e-4, (0,))
    for i in range(20):
        policy.observe_pass(2e-4 + policy._table[8], (8,))
    line = (policy.extra_fixed, policy.extra_factor)
    policy.observe_pass(2e-2, (8,))
    assert (policy.extra_fixed, policy.extra_factor) == line
    policy.observe_pass(2e-4 + policy._table[8], (8,))
    assert policy.extra_factor == pytest.approx(line[1], rel=0.05)


def test_what_every_draft_adds_is_learned_as_a_fixed_part_not_a_factor():
    """Every drafted pass costs 1e-4 more than the calibration predicts, whatever its length (ragged positions and
    masks): the fit learns that as a fixed part and keeps the factor on the per-token cost at 1, where a factor alone
    would price every long draft too dear (and a short one too cheap)."""
    policy = policy_with({1: (1e-4, 2e-5, 1e-5, 2e-4)}, horizon=16)
    policy.observe_pass(2e-4, (0,))
    for i in range(60):
        n = 1 + i % 12
        policy.observe_pass(2e-4 + policy._table[n] + 1e-4, (n,))
    assert policy.extra_factor == pytest.approx(1.0, rel=0.05)
    assert policy.extra_fixed == pytest.approx(1e-4, rel=0.05)


def test_fewer_rows_than_measured_read_the_measured_batch_s_curve():
    """A batch whose rows finished: t draft tokens beside b rows cost what they cost beside the measured batch (a
    pass's fixed jump when any row drafts included), not a line extrapolated below the measured points."""
    cost = PassCost(batch=32, fed=[32, 33, 48, 96], pass_s=[1e-3, 1.3e-3, 1.6e-3, 2.6e-3], rows=[32, 256],
                    rows_s=[4e-4, 3.2e-3], step_s=1.5e-3)
    assert cost.extra(4 + 1, 4 + 1, base=4) == pytest.approx(cost.extra(33, 33))
    assert cost.extra(4 + 1, 4 + 1, base=4) >= 3e-4   # the jump, which a line through 32 and 33 down to 4 loses
    assert cost.extra(8 + 16, 8 + 16, base=8) == pytest.approx(cost.extra(48, 48))
    assert cost.extra(40, 40) == pytest.approx(cost.extra(40, 40, base=32))


@property_settings(2)
@given(xs=st.lists(st.integers(1, 300), min_size=1, max_size=8, unique=True),
       ys=st.lists(st.sampled_from([0.0, 2e-4, 1e-3, 1.7e-3, 5e-3, 3.3e-3]), min_size=8, max_size=8),
       start=st.integers(0, 60), size=st.integers(0, 400), batch=st.integers(1, 64))
def test_the_tables_a_batched_choice_reads_are_the_pass_s_interpolation_point_by_point(xs, ys, start, size, batch):
    """A pass's curve read at many points at once is :func:`_interpolate` at each, bit for bit (below, between and
    past the measured points; one point measured); the least step from each table entry on is the least of the
    steps from there and the least slope of the measured pass; both tables are contiguous doubles."""
    xs, ys = sorted(xs), ys[: len(xs)]
    many = _interpolate_from(xs, ys, start, start + size).tolist()
    assert [repr(v) for v in many] == [repr(_interpolate(xs, ys, x)) for x in range(start, start + size)]
    if len(xs) < 2:
        return
    cost = PassCost(batch=batch, fed=xs, pass_s=ys, rows=[batch, 8 * batch], rows_s=[1e-5, 8e-5], step_s=1e-3)
    policy = CostAwarePolicy(8)
    fed, _ = policy._padded_lists(cost, batch, size, batch)
    low = policy._min_marginal(cost, batch)
    least = policy._least_steps(cost, batch, fed)
    assert fed.typecode == least.typecode == "d"  # (contiguous doubles: the C choice reads them in place)
    assert list(least) == [min([low] + [fed[u + 1] - fed[u] for u in range(t, len(fed) - 1)]) for t in range(len(fed))]


@st.composite
def choice_case(draw):
    horizon = draw(st.integers(1, 40))
    # a pass curve with flat and steep steps (a noisy measurement), a projection per row, a drafter call
    steps = draw(st.lists(st.sampled_from([0.0, 1e-6, 1e-5, 4e-5, 2e-4]), min_size=horizon + 1, max_size=horizon + 1))
    rates = draw(st.lists(st.floats(0.3, 1.0), min_size=horizon, max_size=horizon))
    return horizon, steps, rates, draw(st.sampled_from([0.0, 2e-5, 3e-4])), draw(st.integers(1, 60))


def batch_one_case(horizon: int, steps, rates, drafter_s: float, limit: int):
    """A batch-1 policy whose pass of t tokens climbs by ``steps``, whose input's rates by position are ``rates`` and
    whose drafter call costs ``drafter_s``; and a sentence whose drafter has started, drafting at most ``limit``."""
    fed = list(range(1, horizon + 3))
    pass_s = [1e-4]
    for s in steps + [steps[-1]]:
        pass_s.append(pass_s[-1] + s)
    policy = CostAwarePolicy(horizon)
    policy.use_cost(PassCost(batch=1, fed=fed, pass_s=pass_s, rows=[1], rows_s=[1e-5], step_s=2e-4))
    policy.reach[1: horizon + 1] = [1000.0] * horizon
    policy.acc[1: horizon + 1] = [1000.0 * r for r in rates]
    policy._refresh()
    policy._drafter_s, policy._start_s = {1: drafter_s}, {1: 0.0}
    state = State(limit)
    state.extra["drafter_started"] = True
    return policy, state


@SETTINGS
@given(c=choice_case())
def test_the_batch_1_choice_is_the_best_draft_length_of_a_full_scan(c):
    """The choice stops reading positions where none after can pay (a bound on the average cost of any run of later
    positions); its answer is the draft length a scan of every length finds."""
    horizon, steps, rates, drafter_s, limit = c
    policy, state = batch_one_case(horizon, steps, rates, drafter_s, limit)
    step, table = policy.greedy_pass_s(1, policy.cost), policy._table
    best_n, best, expected, p = 0, policy.margin / step, 1.0, 1.0
    for n in range(1, min(limit, horizon) + 1):
        p *= policy.q[n]
        if p < 0.01:
            break
        expected += p
        rate = expected / (step + drafter_s + table[n])
        if rate > best:
            best_n, best = n, rate
    chosen = policy.choose(state)
    assert chosen == best_n or (best_n == 0 and chosen == min(limit, horizon, policy.probe_len))  # (or a probe)


@st.composite
def counted_choice_case(draw):
    horizon, steps, rates, drafter_s, limit = draw(choice_case())
    # a sentence's iterations so far: each reached a position and accepted up to it, or up to the one before
    seen = draw(st.lists(st.tuples(st.integers(1, horizon), st.booleans()), min_size=1, max_size=4))
    return horizon, steps, rates, drafter_s, limit, seen


@SETTINGS
@given(c=counted_choice_case())
def test_a_sentence_s_next_choice_is_the_best_draft_length_of_a_full_scan(c):
    """Once a sentence has counts of its own, the choice leans on them where they are and stops reading where no later
    position can pay: its answer is what a scan of every length finds, each position at the sentence's own rate where
    the sentence reached it and at the input's past that."""
    horizon, steps, rates, drafter_s, limit, seen = c
    policy, state = batch_one_case(horizon, steps, rates, drafter_s, limit)
    for top, all_accepted in seen:
        policy._count_sentence(state, top, top if all_accepted else top - 1)
    s_reach, s_acc = state.extra["policy_counts"]
    step, table, w = policy.greedy_pass_s(1, policy.cost), policy._table, policy.weight
    rate_at, expected, p = {0: policy.margin / step}, 1.0, 1.0
    for n in range(1, min(limit, horizon) + 1):
        p *= (s_acc[n] + w * policy.q[n]) / (s_reach[n] + w) if s_reach[n] else policy.q[n]
        if p < 0.01:
            break
        expected += p
        rate_at[n] = expected / (step + drafter_s + table[n])
    best = max(rate_at.values())
    best_n = min(n for n, rate in rate_at.items() if rate == best)
    chosen = policy.choose(state)
    if best_n == 0:
        assert chosen in (0, min(limit, horizon, policy.probe_len))  # (or a probe)
    else:
        assert chosen == best_n


@st.composite
def ranking_case(draw):
    horizon = draw(st.integers(1, 12))
    rows = draw(st.integers(1, 6))
    q = draw(st.lists(st.sampled_from([0.3, 0.6, 0.9, 0.99, 1.0]), min_size=horizon, max_size=horizon))
    limits = draw(st.lists(st.integers(0, horizon), min_size=rows, max_size=rows))
    counts = [draw(st.none() | st.lists(st.tuples(st.integers(0, 4), st.integers(0, 4)), min_size=horizon,
                                        max_size=horizon)) for _ in range(rows)]
    return horizon, q, limits, counts, draw(st.sampled_from([0.0, 0.05, 0.5]))


@SETTINGS
@given(c=ranking_case())
def test_a_batch_s_positions_come_best_first_as_a_full_sort_of_every_row_s_values(c):
    """The batched choice reads every row's positions best first from a heap of each row's next position: the same
    order as sorting every row's values (ties: the lower row, then the lower position), the same positions left out."""
    horizon, q, limits, counts, floor = c
    policy = CostAwarePolicy(horizon)
    policy.q[1: horizon + 1] = q
    states = []
    for row in counts:
        state = State()
        if row is not None:  # a sentence's own counts: reached, accepted (at most reached) by position
            reach = [0] + [n for n, _ in row] + [0]
            state.extra["policy_counts"] = (reach, [0] + [min(a, n) for n, a in row] + [0])
        states.append(state)
    everything = []
    for r, (state, lim) in enumerate(zip(states, limits)):
        p = 1.0
        sent = state.extra.get("policy_counts")
        for m in range(1, lim + 1):
            seen = sent[0][m] if sent is not None else 0
            p *= (sent[1][m] + policy.weight * q[m - 1]) / (seen + policy.weight) if seen else q[m - 1]
            if p < 0.01 or p < floor:
                break
            everything.append((-p, r, m))
    assert [(-p, r, m) for p, r, m in policy._ranked(states, limits, floor)] == sorted(everything)


def test_a_batch_s_no_draft_holds_while_rows_finish(monkeypatch):
    """A "no draft" choice is kept (nothing ranked again) while at least half its rows are left and nothing it depends
    on changed; a batch down to fewer rows than that chooses again."""
    policy = policy_with({8: (1e-4, 3e-4, 0.0, 2e-3)}, horizon=10, probe_share=1e-9)
    policy._rows_fused = True
    policy.reach[1:11], policy.acc[1:11] = [1000.0] * 10, [990.0] * 10
    policy._refresh()
    ranked = ranking_spy(policy, monkeypatch)
    every_position_ranked(policy, 8)
    assert policy.choose_batch([State() for _ in range(8)], None) == [0] * 8 and ranked == [8]
    for rows in (8, 7, 5):
        assert policy.choose_batch([State() for _ in range(rows)], None) == [0] * rows
    assert ranked == [8]
    policy.choose_batch([State() for _ in range(4)], None)
    assert ranked == [8, 4]


def test_a_batch_s_drafted_pass_is_judged_against_a_greedy_pass_of_the_same_batch():
    """What drafts add in a batch is a drafted pass less a greedy pass of the same rows in the same batch: the first
    batch (the longest sentences) costs more per pass than the calibration says, and judged against the calibration's
    greedy pass that difference became the line's fixed part and stopped drafting at a cold start. A drafted pass
    waits for its batch's greedy pass; one that never comes is left out."""
    policy = policy_with({4: (1e-3, 1e-4, 0.0, 1.1e-3)}, horizon=8)
    policy._rows_fused = True
    cost = policy._costs[4]
    policy._last = cost
    drafted = (2, 2, 2, 2)
    predicted = cost.extra(12, 12, base=4)
    policy.new_batch()
    for _ in range(5):  # long sentences: every pass costs 3e-3 more than the calibration's, drafted or not
        policy.observe_pass(1.1e-3 + 3e-3 + predicted, drafted)
    assert 3 not in policy._batch_fits and policy.batch_line(4) == (0.0, 1.0)
    policy.observe_pass(1.1e-3 + 3e-3, (0, 0, 0, 0))  # the batch's own greedy pass: the drafted ones add the prediction
    fixed, factor = policy.batch_line(4)
    assert fixed + factor * predicted == pytest.approx(predicted, rel=1e-6)
    policy.new_batch()  # the next batch: no greedy pass of its own yet
    for _ in range(5):
        policy.observe_pass(1.1e-3 + 3e-3 + 5 * predicted, drafted)
    # waiting, not judged against the last batch's greedy pass (the new batch relaxed the line towards the
    # calibration's, where it is already: the same up to rounding)
    assert policy.batch_line(4) == pytest.approx((fixed, factor), abs=1e-12)
    policy.new_batch()
    # and left out when the batch ends without one
    assert policy.batch_line(4) == pytest.approx((fixed, factor), abs=1e-12)


class PassLog(CostAwarePolicy):
    def __init__(self, *a, **kw):
        super().__init__(*a, **kw)
        self.passes = []

    def observe_pass(self, seconds, drafted):
        self.passes.append(len(drafted))
        super().observe_pass(seconds, drafted)

    def observe_batch_pass(self, states, asked, seconds, drafted, *drafter):  # (a drafted iteration: observed)
        if seconds is not None:
            self.passes.append(len(drafted))
        super().observe_batch_pass(states, asked, seconds, drafted, *drafter)

    def take_held_step(self, rows):
        held = super().take_held_step(rows)
        if held:
            self.passes.append(-rows)  # a held greedy pass: not shown to observe_pass
        return held


def test_the_batched_loop_leaves_a_batch_s_first_pass_out_of_what_the_policy_measures():
    """A batch's first pass also allocates its caches, and the pass in which rows finish also drops them: the policy
    is shown every pass but the first and those a held "no draft" covers, each under the rows it fed."""
    _, d, ver = random_model(0)
    srcs = [torch.tensor([5 + i % 7, 6, 7 + i % 3, d.eos()]) for i in range(5)]
    policy = PassLog(8)
    policy.use_cost(PassCost(batch=5, fed=[5, 10, 40], pass_s=[1e-4, 2e-4, 8e-4], rows=[5, 40],
                             rows_s=[1e-5, 8e-5], step_s=2e-4))
    out = decode_batched(ver, srcs, InputCopyDrafter(), accept_top1, batch_size=5, policy=policy, max_len_b=6)
    assert [r.tokens for r in out] == [greedy_decode(ver, s, max_len_b=6).tokens for s in srcs]
    passes = max(r.stats.iterations for r in out)
    assert len(policy.passes) == passes - 1 and policy.passes[0] == 5
    assert [abs(p) for p in policy.passes] == sorted((abs(p) for p in policy.passes), reverse=True)


def test_a_cpu_batch_projects_only_its_rows_real_positions():
    """On a CPU the batched exact rule projects each row's real positions only (a short draft beside a long one is
    not padded to it), and every row's tokens are those of its own batch-1 projection."""
    _, d, ver = random_model(0)
    assert projects_real_positions(ver)
    srcs = [torch.tensor([5, 6, 7, d.eos()]), torch.tensor([8, 9, d.eos()]), torch.tensor([5, 9, 6, 7, d.eos()])]
    bver = BatchedVerifier(ver)
    bver.start(srcs)
    lengths = [1, 7, 3]
    tokens = torch.tensor([[d.eos()] + [5 + i for i in range(n - 1)] + [d.pad()] * (7 - n) for n in lengths])
    hidden = bver.forward(tokens, lengths)
    projected = []
    real_output_layer = ver.output_layer
    ver.output_layer = lambda h: projected.append(h.reshape(-1, h.size(-1)).size(0)) or real_output_layer(h)
    try:
        with torch.inference_mode():
            proj = BatchedMaskedLogProbs(ver).of(hidden, [0, 0, 0], [50, 50, 50])
            got = proj.top1([0, 1, 2], 0, 8, lengths)
            assert projected == [sum(lengths)]
            for b, n in enumerate(lengths):
                assert got[b] == MaskedLogProbs(ver, 50).of(hidden[b, :n], 0).top1(0, n)
            assert proj.top1([1, 2], 2, 4, [7, 3]) == [got[1][2:4], got[2][2:3]]
    finally:
        ver.output_layer = real_output_layer


class ChoiceCount(CostAwarePolicy):
    def __init__(self, *a, **kw):
        super().__init__(*a, **kw)
        self.asked = 0

    def choose(self, state, verifier=None):
        self.asked += 1
        return super().choose(state, verifier)


def test_a_held_no_draft_lets_the_batch_1_loop_take_greedy_steps_without_asking():
    """Where drafting does not pay, the batch-1 loop takes the greedy steps the policy says its "no draft" holds for
    without asking it again (a greedy pass can cost 0.1 ms, a choice a few microseconds); the probes still come within
    their budget, and the output is greedy's."""
    from conftest import copy_model

    _, d, ver = copy_model()
    g = torch.Generator().manual_seed(1)
    srcs = [torch.cat([torch.randint(4, len(d), (int(k),), generator=g), torch.tensor([d.eos()])])
            for k in torch.randint(4, 14, (40,), generator=g)]
    step = 1e-4
    policy = ChoiceCount(8)
    # (a draft token as dear as 100 greedy steps: the greedy step the loop measures on a loaded machine -- another
    # test beside this one -- can come to ten times the calibration's, and a sentence that asks again after a few
    # greedy steps must still find that no draft pays)
    policy.use_cost(PassCost(batch=1, fed=[1, 2, 9], pass_s=[1e-4, 1e-2, 9e-2], rows=[1, 8], rows_s=[1e-5, 8e-5],
                             step_s=step))
    out = [draft_verify_accept(ver, s, InputCopyDrafter(), accept_top1, policy=policy, max_len_b=12) for s in srcs]
    assert [r.tokens for r in out] == [greedy_decode(ver, s, max_len_b=12).tokens for s in srcs]
    iterations = sum(r.stats.iterations for r in out)
    assert iterations > 200 and policy.asked < iterations / 4
    assert all(len(r.stats.planned) == r.stats.iterations for r in out)
    assert sum(1 for r in out for n in r.stats.planned if n) <= 2 + policy.probes


class BatchChoiceCount(CostAwarePolicy):
    def __init__(self, *a, **kw):
        super().__init__(*a, **kw)
        self.asked = self.held = 0

    def choose_batch(self, states, verifier):
        self.asked += 1
        return super().choose_batch(states, verifier)

    def take_held_step(self, rows):
        held = super().take_held_step(rows)
        self.held += held
        return held


def test_a_held_no_draft_lets_the_batched_loop_take_greedy_passes_without_asking():
    """Where no draft pays in a batch (here a drafted token costs ten greedy rows), the batched loop takes the greedy
    passes its held "no draft" covers without asking the policy or doing per-row work for them (a batch-32 greedy pass
    of the fast backend costs 0.4 ms, a choice 10-80 us); every row's output is still its greedy output."""
    from conftest import copy_model

    _, d, ver = copy_model()
    g = torch.Generator().manual_seed(2)
    srcs = [torch.cat([torch.randint(4, len(d), (int(k),), generator=g), torch.tensor([d.eos()])])
            for k in torch.randint(6, 14, (40,), generator=g)]
    policy = BatchChoiceCount(8)
    policy.use_cost(PassCost(batch=8, fed=[8, 9, 16], pass_s=[8e-4, 1.8e-3, 8.8e-3], rows=[8, 64],
                             rows_s=[1e-5, 8e-5], step_s=8e-4))
    out = decode_batched(ver, srcs, InputCopyDrafter(), accept_top1, batch_size=8, policy=policy, max_len_b=24)
    assert [r.tokens for r in out] == [greedy_decode(ver, s, max_len_b=24).tokens for s in srcs]
    assert policy.held > policy.asked
    assert all(len(r.stats.planned) == r.stats.iterations for r in out)


def test_drafted_passes_that_realise_less_than_promised_raise_a_batch_s_bar():
    """A drafted batch pass is judged by what it gave -- the rows' tokens and accepted drafts per second of the pass, the
    drafter's call and the choice -- against what its choice promised; passes that realise a third of it raise the
    rate a draft must promise (the calibration, the fit and the acceptance estimates may all be off), and a choice
    that cleared the old bar is greedy."""
    policy, rows = started_batch(per_token=1e-4)
    bar = policy._bar(8, 2e-3)
    n = policy.choose_batch(rows, None)
    assert sum(n) > 0
    for _ in range(6):
        rate = policy._promised[1]
        policy.observe_drafter(1e-5, 8)
        for st_, k in zip(rows, n):
            policy.observe(st_, k, k)
        policy.observe_pass((8 + sum(n)) / (rate / 3), n)  # a third of the promised tokens per second
        policy._batch_fits.clear()  # (what the fit would learn from these passes is another test's)
        n = policy.choose_batch(rows, None)
        if not any(n):
            break
    assert not any(n) and policy._bar(8, 2e-3) > 1.5 * bar
    policy._realized.clear()
    policy._batch_skips.clear()  # (the held "no draft" made afresh)
    assert sum(policy.choose_batch(rows, None)) > 0  # the bar, not the counts, made it greedy


def test_a_hold_made_by_one_sentence_s_rejected_drafts_ends_with_that_sentence():
    """A sentence whose drafts are rejected at once, where the input's drafts pay, waits for itself (greedy steps held
    1, 2, 4 .. at a time, its first position's counts halved at each wait); the next sentence, with the input-wide
    rates alone, drafts from its first step, and the sentence's waits leave the probe's budget as it was (the
    input's drafts pay: nothing to probe)."""
    step = 2e-4
    policy = policy_with({1: (1e-4, 3e-5, 1e-5, step)}, horizon=10)
    accepted_at(policy, 900)
    bad = State()
    bad.extra["drafter_started"] = True
    for _ in range(200):
        policy.observe(bad, drafted=5, accepted=0)
    skipped = policy._skipped_s
    held = []
    for _ in range(3):
        assert policy.choose(bad) == 0
        held.append(policy.hold)
        policy.hold = 0  # (the loop took them)
    assert held == [0, 1, 3] and policy.choose(bad) == 0 and policy.hold == 7
    policy.hold -= 2  # the loop took two of the held steps before the sentence ended
    policy.new_sentence()
    assert policy.hold == 0
    assert policy._skipped_s == skipped
    assert policy.choose(State()) > 0


def test_a_hold_the_input_wide_rates_make_carries_into_the_next_sentence_with_the_same_probe_time():
    """Where no sentence's drafts pay (GAD's drafter on a CPU), a new sentence makes the choice again and holds on: the
    probe comes after as many greedy steps as without the new sentence."""
    def steps_to_probe(new_sentence_at):
        policy = policy_with({1: (1e-4, 3e-5, 1e-5, 2e-4)}, horizon=10)
        accepted_at(policy, 900)
        policy.observe_drafter(5e-3)  # a drafter call as dear as 25 greedy steps
        policy.observe_start(5e-3)
        state = State()
        for steps in range(100_000):
            if steps == new_sentence_at:
                policy.new_sentence()
                state = State()
            if policy.hold:  # (what the batch-1 loop does)
                policy.hold -= 1
            elif policy.choose(state):
                return steps
        raise AssertionError("no probe")

    plain = steps_to_probe(-1)
    assert plain > 1000
    assert all(abs(steps_to_probe(at) - plain) <= 1 for at in (1, 30, 700))


def test_a_batch_charges_a_drafter_start_by_the_share_of_the_tokens_its_sentences_have_left():
    """A drafter start is paid once a sentence and serves all its later drafts: a batch of long sentences whose starts
    cost 8 greedy tokens each drafts (its first draft's tokens are a small share of the tokens left), the same batch
    near the end of its sentences does not, nor does one whose starts were charged whole to the iteration."""
    def choice(src_len, decoded):
        policy = policy_with({8: (1e-4, 3e-5, 0.0, 2e-3)}, horizon=10)
        policy._rows_fused = True
        accepted_at(policy, 950)
        policy.observe_drafter(1e-5, 8)
        policy.observe_start(16e-3, 8)  # 2 ms a row: what a greedy pass of the batch costs
        policy._skipped_s = -1e9  # (no probe in this test)
        return policy.choose_batch([State(10, src_len=src_len, decoded=decoded) for _ in range(8)], None)

    assert all(n >= 5 for n in choice(100, 0))
    assert choice(100, 95) == [0] * 8  # five tokens left: the start is charged whole
    assert choice(0, 0) == [0] * 8


def test_a_run_s_first_batch_drafts_once_it_has_measured_a_greedy_pass_of_its_own():
    """Drafts are priced by how much dearer real passes are than the calibration's and judged against the batch's own
    greedy pass: the run's first batch takes one greedy step first (to measure it), then drafts, and the fit learns
    from every drafted pass at once (none waits); a later batch drafts at once, priced by the run's greedy passes."""
    policy, rows = started_batch(per_token=3e-5)

    def batch():
        policy.new_batch()
        choices = []
        for _ in range(4):
            n = policy.choose_batch(rows, None)
            choices.append(sum(n))
            for st_, k in zip(rows, n):
                policy.observe(st_, k, k)  # (every draft accepted)
            policy.observe_pass(2e-3 + 1e-3 * bool(sum(n)), n)  # (drafts really add 1 ms)
        return choices
    first = batch()
    assert first[0] == 0 and all(c > 0 for c in first[1:])
    assert len(policy._batch_fits) == 1 and not policy._pending
    assert all(c > 0 for c in batch())


def test_a_new_batch_makes_the_last_batch_s_held_no_draft_again():
    policy = policy_with({8: (1e-4, 2e-4, 1e-5, 1e-3)}, horizon=10)
    accepted_at(policy, 900)
    bad = [State() for _ in range(8)]
    for st_ in bad:
        for _ in range(20):
            policy.observe(st_, drafted=5, accepted=0)
    policy._skipped_s = -1e9  # (no probe in this test)
    assert policy.choose_batch(bad, None) == [0] * 8 and policy._batch_skips
    policy.new_batch()
    assert not policy._batch_skips


def ranked_positions(policy: CostAwarePolicy, states, limits, q) -> list:
    """Every row's positions worth 1 % or more as ``(-value, row, position)``, sorted: best first."""
    ranked = []
    for r, (state, lim) in enumerate(zip(states, limits)):
        p, sent = 1.0, state.extra.get("policy_counts")
        for m in range(1, lim + 1):
            seen = sent[0][m] if sent is not None else 0
            p *= (sent[1][m] + policy.weight * q[m - 1]) / (seen + policy.weight) if seen else q[m - 1]
            if p < 0.01:
                break
            ranked.append((-p, r, m))
    return sorted(ranked)


def scanned_rates(policy: CostAwarePolicy, cost: PassCost, ranked, started, src_lens, added) -> list:
    """The tokens per second that the t best-ranked positions promise, t = 0 .. all (0: the bar a draft must clear),
    each count priced as the batched choice prices it: the drafter of the rows asked, the fresh rows' starts by their
    expected tokens' share of the tokens they have left, and what ``added(t, widest draft + 1, positions past the
    8th, rows projected)`` says the tokens add to the pass, where a position past a row's 8th is projected only where
    the row's drafts before its chunk (8, 16, 32 ... positions) were all accepted: in expectation, the row's value at
    the chunk's start."""
    B = cost.batch
    step = policy.greedy_pass_s(B, cost)
    rate_at, expected, asked, fresh, new_tokens, new_left = [policy._bar(B, step)], float(B), set(), 0, 0.0, 0
    width, late, projected, chunk_value = 1, 0, 0.0, {}
    for t, (p, r, m) in enumerate(ranked, 1):
        if m < 8:
            projected += 1.0
        else:
            starts = [8]
            while starts[-1] * 2 + 8 <= m:
                starts.append(starts[-1] * 2 + 8)
            if m == starts[-1]:
                chunk_value[r] = -p
            projected += chunk_value[r]
        expected -= p
        if r not in asked:
            asked.add(r)
            fresh += not started[r]
            if not started[r]:  # a fresh row's start, charged by its expected tokens' share of the tokens it has left
                new_tokens, new_left = new_tokens + 1, new_left + max(src_lens[r], 1)
        if not started[r]:
            new_tokens -= p
        width, late = max(width, m + 1), late + (m >= 8)
        start = policy.start_cost(fresh) * min(new_tokens / new_left, 1.0) if new_left else 0.0
        rate_at.append(expected / (step + policy.drafter_cost(len(asked)) + start
                                   + added(t, width, late, projected)))
    return rate_at


@SETTINGS
@given(c=fused_case())
def test_a_fused_batch_s_choice_is_the_best_count_of_ranked_positions_of_a_full_scan(c):
    """On a CPU's fused pass the batched choice reads positions best first and stops where no later one can pay: where
    the pass's cost climbs in steps, what stops it is the least step from there on, not the next one, and its answer
    is what a scan of every count of the best-ranked positions finds, each priced as the choice prices it (the
    drafter of the rows asked, their starts' share of the tokens left, what the real tokens add to the pass)."""
    horizon, q, limits, counts, fed, pass_s, drafter_s, started, src_lens, per_row = c
    B = len(limits)
    cost = PassCost(batch=B, fed=fed, pass_s=pass_s, step_s=pass_s[0], **projection_rows(B, per_row))
    policy = batch_policy(cost, horizon, q, drafter_s, fused=True)
    states = rows_of(counts, started, limits, src_lens)
    ranked = ranked_positions(policy, states, limits, q)
    used = policy._costs[B]  # (the cost as the policy reads it: a projection no dearer per row than fewer rows')
    rate_at = scanned_rates(policy, cost, ranked, started, src_lens,
                            lambda t, width, late, projected: used.fed_extra(B + t, base=B)
                            + used.rows_extra(B + projected, base=B))
    best = max(rate_at)
    best_t = rate_at.index(best) if best > rate_at[0] else 0
    got = policy.choose_batch(states, None)
    if not best_t:  # no draft, or a probe of a few rows
        assert got == [0] * B or got == policy._probe_rows([min(s.max_draft, horizon) for s in states])
    else:
        want = [0] * B
        for _, r, _ in ranked[:best_t]:
            want[r] += 1
        assert got == want or rate_at[sum(got)] == pytest.approx(best, rel=1e-9)


@st.composite
def padded_case(draw):
    horizon, rows, q, limits, counts = batch_rows(draw, [0.3, 0.6, 0.9, 0.99, 1.0])
    # a pass curve with flat and steep steps (a GPU's, measured with noise) up to a few tokens per row
    fed = [rows * n for n in (1, 2, 3, 5, 9)]
    pass_s = [1e-3]
    for _ in fed[1:]:
        pass_s.append(pass_s[-1] + draw(st.sampled_from([0.0, 1e-6, 1e-5, 2e-4])))
    return (horizon, q, limits, counts, fed, pass_s, draw(st.sampled_from([0.0, 1e-7, 1e-5])),
            draw(st.sampled_from([0.0, 2e-5, 3e-4])), draw(st.lists(st.booleans(), min_size=rows, max_size=rows)),
            draw(st.lists(st.integers(0, 40), min_size=rows, max_size=rows)))


@SETTINGS
@given(c=padded_case())
def test_a_padded_batch_s_choice_is_the_best_count_of_ranked_positions_of_a_full_scan(c):
    """On a GPU (a padded pass) the batched choice is made in numpy, every position at once, where many positions would
    be read: its answer is what a scan of every count of the best-ranked positions finds, each count priced with the
    scalar cost model (the drafter of the rows asked, their starts' share of the tokens left, the pass, the projected
    rows and the padding). Where few would be read, the loop reads them best first and stops early: a best-first
    prefix."""
    horizon, q, limits, counts, fed, pass_s, pad_s, drafter_s, started, src_lens = c
    B = len(limits)
    cost = PassCost(batch=B, fed=fed, pass_s=pass_s, rows=[B, 8 * B], rows_s=[1e-5, 3e-5], step_s=1.2e-3,
                    pad_s=pad_s)
    policy = batch_policy(cost, horizon, q, drafter_s, fused=False)
    states = rows_of(counts, started, limits, src_lens)
    limits = policy._limits(states, cost)  # (no row past the widest pass measured: the cost's own width)
    ranked = ranked_positions(policy, states, limits, q)
    rate_at = scanned_rates(policy, cost, ranked, started, src_lens, lambda t, width, late, projected: (
        cost.extra(B + t, B * min(width, 8) + late, base=B) + pad_s * (B * (width - 1) - t)))
    best_t, best = 0, rate_at[0]
    for t, rate in enumerate(rate_at[1:], 1):
        if rate > best * (1 + 1e-12):
            best_t, best = t, rate
    want = [0] * B
    for _, r, _ in ranked[:best_t]:
        want[r] += 1
    probe = policy._probe_rows(limits)
    for many in (0, 10 ** 9):  # the choice in numpy (many positions to read), and the loop (few)
        saved, batched_choice._MANY_POSITIONS = batched_choice._MANY_POSITIONS, many
        try:
            got = policy.choose_batch(states, None)
        finally:
            batched_choice._MANY_POSITIONS = saved
        policy._batch_skips.clear()  # (a "no draft" held over would answer the second choice without making it)
        policy._standing = None  # (as would a draft that took every position)
        if not best_t:  # no draft, or a probe of a few rows
            assert got == [0] * B or got == probe, many
        elif many == 0:
            assert got == want
        else:  # the loop stops reading where the next token costs more than it brings: some best-first prefix
            prefixes, counts = [], [0] * B
            for _, r, _ in ranked:
                counts[r] += 1
                prefixes.append(list(counts))
            assert got in prefixes
