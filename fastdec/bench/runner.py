"""One benchmark runner: every method on the same loaded weights, in one process, batch 1, interleaved.

Sentence after sentence, every method decodes the sentence back to back, in an order shuffled for each sentence (seeded
by its index; with ``block`` > 1, every method decodes that many sentences in its turn), so that load drifting on a
shared or throttled machine, and the caches one method leaves to the next (a method right after a PyTorch one measured
15-23 % slower on a 2-core CPU), hit all methods alike and per-sentence speed ratios compare like with like. Drafters,
fairseq generators and a cost-aware policy's pass costs are made before the clock starts (loading is never timed);
``warmup`` sentences are decoded by every method first and not recorded (a method with a cost-aware draft policy decodes
them with a policy of its own: the timed decodes start from a fresh policy, as a user's decode does, not from one that
learned a two-sentence warm-up batch's acceptance; a batched method warms up on the input's first, longest batch of its
size, whatever ``warmup`` is above 0); with ``repeats > 1`` each (method, sentence) is decoded that many times and the
fastest kept (outputs are deterministic: a differing output is an error; a cost-aware policy starts each repeat from
what it knew before the first, and goes on from the last). Methods with a batch size above 1 (fairseq's and
CTranslate2's batched generation, the engine's batched draft -> verify -> accept of :mod:`fastdec.engine.batched`) run
after the batch-1 methods, interleaved batch by batch: the input is cut once into batches, longest sentences first (like
fairseq), and every method of that batch size decodes each batch in turn, in an order shuffled per batch (seeded); with
``repeats > 1`` that many rounds, each in its own order, and each method's fastest decode of the batch kept (on a lent
GPU a batch of one method met a stall of 20-65 ms at random, up to 2x the batch's time). Every method then decodes the
very same batches, and a drift in the machine's speed hits them alike (one method after the other over the whole input,
a fast-backend method's 0.5 s on 256 sentences moved by up to 15 % from one method to the next). Each sentence is
charged its share of its batch's time.
"""
from __future__ import annotations

import dataclasses
import gc
import random
import time
from dataclasses import dataclass, field
from typing import Callable, Dict, List, Optional, Sequence, Tuple

import torch

from fastdec.engine.acceptance import make_acceptance, ordinal_values
from fastdec.engine.batched import decode_batched
from fastdec.engine.drafters import make_drafter
from fastdec.engine.fairseq_baseline import FairseqGenerator
from fastdec.engine.loop import compute_max_len, draft_verify_accept
from fastdec.engine.replay import ReplayedChoices

from .methods import Method
from .results import Record

__all__ = ["Context", "run_benchmark", "method_decoder", "acceptance_rule", "drafter_kwargs"]


@dataclass
class Context:
    """What every method decodes with: the loaded verifier weights and fairseq's length limits."""

    loaded: object                  # fastdec.engine.load.LoadedModel
    verifier: object                # fastdec.engine.verifier.Verifier over loaded.model (the reference backend)
    max_len_a: float = 0.0
    max_len_b: int = 200
    sync_timing: bool = True
    _backends: Dict[str, object] = field(default_factory=dict)

    def verifier_of(self, backend: str):
        """The verifier of ``backend`` over the same weights (built once; ``torch`` is :attr:`verifier`). A fast
        backend that cannot run here falls back to the reference with a warning (the row then says so: its
        verifier's ``backend``)."""
        if backend == "torch":
            return self.verifier
        if backend not in self._backends:
            from fastdec.engine.load import make_verifier

            v = self.verifier
            self._backends[backend] = make_verifier(self.loaded.model, device=v.device, dtype=v.dtype, backend=backend)
        return self._backends[backend]


def acceptance_rule(m: Method, symbols=None):
    """The method's acceptance rule; ``symbols`` (the verifier's target dictionary) gives the tokens' values for the
    distance-based rule (``eps``)."""
    if m.eps > 0:
        if symbols is None:
            raise ValueError(f"{m.label}: eps needs the verifier's dictionary")
        return make_acceptance("distance", epsilon=m.eps, values=ordinal_values(symbols),
                               min_block_size=m.min_block)
    if m.beta > 1:
        return make_acceptance("top-beta", beta=m.beta, tau=m.tau, min_block_size=m.min_block)
    if m.topk > 1:
        return make_acceptance("top-k", k=m.topk, min_block_size=m.min_block)
    return make_acceptance("top1", min_block_size=m.min_block)


def _has_policy(m: Method) -> bool:
    return m.policy != "fixed" and m.drafter is not None


def draft_policy(m: Method):
    """The method's draft-length policy object (None: every drafted token is verified, the papers' methods; a
    ``replay`` method decodes with its cost-aware twin's choices instead: :meth:`_Systems.policy`)."""
    if not _has_policy(m):
        return None
    from fastdec.engine.policy import CostAwarePolicy

    caps = [c for c in (m.max_draft_len, m.k) if c is not None]
    return CostAwarePolicy(horizon=min(caps) if caps else 64)


def drafter_kwargs(m: Method) -> dict:
    """The drafter factory's keyword arguments of a method (the grammar's keys in the factory's names)."""
    kw = dict(m.drafter_args)
    if m.drafter == "gad":
        kw["k"] = m.k
    elif m.drafter == "blockwise":
        kw["block_size"] = m.k
        if m.precision:
            kw["head_precision"] = m.precision
    return kw


def _generator(c: Context, m: Method):
    """The sequence generator of a fairseq or peer (CTranslate2) method: ``generate(sources, batch_size)``."""
    if m.kind == "peer":
        from fastdec.engine.ctranslate2_backend import CT2Generator

        if "model" not in m.drafter_args:
            raise ValueError(f"{m.label}: give the converted CTranslate2 model folder (ct2:model=PATH)")
        return CT2Generator(m.drafter_args["model"], c.loaded.src_dict, c.loaded.tgt_dict, beam=m.beam,
                            compute_type=m.precision, max_len_a=c.max_len_a, max_len_b=c.max_len_b,
                            max_positions=c.verifier.max_positions, device=c.verifier.device.type,
                            threads=torch.get_num_threads())
    return FairseqGenerator(c.loaded.model, c.loaded.tgt_dict, beam=m.beam, max_len_a=c.max_len_a,
                            max_len_b=c.max_len_b, device=c.verifier.device)


class _Systems:
    """Builds one decode function per method; drafters with the same settings are shared (GAD and GAD++)."""

    def __init__(self, ctx: Context):
        self.ctx = ctx
        self._drafters: Dict[str, object] = {}
        self.replays: Dict[str, ReplayedChoices] = {}  # a replay method's choices, added to before each decode

    def policy(self, m: Method):
        """A fresh policy of ``m`` (None: none), or a replay method's recorded choices (:attr:`replays`)."""
        if m.policy != "replay" or m.drafter is None:
            return draft_policy(m)
        return self.replays.setdefault(m.label, ReplayedChoices({}))

    @staticmethod
    def _ready(policy, verifier, batch: int):
        """``policy`` with its pass costs read or measured now, before the clock starts (building is not decoding)."""
        load = getattr(policy, "load_costs", None)
        if load is not None:
            load(verifier, batch)
        return policy

    def drafter(self, m: Method):
        kw = drafter_kwargs(m)
        key = repr((m.drafter, m.backend, sorted(kw.items())))
        if key not in self._drafters:
            c = self.ctx
            verifier = c.verifier_of(m.backend)
            context = {"loaded": c.loaded, "verifier": verifier, "device": verifier.device, "dtype": verifier.dtype}
            self._drafters[key] = make_drafter(m.drafter, context=context, **kw)
        return self._drafters[key]

    def build(self, m: Method) -> Callable[[int, torch.Tensor], Record]:
        c = self.ctx
        if m.kind in ("fairseq", "peer"):
            gen = _generator(c, m)

            def fairseq_one(i, src):
                r = gen.generate([src])[0]
                return Record.from_fairseq(m.label, i, src, r)
            return fairseq_one
        drafter = self.drafter(m) if m.drafter else None
        if m.kind == "drafter":
            from fastdec.engine.nat_drafter import drafter_alone_decode

            def drafter_one(i, src):
                max_len = compute_max_len(int(src.numel()), c.max_len_a, c.max_len_b, c.verifier.max_positions)
                return Record.from_result(m.label, i, drafter_alone_decode(drafter, src, max_len,
                                                                           sync_timing=c.sync_timing))
            return drafter_one
        rule = acceptance_rule(m, c.loaded.tgt_dict.symbols if m.eps else None)
        kw = dict(max_len_a=c.max_len_a, max_len_b=c.max_len_b, max_draft_len=m.max_draft_len,
                  sync_timing=c.sync_timing, method=m.label)

        verifier = c.verifier_of(m.backend)
        policy = self._ready(self.policy(m), verifier, 1)

        def engine_one(i, src):
            return Record.from_result(m.label, i, draft_verify_accept(verifier, src, drafter, rule, sent_id=i,
                                                                      policy=policy, **kw))
        engine_one.policy = policy  # (repeats start from the same policy: _Repeats)
        return engine_one

    def build_batched(self, m: Method) -> Callable[[Sequence[torch.Tensor], Sequence[int]], List[Record]]:
        """``(sources, their ids) -> records in input order`` of a method decoding ``m.batch_size`` sentences at a
        time."""
        c = self.ctx
        if m.kind in ("fairseq", "peer"):
            gen = _generator(c, m)

            def fairseq_all(sources, ids):
                return [Record.from_fairseq(m.label, ids[r.id], sources[r.id], r)
                        for r in gen.generate(list(sources), batch_size=m.batch_size)]
            return fairseq_all
        if m.kind != "engine":
            raise ValueError(f"{m.label}: only fairseq, ct2 and engine methods decode in batches")
        drafter = self.drafter(m) if m.drafter else None
        rule = acceptance_rule(m, c.loaded.tgt_dict.symbols if m.eps else None)
        verifier = c.verifier_of(m.backend)  # a fast (C) verifier batches its rows in C (fastdec.engine.fast_batched)
        policy = self._ready(self.policy(m), verifier, m.batch_size)

        def engine_all(sources, ids):
            results = decode_batched(verifier, sources, drafter, rule, batch_size=m.batch_size,
                                     max_len_a=c.max_len_a, max_len_b=c.max_len_b, max_draft_len=m.max_draft_len,
                                     sync_timing=c.sync_timing, method=m.label, policy=policy)
            return [Record.from_result(m.label, i, r) for i, r in zip(ids, results)]
        engine_all.policy = policy
        return engine_all


def _for_warmup(systems: _Systems, m: Method, built, *, batched: bool):
    """The decode function ``m``'s warm-up runs: ``built`` itself, or one with a draft policy of its own where ``m``
    has a policy (which learns from everything it decodes)."""
    if m.kind != "engine" or not _has_policy(m):
        return built
    if m.policy == "replay":  # (nothing recorded yet: warmed up as its cost-aware twin)
        m = dataclasses.replace(m, policy="cost")
    return systems.build_batched(m) if batched else systems.build(m)


def method_decoder(ctx: Context, m: Method) -> Tuple[Callable[[int, torch.Tensor], Record], object]:
    """One method's ``(sentence id, source) -> Record`` and its drafter (or None), built now (loading is not
    decoding)."""
    systems = _Systems(ctx)
    return systems.build(m), systems.drafter(m) if m.drafter else None


def _replayed(methods: Sequence[Method]) -> Dict[str, str]:
    """``{replay method's label: the label of the cost-aware row whose choices it replays}``: the same method with
    ``policy=cost`` must be in the run."""
    cost = {m.policy_twin("cost"): m.label for m in methods if m.policy == "cost"}
    out = {}
    for m in methods:
        if m.kind == "engine" and m.policy == "replay" and m.drafter is not None:
            key = m.policy_twin("cost")
            if key not in cost:
                twin = key[0]
                raise ValueError(f"{m.label} replays the choices of the run's {twin.label} row: add the method "
                                 f"{twin.spec!r}")
            out[m.label] = cost[key]
    return out


class _Repeats:
    """A method's decodes of one sentence (batch) across repeats: the fastest, whose outputs all must equal, and the
    policy each repeat starts from. A cost-aware policy learns from every decode; each repeat starts from what it had
    learned before the first (:meth:`~fastdec.engine.policy.CostAwarePolicy.snapshot`), so that a later repeat does
    not decide with what an earlier one counted on the same sentences, and the decode kept is one a user's single
    decode could have been. The policy goes on from the last repeat."""

    def __init__(self, decode, repeats: int):
        policy = getattr(decode, "policy", None)
        # (one decode has nothing to restore: no copy of the policy is taken)
        self.policy = policy if repeats > 1 and hasattr(policy, "snapshot") else None
        self.decode, self.kept, self._start = decode, None, None

    def run(self, label: str, unit: str, *args) -> List[Record]:
        if self.policy is not None:
            if self._start is None:
                self._start = self.policy.snapshot()
            else:
                self.policy.restore(self._start)
        recs = self.decode(*args)
        self.kept = _faster(self.kept, recs if isinstance(recs, list) else [recs], label, unit)
        return self.kept


def _faster(kept: Optional[List[Record]], recs: List[Record], label: str, unit: str) -> List[Record]:
    """The faster of two decodes of one sentence or batch, which must have the same outputs (``kept``: None at first)."""
    if kept is None:
        return recs
    if [r.tokens for r in recs] != [r.tokens for r in kept]:
        raise RuntimeError(f"{label}: {unit} decoded differently across repeats")
    return recs if sum(r.time for r in recs) < sum(r.time for r in kept) else kept


def run_benchmark(methods: Sequence[Method], ctx: Context, sources: Sequence[torch.Tensor], *, warmup: int = 0,
                  repeats: int = 1, progress: Optional[Callable[[int, int], None]] = None,
                  deadline: Optional[float] = None, block: int = 1) -> Dict[str, List[Record]]:
    """Decode every source with every method (see the module docstring); ``{label: records in input order}``.

    ``block``: at batch 1 each method decodes this many consecutive sentences in its turn (1: methods interleaved
    sentence by sentence). A method's turns then come closer to a run of that method alone, whose code and data stay
    in the caches between sentences: on a 2-core CPU with the C backend at batch 1 (256 GEC sentences), cost-aware
    IAD's policy took 3.8 % of its decode sentence by sentence, 2.9 % in turns of 8 and 2.4-2.5 % in turns of all
    256, where greedy decoding was 8-9 % and fixed IAD 14-16 % faster than sentence by sentence
    (docs/PERFORMANCE.md). Larger turns share a drift of the machine's speed less evenly between the methods.

    ``deadline`` (a ``time.perf_counter()`` value): the batch-1 loop stops after the round (the sentence, or the
    ``block`` of sentences) during which it passed, and every method, batched ones included, keeps that many sentences
    (a run that must end inside a time limit).
    A ``policy=replay`` method decodes a sentence (a batch) with the choices its cost-aware twin made on it, one
    sentence (batch) later, among the methods' decodes of the next one (:mod:`fastdec.engine.replay`)."""
    if repeats < 1 or warmup < 0 or block < 1:
        raise ValueError("repeats and block must be >= 1, warmup >= 0")
    labels = [m.label for m in methods]
    if len(set(labels)) != len(labels):
        raise ValueError(f"duplicate method labels in {labels}")
    replay_of = _replayed(methods)
    systems = _Systems(ctx)
    batch1 = [(m, systems.build(m)) for m in methods if m.batch_size == 1]
    out: Dict[str, List[Record]] = {m.label: [] for m in methods}

    def replay_plans(m: Method, recs: Sequence[Record], srcs: Sequence[torch.Tensor]) -> None:
        for label in (r for r, c in replay_of.items() if c == m.label):  # the choices a replay decodes next round
            systems.replays.setdefault(label, ReplayedChoices({})).add(srcs, recs)
    # the loaded models' many Python objects move out of the collector's sight: a collection that the decoding loops'
    # small allocations trigger then no longer walks them all (it did, at every method's expense, several % of a
    # fast-backend decode)
    gc.collect()
    gc.freeze()
    with torch.inference_mode():
        warm1 = [_for_warmup(systems, m, one, batched=False) for m, one in batch1] if warmup else []
        for i, src in enumerate(sources[:warmup]):
            for one in warm1:
                one(i, src)
        n = len(batch1)
        for i in range(0, len(sources) + block, block):  # rounds of `block` sentences (a last one for the replays)
            for m, one in (batch1[j] for j in random.Random(i).sample(range(n), n)):
                start = i - block if m.label in replay_of else i  # (a replay decodes the round before)
                for at in range(max(start, 0), min(start + block, len(sources))):
                    rounds = _Repeats(one, repeats)
                    for _ in range(repeats):
                        best = rounds.run(m.label, f"sentence {at}", at, sources[at])
                    out[m.label].append(best[0])
                    replay_plans(m, best, [sources[at]])
            if i >= len(sources):
                break
            if progress is not None:
                for at in range(i, min(i + block, len(sources))):
                    progress(at, len(sources))
            if n and deadline is not None and time.perf_counter() > deadline and i + block < len(sources):
                sources = sources[: i + block]  # (the next round decodes only the replays of this one)
        batched = [(m, systems.build_batched(m)) for m in methods if m.batch_size > 1]
        order = sorted(range(len(sources)), key=lambda i: -sources[i].numel())  # (stable: ties in input order)
        if warmup:
            for m, decode in batched:
                # the first (longest) batch of its size: what a batch that large first allocates is then charged to
                # no method. Warmed on a few sentences, the method that decoded a batch first paid it: PyTorch GAD at
                # B = 32 on a CPU, 24 ms more in the first batch's encoder and 15 ms in its passes, 7 % of the run
                first = order[: m.batch_size]
                _for_warmup(systems, m, decode, batched=True)([sources[i] for i in first], first)
        for size in sorted({m.batch_size for m, _ in batched}):
            group = [(m, decode) for m, decode in batched if m.batch_size == size]
            for m, _ in group:
                out[m.label] = [None] * len(sources)
            cuts = [order[start: start + size] for start in range(0, len(order), size)]
            for b in range(len(cuts) + 1):
                best: Dict[str, List[Record]] = {}
                rounds = {m.label: _Repeats(decode, repeats) for m, decode in group}
                for r in range(repeats):  # each round every method once, in its own order; the fastest kept
                    for j in random.Random(b if r == 0 else f"{b}-{r}").sample(range(len(group)), len(group)):
                        m, decode = group[j]
                        at = b - 1 if m.label in replay_of else b
                        if at < 0 or at >= len(cuts):
                            continue
                        best[m.label] = rounds[m.label].run(m.label, f"batch {at}", [sources[i] for i in cuts[at]],
                                                            cuts[at])
                for m, _ in group:
                    if m.label in best:
                        for rec in best[m.label]:
                            out[m.label][rec.id] = rec
                        replay_plans(m, best[m.label], [sources[rec.id] for rec in best[m.label]])
    return out
