"""The workflow's device and precision (config keys ``device`` and ``dtype``), checked before any job runs.

``dtype`` is the precision of training (fairseq ``--fp16`` / ``--bf16`` mixed precision on CUDA) and of every
benchmark (``fastdec bench --dtype``: the engine and fairseq's generator on the same converted weights). Half
precision needs CUDA; a local run of a ``device: cuda`` config needs a CUDA build of torch that sees a GPU. A dry
run, or a run that submits its jobs to a cluster (a profile with an executor), is planned without a GPU.
"""
from __future__ import annotations

__all__ = ["check_device", "HALF"]

HALF = ("float16", "bfloat16")


def check_device(config: dict, *, local_run: bool, cuda_available=None) -> None:
    """Raise ``ValueError`` naming the key when ``device``/``dtype`` cannot work here (see the module docstring)."""
    device, dtype = config.get("device", "cpu"), config.get("dtype", "float32")
    if dtype in HALF and device != "cuda":
        raise ValueError(f"config dtype: {dtype} needs device: cuda (half precision on CPU is slow or missing); "
                         "set dtype: float32, or device: cuda on a GPU machine")
    if device == "cuda" and local_run:
        if cuda_available is None:
            import torch

            cuda_available = torch.cuda.is_available()
        if not cuda_available:
            import torch

            raise ValueError(f"config device: cuda, but torch {torch.__version__} sees no CUDA GPU on this machine; "
                             "set device: cpu, run on a GPU machine (scripts/gpu_run.sh), or submit the jobs to GPU "
                             "nodes with a cluster profile (profiles/slurm)")
