"""Combined scoring and proposal Transformer of Stern et al. (2018), "Blockwise Parallel Decoding".

``blockwise_transformer`` is fairseq's ``transformer`` (same encoder, decoder, parameter names and
standard ``forward``) with ONE extra feed-forward layer on top of the decoder's final hidden state
(Sec. 6 / Fig. 3 of the paper)::

    h                                    decoder features (after the final layer norm / project_out_dim,
                                         i.e. exactly what ``decoder.output_projection`` normally sees)
    u   = ReLU(W1 h + b1)                hidden size k * d_hidden   (d_hidden = --decoder-ffn-embed-dim)
    o   = W2 u + b2                      output size n * d_model    (d_model  = --decoder-output-dim)
    s_j = h + o_j          j = 1..n      residual from the layer's input to each of its n outputs
    p_* = softmax(output_projection(s_j))  the ORIGINAL (possibly tied) vocabulary projection

p_1 (the scoring model) -- the choice made here
-----------------------------------------------
The paper sends all k outputs through the new layer, so its p_1 differs from the base model even when
the base is frozen (its footnote 1: "Using an identity transformation for p_1 instead would result in
identical BLEU scores").  By DEFAULT this implementation takes that identity path for p_1::

    p_1 = softmax(output_projection(h))            (no extra layer: n = k - 1 layer outputs for p_2..p_k)

so p_1 IS the decoder's standard output layer: ``model(...)``, ``decoder.output_layer``,
``get_normalized_probs``, fairseq-generate, the engine's Verifier and ``score_logits`` all compute the
very same p_1, and with ``--freeze-base`` p_1 is bit-for-bit the base AT model.  The layer keeps the
paper's hidden size k * d_hidden; only the (unused) p_1 output block is dropped.

``--p1-through-layer`` gives the paper-faithful variant (n = k outputs, p_1 = projection of s_1).  To keep
a single p_1 everywhere, the decoder's ``output_layer`` is then overridden to return that p_1, so the
standard forward / fairseq-generate / Verifier still score with exactly ``score_logits``.
The second output weight W2 (and b2) is zero-initialised, so at the start every head equals the base
model's next-token distribution (and with ``--p1-through-layer`` p_1 starts identical to the base).

Decoding API (for an engine that already ran the decoder and holds its final features [B, T, C]):

* ``score_logits(features)     -> [B, T, V]``     p_1 logits (== ``decoder.output_layer(features)``)
* ``heads_from_features(features) -> [B, T, k, V]`` logits of p_1..p_k; ``[..., 0, :]`` is bitwise
  ``score_logits(features)``; ``[..., i-1, :]`` at position t predicts the token i-1 steps after the
  token p_1 predicts at t (i.e. target position t + i - 1).
* ``proposal_logits(features)  -> [B, T, k-1, V]`` p_2..p_k only (skips re-projecting p_1).
* ``head_logits(features, i)   -> [B, T, V]``     one head (training: the paper's memory trick).

Flags: ``--block-size K`` (k >= 1), ``--load-base CKPT`` (initialise encoder/decoder from a trained AT
``transformer`` checkpoint; also accepts a blockwise checkpoint, whose head is ignored), ``--freeze-base``
(only the new layer trains; the paper's "regular" setting) vs. fine-tuning (default), ``--p1-through-layer``.
Architectures: ``blockwise_transformer`` (= fairseq ``transformer`` sizes), ``blockwise_transformer_base``,
``blockwise_transformer_tiny`` (= ``transformer_tiny``), ``blockwise_transformer_demo`` (256/1024, 3+3 layers,
4 heads) and ``blockwise_transformer_from_base`` (copies every architecture setting not given on the command
line from the ``--load-base`` checkpoint, so the sizes always match the base).
Use the standard ``translation`` task and the ``blockwise_cross_entropy`` criterion.
"""
from __future__ import annotations

import logging
import os
import sys
from typing import List, Optional

import torch
import torch.nn as nn
import torch.nn.functional as F
from torch import Tensor

from fairseq.models import register_model, register_model_architecture
from fairseq.models.transformer import TransformerConfig, TransformerDecoderBase, TransformerModel
from fairseq.models.transformer.transformer_legacy import base_architecture, tiny_architecture
from fairseq.modules import FairseqDropout

from .sizes import small_transformer_sizes

logger = logging.getLogger(__name__)

HEAD_PREFIX = "decoder.blockwise_head."

# Settings that change the base network's parameters or computation.  They must agree between the
# --load-base checkpoint and this model; ``blockwise_transformer_from_base`` copies them from the base.
ARCH_FIELDS = (
    "encoder_embed_dim", "encoder_ffn_embed_dim", "encoder_layers", "encoder_attention_heads",
    "encoder_normalize_before", "encoder_learned_pos",
    "decoder_embed_dim", "decoder_ffn_embed_dim", "decoder_layers", "decoder_attention_heads",
    "decoder_normalize_before", "decoder_learned_pos", "decoder_output_dim", "decoder_input_dim",
    "activation_fn", "share_decoder_input_output_embed", "share_all_embeddings", "merge_src_tgt_embed",
    "no_token_positional_embeddings", "no_scale_embedding", "layernorm_embedding", "adaptive_input",
    "no_cross_attention", "cross_self_attention",
)
# copied by blockwise_transformer_from_base as well, but not compared (no effect on parameters)
_INHERIT_ONLY = ("max_source_positions", "max_target_positions")


def _check_block_size(k) -> int:
    if isinstance(k, bool) or not isinstance(k, int):
        raise ValueError(f"--block-size must be a positive integer k >= 1, got {k!r}")
    if k < 1:
        raise ValueError(
            f"--block-size must be >= 1 (k = number of predicted positions p_1..p_k, k = 1 is the plain "
            f"scoring model), got {k}"
        )
    return k


class BlockwiseHead(nn.Module):
    """The single multi-output feed-forward layer with residual connections (paper Fig. 3).

    ``forward(h) -> [..., n, d_model]``: the n residual outputs ``h + W2_j ReLU(W1 h)``.  With
    ``p1_through_layer`` n = k and output j is head j + 1's state; otherwise n = k - 1 and output j
    is head j + 2's state (p_1 takes the identity path).
    """

    def __init__(self, d_model: int, d_hidden: int, block_size: int, p1_through_layer: bool = False,
                 dropout: float = 0.0, activation_dropout: float = 0.0):
        super().__init__()
        self.block_size = _check_block_size(block_size)
        self.p1_through_layer = bool(p1_through_layer)
        self.d_model = int(d_model)
        self.d_hidden = int(d_hidden)
        self.num_outputs = self.block_size if self.p1_through_layer else self.block_size - 1
        if self.num_outputs > 0:
            self.fc1 = nn.Linear(self.d_model, self.block_size * self.d_hidden)
            self.fc2 = nn.Linear(self.block_size * self.d_hidden, self.num_outputs * self.d_model)
            nn.init.xavier_uniform_(self.fc1.weight)
            nn.init.zeros_(self.fc1.bias)
            nn.init.zeros_(self.fc2.weight)  # every head starts as the base next-token distribution
            nn.init.zeros_(self.fc2.bias)
        else:
            self.fc1 = self.fc2 = None
        self.dropout_module = FairseqDropout(dropout, module_name=self.__class__.__name__)
        self.activation_dropout_module = FairseqDropout(activation_dropout, module_name=self.__class__.__name__)

    def slot(self, head: int) -> Optional[int]:
        """Index of head ``head`` (1-based) among the layer outputs; None for p_1 on the identity path."""
        if not 1 <= head <= self.block_size:
            raise ValueError(f"head index must be in 1..{self.block_size}, got {head}")
        if self.p1_through_layer:
            return head - 1
        return None if head == 1 else head - 2

    def _hidden(self, h: Tensor) -> Tensor:
        return self.activation_dropout_module(F.relu(self.fc1(h)))

    def forward(self, h: Tensor) -> Tensor:
        if self.num_outputs == 0:
            return h.new_zeros(h.shape[:-1] + (0, h.size(-1)))
        out = self.fc2(self._hidden(h)).view(h.shape[:-1] + (self.num_outputs, self.d_model))
        return h.unsqueeze(-2) + self.dropout_module(out)

    def forward_slot(self, h: Tensor, slot: int) -> Tensor:
        """Output ``slot`` only (``[..., d_model]``), without computing the other output blocks."""
        lo, hi = slot * self.d_model, (slot + 1) * self.d_model
        out = F.linear(self._hidden(h), self.fc2.weight[lo:hi], self.fc2.bias[lo:hi])
        return h + self.dropout_module(out)

    def extra_repr(self) -> str:
        return (f"block_size={self.block_size}, p1_through_layer={self.p1_through_layer}, "
                f"hidden={self.block_size}x{self.d_hidden}, outputs={self.num_outputs}x{self.d_model}")


class BlockwiseTransformerDecoder(TransformerDecoderBase):
    """fairseq's Transformer decoder plus the blockwise head (attached by the model's ``build_model``)."""

    def __init__(self, cfg, dictionary, embed_tokens, no_encoder_attn=False, output_projection=None):
        super().__init__(cfg, dictionary, embed_tokens, no_encoder_attn=no_encoder_attn,
                         output_projection=output_projection)
        self.blockwise_head: Optional[BlockwiseHead] = None

    # -- helpers -----------------------------------------------------------------------------------
    def _head(self) -> BlockwiseHead:
        if self.blockwise_head is None:
            raise RuntimeError("blockwise head not attached (build the model with BlockwiseTransformerModel.build_model)")
        return self.blockwise_head

    def _project(self, x: Tensor) -> Tensor:
        """The ORIGINAL vocabulary projection (shared by all heads)."""
        return TransformerDecoderBase.output_layer(self, x)

    @property
    def block_size(self) -> int:
        return self._head().block_size

    # -- p_1: the scoring model --------------------------------------------------------------------
    def output_layer(self, features):
        head = self.blockwise_head
        if head is not None and head.p1_through_layer:
            return self.score_logits(features)
        return self._project(features)

    def score_logits(self, features: Tensor) -> Tensor:
        head = self._head()
        if not head.p1_through_layer:
            return self._project(features)
        return self._project(head(features)[..., 0, :])

    # -- proposals ---------------------------------------------------------------------------------
    def heads_from_features(self, features: Tensor) -> Tensor:
        head = self._head()
        if head.p1_through_layer:
            states = head(features)
            first, rest = states[..., 0, :], states[..., 1:, :]
        else:
            first, rest = features, head(features)
        p1 = self._project(first).unsqueeze(-2)
        if rest.size(-2) == 0:
            return p1
        return torch.cat([p1, self._project(rest)], dim=-2)

    def proposal_logits(self, features: Tensor) -> Tensor:
        head = self._head()
        states = head(features)
        if head.p1_through_layer:
            states = states[..., 1:, :]
        if states.size(-2) == 0:
            return states.new_zeros(states.shape[:-1] + (len(self.dictionary),))
        return self._project(states)

    def head_logits(self, features: Tensor, i: int) -> Tensor:
        head = self._head()
        slot = head.slot(int(i))
        if slot is None:
            return self._project(features)
        return self._project(head.forward_slot(features, slot))


@register_model("blockwise_transformer")
class BlockwiseTransformerModel(TransformerModel):
    """``transformer`` + Stern et al.'s multi-output head; see the module docstring."""

    @classmethod
    def add_args(cls, parser):
        super().add_args(parser)
        parser.add_argument("--block-size", type=int, metavar="K",
                            help="k: number of heads p_1..p_k (p_1 = next token, p_i = i-1 tokens further); k >= 1")
        parser.add_argument("--load-base", type=str, metavar="CHECKPOINT",
                            help="initialise encoder/decoder from this trained AT transformer checkpoint "
                                 "(skipped when a blockwise checkpoint is being restored by load_model_ensemble)")
        parser.add_argument("--freeze-base", action="store_true",
                            help="freeze all base parameters; only the new feed-forward layer trains")
        parser.add_argument("--p1-through-layer", action="store_true",
                            help="paper-faithful: p_1 also goes through the new layer (default: p_1 = base "
                                 "output projection of the decoder features, identity path)")

    @classmethod
    def build_decoder(cls, args, tgt_dict, embed_tokens):
        cfg = TransformerConfig.from_namespace(args)
        return BlockwiseTransformerDecoder(cfg, tgt_dict, embed_tokens, no_encoder_attn=cfg.no_cross_attention)

    @classmethod
    def build_model(cls, args, task):
        blockwise_base_architecture(args)
        k = _check_block_size(args.block_size)
        if getattr(args, "freeze_base", False) and k == 1 and not getattr(args, "p1_through_layer", False):
            raise ValueError(
                "--freeze-base with --block-size 1 leaves nothing to train (p_1 is the frozen base output "
                "projection); use k >= 2 or --p1-through-layer"
            )
        if getattr(args, "adaptive_softmax_cutoff", None):
            raise ValueError("blockwise_transformer needs a plain output projection; --adaptive-softmax-cutoff is not supported")
        base_state = None
        load_base = getattr(args, "load_base", None)
        if load_base:
            if _restoring_from_checkpoint():
                logger.info("restoring a blockwise checkpoint: --load-base %s is not re-read", load_base)
            else:
                base_state = _read_checkpoint(load_base)
                _check_arch_matches(args, base_state, load_base)
        model = super().build_model(args, task)
        head = BlockwiseHead(
            d_model=args.decoder_output_dim, d_hidden=args.decoder_ffn_embed_dim, block_size=k,
            p1_through_layer=getattr(args, "p1_through_layer", False),
            dropout=args.dropout, activation_dropout=getattr(args, "activation_dropout", 0.0),
        )
        model.decoder.blockwise_head = head
        if base_state is not None:
            model.load_base_state(base_state["model"], source=load_base)
        if getattr(args, "freeze_base", False):
            if not load_base:
                logger.warning("--freeze-base without --load-base freezes a randomly initialised base model")
            model.freeze_base()
        return model

    # -- weights -------------------------------------------------------------------------------------
    def load_base_state(self, state_dict, source: str = "<state dict>"):
        """Copy the encoder/decoder weights of a trained AT transformer (a blockwise state's head is ignored)."""
        state_dict = {k: v for k, v in state_dict.items() if not k.startswith(HEAD_PREFIX)}
        self.upgrade_state_dict(state_dict)
        missing, unexpected = nn.Module.load_state_dict(self, state_dict, strict=False)
        missing = [k for k in missing if not k.startswith(HEAD_PREFIX)]
        if missing or unexpected:
            raise ValueError(
                f"--load-base {source} does not match this architecture: missing {missing[:10]}, "
                f"unexpected {list(unexpected)[:10]}"
            )
        logger.info("initialised encoder/decoder from %s", source)

    def base_parameters(self) -> List[nn.Parameter]:
        return [p for n, p in self.named_parameters() if not n.startswith(HEAD_PREFIX)]

    def head_parameters(self) -> List[nn.Parameter]:
        return [p for n, p in self.named_parameters() if n.startswith(HEAD_PREFIX)]

    def freeze_base(self):
        for p in self.base_parameters():
            p.requires_grad_(False)

    @property
    def base_frozen(self) -> bool:
        return not any(p.requires_grad for p in self.base_parameters())

    # -- heads -----------------------------------------------------------------------------------------
    @property
    def block_size(self) -> int:
        return self.decoder.block_size

    @property
    def p1_through_layer(self) -> bool:
        return self.decoder.blockwise_head.p1_through_layer

    def trainable_heads(self) -> List[int]:
        """Heads whose loss depends on a trainable parameter (p_1 is constant when frozen on the identity path)."""
        heads = list(range(1, self.block_size + 1))
        if self.base_frozen and not self.p1_through_layer:
            heads = heads[1:]
        return heads

    def score_logits(self, features: Tensor) -> Tensor:
        """p_1 logits [B, T, V] from decoder features [B, T, C]; identical to the standard forward's output."""
        return self.decoder.score_logits(features)

    def heads_from_features(self, features: Tensor) -> Tensor:
        """Logits [B, T, k, V] of p_1..p_k; ``[..., 0, :]`` is exactly ``score_logits(features)``."""
        return self.decoder.heads_from_features(features)

    def proposal_logits(self, features: Tensor) -> Tensor:
        """Logits [B, T, k-1, V] of p_2..p_k."""
        return self.decoder.proposal_logits(features)

    def head_logits(self, features: Tensor, i: int) -> Tensor:
        """Logits [B, T, V] of head p_i (1-based) only."""
        return self.decoder.head_logits(features, i)


# -- helpers ------------------------------------------------------------------------------------------

def _restoring_from_checkpoint() -> bool:
    """True when fairseq's checkpoint_utils.load_model_ensemble_and_task is building this model: the
    weights are loaded from the blockwise checkpoint right after, so --load-base is neither needed nor
    required to still exist."""
    frame = sys._getframe(1)
    while frame is not None:
        if (frame.f_code.co_name == "load_model_ensemble_and_task"
                and frame.f_globals.get("__name__") == "fairseq.checkpoint_utils"):
            return True
        frame = frame.f_back
    return False


def _read_checkpoint(path: str) -> dict:
    from fairseq import checkpoint_utils

    if not os.path.exists(path):
        raise FileNotFoundError(f"--load-base checkpoint not found: {path}")
    return checkpoint_utils.load_checkpoint_to_cpu(path)


def _checkpoint_model_args(state: dict):
    cfg = state.get("cfg")
    if cfg is not None and cfg.get("model") is not None:
        return cfg["model"]
    if state.get("args") is not None:
        return state["args"]
    raise ValueError("checkpoint has neither cfg.model nor args")


def _arch_value(args, name):
    value = getattr(args, name, None)
    if name == "share_decoder_input_output_embed":
        value = bool(value) or bool(getattr(args, "share_all_embeddings", False))
    elif isinstance(value, bool) or value is None:
        value = bool(value)
    return value


def _check_arch_matches(args, state: dict, source: str):
    base = _checkpoint_model_args(state)
    diffs = [f"{n}: model {_arch_value(args, n)!r} vs base {_arch_value(base, n)!r}"
             for n in ARCH_FIELDS if _arch_value(args, n) != _arch_value(base, n)]
    if diffs:
        raise ValueError(
            f"--load-base {source}: architecture differs from the base checkpoint ({'; '.join(diffs)}). "
            f"Use --arch blockwise_transformer_from_base to copy the base's settings."
        )


# -- architectures ---------------------------------------------------------------------------------------

def _blockwise_defaults(args):
    args.block_size = getattr(args, "block_size", 4)
    args.load_base = getattr(args, "load_base", None)
    args.freeze_base = getattr(args, "freeze_base", False)
    args.p1_through_layer = getattr(args, "p1_through_layer", False)


@register_model_architecture("blockwise_transformer", "blockwise_transformer")
def blockwise_base_architecture(args):
    _blockwise_defaults(args)
    base_architecture(args)


@register_model_architecture("blockwise_transformer", "blockwise_transformer_base")
def blockwise_transformer_base(args):
    blockwise_base_architecture(args)


@register_model_architecture("blockwise_transformer", "blockwise_transformer_tiny")
def blockwise_transformer_tiny(args):
    _blockwise_defaults(args)
    tiny_architecture(args)


@register_model_architecture("blockwise_transformer", "blockwise_transformer_demo")
def blockwise_transformer_demo(args):
    small_transformer_sizes(args, 256, 1024, 3, 4)
    blockwise_base_architecture(args)


@register_model_architecture("blockwise_transformer", "blockwise_transformer_from_base")
def blockwise_transformer_from_base(args):
    """Every architecture setting not given explicitly is copied from the --load-base checkpoint."""
    path = getattr(args, "load_base", None)
    wanted = [n for n in ARCH_FIELDS + _INHERIT_ONLY if not hasattr(args, n)]
    if wanted:
        if not path:
            raise ValueError("--arch blockwise_transformer_from_base needs --load-base CHECKPOINT")
        base = _checkpoint_model_args(_read_checkpoint(path))
        for n in wanted:
            if getattr(base, n, None) is not None:
                setattr(args, n, getattr(base, n))
    blockwise_base_architecture(args)
