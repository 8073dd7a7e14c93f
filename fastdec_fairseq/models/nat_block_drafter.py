"""NAT block drafter of Generalized Aggressive Decoding (GAD, Xia et al.; Sections 3.1 / 3.2.1).

An encoder-decoder Transformer whose decoder self-attention is **bidirectional** (no causal mask).
Decoder input = ``[<pad>* , EOS(as BOS), y_1 .. y_p, <mask> * k]`` (LEFT-padded, so the k mask positions are
always the last k columns); the model predicts the k masked tokens ``y_{p+1} .. y_{p+k}`` in one forward pass.
There is no length predictor: the block is always k tokens (EOS may occur inside the block).

Registered names
    model ``nat_block_drafter``; archs ``nat_block_drafter`` (= base), ``nat_block_drafter_tiny``,
    ``nat_block_drafter_demo``, ``nat_block_drafter_base`` (Transformer-base 6+6 x 512/2048/8),
    ``nat_block_drafter_big`` (Transformer-big).

Inference helpers (no fairseq-generate needed)
    ``model.encode(src_tokens, src_lengths)`` -> encoder_out (reusable across calls; ``model.reorder_encoder_out``
    selects/reorders sentences), ``model.propose_block(encoder_out, prefix_tokens, k)`` -> LongTensor[B, k],
    (the "NAT drafter alone" rows decode with the engine: ``fastdec.engine.nat_drafter.drafter_alone_decode``).
"""
from __future__ import annotations

import logging
import os
from typing import Callable, Dict, List, Optional

import torch
from torch import Tensor

from fairseq import checkpoint_utils
from fairseq.models import register_model, register_model_architecture
from fairseq.models.transformer import TransformerModel
from fairseq.models.transformer.transformer_config import TransformerConfig
from fairseq.models.transformer.transformer_decoder import TransformerDecoderBase
from fairseq.models.transformer.transformer_legacy import base_architecture, transformer_vaswani_wmt_en_de_big

from .sizes import small_transformer_sizes

logger = logging.getLogger(__name__)

MASK_SYMBOL = "<mask>"
DRAFTER_ATTENTION = ("bidirectional", "prefix-causal")


def check_block_size(k: int, max_target_positions: Optional[int]) -> int:
    """Validate a block size: 1 <= k and BOS + k mask tokens fit in the decoder positions."""
    if isinstance(k, bool) or not isinstance(k, int):
        try:
            if int(k) != k:
                raise ValueError
            k = int(k)
        except (TypeError, ValueError):
            raise ValueError(f"block size k must be an integer, got {k!r}") from None
    if k < 1:
        raise ValueError(f"block size k must be >= 1, got k={k}")
    if max_target_positions is not None and k + 1 > max_target_positions:
        raise ValueError(
            f"block size k={k} is larger than the drafter supports: the decoder input holds BOS + k mask "
            f"tokens, so k must be <= max_target_positions - 1 = {max_target_positions - 1}"
        )
    return k


def left_align_padding(tokens: Tensor, pad: int) -> Tensor:
    """Move all pad symbols of each row to the left (works for right-, left- or un-padded input)."""
    is_pad = tokens.eq(pad)
    if not is_pad.any():
        return tokens
    # stable sort on (not pad): pads (0) first, tokens keep their order
    order = torch.sort((~is_pad).to(torch.int32), dim=1, stable=True).indices
    return tokens.gather(1, order)


def prefix_causal_mask(tokens: Tensor, block_size: int, pad: int, num_heads: int) -> Tensor:
    """Additive self-attention mask ``[B * heads, T, T]`` of the prefix-causal drafter.

    ``tokens`` ``[B, T]`` is a left-padded decoder input whose last ``block_size`` columns are the block. A prefix
    position attends to itself and the prefix before it (causal: its keys/values never change once computed, so an
    engine can cache them); a block position attends to the whole prefix and the whole block (bidirectional among
    the k masks). Padding rows attend to their row's first real token only: a row with every key masked would turn
    into NaN and, multiplied by a zero attention weight, poison every other row through the next layer's values.
    """
    bsz, T = tokens.shape
    i = torch.arange(T, device=tokens.device)
    allowed = (i[None, :] <= i[:, None]) | (i[:, None] >= T - block_size)  # [T, T]
    allowed = allowed.unsqueeze(0).repeat(bsz, 1, 1)
    is_pad = tokens.eq(pad)
    first = (~is_pad).to(torch.int32).argmax(1)  # the BOS column of each row
    allowed[is_pad] = False
    rows, cols = is_pad.nonzero(as_tuple=True)
    allowed[rows, cols, first[rows]] = True
    mask = torch.zeros(bsz, T, T, device=tokens.device)
    mask.masked_fill_(~allowed, float("-inf"))
    return mask.repeat_interleave(num_heads, dim=0)


class NATBlockDecoder(TransformerDecoderBase):
    """Transformer decoder of the drafter, no incremental state. Self-attention is bidirectional (the paper's
    drafter) or, with ``--drafter-attention prefix-causal``, causal over the prefix and bidirectional over the
    block of masks (:func:`prefix_causal_mask`): then the prefix can be cached, and a drafting pass costs O(k)."""

    def __init__(self, cfg, dictionary, embed_tokens, no_encoder_attn=False, prefix_causal: bool = False):
        super().__init__(cfg, dictionary, embed_tokens, no_encoder_attn=no_encoder_attn)
        self.prefix_causal = prefix_causal
        self._mask_input: Optional[tuple] = None  # (decoder input, block size) of the running forward

    def block_features(self, prev_output_tokens: Tensor, encoder_out, block_size: int) -> Tensor:
        """Final features ``[B, T, C]`` of a left-padded input whose last ``block_size`` columns are the block."""
        self._mask_input = (prev_output_tokens, block_size)
        try:
            return self.extract_features(prev_output_tokens, encoder_out=encoder_out)[0]
        finally:
            self._mask_input = None

    def buffered_future_mask(self, tensor):
        if self._mask_input is None:  # fairseq's own causal forward (not the drafter's block pass)
            return super().buffered_future_mask(tensor)
        tokens, block_size = self._mask_input
        mask = prefix_causal_mask(tokens, block_size, self.padding_idx, self.layers[0].self_attn.num_heads)
        return mask.to(device=tensor.device, dtype=tensor.dtype)

    def extract_features_scriptable(
        self,
        prev_output_tokens,
        encoder_out,
        incremental_state=None,
        full_context_alignment: bool = False,
        alignment_layer: Optional[int] = None,
        alignment_heads: Optional[int] = None,
    ):
        if incremental_state is not None:
            raise NotImplementedError(
                "nat_block_drafter has a bidirectional decoder and no incremental decoding; "
                "use propose_block() or fastdec.engine.nat_drafter.drafter_alone_decode() instead of fairseq's SequenceGenerator"
            )
        return super().extract_features_scriptable(
            prev_output_tokens,
            encoder_out,
            incremental_state=None,
            # bidirectional: no self-attention mask; prefix-causal: buffered_future_mask gives the mask
            full_context_alignment=not (self.prefix_causal and self._mask_input is not None),
            alignment_layer=alignment_layer,
            alignment_heads=alignment_heads,
        )


@register_model("nat_block_drafter")
class NATBlockDrafterModel(TransformerModel):
    """GAD's NAT drafter: predicts the next k tokens given source and target prefix, all in parallel."""

    def __init__(self, args, encoder, decoder):
        super().__init__(args, encoder, decoder)
        tgt_dict = decoder.dictionary
        if MASK_SYMBOL not in tgt_dict.indices:
            raise ValueError(
                f"nat_block_drafter needs a '{MASK_SYMBOL}' symbol in the target dictionary "
                "(use --task block_drafting, which adds it)"
            )
        self.mask_idx = tgt_dict.index(MASK_SYMBOL)
        self.pad_idx = tgt_dict.pad()
        self.eos_idx = tgt_dict.eos()
        self.num_updates = 0
        # --first-from-prefix: the first drafted token is read at the last prefix position, the rest at k-1 masks
        self.first_from_prefix = bool(getattr(args, "first_from_prefix", False))

    @classmethod
    def add_args(cls, parser):
        super().add_args(parser)
        parser.add_argument(
            "--init-encoder-from", type=str, metavar="CHECKPOINT", default=None,
            help="copy the encoder (and token/positional embeddings, output projection) from an AT verifier "
                 "checkpoint (same data-bin dictionary; the <mask> row stays randomly initialised). "
                 "Applied by the block_drafting task when a model is built for training, not when loading "
                 "a trained drafter.",
        )

        parser.add_argument(
            "--drafter-attention", choices=DRAFTER_ATTENTION, default="bidirectional",
            help="decoder self-attention: bidirectional over prefix and masks (the GAD paper), or prefix-causal: "
                 "causal over the prefix, bidirectional among the k masks (the engine caches the prefix, so a "
                 "drafting pass costs O(k) instead of O(prefix + k))",
        )
        parser.add_argument(
            "--freeze-encoder", action="store_true",
            help="keep the encoder as initialised (--init-encoder-from / --finetune-from-model: the verifier's): "
                 "no gradient reaches the encoder layers nor the embedding rows of the verifier's vocabulary, so "
                 "the engine reuses the verifier's encoder output instead of encoding the source again",
        )

        parser.add_argument(
            "--first-from-prefix", action="store_true",
            help="read the first of the k drafted tokens at the last prefix position (where the verifier it starts "
                 "from predicts its next token; causal with --drafter-attention prefix-causal) and the other k-1 at "
                 "k-1 masks, as Blockwise parallel decoding reads its first proposal from the base model; the "
                 "paper's drafter reads all k at k masks",
        )

    @classmethod
    def build_model(cls, args, task):
        nat_block_drafter_base(args)
        model = super().build_model(args, task)
        if getattr(args, "freeze_encoder", False):
            model.freeze_encoder(task.target_dictionary.index(MASK_SYMBOL))  # the rows before <mask>: the verifier's
        return model

    @classmethod
    def build_decoder(cls, args, tgt_dict, embed_tokens):
        return NATBlockDecoder(
            TransformerConfig.from_namespace(args), tgt_dict, embed_tokens, no_encoder_attn=False,
            prefix_causal=getattr(args, "drafter_attention", "bidirectional") == "prefix-causal",
        )

    def freeze_encoder(self, frozen_rows: int) -> None:
        """No training updates to the encoder: its layers get no gradient, its token embedding (shared with the
        decoder's under --share-all-embeddings) none on its first ``frozen_rows`` rows (the verifier's vocabulary;
        the ``<mask>`` row still trains)."""
        emb = self.encoder.embed_tokens.weight
        for p in self.encoder.parameters():
            if p is not emb:
                p.requires_grad_(False)

        def keep_rows(grad: Tensor) -> Tensor:
            grad = grad.clone()
            grad[:frozen_rows] = 0
            return grad

        emb.register_hook(keep_rows)

    # ------------------------------------------------------------------ training-time API

    def set_num_updates(self, num_updates):
        self.num_updates = num_updates
        super().set_num_updates(num_updates)

    def num_masks(self, block_size: int) -> int:
        """How many ``<mask>`` columns a decoder input for a block of ``block_size`` drafted tokens ends with."""
        return block_size - 1 if self.first_from_prefix else block_size

    def block_logits(self, encoder_out, decoder_input: Tensor, block_size: int) -> Tensor:
        """Logits [B, k, V] of the block: the last ``block_size`` columns of a left-padded decoder input that ends
        with :meth:`num_masks` masks (with ``--first-from-prefix`` the first of those columns is the last prefix
        token)."""
        feats = self.decoder.block_features(decoder_input, encoder_out, self.num_masks(block_size))
        return self.decoder.output_layer(feats[:, -block_size:, :])

    def forward(
        self,
        src_tokens,
        src_lengths,
        prev_output_tokens,
        block_size: Optional[int] = None,
        glance_fn: Optional[Callable[[Tensor, Tensor], Tensor]] = None,
        **kwargs,
    ):
        """Without ``block_size``: logits of every decoder position (bidirectional), like TransformerModel.

        With ``block_size=k``: ``prev_output_tokens`` must be left-padded with the :meth:`num_masks` mask positions last;
        returns ``(logits[B, k, V], {"decoder_input": final decoder input})``. If ``glance_fn`` is given
        (GLAT), a no-grad pass is run first and ``glance_fn(decoder_input, block_logits)`` returns the decoder
        input to train on (some masks replaced by gold tokens). One encoder pass is shared by both decoder
        passes and everything happens inside ``forward`` (so DDP wrappers see a single forward call).
        """
        if block_size is None:
            return super().forward(src_tokens, src_lengths, prev_output_tokens, **kwargs)
        encoder_out = self.encoder(src_tokens, src_lengths=src_lengths)
        if glance_fn is not None:
            with torch.no_grad():
                first = self.block_logits(encoder_out, prev_output_tokens, block_size)
            prev_output_tokens = glance_fn(prev_output_tokens, first)
        logits = self.block_logits(encoder_out, prev_output_tokens, block_size)
        return logits, {"decoder_input": prev_output_tokens}

    # ------------------------------------------------------------------ initialisation from the AT verifier

    def init_encoder_from_checkpoint(self, path: str) -> List[str]:
        """Copy encoder weights (+ embeddings / output projection) from an AT (fairseq transformer) checkpoint.

        Token-embedding-like matrices may have fewer rows in the checkpoint (the drafter's dictionary has the
        extra ``<mask>`` symbol): the first rows are copied, the remaining ones keep their initialisation.
        Raises ValueError on any other shape mismatch. Returns the list of copied parameter names.
        """
        if not os.path.isfile(path):
            raise FileNotFoundError(f"--init-encoder-from: no such checkpoint: {path}")
        state = checkpoint_utils.load_checkpoint_to_cpu(path)
        src_state: Dict[str, Tensor] = state["model"]
        self._check_dictionary_matches(state)
        own = self.state_dict()
        copied: List[str] = []
        row_keys = {"encoder.embed_tokens.weight", "decoder.embed_tokens.weight",
                    "decoder.output_projection.weight"}
        wanted = [k for k in own if k.startswith("encoder.")]
        wanted += [k for k in row_keys if k.startswith("decoder.") and k in own]
        if "decoder.embed_positions.weight" in own:  # learned decoder positions
            wanted.append("decoder.embed_positions.weight")
        with torch.no_grad():
            for key in wanted:
                mine = own[key]
                if key not in src_state:
                    if key.startswith("encoder.") and key in dict(self.named_parameters()):
                        raise ValueError(f"--init-encoder-from {path}: checkpoint has no parameter '{key}' "
                                         "(is it a fairseq transformer with the same encoder architecture?)")
                    continue
                theirs = src_state[key]
                if theirs.shape == mine.shape:
                    mine.copy_(theirs.to(mine.dtype))
                elif key in row_keys and theirs.dim() == 2 and theirs.shape[1] == mine.shape[1] \
                        and theirs.shape[0] <= mine.shape[0]:
                    mine[: theirs.shape[0]].copy_(theirs.to(mine.dtype))
                else:
                    raise ValueError(
                        f"--init-encoder-from {path}: shape mismatch for '{key}': checkpoint "
                        f"{tuple(theirs.shape)} vs drafter {tuple(mine.shape)} (encoder architecture and "
                        "embedding sizes must match the AT verifier)"
                    )
                copied.append(key)  # `own` tensors share storage with the parameters: copied in place
        logger.info("initialised %d tensors of nat_block_drafter from %s", len(copied), path)
        return copied

    def _check_dictionary_matches(self, state) -> None:
        """Best effort: compare the verifier's target dictionary (from its data-bin, if reachable)."""
        try:
            cfg = state.get("cfg")
            data = cfg["task"]["data"] if cfg is not None else getattr(state.get("args"), "data", None)
            tgt = cfg["task"]["target_lang"] if cfg is not None else getattr(state.get("args"), "target_lang")
            data = str(data).split(":")[0]
            if tgt is None:  # fairseq infers the languages from the data-bin's file names
                from fairseq.data import data_utils

                tgt = data_utils.infer_language_pair(data)[1]
            dict_path = os.path.join(data, f"dict.{tgt}.txt")
        except Exception:  # noqa: BLE001 - best effort only
            return
        if not os.path.isfile(dict_path):
            logger.warning("--init-encoder-from: cannot check the verifier dictionary (%s not found)", dict_path)
            return
        from fairseq.data import Dictionary

        theirs = Dictionary.load(dict_path)
        mine = self.decoder.dictionary
        n = len(theirs)
        if n > len(mine) or mine.symbols[:n] != theirs.symbols:
            raise ValueError(
                f"--init-encoder-from: the verifier's dictionary ({dict_path}) differs from the drafter's; "
                "train both on the same data-bin"
            )

    # ------------------------------------------------------------------ inference API

    def encode(self, src_tokens: Tensor, src_lengths: Optional[Tensor] = None):
        """Encode once; pass the result to as many ``propose_block`` calls as needed."""
        if src_lengths is None:
            src_lengths = src_tokens.ne(self.encoder.padding_idx).sum(1)
        return self.encoder(src_tokens, src_lengths=src_lengths)

    def reorder_encoder_out(self, encoder_out, new_order: Tensor):
        """Select / reorder sentences of a cached encoding (e.g. drop finished ones)."""
        return self.encoder.reorder_encoder_out(encoder_out, new_order)

    def propose_block(
        self,
        encoder_out,
        prefix_tokens: Optional[Tensor],
        k: int,
        return_logprobs: bool = False,
    ):
        """Argmax draft of the next k tokens, in one decoder pass.

        Args:
            encoder_out: output of :meth:`encode` (B sentences).
            prefix_tokens: LongTensor[B, L] decoder-side prefix **starting with EOS-as-BOS** (fairseq AT
                convention, e.g. ``tokens[:, :step + 1]`` of a greedy decoder); rows may be padded with
                ``<pad>`` on either side (different prefix lengths). ``None`` = BOS only.
            k: block size (number of mask tokens), 1 <= k <= max_target_positions - 1 - prefix length.
            return_logprobs: also return the log-probabilities [B, k, V].

        Returns:
            LongTensor[B, k] of drafted token ids (or ``(tokens, lprobs)``). Does not change train/eval mode;
            call ``model.eval()`` first.
        """
        max_pos = self.max_decoder_positions()
        k = check_block_size(k, max_pos)
        enc = encoder_out["encoder_out"][0]
        bsz, device = enc.size(1), enc.device
        if prefix_tokens is None:
            prefix_tokens = torch.full((bsz, 1), self.eos_idx, dtype=torch.long, device=device)
        if prefix_tokens.dim() != 2 or prefix_tokens.size(0) != bsz:
            raise ValueError(f"prefix_tokens must be [B={bsz}, L], got {tuple(prefix_tokens.shape)}")
        prefix_tokens = left_align_padding(prefix_tokens.to(device=device, dtype=torch.long), self.pad_idx)
        longest = int(prefix_tokens.ne(self.pad_idx).sum(1).max())
        if longest + k > max_pos:
            raise ValueError(
                f"prefix of {longest} tokens (incl. BOS) + k={k} masks exceeds the drafter's "
                f"max_target_positions={max_pos}"
            )
        prefix_tokens = prefix_tokens[:, prefix_tokens.size(1) - longest:]
        masks = prefix_tokens.new_full((bsz, self.num_masks(k)), self.mask_idx)
        decoder_input = torch.cat([prefix_tokens, masks], dim=1)
        logits = self.block_logits(encoder_out, decoder_input, k)
        # never draft <mask>, padding or BOS: no target sentence contains them (the AT verifier cannot emit them)
        banned = [self.mask_idx, self.pad_idx, self.decoder.dictionary.bos()]
        tokens = logits.index_fill(-1, torch.tensor(banned, device=logits.device), float("-inf")).argmax(-1)
        if return_logprobs:
            return tokens, torch.log_softmax(logits.float(), dim=-1)
        return tokens


# ---------------------------------------------------------------------- architectures


@register_model_architecture("nat_block_drafter", "nat_block_drafter")
def nat_block_drafter_base(args):
    """Transformer-base (6+6 layers, 512/2048/8), as used for the GAD drafter (paper Section 5.1)."""
    args.init_encoder_from = getattr(args, "init_encoder_from", None)
    args.drafter_attention = getattr(args, "drafter_attention", "bidirectional")
    args.freeze_encoder = getattr(args, "freeze_encoder", False)
    args.first_from_prefix = getattr(args, "first_from_prefix", False)
    base_architecture(args)


@register_model_architecture("nat_block_drafter", "nat_block_drafter_base")
def nat_block_drafter_base_arch(args):
    nat_block_drafter_base(args)


@register_model_architecture("nat_block_drafter", "nat_block_drafter_big")
def nat_block_drafter_big(args):
    """Transformer-big (6+6 layers, 1024/4096/16) for the GAD-big setting (paper Table 4)."""
    transformer_vaswani_wmt_en_de_big(args)
    nat_block_drafter_base(args)


@register_model_architecture("nat_block_drafter", "nat_block_drafter_demo")
def nat_block_drafter_demo(args):
    """Small CPU-trainable drafter for the demo config: 3+3 layers, 256/1024/4."""
    small_transformer_sizes(args, 256, 1024, 3, 4)
    nat_block_drafter_base(args)


@register_model_architecture("nat_block_drafter", "nat_block_drafter_tiny")
def nat_block_drafter_tiny(args):
    """Tiny drafter for tests: 2+2 layers, 64/128/2."""
    small_transformer_sizes(args, 64, 128, 2, 2)
    nat_block_drafter_base(args)


@register_model_architecture("nat_block_drafter", "nat_block_drafter_bart_base")
def nat_block_drafter_bart_base(args):
    """BART-base's architecture (6+6, 768/3072/12; learned positions, layernorm_embedding, GELU, no embedding scaling,
    shared embeddings): the drafter of a BART-base verifier (CNN-DM, Ge et al. Table 10), started from its weights."""
    from fairseq.models.bart.model import bart_base_architecture

    bart_base_architecture(args)
    nat_block_drafter_base(args)


@register_model_architecture("nat_block_drafter", "nat_block_drafter_bart_large")
def nat_block_drafter_bart_large(args):
    """BART-large's architecture (12+12, 1024/4096/16), as :func:`nat_block_drafter_bart_base`."""
    from fairseq.models.bart.model import bart_large_architecture

    bart_large_architecture(args)
    nat_block_drafter_base(args)
