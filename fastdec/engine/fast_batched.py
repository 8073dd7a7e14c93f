"""Batched decoding on the fast verifier backend: B sentences per C decoder pass, each row bit for bit its batch-1 pass.

:class:`FastBatchedVerifier` is the fast backend's counterpart of :class:`~fastdec.engine.batched.BatchedVerifier`
(same interface, the one :func:`~fastdec.engine.batched.decode_batch` drives): per-row rollback-able KV caches over
the weights of a batch-1 :class:`~fastdec.engine.fast_verifier.FastVerifier`, one C pass (``fd_forward_batch`` in
``native/decoder.c``) for all rows of an iteration.

In that pass the linear layers (self-attention QKV and output projections, encoder-attention query and output
projections, feed-forward) run over the real tokens of every row packed together -- the weights are streamed once
per pass for the whole batch, where batching pays on a CPU -- and the self- and encoder-attention of a row read only
that row's own cache and encoder output; padding is never fed. The C kernels compute every row by the same loops in
the same order whatever the rows fed with it (row-invariant, see ``decoder.c``), so each row's final features are bit
for bit those of the batch-1 pass on its sentence alone: a batched decode with an exact rule returns exactly each
sentence's batch-1 fast greedy output (float32, float64 and int8 alike).

The encoder runs per sentence through the batch-1 verifier's own :meth:`FastVerifier.start` (the C encoder pass and
the encoder-attention key/value projection of batch 1, so the rows see exactly the batch-1 encoder output); this
leaves the batch-1 verifier started on the batch's last sentence.
"""
from __future__ import annotations

import ctypes
from typing import Dict, List, Optional, Sequence

import torch
from torch import Tensor

from .fast_verifier import FastVerifier, c_layout_cache

__all__ = ["FastBatchedVerifier"]


class _Row:
    """One sentence of the batch: its encoder-attention keys/values (C layout) and its self-attention cache."""

    __slots__ = ("enc_k", "enc_v", "S", "k", "v", "cap")

    def __init__(self, enc_k: Tensor, enc_v: Tensor):
        self.enc_k, self.enc_v, self.S = enc_k, enc_v, int(enc_v.size(2))  # [L, H, D, S], [L, H, S, D]
        self.k: Optional[Tensor] = None  # [L, H, D, cap] (keys transposed)
        self.v: Optional[Tensor] = None  # [L, H, cap, D]
        self.cap = 0


class FastBatchedVerifier:
    """Per-row KV caches over a :class:`FastVerifier`'s C model (nothing is copied); see the module docstring.

    ``start(sources)`` encodes B sources; ``forward(tokens, n_valid)`` feeds ``tokens`` ``[B, n]`` (row ``b``'s first
    ``n_valid[b]`` are real) at each row's own positions and returns the final features ``[B, n, C]`` (zeros at
    padding); ``lengths[b] = m`` rolls row ``b`` back; ``keep(rows)`` drops the other rows."""

    def __init__(self, verifier: FastVerifier):
        if not isinstance(verifier, FastVerifier):
            raise TypeError(f"FastBatchedVerifier needs a FastVerifier, not {type(verifier).__name__}")
        self.ver = verifier
        self.device, self.dtype = verifier.device, verifier.dtype
        self.lengths: List[int] = []
        self._rows: List[_Row] = []
        self._encoder_outs: List[Dict[str, List[Tensor]]] = []
        self._ptrs = None  # the per-row pointer tables of the C pass, rebuilt when a cache grows or rows leave

    @property
    def batch_size(self) -> int:
        return len(self.lengths)

    @torch.inference_mode()
    def start(self, sources: Sequence[Tensor]) -> List[Dict[str, List[Tensor]]]:
        """Encode ``sources`` (1-D LongTensors ending with EOS) one by one with the batch-1 verifier's own encoder
        pass; empty the caches. Returns every row's encoder output (the batch-1 verifier's dict of that sentence)."""
        if not sources:
            raise ValueError("a batch needs at least one source sentence")
        ver = self.ver
        self._rows, self._encoder_outs = [], []
        for s in sources:
            enc = ver.start(torch.as_tensor(s, dtype=torch.long).reshape(-1))
            self._encoder_outs.append(enc)
            self._rows.append(_Row(ver._enc_k_c, ver._enc_v_c))  # new tensors for every sentence
        self.lengths = [0] * len(sources)
        self._ptrs = None
        return self._encoder_outs

    def row_encoder_out(self, b: int, src_len: int) -> Dict[str, List[Tensor]]:
        """Sentence ``b``'s encoder output (index into the batch given to :meth:`start`), as the batch-1 verifier
        gives it (``encoder_out``: ``[S_b, 1, C]``)."""
        enc = self._encoder_outs[b]
        if enc["encoder_out"][0].size(0) != src_len:
            raise ValueError(f"row {b} has {enc['encoder_out'][0].size(0)} source positions, not {src_len}")
        return enc

    def keep(self, rows: Sequence[int]) -> None:
        """Keep only ``rows`` (indices into the current batch, in this order): finished sentences leave."""
        self.lengths = [self.lengths[r] for r in rows]
        self._rows = [self._rows[r] for r in rows]
        self._ptrs = None

    def _ensure_capacity(self, row: _Row, length: int, needed: int) -> None:
        """Row caches in the batch-1 verifier's C layout, grown like it (doubling, up to the decoder's positions),
        keeping the first ``length`` positions."""
        if needed <= row.cap and row.k is not None:  # (a row that has fed nothing yet still gets its tables)
            return
        ver = self.ver
        if needed > ver.max_positions:
            raise ValueError(f"target length {needed} exceeds the decoder's max positions {ver.max_positions}")
        cap = min(ver.max_positions, max(needed, 64, 2 * row.cap))
        row.k, row.v = c_layout_cache(ver, row.k, row.v, length, cap)
        row.cap = cap
        self._ptrs = None

    def _pointer_tables(self):
        if self._ptrs is None:
            B, rows = self.batch_size, self._rows
            arr = lambda ts: (ctypes.c_void_p * B)(*[t.data_ptr() for t in ts])  # noqa: E731
            ints = lambda xs: (ctypes.c_int * B)(*xs)  # noqa: E731
            self._ptrs = (arr([r.k for r in rows]), arr([r.v for r in rows]), ints([r.cap for r in rows]),
                          arr([r.enc_k for r in rows]), arr([r.enc_v for r in rows]), ints([r.S for r in rows]))
        return self._ptrs

    def forward(self, tokens: Tensor, n_valid: Sequence[int]) -> Tensor:
        """Feed ``tokens`` ``[B, n]`` at positions ``lengths[b] ..``; every row's cache grows by ``n_valid[b]``."""
        # no inference_mode context, like FastVerifier.forward: nothing here records autograd history
        ver = self.ver
        tokens = torch.as_tensor(tokens, dtype=torch.long)
        if tokens.dim() != 2:
            raise ValueError(f"tokens must be [B, n], got shape {tuple(tokens.shape)}")
        B, n = tokens.shape
        counts = [int(c) for c in n_valid]
        if B != self.batch_size or len(counts) != B:
            raise ValueError(f"{B} token rows / {len(counts)} lengths for a batch of {self.batch_size}")
        if any(c < 0 or c > n for c in counts):
            raise ValueError(f"n_valid {counts} outside [0, {n}]")
        for row, m, c in zip(self._rows, self.lengths, counts):
            self._ensure_capacity(row, m, m + c)
        full = all(c == n for c in counts)
        if full:
            flat = tokens.contiguous().view(-1)
        else:
            real = torch.arange(n)[None, :] < torch.tensor(counts)[:, None]
            flat = tokens[real].contiguous()
        N = flat.numel()
        E = ver.embed_dim
        packed = torch.empty(N, E, dtype=self.dtype)
        if N:
            kc, vc, cap, ek, ev, S = self._pointer_tables()
            rc = ver.lib.fd_forward_batch(ver._decoder.ptr, flat.data_ptr(), (ctypes.c_int * B)(*counts), B,
                                          (ctypes.c_int * B)(*self.lengths), kc, vc, cap, ek, ev, S,
                                          packed.data_ptr())
            ver._check(rc, flat)
        self.lengths = [m + c for m, c in zip(self.lengths, counts)]
        if full:
            return packed.view(B, n, E)
        hidden = torch.zeros(B, n, E, dtype=self.dtype)
        hidden[real] = packed
        return hidden
