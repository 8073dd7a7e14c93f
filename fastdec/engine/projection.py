"""The verifier's vocabulary projection under fairseq's beam-1 constraints, row by row as the acceptance rules ask.

* :func:`vocab_log_probs` -- log-probabilities of final decoder features: never padding, ``unk_penalty`` on UNK;
* :func:`constrain_steps` -- the step-dependent constraints: no EOS at step 0 (min_len 1), only EOS from ``max_len``;
* :class:`MaskedLogProbs` -- one sentence's verifier pass, projected rows on demand (the batch-1 loop);
* :class:`BatchedMaskedLogProbs` -- a batched pass ``[B, n, C]``, every row at its own step (the batched loop).
"""
from __future__ import annotations

from typing import List, Optional, Sequence

import torch
from torch import Tensor

__all__ = ["MaskedLogProbs", "BatchedMaskedLogProbs", "vocab_log_probs", "constrain_steps", "projects_real_positions",
           "feeds_real_tokens_only"]

_NEG_INF = float("-inf")


class MaskedLogProbs:
    """``rows(start, end)``: log-probabilities ``[end - start, V]`` of rows ``start .. end - 1`` of the verifier pass
    given to :meth:`of` (fed at position ``j``: row ``i`` predicts ``o_{j+1+i}``) under fairseq's beam-1 constraints:
    no padding, an optional unknown-word penalty, no EOS as the first token (min_len 1), only EOS from step ``max_len``
    on. Rows are projected to the vocabulary only when asked for; built once per sentence (no per-pass closure)."""

    __slots__ = ("verifier", "max_len", "unk_penalty", "hidden", "j", "lazy")

    def __init__(self, verifier, max_len: int, unk_penalty: float = 0.0):
        self.verifier, self.max_len, self.unk_penalty = verifier, max_len, unk_penalty
        # exact acceptance projects chunk by chunk on CPU; on CUDA a host sync per chunk costs more than the rows
        self.lazy = verifier.device.type == "cpu"
        self.hidden: Optional[Tensor] = None
        self.j = 0

    def of(self, hidden: Tensor, j: int) -> "MaskedLogProbs":
        self.hidden, self.j = hidden, j
        return self

    def __call__(self, start: int, end: int) -> Tensor:
        hidden = self.hidden
        lp = vocab_log_probs(self.verifier, hidden if start == 0 and end == hidden.size(0) else hidden[start:end],
                             self.unk_penalty)
        return constrain_steps(lp, self.j + start, self.max_len, self.verifier.eos)

    def top1(self, start: int, end: int) -> List[int]:
        """The verifier's tokens of rows ``start .. end - 1``: the argmax of :meth:`__call__`'s rows, or the
        verifier's own fused projection + masked argmax when it has one (the fast verifier's ``masked_top1``)."""
        fused = getattr(self.verifier, "masked_top1", None)
        if fused is not None:
            return fused(self.hidden[start:end], self.j + start, self.max_len, self.unk_penalty)
        return self(start, end).argmax(dim=-1).tolist()


def vocab_log_probs(verifier, hidden: Tensor, unk_penalty: float = 0.0) -> Tensor:
    """Log-probabilities ``[..., V]`` of final decoder features ``[..., C]``: never padding, ``unk_penalty``
    subtracted from UNK (fairseq's beam-1 constraints that do not depend on the step)."""
    logits = verifier.output_layer(hidden)
    if logits.dtype in (torch.float16, torch.bfloat16):  # fairseq upcasts half precision the same way
        logits = logits.float()
    lp = torch.log_softmax(logits, dim=-1)
    lp[..., verifier.pad] = _NEG_INF
    if unk_penalty:
        lp[..., verifier.unk] -= unk_penalty
    return lp


def constrain_steps(lp: Tensor, step: int, max_len: int, eos: int) -> Tensor:
    """In place on one sentence's rows ``lp`` ``[c, V]`` predicting output steps ``step .. step + c - 1``: no EOS
    at step 0 (min_len 1), only EOS from step ``max_len`` on. Returns ``lp``."""
    if step == 0:
        lp[0, eos] = _NEG_INF
    first = max(max_len - step, 0)  # first row (of these) whose step >= max_len
    if first < lp.size(0):
        lp[first:, :eos] = _NEG_INF
        lp[first:, eos + 1:] = _NEG_INF
    return lp


class BatchedMaskedLogProbs:
    """One batched verifier pass (final features ``[B, n, C]``; row ``b`` fed at position ``steps[b]``, so its row
    ``i`` predicts output step ``steps[b] + i``), projected as :class:`AcceptanceRule.accept_batch
    <fastdec.engine.acceptance.AcceptanceRule.accept_batch>` asks. Built once per batch; :meth:`of` per pass."""

    __slots__ = ("verifier", "unk_penalty", "lazy", "fused", "fused_rows", "real_positions", "hidden", "steps",
                 "max_lens")

    def __init__(self, verifier, unk_penalty: float = 0.0):
        self.verifier, self.unk_penalty = verifier, unk_penalty
        self.lazy = verifier.device.type == "cpu"  # as MaskedLogProbs.lazy
        # the fast backend's fused projection + masked argmax: one sentence's rows, or rows of many sentences in one
        # call (else None)
        self.fused = getattr(verifier, "masked_top1", None)
        self.fused_rows = getattr(verifier, "masked_top1_rows", None)
        self.real_positions = projects_real_positions(verifier)
        self.hidden: Optional[Tensor] = None
        self.steps: List[int] = []
        self.max_lens: List[int] = []

    def of(self, hidden: Tensor, steps: List[int], max_lens: List[int]) -> "BatchedMaskedLogProbs":
        self.hidden, self.steps, self.max_lens = hidden, steps, max_lens
        return self

    @property
    def width(self) -> int:
        """Positions fed per row (the longest row's; shorter rows are padded)."""
        return self.hidden.size(1)

    def row(self, b: int) -> MaskedLogProbs:
        """Row ``b`` as the batch-1 loop's projection of its pass."""
        return MaskedLogProbs(self.verifier, self.max_lens[b], self.unk_penalty).of(self.hidden[b], self.steps[b])

    def log_probs(self, counts: Sequence[int]) -> List[Tensor]:
        """Every row's masked log-probabilities of its first ``counts[b]`` positions, from ONE projection of the
        whole pass."""
        lp_all = vocab_log_probs(self.verifier, self.hidden, self.unk_penalty)
        eos = self.verifier.eos
        return [constrain_steps(lp_all[b, :c], self.steps[b], self.max_lens[b], eos) for b, c in enumerate(counts)]

    def top1(self, rows: List[int], start: int, end: int,
             lengths: Optional[Sequence[int]] = None) -> List[List[int]]:
        """The verifier's tokens of positions ``start .. end - 1`` of each of ``rows`` (ascending row indices): the
        masked argmax, ``rows`` projected together (one host transfer). ``lengths[i]`` (optional): row ``rows[i]``'s
        real positions; a row gets no tokens past them, and on a CPU or the fast backend only the real positions are
        projected (:meth:`_top1_real`)."""
        hidden = self.hidden
        if lengths is not None and self.real_positions:
            return self._top1_real(rows, start, end, lengths)
        if len(rows) == hidden.size(0):
            h = hidden[:, start:end]
        else:
            h = hidden.index_select(0, torch.tensor(rows, device=hidden.device))[:, start:end]
        lp = vocab_log_probs(self.verifier, h, self.unk_penalty)
        eos = self.verifier.eos
        for r, b in enumerate(rows):
            constrain_steps(lp[r], self.steps[b] + start, self.max_lens[b], eos)
        return lp.argmax(dim=-1).tolist()

    def _top1_real(self, rows: List[int], start: int, end: int, lengths: Sequence[int]) -> List[List[int]]:
        """:meth:`top1` on the rows' real positions only, gathered into one projection (the padding of a batch where a
        few rows draft long would otherwise be projected too: on a CPU the projection costs its rows): through the
        fast backend's ``masked_top1_rows`` (one C call), else one matmul, each row's steps masked on its slice."""
        hidden = self.hidden
        width = hidden.size(1)
        ends = [min(end, n, width) for n in lengths]
        flat, steps, lens = [], [], []
        for b, e in zip(rows, ends):
            for p in range(start, e):
                flat.append(b * width + p)
                steps.append(self.steps[b] + p)
                lens.append(self.max_lens[b])
        if not flat:
            return [[] for _ in rows]
        h = hidden.reshape(-1, hidden.size(-1)).index_select(0, torch.tensor(flat, device=hidden.device))
        if self.fused_rows is not None:
            tokens = self.fused_rows(h, steps, lens, self.unk_penalty)
        else:
            lp = vocab_log_probs(self.verifier, h, self.unk_penalty)
            eos, at = self.verifier.eos, 0
            for b, e in zip(rows, ends):
                k = max(e - start, 0)
                if k:
                    constrain_steps(lp[at: at + k], self.steps[b] + start, self.max_lens[b], eos)
                at += k
            tokens = lp.argmax(dim=-1).tolist()
        out, at = [], 0
        for e in ends:
            k = max(e - start, 0)
            out.append(tokens[at: at + k])
            at += k
        return out


def feeds_real_tokens_only(verifier) -> bool:
    """Whether a batched decoder pass on ``verifier`` feeds only each row's real tokens (the fast backend's rows, fused
    in C), rather than every row padded to the widest draft (PyTorch, on any device)."""
    return getattr(verifier, "masked_top1_rows", None) is not None


def projects_real_positions(verifier) -> bool:
    """Whether the batched exact rule projects only each row's real positions on ``verifier`` (the fast backend's
    fused rows, or any verifier on a CPU), so a pass's projection costs its drafted tokens, not the padded width."""
    return feeds_real_tokens_only(verifier) or verifier.device.type == "cpu"
