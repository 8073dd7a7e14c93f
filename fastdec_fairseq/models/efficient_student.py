"""The efficient student of Hsu et al. (2020), "Efficient Inference For Neural Machine Translation".

``efficient_student`` is fairseq's ``transformer`` (same encoder, embeddings, encoder attention, output layer,
parameter names) whose decoder layers are :class:`~fastdec_fairseq.models.student_layers.StudentDecoderLayer`:

* ``--decoder-self-attn ssru|aan|attention``: SSRU (default), AAN without gate, or standard self-attention
  (the Transformer baseline of the paper's tables, e.g. for head pruning);
* ``--decoder-no-ffn``: no decoder feed-forward sub-layer (SSRU / AAN only);
* any ``--encoder-layers`` / ``--decoder-layers`` >= 1 (deep encoder, shallow decoder: Figure 2's grid);
* ``--head-gates``: a Hard Concrete gate per head of every encoder self-attention, encoder-decoder attention and
  (standard-attention decoders) decoder self-attention, trained with the ``l0_head_cross_entropy`` criterion;
* ``--encoder-heads`` / ``--enc-dec-heads`` / ``--decoder-self-heads`` ``N1,N2,..``: per-layer head counts of a
  pruned model (written by ``fastdec.tracks.students.prune``; the kept heads are stored first in each layer's weights).

It decodes with fairseq's own ``SequenceGenerator`` (SSRU / AAN keep fairseq incremental state: the last cell /
the running sum) and with the engine's :class:`fastdec.engine.student_verifier.StudentVerifier`.
A checkpoint without gates loads into a gated model (gates start mostly open), so the L0 phase fine-tunes a trained
student with ``--finetune-from-model``. Architectures: ``efficient_student`` (Transformer-base sizes),
``efficient_student_demo`` (256/1024, 4 heads) and ``efficient_student_tiny`` (fairseq's ``transformer_tiny``).
"""
from __future__ import annotations

from fairseq.models import register_model, register_model_architecture
from fairseq.models.transformer import TransformerConfig, TransformerDecoderBase, TransformerModel
from fairseq.models.transformer.transformer_legacy import base_architecture, tiny_architecture

from .head_gates import HardConcreteGate, attach_gate, parse_head_counts, shrink_heads
from .sizes import small_transformer_sizes
from .student_layers import SELF_ATTENTION_KINDS, StudentDecoderLayer

HEAD_COUNT_FLAGS = (("encoder_heads", "--encoder-heads"), ("enc_dec_heads", "--enc-dec-heads"),
                    ("decoder_self_heads", "--decoder-self-heads"))


class StudentDecoder(TransformerDecoderBase):
    def __init__(self, cfg, dictionary, embed_tokens, *, kind: str, use_ffn: bool, no_encoder_attn=False,
                 output_projection=None):
        self.student_kind, self.student_ffn = kind, use_ffn  # read by build_decoder_layer during super().__init__
        super().__init__(cfg, dictionary, embed_tokens, no_encoder_attn=no_encoder_attn,
                         output_projection=output_projection)

    def build_decoder_layer(self, cfg, no_encoder_attn=False):
        return StudentDecoderLayer(cfg, self.student_kind, self.student_ffn, no_encoder_attn=no_encoder_attn)


def check_student_args(args) -> None:
    """Clear errors for settings the student cannot have (before any module is built)."""
    for flag, name in (("--encoder-layers", "encoder_layers"), ("--decoder-layers", "decoder_layers")):
        depth = getattr(args, name)
        if isinstance(depth, bool) or not isinstance(depth, int) or depth < 1:
            raise ValueError(f"{flag} must be an integer >= 1 (a depth of 0 leaves no {name.split('_')[0]}), "
                             f"got {depth!r}")
    kind = args.decoder_self_attn
    if kind not in SELF_ATTENTION_KINDS:
        raise ValueError(f"--decoder-self-attn must be one of {SELF_ATTENTION_KINDS}, got {kind!r}")
    if args.decoder_no_ffn and kind == "attention":
        raise ValueError("--decoder-no-ffn needs --decoder-self-attn ssru or aan (the paper drops the FFN of the "
                         "lightweight decoders only)")
    if kind != "attention" and getattr(args, "decoder_self_heads", None):
        raise ValueError(f"--decoder-self-heads applies to standard self-attention only, not {kind!r}")
    if getattr(args, "cross_self_attention", False) or getattr(args, "no_cross_attention", False):
        raise ValueError("efficient_student needs plain encoder-decoder attention (no cross_self_attention / "
                         "no_cross_attention)")


@register_model("efficient_student")
class EfficientStudentModel(TransformerModel):
    """See the module docstring."""

    @classmethod
    def add_args(cls, parser):
        super().add_args(parser)
        parser.add_argument("--decoder-self-attn", choices=SELF_ATTENTION_KINDS,
                            help="decoder self-attention: ssru (default), aan (average attention, no gate) or "
                                 "attention (standard multi-head)")
        parser.add_argument("--decoder-no-ffn", action="store_true", help="drop the decoder feed-forward sub-layer")
        parser.add_argument("--head-gates", action="store_true",
                            help="Hard Concrete gate per attention head (L0 pruning; criterion l0_head_cross_entropy)")
        parser.add_argument("--head-gate-scale", type=float, metavar="S",
                            help="log_alpha = S * parameter: S > 1 lets a short L0 phase close gates (default 1)")
        for _, flag in HEAD_COUNT_FLAGS:
            parser.add_argument(flag, type=str, metavar="N1,N2,..", help="heads per layer of a pruned model")
        parser.add_argument("--heads-from", type=str, metavar="CHECKPOINT",
                            help="copy the per-layer head counts not given here from this pruned checkpoint "
                                 "(fine-tuning after pruning: pass it to --finetune-from-model too)")

    @classmethod
    def build_decoder(cls, args, tgt_dict, embed_tokens):
        cfg = TransformerConfig.from_namespace(args)
        return StudentDecoder(cfg, tgt_dict, embed_tokens, kind=args.decoder_self_attn,
                              use_ffn=not args.decoder_no_ffn, no_encoder_attn=cfg.no_cross_attention)

    @classmethod
    def build_model(cls, args, task):
        efficient_student_architecture(args)
        check_student_args(args)
        model = super().build_model(args, task)
        for attn, flag, layer in model.attention_modules():
            n = parse_head_counts(getattr(args, flag[2:].replace("-", "_")), len(model.attention_layers(flag)),
                                  attn.num_heads, flag)[layer]
            shrink_heads(attn, range(n), what=f"{flag} layer {layer}")
        if args.head_gates:
            for attn, _, _ in model.attention_modules():
                attach_gate(attn, args.head_gate_scale)
        return model

    # ------------------------------------------------------------------ heads
    def attention_layers(self, flag: str):
        return self.encoder.layers if flag == "--encoder-heads" else self.decoder.layers

    def attention_modules(self):
        """``(MultiheadAttention, head-count flag, layer index)`` of every prunable attention."""
        for i, layer in enumerate(self.encoder.layers):
            yield layer.self_attn, "--encoder-heads", i
        for i, layer in enumerate(self.decoder.layers):
            yield layer.encoder_attn, "--enc-dec-heads", i
        for i, layer in enumerate(self.decoder.layers):
            if layer.kind == "attention":
                yield layer.self_attn, "--decoder-self-heads", i

    def head_gates(self):
        return [m for m in self.modules() if isinstance(m, HardConcreteGate)]

    def load_state_dict(self, state_dict, strict=True, model_cfg=None, args=None):
        """A checkpoint without head gates (the student before its L0 phase) loads into a gated model."""
        own = self.state_dict()
        missing = {k: v for k, v in own.items() if k.endswith("head_gate.log_alpha") and k not in state_dict}
        if missing:
            state_dict = {**state_dict, **missing}
        return super().load_state_dict(state_dict, strict=strict, model_cfg=model_cfg, args=args)


def _copy_head_counts(args) -> None:
    """Head counts of ``--heads-from`` (a checkpoint written by fastdec.tracks.students.prune) not given explicitly."""
    path = getattr(args, "heads_from", None)
    if not path or all(getattr(args, name, None) for name, _ in HEAD_COUNT_FLAGS):
        return
    import os

    from fairseq import checkpoint_utils

    if not os.path.isfile(path):
        raise FileNotFoundError(f"--heads-from checkpoint not found: {path} (write it with fastdec.tracks.students.prune)")
    state = checkpoint_utils.load_checkpoint_to_cpu(path)
    saved = state["cfg"]["model"] if state.get("cfg") is not None else state["args"]
    for name, _ in HEAD_COUNT_FLAGS:
        if not getattr(args, name, None):
            setattr(args, name, getattr(saved, name, None) if not isinstance(saved, dict) else saved.get(name))


def _student_defaults(args):
    args.heads_from = getattr(args, "heads_from", None)
    args.decoder_self_attn = getattr(args, "decoder_self_attn", None) or "ssru"
    args.decoder_no_ffn = getattr(args, "decoder_no_ffn", False)
    args.head_gates = getattr(args, "head_gates", False)
    args.head_gate_scale = getattr(args, "head_gate_scale", None) or 1.0
    for name, _ in HEAD_COUNT_FLAGS:
        setattr(args, name, getattr(args, name, None))
    _copy_head_counts(args)


@register_model_architecture("efficient_student", "efficient_student")
def efficient_student_architecture(args):
    _student_defaults(args)
    base_architecture(args)


@register_model_architecture("efficient_student", "efficient_student_demo")
def efficient_student_demo(args):
    small_transformer_sizes(args, 256, 1024, 3, 4)
    efficient_student_architecture(args)


@register_model_architecture("efficient_student", "efficient_student_tiny")
def efficient_student_tiny(args):
    _student_defaults(args)
    tiny_architecture(args)
