"""What the decoding loops need of the models they drive, declared as :class:`typing.Protocol` classes.

* :class:`VerifierProtocol` -- the batch-1 loop (:func:`~fastdec.engine.loop.draft_verify_accept`) and its
  projection (:class:`~fastdec.engine.projection.MaskedLogProbs`): the PyTorch
  :class:`~fastdec.engine.verifier.Verifier`, the fast backend's :class:`~fastdec.engine.fast_verifier.FastVerifier`
  and the efficient students' :class:`~fastdec.engine.student_verifier.StudentVerifier`. A verifier may add
  ``masked_top1(hidden, step, max_len, unk_penalty)``, a fused projection + masked argmax that exact acceptance
  then uses instead of the full log-probabilities.
* :class:`BatchedVerifierProtocol` -- the batched loop (:func:`~fastdec.engine.batched.decode_batch`):
  :class:`~fastdec.engine.batched.BatchedVerifier` and :class:`~fastdec.engine.fast_batched.FastBatchedVerifier`.
* :class:`GeneratorProtocol` -- the baselines that decode a corpus on their own:
  :class:`~fastdec.engine.fairseq_baseline.FairseqGenerator` and
  :class:`~fastdec.engine.ctranslate2_backend.CT2Generator`.

tests/engine/test_interfaces.py checks every class named here against its protocol (members and signatures).
"""
from __future__ import annotations

from typing import Any, Dict, List, Optional, Protocol, Sequence, runtime_checkable

import torch
from torch import Tensor

__all__ = ["VerifierProtocol", "BatchedVerifierProtocol", "GeneratorProtocol"]


@runtime_checkable
class VerifierProtocol(Protocol):
    """One sentence at a time: encode, feed tokens at the cache's end, roll the cache back."""

    device: torch.device
    eos: int
    pad: int
    unk: int
    vocab_size: int
    max_positions: int  # decoder positions: the output length limit is max_positions - 1
    src_tokens_device: Optional[Tensor]  # the source given to start, on device

    def check_source(self, src_tokens: Tensor) -> None:
        """Raise ``ValueError`` on a source the encoder cannot take."""

    def start(self, src_tokens: Tensor) -> Dict[str, List[Tensor]]:
        """Encode one source (ending with EOS), empty the cache; the fairseq encoder output."""

    def forward(self, tokens, *, need_logits: bool = True) -> Any:
        """Feed ``n`` tokens at the cache's end; an output whose ``hidden`` holds their final features ``[n, C]``."""

    def rollback(self, length: int) -> None:
        """Keep the first ``length`` cached positions."""

    def output_layer(self, hidden: Tensor) -> Tensor:
        """Vocabulary logits of final features ``[..., C]``."""


@runtime_checkable
class BatchedVerifierProtocol(Protocol):
    """B sentences at once, each row with its own cache length, over a batch-1 verifier's weights."""

    ver: VerifierProtocol  # the batch-1 verifier whose weights the rows share
    lengths: List[int]  # cached positions per row; assigning ``lengths[b] = m`` rolls row b back

    @property
    def batch_size(self) -> int:
        """Rows in the batch."""

    def start(self, sources: Sequence[Tensor]) -> Any:
        """Encode ``sources`` (1-D, each ending with EOS) and empty every row's cache."""

    def row_encoder_out(self, b: int, src_len: int) -> Dict[str, List[Tensor]]:
        """Row ``b``'s encoder output as the batch-1 verifier gives it."""

    def forward(self, tokens: Tensor, n_valid: Sequence[int]) -> Tensor:
        """Feed ``tokens`` ``[B, n]`` (row b's first ``n_valid[b]`` real) at each row's end: features ``[B, n, C]``."""

    def keep(self, rows: Sequence[int]) -> None:
        """Keep only ``rows`` (in this order): finished sentences leave."""


@runtime_checkable
class GeneratorProtocol(Protocol):
    """A baseline decoder of whole corpora (:class:`~fastdec.engine.fairseq_baseline.BaselineResult` per source)."""

    def generate(self, sources: Sequence[Tensor], batch_size: int = 1) -> List[Any]:
        """Decode every source (1-D LongTensors ending with EOS); results in input order."""
