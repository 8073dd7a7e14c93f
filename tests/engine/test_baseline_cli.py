"""fairseq SequenceGenerator baseline and a trained copy model (the `fastdec bench` CLI: tests/bench/test_bench_cli.py)."""
import pytest
import torch

from conftest import copy_model, random_model
from fastdec.engine import FairseqGenerator, InputCopyDrafter, draft_verify_accept, greedy_decode


def test_fairseq_generator_batch_1_and_batched():
    model, d, ver = random_model(1)
    g = torch.Generator().manual_seed(0)
    srcs = [torch.cat([torch.randint(4, len(d), (int(n),), generator=g), torch.tensor([d.eos()])])
            for n in torch.randint(0, 12, (7,), generator=g)]
    # fairseq derives max_len from the *padded* batch width, so compare where it does not bind
    assert all(layer.need_attn for layer in model.decoder.layers)  # fairseq's default: average attention each step
    gen = FairseqGenerator(model, d, beam=1, max_len_a=0, max_len_b=60)
    # set up like fairseq-generate (prepare_for_inference_): no attention weights computed for nothing
    assert not any(layer.need_attn for layer in model.decoder.layers)
    one = gen.generate(srcs)
    batched = gen.generate(srcs, batch_size=3)
    assert [r.tokens for r in one] == [r.tokens for r in batched]
    assert [r.id for r in batched] == list(range(7)) and {r.batch_size for r in batched} == {3, 1}
    assert [r.tokens for r in one] == [greedy_decode(ver, s, max_len_a=0, max_len_b=60).tokens for s in srcs]
    beam = FairseqGenerator(model, d, beam=5, max_len_a=1.0, max_len_b=4).generate(srcs[:2])
    assert all(r.tokens[-1] == d.eos() and r.time > 0 for r in beam)
    with pytest.raises(ValueError, match="beam"):
        FairseqGenerator(model, d, beam=0)
    with pytest.raises(ValueError, match="batch_size"):
        gen.generate(srcs, batch_size=0)


@pytest.mark.slow
def test_iad_on_trained_copy_model_accepts_long_blocks():
    """A real (trained) fairseq model on a GEC-like task: IAD == greedy == fairseq beam 1, far fewer passes."""
    import numpy as np

    from helpers.models import copy_task_batch

    model, d, ver = copy_model()
    src, lengths, prev, tgt = copy_task_batch(np.random.default_rng(123), d, batch=16)
    sources = [s[s != d.pad()] for s in src]
    kw = dict(max_len_a=1.2, max_len_b=5)
    fs = FairseqGenerator(model, d, beam=1, **kw).generate(sources)
    iters_g = iters_i = n_tok = correct = 0
    for s, f, t in zip(sources, fs, tgt):
        g = greedy_decode(ver, s, **kw)
        r = draft_verify_accept(ver, s, InputCopyDrafter(), **kw)
        assert r.tokens == g.tokens == f.tokens
        iters_g += g.stats.iterations
        iters_i += r.stats.iterations
        n_tok += len(r.tokens)
        correct += r.tokens == t[t != d.pad()].tolist()
    assert correct >= 8  # the model learned the task (mostly)
    assert n_tok / iters_i > 2.0 and iters_i * 2 < iters_g
