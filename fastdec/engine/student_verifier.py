"""The efficient student (``efficient_student``: SSRU / AAN / pruned-attention decoder) as the engine's verifier.

Same interface as :class:`fastdec.engine.verifier.Verifier` (``start``, ``restart``, ``forward(tokens,
need_logits)`` -> :class:`VerifierOutput`, ``rollback``, ``output_layer``, ``length``, ``eos/pad/unk``,
``encoder_out``, ``src_tokens(_device)``, ``vocab_size``, ``max_positions``, ``max_source_positions``, ``device``,
``dtype``, ``model``), so the draft -> verify -> accept loop, IAD, GAD and the benchmark runner use it unchanged.

The decoder state is kept **per position**, so rolling back to any accepted length is moving an integer (O(1)),
as with the KV cache:

* SSRU layers store the cell ``c_t`` of every position (``[cap, C]``): a block of ``n`` new tokens continues the
  recurrence from ``c_{t0-1}`` with the plugin's own :func:`ssru_scan`;
* AAN layers store the running sum ``s_t`` of every position: :func:`aan_prefix_sum` from ``s_{t0-1}``;
* standard self-attention layers (the pruned baseline) keep their own ``[H_l, cap, D]`` key/value cache, with
  ``H_l`` heads per layer (pruned layers differ), like the encoder-attention keys/values (projected once a sentence).

Dropout is never applied; batch size is 1. Numerically equal to fairseq's full decoder forward (float64 tests in
``tests/students/``).
"""
from __future__ import annotations

from types import SimpleNamespace
from typing import Any, Dict, List, Optional

import torch
import torch.nn.functional as F
from torch import Tensor

from .verifier import Verifier, VerifierOutput, _apply_ln, _ln, position_table, resolve_device_dtype

__all__ = ["StudentVerifier", "is_student"]


def is_student(model) -> bool:
    """True for the plugin's ``efficient_student`` models (SSRU / AAN / gated or pruned attention)."""
    return hasattr(model.decoder, "student_kind")


def _attend(q: Tensor, k: Tensor, v: Tensor, mask: Optional[Tensor]) -> Tensor:
    """``[H, n, D]`` attention output; the 1/sqrt(d) scale is folded into q."""
    s = torch.matmul(q, k.transpose(-1, -2))
    if mask is not None:
        s = s.masked_fill(~mask, float("-inf"))
    return torch.matmul(torch.softmax(s, dim=-1), v)


class StudentVerifier:
    """Cached multi-token forward of an ``efficient_student`` decoder; see the module docstring."""

    # per-sentence handling shared with the Transformer verifier: it reads only attributes both classes have
    # (encoder, device, max_source_positions, length) and calls this class's restart
    check_source = Verifier.check_source
    start = Verifier.start
    rollback = Verifier.rollback
    new_tokens = Verifier.new_tokens
    embed = Verifier.embed

    def __init__(self, model, *, device: Any = None, dtype: Any = None):
        from fastdec_fairseq.models.student_layers import aan_prefix_sum, ssru_scan

        if not is_student(model):
            raise TypeError(f"StudentVerifier needs an efficient_student model, got {type(model).__name__} "
                            f"(use fastdec.engine.verifier.Verifier for plain Transformers)")
        self._ssru_scan, self._aan_prefix_sum = ssru_scan, aan_prefix_sum
        p0 = next(model.parameters())
        self.device, self.dtype = resolve_device_dtype(p0.device if device is None else device,
                                                       p0.dtype if dtype is None else dtype)
        model = model.to(device=self.device, dtype=self.dtype)
        model.eval()
        if any(True for _ in model.head_gates()):
            raise ValueError("the model still has head gates: prune it first (fastdec.students.prune), which folds "
                             "the gate values into the weights and removes the closed heads")
        self.model, self.encoder, self.decoder = model, model.encoder, model.decoder
        dec = self.decoder
        self.padding_idx = dec.padding_idx
        d = dec.dictionary
        self.eos, self.pad, self.unk = d.eos(), d.pad(), d.unk()
        self.embed_scale = float(dec.embed_scale)
        self.embed_w = dec.embed_tokens.weight
        self.project_in = dec.project_in_dim.weight if dec.project_in_dim is not None else None
        self.project_out = dec.project_out_dim.weight if dec.project_out_dim is not None else None
        self.ln_emb = _ln(getattr(dec, "layernorm_embedding", None))
        self.ln_final = _ln(getattr(dec, "layer_norm", None))
        self.out_w, self.out_b = dec.output_projection.weight, getattr(dec.output_projection, "bias", None)
        self.max_positions = int(dec.max_positions())
        self.max_source_positions = int(self.encoder.max_positions())
        self.embed_dim = dec.layers[0].embed_dim
        self.normalize_before = bool(dec.layers[0].normalize_before)
        self.layers = [self._extract_layer(layer) for layer in dec.layers]
        self._pos_table = position_table(dec, self.max_positions, self.padding_idx, self.device, self.dtype)
        self._cap = 0
        self._state: List[Tensor] = []       # per layer: cells / running sums [cap, C] or stacked K/V [2, H, cap, D]
        self._causal: Optional[Tensor] = None
        self.length = 0
        self.enc_kv: List[tuple] = []
        self.encoder_out: Optional[Dict[str, List[Tensor]]] = None
        self.src_tokens: Optional[Tensor] = None
        self.src_tokens_device: Optional[Tensor] = None

    # ------------------------------------------------------------------ setup
    @staticmethod
    def _extract_layer(layer) -> SimpleNamespace:
        L = SimpleNamespace(kind=layer.kind, ln_sa=_ln(layer.self_attn_layer_norm), act=layer.activation_fn)
        sa = layer.self_attn
        if layer.kind == "ssru":
            L.w_fused, L.b_forget = sa.fused.weight, sa.forget_bias
        elif layer.kind == "aan":
            L.fc1, L.fc2 = sa.fc1, sa.fc2
        else:
            s = float(sa.scaling)
            L.heads, L.head_dim = sa.num_heads, sa.head_dim
            L.w_qkv = torch.cat([sa.q_proj.weight * s, sa.k_proj.weight, sa.v_proj.weight], 0).detach()
            L.b_qkv = torch.cat([sa.q_proj.bias * s, sa.k_proj.bias, sa.v_proj.bias], 0).detach()
            L.w_o, L.b_o = sa.out_proj.weight, sa.out_proj.bias
        ca = layer.encoder_attn
        cs = float(ca.scaling)
        L.c_heads, L.c_head_dim = ca.num_heads, ca.head_dim
        L.w_cq, L.b_cq = (ca.q_proj.weight * cs).detach(), (ca.q_proj.bias * cs).detach()
        L.w_ckv = torch.cat([ca.k_proj.weight, ca.v_proj.weight], 0).detach()
        L.b_ckv = torch.cat([ca.k_proj.bias, ca.v_proj.bias], 0).detach()
        L.w_co, L.b_co = ca.out_proj.weight, ca.out_proj.bias
        L.ln_ca = _ln(layer.encoder_attn_layer_norm)
        L.ffn = None
        if layer.use_ffn:
            L.ffn = (layer.fc1.weight, layer.fc1.bias, layer.fc2.weight, layer.fc2.bias)
            L.ln_ff = _ln(layer.final_layer_norm)
        return L

    def _ensure_capacity(self, needed: int) -> None:
        if needed <= self._cap:
            return
        if needed > self.max_positions:
            raise ValueError(f"target length {needed} exceeds the decoder's max positions {self.max_positions}")
        cap = min(self.max_positions, max(needed, 64, 2 * self._cap))
        new = []
        for li, L in enumerate(self.layers):
            if L.kind == "attention":
                t = torch.empty((2, L.heads, cap, L.head_dim), dtype=self.dtype, device=self.device)
                if self._state and self.length:
                    t[:, :, : self.length] = self._state[li][:, :, : self.length]
            else:
                t = torch.empty((cap, self.embed_dim), dtype=self.dtype, device=self.device)
                if self._state and self.length:
                    t[: self.length] = self._state[li][: self.length]
            new.append(t)
        self._state, self._cap = new, cap
        self._causal = torch.ones(cap, cap, dtype=torch.bool, device=self.device).tril_()

    # ------------------------------------------------------------------ per sentence
    def restart(self, encoder_out: Dict[str, List[Tensor]]) -> None:
        """Empty the decoder state; project the encoder keys/values only for a new sentence."""
        if encoder_out is not self.encoder_out:
            x = encoder_out["encoder_out"][0][:, 0]  # [S, C]
            S = x.size(0)
            self.enc_kv = []
            for L in self.layers:
                kv = F.linear(x, L.w_ckv, L.b_ckv).view(S, 2, L.c_heads, L.c_head_dim).permute(1, 2, 0, 3)
                self.enc_kv.append(kv.contiguous())  # [2, H, S, D]
            self.encoder_out = encoder_out
        self.length = 0

    @torch.inference_mode()
    def forward(self, tokens, *, need_logits: bool = True) -> VerifierOutput:
        """Feed ``n >= 1`` tokens at positions ``length .. length+n-1`` and append their state."""
        if self.encoder_out is None:
            raise RuntimeError("call StudentVerifier.start(src_tokens) first")
        tokens = self.new_tokens(tokens)
        n, t0 = tokens.numel(), self.length
        t1 = t0 + n
        self._ensure_capacity(t1)
        x = self.embed(tokens, self._pos_table[t0:t1] if self._pos_table is not None else None)
        nb = self.normalize_before
        for li, L in enumerate(self.layers):
            residual = x
            h = _apply_ln(x, L.ln_sa) if nb else x
            h = self._self_attention(li, L, h, t0, t1)
            x = residual + h
            if not nb:
                x = _apply_ln(x, L.ln_sa)
            # encoder attention
            residual = x
            h = _apply_ln(x, L.ln_ca) if nb else x
            q = F.linear(h, L.w_cq, L.b_cq).view(n, L.c_heads, L.c_head_dim).transpose(0, 1)
            kv = self.enc_kv[li]
            a = _attend(q, kv[0], kv[1], None).transpose(0, 1).reshape(n, L.c_heads * L.c_head_dim)
            x = residual + F.linear(a, L.w_co, L.b_co)
            if not nb:
                x = _apply_ln(x, L.ln_ca)
            if L.ffn is not None:
                residual = x
                h = _apply_ln(x, L.ln_ff) if nb else x
                w1, b1, w2, b2 = L.ffn
                x = residual + F.linear(L.act(F.linear(h, w1, b1)), w2, b2)
                if not nb:
                    x = _apply_ln(x, L.ln_ff)
        if self.ln_final is not None:
            x = _apply_ln(x, self.ln_final)
        if self.project_out is not None:
            x = F.linear(x, self.project_out)
        self.length = t1
        return VerifierOutput(logits=self.output_layer(x) if need_logits else None, hidden=x)

    def _self_attention(self, li: int, L, h: Tensor, t0: int, t1: int) -> Tensor:
        state = self._state[li]
        if L.kind == "ssru":
            C = self.embed_dim
            u = F.linear(h, L.w_fused)
            gate = torch.sigmoid(u[:, :C] + L.b_forget)
            cells = self._ssru_scan(gate, u[:, C:], state[t0 - 1] if t0 else None)
            state[t0:t1] = cells
            return F.relu(cells)
        if L.kind == "aan":
            sums = self._aan_prefix_sum(h, state[t0 - 1] if t0 else None)
            state[t0:t1] = sums
            steps = torch.arange(t0 + 1, t1 + 1, dtype=h.dtype, device=h.device).unsqueeze(1)
            return L.fc2(F.relu(L.fc1(sums / steps)))
        n = t1 - t0
        qkv = F.linear(h, L.w_qkv, L.b_qkv).view(n, 3, L.heads, L.head_dim)
        state[0, :, t0:t1] = qkv[:, 1].transpose(0, 1)
        state[1, :, t0:t1] = qkv[:, 2].transpose(0, 1)
        mask = self._causal[t0:t1, :t1] if n > 1 else None
        a = _attend(qkv[:, 0].transpose(0, 1), state[0, :, :t1], state[1, :, :t1], mask)
        return F.linear(a.transpose(0, 1).reshape(n, L.heads * L.head_dim), L.w_o, L.b_o)

    # ------------------------------------------------------------------ helpers
    def output_layer(self, hidden: Tensor) -> Tensor:
        """Final features ``[n, C]`` -> vocabulary logits ``[n, V]``."""
        return F.linear(hidden, self.out_w, self.out_b)

    @property
    def vocab_size(self) -> int:
        return self.out_w.size(0)
