"""The efficient_student plugin model: incremental (fairseq's one-token steps) == full forward, shapes, errors."""
import pytest
import torch

from helpers.students import STUDENT_CONFIGS, build_random_student

SRC = torch.tensor([[5, 6, 7, 8, 9, 10, 2]])
PREV = torch.tensor([[2, 11, 12, 13, 14, 15, 16, 17]])


@pytest.mark.parametrize("idx", range(len(STUDENT_CONFIGS)))
@pytest.mark.parametrize("gates", [False, True])
def test_incremental_equals_full_forward(idx, gates):
    model, _ = build_random_student(seed=idx, head_gates=gates, **STUDENT_CONFIGS[idx])
    full, _ = model(SRC, torch.tensor([SRC.size(1)]), PREV)
    enc = model.encoder(SRC, src_lengths=torch.tensor([SRC.size(1)]))
    state, steps = {}, []
    for t in range(PREV.size(1)):
        out, _ = model.decoder(PREV[:, : t + 1], encoder_out=enc, incremental_state=state)
        steps.append(out)
    # fairseq's one-token self-attention takes its slow path (softmax in float32); SSRU / AAN are exact
    atol = 1e-6 if STUDENT_CONFIGS[idx]["kind"] == "attention" else 1e-12
    torch.testing.assert_close(torch.cat(steps, 1), full, rtol=0, atol=atol)


def test_ssru_fuses_forget_and_value_projections_into_one_matmul():
    model, _ = build_random_student(kind="ssru", no_ffn=True, embed_dim=16)
    ssru = model.decoder.layers[0].self_attn
    assert sorted(n for n, _ in ssru.named_parameters()) == ["forget_bias", "fused.weight"]
    assert ssru.fused.weight.shape == (32, 16)


def test_ssru_matches_the_papers_equations():
    from fastdec_fairseq.models.student_layers import SSRU

    torch.manual_seed(0)
    ssru = SSRU(8).double()
    x = torch.randn(5, 1, 8, dtype=torch.float64)
    W_f, W = ssru.fused.weight[:8], ssru.fused.weight[8:]
    c = torch.zeros(1, 8, dtype=torch.float64)
    expected = []
    for t in range(5):
        f = torch.sigmoid(x[t] @ W_f.T + ssru.forget_bias)
        c = f * c + (1 - f) * (x[t] @ W.T)
        expected.append(torch.relu(c))
    torch.testing.assert_close(ssru(x), torch.stack(expected), rtol=0, atol=1e-12)


def test_no_ffn_removes_the_decoder_ffn_parameters():
    with_ffn, _ = build_random_student(kind="ssru")
    without, _ = build_random_student(kind="ssru", no_ffn=True)
    names = {n for n, _ in without.named_parameters()}
    assert not any(".fc1." in n or ".fc2." in n or "final_layer_norm" in n for n in names if n.startswith("decoder"))
    assert sum(p.numel() for p in without.parameters()) < sum(p.numel() for p in with_ffn.parameters())


@pytest.mark.parametrize("kind", ["ssru", "aan", "attention"])
def test_fairseq_sequence_generator_beam_search_runs(kind):
    from fairseq.sequence_generator import SequenceGenerator

    model, d = build_random_student(kind=kind, init_std=0.5)
    gen = SequenceGenerator([model], d, beam_size=4, max_len_b=10)
    src = torch.tensor([[5, 6, 7, 2], [1, 8, 9, 2]])  # left-padded batch: reorder_incremental_state is exercised
    hyps = gen.generate([model], {"net_input": {"src_tokens": src, "src_lengths": torch.tensor([4, 3])}})
    assert len(hyps) == 2 and all(h[0]["tokens"][-1] == d.eos() for h in hyps)


@pytest.mark.parametrize("kwargs, message", [
    (dict(enc_layers=0), "--encoder-layers must be an integer >= 1"),
    (dict(dec_layers=0), "--decoder-layers must be an integer >= 1"),
    (dict(kind="lstm"), "--decoder-self-attn must be one of"),
    (dict(kind="attention", no_ffn=True), "--decoder-no-ffn needs --decoder-self-attn ssru or aan"),
    (dict(encoder_heads="4,4,4"), "3 counts for 2 layers"),
    (dict(encoder_heads="4,0"), "every layer keeps 1..4 heads"),
])
def test_bad_settings_are_clear_errors(kwargs, message):
    with pytest.raises(ValueError, match=message):
        build_random_student(**kwargs)


def test_students_table_identity_compares_fairseq_greedy_with_the_engine():
    """The students' identical-to-greedy column is fairseq's own greedy row against the engine's greedy (greedy
    against itself could only ever be 100)."""
    import pandas as pd

    from fastdec.tracks.students.tables import speeds

    summary = pd.DataFrame({"label": ["greedy", "fairseq-greedy", "fairseq-beam5"], "bleu": [20.0, 20.0, 21.0],
                            "mean_out_len": [10.0] * 3, "sent_per_s": [5.0] * 3,
                            "identical_to_greedy_pct": [100.0, 97.5, 40.0]})
    assert speeds(summary, beam=5, batch=64)["identical_to_greedy_pct"] == 97.5
    assert pd.isna(speeds(summary[summary["label"] != "fairseq-greedy"], beam=5, batch=64)["identical_to_greedy_pct"])
