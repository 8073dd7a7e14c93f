"""The autoregressive verifier: a fairseq encoder-decoder Transformer with a rollback-able KV cache.

fairseq's own incremental decoding feeds exactly one token per step (it slices
``prev_output_tokens[:, -1:]``), and its cache cannot be truncated. Aggressive decoding needs
both: score ``[last accepted token] + draft`` (several tokens) in ONE decoder pass, then drop the
cache entries of the rejected draft tokens. :class:`Verifier` therefore re-implements the
decoder forward pass on top of the weights of a loaded fairseq ``TransformerModel`` (no fork
of fairseq; the encoder is run by fairseq itself):

* the encoder runs once per sentence; the encoder-attention keys/values of every decoder layer
  are projected once per sentence (one matmul for all layers);
* the decoder self-attention keys/values live in preallocated tensors ``[layers, 1, heads, T, d]``;
  :meth:`Verifier.forward` appends ``n >= 1`` tokens (causal mask inside the block, positions
  continuing from the cached length) and :meth:`Verifier.rollback` truncates to any length by
  moving an integer;
* every call returns the logits (log-probabilities on demand) *and* the decoder's final
  features (after the final layer norm / ``project_out_dim``, before the output projection) of
  the new positions, so a drafter that reads hidden states (Blockwise heads) can use the same pass.

Supported decoder options: post-norm and pre-norm (``normalize_before``), learned / sinusoidal /
no positional embeddings, shared or separate input/output embeddings, ``no_scale_embedding``,
``layernorm_embedding``, ``project_in_dim`` / ``project_out_dim``, ``no_decoder_final_norm``,
any activation function, and the NormFormer extras (``scale_attn``, ``scale_fc``,
``scale_heads``, ``scale_resids``). Dropout is never applied. Unsupported (clear error):
``cross_self_attention``, adaptive softmax, attention ``bias_k``/``add_zero_attn``, decoders
without encoder attention. The verifier is numerically equal to fairseq's full decoder forward
(tested to 1e-6 in float64, see ``tests/engine/test_verifier.py``).

This class decodes one sentence at a time (batch size 1, what aggressive decoding targets); its decoder forward
(:meth:`Verifier.decoder_layers`) takes any batch size and is shared with the batched verifier of
:mod:`fastdec.engine.batched` (per-row cache lengths and rollback).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable, Dict, List, Optional, Tuple

import torch
import torch.nn.functional as F
from torch import Tensor

__all__ = ["Verifier", "VerifierOutput", "resolve_device_dtype", "position_table"]

_DTYPES = {
    "float32": torch.float32, "fp32": torch.float32, "float": torch.float32,
    "float16": torch.float16, "fp16": torch.float16, "half": torch.float16,
    "bfloat16": torch.bfloat16, "bf16": torch.bfloat16,
    "float64": torch.float64, "fp64": torch.float64, "double": torch.float64,
}
# Half precision is refused on the CPU (slow, and no user wants it there). The CPU tests set this to run the engine's
# and the baseline's half-precision code (dtype casts, float32 log-softmax) without a GPU
# (tests/engine/test_half_on_cpu.py).
HALF_ON_CPU = False


def resolve_device_dtype(device: Any = "cpu", dtype: Any = None) -> tuple[torch.device, torch.dtype]:
    """Normalise ``device`` / ``dtype`` arguments (strings or torch objects) with clear errors.

    float16/bfloat16 are only accepted on CUDA (CPU half-precision matmuls are slow or missing).
    """
    dev = torch.device(device) if not isinstance(device, torch.device) else device
    if dev.type == "cuda" and not torch.cuda.is_available():
        raise ValueError(f"device {device!r} requested but CUDA is not available")
    if dev.type not in ("cpu", "cuda"):
        raise ValueError(f"unsupported device {device!r} (use 'cpu' or 'cuda[:N]')")
    if dtype is None:
        dt = torch.float32
    elif isinstance(dtype, torch.dtype):
        dt = dtype
    else:
        key = str(dtype).lower().replace("torch.", "")
        if key not in _DTYPES:
            raise ValueError(f"unknown dtype {dtype!r}; choose from {sorted(set(_DTYPES))}")
        dt = _DTYPES[key]
    if dt in (torch.float16, torch.bfloat16) and dev.type != "cuda" and not HALF_ON_CPU:
        raise ValueError(f"dtype {dt} is only supported on CUDA (got device {dev})")
    return dev, dt


def position_table(module, n: int, padding_idx: int, device, dtype) -> Optional[Tensor]:
    """Row t = the fairseq encoder's or decoder's positional embedding of index t (position ``padding_idx + 1 + t``),
    ``[n, C]``, or None without positional embeddings. Computed by calling the fairseq module itself on a pad-free
    dummy sequence, so learned and sinusoidal embeddings are reproduced bit-for-bit."""
    if module.embed_positions is None:
        return None
    fill = 0 if padding_idx != 0 else 1
    dummy = torch.full((1, n), fill, dtype=torch.long, device=device)
    with torch.inference_mode():
        return module.embed_positions(dummy)[0].to(dtype).clone()


@dataclass
class VerifierOutput:
    """Scores of the ``n`` positions fed in one :meth:`Verifier.forward` call.

    ``logits[i]`` / ``hidden[i]`` belong to the i-th fed token and predict the token that follows it.
    """

    logits: Tensor  # [n, V] in the model dtype
    hidden: Tensor  # [n, C] final decoder features (pre output projection)
    _log_probs: Optional[Tensor] = None

    @property
    def log_probs(self) -> Tensor:
        """``log_softmax(logits)`` in at least float32 (fairseq upcasts half precision the same way)."""
        if self._log_probs is None:
            x = self.logits
            if x.dtype in (torch.float16, torch.bfloat16):
                x = x.float()
            self._log_probs = torch.log_softmax(x, dim=-1)
        return self._log_probs


class _Layer:
    """Plain-tensor view of one fairseq ``TransformerDecoderLayerBase`` (weights are shared, not copied,
    except the fused self-attention QKV projection)."""

    __slots__ = (
        "w_qkv", "b_qkv", "w_o", "b_o", "ln_sa", "attn_ln", "c_attn",
        "w_cq", "b_cq", "w_co", "b_co", "ln_ca",
        "w_fc1", "b_fc1", "w_fc2", "b_fc2", "ffn_ln", "w_resid", "ln_ff", "act",
    )


def _ln(mod) -> Optional[tuple]:
    if mod is None:
        return None
    eps = getattr(mod, "eps", 1e-5)
    shape = tuple(getattr(mod, "normalized_shape", (mod.weight.shape[0],)))
    return (shape, mod.weight, mod.bias, eps)


def fused_qkv(attn) -> tuple:
    """The q, k, v projections of a fairseq self-attention as one weight ``[3E, E]`` and bias ``[3E]``, with fairseq's
    query scaling (q = q_proj(x) * scaling) folded in."""
    s = float(attn.scaling)
    w = torch.cat([attn.q_proj.weight * s, attn.k_proj.weight, attn.v_proj.weight], 0).detach()
    b = torch.cat([attn.q_proj.bias * s, attn.k_proj.bias, attn.v_proj.bias], 0).detach()
    return w, b


def _apply_ln(x: Tensor, ln: tuple) -> Tensor:
    return F.layer_norm(x, ln[0], ln[1], ln[2], ln[3])


class Verifier:
    """Cached multi-token decoder forward over a fairseq ``TransformerModel``.

    Usage (one sentence)::

        ver = Verifier(model, device="cpu", dtype=torch.float32)
        ver.start(src_tokens)            # 1-D LongTensor incl. the trailing EOS, as fairseq builds it
        out = ver.forward([eos, t1, t2]) # 3 new positions; out.logits: [3, V], out.hidden: [3, C]
        ver.rollback(2)                  # keep the cache of the first 2 positions only
        out = ver.forward([t2b])         # position 2 again, with another token

    The model is moved to ``device``/``dtype`` in place (default: where it already is, in its current
    dtype) and put in eval mode. ``use_sdpa`` selects ``F.scaled_dot_product_attention`` (default on
    CUDA) instead of a plain matmul/softmax attention (default on CPU, faster for short blocks there).
    ``causal=False`` drops the causal mask inside a block: the bidirectional decoder of GAD's NAT drafter, which
    feeds its whole input from position 0 after :meth:`restart`.
    """

    backend = "torch"  # the implementation of the passes (fastdec.engine.fast_verifier.FastVerifier: "fast")

    def __init__(self, model, *, device: Any = None, dtype: Any = None, use_sdpa: Optional[bool] = None,
                 causal: bool = True):
        p0 = next(model.parameters())
        self.device, self.dtype = resolve_device_dtype(p0.device if device is None else device,
                                                       p0.dtype if dtype is None else dtype)
        model = model.to(device=self.device, dtype=self.dtype)
        model.eval()
        self.model = model
        self.encoder = model.encoder
        dec = model.decoder
        self.decoder = dec
        self._check_supported(dec)

        self.padding_idx = dec.padding_idx
        dictionary = getattr(dec, "dictionary", None)
        if dictionary is not None:
            self.eos, self.pad, self.unk = dictionary.eos(), dictionary.pad(), dictionary.unk()
        else:  # fairseq defaults
            self.eos, self.pad, self.unk = 2, dec.padding_idx, 3
        self.embed_scale = float(dec.embed_scale)
        self.embed_w = dec.embed_tokens.weight
        self.project_in = dec.project_in_dim.weight if dec.project_in_dim is not None else None
        self.project_out = dec.project_out_dim.weight if dec.project_out_dim is not None else None
        self.ln_emb = _ln(getattr(dec, "layernorm_embedding", None))
        self.ln_final = _ln(getattr(dec, "layer_norm", None))
        self.out_w = dec.output_projection.weight
        # a decoder subclass may override output_layer (e.g. a Blockwise p_1 through its extra layer)
        from fairseq.models.transformer import TransformerDecoderBase

        self._custom_output_layer = (
            getattr(type(dec), "output_layer", None) is not TransformerDecoderBase.output_layer)
        self.out_b = getattr(dec.output_projection, "bias", None)
        self.max_positions = int(dec.max_positions())
        self.max_source_positions = int(self.encoder.max_positions())

        first = dec.layers[0]
        self.num_heads = first.self_attn.num_heads
        self.head_dim = first.self_attn.head_dim
        self.embed_dim = first.embed_dim
        self.normalize_before = bool(first.normalize_before)
        self.layers: List[_Layer] = [self._extract_layer(layer) for layer in dec.layers]
        self.num_layers = len(self.layers)
        # encoder-attention K/V projections of all layers fused into one matmul per sentence
        self._enc_kv_w = torch.cat([torch.cat([l.encoder_attn.k_proj.weight, l.encoder_attn.v_proj.weight], 0)
                                    for l in dec.layers], 0).detach()
        self._enc_kv_b = torch.cat([torch.cat([l.encoder_attn.k_proj.bias, l.encoder_attn.v_proj.bias], 0)
                                    for l in dec.layers], 0).detach()

        self._pos_table = position_table(dec, self.max_positions, self.padding_idx, self.device, self.dtype)
        self.use_sdpa = use_sdpa if use_sdpa is not None else (self.device.type == "cuda")
        self.causal = causal

        # cache state
        self._cap = 0
        self._k: Optional[Tensor] = None  # [L, 1, H, cap, D] (a batch of one: the shared forward's layout)
        self._v: Optional[Tensor] = None
        self._causal: Optional[Tensor] = None  # [cap, cap] bool, True = may attend
        self.length = 0
        self.enc_k: Optional[Tensor] = None  # [L, 1, H, S, D]
        self.enc_v: Optional[Tensor] = None
        self.encoder_out: Optional[Dict[str, List[Tensor]]] = None
        self.src_tokens: Optional[Tensor] = None
        self.src_tokens_device: Optional[Tensor] = None

    # ------------------------------------------------------------------ setup
    @staticmethod
    def _check_supported(dec) -> None:
        if not hasattr(dec, "layers") or not hasattr(dec, "embed_tokens"):
            raise TypeError(f"Verifier needs a fairseq TransformerDecoder, got {type(dec).__name__}")
        if getattr(dec, "cross_self_attention", False):
            raise NotImplementedError("cross_self_attention decoders are not supported by the Verifier")
        if getattr(dec, "adaptive_softmax", None) is not None:
            raise NotImplementedError("adaptive softmax output layers are not supported by the Verifier")
        if getattr(dec, "quant_noise", None) is not None:
            raise NotImplementedError("decoder quant_noise projection is not supported by the Verifier")
        if len(dec.layers) == 0:
            raise ValueError("decoder has no layers")
        for layer in dec.layers:
            if not hasattr(layer, "self_attn") or not hasattr(layer, "fc1"):
                raise NotImplementedError(f"unsupported decoder layer type {type(layer).__name__}")
            if getattr(layer, "encoder_attn", None) is None:
                raise NotImplementedError("decoder layers without encoder attention are not supported")
            for att in (layer.self_attn, layer.encoder_attn):
                if att.bias_k is not None or att.add_zero_attn:
                    raise NotImplementedError("attention bias_k/bias_v/add_zero_attn are not supported")
                if att.q_proj.bias is None or att.k_proj.bias is None or att.v_proj.bias is None:
                    raise NotImplementedError("attention projections without bias are not supported")

    def _extract_layer(self, layer) -> _Layer:
        sa, ca = layer.self_attn, layer.encoder_attn
        L = _Layer()
        L.w_qkv, L.b_qkv = fused_qkv(sa)
        L.w_o, L.b_o = sa.out_proj.weight, sa.out_proj.bias
        L.ln_sa = _ln(layer.self_attn_layer_norm)
        L.attn_ln = _ln(getattr(layer, "attn_ln", None))
        L.c_attn = getattr(layer, "c_attn", None)
        cs = float(ca.scaling)
        L.w_cq = (ca.q_proj.weight * cs).detach()
        L.b_cq = (ca.q_proj.bias * cs).detach()
        L.w_co, L.b_co = ca.out_proj.weight, ca.out_proj.bias
        L.ln_ca = _ln(layer.encoder_attn_layer_norm)
        L.w_fc1, L.b_fc1 = layer.fc1.weight, layer.fc1.bias
        L.w_fc2, L.b_fc2 = layer.fc2.weight, layer.fc2.bias
        L.ffn_ln = _ln(getattr(layer, "ffn_layernorm", None))
        L.w_resid = getattr(layer, "w_resid", None)
        L.ln_ff = _ln(layer.final_layer_norm)
        L.act = layer.activation_fn
        return L

    def _ensure_capacity(self, needed: int) -> None:
        if needed <= self._cap:
            return
        if needed > self.max_positions:
            raise ValueError(f"target length {needed} exceeds the decoder's max positions {self.max_positions}")
        self._grow_cache(min(self.max_positions, max(needed, 64, 2 * self._cap)))

    def _grow_cache(self, cap: int) -> None:
        """New self-attention cache tensors of ``cap`` positions holding the first ``length`` of the old ones."""
        shape = (self.num_layers, 1, self.num_heads, cap, self.head_dim)
        k = torch.empty(shape, dtype=self.dtype, device=self.device)
        v = torch.empty(shape, dtype=self.dtype, device=self.device)
        if self._k is not None and self.length > 0:
            k[..., : self.length, :] = self._k[..., : self.length, :]
            v[..., : self.length, :] = self._v[..., : self.length, :]
        self._k, self._v, self._cap = k, v, cap
        self._causal = torch.ones(cap, cap, dtype=torch.bool, device=self.device).tril_()

    # ------------------------------------------------------------------ per sentence
    def check_source(self, src_tokens: Tensor) -> None:
        if src_tokens.dim() != 1:
            raise ValueError(f"src_tokens must be 1-D (one sentence), got shape {tuple(src_tokens.shape)}")
        if src_tokens.numel() == 0:
            raise ValueError("src_tokens is empty; a fairseq source always ends with EOS")
        if src_tokens.numel() > self.max_source_positions:
            raise ValueError(
                f"source has {src_tokens.numel()} tokens (incl. EOS) but the encoder supports at most "
                f"{self.max_source_positions} positions (max_source_positions)")

    @torch.inference_mode()
    def start(self, src_tokens: Tensor) -> Dict[str, List[Tensor]]:
        """Encode one source sentence (1-D LongTensor ending with EOS), reset the cache, return encoder_out."""
        src_tokens = torch.as_tensor(src_tokens, dtype=torch.long)
        self.check_source(src_tokens)
        src = src_tokens.to(self.device).unsqueeze(0)
        enc = self.encoder(src, src_lengths=torch.tensor([src.size(1)], device=self.device))
        self.src_tokens = src_tokens
        self.src_tokens_device = src[0]
        self.restart(enc)
        return enc

    def restart(self, encoder_out: Dict[str, List[Tensor]]) -> None:
        """Empty the cache for a new pass over the sentence encoded in ``encoder_out`` (a :meth:`start` result);
        its encoder-attention keys/values are projected again only when it is not the current sentence."""
        if encoder_out is not self.encoder_out:
            x = encoder_out["encoder_out"][0][:, 0]  # [S, C_enc]
            S = x.size(0)
            kv = F.linear(x, self._enc_kv_w, self._enc_kv_b)  # [S, L*2*E]
            kv = kv.view(S, self.num_layers, 2, self.num_heads, self.head_dim).permute(1, 2, 3, 0, 4)
            kv = kv.contiguous()  # [L, 2, H, S, D]
            self.enc_k, self.enc_v = kv[:, 0, None], kv[:, 1, None]  # [L, 1, H, S, D]
            self.encoder_out = encoder_out
        self.length = 0

    def rollback(self, length: int) -> None:
        """Truncate the self-attention cache to its first ``length`` positions (O(1))."""
        if length < 0 or length > self.length:
            raise ValueError(f"cannot roll back to length {length} (cache holds {self.length})")
        self.length = length

    @torch.inference_mode()
    def forward(self, tokens, *, need_logits: bool = True, bidirectional_tail: int = 0) -> VerifierOutput:
        """Feed ``n >= 1`` tokens at positions ``length .. length+n-1``; append them to the cache.

        ``bidirectional_tail=m``: the last ``m`` new tokens attend to every new token (the block of masks of a
        prefix-causal drafter); the others stay causal."""
        if self.enc_k is None:
            raise RuntimeError("call Verifier.start(src_tokens) first")
        tokens = self.new_tokens(tokens)
        n = tokens.numel()
        t0 = self.length
        t1 = t0 + n
        self._ensure_capacity(t1)
        k_cache, v_cache = self._k, self._v

        def self_kv(li: int, k: Tensor, v: Tensor):  # k, v: [1, n, H, D] -> the cache up to t1, [1, H, t1, D]
            kc, vc = k_cache[li], v_cache[li]
            kc[:, :, t0:t1] = k.transpose(1, 2)
            vc[:, :, t0:t1] = v.transpose(1, 2)
            return kc[:, :, :t1], vc[:, :, :t1]

        x = self.embed(tokens[None], self._pos_table[t0:t1] if self._pos_table is not None else None)
        mask = self._causal[t0:t1, :t1] if n > 1 and self.causal else None
        if mask is not None and bidirectional_tail > 0:
            mask = mask.clone()
            mask[n - bidirectional_tail:] = True
        x = self.decoder_layers(x, self_kv, mask, self.enc_k, self.enc_v, None)[0]
        self.length = t1
        logits = self.output_layer(x) if need_logits else None
        return VerifierOutput(logits=logits, hidden=x)

    def new_tokens(self, tokens) -> Tensor:
        """The tokens of one forward call as a non-empty 1-D LongTensor on the model's device."""
        if not isinstance(tokens, Tensor):
            tokens = torch.tensor(tokens, dtype=torch.long)
        if tokens.dim() != 1 or tokens.numel() == 0:
            raise ValueError("tokens must be a non-empty 1-D sequence")
        return tokens.to(self.device, non_blocking=True)

    # ------------------------------------------------------------------ the decoder forward (any batch size)
    def embed(self, tokens: Tensor, positions: Optional[Tensor]) -> Tensor:
        """Input embeddings ``[B, n, C]`` of ``tokens`` ``[B, n]``; ``positions`` are rows of the position table
        (``[n, C]`` or ``[B, n, C]``), None without positional embeddings."""
        x = F.embedding(tokens, self.embed_w)
        if self.embed_scale != 1.0:
            x = x * self.embed_scale
        if self.project_in is not None:
            x = F.linear(x, self.project_in)
        if positions is not None:
            x = x + positions
        if self.ln_emb is not None:
            x = _apply_ln(x, self.ln_emb)
        return x

    def decoder_layers(self, x: Tensor, self_kv, self_mask: Optional[Tensor], enc_k: Tensor, enc_v: Tensor,
                       enc_mask: Optional[Tensor], packed: Optional[Tuple[Tensor, int, int]] = None,
                       attention: Optional[Callable] = None) -> Tensor:
        """Every decoder layer over embedded inputs ``x`` ``[B, n, C]``, then the final norm / ``project_out_dim``.

        ``self_kv(layer, k, v)`` stores the new keys/values ``[B, n, H, D]`` in its cache and returns the keys and
        values to attend to, ``[B, H, T, D]``; ``self_mask`` (True = may attend) broadcasts to ``[B, H, n, T]``;
        ``enc_k``/``enc_v`` are ``[L, B', H, S, D]`` (``B'`` is ``B`` or 1) with ``enc_mask`` broadcasting to
        ``[B, H, n, S]``. The batch-1 :class:`Verifier` and the batched verifier
        (:mod:`fastdec.engine.batched`) both run this one forward.

        ``packed = (rows, B, n)``: ``x`` holds only the real tokens of a right-padded ``[B, n]`` batch, ``[N, C]``
        (``rows``: their flat indices into ``B * n``). The linear layers and norms then run on the N real tokens
        alone and only attention on the padded layout; the result is ``[B, n, C]`` with zeros at padding.
        ``attention(q, k, v, mask, causal)`` computes an attention in place of :meth:`_attend` (``causal``: the
        self-attention; :func:`~fastdec.engine.ragged_attention.blocked_attention` leaves a ragged pass's padding out).
        """
        H, D = self.num_heads, self.head_dim
        if attention is None:
            def attention(q: Tensor, k: Tensor, v: Tensor, mask: Optional[Tensor], causal: bool) -> Tensor:
                return self._attend(q, k, v, mask)
        if packed is None:
            B, n, E = x.shape

            def padded(t: Tensor) -> Tensor:
                return t

            def real(t: Tensor) -> Tensor:
                return t
        else:
            rows, B, n = packed
            E = x.size(-1)

            def padded(t: Tensor) -> Tensor:  # [N, W] -> [B, n, W], zeros at padding
                out = t.new_zeros(B * n, t.size(-1))
                out[rows] = t
                return out.view(B, n, -1)

            def real(t: Tensor) -> Tensor:  # [B, n, W] -> [N, W]
                return t.reshape(B * n, -1).index_select(0, rows)
        nb = self.normalize_before
        for li, L in enumerate(self.layers):
            # --- self attention
            residual = x
            h = _apply_ln(x, L.ln_sa) if nb else x
            qkv = padded(F.linear(h, L.w_qkv, L.b_qkv)).view(B, n, 3, H, D)
            k, v = self_kv(li, qkv[:, :, 1], qkv[:, :, 2])
            a = attention(qkv[:, :, 0].transpose(1, 2), k, v, self_mask, True)  # [B, H, n, D]
            h = F.linear(real(a.transpose(1, 2).reshape(B, n, E)), L.w_o, L.b_o)
            if L.c_attn is not None:  # fairseq scales the *projected* output, viewed per head
                h = (h.unflatten(-1, (H, D)) * L.c_attn.view(H, 1)).flatten(-2)
            if L.attn_ln is not None:
                h = _apply_ln(h, L.attn_ln)
            x = residual + h
            if not nb:
                x = _apply_ln(x, L.ln_sa)
            # --- encoder attention
            residual = x
            h = _apply_ln(x, L.ln_ca) if nb else x
            q = padded(F.linear(h, L.w_cq, L.b_cq)).view(B, n, H, D).transpose(1, 2)
            a = attention(q, enc_k[li], enc_v[li], enc_mask, False)
            x = residual + F.linear(real(a.transpose(1, 2).reshape(B, n, E)), L.w_co, L.b_co)
            if not nb:
                x = _apply_ln(x, L.ln_ca)
            # --- feed forward
            residual = x
            h = _apply_ln(x, L.ln_ff) if nb else x
            h = L.act(F.linear(h, L.w_fc1, L.b_fc1))
            if L.ffn_ln is not None:
                h = _apply_ln(h, L.ffn_ln)
            h = F.linear(h, L.w_fc2, L.b_fc2)
            if L.w_resid is not None:
                residual = residual * L.w_resid
            x = residual + h
            if not nb:
                x = _apply_ln(x, L.ln_ff)
        if self.ln_final is not None:
            x = _apply_ln(x, self.ln_final)
        if self.project_out is not None:
            x = F.linear(x, self.project_out)
        return padded(x)

    def _attend(self, q: Tensor, k: Tensor, v: Tensor, mask: Optional[Tensor]) -> Tensor:
        """Scaled dot-product attention over 4-D ``[B, H, n, D]`` inputs (the layout the fused CUDA kernels need);
        the 1/sqrt(d) scale is already folded into q."""
        if self.use_sdpa:
            return F.scaled_dot_product_attention(q, k, v, attn_mask=mask, scale=1.0)
        s = torch.matmul(q, k.transpose(-1, -2))  # [B, H, n, T]
        if mask is not None:  # (True = may attend; or a float mask to add, made once for every layer)
            s = s.masked_fill(~mask, float("-inf")) if mask.dtype == torch.bool else s.add_(mask)
        p = torch.softmax(s, dim=-1)
        return torch.matmul(p, v)

    # ------------------------------------------------------------------ helpers
    def output_layer(self, hidden: Tensor) -> Tensor:
        """Final features ``[n, C]`` (or ``[B, n, C]``) -> vocabulary logits ``[n, V]`` (``[B, n, V]``), through the
        decoder's own output layer."""
        if self._custom_output_layer:
            if hidden.dim() == 3:
                return self.decoder.output_layer(hidden)
            return self.decoder.output_layer(hidden.unsqueeze(0)).squeeze(0)
        return F.linear(hidden, self.out_w, self.out_b)

    @property
    def vocab_size(self) -> int:
        return self.out_w.size(0)
