"""GAD paper, Table 8: peak memory of each decoding method, each measured in a FRESH process.

A process' peak resident set size only grows, so comparing methods inside one process says nothing. Each method
is therefore decoded in its own child process (``fastdec gad-memory --child``) which reports:

* CPU: ``after_load_mb`` = resident memory once the models are loaded (``VmRSS``); the kernel's high-water mark
  is then reset (``/proc/self/clear_refs`` <- 5) and ``peak_mb`` = ``VmHWM`` after decoding (the peak during
  decoding, weights included). Where the reset is not possible, ``peak_mb`` is ``ru_maxrss`` (whole lifetime) and
  ``measure`` says so.
* CUDA: ``torch.cuda.memory_allocated`` after loading and ``max_memory_allocated`` during decoding (the paper
  reports the GPU's total utilisation, including the CUDA context; ours counts tensors only).

``weights_mb`` is the size of the parameters of the models the method needs (verifier, plus drafter for GAD).
"""
from __future__ import annotations

import json
import os
import resource
import subprocess
import sys
from typing import Callable, Dict, List, Optional, Sequence

__all__ = ["rss_mb", "reset_peak_rss", "peak_rss_mb", "param_mb", "measure_all", "child_result"]


def _status_kb(field: str) -> Optional[float]:
    try:
        with open("/proc/self/status") as f:
            for line in f:
                if line.startswith(field + ":"):
                    return float(line.split()[1])
    except OSError:
        return None
    return None


def rss_mb() -> Optional[float]:
    kb = _status_kb("VmRSS")
    return kb / 1024 if kb is not None else None


def reset_peak_rss() -> bool:
    """Reset the kernel's peak-RSS mark of this process (Linux); False when not possible."""
    try:
        with open("/proc/self/clear_refs", "w") as f:
            f.write("5")
        return True
    except OSError:
        return False


def peak_rss_mb(reset_ok: bool) -> float:
    kb = _status_kb("VmHWM") if reset_ok else None
    if kb is not None:
        return kb / 1024
    rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return rss / 2**20 if sys.platform == "darwin" else rss / 1024


def param_mb(*models) -> float:
    seen, total = set(), 0
    for m in models:
        if m is None:
            continue
        for p in m.parameters():
            if id(p) not in seen:
                seen.add(id(p))
                total += p.numel() * p.element_size()
    return total / 2**20


def child_result(method: str, device, load: Callable[[], tuple], decode: Callable[[], int]) -> Dict:
    """Run in the child: ``load() -> (models...)``, then ``decode() -> sentences``; returns the measurement dict."""
    import gc

    import torch

    models = load()
    gc.collect()
    if device.type == "cuda":
        torch.cuda.synchronize(device)
        after = torch.cuda.memory_allocated(device) / 2**20
        torch.cuda.reset_peak_memory_stats(device)
        n = decode()
        torch.cuda.synchronize(device)
        peak = torch.cuda.max_memory_allocated(device) / 2**20
        measure = "torch.cuda.max_memory_allocated during decoding"
    else:
        after = rss_mb()
        ok = reset_peak_rss()
        n = decode()
        peak = peak_rss_mb(ok)
        if after is None:
            after = float("nan")
        measure = "peak RSS during decoding (VmHWM after reset)" if ok else "peak RSS of the process (ru_maxrss)"
    return {"method": method, "device": str(device), "after_load_mb": after, "peak_mb": peak,
            "weights_mb": param_mb(*models), "measure": measure, "sentences": n}


def measure_all(methods: Sequence[str], child_argv: Callable[[str], List[str]],
                env: Optional[dict] = None) -> List[Dict]:
    """Run ``child_argv(method)`` for each method in a fresh process; each prints its JSON result last."""
    out = []
    for s in methods:
        proc = subprocess.run(child_argv(s), capture_output=True, text=True, env=env or dict(os.environ))
        if proc.returncode != 0:
            raise RuntimeError(f"memory measurement of {s} failed (exit {proc.returncode}):\n{proc.stderr[-3000:]}")
        lines = [line for line in proc.stdout.splitlines() if line.strip().startswith("{")]
        if not lines:
            raise RuntimeError(f"memory measurement of {s} printed no result:\n{proc.stdout[-2000:]}")
        out.append(json.loads(lines[-1]))
    return out
