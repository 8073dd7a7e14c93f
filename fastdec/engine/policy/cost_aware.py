"""The cost-aware draft-length policy (:mod:`fastdec.engine.policy` says how it decides)."""
from __future__ import annotations

import copy
from functools import partial
from typing import Dict, List, Optional

from ..projection import feeds_real_tokens_only, projects_real_positions
from . import native_choice
from .batch_one import _NO_SKIP, BatchOneChoice
from .batched_choice import BatchedChoice
from .counts import AcceptanceCounts
from .measured_costs import MeasuredCosts, _ExtraFit
from .pass_cost import PassCost
from .probes import ProbeBudget


class CostAwarePolicy(BatchOneChoice, BatchedChoice, MeasuredCosts, ProbeBudget, AcceptanceCounts):
    # (one object, its parts in one module each: the state they share is made here, in ``__init__``)
    """Chooses each iteration's draft length by expected tokens per second (see :mod:`fastdec.engine.policy`).

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
        # the choices in C (native_choice: the batched choice on a fused pass, the batch-1 counting and choice); None:
        # the Python loops, which make the same choices
        self._native = native_choice.choice_module()
        self._calls = None  # the batched loop's calls, made once (BatchedChoice.batch_calls)
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
        # ... since the last probe (a paying draft does not reset it), and the probes' interval over probe_share's
        self._since_probe_s, self._probe_scale = 0.0, 1.0
        self.probes = 0
        # batch 1: greedy steps the loop may take without asking (a "no draft" that holds until the next probe is due)
        self.hold = 0
        self._own_hold = False  # the hold is a sentence's own wait (BatchOneChoice._wait_for_sentence): not carried
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
        self._real_tokens_only = False  # ... and feeds only the rows' real tokens to the decoder (the fast backend)
        self._prepared_for = None  # the verifier ``_rows_fused`` was read from
        # the tables the choices read, by cost and row count (and, under an int B, what the C batched choice reads)
        self._extras: Dict[object, object] = {}
        # the positions past each row's first that the last batched pass projected (observe_rows counts them for
        # observe_pass: a CPU's exact rule projects a row's later chunks only where it accepted the earlier ones)
        self._pass_projected: Optional[int] = None
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
        self._judged: Dict[int, tuple] = {}  # by row class: the faded sums _realized is made of (_judge)
        self._bet_per_row = 0.0  # the draft tokens a row a batched choice may bet (_first_bet; 0: a probe's worth)
        # (rows, tokens per second, the choice's seconds, tokens expected) of the last batched draft
        self._promised: Optional[tuple] = None
        self._judge_held = False  # the last judged pass took more than _STALLED times its promise (the first set aside)
        # a padded choice that took every position worth 1 % or more (about: 90 % of their expected tokens) stands for
        # the next iterations, in this batch and the next: (rows it was made for, iterations left); whether a row drafted
        # is kept on its state (``policy_standing``)
        self._standing: Optional[tuple] = None
        self._iter_s, self._iter_accepted = 0.0, 0  # this iteration's drafter seconds and accepted draft tokens
        # batch-1 iterations whose input-wide counting waits (:meth:`observe_iteration`)
        self._waiting_iterations: List[tuple] = []
        self._last: Optional[tuple] = None  # the cost and batch size of the last batched choice
        self._read_s = 0.0  # what a batched choice on a fused pass takes per position it reads (0: not measured yet)

    def prepare(self, verifier, batch: int = 1) -> None:
        """Measure what is not measured yet, before a sentence (or batch) starts: measuring drives the verifier."""
        if verifier is not self._prepared_for:
            self._rows_fused, self._prepared_for = projects_real_positions(verifier), verifier
            self._real_tokens_only = feeds_real_tokens_only(verifier)
        if batch > 1:
            self.new_batch()
        else:
            self.new_sentence()
        self.load_costs(verifier, batch)

    def _own_prepare(self) -> bool:
        """Whether :meth:`prepare` and what it calls are this class's own (the loops' C calls stand for them)."""
        cls = type(self)
        return (cls.prepare is CostAwarePolicy.prepare and cls.load_costs is CostAwarePolicy.load_costs
                and cls.new_sentence is BatchOneChoice.new_sentence and cls.new_batch is BatchedChoice.new_batch)

    def sentence_calls(self):
        """The batch-1 loop's calls, ``(start, choose, observe)``: ``start(verifier)``, :meth:`prepare` for a
        sentence; ``choose(state)``, :meth:`choose`; ``observe``, :meth:`observe_iteration`. Where the compiled choices
        are at hand (and those methods are not overridden) C functions of ``native/choice.c`` that make their common
        case in C and call the methods for the rest (``start_sentence``, ``choose_one``, ``observe_iteration``): a
        Python method's frame and lines, read cold after a pass of the C backend, cost 4-8 us a call."""
        native, cls = self._native, type(self)
        if native is None:
            return partial(self.prepare, batch=1), self.choose, self.observe_iteration
        return (partial(native.start_sentence, self) if self._own_prepare() else partial(self.prepare, batch=1),
                partial(native.choose_one, self) if cls.choose is BatchOneChoice.choose else self.choose,
                partial(native.observe_iteration, self) if cls.observe_iteration is BatchOneChoice.observe_iteration
                else self.observe_iteration)

    def snapshot(self) -> dict:
        """A copy of everything the policy has counted, measured and holds (:meth:`restore` puts it back); the verifier
        it was prepared for is kept by reference. A benchmark that decodes a batch several times and keeps the fastest
        decode starts each from the same policy: otherwise a later decode would choose with what an earlier one
        learned of the very same sentences."""
        memo = {id(self.__dict__[a]): self.__dict__[a] for a in ("_prepared_for", "_native")}
        if self._calls is not None:  # (the loop's calls are bound to this policy: made again after a restore)
            memo[id(self._calls)] = None
        return copy.deepcopy(dict(self.__dict__), memo)

    def restore(self, snapshot: dict) -> None:
        """Put back what :meth:`snapshot` copied (the snapshot stays usable for another restore)."""
        memo = {id(snapshot[a]): snapshot[a] for a in ("_prepared_for", "_native")}
        self.__dict__.clear()
        self.__dict__.update(copy.deepcopy(snapshot, memo))

    def load_costs(self, verifier, batch: int = 1) -> None:
        """Read what a pass of ``verifier`` costs at ``batch`` rows (and fewer) from the cost cache, or measure it, if
        not done yet: when a decoder is built, so that its first sentence or batch does not pay for it (the cache's
        key hashes the weights: 1.1-1.2 ms on the default run's GEC model, 3 % of a 32-sentence run at B = 16 on the
        fast backend)."""
        if batch <= 1 and self.cost is None:
            self._cached_or_measured(verifier, 1)
        elif batch > 1 and max(self._costs, default=0) < batch:  # (no cost measured at this many rows or more)
            self._cached_or_measured(verifier, batch)
