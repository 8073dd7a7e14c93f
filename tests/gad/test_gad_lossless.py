"""GAD is lossless: with a NAT block drafter (random nat_block_drafter models, float64) and exact top-1 acceptance
(or GAD++ with beta=1), the draft -> verify -> accept loop returns exactly greedy decoding -- also when the drafter
proposes EOS inside a block, when the maximum length cuts a block and when the decoder positions run out."""
import pytest
import torch
from hypothesis import given
from hypothesis import strategies as st
from helpers.properties import property_settings

from gad_helpers import STEERED, build_random_drafter, drafter_cases, drafter_for, verifier_and_dict
from fastdec.engine import accept_top1, accept_top_beta, draft_verify_accept, greedy_decode
from fastdec.engine.loop import MaskedLogProbs
from fastdec.engine.nat_drafter import NATDrafter, drafter_alone_decode

SETTINGS = property_settings()


@SETTINGS
@given(drafter_cases(drafter_for))
def test_gad_equals_greedy(c):
    idx, src, drafter, lim = c
    ver = verifier_and_dict(idx)[2]
    greedy = greedy_decode(ver, src, **lim)
    for rule in (accept_top1, accept_top_beta(1, 5.0)):
        gad = draft_verify_accept(ver, src, drafter, rule, **lim)
        assert gad.tokens == greedy.tokens
        st_ = gad.stats
        assert st_.out_len == len(greedy.tokens) and st_.iterations == len(st_.accepted)
        assert st_.iterations <= greedy.stats.iterations
        assert all(0 <= a <= k for a, k in zip(st_.accepted, st_.drafted))
        assert all(k <= drafter.k for k in st_.drafted)
        # every iteration adds its accepted draft tokens plus the verifier's own token (EOS may cut the last one)
        assert sum(st_.accepted) + st_.iterations >= st_.out_len
        # the drafter's sub-modules are charged to the sentence, within the loop's drafter time
        enc, dec = st_.time_modules["drafter_encoder"], st_.time_modules["drafter_decoder"]
        assert enc > 0 and dec > 0 and enc + dec <= st_.time_drafter


@SETTINGS
@given(drafter_cases(drafter_for), st.sampled_from([(2, 0.5), (3, 1.0), (5, 3.0), (8, 100.0)]))
def test_gadpp_output_is_well_formed_and_accepts_at_least_gad(c, bt):
    """Every GAD++ iteration accepts at least what GAD's exact rule accepts from the same verifier pass, and GAD++
    decodes exactly like GAD (same drafts, same accepted blocks, same tokens) until it first accepts more."""
    idx, src, drafter, lim = c
    ver = verifier_and_dict(idx)[2]
    gad = draft_verify_accept(ver, src, drafter, accept_top1, **lim)
    exact, produced, max_len = [], [], []  # per GAD++ iteration: what exact acceptance would accept; tokens before

    def compare(state, draft, accepted, appended):
        j = state.num_generated - len(appended)
        top1 = MaskedLogProbs(ver, state.max_len).of(state.hidden, j)(0, len(draft) + 1).argmax(-1).tolist()
        exact.append(accept_top1(draft, top1))
        produced.append(j)
        max_len.append(state.max_len)

    pp = draft_verify_accept(ver, src, drafter, accept_top_beta(*bt), on_iteration=compare, **lim)
    assert pp.tokens[-1] == ver.eos and ver.eos not in pp.tokens[:-1]
    assert ver.pad not in pp.tokens and all(0 <= t < ver.vocab_size for t in pp.tokens)
    assert len(pp.tokens) <= max_len[0] + 1
    assert all(a >= e for a, e in zip(pp.stats.accepted, exact))
    n = next((i for i, (a, e) in enumerate(zip(pp.stats.accepted, exact)) if a > e), len(exact))
    assert pp.stats.accepted[:n] == gad.stats.accepted[:n] and pp.stats.drafted[:n] == gad.stats.drafted[:n]
    if n == len(exact):  # never relaxed: GAD++ is GAD
        assert pp.tokens == gad.tokens
    else:  # the first relaxed token is where the outputs part
        diverge = produced[n] + exact[n]
        assert pp.tokens[:diverge] == gad.tokens[:diverge] and pp.tokens[diverge] != gad.tokens[diverge]


def test_gad_with_eos_heavy_drafter_and_positions_limit():
    """A drafter that proposes EOS everywhere, and one whose decoder positions run out mid-sentence."""
    _, d, ver = verifier_and_dict(0)
    eos_model, _ = build_random_drafter(d, seed=3, eos_boost=50.0)
    eos_drafter = NATDrafter(eos_model, k=6, verifier_vocab_size=ver.vocab_size)
    short_model, _ = build_random_drafter(d, seed=4, max_positions=8)
    short_drafter = NATDrafter(short_model, k=5, verifier_vocab_size=ver.vocab_size)
    g = torch.Generator().manual_seed(0)
    for _ in range(10):
        src = torch.cat([torch.randint(d.nspecial, len(d), (int(torch.randint(1, 10, (), generator=g)),),
                                       generator=g), torch.tensor([d.eos()])])
        greedy = greedy_decode(ver, src, max_len_a=0.0, max_len_b=30)
        for drafter in (eos_drafter, short_drafter):
            assert draft_verify_accept(ver, src, drafter, accept_top1, max_len_a=0.0, max_len_b=30).tokens == \
                greedy.tokens
    assert eos_drafter.block(eos_drafter.encode(src), [d.eos()]).tolist().count(d.eos()) >= 1
    # 8 positions: BOS + 7 -> at most 7 masks, fewer as the prefix grows, none once it fills the positions
    enc = short_drafter.encode(src)
    assert short_drafter.block(enc, [d.eos()]).numel() == 5
    assert short_drafter.block(enc, [d.eos()] + [5] * 4).numel() == 3
    assert short_drafter.block(enc, [d.eos()] + [5] * 7).numel() == 0


def test_drafter_alone_decode_stops_at_eos_and_max_len():
    _, d, ver = verifier_and_dict(1)
    for seed, boost in ((0, 0.0), (1, 4.0), (2, 50.0)):
        model, _ = build_random_drafter(d, seed=seed, eos_boost=boost)
        drafter = NATDrafter(model, k=4, verifier_vocab_size=ver.vocab_size)
        for max_len in (1, 3, 9):
            r = drafter_alone_decode(drafter, torch.tensor([7, 8, 9, d.eos()]), max_len)
            tokens, st_ = r.tokens, r.stats
            assert tokens[-1] == d.eos() and d.eos() not in tokens[:-1]
            assert 1 <= len(tokens) == st_.out_len <= max_len + 1
            assert 1 <= st_.iterations <= -(-max_len // 4)  # NAT passes
            # the drafter's encoder is the sentence's encoder; its decoder passes are the drafter time
            enc, dec = st_.time_modules["drafter_encoder"], st_.time_modules["drafter_decoder"]
            assert 0 < enc <= st_.time_encoder and 0 < dec <= st_.time_drafter and st_.time_verifier == 0
    with pytest.raises(ValueError):
        drafter_alone_decode(drafter, torch.tensor([7, d.eos()]), 0)
    with pytest.raises(ValueError, match="encoder supports at most"):
        drafter_alone_decode(drafter, torch.full((70,), 7), 5)


def test_steered_pair_accepts_long_blocks_and_stays_greedy():
    """Coverage guard for the property test: the steered pair really accepts multi-token blocks."""
    _, d, ver = verifier_and_dict(STEERED)
    drafter = drafter_for(STEERED, 0, 0.0, 6)
    g = torch.Generator().manual_seed(0)
    accepted = full = 0
    for _ in range(10):
        src = torch.cat([torch.randint(d.nspecial, len(d), (6,), generator=g), torch.tensor([d.eos()])])
        r = draft_verify_accept(ver, src, drafter, accept_top1, max_len_a=0.0, max_len_b=30)
        assert r.tokens == greedy_decode(ver, src, max_len_a=0.0, max_len_b=30).tokens
        accepted += sum(r.stats.accepted)
        full += sum(a == k > 0 for a, k in zip(r.stats.accepted, r.stats.drafted))
    assert accepted >= 100 and full >= 10
