"""Loading a trained fairseq checkpoint (and its dictionaries) for the engine and the baselines."""
from __future__ import annotations

import logging
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterable, Optional

import torch

from .verifier import resolve_device_dtype

logger = logging.getLogger(__name__)

__all__ = ["LoadedModel", "load_model", "make_verifier"]


@dataclass
class LoadedModel:
    model: Any          # fairseq TransformerModel (eval mode, on device/dtype)
    task: Any
    cfg: Any
    src_dict: Any
    tgt_dict: Any
    device: torch.device
    dtype: torch.dtype

    def encode(self, line: str) -> torch.Tensor:
        """A BPE'd source line -> 1-D LongTensor of ids with the trailing EOS (as fairseq builds it)."""
        return self.src_dict.encode_line(line, add_if_not_exist=False, append_eos=True).long()

    def decode(self, tokens: Iterable[int]) -> str:
        """Output ids -> space-separated (BPE'd) target tokens, without EOS/padding."""
        t = torch.as_tensor(list(tokens), dtype=torch.long)
        return self.tgt_dict.string(t)


def _import_plugin(user_dir: Optional[str]) -> None:
    from argparse import Namespace

    from fairseq import utils

    if user_dir:
        if not os.path.isdir(user_dir):
            raise ValueError(f"--user-dir {user_dir!r} is not a directory")
        utils.import_user_module(Namespace(user_dir=os.path.abspath(user_dir)))
        return
    try:  # the workflow's plugin registers its models/tasks; harmless for plain transformers
        import fastdec_fairseq  # noqa: F401
    except Exception as exc:  # pragma: no cover - depends on the other engineers' plugin
        logger.warning("could not import the fastdec_fairseq plugin: %s", exc)


def load_model(checkpoint, data_bin=None, *, device: Any = "cpu", dtype: Any = None,
               user_dir: Optional[str] = None, arg_overrides: Optional[dict] = None) -> LoadedModel:
    """Load one fairseq checkpoint as a :class:`LoadedModel` on ``device`` in ``dtype``.

    ``data_bin`` is the folder holding ``dict.{src,tgt}.txt`` (overrides the checkpoint's ``data``).
    """
    dev, dt = resolve_device_dtype(device, dtype)
    checkpoint = Path(checkpoint)
    if not checkpoint.is_file():
        raise ValueError(f"checkpoint not found: {checkpoint}")
    overrides = dict(arg_overrides or {})
    if data_bin is not None:
        data_bin = Path(data_bin)
        if not data_bin.is_dir():
            raise ValueError(f"data-bin directory not found: {data_bin}")
        overrides["data"] = str(data_bin)
    _import_plugin(user_dir)
    from fairseq import checkpoint_utils

    models, cfg, task = checkpoint_utils.load_model_ensemble_and_task([str(checkpoint)],
                                                                      arg_overrides=overrides)
    model = models[0].to(device=dev, dtype=dt)
    model.eval()
    return LoadedModel(model=model, task=task, cfg=cfg, src_dict=task.source_dictionary,
                       tgt_dict=task.target_dictionary, device=dev, dtype=dt)


def make_verifier(model, *, device: Any = None, dtype: Any = None, backend: str = "torch", causal: bool = True):
    """The engine's verifier for ``model``: the efficient student's own cached decoder (SSRU / AAN state per
    position, per-layer head counts) for ``efficient_student`` models, else the Transformer :class:`Verifier`;
    ``backend="fast"``: the Transformer's passes in C (:class:`~fastdec.engine.fast_verifier.FastVerifier`;
    ``fast-int8``: its linear layers in int8). A fast
    backend that cannot run this model or machine falls back to the PyTorch reference with a warning naming the
    reason (the verifier's ``backend`` attribute says which one runs). ``causal=False``: the bidirectional decoder
    forward of a Transformer (GAD's NAT drafter)."""
    from .fast_verifier import BACKENDS, FastBackendUnavailable, FastVerifier
    from .student_verifier import StudentVerifier, is_student
    from .verifier import Verifier

    if backend not in BACKENDS:
        raise ValueError(f"unknown verifier backend {backend!r}; choose from {', '.join(BACKENDS)}")
    if is_student(model):
        if backend != "torch":
            logger.warning("fast verifier backend: no C pass for efficient students; the PyTorch reference decodes")
        return StudentVerifier(model, device=device, dtype=dtype)
    if backend.startswith("fast"):
        try:
            return FastVerifier(model, device=device, dtype=dtype, causal=causal,
                                quantize="int8" if backend == "fast-int8" else None)
        except FastBackendUnavailable as exc:
            logger.warning("fast verifier backend unavailable, the PyTorch reference decodes instead: %s", exc)
    return Verifier(model, device=device, dtype=dtype, causal=causal)
