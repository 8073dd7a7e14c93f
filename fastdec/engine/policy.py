"""Cost-aware draft lengths: verify only the draft tokens that pay for their place in the pass.

A draft position that the verifier accepts with probability ``p`` saves a whole iteration only if ``p`` is worth more
than what the position adds to the pass. On a compute-bound device (a CPU) a pass of ``n`` tokens costs about ``n``
one-token passes, so a long draft that is mostly rejected makes decoding slower than greedy; on a GPU a pass of 64
tokens costs about one pass of 1, and long drafts pay. :class:`CostAwarePolicy` decides per iteration:

* **what a pass costs** (:class:`PassCost`, measured by :func:`measure_pass_cost` on the verifier at hand -- its
  model, backend, device, precision and batch size -- in well under a second, and kept in a cache keyed by those
  (``$FASTDEC_PASS_COST_CACHE``, default ``~/.cache/fastdec/pass_cost``; ``off``: none), so a later policy on the same
  model and machine reads it instead; ``calibrate`` measures again): one greedy iteration of the loop, everything
  included; a decoder pass of ``t`` fed tokens (in a batch also one row drafting one token: what any draft adds to a
  pass; and one row drafting wide beside one-token rows: what the padding of the shorter rows costs); projecting ``r``
  rows to the vocabulary; and, measured while decoding, one call of the drafter;
* **what drafts really add**: the calibration is a prior, not the truth. Every drafted pass's measured extra time
  (beyond a greedy pass of as many rows; in a batch, one of the same batch of about as many rows) is
  fitted on the calibration's prediction as ``fixed + factor * predicted`` over the recent passes
  (:class:`_ExtraFit`; one line for batch 1, one per batch size in powers of two), each pass counting at most a
  third or three times what the line says (a pass that met a cold cache moves it a step);
* **how often each draft position is accepted**: running counts by position (1 = the first draft token), across the
  input and per sentence; a sentence's estimate leans on its own counts as they come in, and a sentence without any
  decides with the counts of the input's first drafts (across all iterations the counts lean towards the sentences
  that kept drafting);
* **the draft length** ``n`` in ``{0, ..., k}`` that maximises expected tokens per second, a draft only where it
  promises ``margin`` (5 %) more than a greedy step (where the promise is smaller, the measured costs' noise would
  decide, and in a batch the first batch's long sentences make every token dearer than the calibration says): with
  ``q_m`` the chance that position ``m`` is accepted once ``1 .. m-1`` were, ``E(n) = 1 + sum_{m<=n} prod_{l<=m} q_l``
  tokens for one iteration of cost
  ``greedy step + [n > 0] * (drafter + fixed) + factor * (pass(n+1) - pass(1) + projection)``.
  ``n = 0`` is one plain greedy step with no drafter call at all. While ``n = 0`` wins, the drafter is asked again (a
  *probe* of up to 8 tokens) once the greedy time since it was last asked is 200 times what the probe costs: probes
  cost at most 0.5 %, and a drafter that starts to pay is noticed. Until then the batch-1 loop takes greedy steps
  without asking (:attr:`CostAwarePolicy.hold`). A hold carries into the next sentence unless that sentence's first
  draft promises ``resume`` (25 %) more than a greedy step: one sentence's rejected drafts must not keep the next
  ones greedy, and a drafter that only just pays stays held. A new batch makes its choice afresh.

In a batch the same choice is made for all rows at once: every row's positions are ranked by their value
``prod q`` and the pass takes the best ones while tokens per second grow (each row drafts a prefix of its own
proposal, so a row's output never depends on the others); the drafter is charged for (and starts) only the rows
asked. A row's drafter start is paid once a sentence and serves its later drafts too, so an iteration is charged the
share of the starts that the new rows' expected tokens make of the tokens they have left (an output taken to be as
long as its source). A batch's probe (and its first draft, before any count) asks only a few rows (``probe_rows``,
4). A drafted pass is judged against this batch's greedy pass of the nearest number of rows (within a factor of two),
and the run's first batch of about as many rows takes one greedy step before it drafts, to measure one. Every drafted
batch pass is also judged by what it gave -- its rows' tokens and accepted drafts per second of the pass, the drafter's
call and the choice -- against what its choice promised; where passes give less, the next choices must promise more
(whatever the estimates miss: acceptance at a batch's end, a drafted token that costs a greedy row on the C backend).
A batch's "no draft" holds like batch 1's: the batched loop takes the greedy passes it covers without asking
(:meth:`CostAwarePolicy.take_held_step`) while more than half its rows are left. The batched loop leaves a batch's
first pass (it allocates the caches), its choices and the dropping of finished rows out of what it shows the policy.

Lossless: the policy only shortens drafts (``state.max_draft``), and truncating a draft never changes what exact
acceptance returns -- every appended token is still the verifier's own greedy token (property tests on random
models, batch 1 and batched, every backend).
"""
from __future__ import annotations

import dataclasses
import functools
import hashlib
import heapq
import json
import logging
import os
import platform
import time
import weakref
from dataclasses import dataclass
from pathlib import Path
from typing import Dict, List, Optional, Sequence, Tuple

import numpy as np
import torch

from .projection import projects_real_positions

__all__ = ["PassCost", "measure_pass_cost", "CostAwarePolicy", "POLICIES", "check_policy", "pass_cost_key",
           "cached_pass_cost", "store_pass_cost"]

logger = logging.getLogger(__name__)

POLICIES = ("fixed", "cost")
_CHUNK = 8  # the exact rule projects rows in chunks of 8, 16, 32 ... on a CPU (acceptance.accept_top1)
_FED_SIZES = (1, 2, 3, 4, 6, 8, 12, 16, 24, 32, 48, 64, 96, 128)
# a padded batch's choice is made in numpy where about this many positions would be read (CostAwarePolicy._depth)
_MANY_POSITIONS = 96
# the iterations a padded choice that took every position worth 1 % or more stands for (:meth:`choose_batch`)
_STANDING = 16
_NO_SKIP = (-1, False, 0, 0.0, 0.0)  # CostAwarePolicy._skip where no batch-1 "no draft" is held
_NO_STAND = (0, [0], (0.0, 0.0))  # CostAwarePolicy._first_stands' entry where no batch-1 first choice stands


def _nearest(keys, key: int) -> int:
    """The key of ``keys`` nearest ``key`` (the smaller of two as near)."""
    return min(keys, key=lambda k: (abs(k - key), k))


def check_policy(policy) -> str:
    """``policy`` as one of :data:`POLICIES`, else a ``ValueError`` naming the setting."""
    name = str(policy).lower()
    if name not in POLICIES:
        raise ValueError(f"draft policy must be one of {', '.join(POLICIES)}, got {policy!r}")
    return name


def _interpolate(xs: Sequence[float], ys: Sequence[float], x: float) -> float:
    """Piecewise-linear through the measured points, extended linearly on both sides (below the first point by the
    first segment's slope: fewer rows than measured still pay per token)."""
    if len(xs) == 1 or x == xs[0]:
        return ys[0] if len(xs) > 1 or x == xs[0] else ys[0] * x / xs[0]
    if x < xs[0]:
        slope = max((ys[1] - ys[0]) / (xs[1] - xs[0]), 0.0)
        return max(ys[0] - slope * (xs[0] - x), 0.0)
    for i in range(1, len(xs)):
        if x <= xs[i]:
            x0, x1, y0, y1 = xs[i - 1], xs[i], ys[i - 1], ys[i]
            return y0 + (y1 - y0) * (x - x0) / (x1 - x0)
    x0, x1, y0, y1 = xs[-2], xs[-1], ys[-2], ys[-1]
    return y1 + max(y1 - y0, 0.0) * (x - x1) / (x1 - x0)


@dataclass
class PassCost:
    """Measured seconds of one iteration's parts for ``batch`` rows (see the module docstring).

    ``fed`` / ``pass_s``: a decoder pass of that many tokens in all (over all rows); ``rows`` / ``rows_s``: the
    vocabulary projection of that many rows; ``step_s``: one greedy iteration of the loop (draft nothing, verify one
    token per row, accept, bookkeeping); ``pad_s``: what one padding position adds to a batched pass (a pass is as
    wide as its longest draft, and the PyTorch backend's attention computes every shorter row's padding: on a CPU one
    row drafting 60 tokens beside 31 one-token rows cost 21.7 ms, 32 rows drafting 9 each 7.0 ms; the C backend feeds
    real tokens only, about 0)."""

    batch: int
    fed: List[int]
    pass_s: List[float]
    rows: List[int]
    rows_s: List[float]
    step_s: float
    seconds_to_measure: float = 0.0
    pad_s: float = 0.0

    def extra(self, fed: float, rows: float, base: Optional[int] = None) -> float:
        """Seconds an iteration feeding ``fed`` tokens and projecting ``rows`` rows costs beyond a greedy step of
        ``base`` rows (default: the measured batch size)."""
        b = self.batch if base is None else base
        # fewer rows than measured (a batch whose rows finished): the same draft tokens on the measured batch -- a
        # drafted token costs about the same beside fewer rows, and below the measured points the curves are guesses
        # (a straight line down from the smallest pass would lose what any draft adds to a pass)
        shift = max(self.batch - b, 0)
        fed, rows, b = fed + shift, rows + shift, b + shift
        return (max(_interpolate(self.fed, self.pass_s, fed) - _interpolate(self.fed, self.pass_s, b), 0.0)
                + max(_interpolate(self.rows, self.rows_s, rows) - _interpolate(self.rows, self.rows_s, b), 0.0))

    def table(self, horizon: int) -> List[float]:
        """``extra`` of a batch-1 iteration with a draft of ``n`` tokens, every row projected, for n = 0 .. horizon
        (a lookup table for the per-iteration choice)."""
        return [self.extra(n + 1, min(n + 1, _CHUNK)) for n in range(horizon + 1)]


def _dummy_source(verifier, length: int = 16) -> torch.Tensor:
    first = 4 if verifier.vocab_size > 8 else 0  # past fairseq's specials
    ids = [first + i % max(verifier.vocab_size - first, 1) for i in range(length - 1)]
    ids = [t for t in ids if t not in (verifier.eos, verifier.pad)] or [verifier.unk]
    return torch.tensor(ids + [verifier.eos], dtype=torch.long)


class _Clock:
    def __init__(self, device: torch.device):
        self.cuda = device.type == "cuda"

    def time(self, fn, repeats: int) -> float:
        """The fastest of ``repeats`` calls (the least disturbed), after one warm-up call."""
        fn()
        best = float("inf")
        for _ in range(repeats):
            if self.cuda:
                torch.cuda.synchronize()
            t0 = time.perf_counter()
            fn()
            if self.cuda:
                torch.cuda.synchronize()
            best = min(best, time.perf_counter() - t0)
        return best


@torch.inference_mode()
def measure_pass_cost(verifier, horizon: int, batch: int = 1, *, repeats: int = 3) -> PassCost:
    """Measure :class:`PassCost` on ``verifier`` for drafts of up to ``horizon`` tokens at batch size ``batch``.

    Drives the verifier itself (a dummy source; the cost does not depend on the token ids) and leaves no state the
    next decode reads: every sentence starts with ``verifier.start``."""
    from .loop import draft_verify_accept
    from .projection import MaskedLogProbs

    t_start = time.perf_counter()
    clock = _Clock(verifier.device)
    wide_s = None
    # a sentence of typical length, some way into its output: attention over a few positions only would make every
    # pass look cheaper than in decoding, and a draft token's cost is judged against a greedy row's
    src = _dummy_source(verifier, 24)
    prefix = 24
    ids = src[:-1].tolist()
    feed_ids = [ids[i % len(ids)] for i in range(prefix + horizon + 1)]
    per_row = sorted({s for s in _FED_SIZES if s <= horizon + 1} | {horizon + 1})
    per_row = [s for s in per_row if prefix + s < verifier.max_positions] or [1]
    if batch <= 1:
        verifier.start(src)
        verifier.forward(torch.tensor([verifier.eos] + feed_ids[: prefix - 1]), need_logits=False)
        fed, pass_s = [], []
        for s in per_row:
            feed = torch.tensor(feed_ids[prefix: prefix + s])

            def one_pass(feed=feed):
                verifier.forward(feed, need_logits=False)
                verifier.rollback(prefix)
            fed.append(s)
            pass_s.append(clock.time(one_pass, repeats))
        hidden = verifier.forward(torch.tensor(feed_ids[prefix: prefix + _CHUNK * 2]), need_logits=False).hidden
        verifier.rollback(prefix)
        proj = MaskedLogProbs(verifier, max_len=10 ** 6).of(hidden, prefix)
        rows = [r for r in (1, _CHUNK, 2 * _CHUNK) if r <= hidden.size(0)]
        rows_s = [clock.time(lambda r=r: proj.top1(0, r), repeats) for r in rows]

        def greedy():
            res = draft_verify_accept(verifier, src, None, max_len_b=24, sync_timing=False)
            return (res.stats.time - res.stats.time_encoder) / max(res.stats.iterations, 1)
        step = min(greedy() for _ in range(repeats))
    else:
        from .batched import batched_verifier, decode_batch
        from .projection import BatchedMaskedLogProbs

        bver = batched_verifier(verifier)
        sources = [src] * batch
        bver.start(sources)
        bver.forward(torch.tensor([[verifier.eos] + feed_ids[: prefix - 1]] * batch), [prefix] * batch)
        fed, pass_s = [], []
        # a greedy step keeps the rows' lengths equal (the batch-1 slicing); drafting makes them ragged (per-row
        # positions, masks and packed linear layers): one token per row is measured on equal lengths, longer passes
        # on ragged ones, so what drafting adds to a pass is in the difference
        ragged = [prefix - b % 3 for b in range(batch)]
        # one token per row; one row drafting one token (what any draft adds to a pass: ragged positions and masks,
        # the padded attention); then every row drafting. A wide batched pass is slow to measure; the rest is
        # extrapolated
        shapes = [[1] * batch, [2] + [1] * (batch - 1)] + [[s - b % 2 for b in range(batch)] for s in per_row[1:8]]
        if verifier.device.type == "cuda" and len(per_row) > 8:
            # on a GPU the widest pass costs little to measure and about what the short ones do: measured, it keeps
            # the straight line through the last two short passes (their noise) from pricing wide drafts
            shapes.append([per_row[-1]] * batch)
        def timed(n_valid):
            s = max(n_valid)
            tokens = torch.tensor([feed_ids[prefix: prefix + s]] * batch)
            starts = [prefix] * batch if s == 1 else ragged

            def one_pass():
                bver.lengths = list(starts)
                bver.forward(tokens, n_valid)
            return clock.time(one_pass, repeats)
        for n_valid in shapes:
            if fed and sum(n_valid) <= fed[-1]:
                continue  # (a batch of two: one row drafting is half the rows)
            fed.append(sum(n_valid))
            pass_s.append(timed(n_valid))
        # one row drafting wide beside one-token rows: what the padding of the other rows costs
        wide = min(max(per_row), 17)
        if wide > 2:
            wide_s = timed([wide] + [1] * (batch - 1))
        bver.lengths = [prefix] * batch
        chunk = feed_ids[prefix: prefix + _CHUNK]  # (shorter where the horizon is: no row projects more than it feeds)
        hidden = bver.forward(torch.tensor([chunk] * batch), [len(chunk)] * batch)
        rows, rows_s = [], []
        # the batched loop's own projection (on a CPU every row's real positions; the fast backend's in one C call)
        proj = BatchedMaskedLogProbs(verifier).of(hidden, [prefix] * batch, [10 ** 6] * batch)

        def project(r):
            return proj.top1(list(range(batch)), 0, r, [r] * batch)
        for r in [r for r in (1, 2, 4, _CHUNK) if r <= hidden.size(1)]:  # (a wide projection costs more per row)
            rows.append(r * batch)
            rows_s.append(clock.time(lambda r=r: project(r), repeats))

        def greedy():
            res = decode_batch(bver, sources, None, max_len_b=24, sync_timing=False)
            st = res[0].stats
            return (st.time - st.time_encoder) * batch / max(st.iterations, 1)
        step = min(greedy() for _ in range(repeats))
    # a pass of more tokens (a projection of more rows) costs no less than one of fewer: a measurement that says
    # otherwise met noise (each is the fastest of a few, so noise only adds), and the fewer tokens' time is lowered to
    # the least measured for more
    cost = PassCost(batch=max(batch, 1), fed=fed, pass_s=_no_dearer_than_more(pass_s), rows=rows,
                    rows_s=_no_dearer_than_more(rows_s), step_s=step)
    if wide_s is not None:  # beyond what as many real tokens in even rows cost
        real = batch - 1 + wide
        cost.pad_s = max(wide_s - _interpolate(cost.fed, cost.pass_s, real), 0.0) / (batch * wide - real)
    cost.seconds_to_measure = time.perf_counter() - t_start
    return cost


def _projection_no_dearer_per_row(cost: PassCost) -> PassCost:
    """``cost`` with each projection of more rows costing no more per row than the one of fewer rows before it. A
    projection does the same work for each row (a product with the output layer, a softmax over the vocabulary), and a
    measurement that says otherwise met the allocator: on this CPU the GEC model's projection of 128 rows measured 53
    µs a row against 29 at 64 (its large tensors mapped afresh and faulted in at each call), which decoding, its memory
    in use, does not meet. Extended from there at 78 µs a row, it priced the drafted passes of a PyTorch batch of 16 at
    twice what they took (24 against 13 ms for 272 drafted tokens), and the policy drafted a few tokens where all of
    them paid."""
    rows_s = list(cost.rows_s)
    for k in range(1, len(rows_s)):
        rows_s[k] = min(rows_s[k], rows_s[k - 1] * cost.rows[k] / cost.rows[k - 1])
    return cost if rows_s == list(cost.rows_s) else dataclasses.replace(cost, rows_s=rows_s)


def _no_dearer_than_more(seconds: List[float]) -> List[float]:
    out, least = [], float("inf")
    for s in reversed(seconds):
        least = min(least, s)
        out.append(least)
    return out[::-1]


# ---------------------------------------------------------------------------------------------------- the cost cache
_CACHE_VERSION = 6  # raise when what measure_pass_cost measures changes


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


class _ExtraFit:
    """What drafted passes really add beyond a greedy pass, against what the calibration predicts for them: a running
    least-squares line ``seen = fixed + factor * predicted`` over recent passes (each weighs ``decay`` times the next).
    The fixed part is what any draft adds to a pass whatever its length (ragged positions and masks); a running mean
    of ratios would read it as a factor and swing to its bounds on passes with one drafted token. Too little spread
    in the predictions to tell the two apart: a factor alone (the ratio of the sums). The calibration is its prior."""

    __slots__ = ("decay", "sums", "line")

    def __init__(self, decay: float = 0.9):
        self.decay = decay
        self.sums = (0.0,) * 5  # weight, x, y, x*x, x*y
        self.line = (0.0, 1.0)  # the last solve's (fixed, factor)

    def add(self, predicted: float, seen: float) -> tuple:
        """Count a pass; returns :meth:`solve`'s answer with it."""
        d, (n, sx, sy, sxx, sxy) = self.decay, self.sums
        if n == 0.0:  # the calibration as a prior: three passes that cost what it predicts, fading as passes come
            n, sx, sxx = 3.0, 3.5 * predicted, 5.25 * predicted * predicted  # at 0.5, 1 and 2 times this prediction
            sy, sxy = sx, sxx
        x = predicted  # (once per drafted pass: plain arithmetic)
        # one pass counts at most a third or three times what the line says it costs: a pass that met a cold cache or
        # a new shape's first allocation moves the line a step, not to a cost that stops drafting from then on;
        # a lasting change moves it over a few passes
        fixed, factor = self.line
        expect = fixed + factor * x
        seen = min(max(seen, expect / 3.0), 3.0 * expect)
        self.sums = (d * n + 1.0, d * sx + x, d * sy + seen, d * sxx + x * x, d * sxy + x * seen)
        self.line = self.solve()
        return self.line

    def solve(self) -> tuple:
        """``(fixed seconds >= 0, factor in [0.25, 8])``; ``(0, 1)`` before any pass."""
        n, sx, sy, sxx, sxy = self.sums
        if n <= 0 or sx <= 0:
            return 0.0, 1.0
        mx, my = sx / n, sy / n
        var = sxx / n - mx * mx
        factor = (sxy / n - mx * my) / var if n >= 3 and var > (0.25 * mx) ** 2 else sy / sx
        factor = min(max(factor, 0.25), 8.0)
        return max(my - factor * mx, 0.0), factor


class CostAwarePolicy:
    """Chooses each iteration's draft length by expected tokens per second (see the module docstring).

    One policy serves one verifier and one drafter over many sentences (its acceptance counts carry over); the loop
    calls :meth:`choose` / :meth:`choose_batch` before drafting and :meth:`observe` after accepting.
    ``horizon`` caps the draft positions it considers (the method's ``k`` or ``max_draft_len``, else 64)."""

    name = "cost"

    def __init__(self, horizon: int = 64, *, prior: float = 0.8, weight: float = 2.0, probe_share: float = 0.005,
                 probe_len: int = 8, probe_rows: int = 4, margin: float = 1.05, resume: float = 1.25):
        if isinstance(horizon, bool) or int(horizon) < 1:
            raise ValueError(f"the policy's horizon must be an integer >= 1, got {horizon!r}")
        if not margin >= 1.0:
            raise ValueError(f"the policy's margin must be >= 1, got {margin!r}")
        # a draft is taken only when it promises this many times greedy's tokens per second: below that the choice
        # would follow the noise in the measured costs (drafting where it does not pay, at the drafter's cost)
        self.margin = float(margin)
        if not resume >= margin:
            raise ValueError(f"the policy's resume must be >= its margin ({margin}), got {resume!r}")
        self.resume = float(resume)  # what ends a held "no draft" at a new sentence (new_sentence)
        self.horizon = int(horizon)
        self.prior, self.weight = float(prior), float(weight)
        if not 0 < probe_share < 1:
            raise ValueError(f"probe_share must be in (0, 1), got {probe_share!r}")
        self.probe_share = float(probe_share)
        self.probe_len = max(int(probe_len), 1)
        self.probe_rows = max(int(probe_rows), 1)
        H = self.horizon
        self.reach = [0.0] * (H + 2)  # across the input: how often position m was verified ...
        self.acc = [0.0] * (H + 2)    # ... and accepted
        self.q = [prior] * (H + 2)    # smoothed acceptance rate by position, refreshed every few observations
        # the same counts for a sentence's first drafted iteration only: what a sentence without counts of its own
        # decides with. Across all iterations the rates lean towards the sentences that kept drafting (a sentence
        # whose drafts are rejected stops drafting, one whose drafts are accepted goes on), so they promise a new
        # sentence more than its first draft brings. Leans on ``q`` (the same list until a first draft is counted)
        self.reach_first = [0.0] * (H + 2)
        self.acc_first = [0.0] * (H + 2)
        self.q_first = self.q
        self._deepest = 0  # the deepest position counted so far
        # observations since the last refresh, by where they end: reached up to position m (``_ends[m]``), accepted up
        # to m (``_gots[m]``), and the same for first drafts; :meth:`_refresh` adds them to the counts by position, so
        # counting one costs a few list updates whatever its length (batch 1 on the fast backend: 2 iterations a
        # sentence of 1.6 ms, where each microsecond of the policy's is 0.06 % of the decode)
        self._ends, self._gots = [0] * (H + 2), [0] * (H + 2)
        self._ends_first, self._gots_first = [0] * (H + 2), [0] * (H + 2)
        self._fold_top = 0  # the deepest position in them
        # a sentence's first draft by the refreshed rates: the value of position n (the product of q_first up to n) and
        # the expected tokens of a draft of n (1 + their sum), up to the last position worth 1 % or more
        self._first_p: List[float] = [1.0]
        self._first_e: List[float] = [1.0]
        # batch 1: a sentence's first choice by its limit (entry ``min(limit, last)``), made at the first sentence
        # after a refresh, standing for the next ``_STANDING - 1`` sentences while the pass's fixed seconds (a greedy
        # step, the drafter's call and start, the fit's fixed part) and the fit's factor stay within a factor of 2 of
        # those it was made with (the fit's line moves 10-50 % from one pass to the next on the fast backend; a
        # drafter that became dear is seen at once): (sentences left, answers, (fixed seconds, factor)) by the margin
        # asked (a held "no draft" asks at every new sentence whether the first draft promises ``resume``)
        self._first_stands: Dict[float, tuple] = {}
        self._stale = 0
        self._drafter_s: Dict[int, float] = {}  # running mean of one drafter call (seconds) by rows drafted
        self.cost: Optional[PassCost] = None
        self._costs = {}
        self._table: List[float] = []
        self._least_after: List[float] = []
        self._start_s: Dict[int, float] = {}  # ... and of a drafter's start (per sentence, or per batch) by rows
        self._skipped_s = 0.0    # greedy time since the drafter was last asked
        self.probes = 0
        # batch 1: greedy steps the loop may take without asking (a "no draft" that holds until the next probe is due)
        self.hold = 0
        # while "no draft" wins, the choice is not recomputed until something it depends on changes (a count, the
        # drafter's cost) or 64 iterations passed: a skipped drafter then costs the loop almost nothing
        self._version = 0
        # the last batch-1 "no draft": (version, drafter started, times reused, greedy pass, probe's cost)
        self._skip: tuple = _NO_SKIP
        self._held_on = -1  # the version at which a new sentence last kept the held "no draft" (new_sentence)
        # what decoding itself measures: a greedy pass by its number of rows (a pass of few rows, at the end of a
        # batch, costs more per row than a full one), and how the measured cost of the extra draft tokens relates to
        # the prediction (a fixed part and a factor on it) -- the calibration is a start, not the truth
        self._greedy: Dict[int, float] = {}
        self._fit = _ExtraFit()
        self.extra_fixed, self.extra_factor = 0.0, 1.0  # batch 1's line
        # a batch's, by its number of rows (1 < rows < 4, 4 .. 7, 8 .. 15, ...): what a draft adds beside few rows (the
        # end of a batch) is not what it adds beside a full batch, and one line for both would carry a batch's end
        # into the next batch's start
        self._batch_fits: Dict[int, _ExtraFit] = {}
        # this batch's greedy pass by rows, and its drafted passes that wait for one: (predicted, seconds) by rows
        self._batch_greedy: Dict[int, float] = {}
        self._pending: Dict[int, List[tuple]] = {}
        self._rows_fused = False  # a batched pass projects only the rows' real positions (CPU, fast backend), else padded
        self._prepared_for = None  # the verifier ``_rows_fused`` was read from
        self._extras: Dict[tuple, List[float]] = {}
        self._cost_for: Dict[int, PassCost] = {}  # the cost a batch of that many rows decides with
        # the last "no draft" choice by row class (rows.bit_length()) while it holds: ((version, rows, made with rows'
        # own counts), reuses, greedy pass, probe's cost)
        self._batch_skips: Dict[int, tuple] = {}
        # batched: greedy passes the loop may take without asking (:meth:`take_held_step`) while more than half of
        # the rows the held "no draft" was made for are left, and the greedy pass they were counted at
        self.batch_hold, self._batch_hold_len, self._batch_hold_rows, self._batch_hold_step = 0, 0, 0, 0.0
        self._batch_hold_key = 0  # (the row class its choice is kept under)
        # what drafted batch passes really gave against what their choice promised: tokens per second of the rows and
        # their accepted drafts over the pass, the drafter's call and the choice itself (a start serves a sentence's
        # later drafts too: left out), as a share of the rate the choice expected (a running mean by row count, as
        # the fits; a bar at most raised by it). Whatever the estimates miss -- acceptance at the end of long
        # sentences, drafts shorter than asked, a drafted token that costs what a greedy row does (the fast backend)
        # -- a batch then drafts only where the promise, so discounted, still pays
        self._realized: Dict[int, float] = {}
        self._promised: Optional[tuple] = None  # (rows, tokens per second, the choice's seconds) of the last draft
        # a padded choice that took every position worth 1 % or more (about: 90 % of their expected tokens) stands for
        # the next iterations, in this batch and the next: (rows it was made for, iterations left); whether a row drafted
        # is kept on its state (``policy_standing``)
        self._standing: Optional[tuple] = None
        self._iter_s, self._iter_accepted = 0.0, 0  # this iteration's drafter seconds and accepted draft tokens
        # batch-1 iterations whose input-wide counting waits (:meth:`observe_iteration`)
        self._waiting_iterations: List[tuple] = []
        self._last: Optional[tuple] = None  # the cost and batch size of the last batched choice

    # ------------------------------------------------------------------ cost
    def calibrate(self, verifier, batch: int = 1) -> PassCost:
        """Measure the verifier's pass cost at this batch size now (kept per batch size, and in the cost cache for the
        next policy on the same model, backend, device and batch size; call again to re-measure)."""
        return self._measure(verifier, batch, pass_cost_key(verifier, self.horizon, batch))

    def _measure(self, verifier, batch: int, key: str) -> PassCost:
        cost = measure_pass_cost(verifier, self.horizon, batch)
        store_pass_cost(key, cost)
        return self.use_cost(cost)

    def _cached_or_measured(self, verifier, batch: int) -> PassCost:
        key = pass_cost_key(verifier, self.horizon, batch)  # hashes the weights: once per measurement
        cached = cached_pass_cost(key)
        return self.use_cost(cached) if cached is not None else self._measure(verifier, batch, key)

    def use_cost(self, cost: PassCost) -> PassCost:
        """Decide with ``cost`` (measured elsewhere, or read back) for its batch size; a projection measured dearer per
        row than one of fewer rows is read at the fewer rows' rate (:func:`_projection_no_dearer_per_row`)."""
        cost = _projection_no_dearer_per_row(cost)
        self._costs[cost.batch] = cost
        self._first_stands.clear()
        self._extras.clear()
        self._cost_for.clear()
        if cost.batch == 1:
            self.cost = cost
            self._table = cost.table(self.horizon)
            # the least that positions after n add per position, on average over any run of them (the choice stops
            # where even that cannot pay: positions n+1 .. m add at most (m - n) times position n+1's value); an
            # average, not the least single step, so one flat step of a noisy measurement does not keep every
            # choice reading to the horizon
            t = self._table
            last = len(t) - 1
            self._least_after = [min((max(t[m] - t[n], 0.0) / (m - n) for m in range(n + 1, last + 1)),
                                     default=float("inf")) for n in range(last + 1)] + [float("inf")]
        return cost

    @property
    def greedy_s(self) -> Optional[float]:
        """The measured greedy pass of one row (batch 1), None before one was seen."""
        return self._greedy.get(1)

    def greedy_pass_s(self, rows: int, cost: Optional[PassCost] = None) -> Optional[float]:
        """Seconds of a greedy pass of ``rows`` rows: measured at that row count, else between the nearest measured
        counts (``cost``'s calibration one of them), else in proportion to the nearest; None when nothing is known."""
        measured = self._greedy.get(rows)
        if measured is not None:
            return measured
        pts = dict(self._greedy)
        if cost is not None:
            pts.setdefault(cost.batch, cost.step_s)
        if not pts:
            return None
        if rows in pts:
            return pts[rows]
        lo = max((r for r in pts if r < rows), default=None)
        hi = min((r for r in pts if r > rows), default=None)
        if lo is not None and hi is not None:
            return pts[lo] + (pts[hi] - pts[lo]) * (rows - lo) / (hi - lo)
        near = lo if hi is None else hi
        return pts[near] * rows / near

    def prepare(self, verifier, batch: int = 1) -> None:
        """Measure what is not measured yet, before a sentence (or batch) starts: measuring drives the verifier."""
        if verifier is not self._prepared_for:
            self._rows_fused, self._prepared_for = projects_real_positions(verifier), verifier
        if batch > 1:
            self.new_batch()
        else:
            self.new_sentence()
        if batch <= 1 and self.cost is None:
            self._cached_or_measured(verifier, 1)
        elif batch > 1 and not any(b >= batch for b in self._costs):
            self._cached_or_measured(verifier, batch)

    def new_batch(self) -> None:
        """A new batch starts (:meth:`prepare` calls this): what a greedy pass costs in it is not known yet, and its
        drafted passes wait for one (:meth:`observe_pass`); a "no draft" held over from the last batch is made again
        for the new rows where it came from the last rows' own counts, else it holds on (nothing it was made with has
        changed: GAD's batches at B = 32 on the fast backend made the same "no draft" at 32, 16, 6, 3 and 1 rows in
        every batch, at 0.1-0.25 ms a choice). Batch-1 iterations still waiting to be counted (a batch of one sentence
        runs the batch-1 loop) are counted first, so that none is judged against a batch's choice."""
        if self._waiting_iterations:
            self._flush_iterations()
        self._batch_greedy, self._pending = {}, {}
        self._end_batch_hold()
        self._batch_skips = {k: held for k, held in self._batch_skips.items() if not held[0][2]}

    def new_sentence(self) -> None:
        """A batch-1 sentence starts (:meth:`prepare` calls this). A held "no draft" (:attr:`hold`, and the choice the
        next iterations would reuse) carries into it unless the new sentence's first draft, by the input's first
        drafts, promises ``resume`` times a greedy step's rate: one sentence whose drafts were rejected at once would
        otherwise keep the next sentences greedy (up to 63 steps each time the choice is reused), while a drafter that
        only just pays stays held (drafts that promise a few per cent lose them to the estimates' errors). Greedy steps
        the ended hold had counted towards the next probe and not taken are taken off that count."""
        if not (self.hold or self._skip[0] == self._version) or self.cost is None or not self.reach[1]:
            return
        if self._held_on == self._version:
            return  # asked at an earlier sentence, and nothing the answer depends on has changed since (no count, no cost)
        if not self._best_length(self.horizon, False, None, self.greedy_pass_s(1, self.cost), self.resume):
            self._held_on = self._version
            return
        if self.hold:
            self._skipped_s = max(self._skipped_s - self.hold * self._skip[3], 0.0)
            self.hold = 0
        self._skip = _NO_SKIP

    def batch_cost(self, verifier, batch: int) -> PassCost:
        """The cost measured at the smallest measured batch size >= ``batch`` (else the largest); measured now at
        ``batch`` when none was: a batch whose rows finish one by one is not measured again at every size (the
        loops call :meth:`prepare` with a batch's full size first)."""
        if batch in self._cost_for:
            return self._cost_for[batch]
        sizes = sorted(b for b in self._costs if b > 1)
        if not sizes:
            return self._cached_or_measured(verifier, batch)
        cost = self._cost_for[batch] = self._costs[next((b for b in sizes if b >= batch), sizes[-1])]
        return cost

    # ------------------------------------------------------------------ acceptance statistics
    def _fold(self) -> None:
        """Add the observations counted since the last refresh to the counts by position (old counts fade: the
        estimate follows the input)."""
        top = self._fold_top
        if top:
            for ends, gots, reach, acc in ((self._ends, self._gots, self.reach, self.acc),
                                           (self._ends_first, self._gots_first, self.reach_first, self.acc_first)):
                reached = got = 0
                for m in range(top, 0, -1):  # position m: every observation that ends at m or deeper
                    reached += ends[m]
                    got += gots[m]
                    ends[m] = gots[m] = 0
                    if reached:
                        reach[m] += reached
                        acc[m] += got
            self._fold_top = 0
        if self.reach[1] > 4096:
            self.reach = [x * 0.5 for x in self.reach]
            self.acc = [x * 0.5 for x in self.acc]
            self.reach_first = [x * 0.5 for x in self.reach_first]
            self.acc_first = [x * 0.5 for x in self.acc_first]

    def _refresh(self) -> None:
        """Smoothed rate by position: each position leans on the one before it until it has counts of its own."""
        self._fold()
        w, prev = self.weight, self.prior
        q, acc, reach = self.q, self.acc, self.reach
        top = min(self._deepest or self.horizon, self.horizon)  # (counts set directly: every position)
        for m in range(1, top + 1):
            prev = q[m] = (acc[m] + w * prev) / (reach[m] + w)
        # past the deepest position ever counted each position leans on the one before it all the way
        q[top + 1: self.horizon + 1] = [prev] * (self.horizon - top)
        if self.reach_first[1]:
            reach, acc = self.reach_first, self.acc_first
            self.q_first = [(acc[m] + w * q[m]) / (reach[m] + w) if reach[m] else q[m] for m in range(len(q))]
        else:
            self.q_first = q
        p, e, values, expected = 1.0, 1.0, [1.0], [1.0]
        for qm in self.q_first[1: self.horizon + 1]:
            p *= qm
            if p < 0.01:
                break
            e += p
            values.append(p)
            expected.append(e)
        self._first_p, self._first_e = values, expected
        self._first_stands.clear()
        self._stale = 0

    @staticmethod
    def _mean(table: Dict[int, float], rows: int, seconds: float) -> None:
        old = table.get(rows)
        table[rows] = seconds if old is None else 0.8 * old + 0.2 * seconds
        # a new number of rows is known at once; later calls refine it

    @staticmethod
    def _lookup(table: Dict[int, float], rows: int) -> float:
        """The running mean at ``rows``, else the nearest measured row count's, scaled up by the row ratio when
        ``rows`` is larger (a drafter call costs at most proportionally more: a safe guess until it is measured)."""
        if not table:
            return 0.0
        if rows in table:
            return table[rows]
        near = _nearest(table, rows)
        return table[near] * max(rows / near, 1.0)

    def drafter_cost(self, rows: int = 1) -> float:
        return self._lookup(self._drafter_s, rows)

    def start_cost(self, rows: int = 1) -> float:
        return self._lookup(self._start_s, rows) if rows > 0 else 0.0

    def observe_start(self, seconds: float, rows: int = 1) -> None:
        """The drafter's start (lazy: when first asked) for ``rows`` sentences took ``seconds``."""
        self._mean(self._start_s, rows, seconds)
        self._version += 1

    def observe_iteration(self, state, drafted: int, accepted: int, seconds: float,
                          drafter_s: Optional[float] = None, asked: int = 0, start_s: Optional[float] = None,
                          last: bool = False) -> None:
        """A batch-1 iteration in one call: the drafter started in ``start_s`` (None: it had started before;
        :meth:`observe_start`), its call took ``drafter_s`` (None: it was not asked) for ``asked`` tokens
        (:meth:`observe`), ``drafted`` were verified, ``accepted`` of them accepted, and the pass took ``seconds``
        (what :meth:`observe_drafter`, :meth:`observe` and :meth:`observe_pass` count). The sentence's
        counts are added now (its next choice reads them; after its ``last`` iteration none does: not added); the
        rest waits in a list until it holds a quarter of the input's counts or 32 iterations
        (:meth:`_flush_iterations`): counted one by one between two passes of the C backend, each iteration's counting
        cost 3-4 times what it costs among the others (the pass leaves the caches cold), and what the choice reads of
        them moves little in 32 iterations."""
        top, got = self._reached(drafted, accepted, asked)
        if start_s is not None:
            self.observe_start(start_s)
        if not top:
            first = False
        elif last:
            first = "policy_counts" not in state.extra
        else:
            first = self._count_sentence(state, top, got)
        pending = self._waiting_iterations
        pending.append((top, got, first, accepted, drafted, seconds, drafter_s))
        if len(pending) >= 32 or 4 * len(pending) >= self.reach[1]:
            self._flush_iterations()

    def _flush_iterations(self) -> None:
        """Count the batch-1 iterations :meth:`observe_iteration` kept waiting: the drafter's calls, the input's
        counts and the passes."""
        pending, self._waiting_iterations = self._waiting_iterations, []
        for top, got, first, accepted, drafted, seconds, drafter_s in pending:
            if drafter_s is not None:  # (observe_drafter at one row: batch 1 judges no batch pass by it)
                self._mean(self._drafter_s, 1, drafter_s)
                self._version += 1
            if top:
                self._iter_accepted += accepted
                self._count(top, got, first)
            self._observe_row_pass(seconds, drafted)

    def observe_drafter(self, seconds: float, rows: int = 1) -> None:
        """One drafter call for ``rows`` sentences took ``seconds``."""
        self._mean(self._drafter_s, rows, seconds)
        self._iter_s += seconds
        self._version += 1

    def observe_pass(self, seconds: float, drafted: Sequence[int]) -> None:
        """One verification pass took ``seconds`` with drafts of ``drafted`` tokens (one per row): a pass without
        drafts updates the greedy step, one with drafts the fit of the measured extra cost on the predicted one."""
        rows = len(drafted)
        if rows == 1:
            self._observe_row_pass(seconds, drafted[0])
        elif not any(drafted):
            self.observe_greedy_pass(seconds, rows)
            return
        else:
            self._judge_batch_pass(rows, seconds)
            if self._last is None:
                return
            cost = self._last
            fed = rows + sum(drafted)
            if fed + max(cost.batch - rows, 0) > 1.5 * cost.fed[-1]:
                return  # past the measured passes the prediction is a straight line out: its error says little of
                # the passes the choice usually weighs
            predicted = (cost.extra(fed, self._projected(drafted), base=rows)
                         + cost.pad_s * (rows * (1 + max(drafted)) - fed)) * self._scale(rows, cost)
            if predicted <= 0:
                return
            # what drafts add is this pass less a greedy pass of the same rows *in this batch*: a batch's passes cost
            # what its sentences' lengths make them (the longest batch first), and a greedy pass measured in another
            # batch (or the calibration's) would put that difference into the line's fixed part. A drafted pass
            # waits for the batch's greedy pass of its rows, and one that never comes leaves it out
            base = self._batch_greedy_near(rows)
            if base is None:
                self._pending.setdefault(rows, []).append((predicted, seconds))
            else:
                self._fit_batch(rows, predicted, seconds - base)

    def _observe_row_pass(self, seconds: float, k: int) -> None:
        """:meth:`observe_pass` of one row (every iteration of a batch-1 decode: the short way; ``_scale`` is 1)."""
        if self._promised is not None:  # the last row of a batch, drafting by choose_batch
            self._judge_batch_pass(1, seconds)
        if not k:
            self._mean(self._greedy, 1, seconds)
            return
        cost = self.cost
        if cost is None:
            return
        predicted = self._table[k if k < self.horizon else self.horizon]
        if predicted > 0:
            base = self._greedy.get(1, cost.step_s)  # (greedy_pass_s at one row)
            self.extra_fixed, self.extra_factor = self._fit.add(predicted, max(seconds - base, 0.0))

    def _judge_batch_pass(self, rows: int, seconds: float) -> None:
        """Judge a drafted batch pass of ``rows`` rows that took ``seconds`` against what its choice promised (when a
        choice of as many rows promised one) and start counting the next."""
        promised = self._promised
        if promised is not None and promised[0] == rows:
            self._judge(rows, (rows + self._iter_accepted) / (seconds + self._iter_s + promised[2]) / promised[1])
        self._iter_s, self._iter_accepted, self._promised = 0.0, 0, None

    def _first_bet(self, rows: int):
        """The most draft tokens a batch of ``rows`` rows may be asked for: a probe's worth (``probe_rows`` times
        ``probe_len``; more while what they add stays under :meth:`_bet_cap`) until a drafted pass of about as many
        rows was judged, else no limit. What a wrong estimate costs is then one small pass: priced by the calibration
        alone, the fast backend's first batch drafted 160 tokens at B = 32, a pass of 6-7 greedy ones for 4.4-4.5
        greedy passes' tokens."""
        return self.probe_rows * self.probe_len if rows.bit_length() not in self._realized else 1 << 30

    def _bet_cap(self, step: float) -> float:
        """What a first bet may add to a pass beyond its ``_first_bet`` tokens: a quarter of a greedy pass by the
        prediction. Even 4 times off (the fast backend's first batch at B = 32: 6-7 greedy passes where 1.5 were
        predicted) that loses about one greedy pass, and on a GPU, where a padded pass of every row's whole draft costs
        1.2 greedy passes at B = 64, the first batch need not draft 32 tokens at a time (it took 37 passes where fixed
        IAD took 31)."""
        return 0.25 * step

    def _judge(self, rows: int, ratio: float) -> None:
        key = rows.bit_length()
        ratio = min(max(ratio, 0.25), 2.0)  # (one pass that met a cold cache moves the mean a step, not to its end)
        # a running mean from 1: one pass judges the draft of its shape, not the row count's drafts (PyTorch at B = 32:
        # a first capped draft of one token a row realised 0.81 of its promise, its later drafts of five 1.04-1.09;
        # set by that one pass, the row count stopped drafting)
        self._realized[key] = 0.7 * self._realized.get(key, 1.0) + 0.3 * ratio

    def _bar(self, rows: int, step: float) -> float:
        """The tokens per second a batched draft must promise: ``margin`` times a greedy pass's, over what drafted
        passes of about as many rows realised of their promise."""
        seen, key = self._realized, rows.bit_length()
        realized = seen.get(key) or (seen[_nearest(seen, key)] if seen else 1.0)
        return self.margin * rows / (step * min(realized, 1.0))

    def observe_greedy_pass(self, seconds: float, rows: int) -> None:
        """A batched greedy pass of ``rows`` rows took ``seconds`` (:meth:`observe_pass` without drafts; the batched
        loop's held steps call it directly): the greedy step at that many rows, and this batch's greedy pass, against
        which the drafted passes waiting for one of about as many rows are judged."""
        self._mean(self._greedy, rows, seconds)
        self._batch_greedy[rows] = seconds
        if self._pending:
            for r in [r for r in self._pending if rows // 2 <= r <= 2 * rows]:
                for predicted, seen in self._pending.pop(r):
                    self._fit_batch(r, predicted, seen - seconds * r / rows)

    def _run_greedy_near(self, rows: int) -> Optional[float]:
        """The run's greedy pass of ``rows`` rows (a batch's): measured at that count, else in proportion from the
        nearest count measured within a factor of two, else None."""
        g = self._greedy
        seconds = g.get(rows)
        if seconds is not None or rows <= 1:
            return seconds
        near = min((r for r in g if r > 1), key=lambda r: abs(r - rows), default=None)
        return g[near] * rows / near if near is not None and near // 2 <= rows <= 2 * near else None

    def _batch_greedy_near(self, rows: int) -> Optional[float]:
        """This batch's greedy pass of ``rows`` rows: measured at that count, else in proportion from the nearest count
        measured in this batch within a factor of two (a batch's rows finish within a few drafted passes, so one of
        exactly as many rows seldom comes; a pass of fewer rows costs a little more per row, so the estimate errs
        towards pricing drafts dearer), else None."""
        g = self._batch_greedy
        seconds = g.get(rows)
        if seconds is not None or not g:
            return seconds
        near = min(g, key=lambda r: abs(r - rows))
        if not near // 2 <= rows <= 2 * near:
            return None
        cost = self._last
        at_rows, at_near = self.greedy_pass_s(rows, cost), self.greedy_pass_s(near, cost)
        return g[near] * (at_rows / at_near if at_rows and at_near else rows / near)

    def _fit_batch(self, rows: int, predicted: float, extra_s: float) -> None:
        fit = self._batch_fits.get(rows.bit_length())
        if fit is None:
            fit = self._batch_fits[rows.bit_length()] = _ExtraFit()
        fit.add(predicted, max(extra_s, 0.0))

    def batch_line(self, rows: int) -> tuple:
        """``(fixed seconds, factor)`` of what drafts add to a pass of ``rows`` rows beyond the prediction: learned at
        about that many rows, else at half or twice as many, else the factor learned at the nearest row count (what a
        batch's real sentences add per drafted token beyond the calibration's dummy one carries over; a fixed part,
        what any draft adds to a pass, does not), else ``(0, 1)``; batch 1's own at one row. (Each row count learning
        alone, the first batch on the fast backend paid a lesson at 32, 15, 12, 9 and 6 rows: drafted tokens there cost
        twice the calibration's, greedy rows 1.5-1.6 times.)"""
        if rows <= 1:
            return self.extra_fixed, self.extra_factor
        key = rows.bit_length()
        fits = self._batch_fits
        fit = fits.get(key) or fits.get(key + 1) or fits.get(key - 1)
        if fit is not None:
            return fit.line
        if not fits:
            return 0.0, 1.0
        return 0.0, fits[_nearest(fits, key)].line[1]

    def _scale(self, rows: int, cost: PassCost) -> float:
        """How much dearer a real greedy pass of ``rows`` rows (a batch) is than the calibration's (1 to 4): the
        calibration's dummy sentences attend over fewer positions than a batch of real ones (the longest first), and
        what a drafted token adds grows the same way. The factor learned from drafted passes then corrects only what
        is left."""
        if rows <= 1:  # batch 1: its calibration decodes like the loop
            return 1.0
        measured = self._batch_greedy_near(rows) or self._run_greedy_near(rows)  # this batch's first
        if measured is None:
            return 1.0
        return min(max(measured / (cost.step_s * min(rows / cost.batch, 1.0)), 1.0), 4.0)

    def _extra_upto(self, cost: PassCost, rows: int, upto: int) -> List[float]:
        """``cost.extra(rows + t, rows + t, base=rows)`` for t = 0 .. at least ``upto``: one list per cost and row
        count, extended only as far as a choice reads it (the batched choice reads it once per candidate token)."""
        rows = max(rows, cost.batch)  # (fewer rows than measured read the measured batch's curves: PassCost.extra)
        table = self._extras.setdefault((id(cost), rows), [])
        while len(table) <= upto:
            t = len(table)
            table.append(cost.extra(rows + t, rows + t, base=rows))
        return table

    def _padded_extra(self, cost: PassCost, rows: int, t: int, projected: int) -> float:
        """``cost.extra(rows + t, projected, base=rows)`` from two tables (what the fed tokens add and what the projected
        rows add are separate terms), each extended only as far as a choice reads it: the batched choice reads one per
        candidate token, and four interpolations each cost a padded choice 0.1-0.2 ms at B = 4."""
        fed, proj = self._padded_lists(cost, rows, t, projected)
        return fed[t] + proj[projected - rows]

    def _padded_lists(self, cost: PassCost, rows: int, t: int, projected: int) -> Tuple[List[float], List[float]]:
        """The two tables of :meth:`_padded_extra` (by fed tokens past ``rows``, by projected rows past ``rows``),
        extended to at least ``t`` and ``projected``."""
        shift = max(cost.batch - rows, 0)
        fed = self._extras.setdefault(("fed", id(cost), rows), [])
        if len(fed) <= t:
            base = _interpolate(cost.fed, cost.pass_s, rows + shift)
            fed.extend(max(_interpolate(cost.fed, cost.pass_s, rows + i + shift) - base, 0.0)
                       for i in range(len(fed), t + 1))
        proj = self._extras.setdefault(("projected", id(cost), rows), [])
        if len(proj) <= projected - rows:
            base = _interpolate(cost.rows, cost.rows_s, rows + shift)
            proj.extend(max(_interpolate(cost.rows, cost.rows_s, rows + i + shift) - base, 0.0)
                        for i in range(len(proj), projected - rows + 1))
        return fed, proj

    def _padded_tables(self, cost: PassCost, rows: int, t: int, projected: int) -> Tuple[np.ndarray, np.ndarray]:
        """:meth:`_padded_lists` as arrays."""
        key = ("arrays", id(cost), rows)
        have = self._extras.get(key)
        if have is None or have[0].size <= t or have[1].size <= projected - rows:
            fed, proj = self._padded_lists(cost, rows, t, projected)
            have = self._extras[key] = (np.asarray(fed), np.asarray(proj))
        return have

    def _probe_rows(self, limits: Sequence[int], most: Optional[int] = None) -> List[int]:
        """A probe asks a few rows (``most``, default ``probe_rows``) for a probe's length each: a draft of every row
        of a batch can cost many greedy steps, and every row asked is a drafter start. It asks the last rows: a batch
        is cut longest first, so those are its shortest sentences, which can wait out a pass where their draft was
        accepted in part (the batched loop's ``_waiting_rows``), and the batch's rows are of equal length again. (A
        probe on the longest row, which cannot wait without making the batch longer, left GAD's first batch of 16 on
        this CPU with rows of unequal lengths to its end: 92 against 75 ms of verifier time.)"""
        out = [0] * len(limits)
        asked, most = 0, self.probe_rows if most is None else most
        for r in range(len(limits) - 1, -1, -1):
            lim = limits[r]
            if lim > 0:
                out[r] = min(lim, self.probe_len)
                asked += 1
                if asked == most:
                    break
        return out

    def _min_marginal(self, cost: PassCost, rows: int) -> float:
        """The least that one more fed and projected token adds to a pass of ``rows`` rows or more: the smallest slope of
        the measured pass and projection costs above ``rows`` (kept per cost and row count)."""
        key = ("marginal", id(cost), rows)
        if key not in self._extras:
            def least(xs, ys):
                slopes = [max((ys[i + 1] - ys[i]) / (xs[i + 1] - xs[i]), 0.0) for i in range(len(xs) - 1)
                          if xs[i + 1] > rows and xs[i + 1] > xs[i]]
                return min(slopes) if slopes else 0.0
            self._extras[key] = [least(cost.fed, cost.pass_s) + least(cost.rows, cost.rows_s)]
        return self._extras[key][0]

    def _projected(self, drafted: Sequence[int]) -> int:
        """Rows an exact pass projects for these drafts (at most: a rejection stops the chunks): each row's real
        positions on a CPU or the fast backend, else the padded batch's first 8 positions and each row's past them."""
        if self._rows_fused:
            return len(drafted) + sum(drafted)
        late = sum(max(k + 1 - _CHUNK, 0) for k in drafted)
        return len(drafted) * min(max(drafted) + 1, _CHUNK) + late

    def observe(self, state, drafted: int, accepted: int, asked: Optional[int] = None) -> None:
        """Count an iteration: positions ``1 .. accepted`` accepted, ``accepted + 1`` rejected (when drafted). An empty
        proposal where ``asked`` tokens were asked for counts as a rejected first position: a drafter with nothing to
        propose (IAD past its source's end) gives nothing, and a choice that counted only proposed positions would go
        on asking it every step. (A shorter proposal is counted as drafted: counted as rejected where it ends, IAD's
        copies of short sources would cut every sentence's first draft to their lengths.)"""
        top, got = self._reached(drafted, accepted, asked)
        if not top:
            return
        self._iter_accepted += accepted
        self._count(top, got, self._count_sentence(state, top, got))

    def _reached(self, drafted: int, accepted: int, asked: Optional[int]) -> Tuple[int, int]:
        """The deepest position an iteration counts (``top``: the first rejected, or the draft's last) and how many of
        them were accepted (:meth:`observe`); ``(0, 0)`` where nothing was drafted or asked."""
        if drafted > 0:
            top = min(accepted + 1, drafted, self.horizon)
            return top, (accepted if accepted < top else top)
        return (1, 0) if asked else (0, 0)

    def _count_sentence(self, state, top: int, got: int) -> bool:
        """Add an iteration that reached position ``top`` and accepted ``got`` to its sentence's counts; whether it was
        the sentence's first drafted iteration."""
        sent = state.extra.get("policy_counts")
        first = sent is None
        if first:
            sent = state.extra["policy_counts"] = ([0] * (self.horizon + 2), [0] * (self.horizon + 2))
        s_reach, s_acc = sent
        for m in range(1, got + 1):
            s_reach[m] += 1
            s_acc[m] += 1
        for m in range(got + 1, top + 1):
            s_reach[m] += 1
        return first

    def _count(self, top: int, got: int, first: bool) -> None:
        """Add an iteration that reached position ``top`` and accepted ``got`` to the input's counts."""
        self._version += 1
        if first:
            self._ends_first[top] += 1
            self._gots_first[got] += 1
        self._ends[top] += 1  # (the counts by position are added up at the refresh)
        self._gots[got] += 1
        if top > self._fold_top:
            self._fold_top = top
            if top > self._deepest:
                self._deepest = top
        self._stale += 1
        if 4 * self._stale >= self.reach[1]:
            # the rates are refreshed once the observations since the last refresh are a quarter of those counted
            # (every one of the first four): a few per cent of them move the rates by less than that, and a refresh
            # reads every position (30 us; made at every eighth, refreshes took 4-6 us of a fast-backend batch-1
            # sentence of 1.1-1.3 ms, half of what counting its iterations took)
            self._refresh()

    def _ranked(self, states, limits: Sequence[int], floor: float):
        """Every row's draft positions ``(value, row, position)``, the best value first (ties: the lower row, then the
        lower position), where a position's value is ``prod_{l<=m} q_l`` for its sentence; positions past a row's
        limit, below 1 % or below ``floor`` (a value with which no position can pay for its place) are left out.
        A row's values only fall, so a heap of each row's next position yields them in order, computed only as far as
        the choice reads them (a full sort of every row's positions cost 0.3-0.9 ms a choice at B = 32)."""
        q, w = self.q, self.weight
        least = max(0.01, floor)
        counts = [st.extra.get("policy_counts") for st in states]
        first = self.q_first  # (a row whose sentence has no counts yet: its first draft)

        def rate(r: int, m: int) -> float:  # q_m for row r's sentence, leaning on its own counts
            sent = counts[r]
            if sent is None:
                return first[m]
            return (sent[1][m] + w * q[m]) / (sent[0][m] + w) if sent[0][m] else q[m]
        heap = []
        for r, lim in enumerate(limits):
            p = rate(r, 1) if lim > 0 else 0.0
            if p >= least:
                heap.append((-p, r, 1))
        heapq.heapify(heap)
        replace, pop = heapq.heapreplace, heapq.heappop
        while heap:
            p, r, m = heap[0]
            p = -p
            yield p, r, m
            m += 1
            if m <= limits[r]:
                p *= rate(r, m)
                if p >= least:
                    replace(heap, (-p, r, m))  # (the row's next position in its place: one sift, not two)
                    continue
            pop(heap)

    def _depth(self) -> int:
        """How deep a draft's positions keep a value of 1 % or more by the rates across the input: about how many of a
        row's positions a choice reads."""
        p, n = 1.0, 0
        for qm in self.q[1: self.horizon + 1]:
            p *= qm
            if p < 0.01:
                break
            n += 1
        return n

    def _choose_padded(self, states, limits: Sequence[int], cost: PassCost, B: int, fixed: float, factor: float,
                       step: float) -> Optional[Tuple[List[int], float]]:
        """:meth:`choose_batch`'s choice for a padded pass (a GPU), every candidate position at once: positions ranked
        as :meth:`_ranked` ranks them, and the number of them that maximises expected tokens per second, where the
        t best cost the drafter of the rows they ask, the pass's extra tokens, the projected rows (exact acceptance
        projects the padded batch's first 8 positions of every row at once, then one row per draft token past the
        8th) and the padding to the widest draft: ``(draft lengths, the tokens per second they promise, whether they
        took about every position ranked)``, None where no draft clears :meth:`_bar`."""
        H = max(limits, default=0)  # (limits are at most the horizon)
        if H <= 0:
            return None
        lim = np.asarray(limits, dtype=np.int64)
        # a row without counts of its own drafts as a sentence's first draft: the products of q_first (computed once
        # for every such row: each numpy call here costs microseconds, the arrays are small)
        value = np.tile(np.cumprod(np.asarray(self.q_first[1: H + 1], dtype=float)), (B, 1))
        counted = [r for r, st in enumerate(states) if st.extra.get("policy_counts") is not None]
        if counted:
            w, q = self.weight, np.asarray(self.q[1: H + 1], dtype=float)
            got = [states[r].extra["policy_counts"] for r in counted]
            reach = np.array([c[0][1: H + 1] for c in got], dtype=np.int64)
            acc = np.array([c[1][1: H + 1] for c in got], dtype=np.int64)
            # q_m for each row's sentence, as _ranked has it
            value[counted] = np.cumprod(np.where(reach > 0, (acc + w * q) / (reach + w), q), axis=1)
        # rates are at most 1, so a row's values only fall and what is kept is a prefix of its positions
        keep = (np.arange(1, H + 1) <= lim[:, None]) & (value >= 0.01)
        rows, pos = np.nonzero(keep)
        if rows.size == 0:
            return None
        value = value[rows, pos]
        # the best value first; ties: the lower row, then the lower position (nonzero's order, which a stable sort keeps)
        order = np.argsort(-value, kind="stable")
        value, rows, pos = value[order], rows[order], pos[order] + 1
        t = np.arange(1, rows.size + 1)
        expected = B + np.cumsum(value)
        # a row's first position asks the drafter for it: its best, so it comes before the row's others
        first = pos == 1
        fresh = np.array([not st.extra.get("drafter_started") for st in states], dtype=bool)
        new_first = first & fresh[rows]
        asked, asked_new = np.cumsum(first), np.cumsum(new_first)
        drafter_by = np.array([self.drafter_cost(k) for k in range(B + 1)])
        start_by = np.array([self.start_cost(k) for k in range(B + 1)])
        # a start is paid once a sentence and serves its later drafts too: an iteration is charged the share of it that
        # the fresh rows' expected tokens make of the tokens they have left (as choose_batch charges it)
        new_tokens = asked_new + np.cumsum(np.where(fresh[rows], value, 0.0))
        left = np.array([self._tokens_left(st) for st in states], dtype=float)
        new_left = np.cumsum(np.where(new_first, left[rows], 0.0))
        start_share = np.minimum(new_tokens / np.maximum(new_left, 1.0), 1.0)
        width = np.maximum.accumulate(pos) + 1
        late = np.cumsum(pos >= _CHUNK)
        fed_extra, projected_extra = self._padded_tables(cost, B, int(t[-1]), int(B * _CHUNK + late[-1]))
        added = fed_extra[t] + projected_extra[B * np.minimum(width, _CHUNK) + late - B]
        if cost.pad_s:
            added = added + cost.pad_s * (B * (width - 1) - t)
        per_s = expected / (step + fixed + drafter_by[asked] + start_by[asked_new] * start_share + factor * added)
        most = self._first_bet(B)
        if most < t.size:  # (a first bet: beyond its tokens, positions while what they add stays under the cap)
            over = np.flatnonzero(factor * added > self._bet_cap(step))
            most = max(most, int(over[0]) if over.size else t.size)
        best = int(np.argmax(per_s[:most]))
        if not per_s[best] > self._bar(B, step):
            return None
        # (where the deepest positions, worth a few per cent each, did not pay for the pass's last few microseconds,
        # the choice still took about everything)
        took_all = expected[best] - B >= 0.9 * (expected[-1] - B)
        return np.bincount(rows[: best + 1], minlength=B).tolist(), float(per_s[best]), took_all

    # ------------------------------------------------------------------ the choice
    def _probe_cost(self, extra_s: float, rows: int) -> float:
        """What asking the drafter again costs (its call, a sentence start, the longer pass): the drafter is asked again
        once the greedy time since it was last asked is ``1 / probe_share`` times this (:meth:`_probe_due`), so probes
        cost at most ``probe_share`` of the time, and a drafter that starts to pay is still noticed."""
        cost = self.drafter_cost(rows) + self.start_cost(rows) + extra_s
        if rows not in self._start_s or rows not in self._drafter_s:
            cost *= 4  # not measured at this batch size: a scaled guess, so wait longer before paying it
        return cost

    @staticmethod
    def _tokens_left(state) -> int:
        """About how many tokens a sentence has left to decode: its source's length less those decoded (an output taken
        to be as long as its source; one longer than that is charged more of a drafter start, not less)."""
        return max(len(state.src_list) + 1 - len(state.prefix), 1)

    def _probe_due(self, step_s: float, cost: float) -> bool:
        self._skipped_s += step_s
        if self._skipped_s * self.probe_share < cost:
            return False
        self._skipped_s = 0.0
        self.probes += 1
        return True

    def _steps_before_probe(self, step_s: float, cost: float) -> int:
        """The greedy steps left before a probe costing ``cost`` is due (at most 63; their time is counted now)."""
        steps = int((cost / self.probe_share - self._skipped_s) / step_s) - 1 if step_s > 0 else 0
        steps = min(max(steps, 0), 63)
        self._skipped_s += steps * step_s
        return steps

    def _hold_for(self, step_s: float, cost: float) -> int:
        """Set :attr:`hold` to the greedy steps left before a probe costing ``cost`` is due and return it."""
        self.hold = self._steps_before_probe(step_s, cost)
        return self.hold

    def _hold_batch(self, rows: int, step_s: float, cost: float, key: int) -> None:
        """A batch of ``rows`` rows holds its "no draft" (kept under ``key``): the loop may take the greedy passes left
        before the probe is due without asking (:meth:`take_held_step`), each counted as a reuse of the held choice."""
        steps = self._steps_before_probe(step_s, cost)
        self.batch_hold = self._batch_hold_len = steps
        self._batch_hold_rows, self._batch_hold_step, self._batch_hold_key = rows, step_s, key

    def _end_batch_hold(self) -> None:
        """End a batched hold: the steps taken count as reuses of the held choice, and those it counted towards the
        next probe and did not take (it ended early) are given back."""
        key = self._batch_hold_key
        taken, held = self._batch_hold_len - self.batch_hold, self._batch_skips.get(key)
        if taken and held is not None:
            self._batch_skips[key] = (held[0], held[1] + taken, held[2], held[3])
        if self.batch_hold:
            self._skipped_s = max(self._skipped_s - self.batch_hold * self._batch_hold_step, 0.0)
        self.batch_hold = self._batch_hold_len = 0

    def take_held_step(self, rows: int) -> bool:
        """Whether the batched loop's next pass, over ``rows`` rows, is a greedy one the held "no draft" covers (then
        counted): the loop neither asks :meth:`choose_batch` nor does per-row work for it, so a batch whose drafter
        does not pay (a batch-32 greedy pass of 0.4 ms on the fast backend) pays the policy almost nothing. A hold
        ends where half its rows have left (fewer rows make a pass cheaper per row, so a draft may pay again)."""
        if self.batch_hold and rows > self._batch_hold_rows // 2:
            self.batch_hold -= 1
            return True
        if self._batch_hold_len:
            self._end_batch_hold()
        return False

    def _best_length(self, limit: int, started: bool, sent, step: float, margin: float) -> int:
        """The batch-1 draft length ``1 .. limit`` with the most expected tokens per second, where it promises
        ``margin`` times a greedy step's (``step`` seconds); else 0. ``sent``: the sentence's counts (None: none yet)."""
        table, factor = self._table, self.extra_factor  # (_scale is 1 at batch 1)
        d, s = self._drafter_s, self._start_s
        drafter = ((d[1] if 1 in d else self.drafter_cost(1)) + self.extra_fixed
                   + (0.0 if started else (s[1] if 1 in s else self.start_cost(1))))
        base = step + drafter
        first = sent is None and not started
        if first:  # a sentence's first draft: the standing answers by limit, while what they were made with holds
            left, upto, made = self._first_stands.get(margin, _NO_STAND)
            if left > 0 and 0.5 * made[0] < base < 2.0 * made[0] and 0.5 * made[1] < factor < 2.0 * made[1]:
                self._first_stands[margin] = (left - 1, upto, made)
                return upto[limit if limit < len(upto) else -1]
        best_n, best = 0, margin / step
        expected, p = 1.0, 1.0
        least = self._least_after  # the smallest cost one more position adds, from position n on
        bar = factor * best  # (this loop runs every iteration of a batch-1 decode: kept to plain arithmetic)
        if sent is None:  # the sentence's first draft: the refreshed values
            values, expected_at = self._first_p, self._first_e
            upto = [0]  # the answer at each limit; a first choice that will stand reads to the last position worth 1 %
            for n in range(1, len(values) if first else min(limit, len(values) - 1) + 1):
                p = values[n]
                if p < bar * least[n - 1]:
                    break
                rate = expected_at[n] / (base + factor * table[n])
                if rate > best:
                    best_n, best, bar = n, rate, factor * rate
                upto.append(best_n)
            if first:
                self._first_stands[margin] = (_STANDING - 1, upto, (base, factor))
            return upto[limit if limit < len(upto) else -1]
        w = self.weight
        q, (s_reach, s_acc) = self.q, sent
        for n in range(1, limit + 1):  # _values' products, computed as the choice reads them
            seen = s_reach[n]
            p *= (s_acc[n] + w * q[n]) / (seen + w) if seen else q[n]
            if p < 0.01 or p < bar * least[n - 1]:
                break  # no position from n on can pay for its place: the values only fall
            expected += p
            rate = expected / (base + factor * table[n])
            if rate > best:
                best_n, best, bar = n, rate, factor * rate
        return best_n

    def choose(self, state, verifier=None) -> int:
        """The draft length for this sentence's next iteration, ``0 .. state.max_draft``."""
        limit = min(state.max_draft, self.horizon)
        if limit <= 0:
            return 0
        started = bool(state.extra.get("drafter_started"))
        held = self._skip
        if held[0] == self._version and held[1] == started and held[2] < 64:
            # the last "no draft" holds (no count, cost or start changed since): only the probe's budget is counted,
            # and the loop is told how many greedy steps it may take before the probe is due without asking
            # (:attr:`hold`), so a decode whose drafter does not pay (a greedy pass of 0.1 ms) pays the policy almost
            # nothing
            if self._probe_due(held[3], held[4]):
                return min(limit, self.probe_len)
            self._skip = (held[0], started, held[2] + 1 + self._hold_for(held[3], held[4]), held[3], held[4])
            return 0
        if self.cost is None:
            raise RuntimeError("call CostAwarePolicy.prepare(verifier) before decoding")
        if not self.reach[1]:  # nothing known yet: a probe's worth of draft to learn from
            return min(limit, self.probe_len)
        step = self._greedy.get(1, self.cost.step_s)  # (greedy_pass_s at one row)
        best_n = self._best_length(limit, started, state.extra.get("policy_counts"), step, self.margin)
        if best_n == 0:
            n = min(self.probe_len, self.horizon)
            probe_cost = self._probe_cost(self.extra_fixed + self.extra_factor * self._table[n], 1)
            if self._probe_due(step, probe_cost):
                return min(limit, n)
            self._skip = (self._version, started, self._hold_for(step, probe_cost), step, probe_cost)
            return 0
        self._skipped_s = 0.0
        return best_n

    def _stand(self, states, n: Sequence[int], rows: int) -> None:
        """A padded choice of ``n`` that took every position worth 1 % or more stands (:meth:`choose_batch`)."""
        self._standing = (rows, _STANDING)
        for st, k in zip(states, n):
            st.extra["policy_standing"] = k > 0

    def choose_batch(self, states, verifier) -> List[int]:
        """The draft length of every row of a batch (one pass verifies them all)."""
        B = len(states)
        self._promised, self._iter_s, self._iter_accepted = None, 0.0, 0  # (a first pass is not observed)
        if self._batch_hold_len:  # a hold ran out, or was asked inside (not by the loop, which takes its steps)
            self._end_batch_hold()
        key = B.bit_length()
        held = None
        for k in (key, key + 1):  # (made at up to twice as many rows: of this row class or the next)
            held = self._batch_skips.get(k)
            if held is not None and held[0][0] == self._version and held[0][1] >= B > held[0][1] // 2 and held[1] < 64:
                key = k
                break
            held = None
        if held is not None:
            # the last "no draft" holds (no count, cost or start changed since, and at least half its rows are left):
            # only the probe's budget is checked, so a batch that never drafts pays the policy almost nothing per
            # iteration (a full choice costs about a tenth of a batch-32 pass on the fast backend)
            if not self._probe_due(held[2], held[3]):
                self._batch_skips[key] = (held[0], held[1] + 1, held[2], held[3])
                self._hold_batch(B, held[2], held[3], key)
                return [0] * B
            del self._batch_skips[key]
            self._last = self.batch_cost(verifier, B)
            return self._probe_rows([min(st.max_draft, self.horizon) for st in states])
        t0 = time.perf_counter()  # (a draft is judged with what choosing it cost)
        limits = [min(st.max_draft, self.horizon) for st in states]
        standing, self._standing = self._standing, None
        if standing is not None and standing[1] > 0:
            # the last padded choice took every position worth 1 % or more: no position's cost outweighed its value,
            # and positions past 1 % are left out only to bound what a choice reads. So for a few iterations, in this
            # batch and the next, each row that drafted (and each sentence new since then) drafts as far as it may,
            # as fixed k does, before the choice is made again. On a GPU a padded pass costs about the same whatever
            # it verifies; made every iteration, the choice took 0.2-0.5 ms of the GPU machine's processor, 10-12 % of
            # batched IAD's time, where a pass took 1-2 ms. (Its passes are not judged: it promised nothing.)
            n = [lim if st.extra.get("policy_standing", True) else 0 for st, lim in zip(states, limits)]
            if any(n):
                self._standing = (standing[0], standing[1] - 1)
                self._last = self.batch_cost(verifier, B)
                self._skipped_s = 0.0
                return n
        cost = self._last = self.batch_cost(verifier, B)
        if not self.reach[1]:
            # the run's first draft, to learn from, asks one row: what the drafter's start costs is not known yet
            # (GAD's drafter started on four of the longest rows took 2.2 ms, 1.2 % of a batched run on the fast
            # backend)
            return self._probe_rows(limits, 1)
        probe_n = self._probe_rows(limits)
        if self._batch_greedy_near(B) is None and self._run_greedy_near(B) is None:
            # the run's first batch of about this many rows drafts once it has measured a greedy pass of its own:
            # drafts are priced by how much dearer real passes are than the calibration's. Priced by the calibration
            # alone (dummy sentences of 24 tokens), the fast backend drafted 160 tokens at B = 32 in the first batch at
            # 40 us a token, what a greedy row costs there, where 20 were expected. (Every batch measuring its own
            # first cost two greedy passes a batch: IAD at B = 2 drafted 5.6 tokens per iteration against 13.3.)
            return [0] * B
        fixed, factor = self.batch_line(B)
        factor *= self._scale(B, cost)
        step = self.greedy_pass_s(B, cost)
        probed = sum(1 for n in probe_n if n)
        probe_fed = B + sum(probe_n)

        def no_draft() -> List[int]:
            if not probed:
                return [0] * B
            probe_cost = self._probe_cost(fixed + factor * cost.extra(probe_fed, self._projected(probe_n), base=B),
                                          probed)
            if self._probe_due(step, probe_cost):
                return probe_n
            own = any(st.extra.get("policy_counts") is not None for st in states)
            self._batch_skips[key] = ((self._version, B, own), 0, step, probe_cost)
            self._hold_batch(B, step, probe_cost, key)
            return [0] * B
        fused = self._rows_fused
        depth = 0 if fused else self._depth()  # (a fused CPU pass prices real positions: the loop, at no extra cost)
        if depth and sum(min(lim, depth) for lim in limits) > _MANY_POSITIONS:
            # a padded pass (a GPU) costs about the same whatever it verifies, so where drafts are accepted the choice
            # reads most of every row's positions: the same choice in numpy (the loop below cost 2-12 ms a choice at
            # B = 16-64 there; numpy's calls cost more than the loop where few positions are read)
            chosen = self._choose_padded(states, limits, cost, B, fixed, factor, step)
            if chosen is None:
                return no_draft()
            self._skipped_s = 0.0
            n, rate, took_all = chosen
            if took_all:
                self._stand(states, n, B)
            self._promised = (B, rate, time.perf_counter() - t0)
            return n
        # a position adds p tokens and at least the cheapest token's share of the pass: below this value it cannot pay
        # (where a draft token costs what a greedy row does -- a batch on a CPU -- no position can, and nothing is
        # ranked)
        # (with the bar: a draft clears it only where one of its positions does, value over least cost)
        floor = factor * self._min_marginal(cost, B) * self._bar(B, step) if fused else 0.0
        # the drafter is asked for (and starts) only the rows that draft: its cost grows as rows join the choice. A start
        # is paid once a sentence and serves its later drafts too: an iteration is charged the share of it that the
        # fresh rows' expected tokens make of the tokens they have left (charged whole, the starts of a batch of long
        # sentences -- IAD's n-gram index, 1.3-1.5 ms for the four longest of 256 GEC sentences, 10-12 ms priced for 32
        # rows against a 2.8-3.6 ms greedy pass -- kept the longest batch greedy though its copies were accepted)
        asked, asked_new, drafter = set(), 0, fixed
        new_tokens, new_left, start, charged = 0.0, 0, 0.0, 0.0
        best_t, best = 0, self._bar(B, step)
        most = self._first_bet(B)
        expected = float(B)
        # exact acceptance projects (on a CPU) each row's real positions, chunk by chunk, else (a GPU) the padded batch's
        # first 8 positions of every row at once, then only the rows still accepting: the projected rows grow with the
        # widest draft, then one per draft token past the 8th
        width, late = 1, 0
        extra = self._extra_upto(cost, B, 16)  # what t draft tokens add to the pass (real rows), as far as read
        base, inv_best = step + drafter, 1.0 / best  # (per candidate token: locals only)
        pad = cost.pad_s  # every row shorter than the widest draft is padded to it
        taken = []  # the rows of the positions read, in order
        took_all = False
        cap = self._bet_cap(step)
        fresh_rows = [not st.extra.get("drafter_started") for st in states]
        for t, (p, r, m) in enumerate(self._ranked(states, limits, floor) if floor < 1.0 else (), 1):
            taken.append(r)
            expected += p
            fresh = fresh_rows[r]
            if t + 1 >= len(extra):
                extra = self._extra_upto(cost, B, 2 * t + 2)
            if r not in asked:
                asked.add(r)
                if fresh:
                    asked_new += 1
                    new_tokens += 1.0
                    new_left += self._tokens_left(states[r])
                    start = self.start_cost(asked_new)
                drafter = fixed + self.drafter_cost(len(asked))
            if fresh:
                new_tokens += p
                charged = start * min(new_tokens / new_left, 1.0)
            base = step + drafter + charged
            if m >= width:
                width = m + 1
            if fused:
                added = extra[t]
            else:
                late += m >= _CHUNK
                added = self._padded_extra(cost, B, t, B * min(width, _CHUNK) + late)
            if pad:
                added += pad * (B * (width - 1) - t)
            if t > most and factor * added > cap:
                break  # a first bet's tokens are spent and this position would take its cost past the cap
            rate = expected / (base + factor * added)
            if rate > best:
                best_t, best, inv_best = t, rate, 1.0 / rate
            elif p * inv_best < factor * (extra[t + 1] - extra[t] - pad):
                break  # the values only fall, and a token costs at least this from here (filling a padding position)
        else:  # every position worth 1 % or more was read: taken, on a padded pass, the choice stands
            took_all = not fused and best_t == len(taken)
        if best_t == 0:
            return no_draft()  # (which holds the choice while nothing it depends on changes)
        self._skipped_s = 0.0
        n = [0] * B
        for r in taken[:best_t]:
            n[r] += 1
        if took_all:
            self._stand(states, n, B)
        self._promised = (B, best, time.perf_counter() - t0)
        return n
