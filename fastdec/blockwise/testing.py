"""Tiny *random* combined scoring/proposal models (fairseq plugin ``blockwise_transformer``) for property tests."""
from __future__ import annotations

import argparse
from types import SimpleNamespace
from typing import Optional

import torch


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
    from fastdec.engine.testing import build_dictionary
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
