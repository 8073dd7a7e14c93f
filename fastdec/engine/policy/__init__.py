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
  third or three times what the line says (a pass that met a cold cache moves it a step); a pass more than three
  times dearer is set aside unless the next is too (a stall of the machine), and at each new batch a batch size's
  line moves 15 % of the way back to the calibration (a line set too dear stops the drafting that would correct it);
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
  cost at most 0.5 %, and a drafter that starts to pay is noticed. Each probe that no paying draft followed doubles that
  interval, up to 8 times (:mod:`.probes`): a drafter that never pays is asked ever more rarely. Until then the batch-1
  loop takes greedy steps without asking (:attr:`CostAwarePolicy.hold`). A hold carries into the next sentence unless
  that sentence's first draft promises ``resume`` (25 %) more than a greedy step: one sentence's rejected drafts must
  not keep the next ones greedy, and a drafter that only just pays stays held. A new batch makes its choice afresh. A
  sentence whose *own* counts say ``n = 0`` where the input's first drafts would draft (IAD's copy out of line after an
  edit) waits for itself instead: its first position's counts halve and it asks again after 1, 2, 4 .. 16 greedy steps;
  in a batch a row asked for no draft does the same, pass by pass, and a batch whose rows' own counts are why none
  drafts (the same choice, made as if they had none, drafts) waits as a whole. A sentence's counts change only where it
  drafts, so without the waits a sentence that stopped drafting decoded the rest of itself greedily.

In a batch the same choice is made for all rows at once: every row's positions are ranked by their value
``prod q`` and the pass takes the best ones while tokens per second grow (each row drafts a prefix of its own
proposal, so a row's output never depends on the others); the drafter is charged for (and starts) only the rows
asked, and on a CPU's fused pass each position read is charged what reading one took the choices before (measured).
A row's drafter start is paid once a sentence and serves its later drafts too, so an iteration is charged the share
of the starts that the new rows' expected tokens make of the tokens they have left (an output taken to be as
long as its source). A batch's probe (and its first draft, before any count) asks only a few rows (``probe_rows``,
4). A drafted pass is judged against this batch's greedy pass of the nearest number of rows (within a factor of two),
and the run's first batch of about as many rows takes one greedy step before it drafts, to measure one. Every drafted
batch pass is also judged by what it gave -- its rows' tokens and accepted drafts per second of the pass, the drafter's
call and the choice -- against what its choice promised; where passes give less, the next choices must promise more
(whatever the estimates miss: acceptance at a batch's end, a drafted token that costs a greedy row on the C backend).
A pass that took more than three times its promise is left out unless the one judged after it did too, and a greedy
pass counts at most twice what the run's greedy passes say: one stall of the machine (20 ms inside one pass) made
whole runs stop drafting. The decoding loops pause Python's garbage collector while they decode
(:func:`~fastdec.engine.stats.collections_between_passes`): a collection inside a pass is such a stall.
A batch's "no draft" holds like batch 1's: the batched loop takes the greedy passes it covers without asking
(:meth:`CostAwarePolicy.take_held_step`) while more than half its rows are left: after a held step the policy lends
it the hold's remaining passes (:meth:`CostAwarePolicy.lend_hold`), which it counts itself and gives back what it did
not take before it asks again. The batched loop leaves a batch's first pass (it allocates the caches), its choices
and the dropping of finished rows out of what it shows the policy.

Lossless: the policy only shortens drafts (``state.max_draft``), and truncating a draft never changes what exact
acceptance returns -- every appended token is still the verifier's own greedy token (property tests on random
models, batch 1 and batched, every backend).

The package: :mod:`.pass_cost` (:class:`PassCost`, :func:`measure_pass_cost`), :mod:`.cost_cache` (the measured costs
kept between runs), :mod:`.measured_costs` (the calibration and what decoding measures of passes and the drafter),
:mod:`.counts` (acceptance by position), :mod:`.probes`, :mod:`.batch_one` (the batch-1 choice), :mod:`.batched_choice`
(with :mod:`.native_choice`, its choice on a CPU's fused pass in C) and :mod:`.cost_aware` (:class:`CostAwarePolicy`,
one object made of those parts).
"""
from __future__ import annotations

from .cost_aware import CostAwarePolicy
from .cost_cache import cached_pass_cost, pass_cost_key, store_pass_cost
from .pass_cost import PassCost, measure_pass_cost

__all__ = ["PassCost", "measure_pass_cost", "CostAwarePolicy", "POLICIES", "check_policy", "pass_cost_key",
           "cached_pass_cost", "store_pass_cost"]

POLICIES = ("fixed", "cost")


def check_policy(policy) -> str:
    """``policy`` as one of :data:`POLICIES`, else a ``ValueError`` naming the setting."""
    name = str(policy).lower()
    if name not in POLICIES:
        raise ValueError(f"draft policy must be one of {', '.join(POLICIES)}, got {policy!r}")
    return name
