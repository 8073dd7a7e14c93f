"""The efficient student as the engine's verifier: equal to fairseq's full forward, lossless IAD / GAD (beta = 1).

Hypothesis property tests on random tiny SSRU / AAN / no-FFN / deep-shallow / standard-attention students
(float64): the engine's greedy equals fairseq's SequenceGenerator beam 1 on the same weights, and every exact
draft -> verify -> accept configuration (IAD, GAD's top-beta acceptance with beta = 1, arbitrary drafts) returns
exactly the student's greedy output.
"""
import math

import pytest
import torch
from hypothesis import given
from hypothesis import strategies as st
from helpers.properties import property_settings

from fastdec.engine import InputCopyDrafter, accept_top1, accept_top_beta, draft_verify_accept, greedy_decode
from helpers.drafters import NoisyOracleDrafter, RandomDrafter
from helpers.students import STUDENT_CONFIGS, random_student

SETTINGS = property_settings()


@st.composite
def case(draw):
    idx = draw(st.sampled_from(range(len(STUDENT_CONFIGS))))
    _, d, _ = random_student(idx)
    n = draw(st.integers(0, 12))
    src = draw(st.lists(st.integers(4, len(d) - 1), min_size=n, max_size=n)) + [d.eos()]
    return idx, torch.tensor(src), dict(max_len_a=draw(st.sampled_from([0.0, 1.2])), max_len_b=draw(st.integers(1, 12)))


def fairseq_greedy(model, d, src, max_len_a, max_len_b):
    from fairseq.sequence_generator import SequenceGenerator

    gen = SequenceGenerator([model], d, beam_size=1, max_len_a=max_len_a, max_len_b=max_len_b)
    sample = {"net_input": {"src_tokens": src[None], "src_lengths": torch.tensor([src.numel()])}}
    return gen.generate([model], sample)[0][0]["tokens"].tolist()


@pytest.mark.parametrize("idx", range(len(STUDENT_CONFIGS)))
def test_multi_token_forward_and_rollback_equal_fairseq_full_forward(idx):
    model, d, ver = random_student(idx)
    src = torch.tensor([5, 9, 7, 12, 2])
    prev = torch.tensor([2, 11, 6, 13, 8, 14, 10])
    with torch.no_grad():
        enc = model.encoder(src[None], src_lengths=torch.tensor([5]))
        feats, _ = model.decoder.extract_features(prev[None], encoder_out=enc)
        full = model.decoder.output_layer(feats)[0]
    ver.start(src)
    a = ver.forward(prev[:3])
    ver.forward(torch.tensor([20, 21, 22]))  # a wrong continuation, then rolled back
    ver.rollback(3)
    b = ver.forward(prev[3:])
    got = torch.cat([a.logits, b.logits])
    torch.testing.assert_close(got, full, rtol=0, atol=1e-6)  # fairseq's encoder attention: float32 softmax
    torch.testing.assert_close(torch.cat([a.hidden, b.hidden]), feats[0], rtol=0, atol=1e-6)


@SETTINGS
@given(c=case())
def test_engine_greedy_equals_fairseq_beam1(c):
    idx, src, kw = c
    model, d, ver = random_student(idx)
    assert greedy_decode(ver, src, **kw).tokens == fairseq_greedy(model, d, src, **kw)


@SETTINGS
@given(c=case(), seed=st.integers(0, 10_000))
def test_iad_and_gad_beta1_equal_the_students_greedy(c, seed):
    idx, src, kw = c
    _, d, ver = random_student(idx)
    out = greedy_decode(ver, src, **kw).tokens
    for drafter in (InputCopyDrafter(), RandomDrafter(len(d), max_tokens=10, seed=seed),
                    NoisyOracleDrafter(out, len(d), noise=0.3, seed=seed)):
        assert draft_verify_accept(ver, src, drafter, accept_top1, **kw).tokens == out, type(drafter).__name__
    for tau in (0.0, 2.5, math.inf):  # GAD++'s rule with beta = 1 is exact whatever tau
        r = draft_verify_accept(ver, src, NoisyOracleDrafter(out, len(d), noise=0.3, seed=seed + 1),
                                accept_top_beta(1, tau), **kw)
        assert r.tokens == out


def test_verifier_refuses_gated_models_and_plain_transformers():
    from fastdec.engine.profile import build_random_transformer
    from fastdec.engine.student_verifier import StudentVerifier
    from helpers.students import STUDENT_CONFIGS, build_random_student

    gated, _ = build_random_student(head_gates=True)
    with pytest.raises(ValueError, match="prune it first"):
        StudentVerifier(gated)
    plain, _, _ = build_random_transformer()
    with pytest.raises(TypeError, match="efficient_student"):
        StudentVerifier(plain)


def test_make_verifier_picks_the_student_verifier():
    from fastdec.engine.load import make_verifier
    from fastdec.engine.profile import build_random_transformer
    from fastdec.engine.student_verifier import StudentVerifier
    from fastdec.engine.verifier import Verifier

    model, _, _ = random_student(0)
    assert isinstance(make_verifier(model), StudentVerifier)
    plain, _, _ = build_random_transformer()
    assert type(make_verifier(plain)) is Verifier


@pytest.mark.parametrize("kind", ["ssru", "aan"])
def test_iad_on_a_trained_copy_student_is_lossless_and_accepts_blocks(kind):
    """A student trained in-process on a copy task: outputs end with EOS, IAD accepts long blocks and is exact."""
    import numpy as np

    from fastdec.engine.student_verifier import StudentVerifier
    from helpers.models import copy_task_batch
    from helpers.students import train_copy_student

    model, d = train_copy_student(300, kind=kind, no_ffn=True, enc_layers=2, dec_layers=1)
    ver = StudentVerifier(model)
    src, lengths, _, _ = copy_task_batch(np.random.default_rng(1), d, batch=8)
    iterations = tokens = 0
    for row, n in zip(src, lengths):
        s = row[row.numel() - int(n):]
        greedy = greedy_decode(ver, s, max_len_a=1.2, max_len_b=10)
        iad = draft_verify_accept(ver, s, InputCopyDrafter(), accept_top1, max_len_a=1.2, max_len_b=10)
        assert iad.tokens == greedy.tokens and greedy.tokens[-1] == d.eos()
        iterations, tokens = iterations + iad.stats.iterations, tokens + len(iad.tokens)
    assert tokens / iterations > 2.0  # IAD verifies several tokens per student pass
