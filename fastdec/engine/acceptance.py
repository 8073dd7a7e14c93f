"""Acceptance rules: how many leading draft tokens the verifier accepts in one iteration.

Every rule is an :class:`AcceptanceRule`, a callable ``rule(draft, top1, log_probs) -> int`` where

* ``draft`` is the list of ``k`` drafted token ids (``k >= 0``);
* ``top1`` is the verifier's (masked) argmax for each fed position (a list of ``>= k + 1`` ids):
  ``top1[i]`` is the verifier's own prediction for the position of ``draft[i]``;
* ``log_probs`` is the verifier's masked log-probability tensor ``[>= k + 1, V]`` (same rows), or
  ``None`` when the rule declares ``needs_log_probs = False``.

It returns ``a`` in ``[0, k]``: ``draft[:a]`` are accepted and the loop appends the verifier's token
``top1[a]`` at the bifurcation (so every iteration adds at least one token). The batch-1 loop calls
:meth:`AcceptanceRule.accept_from_hidden`, which decides how many verifier rows to project to the vocabulary:
all of them by default, only those up to the first mismatch for the exact rule; the batched loop calls
:meth:`AcceptanceRule.accept_batch` on a whole batched pass (one projection for all rows by default; the exact rule
projects the undecided rows together, chunk by chunk, or takes each row's tokens from the fast verifier's fused
projection exactly as at batch 1).

Rules:

* :data:`accept_top1` (an :class:`ExactRule`) -- exact (vanilla IAD / GAD, Blockwise exact): ``draft[i] == top1[i]``.
  Lossless.
* :class:`accept_top_beta` -- GAD++ (Xia et al. 2022, Eq. 7-9): ``draft[i]`` is accepted when it is the
  top-1 token, or when it ranks within the verifier's top-β (``log P(draft) >= log P(β-th best)``,
  Eq. 8) AND ``log P(top1) - log P(draft) <= τ`` (Eq. 9). With ``β = 1`` only the argmax itself
  is accepted, i.e. identical to :data:`accept_top1` even under exact ties.
* :class:`accept_top_k` -- Blockwise approximate top-k selection (Stern et al. 2018, Sec. 5.1):
  ``draft[i]`` within the verifier's top-k (``k = 1`` == exact).
* :class:`accept_within_distance` -- Blockwise distance-based selection (Sec. 5.2) for ordinal outputs such as pixel
  intensities: ``draft[i]`` is accepted when ``|value(draft[i]) - value(top1[i])| <= ε`` (tokens without a value,
  e.g. EOS, only when equal). ``ε = 0`` == exact.
* :class:`with_min_block` -- Blockwise minimum block size (Sec. 5.3): at least ``ℓ`` tokens are added
  per iteration (``ℓ - 1`` draft tokens are force-accepted when available and allowed: a token the
  verifier's mask forbids, e.g. EOS at the first step or a non-EOS at the maximum length, is never
  forced). ``ℓ = 1`` is a no-op.

Tokens whose (masked) log-probability is ``-inf`` (padding, EOS before the first step, anything
but EOS at the maximum length) are never accepted by the relaxed rules.
"""
from __future__ import annotations

import math
from typing import Callable, Iterable, List, Optional, Sequence, Tuple

import torch
from torch import Tensor

__all__ = ["AcceptanceRule", "Decision", "ExactRule", "accept_top1", "accept_top_beta", "accept_top_k",
           "accept_within_distance", "ordinal_values", "with_min_block", "make_acceptance", "leading_true", "check_int"]

# project(start, end) -> the verifier's masked log-probabilities of rows start .. end - 1, [end - start, V]
Projection = Callable[[int, int], Tensor]
# what a rule decides on one verifier pass: (a, top1, log_probs), see AcceptanceRule.accept_from_hidden
Decision = Tuple[int, List[int], Optional[Tensor]]


def leading_true(ok: Iterable[bool]) -> int:
    """Number of leading True values."""
    n = 0
    for v in ok:
        if not v:
            break
        n += 1
    return n


def check_int(name: str, value, minimum: int) -> int:
    if isinstance(value, float) and value.is_integer():
        value = int(value)
    if isinstance(value, bool) or not isinstance(value, int):
        raise ValueError(f"{name} must be an integer >= {minimum}, got {value!r}")
    if value < minimum:
        raise ValueError(f"{name} must be >= {minimum}, got {value}")
    return value


class AcceptanceRule:
    """Base class of the acceptance rules (see the module docstring for the call contract)."""

    name = "rule"
    needs_log_probs = True  # the rule reads the log-probabilities (else it is called with None)
    exact_prefix = False    # accepts exactly the longest draft prefix equal to the verifier's tokens (lossless)
    min_block_size = 1      # at least this many tokens are added per iteration (Blockwise ℓ)

    def __call__(self, draft: Sequence[int], top1: Sequence[int], log_probs: Optional[Tensor] = None) -> int:
        raise NotImplementedError

    def accept_from_hidden(self, draft: List[int], project: Projection) -> Decision:
        """Decide on one verifier pass of ``len(draft) + 1`` rows: ``(a, top1, log_probs)``.

        ``top1`` covers at least rows ``0 .. a``; ``log_probs`` every row, or None when the rule does not need them.
        This default projects every row and calls the rule.
        """
        lp = project(0, len(draft) + 1)
        top1 = lp.argmax(dim=-1).tolist()
        if not self.needs_log_probs:
            lp = None
        return (self(draft, top1, lp) if draft else 0), top1, lp

    def accept_batch(self, drafts: List[List[int]], project) -> List[Decision]:
        """Decide every row of one batched verifier pass: row ``b`` verified ``drafts[b]``. ``project`` is a
        :class:`~fastdec.engine.projection.BatchedMaskedLogProbs`. This default projects the whole pass once and
        decides each row by :meth:`accept_from_hidden` on its rows."""
        rows = project.log_probs([len(d) + 1 for d in drafts])
        return [self.accept_from_hidden(d, lambda s, e, lp=lp: lp[s:e]) for d, lp in zip(drafts, rows)]


_LAZY_FIRST_CHUNK = 8


def _top1_of(project: Projection) -> Callable[[int, int], List[int]]:
    """``tokens(start, end)``: the verifier's tokens of rows ``start .. end - 1``. A projection that knows a faster
    way than the argmax of its log-probabilities (``project.top1``: the fast verifier's fused projection + masked
    argmax) gives it; else the argmax of ``project(start, end)``."""
    fast = getattr(project, "top1", None)
    if fast is not None:
        return fast
    return lambda start, end: project(start, end).argmax(dim=-1).tolist()


class ExactRule(AcceptanceRule):
    """Exact acceptance: the longest draft prefix equal to the verifier's greedy tokens."""

    name = "top1"
    needs_log_probs = False
    exact_prefix = True

    def __call__(self, draft, top1, log_probs=None) -> int:
        return leading_true(d == t for d, t in zip(draft, top1))

    def accept_from_hidden(self, draft, project):
        """Only the rows up to the first mismatch decide. On CPU (``project.lazy``, the default) project them in
        chunks of 8, 16, 32 ... and stop there (row-wise identical to projecting every row, much less work when a
        long draft is rejected early); on CUDA project every row at once: one host sync per pass instead of one
        per chunk."""
        k = len(draft)
        tokens = _top1_of(project)
        if not k:  # a greedy step
            return 0, tokens(0, 1), None
        if not getattr(project, "lazy", True):
            top1 = tokens(0, k + 1)
            return self(draft, top1), top1, None
        top1: List[int] = []
        start, size = 0, _LAZY_FIRST_CHUNK
        while True:
            end = min(k + 1, start + size)
            top1 += tokens(start, end)
            for i in range(start, min(end, k)):
                if draft[i] != top1[i]:
                    return i, top1, None
            if end == k + 1:
                return k, top1, None
            start, size = end, size * 2

    def accept_batch(self, drafts, project):
        """Every row decided as :meth:`accept_from_hidden` decides it: the rows still undecided are projected
        together, chunk by chunk on CPU (8, 16, 32 ... positions; one host transfer per chunk), all positions at
        once on CUDA. On the fast backend (``project.fused_rows``) a chunk's real positions of every row go through
        the verifier's fused projection in one C call, each row's tokens those of its batch-1 pass; a verifier with
        only the per-sentence fused projection (``project.fused``) decides row by row, as at batch 1."""
        if project.fused is not None and project.fused_rows is None:
            return [self.accept_from_hidden(d, project.row(b)) for b, d in enumerate(drafts)]
        top1: List[List[int]] = [[] for _ in drafts]
        undecided = list(range(len(drafts)))
        width = project.width
        start, size = 0, (_LAZY_FIRST_CHUNK if project.lazy else width)
        while undecided:
            end = min(width, start + size)
            still = []
            lengths = [len(drafts[b]) + 1 for b in undecided]
            for b, row in zip(undecided, project.top1(undecided, start, end, lengths)):
                draft = drafts[b]
                row = row[: len(draft) + 1 - start]
                top1[b] += row
                if end <= len(draft) and all(d == t for d, t in zip(draft[start:end], row)):
                    still.append(b)
            undecided, start, size = still, end, size * 2
        return [(self(d, t), t, None) for d, t in zip(drafts, top1)]


accept_top1 = ExactRule()


class _RelaxedRule(AcceptanceRule):
    """A relaxed rule whose exact setting (``exact_prefix``) accepts exactly what :data:`accept_top1` accepts: there it
    takes the exact rule's lazy paths."""

    def accept_batch(self, drafts, project):
        if self.exact_prefix:
            return accept_top1.accept_batch(drafts, project)
        return super().accept_batch(drafts, project)


class _RankRule(_RelaxedRule):
    """Shared machinery of the top-β/τ and top-k rules (vectorised over the draft, one host sync).

    Rank 1 accepts only the verifier's own token: exactly :data:`accept_top1`, whose lazy path it then uses.
    """

    def __init__(self, rank: int, tau: float):
        self.rank = rank
        self.tau = tau
        self.exact_prefix = rank == 1
        self.needs_log_probs = rank > 1

    def __call__(self, draft: Sequence[int], top1: Sequence[int], log_probs: Optional[Tensor] = None) -> int:
        k = len(draft)
        exact = accept_top1(draft, top1)
        if exact == k or self.exact_prefix:
            return exact
        if log_probs is None:
            raise ValueError(f"{self!r} needs the verifier's log-probabilities")
        top1_t = torch.as_tensor(list(top1[:k]), dtype=torch.long, device=log_probs.device)
        return leading_true(self.accepted_mask(draft, top1_t, log_probs).tolist())

    def accepted_mask(self, draft: Sequence[int], top1: Tensor, log_probs: Tensor) -> Tensor:
        """Per draft token, on the verifier's device: would the rule accept it (ignoring the tokens before)?"""
        k = len(draft)
        lp = log_probs[:k]
        d = torch.as_tensor(draft, dtype=torch.long, device=lp.device)
        lp_d = lp.gather(1, d[:, None]).squeeze(1)
        best = lp.max(dim=-1).values
        kth = lp.topk(min(self.rank, lp.size(1)), dim=-1).values[:, -1]
        ok = torch.isfinite(lp_d) & (lp_d >= kth)
        if not math.isinf(self.tau):
            ok &= (best - lp_d) <= self.tau
        return ok | (d == top1[:k])


    def accept_from_hidden(self, draft, project):
        if self.exact_prefix:
            return accept_top1.accept_from_hidden(draft, project)
        lp = project(0, len(draft) + 1)
        top1_t = lp.argmax(dim=-1)
        if not draft:
            return 0, top1_t.tolist(), lp
        # the verifier's tokens and the per-token decisions come to the host in ONE transfer (no top1 round trip)
        k = len(draft)
        both = torch.cat([top1_t, self.accepted_mask(draft, top1_t, lp).to(torch.long)]).tolist()
        return leading_true(both[k + 1:]), both[: k + 1], lp


class accept_top_beta(_RankRule):
    """GAD++ acceptance: top-β with a log-likelihood gap of at most τ (Eq. 8 and 9).

    ``accept_top_beta(beta=1, tau=...)`` accepts exactly what :data:`accept_top1` accepts.
    """

    def __init__(self, beta: int = 3, tau: float = 1.0):
        beta = check_int("beta", beta, 1)
        try:
            tau = float(tau)
        except (TypeError, ValueError):
            raise ValueError(f"tau must be a number >= 0, got {tau!r}") from None
        if math.isnan(tau) or tau < 0:
            raise ValueError(f"tau must be >= 0, got {tau}")
        super().__init__(beta, tau)
        self.beta = beta
        self.name = f"top{beta}-tau{tau:g}"

    def __repr__(self) -> str:
        return f"accept_top_beta(beta={self.beta}, tau={self.tau:g})"


class accept_top_k(_RankRule):
    """Blockwise approximate acceptance: the draft token lies within the verifier's top-k."""

    def __init__(self, k: int = 2):
        k = check_int("k", k, 1)
        super().__init__(k, math.inf)
        self.k = k
        self.name = f"topk{k}"

    def __repr__(self) -> str:
        return f"accept_top_k(k={self.k})"


def ordinal_values(symbols: Sequence[str]) -> List[Optional[int]]:
    """Each symbol's ordinal value for :class:`accept_within_distance`: the integer it spells (``"0"`` .. ``"255"``
    for pixel intensities), else None (special symbols, words)."""
    values: List[Optional[int]] = []
    for sym in symbols:
        try:
            values.append(int(sym))
        except (TypeError, ValueError):
            values.append(None)
    return values


class accept_within_distance(_RelaxedRule):
    """Blockwise distance-based selection (Stern et al. 2018, Sec. 5.2): a drafted token is accepted when its value is
    within ``epsilon`` of the value of the verifier's own token, ``d(u, v) = |u - v|`` (the paper: intensities of one
    colour channel, ε = 2). ``values[id]`` is token ``id``'s value, or None for a token without one (EOS, padding),
    which is accepted only when it is the verifier's token. Only the verifier's tokens decide (no log-probabilities),
    so a token its constraints forbid (EOS at the first step, a non-EOS at the maximum length) is never accepted in
    place of the forced one. ``epsilon = 0`` accepts exactly what :data:`accept_top1` accepts."""

    needs_log_probs = False

    def __init__(self, epsilon: int, values: Sequence[Optional[int]]):
        self.epsilon = check_int("epsilon", epsilon, 0)
        self.values = list(values)
        self.exact_prefix = self.epsilon == 0
        self.name = f"eps{self.epsilon}"

    def _close(self, d: int, t: int) -> bool:
        if d == t:
            return True
        vd = self.values[d] if 0 <= d < len(self.values) else None
        vt = self.values[t] if 0 <= t < len(self.values) else None
        return vd is not None and vt is not None and abs(vd - vt) <= self.epsilon

    def __call__(self, draft, top1, log_probs=None) -> int:
        return leading_true(self._close(d, t) for d, t in zip(draft, top1))

    def accept_from_hidden(self, draft, project):
        if self.exact_prefix:
            return accept_top1.accept_from_hidden(draft, project)
        top1 = _top1_of(project)(0, len(draft) + 1)
        return self(draft, top1), top1, None


    def __repr__(self) -> str:
        return f"accept_within_distance(epsilon={self.epsilon})"


class with_min_block(AcceptanceRule):
    """Wrap ``rule`` so that at least ``min_block_size`` tokens are added per iteration.

    The loop always adds the verifier's token at the bifurcation, so ``min_block_size - 1`` draft
    tokens (or the whole draft, when shorter) are force-accepted -- but only up to the first one whose
    masked log-probability is ``-inf``: forcing a token the verifier's constraints forbid (EOS before
    the first step, anything but EOS at the maximum length, padding) would break max-length and EOS
    handling. Needs the log-probabilities for that check whenever ``ℓ > 1``. Not lossless for ``ℓ > 1``.
    """

    def __init__(self, rule: AcceptanceRule, min_block_size: int):
        self.min_block_size = check_int("min_block_size", min_block_size, 1)
        self.rule = rule
        self.needs_log_probs = self.min_block_size > 1 or rule.needs_log_probs
        self.name = f"{rule.name}-minblock{self.min_block_size}"

    def __call__(self, draft, top1, log_probs=None) -> int:
        a = self.rule(draft, top1, log_probs)
        forced = min(self.min_block_size - 1, len(draft))
        if forced <= a:
            return a
        if log_probs is None:
            raise ValueError(f"{self!r} needs the verifier's log-probabilities")
        d = torch.as_tensor(list(draft[:forced]), dtype=torch.long, device=log_probs.device)
        allowed = torch.isfinite(log_probs[:forced].gather(1, d[:, None]).squeeze(1))
        return max(a, leading_true(allowed.tolist()))

    def __repr__(self) -> str:
        return f"with_min_block({self.rule!r}, {self.min_block_size})"


def make_acceptance(name: str = "top1", *, beta: int = 1, tau: float = 0.0, k: int = 1, epsilon: int = 0,
                    values: Optional[Sequence[Optional[int]]] = None, min_block_size: int = 1) -> AcceptanceRule:
    """Build a rule by name: ``top1`` | ``top-beta`` (GAD++) | ``top-k`` (Blockwise approximate) | ``distance``
    (Blockwise distance-based selection within ``epsilon``; ``values``: each token id's value, see
    :func:`ordinal_values`)."""
    key = name.lower().replace("_", "-")
    if key in ("top1", "exact"):
        rule = accept_top1
    elif key in ("top-beta", "topbeta", "gad++", "gadpp"):
        rule = accept_top_beta(beta, tau)
    elif key in ("top-k", "topk"):
        rule = accept_top_k(k)
    elif key in ("distance", "eps"):
        if values is None:
            raise ValueError("the distance rule needs the tokens' values (ordinal_values of the dictionary)")
        rule = accept_within_distance(epsilon, values)
    else:
        raise ValueError(f"unknown acceptance rule {name!r}; choose top1, top-beta, top-k or distance")
    min_block_size = check_int("min_block_size", min_block_size, 1)
    return with_min_block(rule, min_block_size) if min_block_size > 1 else rule
