"""Batched decoding on the fast (C) backend: one C pass per iteration for all rows (linear layers over every row's
tokens packed together, attention per row), each row bit for bit its batch-1 pass -- so a batched decode returns
exactly (token for token) each sentence's batch-1 fast greedy output, in float32, float64 and int8."""
import functools
import math
from types import SimpleNamespace

import pytest
import torch
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from conftest import MODEL_CONFIGS
from fastdec.bench.methods import parse_method
from fastdec.engine import InputCopyDrafter, Verifier, accept_top1, accept_top_beta, greedy_decode
from fastdec.engine.batched import batched_verifier, decode_batch, decode_batched
from fastdec.engine.fast_batched import FastBatchedVerifier
from fastdec.engine.fast_verifier import FastVerifier
from fastdec.engine.loop import draft_verify_accept
from fastdec.engine.profile import build_random_transformer
from helpers.drafters import NoisyOracleDrafter, PerSourceDrafter, RandomDrafter

SETTINGS = settings(max_examples=25, deadline=None, derandomize=True, suppress_health_check=[HealthCheck.too_slow])
# the engine's random decoders the C pass runs (no project_out_dim), plus a wider one: 96 QKV / FFN outputs and a
# 104-word vocabulary, so the kernels' blocks of 4 output panels run (16 outputs a panel), not only the edges
CONFIGS = [c for c in MODEL_CONFIGS if "decoder_output_dim" not in c] + [
    dict(embed_dim=32, ffn_dim=96, heads=4, n_symbols=100, init_std=0.3)]
DTYPES = [(torch.float64, None), (torch.float32, None), (torch.float32, "int8")]


@functools.lru_cache(maxsize=None)
def fast_model(idx: int, dtype=torch.float64, quantize=None):
    """(dictionary, FastVerifier) over a random Transformer of ``CONFIGS[idx]`` in ``dtype``."""
    model, d, _ = build_random_transformer(seed=300 + idx, dtype=dtype, max_positions=64, **CONFIGS[idx])
    return d, FastVerifier(model, dtype=dtype, quantize=quantize)


def sources(draw, d, B):
    lengths = draw(st.lists(st.integers(0, 14), min_size=B, max_size=B))  # ragged: rows of different cache lengths
    return [torch.tensor(draw(st.lists(st.integers(4, len(d) - 1), min_size=n, max_size=n)) + [d.eos()])
            for n in lengths]


@st.composite
def fast_batch_case(draw):
    idx = draw(st.sampled_from(range(len(CONFIGS))))
    dtype, quantize = draw(st.sampled_from(DTYPES))
    d, fast = fast_model(idx, dtype, quantize)
    B = draw(st.sampled_from([2, 3, 5]))
    kw = dict(max_len_a=draw(st.sampled_from([0.0, 1.2])), max_len_b=draw(st.integers(1, 12)))
    return d, fast, sources(draw, d, B), kw


@SETTINGS
@given(c=fast_batch_case(), seed=st.integers(0, 10_000))
def test_batched_fast_decoding_equals_each_sentence_batch1_fast_greedy(c, seed):
    d, fast, srcs, kw = c
    greedy = [greedy_decode(fast, s, **kw).tokens for s in srcs]
    refs = {tuple(s.tolist()): g for s, g in zip(srcs, greedy)}
    B = len(srcs)
    out = decode_batched(fast, srcs, batch_size=B, **kw)
    assert [r.tokens for r in out] == greedy
    assert [r.stats.iterations for r in out] == [len(g) for g in greedy]
    for drafter in (InputCopyDrafter(),                                             # IAD
                    RandomDrafter(len(d), max_tokens=10, seed=seed),                # arbitrary drafts
                    PerSourceDrafter(lambda s: NoisyOracleDrafter(refs[tuple(s)], len(d), noise=0.3, seed=seed))):
        for bs in {B, 2}:  # the whole batch, and batches of two (a ragged last batch of one: the batch-1 loop)
            got = decode_batched(fast, srcs, drafter, accept_top1, batch_size=bs, **kw)
            assert [r.tokens for r in got] == greedy, (type(drafter).__name__, bs)


@st.composite
def feed_program(draw):
    """A batch and a program of passes: per pass, each row rolls back to any length it holds and feeds 0 .. 5
    tokens (a row may feed nothing while the others feed), sometimes rows leave."""
    idx = draw(st.sampled_from(range(len(CONFIGS))))
    dtype, quantize = draw(st.sampled_from(DTYPES))
    d, fast = fast_model(idx, dtype, quantize)
    B = draw(st.integers(2, 4))
    srcs = sources(draw, d, B)
    steps, rows = [], B
    for _ in range(draw(st.integers(1, 5))):
        keep = None
        if rows > 1 and draw(st.booleans()):
            keep = draw(st.permutations(range(rows)))[: draw(st.integers(1, rows))]
            rows = len(keep)
        counts = draw(st.lists(st.integers(0, 5), min_size=rows, max_size=rows))
        tokens = [draw(st.lists(st.integers(4, len(d) - 1), min_size=5, max_size=5)) for _ in range(rows)]
        back = draw(st.lists(st.floats(0, 1), min_size=rows, max_size=rows))
        steps.append((keep, counts, tokens, back))
    return d, fast, srcs, steps


@SETTINGS
@given(p=feed_program())
def test_batched_pass_rows_are_bitwise_the_batch1_rows(p):
    """Every row's features of a batched pass equal bit for bit the batch-1 pass on its sentence alone at the same
    positions, whatever the other rows feed, after rollbacks and rows leaving."""
    d, fast, srcs, steps = p
    bver = FastBatchedVerifier(fast)
    bver.start(srcs)
    sent = list(range(len(srcs)))  # sentence of each batch row
    history = {b: [] for b in sent}  # per sentence: (rollback length, tokens fed, features)
    for keep, counts, tokens, back in steps:
        if keep is not None:
            bver.keep(keep)
            sent = [sent[r] for r in keep]
        for r in range(len(sent)):
            bver.lengths[r] = int(back[r] * bver.lengths[r])
        n = max(counts + [1])
        tok = torch.tensor([t[:n] for t in tokens], dtype=torch.long)
        starts = list(bver.lengths)
        hidden = bver.forward(tok, counts)
        assert bver.lengths == [m + c for m, c in zip(starts, counts)]
        for r, b in enumerate(sent):
            history[b].append((starts[r], tokens[r][: counts[r]], hidden[r, : counts[r]].clone()))
            assert not hidden[r, counts[r]:].any()  # padding positions: zeros
    for b, passes in history.items():
        fast.start(srcs[b])
        for start, toks, h in passes:
            fast.rollback(start)
            if toks:
                assert torch.equal(fast.forward(toks, need_logits=False).hidden, h)


@pytest.mark.parametrize("dtype,quantize", DTYPES)
def test_finished_rows_leave_the_batch(dtype, quantize):
    """Rows that end leave the batch at once (keep); the rows that stay go on from their own caches."""
    d, fast = fast_model(len(CONFIGS) - 1, dtype, quantize)
    srcs = [torch.tensor(list(range(5, 5 + n)) + [d.eos()]) for n in (6, 0, 3, 9, 1)]
    kw = dict(max_len_a=1.0, max_len_b=1)  # at most src_len + 1 tokens: the rows end at different iterations
    bver = batched_verifier(fast)
    assert isinstance(bver, FastBatchedVerifier)
    kept, keep = [], bver.keep

    def record(rows):
        kept.append(list(rows))
        keep(rows)

    bver.keep = record
    for drafter in (None, InputCopyDrafter()):
        kept.clear()
        out = decode_batch(bver, srcs, drafter, **kw)
        assert [r.tokens for r in out] == [greedy_decode(fast, s, **kw).tokens for s in srcs]
        assert bver.batch_size <= 1 and kept  # finished rows were dropped, not masked
        sizes = [len(k) for k in kept]
        assert sizes == sorted(sizes, reverse=True) and sizes[0] < len(srcs)


def test_relaxed_rules_and_gad_on_the_fast_backend():
    """GAD++ (top-3 within tau) on the fast batched path follows each row's batch-1 run; GAD's NAT drafter on a fast
    runner (drafting row by row through its batch-1 C passes) gives the fast greedy output."""
    from gad.gad_helpers import STEERED, build_random_drafter, steer, verifier_and_dict
    from fastdec.engine.nat_drafter import NATDrafter

    model, d, _ = verifier_and_dict(STEERED)
    fast = FastVerifier(model, dtype=torch.float64)
    g = torch.Generator().manual_seed(3)
    srcs = [torch.cat([torch.tensor([4 + i]), torch.randint(4, len(d), (int(n),), generator=g),
                       torch.tensor([d.eos()])]) for i, n in enumerate(torch.randint(0, 12, (7,), generator=g))]
    # (distinct sources: one oracle per source)
    kw = dict(max_len_a=1.0, max_len_b=10)
    greedy = [greedy_decode(fast, s, **kw).tokens for s in srcs]
    refs = {tuple(s.tolist()): t for s, t in zip(srcs, greedy)}

    def oracle():
        return PerSourceDrafter(lambda s: NoisyOracleDrafter(refs[tuple(s)], len(d), noise=0.5, seed=1))

    rule = accept_top_beta(3, 1.5)
    single = [draft_verify_accept(fast, s, oracle(), rule, **kw).tokens for s in srcs]
    assert [r.tokens for r in decode_batched(fast, srcs, oracle(), rule, batch_size=4, sort_by_length=False,
                                             **kw)] == single
    nat, _ = build_random_drafter(d, seed=1, eos_boost=0.0)
    steer(nat.decoder, d.nspecial + 5, d.eos(), e=2.6)
    drafter = NATDrafter(nat, k=5, verifier_vocab_size=fast.vocab_size, backend="fast")
    assert drafter.runner.backend == "fast"
    out = decode_batched(fast, srcs, drafter, accept_top1, batch_size=4, **kw)
    assert [r.tokens for r in out] == greedy
    assert sum(sum(r.stats.accepted) for r in out) > 0  # the drafter's blocks were used


def test_methods_and_runner_batch_on_the_fast_backend():
    m = parse_method("iad:backend=fast:batch=8")
    assert (m.backend, m.batch_size, m.label) == ("fast", 8, "iad-fast-bs8") and parse_method(m.spec) == m
    assert parse_method("greedy:backend=fast-int8:batch=2").label == "greedy-fast-int8-bs2"
    with pytest.raises(ValueError, match="nat .*has no verifier"):
        parse_method("nat:k=4:backend=fast:batch=2")
    with pytest.raises(ValueError, match="nat .*has no verifier"):
        parse_method("nat:k=4:backend=fast")
    # the runner's batched engine methods decode on their method's backend
    from fastdec.bench.runner import Context, _Systems

    model, d, _ = build_random_transformer(seed=5, dtype=torch.float32, max_positions=64)
    ctx = Context(loaded=SimpleNamespace(model=model), verifier=Verifier(model, dtype=torch.float32), max_len_b=8)
    srcs = [torch.tensor(list(range(5, 5 + n)) + [d.eos()]) for n in (0, 3, 1, 6, 2)]
    for spec in ("greedy:backend=fast:batch=3", "iad:backend=fast-int8:batch=2"):
        m = parse_method(spec)
        fast = ctx.verifier_of(m.backend)
        assert isinstance(fast, FastVerifier) and fast.backend == m.backend
        records = _Systems(ctx).build_batched(m)(srcs, [10 + i for i in range(len(srcs))])
        assert [r.tokens for r in records] == [greedy_decode(fast, s, max_len_b=8).tokens for s in srcs]
        assert [r.id for r in records] == [10 + i for i in range(len(srcs))]


def test_bad_inputs_are_clear_errors():
    d, fast = fast_model(0)
    with pytest.raises(TypeError, match="needs a FastVerifier"):
        FastBatchedVerifier(Verifier(build_random_transformer(seed=1)[0]))
    bver = FastBatchedVerifier(fast)
    with pytest.raises(ValueError, match="at least one"):
        bver.start([])
    bver.start([torch.tensor([5, d.eos()]), torch.tensor([d.eos()])])
    with pytest.raises(ValueError, match="for a batch of 2"):
        bver.forward(torch.tensor([[d.eos()]]), [1])
    with pytest.raises(ValueError, match="outside the vocabulary"):
        bver.forward(torch.tensor([[d.eos()], [len(d) + 3]]), [1, 1])
    bver.lengths = [0, 0]
    with pytest.raises(ValueError, match="max positions"):
        bver.forward(torch.full((2, 65), d.eos()), [65, 1])
    assert math.isfinite(float(bver.forward(torch.tensor([[d.eos()], [d.eos()]]), [1, 1]).sum()))
