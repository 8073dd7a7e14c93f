"""Tiny fairseq models for the tests: a toy copy-task Transformer trained in-process and random Blockwise models.

Random plain Transformers come from :func:`fastdec.engine.profile.build_random_transformer` (also used by
``fastdec verify-cost``).
"""
import argparse
from types import SimpleNamespace
from typing import Optional

import torch

from fastdec.engine.profile import build_dictionary, build_random_transformer


def copy_task_batch(rng, src_dict, batch: int = 32, min_len: int = 4, max_len: int = 14,
                    n_words: Optional[int] = None, edit_rate: float = 0.1):
    """A GEC-like toy batch: target = source with rare edits (``w0`` deleted, ``w1`` -> ``w2``).

    Returns ``(src_tokens, src_lengths, prev_output_tokens, target)`` right-padded tensors (fairseq layout:
    source ends with EOS; ``prev_output_tokens`` = [EOS] + target[:-1]).
    """
    n_words = n_words or (len(src_dict) - src_dict.nspecial)
    first = src_dict.nspecial
    eos, pad = src_dict.eos(), src_dict.pad()
    w0, w1, w2 = first, first + 1, first + 2
    srcs, tgts = [], []
    for _ in range(batch):
        n = int(rng.integers(min_len, max_len + 1))
        s = rng.integers(first + 3, first + n_words, size=n).tolist()
        for i in range(n):
            if rng.random() < edit_rate:
                s[i] = w0 if rng.random() < 0.5 else w1
        t = [w2 if w == w1 else w for w in s if w != w0]
        srcs.append(s + [eos])
        tgts.append(t + [eos])
    S = max(map(len, srcs))
    T = max(map(len, tgts))
    src = torch.full((batch, S), pad, dtype=torch.long)
    tgt = torch.full((batch, T), pad, dtype=torch.long)
    prev = torch.full((batch, T), pad, dtype=torch.long)
    for i, (s, t) in enumerate(zip(srcs, tgts)):
        src[i, S - len(s):] = torch.tensor(s)  # left-pad the source like fairseq's translation task
        tgt[i, : len(t)] = torch.tensor(t)
        prev[i, : len(t)] = torch.tensor([eos] + t[:-1])
    lengths = torch.tensor([len(s) for s in srcs])
    return src, lengths, prev, tgt


def train_copy_model(steps: int = 300, *, seed: int = 0, lr: float = 3e-3, batch: int = 32, **model_kwargs):
    """Train a tiny fairseq Transformer on :func:`copy_task_batch` in-process (a few seconds on CPU).

    Returns ``(model, dictionary)`` in float32 eval mode. Used to get a model on which IAD accepts
    long blocks (its output nearly copies its input), as in GEC.
    """
    kwargs = dict(n_symbols=24, layers=2, embed_dim=64, heads=4, ffn_dim=128, dtype=torch.float32,
                  share_all_embeddings=True, seed=seed)
    kwargs.update(model_kwargs)
    model, d, _ = build_random_transformer(**kwargs)
    return fit_copy_task(model, d, steps, seed=seed, lr=lr, batch=batch), d


def fit_copy_task(model, d, steps: int, *, seed: int = 0, lr: float = 3e-3, batch: int = 32):
    """Train ``model`` in place on :func:`copy_task_batch` without dropout (Adam); returns it in eval mode."""
    import numpy as np
    import torch.nn.functional as F

    for m in model.modules():  # no dropout while training the toy model
        if hasattr(m, "p") and m.__class__.__name__ == "FairseqDropout":
            m.p = 0.0
    model.train()
    rng = np.random.default_rng(seed)
    opt = torch.optim.Adam(model.parameters(), lr=lr, betas=(0.9, 0.98))
    for step in range(steps):
        src, lengths, prev, tgt = copy_task_batch(rng, d, batch=batch)
        logits, _ = model(src, lengths, prev)
        loss = F.cross_entropy(logits.reshape(-1, logits.size(-1)), tgt.reshape(-1), ignore_index=d.pad())
        opt.zero_grad()
        loss.backward()
        opt.step()
    model.eval()
    return model


def build_random_blockwise(block_size: int = 4, *, dictionary=None, n_symbols: int = 30, layers: int = 2,
                           embed_dim: int = 16, heads: int = 2, ffn_dim: int = 32,
                           p1_through_layer: bool = False, head_std: Optional[float] = 0.5,
                           init_std: Optional[float] = None, seed: int = 0, dtype: torch.dtype = torch.float64,
                           max_positions: int = 128, **arch_overrides):
    """A randomly initialised ``blockwise_transformer`` (eval mode) and its dictionary.

    ``head_std`` re-draws the head's second weight matrix (zero-initialised by the plugin, which would make
    every head equal to p_1) from N(0, head_std); ``None`` keeps it zero (heads = p_1 shifted: each
    proposal repeats p_1's prediction for the current position). ``init_std`` re-draws every base weight
    matrix (sharper distributions). Returns ``(model, dictionary)``.
    """
    import fastdec_fairseq  # noqa: F401  (registers the plugin)
    from fastdec_fairseq.models.blockwise_transformer import BlockwiseTransformerModel

    d = dictionary if dictionary is not None else build_dictionary(n_symbols)
    args = argparse.Namespace(
        encoder_layers=layers, decoder_layers=layers, encoder_embed_dim=embed_dim, decoder_embed_dim=embed_dim,
        encoder_ffn_embed_dim=ffn_dim, decoder_ffn_embed_dim=ffn_dim,
        encoder_attention_heads=heads, decoder_attention_heads=heads,
        share_all_embeddings=True, share_decoder_input_output_embed=True,
        max_source_positions=max_positions, max_target_positions=max_positions,
        dropout=0.1, attention_dropout=0.1, activation_dropout=0.1,
        block_size=block_size, load_base=None, freeze_base=False, p1_through_layer=p1_through_layer,
    )
    for key, value in arch_overrides.items():
        setattr(args, key, value)
    task = SimpleNamespace(source_dictionary=d, target_dictionary=d)
    torch.manual_seed(seed)
    model = BlockwiseTransformerModel.build_model(args, task)
    g = torch.Generator().manual_seed(seed + 1)
    with torch.no_grad():
        if init_std is not None:
            for name, p in model.named_parameters():
                if p.dim() >= 2 and "blockwise_head" not in name:
                    p.copy_(torch.randn(p.shape, generator=g) * init_std)
        head = model.decoder.blockwise_head
        if head.fc2 is not None and head_std is not None:
            head.fc2.weight.copy_(torch.randn(head.fc2.weight.shape, generator=g) * head_std)
            head.fc2.bias.copy_(torch.randn(head.fc2.bias.shape, generator=g) * head_std)
    model = model.to(dtype)
    model.eval()
    return model, d
