"""Method specs shared by ``scripts/engine_decode.py`` and ``scripts/benchmark_decoding.py``.

A *method* is either an engine method (the draft/verify/accept loop with a drafter and an
acceptance rule, batch size 1) or a fairseq baseline (``SequenceGenerator``):

* ``greedy``          engine, no drafter (lossless reference)
* ``iad``             engine, :class:`~fastdec.engine.drafters.InputCopyDrafter`
* ``<drafter name>``  engine, any drafter registered with :func:`~fastdec.engine.drafters.register_drafter`
  (``gad``, ``blockwise`` ... once their modules are imported; see ``drafter_modules``)
* ``fairseq-beam``    fairseq beam search (``beam``, default 5), batch 1 or batched
* ``fairseq-greedy``  fairseq beam 1

The acceptance rule of engine methods is ``top1`` (exact) unless ``acceptance`` says otherwise
(``top-beta`` = GAD++ with ``beta``/``tau``; ``top-k`` = Blockwise approximate) and ``min_block_size``.
"""
from __future__ import annotations

import importlib
import json
from dataclasses import dataclass, field
from typing import Any, Callable, Dict, List, Optional, Sequence

import torch

from .acceptance import make_acceptance
from .drafters import available_drafters, make_drafter
from .fairseq_baseline import FairseqGenerator
from .loop import draft_verify_accept

__all__ = ["MethodSpec", "parse_method", "parse_method_string", "parse_key_values", "run_method", "run_interleaved", "summarize", "SentenceResult", "FAIRSEQ_METHODS", "engine_methods"]

FAIRSEQ_METHODS = ("fairseq-beam", "fairseq-greedy")


def engine_methods() -> List[str]:
    return sorted(set(available_drafters()) - {"none", "random"})


@dataclass
class MethodSpec:
    method: str                      # as given (greedy, iad, fairseq-beam, ...)
    kind: str                        # "engine" | "fairseq"
    label: str                       # display name, e.g. "fairseq-beam5-bs32", "iad", "gad-top3-tau1"
    beam: int = 1
    batch_size: int = 1
    drafter: Optional[str] = None
    drafter_args: Dict[str, Any] = field(default_factory=dict)
    accept: Any = None
    acceptance: str = "top1"
    max_draft_len: Optional[int] = None
    params: Dict[str, Any] = field(default_factory=dict)


@dataclass
class SentenceResult:
    id: int
    tokens: List[int]
    stats: Dict[str, Any]


def parse_method(method: str, *, beam: int = 5, batch_size: int = 1, acceptance: Optional[str] = None,
                 beta: Optional[int] = None, tau: Optional[float] = None, topk: Optional[int] = None,
                 min_block_size: int = 1, drafter_args: Optional[Dict[str, Any]] = None,
                 max_draft_len: Optional[int] = None) -> MethodSpec:
    """Validate a method name and its options (clear ``ValueError`` on bad combinations)."""
    m = (method or "").lower()
    if isinstance(batch_size, bool) or not isinstance(batch_size, int) or batch_size < 1:
        raise ValueError(f"batch size must be an integer >= 1, got {batch_size!r}")
    if m in FAIRSEQ_METHODS:
        b = 1 if m == "fairseq-greedy" else beam
        if isinstance(b, bool) or not isinstance(b, int) or b < 1:
            raise ValueError(f"--beam must be an integer >= 1, got {b!r}")
        if any(v is not None for v in (acceptance, beta, tau, topk, max_draft_len)) or min_block_size != 1:
            raise ValueError(f"{m} does not take engine options (--acceptance/--beta/--tau/--topk/"
                             "--min-block-size/--max-draft-len)")
        label = ("fairseq-greedy" if b == 1 else f"fairseq-beam{b}") + (f"-bs{batch_size}" if batch_size > 1 else "")
        return MethodSpec(method=m, kind="fairseq", label=label, beam=b, batch_size=batch_size,
                          params={"beam": b, "batch_size": batch_size})
    known = engine_methods()
    if m not in known:
        raise ValueError(f"unknown method {method!r}; choose from {', '.join(list(FAIRSEQ_METHODS) + known)}")
    if batch_size != 1:
        raise ValueError(f"engine method {m!r} decodes one sentence at a time; batch size must be 1")
    if max_draft_len is not None and (isinstance(max_draft_len, bool) or not isinstance(max_draft_len, int)
                                      or max_draft_len < 1):
        raise ValueError(f"max draft length must be an integer >= 1, got {max_draft_len!r}")
    if acceptance is None:
        acceptance = "top-beta" if (beta is not None or tau is not None) else ("top-k" if topk is not None else "top1")
    acc = acceptance.lower()
    if acc in ("top-beta", "topbeta", "gad++"):
        rule = make_acceptance("top-beta", beta=3 if beta is None else beta, tau=1.0 if tau is None else tau,
                               min_block_size=min_block_size)
    elif acc in ("top-k", "topk"):
        if beta is not None or tau is not None:
            raise ValueError("--beta/--tau only apply to --acceptance top-beta")
        rule = make_acceptance("top-k", k=2 if topk is None else topk, min_block_size=min_block_size)
    elif acc in ("top1", "exact"):
        if beta is not None or tau is not None or topk is not None:
            raise ValueError("--beta/--tau/--topk need --acceptance top-beta or top-k")
        rule = make_acceptance("top1", min_block_size=min_block_size)
    else:
        raise ValueError(f"unknown acceptance rule {acceptance!r}; choose top1, top-beta or top-k")
    drafter = None if m == "greedy" else m
    if drafter is None and (acc not in ("top1", "exact") or min_block_size != 1):
        raise ValueError("greedy has no drafter: acceptance options do not apply")
    label = m if getattr(rule, "name", "top1") == "top1" else f"{m}-{rule.name}"
    if max_draft_len is not None:
        label += f"-draft{max_draft_len}"
    return MethodSpec(method=m, kind="engine", label=label, drafter=drafter, drafter_args=dict(drafter_args or {}),
                      accept=rule, acceptance=getattr(rule, "name", acc), max_draft_len=max_draft_len,
                      params={"acceptance": getattr(rule, "name", acc), "beta": beta, "tau": tau, "topk": topk,
                              "min_block_size": min_block_size, "max_draft_len": max_draft_len,
                              "drafter_args": dict(drafter_args) if drafter_args else None})


def parse_key_values(items: Optional[Sequence[str]], option: str = "--drafter-arg") -> Dict[str, Any]:
    """``["k=v", ...]`` -> ``{"k": v}``; values are read as JSON when they parse (numbers, true, lists)."""
    out: Dict[str, Any] = {}
    for item in items or []:
        key, sep, value = item.partition("=")
        key = key.strip().replace("-", "_")
        if not sep or not key:
            raise ValueError(f"{option} expects KEY=VALUE, got {item!r}")
        try:
            out[key] = json.loads(value)
        except json.JSONDecodeError:
            out[key] = value
    return out


# options of a method string that configure the acceptance rule / loop; any other key goes to the drafter
_METHOD_OPTIONS = ("acceptance", "beta", "tau", "topk", "min_block_size", "max_draft_len", "label")


def parse_method_string(text: str, *, beam: int = 5, batch_size: int = 1,
                        drafter_args: Optional[Dict[str, Any]] = None, **defaults) -> MethodSpec:
    """A method with its own options: ``NAME[:KEY=VALUE[:KEY=VALUE...]]``.

    ``gad:beta=5:tau=3`` is GAD++ (5, 3.0); ``blockwise:topk=2:block_size=4`` passes ``block_size`` to the
    drafter; ``label=NAME`` renames the row. Keys ``acceptance, beta, tau, topk, min_block_size,
    max_draft_len`` set the acceptance rule and loop (overriding ``defaults``); every other key is a
    drafter argument (overriding ``drafter_args``). Used by ``benchmark_decoding.py --methods``.
    """
    name, *opts = [p.strip() for p in (text or "").split(":")]
    kv = parse_key_values(opts, option=f"method {text!r}")
    label = kv.pop("label", None)
    loop_opts = {k: kv.pop(k) for k in list(kv) if k in _METHOD_OPTIONS}
    if name.lower() in FAIRSEQ_METHODS or name.lower() == "greedy":
        if kv:
            raise ValueError(f"method {text!r}: {name} takes no drafter arguments ({', '.join(kv)})")
        # the command line's engine defaults (--acceptance, --drafter-arg ...) are for drafting methods only
        spec = parse_method(name, beam=beam, batch_size=batch_size, **loop_opts)
    else:
        kw = {**{k: v for k, v in defaults.items() if v is not None}, **loop_opts}
        spec = parse_method(name, beam=beam, batch_size=batch_size, drafter_args={**(drafter_args or {}), **kv},
                            **kw)
    if label:
        spec.label = str(label)
    return spec


def import_drafter_modules(modules: Sequence[str]) -> None:
    """Import modules that register extra drafters (e.g. ``fastdec.engine.nat_drafter``)."""
    for mod in modules:
        importlib.import_module(mod)


def build_drafter(spec: MethodSpec, context: Dict[str, Any]):
    if spec.drafter is None:
        return None
    return make_drafter(spec.drafter, context=context, **spec.drafter_args)


def run_method(spec: MethodSpec, *, loaded, verifier, sources: Sequence[torch.Tensor], max_len_a: float,
               max_len_b: int, warmup: int = 0, sync_timing: bool = True,
               progress: Optional[Callable[[int], None]] = None) -> List[SentenceResult]:
    """Decode every source with ``spec``; ``warmup`` sentences are decoded first and not reported."""
    if spec.kind == "fairseq":
        gen = FairseqGenerator(loaded.model, loaded.tgt_dict, beam=spec.beam, max_len_a=max_len_a,
                               max_len_b=max_len_b, device=loaded.device)
        if warmup:
            gen.generate(list(sources[:warmup]), batch_size=spec.batch_size)
        res = gen.generate(list(sources), batch_size=spec.batch_size)
        out = []
        for r in res:
            d = r.to_dict()
            d.update(method=spec.label, iterations=len(r.tokens), src_len=int(sources[r.id].numel()))
            out.append(SentenceResult(id=r.id, tokens=r.tokens, stats=d))
        return out
    context = {"loaded": loaded, "verifier": verifier, "device": verifier.device, "dtype": verifier.dtype}
    drafter = build_drafter(spec, context)
    kw = dict(max_len_a=max_len_a, max_len_b=max_len_b, sync_timing=sync_timing, method=spec.label,
              max_draft_len=spec.max_draft_len)
    for s in sources[:warmup]:
        draft_verify_accept(verifier, s, drafter, spec.accept, **kw)
    out = []
    for i, s in enumerate(sources):
        r = draft_verify_accept(verifier, s, drafter, spec.accept, sent_id=i, **kw)
        out.append(SentenceResult(id=i, tokens=r.tokens, stats=r.stats.to_dict()))
        if progress is not None:
            progress(i)
    return out


def run_interleaved(specs: Sequence[MethodSpec], *, loaded, verifier, sources: Sequence[torch.Tensor],
                    max_len_a: float, max_len_b: int, warmup: int = 0,
                    sync_timing: bool = True) -> Dict[str, List[SentenceResult]]:
    """Batch-1 methods round-robin per sentence (sentence i by every method, then i+1, ...).

    On a shared or thermally throttled machine this spreads load fluctuations evenly over the
    methods, so their relative speeds are much more stable than with one method after the other.
    Returns ``{spec.label: results in input order}``. Every spec must have batch size 1.
    """
    runners = []
    for spec in specs:
        if spec.batch_size != 1:
            raise ValueError(f"interleaved runs need batch size 1, got {spec.label}")
        if spec.kind == "fairseq":
            gen = FairseqGenerator(loaded.model, loaded.tgt_dict, beam=spec.beam, max_len_a=max_len_a,
                                   max_len_b=max_len_b, device=loaded.device)

            def one(i, s, spec=spec, gen=gen):
                r = gen.generate([s])[0]
                d = r.to_dict()
                d.update(id=i, method=spec.label, iterations=len(r.tokens), src_len=int(s.numel()))
                return SentenceResult(id=i, tokens=r.tokens, stats=d)
        else:
            context = {"loaded": loaded, "verifier": verifier, "device": verifier.device, "dtype": verifier.dtype}
            drafter = build_drafter(spec, context)
            kw = dict(max_len_a=max_len_a, max_len_b=max_len_b, sync_timing=sync_timing, method=spec.label,
                      max_draft_len=spec.max_draft_len)

            def one(i, s, spec=spec, drafter=drafter, kw=kw):
                r = draft_verify_accept(verifier, s, drafter, spec.accept, sent_id=i, **kw)
                return SentenceResult(id=i, tokens=r.tokens, stats=r.stats.to_dict())
        runners.append((spec, one))
    for i, s in enumerate(sources[:warmup]):
        for _, one in runners:
            one(i, s)
    out: Dict[str, List[SentenceResult]] = {spec.label: [] for spec in specs}
    for i, s in enumerate(sources):
        for spec, one in runners:
            out[spec.label].append(one(i, s))
    return out


def summarize(results: Sequence[SentenceResult], **extra) -> Dict[str, Any]:
    """Aggregate per-sentence stat dicts (engine or fairseq) into one summary dict."""
    n = len(results)
    total = sum(r.stats["time"] for r in results)
    toks = sum(len(r.tokens) for r in results)
    iters = sum(r.stats.get("iterations", 0) for r in results)
    acc = [a for r in results for a in r.stats.get("accepted", [])]
    row = {
        "n_sentences": n, "total_time": total,
        "sent_per_s": n / total if total > 0 else None,
        "tokens_per_s": toks / total if total > 0 else None,
        "mean_time_ms": 1000 * total / n if n else None,
        "tokens": toks, "iterations": iters,
        "mean_iterations": iters / n if n else None,
        "tokens_per_iteration": toks / iters if iters else None,
        "mean_accepted_per_iteration": sum(acc) / len(acc) if acc else None,
        "peak_mem_mb": max((r.stats.get("peak_mem_mb", 0.0) for r in results), default=0.0),
    }
    for m in ("encoder", "drafter", "verifier", "other"):
        key = "time_" + m
        if results and key in results[0].stats:
            row[key] = sum(r.stats[key] for r in results)
    row.update(extra)
    return row
