"""The fast verifier backend (C passes): equal to the PyTorch reference, row-invariant bit for bit (so draft ->
verify -> accept on it returns exactly its own greedy output), lossless with every exact drafter, clear fallbacks."""
import logging
import math
import tempfile

import pytest
import torch
from hypothesis import assume, given
from hypothesis import strategies as st
from helpers.properties import property_settings

import fastdec.engine.fast_verifier as fv
from conftest import MODEL_CONFIGS, random_model
from fastdec.engine import (InputCopyDrafter, accept_top1, accept_top_beta, accept_top_k, draft_verify_accept,
                            greedy_decode)
from fastdec.engine.fast_verifier import FastBackendUnavailable, FastVerifier
from fastdec.engine.load import make_verifier
from fastdec.engine.loop import MaskedLogProbs
from fastdec.engine.profile import build_random_transformer
from helpers.drafters import NoisyOracleDrafter, RandomDrafter
from test_loop import NoisyCopyIAD, case
from test_verifier import feed_program, run_program

SETTINGS = property_settings()
SUPPORTED = [i for i, c in enumerate(MODEL_CONFIGS) if "decoder_output_dim" not in c]  # no project_out_dim in C
GELU = {i for i, c in enumerate(MODEL_CONFIGS) if c.get("activation_fn") == "gelu"}
_FAST = {}


# wide enough that every linear layer has >= 64 outputs: the C kernels' 4-panel blocks run (the MODEL_CONFIGS are
# 16 wide with 44 symbols, where only their remainder loops do)
WIDE = dict(embed_dim=64, ffn_dim=128, heads=4, n_symbols=104, normalize_before=True, learned_pos=True)


def fast_model(idx, dtype=torch.float64, quantize=None):
    """The fast verifier over ``random_model(idx)``'s weights (float64, or a float32 copy; int8 linear layers);
    ``idx="wide"``: a random model of shape :data:`WIDE`."""
    if (idx, dtype, quantize) not in _FAST:
        if idx == "wide":
            model, d, _ = build_random_transformer(seed=5, dtype=dtype, max_positions=64, **WIDE)
        else:
            model, d, _ = random_model(idx)
        if dtype != torch.float64 and idx != "wide":
            model, d, _ = build_random_transformer(seed=100 + idx, dtype=dtype, max_positions=64, **MODEL_CONFIGS[idx])
        _FAST[idx, dtype, quantize] = (model, d, FastVerifier(model, dtype=dtype, quantize=quantize))
    return _FAST[idx, dtype, quantize]


def _src(data, d):
    n = data.draw(st.integers(0, 12))
    return torch.tensor(data.draw(st.lists(st.integers(4, len(d) - 1), min_size=n, max_size=n)) + [d.eos()])


@SETTINGS
@given(data=st.data(), idx=st.sampled_from(SUPPORTED))
def test_cached_blocks_equal_the_reference_verifier(data, idx):
    """Encoder output, hidden states and logits of any feed/rollback program equal the PyTorch reference (float64;
    fairseq computes GELU in float32, so those models agree to 1e-6)."""
    model, d, ref = random_model(idx)
    fast = fast_model(idx)[2]
    src = _src(data, d)
    ops = data.draw(feed_program(len(d)))
    seq, hid, log = run_program(ref, src, ops, d.eos())
    seq2, hid2, log2 = run_program(fast, src, ops, d.eos())
    tol = 1e-6 if idx in GELU else 1e-9
    torch.testing.assert_close(fast.encoder_out["encoder_out"][0], ref.encoder_out["encoder_out"][0], atol=tol, rtol=0)
    assert seq == seq2 and fast.length == ref.length
    if seq:
        torch.testing.assert_close(torch.stack(hid2), torch.stack(hid), atol=tol, rtol=0)
        torch.testing.assert_close(torch.stack(log2), torch.stack(log), atol=tol, rtol=0)


@SETTINGS
@given(data=st.data(), idx=st.sampled_from(SUPPORTED + ["wide"]),
       dtype=st.sampled_from([torch.float32, torch.float64]), quantize=st.sampled_from([None, "int8"]))
def test_rows_are_bitwise_independent_of_the_block_width(data, idx, dtype, quantize):
    """A block of n tokens gives bit for bit the rows of n one-token passes (float32 and int8 too): why draft ->
    verify -> accept on this backend returns exactly its own greedy output."""
    model, d, fast = fast_model(idx, dtype, quantize)
    src = _src(data, d)
    tokens = [d.eos()] + data.draw(st.lists(st.integers(4, len(d) - 1), min_size=1, max_size=20))
    split = data.draw(st.integers(1, len(tokens)))
    fast.start(src)
    block = torch.cat([fast.forward(tokens[:split], need_logits=False).hidden,
                       fast.forward(tokens[split:], need_logits=False).hidden]) if split < len(tokens) else \
        fast.forward(tokens, need_logits=False).hidden
    fast.rollback(0)
    single = torch.cat([fast.forward([t], need_logits=False).hidden for t in tokens])
    assert torch.equal(block, single)
    assert fast.masked_top1(block, 0, 30) == [fast.masked_top1(single[i:i + 1], i, 30)[0] for i in range(len(tokens))]


@pytest.mark.parametrize("heads,head_dim", [(4, 80), (9, 8)])
def test_long_rows_of_wide_heads_equal_the_reference_in_float32(heads, head_dim):
    """float32 attention takes four heads at a time in blocks of 64 positions and dimensions: 150 source and 150
    target positions over heads of 80 dimensions (and nine heads of 8: two groups of four and one alone) give the
    PyTorch reference's encoder output and hidden states, and a block of rows gives those of one-token passes."""
    model, d, _ = build_random_transformer(seed=11, dtype=torch.float32, max_positions=160, layers=2, heads=heads,
                                           embed_dim=heads * head_dim, ffn_dim=64, n_symbols=60, init_std=0.1)
    ref, fast = make_verifier(model, dtype=torch.float32), FastVerifier(model, dtype=torch.float32)
    g = torch.Generator().manual_seed(3)
    src = torch.cat([torch.randint(4, len(d), (149,), generator=g), torch.tensor([d.eos()])])
    tgt = torch.cat([torch.tensor([d.eos()]), torch.randint(4, len(d), (149,), generator=g)])
    ref.start(src), fast.start(src)
    torch.testing.assert_close(fast.encoder_out["encoder_out"][0], ref.encoder_out["encoder_out"][0], atol=2e-5,
                               rtol=1e-4)
    block = fast.forward(tgt, need_logits=False).hidden
    torch.testing.assert_close(block, ref.forward(tgt, need_logits=False).hidden, atol=2e-5, rtol=1e-4)
    fast.rollback(100)
    rows = [fast.forward(tgt[i:i + 1], need_logits=False).hidden for i in range(100, 150)]
    assert torch.equal(torch.cat(rows), block[100:])


@SETTINGS
@given(data=st.data(), idx=st.sampled_from(SUPPORTED))
def test_masked_top1_is_the_argmax_of_the_masked_log_probs(data, idx):
    """The fused projection + argmax keeps fairseq's beam-1 constraints: no padding, the UNK penalty, no EOS at step 0,
    only EOS from max_len on."""
    model, d, ref = random_model(idx)
    fast = fast_model(idx)[2]
    src = _src(data, d)
    n = data.draw(st.integers(1, 6))
    tokens = [d.eos()] + data.draw(st.lists(st.integers(4, len(d) - 1), min_size=n - 1, max_size=n - 1))
    step, max_len = data.draw(st.integers(0, 4)), data.draw(st.integers(1, 8))
    unk_penalty = data.draw(st.sampled_from([0.0, 3.0, -50.0]))
    ref.start(src)
    fast.start(src)
    hidden = fast.forward(tokens, need_logits=False).hidden
    with torch.inference_mode():
        expected = MaskedLogProbs(ref, max_len, unk_penalty).of(ref.forward(tokens).hidden, step)(0, n)
    expected = expected.argmax(-1).tolist()
    assert fast.masked_top1(hidden, step, max_len, unk_penalty) == expected
    # the C logits (what rules reading log-probabilities see) are the reference's, and masked_top1 maximises them
    with torch.inference_mode():
        torch.testing.assert_close(fast.output_layer(hidden), ref.output_layer(hidden), atol=1e-9, rtol=0)
        own = MaskedLogProbs(fast, max_len, unk_penalty).of(hidden, step)(0, n).argmax(-1).tolist()
    assert own == expected


@SETTINGS
@given(c=case(), seed=st.integers(0, 10_000))
def test_exact_drafters_on_the_fast_backend_equal_greedy(c, seed):
    """IAD, random and noisy-oracle drafts, GAD++ with beta = 1 and Blockwise top-1 on the fast backend return its
    greedy output, which equals the reference's greedy output (float64)."""
    idx, src, kw = c
    assume(idx in SUPPORTED)  # a draw the C pass cannot run is discarded, not passed
    model, d, ref = random_model(idx)
    fast = fast_model(idx)[2]
    out = greedy_decode(fast, src, **kw).tokens
    assert out == greedy_decode(ref, src, **kw).tokens
    for drafter in (InputCopyDrafter(), RandomDrafter(len(d), max_tokens=10, seed=seed),
                    NoisyOracleDrafter(out, len(d), noise=0.3, seed=seed), NoisyCopyIAD(out, seed, len(d))):
        assert draft_verify_accept(fast, src, drafter, accept_top1, **kw).tokens == out, type(drafter).__name__
    for rule in (accept_top_beta(1, math.inf), accept_top_k(1)):
        assert draft_verify_accept(fast, src, NoisyOracleDrafter(out, len(d), noise=0.3, seed=seed), rule,
                                   **kw).tokens == out


@pytest.mark.parametrize("quantize", [None, "int8"])
def test_float32_exact_drafters_equal_the_fast_greedy_bit_for_bit(quantize):
    """In float32 the fast backend's summation order differs from PyTorch's, so at a near-tie its greedy output may
    differ from the reference's (int8: a different model); its own draft -> verify -> accept never differs from its
    own greedy output."""
    for idx in SUPPORTED:
        model, d, fast = fast_model(idx, torch.float32, quantize)
        g = torch.Generator().manual_seed(idx)
        for trial in range(15):
            src = torch.cat([torch.randint(4, len(d), (int(torch.randint(0, 12, (), generator=g)),), generator=g),
                             torch.tensor([d.eos()])])
            out = greedy_decode(fast, src, max_len_a=1.2, max_len_b=10).tokens
            for drafter in (InputCopyDrafter(), RandomDrafter(len(d), max_tokens=10, seed=trial),
                            NoisyOracleDrafter(out, len(d), noise=0.3, seed=trial)):
                assert draft_verify_accept(fast, src, drafter, accept_top1, max_len_a=1.2, max_len_b=10).tokens == out


def test_unsupported_models_and_machines_fall_back_with_the_reason(tmp_path, monkeypatch, caplog):
    model, d, _ = random_model(MODEL_CONFIGS.index(dict(decoder_output_dim=8, learned_pos=True)))
    with pytest.raises(FastBackendUnavailable, match="project_out_dim"):
        FastVerifier(model)
    with caplog.at_level(logging.WARNING):
        ver = make_verifier(model, backend="fast")
    assert ver.backend == "torch" and "project_out_dim" in caplog.text
    with pytest.raises(ValueError, match="unknown verifier backend 'cuda'"):
        make_verifier(model, backend="cuda")
    # no C compiler: a clear message, and the reference decodes
    monkeypatch.setattr(fv, "_LIBS", {})
    monkeypatch.setenv("FASTDEC_NATIVE_CACHE", str(tmp_path))
    monkeypatch.setenv("CC", str(tmp_path / "no-such-cc"))
    with pytest.raises(FastBackendUnavailable, match="compiling the fast backend failed|no-such-cc"):
        FastVerifier(random_model(0)[0])
    with pytest.raises(FastBackendUnavailable, match="float32 or float64"):
        fv.native_library(torch.float16)
    # an unwritable cache folder: the message names the variable to set
    monkeypatch.delenv("CC")
    blocker = tmp_path / "file"
    blocker.write_text("")
    monkeypatch.setenv("FASTDEC_NATIVE_CACHE", str(blocker / "sub"))
    with pytest.raises(FastBackendUnavailable, match="FASTDEC_NATIVE_CACHE"):
        fv.native_library(torch.float32)
    # without the variable: a read-only cache home falls back to the temporary directory
    monkeypatch.delenv("FASTDEC_NATIVE_CACHE")
    monkeypatch.setenv("XDG_CACHE_HOME", str(blocker))
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path / "tmp"))
    (tmp_path / "tmp").mkdir()
    assert fv.native_library(torch.float32) is not None
    assert list((tmp_path / "tmp").glob("fastdec-native-*/decoder_float_*.so"))


def test_bad_tokens_and_state_errors():
    model, d, fast = fast_model(0)
    with pytest.raises(RuntimeError, match="start"):
        FastVerifier(model).forward([d.eos()])
    fast.start(torch.tensor([5, d.eos()]))
    with pytest.raises(ValueError, match="outside the vocabulary"):
        fast.forward([d.eos(), len(d) + 3])
    with pytest.raises(ValueError, match="cannot roll back"):
        fast.rollback(5)
    assert fast.backend == "fast" and fast.length == 0


def test_encoder_attention_keys_and_values_are_the_references_projection():
    """A sentence's encoder-attention keys/values, projected in C (one matrix for every layer, written in the layouts
    the C pass reads), equal the reference verifier's PyTorch projection (float64), on a model whose projection has
    4-panel blocks and a sentence of 4-row blocks and a remainder; int8 (with the decoder's precision) stays close."""
    model, d, fast = fast_model("wide")
    ref = make_verifier(model, dtype=torch.float64)
    src = torch.tensor([5, 9, 7, 11, 13, 17, 19, 23, 29, 31, 37, d.eos()])
    enc = ref.start(src)
    fast.restart(enc)
    L, H, D = ref.num_layers, ref.num_heads, ref.head_dim
    assert fast._enc_k_c.shape == (L, H, D, src.numel()) and fast._enc_v_c.shape == (L, H, src.numel(), D)
    torch.testing.assert_close(fast.enc_k, ref.enc_k, atol=1e-12, rtol=0)
    torch.testing.assert_close(fast.enc_v, ref.enc_v, atol=1e-12, rtol=0)
    torch.testing.assert_close(fast._enc_k_c, ref.enc_k[:, 0].transpose(-1, -2), atol=1e-12, rtol=0)
    q = FastVerifier(model, dtype=torch.float64, quantize="int8")
    q.restart(enc)
    assert (q.enc_k - ref.enc_k).abs().max() < 0.05 * ref.enc_k.abs().max()
    assert (q.enc_v - ref.enc_v).abs().max() < 0.05 * ref.enc_v.abs().max()


def test_the_encoder_output_is_fairseqs_with_every_key():
    """The C encoder's output dict holds what fairseq's encoder returns, key for key (the embeddings, padding mask and
    length made when first read: by key, ``get``, ``in``, iteration and copies alike); a NAT decoder that copies the
    source embeddings reads the same tensors as from fairseq's encoder."""
    import copy

    model, d, fast = fast_model("wide")
    src = torch.tensor([5, 9, 7, 11, 13, d.eos()])
    ref = model.encoder(src[None], src_lengths=torch.tensor([src.numel()]))
    for read in ("key", "get", "in", "iter", "items", "deepcopy"):
        enc = fast.start(src)
        if read == "key":
            got = {k: enc[k] for k in ref}
        elif read == "get":
            got = {k: enc.get(k) for k in ref}
            assert enc.get("no such key", 7) == 7
        elif read == "in":
            assert all(k in enc for k in ref) and "no such key" not in enc
            got = dict(enc)
        elif read == "iter":
            assert sorted(enc) == sorted(ref) and len(enc) == len(ref)
            got = {k: enc[k] for k in enc}
        elif read == "items":
            got = dict(enc.items())
            assert sorted(enc.keys()) == sorted(ref) and len(list(enc.values())) == len(ref)
        else:
            got = copy.deepcopy(enc)
            assert type(got) is dict
        assert sorted(got) == sorted(ref), read
        for k, want in ref.items():
            assert len(got[k]) == len(want), (read, k)
            for a, b in zip(got[k], want):
                assert a.shape == b.shape and a.dtype == b.dtype, (read, k)
                torch.testing.assert_close(a, b, atol=1e-12, rtol=0)
    with pytest.raises(KeyError):
        enc["no such key"]


def test_int8_stays_close_to_the_float_model():
    """int8 weights (per output row) and activations (per row): hidden states within a few percent of float's."""
    for idx in SUPPORTED:
        model, d, ref = fast_model(idx, torch.float32)
        q = fast_model(idx, torch.float32, "int8")[2]
        assert q.backend == "fast-int8" and ref.backend == "fast"
        src = torch.tensor([5, 9, 7, 11, 13, d.eos()])
        ref.start(src)
        q.start(src)
        a = ref.forward([d.eos(), 6, 8, 10]).logits
        b = q.forward([d.eos(), 6, 8, 10]).logits
        assert not torch.equal(a, b) and (a - b).abs().max() < 0.1 * a.abs().max()
    with pytest.raises(ValueError, match="quantize"):
        FastVerifier(model, quantize="int4")
    with pytest.raises(ValueError, match="banned has 3 entries"):
        q.allowed_top1(torch.zeros(1, 16), torch.zeros(3, dtype=torch.bool))


def test_screened_argmax_is_the_float_argmax_bit_for_bit_at_near_ties():
    """masked_top1 screens the vocabulary with an int8 copy of the projection and rescores the candidates exactly;
    with output rows made near-duplicates (logits a few ulp apart, or equal) its token is still the argmax of the
    float logits (lowest id on a tie), masks included."""
    model, d, _ = build_random_transformer(seed=7, dtype=torch.float32, max_positions=64, n_symbols=300,
                                           share_all_embeddings=False, normalize_before=True)
    w = model.decoder.output_projection.weight
    g = torch.Generator().manual_seed(0)
    with torch.no_grad():
        for a in range(10, 300, 7):  # pairs of rows equal or a few ulp apart
            w[a + 1] = w[a] * (1 + 1e-7 * int(torch.randint(0, 3, (), generator=g)))
    fast = FastVerifier(model)
    for trial in range(200):
        hidden = torch.randn(int(torch.randint(1, 6, (), generator=g)), w.size(1), generator=g) * 3
        step, max_len = int(torch.randint(0, 3, (), generator=g)), 4
        unk_penalty = float(torch.randint(0, 3, (), generator=g))
        logits = fast.output_layer(hidden)
        logits[:, d.pad()] = float("-inf")
        logits[:, d.unk()] -= unk_penalty
        if step == 0:
            logits[0, d.eos()] = float("-inf")
        expected = logits.argmax(-1).tolist()
        for i in range(hidden.size(0)):
            if step + i >= max_len:
                expected[i] = d.eos()
        assert fast.masked_top1(hidden, step, max_len, unk_penalty) == expected, trial
        # a drafter's proposals: the argmax over the ids it does not ban
        banned = torch.rand(w.size(0), generator=g) < 0.5
        allowed = fast.output_layer(hidden).masked_fill(banned, float("-inf")).argmax(-1).tolist()
        assert fast.allowed_top1(hidden, banned) == allowed, trial


@pytest.mark.parametrize("dtype,quantize", [(torch.float32, None), (torch.float64, None), (torch.float32, "int8")])
def test_rows_of_several_sentences_in_one_call_get_their_own_tokens(dtype, quantize):
    """masked_top1_rows (a batched pass's rows, each at its own step and length limit, one C call) gives every row
    the token masked_top1 gives it alone: the screened float path and the int8 path, step 0 and past max_len."""
    model, d, fast = fast_model("wide", dtype, quantize)
    g = torch.Generator().manual_seed(3)
    for trial in range(20):
        n = int(torch.randint(1, 40, (), generator=g))
        hidden = (torch.randn(n, WIDE["embed_dim"], generator=g) * 2).to(dtype)
        steps = torch.randint(0, 6, (n,), generator=g).tolist()
        max_lens = torch.randint(1, 8, (n,), generator=g).tolist()
        alone = [fast.masked_top1(hidden[r:r + 1], steps[r], max_lens[r], 1.5)[0] for r in range(n)]
        assert fast.masked_top1_rows(hidden, steps, max_lens, 1.5) == alone, trial
        assert any(s >= m for s, m in zip(steps, max_lens)) or trial < 19  # the length limit is exercised
    with pytest.raises(ValueError, match="2 rows, 1 steps"):
        fast.masked_top1_rows(hidden[:2], [0], [3, 3])


def test_int8_linear_layers_are_exact_integer_sums():
    """The int8 kernels (VNNI or plain C) compute b + (sum_i Wq[o, i] xq[i]) sx sw[o] with the integer sum exact: the
    output layer of an int8 model equals that formula evaluated in int64, on an input width that is no multiple of
    4 (the padded quads)."""
    model, d, _ = build_random_transformer(seed=11, dtype=torch.float32, max_positions=32, embed_dim=18, ffn_dim=37,
                                           heads=2, n_symbols=90, share_all_embeddings=False)
    fast = FastVerifier(model, quantize="int8")
    W = model.decoder.output_projection.weight.detach().float()
    bias = getattr(model.decoder.output_projection, "bias", None)
    b = torch.zeros(W.size(0)) if bias is None else bias.detach().float()
    sw = W.abs().amax(1) / 127
    Wq = torch.round(W / sw[:, None]).long()
    x = torch.randn(7, W.size(1), generator=torch.Generator().manual_seed(1)) * 3
    sx = x.abs().amax(1) / 127
    xq = torch.round(x / sx[:, None]).long()
    acc = xq @ Wq.T
    expected = (acc.double() * (sx[:, None] * sw[None, :]).double() + b.double()).float()
    got = fast.output_layer(x)
    ulp = torch.finfo(torch.float32).eps * expected.abs().clamp_min(1e-30)
    assert ((got - expected).abs() <= ulp).all()
