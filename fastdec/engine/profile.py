"""How much one verification pass costs as a function of the number of tokens it checks.

Every draft -> verify -> accept method trades decoder passes for longer passes: IAD verifies up to the whole
source at once, GAD k+1 tokens, Blockwise k. Its wall-clock speedup over greedy is therefore about
``tokens per iteration / (cost of a pass of that length / cost of a one-token pass)``. On a GPU a pass of
k tokens costs about as much as a one-token pass (the papers' setting); on a CPU the cost grows with k
once the weights stay in cache, i.e. for small models. :func:`verify_cost` measures that curve on a real
verifier, so the benchmark tables can be read against it (``scripts/verify_cost.py``).
"""
from __future__ import annotations

import statistics
import time
from typing import Dict, List, Sequence

import torch

from .verifier import Verifier

__all__ = ["verify_cost"]


def verify_cost(verifier: Verifier, src_tokens: torch.Tensor, ks: Sequence[int], *, prefix_len: int = 8,
                repeats: int = 20, warmup: int = 3, need_log_probs: bool = True) -> List[Dict[str, float]]:
    """Median wall time of one ``Verifier.forward`` of ``k`` tokens after a ``prefix_len`` cached prefix.

    The pass is rolled back after each measurement, so every repeat sees the same cache length. Token ids are
    the source's (any ids would do: the cost does not depend on them). Returns one row per k with
    ``ms_per_pass``, ``ms_per_token`` and ``cost_vs_k1`` (pass cost relative to a one-token pass).
    """
    ks = [int(k) for k in ks]
    if not ks or min(ks) < 1:
        raise ValueError(f"block sizes must be integers >= 1, got {list(ks)}")
    if prefix_len < 1 or repeats < 1 or warmup < 0:
        raise ValueError("prefix_len and repeats must be >= 1, warmup >= 0")
    if prefix_len + max(ks) > verifier.max_positions:
        raise ValueError(f"prefix_len + max k = {prefix_len + max(ks)} exceeds the model's "
                         f"max_target_positions ({verifier.max_positions})")
    src = torch.as_tensor(src_tokens, dtype=torch.long)
    pool = src[src != verifier.eos].tolist() or [verifier.unk]
    ids = [pool[i % len(pool)] for i in range(prefix_len + max(ks))]
    sync = torch.cuda.synchronize if verifier.device.type == "cuda" else (lambda: None)
    rows = []
    with torch.inference_mode():
        verifier.start(src)
        verifier.forward(torch.tensor([verifier.eos] + ids[: prefix_len - 1]))
        for k in sorted(set(ks)):
            feed = torch.tensor(ids[prefix_len: prefix_len + k])
            times = []
            for i in range(warmup + repeats):
                sync()
                t0 = time.perf_counter()
                out = verifier.forward(feed)
                if need_log_probs:
                    out.log_probs.argmax(dim=-1).tolist()
                sync()
                if i >= warmup:
                    times.append(time.perf_counter() - t0)
                verifier.rollback(prefix_len)
            ms = 1000 * statistics.median(times)
            rows.append({"k": k, "ms_per_pass": ms, "ms_per_token": ms / k})
    base = next((r["ms_per_pass"] for r in rows if r["k"] == 1), None)
    for r in rows:
        r["cost_vs_k1"] = r["ms_per_pass"] / base if base else None
    return rows
