"""The policy's choices in C (``native/choice.c``, a Python extension module compiled on first use): the batched
choice on a fused pass (the Python loop of :meth:`~fastdec.engine.policy.batched_choice.BatchedChoice.choose_batch`
read a position in about 2.7 us, 5-8 % of a batched decode at B = 2-8 on the fast backend), and at batch 1 the
counting and choice (a sentence's count lists read and written in place) and the fit of a drafted pass's cost. Each
returns what the Python code it stands for returns, bit for bit (tested on random inputs); without a C compiler or
Python's headers the Python code decides."""
from __future__ import annotations

import importlib.machinery
import importlib.util
import logging
import sys
import sysconfig
from pathlib import Path
from typing import List, Sequence, Tuple

from ..native_build import NativeUnavailable, compiled

logger = logging.getLogger(__name__)

# no -ffast-math, no contraction into fused multiply-adds: every number as Python computes it
_CFLAGS = ["-O2", "-fno-math-errno", "-ffp-contract=off", "-fPIC", "-shared"]
_LOADED: dict = {}  # "module": the extension module, or None where it cannot be built here


def choice_module():
    """The compiled choices (``choose_priced``, ``choose_fused``, ``batch_step``, ``take_held_step``, ``new_batch``,
    ``start_batch``, ``count_batch``, ``observe_fused``, ``observe_batch``, ``count_sentence``, ``best_length``,
    ``start_sentence``, ``choose_one``, ``observe_iteration``, ``flush_iterations``, ``fit_add``, ``fold``, ``rates``),
    or None where they cannot be built (said once, at debug level: the Python code decides)."""
    if "module" in _LOADED:
        return _LOADED["module"]
    include = sysconfig.get_paths().get("include")
    try:
        if not include or not (Path(include) / "Python.h").is_file():
            raise NativeUnavailable(f"Python's headers are not installed (no Python.h in {include})")
        # (the interpreter's version keys the build: an extension module is built for one)
        path = compiled("choice.c", "choice", [*_CFLAGS, f"-I{include}", f"-DFD_PY={sys.hexversion}"],
                        "the policy's choices")
        loader = importlib.machinery.ExtensionFileLoader("_fd_choice", str(path))
        module = importlib.util.module_from_spec(importlib.util.spec_from_loader("_fd_choice", loader))
        loader.exec_module(module)
    except (NativeUnavailable, OSError, ImportError) as exc:
        logger.debug("the policy's choices run in Python: %s", exc)
        module = None
    _LOADED["module"] = module
    return module


def choose_fused(module, policy, states, limits: Sequence[int], cost, B: int, par: Sequence[float],
                 most: int) -> Tuple[int, List[int], float, float, int]:
    """The C choice for ``states`` (``par``: weight, floor, greedy step, fixed part, factor, seconds per position
    read, padding's seconds a position, a first bet's cap, the bar): ``(positions taken, draft lengths, tokens per
    second promised, tokens expected, positions read)``."""
    states = states if isinstance(states, list) else list(states)
    # (what t tokens fed and t rows projected add to the pass, and the least one more token adds from t on)
    tables = policy._extras.get(B)
    if tables is None or tables[0] is not cost or len(tables[3]) != len(tables[1]):  # (the first table grows in
        tables = _tables(policy, cost, B, 16)  # place: read by other sizes)
    while True:
        # (the C reads each row's counts, drafter start and tokens left from its state: BatchedChoice._tokens_left)
        got = module.choose_fused(limits, states, policy.q, policy.q_first, tables[1], tables[2], tables[3],
                                  policy._drafter_s, policy._start_s, par, most)
        if got[0] != -1:
            return got
        tables = _tables(policy, cost, B, got[1])  # too short: extended as far as the choice read, asked again


def choose_priced(module, policy, states, cost, B: int, *kept):
    """:meth:`~fastdec.engine.policy.batched_choice.BatchedChoice.choose_batch`'s priced choice on a fused pass with
    its terms made in C (the rows' limits, and the greedy pass, line, scale and bar it is priced with): ``(positions
    taken, draft lengths, tokens per second promised, tokens expected, positions read, limits, (the drafted pass's
    fixed part, its factor, a greedy pass, the bar, the floor, a first bet's tokens))``, or None where no greedy pass
    of about ``B`` rows was measured yet. With ``kept`` -- the choice's start (a ``time.perf_counter()`` reading) and
    the positions read from which its time per position is measured -- a chosen draft's promise is kept in the policy
    and only its draft lengths are returned (a list)."""
    states = states if isinstance(states, list) else list(states)
    while True:
        got = module.choose_priced(policy, states, cost, B, *kept)
        if type(got) is list or got[0] >= 0:
            return got
        if got[0] == -2:
            return None
        # the tables are missing or too short: made as far as the choice reads them, and asked again
        _tables(policy, cost, B, got[1])


def _tables(policy, cost, B: int, upto: int) -> tuple:
    """``(cost, *_fused_tables, _min_marginal)`` for a batch of ``B`` rows, kept under the int ``B`` (the C looks them
    up with no key to build, and checks they were made for ``cost``)."""
    tables = policy._extras[B] = (cost, *policy._fused_tables(cost, B, upto), policy._min_marginal(cost, B))
    return tables
