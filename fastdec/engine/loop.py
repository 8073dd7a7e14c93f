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

Appending, stopping at EOS and the rollback length are :func:`fastdec.engine.state.advance`, the batched loop's too.

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

import time
from typing import Callable, List, Optional

import torch
from torch import Tensor

from .acceptance import AcceptanceRule, accept_top1
from .drafters import Drafter, check_same_device
from .interfaces import VerifierProtocol
from .projection import MaskedLogProbs, constrain_steps, vocab_log_probs
from .state import DecodeResult, DecodeState, advance
from .stats import DecodeStats, ModuleTimer, collections_between_passes, peak_memory_mb, reset_peak_memory

# DecodeState, DecodeResult and the projection helpers live in .state and .projection; importable from here too
__all__ = ["DecodeState", "DecodeResult", "draft_verify_accept", "compute_max_len", "greedy_decode",
           "MaskedLogProbs", "truncate_draft", "vocab_log_probs", "constrain_steps"]


def compute_max_len(src_len: int, max_len_a: float, max_len_b: int, max_decoder_positions: int) -> int:
    """fairseq's convention: ``min(int(a * src_len + b), max_decoder_positions - 1)`` (src_len incl. EOS)."""
    max_len = min(int(max_len_a * src_len + max_len_b), int(max_decoder_positions) - 1)
    if max_len < 1:
        raise ValueError(
            f"maximum output length must be >= 1, got {max_len} "
            f"(max_len_a={max_len_a}, max_len_b={max_len_b}, src_len={src_len}, "
            f"max_decoder_positions={max_decoder_positions})")
    return max_len


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


# on_iteration(state, draft, accepted, appended): after each iteration, state already updated
IterationHook = Callable[[DecodeState, List[int], int, List[int]], None]


def draft_verify_accept(
    verifier: VerifierProtocol,
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

    stats = DecodeStats(id=sent_id, method=method or accept.name, src_len=src_tokens.numel(), device=str(dev))
    reset_peak_memory(dev)
    timer = ModuleTimer(stats, dev, sync=sync_timing)
    clock, policy_s = time.perf_counter, 0.0  # the policy's own calls (time_modules["policy"])
    timer.start()
    # the policy's calls are the sentence's time. It measures what it has not measured before the sentence starts
    # (measuring drives the verifier), and otherwise starts the sentence just before its first choice, as it counts
    # an iteration just before it makes the next choice: one call after another, for a call between two passes of
    # the C backend costs 3-4 times what it costs beside the others (the pass leaves the caches cold)
    prepare = policy is not None
    if prepare:
        start, choose, observe = policy.sentence_calls()  # (its calls a sentence and an iteration)
    if prepare and policy.cost is None:
        policy.prepare(verifier, 1)
        policy_s, prepare = timer.lap("other"), False

    with torch.inference_mode(), collections_between_passes(timer):
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
        finished = False
        chosen = None  # the next iteration's draft length, chosen as the last one was counted
        while not finished:
            j = len(prefix) - 1
            state.max_draft = min(max_len - j, cap_draft)
            held, start_s = False, None
            if chosen is not None:
                state.max_draft, chosen = chosen, None
                stats.planned.append(state.max_draft)
            elif policy is not None:
                t0 = clock()
                if prepare:
                    start(verifier)
                    prepare = False
                if drafter is not None:
                    if policy.hold:  # a "no draft" the policy said holds for this many greedy steps
                        policy.hold -= 1
                        state.max_draft, held = 0, True
                    else:
                        state.max_draft = choose(state)
                    stats.planned.append(state.max_draft)
                policy_s += clock() - t0
            # ---------------- draft
            if drafter is not None and state.max_draft > 0:
                if not started:
                    drafter.start(state)
                    started = state.extra["drafter_started"] = True
                    start_s = timer.lap("drafter")
                draft = truncate_draft(drafter.propose(state), state.max_draft, eos, pad, V)
                drafter_s = timer.lap("drafter")
            else:
                draft, drafter_s = [], None
            k = len(draft)
            # ---------------- verify (one decoder pass) and accept; the rule projects the rows it needs
            out = verifier.forward(torch.tensor([prefix[-1]] + draft, dtype=torch.long), need_logits=False)
            decision = accept.accept_from_hidden(draft, rows.of(out.hidden, j))
            new, kept, finished = advance(state, stats, draft, decision, out.hidden)
            verifier.rollback(kept)
            verify_s = timer.lap("verifier")
            if on_iteration is not None:
                on_iteration(state, draft, state.last_accepted, new)
                timer.lap("other")
            if policy is not None and not held:
                t0 = clock()
                asked = state.max_draft if drafter is not None else 0
                observe(state, k, state.last_accepted, verify_s, drafter_s, asked, start_s, finished)
                if not finished and drafter is not None and not policy.hold:
                    state.max_draft = min(max_len - len(prefix) + 1, cap_draft)
                    chosen = choose(state)
                policy_s += clock() - t0
        stats.iterations = state.iteration
        if policy is not None:
            stats.time_modules["policy"] = policy_s
        tokens = prefix[1:]
        stats.out_len = len(tokens)
    timer.stop()  # (after a collection that came due: collections_between_passes)
    stats.peak_mem_mb = peak_memory_mb(dev)
    return DecodeResult(tokens=tokens, stats=stats, eos=eos)


def greedy_decode(verifier: VerifierProtocol, src_tokens, **kwargs) -> DecodeResult:
    """Greedy decoding = the loop with an empty drafter."""
    return draft_verify_accept(verifier, src_tokens, None, accept_top1, method=kwargs.pop("method", "greedy"),
                               **kwargs)
