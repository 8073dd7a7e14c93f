"""GAD's NAT block drafter for the draft -> verify -> accept engine (the drafter named ``gad``).

Generalized Aggressive Decoding (Xia et al. 2022, Sections 3-4; Ge et al. 2022, Section 3.2): at every iteration
a non-autoregressive drafter proposes the next ``k`` tokens in ONE decoder pass, conditioned on the source and on
the prefix accepted so far; the engine's :class:`~fastdec.engine.verifier.Verifier` scores them in one pass and the
acceptance rule keeps the verified prefix. With :func:`~fastdec.engine.acceptance.accept_top1` this is vanilla GAD
(output identical to greedy decoding); with :class:`~fastdec.engine.acceptance.accept_top_beta` it is GAD++
(top-beta within tau, Eq. 7-9).

The drafter is a ``nat_block_drafter`` checkpoint (``fastdec_fairseq``, trained with ``--task block_drafting
--criterion glat_block_loss`` on the verifier's Seq-KD data-bin). Per sentence it encodes the source ONCE with its
own encoder (:meth:`NATDrafter.start`); each :meth:`NATDrafter.propose` feeds ``[BOS, o_1 .. o_j, <mask> * k]`` to
its bidirectional decoder and returns the argmax of the ``k`` mask positions. The decoder has no cache (its
self-attention is bidirectional, so every pass re-reads the whole prefix -- the "NAT decoder" cost of Table 7); it
runs through the engine's own decoder forward (a :class:`~fastdec.engine.verifier.Verifier` with ``causal=False``).

A drafter trained with ``--drafter-attention prefix-causal`` is causal over the prefix and bidirectional among its
``k`` masks only: its runner keeps the prefix's keys/values between iterations, so a drafting pass feeds just the
tokens accepted since the last one plus the ``k`` masks (O(k), not O(prefix + k)). A drafter trained with
``--freeze-encoder`` from the verifier has the verifier's encoder weights (checked tensor by tensor at load): it reads
the verifier's encoder output and encodes nothing itself.
A drafter trained with ``--first-from-prefix`` reads its first drafted token at the last prefix position (where
the verifier it started from predicts its next token) and feeds ``k - 1`` masks only.

Details that keep the engine's contract:

* symbols the verifier cannot produce -- ``<mask>`` (the drafter's dictionary = the verifier's + ``<mask>``),
  padding, BOS ``<s>`` and any id beyond the verifier's vocabulary -- are never proposed;
* EOS may occur inside the block: the loop cuts the draft after its first EOS and stops once EOS is accepted;
* the maximum length is the loop's: it truncates drafts to ``state.max_draft``; the drafter itself shortens the
  block only when ``prefix + k`` would exceed its ``max_target_positions`` (and proposes nothing -- a plain greedy
  step -- when not even one mask fits);
* the block size ``k`` defaults to the one the checkpoint was trained with (``--block-size``); ``k < 1`` or
  ``k > max_target_positions - 1`` is a ``ValueError``.

Time: the loop charges :meth:`start` and :meth:`propose` to its ``drafter`` module; the drafter splits that time
into ``drafter_encoder`` and ``drafter_decoder`` in ``DecodeStats.time_modules`` (``state.charge``) for the
per-module profile (GAD paper, Table 7). :func:`drafter_alone_decode` decodes with the drafter alone.

Usage::

    from fastdec.engine import draft_verify_accept, accept_top_beta
    from fastdec.engine.nat_drafter import load_nat_drafter
    drafter = load_nat_drafter("drafter.pt", data_bin, verifier=verifier)
    res = draft_verify_accept(verifier, src, drafter, accept_top_beta(3, 1.0), max_len_a=1.2, max_len_b=10)

or from the command line: ``fastdec bench ... --methods greedy,gad:k=10,gad:k=10:beta=3:tau=1 --drafter-arg
checkpoint=<nat.pt>``.
"""
from __future__ import annotations

import logging
import os
import time
from typing import Any, Dict, List, Optional

import torch
from torch import Tensor

from .drafters import Drafter
from .loop import truncate_draft
from .state import DecodeResult, DecodeState
from .stats import DecodeStats, ModuleTimer, peak_memory_mb, reset_peak_memory
from .verifier import resolve_device_dtype

logger = logging.getLogger(__name__)

__all__ = ["NATDrafter", "load_nat_drafter", "drafter_alone_decode", "check_block_size", "gad_factory"]


def check_block_size(k, max_target_positions: Optional[int]) -> int:
    """``1 <= k <= max_target_positions - 1`` (BOS + k masks must fit); clear ``ValueError`` otherwise."""
    if isinstance(k, bool):
        raise ValueError(f"block size k must be an integer, got {k!r}")
    if isinstance(k, float):
        if not k.is_integer():
            raise ValueError(f"block size k must be an integer, got {k!r}")
        k = int(k)
    if not isinstance(k, int):
        try:
            k = int(str(k))
        except ValueError:
            raise ValueError(f"block size k must be an integer, got {k!r}") from None
    if k < 1:
        raise ValueError(f"block size k must be >= 1, got k={k}")
    if max_target_positions is not None and k > int(max_target_positions) - 1:
        raise ValueError(f"block size k={k} is larger than the drafter supports: BOS + k mask tokens must fit "
                         f"its max_target_positions={max_target_positions}, so k <= {int(max_target_positions) - 1}")
    return k


class NATDrafter(Drafter):
    """Proposes the next ``k`` tokens with a ``nat_block_drafter`` model (see the module docstring).

    Args:
        model: a ``NATBlockDrafterModel`` (``mask_idx``, ``eos_idx``, ``pad_idx``, ``encoder``, ``block_logits``).
        k: block size (default: ``trained_k``, else 10).
        trained_k: the ``--block-size`` the model was trained with (informational, the default ``k``).
        verifier_vocab_size: ids ``>=`` this are never proposed (the verifier's output size).
        banned: further token ids never to propose (default: pad, ``<mask>``, BOS ``<s>``).
        device, dtype: where the drafter runs (default: where the model is).
        sync_timing: synchronise CUDA before reading the clock for the encoder/decoder split (only when the
            decoding loop times with syncs too: ``DecodeState.sync_timing``, off with ``--no-sync-timing``).
        fast: run the model through the engine's plain-tensor Transformer forward (a
            :class:`~fastdec.engine.verifier.Verifier` with ``causal=False``, numerically equal to fairseq's, tested)
            instead of fairseq's module forward (slower at batch 1 on CPU).
        backend: ``torch`` (that forward in PyTorch) or ``fast`` / ``fast-int8`` (in C, the fast verifier's passes;
            :func:`load_nat_drafter` takes the verifier's).
    """

    name = "gad"

    def __init__(self, model, k: Optional[int] = None, *, trained_k: Optional[int] = None,
                 verifier_vocab_size: Optional[int] = None, banned: Optional[List[int]] = None,
                 device: Any = None, dtype: Any = None, sync_timing: bool = True, fast: bool = True,
                 backend: str = "torch"):
        for attr in ("mask_idx", "eos_idx", "pad_idx", "encoder", "block_logits"):
            if not hasattr(model, attr):
                raise TypeError(f"NATDrafter needs a nat_block_drafter model (missing {attr!r}), "
                                f"got {type(model).__name__}")
        p0 = next(model.parameters())
        self.device, self.dtype = resolve_device_dtype(p0.device if device is None else device,
                                                       p0.dtype if dtype is None else dtype)
        self.model = model.to(device=self.device, dtype=self.dtype).eval()
        self.max_positions = int(model.max_decoder_positions())
        self.max_source_positions = int(model.encoder.max_positions())
        self.trained_k = trained_k
        self.k = check_block_size(k if k is not None else (trained_k or 10), self.max_positions)
        self.eos, self.pad, self.mask = int(model.eos_idx), int(model.pad_idx), int(model.mask_idx)
        vocab = int(model.decoder.output_projection.weight.size(0))
        ban = torch.zeros(vocab, dtype=torch.bool)
        bos = getattr(model.decoder.dictionary, "bos", lambda: None)()
        for t in [self.pad, self.mask] + ([bos] if bos is not None and bos != self.eos else []) + list(banned or []):
            if 0 <= int(t) < vocab:
                ban[int(t)] = True
        if verifier_vocab_size is not None:
            if verifier_vocab_size < 1:
                raise ValueError(f"verifier_vocab_size must be >= 1, got {verifier_vocab_size}")
            ban[int(verifier_vocab_size):] = True
        if bool(ban.all()):
            raise ValueError("every token of the drafter's vocabulary is banned")
        self.ban = ban.to(self.device)
        self._ban_bytes = ban.to(torch.uint8)  # the fast runner's allowed_top1 reads it
        self.sync = sync_timing and self.device.type == "cuda"
        # prefix-causal drafters (--drafter-attention prefix-causal) keep the prefix's keys/values between passes
        self.prefix_causal = bool(getattr(model.decoder, "prefix_causal", False))
        # --first-from-prefix drafters: the first drafted token is read at the last prefix position, k-1 masks follow
        self.first_from_prefix = bool(getattr(model, "first_from_prefix", False))
        self.shares_encoder = False  # True: the verifier's encoder output is the drafter's (share_encoder_with)
        self.runner = None  # the plain-tensor forward, or None: fairseq's module forward
        if fast:
            self.runner = _runner(self.model, self.device, self.dtype, self.prefix_causal, backend)
        self._cached_prefix: List[int] = []  # the prefix whose keys/values the prefix-causal runner holds
        self._warned_long = False

    def share_encoder_with(self, verifier) -> bool:
        """Reuse the verifier's encoder output when the two encoders are the same weights (a drafter trained with
        ``--freeze-encoder`` from the verifier): the source is then encoded once per sentence, not twice."""
        encoder = getattr(verifier, "encoder", None)
        self.shares_encoder = encoder is not None and encoders_match(self.model.encoder, encoder)
        return self.shares_encoder

    def _now(self, state=None) -> float:
        if self.sync and (state is None or state.sync_timing):  # pending kernels belong to whoever launched them
            torch.cuda.synchronize(self.device)
        return time.perf_counter()

    # ------------------------------------------------------------------ engine protocol
    @torch.inference_mode()
    def encode(self, src_tokens) -> Dict[str, List[Tensor]]:
        """The drafter's own encoding of one source (1-D LongTensor incl. the trailing EOS)."""
        src = torch.as_tensor(src_tokens, dtype=torch.long).reshape(-1)
        if src.numel() == 0:
            raise ValueError("src_tokens is empty; a fairseq source always ends with EOS")
        if src.numel() > self.max_source_positions:
            raise ValueError(f"source has {src.numel()} tokens (incl. EOS) but the drafter's encoder supports at "
                             f"most {self.max_source_positions} positions")
        if self.runner is not None:
            return self.runner.start(src)
        src = src.to(self.device).unsqueeze(0)
        return self.model.encoder(src, src_lengths=torch.tensor([src.size(1)], device=self.device))

    def start(self, state) -> None:
        """Encode the source once per sentence (charged to ``drafter_encoder``).

        A source longer than the drafter's encoder positions (but not the verifier's) cannot be drafted: the
        sentence is decoded with empty drafts (plain greedy steps, still lossless) and a warning is logged once.
        """
        t0 = self._now(state)
        enc = None
        if self.shares_encoder and state.encoder_out:
            enc = state.encoder_out
        elif len(state.src_list) <= self.max_source_positions:
            enc = self.encode(state.src_list)
        elif not self._warned_long:
            logger.warning("source of %d tokens exceeds the drafter's %d encoder positions: decoding such sentences "
                           "without drafts (greedy steps)", len(state.src_list), self.max_source_positions)
            self._warned_long = True
        state.extra["nat_encoder_out"] = enc
        state.charge("drafter_encoder", self._now(state) - t0)

    @torch.inference_mode()
    def block(self, encoder_out, prefix: List[int], k: Optional[int] = None,
              return_log_probs: bool = False):
        """Argmax of the ``k`` masks after ``prefix`` (``[BOS, o_1 .. o_j]``), banned ids excluded.

        Returns a LongTensor ``[k']`` (``k' <= k`` when the decoder positions run out, possibly 0) and, with
        ``return_log_probs``, the masked log-probabilities ``[k', V]``.
        """
        k = self.k if k is None else check_block_size(k, self.max_positions)
        k = min(k, self.max_positions - len(prefix))
        if k < 1:
            empty = torch.empty(0, dtype=torch.long)
            return (empty, None) if return_log_probs else empty
        # the fast backend: projection and argmax in C, never a banned id
        fused = getattr(self.runner, "allowed_top1", None) if not return_log_probs else None
        if self.runner is not None:
            if self.prefix_causal:
                hidden = self._causal_block(encoder_out, list(prefix), k)
            else:
                inp = torch.tensor(list(prefix) + [self.mask] * self._num_masks(k), dtype=torch.long)
                self.runner.restart(encoder_out)  # the whole input again, from position 0
                hidden = self.runner.forward(inp, need_logits=False).hidden[-k:]
            if fused is not None:
                return torch.tensor(fused(hidden, self._ban_bytes), dtype=torch.long)
            logits = self.runner.output_layer(hidden)
        else:
            inp = torch.tensor(list(prefix) + [self.mask] * self._num_masks(k), dtype=torch.long)
            logits = self.model.block_logits(encoder_out, inp.to(self.device).unsqueeze(0), k)[0]
        logits = logits.masked_fill(self.ban, float("-inf"))
        tokens = logits.argmax(-1)
        if return_log_probs:
            x = logits.float() if logits.dtype in (torch.float16, torch.bfloat16) else logits
            return tokens, torch.log_softmax(x, dim=-1)
        return tokens

    def _num_masks(self, k: int) -> int:
        return k - 1 if self.first_from_prefix else k

    def _causal_block(self, encoder_out, prefix: List[int], k: int) -> Tensor:
        """Hidden states ``[k, C]`` of the block after ``prefix``, prefix-causal: one pass over the tokens not yet
        cached and the masks (causal among the new tokens, the masks see everything), then the masks are rolled
        back. The cache is reused while the sentence (its encoder output) is the same and it holds a prefix of
        ``prefix`` (the loop only appends); otherwise it starts afresh -- e.g. when batch rows take turns. With
        ``first_from_prefix`` the last prefix token is always in the pass (its hidden state drafts the first token)."""
        runner = self.runner
        held = len(self._cached_prefix)
        if runner.encoder_out is not encoder_out or held > len(prefix) or prefix[:held] != self._cached_prefix:
            runner.restart(encoder_out)
            self._cached_prefix, held = [], 0
        if self.first_from_prefix and held == len(prefix):  # the same prefix again: recompute its last position
            held -= 1
            runner.rollback(held)
            self._cached_prefix = prefix[:held]
        masks = self._num_masks(k)
        inp = torch.tensor(prefix[held:] + [self.mask] * masks, dtype=torch.long)
        hidden = runner.forward(inp, need_logits=False, bidirectional_tail=masks).hidden[-k:]
        runner.rollback(len(prefix))
        self._cached_prefix = prefix
        return hidden

    def propose(self, state) -> Tensor:
        enc = state.extra["nat_encoder_out"]
        if enc is None:
            return torch.empty(0, dtype=torch.long)
        t0 = self._now(state)
        draft = self.block(enc, state.prefix)  # stays on the device: the loop reads it in its one transfer
        state.charge("drafter_decoder", self._now(state) - t0)
        return draft

    # ------------------------------------------------------------------ batched engine (fastdec.engine.batched)
    def start_batch(self, states) -> None:
        """Encode every source of a batch in one pass (charged evenly to each sentence's ``drafter_encoder``); rows
        keep an index into the batch for :meth:`propose_batch`. Falls back to :meth:`start` per sentence with
        fairseq's module forward, a source longer than the drafter's encoder positions, or a runner on the fast (C)
        backend: :meth:`propose_batch` then drafts row by row through :meth:`propose` -- the C passes of batch 1,
        so every row's drafts are bit for bit its batch-1 drafts (the padded PyTorch pass would not be)."""
        from .batched import encode_batch

        if self.runner is None or self.prefix_causal or getattr(self.runner, "backend", "torch") != "torch" or \
                any(len(s.src_list) > self.max_source_positions for s in states):
            return super().start_batch(states)
        t0 = self._now(states[0])
        enc, enc_k, enc_v, enc_mask = encode_batch(self.runner, [torch.tensor(s.src_list) for s in states])
        shared = (enc_k, enc_v, enc_mask)
        for b, s in enumerate(states):  # the row's own encoder output too: propose() works on it alone
            s.extra["nat_encoder_out"] = {"encoder_out": [enc["encoder_out"][0][: len(s.src_list), b:b + 1]]}
            s.extra["nat_batch"] = (shared, b)
        share = (self._now(states[0]) - t0) / len(states)
        for s in states:
            s.charge("drafter_encoder", share)

    @torch.inference_mode()
    def propose_batch(self, states) -> List[List[int]]:
        """The next block of every row in ONE bidirectional decoder pass over ``[prefix_b, <mask> * k]`` (padded),
        one host transfer for all rows' drafts."""
        from .batched import bidirectional_pass

        # rows set up by start() (no "nat_batch": e.g. a fast-backend runner, see start_batch) draft one by one
        batches = {id(s.extra.get("nat_batch", (None,))[0]) for s in states}
        if "nat_batch" not in states[0].extra or len(batches) != 1 or self.prefix_causal:
            return super().propose_batch(states)
        t0 = self._now(states[0])
        (enc_k, enc_v, enc_mask), _ = states[0].extra["nat_batch"]
        ks = [max(0, min(self.k, self.max_positions - len(s.prefix))) for s in states]
        lens = [len(s.prefix) for s in states]
        kmax = max(ks)
        if kmax == 0:
            return [[] for _ in states]
        masks = [max(0, self._num_masks(k)) for k in ks]
        n = max(p + m for p, m in zip(lens, masks))
        tokens = torch.tensor([s.prefix + [self.mask] * m + [self.pad] * (n - p - m)
                               for s, p, m in zip(states, lens, masks)], dtype=torch.long)
        idx = torch.tensor([s.extra["nat_batch"][1] for s in states], device=self.device)
        hidden = bidirectional_pass(self.runner, tokens, [p + m for p, m in zip(lens, masks)],
                                    enc_k.index_select(1, idx), enc_v.index_select(1, idx),
                                    enc_mask.index_select(0, idx))
        first = torch.tensor(lens, device=self.device) - int(self.first_from_prefix)  # column of the first draft
        pos = (first[:, None] + torch.arange(kmax, device=self.device)).clamp(max=n - 1)
        h = hidden[torch.arange(len(states), device=self.device)[:, None], pos]  # [B, kmax, C]: the mask positions
        drafts = self.runner.output_layer(h).masked_fill(self.ban, float("-inf")).argmax(-1).tolist()
        share = (self._now(states[0]) - t0) / len(states)
        for s in states:
            s.charge("drafter_decoder", share)
        return [d[:k] for d, k in zip(drafts, ks)]

    def __repr__(self) -> str:
        return (f"NATDrafter(k={self.k}, trained_k={self.trained_k}, attention="
                f"{'prefix-causal' if self.prefix_causal else 'bidirectional'}, first_from_prefix="
                f"{self.first_from_prefix}, shares_encoder={self.shares_encoder}, "
                f"device={self.device}, dtype={self.dtype})")


def encoders_match(drafter_encoder, verifier_encoder) -> bool:
    """True when two fairseq encoders hold the same weights; the drafter's token embedding may have extra rows
    (its ``<mask>``), which a source never contains."""
    mine, theirs = drafter_encoder.state_dict(), verifier_encoder.state_dict()
    if mine.keys() != theirs.keys():
        return False
    for key, a in mine.items():
        b = theirs[key]
        if key.endswith("embed_tokens.weight") and a.dim() == 2 and a.shape[1:] == b.shape[1:] \
                and a.shape[0] >= b.shape[0]:
            a = a[: b.shape[0]]
        if a.shape != b.shape or not torch.equal(a.to(device=b.device, dtype=b.dtype), b):
            return False
    return True


@torch.inference_mode()
def drafter_alone_decode(drafter: NATDrafter, src_tokens, max_len: int, *, sync_timing: bool = True) -> DecodeResult:
    """The "NAT drafter" row of GAD Table 1: block after block, every drafted token is kept (no verifier).

    Stops after the first EOS, once ``max_len`` tokens are generated or when the drafter's decoder positions run
    out (then EOS is appended, like the loop's forced EOS). The tokens end with EOS; the stats count NAT decoder
    passes as ``iterations``, the drafter's encoder as ``time_encoder`` and its decoder passes as ``time_drafter``
    (``time_modules``: ``drafter_encoder``, ``drafter_decoder``).
    """
    if max_len < 1:
        raise ValueError(f"max_len must be >= 1, got {max_len}")
    src = torch.as_tensor(src_tokens, dtype=torch.long).reshape(-1)
    if src.numel() > drafter.max_source_positions:  # no verifier to fall back on (NATDrafter.start would)
        raise ValueError(f"source has {src.numel()} tokens (incl. EOS) but the drafter's encoder supports at most "
                         f"{drafter.max_source_positions} positions")
    eos = drafter.eos
    stats = DecodeStats(method=f"nat_k{drafter.k}", src_len=src.numel(), device=str(drafter.device))
    state = DecodeState(src_tokens=src, src_list=src.tolist(), prefix=[eos], encoder_out={}, eos=eos,
                        pad=drafter.pad, unk=drafter.model.decoder.dictionary.unk(), vocab_size=drafter.ban.numel(),
                        max_len=max_len, time_modules=stats.time_modules, sync_timing=sync_timing)
    reset_peak_memory(drafter.device)
    timer = ModuleTimer(stats, drafter.device, sync=sync_timing)
    timer.start()
    drafter.start(state)
    timer.lap("encoder")
    while state.num_generated < max_len:
        state.max_draft = max_len - state.num_generated
        block = truncate_draft(drafter.propose(state), state.max_draft, eos, drafter.pad, state.vocab_size)
        if not block:  # decoder positions exhausted
            break
        state.iteration += 1
        state.prefix.extend(block)
        if block[-1] == eos:
            break
    timer.lap("drafter")
    tokens = state.output
    if not tokens or tokens[-1] != eos:
        tokens.append(eos)
    stats.iterations, stats.out_len = state.iteration, len(tokens)
    timer.stop()
    stats.peak_mem_mb = peak_memory_mb(drafter.device)
    return DecodeResult(tokens=tokens, stats=stats, eos=eos)


# ---------------------------------------------------------------------- loading and registration

_CACHE: Dict[tuple, Any] = {}


def _data_dir(cfg) -> Optional[str]:
    try:
        data = cfg.task.data
    except Exception:  # noqa: BLE001
        data = getattr(cfg, "data", None)
    return str(data).split(os.pathsep)[0] if data else None


def _runner(model, device, dtype, causal: bool, backend: str):
    """The drafter's plain-tensor forward on the verifier's backend (``make_verifier``: the C passes for ``fast`` /
    ``fast-int8`` where they run, else the PyTorch :class:`Verifier`); None for an architecture neither runs
    (fairseq's own module forward then)."""
    from .load import make_verifier

    try:
        return make_verifier(model, device=device, dtype=dtype, backend=backend, causal=causal)
    except (TypeError, NotImplementedError, ValueError):  # unusual architecture: fairseq's own forward
        return None


def load_nat_drafter(checkpoint, data_bin=None, *, k: Optional[int] = None, verifier=None, verifier_dict=None,
                     device: Any = None, dtype: Any = None, user_dir: Optional[str] = None,
                     cache: bool = True) -> NATDrafter:
    """Load a ``nat_block_drafter`` checkpoint as a :class:`NATDrafter` next to a verifier.

    ``data_bin`` holds the dictionaries (the verifier's Seq-KD data-bin; the task adds ``<mask>``). ``verifier``
    (a :class:`~fastdec.engine.verifier.Verifier`) gives the default device/dtype and the vocabulary size;
    ``verifier_dict`` (its target ``Dictionary``) is compared symbol by symbol with the drafter's: a drafter
    trained on another data-bin is a ``ValueError``. Loaded weights are cached per (checkpoint, data_bin,
    device, dtype), so several drafters (GAD, GAD++ ...) in one process share the same weights.
    """
    from .load import load_model

    if device is None:
        device = verifier.device if verifier is not None else "cpu"
    if dtype is None and verifier is not None:
        dtype = verifier.dtype
    dev, dt = resolve_device_dtype(device, dtype)
    checkpoint = os.path.abspath(str(checkpoint))
    key = (checkpoint, str(data_bin), str(dev), str(dt), user_dir)
    loaded = _CACHE.get(key) if cache else None
    if loaded is None:
        loaded = load_model(checkpoint, data_bin, device=dev, dtype=dt, user_dir=user_dir)
        if cache:
            _CACHE[key] = loaded
    model = loaded.model
    if not hasattr(model, "mask_idx"):
        raise ValueError(f"{checkpoint} is not a nat_block_drafter checkpoint (model {type(model).__name__})")
    trained_k = getattr(loaded.cfg.task, "block_size", None)
    vsize = None
    if verifier is not None:
        vsize = int(verifier.vocab_size)
    if verifier_dict is not None:
        mine = loaded.tgt_dict.symbols
        theirs = list(verifier_dict.symbols)
        if mine[: len(theirs)] != theirs:
            raise ValueError(f"the drafter {checkpoint} was trained with another dictionary than the verifier; "
                             "train it on the verifier's data-bin")
        vsize = len(theirs) if vsize is None else min(vsize, len(theirs))
    # the drafter runs on the verifier's backend (the fast verifier's drafter through the same C passes)
    drafter = NATDrafter(model, k=k, trained_k=trained_k, verifier_vocab_size=vsize, device=dev, dtype=dt,
                         backend=getattr(verifier, "backend", "torch"))
    if verifier is not None:
        drafter.share_encoder_with(verifier)
    return drafter


def gad_factory(checkpoint: Optional[str] = None, k: Optional[int] = None, data_bin: Optional[str] = None,
                 user_dir: Optional[str] = None, drafter_checkpoint: Optional[str] = None,
                 context: Optional[dict] = None):
    """``make_drafter("gad", checkpoint=..., k=..., data_bin=..., context=...)`` (``data_bin`` defaults to the
    verifier's data-bin from ``context["loaded"]``). ``drafter_checkpoint`` is an alias of ``checkpoint``."""
    if (checkpoint is None) == (drafter_checkpoint is None):
        raise ValueError("the gad drafter needs exactly one of checkpoint=... / drafter_checkpoint=...")
    checkpoint = checkpoint if checkpoint is not None else drafter_checkpoint
    context = context or {}
    loaded = context.get("loaded")
    verifier = context.get("verifier")
    if data_bin is None and loaded is not None:
        data_bin = _data_dir(loaded.cfg)
    return load_nat_drafter(checkpoint, data_bin, k=k, verifier=verifier,
                            verifier_dict=getattr(loaded, "tgt_dict", None),
                            device=context.get("device"), dtype=context.get("dtype"), user_dir=user_dir)
