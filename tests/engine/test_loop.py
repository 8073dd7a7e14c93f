"""Lossless properties of the draft -> verify -> accept loop on random fairseq Transformers (float64)."""
import math
from unittest import mock

import pytest
import torch
from hypothesis import given
from hypothesis import strategies as st
from helpers.properties import property_settings

from conftest import MODEL_CONFIGS, random_model
from fastdec.engine import (AcceptanceRule, InputCopyDrafter, accept_top1, accept_top_beta, accept_top_k,
                            compute_max_len, draft_verify_accept, greedy_decode, with_min_block)
from fastdec.engine.profile import build_random_transformer
from fastdec.engine.verifier import Verifier
from helpers.drafters import FixedTokensDrafter, NoisyOracleDrafter, RandomDrafter

SETTINGS = property_settings(5 / 3)


@st.composite
def case(draw):
    idx = draw(st.sampled_from(range(len(MODEL_CONFIGS))))
    model, d, ver = random_model(idx)
    n = draw(st.integers(0, 14))
    src = draw(st.lists(st.integers(4, len(d) - 1), min_size=n, max_size=n)) + [d.eos()]
    a = draw(st.sampled_from([0.0, 0.5, 1.2]))
    b = draw(st.integers(1, 12))
    return idx, torch.tensor(src), dict(max_len_a=a, max_len_b=b)


def fairseq_greedy(model, d, src, max_len_a, max_len_b):
    """fairseq's own beam-1 search, its softmaxes kept in the model's precision (fairseq casts them to float32, which
    would compare a float64 engine with a float32 reference)."""
    import fairseq.utils
    import torch.nn.functional as F
    from fairseq.sequence_generator import SequenceGenerator

    gen = SequenceGenerator([model], d, beam_size=1, max_len_a=max_len_a, max_len_b=max_len_b)
    sample = {"net_input": {"src_tokens": src[None], "src_lengths": torch.tensor([src.numel()])}}
    with mock.patch.object(fairseq.utils, "log_softmax", lambda x, dim, onnx_trace=False: F.log_softmax(x, dim=dim)), \
            mock.patch.object(fairseq.utils, "softmax", lambda x, dim, onnx_trace=False: F.softmax(x, dim=dim)):
        return gen.generate([model], sample)[0][0]["tokens"].tolist()


def steered_model(eos_weight=None, tie=None):
    """A random pre-norm model (float64) with one feature held near 5 at every position: ``eos_weight`` on it makes
    EOS compete (0.5: most outputs stop on their own, some at the length limit) or never win (-5: every output is cut
    at max_len); ``tie=(a, b)`` gives tokens a and b the same output row, leading at every step: exact ties."""
    model, d, _ = build_random_transformer(seed=7, dtype=torch.float64, max_positions=64, normalize_before=True,
                                           learned_pos=True)
    with torch.no_grad():
        model.decoder.layer_norm.bias[0] = 5.0
        w = model.decoder.output_projection.weight
        if eos_weight is not None:
            w[d.eos(), 0] = eos_weight
        if tie is not None:
            a, b = tie
            w[b] = w[a]
            w[a, 0] = w[b, 0] = 3.0
    return model, d, Verifier(model, dtype=torch.float64)


def sources(d, n=16, seed=0):
    g = torch.Generator().manual_seed(seed)
    return [torch.cat([torch.randint(4, len(d), (int(torch.randint(1, 12, (), generator=g)),), generator=g),
                       torch.tensor([d.eos()])]) for _ in range(n)]


class NoisyCopyIAD(InputCopyDrafter):
    """IAD whose "input" is a corrupted greedy output: long accepted blocks, bifurcations, re-matching."""

    def __init__(self, reference, seed, vocab):
        super().__init__()
        g = torch.Generator().manual_seed(seed)
        ref = list(reference)
        for i in range(len(ref)):
            r = torch.rand((), generator=g).item()
            if r < 0.1:
                ref[i] = int(torch.randint(4, vocab, (), generator=g))
            elif r < 0.15:
                ref.insert(i, int(torch.randint(4, vocab, (), generator=g)))
        self.ref = ref

    def start(self, state):
        saved = state.src_list
        state.src_list = self.ref
        super().start(state)
        state.src_list = saved


@SETTINGS
@given(c=case(), seed=st.integers(0, 10_000))
def test_all_exact_drafters_equal_greedy(c, seed):
    idx, src, kw = c
    model, d, ver = random_model(idx)
    greedy = greedy_decode(ver, src, **kw)
    out = greedy.tokens
    max_len = compute_max_len(src.numel(), kw["max_len_a"], kw["max_len_b"], ver.max_positions)
    assert out[-1] == d.eos() and d.eos() not in out[:-1] and len(out) <= max_len + 1
    assert greedy.stats.iterations == len(out)
    # (b) IAD, (c) arbitrary random drafts, noisy oracle, noisy-copy IAD; (d) top-beta with beta = 1
    drafters = [InputCopyDrafter(), RandomDrafter(len(d), max_tokens=10, seed=seed),
                NoisyOracleDrafter(out, len(d), noise=0.3, seed=seed), NoisyCopyIAD(out, seed, len(d))]
    for drafter in drafters:
        r = draft_verify_accept(ver, src, drafter, accept_top1, **kw)
        assert r.tokens == out, type(drafter).__name__
        assert r.stats.iterations == len(r.stats.accepted) <= len(out)
    for tau in (0.0, 2.5, math.inf):
        for drafter in (NoisyOracleDrafter(out, len(d), noise=0.3, seed=seed),
                        RandomDrafter(len(d), max_tokens=6, seed=seed + 1)):
            r = draft_verify_accept(ver, src, drafter, accept_top_beta(1, tau), **kw)
            assert r.tokens == out
    assert draft_verify_accept(ver, src, NoisyOracleDrafter(out, len(d), noise=0.3, seed=seed),
                               accept_top_k(1), **kw).tokens == out


@SETTINGS
@given(c=case())
def test_engine_greedy_equals_fairseq_greedy(c):
    idx, src, kw = c
    model, d, ver = random_model(idx)
    assert greedy_decode(ver, src, **kw).tokens == fairseq_greedy(model, d, src, **kw)


@pytest.mark.parametrize("eos_weight, natural", [(0.5, "some"), (-5.0, "none")])
def test_fairseq_reference_on_natural_eos_and_length_limit_stops(eos_weight, natural):
    """The independent reference check where outputs end on their own EOS and where the length limit cuts them:
    engine greedy and IAD equal fairseq's greedy search token for token in both cases."""
    model, d, ver = steered_model(eos_weight=eos_weight)
    stops = {"eos": 0, "limit": 0}
    for src in sources(d):
        kw = dict(max_len_a=1.2, max_len_b=10)
        ours = greedy_decode(ver, src, **kw).tokens
        assert ours == fairseq_greedy(model, d, src, **kw)
        assert draft_verify_accept(ver, src, InputCopyDrafter(), accept_top1, **kw).tokens == ours
        max_len = compute_max_len(src.numel(), kw["max_len_a"], kw["max_len_b"], ver.max_positions)
        stops["eos" if len(ours) - 1 < max_len else "limit"] += 1
    if natural == "some":
        assert stops["eos"] >= 8 and stops["limit"] >= 1, stops
    else:
        assert stops == {"eos": 0, "limit": 16}


def test_exact_ties_go_to_the_lowest_token_id():
    """Two tokens with the same output row tie exactly at every step: the engine (every drafter, every backend) takes
    the lower id, as argmax does. fairseq's beam-1 search takes whichever its top-k returns first, which PyTorch does
    not specify: at exact ties it is no reference (it picks either token, the outputs below show both). Off ties
    -- the second token's row nudged up by 1e-9 -- both take that token."""
    from fastdec.engine.fast_verifier import FastVerifier

    model, d, ver = steered_model(tie=(7, 9))
    fast = FastVerifier(model, dtype=torch.float64)
    theirs = set()
    for src in sources(d, n=6):
        for v in (ver, fast):
            out = greedy_decode(v, src, max_len_b=8).tokens
            assert out[:-1] == [7] * (len(out) - 1)
            assert draft_verify_accept(v, src, NoisyOracleDrafter(out, len(d), noise=0.5, seed=1), accept_top1,
                                       max_len_b=8).tokens == out
        theirs |= set(fairseq_greedy(model, d, src, 0, 8)[:-1])
    assert theirs <= {7, 9}
    with torch.no_grad():
        model.decoder.output_projection.weight[9, 0] += 1e-9
    ver = Verifier(model, dtype=torch.float64)
    for src in sources(d, n=6):
        out = greedy_decode(ver, src, max_len_b=8).tokens
        assert out[:-1] == [9] * (len(out) - 1) and out == fairseq_greedy(model, d, src, 0, 8)


def test_noise_free_oracle_decodes_in_one_iteration():
    model, d, ver = random_model(0)
    src = torch.tensor([5, 9, 11, 30, 7, 2])
    out = greedy_decode(ver, src, max_len_b=20).tokens
    r = draft_verify_accept(ver, src, NoisyOracleDrafter(out, len(d), noise=0.0, max_tokens=100, seed=0),
                            max_len_b=20)
    # the oracle may draw a short length; the fully accepted drafts make it far fewer iterations
    assert r.tokens == out
    r = draft_verify_accept(ver, src, FixedTokensDrafter(lambda s: out[s.num_generated:]), max_len_b=20)
    assert r.tokens == out and r.stats.iterations == 1 and r.stats.accepted == [len(out) - 1]


@pytest.mark.parametrize("idx", range(len(MODEL_CONFIGS)))
def test_empty_source(idx):
    model, d, ver = random_model(idx)
    src = torch.tensor([d.eos()])
    g = greedy_decode(ver, src, max_len_a=0, max_len_b=8)
    assert g.tokens[0] != d.eos() and g.tokens[-1] == d.eos()
    assert draft_verify_accept(ver, src, InputCopyDrafter(), max_len_b=8).tokens == g.tokens
    assert g.tokens == fairseq_greedy(model, d, src, 0, 8)


def test_max_length_and_errors():
    model, d, ver = random_model(1)
    src = torch.tensor([5, 6, 7, 2])
    # max_len = 1: one token then the forced EOS, also with an eager drafter
    assert len(greedy_decode(ver, src, max_len_b=1).tokens) == 2
    r = draft_verify_accept(ver, src, FixedTokensDrafter([[5, 6, 7, 8]]), max_len_b=1)
    assert len(r.tokens) == 2 and r.tokens[-1] == d.eos()
    with pytest.raises(ValueError, match="maximum output length must be >= 1"):
        greedy_decode(ver, src, max_len_b=0)
    with pytest.raises(ValueError, match="max_source_positions"):
        greedy_decode(ver, torch.full((80,), 5))
    with pytest.raises(ValueError, match="outside the vocabulary"):
        draft_verify_accept(ver, src, FixedTokensDrafter([[len(d) + 3]]))
    with pytest.raises(ValueError, match="max_draft_len"):
        draft_verify_accept(ver, src, InputCopyDrafter(), max_draft_len=-1)
    # max positions cap the length: 64 positions -> at most 63 tokens incl. EOS
    assert len(greedy_decode(ver, src, max_len_b=1000).tokens) <= 64


def test_max_draft_len_and_padding_truncation():
    model, d, ver = random_model(0)
    src = torch.tensor([5, 9, 11, 2])
    out = greedy_decode(ver, src, max_len_b=10).tokens
    r = draft_verify_accept(ver, src, FixedTokensDrafter(lambda s: out[s.num_generated:]), max_len_b=10,
                            max_draft_len=2)
    assert r.tokens == out and max(r.stats.drafted) <= 2
    r = draft_verify_accept(ver, src, FixedTokensDrafter(lambda s: out[s.num_generated:][:1] + [d.pad(), 7]),
                            max_len_b=10)
    assert r.tokens == out and max(r.stats.drafted) <= 1


def test_relaxed_acceptance_accepts_second_best():
    """top-beta (beta=2, tau=inf) and top-k (k=2) accept the verifier's 2nd-best token; tau=0 does not."""
    model, d, ver = random_model(2)
    src = torch.tensor([5, 8, 13, 2])

    ver2 = Verifier(model, dtype=torch.float64)  # a second cache over the same weights

    def second_best(state):
        # score the current prefix with the second verifier to find the 2nd-best next token
        return [second_best.cache.setdefault(tuple(state.prefix), _second(ver2, src, state.prefix, d))]
    second_best.cache = {}
    for rule, accepts in ((accept_top_beta(2, math.inf), True), (accept_top_k(2), True),
                          (accept_top_beta(2, 0.0), False), (accept_top1, False)):
        second_best.cache.clear()
        r = draft_verify_accept(ver, src, FixedTokensDrafter(second_best), rule, max_len_b=6)
        assert (sum(r.stats.accepted) > 0) == accepts, rule
        assert r.tokens[-1] == d.eos()


def _second(ver, src, prefix, d):
    ver.start(src)
    lp = ver.forward(torch.tensor(prefix)).log_probs[-1].clone()
    lp[d.pad()] = -math.inf
    if len(prefix) == 1:
        lp[d.eos()] = -math.inf
    return int(lp.topk(2).indices[1])


def test_min_block_size_forces_progress():
    model, d, ver = random_model(0)
    src = torch.tensor([5, 9, 11, 2])
    rule = with_min_block(accept_top1, 3)
    r = draft_verify_accept(ver, src, RandomDrafter(len(d), max_tokens=5, seed=1, low=4), rule, max_len_b=12)
    for k, a in zip(r.stats.drafted[:-1], r.stats.accepted[:-1]):
        assert a >= min(2, k)
    assert r.tokens[-1] == d.eos() and len(r.tokens) <= 13


def test_stats_are_consistent():
    model, d, ver = random_model(3)
    src = torch.tensor([5, 9, 11, 12, 13, 2])
    out = greedy_decode(ver, src, max_len_b=15).tokens
    r = draft_verify_accept(ver, src, NoisyOracleDrafter(out, len(d), noise=0.2, seed=3), max_len_b=15,
                            sent_id=7, method="oracle")
    s = r.stats
    assert s.id == 7 and s.method == "oracle" and s.out_len == len(out) and s.src_len == 6
    assert len(s.drafted) == len(s.accepted) == s.iterations
    assert all(0 <= a <= k for a, k in zip(s.accepted, s.drafted))
    assert sum(a + 1 for a in s.accepted) == len(out)  # no EOS inside accepted drafts here
    parts = s.time_encoder + s.time_drafter + s.time_verifier + s.time_other
    assert s.time > 0 and abs(parts - s.time) < 1e-6 and min(s.time_encoder, s.time_verifier) > 0
    assert s.peak_mem_mb > 0
    d_ = s.to_dict()
    assert d_["tokens_per_iteration"] == pytest.approx(len(out) / s.iterations)


def test_on_iteration_sees_every_iteration():
    model, d, ver = random_model(0)
    src = torch.tensor([5, 9, 11, 12, 2])
    out = greedy_decode(ver, src, max_len_b=12).tokens
    seen = []
    r = draft_verify_accept(ver, src, NoisyOracleDrafter(out, len(d), noise=0.3, seed=2), max_len_b=12,
                            on_iteration=lambda state, draft, a, new: seen.append((state.iteration, draft, a, new)))
    assert [it for it, *_ in seen] == list(range(1, r.stats.iterations + 1))
    assert [len(dr) for _, dr, _, _ in seen] == r.stats.drafted and [a for _, _, a, _ in seen] == r.stats.accepted
    assert [t for *_, new in seen for t in new] == r.tokens == out
    assert all(new[:a] == dr[:a] for _, dr, a, new in seen)


def test_drafter_sees_hidden_states():
    model, d, ver = random_model(4)
    src = torch.tensor([5, 9, 11, 2])
    seen = []

    def spy(state):
        if state.hidden is not None:
            seen.append((state.hidden.shape, state.last_hidden.shape, state.last_row, state.last_accepted))
        return [7, 8]
    draft_verify_accept(ver, src, FixedTokensDrafter(spy), max_len_b=5)
    assert seen and all(h[0][1] == 8 and h[1] == (8,) and h[2] == h[3] for h in seen)  # output dim 8


@pytest.mark.parametrize("noise", [0.0, 0.05, 0.3])
def test_lazy_projection_of_exact_acceptance_matches_full_projection(noise):
    """Exact acceptance projects rows in chunks of 8, 16, 32 and stops at the first mismatch; it must accept
    exactly what scoring every row accepts (long drafts cross several chunk boundaries)."""
    model, d, ver = random_model(3)
    src = torch.tensor([5, 9, 11, 12, 13, 2])
    ref = greedy_decode(ver, src, max_len_b=60).tokens

    class FullRule(AcceptanceRule):  # same decision through the base class's projection of every row
        needs_log_probs = False

        def __call__(self, draft, top1, log_probs=None):
            return accept_top1(draft, top1)

    full_rule = FullRule()
    kw = dict(max_len_b=60)
    lazy = draft_verify_accept(ver, src, NoisyOracleDrafter(ref, len(d), noise=noise, max_tokens=60, seed=1),
                               accept_top1, **kw)
    full = draft_verify_accept(ver, src, NoisyOracleDrafter(ref, len(d), noise=noise, max_tokens=60, seed=1),
                               full_rule, **kw)
    assert lazy.tokens == full.tokens == ref
    assert lazy.stats.accepted == full.stats.accepted and lazy.stats.drafted == full.stats.drafted
    assert max(lazy.stats.drafted) > 16  # drafts offer rows beyond the first two chunks (8, 16)
    # for every noise level some iteration accepted 8 or more: its next token's row lies in the second chunk, so the
    # lazy projection crossed a chunk boundary and had to agree with the full projection there
    assert max(lazy.stats.accepted) >= 8
