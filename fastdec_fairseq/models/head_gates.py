"""Hard Concrete head gates (Louizos et al. 2018) for L0 head pruning (Voita et al. 2019; Hsu et al. 2020 Sec. 2.5).

A :class:`HardConcreteGate` is attached to a fairseq ``MultiheadAttention`` as its submodule ``head_gate``; a
forward pre-hook on the attention's ``out_proj`` multiplies each head's output by its gate ``g_i`` before the output
projection (fairseq's fused PyTorch fast path reads ``out_proj.weight`` directly, so gated attentions take fairseq's
own slow path: ``skip_embed_dim_check``). Training samples the stretched, clamped concrete variable; evaluation uses
its deterministic value ``clamp(sigmoid(log_alpha) (zeta - gamma) + gamma, 0, 1)``, which is exactly 0 for a head
the L0 penalty switched off. ``expected_open`` is the paper's Eq. 3 term ``1 - P(g_i = 0)``.

:func:`shrink_heads` cuts an attention down to the heads in ``keep`` (smaller projections, not a mask) through
fairseq's own ``MultiheadAttention._adaptive_prune_heads``.
"""
from __future__ import annotations

import math
from typing import Sequence

import torch
import torch.nn as nn
from torch import Tensor

# Louizos et al. (2018) / Voita et al. (2019) constants: temperature beta and the stretch interval (gamma, zeta)
BETA, GAMMA, ZETA = 2.0 / 3.0, -0.1, 1.1


class HardConcreteGate(nn.Module):
    """``scale`` multiplies the stored parameter (log_alpha = scale * parameter): Adam moves a parameter by about
    the learning rate per update whatever its gradient, so a short L0 phase (the CPU demo: hundreds of updates)
    needs ``scale`` > 1 for a gate to travel from open (log_alpha 2) to exactly closed (log_alpha < -2.4)."""

    def __init__(self, num_heads: int, head_dim: int, init_log_alpha: float = 2.0, scale: float = 1.0):
        super().__init__()
        if not scale > 0:
            raise ValueError(f"--head-gate-scale must be > 0, got {scale}")
        self.num_heads, self.head_dim, self.scale = int(num_heads), int(head_dim), float(scale)
        # starts mostly open: sigmoid(2) * 1.2 - 0.1 ~ 0.95
        self.log_alpha = nn.Parameter(torch.full((self.num_heads,), float(init_log_alpha) / self.scale))

    def alpha(self) -> Tensor:
        return self.log_alpha * self.scale if self.scale != 1.0 else self.log_alpha

    def forward(self) -> Tensor:
        """Gate values ``[H]``: a sample while training, the deterministic value in eval mode."""
        log_alpha = self.alpha()
        if self.training:
            u = torch.rand_like(log_alpha).clamp(1e-6, 1 - 1e-6)
            s = torch.sigmoid((torch.log(u) - torch.log1p(-u) + log_alpha) / BETA)
        else:
            s = torch.sigmoid(log_alpha)
        return (s * (ZETA - GAMMA) + GAMMA).clamp(0.0, 1.0)

    def expected_open(self) -> Tensor:
        """``sum_i 1 - P(g_i = 0 | log_alpha_i)`` (Eq. 3): the differentiable count of open heads."""
        return torch.sigmoid(self.alpha() - BETA * math.log(-GAMMA / ZETA)).sum()

    def scale_heads(self, module, inputs):
        """Forward pre-hook of ``out_proj``: input ``[..., H * D]`` times each head's gate."""
        (x,) = inputs
        g = self().to(x.dtype).repeat_interleave(self.head_dim)
        return (x * g,)


def attach_gate(attn, scale: float = 1.0) -> HardConcreteGate:
    """Give a fairseq MultiheadAttention a head gate (idempotent)."""
    if getattr(attn, "head_gate", None) is None:
        gate = HardConcreteGate(attn.num_heads, attn.head_dim, scale=scale).to(attn.out_proj.weight.device)
        attn.head_gate = gate
        attn._head_gate_hook = attn.out_proj.register_forward_pre_hook(gate.scale_heads)
        attn.skip_embed_dim_check = True  # fairseq's slow path calls out_proj (and so the hook)
    return attn.head_gate


def detach_gate(attn) -> None:
    """Remove the gate (and its hook) of an attention, e.g. after its values were folded into the weights."""
    if getattr(attn, "head_gate", None) is not None:
        attn._head_gate_hook.remove()
        del attn.head_gate
        del attn._head_gate_hook


def shrink_heads(attn, keep: Sequence[int], *, what: str = "attention") -> None:
    """Keep only the heads ``keep`` (ascending, at least one) of a fairseq MultiheadAttention."""
    keep = sorted(int(h) for h in keep)
    if not keep:
        raise ValueError(f"{what}: pruning would remove every head of this layer; lower the L0 penalty (lambda) "
                         f"or keep at least one head per layer")
    if keep[0] < 0 or keep[-1] >= attn.num_heads:
        raise ValueError(f"{what}: head indices {keep} outside 0..{attn.num_heads - 1}")
    if len(keep) == attn.num_heads:
        return
    D = attn.head_dim
    attn._adaptive_prune_heads([(h * D, (h + 1) * D) for h in keep])
    attn.skip_embed_dim_check = True


def parse_head_counts(value, layers: int, full: int, flag: str):
    """``"4,2,3"`` (one count per layer) -> list of ints; None/"" -> every layer keeps ``full`` heads."""
    if value is None or value == "":
        return [full] * layers
    counts = [int(v) for v in str(value).split(",")] if not isinstance(value, (list, tuple)) else list(value)
    if len(counts) != layers:
        raise ValueError(f"{flag} {value!r}: {len(counts)} counts for {layers} layers (one per layer)")
    for c in counts:
        if not 1 <= c <= full:
            raise ValueError(f"{flag} {value!r}: every layer keeps 1..{full} heads")
    return counts
