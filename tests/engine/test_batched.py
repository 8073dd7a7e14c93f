"""Batched draft -> verify -> accept with per-row rollback is lossless: at B in {1, 2, 7, 32}, with ragged source
lengths, random drafts and early EOS, every row's output equals that sentence's own batch-1 greedy output (random
fairseq Transformers, float64); relaxed rules give the same output as their batch-1 runs."""
import functools
import math

import pytest
import torch
from hypothesis import given
from hypothesis import strategies as st
from helpers.properties import property_settings

from conftest import MODEL_CONFIGS, random_model
from fastdec.engine import (InputCopyDrafter, accept_top1, accept_top_beta, accept_top_k, accept_within_distance,
                            greedy_decode, with_min_block)
from fastdec.engine.batched import BatchedVerifier, batched_verifier, check_batch_size, decode_batch, decode_batched
from fastdec.engine.fast_verifier import FastVerifier
from fastdec.engine.loop import draft_verify_accept
from fastdec.engine.projection import BatchedMaskedLogProbs, MaskedLogProbs
from helpers.drafters import NoisyOracleDrafter, PerSourceDrafter, RandomDrafter

SETTINGS = property_settings(1 / 2)


@st.composite
def batch_case(draw):
    idx = draw(st.sampled_from(range(len(MODEL_CONFIGS))))
    _, d, _ = random_model(idx)
    B = draw(st.sampled_from([2, 3, 7, 32]))  # >= 2: a batch of one is the batch-1 loop itself
    lengths = draw(st.lists(st.integers(0, 14), min_size=B, max_size=B))
    srcs = [torch.tensor(draw(st.lists(st.integers(4, len(d) - 1), min_size=n, max_size=n)) + [d.eos()])
            for n in lengths]
    kw = dict(max_len_a=draw(st.sampled_from([0.0, 0.5, 1.2])), max_len_b=draw(st.integers(1, 12)))
    return idx, srcs, kw


def oracle(references, vocab, seed, noise=0.3):
    """Per row, a noisy oracle of that row's own greedy output (drafts EOS exactly where greedy ends: early EOS)."""
    return PerSourceDrafter(lambda src: NoisyOracleDrafter(references[tuple(src)], vocab, noise=noise, seed=seed))


@SETTINGS
@given(c=batch_case(), seed=st.integers(0, 10_000))
def test_batched_exact_methods_equal_each_sentence_greedy(c, seed):
    idx, srcs, kw = c
    _, d, ver = random_model(idx)
    greedy = [greedy_decode(ver, s, **kw).tokens for s in srcs]
    refs = {tuple(s.tolist()): g for s, g in zip(srcs, greedy)}
    B = len(srcs)
    batched_greedy = decode_batched(ver, srcs, batch_size=B, **kw)
    assert [r.tokens for r in batched_greedy] == greedy
    assert [r.stats.iterations for r in batched_greedy] == [len(g) for g in greedy]
    runs = [(InputCopyDrafter(), accept_top1),                                     # IAD
            (RandomDrafter(len(d), max_tokens=10, seed=seed), accept_top1),        # arbitrary drafts
            (oracle(refs, len(d), seed), accept_top1),                              # long blocks, EOS in drafts
            (oracle(refs, len(d), seed + 1), accept_top_beta(1, 2.5)),             # GAD++ with beta = 1
            (RandomDrafter(len(d), max_tokens=6, seed=seed), accept_top_beta(1, math.inf)),
            (oracle(refs, len(d), seed + 2), accept_top_k(1))]                     # exact Blockwise rule
    for drafter, rule in runs:
        # the whole batch, and several smaller ones (ragged last batch); linear layers on the real tokens only
        # (packed, the CPU default) and on the padded batch (the GPU default)
        for bs, pack in {(B, True), (max(2, B // 3), True), (B, False)}:
            out = decode_batched(ver, srcs, drafter, rule, batch_size=bs, pack=pack, **kw)
            assert [r.tokens for r in out] == greedy, (type(drafter).__name__, rule, bs, pack)
            for r in out:
                assert r.stats.iterations == len(r.stats.accepted) == len(r.stats.drafted) <= len(r.tokens)


@SETTINGS
@given(c=batch_case(), seed=st.integers(0, 10_000))
def test_batched_relaxed_rules_equal_their_batch1_runs(c, seed):
    """GAD++ (top-3 within tau) accepts different lengths per row: each row must still follow its own batch-1 run."""
    idx, srcs, kw = c
    _, d, ver = random_model(idx)
    greedy = {tuple(s.tolist()): greedy_decode(ver, s, **kw).tokens for s in srcs}
    rule = accept_top_beta(3, 1.5)
    single = [draft_verify_accept(ver, s, oracle(greedy, len(d), seed, noise=0.5), rule, **kw).tokens for s in srcs]
    out = decode_batched(ver, srcs, oracle(greedy, len(d), seed, noise=0.5), rule, batch_size=len(srcs),
                         sort_by_length=False, **kw)
    # one child drafter per distinct source: a source that occurs twice draws its drafts from one stream, in turns in
    # the batch and one run after the other at batch 1, so only sources that occur once are compared
    keys = [tuple(s.tolist()) for s in srcs]
    for key, a, b in zip(keys, single, out):
        if keys.count(key) == 1:
            assert b.tokens == a


def test_batched_blockwise_exact_equals_greedy():
    from fastdec.engine import Verifier
    from fastdec.engine.blockwise_drafter import BlockwiseDrafter
    from helpers.models import build_random_blockwise

    model, d = build_random_blockwise(4, init_std=0.5, seed=3)
    ver = Verifier(model, dtype=torch.float64)
    g = torch.Generator().manual_seed(0)
    srcs = [torch.cat([torch.randint(4, len(d), (int(n),), generator=g), torch.tensor([d.eos()])])
            for n in torch.randint(0, 15, (19,), generator=g)]
    kw = dict(max_len_a=1.2, max_len_b=8)
    greedy = [greedy_decode(ver, s, **kw).tokens for s in srcs]
    for bs in (1, 7, 19):
        out = decode_batched(ver, srcs, BlockwiseDrafter(model, block_size=4), accept_top1, batch_size=bs, **kw)
        assert [r.tokens for r in out] == greedy
        assert sum(sum(r.stats.accepted) for r in out) > 0  # the heads' proposals were used


def test_batched_gad_with_nat_drafter_equals_greedy():
    from gad.gad_helpers import STEERED, drafter_for, verifier_and_dict

    _, d, ver = verifier_and_dict(STEERED)
    drafter = drafter_for(STEERED, 1, 0.0, 5)
    g = torch.Generator().manual_seed(1)
    srcs = [torch.cat([torch.randint(4, len(d), (int(n),), generator=g), torch.tensor([d.eos()])])
            for n in torch.randint(0, 15, (9,), generator=g)]
    kw = dict(max_len_a=1.0, max_len_b=10)
    greedy = [greedy_decode(ver, s, **kw).tokens for s in srcs]
    single = [draft_verify_accept(ver, s, drafter, accept_top1, **kw) for s in srcs]
    out = decode_batched(ver, srcs, drafter, accept_top1, batch_size=4, **kw)
    assert [r.tokens for r in single] == [r.tokens for r in out] == greedy
    assert sum(sum(r.stats.accepted) for r in out) > 0


def test_finished_rows_leave_the_batch_and_time_is_shared():
    _, d, ver = random_model(0)
    short, long_ = torch.tensor([5, d.eos()]), torch.tensor([6, 7, 8, 9, d.eos()])
    bver = BatchedVerifier(ver)
    kw = dict(max_len_a=0.0)
    out = decode_batch(bver, [long_, short], max_len_b=12, method="greedy", **kw)
    r_short = decode_batch(bver, [short], max_len_b=12, **kw)[0]
    assert out[1].tokens == r_short.tokens == greedy_decode(ver, short, max_len_b=12).tokens
    assert bver.batch_size <= 1  # rows that finished were dropped, not masked
    assert out[0].stats.time == pytest.approx(out[1].stats.time)
    assert [r.stats.iterations for r in out] == [len(r.tokens) for r in out]


def test_bad_batch_sizes_are_clear_errors():
    _, d, ver = random_model(0)
    for bad in (0, -3, 1.5, True, "8"):
        with pytest.raises(ValueError, match="batch size"):
            decode_batched(ver, [torch.tensor([5, d.eos()])], batch_size=bad)
    assert check_batch_size(4.0) == 4
    with pytest.raises(ValueError, match="at least one"):
        BatchedVerifier(ver).start([])


def test_an_efficient_student_at_batch_size_above_1_is_a_clear_error():
    from helpers.students import random_student

    _, d, student = random_student(0)
    with pytest.raises(ValueError, match="needs a Transformer verifier, not StudentVerifier"):
        decode_batched(student, [torch.tensor([5, 6, d.eos()])] * 2, batch_size=2)


def test_nat_drafter_batched_blocks_equal_its_batch1_blocks():
    """One padded bidirectional pass for all rows proposes what the drafter proposes row by row."""
    from fastdec.engine.loop import DecodeState
    from gad.gad_helpers import drafter_for, verifier_and_dict

    _, d, ver = verifier_and_dict(1)
    drafter = drafter_for(1, 3, 0.0, 5)
    g = torch.Generator().manual_seed(2)
    states = []
    for n, j in ((3, 0), (11, 4), (1, 9), (7, 2), (14, 60)):  # ragged sources and prefixes; the last one runs out
        src = torch.randint(4, len(d), (n,), generator=g).tolist() + [d.eos()]
        prefix = [d.eos()] + torch.randint(4, len(d), (j,), generator=g).tolist()
        states.append(DecodeState(src_tokens=torch.tensor(src), src_list=src, prefix=prefix, encoder_out={},
                                  eos=d.eos(), pad=d.pad(), unk=d.unk(), vocab_size=len(d), max_len=100))
    drafter.start_batch(states)
    batched = drafter.propose_batch(states)
    single = [drafter.propose(s).tolist() for s in states]
    assert batched == single and [len(b) for b in batched] == [5, 5, 5, 5, 3]
    assert all(s.time_modules["drafter_decoder"] > 0 for s in states)


@pytest.mark.parametrize("idx", range(len(MODEL_CONFIGS)))
def test_packed_pass_equals_the_padded_pass(idx):
    """A pass whose rows feed different numbers of tokens: the packed linear layers give the padded pass's features
    at every real position (float64), and the caches the same keys/values there."""
    _, d, ver = random_model(idx)
    g = torch.Generator().manual_seed(idx)
    srcs = [torch.cat([torch.randint(4, len(d), (n,), generator=g), torch.tensor([d.eos()])]) for n in (5, 1, 9)]
    n_valid = [4, 1, 2]
    tokens = torch.randint(4, len(d), (3, 4), generator=g)
    out = {}
    for pack in (True, False):
        bver = BatchedVerifier(ver, pack=pack)
        bver.start(srcs)
        bver.forward(tokens[:, :2], [2, 1, 2])  # ragged cache lengths before the pass
        out[pack] = (bver.forward(tokens, n_valid), bver._k, bver.lengths)
    (h1, k1, len1), (h0, k0, len0) = out[True], out[False]
    assert len1 == len0 == [6, 2, 4]
    for b, m in enumerate(n_valid):
        torch.testing.assert_close(h1[b, :m], h0[b, :m], rtol=1e-12, atol=1e-12)
        torch.testing.assert_close(k1[:, b, :, : len1[b]], k0[:, b, :, : len0[b]], rtol=1e-12, atol=1e-12)


@functools.lru_cache(maxsize=None)
def fast_verifier(idx):
    return FastVerifier(random_model(idx)[0])


FAST_IDX = [i for i, c in enumerate(MODEL_CONFIGS) if "decoder_output_dim" not in c]  # the C pass: no project_out
RULES = [accept_top1, accept_top_beta(1, 2.5), accept_top_beta(3, 1.0), accept_top_k(2), with_min_block(accept_top1, 3),
         with_min_block(accept_top_k(2), 2), accept_within_distance(0, [None] * 4 + list(range(200))),
         accept_within_distance(3, [None] * 4 + list(range(200)))]


def assert_rows_decided_as_at_batch_1(ver, rule, tokens, lengths, steps, max_lens, unk_penalty, corrupt):
    """Feed ``tokens`` ``[B, n]`` (row b's first ``lengths[b]`` real) as one batched pass; row b drafts the verifier's
    own tokens of its first ``lengths[b] - 1`` positions, ``corrupt[b]`` (position, token) replaced. ``rule`` must
    decide every row of the pass as it decides that row alone."""
    with torch.inference_mode():  # as in the loops (the verifier's weights may record autograd history)
        bver = batched_verifier(ver)
        bver.start([torch.tensor([5, 6, ver.eos])] * len(lengths))
        hidden = bver.forward(tokens, lengths)
        drafts = []
        for b, m in enumerate(lengths):
            rows = MaskedLogProbs(ver, max_lens[b], unk_penalty).of(hidden[b, :m], steps[b])
            draft = rows(0, m).argmax(-1).tolist()[: m - 1]
            if corrupt[b] is not None and corrupt[b][0] < len(draft):
                draft[corrupt[b][0]] = corrupt[b][1]
            drafts.append(draft)
        batched = rule.accept_batch(drafts, BatchedMaskedLogProbs(ver, unk_penalty).of(hidden, steps, max_lens))
        for b, (draft, (a, top1, _)) in enumerate(zip(drafts, batched)):
            rows = MaskedLogProbs(ver, max_lens[b], unk_penalty).of(hidden[b, : len(draft) + 1], steps[b])
            a1, top1_1, _ = rule.accept_from_hidden(draft, rows)
            assert (a, top1[: a + 1]) == (a1, top1_1[: a1 + 1]), (b, len(draft), rule)


@SETTINGS
@given(data=st.data(), rule=st.sampled_from(RULES), fast=st.booleans())
def test_a_rule_decides_each_row_of_a_batched_pass_as_at_batch_1(data, rule, fast):
    """``rule.accept_batch`` on a batched pass (ragged rows, per-row steps and length limits, drafts the verifier's
    own tokens, some with one replaced) decides every row as ``accept_from_hidden`` decides that row alone: the
    batched loop and the batch-1 loop use one rule, on both backends."""
    idx = data.draw(st.sampled_from(FAST_IDX if fast else range(len(MODEL_CONFIGS))))
    _, d, ver = random_model(idx)
    B = data.draw(st.integers(1, 4))
    lengths = data.draw(st.lists(st.integers(1, 40), min_size=B, max_size=B))  # positions fed per row
    n = max(lengths)
    tokens = torch.tensor([data.draw(st.lists(st.integers(4, len(d) - 1), min_size=n, max_size=n)) for _ in range(B)])
    steps = data.draw(st.lists(st.integers(0, 3), min_size=B, max_size=B))
    max_lens = [s + data.draw(st.integers(1, 45)) for s in steps]
    corrupt = [data.draw(st.none() | st.tuples(st.integers(0, 39), st.integers(4, len(d) - 1))) for _ in range(B)]
    assert_rows_decided_as_at_batch_1(fast_verifier(idx) if fast else ver, rule, tokens, lengths, steps, max_lens,
                                      data.draw(st.sampled_from([0.0, 1.5])), corrupt)


@pytest.mark.parametrize("fast", [False, True])
@pytest.mark.parametrize("rule", RULES, ids=lambda rule: rule.name)
def test_every_draft_length_is_decided_as_at_batch_1(rule, fast):
    """Every draft length from 0 to 40, accepted whole or cut at the exact rule's chunk edges (8, 24 on CPU), in one
    batched pass."""
    idx = FAST_IDX[-1]
    _, d, ver = random_model(idx)
    cut = [(m, i) for m in (9, 17, 25, 41) for i in (6, 7, 8, 15, 16, 23, 24) if i < m - 1]  # (fed, replaced)
    lengths = list(range(1, 42)) + [m for m, _ in cut]
    corrupt = [None] * 41 + [(i, 4) for _, i in cut]
    g = torch.Generator().manual_seed(0)
    tokens = torch.randint(4, len(d), (len(lengths), max(lengths)), generator=g)
    assert_rows_decided_as_at_batch_1(fast_verifier(idx) if fast else ver, rule, tokens, lengths,
                                      [0] * len(lengths), [60] * len(lengths), 0.0, corrupt)


def test_rows_ahead_by_a_few_tokens_wait_out_a_pass_without_drafts_where_the_batch_is_not_made_longer():
    """A PyTorch batch whose rows' lengths differ by a few tokens (one probe token accepted in one row) lets the rows
    ahead wait out passes without drafts until the lengths are equal again (every later pass then writes slices, with
    no gathers or masks), unless a row ahead would then be the batch's last to finish by the sources' lengths, or is
    more than a few tokens ahead."""
    from fastdec.engine.batched import _WAIT_AT_MOST, _waiting_rows
    from helpers.policy import State
    _, d, ver = random_model(0)
    bv = BatchedVerifier(ver)
    bv.start([torch.tensor([5, 6, 7, d.eos()])] * 4)
    rows = [State(src_len=20, decoded=4), State(src_len=9, decoded=5), State(src_len=12, decoded=4),
            State(src_len=6, decoded=6)]
    bv.lengths = [5, 6, 5, 7]
    assert _waiting_rows(bv, rows) == [False, True, False, True]
    bv.lengths = [5, 5, 5, 5]
    assert _waiting_rows(bv, rows) is None
    bv.lengths = [5, 6, 5, 5 + _WAIT_AT_MOST + 1]
    assert _waiting_rows(bv, rows) is None
    rows[1] = State(src_len=30, decoded=5)  # the row ahead has the most left: waiting would make the batch longer
    bv.lengths = [5, 6, 5, 7]
    assert _waiting_rows(bv, rows) is None
    assert _waiting_rows(object(), rows) is None  # the C backend's rows cost what they feed
