"""Helpers to build tiny *random* fairseq Transformers (for property tests of the engine and of drafters).

The models are real ``fairseq.models.transformer.TransformerModel`` instances built through
``TransformerModel.build_model`` with fairseq's own initialisation; only the sizes are tiny.
"""
from __future__ import annotations

import argparse
from types import SimpleNamespace
from typing import Optional

import torch


def build_dictionary(n_symbols: int = 40):
    """A fairseq ``Dictionary`` with the 4 special symbols plus ``n_symbols`` words ``w0 .. w{n-1}``."""
    from fairseq.data import Dictionary

    d = Dictionary()
    for i in range(n_symbols):
        d.add_symbol(f"w{i}")
    d.finalize(padding_factor=1)
    return d


def build_random_transformer(
    dictionary=None,
    *,
    tgt_dictionary=None,
    n_symbols: int = 40,
    layers: int = 2,
    embed_dim: int = 16,
    heads: int = 2,
    ffn_dim: int = 32,
    normalize_before: bool = False,
    learned_pos: bool = False,
    share_all_embeddings: bool = False,
    share_decoder_input_output_embed: bool = False,
    layernorm_embedding: bool = False,
    no_scale_embedding: bool = False,
    activation_fn: str = "relu",
    max_positions: int = 256,
    seed: int = 0,
    dtype: torch.dtype = torch.float64,
    init_std: Optional[float] = None,
    **arch_overrides,
):
    """Build a randomly initialised fairseq ``TransformerModel`` (eval mode) and its dictionary.

    ``init_std`` (optional) re-draws every weight matrix from N(0, init_std) to get sharper, less
    repetitive random output distributions. ``arch_overrides`` are further fairseq transformer arguments
    (e.g. ``decoder_output_dim``, ``no_decoder_final_norm``). Returns ``(model, src_dict, tgt_dict)``.
    """
    from fairseq.models.transformer import TransformerModel
    from fairseq.models.transformer.transformer_legacy import base_architecture

    src_dict = dictionary if dictionary is not None else build_dictionary(n_symbols)
    tgt_dict = tgt_dictionary if tgt_dictionary is not None else src_dict
    if share_all_embeddings and tgt_dict is not src_dict:
        raise ValueError("share_all_embeddings needs a joined dictionary")
    args = argparse.Namespace(
        encoder_layers=layers, decoder_layers=layers,
        encoder_embed_dim=embed_dim, decoder_embed_dim=embed_dim,
        encoder_ffn_embed_dim=ffn_dim, decoder_ffn_embed_dim=ffn_dim,
        encoder_attention_heads=heads, decoder_attention_heads=heads,
        encoder_normalize_before=normalize_before, decoder_normalize_before=normalize_before,
        encoder_learned_pos=learned_pos, decoder_learned_pos=learned_pos,
        share_all_embeddings=share_all_embeddings,
        share_decoder_input_output_embed=share_decoder_input_output_embed or share_all_embeddings,
        layernorm_embedding=layernorm_embedding, no_scale_embedding=no_scale_embedding,
        activation_fn=activation_fn,
        max_source_positions=max_positions, max_target_positions=max_positions,
        dropout=0.1, attention_dropout=0.1, activation_dropout=0.1,
    )
    for key, value in arch_overrides.items():
        setattr(args, key, value)
    base_architecture(args)
    task = SimpleNamespace(source_dictionary=src_dict, target_dictionary=tgt_dict)
    torch.manual_seed(seed)
    model = TransformerModel.build_model(args, task)
    if init_std is not None:
        g = torch.Generator().manual_seed(seed)
        with torch.no_grad():
            for name, p in model.named_parameters():
                if p.dim() >= 2:
                    p.copy_(torch.randn(p.shape, generator=g) * init_std)
    model = model.to(dtype)
    model.eval()
    return model, src_dict, tgt_dict


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
    import numpy as np
    import torch.nn.functional as F

    kwargs = dict(n_symbols=24, layers=2, embed_dim=64, heads=4, ffn_dim=128, dtype=torch.float32,
                  share_all_embeddings=True, seed=seed)
    kwargs.update(model_kwargs)
    model, d, _ = build_random_transformer(**kwargs)
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
    return model, d
