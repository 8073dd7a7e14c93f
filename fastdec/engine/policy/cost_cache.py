"""The measured pass costs kept between runs, keyed by the model's weights, the backend and its code, the precision,
the device, the threads, the batch size and the horizon (``$FASTDEC_PASS_COST_CACHE``, default
``~/.cache/fastdec/pass_cost``; ``off``: none)."""
from __future__ import annotations

import dataclasses
import functools
import hashlib
import json
import logging
import os
import platform
import weakref
from pathlib import Path
from typing import Optional

import torch

from .pass_cost import PassCost

logger = logging.getLogger(__name__)

_CACHE_VERSION = 7  # raise when what measure_pass_cost measures changes (or what a pass costs: the PyTorch backend)


def _cache_dir() -> Optional[Path]:
    """``$FASTDEC_PASS_COST_CACHE`` (``off``: no cache), else ``<user cache>/fastdec/pass_cost``."""
    where = os.environ.get("FASTDEC_PASS_COST_CACHE")
    if where is not None:
        return None if where.strip().lower() in ("", "off", "0", "none") else Path(where)
    home = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(home) / "fastdec" / "pass_cost"


@functools.lru_cache(maxsize=None)
def _machine(device: torch.device) -> str:
    """The GPU's or the CPU's name (read once a process)."""
    if device.type == "cuda":
        return torch.cuda.get_device_name(device)
    try:
        for line in open("/proc/cpuinfo", encoding="utf-8"):
            if line.startswith(("model name", "flags", "Features")):
                return line.strip()  # the first such line: the CPU's model (or flags)
    except OSError:
        pass
    return platform.processor() or platform.machine()


# a model's weights digest, kept with the tensors' storages and in-place versions it was made from (a benchmark
# builds a policy per method: hashing a model's first values took 1.8 ms per policy)
_DIGESTS: "weakref.WeakKeyDictionary[torch.nn.Module, tuple]" = weakref.WeakKeyDictionary()


def _weights_digest(model: torch.nn.Module) -> bytes:
    """A digest of the model's weights: their names, shapes and first values."""
    seen = tuple((t.data_ptr(), t._version) for t in model.parameters())
    kept = _DIGESTS.get(model)
    if kept is not None and kept[0] == seen:
        return kept[1]
    h = hashlib.sha256()
    for name, t in model.state_dict().items():
        h.update(f"{name}{tuple(t.shape)}".encode())
        h.update(t.detach().reshape(-1)[:32].to("cpu", torch.float64).numpy().tobytes())
    _DIGESTS[model] = (seen, h.digest())
    return h.digest()


def pass_cost_key(verifier, horizon: int, batch: int) -> str:
    """What a measured pass cost depends on: the model's weights (their names, shapes and first values), the backend
    and its code (torch's version; the fast backend's compiled library, named by its source, flags and CPU),
    precision and device (the GPU's or CPU's name), torch's threads, the batch size and the horizon."""
    h = hashlib.sha256(_weights_digest(verifier.model))
    library = os.path.basename(getattr(getattr(verifier, "lib", None), "_name", "") or "")
    h.update("\0".join(map(str, [_CACHE_VERSION, getattr(verifier, "backend", "torch"), library, torch.__version__,
                                  verifier.dtype, _machine(verifier.device), torch.get_num_threads(), batch,
                                  horizon])).encode())
    return h.hexdigest()[:24]


def cached_pass_cost(key: str) -> Optional[PassCost]:
    """The pass cost stored under ``key``, or None (no cache, no entry, or an unreadable one)."""
    folder = _cache_dir()
    if folder is None:
        return None
    try:
        return PassCost(**json.loads((folder / f"{key}.json").read_text(encoding="utf-8")))
    except (OSError, ValueError, TypeError):
        return None


def store_pass_cost(key: str, cost: PassCost) -> None:
    """Keep ``cost`` under ``key`` (atomically; a folder that cannot be written only costs a measurement next time)."""
    folder = _cache_dir()
    if folder is None:
        return
    try:
        folder.mkdir(parents=True, exist_ok=True)
        tmp = folder / f".{key}.{os.getpid()}.tmp"
        tmp.write_text(json.dumps(dataclasses.asdict(cost)), encoding="utf-8")
        os.replace(tmp, folder / f"{key}.json")
    except OSError as exc:
        logger.debug("pass cost not cached in %s: %s", folder, exc)
