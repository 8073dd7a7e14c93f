"""The baseline every speedup is measured against: fairseq's own ``SequenceGenerator``, set up as
``fairseq-generate`` sets it up (``prepare_for_inference_``: no attention weights unless asked for).

Runs beam search (default beam 5) or beam 1 (greedy) on the *same loaded model object* the engine
uses, at batch size 1 (one call per sentence) or batched (sentences sorted by length, left-padded
like fairseq's translation task, results returned in input order). Per-sentence time is the wall
time of its ``generate`` call (batched: the batch's time divided evenly among its sentences).

fairseq quirk kept on purpose: in a batch, ``max_len = max_len_a * src_len + max_len_b`` uses the
*padded* source width, so a batched run may allow longer outputs than the batch-1 run of the same
sentence (identical results whenever the length limit does not bind).
"""
from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any, List, Optional, Sequence

import torch

from .stats import peak_memory_mb, reset_peak_memory

__all__ = ["FairseqGenerator", "BaselineResult"]


@dataclass
class BaselineResult:
    id: int
    tokens: List[int]   # best hypothesis, ending with EOS (fairseq's hypo["tokens"])
    score: float
    time: float         # seconds attributed to this sentence
    batch_size: int
    peak_mem_mb: float = 0.0

    def to_dict(self):
        return {"id": self.id, "time": self.time, "out_len": len(self.tokens), "score": self.score,
                "batch_size": self.batch_size, "peak_mem_mb": self.peak_mem_mb}


class FairseqGenerator:
    """Thin wrapper around ``fairseq.sequence_generator.SequenceGenerator``.

    ``beam=1`` is fairseq greedy; ``max_len_a``/``max_len_b`` have fairseq's meaning (see
    :func:`fastdec.engine.loop.compute_max_len`). ``lenpen`` is fairseq's length penalty.
    """

    def __init__(self, model, tgt_dict, *, beam: int = 5, max_len_a: float = 0.0, max_len_b: int = 200,
                 lenpen: float = 1.0, unk_penalty: float = 0.0, device: Any = None):
        if isinstance(beam, bool) or not isinstance(beam, int) or beam < 1:
            raise ValueError(f"beam must be an integer >= 1, got {beam!r}")
        from fairseq.sequence_generator import SequenceGenerator

        # as fairseq-generate does (prepare_for_inference_): attention weights are not averaged and returned at
        # every decoder step unless asked for (print_alignment); without this the baseline does needless work
        # per step and our speedups over it are inflated. Applied once per model; the engine does not use
        # fairseq's decoder forward, so it is unaffected.
        model.make_generation_fast_(beamable_mm_beam_size=beam, need_attn=False)
        self.model = model
        self.tgt_dict = tgt_dict
        self.beam = beam
        self.device = torch.device(device) if device is not None else next(model.parameters()).device
        self.generator = SequenceGenerator([model], tgt_dict, beam_size=beam, max_len_a=max_len_a,
                                           max_len_b=max_len_b, len_penalty=lenpen, unk_penalty=unk_penalty)
        self.pad = tgt_dict.pad()
        self.eos = tgt_dict.eos()

    def _sync(self):
        if self.device.type == "cuda":
            torch.cuda.synchronize(self.device)

    def _run(self, batch: List[torch.Tensor]):
        from fairseq.data import data_utils

        # fairseq sets a BART model's beamable encoder attention only for beam > 1 and never resets it: beam 1 after
        # beam 5 on the same model (one benchmark process) would fold its keys by 5. Each generator sets its own.
        if hasattr(self.model, "set_beam_size"):
            self.model.set_beam_size(self.beam)
        src = data_utils.collate_tokens(batch, self.pad, self.eos, left_pad=True).to(self.device)
        lengths = torch.tensor([b.numel() for b in batch], device=self.device)
        sample = {"net_input": {"src_tokens": src, "src_lengths": lengths}}
        return self.generator.generate([self.model], sample)

    def generate(self, sources: Sequence[torch.Tensor], batch_size: int = 1,
                 max_tokens: Optional[int] = None) -> List[BaselineResult]:
        """Generate for every source (1-D LongTensors incl. EOS); results in input order."""
        if batch_size < 1:
            raise ValueError(f"batch_size must be >= 1, got {batch_size}")
        sources = [torch.as_tensor(s, dtype=torch.long).reshape(-1) for s in sources]
        order = list(range(len(sources))) if batch_size == 1 else sorted(
            range(len(sources)), key=lambda i: -sources[i].numel())
        results: List[Optional[BaselineResult]] = [None] * len(sources)
        i = 0
        with torch.inference_mode():
            while i < len(order):
                ids = order[i: i + batch_size]
                if max_tokens is not None:  # shrink the batch so padded tokens stay under max_tokens
                    while len(ids) > 1 and len(ids) * max(sources[j].numel() for j in ids) > max_tokens:
                        ids = ids[:-1]
                i += len(ids)
                reset_peak_memory(self.device)
                self._sync()
                t0 = time.perf_counter()
                hypos = self._run([sources[j] for j in ids])
                self._sync()
                dt = time.perf_counter() - t0
                mem = peak_memory_mb(self.device)
                for j, h in zip(ids, hypos):
                    best = h[0]
                    results[j] = BaselineResult(id=j, tokens=best["tokens"].tolist(), score=float(best["score"]),
                                                time=dt / len(ids), batch_size=len(ids), peak_mem_mb=mem)
        return results  # type: ignore[return-value]
