"""What the cost-aware policy does between two passes at batch 1, kept small: a sentence's first choice stands (one
answer per limit, made again when what it was made with moved), an iteration's input-wide counting waits for a few
more (a sentence's last iteration counts for the input only), a model's weights are hashed once for the cost cache,
and the policy's time at a sentence's start is the sentence's."""
import time

import pytest
import torch
from helpers.policy import State, accepted_at, policy_with, synthetic_cost
from helpers.properties import property_settings
from hypothesis import given
from hypothesis import strategies as st

from fastdec.engine.policy import batch_one, cost_cache, native_choice
from fastdec.engine import InputCopyDrafter, accept_top1
from fastdec.engine.batched import decode_batched
from fastdec.engine.loop import draft_verify_accept
from fastdec.engine.policy import CostAwarePolicy, pass_cost_key


def fresh_answer(policy, limit: int) -> int:
    """The first choice at ``limit`` computed now, not read from a standing one."""
    policy._first_stands.clear()
    return policy._best_length(limit, False, None, policy.cost.step_s, policy.margin)


def test_a_standing_first_choice_answers_every_limit_as_the_loop_would():
    for per_token, accepted in ((2e-6, 950), (3e-5, 900), (3e-5, 600), (1e-4, 700)):
        policy = policy_with({1: (1e-4, per_token, 1e-5, 2e-4)}, horizon=40)
        accepted_at(policy, accepted)
        made = [fresh_answer(policy, limit) for limit in range(1, 41)]
        fresh_answer(policy, 40)  # a standing answer made at the horizon ...
        stood = [policy._best_length(limit, False, None, policy.cost.step_s, policy.margin) for limit in range(1, 16)]
        assert stood == made[:15]  # ... answers the shorter limits as a choice made at each would
        assert any(0 < n < 40 for n in made) or per_token == 2e-6
    assert made[-1] < 40 and max(made) > 0


def test_a_first_choice_stands_for_a_few_sentences_and_while_its_costs_hold():
    policy = policy_with({1: (1e-4, 3e-5, 1e-5, 2e-4)}, horizon=20)
    accepted_at(policy, 900)
    step = policy.cost.step_s
    first = policy._best_length(20, False, None, step, policy.margin)
    assert first > 0 and policy._first_stands[policy.margin][0] == batch_one._STANDING - 1
    policy.extra_fixed = 1.0  # a pass that suddenly costs seconds: not a standing answer's to give
    assert policy._best_length(20, False, None, step, policy.margin) == 0
    policy.extra_fixed = 0.0
    policy._best_length(20, False, None, step, policy.margin)
    for _ in range(batch_one._STANDING - 1):
        policy._best_length(20, False, None, step, policy.margin)
    assert policy._first_stands[policy.margin][0] == 0  # spent: the next first choice is made again
    policy._best_length(20, False, None, step, policy.margin)
    assert policy._first_stands[policy.margin][0] == batch_one._STANDING - 1
    accepted_at(policy, 300)  # a refresh of the rates ends it at once
    assert policy.margin not in policy._first_stands


def test_an_iteration_counts_for_its_sentence_at_once_and_for_the_input_a_little_later():
    """Counted through observe_iteration (the loop's call), the counts, the drafter's cost and the fit of the passes
    end where counting each iteration at once (observe, observe_drafter, observe_pass) leaves them."""
    late = policy_with({1: (1e-4, 3e-5, 1e-5, 2e-4)}, horizon=12)
    now = policy_with({1: (1e-4, 3e-5, 1e-5, 2e-4)}, horizon=12)
    accepted_at(late, 800)
    accepted_at(now, 800)
    rng = torch.Generator().manual_seed(0)
    sentence_late, sentence_now = State(12), State(12)
    for i in range(100):
        drafted = int(torch.randint(0, 13, (1,), generator=rng))
        accepted = int(torch.randint(0, drafted + 1, (1,), generator=rng))
        seconds, drafter_s = 2e-4 + 3e-5 * drafted, (1e-5 * (1 + i % 3) if drafted else None)
        if i % 7 == 0:
            sentence_late, sentence_now = State(12), State(12)
        late.observe_iteration(sentence_late, drafted, accepted, seconds, drafter_s, asked=drafted)
        if drafter_s is not None:
            now._drafter_s[1] = 0.8 * now._drafter_s[1] + 0.2 * drafter_s if 1 in now._drafter_s else drafter_s
        now.observe(sentence_now, drafted, accepted, drafted)
        now.observe_pass(seconds, [drafted])
        assert sentence_late.extra.get("policy_counts") == sentence_now.extra.get("policy_counts")
        assert len(late._waiting_iterations) < 32
    assert late._waiting_iterations and late._stale < now._stale  # (some wait ...)
    late._flush_iterations()  # (... and once counted, nothing differs)
    counted = ("_ends", "_gots", "_ends_first", "_gots_first", "_stale", "_drafter_s", "extra_fixed", "extra_factor")
    assert [getattr(late, a) for a in counted] == [getattr(now, a) for a in counted]
    late._refresh()
    now._refresh()
    assert (late.reach, late.acc, late.q, late.q_first) == (now.reach, now.acc, now.q, now.q_first)


def test_a_batch_s_rows_counted_in_one_call_are_counted_as_row_by_row():
    """observe_rows (the batched loop's call) leaves the sentences' and the input's counts where observe leaves them
    row by row, a row that waited (asked nothing: its idle pass counted, _idle_row) and an empty proposal included, in
    C and in Python."""
    for in_python in (False, True):
        rows_at_once = policy_with({1: (1e-4, 3e-5, 1e-5, 2e-4)}, horizon=12)
        row_by_row = policy_with({1: (1e-4, 3e-5, 1e-5, 2e-4)}, horizon=12)
        if in_python:
            rows_at_once._native = row_by_row._native = None
        rng = torch.Generator().manual_seed(1)
        at_once, by_row = [State(12) for _ in range(6)], [State(12) for _ in range(6)]
        for _ in range(40):
            asked = [int(a) for a in torch.randint(0, 13, (6,), generator=rng)]
            shares = torch.rand(6, generator=rng).tolist()
            for states in (at_once, by_row):
                for st, n, r in zip(states, asked, shares):
                    st.last_drafted = int(n * r)  # (a proposal shorter than asked, or none)
                    st.last_accepted = int(st.last_drafted * r)
            rows_at_once.observe_rows(at_once, asked)
            for st, n in zip(by_row, asked):
                if n:
                    row_by_row.observe(st, st.last_drafted, st.last_accepted, n)
                elif "policy_counts" in st.extra:
                    row_by_row._idle_row(st.extra, st.extra["policy_counts"])
        assert [st.extra for st in at_once] == [st.extra for st in by_row]
        assert any("policy_waits" in st.extra for st in at_once)
        counted = ("_ends", "_gots", "_ends_first", "_gots_first", "_stale", "_iter_accepted", "_version", "_fold_top",
                   "_deepest", "reach", "acc", "q", "q_first")
        assert [getattr(rows_at_once, a) for a in counted] == [getattr(row_by_row, a) for a in counted]


def test_the_first_iterations_are_counted_at_once():
    policy = policy_with({1: (1e-4, 3e-5, 1e-5, 2e-4)}, horizon=12)
    policy.observe_iteration(State(12), 5, 3, 3e-4, 1e-5, asked=5)
    assert policy.reach[1] == 1 and not policy._waiting_iterations


def test_the_cost_key_hashes_weights_once_and_again_after_they_change():
    from conftest import copy_model

    model, _, ver = copy_model()
    cost_cache._DIGESTS.pop(ver.model, None)
    key = pass_cost_key(ver, 8, 1)
    assert ver.model in cost_cache._DIGESTS and pass_cost_key(ver, 8, 1) == key
    with torch.no_grad():
        next(ver.model.parameters()).view(-1)[0] += 1.0  # in place: the same storage, a new version
    assert pass_cost_key(ver, 8, 1) != key


class SlowToPrepare(CostAwarePolicy):
    def prepare(self, verifier, batch: int = 1) -> None:
        super().prepare(verifier, batch)
        time.sleep(0.02)


def test_the_policy_s_start_of_a_sentence_counts_in_its_time():
    from conftest import copy_model

    _, d, ver = copy_model()
    src = torch.tensor([5, 6, 7, 8, d.eos()])
    policy = SlowToPrepare(8)
    policy.use_cost(policy_with({1: (1e-4, 3e-5, 1e-5, 2e-4)}).cost)
    one = draft_verify_accept(ver, src, InputCopyDrafter(), accept_top1, policy=policy, max_len_b=8).stats
    assert one.time >= 0.02 and one.time_modules["policy"] >= 0.02
    policy.use_cost(synthetic_cost(2, 1e-4, 3e-5, 1e-5, 2e-4))
    out = decode_batched(ver, [src, src], InputCopyDrafter(), accept_top1, policy=policy, batch_size=2, max_len_b=8)
    assert all(r.stats.time >= 0.01 and r.stats.time_modules["policy"] >= 0.01 for r in out)  # (half a batch's)


def test_iterations_waiting_to_be_counted_are_counted_before_a_batch_starts():
    policy = policy_with({1: (1e-4, 3e-5, 1e-5, 2e-4)}, horizon=12)
    accepted_at(policy, 800)
    policy.observe_iteration(State(12), 5, 3, 3e-4, 1e-5, asked=5)
    assert policy._waiting_iterations
    policy.new_batch()
    assert not policy._waiting_iterations and policy._stale == 1


def test_a_projection_measured_dearer_per_row_than_one_of_fewer_rows_is_read_at_their_rate():
    """The PyTorch GEC model's measured projections at B = 16 (128 rows at 53 us a row against 29 at 64, the
    allocator's doing): read at 64 rows' rate from 128 rows on, so that a large draft is not priced at the jump."""
    from fastdec.engine.policy import PassCost

    measured = PassCost(batch=16, fed=[16, 17, 24, 40, 56, 88, 120, 184, 248],
                        pass_s=[5.4e-4, 8.0e-4, 8.6e-4, 1.15e-3, 1.37e-3, 1.96e-3, 2.48e-3, 3.52e-3, 4.71e-3],
                        rows=[16, 32, 64, 128], rows_s=[5.55e-4, 9.82e-4, 1.866e-3, 6.851e-3], step_s=1.329e-3,
                        pad_s=2.9e-6)
    policy = CostAwarePolicy(64)
    used = policy.use_cost(measured)
    assert used.rows_s[:3] == measured.rows_s[:3] and abs(used.rows_s[3] - 2 * 1.866e-3) < 1e-12
    assert policy._costs[16] is used
    # 272 drafted tokens over 16 rows: 24 ms as measured, about the 13 ms such a pass took once read at 64 rows' rate
    assert measured.extra(16 + 272, 16 + 272, base=16) > 0.023 and used.extra(16 + 272, 16 + 272, base=16) < 0.0135
    linear = synthetic_cost(16, 1e-3, 2e-5, 3e-5, 2e-3)
    assert policy.use_cost(linear) is linear  # (a projection no dearer per row as it grows: as measured)


def test_a_sentence_s_last_iteration_is_counted_for_the_input_only():
    """No choice reads a finished sentence's counts: its last iteration adds to the input's counts alone (as a first
    draft where it was one)."""
    policy = policy_with({1: (1e-4, 3e-5, 1e-5, 2e-4)}, horizon=12)
    accepted_at(policy, 800)
    done, going = State(12), State(12)
    policy.observe_iteration(done, 5, 3, 3e-4, 1e-5, asked=5, last=True)
    policy.observe_iteration(going, 5, 3, 3e-4, 1e-5, asked=5)
    assert "policy_counts" not in done.extra and going.extra["policy_counts"][0][1:5] == [1, 1, 1, 1]
    policy._flush_iterations()
    assert policy._ends_first[4] == policy._gots_first[3] == 2  # both first drafts (reached 4, accepted 3)


def test_a_restored_policy_holds_what_it_held_at_its_snapshot():
    """A snapshot copies what the policy counted, measured and holds (batch 1 and batched), not the verifier; it can be
    restored more than once, and what the policy learns after a restore does not reach the snapshot."""
    from conftest import copy_model

    _, d, ver = copy_model()
    g = torch.Generator().manual_seed(3)
    srcs = [torch.cat([torch.randint(4, len(d), (int(k),), generator=g), torch.tensor([d.eos()])])
            for k in torch.randint(4, 14, (12,), generator=g)]
    policy = policy_with({1: (1e-4, 2e-6, 1e-5, 2e-4), 4: (1e-4, 2e-6, 1e-5, 4e-4)}, horizon=16)
    policy.prepare(ver)

    def decode(part):
        for s in part:
            draft_verify_accept(ver, s, InputCopyDrafter(), accept_top1, policy=policy, max_len_b=12)
        decode_batched(ver, part, InputCopyDrafter(), accept_top1, batch_size=4, max_len_b=12, policy=policy)

    def learned():
        return (list(policy.reach), list(policy.acc), dict(policy._realized), dict(policy._judged), policy._fit.sums,
                {k: f.sums for k, f in policy._batch_fits.items()}, dict(policy._greedy), policy.probes, policy._version)
    decode(srcs[:6])
    snap, before = policy.snapshot(), learned()
    assert before[0][1] > 0
    for _ in range(2):
        decode(srcs[6:])
        assert learned() != before
        policy.restore(snap)
        assert learned() == before
        assert policy._prepared_for is ver
        assert all(policy._costs[b] is snap["_costs"][b] for b in (1, 4))  # (tables are kept by a cost's identity)


def test_first_draft_rates_past_the_deepest_position_counted_are_the_input_s():
    """A refresh reads first-draft rates only as deep as positions were counted: each is what reading every
    position gives, past the deepest one counted too, and where counts were set past it directly."""
    policy = policy_with({1: (1e-4, 3e-5, 1e-5, 2e-4)}, horizon=40)
    rng = torch.Generator().manual_seed(3)

    def every_position():
        q, w, reach, acc = policy.q, policy.weight, policy.reach_first, policy.acc_first
        return [(acc[m] + w * q[m]) / (reach[m] + w) if reach[m] else q[m] for m in range(len(q))]
    for i in range(60):
        drafted = int(torch.randint(0, 13, (1,), generator=rng))
        policy.observe(State(40) if i % 3 == 0 else State(40), drafted,
                       int(torch.randint(0, drafted + 1, (1,), generator=rng)), drafted)
        policy._refresh()
        assert 0 < policy._deepest <= 12 and policy.q_first == every_position()
    policy.reach_first[30], policy.acc_first[30] = 4.0, 1.0  # (set directly, past the deepest position counted)
    policy._refresh()
    assert policy.q_first == every_position() and policy.q_first[30] != policy.q[30]


def test_a_drafted_pass_s_prediction_on_a_fused_pass_is_read_from_the_choice_s_tables():
    """On a CPU's fused pass a drafted pass is predicted from the tables the choice reads (what t tokens fed and p rows
    projected add): for batches smaller than the one measured, as large and larger, the same number as the cost's own
    prediction, and with every token projected the same as the padded choice's table."""
    policy = policy_with({8: (1e-4, 3e-5, 1e-5, 2e-3)}, horizon=16)
    cost = policy._costs[8]
    cost.pass_s[3] *= 1.3  # (a curve with a bend, not a straight line)
    for rows in (2, 5, 8, 11):
        for t in range(0, 70, 3):
            fed, projected = policy._fused_lists(cost, rows, t)
            assert fed[t] + projected[t] == cost.extra(rows + t, rows + t, base=rows) == policy._extra_upto(
                cost, rows, t)[t]
            assert fed[t] + projected[t // 3] == cost.extra(rows + t, rows + t // 3, base=rows)


class _CountedProjection:
    """The verifier's tokens of every row's positions, each position it hands out counted (what the exact rule asks
    of a CPU's projection: a row's real positions, chunk by chunk)."""
    lazy, fused, fused_rows = True, None, True

    def __init__(self, tokens):
        self.tokens, self.width, self.given = tokens, max(len(t) for t in tokens), [0] * len(tokens)

    def top1(self, rows, start, end, lengths):
        out = []
        for b, n in zip(rows, lengths):
            row = self.tokens[b][start: min(end, n)]
            self.given[b] += len(row)
            out.append(row)
        return out


def test_the_rows_a_pass_projects_are_counted_as_the_exact_rule_projects_them():
    """The positions the policy counts as projected for a row that drafted n tokens and had a accepted (the fit's
    prediction on a CPU) are those the exact rule asks the projection for, chunk by chunk, in Python and in C."""
    rng = torch.Generator().manual_seed(5)
    drafts, tokens, seen = [], [], []
    for _ in range(300):
        n = int(torch.randint(0, 70, (1,), generator=rng))
        a = int(torch.randint(0, n + 1, (1,), generator=rng)) if n else 0
        draft = [7] * n
        drafts.append(draft)
        tokens.append([7] * a + [8] * (n + 1 - a))  # (the verifier's tokens: the draft's first a, then others)
        seen.append((n, a))
    project = _CountedProjection(tokens)
    decided = accept_top1.accept_batch(drafts, project)
    assert [d[0] for d in decided] == [a for _, a in seen]
    policy = policy_with({1: (1e-4, 3e-5, 1e-5, 2e-4)}, horizon=64)
    assert [policy._projected_rows(n, a) for n, a in seen] == [g - 1 for g in project.given]
    assert policy._projected_rows(30, 30) == 30 and policy._projected_rows(30, 10) == 23
    one = policy._native
    if one is not None:
        states = [State(64) for _ in seen]
        for st, (n, a) in zip(states, seen):
            st.last_drafted, st.last_accepted = n, a
        policy.reach[1] = 1e9  # (no refresh due)
        one.count_batch(policy, states, [max(n, 1) for n, _ in seen])
        assert policy._pass_projected == sum(g - 1 for g in project.given)


@st.composite
def waiting_iterations(draw):
    """Batch-1 iterations waiting to be counted (``BatchOneChoice._waiting_iterations``' tuples: the deepest position
    reached, those accepted, a sentence's first draft, tokens accepted, drafted, the pass's, drafter call's and start's
    seconds), and what the policy holds before they are counted: the drafter's costs measured at one row or not, a
    cost or none, a batched choice's promise waiting or not, and the rows counted since the rates' last refresh."""
    items = []
    for _ in range(draw(st.integers(1, 40))):
        drafted = draw(st.integers(0, 14))
        accepted = draw(st.integers(0, drafted))
        top = min(accepted + 1, drafted, 12) if drafted else draw(st.sampled_from([0, 1]))
        items.append((top, min(accepted, top), top > 0 and draw(st.booleans()), accepted, drafted,
                      draw(st.sampled_from([1e-4, 2.5e-4, 7e-4])), draw(st.sampled_from([None, 1e-5, 3e-5])),
                      draw(st.sampled_from([None, None, None, 4e-5]))))
    return (items, draw(st.sampled_from([{}, {1: 2e-5}, {2: 5e-5}])), draw(st.sampled_from([{}, {1: 1e-5}])),
            draw(st.booleans()), draw(st.booleans()), draw(st.sampled_from([0, 240, 248])))


@property_settings(4)  # (cheap: a few dozen iterations)
@given(case=waiting_iterations())
def test_waiting_iterations_counted_in_c_leave_what_python_leaves_bit_for_bit(case):
    """The batch-1 iterations that waited, counted in one C call (the drafter's starts and calls, the input's counts
    with the rates refreshed where due, each pass into the greedy step or the fit), leave the policy as the Python loop
    leaves it, bit for bit; a batched choice's promise waiting to be judged is left to the Python loop."""
    if native_choice.choice_module() is None:
        pytest.skip("no C compiler: Python counts the iterations")
    items, drafter_s, start_s, has_cost, promise, stale = case

    def counted(python: bool) -> str:
        policy = policy_with({1: (1e-4, 3e-5, 1e-5, 2e-4)}, horizon=12)
        accepted_at(policy, 800)
        policy._drafter_s, policy._start_s, policy._stale = dict(drafter_s), dict(start_s), stale
        if not has_cost:
            policy.cost = None
        if promise:
            policy._promised = (1, 5e3, 1e-6, 2.0)
        if python:
            policy._native = None
        policy._waiting_iterations = list(items)
        policy._flush_iterations()
        return repr([getattr(policy, a) for a in (
            "_ends", "_gots", "_ends_first", "_gots_first", "_stale", "_version", "_fold_top", "_deepest",
            "_iter_accepted", "reach", "acc", "q", "q_first", "_first_p", "_first_e", "_drafter_s", "_start_s",
            "_greedy", "extra_fixed", "extra_factor", "_promised", "_judged", "_realized", "_waiting_iterations")]
            + [policy._fit.sums, policy._fit.line])

    assert counted(python=False) == counted(python=True)


@property_settings(4)  # (cheap: a few dozen iterations)
@given(iterations=st.lists(st.tuples(st.integers(0, 14), st.floats(0.0, 1.0), st.sampled_from([None, 2e-5]),
                                     st.integers(0, 5), st.booleans()), min_size=33, max_size=60),
       known=st.sampled_from([0.0, 3.0, 1000.0]))
def test_the_loop_s_c_call_counts_an_iteration_as_the_method_does(iterations, known):
    """The batch-1 loop's call after an iteration in C (``sentence_calls``) leaves the sentences' counts, the
    iterations waiting and, once they are counted, the input's counts, rates and costs as the Python method leaves them,
    bit for bit: a sentence's first and last iterations, a proposal shorter than asked or none, the first iterations
    counted at once (few counts known) and later ones waiting for 32 or a quarter of the input's counts."""
    if native_choice.choice_module() is None:
        pytest.skip("no C compiler: the Python method counts")

    def counted(python: bool) -> list:
        policy = policy_with({1: (1e-4, 3e-5, 1e-5, 2e-4)}, horizon=12)
        policy.reach[1:11] = [known] * 10
        policy.acc[1:11] = [0.8 * known] * 10
        policy._refresh()
        if python:
            policy._native = None
        observe, state, seen = policy.sentence_calls()[2], State(12), []
        assert (observe == policy.observe_iteration) == python
        for asked, share, drafter_s, start, last in iterations:
            drafted = int(asked * share)  # (a proposal shorter than asked, or none)
            observe(state, drafted, int(drafted * share), 2e-4 + 3e-5 * drafted, drafter_s, asked,
                    1e-5 * start if start else None, last)
            seen.append(repr((state.extra.get("policy_counts"), policy._waiting_iterations, policy._stale,
                              policy.reach, policy._ends, policy._drafter_s, policy.extra_factor)))
            if last:
                state = State(12)
        policy._flush_iterations()
        return seen + [repr([getattr(policy, a) for a in ("_ends", "_gots", "_ends_first", "_gots_first", "_stale",
                                                          "_version", "reach", "acc", "q", "q_first", "_drafter_s",
                                                          "_start_s", "_greedy", "extra_fixed", "extra_factor")])]

    assert counted(python=False) == counted(python=True)


@st.composite
def sentence_choices(draw):
    """A batch-1 choice's situation: the input's rate and a drafted token's cost, the drafter's costs measured at one
    row or not, its drafter started or not, a "no draft" held or none, a first choice standing (how many uses it has
    left, and what it was made with against the costs now: as they are, or just past the half or twice they may move
    by), the greedy time counted towards a probe, and a sequence of iterations to choose for (each a limit and the
    share of its draft accepted, counted before the next choice)."""
    return dict(rate=draw(st.sampled_from([0, 200, 600, 900, 990])),
                per_token=draw(st.sampled_from([2e-6, 3e-5, 2e-4])),
                drafter=draw(st.sampled_from([{}, {1: 1e-5}, {2: 3e-5}])),
                start=draw(st.sampled_from([{}, {1: 2e-5}])),
                started=draw(st.booleans()), held=draw(st.booleans()), stands=draw(st.sampled_from([None, 0, 1, 15])),
                made=draw(st.tuples(st.sampled_from([1.0, 0.495, 2.1]), st.sampled_from([1.0, 0.45, 2.1]))),
                skipped=draw(st.sampled_from([0.0, 1e-3])),
                steps=draw(st.lists(st.tuples(st.integers(0, 20), st.sampled_from([0.0, 0.3, 1.0])), min_size=1,
                                    max_size=8)))


@property_settings(4)  # (cheap: a few choices)
@given(c=sentence_choices())
def test_the_loop_s_c_choice_chooses_what_the_method_chooses(c):
    """The batch-1 loop's choice in C (``sentence_calls``: its common case -- the sentence's own counts, or a
    standing first choice -- in C, the rest by the method) chooses every draft length the Python method chooses and
    leaves the standing answers, held "no draft", probe budget and counts as the method leaves them, bit for bit."""
    if native_choice.choice_module() is None:
        pytest.skip("no C compiler: the Python method chooses")

    def chosen(python: bool) -> list:
        policy = policy_with({1: (1e-4, c["per_token"], 1e-5, 2e-4)}, horizon=16)
        if c["rate"]:
            accepted_at(policy, c["rate"])
        policy._drafter_s, policy._start_s = dict(c["drafter"]), dict(c["start"])
        if python:
            policy._native = None
        _, choose, observe = policy.sentence_calls()
        state, seen = State(16), []
        if c["started"]:
            state.extra["drafter_started"] = True
        if c["stands"] is not None and c["rate"]:
            fresh_answer(policy, 16)
            left, upto, (base, factor) = policy._first_stands[policy.margin]
            policy._first_stands[policy.margin] = (c["stands"], upto, (base * c["made"][0], factor * c["made"][1]))
        policy._skipped_s = c["skipped"]
        if c["held"]:
            policy._skip = (policy._version, c["started"], 0, 2e-4, 1e-3)
        for limit, share in c["steps"]:
            state.max_draft = limit
            n = choose(state)
            seen.append(repr((n, policy._first_stands, policy._skip, policy._skipped_s, policy.hold)))
            if n:
                state.extra["drafter_started"] = True
                observe(state, n, int(n * share), 2e-4 + c["per_token"] * n, 1e-5, n, None, False)
        return seen

    assert chosen(python=False) == chosen(python=True)


@pytest.mark.parametrize("scale", [(1.0, 1.0), (0.505, 1.0), (0.495, 1.0), (1.98, 1.0), (2.02, 1.0), (1.0, 0.505),
                                   (1.0, 0.495), (1.0, 1.98), (1.0, 2.02), (1.0, 1.0, 0)])
def test_a_first_choice_stands_in_c_while_what_it_was_made_with_holds(scale):
    """A sentence's first choice in C reads a standing answer while it has uses left and the drafter's and pass's
    costs are within half and twice what it was made with (the start of the drafter counted), and leaves it to the
    method to make again past that, as the method does."""
    if native_choice.choice_module() is None:
        pytest.skip("no C compiler: the Python method chooses")
    left = []
    for python in (False, True):
        policy = policy_with({1: (1e-4, 3e-5, 1e-5, 2e-4)}, horizon=16)
        accepted_at(policy, 900)
        policy._drafter_s, policy._start_s = {1: 1e-5}, {1: 4e-5}
        fresh_answer(policy, 16)
        stands, upto, (base, factor) = policy._first_stands[policy.margin]
        policy._first_stands[policy.margin] = (scale[2] if len(scale) > 2 else stands, upto,
                                               (base / scale[0], factor / scale[1]))
        if python:
            policy._native = None
        n = policy.sentence_calls()[1](State(16))
        left.append((n, policy._first_stands[policy.margin][0]))
    within = 0.5 < scale[0] < 2.0 and 0.5 < scale[1] < 2.0 and len(scale) == 2
    assert left[0] == left[1] and left[0][1] == (batch_one._STANDING - 2 if within else batch_one._STANDING - 1)


class _CpuVerifier:
    """What preparing a policy reads of a verifier: its device."""
    device = torch.device("cpu")


@pytest.mark.parametrize("hold", [0, 3])
@pytest.mark.parametrize("held", [False, True])
@pytest.mark.parametrize("seen", [False, True])
@pytest.mark.parametrize("prepared", [False, True])
def test_the_loop_s_c_start_of_a_sentence_leaves_what_prepare_leaves(hold, held, seen, prepared):
    """The batch-1 loop's start of a sentence in C (``sentence_calls``) leaves the policy as ``prepare`` leaves it: a
    hold ended or kept by the new sentence's first draft, a verifier it was not prepared for read, nothing else."""
    if native_choice.choice_module() is None:
        pytest.skip("no C compiler: the Python method starts a sentence")
    verifier, left = _CpuVerifier(), []
    for python in (False, True):
        policy = policy_with({1: (1e-4, 3e-5, 1e-5, 2e-4)}, horizon=12)
        if seen:
            accepted_at(policy, 950)
        policy._drafter_s, policy._start_s = {1: 1e-5}, {1: 2e-5}
        if prepared:
            policy.prepare(verifier, 1)
        policy.hold, policy._skipped_s = hold, 1e-3
        if held:
            policy._skip = (policy._version, False, 2, 2e-4, 1e-3)
        if python:
            policy._native = None
        policy.sentence_calls()[0](verifier)
        left.append(repr([getattr(policy, a) for a in ("hold", "_skip", "_skipped_s", "_held_on", "_rows_fused",
                                                        "_real_tokens_only", "_first_stands")]
                         + [policy._prepared_for is verifier]))
    assert left[0] == left[1]
