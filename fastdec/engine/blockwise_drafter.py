"""Blockwise parallel decoding (Stern et al. 2018) as a drafter of the draft -> verify -> accept engine.

The model is the *combined scoring and proposal model* of the paper (Sec. 4, 6): the fairseq plugin
``blockwise_transformer`` (``fastdec_fairseq/models/blockwise_transformer.py``), whose decoder features
``h`` feed p_1 (the scoring model = the decoder's own output layer, which the :class:`Verifier` uses) and,
through one extra multi-output feed-forward layer, the proposal heads p_2 .. p_k.

How the engine runs it (iteration ``n``; the prefix is ``o_0 .. o_j``, ``o_0`` = BOS):

* **predict** -- :meth:`BlockwiseDrafter.propose` reads ``state.last_hidden``: the final decoder
  features of the position that predicted the newest token ``o_j``, computed by the *previous
  verification pass* (``state.hidden[state.last_row]``). Heads p_2 .. p_k at that position predict
  ``o_{j+1} .. o_{j+k-1}`` (p_1 there predicted ``o_j`` itself, already appended by the loop). Only
  the small head layer and the vocabulary projection run here -- no decoder pass.
* **verify** -- the loop feeds ``[o_j] + draft`` (k positions) to the Verifier in ONE decoder pass;
  row ``i`` scores the draft token ``i`` with p_1.
* **accept** -- the acceptance rule (``accept_top1`` exact, ``accept_top_k`` top-k approximate
  (Sec. 5.1), ``with_min_block`` minimum block size ℓ (Sec. 5.3)) keeps ``a`` draft tokens; the loop
  appends them plus p_1's own token of row ``a``. So one iteration adds ``1 .. k`` tokens.

Because the verification pass returns the hidden states of all fed positions, the next block's
proposals come from that same pass (row ``a``): the verification substep of iteration ``n`` is merged
with the prediction substep of iteration ``n + 1`` and decoding takes ``m/k + 1`` decoder calls in the best
case instead of ``2m/k`` (the first call has no hidden state yet: it is a plain greedy step that produces
``o_1`` and the first proposals). With exact acceptance the output equals greedy decoding with p_1.

Usage (the drafter is named ``blockwise`` in :data:`fastdec.engine.drafters.DRAFTERS`)::

    fastdec bench --checkpoint bw.pt ... --methods greedy,blockwise:k=4,blockwise:k=4:topk=2:min_block=2

or in Python::

    drafter = BlockwiseDrafter(verifier.model, block_size=4)
    draft_verify_accept(verifier, src, drafter, accept_top1)

``block_size`` (k) defaults to the model's trained ``--block-size``; a smaller k uses the first k heads.

``head_precision="int8"`` runs the proposal computation (head layer + vocabulary projection of p_2..p_k)
with dynamically quantised int8 weights (PyTorch ``quantize_dynamic``, CPU only). On CPU at batch size 1
these matrix-vector products are memory-bound, and the paper's head layer (hidden size k * d_ffn, output
(k-1) * d_model, i.e. O(k^2) parameters) is larger than the whole decoder of a small model for k >= 6,
so float32 proposals can cost more than a decoder pass. Proposals never change the output under exact
acceptance (p_1, in the verifier's precision, decides), so int8 proposals keep decoding lossless; they
may change which tokens are proposed and hence the accepted block sizes slightly.
"""
from __future__ import annotations

from typing import TYPE_CHECKING, List, Optional

import torch
import torch.nn.functional as F
from torch import Tensor

from .acceptance import check_int
from .drafters import Drafter

if TYPE_CHECKING:  # pragma: no cover
    from .acceptance import AcceptanceRule
    from .state import DecodeState

__all__ = ["BlockwiseDrafter", "blockwise_head_of", "check_blockwise_settings", "blockwise_factory"]


def check_blockwise_settings(block_size, topk=1, min_block_size=1) -> tuple[int, int, int]:
    """Validate (k, top-k, ℓ) of blockwise decoding: ``k >= 1``, ``top-k >= 1``, ``1 <= ℓ <= k``.

    Returns the three values as ints; raises ``ValueError`` with the offending setting otherwise.
    """
    k = check_int("block size k", block_size, 1)
    t = check_int("top-k", topk, 1)
    ell = check_int("minimum block size ℓ", min_block_size, 1)
    if ell > k:
        raise ValueError(f"minimum block size ℓ = {ell} exceeds the block size k = {k} "
                         f"(Sec. 5.3 of Stern et al. requires 1 <= ℓ <= k)")
    return k, t, ell


def blockwise_head_of(model):
    """The ``BlockwiseHead`` of a ``blockwise_transformer`` model, with a clear error for other models."""
    dec = getattr(model, "decoder", None)
    head = getattr(dec, "blockwise_head", None)
    if head is None:
        raise ValueError(
            f"the blockwise drafter needs a combined scoring/proposal model (fairseq plugin model "
            f"'blockwise_transformer'); got {type(model).__name__} without a blockwise head. Decode a "
            f"checkpoint trained with --arch blockwise_transformer* and --criterion blockwise_cross_entropy.")
    return head


class BlockwiseDrafter(Drafter):
    """Proposes ``k - 1`` tokens from heads p_2 .. p_k at the last verified position (see module docstring).

    ``model`` is the (already loaded, eval-mode) ``blockwise_transformer``; the drafter precomputes the
    slices of the head weights it needs in the model's current device and dtype, so build it AFTER the
    :class:`Verifier` has moved the model (``make_drafter`` does, via its ``context``).
    ``mask_pad`` forbids the padding symbol in proposals (the verifier never accepts it, and the loop
    would cut the draft there).
    """

    name = "blockwise"

    def __init__(self, model, block_size: Optional[int] = None, mask_pad: bool = True,
                 head_precision: str = "float"):
        head = blockwise_head_of(model)
        trained = int(head.block_size)
        k = trained if block_size is None else check_int("block size k", block_size, 1)
        if k > trained:
            raise ValueError(f"block size k = {k} exceeds the model's trained block size {trained} "
                             f"(it has heads p_1..p_{trained} only)")
        self.block_size = k
        self.trained_block_size = trained
        self.p1_through_layer = bool(head.p1_through_layer)
        dec = model.decoder
        self.pad = dec.padding_idx if getattr(dec, "dictionary", None) is None else dec.dictionary.pad()
        self.mask_pad = bool(mask_pad)
        n = k - 1  # proposal heads p_2 .. p_k
        self.num_proposals = n
        precision = str(head_precision).lower()
        if precision in ("float", "fp32", "float32", "model"):
            precision = "float"
        elif precision not in ("int8", "qint8"):
            raise ValueError(f"head_precision must be 'float' (the model's dtype) or 'int8', got {head_precision!r}")
        else:
            precision = "int8"
        self.head_precision = precision
        self._q = None
        if n == 0:
            return
        with torch.no_grad():
            d = head.d_model
            # output slot of head i: i - 1 with p_1 through the layer, else i - 2 (p_1 on the identity path)
            first = 1 if self.p1_through_layer else 0
            self.w1 = head.fc1.weight.detach()
            self.b1 = head.fc1.bias.detach()
            self.w2 = head.fc2.weight.detach()[first * d:(first + n) * d]
            self.b2 = head.fc2.bias.detach()[first * d:(first + n) * d]
            proj = dec.output_projection
            self.out_w = proj.weight.detach()
            self.out_b = proj.bias.detach() if getattr(proj, "bias", None) is not None else None
        self.d_model = d
        if precision == "int8":
            self._q = _quantize(self.w1, self.b1, self.w2, self.b2, self.out_w, self.out_b)

    def proposal_logits(self, h: Tensor) -> Tensor:
        """Logits ``[k-1, V]`` of heads p_2 .. p_k from ONE feature vector ``h`` ``[C]`` (eval mode, no dropout)."""
        if self._q is not None:
            fc1, fc2, proj = self._q
            x = h.float()[None]
            s = fc2(F.relu(fc1(x))).view(self.num_proposals, self.d_model) + x
            return proj(s)
        u = F.relu(F.linear(h, self.w1, self.b1))
        s = F.linear(u, self.w2, self.b2).view(self.num_proposals, self.d_model) + h
        return F.linear(s, self.out_w, self.out_b)

    def propose(self, state: "DecodeState") -> List[int]:
        h = state.last_hidden
        if h is None or self.num_proposals == 0:
            return []  # first iteration: a plain greedy step that also computes the first hidden state
        logits = self.proposal_logits(h)
        if self.mask_pad:
            logits[:, self.pad] = float("-inf")
        return logits.argmax(dim=-1).tolist()

    def check_acceptance(self, rule: "AcceptanceRule") -> None:
        """Called by the loop before decoding: the rule's minimum block size ℓ must fit k (any top-k >= 1 does)."""
        check_blockwise_settings(self.block_size, min_block_size=rule.min_block_size)

    def __repr__(self) -> str:
        return (f"BlockwiseDrafter(k={self.block_size}, trained_k={self.trained_block_size}, "
                f"p1_through_layer={self.p1_through_layer}, head_precision={self.head_precision!r})")


def _quantize(w1, b1, w2, b2, out_w, out_b):
    """int8 dynamically quantised copies (CPU) of the head layer and the vocabulary projection."""
    import warnings

    if w1.device.type != "cpu":
        raise ValueError("head_precision='int8' is only available on CPU (the verifier's device is "
                         f"{w1.device}); use head_precision='float' on CUDA")
    import torch.nn as nn

    def linear(w, b):
        m = nn.Linear(w.size(1), w.size(0), bias=b is not None)
        with torch.no_grad():
            m.weight.copy_(w.float())
            if b is not None:
                m.bias.copy_(b.float())
        return m

    mods = nn.ModuleList([linear(w1, b1), linear(w2, b2), linear(out_w, out_b)]).eval()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            from torch.ao.quantization import quantize_dynamic

            q = quantize_dynamic(mods, {nn.Linear}, dtype=torch.qint8)
        except Exception as exc:  # pragma: no cover - depends on the torch build
            raise ValueError(f"head_precision='int8' is not supported by this PyTorch build: {exc}") from None
    return tuple(q)


def blockwise_factory(block_size: Optional[int] = None, mask_pad: bool = True, head_precision: str = "float",
                       context: Optional[dict] = None):
    ctx = context or {}
    verifier = ctx.get("verifier")
    loaded = ctx.get("loaded")
    model = verifier.model if verifier is not None else (loaded.model if loaded is not None else None)
    if model is None:
        raise ValueError("the blockwise drafter needs the loaded model (context 'verifier' or 'loaded')")
    return BlockwiseDrafter(model, block_size=block_size, mask_pad=bool(mask_pad), head_precision=head_precision)
