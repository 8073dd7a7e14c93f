"""The batched choice on a fused pass in C (``native/choice.c``): the Python loop of
:meth:`~fastdec.engine.policy.batched_choice.BatchedChoice.choose_batch` read a position in about 2.7 us, 5-8 % of a
batched decode at B = 2-8 on the fast backend. The C choice reads the same positions by the same arithmetic and returns
the same draft lengths bit for bit (tested on random batches); without a C compiler the Python loop makes it."""
from __future__ import annotations

import ctypes
import logging
from array import array
from typing import List, Optional, Sequence, Tuple

from ..native_build import NativeUnavailable, compiled

logger = logging.getLogger(__name__)

# no -ffast-math, no contraction into fused multiply-adds: every number as Python computes it
_CFLAGS = ["-O2", "-fno-math-errno", "-ffp-contract=off", "-fPIC", "-shared", "-std=c99"]
_LOADED: dict = {}  # "lib": the library, or None where it cannot be built here


def choice_library() -> Optional[ctypes.CDLL]:
    """The compiled choice, or None where it cannot be built (said once, at debug level: the Python loop decides)."""
    if "lib" in _LOADED:
        return _LOADED["lib"]
    try:
        lib = ctypes.CDLL(str(compiled("choice.c", "choice", _CFLAGS, "the policy's batched choice")))
    except (NativeUnavailable, OSError) as exc:
        logger.debug("the batched choice runs in Python: %s", exc)
        lib = None
    else:
        p, i = ctypes.c_void_p, ctypes.c_int
        lib.fd_choose_fused.restype = i
        lib.fd_choose_fused.argtypes = [i, p, p, p, p, p, p, p, p, p, i, p, p, i, p, p, i, p, i, p, p, p]
    _LOADED["lib"] = lib
    return lib


def _tables(policy, cost, B: int, upto: int) -> Tuple[int, int, int]:
    """What t draft tokens add to the pass and the least one more adds from t on (``_extra_upto``, ``_least_steps``)
    as C doubles, kept beside them (made again when they grow): ``(length, address, address)``."""
    extra = policy._extra_upto(cost, B, upto)
    key = ("c", id(cost), B)
    have = policy._extras.get(key)
    if have is None or len(have[0]) != len(extra):
        have = policy._extras[key] = (array("d", extra), array("d", policy._least_steps(cost, B, extra)))
    return len(extra), have[0].buffer_info()[0], have[1].buffer_info()[0]


def choose_fused(lib, policy, states, limits: Sequence[int], cost, B: int, par: Sequence[float],
                 most: int) -> Tuple[int, List[int], float, float, int]:
    """The C choice for ``states`` (``par``: weight, floor, greedy step, fixed part, factor, seconds per position
    read, padding's seconds a position, a first bet's cap, the bar): ``(positions taken, draft lengths, tokens per
    second promised, tokens expected, positions read)``."""
    # a sentence's counts as C ints (kept as lists: the batch-1 choice and counting read and write them faster)
    keep = []  # (arrays whose addresses are passed: alive until the call returns)
    reach, acc = (ctypes.c_void_p * B)(), (ctypes.c_void_p * B)()
    for r, st in enumerate(states):
        sent = st.extra.get("policy_counts")
        if sent is not None:
            got = (array("i", sent[0]), array("i", sent[1]))
            keep.append(got)
            reach[r], acc[r] = got[0].buffer_info()[0], got[1].buffer_info()[0]
    rows = array("i", limits)
    rows.extend([not st.extra.get("drafter_started") for st in states])
    rows.extend([policy._tokens_left(st) for st in states])
    rows.extend([0] * (B + 1))  # (the draft lengths and the positions read, written by the choice)
    at = rows.buffer_info()[0]
    size = rows.itemsize
    rates = policy._rates_c
    if rates is None:  # (dropped at each refresh, which is what changes the rates)
        rates = policy._rates_c = (array("d", policy.q), array("d", policy.q_first))
    q, q_first = rates
    d_table, s_table = policy._drafter_s, policy._start_s
    d_keys, s_keys = array("i", d_table), array("i", s_table)
    d_vals, s_vals = array("d", d_table.values()), array("d", s_table.values())
    reals = array("d", par)
    reals.extend((0.0, 0.0))  # (the promise and the tokens expected, written by the choice)
    r_at = reals.buffer_info()[0]
    upto = 16
    while True:
        n_extra, extra, least = _tables(policy, cost, B, upto)
        taken = lib.fd_choose_fused(B, at, reach, acc, at + size * B, at + 2 * size * B, q.buffer_info()[0],
                                    q_first.buffer_info()[0], extra, least, n_extra, d_keys.buffer_info()[0],
                                    d_vals.buffer_info()[0], len(d_keys), s_keys.buffer_info()[0],
                                    s_vals.buffer_info()[0], len(s_keys), r_at, most, at + 3 * size * B,
                                    r_at + 9 * reals.itemsize, at + 4 * size * B)
        if taken != -1:
            break
        upto = rows[-1]  # the tables were too short: extended as far as the choice read, and asked again
    if taken < 0:
        raise MemoryError("the batched choice could not allocate its tables")
    return taken, rows[3 * B: 4 * B].tolist(), reals[9], reals[10], rows[-1]
