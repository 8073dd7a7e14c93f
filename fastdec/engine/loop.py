"""The draft -> verify -> accept loop shared by greedy, IAD, GAD, GAD++ and Blockwise decoding.

One iteration (``j`` = number of output tokens so far; the prefix is ``o_0 .. o_j`` with ``o_0`` =
EOS used as BOS, exactly like fairseq):

1. **draft**   -- ``drafter.propose(state)`` returns ``k >= 0`` token ids for ``o_{j+1} .. o_{j+k}``;
2. **verify**  -- the :class:`~fastdec.engine.verifier.Verifier` scores ``[o_j] + draft`` in ONE
   decoder pass (positions ``j .. j+k``); row ``i`` predicts ``o_{j+1+i}``;
3. **accept**  -- the acceptance rule (:meth:`~fastdec.engine.acceptance.AcceptanceRule.accept_from_hidden`)
   projects as many rows to the vocabulary as it needs and returns ``a`` (accepted draft tokens); the loop appends
   ``draft[:a]`` plus the verifier's own token of row ``a`` (the token at the bifurcation, or the
   "bonus" token after a fully accepted draft), so every iteration adds at least one token;
4. the KV cache is rolled back to ``j + a + 1`` positions (``o_0 .. o_{j+a}``).

Greedy decoding is this loop with :class:`~fastdec.engine.drafters.NoDrafter` (``k = 0``).

Termination and masking follow fairseq's ``SequenceGenerator`` with ``beam=1`` so that greedy
output matches ``fairseq-generate --beam 1`` (the baseline of every speedup):

* ``max_len = min(int(max_len_a * src_len + max_len_b), max_decoder_positions - 1)`` where
  ``src_len`` counts the source tokens *including* the EOS fairseq appends;
* at most ``max_len`` tokens are generated; at step ``max_len`` EOS is forced, so the output is
  always ``o_1 .. o_m`` with ``o_m = EOS`` and ``m <= max_len + 1`` (returned *with* the EOS,
  like fairseq's ``hypo["tokens"]``);
* padding is never predicted; EOS is forbidden at step 0 (fairseq's ``min_len = 1``);
  ``unk_penalty`` is subtracted from the UNK log-probability (default 0).

Drafts are truncated at ``max_len - j`` tokens (nothing beyond the forced EOS can be accepted),
at their first EOS (inclusive) and at their first padding token (exclusive), and to
``max_draft_len`` when given. Decoding stops as soon as an EOS is appended (accepted from the
draft or produced by the verifier).
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable, Dict, Iterable, List, Optional

import torch
from torch import Tensor

from .acceptance import AcceptanceRule, accept_top1
from .drafters import Drafter, check_same_device
from .stats import DecodeStats, ModuleTimer, peak_memory_mb, reset_peak_memory
from .verifier import Verifier

__all__ = ["DecodeState", "DecodeResult", "draft_verify_accept", "decode_corpus", "compute_max_len",
           "greedy_decode", "MaskedLogProbs", "truncate_draft", "vocab_log_probs", "constrain_steps"]


def compute_max_len(src_len: int, max_len_a: float, max_len_b: int, max_decoder_positions: int) -> int:
    """fairseq's convention: ``min(int(a * src_len + b), max_decoder_positions - 1)`` (src_len incl. EOS)."""
    max_len = min(int(max_len_a * src_len + max_len_b), int(max_decoder_positions) - 1)
    if max_len < 1:
        raise ValueError(
            f"maximum output length must be >= 1, got {max_len} "
            f"(max_len_a={max_len_a}, max_len_b={max_len_b}, src_len={src_len}, "
            f"max_decoder_positions={max_decoder_positions})")
    return max_len


@dataclass
class DecodeState:
    """What a drafter sees. Attributes are read-only for drafters except ``extra``.

    * ``src_tokens`` -- 1-D LongTensor of the source (incl. trailing EOS) on the verifier's device;
      ``src_list`` the same as a Python list.
    * ``prefix`` -- accepted target prefix ``[BOS(=EOS), o_1 .. o_j]`` (Python list).
    * ``encoder_out`` -- the verifier's fairseq encoder output dict (``encoder_out``: ``[S, 1, C]``).
    * ``hidden`` -- final decoder features ``[n, C]`` of the last verifier pass (``None`` before the
      first); ``last_row`` is the row that predicted the newest token, so ``last_hidden`` (=
      ``hidden[last_row]``) is the feature vector of position ``j - 1`` -- the one a Blockwise
      head reads to propose ``o_{j+1} ..``. ``last_log_probs`` is the masked log-prob row that
      produced ``o_j`` when the acceptance rule needed log-probs (else ``None``).
    * ``max_draft`` -- drafts longer than this are truncated by the loop.
    * ``iteration``, ``last_drafted``, ``last_accepted`` -- bookkeeping of the previous iteration.
    * ``extra`` -- a free dict for drafter-private per-sentence state.
    * ``time_modules`` -- the sentence's ``DecodeStats.time_modules``; drafters add to it with :meth:`charge`.
    * ``sync_timing`` -- the loop synchronises CUDA around its module timings; drafters timing their own parts
      follow it (off: no host sync for timing at all).
    """

    src_tokens: Tensor
    src_list: List[int]
    prefix: List[int]
    encoder_out: Dict[str, List[Tensor]]
    eos: int
    pad: int
    unk: int
    vocab_size: int
    max_len: int
    max_draft: int = 0
    iteration: int = 0
    hidden: Optional[Tensor] = None
    last_row: int = 0
    last_log_probs: Optional[Tensor] = None
    last_drafted: int = 0
    last_accepted: int = 0
    extra: Dict[str, Any] = field(default_factory=dict)
    time_modules: Dict[str, float] = field(default_factory=dict)
    sync_timing: bool = True

    def charge(self, module: str, seconds: float) -> None:
        """Add ``seconds`` to the time of sub-module ``module`` (e.g. ``drafter_encoder``) of this sentence."""
        self.time_modules[module] = self.time_modules.get(module, 0.0) + seconds

    @property
    def bos(self) -> int:
        return self.prefix[0]

    @property
    def output(self) -> List[int]:
        """The accepted output tokens without the BOS."""
        return self.prefix[1:]

    @property
    def num_generated(self) -> int:
        return len(self.prefix) - 1

    @property
    def last_hidden(self) -> Optional[Tensor]:
        return None if self.hidden is None else self.hidden[self.last_row]


@dataclass
class DecodeResult:
    tokens: List[int]  # o_1 .. o_m, ending with EOS
    stats: DecodeStats

    eos: int = 2

    @property
    def tokens_no_eos(self) -> List[int]:
        t = self.tokens
        return t[:-1] if t and t[-1] == self.eos else t


_NEG_INF = float("-inf")


def truncate_draft(draft, max_draft: int, eos: int, pad: int, vocab_size: int) -> List[int]:
    """A proposal as a list, cut to ``max_draft`` tokens, after its first EOS and before its first padding token."""
    if isinstance(draft, Tensor):
        draft = draft.reshape(-1)[:max_draft].tolist()
    else:
        draft = [int(t) for t in draft[:max_draft]]
    for i, t in enumerate(draft):
        if t == eos:
            return draft[: i + 1]
        if t == pad:
            return draft[:i]
        if t < 0 or t >= vocab_size:
            raise ValueError(f"drafter proposed token id {t} outside the vocabulary [0, {vocab_size})")
    return draft


class MaskedLogProbs:
    """``rows(start, end)``: log-probabilities ``[end - start, V]`` of rows ``start .. end - 1`` of the verifier pass
    given to :meth:`of` (fed at position ``j``: row ``i`` predicts ``o_{j+1+i}``) under fairseq's beam-1 constraints:
    no padding, an optional unknown-word penalty, no EOS as the first token (min_len 1), only EOS from step ``max_len``
    on. Rows are projected to the vocabulary only when asked for; built once per sentence (no per-pass closure)."""

    __slots__ = ("verifier", "max_len", "unk_penalty", "hidden", "j", "lazy")

    def __init__(self, verifier: Verifier, max_len: int, unk_penalty: float = 0.0):
        self.verifier, self.max_len, self.unk_penalty = verifier, max_len, unk_penalty
        # exact acceptance projects chunk by chunk on CPU; on CUDA a host sync per chunk costs more than the rows
        self.lazy = verifier.device.type == "cpu"
        self.hidden: Optional[Tensor] = None
        self.j = 0

    def of(self, hidden: Tensor, j: int) -> "MaskedLogProbs":
        self.hidden, self.j = hidden, j
        return self

    def __call__(self, start: int, end: int) -> Tensor:
        hidden = self.hidden
        lp = vocab_log_probs(self.verifier, hidden if start == 0 and end == hidden.size(0) else hidden[start:end],
                             self.unk_penalty)
        return constrain_steps(lp, self.j + start, self.max_len, self.verifier.eos)

    def top1(self, start: int, end: int) -> List[int]:
        """The verifier's tokens of rows ``start .. end - 1``: the argmax of :meth:`__call__`'s rows, or the
        verifier's own fused projection + masked argmax when it has one (the fast verifier's ``masked_top1``)."""
        fused = getattr(self.verifier, "masked_top1", None)
        if fused is not None:
            return fused(self.hidden[start:end], self.j + start, self.max_len, self.unk_penalty)
        return self(start, end).argmax(dim=-1).tolist()


def vocab_log_probs(verifier: Verifier, hidden: Tensor, unk_penalty: float = 0.0) -> Tensor:
    """Log-probabilities ``[..., V]`` of final decoder features ``[..., C]``: never padding, ``unk_penalty``
    subtracted from UNK (fairseq's beam-1 constraints that do not depend on the step)."""
    logits = verifier.output_layer(hidden)
    if logits.dtype in (torch.float16, torch.bfloat16):  # fairseq upcasts half precision the same way
        logits = logits.float()
    lp = torch.log_softmax(logits, dim=-1)
    lp[..., verifier.pad] = _NEG_INF
    if unk_penalty:
        lp[..., verifier.unk] -= unk_penalty
    return lp


def constrain_steps(lp: Tensor, step: int, max_len: int, eos: int) -> Tensor:
    """In place on one sentence's rows ``lp`` ``[c, V]`` predicting output steps ``step .. step + c - 1``: no EOS
    at step 0 (min_len 1), only EOS from step ``max_len`` on. Returns ``lp``."""
    if step == 0:
        lp[0, eos] = _NEG_INF
    first = max(max_len - step, 0)  # first row (of these) whose step >= max_len
    if first < lp.size(0):
        lp[first:, :eos] = _NEG_INF
        lp[first:, eos + 1:] = _NEG_INF
    return lp


# on_iteration(state, draft, accepted, appended): after each iteration, state already updated
IterationHook = Callable[[DecodeState, List[int], int, List[int]], None]


def draft_verify_accept(
    verifier: Verifier,
    src_tokens,
    drafter: Optional[Drafter] = None,
    accept: AcceptanceRule = accept_top1,
    *,
    max_len_a: float = 0.0,
    max_len_b: int = 200,
    max_draft_len: Optional[int] = None,
    unk_penalty: float = 0.0,
    sent_id: Optional[int] = None,
    method: str = "",
    sync_timing: bool = True,
    on_iteration: Optional[IterationHook] = None,
    policy=None,
) -> DecodeResult:
    """Decode one sentence with the draft -> verify -> accept loop (see the module docstring).

    ``drafter=None`` means greedy decoding. ``accept`` is an acceptance rule from
    :mod:`fastdec.engine.acceptance`. ``on_iteration(state, draft, accepted, appended)`` is called after every
    iteration with the (truncated) draft, the number of accepted draft tokens and the tokens appended to
    ``state.prefix`` (its time is charged to ``time_other``). ``policy`` (a
    :class:`~fastdec.engine.policy.CostAwarePolicy`) picks each iteration's draft length -- 0 skips the drafter --
    and then the drafter starts on its first call only. Returns the output tokens (ending with EOS) and a
    :class:`DecodeStats`.
    """
    if max_draft_len is not None and (isinstance(max_draft_len, bool) or int(max_draft_len) < 0):
        raise ValueError(f"max_draft_len must be >= 0, got {max_draft_len!r}")
    if unk_penalty != unk_penalty:
        raise ValueError("unk_penalty must be a number")
    src_tokens = torch.as_tensor(src_tokens, dtype=torch.long).reshape(-1)
    verifier.check_source(src_tokens)
    max_len = compute_max_len(src_tokens.numel(), max_len_a, max_len_b, verifier.max_positions)
    dev = verifier.device
    eos, pad, unk = verifier.eos, verifier.pad, verifier.unk
    V = verifier.vocab_size
    if drafter is not None:
        drafter.check_acceptance(accept)
        check_same_device(drafter, dev)

    if policy is not None:
        policy.prepare(verifier, 1)
    stats = DecodeStats(id=sent_id, method=method or accept.name, src_len=src_tokens.numel(), device=str(dev))
    reset_peak_memory(dev)
    timer = ModuleTimer(stats, dev, sync=sync_timing)
    timer.start()

    with torch.inference_mode():
        encoder_out = verifier.start(src_tokens)
        timer.lap("encoder")
        state = DecodeState(
            src_tokens=verifier.src_tokens_device, src_list=src_tokens.tolist(), prefix=[eos],
            encoder_out=encoder_out, eos=eos, pad=pad, unk=unk, vocab_size=V, max_len=max_len,
            time_modules=stats.time_modules, sync_timing=sync_timing)
        started = drafter is None or policy is None  # with a policy the drafter starts on its first call
        if drafter is not None and policy is None:
            drafter.start(state)
        timer.lap("drafter")
        prefix = state.prefix
        cap_draft = max_len if max_draft_len is None else int(max_draft_len)
        rows = MaskedLogProbs(verifier, max_len, unk_penalty)
        drafted_log, accepted_log = stats.drafted, stats.accepted
        finished = False
        while not finished:
            j = len(prefix) - 1
            state.max_draft = min(max_len - j, cap_draft)
            if policy is not None and drafter is not None:
                state.max_draft = policy.choose(state, verifier)
                stats.planned.append(state.max_draft)
            # ---------------- draft
            if drafter is not None and state.max_draft > 0:
                if not started:
                    drafter.start(state)
                    started = state.extra["drafter_started"] = True
                    policy.observe_start(timer.lap("drafter"))
                draft = truncate_draft(drafter.propose(state), state.max_draft, eos, pad, V)
                drafter_s = timer.lap("drafter")
                if policy is not None:
                    policy.observe_drafter(drafter_s)
            else:
                draft = []
            k = len(draft)
            # ---------------- verify (one decoder pass) and accept; the rule projects the rows it needs
            out = verifier.forward(torch.tensor([prefix[-1]] + draft, dtype=torch.long), need_logits=False)
            a, top1, lp = accept.accept_from_hidden(draft, rows.of(out.hidden, j))
            if a < 0 or a > k:
                raise RuntimeError(f"acceptance rule returned {a} for a draft of {k} tokens")
            new = draft[:a]
            new.append(top1[a])
            for i, t in enumerate(new):
                if t == eos:
                    new = new[: i + 1]
                    finished = True
                    break
            prefix.extend(new)
            verifier.rollback(j + 1 + a)
            state.iteration += 1
            state.hidden = out.hidden
            state.last_row = a
            state.last_log_probs = None if lp is None else lp[a]
            state.last_drafted, state.last_accepted = k, a
            drafted_log.append(k)
            accepted_log.append(a)
            verify_s = timer.lap("verifier")
            if policy is not None:
                policy.observe(state, k, a)
                policy.observe_pass(verify_s, (k,))
            if on_iteration is not None:
                on_iteration(state, draft, a, new)
                timer.lap("other")
        stats.iterations = state.iteration
        tokens = prefix[1:]
        stats.out_len = len(tokens)
        timer.stop()
    stats.peak_mem_mb = peak_memory_mb(dev)
    return DecodeResult(tokens=tokens, stats=stats, eos=eos)


def greedy_decode(verifier: Verifier, src_tokens, **kwargs) -> DecodeResult:
    """Greedy decoding = the loop with an empty drafter."""
    return draft_verify_accept(verifier, src_tokens, None, accept_top1, method=kwargs.pop("method", "greedy"),
                               **kwargs)


def decode_corpus(
    verifier: Verifier,
    sources: Iterable,
    drafter_factory: Optional[Callable[[], Drafter]] = None,
    accept: AcceptanceRule = accept_top1,
    **kwargs,
) -> List[DecodeResult]:
    """Decode sentences one at a time (batch size 1); ``drafter_factory()`` builds the drafter once."""
    drafter = drafter_factory() if drafter_factory is not None else None
    return [draft_verify_accept(verifier, src, drafter, accept, sent_id=i, **kwargs)
            for i, src in enumerate(sources)]
