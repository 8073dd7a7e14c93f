"""The cheap NAT drafter: causal over the prefix, bidirectional among the k masks, its prefix cached by the
engine (one pass over the newly accepted tokens + k masks per iteration), and a drafter that reads the verifier's
encoder output when it was trained with a frozen copy of the verifier's encoder."""
import pytest
import torch
from hypothesis import given
from hypothesis import strategies as st
from helpers.properties import property_settings

from gad_helpers import STEERED, build_random_drafter, drafter_cases, steer, verifier_and_dict
from fastdec.engine import accept_top1, draft_verify_accept, greedy_decode
from fastdec.engine.batched import decode_batched
from fastdec.engine.nat_drafter import NATDrafter, encoders_match
from fastdec_fairseq.models.nat_block_drafter import prefix_causal_mask

SETTINGS = property_settings(2 / 3)
PAD = 1


def test_prefix_causal_mask_rows():
    tokens = torch.tensor([[PAD, PAD, 2, 7, 9, 5, 5],   # 2 pads, BOS, 2 prefix tokens, k=2 block
                           [2, 7, 9, 8, 6, 5, 5]])
    m = prefix_causal_mask(tokens, 2, PAD, num_heads=3).view(2, 3, 7, 7)[:, 0] == 0  # True = may attend
    assert m.shape == (2, 7, 7)
    for b in range(2):
        for i in range(5):  # prefix rows of real tokens: causal
            if tokens[b, i] != PAD:
                assert m[b, i].tolist() == [j <= i for j in range(7)]
        assert bool(m[b, 5:].all())  # block rows: everything (pads go through the key padding mask)
    assert m[0, 0].tolist() == [j == 2 for j in range(7)]  # a pad row: its BOS only, never an empty row


@pytest.fixture(scope="module")
def causal_pair():
    _, d, ver = verifier_and_dict(STEERED)
    model, _ = build_random_drafter(d, seed=3, attention="prefix-causal")
    steer(model.decoder, d.nspecial + 5, d.eos(), e=2.6)
    return ver, d, model


def test_prefix_features_ignore_later_positions_masks_see_all(causal_pair):
    _, d, model = causal_pair
    enc = model.encode(torch.tensor([[d.nspecial + 1, d.nspecial + 2, d.eos()]]))
    m = model.mask_idx
    a = torch.tensor([[d.eos(), d.nspecial + 3, d.nspecial + 4, m, m, m]])
    b = a.clone()
    b[0, 2] = d.nspecial + 6  # change the last prefix token
    with torch.no_grad():
        fa = model.decoder.block_features(a, enc, 3)
        fb = model.decoder.block_features(b, enc, 3)
    assert torch.equal(fa[0, :2], fb[0, :2])  # earlier prefix positions: causal
    assert bool(((fa[0, 3:] - fb[0, 3:]).abs().amax(-1) > 1e-6).all())  # every mask sees the prefix
    c = a.clone()
    c[0, -1] = d.nspecial + 7  # an input in the block (a glanced token) is seen by the other block positions
    with torch.no_grad():
        fc = model.decoder.block_features(c, enc, 3)
    assert torch.equal(fa[0, :3], fc[0, :3]) and not torch.allclose(fa[0, 3:5], fc[0, 3:5])
    # a left-padded batch gives each row what it gives alone (pads neither seen nor NaN)
    longer = torch.tensor([[d.eos(), d.nspecial + 3, d.nspecial + 4, d.nspecial + 8, d.nspecial + 9, m, m, m]])
    batch = torch.cat([torch.cat([torch.full((1, 2), model.pad_idx), a], 1), longer])
    with torch.no_grad():
        both = model.decoder.block_features(batch, model.reorder_encoder_out(enc, torch.tensor([0, 0])), 3)
        alone = model.decoder.block_features(longer, enc, 3)
    assert not torch.isnan(both).any()
    assert torch.allclose(both[0, 2:], fa[0], atol=1e-10) and torch.allclose(both[1], alone[0], atol=1e-10)


@SETTINGS
@given(st.lists(st.integers(5, 20), min_size=1, max_size=6), st.integers(1, 6), st.integers(1, 3), st.booleans())
def test_cached_drafting_equals_full_recompute(steps, k, grow, first_from_prefix):
    """The engine's cached prefix-causal pass drafts exactly what fairseq's full forward of the same model does,
    over a growing prefix (and after a prefix that diverges from the cache), with the first drafted token read at a
    mask or at the last prefix position."""
    d = verifier_and_dict(STEERED)[1]
    model, _ = build_random_drafter(d, seed=5, attention="prefix-causal", first_from_prefix=first_from_prefix)
    fast, slow = NATDrafter(model, k=k), NATDrafter(model, k=k, fast=False)
    src = torch.tensor([d.nspecial + 2, d.nspecial + 9, d.eos()])
    enc_f, enc_s = fast.encode(src), slow.encode(src)
    prefix = [d.eos()]
    for s in steps:
        for _ in range(grow):
            prefix.append(s)
        tf, lf = fast.block(enc_f, prefix, return_log_probs=True)
        ts, ls = slow.block(enc_s, prefix, return_log_probs=True)
        assert torch.equal(tf, ts) and torch.allclose(lf, ls, atol=1e-9)
        assert torch.equal(fast.block(enc_f, prefix), ts)  # the same prefix twice
    prefix = [d.eos(), d.nspecial + 3]  # diverges from the cached prefix: recomputed
    assert torch.equal(fast.block(enc_f, prefix), slow.block(enc_s, prefix))


def _causal_drafter(idx, seed, boost, k, first_from_prefix=False, backend="torch"):
    _, d, ver = verifier_and_dict(idx)
    model, _ = build_random_drafter(d, seed=seed, attention="prefix-causal", eos_boost=boost,
                                    first_from_prefix=first_from_prefix)
    if idx == STEERED:
        steer(model.decoder, d.nspecial + 5, d.eos(), e=2.5 + 0.1 * seed)
    return NATDrafter(model, k=k, verifier_vocab_size=ver.vocab_size, backend=backend)


@SETTINGS
@given(drafter_cases(lambda idx, seed, boost, k: _causal_drafter(idx, seed, boost, k, first_from_prefix=seed % 2 == 1)))
def test_prefix_causal_gad_equals_greedy(c):
    idx, src, drafter, lim = c
    ver = verifier_and_dict(idx)[2]
    assert drafter.prefix_causal and drafter.runner is not None and drafter.runner.causal
    greedy = greedy_decode(ver, src, **lim)
    gad = draft_verify_accept(ver, src, drafter, accept_top1, **lim)
    assert gad.tokens == greedy.tokens
    assert gad.stats.iterations <= greedy.stats.iterations


def test_prefix_causal_gad_batched_equals_greedy():
    ver = verifier_and_dict(STEERED)[2]
    d = verifier_and_dict(STEERED)[1]
    g = torch.Generator().manual_seed(4)
    srcs = [torch.cat([torch.randint(d.nspecial, len(d), (int(n),), generator=g), torch.tensor([d.eos()])])
            for n in torch.randint(0, 12, (7,), generator=g)]
    lim = dict(max_len_a=1.2, max_len_b=10)
    greedy = [greedy_decode(ver, s, **lim).tokens for s in srcs]
    for bs in (1, 3, 7):
        for first_from_prefix in (False, True):
            drafter = _causal_drafter(STEERED, 1, 0.0, 4, first_from_prefix)
            out = decode_batched(ver, srcs, drafter, accept_top1, batch_size=bs, **lim)
            assert [r.tokens for r in out] == greedy


def test_bidirectional_first_from_prefix_batched_equals_greedy():
    """The batched drafting pass of a bidirectional drafter that reads its first token at the prefix (one padded pass
    for all rows) drafts what each row drafts alone, and GAD stays greedy."""
    _, d, ver = verifier_and_dict(STEERED)
    model, _ = build_random_drafter(d, seed=2, first_from_prefix=True)
    steer(model.decoder, d.nspecial + 5, d.eos(), e=2.6)
    drafter = NATDrafter(model, k=5, verifier_vocab_size=ver.vocab_size)
    assert drafter.first_from_prefix and not drafter.prefix_causal
    g = torch.Generator().manual_seed(9)
    srcs = [torch.cat([torch.randint(d.nspecial, len(d), (int(n),), generator=g), torch.tensor([d.eos()])])
            for n in torch.randint(0, 12, (9,), generator=g)]
    lim = dict(max_len_a=1.2, max_len_b=10)
    greedy = [greedy_decode(ver, s, **lim).tokens for s in srcs]
    alone = [draft_verify_accept(ver, s, drafter, accept_top1, **lim) for s in srcs]
    for bs in (2, 9):
        out = decode_batched(ver, srcs, drafter, accept_top1, batch_size=bs, **lim)
        assert [r.tokens for r in out] == greedy == [r.tokens for r in alone]
        assert [r.stats.accepted for r in out] == [r.stats.accepted for r in alone]


def _verifier_as_drafter(first_from_prefix):
    """A prefix-causal drafter holding exactly the weights of verifier 2 (+ a <mask> row): what
    ``init_from_verifier: all`` starts training from."""
    vmodel, d, ver = verifier_and_dict(2)
    model, _ = build_random_drafter(d, seed=1, attention="prefix-causal", first_from_prefix=first_from_prefix)
    with torch.no_grad():
        mine = model.state_dict()
        for key, t in vmodel.state_dict().items():
            if key in mine:
                mine[key][: t.shape[0]].copy_(t) if t.dim() else mine[key].copy_(t)
    return ver, d, NATDrafter(model, k=4, verifier_vocab_size=ver.vocab_size)


def test_first_from_prefix_drafts_the_verifiers_next_token():
    """Started from the verifier's weights, a drafter that reads its first token at the last prefix position drafts
    the verifier's own next token there: GAD accepts at least one drafted token in every iteration but the last,
    while the same weights reading all k at masks do not."""
    ver, d, anchored = _verifier_as_drafter(True)
    _, _, masked = _verifier_as_drafter(False)
    lim = dict(max_len_a=1.2, max_len_b=10)
    g = torch.Generator().manual_seed(3)
    n_anchored = n_masked = 0
    for n in range(1, 9):
        src = torch.cat([torch.randint(d.nspecial, len(d), (n,), generator=g), torch.tensor([d.eos()])])
        greedy = greedy_decode(ver, src, **lim)
        a = draft_verify_accept(ver, src, anchored, accept_top1, **lim)
        m = draft_verify_accept(ver, src, masked, accept_top1, **lim)
        assert a.tokens == m.tokens == greedy.tokens
        assert all(n >= 1 for n in a.stats.accepted[:-1]), a.stats.accepted
        n_anchored += sum(a.stats.accepted)
        n_masked += sum(m.stats.accepted)
    assert n_anchored > n_masked


def test_shared_encoder_is_detected_and_reused():
    """A drafter whose encoder is the verifier's (the --freeze-encoder recipe) reads the verifier's encoder output:
    same drafts, and the drafter encodes nothing (its encoder time is ~0)."""
    vmodel, d, ver = verifier_and_dict(2)  # share_all_embeddings, like the drafter
    model, _ = build_random_drafter(d, seed=1, attention="prefix-causal")
    assert not encoders_match(model.encoder, ver.encoder)
    own = NATDrafter(model, k=4, verifier_vocab_size=ver.vocab_size)
    with torch.no_grad():
        mine = model.encoder.state_dict()
        for key, t in vmodel.encoder.state_dict().items():
            mine[key][: t.shape[0]].copy_(t) if t.dim() else mine[key].copy_(t)
    shared = NATDrafter(model, k=4, verifier_vocab_size=ver.vocab_size)
    assert encoders_match(model.encoder, ver.encoder) and shared.share_encoder_with(ver)
    assert not own.shares_encoder
    model.encoder.layers[0].fc1.bias.data[0] += 1e-3
    assert not encoders_match(model.encoder, ver.encoder)
    model.encoder.layers[0].fc1.bias.data[0] -= 1e-3
    src = torch.tensor([d.nspecial + 4, d.nspecial + 1, d.eos()])
    plain = NATDrafter(model, k=4, verifier_vocab_size=ver.vocab_size)
    a = draft_verify_accept(ver, src, shared, accept_top1, max_len_a=1.2, max_len_b=10)
    b = draft_verify_accept(ver, src, plain, accept_top1, max_len_a=1.2, max_len_b=10)
    assert a.tokens == b.tokens == greedy_decode(ver, src, max_len_a=1.2, max_len_b=10).tokens
    assert a.stats.accepted == b.stats.accepted
    assert a.stats.time_modules["drafter_encoder"] < b.stats.time_modules["drafter_encoder"]


@SETTINGS
@given(drafter_cases(lambda idx, seed, boost, k: _causal_drafter(idx, seed, boost, k, first_from_prefix=seed % 2 == 1,
                                                                 backend=("torch", "fast")[seed // 2 % 2])))
def test_gad_on_the_fast_verifier_equals_greedy(c):
    """The NAT drafter (prefix-causal; its own forward in PyTorch or in C) around the fast verifier (C passes): the
    output equals the fast verifier's greedy output and the reference's (float64)."""
    from fastdec.engine.fast_verifier import FastVerifier

    idx, src, drafter, lim = c
    model, _, ver = verifier_and_dict(idx)
    fast = _FAST.setdefault(idx, FastVerifier(model, dtype=torch.float64))
    greedy = greedy_decode(fast, src, **lim)
    assert greedy.tokens == greedy_decode(ver, src, **lim).tokens
    assert draft_verify_accept(fast, src, drafter, accept_top1, **lim).tokens == greedy.tokens


_FAST = {}


def test_fast_drafter_runner_drafts_what_the_torch_runner_drafts():
    """The drafter's forward in C (backend fast) proposes the blocks of its PyTorch forward (float64), cached
    prefix-causal passes and the paper's bidirectional drafter alike."""
    from fastdec.engine.fast_verifier import FastVerifier

    _, d, ver = verifier_and_dict(1)
    for attention in ("prefix-causal", "bidirectional"):
        model, _ = build_random_drafter(d, seed=3, attention=attention)
        slow = NATDrafter(model, k=4, verifier_vocab_size=ver.vocab_size)
        fast = NATDrafter(model, k=4, verifier_vocab_size=ver.vocab_size, backend="fast")
        assert isinstance(fast.runner, FastVerifier) and not isinstance(slow.runner, FastVerifier)
        src = torch.tensor([d.nspecial + 2, d.nspecial + 7, d.eos()])
        enc_s, enc_f = slow.encode(src), fast.encode(src)
        for prefix in ([d.eos()], [d.eos(), d.nspecial + 1], [d.eos(), d.nspecial + 1, d.nspecial + 4]):
            assert torch.equal(fast.block(enc_f, prefix), slow.block(enc_s, prefix))
