"""A replay of a cost-aware decode's draft lengths (fastdec.engine.replay): the loops, given the recorded choices
instead of the policy, make the recorded decode's drafts -- the same draft lengths, acceptances and outputs -- at
batch 1 and in batches, padded and packed, so the time between the two is what deciding costs."""
import pytest
import torch
from hypothesis import given
from hypothesis import strategies as st
from helpers.properties import property_settings

from conftest import MODEL_CONFIGS, random_model
from fastdec.engine import InputCopyDrafter, accept_top1, greedy_decode
from fastdec.engine.batched import decode_batched
from fastdec.engine.loop import draft_verify_accept
from fastdec.engine.replay import ReplayedChoices
from helpers.drafters import NoisyOracleDrafter, PerSourceDrafter
from helpers.policy import policy_with


def trail(results):
    return [(r.tokens, r.stats.drafted, r.stats.accepted, r.stats.planned) for r in results]


@property_settings(1 / 2)
@given(idx=st.sampled_from(range(len(MODEL_CONFIGS))), n=st.integers(2, 7), seed=st.integers(0, 10_000),
       per_token=st.sampled_from([0.0, 2e-5, 3e-4]), batch=st.sampled_from([2, 3, 7]), pack=st.booleans())
def test_a_replay_makes_the_recorded_drafts(idx, n, seed, per_token, batch, pack):
    _, d, ver = random_model(idx)
    g = torch.Generator().manual_seed(seed)
    srcs = {tuple(torch.randint(4, len(d), (int(k),), generator=g).tolist()) + (d.eos(),)
            for k in torch.randint(0, 12, (n,), generator=g)}  # (a choice is recorded by source: distinct ones)
    srcs = [torch.tensor(s) for s in sorted(srcs)]
    kw = dict(max_len_a=1.2, max_len_b=8)
    greedy = [greedy_decode(ver, s, **kw).tokens for s in srcs]
    refs = {tuple(s.tolist()): t for s, t in zip(srcs, greedy)}
    costs = {b: (1e-4, per_token, 1e-5, 2e-4 * b) for b in (1, 64)}
    # the noisy copies drafted afresh for each decode, with the same seed: the same proposals at the same iterations
    for make in (InputCopyDrafter, lambda: PerSourceDrafter(
            lambda src: NoisyOracleDrafter(refs[tuple(src)], len(d), noise=0.3, seed=seed))):
        recorded = [draft_verify_accept(ver, s, make(), accept_top1, policy=policy_with(costs), **kw) for s in srcs]
        replay = ReplayedChoices.record(srcs, recorded)
        again = [draft_verify_accept(ver, s, make(), accept_top1, policy=replay, **kw) for s in srcs]
        assert trail(again) == trail(recorded) and [r.tokens for r in again] == greedy
        recorded = decode_batched(ver, srcs, make(), accept_top1, batch_size=batch, pack=pack,
                                  policy=policy_with(costs), **kw)
        again = decode_batched(ver, srcs, make(), accept_top1, batch_size=batch, pack=pack,
                               policy=ReplayedChoices.record(srcs, recorded), **kw)
        assert trail(again) == trail(recorded) and [r.tokens for r in again] == greedy


def test_a_replay_refuses_what_it_did_not_record():
    _, d, ver = random_model(0)
    src = torch.tensor([5, 6, 7, d.eos()])
    fixed = draft_verify_accept(ver, src, InputCopyDrafter(), accept_top1, max_len_b=6)
    with pytest.raises(ValueError, match="not a decode with a draft policy"):
        ReplayedChoices.record([src], [fixed])
    recorded = draft_verify_accept(ver, src, InputCopyDrafter(), accept_top1, max_len_b=6,
                                   policy=policy_with({b: (1e-4, 0.0, 1e-5, 2e-4 * b) for b in (1, 64)}))
    replay = ReplayedChoices.record([src], [recorded])
    with pytest.raises(KeyError, match="no recorded choices for this source"):
        draft_verify_accept(ver, torch.tensor([8, 9, d.eos()]), InputCopyDrafter(), accept_top1, policy=replay)
    with pytest.raises(KeyError, match="decodes differently from the recording"):  # a longer decode than recorded
        draft_verify_accept(ver, src, InputCopyDrafter(), accept_top1, max_len_b=60, policy=replay)


def test_the_benchmark_replays_the_cost_aware_choices(tiny_checkpoint, tiny_databin):
    """``policy=replay`` in the method grammar: the runner replays each sentence's (each batch's) choices of the run's
    cost-aware twin, a sentence (a batch) later, and the replay row makes the twin's very drafts, losslessly."""
    from fastdec.bench.methods import parse_method, parse_methods
    from fastdec.bench.runner import Context, run_benchmark
    from fastdec.engine.load import load_model, make_verifier

    m = parse_method("iad:policy=replay:batch=2")
    assert (m.policy, m.label, parse_method(m.spec)) == ("replay", "iad-replay-bs2", m)
    with pytest.raises(ValueError, match="verifies no drafts"):
        parse_method("greedy:policy=replay")
    loaded = load_model(tiny_checkpoint, tiny_databin, dtype="float64")
    ctx = Context(loaded, make_verifier(loaded.model, dtype=loaded.dtype), 1.2, 5)
    lines = (tiny_databin.parent / "test.src").read_text().splitlines()[:7]
    sources = [loaded.encode(line) for line in lines]
    with pytest.raises(ValueError, match="add the method 'iad:policy=cost'"):
        run_benchmark(parse_methods("greedy,iad:policy=replay"), ctx, sources)
    methods = parse_methods("greedy,iad:policy=cost,iad:policy=replay,greedy:batch=3,iad:policy=cost:batch=3,"
                            "iad:policy=replay:batch=3")
    for block in (1, 3):  # (in turns of three sentences a replay decodes the turn before)
        out = run_benchmark(methods, ctx, sources, warmup=1, repeats=2, block=block)
        for cost, replay in (("iad-cost", "iad-replay"), ("iad-cost-bs3", "iad-replay-bs3")):
            assert [r.tokens for r in out[replay]] == [r.tokens for r in out["greedy"]]
            assert [r.id for r in out[replay]] == list(range(len(sources)))
            assert [(r.drafted, r.accepted, r.planned) for r in out[replay]] == [
                (r.drafted, r.accepted, r.planned) for r in out[cost]]
            assert all(len(r.planned) == r.iterations for r in out[cost])
