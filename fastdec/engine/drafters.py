"""Drafters: strategies that propose the next tokens for the verifier to check.

The protocol is deliberately small::

    class Drafter(Protocol):
        def propose(self, state: DecodeState) -> Sequence[int] | LongTensor: ...
        # optional: def start(self, state: DecodeState) -> None   (once per sentence, after encoding)
        # optional: def check_acceptance(self, accept) -> None   (raise ValueError on rules it cannot serve)

``propose`` returns ``k >= 0`` token ids meant as ``o_{j+1} .. o_{j+k}`` following the accepted
prefix ``state.prefix = [BOS, o_1 .. o_j]``. The loop truncates the draft to ``state.max_draft``
tokens, at its first EOS (kept) and at its first padding token (dropped); an empty draft means a
plain greedy step. Drafters may keep per-sentence state in ``state.extra`` (reset every sentence)
or on themselves if they implement ``start``. See :class:`fastdec.engine.loop.DecodeState` for
what the state exposes (source tokens, prefix, encoder output, last verifier hidden states).

Provided here:

* :class:`NoDrafter` -- greedy decoding.
* :class:`InputCopyDrafter` -- Input-guided Aggressive Decoding (IAD, Algorithm 1 of Ge et al.).
* :class:`FixedTokensDrafter`, :class:`RandomDrafter`, :class:`NoisyOracleDrafter` -- for tests.

Other drafters (GAD's NAT drafter, Blockwise heads) register themselves with
:func:`register_drafter` so that ``make_drafter(name, ...)`` and the CLIs can build them by name.
"""
from __future__ import annotations

import random
from typing import TYPE_CHECKING, Callable, Dict, List, Optional, Protocol, Sequence, runtime_checkable

if TYPE_CHECKING:  # pragma: no cover
    from .loop import DecodeState

__all__ = ["Drafter", "NoDrafter", "InputCopyDrafter", "FixedTokensDrafter", "RandomDrafter",
           "NoisyOracleDrafter", "register_drafter", "make_drafter", "available_drafters"]


@runtime_checkable
class Drafter(Protocol):
    def propose(self, state: "DecodeState") -> Sequence[int]:  # pragma: no cover - protocol
        ...


class NoDrafter:
    """Proposes nothing: the loop degenerates to greedy decoding."""

    name = "greedy"

    def propose(self, state: "DecodeState") -> List[int]:
        return []


_BOS_SENTINEL = -1  # BOS never collides with a real token (fairseq's BOS id equals EOS)


class InputCopyDrafter:
    """IAD: draft by copying the source (Algorithm 1, Ge et al. 2022, Sec. 3.1).

    The source ``x = x_1 .. x_n EOS`` (as fairseq encodes it) is prefixed with a BOS that only
    matches the output's BOS, so the very first iteration drafts the whole source (the
    "initial aggressive decoding"). The trailing EOS of the source plays the role of the paper's
    appended ``[PAD]``: the loop always appends the verifier's token after the last accepted one,
    so a bifurcation (or the final EOS) always exists.

    At every later iteration the drafter looks for the longest suffix ``o_{j-q..j}`` of the output
    (``q + 1`` from ``max_ngram`` down to ``min_ngram`` tokens; default 3..1) that occurs at exactly
    one position ``i`` of the source. It drafts the source continuation ``x_{i+1} ..`` from there.
    If the longest suffix occurring in the source occurs more than once, no shorter one can be
    unique either, so the drafter returns an empty draft -- one-token "re-decoding" -- until the
    output's suffix matches uniquely again. Output equals greedy decoding by construction.
    """

    name = "iad"

    def __init__(self, max_ngram: int = 3, min_ngram: int = 1):
        if isinstance(max_ngram, bool) or not isinstance(max_ngram, int) or max_ngram < 1:
            raise ValueError(f"max_ngram must be an integer >= 1, got {max_ngram!r}")
        if isinstance(min_ngram, bool) or not isinstance(min_ngram, int) or min_ngram < 1:
            raise ValueError(f"min_ngram must be an integer >= 1, got {min_ngram!r}")
        if min_ngram > max_ngram:
            raise ValueError(f"min_ngram ({min_ngram}) must be <= max_ngram ({max_ngram})")
        self.max_ngram = max_ngram
        self.min_ngram = min_ngram

    def start(self, state: "DecodeState") -> None:
        xs = [_BOS_SENTINEL] + list(state.src_list)
        index: Dict[tuple, List[int]] = {}
        for n in range(self.min_ngram, self.max_ngram + 1):
            for end in range(n - 1, len(xs)):
                index.setdefault(tuple(xs[end - n + 1: end + 1]), []).append(end)
        state.extra["iad_xs"] = xs
        state.extra["iad_index"] = index

    def match(self, state: "DecodeState") -> Optional[int]:
        """End position ``i`` (in ``[BOS] + src``) of the unique longest suffix match, or None."""
        if "iad_index" not in state.extra:
            self.start(state)
        index = state.extra["iad_index"]
        prefix = state.prefix
        out_len = len(prefix)
        for n in range(min(self.max_ngram, out_len), self.min_ngram - 1, -1):
            if n == out_len:  # suffix reaches the BOS
                key = (_BOS_SENTINEL,) + tuple(prefix[1:])
            else:
                key = tuple(prefix[out_len - n:])
            hits = index.get(key)
            if hits is None:
                continue
            return hits[0] if len(hits) == 1 else None
        return None

    def propose(self, state: "DecodeState") -> List[int]:
        i = self.match(state)
        if i is None:
            return []
        xs = state.extra["iad_xs"]
        return xs[i + 1: i + 1 + state.max_draft]


class FixedTokensDrafter:
    """Proposes a fixed draft each iteration: ``drafts`` is a list (cycled) or ``fn(state) -> tokens``."""

    name = "fixed"

    def __init__(self, drafts):
        self.drafts = drafts

    def propose(self, state: "DecodeState"):
        if callable(self.drafts):
            return self.drafts(state)
        if not self.drafts:
            return []
        return self.drafts[state.iteration % len(self.drafts)]


class RandomDrafter:
    """Arbitrary random drafts (any length in ``[0, max_tokens]``, any ids in ``[0, vocab)``): for tests."""

    name = "random"

    def __init__(self, vocab_size: int, max_tokens: int = 8, seed: int = 0, low: int = 0):
        if vocab_size < 1 or max_tokens < 0:
            raise ValueError("vocab_size must be >= 1 and max_tokens >= 0")
        self.vocab_size, self.max_tokens, self.low = vocab_size, max_tokens, low
        self.rng = random.Random(seed)

    def propose(self, state: "DecodeState") -> List[int]:
        k = self.rng.randint(0, self.max_tokens)
        return [self.rng.randrange(self.low, self.vocab_size) for _ in range(k)]


class NoisyOracleDrafter:
    """Drafts a known continuation (e.g. the greedy output) with random corruptions: for tests.

    ``reference`` is the full expected output ``o_1 .. o_m``; each iteration drafts up to
    ``max_tokens`` of ``reference[j:]`` and replaces each token by a random id with probability ``noise``.
    """

    name = "noisy-oracle"

    def __init__(self, reference: Sequence[int], vocab_size: int, noise: float = 0.2, max_tokens: int = 10,
                 seed: int = 0, low: int = 4):
        self.reference = list(reference)
        self.vocab_size, self.noise, self.max_tokens, self.low = vocab_size, noise, max_tokens, low
        self.rng = random.Random(seed)

    def propose(self, state: "DecodeState") -> List[int]:
        j = state.num_generated
        k = self.rng.randint(0, self.max_tokens)
        out = self.reference[j: j + k]
        return [self.rng.randrange(self.low, self.vocab_size) if self.rng.random() < self.noise else t
                for t in out]


_REGISTRY: Dict[str, Callable[..., object]] = {}


def register_drafter(name: str, factory: Callable[..., object], *aliases: str) -> None:
    """Register ``factory(**kwargs) -> drafter`` under ``name`` (and aliases) for :func:`make_drafter`.

    If the factory takes a ``context`` parameter (or ``**kwargs``), :func:`make_drafter` passes the
    runtime context dict: ``loaded`` (:class:`~fastdec.engine.load.LoadedModel` of the verifier, may be
    None), ``verifier``, ``device``, ``dtype``.
    """
    for key in (name, *aliases):
        _REGISTRY[key.lower()] = factory


def available_drafters() -> List[str]:
    return sorted(_REGISTRY)


def _accepts_context(factory) -> bool:
    import inspect

    try:
        sig = inspect.signature(factory)
    except (TypeError, ValueError):  # pragma: no cover - builtins
        return False
    return any(p.kind == p.VAR_KEYWORD or p.name == "context" for p in sig.parameters.values())


def make_drafter(name: str, context: Optional[dict] = None, **kwargs):
    """Build a registered drafter by name (``greedy``/``none``, ``iad``/``input-copy``, ``random``, ...).

    Unknown names and bad keyword arguments raise ``ValueError``.
    """
    key = (name or "").lower()
    if key not in _REGISTRY:
        raise ValueError(f"unknown drafter {name!r}; available: {', '.join(available_drafters())}")
    factory = _REGISTRY[key]
    if _accepts_context(factory):
        kwargs["context"] = context
    try:
        return factory(**kwargs)
    except TypeError as exc:
        raise ValueError(f"bad arguments for drafter {name!r}: {exc}") from None


def _greedy_factory():
    return NoDrafter()


def _iad_factory(max_ngram: int = 3, min_ngram: int = 1):
    return InputCopyDrafter(max_ngram=int(max_ngram), min_ngram=int(min_ngram))


def _random_factory(vocab_size: int, max_tokens: int = 8, seed: int = 0):
    return RandomDrafter(int(vocab_size), int(max_tokens), int(seed))


register_drafter("greedy", _greedy_factory, "none")
register_drafter("iad", _iad_factory, "input-copy")
register_drafter("random", _random_factory)
