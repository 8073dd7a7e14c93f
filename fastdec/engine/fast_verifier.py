"""The fast verifier backend: the :class:`~fastdec.engine.verifier.Verifier` with its encoder and decoder passes in C.

At the demo's size (128-dim, 3 layers) one PyTorch decoder pass is mostly per-operator overhead; the C pass of
``native/decoder.c`` (compiled on first use with the system C compiler, cached per source, flags and CPU) runs the
same arithmetic as a few straight loops. It is a verifier implementation, not a new loop: every drafter (IAD, GAD --
whose NAT drafter then runs its own forward in C too --, Blockwise) and every acceptance rule run on it unchanged
through the Verifier interface (``start`` / ``forward`` / ``rollback`` / ``output_layer``, the last in C too), plus
:meth:`FastVerifier.masked_top1`, the fused vocabulary projection + masked argmax the exact rule uses instead of a full
log-softmax (screened by an int8 copy of the projection with a proven error bound, the few candidates rescored
exactly: the float argmax bit for bit, a quarter of the bytes streamed).

Lossless by construction: the C pass computes every fed position by the same loops in the same order whatever the
number of positions fed together (row-invariant), so a k-token verification pass gives bit for bit the rows of k
one-token passes, and draft -> verify -> accept returns exactly this backend's greedy output. Against the PyTorch
reference the summation order differs, so outputs are identical except at float32 near-ties (measured and reported
per run as ``identical_to_greedy``); in float64 they agree on every case the property tests draw.

Batched decoding (batch size B > 1, :func:`fastdec.engine.batched.decode_batched`) runs on this backend too:
:class:`~fastdec.engine.fast_batched.FastBatchedVerifier` feeds all rows of an iteration to one C pass
(``fd_forward_batch``: the linear layers over every row's tokens packed together, attention per row against its own
cache and encoder output), each row bit for bit its batch-1 pass, so a batched decode returns exactly each sentence's
batch-1 output on this backend.

``backend="fast-int8"`` quantises every linear layer to int8 (:class:`FastVerifier` ``quantize``), CTranslate2's
int8 counterpart: lossless against its own greedy output, not the float model's.

CPU only, float32 or float64, the fairseq Transformer (pre- or post-norm, learned or sinusoidal positions,
``layernorm_embedding``, ReLU / GELU). Anything else -- CUDA, half precision, NormFormer extras, ``project_in_dim``,
a custom output layer, no C compiler -- raises :class:`FastBackendUnavailable` naming the reason;
:func:`fastdec.engine.load.make_verifier` turns that into the reference verifier with a warning.
"""
from __future__ import annotations

import ctypes
import logging
from typing import Any, Dict, List, Optional, Sequence

import torch
import torch.nn.functional as F
from torch import Tensor

from .native_build import NativeUnavailable, compiled
from .verifier import Verifier, VerifierOutput, _ln, fused_qkv, position_table

logger = logging.getLogger(__name__)

__all__ = ["FastVerifier", "FastBackendUnavailable", "BACKENDS", "native_library"]

BACKENDS = ("torch", "fast", "fast-int8")
# no -ffast-math: the C order of operations is what makes the kernels row-invariant (see decoder.c)
_CFLAGS = ["-O3", "-march=native", "-fno-math-errno", "-fPIC", "-shared", "-std=c99"]
_REAL = {torch.float32: "float", torch.float64: "double"}
_LIBS: Dict[torch.dtype, ctypes.CDLL] = {}


class EncoderOut(dict):
    """fairseq's encoder output of one sentence (``encoder_out`` ``[S, 1, C]`` and the rest) from the C encoder, with
    the parts no pass of this backend reads -- the source's scaled embeddings (a NAT decoder that copies them reads
    them), its padding mask and its length -- made when first asked for: made for every sentence, they and a second
    copy of the encoder's output cost about 25 us of a 280 us start on the int8 layers and 35 of 450 on the float ones
    (the GEC demo model; about 2 % of a cost-aware IAD sentence). Reads that go by the key (``d[key]``, ``get``,
    ``in``) and whole-dict reads (iteration, ``keys``, ``items``, ``values``, copies) see every key."""

    _LAZY = ("encoder_padding_mask", "encoder_embedding", "src_lengths")

    def __init__(self, x: Tensor, src: Tensor, emb_weight: Tensor, emb_scale: float):
        super().__init__(encoder_out=[x.unsqueeze(1)], encoder_states=[], fc_results=[], src_tokens=[])
        self._made = (src, emb_weight, emb_scale)

    def __missing__(self, key):
        if key not in self._LAZY:
            raise KeyError(key)
        src, emb_weight, emb_scale = self._made
        if key == "encoder_padding_mask":
            value = [torch.zeros(1, src.numel(), dtype=torch.bool)]
        elif key == "encoder_embedding":
            value = [F.embedding(src[None], emb_weight) * emb_scale]
        else:
            value = [torch.tensor([[src.numel()]], dtype=torch.int32)]  # (fairseq sums the mask in int32)
        self[key] = value
        return value

    def _all(self) -> "EncoderOut":
        for key in self._LAZY:
            self[key]
        return self

    def get(self, key, default=None):
        return self[key] if key in self._LAZY else super().get(key, default)

    def __contains__(self, key) -> bool:
        return key in self._LAZY or super().__contains__(key)

    def __iter__(self):
        return super(EncoderOut, self._all()).__iter__()

    def __len__(self) -> int:
        return super(EncoderOut, self._all()).__len__()

    def keys(self):
        return super(EncoderOut, self._all()).keys()

    def items(self):
        return super(EncoderOut, self._all()).items()

    def values(self):
        return super(EncoderOut, self._all()).values()

    def copy(self) -> dict:
        return dict(self._all().items())

    def __reduce__(self):
        return dict, (dict(self._all().items()),)


class FastBackendUnavailable(RuntimeError):
    """The fast backend cannot run this model or on this machine (the message says why and what to do)."""


def native_library(dtype: torch.dtype) -> ctypes.CDLL:
    """The compiled C pass for ``dtype`` (float32 / float64), built once per source, flags and CPU."""
    if dtype in _LIBS:
        return _LIBS[dtype]
    if dtype not in _REAL:
        raise FastBackendUnavailable(f"the fast backend computes in float32 or float64, not {dtype}")
    flags = _CFLAGS + [f"-DREAL={_REAL[dtype]}", f"-DREAL_IS_DOUBLE={int(dtype == torch.float64)}"]
    try:
        path = compiled("decoder.c", f"decoder_{_REAL[dtype]}", flags, "the fast backend")
    except NativeUnavailable as exc:
        raise FastBackendUnavailable(str(exc)) from None
    lib = ctypes.CDLL(str(path))
    p, i, d = ctypes.c_void_p, ctypes.c_int, ctypes.c_double
    lib.fd_new.restype = p
    lib.fd_new.argtypes = [p, p, p, p]
    lib.fd_free.argtypes = [p]
    lib.fd_forward.restype = i
    lib.fd_forward.argtypes = [p, p, i, i, p, p, i, p, p, i, i, i, p]
    lib.fd_forward_batch.restype = i
    lib.fd_forward_batch.argtypes = [p, p, p, i, p, p, p, p, p, p, p, p]
    lib.fd_logits.restype = i
    lib.fd_logits.argtypes = [p, p, i, p]
    lib.fd_top1.restype = i
    lib.fd_top1.argtypes = [p, p, i, i, i, d, i, i, i, p, p]
    lib.fd_top1_rows.restype = i
    lib.fd_top1_rows.argtypes = [p, p, i, p, p, d, i, i, i, p]
    lib.fd_set_encoder_kv.restype = i
    lib.fd_set_encoder_kv.argtypes = [p, p, p, i]
    lib.fd_encoder_kv.restype = i
    lib.fd_encoder_kv.argtypes = [p, p, i, p, p]
    _LIBS[dtype] = lib
    return lib


def _activation_code(fn) -> int:
    from fairseq.modules.gelu import gelu, gelu_accurate

    codes = {F.relu: 0, torch.relu: 0, gelu: 1, gelu_accurate: 2}
    if fn not in codes:
        raise FastBackendUnavailable(f"activation {getattr(fn, '__name__', fn)!r} (the fast backend has relu, gelu, "
                                     f"gelu_accurate)")
    return codes[fn]


def _ln_parts(ln: Optional[tuple], what: str):
    """(weight, bias, eps) of a layer-norm tuple of the reference verifier, or (None, None, 1e-5)."""
    if ln is None:
        return None, None, 1e-5
    _shape, w, b, eps = ln
    if w is None or b is None:
        raise FastBackendUnavailable(f"{what}: a layer norm without affine weights")
    return w, b, float(eps)


class _Handle:
    """One C model (the decoder's or the encoder's layers): the pointer tables and the tensors they point into."""

    def __init__(self, lib, ints: List[int], reals: List[float], global_tensors: List[Optional[Tensor]],
                 layer_tensors: List[List[Optional[Tensor]]]):
        self.lib = lib
        self.keep = [t.detach().contiguous() if t is not None else None for t in global_tensors]
        self.keep_layers = [[t.detach().contiguous() if t is not None else None for t in row] for row in layer_tensors]
        ptr = lambda t: t.data_ptr() if t is not None else None  # noqa: E731
        self._ints = (ctypes.c_int * len(ints))(*ints)
        self._reals = (ctypes.c_double * len(reals))(*reals)
        self._globals = (ctypes.c_void_p * len(self.keep))(*[ptr(t) for t in self.keep])
        flat = [ptr(t) for row in self.keep_layers for t in row]
        self._layers = (ctypes.c_void_p * len(flat))(*flat)
        self.ptr = lib.fd_new(self._ints, self._reals, self._globals, self._layers)
        if not self.ptr:
            raise MemoryError("the fast backend could not allocate its model")

    def __del__(self):
        if getattr(self, "ptr", None):
            self.lib.fd_free(self.ptr)
            self.ptr = None


def _layer_row(L, cross: bool) -> List[Optional[Tensor]]:
    """The 18 weight tensors of one layer in ``decoder.c``'s order (encoder-attention ones None in an encoder)."""
    ln_sa = _ln_parts(L["ln_sa"], "self-attention layer norm")[:2]
    ln_ca = _ln_parts(L["ln_ca"], "encoder-attention layer norm")[:2] if cross else (None, None)
    ln_ff = _ln_parts(L["ln_ff"], "final layer norm")[:2]
    return [L["w_qkv"], L["b_qkv"], L["w_o"], L["b_o"], *ln_sa, L.get("w_cq"), L.get("b_cq"), L.get("w_co"),
            L.get("b_co"), *ln_ca, L["w_fc1"], L["b_fc1"], L["w_fc2"], L["b_fc2"], *ln_ff]


def _eps(L, cross: bool) -> List[float]:
    return [_ln_parts(L["ln_sa"], "")[2], _ln_parts(L["ln_ca"], "")[2] if cross else 1e-5, _ln_parts(L["ln_ff"], "")[2]]


class FastVerifier(Verifier):
    """The :class:`Verifier` with its passes in C (see the module docstring); same constructor and interface.

    ``quantize="int8"``: every linear layer (the vocabulary projection included) in int8 -- weights per output row,
    activations per row, dynamically; sums exact in 32-bit integers -- like CTranslate2's int8. Still row-invariant,
    so lossless against its own (int8) greedy output; not identical to the float model's."""

    def __init__(self, model, *, device: Any = None, dtype: Any = None, use_sdpa: Optional[bool] = None,
                 causal: bool = True, quantize: Optional[str] = None):
        super().__init__(model, device=device, dtype=dtype, use_sdpa=False, causal=causal)
        if self.device.type != "cpu":
            raise FastBackendUnavailable(f"the fast backend runs on the CPU (device {self.device})")
        if quantize not in (None, "int8"):
            raise ValueError(f"quantize must be None or 'int8', got {quantize!r}")
        self.int8 = quantize == "int8"
        self.backend = "fast-int8" if self.int8 else "fast"
        self.lib = native_library(self.dtype)
        self._decoder = self._decoder_handle()
        self._encoder = self._encoder_handle()
        # the encoder-attention keys/values of a sentence projected in C too (a few PyTorch calls cost more at this
        # size), with the decoder's other linear layers' precision
        self._enc_kv_w, self._enc_kv_b = self._enc_kv_w.contiguous(), self._enc_kv_b.contiguous()
        enc = self.encoder  # what start reads of it, read once (a module's attributes are slow to reach)
        self._enc_embedding = (enc.embed_tokens.weight.detach(), enc.embed_scale)
        self._enc_shape = (len(enc.layers), enc.layers[0].self_attn.num_heads, enc.layers[0].self_attn.head_dim)
        self._enc_scratch: Optional[tuple] = None
        if self.lib.fd_set_encoder_kv(self._decoder.ptr, self._enc_kv_w.data_ptr(), self._enc_kv_b.data_ptr(),
                                      self._enc_kv_w.size(1)) != 0:
            raise MemoryError("the fast backend could not allocate its model")

    # ------------------------------------------------------------------ building the C models
    def _decoder_handle(self) -> _Handle:
        unsupported = {"project_in_dim": self.project_in is not None, "project_out_dim": self.project_out is not None,
                       "a custom output layer": self._custom_output_layer and not _plain_output_layer(self.decoder)}
        for L in self.layers:
            unsupported.update({"NormFormer attn_ln": L.attn_ln is not None, "NormFormer scale_heads": L.c_attn is not None,
                                "NormFormer ffn_layernorm": L.ffn_ln is not None,
                                "NormFormer scale_resids": L.w_resid is not None})
        bad = [name for name, is_set in unsupported.items() if is_set]
        if bad:
            raise FastBackendUnavailable(f"the decoder uses {', '.join(bad)}, which the fast backend does not implement")
        layers = [{name: getattr(L, name) for name in L.__slots__} for L in self.layers]
        emb_w, emb_b, emb_eps = _ln_parts(self.ln_emb, "layernorm_embedding")
        fin_w, fin_b, fin_eps = _ln_parts(self.ln_final, "final decoder layer norm")
        ints = [self.num_layers, self.embed_dim, self.num_heads, self.layers[0].w_fc1.size(0), self.vocab_size,
                self.max_positions, int(self.normalize_before), _activation_code(self.layers[0].act), int(self.int8)]
        reals = [self.embed_scale, emb_eps, fin_eps] + [e for L in layers for e in _eps(L, True)]
        glob = [self.embed_w, self._pos_table, emb_w, emb_b, fin_w, fin_b, self.out_w, self.out_b]
        return _Handle(self.lib, ints, reals, glob, [_layer_row(L, True) for L in layers])

    def _encoder_handle(self) -> Optional[_Handle]:
        """The encoder in C, or None (fairseq's own encoder runs) when it has parts the C pass does not implement."""
        enc = self.encoder
        try:
            if type(enc).__name__ not in ("TransformerEncoder", "TransformerEncoderBase"):
                raise FastBackendUnavailable(f"encoder type {type(enc).__name__}")
            if getattr(enc, "quant_noise", None) is not None:
                raise FastBackendUnavailable("encoder quant_noise")
            rows, eps = [], []
            for layer in enc.layers:
                sa = layer.self_attn
                if sa.bias_k is not None or sa.add_zero_attn or sa.q_proj.bias is None:
                    raise FastBackendUnavailable("encoder attention bias_k / add_zero_attn / no bias")
                if getattr(layer, "attn_ln", None) is not None or getattr(layer, "w_resid", None) is not None:
                    raise FastBackendUnavailable("NormFormer encoder layers")
                w_qkv, b_qkv = fused_qkv(sa)
                L = {"w_qkv": w_qkv, "b_qkv": b_qkv, "w_o": sa.out_proj.weight, "b_o": sa.out_proj.bias, "ln_sa": _ln(layer.self_attn_layer_norm),
                     "ln_ca": None, "w_fc1": layer.fc1.weight, "b_fc1": layer.fc1.bias, "w_fc2": layer.fc2.weight,
                     "b_fc2": layer.fc2.bias, "ln_ff": _ln(layer.final_layer_norm), "act": layer.activation_fn}
                rows.append(_layer_row(L, False))
                eps += _eps(L, False)
            first = enc.layers[0]
            emb_w, emb_b, emb_eps = _ln_parts(_ln(getattr(enc, "layernorm_embedding", None)), "encoder layernorm_embedding")
            fin_w, fin_b, fin_eps = _ln_parts(_ln(getattr(enc, "layer_norm", None)), "final encoder layer norm")
            self._enc_pos = position_table(enc, self.max_source_positions, enc.padding_idx, self.device, self.dtype)
            ints = [len(enc.layers), first.embed_dim, first.self_attn.num_heads, first.fc1.out_features,
                    enc.embed_tokens.weight.size(0), self.max_source_positions, int(first.normalize_before),
                    _activation_code(first.activation_fn), int(self.int8)]
            reals = [float(enc.embed_scale), emb_eps, fin_eps] + eps
            glob = [enc.embed_tokens.weight, self._enc_pos, emb_w, emb_b, fin_w, fin_b, None, None]
            return _Handle(self.lib, ints, reals, glob, rows)
        except (FastBackendUnavailable, AttributeError) as exc:
            logger.info("fast backend: fairseq's own encoder runs (%s)", exc)
            return None

    # ------------------------------------------------------------------ the passes
    def start(self, src_tokens: Tensor) -> Dict[str, List[Tensor]]:
        # (no inference_mode context, like forward: the tensors here record no autograd history)
        if self._encoder is None:
            return super().start(src_tokens)
        src_tokens = torch.as_tensor(src_tokens, dtype=torch.long)
        self.check_source(src_tokens)
        src = src_tokens.contiguous()
        S = src.numel()
        emb_w, emb_scale = self._enc_embedding
        x = torch.empty(S, emb_w.size(1), dtype=self.dtype)
        if self._enc_scratch is None or self._enc_scratch[0].size(-1) < S:  # the layers' keys and values: scratch
            L, H, D = self._enc_shape
            cap = max(S, 64)
            self._enc_scratch = (torch.empty(L, H, D, cap, dtype=self.dtype),
                                 torch.empty(L, H, cap, D, dtype=self.dtype))
        k, v = self._enc_scratch
        rc = self.lib.fd_forward(self._encoder.ptr, src.data_ptr(), S, 0, k.data_ptr(), v.data_ptr(), k.size(-1), None,
                                 None, 0, 0, 0, x.data_ptr())
        self._check(rc, src)
        enc = EncoderOut(x, src, *self._enc_embedding)
        self.src_tokens = src_tokens
        self.src_tokens_device = src
        self._project_encoder(x, enc)
        return enc

    def restart(self, encoder_out: Dict[str, List[Tensor]]) -> None:
        if encoder_out is not self.encoder_out:
            self._project_encoder(encoder_out["encoder_out"][0][:, 0].to(self.dtype).contiguous(), encoder_out)
        self.length = 0

    def _project_encoder(self, x: Tensor, encoder_out: Dict[str, List[Tensor]]) -> None:
        """The encoder-attention keys and values of the encoder's output ``x`` ``[S, C_enc]`` (contiguous, the
        verifier's dtype), projected in C in the layouts its pass reads: keys ``[L, H, D, S]``, values ``[L, H, S,
        D]``; new tensors for every sentence (a batched decode keeps each row's)."""
        S = x.size(0)
        k = torch.empty(self.num_layers, self.num_heads, self.head_dim, S, dtype=self.dtype)
        v = torch.empty(self.num_layers, self.num_heads, S, self.head_dim, dtype=self.dtype)
        if self.lib.fd_encoder_kv(self._decoder.ptr, x.data_ptr(), S, k.data_ptr(), v.data_ptr()) != 0:
            raise MemoryError("the fast backend could not allocate its scratch memory")
        self._enc_k_c, self._enc_v_c = k, v
        self.enc_k, self.enc_v = k.transpose(-1, -2)[:, None], v[:, None]  # the reference's [L, 1, H, S, D]
        self.encoder_out = encoder_out
        self.length = 0

    def _grow_cache(self, cap: int) -> None:
        self._k, self._v = c_layout_cache(self, self._k, self._v, self.length, cap)
        self._cap = cap

    def _check(self, rc: int, tokens: Tensor) -> None:
        if rc == -2:
            raise ValueError(f"token ids {tokens.tolist()} outside the vocabulary [0, {self.vocab_size})")
        if rc != 0:
            raise MemoryError("the fast backend could not allocate its scratch memory")

    def forward(self, tokens, *, need_logits: bool = True, bidirectional_tail: int = 0) -> VerifierOutput:
        # no inference_mode context: no tensor here records autograd history, and entering it costs a few µs a pass
        if self.enc_k is None:
            raise RuntimeError("call Verifier.start(src_tokens) first")
        if not (isinstance(tokens, Tensor) and tokens.dtype == torch.long and tokens.dim() == 1 and tokens.numel()):
            tokens = self.new_tokens(tokens)  # (the C pass checks the ids)
        tokens = tokens.contiguous()
        n = tokens.numel()
        t0 = self.length
        self._ensure_capacity(t0 + n)
        hidden = torch.empty(n, self.embed_dim, dtype=self.dtype)
        rc = self.lib.fd_forward(self._decoder.ptr, tokens.data_ptr(), n, t0, self._k.data_ptr(), self._v.data_ptr(),
                                 self._cap, self._enc_k_c.data_ptr(), self._enc_v_c.data_ptr(), self._enc_v_c.size(2),
                                 int(self.causal), int(bidirectional_tail), hidden.data_ptr())
        self._check(rc, tokens)
        self.length = t0 + n
        return VerifierOutput(logits=self.output_layer(hidden) if need_logits else None, hidden=hidden)

    def output_layer(self, hidden: Tensor) -> Tensor:
        """Vocabulary logits of final features ``[n, C]`` (or ``[B, n, C]``) by the C projection, the one
        :meth:`masked_top1` maximises: the rules that read log-probabilities (GAD++, Blockwise top-k) and the exact rule
        see one model (int8 too)."""
        shape = hidden.shape
        flat = hidden.reshape(-1, shape[-1]).contiguous()
        out = torch.empty(flat.size(0), self.vocab_size, dtype=self.dtype)
        if self.lib.fd_logits(self._decoder.ptr, flat.data_ptr(), flat.size(0), out.data_ptr()) != 0:
            raise MemoryError("the fast backend could not allocate its scratch memory")
        return out.view(*shape[:-1], self.vocab_size)

    def masked_top1(self, hidden: Tensor, step: int, max_len: int, unk_penalty: float = 0.0) -> List[int]:
        """The verifier's token for each row of final features ``hidden`` ``[n, C]`` (row ``i`` predicts output step
        ``step + i``) under the loop's beam-1 constraints, without materialising the log-probabilities."""
        hidden = hidden.contiguous()
        n = hidden.size(0)
        out = (ctypes.c_int64 * n)()
        rc = self.lib.fd_top1(self._decoder.ptr, hidden.data_ptr(), n, step, max_len, float(unk_penalty), self.eos,
                              self.pad, self.unk, None, out)
        if rc != 0:
            raise MemoryError("the fast backend could not allocate its scratch memory")
        return list(out)

    def masked_top1_rows(self, hidden: Tensor, steps: Sequence[int], max_lens: Sequence[int],
                         unk_penalty: float = 0.0) -> List[int]:
        """:meth:`masked_top1` of rows from several sentences in one C call: row ``r`` of ``hidden`` ``[n, C]``
        predicts output step ``steps[r]`` of a sentence of at most ``max_lens[r]`` tokens. The projection's weights are
        streamed once for all rows, and each row's token is the one :meth:`masked_top1` gives it alone."""
        hidden = hidden.contiguous()
        n = hidden.size(0)
        if len(steps) != n or len(max_lens) != n:
            raise ValueError(f"{n} rows, {len(steps)} steps and {len(max_lens)} max lengths")
        out = (ctypes.c_int64 * n)()
        rc = self.lib.fd_top1_rows(self._decoder.ptr, hidden.data_ptr(), n, (ctypes.c_int * n)(*steps),
                                   (ctypes.c_int * n)(*max_lens), float(unk_penalty), self.eos, self.pad, self.unk,
                                   out)
        if rc != 0:
            raise MemoryError("the fast backend could not allocate its scratch memory")
        return list(out)

    def allowed_top1(self, hidden: Tensor, banned: Tensor) -> List[int]:
        """The argmax of each row's logits over the ids not ``banned`` (a bool mask ``[V]``): a drafter's proposal
        (the NAT drafter's block), by the same screened projection as :meth:`masked_top1`."""
        hidden = hidden.contiguous()
        n = hidden.size(0)
        if banned.numel() != self.vocab_size:
            raise ValueError(f"banned has {banned.numel()} entries for a vocabulary of {self.vocab_size}")
        ban = banned.to(torch.uint8).contiguous()
        out = (ctypes.c_int64 * n)()
        rc = self.lib.fd_top1(self._decoder.ptr, hidden.data_ptr(), n, 1, 2 ** 30, 0.0, -1, -1, -1, ban.data_ptr(),
                              out)
        if rc != 0:
            raise MemoryError("the fast backend could not allocate its scratch memory")
        return list(out)


def c_layout_cache(ver, k_old: Optional[Tensor], v_old: Optional[Tensor], length: int, cap: int):
    """A self-attention cache of ``cap`` positions in the C pass's layout -- keys ``[L, H, D, cap]`` (transposed),
    values ``[L, H, cap, D]`` -- holding the first ``length`` positions of ``k_old`` / ``v_old`` (None: empty)."""
    L, H, D = ver.num_layers, ver.num_heads, ver.head_dim
    k = torch.empty(L, H, D, cap, dtype=ver.dtype)
    v = torch.empty(L, H, cap, D, dtype=ver.dtype)
    if k_old is not None and length > 0:
        k[..., :length] = k_old[..., :length]
        v[:, :, :length] = v_old[:, :, :length]
    return k, v


def _plain_output_layer(decoder) -> bool:
    """A decoder that overrides ``output_layer`` but scores with the plain vocabulary projection: a Blockwise model
    whose p_1 is the base model's own output (``p1_through_layer`` off; its heads only propose)."""
    if not hasattr(decoder, "blockwise_head"):
        return False
    head = decoder.blockwise_head
    return head is None or not head.p1_through_layer
