"""Blockwise parallel decoding in the engine (Stern et al. 2018) on tiny random combined models (float64).

The central property: with exact acceptance, blockwise decoding returns exactly the greedy output of p_1,
for any block size, any head weights, p_1 on the identity path or through the head layer. Plus: the
drafter never runs the decoder (one decoder pass per iteration: m/k + 1 calls at best), its proposals are
the argmax of heads p_2..p_k at the last verified position, and bad settings raise clear errors.
"""
import functools
import os
import sys
from pathlib import Path

import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("fairseq")
from hypothesis import given  # noqa: E402
from hypothesis import strategies as st  # noqa: E402
from helpers.properties import property_settings

REPO = Path(__file__).resolve().parents[2]
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))
os.environ.setdefault("TORCH_FORCE_NO_WEIGHTS_ONLY_LOAD", "1")
torch.set_num_threads(1)

from helpers.blockwise import blockwise_decode  # noqa: E402
from helpers.models import build_random_blockwise  # noqa: E402
from fastdec.engine import Verifier, greedy_decode, make_drafter  # noqa: E402
from fastdec.engine.blockwise_drafter import BlockwiseDrafter, check_blockwise_settings  # noqa: E402

SETTINGS = property_settings()

# (trained k, p1_through_layer, head_std, init_std): random heads, heads = p_1 (repetitive greedy outputs
# get long accepted blocks), sharp base distributions, the paper-faithful p_1 through the layer
MODELS = [
    (4, False, 0.5, None),
    (4, False, None, 0.3),
    (6, True, 0.05, 0.3),
    (3, False, 0.02, 1.0),
    (1, True, 0.3, None),
]


@functools.lru_cache(maxsize=None)
def model(idx):
    k, p1, head_std, init_std = MODELS[idx]
    m, d = build_random_blockwise(k, p1_through_layer=p1, head_std=head_std, init_std=init_std, seed=10 + idx,
                                  dtype=torch.float64)
    return m, d, Verifier(m, dtype=torch.float64)


@st.composite
def case(draw):
    idx = draw(st.sampled_from(range(len(MODELS))))
    m, d, ver = model(idx)
    trained = MODELS[idx][0]
    k = draw(st.integers(1, trained))
    n = draw(st.integers(0, 12))
    src = draw(st.lists(st.integers(4, len(d) - 1), min_size=n, max_size=n)) + [d.eos()]
    a = draw(st.sampled_from([0.0, 1.2]))
    b = draw(st.integers(1, 25))
    return idx, k, torch.tensor(src), dict(max_len_a=a, max_len_b=b)


class CountingVerifier:
    """Wraps a Verifier and counts decoder passes."""

    def __init__(self, ver):
        self._ver = ver
        self.calls = 0

    def forward(self, *a, **kw):
        self.calls += 1
        return self._ver.forward(*a, **kw)

    def __getattr__(self, name):
        return getattr(self._ver, name)


@SETTINGS
@given(case())
def test_exact_blockwise_equals_greedy_of_p1(c):
    idx, k, src, kw = c
    m, d, ver = model(idx)
    greedy = greedy_decode(ver, src, **kw)
    counting = CountingVerifier(ver)
    res = blockwise_decode(counting, src, k, **kw)
    assert res.tokens == greedy.tokens
    # one decoder pass per iteration: the drafter reads the verification pass's hidden states
    assert counting.calls == res.stats.iterations
    assert all(0 <= a <= max(k - 1, 0) for a in res.stats.accepted)
    assert all(dr <= k - 1 for dr in res.stats.drafted)
    m_out = len(res.tokens)
    # at best m/k + 1 calls (first call: greedy step), at worst m calls
    assert 1 + -(-(m_out - 1) // k) <= res.stats.iterations <= m_out
    # top-1 "approximate" and ℓ = 1 are the exact rule
    res1 = blockwise_decode(ver, src, k, topk=1, min_block=1, **kw)
    assert res1.tokens == greedy.tokens


@SETTINGS
@given(case(), st.integers(2, 4), st.integers(1, 6))
def test_approximate_and_min_block_invariants(c, topk, ell):
    idx, k, src, kw = c
    m, d, ver = model(idx)
    ell = min(ell, k)
    res = blockwise_decode(ver, src, k, topk=topk, min_block=ell, **kw)
    toks = res.tokens
    assert toks and toks[-1] == d.eos() and d.eos() not in toks[:-1]
    assert d.pad() not in toks
    # every iteration but the last (EOS may cut it) and the first (no proposals yet) adds >= ℓ tokens
    for dr, a in list(zip(res.stats.drafted, res.stats.accepted))[1:-1]:
        assert a + 1 >= min(ell, dr + 1)
    if k == 1:
        assert toks == greedy_decode(ver, src, **kw).tokens


def _features(m, src, prefix):
    """Full (non-incremental) decoder features [T, C] of ``prefix`` (starts with BOS)."""
    with torch.no_grad():
        enc = m.encoder(src[None], src_lengths=torch.tensor([src.numel()]))
        feats, _ = m.decoder(torch.tensor([prefix]), encoder_out=enc, features_only=True)
    return feats[0]


@pytest.mark.parametrize("idx", range(len(MODELS)))
def test_proposals_are_argmax_of_heads_at_last_verified_position(idx):
    m, d, ver = model(idx)
    trained = MODELS[idx][0]
    src = torch.tensor([5, 9, 11, 7, d.eos()])
    seen = []

    class Spy(BlockwiseDrafter):
        def propose(self, state):
            out = super().propose(state)
            seen.append((list(state.prefix), out))
            return out

    drafter = Spy(m, block_size=trained)
    blockwise_decode(ver, src, drafter=drafter, max_len_a=0, max_len_b=12)
    assert seen[0][1] == []  # first iteration: greedy step, no hidden state yet
    for prefix, out in seen[1:]:
        if not out:
            continue
        feats = _features(m, src, prefix)  # position len(prefix) - 2 predicted the newest token
        logits = m.heads_from_features(feats[-2][None, None])[0, 0]  # [k, V]
        logits[:, d.pad()] = float("-inf")
        assert out == logits[1:].argmax(-1).tolist()


def test_perfect_heads_give_blocks_of_k():
    """A decoder blind to its inputs predicts one constant token: heads = p_1 propose it, all get accepted."""
    k = 4
    m, d = build_random_blockwise(k, head_std=None, seed=3, no_token_positional_embeddings=True,
                                  share_all_embeddings=False, share_decoder_input_output_embed=False)
    with torch.no_grad():
        m.decoder.embed_tokens.weight.zero_()
        m.decoder.output_projection.weight[d.eos()] -= 100.0  # never stop early
    ver = Verifier(m, dtype=torch.float64)
    src = torch.tensor([6, 7, 8, d.eos()])
    greedy = greedy_decode(ver, src, max_len_a=0, max_len_b=20)
    assert len(set(greedy.tokens[:-1])) == 1 and len(greedy.tokens) == 21
    res = blockwise_decode(ver, src, k, max_len_a=0, max_len_b=20)
    assert res.tokens == greedy.tokens
    # 21 tokens: 1 (first call) + 20 in blocks of k = 4 -> 1 + 5 calls (the forced EOS ends the last block)
    assert res.stats.iterations == 1 + 5


def test_registered_and_built_through_make_drafter():
    m, d, ver = model(0)
    dr = make_drafter("blockwise", context={"verifier": ver, "loaded": None}, block_size=2)
    assert isinstance(dr, BlockwiseDrafter) and dr.block_size == 2
    assert make_drafter("blockwise", context={"verifier": ver}).block_size == MODELS[0][0]
    with pytest.raises(ValueError, match="exceeds the model's trained block size"):
        make_drafter("blockwise", context={"verifier": ver}, block_size=9)
    with pytest.raises(ValueError, match="block size k must be >= 1"):
        make_drafter("blockwise", context={"verifier": ver}, block_size=0)
    with pytest.raises(ValueError, match="needs the loaded model"):
        make_drafter("blockwise", context={})


def test_plain_transformer_is_rejected():
    from fastdec.engine.profile import build_random_transformer

    plain, _, _ = build_random_transformer(n_symbols=10, layers=1, embed_dim=8, ffn_dim=8)
    with pytest.raises(ValueError, match="combined scoring/proposal model"):
        BlockwiseDrafter(plain)


@pytest.mark.parametrize("k,topk,ell,msg", [
    (0, 1, 1, "block size k must be >= 1"),
    (-3, 1, 1, "block size k must be >= 1"),
    (4, 0, 1, "top-k must be >= 1"),
    (4, 1, 0, "minimum block size ℓ must be >= 1"),
    (2, 1, 3, "exceeds the block size"),
    (2.5, 1, 1, "must be an integer"),
    (True, 1, 1, "must be an integer"),
])
def test_bad_settings(k, topk, ell, msg):
    with pytest.raises(ValueError, match=msg):
        check_blockwise_settings(k, topk, ell)
    if isinstance(k, int) and not isinstance(k, bool) and k >= 1:
        m, d, ver = model(0)
        with pytest.raises(ValueError, match=msg):
            blockwise_decode(ver, torch.tensor([5, d.eos()]), min(k, 4), topk=topk, min_block=ell,
                             max_len_b=5)


@pytest.mark.parametrize("idx", [0, 1, 2, 3])
def test_int8_proposals_stay_lossless(idx):
    """int8 proposal heads may propose other tokens, but exact acceptance still returns greedy of p_1."""
    m, d, ver = model(idx)
    drafter = BlockwiseDrafter(m, head_precision="int8")
    assert drafter.head_precision == "int8"
    for seed in range(8):
        g = torch.Generator().manual_seed(seed)
        src = torch.cat([torch.randint(4, len(d), (int(torch.randint(0, 10, (), generator=g)),), generator=g),
                         torch.tensor([d.eos()])])
        kw = dict(max_len_a=1.2, max_len_b=15)
        assert blockwise_decode(ver, src, drafter=drafter, **kw).tokens == greedy_decode(ver, src, **kw).tokens
    with pytest.raises(ValueError, match="head_precision"):
        BlockwiseDrafter(m, head_precision="int4")


def test_loop_checks_acceptance_against_the_drafter():
    """The engine loop asks the drafter whether the rule fits (ℓ <= k), whichever API built the pair."""
    from fastdec.engine import draft_verify_accept, make_acceptance

    m, d, ver = model(0)
    drafter = make_drafter("blockwise", context={"verifier": ver}, block_size=2)
    with pytest.raises(ValueError, match="exceeds the block size"):
        draft_verify_accept(ver, torch.tensor([5, d.eos()]), drafter, make_acceptance("top1", min_block_size=3),
                            max_len_b=5)
    ok = draft_verify_accept(ver, torch.tensor([5, d.eos()]), drafter, make_acceptance("top1", min_block_size=2),
                             max_len_b=5)
    assert ok.tokens[-1] == d.eos()


@functools.lru_cache(maxsize=None)
def fast_model(idx):
    from fastdec.engine.fast_verifier import FastVerifier

    return FastVerifier(model(idx)[0], dtype=torch.float64)


@SETTINGS
@given(case())
def test_exact_blockwise_on_the_fast_verifier_equals_greedy(c):
    """Blockwise with p_1 = the base model's output runs on the fast verifier (C passes) unchanged: exactly its
    greedy output, which is the reference's (float64). A p_1 through the head layer has no C pass (a clear error)."""
    from fastdec.engine.fast_verifier import FastBackendUnavailable

    idx, k, src, kw = c
    if MODELS[idx][1]:  # p1_through_layer
        with pytest.raises(FastBackendUnavailable, match="custom output layer"):
            fast_model(idx)
        return
    fast = fast_model(idx)
    greedy = greedy_decode(fast, src, **kw)
    assert greedy.tokens == greedy_decode(model(idx)[2], src, **kw).tokens
    assert blockwise_decode(fast, src, k, **kw).tokens == greedy.tokens
