"""Decoder layers of Hsu et al. (2020)'s efficient student: SSRU or AAN in place of decoder self-attention.

SSRU (the paper's Eq. 1, Kim et al. 2019), with ``W_f`` and ``W`` fused into ONE matmul (the paper's 6 % trick)::

    [a_t ; z_t] = [W_f ; W] x_t              one Linear(d, 2d) without bias
    f_t = sigmoid(a_t + b_f)
    c_t = f_t * c_{t-1} + (1 - f_t) * z_t    c_0 = 0
    o_t = ReLU(c_t)

AAN without its gating layer (the paper's Eq. 2, Zhang et al. 2018): ``o_t = FFN(1/t * sum_{k<=t} x_k)``.

Both are causal by construction (no attention mask), so the full-sequence forward (training) and fairseq's
incremental decoding (one token per step; the state is the last cell ``c_t`` / the running sum) compute the same
numbers through the same scan functions :func:`ssru_scan` and :func:`aan_prefix_sum`, which the engine's
:class:`fastdec.engine.student_verifier.StudentVerifier` calls too. Each sub-layer keeps fairseq's residual +
layer-norm placement (post-norm, or pre-norm with ``--decoder-normalize-before``). ``decoder_no_ffn`` drops the
decoder's position-wise feed-forward sub-layer (its parameters are not even built).
"""
from __future__ import annotations

from typing import Dict, Optional

import torch
import torch.nn as nn
import torch.nn.functional as F
from torch import Tensor

from fairseq.incremental_decoding_utils import with_incremental_state
from fairseq.modules.transformer_layer import TransformerDecoderLayerBase
from fairseq.modules import FairseqDropout

SELF_ATTENTION_KINDS = ("attention", "ssru", "aan")


def ssru_scan(gate: Tensor, value: Tensor, cell: Optional[Tensor]) -> Tensor:
    """Cells ``c_1..c_T`` of ``c_t = f_t c_{t-1} + (1 - f_t) z_t`` along dim 0 (``cell`` = c_0, None = zeros).

    A plain loop: T is a sentence length, and the same elementwise operations in the same order on every path
    (training, fairseq's one-token steps, the engine's multi-token blocks) keep all of them bit-identical."""
    out = torch.empty_like(value)
    keep = 1.0 - gate
    c = None if cell is None else cell
    for t in range(value.size(0)):
        c = keep[t] * value[t] if c is None else gate[t] * c + keep[t] * value[t]
        out[t] = c
    return out


def aan_prefix_sum(x: Tensor, running: Optional[Tensor]) -> Tensor:
    """Running sums ``s_t = s_{t-1} + x_t`` along dim 0, starting from ``running`` (None = 0)."""
    if running is None:
        return torch.cumsum(x, dim=0)
    return torch.cumsum(torch.cat([running.unsqueeze(0), x], dim=0), dim=0)[1:]


@with_incremental_state
class SSRU(nn.Module):
    """Simpler Simple Recurrent Unit over ``[T, B, C]``; incremental state: the last cell ``[B, C]``."""

    def __init__(self, embed_dim: int):
        super().__init__()
        self.embed_dim = embed_dim
        self.fused = nn.Linear(embed_dim, 2 * embed_dim, bias=False)  # rows: [W_f ; W]
        self.forget_bias = nn.Parameter(torch.zeros(embed_dim))
        nn.init.xavier_uniform_(self.fused.weight)

    def forward(self, x: Tensor, incremental_state=None) -> Tensor:
        C = self.embed_dim
        u = self.fused(x)
        gate = torch.sigmoid(u[..., :C] + self.forget_bias)
        prev = None
        if incremental_state is not None:
            saved = self.get_incremental_state(incremental_state, "ssru")
            prev = saved["cell"] if saved is not None else None
        cells = ssru_scan(gate, u[..., C:], prev)
        if incremental_state is not None:
            self.set_incremental_state(incremental_state, "ssru", {"cell": cells[-1]})
        return F.relu(cells)

    def reorder_incremental_state(self, incremental_state: Dict[str, Dict[str, Optional[Tensor]]], new_order):
        saved = self.get_incremental_state(incremental_state, "ssru")
        if saved is not None:
            self.set_incremental_state(incremental_state, "ssru", {"cell": saved["cell"].index_select(0, new_order)})
        return incremental_state


@with_incremental_state
class AverageAttention(nn.Module):
    """AAN without gate: ``FFN(cumulative average)`` over ``[T, B, C]``; incremental state: the running sum and
    the number of positions summed."""

    def __init__(self, embed_dim: int, ffn_dim: int, activation_dropout: float = 0.0):
        super().__init__()
        self.fc1 = nn.Linear(embed_dim, ffn_dim)
        self.fc2 = nn.Linear(ffn_dim, embed_dim)
        self.activation_dropout_module = FairseqDropout(activation_dropout, module_name=self.__class__.__name__)

    def forward(self, x: Tensor, incremental_state=None) -> Tensor:
        prev, start = None, 0
        if incremental_state is not None:
            saved = self.get_incremental_state(incremental_state, "aan")
            if saved is not None:
                prev, start = saved["sum"], int(saved["count"].item())
        sums = aan_prefix_sum(x, prev)
        if incremental_state is not None:
            count = torch.tensor(start + x.size(0))
            self.set_incremental_state(incremental_state, "aan", {"sum": sums[-1], "count": count})
        steps = torch.arange(start + 1, start + x.size(0) + 1, dtype=x.dtype, device=x.device)
        avg = sums / steps.view(-1, *([1] * (x.dim() - 1)))
        return self.ffn(avg)

    def ffn(self, avg: Tensor) -> Tensor:
        return self.fc2(self.activation_dropout_module(F.relu(self.fc1(avg))))

    def reorder_incremental_state(self, incremental_state, new_order):
        saved = self.get_incremental_state(incremental_state, "aan")
        if saved is not None:
            self.set_incremental_state(incremental_state, "aan", {"sum": saved["sum"].index_select(0, new_order),
                                                                  "count": saved["count"]})
        return incremental_state


class StudentDecoderLayer(TransformerDecoderLayerBase):
    """fairseq's decoder layer with SSRU / AAN self-attention and an optional feed-forward sub-layer.

    ``kind`` = "attention" keeps fairseq's multi-head self-attention (the baseline, e.g. for head pruning).
    The encoder attention is fairseq's own (its key/value cache is fairseq's incremental state)."""

    def __init__(self, cfg, kind: str, use_ffn: bool, no_encoder_attn: bool = False):
        if kind not in SELF_ATTENTION_KINDS:
            raise ValueError(f"--decoder-self-attn must be one of {SELF_ATTENTION_KINDS}, got {kind!r}")
        super().__init__(cfg, no_encoder_attn=no_encoder_attn)
        self.kind = kind
        self.use_ffn = bool(use_ffn)
        if kind == "ssru":
            self.self_attn = SSRU(self.embed_dim)
        elif kind == "aan":
            self.self_attn = AverageAttention(self.embed_dim, cfg.decoder.ffn_embed_dim,
                                              float(cfg.activation_dropout))
        if not self.use_ffn:  # no parameters for the dropped sub-layer
            self.fc1 = self.fc2 = self.final_layer_norm = self.ffn_layernorm = None
            self.w_resid = None

    def forward(self, x, encoder_out: Optional[Tensor] = None, encoder_padding_mask: Optional[Tensor] = None,
                incremental_state=None, prev_self_attn_state=None, prev_attn_state=None,
                self_attn_mask: Optional[Tensor] = None, self_attn_padding_mask: Optional[Tensor] = None,
                need_attn: bool = False, need_head_weights: bool = False):
        if self.kind == "attention":
            if not self.use_ffn:
                raise NotImplementedError("decoder_no_ffn with standard self-attention is not supported")
            return super().forward(x, encoder_out, encoder_padding_mask, incremental_state, prev_self_attn_state,
                                   prev_attn_state, self_attn_mask, self_attn_padding_mask, need_attn,
                                   need_head_weights)
        if need_head_weights:
            need_attn = True
        # --- SSRU / AAN (causal by construction: the mask is not needed)
        residual = x
        if self.normalize_before:
            x = self.self_attn_layer_norm(x)
        x = self.dropout_module(self.self_attn(x, incremental_state=incremental_state))
        x = residual + x
        if not self.normalize_before:
            x = self.self_attn_layer_norm(x)
        # --- encoder attention (fairseq's module and its static key/value cache)
        attn = None
        if self.encoder_attn is not None and encoder_out is not None:
            residual = x
            if self.normalize_before:
                x = self.encoder_attn_layer_norm(x)
            x, attn = self.encoder_attn(query=x, key=encoder_out, value=encoder_out,
                                        key_padding_mask=encoder_padding_mask, incremental_state=incremental_state,
                                        static_kv=True, need_weights=need_attn or (not self.training and self.need_attn),
                                        need_head_weights=need_head_weights)
            x = residual + self.dropout_module(x)
            if not self.normalize_before:
                x = self.encoder_attn_layer_norm(x)
        # --- feed-forward (optional)
        if self.use_ffn:
            residual = x
            if self.normalize_before:
                x = self.final_layer_norm(x)
            x = self.activation_fn(self.fc1(x))
            x = self.activation_dropout_module(x)
            x = self.dropout_module(self.fc2(x))
            x = residual + x
            if not self.normalize_before:
                x = self.final_layer_norm(x)
        return x, attn, None


__all__ = ["SELF_ATTENTION_KINDS", "SSRU", "AverageAttention", "StudentDecoderLayer", "ssru_scan", "aan_prefix_sum"]
