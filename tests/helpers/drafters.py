"""Drafters for the engine's property tests: fixed, random and noisy-oracle drafts (the noisy oracle and the
per-source drafter live in fastdec.engine.selfcheck, which runs them on a device too)."""
import random
from typing import List, Sequence

from fastdec.engine.drafters import Drafter
from fastdec.engine.selfcheck import NoisyOracleDrafter, PerSourceDrafter  # noqa: F401


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
