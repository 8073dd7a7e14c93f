"""The draft lengths of a recorded cost-aware decode, given back without deciding anything.

A method decoded with :class:`ReplayedChoices` in place of its :class:`~fastdec.engine.policy.CostAwarePolicy` makes
the recorded decode's drafts -- the same draft lengths, passes, outputs and drafter starts -- while the loops do none
of the policy's work (no counting, no choice, no measurement). The time between a cost-aware decode and its replay is
therefore what deciding costs in all: the policy's own calls (``time_policy_s``) and whatever they cost the passes
after them (caches they leave cold), which no timer around the calls sees.

A choice is looked up by the sentence (its source tokens) and the sentence's iteration: batch 1 and in batches alike,
the loops record in ``DecodeStats.planned`` one draft length per iteration of a sentence (a batch's held greedy passes
as 0, a row waiting out a pass not at all), and a sentence's ``DecodeState.iteration`` counts the same iterations.
Outputs stay lossless whatever is replayed: a draft length only shortens a draft.
"""
from __future__ import annotations

from functools import partial
from typing import Dict, List, Sequence, Tuple

__all__ = ["ReplayedChoices"]


class ReplayedChoices:
    """Draft lengths by ``(source tokens, iteration)``, made by :meth:`record` from a cost-aware decode; the loops
    take it for a policy (it answers their calls and learns nothing)."""

    cost = "replayed"  # (a policy without a cost measures before its first sentence: this one measures nothing)

    def __init__(self, planned: Dict[Tuple[int, ...], List[int]]):
        self.planned = planned
        # batch 1: the recorded greedy steps after a "no draft" are taken without asking, as a policy's held ones are
        # (asked at every step, a replay of GAD's or Blockwise's mostly greedy decodes on the C backend, 60 us a pass,
        # took 3-4 % longer than the policy it replayed)
        self.hold = 0
        self._rows = None  # a batch's rows as last asked: its greedy passes are held the same way

    @classmethod
    def record(cls, sources: Sequence, results: Sequence) -> "ReplayedChoices":
        """The choices of ``results`` (``DecodeResult``s of a decode with a policy, or the benchmark's records of
        them), one per source, in order."""
        return cls({}).add(sources, results)

    def add(self, sources: Sequence, results: Sequence) -> "ReplayedChoices":
        """Record the choices of more decodes (:meth:`record`)."""
        if len(sources) != len(results):
            raise ValueError(f"{len(sources)} sources but {len(results)} results to record choices from")
        for src, res in zip(sources, results):
            st = getattr(res, "stats", res)
            if len(st.planned) != st.iterations:
                raise ValueError(f"sentence {st.id}: {len(st.planned)} choices for {st.iterations} iterations: not "
                                 "a decode with a draft policy")
            self.planned[tuple(int(t) for t in src.reshape(-1).tolist())] = list(st.planned)
        return self

    def _of(self, state) -> int:
        return min(self._recorded(state), state.max_draft)

    def _recorded(self, state) -> int:
        lengths = state.extra.get("replayed")  # (looked up once a sentence: a replay should cost nothing)
        if lengths is None:
            lengths = state.extra["replayed"] = self.planned.get(tuple(state.src_list))
            if lengths is None:
                raise KeyError("no recorded choices for this source: replay decodes the sentences it recorded")
        if state.iteration >= len(lengths):
            raise KeyError(f"the recorded decode of this source took {len(lengths)} iterations; asked for iteration "
                           f"{state.iteration + 1}: the replay decodes differently from the recording")
        return lengths[state.iteration]

    # the loops' calls: the recorded choice, else nothing
    def choose(self, state, verifier=None) -> int:
        n = self._of(state)
        if n == 0:
            lengths, i = state.extra["replayed"], state.iteration + 1
            while i < len(lengths) and lengths[i] == 0:
                i += 1
            self.hold = i - state.iteration - 1
        return n

    def choose_batch(self, states, verifier=None) -> List[int]:
        self._rows = states
        return [self._of(st) for st in states]

    def take_held_step(self, rows: int) -> bool:
        """A batch's pass with no draft recorded for any of its rows is taken without asking."""
        if self._rows is None:
            return False
        left = [st for st in self._rows if st.prefix[-1] != st.eos]  # (finished rows have left the batch)
        return len(left) == rows and not any(self._recorded(st) for st in left)  # (a row's limit is not set yet)

    def prepare(self, verifier, batch: int = 1) -> None:
        self.hold, self._rows = 0, None  # (a sentence's, a batch's choices are its own)

    def observe_iteration(self, *args, **kwargs) -> None:
        pass

    observe = observe_rows = observe_start = observe_drafter = observe_pass = observe_greedy_pass = observe_iteration
    observe_batch_pass = observe_iteration

    def sentence_calls(self):
        return partial(self.prepare, batch=1), self.choose, self.observe_iteration

    def batch_calls(self):
        def step(states, verifier):
            return None if self.take_held_step(len(states)) else self.choose_batch(states, verifier)
        return self.prepare, step, self.observe_batch_pass
