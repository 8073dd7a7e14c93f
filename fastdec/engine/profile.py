"""How much one verification pass costs as a function of the number of tokens it checks.

Every draft -> verify -> accept method trades decoder passes for longer passes: IAD verifies up to the whole
source at once, GAD k+1 tokens, Blockwise k. Its wall-clock speedup over greedy is therefore about
``tokens per iteration / (cost of a pass of that length / cost of a one-token pass)``. On a GPU a pass of
k tokens costs about as much as a one-token pass (the papers' setting); on a CPU the cost grows with k
once the weights stay in cache, i.e. for small models. :func:`verify_cost` measures that curve on a real
verifier, so the benchmark tables can be read against it (``fastdec verify-cost``), or on a randomly
initialised fairseq Transformer of a given size (:func:`build_random_transformer`, also the tests' tiny models).
"""
from __future__ import annotations

import argparse
import copy
import statistics
import time
from types import SimpleNamespace
from typing import Dict, List, Optional, Sequence

import torch

from .verifier import Verifier

__all__ = ["verify_cost", "build_random_transformer", "build_dictionary"]


def verify_cost(verifier: Verifier, src_tokens: torch.Tensor, ks: Sequence[int], *, prefix_len: int = 8,
                repeats: int = 20, warmup: int = 3, need_log_probs: bool = True) -> List[Dict[str, float]]:
    """Median wall time of one ``Verifier.forward`` of ``k`` tokens after a ``prefix_len`` cached prefix.

    The pass is rolled back after each measurement, so every repeat sees the same cache length. Token ids are
    the source's (any ids would do: the cost does not depend on them). Returns one row per k with
    ``ms_per_pass``, ``ms_per_token`` and ``cost_vs_k1`` (pass cost relative to a one-token pass).
    """
    ks = [int(k) for k in ks]
    if not ks or min(ks) < 1:
        raise ValueError(f"block sizes must be integers >= 1, got {list(ks)}")
    if prefix_len < 1 or repeats < 1 or warmup < 0:
        raise ValueError("prefix_len and repeats must be >= 1, warmup >= 0")
    if prefix_len + max(ks) > verifier.max_positions:
        raise ValueError(f"prefix_len + max k = {prefix_len + max(ks)} exceeds the model's "
                         f"max_target_positions ({verifier.max_positions})")
    src = torch.as_tensor(src_tokens, dtype=torch.long)
    pool = src[src != verifier.eos].tolist() or [verifier.unk]
    ids = [pool[i % len(pool)] for i in range(prefix_len + max(ks))]
    sync = torch.cuda.synchronize if verifier.device.type == "cuda" else (lambda: None)
    rows = []
    with torch.inference_mode():
        verifier.start(src)
        verifier.forward(torch.tensor([verifier.eos] + ids[: prefix_len - 1]))
        for k in sorted(set(ks)):
            feed = torch.tensor(ids[prefix_len: prefix_len + k])
            times = []
            for i in range(warmup + repeats):
                sync()
                t0 = time.perf_counter()
                out = verifier.forward(feed)
                if need_log_probs:
                    out.log_probs.argmax(dim=-1).tolist()
                sync()
                if i >= warmup:
                    times.append(time.perf_counter() - t0)
                verifier.rollback(prefix_len)
            ms = 1000 * statistics.median(times)
            rows.append({"k": k, "ms_per_pass": ms, "ms_per_token": ms / k})
    base = next((r["ms_per_pass"] for r in rows if r["k"] == 1), None)
    for r in rows:
        r["cost_vs_k1"] = r["ms_per_pass"] / base if base else None
    return rows


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


def build_random_nat_drafter(dictionary, *, layers=2, embed_dim=16, heads=2, ffn_dim=32, max_positions=64, seed=0,
                             dtype=torch.float64, init_std=None, eos_boost=0.0, max_source_positions=64,
                             attention="bidirectional", first_from_prefix=False):
    """A randomly initialised ``nat_block_drafter`` whose dictionary is ``dictionary`` + ``<mask>``.

    ``eos_boost`` > 0 scales the EOS row of the output projection, so EOS shows up inside drafted blocks.
    """
    import fastdec_fairseq  # noqa: F401  (registers the model)

    from fastdec_fairseq.models.nat_block_drafter import MASK_SYMBOL, NATBlockDrafterModel

    d = copy.deepcopy(dictionary)
    d.add_symbol(MASK_SYMBOL)
    args = argparse.Namespace(
        encoder_layers=layers, decoder_layers=layers, encoder_embed_dim=embed_dim, decoder_embed_dim=embed_dim,
        encoder_ffn_embed_dim=ffn_dim, decoder_ffn_embed_dim=ffn_dim, encoder_attention_heads=heads,
        decoder_attention_heads=heads, max_source_positions=max_source_positions, max_target_positions=max_positions,
        share_all_embeddings=True, share_decoder_input_output_embed=True, dropout=0.0, attention_dropout=0.0,
        activation_dropout=0.0, drafter_attention=attention, first_from_prefix=first_from_prefix)
    torch.manual_seed(seed)
    model = NATBlockDrafterModel.build_model(args, SimpleNamespace(source_dictionary=d, target_dictionary=d))
    with torch.no_grad():
        if init_std is not None:
            g = torch.Generator().manual_seed(seed)
            for p in model.parameters():
                if p.dim() >= 2:
                    p.copy_(torch.randn(p.shape, generator=g) * init_std)
        if eos_boost:
            model.decoder.output_projection.weight[d.eos()] *= eos_boost
    return model.to(dtype).eval(), d
