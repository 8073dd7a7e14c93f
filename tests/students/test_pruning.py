"""L0 head pruning: Hard Concrete gates, the L0 criterion, removing closed heads (a smaller, equal model)."""
import math

import pytest
import torch
from hypothesis import given
from hypothesis import strategies as st
from helpers.properties import property_settings

from fastdec.engine import accept_top1, draft_verify_accept, greedy_decode
from fastdec.engine.student_verifier import StudentVerifier
from fastdec.tracks.students.prune import head_counts, prune_model
from helpers.drafters import NoisyOracleDrafter
from helpers.students import build_random_student

SRC = torch.tensor([[5, 6, 7, 8, 9, 2]])
PREV = torch.tensor([[2, 11, 12, 13, 14, 15]])


def gated_student(kind, seed, closed=0.5, **kw):
    """A random gated student whose gates are closed (log_alpha = -20, g = 0) for about ``closed`` of the heads,
    at least one head staying open per layer."""
    model, d = build_random_student(kind=kind, head_gates=True, seed=seed, init_std=0.6, **kw)
    g = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for gate in model.head_gates():
            gate.log_alpha.copy_(torch.rand(gate.num_heads, generator=g) * 4.5 - 1.5)  # open: g in (0.12, 1]
            shut = torch.rand(gate.num_heads, generator=g) < closed
            shut[int(torch.randint(gate.num_heads, (), generator=g))] = False
            gate.log_alpha[shut] = -20.0
    return model, d


def full_logits(model):
    with torch.no_grad():
        return model(SRC, torch.tensor([SRC.size(1)]), PREV)[0]


def test_gate_is_exactly_zero_or_open_in_eval_and_sampled_in_training():
    from fastdec_fairseq.models.head_gates import HardConcreteGate

    gate = HardConcreteGate(3, 4)
    with torch.no_grad():
        gate.log_alpha.copy_(torch.tensor([-20.0, 0.0, 20.0]))
    gate.eval()
    assert gate().tolist() == [0.0, pytest.approx(0.5), 1.0]
    gate.train()
    samples = torch.stack([gate() for _ in range(200)])
    assert (samples >= 0).all() and (samples <= 1).all() and samples[:, 1].std() > 0.1
    # Eq. 3: L_c counts the heads likely to be open
    assert gate.expected_open().item() == pytest.approx(1 + torch.sigmoid(torch.tensor(-2 / 3 * math.log(1 / 11))).item(),
                                                         abs=1e-6)


def test_gate_scale_multiplies_the_stored_parameter():
    from fastdec_fairseq.models.head_gates import HardConcreteGate

    a, b = HardConcreteGate(2, 4), HardConcreteGate(2, 4, scale=10.0)
    assert b.log_alpha.tolist() == pytest.approx([0.2, 0.2])  # init_log_alpha 2 / scale
    with torch.no_grad():
        a.log_alpha.copy_(torch.tensor([-3.0, 1.0]))
        b.log_alpha.copy_(torch.tensor([-0.3, 0.1]))
    a.eval(), b.eval()
    torch.testing.assert_close(a(), b())
    torch.testing.assert_close(a.expected_open(), b.expected_open())
    with pytest.raises(ValueError, match="--head-gate-scale must be > 0"):
        HardConcreteGate(2, 4, scale=0.0)


@pytest.mark.parametrize("kind", ["ssru", "aan", "attention"])
@pytest.mark.parametrize("seed", [0, 1, 2])
def test_pruned_model_is_smaller_and_computes_the_gated_models_function(kind, seed):
    model, d = gated_student(kind, seed, enc_layers=3, dec_layers=2)
    before = full_logits(model)
    n_params = sum(p.numel() for p in model.parameters())
    counts = prune_model(model)
    assert not model.head_gates()
    assert sum(map(sum, counts.values())) < 4 * (3 + 2 + (2 if kind == "attention" else 0))
    assert sum(p.numel() for p in model.parameters()) < n_params
    assert set(counts) == ({"encoder_heads", "enc_dec_heads", "decoder_self_heads"} if kind == "attention"
                           else {"encoder_heads", "enc_dec_heads"})
    torch.testing.assert_close(full_logits(model), before, rtol=0, atol=1e-6)


@property_settings(5 / 12)
@given(seed=st.integers(0, 1000), kind=st.sampled_from(["ssru", "aan", "attention"]),
       src=st.lists(st.integers(4, 29), min_size=0, max_size=10))
def test_pruned_student_verifier_is_lossless(seed, kind, src):
    from fairseq.sequence_generator import SequenceGenerator

    model, d = gated_student(kind, seed, dec_layers=2)
    prune_model(model)
    ver = StudentVerifier(model)
    s = torch.tensor(src + [d.eos()])
    out = greedy_decode(ver, s, max_len_b=10).tokens
    gen = SequenceGenerator([model], d, beam_size=1, max_len_b=10)
    ref = gen.generate([model], {"net_input": {"src_tokens": s[None], "src_lengths": torch.tensor([s.numel()])}})
    assert out == ref[0][0]["tokens"].tolist()
    assert draft_verify_accept(ver, s, NoisyOracleDrafter(out, len(d), noise=0.3, seed=seed), accept_top1,
                               max_len_b=10).tokens == out


def test_pruning_every_head_of_a_layer_is_a_clear_error_and_changes_nothing():
    model, _ = gated_student("ssru", 0)
    before = head_counts(model)
    with torch.no_grad():
        model.encoder.layers[1].self_attn.head_gate.log_alpha.fill_(-20.0)
    with pytest.raises(ValueError, match="remove every head of encoder-heads layer 1.*--l0-lambda"):
        prune_model(model)
    assert head_counts(model) == before and len(model.head_gates()) == 3  # 2 encoder + 1 enc-dec


def test_min_heads_per_layer_keeps_the_most_open_head_zeroed_and_the_function():
    model, _ = gated_student("ssru", 0)
    before = full_logits(model)
    with torch.no_grad():
        gate = model.encoder.layers[1].self_attn.head_gate
        gate.log_alpha.fill_(-30.0)
        gate.log_alpha[gate.num_heads - 1] = -5.0  # every gate closed, the last one least
    closed = full_logits(model)
    counts = prune_model(model, min_heads_per_layer=1)
    assert counts["encoder_heads"][1] == 1 and not model.head_gates()
    assert not torch.allclose(closed, before)  # the closed layer changed the gated model ...
    torch.testing.assert_close(full_logits(model), closed, rtol=0, atol=1e-6)  # ... and the pruned one equals it


def test_pruning_needs_gates():
    model, _ = build_random_student(kind="ssru")
    with pytest.raises(ValueError, match="--head-gates"):
        prune_model(model)


def test_l0_criterion_adds_lambda_times_expected_open_heads_and_rejects_negative_lambda():
    from types import SimpleNamespace

    from fastdec_fairseq.criterions.l0_head_cross_entropy import L0HeadCrossEntropyCriterion

    model, d = build_random_student(kind="ssru", head_gates=True)
    task = SimpleNamespace(target_dictionary=d)
    with pytest.raises(ValueError, match="--l0-lambda must be >= 0"):
        L0HeadCrossEntropyCriterion(task, False, 0.1, l0_lambda=-0.5)
    sample = {"net_input": {"src_tokens": SRC, "src_lengths": torch.tensor([SRC.size(1)]),
                            "prev_output_tokens": PREV},
              "target": torch.cat([PREV[:, 1:], torch.tensor([[2]])], 1), "ntokens": PREV.numel()}
    model.eval()  # deterministic gates: the two losses differ by the penalty only
    plain, size, _ = L0HeadCrossEntropyCriterion(task, False, 0.1, l0_lambda=0.0)(model, sample)
    loss, _, log = L0HeadCrossEntropyCriterion(task, False, 0.1, l0_lambda=0.2)(model, sample)
    l_c = sum(g.expected_open() for g in model.head_gates())
    assert loss.item() == pytest.approx(plain.item() + 0.2 * l_c.item() * size, rel=1e-9)
    open_heads = sum(int((g() > 0).sum()) for g in model.head_gates())
    assert 0 < open_heads < sum(g.num_heads for g in model.head_gates())  # the random draw closed some
    assert log["open_heads"] == open_heads
    loss.backward()
    assert all(g.log_alpha.grad is not None for g in model.head_gates())
