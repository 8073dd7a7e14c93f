"""Batched draft -> verify -> accept decoding: B sentences at once, each row with its own KV-cache length.

The batch-1 loop (:mod:`fastdec.engine.loop`) is the reference; this module runs the same iteration for B rows:

1. **draft**   -- every active row drafts from its own :class:`~fastdec.engine.state.DecodeState` (the drafters of
   the batch-1 loop, unchanged; :meth:`Drafter.propose_batch` lets a drafter serve all rows in one call);
2. **verify**  -- ONE decoder pass over ``[o_j] + draft`` of every row, right-padded to the longest
   (``[B, n]``); row ``b``'s tokens sit at positions ``len_b .. len_b + n - 1`` of its own cache, so its
   attention mask admits keys ``t <= len_b + i`` only (padding tokens and stale cache entries of earlier rejected
   drafts are never seen by a real token). On CPU the linear layers of the pass run on the real tokens alone
   (``pack``), and its attention in blocks that leave most of the padding out (:mod:`.ragged_attention`): there a
   pass costs its arithmetic, and padding a short draft to the longest would cost it too;
3. **accept**  -- the batch-1 acceptance rule decides every row's own prefix ``a_b``
   (:meth:`~fastdec.engine.acceptance.AcceptanceRule.accept_batch`); each row appends the verifier's token at its
   bifurcation by the batch-1 loop's own step (:func:`~fastdec.engine.state.advance`);
4. **roll back** -- row ``b``'s cache length becomes ``j_b + 1 + a_b``: an integer per row; entries beyond it are
   overwritten by the row's next pass.

Rows that emit EOS leave the batch at once (their cache rows are dropped), so a long sentence never makes the
finished ones compute, and a short one never waits. With exact acceptance (IAD, GAD with beta = 1, exact Blockwise,
greedy) every row's output equals its own batch-1 greedy output in exact arithmetic; what holds in floating point
(docs/RESULTS.md, "What is guaranteed"): on the fast backend, in every precision, bit for bit (its C passes compute a
row the same way whatever else is in the pass); on the PyTorch reference in float64 on every case the property tests
draw (tests/engine/test_batched.py, B in {2, 3, 7, 32}); in float32 and half precision a wider or packed matmul may
round a row differently from the batch-1 pass, so an output may differ at a near-tie -- measured and reported per run
(``identical_to_greedy``), not guaranteed.

The decoder forward is the batch-1 :class:`~fastdec.engine.verifier.Verifier`'s own
(:meth:`Verifier.decoder_layers` on its weights); this module only manages per-row caches, masks and positions.
On the fast backend (a :class:`~fastdec.engine.fast_verifier.FastVerifier`, ``backend=fast`` / ``fast-int8``)
:func:`decode_batched` drives :class:`~fastdec.engine.fast_batched.FastBatchedVerifier` instead (same interface): one
C pass per iteration for every row, each row's features bit for bit its batch-1 pass, and the exact rule takes all
rows' tokens from the verifier's fused ``masked_top1_rows`` (one C call, each row's token the one batch 1 gives it)
-- so there every row's output equals its batch-1 output on that backend exactly, float32 and int8 included
(tests/engine/test_fast_batched.py).
Timing: one clock per batch (CUDA-synced when ``sync_timing``); each sentence is charged its batch's time divided
by the batch size, like fairseq's batched baseline (``fastdec.engine.fairseq_baseline``).
"""
from __future__ import annotations

import math
import time
from typing import Dict, List, Optional, Sequence

import torch
import torch.nn.functional as F
from torch import Tensor

from .acceptance import AcceptanceRule, accept_top1
from .drafters import Drafter, check_same_device
from .interfaces import BatchedVerifierProtocol
from .loop import compute_max_len, draft_verify_accept, truncate_draft
from .projection import BatchedMaskedLogProbs
from .ragged_attention import blocked_attention, plan_blocks
from .state import DecodeResult, DecodeState, advance
from .stats import DecodeStats, ModuleTimer, collections_between_passes, peak_memory_mb, reset_peak_memory
from .verifier import Verifier

__all__ = ["BatchedVerifier", "batched_verifier", "decode_batch", "decode_batched", "check_batch_size",
           "check_batchable", "encode_batch", "bidirectional_pass"]


def check_batch_size(batch_size) -> int:
    """``batch_size`` as an int >= 1, else a ``ValueError`` naming the setting."""
    if isinstance(batch_size, float) and batch_size.is_integer():
        batch_size = int(batch_size)
    if isinstance(batch_size, bool) or not isinstance(batch_size, int) or batch_size < 1:
        raise ValueError(f"batch size must be an integer >= 1, got {batch_size!r}")
    return batch_size


def check_batchable(verifier) -> None:
    """Raise ``ValueError`` unless ``verifier`` is a Transformer :class:`Verifier` -- the PyTorch reference or the
    fast (C) backend's :class:`~fastdec.engine.fast_verifier.FastVerifier`: the batched caches are its per-layer keys
    and values (an efficient student's SSRU / AAN state has no batched form here)."""
    if not isinstance(verifier, Verifier):
        raise ValueError(f"batched engine decoding (batch size > 1) needs a Transformer verifier, not "
                         f"{type(verifier).__name__} (an efficient student decodes at batch 1): drop ':batch=N' "
                         "from the engine method, or decode batched with fairseq:beam=B:batch=N")


def encode_batch(ver: Verifier, sources: Sequence[Tensor]):
    """Encode ``sources`` as one right-padded batch with ``ver``'s fairseq encoder: ``(encoder_out, enc_k, enc_v,
    enc_mask)``, the encoder-attention keys/values of every decoder layer ``[L, B, H, S, D]`` and the key mask
    ``[B, 1, 1, S]`` (True = a real source token)."""
    if not sources:
        raise ValueError("a batch needs at least one source sentence")
    for s in sources:
        ver.check_source(s)
    dev = ver.device
    B, S = len(sources), max(int(s.numel()) for s in sources)
    src = torch.full((B, S), ver.pad, dtype=torch.long)
    for b, s in enumerate(sources):
        src[b, : s.numel()] = s
    lengths = torch.tensor([int(s.numel()) for s in sources], device=dev)
    enc = ver.encoder(src.to(dev), src_lengths=lengths)
    x = enc["encoder_out"][0]  # [S, B, C_enc]
    kv = F.linear(x, ver._enc_kv_w, ver._enc_kv_b)
    kv = kv.view(S, B, ver.num_layers, 2, ver.num_heads, ver.head_dim).permute(2, 3, 1, 4, 0, 5).contiguous()
    mask = (torch.arange(S, device=dev)[None, :] < lengths[:, None])[:, None, None, :]
    return enc, kv[:, 0], kv[:, 1], mask


@torch.inference_mode()
def bidirectional_pass(ver: Verifier, tokens: Tensor, n_valid: Sequence[int], enc_k: Tensor, enc_v: Tensor,
                       enc_mask: Tensor) -> Tensor:
    """A cache-free decoder pass over ``tokens`` ``[B, n]`` from position 0, every real token attending to all real
    tokens of its row (the first ``n_valid[b]``): the batched form of GAD's NAT drafter (``Verifier(causal=False)``
    after ``restart``). Returns the final features ``[B, n, C]``."""
    dev = ver.device
    n = tokens.size(1)
    keys = (torch.arange(n, device=dev)[None, :] < torch.tensor(list(n_valid), device=dev)[:, None])[:, None, None, :]

    def self_kv(li: int, k: Tensor, v: Tensor):  # nothing cached: the whole input is fed every time
        return k.transpose(1, 2), v.transpose(1, 2)

    x = ver.embed(tokens.to(dev), ver._pos_table[:n] if ver._pos_table is not None else None)
    return ver.decoder_layers(x, self_kv, keys, enc_k, enc_v, enc_mask)


class BatchedVerifier:
    """Per-row rollback-able KV caches over the weights of a batch-1 :class:`Verifier` (nothing is copied).

    ``start(sources)`` encodes B sources; ``forward(tokens, n_valid)`` feeds ``tokens`` ``[B, n]`` (row ``b``'s
    first ``n_valid[b]`` are real) at each row's own positions and returns the final features ``[B, n, C]``;
    ``lengths[b] = m`` rolls row ``b`` back; ``keep(rows)`` drops the other rows. ``pack`` (default: on CPU) runs
    the linear layers of a pass with padding on its real tokens only.
    """

    def __init__(self, verifier: Verifier, pack: Optional[bool] = None):
        check_batchable(verifier)
        self.ver = verifier
        self.device, self.dtype = verifier.device, verifier.dtype
        # the linear layers on the real tokens only (padding skipped): on a CPU a wide pass costs its arithmetic,
        # so padded drafts cost time; on a GPU a pass costs about the same padded or not, and packing adds copies
        self.pack = self.device.type == "cpu" if pack is None else bool(pack)
        # with ``pack``, a ragged pass's attention in blocks where they leave a quarter of its padding work out
        self.blocked = True
        self.lengths: List[int] = []
        self._k: Optional[Tensor] = None  # [L, B, H, cap, D]
        self._v: Optional[Tensor] = None
        self._cap = 0
        self._causal: Optional[Tensor] = None  # [cap, cap] bool, True = may attend
        self.enc_k: Optional[Tensor] = None  # [L, B, H, S, D]
        self.enc_v: Optional[Tensor] = None
        self.enc_mask: Optional[Tensor] = None  # [B, 1, 1, S], True = a real source token
        self.encoder_out: Optional[Dict[str, List[Tensor]]] = None

    @property
    def batch_size(self) -> int:
        return len(self.lengths)

    @torch.inference_mode()
    def start(self, sources: Sequence[Tensor]) -> Dict[str, List[Tensor]]:
        """Encode ``sources`` (1-D LongTensors ending with EOS) as one right-padded batch; empty the caches."""
        self.encoder_out, self.enc_k, self.enc_v, self.enc_mask = encode_batch(self.ver, sources)
        self.lengths = [0] * len(sources)
        self._k = self._v = None
        self._cap = 0
        return self.encoder_out

    def row_encoder_out(self, b: int, src_len: int) -> Dict[str, List[Tensor]]:
        """Row ``b`` of the encoder output as the batch-1 verifier gives it (``encoder_out``: ``[S_b, 1, C]``)."""
        return {"encoder_out": [self.encoder_out["encoder_out"][0][:src_len, b:b + 1]],
                "encoder_padding_mask": [], "src_lengths": []}

    def _ensure_capacity(self, needed: int) -> None:
        if needed <= self._cap:
            return
        ver = self.ver
        # may exceed the decoder's positions by a padded draft's width (a short row padded to a long row's draft)
        cap = max(needed, 64, 2 * self._cap)
        shape = (ver.num_layers, self.batch_size, ver.num_heads, cap, ver.head_dim)
        # zeros, not empty: a row attends over the batch's width T, and a masked key still multiplies its value by 0
        # (0 * NaN garbage would be NaN)
        k = torch.zeros(shape, dtype=self.dtype, device=self.device)
        v = torch.zeros(shape, dtype=self.dtype, device=self.device)
        if self._k is not None:
            k[:, :, :, : self._cap] = self._k
            v[:, :, :, : self._cap] = self._v
        self._k, self._v, self._cap = k, v, cap
        self._causal = torch.ones(cap, cap, dtype=torch.bool, device=self.device).tril_()

    def keep(self, rows: Sequence[int]) -> None:
        """Keep only ``rows`` (indices into the current batch, in this order): finished sentences leave."""
        idx = torch.tensor(list(rows), dtype=torch.long, device=self.device)
        self.lengths = [self.lengths[r] for r in rows]
        self.enc_k, self.enc_v = self.enc_k.index_select(1, idx), self.enc_v.index_select(1, idx)
        self.enc_mask = self.enc_mask.index_select(0, idx)
        if self._k is not None:
            self._k, self._v = self._k.index_select(1, idx), self._v.index_select(1, idx)

    @torch.inference_mode()
    def forward(self, tokens: Tensor, n_valid: Sequence[int]) -> Tensor:
        """Feed ``tokens`` ``[B, n]`` at positions ``lengths[b] ..``; every row's cache grows by ``n_valid[b]``."""
        ver = self.ver
        B, n = tokens.shape
        if B != self.batch_size or len(n_valid) != B:
            raise ValueError(f"{B} token rows / {len(n_valid)} lengths for a batch of {self.batch_size}")
        t0 = self.lengths[0]
        uniform = all(m == t0 for m in self.lengths)  # e.g. every greedy step: the batch-1 slicing, no gathers
        T = (t0 if uniform else max(self.lengths)) + n
        self._ensure_capacity(T)
        k_cache, v_cache, table = self._k, self._v, ver._pos_table
        H, cap, D = k_cache.size(2), k_cache.size(3), k_cache.size(4)
        real = None  # with ``pack``, the flat indices of the real tokens in ``[B, n]``
        if self.pack and sum(n_valid) < B * n:
            fed = torch.arange(n)[None, :] < torch.tensor([int(c) for c in n_valid])[:, None]
            real = fed.view(-1).nonzero().squeeze(1).to(self.device)
        if uniform:
            positions = table[t0:T] if table is not None else None
            mask = self._causal[t0:T, :T] if n > 1 else None  # rows of equal length: T <= max positions
        else:
            start = torch.tensor(self.lengths, dtype=torch.long, device=self.device)
            pos = start[:, None] + torch.arange(n, device=self.device)[None, :]  # [B, n] absolute positions
            # a padding position past the decoder's last position reuses it: its output is never read
            positions = table[pos.clamp(max=table.size(0) - 1)] if table is not None else None
            allowed = (torch.arange(T, device=self.device)[None, None, :] <= pos[:, :, None])[:, None]  # [B, 1, n, T]
            # added to the scores in every layer (a boolean mask is inverted and filled in every layer)
            mask = torch.zeros(allowed.shape, dtype=self.dtype, device=self.device)
            mask.masked_fill_(~allowed, float("-inf"))
        if uniform and real is None:
            def self_kv(li: int, k: Tensor, v: Tensor):  # k, v: [B, n, H, D] at positions t0 .. T - 1 of every row
                kc, vc = k_cache[li], v_cache[li]
                kc[:, :, t0:T] = k.transpose(1, 2)
                vc[:, :, t0:T] = v.transpose(1, 2)
                return kc[:, :, :T], vc[:, :, :T]
        else:
            if uniform:
                pos = t0 + torch.arange(n, device=self.device)[None, :].expand(B, n)
            # row b, head h, position p of a layer's cache [B, H, cap, D] viewed as [B * H * cap, D]: one index_copy_ a
            # layer (with an advanced-index assignment a batch-32 pass over ragged rows took 0.1-0.25 ms more than over
            # equal lengths, which write slices), in the order of the tokens' keys [B * n, H]
            kv_at = (torch.arange(B * H, device=self.device) * cap).view(B, 1, H) + pos[:, :, None]
            if real is None:
                kv_at = kv_at.reshape(-1)

                def self_kv(li: int, k: Tensor, v: Tensor):  # k, v: [B, n, H, D], written at each row's own positions
                    kc, vc = k_cache[li], v_cache[li]
                    kc.view(-1, D).index_copy_(0, kv_at, k.reshape(-1, D))
                    vc.view(-1, D).index_copy_(0, kv_at, v.reshape(-1, D))
                    return kc[:, :, :T], vc[:, :, :T]
            else:
                # the real tokens' keys and values only: a padding position's are never read (a real token attends to
                # its row's positions up to its own), and at B = 32 copying them took 0.5 ms of a 7 ms pass
                kv_at = kv_at.reshape(B * n, H).index_select(0, real).reshape(-1)

                def self_kv(li: int, k: Tensor, v: Tensor):
                    kc, vc = k_cache[li], v_cache[li]
                    kc.view(-1, D).index_copy_(0, kv_at, k.reshape(B * n, H * D).index_select(0, real).view(-1, D))
                    vc.view(-1, D).index_copy_(0, kv_at, v.reshape(B * n, H * D).index_select(0, real).view(-1, D))
                    return kc[:, :, :T], vc[:, :, :T]
        x = ver.embed(tokens.to(self.device), positions)
        packed = attention = None
        if real is not None:
            packed, x = (real, B, n), x.reshape(B * n, -1).index_select(0, real)
            # attention too leaves most of the padding out (on a CPU it is most of a pass)
            blocks = plan_blocks([int(c) for c in n_valid], self.lengths) if self.blocked else None
            if blocks is not None:
                attention = blocked_attention(ver._attend, blocks)
        hidden = ver.decoder_layers(x, self_kv, mask, self.enc_k, self.enc_v, self.enc_mask, packed, attention)
        self.lengths = [m + int(c) for m, c in zip(self.lengths, n_valid)]
        return hidden


# the most tokens a row ahead of the batch's shortest waits out (one pass each) to make its rows' lengths equal again
_WAIT_AT_MOST = 4


def _waiting_rows(bver, states) -> Optional[List[bool]]:
    """The rows of a pass without drafts that wait it out (fed nothing), so that a PyTorch batch's rows are of equal
    length again, or None. Rows of unequal lengths (after a draft accepted in some rows and not others: one probe
    token) make every later pass gather and mask: a batch-32 pass on a CPU took 0.08-0.14 ms more, and the longest
    batch's GAD row on an H100 took 315 against 275 ms of verifier time over its 143 passes. A row ahead by at most
    ``_WAIT_AT_MOST`` tokens waits where waiting does not make the batch longer by the sources' lengths (a row's
    tokens left, taken to be its source's less what it has decoded, plus its lead, within the longest row's). The C
    backend's rows cost what they feed, of equal lengths or not: its batches never wait."""
    if not isinstance(bver, BatchedVerifier):
        return None
    lengths = bver.lengths
    lo, hi = min(lengths), max(lengths)
    if hi == lo or hi - lo > _WAIT_AT_MOST:
        return None
    left = [max(len(st.src_list) + 1 - len(st.prefix), 1) for st in states]
    longest = max(left)
    wait = [m > lo for m in lengths]
    if any(w and lead + t > longest for w, lead, t in zip(wait, (m - lo for m in lengths), left)):
        return None
    return wait


def batched_verifier(verifier, pack: Optional[bool] = None):
    """The batched verifier :func:`decode_batched` drives over ``verifier``: a
    :class:`~fastdec.engine.fast_batched.FastBatchedVerifier` for a
    :class:`~fastdec.engine.fast_verifier.FastVerifier` (the C passes), else a :class:`BatchedVerifier` (``pack`` as
    its own)."""
    from .fast_batched import FastBatchedVerifier
    from .fast_verifier import FastVerifier

    check_batchable(verifier)
    if isinstance(verifier, FastVerifier):
        return FastBatchedVerifier(verifier)
    return BatchedVerifier(verifier, pack=pack)


def decode_batch(bver: BatchedVerifierProtocol, sources: Sequence[Tensor], drafter: Optional[Drafter] = None,
                 accept: AcceptanceRule = accept_top1, *, max_len_a: float = 0.0, max_len_b: int = 200,
                 max_draft_len: Optional[int] = None, unk_penalty: float = 0.0, sync_timing: bool = True,
                 method: str = "", ids: Optional[Sequence[int]] = None, policy=None) -> List[DecodeResult]:
    """Decode ``sources`` as ONE batch (see the module docstring); results in the order of ``sources``.

    Same arguments and output contract as :func:`~fastdec.engine.loop.draft_verify_accept`, per sentence;
    ``policy`` (:class:`~fastdec.engine.policy.CostAwarePolicy`) picks every row's draft length per iteration.
    """
    if max_draft_len is not None and (isinstance(max_draft_len, bool) or int(max_draft_len) < 0):
        raise ValueError(f"max_draft_len must be >= 0, got {max_draft_len!r}")
    ver = bver.ver
    sources = [torch.as_tensor(s, dtype=torch.long).reshape(-1) for s in sources]
    ids = list(ids) if ids is not None else list(range(len(sources)))
    dev, eos, pad, V = ver.device, ver.eos, ver.pad, ver.vocab_size
    if drafter is not None:
        drafter.check_acceptance(accept)
        check_same_device(drafter, dev)
    max_lens = [compute_max_len(s.numel(), max_len_a, max_len_b, ver.max_positions) for s in sources]
    cap_draft = math.inf if max_draft_len is None else int(max_draft_len)
    B = len(sources)
    batch = DecodeStats(method=method or accept.name, device=str(dev))
    stats = [DecodeStats(id=i, method=batch.method, src_len=s.numel(), device=str(dev)) for i, s in zip(ids, sources)]
    rows = BatchedMaskedLogProbs(ver, unk_penalty)
    reset_peak_memory(dev)
    timer = ModuleTimer(batch, dev, sync=sync_timing)
    clock, policy_s = time.perf_counter, 0.0  # the policy's own calls (time_modules["policy"])
    timer.start()
    t0 = clock()
    if policy is not None:  # (its time is the batch's: a measurement it makes is the warm-up's)
        start, step, observe = policy.batch_calls()  # (its calls a batch and an iteration)
        start(ver, B)
        policy_s = clock() - t0
        timer.lap("other")
    with torch.inference_mode(), collections_between_passes(timer):
        bver.start(sources)
        states = [DecodeState(
            src_tokens=s.to(dev), src_list=s.tolist(), prefix=[eos], encoder_out=bver.row_encoder_out(b, s.numel()),
            eos=eos, pad=pad, unk=ver.unk, vocab_size=V, max_len=max_lens[b], time_modules=stats[b].time_modules,
            sync_timing=sync_timing) for b, s in enumerate(sources)]
        timer.lap("encoder")
        # with a policy the drafter starts a row when the row is first asked to draft (a probe asks a few rows)
        if drafter is not None and policy is None:
            drafter.start_batch(states)
        timer.lap("drafter")
        active = list(range(B))  # sentence index of each batch row
        first, held_rows = True, 0
        # a held "no draft"'s passes lent to the loop (``lend_hold``): taken here without a call, while more than
        # ``hold_floor`` rows are left; what is not taken goes back before the policy is asked again
        lend = getattr(policy, "lend_hold", None) if drafter is not None else None
        hold_left = hold_floor = 0
        # the held greedy passes not yet written to the active rows' ``planned`` (a 0 each), and by sentence those
        # of them it waited out: written when a row leaves or a choice is made, not row by row at every pass (32
        # appends beside a 0.4 ms pass of the C backend)
        owed, waited = 0, {}

        def write_held():
            nonlocal owed
            for b in active:
                stats[b].planned.extend([0] * (owed - waited.pop(b, 0)))
            owed = 0
        while active:
            act = [states[b] for b in active]
            js = [len(st.prefix) - 1 for st in act]
            drafts: List[List[int]] = [[] for _ in act]
            start_s = drafter_s = None  # (the drafter's start and call, shown to the policy after the pass)
            started = drafted_rows = 0
            held = False
            if hold_left and len(act) > hold_floor:
                hold_left -= 1
                held = True
                owed += 1
            elif drafter is not None:
                for st, j in zip(act, js):
                    st.max_draft = int(min(st.max_len - j, cap_draft))
                if policy is not None:
                    t0 = clock()
                    if hold_left:  # (rows left: the hold ends where the policy sees it end)
                        policy.return_hold(hold_left)
                        hold_left = 0
                    chosen = step(act, ver)
                    # None: a greedy pass the policy's held "no draft" covers: nothing to ask, draft or count per row
                    held = chosen is None
                    if held and lend is not None:
                        hold_left, hold_floor = lend()
                    policy_s += clock() - t0
                    if held:
                        owed += 1
                    else:
                        if owed:
                            write_held()
                        for st, n, b in zip(act, chosen, active):
                            st.max_draft = n
                            stats[b].planned.append(n)
                        timer.lap("other")  # the choice is neither the drafter's nor the pass's cost (both measured)
            if drafter is not None and not held:
                want = [r for r, st in enumerate(act) if st.max_draft > 0]
                if want:
                    if policy is not None:
                        new = [act[r] for r in want if not act[r].extra.get("drafter_started")]
                        if new:
                            drafter.start_batch(new)
                            for st in new:
                                st.extra["drafter_started"] = True
                            start_s, started = timer.lap("drafter"), len(new)
                    proposals = drafter.propose_batch([act[r] for r in want])
                    for r, p in zip(want, proposals):
                        drafts[r] = truncate_draft(p, act[r].max_draft, eos, pad, V)
                    drafter_s, drafted_rows = timer.lap("drafter"), len(want)
            # what each row was asked for (an empty proposal where a draft was asked counts as a rejected first token)
            asked = [st.max_draft for st in act] if policy is not None and drafter is not None and not held else None
            wait = (_waiting_rows(bver, act) if policy is not None and (held or not any(asked or ())) else None
                    ) or [False] * len(act)
            n = 1 + max(len(d) for d in drafts)
            tokens = torch.tensor([[pad] * n if w else [st.prefix[-1]] + d + [pad] * (n - 1 - len(d))
                                   for w, st, d in zip(wait, act, drafts)], dtype=torch.long)
            hidden = bver.forward(tokens, [0 if w else len(d) + 1 for w, d in zip(wait, drafts)])
            decided = accept.accept_batch(drafts, rows.of(hidden, js, [st.max_len for st in act]))
            keep = []
            for r, (st, dr, decision) in enumerate(zip(act, drafts, decided)):
                if wait[r]:  # (fed nothing: no iteration of its own)
                    if held:
                        waited[active[r]] = waited.get(active[r], 0) + 1
                    else:
                        stats[active[r]].planned.pop()
                    keep.append(r)
                    continue
                _, cache_length, finished = advance(st, stats[active[r]], dr, decision, hidden[r, : len(dr) + 1])
                bver.lengths[r] = cache_length  # this row's rollback
                if not finished:
                    keep.append(r)
            verify_s = timer.lap("verifier")
            if asked is not None:
                # the rows are counted after the pass's time is taken: counted inside it (32 rows, ~0.1 ms beside a
                # 0.4-1 ms pass of the C backend) they made every drafted pass look dearer than a greedy one. (A
                # batch's first pass also allocates its caches: not observed.) The drafter's start and call are shown
                # in the same call: nothing reads them before
                t0 = clock()
                observe(act, asked, None if first else verify_s, [len(d) for d in drafts], start_s, started, drafter_s,
                        drafted_rows)
                held_rows = 0
                policy_s += clock() - t0
            elif policy is not None and not first:
                t0 = clock()
                if not held:
                    policy.observe_pass(verify_s, [len(d) for d in drafts])
                    held_rows = 0
                elif len(act) != held_rows:  # a hold's greedy passes are measured once at each number of rows
                    policy.observe_greedy_pass(verify_s, len(act))
                    held_rows = len(act)
                policy_s += clock() - t0
            first = False
            if len(keep) < len(active):
                # finished rows leave the caches: a cost of the batch, not of this pass (it would make the policy
                # think a pass of this many rows dearer than it is)
                if owed:
                    write_held()
                active = [active[r] for r in keep]
                if active:
                    bver.keep(keep)
                timer.lap("other")
        if hold_left:  # (the next batch ends it as the policy's own)
            policy.return_hold(hold_left)
    timer.stop()  # (after a collection that came due: collections_between_passes)
    mem = peak_memory_mb(dev)
    results = []
    for st, s in zip(states, stats):  # each sentence is charged its share of the batch's time
        s.iterations, s.out_len = st.iteration, len(st.prefix) - 1
        for attr in ("time", "time_encoder", "time_drafter", "time_verifier", "time_other"):
            setattr(s, attr, getattr(batch, attr) / B)
        if policy is not None:
            s.time_modules["policy"] = policy_s / B
        s.peak_mem_mb = mem
        results.append(DecodeResult(tokens=st.prefix[1:], stats=s, eos=eos))
    return results


def decode_batched(verifier: Verifier, sources: Sequence, drafter: Optional[Drafter] = None,
                   accept: AcceptanceRule = accept_top1, *, batch_size: int = 8, sort_by_length: bool = True,
                   pack: Optional[bool] = None, policy=None, **kwargs) -> List[DecodeResult]:
    """Decode every source in batches of ``batch_size`` (longest first, like fairseq's batched generation, when
    ``sort_by_length``); results in input order, ``stats.id`` the input index. ``kwargs`` as :func:`decode_batch`;
    ``pack`` as :class:`BatchedVerifier`'s (a fast verifier never feeds padding). A batch of one sentence runs the
    batch-1 loop (:func:`~fastdec.engine.loop.draft_verify_accept`)."""
    batch_size = check_batch_size(batch_size)
    sources = [torch.as_tensor(s, dtype=torch.long).reshape(-1) for s in sources]
    order = sorted(range(len(sources)), key=lambda i: -sources[i].numel()) if sort_by_length else \
        list(range(len(sources)))
    bver = batched_verifier(verifier, pack=pack)
    results: List[Optional[DecodeResult]] = [None] * len(sources)
    for i in range(0, len(order), batch_size):
        ids = order[i: i + batch_size]
        if len(ids) == 1:  # a batch of one is the batch-1 loop itself (no padding, masks or gathers to pay for)
            results[ids[0]] = draft_verify_accept(verifier, sources[ids[0]], drafter, accept, sent_id=ids[0],
                                                  policy=policy, **kwargs)
            continue
        for j, r in zip(ids, decode_batch(bver, [sources[j] for j in ids], drafter, accept, ids=ids, policy=policy,
                                          **kwargs)):
            results[j] = r
    return results  # type: ignore[return-value]
