"""Drafters: strategies that propose the next tokens for the verifier to check.

Every drafter subclasses :class:`Drafter`; the loop calls, per sentence::

    drafter.check_acceptance(rule)   # before decoding: raise ValueError on a rule it cannot serve
    drafter.start(state)             # once, after the verifier encoded the source
    drafter.propose(state)           # every iteration: k >= 0 token ids (a list or a LongTensor)

``propose`` returns ``k >= 0`` token ids meant as ``o_{j+1} .. o_{j+k}`` following the accepted
prefix ``state.prefix = [BOS, o_1 .. o_j]``. The loop truncates the draft to ``state.max_draft``
tokens, at its first EOS (kept) and at its first padding token (dropped); an empty draft means a
plain greedy step. Drafters keep per-sentence state in ``state.extra`` (reset every sentence) and
charge the time of their own sub-modules with ``state.charge(name, seconds)``. See
:class:`fastdec.engine.state.DecodeState` for what the state exposes (source tokens, prefix, encoder
output, last verifier hidden states).

Provided here: :class:`NoDrafter` (greedy decoding) and :class:`InputCopyDrafter` (Input-guided
Aggressive Decoding, IAD, Algorithm 1 of Ge et al.). :data:`DRAFTERS` names every drafter the CLIs build by name
(``make_drafter(name, ...)``) and where its factory lives (``"module:factory"``); a module is imported only when
one of its drafters is built, so importing the engine does not import fairseq. :func:`register_drafter` adds
further factories at run time.
"""
from __future__ import annotations

import importlib
import inspect
from typing import TYPE_CHECKING, Callable, Dict, List, Optional, Sequence

if TYPE_CHECKING:  # pragma: no cover
    from .acceptance import AcceptanceRule
    from .state import DecodeState

__all__ = ["Drafter", "NoDrafter", "InputCopyDrafter", "DRAFTERS", "register_drafter", "make_drafter",
           "drafter_factory", "available_drafters", "check_same_device"]


class Drafter:
    """Base class of the drafters (see the module docstring); the defaults do nothing."""

    name = "drafter"

    def check_acceptance(self, rule: "AcceptanceRule") -> None:
        """Raise ``ValueError`` when this drafter cannot serve ``rule`` (e.g. Blockwise: ℓ > k)."""

    def start(self, state: "DecodeState") -> None:
        """Per-sentence setup, after the verifier encoded the source."""

    def propose(self, state: "DecodeState") -> Sequence[int]:
        """The next draft tokens (empty: a plain greedy step)."""
        return []

    def start_batch(self, states: List["DecodeState"]) -> None:
        """Per-batch setup (:mod:`fastdec.engine.batched`); the default sets up each sentence in turn."""
        for state in states:
            self.start(state)

    def propose_batch(self, states: List["DecodeState"]) -> List[Sequence[int]]:
        """The next draft of every sentence of a batch (:mod:`fastdec.engine.batched`); a drafter that can draft
        all rows in one pass overrides this, the default asks each row in turn."""
        return [self.propose(state) for state in states]


class NoDrafter(Drafter):
    """Proposes nothing: the loop degenerates to greedy decoding."""

    name = "greedy"


_BOS_SENTINEL = -1  # BOS never collides with a real token (fairseq's BOS id equals EOS)


class InputCopyDrafter(Drafter):
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
        state.extra["iad_xs"] = [_BOS_SENTINEL] + list(state.src_list)

    def match(self, state: "DecodeState") -> Optional[int]:
        """End position ``i`` (in ``[BOS] + src``) of the unique longest suffix match, or None.

        The source is scanned for the output's last token at each call (in C, by ``list.index``), not read from an
        n-gram index: a sentence asks for few drafts (fixed IAD's first draft is often accepted to its end), and an
        index built at a sentence's second draft cost 12-60 us a sentence of 20-120 tokens, paid inside one drafter
        call. In a batch those builds made a call of 8 rows take 0.8-1.3 ms against 17-30 us for one row, and the
        cost-aware policy, which prices a batch's draft by the drafter calls it measured, priced every draft of 32 rows
        out of the pass."""
        prefix = state.prefix
        out_len = len(prefix)
        if out_len == 1:  # only the BOS: it matches the source's start whatever min_ngram (initial aggressive decoding)
            return 0
        xs = state.extra["iad_xs"]
        last = prefix[-1]
        ends, e = [], 0
        find = xs.index
        try:
            while True:
                e = find(last, e + 1)
                ends.append(e)
        except ValueError:
            pass
        if not ends:
            return None
        for n in range(min(self.max_ngram, out_len), self.min_ngram - 1, -1):
            if n == 1:
                hits = ends
            else:
                # (the suffix reaches the BOS where n == out_len: matched only at the source's start, its sentinel)
                key = prefix[out_len - n:] if n < out_len else [_BOS_SENTINEL] + prefix[1:]
                hits = [e for e in ends if e >= n - 1 and xs[e - n + 1: e + 1] == key]
                if not hits:
                    continue
            return hits[0] if len(hits) == 1 else None
        return None

    def propose(self, state: "DecodeState") -> List[int]:
        i = self.match(state)
        if i is None:
            return []
        xs = state.extra["iad_xs"]
        return xs[i + 1: i + 1 + state.max_draft]


def check_same_device(drafter: Optional[Drafter], device) -> None:
    """A drafter with its own weights (``drafter.device``) must sit on the verifier's device: drafts move between
    them every iteration, and a CPU drafter beside a CUDA verifier would sync and copy each time."""
    mine = getattr(drafter, "device", None)
    if mine is None:
        return
    import torch

    a, b = torch.device(mine), torch.device(device)
    if a.type != b.type or (a.index or 0) != (b.index or 0):
        raise ValueError(f"mixed devices: the {getattr(drafter, 'name', 'drafter')} drafter is on {a} but the verifier "
                         f"on {b}; load both on one device (fastdec bench --device, config key device)")


# name -> "module:factory" (``factory(**kwargs) -> drafter``); aliases map to the same factory
DRAFTERS: Dict[str, str] = {
    "greedy": "fastdec.engine.drafters:greedy_factory",
    "none": "fastdec.engine.drafters:greedy_factory",
    "iad": "fastdec.engine.drafters:iad_factory",
    "input-copy": "fastdec.engine.drafters:iad_factory",
    "gad": "fastdec.engine.nat_drafter:gad_factory",
    "nat-drafter": "fastdec.engine.nat_drafter:gad_factory",
    "blockwise": "fastdec.engine.blockwise_drafter:blockwise_factory",
    "blockwise-parallel": "fastdec.engine.blockwise_drafter:blockwise_factory",
    "bpd": "fastdec.engine.blockwise_drafter:blockwise_factory",
}
_REGISTERED: Dict[str, Callable[..., object]] = {}  # run-time additions (register_drafter)


def register_drafter(name: str, factory: Callable[..., object], *aliases: str) -> None:
    """Register ``factory(**kwargs) -> drafter`` under ``name`` (and aliases) for :func:`make_drafter`, beside
    :data:`DRAFTERS` (a name in both builds by this factory).

    If the factory takes a ``context`` parameter (or ``**kwargs``), :func:`make_drafter` passes the
    runtime context dict: ``loaded`` (:class:`~fastdec.engine.load.LoadedModel` of the verifier, may be
    None), ``verifier``, ``device``, ``dtype``.
    """
    for key in (name, *aliases):
        _REGISTERED[key.lower()] = factory


def available_drafters() -> List[str]:
    return sorted(set(DRAFTERS) | set(_REGISTERED))


def drafter_factory(name: str) -> Callable[..., object]:
    """The factory :func:`make_drafter` calls for ``name`` (its module imported now); ``ValueError`` when unknown."""
    key = (name or "").lower()
    if key in _REGISTERED:
        return _REGISTERED[key]
    if key not in DRAFTERS:
        raise ValueError(f"unknown drafter {name!r}; available: {', '.join(available_drafters())}")
    module, attr = DRAFTERS[key].split(":")
    return getattr(importlib.import_module(module), attr)


def _accepts_context(factory) -> bool:
    try:
        sig = inspect.signature(factory)
    except (TypeError, ValueError):  # pragma: no cover - builtins
        return False
    return any(p.kind == p.VAR_KEYWORD or p.name == "context" for p in sig.parameters.values())


def make_drafter(name: str, context: Optional[dict] = None, **kwargs):
    """Build a drafter by name (``greedy``/``none``, ``iad``/``input-copy``, ``gad``, ``blockwise``, ...).

    Unknown names and bad keyword arguments raise ``ValueError``.
    """
    factory = drafter_factory(name)
    if _accepts_context(factory):
        kwargs["context"] = context
    try:
        return factory(**kwargs)
    except TypeError as exc:
        raise ValueError(f"bad arguments for drafter {name!r}: {exc}") from None


def greedy_factory():
    return NoDrafter()


def iad_factory(max_ngram: int = 3, min_ngram: int = 1):
    return InputCopyDrafter(max_ngram=int(max_ngram), min_ngram=int(min_ngram))
