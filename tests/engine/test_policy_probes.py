"""A drafter that does not pay is probed ever more rarely (up to PROBE_BACKOFF times the probe share's interval) and
at the share again once a draft paid; a batch's held "no draft" lent to the batched loop leaves the policy where
taking its steps one by one would have."""
import copy

import torch

from conftest import copy_model
from fastdec.engine import InputCopyDrafter, accept_top1, greedy_decode
from fastdec.engine.batched import decode_batched
from fastdec.engine.policy import CostAwarePolicy
from fastdec.engine.policy.probes import PROBE_BACKOFF
from helpers.policy import policy_with


def _steps_between_probes(policy: CostAwarePolicy, step: float, cost: float, probes: int, paid_after=()) -> list:
    """Greedy steps before each of ``probes`` probes; after the probes numbered in ``paid_after`` a paying draft
    resets the greedy time since the drafter was asked (as the choices do)."""
    gaps, n = [], 0
    while len(gaps) < probes:
        n += 1
        if policy._probe_due(step, cost):
            gaps.append(n)
            n = 0
            if len(gaps) in paid_after:
                policy._skipped_s = 0.0
                policy._since_probe_s += 5 * step  # (greedy steps later, a draft pays)
    return gaps


def test_probes_of_a_drafter_that_never_pays_grow_rarer_up_to_the_backoff():
    policy = CostAwarePolicy(probe_share=1 / 16)  # (binary fractions: the sums are exact)
    gaps = _steps_between_probes(policy, step=0.25, cost=0.25, probes=7)
    # the share's interval: 16 steps; then 2, 4, 8 times it, and no more
    assert gaps == [16, 32, 64, 128, 128, 128, 128]
    assert PROBE_BACKOFF == 8.0 and policy.probes == 7


def test_a_paying_draft_brings_the_probes_back_to_their_share():
    policy = CostAwarePolicy(probe_share=1 / 16)
    gaps = _steps_between_probes(policy, step=0.25, cost=0.25, probes=6, paid_after=(3,))
    # the probe after the paying draft (due at the interval the backoff had reached) sees it: the next ones start over
    assert gaps == [16, 32, 64, 128, 16, 32]


def test_a_held_batch_choice_counts_its_steps_ahead_with_the_backoff():
    policy = CostAwarePolicy(probe_share=1 / 16)
    assert policy._steps_before_probe(0.25, 0.25) == 15  # (the 16th step is the probe's)
    policy._skipped_s = policy._since_probe_s = 0.0
    policy._probe_scale = 2.0
    assert policy._steps_before_probe(0.25, 0.25) == 31
    assert policy._skipped_s == policy._since_probe_s == 31 * 0.25


def _held(rows: int) -> CostAwarePolicy:
    policy = CostAwarePolicy(probe_share=0.01)
    policy._batch_skips[rows.bit_length()] = ((0, rows, False), 0, 1e-4, 2e-5)
    policy._hold_batch(rows, 1e-4, 2e-5, rows.bit_length())
    return policy


def test_a_lent_hold_leaves_the_policy_where_its_steps_taken_one_by_one_do():
    """The loop takes ``taken`` held steps itself and gives the rest back when rows leave (or the batch ends)."""
    for taken, rows_after in ((0, 2), (3, 4), (3, 2), (20, 3)):
        asked, lent = _held(4), _held(4)
        steps = asked.batch_hold
        assert 0 < steps < 20
        for _ in range(min(taken, steps)):
            assert asked.take_held_step(4)
        got, floor = lent.lend_hold()
        assert (got, floor) == (steps, 2) and lent.batch_hold == 0
        lent.return_hold(got - min(taken, steps))
        assert asked.take_held_step(rows_after) == lent.take_held_step(rows_after)
        keys = ("batch_hold", "_batch_hold_len", "_batch_skips", "_skipped_s", "_since_probe_s", "probes")
        assert [getattr(lent, k) for k in keys] == [getattr(asked, k) for k in keys]


def test_a_subclass_that_counts_held_steps_is_lent_none():
    class Counting(CostAwarePolicy):
        def take_held_step(self, rows):
            return super().take_held_step(rows)

    policy = Counting(probe_share=0.01)
    policy._hold_batch(4, 1e-4, 2e-5, 3)
    assert policy.batch_hold and policy.lend_hold() == (0, 0) and policy.batch_hold


def test_the_batched_loop_takes_a_lent_hold_without_asking_and_decodes_greedy():
    """A drafter whose every token costs ten greedy steps: the batch holds its "no draft", and the loop asks the policy
    for far fewer passes than it makes; every row's output is its greedy output."""
    _, d, ver = copy_model()
    g = torch.Generator().manual_seed(1)
    srcs = [torch.cat([torch.randint(4, len(d), (int(k),), generator=g), torch.tensor([d.eos()])])
            for k in torch.randint(8, 14, (12,), generator=g)]
    policy = policy_with({1: (1e-4, 1e-3, 1e-5, 1e-4), 4: (1e-4, 1e-3, 1e-5, 4e-4)}, probe_share=0.001)
    start, step, observe = policy.batch_calls()
    asked = []
    policy._calls = (policy._calls[0], policy._calls[1],
                     (start, lambda states, v: asked.append(len(states)) or step(states, v), observe))
    out = decode_batched(ver, srcs, InputCopyDrafter(), accept_top1, batch_size=4, policy=policy, max_len_b=12)
    assert [r.tokens for r in out] == [greedy_decode(ver, s, max_len_b=12).tokens for s in srcs]
    order = sorted(range(len(srcs)), key=lambda i: -srcs[i].numel())
    passes = sum(max(out[i].stats.iterations for i in order[b:b + 4]) for b in range(0, len(order), 4))
    assert passes > 30 and len(asked) < passes / 2
    assert all(len(r.stats.planned) == r.stats.iterations for r in out)
    assert policy.batch_hold == 0 or policy._batch_hold_len
