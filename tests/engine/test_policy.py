"""The cost-aware draft-length policy: lossless with every drafter, rule and backend, batch 1 and batched (random
fairseq Transformers, float64, pass costs drawn so that every kind of decision -- skip the drafter, a short draft, the
whole draft, probes -- occurs); and its decisions follow the costs and acceptance rates it is given."""
import math
from unittest import mock

import pytest
import torch
from hypothesis import given
from hypothesis import strategies as st
from helpers.properties import property_settings

from conftest import MODEL_CONFIGS, random_model
from fastdec.bench.methods import parse_method
from fastdec.engine import InputCopyDrafter, accept_top1, accept_top_beta, greedy_decode
from fastdec.engine.batched import decode_batched
from fastdec.engine.fast_verifier import FastVerifier
from fastdec.engine.load import make_verifier
from fastdec.engine.loop import draft_verify_accept
from fastdec.engine.policy import CostAwarePolicy, check_policy, cost_aware, measure_pass_cost, measured_costs
from helpers.drafters import NoisyOracleDrafter, PerSourceDrafter, RandomDrafter
from helpers.policy import accepted_at, ranking_spy, seen_greedy, State, policy_with

SETTINGS = property_settings(1 / 2)


@st.composite
def case(draw):
    idx = draw(st.sampled_from(range(len(MODEL_CONFIGS))))
    _, d, _ = random_model(idx)
    n = draw(st.integers(2, 9))
    lengths = draw(st.lists(st.integers(0, 14), min_size=n, max_size=n))
    srcs = [torch.tensor(draw(st.lists(st.integers(4, len(d) - 1), min_size=k, max_size=k)) + [d.eos()])
            for k in lengths]
    kw = dict(max_len_a=draw(st.sampled_from([0.0, 0.5, 1.2])), max_len_b=draw(st.integers(1, 12)))
    # per-token cost from free (a GPU) to dearer than a greedy step (a slow CPU); drafter calls from free to costly
    costs = {b: (1e-4, draw(st.sampled_from([0.0, 2e-5, 3e-4])), 1e-5, 2e-4 * b) for b in (1, 64)}
    drafter_s = draw(st.sampled_from([0.0, 1e-4, 5e-3]))
    return idx, srcs, kw, costs, drafter_s, draw(st.integers(0, 10_000))


def drafters(d, refs, seed):
    oracle = PerSourceDrafter(lambda src: NoisyOracleDrafter(refs[tuple(src)], len(d), noise=0.3, seed=seed))
    return [(InputCopyDrafter(), accept_top1), (RandomDrafter(len(d), max_tokens=10, seed=seed), accept_top1),
            (oracle, accept_top1), (oracle, accept_top_beta(1, 2.5))]


@SETTINGS
@given(c=case())
def test_policy_keeps_exact_methods_lossless_at_batch_1_and_batched(c):
    idx, srcs, kw, costs, drafter_s, seed = c
    _, d, ver = random_model(idx)
    greedy = [greedy_decode(ver, s, **kw).tokens for s in srcs]
    refs = {tuple(s.tolist()): g for s, g in zip(srcs, greedy)}
    decisions = set()
    for drafter, rule in drafters(d, refs, seed):
        policy = policy_with(costs)
        if drafter_s:
            policy.observe_drafter(drafter_s)
        one = [draft_verify_accept(ver, s, drafter, rule, policy=policy, **kw) for s in srcs]
        assert [r.tokens for r in one] == greedy, (type(drafter).__name__, rule)
        for r in one:
            assert len(r.stats.planned) == r.stats.iterations
            assert all(k <= n for k, n in zip(r.stats.drafted, r.stats.planned))
            decisions.update(min(n, 1) for n in r.stats.planned)
        batched = decode_batched(ver, srcs, drafter, rule, batch_size=len(srcs), policy=policy, **kw)
        assert [r.tokens for r in batched] == greedy, (type(drafter).__name__, rule, "batched")
        # a GPU's padded passes (every row as wide as the widest draft, the padded choice and the choices that stand)
        with mock.patch.object(cost_aware, "projects_real_positions", lambda verifier: False):
            padded = decode_batched(ver, srcs, drafter, rule, batch_size=len(srcs), policy=policy, pack=False, **kw)
        assert [r.tokens for r in padded] == greedy, (type(drafter).__name__, rule, "padded")
        for r in batched + padded:  # one allowed length per iteration, held greedy passes and waited-out ones included
            assert len(r.stats.planned) == r.stats.iterations
            assert all(k <= n for k, n in zip(r.stats.drafted, r.stats.planned))
    assert decisions  # (which decisions occur depends on the draw; across draws both do: test below)


def test_the_fast_backend_with_the_policy_returns_its_own_greedy_output_at_batch_1_and_batched():
    from fastdec.engine.fast_verifier import FastVerifier

    model, d, _ = random_model(1)
    fast = FastVerifier(model, dtype=torch.float64)
    g = torch.Generator().manual_seed(5)
    srcs = [torch.cat([torch.randint(4, len(d), (int(n),), generator=g), torch.tensor([d.eos()])])
            for n in torch.randint(1, 14, (12,), generator=g)]
    kw = dict(max_len_a=1.2, max_len_b=10)
    greedy = [greedy_decode(fast, s, **kw).tokens for s in srcs]
    refs = {tuple(s.tolist()): t for s, t in zip(srcs, greedy)}
    for drafter, rule in drafters(d, refs, 3):
        policy = CostAwarePolicy(16)  # measured on the fast verifier itself
        out = [draft_verify_accept(fast, s, drafter, rule, policy=policy, **kw).tokens for s in srcs]
        assert out == greedy, type(drafter).__name__
        batched = decode_batched(fast, srcs, drafter, rule, batch_size=5, policy=policy, **kw)
        assert [r.tokens for r in batched] == greedy, (type(drafter).__name__, "batched")


class CountingDrafter(InputCopyDrafter):
    """IAD that counts its calls and starts (the policy must skip both when drafting does not pay)."""

    def __init__(self):
        super().__init__()
        self.calls = self.starts = 0

    def start(self, state):
        self.starts += 1
        super().start(state)

    def propose(self, state):
        self.calls += 1
        return super().propose(state)


def copy_sources(d, n=30, seed=0):
    g = torch.Generator().manual_seed(seed)
    return [torch.cat([torch.randint(4, len(d), (int(k),), generator=g), torch.tensor([d.eos()])])
            for k in torch.randint(4, 14, (n,), generator=g)]


def test_a_draft_that_costs_more_than_it_saves_is_not_asked_for():
    """A pass whose every extra token costs ten greedy steps: after the first (learning) draft, only probes, whose
    cost stays within the policy's probe share."""
    from conftest import copy_model

    _, d, ver = copy_model()
    srcs = copy_sources(d)
    step = 1e-4
    policy = policy_with({1: (1e-4, 10 * step, 1e-5, step)}, probe_share=0.01)
    drafter = CountingDrafter()
    out = [draft_verify_accept(ver, s, drafter, accept_top1, policy=policy, max_len_b=12) for s in srcs]
    iterations = sum(r.stats.iterations for r in out)
    planned = [n for r in out for n in r.stats.planned]
    assert drafter.calls == sum(1 for n in planned if n > 0) <= 1 + policy.probes
    assert drafter.starts <= drafter.calls
    assert sum(r.stats.iterations for r in out) == sum(len(r.tokens) for r in out) - sum(
        sum(r.stats.accepted) for r in out)
    assert iterations > 100 and drafter.calls < 5


def test_a_free_pass_drafts_the_whole_horizon_and_a_learned_position_stops_it():
    """Free extra tokens (a GPU-like pass) and a well-accepted drafter: draft everything up to the horizon; when the
    counts say position 3 is never accepted, stop the draft at 2."""
    policy = policy_with({1: (1e-4, 0.0, 0.0, 2e-4)}, horizon=8)

    state = State(20)
    policy.reach[1:9] = [1000.0] * 8
    policy.acc[1:9] = [950.0] * 8
    policy._refresh()
    assert policy.choose(state) == 8
    policy.acc[3] = 0.0
    policy._refresh()
    assert policy.choose(state) == 2
    state.max_draft = 1
    assert policy.choose(state) == 1


def test_the_drafter_cost_decides_between_a_short_draft_and_none():
    policy = policy_with({1: (1e-4, 5e-5, 1e-5, 2e-4)}, horizon=10)
    policy.reach[1:11] = [1000.0] * 10
    policy.acc[1:11] = [700.0] * 10
    policy._refresh()
    policy._drafter_s = {1: 1e-6}
    cheap = policy.choose(State())
    policy._drafter_s = {1: 1e-2}  # a drafter call as dear as 50 greedy steps
    assert cheap >= 1 and policy.choose(State()) == 0
    started = State()
    started.extra["drafter_started"] = True
    policy._drafter_s, policy._start_s = {1: 1e-6}, {1: 1e-2}  # a cheap call, but a dear start (GAD's encoder)
    policy.observe_drafter(1e-6)
    assert policy.choose(State()) == 0 and policy.choose(started) >= 1


def test_measured_passes_correct_the_calibration():
    """Passes with drafts that take 4x what the calibration predicts raise the factor on the predicted extra cost
    until drafting stops paying; a version change (new counts) makes the skipped choice be computed again."""
    policy = policy_with({1: (1e-4, 2e-5, 1e-5, 2e-4)}, horizon=10)
    policy.reach[1:11] = [1000.0] * 10
    policy.acc[1:11] = [700.0] * 10
    policy._refresh()
    state = State()
    n = policy.choose(state)
    assert n >= 1
    for _ in range(60):
        policy.observe_pass(2e-4, (0,))                                      # greedy passes as calibrated
        policy.observe_pass(2e-4 + 4 * policy._table[n], (n,))               # drafted passes 4x dearer
    assert policy.extra_factor > 3 and policy.greedy_s == pytest.approx(2e-4)
    assert policy.choose(state) < n
    policy.extra_factor = 8.0
    assert policy.choose(state) == 0
    policy.extra_factor = 1.0
    assert policy.choose(state) == 0  # the skipped choice is reused: nothing it depends on was observed
    policy.observe(state, drafted=3, accepted=3)
    assert policy.choose(state) >= 1


def test_per_sentence_counts_override_the_input_wide_rate():
    policy = policy_with({1: (1e-4, 3e-5, 1e-5, 2e-4)}, horizon=10)
    policy.reach[1:11] = [1000.0] * 10
    policy.acc[1:11] = [900.0] * 10
    policy._refresh()
    good, bad = State(), State()
    for _ in range(20):
        policy.observe(bad, drafted=5, accepted=0)
    assert policy.choose(good) > policy.choose(bad) == 0


def test_a_sentence_s_first_draft_is_decided_by_the_input_s_first_drafts():
    """Across all iterations the rates lean towards the sentences that kept drafting; a sentence without counts of its
    own decides with the rates of the input's first drafts, which lean on the others until they have counts."""
    policy = policy_with({1: (1e-4, 3e-5, 1e-5, 2e-4)}, horizon=10)
    policy.reach[1:11] = [1000.0] * 10
    policy.acc[1:11] = [900.0] * 10
    policy._refresh()
    assert policy.q_first is policy.q and policy.choose(State()) > 0
    policy.reach_first[1], policy.acc_first[1] = 100.0, 5.0  # first drafts rejected at their first token
    policy._refresh()
    assert policy.q_first[1] == pytest.approx((5 + 2 * policy.q[1]) / 102) and policy.q_first[2] == policy.q[2]
    drafting = State()
    policy.observe(drafting, drafted=5, accepted=5)  # a sentence whose own drafts are accepted
    assert policy.choose(drafting) > 0 and policy.choose(State()) == 0
    assert [r for _, r, _ in policy._ranked([State(), drafting], [5, 5], 0.0)][:1] == [1]


def test_a_drafter_that_only_just_pays_stays_held_into_the_next_sentence():
    """A held "no draft" ends at a new sentence only where its first draft clearly pays (``resume``): a draft that
    promises a few per cent loses them to the estimates' errors. A sentence whose own rejected drafts said "no draft"
    where the input's first drafts pay waits for itself: its wait ends with it."""
    def held_after_new_sentence(accepted_per_thousand, first_per_thousand):
        policy = policy_with({1: (1e-4, 3e-5, 1e-5, 2e-4)}, horizon=10)
        policy.reach[1:11] = [1000.0] * 10
        policy.acc[1:11] = [float(accepted_per_thousand)] * 10
        policy._refresh()
        bad = State()
        bad.extra["drafter_started"] = True
        for _ in range(20):
            policy.observe(bad, drafted=5, accepted=0)
        # (the input's first drafts: accepted per thousand at each position)
        policy.reach_first[1:11], policy.acc_first[1:11] = [1e6] * 10, [1e3 * first_per_thousand] * 10
        policy._refresh()
        promise = policy._best_length(10, False, None, 2e-4, policy.margin)
        assert policy.choose(bad) == 0
        own = "policy_waits" in bad.extra
        if not own:
            assert policy.hold > 0
        policy.new_sentence()
        return promise, own, policy.hold > 0
    assert held_after_new_sentence(100, 100) == (0, False, True)  # does not pay: held on
    promise, own, held = held_after_new_sentence(400, 400)
    assert promise > 0 and own and not held  # the input's first drafts pay: the sentence's own wait, ended with it
    for a in (400, 900):
        assert held_after_new_sentence(a, 0.1)[1:] == (False, True)  # first drafts rejected: the input's hold


def test_a_sentence_whose_own_drafts_were_rejected_asks_again_after_waits_that_double():
    """IAD's drafts rejected at an edit (the source's copy out of line for a few tokens) must not make the sentence
    decode the rest of itself greedily: its counts halve and it asks again after 1, 2, 4 .. 16 greedy steps."""
    policy = policy_with({1: (1e-4, 3e-5, 1e-5, 2e-4)}, horizon=10)
    accepted_at(policy, 950)
    sent = State()
    sent.extra["drafter_started"] = True
    for _ in range(20):
        policy.observe(sent, drafted=5, accepted=0)
    reach = list(sent.extra["policy_counts"][0])
    steps, waits = 0, []
    while True:
        n = policy.choose(sent)
        if n:
            break
        waits.append(policy.hold + 1)  # (this step and the held ones)
        steps += policy.hold + 1
        policy.hold = 0
        assert steps < 200
    assert waits == [1, 2, 4, 8][: len(waits)] and len(waits) >= 2
    counts = sent.extra["policy_counts"][0]
    assert counts[1] == reach[1] / 2 ** len(waits) and counts[2:] == reach[2:]  # the first position halved
    policy.observe(sent, drafted=n, accepted=n)  # the copy is in line again: the sentence drafts on
    assert policy.choose(sent) > 0
    waits = []
    for _ in range(12):  # rejected every time: the waits grow to 16 and stay there
        policy.observe(sent, drafted=5, accepted=0)
        while not policy.choose(sent):
            waits.append(policy.hold + 1)
            policy.hold = 0
    assert max(waits) == 16 and waits[-1] == 16


def test_batched_choice_gives_rows_with_better_drafts_more_positions():
    policy = policy_with({64: (1e-4, 1e-5, 2e-6, 2e-3)}, horizon=10)
    policy.reach[1:11] = [1000.0] * 10
    policy.acc[1:11] = [800.0] * 10
    policy._refresh()
    rows = [State() for _ in range(4)]
    for _ in range(30):
        policy.observe(rows[0], drafted=10, accepted=10)
        policy.observe(rows[3], drafted=3, accepted=0)
    seen_greedy(policy, 4, policy.greedy_pass_s(4, policy._costs[64]))
    n = policy.choose_batch(rows, None)
    assert n[0] >= n[1] == n[2] >= n[3] and n[0] > n[3]


def test_a_batch_whose_passes_pad_short_rows_prices_the_padding_of_a_wide_draft():
    """A batched pass is as wide as its longest draft, and where the other rows' padding costs (the PyTorch backend's
    attention) one row drafting far beside rows that do not pays for every other row's padding: the choice counts it,
    and so does the prediction the fit learns from."""
    def choice(pad_s):
        policy = policy_with({8: (1e-4, 2e-5, 0.0, 2e-3)}, horizon=12)
        policy._rows_fused = True
        policy._costs[8].pad_s = pad_s
        policy.reach[1:13], policy.acc[1:13] = [1000.0] * 12, [700.0] * 12
        policy._refresh()
        rows = [State(12)] + [State(0) for _ in range(7)]  # (only the first row has positions left to draft)
        for _ in range(40):
            policy.observe(rows[0], drafted=12, accepted=12)
        return policy, policy.choose_batch(rows, None)
    assert choice(0.0)[1] == [12] + [0] * 7
    # a greedy step makes 4,000 tokens a second; a draft token now costs 2e-5 and 7 * 4e-5 of padding: 3,333 a second
    policy, padded = choice(4e-5)
    assert padded == [0] * 8
    cost = policy._costs[8]
    policy._last = cost
    policy.new_batch()
    policy.observe_pass(2e-3, [0] * 8)
    drafted = [6] + [1] * 7
    predicted = cost.extra(21, 21, base=8) + 4e-5 * (8 * 7 - 21)
    policy.observe_pass(2e-3 + predicted, drafted)
    fixed, factor = policy.batch_line(8)
    assert fixed + factor * predicted == pytest.approx(predicted)  # the pass cost what the calibration says


def test_pass_cost_is_measured_on_the_verifier_for_batch_1_and_batched():
    _, d, ver = random_model(0)
    for batch in (1, 4):
        cost = measure_pass_cost(ver, 16, batch=batch, repeats=2)
        assert cost.batch == batch and cost.step_s > 0 and all(s > 0 for s in cost.pass_s)
        assert cost.fed == sorted(cost.fed) and cost.fed[0] == batch
        assert cost.extra(batch, batch) == 0.0 and cost.extra(batch * 16, batch * 8) > 0
    from fastdec.engine.fast_verifier import FastVerifier
    for backend in (ver, FastVerifier(ver.model)):  # (the C backend's batched pass refuses more tokens than fed)
        short = measure_pass_cost(backend, 3, batch=4, repeats=1)  # a horizon shorter than a projection chunk (k = 3)
        assert short.rows == sorted(short.rows) and short.rows[-1] == 4 * 4
    assert all(a <= b for a, b in zip(short.pass_s, short.pass_s[1:]))  # more tokens never measured cheaper
    src = torch.tensor([5, 6, 7, d.eos()])
    before = greedy_decode(ver, src, max_len_b=6).tokens
    measure_pass_cost(ver, 8)
    assert greedy_decode(ver, src, max_len_b=6).tokens == before


def test_policy_key_in_the_method_grammar():
    m = parse_method("iad:backend=fast:policy=cost")
    assert (m.policy, m.label, parse_method(m.spec)) == ("cost", "iad-fast-cost", m)
    assert parse_method("gad:k=10").policy == "fixed" and parse_method("gad:k=10").label == "gad-k10"
    assert parse_method("blockwise:k=4:policy=cost:batch=8").label == "blockwise-k4-cost-bs8"
    for bad, words in [("greedy:policy=cost", "verifies no drafts"), ("iad:policy=fast", "policy must be one of"),
                       ("blockwise:k=4:min_block=2:policy=cost", "min_block")]:
        with pytest.raises(ValueError, match=words):
            parse_method(bad)
    assert check_policy("COST") == "cost"
    with pytest.raises(ValueError, match="draft policy"):
        check_policy("always")
    with pytest.raises(ValueError, match="horizon"):
        CostAwarePolicy(0)
    with pytest.raises(ValueError, match="resume must be >= its margin"):
        CostAwarePolicy(4, margin=1.2, resume=1.1)
    assert not math.isnan(CostAwarePolicy(4).prior)


def test_greedy_passes_of_few_rows_do_not_make_a_full_batch_look_dear():
    """The greedy pass is kept by its number of rows: the passes at the end of a batch, where a few rows cost much per
    row, leave the full batch's pass at its own measured (or calibrated) time, so drafting is not made to look cheap."""
    policy = policy_with({32: (1e-4, 3e-5, 2e-5, 2e-3)}, horizon=10)
    cost = policy._costs[32]
    for _ in range(40):
        policy.observe_pass(4e-4, (0, 0))                       # two rows left: 2e-4 a row
    assert policy.greedy_pass_s(2, cost) == pytest.approx(4e-4)
    assert policy.greedy_pass_s(32, cost) == pytest.approx(2e-3)    # the calibration's, not 32 x 2e-4
    assert policy.greedy_pass_s(17, cost) == pytest.approx(4e-4 + (2e-3 - 4e-4) * 15 / 30)
    policy.observe_pass(3e-3, [0] * 32)                         # a measured full pass replaces the calibration
    assert policy.greedy_pass_s(32, cost) == pytest.approx(3e-3)


def test_where_a_draft_token_costs_a_greedy_row_a_batch_ranks_nothing(monkeypatch):
    """A batch whose every extra token costs more than a greedy row does (a CPU's compute-bound batch): no position can
    pay for its place, so the choice drafts nothing and does not even rank the rows' positions -- however well
    accepted."""
    policy = policy_with({8: (1e-4, 3e-4, 0.0, 2e-3)}, horizon=10)  # a greedy row: 2e-3 / 8 = 2.5e-4
    policy._rows_fused = True
    policy.reach[1:11] = [1000.0] * 10
    policy.acc[1:11] = [990.0] * 10
    policy._refresh()
    rows = [State() for _ in range(8)]
    ranked = ranking_spy(policy, monkeypatch)
    assert policy.choose_batch(rows, None) == [0] * 8 and not ranked
    cheap = policy_with({8: (1e-4, 2e-5, 0.0, 2e-3)}, horizon=10)
    cheap._rows_fused = True
    cheap.reach[1:11], cheap.acc[1:11] = [1000.0] * 10, [990.0] * 10
    cheap._refresh()
    assert sum(cheap.choose_batch(rows, None)) > 0


def test_the_first_draft_learns_from_a_probe_not_the_whole_horizon():
    """Before any count, a sentence (or a batch's last row that can draft) drafts a probe's length, not the whole
    horizon: a full draft of every row of a batch can cost many greedy steps, and every row asked a drafter start."""
    policy = policy_with({1: (1e-4, 1e-5, 1e-5, 2e-4), 4: (1e-4, 1e-5, 1e-5, 8e-4)}, horizon=40, probe_len=8)
    assert policy.choose(State(30)) == 8 and policy.choose(State(5)) == 5
    assert policy.choose_batch([State(0), State(30), State(3), State(12)], None) == [0, 0, 0, 8]
    assert policy.choose_batch([State(0), State(30), State(3), State(0)], None) == [0, 0, 3, 0]


def test_a_measured_pass_cost_is_read_back_by_the_next_policy(tmp_path, monkeypatch):
    """The calibration is kept under a key of the model, backend, precision, device, threads, batch size and horizon:
    a second policy on the same verifier reads it instead of measuring, a different batch size or model measures,
    calibrate() measures again, and ``off`` keeps nothing."""
    import fastdec.engine.policy as pol

    monkeypatch.setenv("FASTDEC_PASS_COST_CACHE", str(tmp_path))
    _, d, ver = random_model(0)
    measured = []
    real = measured_costs.measure_pass_cost

    def counting(verifier, horizon, batch=1, **kw):
        measured.append(batch)
        return real(verifier, horizon, batch, repeats=1)
    monkeypatch.setattr(measured_costs, "measure_pass_cost", counting)
    first = CostAwarePolicy(8)
    first.prepare(ver, 1)
    assert measured == [1] and len(list(tmp_path.glob("*.json"))) == 1
    second = CostAwarePolicy(8)
    second.prepare(ver, 1)
    assert measured == [1] and second.cost == first.cost           # read back, not measured
    second.prepare(ver, 3)
    CostAwarePolicy(16).prepare(ver, 1)                              # another horizon: another key
    assert measured == [1, 3, 1]
    _, _, other = random_model(1)
    CostAwarePolicy(8).prepare(other, 1)
    assert measured == [1, 3, 1, 1]
    second.calibrate(ver, 1)
    assert measured == [1, 3, 1, 1, 1]
    monkeypatch.setenv("FASTDEC_PASS_COST_CACHE", "off")
    CostAwarePolicy(8).prepare(ver, 1)
    assert measured == [1, 3, 1, 1, 1, 1]
    from fastdec.engine.fast_verifier import FastVerifier
    assert pol.pass_cost_key(FastVerifier(ver.model), 8, 1) != pol.pass_cost_key(ver, 8, 1)  # another backend
    (tmp_path / f"{pol.pass_cost_key(ver, 8, 1)}.json").write_text("not json")
    monkeypatch.setenv("FASTDEC_PASS_COST_CACHE", str(tmp_path))
    CostAwarePolicy(8).prepare(ver, 1)                               # an unreadable entry is measured again
    assert measured == [1, 3, 1, 1, 1, 1, 1]


def test_a_benchmark_method_reads_its_pass_costs_when_built_not_when_it_decodes(tmp_path, monkeypatch):
    """The runner's cost-aware methods (batch 1 and batched, both backends) have their pass costs for their batch size
    when they are built: their decodes, which are timed, neither read the cache (whose key hashes the weights) nor
    measure."""
    from types import SimpleNamespace

    from fastdec.bench.runner import Context, _Systems
    from fastdec.engine import Verifier

    monkeypatch.setenv("FASTDEC_PASS_COST_CACHE", str(tmp_path))
    model, d, _ = random_model(0)
    ctx = Context(loaded=SimpleNamespace(model=model), verifier=Verifier(model, dtype=torch.float64), max_len_b=8)
    srcs = [torch.tensor(list(range(5, 5 + n)) + [d.eos()]) for n in (4, 2, 6)]
    built = []
    for spec in ("iad:policy=cost", "iad:policy=cost:batch=3", "iad:backend=fast:policy=cost:batch=3"):
        m = parse_method(spec)
        systems = _Systems(ctx)
        built.append((m, systems.build_batched(m) if m.batch_size > 1 else systems.build(m)))

    def timed(*a, **k):
        raise AssertionError("pass costs read or measured while decoding")
    monkeypatch.setattr(measured_costs, "cached_pass_cost", timed)
    monkeypatch.setattr(measured_costs, "measure_pass_cost", timed)
    for m, decode in built:
        if m.batch_size > 1:
            records = decode(srcs, list(range(len(srcs))))
        else:
            records = [decode(i, s) for i, s in enumerate(srcs)]
        verifier = ctx.verifier_of(m.backend)
        assert [r.tokens for r in records] == [greedy_decode(verifier, s, max_len_b=8).tokens for s in srcs], m.label


def test_a_batch_probe_asks_a_few_rows_and_starts_only_those():
    """Before any count a batch drafts on its last row only, a probe on its last probe_rows rows (a batch is cut longest
    first: its shortest sentences), and the batched loop starts the drafter for the rows it asks, when it asks them;
    the output is still every row's greedy output."""
    from conftest import copy_model

    _, d, ver = copy_model()
    srcs = copy_sources(d)[:6]
    # a drafted token costs ten greedy rows: after the first draft only probes ask the drafter
    policy = policy_with({1: (1e-4, 2e-3, 1e-5, 2e-4), 6: (1e-4, 2e-3, 1e-5, 1.2e-3)}, probe_rows=2)
    rows = [State(10) for _ in range(6)]
    assert [n > 0 for n in policy.choose_batch(rows, None)] == [False] * 5 + [True]
    policy.observe(rows[5], drafted=8, accepted=0)
    policy._skipped_s = 1e9  # (a probe is due)
    assert [n > 0 for n in policy.choose_batch(rows, None)] == [False] * 4 + [True, True]
    policy = policy_with({1: (1e-4, 2e-3, 1e-5, 2e-4), 6: (1e-4, 2e-3, 1e-5, 1.2e-3)}, probe_rows=2)
    drafter = CountingDrafter()
    out = decode_batched(ver, srcs, drafter, accept_top1, batch_size=6, policy=policy, max_len_b=12)
    assert [r.tokens for r in out] == [greedy_decode(ver, s, max_len_b=12).tokens for s in srcs]
    assert 1 <= drafter.starts < len(srcs)


def test_real_greedy_passes_dearer_than_the_calibration_scale_a_batch_s_draft_costs():
    """When a batch's real greedy passes on the C backend cost twice the calibration's (longer sentences than its dummy
    one), what a draft token adds is taken as twice as dear too: the choice stays the calibration's, where the dearer
    greedy pass alone would make drafting look cheap (more positions); at batch 1 and on a padded pass the calibration
    stands."""
    def fresh():
        policy = policy_with({8: (1e-4, 1.2e-4, 0.0, 2e-3)}, horizon=10)
        policy._rows_fused = policy._real_tokens_only = True  # (the C backend's batched pass)
        policy.reach[1:11], policy.acc[1:11] = [1000.0] * 10, [900.0] * 10
        policy._refresh()
        return policy
    rows = [State() for _ in range(8)]
    calibrated, dearer = fresh(), fresh()
    for _ in range(3):
        dearer.observe_pass(4e-3, [0] * 8)
    assert calibrated._scale(8, calibrated._costs[8]) == 1.0
    assert dearer._scale(8, dearer._costs[8]) == pytest.approx(2.0)
    assert dearer.choose_batch(rows, None) == calibrated.choose_batch(rows, None)
    unscaled = fresh()
    for _ in range(3):
        unscaled.observe_pass(4e-3, [0] * 8)
    unscaled._real_tokens_only = False  # (unscaled: a pass padded to its widest draft, PyTorch's)
    assert sum(unscaled.choose_batch(rows, None)) > sum(calibrated.choose_batch(rows, None))
    single = policy_with({1: (1e-4, 2e-5, 1e-5, 2e-4)})
    single.observe_pass(8e-4, [0])
    assert single._scale(1, single.cost) == 1.0
    # a padded pass (PyTorch; on a CPU it projects real positions only): what grows with the sentences is in its greedy
    # pass, not in what a drafted token adds
    for projects_real_positions in (True, False):
        padded = fresh()
        padded._rows_fused, padded._real_tokens_only = projects_real_positions, False
        for _ in range(3):
            padded.observe_pass(4e-3, [0] * 8)
        assert padded._scale(8, padded._costs[8]) == 1.0


def test_a_policy_prepared_for_a_verifier_knows_whether_its_batched_pass_pads_the_rows():
    """What the batched choice prices is read off the verifier it decodes with: PyTorch on a CPU pads a batch's rows to
    the widest draft and projects only their real positions; the fast backend feeds and projects real ones only."""
    model = random_model(0)[0]
    pytorch, fast = make_verifier(model, device=torch.device("cpu")), FastVerifier(model)
    policy = policy_with({8: (1e-4, 1.2e-4, 0.0, 2e-3)})
    policy.prepare(pytorch, 8)
    assert policy._rows_fused and not policy._real_tokens_only
    policy.prepare(fast, 8)
    assert policy._rows_fused and policy._real_tokens_only
