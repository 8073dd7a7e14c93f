"""CTranslate2 as a peer baseline: the same fairseq checkpoint converted by CTranslate2's own fairseq converter and
decoded by its C++ engine (greedy or beam search, float32 or int8), with fairseq's length conventions so that its
float32 greedy output is comparable token for token with the engine's greedy output.

* ``max_len = min(int(max_len_a * src_len + max_len_b), max_positions - 1)`` with ``src_len`` counting the source's
  EOS, as fairseq (:func:`fastdec.engine.loop.compute_max_len`); CTranslate2 gets it as ``max_decoding_length`` and
  ``min_decoding_length=1`` (fairseq never ends at step 0);
* the source is given without its EOS (the converted model appends it), the output gets fairseq's final EOS when
  CTranslate2 stopped at the length limit.

ctranslate2 is optional: :func:`require` names the package and the fix when it is missing.
"""
from __future__ import annotations

import os
import time
from typing import List, Optional, Sequence

import torch

from .fairseq_baseline import BaselineResult
from .loop import compute_max_len

__all__ = ["require", "convert", "CT2Generator", "COMPUTE_TYPES"]

COMPUTE_TYPES = ("float32", "int8", "int8_float32", "int16", "float16", "bfloat16", "int8_float16")


def require():
    try:
        import ctranslate2
    except ImportError as e:  # an optional peer, not needed by the default run
        raise ValueError("CTranslate2 rows need the ctranslate2 package: pip install ctranslate2 (see envs/)") from e
    return ctranslate2


def convert(checkpoint: str, data_bin: str, out_dir: str, *, source_lang: str, target_lang: str,
            user_dir: Optional[str] = None, force: bool = False) -> str:
    """Convert a fairseq checkpoint (float32 weights; int8 is chosen at load time by ``compute_type``)."""
    require()
    from ctranslate2.converters import FairseqConverter

    if not os.path.isfile(checkpoint):
        raise ValueError(f"{checkpoint}: no such checkpoint to convert")
    # fairseq checkpoints are pickled Namespaces (torch >= 2.6 loads weights only by default)
    FairseqConverter(checkpoint, data_bin, source_lang=source_lang, target_lang=target_lang, user_dir=user_dir,
                     unsafe_deserialization=True).convert(out_dir, force=force)
    return out_dir


class CT2Generator:
    """Decode with a converted model; results like :class:`fastdec.engine.fairseq_baseline.FairseqGenerator`'s."""

    def __init__(self, model_dir: str, src_dict, tgt_dict, *, beam: int = 1, compute_type: str = "float32",
                 max_len_a: float = 0.0, max_len_b: int = 200, max_positions: int = 1024, device: str = "cpu",
                 threads: int = 1):
        ct2 = require()
        if compute_type not in COMPUTE_TYPES:
            raise ValueError(f"compute_type {compute_type!r}: choose one of {', '.join(COMPUTE_TYPES)}")
        if isinstance(beam, bool) or not isinstance(beam, int) or beam < 1:
            raise ValueError(f"beam must be an integer >= 1, got {beam!r}")
        if not os.path.isfile(os.path.join(model_dir, "model.bin")):
            raise ValueError(f"{model_dir}: no converted CTranslate2 model (model.bin); convert the checkpoint first")
        self.translator = ct2.Translator(model_dir, device=device, compute_type=compute_type,
                                         intra_threads=threads, inter_threads=1)
        self.src_dict, self.tgt_dict = src_dict, tgt_dict
        self.beam, self.max_len_a, self.max_len_b, self.max_positions = beam, max_len_a, max_len_b, max_positions

    def generate(self, sources: Sequence[torch.Tensor], batch_size: int = 1) -> List[BaselineResult]:
        if batch_size < 1:
            raise ValueError(f"batch_size must be >= 1, got {batch_size}")
        eos = self.tgt_dict.eos()
        out: List[BaselineResult] = []
        for i in range(0, len(sources), batch_size):
            batch = [torch.as_tensor(s).reshape(-1) for s in sources[i: i + batch_size]]
            tokens = [[self.src_dict[t] for t in s[:-1].tolist()] for s in batch]
            # fairseq's limit of the longest source (a batch shares one limit, as in fairseq's padded batches)
            max_len = max(compute_max_len(int(s.numel()), self.max_len_a, self.max_len_b, self.max_positions)
                          for s in batch)
            t0 = time.perf_counter()
            res = self.translator.translate_batch(tokens, beam_size=self.beam, max_decoding_length=max_len,
                                                  min_decoding_length=1, return_end_token=True, return_scores=True)
            dt = time.perf_counter() - t0
            for j, r in enumerate(res):
                hyp = [self.tgt_dict.index(t) for t in r.hypotheses[0]]
                if not hyp or hyp[-1] != eos:
                    hyp.append(eos)
                out.append(BaselineResult(id=i + j, tokens=hyp, score=float(r.scores[0]), time=dt / len(batch),
                                          batch_size=len(batch)))
        return out
