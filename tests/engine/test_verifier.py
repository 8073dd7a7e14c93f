"""The Verifier's cached multi-token forward equals fairseq's full (non-incremental) decoder forward."""
import fairseq.utils
import pytest
import torch
import torch.nn.functional as F
from hypothesis import HealthCheck, given
from hypothesis import strategies as st
from helpers.properties import property_settings

from conftest import MODEL_CONFIGS, random_model
from fastdec.engine import Verifier
from fastdec.engine.profile import build_random_transformer

SETTINGS = property_settings(5 / 3, suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])


@pytest.fixture
def float64_softmax(monkeypatch):
    """fairseq computes attention softmax in float32 even for float64 models; make it exact for 1e-9 checks."""
    monkeypatch.setattr(fairseq.utils, "softmax", lambda x, dim, onnx_trace=False: F.softmax(x, dim=dim))


def full_forward(model, src, tgt):
    with torch.no_grad():
        enc = model.encoder(src[None], src_lengths=torch.tensor([src.numel()]))
        feats, _ = model.decoder(tgt[None], encoder_out=enc, features_only=True)
        logits = model.decoder.output_layer(feats)
    return feats[0], logits[0]


@st.composite
def feed_program(draw, vocab, max_len=24):
    """A random sequence of (rollback_to, block) operations on the cache."""
    ops, length = [], 0
    for _ in range(draw(st.integers(1, 8))):
        if length > 0 and draw(st.booleans()):
            length = draw(st.integers(0, length))
            ops.append(("rollback", length))
        n = draw(st.integers(1, max(1, min(8, max_len - length))))
        if length + n > max_len:
            break
        block = draw(st.lists(st.integers(4, vocab - 1), min_size=n, max_size=n))
        ops.append(("feed", block))
        length += n
    return ops


def run_program(ver, src, ops, eos):
    """Apply ops; return the current sequence and the verifier's outputs for each of its positions."""
    seq, hid, log = [], [], []
    ver.start(src)
    for op, arg in ops:
        if op == "rollback":
            ver.rollback(arg)
            del seq[arg:], hid[arg:], log[arg:]
        else:
            block = list(arg)
            if not seq:
                block[0] = eos  # decoding starts with EOS as BOS
            out = ver.forward(torch.tensor(block))
            seq += block
            hid += list(out.hidden)
            log += list(out.logits)
    return seq, hid, log


@SETTINGS
@given(data=st.data(), idx=st.sampled_from(range(len(MODEL_CONFIGS))))
def test_cached_blocks_equal_full_forward(float64_softmax, data, idx):
    model, d, ver = random_model(idx)
    src_len = data.draw(st.integers(0, 12))
    src = torch.tensor(data.draw(st.lists(st.integers(4, len(d) - 1), min_size=src_len, max_size=src_len))
                       + [d.eos()], dtype=torch.long)
    ops = data.draw(feed_program(len(d)))
    seq, hid, log = run_program(ver, src, ops, d.eos())
    if not seq:
        return
    assert ver.length == len(seq)
    feats, logits = full_forward(model, src, torch.tensor(seq))
    torch.testing.assert_close(torch.stack(hid), feats, atol=1e-9, rtol=0)
    torch.testing.assert_close(torch.stack(log), logits, atol=1e-9, rtol=0)


@pytest.mark.parametrize("idx", range(len(MODEL_CONFIGS)))
def test_equal_to_unpatched_fairseq_within_1e6(idx):
    """Against fairseq as shipped (float32 attention softmax inside) the match is within 1e-6."""
    model, d, ver = random_model(idx)
    g = torch.Generator().manual_seed(idx)
    src = torch.cat([torch.randint(4, len(d), (9,), generator=g), torch.tensor([d.eos()])])
    tgt = torch.cat([torch.tensor([d.eos()]), torch.randint(4, len(d), (15,), generator=g)])
    ver.start(src)
    outs = [ver.forward(tgt[:1]), ver.forward(tgt[1:7])]
    ver.rollback(4)
    outs = [outs[0], type(outs[0])(logits=outs[1].logits[:3], hidden=outs[1].hidden[:3]), ver.forward(tgt[4:])]
    feats, logits = full_forward(model, src, tgt)
    torch.testing.assert_close(torch.cat([o.hidden for o in outs]), feats, atol=1e-6, rtol=0)
    torch.testing.assert_close(torch.cat([o.logits for o in outs]), logits, atol=1e-6, rtol=0)
    lp = torch.cat([o.log_probs for o in outs])
    torch.testing.assert_close(lp, torch.log_softmax(logits, -1), atol=1e-6, rtol=0)


def test_normformer_extras_with_nontrivial_scales(float64_softmax):
    model, d, _ = build_random_transformer(seed=7, normalize_before=True, scale_attn=True, scale_fc=True,
                                           scale_heads=True, scale_resids=True)
    with torch.no_grad():
        for layer in model.decoder.layers:
            layer.c_attn.uniform_(0.5, 1.5)
            layer.w_resid.uniform_(0.5, 1.5)
            layer.attn_ln.weight.uniform_(0.5, 1.5)
            layer.ffn_layernorm.bias.uniform_(-0.5, 0.5)
    ver = Verifier(model, dtype=torch.float64)
    src = torch.tensor([5, 6, 7, 2])
    tgt = torch.tensor([2, 9, 10, 11, 12])
    ver.start(src)
    o = [ver.forward(tgt[:2]), ver.forward(tgt[2:])]
    feats, logits = full_forward(model, src, tgt)
    torch.testing.assert_close(torch.cat([x.logits for x in o]), logits, atol=1e-9, rtol=0)


def test_float32_close():
    model, d, _ = build_random_transformer(seed=3, dtype=torch.float32)
    ver = Verifier(model, dtype=torch.float32)
    src = torch.tensor([5, 6, 7, 8, 9, 2])
    tgt = torch.tensor([2, 9, 10, 11, 12, 13, 14])
    ver.start(src)
    o = torch.cat([ver.forward(tgt[:3]).logits, ver.forward(tgt[3:]).logits])
    _, logits = full_forward(model, src, tgt)
    torch.testing.assert_close(o, logits, atol=1e-4, rtol=1e-4)


def test_errors_and_capacity_growth():
    model, d, ver = random_model(0)
    with pytest.raises(ValueError, match="max_source_positions"):
        ver.start(torch.full((65,), 5, dtype=torch.long))
    with pytest.raises(ValueError, match="1-D"):
        ver.start(torch.tensor([[5, 2]]))
    ver.start(torch.tensor([5, 2]))
    with pytest.raises(ValueError, match="non-empty"):
        ver.forward(torch.tensor([], dtype=torch.long))
    ver.forward(torch.tensor([2, 5, 6]))
    with pytest.raises(ValueError, match="roll back"):
        ver.rollback(4)
    with pytest.raises(ValueError, match="max positions"):
        ver.forward(torch.full((62,), 5, dtype=torch.long))  # 3 + 62 > 64
    # the cache grows past its initial capacity and keeps earlier entries
    ver.start(torch.tensor([5, 2]))
    seq = torch.tensor([2] + [5 + (i % 20) for i in range(63)])
    outs = [ver.forward(seq[i:i + 7]).logits for i in range(0, 64, 7)]
    _, logits = full_forward(model, torch.tensor([5, 2]), seq)
    torch.testing.assert_close(torch.cat(outs), logits, atol=1e-6, rtol=0)


def test_bad_device_dtype():
    model, d, _ = build_random_transformer(seed=1, dtype=torch.float32)
    with pytest.raises(ValueError, match="only supported on CUDA"):
        Verifier(model, device="cpu", dtype="float16")
    with pytest.raises(ValueError, match="unknown dtype"):
        Verifier(model, dtype="int8")
    if not torch.cuda.is_available():
        with pytest.raises(ValueError, match="CUDA is not available"):
            Verifier(model, device="cuda")


def test_start_required():
    model, d, _ = build_random_transformer(seed=2)
    ver = Verifier(model, dtype=torch.float64)
    with pytest.raises(RuntimeError, match="start"):
        ver.forward([2, 5])


def test_sdpa_path_matches_manual_path():
    model, d, ver = random_model(1)
    ver2 = Verifier(model, use_sdpa=True)
    assert ver2.dtype == torch.float64 and ver.use_sdpa is False
    src = torch.tensor([5, 6, 7, 8, 2])
    tgt = torch.tensor([2, 9, 10, 11, 12, 13, 14])
    outs = []
    for v in (ver, ver2):
        v.start(src)
        a = v.forward(tgt[:4])
        v.rollback(2)
        outs.append(torch.cat([a.logits[:2], v.forward(tgt[2:]).logits]))
    torch.testing.assert_close(outs[0], outs[1], atol=1e-10, rtol=0)
