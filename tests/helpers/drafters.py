"""Drafters for the engine's property tests: fixed, random and noisy-oracle drafts."""
import random
from typing import List, Sequence

from fastdec.engine.drafters import Drafter


class FixedTokensDrafter(Drafter):
    """Proposes a fixed draft each iteration: ``drafts`` is a list (cycled) or ``fn(state) -> tokens``."""

    name = "fixed"

    def __init__(self, drafts):
        self.drafts = drafts

    def propose(self, state):
        if callable(self.drafts):
            return self.drafts(state)
        if not self.drafts:
            return []
        return self.drafts[state.iteration % len(self.drafts)]


class RandomDrafter(Drafter):
    """Arbitrary random drafts (any length in ``[0, max_tokens]``, any ids in ``[low, vocab)``)."""

    name = "random"

    def __init__(self, vocab_size: int, max_tokens: int = 8, seed: int = 0, low: int = 0):
        self.vocab_size, self.max_tokens, self.low = vocab_size, max_tokens, low
        self.rng = random.Random(seed)

    def propose(self, state) -> List[int]:
        k = self.rng.randint(0, self.max_tokens)
        return [self.rng.randrange(self.low, self.vocab_size) for _ in range(k)]


class NoisyOracleDrafter(Drafter):
    """Drafts a known continuation (e.g. the greedy output) with random corruptions.

    ``reference`` is the full expected output ``o_1 .. o_m``; each iteration drafts up to
    ``max_tokens`` of ``reference[j:]`` and replaces each token by a random id with probability ``noise``.
    """

    name = "noisy-oracle"

    def __init__(self, reference: Sequence[int], vocab_size: int, noise: float = 0.2, max_tokens: int = 10,
                 seed: int = 0, low: int = 4):
        self.reference = list(reference)
        self.vocab_size, self.noise, self.max_tokens, self.low = vocab_size, noise, max_tokens, low
        self.rng = random.Random(seed)

    def propose(self, state) -> List[int]:
        j = state.num_generated
        k = self.rng.randint(0, self.max_tokens)
        return [self.rng.randrange(self.low, self.vocab_size) if self.rng.random() < self.noise else t
                for t in self.reference[j: j + k]]


class PerSourceDrafter(Drafter):
    """One drafter serving a batch: row by row, a child drafter per distinct source, ``make(src_list)`` building it
    (e.g. a noisy oracle of that sentence's own greedy output). Rows of the same source share their child."""

    name = "per-source"

    def __init__(self, make):
        self.make = make
        self.children = {}

    def child(self, state):
        key = tuple(state.src_list)
        if key not in self.children:
            self.children[key] = self.make(state.src_list)
        return self.children[key]

    def start(self, state):
        self.child(state).start(state)

    def propose(self, state):
        return self.child(state).propose(state)
