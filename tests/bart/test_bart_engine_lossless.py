"""The engine decodes a BART-architecture model losslessly (float64, tiny random ``bart`` models): its greedy decoding
equals fairseq's own greedy search (SequenceGenerator, beam 1) token for token, and GAD with a NAT drafter of the same
architecture (exact top-1, and GAD++ with beta = 1) equals that greedy output.

BART adds over the plain Transformer: learned positional embeddings (offset padding_idx + 1), ``layernorm_embedding``,
GELU, no embedding scaling, post-norm with no final decoder norm, shared input/output embeddings."""
import argparse
import copy
import functools
import os
import sys
from pathlib import Path
from types import SimpleNamespace

import fairseq.utils
import pytest
import torch
import torch.nn.functional as F
from hypothesis import given
from hypothesis import strategies as st
from helpers.properties import property_settings

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO / "tests"))
os.environ.setdefault("TORCH_FORCE_NO_WEIGHTS_ONLY_LOAD", "1")

from helpers.bart import bart_args, build_random_bart  # noqa: E402
from fastdec.engine import Verifier, accept_top1, accept_top_beta, draft_verify_accept, greedy_decode  # noqa: E402
from fastdec.engine.fairseq_baseline import FairseqGenerator  # noqa: E402
from fastdec.engine.nat_drafter import NATDrafter  # noqa: E402
from fastdec.engine.profile import build_dictionary  # noqa: E402

SETTINGS = property_settings(2 / 3)


@pytest.fixture(autouse=True)
def exact_softmax(monkeypatch):
    """fairseq's attention softmax runs in float32 even for float64 models; make it float64 so argmax ties are the
    engine's and fairseq's alike (the engine computes in the model's dtype)."""
    monkeypatch.setattr(fairseq.utils, "softmax", lambda x, dim, onnx_trace=False: F.softmax(x, dim=dim))


@functools.lru_cache(maxsize=None)
def bart(idx: int):
    d = build_dictionary(30)
    model = build_random_bart(d, layers=2, decoder_layers=(2, 1, 3)[idx], seed=300 + idx,
                              init_std=(None, 0.5, 0.3)[idx])
    return model, d, Verifier(model, dtype=torch.float64)


@functools.lru_cache(maxsize=None)
def bart_drafter(idx: int, seed: int, k: int):
    """A random ``nat_block_drafter_bart_base``-style drafter (BART's architecture at toy sizes) over the verifier's
    dictionary + ``<mask>``."""
    import fastdec_fairseq  # noqa: F401
    from fastdec_fairseq.models.nat_block_drafter import MASK_SYMBOL, NATBlockDrafterModel, nat_block_drafter_base

    _, d, ver = bart(idx)
    dd = copy.deepcopy(d)
    dd.add_symbol(MASK_SYMBOL)
    args = bart_args(2)
    nat_block_drafter_base(args)
    torch.manual_seed(seed)
    model = NATBlockDrafterModel.build_model(args, SimpleNamespace(source_dictionary=dd, target_dictionary=dd))
    assert model.decoder.layernorm_embedding is not None and model.decoder.embed_scale == 1.0
    return NATDrafter(model.double().eval(), k=k, verifier_vocab_size=ver.vocab_size)


@st.composite
def cases(draw):
    idx = draw(st.sampled_from([0, 1, 2]))
    _, d, _ = bart(idx)
    n = draw(st.integers(1, 14))
    src = draw(st.lists(st.integers(d.nspecial, len(d) - 1), min_size=n, max_size=n)) + [d.eos()]
    return idx, torch.tensor(src), dict(max_len_a=draw(st.sampled_from([0.0, 1.2])), max_len_b=draw(st.integers(1, 30)))


def test_the_fixture_has_barts_architecture():
    model, _, ver = bart(0)
    dec = model.decoder
    assert type(model).__name__ == "BARTModel" and dec.layernorm_embedding is not None and dec.embed_scale == 1.0
    assert dec.embed_positions.__class__.__name__ == "LearnedPositionalEmbedding" and dec.layer_norm is None
    assert dec.layers[0].activation_fn is F.gelu or "gelu" in dec.layers[0].activation_fn.__name__
    assert ver.ln_emb is not None and ver.embed_scale == 1.0 and not ver.normalize_before


@SETTINGS
@given(cases())
def test_engine_greedy_equals_fairseq_greedy_on_bart(c):
    idx, src, lim = c
    model, d, ver = bart(idx)
    ours = greedy_decode(ver, src, **lim)
    theirs = FairseqGenerator(model, d, beam=1, **lim).generate([src])[0]
    assert ours.tokens == theirs.tokens


def test_fairseq_greedy_after_beam_search_on_the_same_bart_model():
    """The benchmark interleaves fairseq beam 5 and greedy on one model: fairseq leaves BART's beamable encoder
    attention at beam 5 (a reshape error for beam 1) unless each generator sets its own beam size."""
    model, d, ver = bart(1)
    src = torch.tensor([5, 6, 7, 8, 9, 2])
    FairseqGenerator(model, d, beam=5, max_len_b=10).generate([src])
    greedy = FairseqGenerator(model, d, beam=1, max_len_b=10).generate([src])[0]
    assert greedy.tokens == greedy_decode(ver, src, max_len_a=0, max_len_b=10).tokens


@SETTINGS
@given(cases(), st.integers(0, 2), st.sampled_from([1, 3, 6]))
def test_gad_with_beta_1_equals_greedy_on_bart(c, seed, k):
    idx, src, lim = c
    _, _, ver = bart(idx)
    drafter = bart_drafter(idx, seed, k)
    greedy = greedy_decode(ver, src, **lim)
    for rule in (accept_top1, accept_top_beta(1, 5.0)):
        assert draft_verify_accept(ver, src, drafter, rule, **lim).tokens == greedy.tokens


def test_fast_backend_runs_bart_passes_like_the_reference():
    """The C verifier implements layernorm_embedding and GELU: its passes on a float32 BART model match the PyTorch
    reference (or it falls back to the reference with a warning on a machine without a C compiler)."""
    from fastdec.engine.load import make_verifier

    model = build_random_bart(build_dictionary(30), dtype=torch.float32, init_std=0.5, seed=3)
    fast, ref = make_verifier(model, backend="fast"), make_verifier(model)
    src, fed = torch.tensor([5, 6, 7, 8, 2]), torch.tensor([2, 9, 10, 11])
    fast.start(src)
    ref.start(src)
    assert torch.allclose(fast.forward(fed).logits, ref.forward(fed).logits, atol=1e-4)
