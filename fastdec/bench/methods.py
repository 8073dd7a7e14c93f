"""One method spec and one grammar for every decoding method of every track.

A method is written ``NAME[:KEY=VALUE[:KEY=VALUE ...]]``:

==============  =====================================================  ==============================================
NAME            what decodes                                           keys (defaults)
==============  =====================================================  ==============================================
``fairseq``     fairseq's ``SequenceGenerator`` (the papers' baseline)  ``beam`` (5), ``batch`` (1)
``ct2``         CTranslate2 on the converted weights (a peer engine)     ``beam`` (1), ``compute`` (float32 | int8),
                                                                       ``batch`` (1), ``model`` (converted folder)
``greedy``      the engine with no drafter (the lossless reference)     --
``iad``         engine + input-copy drafter (IAD, Ge et al.)            ``max_ngram`` (3), ``min_ngram`` (1)
``gad``         engine + NAT block drafter (GAD; GAD++ with beta > 1)   ``k``, ``checkpoint``
``nat``         the NAT block drafter alone, no verifier                ``k``, ``checkpoint``
``blockwise``   engine + Blockwise proposal heads (Stern et al.)        ``k``, ``precision`` (float | int8)
==============  =====================================================  ==============================================

Keys every engine method takes: ``batch`` (batch size B, default 1: B sentences drafted and verified together,
per-row rollback, :mod:`fastdec.engine.batched`), ``backend`` (``torch``, the PyTorch reference, default; ``fast``,
the verifier's passes in C, :mod:`fastdec.engine.fast_verifier`, at any batch size -- a batch's rows in one C pass,
:mod:`fastdec.engine.fast_batched`; ``fast-int8``, the same with int8 linear layers; not for ``nat``, which has no
verifier), ``beta``/``tau`` (GAD++ top-beta within a log-likelihood gap tau, Eq. 8-9), ``topk`` (Blockwise
approximate top-k), ``eps`` (Blockwise distance-based selection for ordinal tokens such as pixel intensities:
a drafted token within ``eps`` of the verifier's token is accepted, Sec. 5.2), ``min_block`` (Blockwise minimum block
size), ``max_draft_len`` (cap on drafted tokens per
iteration), ``policy`` (``fixed``, the papers' methods: verify every drafted token, default; ``cost``: each iteration
verifies only the draft tokens expected to pay for their place in the pass, 0 skipping the drafter,
:mod:`fastdec.engine.policy`; lossless all the same; ``replay``: the draft lengths the run's ``cost`` twin of the
method chose on the same sentence or batch, given back without the policy's work, :mod:`fastdec.engine.replay`:
against the ``cost`` row, what deciding costs in all); ``label`` renames the row. Any other key goes to the drafter.

Examples: ``fairseq:beam=5``, ``fairseq:beam=1`` (fairseq greedy), ``ct2:beam=5:compute=int8``,
``iad:max_draft_len=16``, ``iad:backend=fast``, ``iad:backend=fast:policy=cost``, ``gad:k=10``,
``gad:k=10:beta=3:tau=1``, ``nat:k=10``, ``blockwise:k=8:topk=2:min_block=2:precision=int8``,
``blockwise:k=6:eps=2``, ``iad:batch=8``,
``iad:backend=fast:batch=8``.

Every method has a canonical label (``fairseq-beam5``, ``fairseq-greedy``, ``ct2-beam5-int8``, ``iad``,
``iad-draft16``, ``iad-fast``, ``iad-fast-cost``, ``gad-k10``, ``gad-k10-top3-tau1``, ``nat-k10``,
``blockwise-k8-top2-min2-int8``, ``blockwise-k6-eps2``, ``iad-bs8``, ``iad-fast-bs8``): the
row name in every results file and table, and the file name of its hypotheses.
"""
from __future__ import annotations

import json
import math
from dataclasses import dataclass, field, replace
from typing import Any, Dict, List, Optional, Sequence

__all__ = ["Method", "parse_method", "parse_methods", "parse_key_values", "ENGINE_DRAFTERS"]

# engine methods and the drafter each uses (None: greedy); ``nat`` decodes with the GAD drafter alone
ENGINE_DRAFTERS = {"greedy": None, "iad": "iad", "gad": "gad", "blockwise": "blockwise"}
_NAMES = ("fairseq", "ct2", "nat", *ENGINE_DRAFTERS)
CT2_COMPUTE = ("float32", "int8")
_RULE_KEYS = ("beta", "tau", "topk", "eps", "min_block", "max_draft_len")
BACKENDS = ("torch", "fast", "fast-int8")  # the verifier implementations (fastdec.engine.fast_verifier.BACKENDS)
POLICIES = ("fixed", "cost", "replay")  # draft-length policies (fastdec.engine.policy.POLICIES, and a replay of cost)


def _int(key: str, value, minimum: int) -> int:
    if isinstance(value, float) and value.is_integer():
        value = int(value)
    if isinstance(value, bool) or not isinstance(value, int) or value < minimum:
        raise ValueError(f"method key {key} must be an integer >= {minimum}, got {value!r}")
    return value


@dataclass(frozen=True)
class Method:
    """A parsed method; :attr:`label` names it everywhere."""

    name: str                                  # fairseq | greedy | iad | gad | nat | blockwise
    beam: int = 1                              # fairseq only
    batch_size: int = 1                        # sentences decoded together (fairseq, and every engine method)
    k: Optional[int] = None                    # block size of gad / nat / blockwise
    beta: int = 1
    tau: float = 0.0
    topk: int = 1
    eps: int = 0                               # Blockwise distance-based selection (0: exact)
    min_block: int = 1
    max_draft_len: Optional[int] = None
    precision: Optional[str] = None            # blockwise proposal heads; ct2: its compute type
    backend: str = "torch"                     # engine methods: the verifier implementation (BACKENDS)
    policy: str = "fixed"                      # draft length: fixed (the method's k) | cost (fastdec.engine.policy)
    drafter_args: Dict[str, Any] = field(default_factory=dict, hash=False, compare=False)
    custom_label: Optional[str] = field(default=None, compare=False)

    @property
    def kind(self) -> str:
        """``fairseq`` | ``peer`` (another engine: CTranslate2) | ``engine`` | ``drafter`` (a drafter alone)."""
        return {"fairseq": "fairseq", "ct2": "peer", "nat": "drafter"}.get(self.name, "engine")

    @property
    def drafter(self) -> Optional[str]:
        return "gad" if self.name == "nat" else ENGINE_DRAFTERS.get(self.name)

    @property
    def exact(self) -> bool:
        """Lossless by construction: the output must equal the engine's greedy output."""
        return self.kind == "engine" and self.beta == 1 and self.topk == 1 and self.eps == 0 and self.min_block == 1

    @property
    def label(self) -> str:
        if self.custom_label:
            return self.custom_label
        if self.name in ("fairseq", "ct2"):
            s = f"{self.name}-greedy" if self.beam == 1 else f"{self.name}-beam{self.beam}"
            s += f"-{self.precision}" if self.precision and self.precision != "float32" else ""
            return s + (f"-bs{self.batch_size}" if self.batch_size > 1 else "")
        s = self.name + (f"-k{self.k}" if self.k is not None else "")
        if self.beta > 1:
            s += f"-top{self.beta}-tau{self.tau:g}"
        if self.topk > 1:
            s += f"-top{self.topk}"
        if self.eps > 0:
            s += f"-eps{self.eps}"
        if self.min_block > 1:
            s += f"-min{self.min_block}"
        if self.precision:
            s += f"-{self.precision}"
        if self.max_draft_len is not None:
            s += f"-draft{self.max_draft_len}"
        if self.backend != "torch":
            s += f"-{self.backend}"
        if self.policy != "fixed":
            s += f"-{self.policy}"
        return s + (f"-bs{self.batch_size}" if self.batch_size > 1 else "")

    @property
    def spec(self) -> str:
        """The method written back in the grammar (parses to an equal method)."""
        keys = {"beam": self.beam if self.name in ("fairseq", "ct2") else None,
                "batch": self.batch_size if self.batch_size > 1 else None, "k": self.k,
                "beta": self.beta if self.beta > 1 else None, "tau": self.tau if self.beta > 1 else None,
                "topk": self.topk if self.topk > 1 else None, "eps": self.eps if self.eps > 0 else None,
                "min_block": self.min_block if self.min_block > 1 else None,
                "max_draft_len": self.max_draft_len, "precision": self.precision if self.name != "ct2" else None,
                "compute": self.precision if self.name == "ct2" else None,
                "backend": self.backend if self.backend != "torch" else None,
                "policy": self.policy if self.policy != "fixed" else None, **self.drafter_args,
                "label": self.custom_label}
        return ":".join([self.name] + [f"{k}={v:g}" if isinstance(v, float) else f"{k}={v}"
                                       for k, v in keys.items() if v is not None])

    def policy_twin(self, policy: str) -> tuple:
        """A hashable key of this method with the draft policy ``policy`` and without its label, its drafter's settings
        included (a method's equality leaves them out: GAD with the cheap drafter is otherwise GAD with the paper's)."""
        return replace(self, policy=policy, custom_label=None), repr(sorted(self.drafter_args.items()))

    def params(self) -> Dict[str, Any]:
        """The settings a table reads (every column of the results schema that describes the method)."""
        return {"method": self.name, "beam": self.beam if self.name in ("fairseq", "ct2") else None,
                "batch_size": self.batch_size, "k": self.k, "beta": self.beta, "tau": self.tau, "topk": self.topk,
                "eps": self.eps, "min_block": self.min_block, "max_draft_len": self.max_draft_len, "precision": self.precision,
                "backend": self.backend if self.kind == "engine" else None,
                "policy": self.policy if self.kind == "engine" else None, "exact": self.exact}


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


def parse_method(text: str, *, drafter_args: Optional[Dict[str, Any]] = None) -> Method:
    """Parse one method string (see the module docstring); ``drafter_args`` are defaults for drafting methods.

    Bad names, keys and values raise ``ValueError`` naming the method and the key.
    """
    name, *opts = [p.strip() for p in str(text or "").split(":")]
    name = name.lower()
    if name not in _NAMES:
        raise ValueError(f"unknown method {text!r}; choose from {', '.join(_NAMES)} (e.g. fairseq:beam=5, "
                         f"gad:k=10:beta=3:tau=1, blockwise:k=4:topk=2)")
    kv = parse_key_values(opts, option=f"method {text!r}")
    label = kv.pop("label", None)
    try:
        if name == "fairseq":
            extra = set(kv) - {"beam", "batch"}
            if extra:
                raise ValueError(f"fairseq takes only beam and batch, not {', '.join(sorted(extra))}")
            return Method(name, beam=_int("beam", kv.get("beam", 5), 1), batch_size=_int("batch", kv.get("batch", 1), 1),
                          custom_label=label)
        if name == "ct2":
            extra = set(kv) - {"beam", "batch", "compute", "model"}
            if extra:
                raise ValueError(f"ct2 takes only beam, batch, compute and model, not {', '.join(sorted(extra))}")
            compute = str(kv.get("compute", "float32"))
            if compute not in CT2_COMPUTE:
                raise ValueError(f"compute must be one of {', '.join(CT2_COMPUTE)}, got {compute!r}")
            args = {"model": kv["model"]} if "model" in kv else {}
            return Method(name, beam=_int("beam", kv.get("beam", 1), 1),
                          batch_size=_int("batch", kv.get("batch", 1), 1), precision=compute, drafter_args=args,
                          custom_label=label)
        rule = {key: kv.pop(key) for key in list(kv) if key in _RULE_KEYS}
        batch = _int("batch", kv.pop("batch", 1), 1)
        backend = str(kv.pop("backend", "torch"))
        policy = str(kv.pop("policy", "fixed")).lower()
        if policy not in POLICIES:
            raise ValueError(f"policy must be one of {', '.join(POLICIES)}, got {policy!r}")
        if policy != "fixed" and name in ("greedy", "nat"):
            raise ValueError(f"policy={policy} chooses how much of a draft the verifier checks: {name} verifies no "
                             "drafts")
        if backend not in BACKENDS:
            raise ValueError(f"backend must be one of {', '.join(BACKENDS)}, got {backend!r}")
        if backend != "torch" and name == "nat":
            raise ValueError(f"backend={backend} is a verifier implementation of engine methods; nat (the drafter "
                             "alone) has no verifier")
        if name == "nat" and batch > 1:
            raise ValueError("nat (the drafter alone) decodes one sentence at a time: no batch option")
        k = _int("k", kv.pop("k"), 1) if "k" in kv else None
        precision = kv.pop("precision", None)
        if precision not in (None, "float", "int8"):
            raise ValueError(f"precision must be float or int8, got {precision!r}")
        if name == "greedy" and (kv or rule or k is not None or precision):
            raise ValueError("greedy takes no drafter or acceptance options (only batch)")
        if name in ("gad", "nat", "blockwise") and k is None:
            raise ValueError(f"{name} needs a block size k (e.g. {name}:k=10)")
        if name == "nat" and rule:
            raise ValueError("nat (the drafter alone) keeps every drafted token: no acceptance options")
        beta = _int("beta", rule.get("beta", 3 if "tau" in rule else 1), 1)
        tau = float(rule.get("tau", 1.0 if beta > 1 else 0.0))
        if math.isnan(tau) or math.isinf(tau) or tau < 0:
            raise ValueError(f"tau must be a finite number >= 0, got {rule['tau']!r}")
        topk = _int("topk", rule.get("topk", 1), 1)
        eps = _int("eps", rule.get("eps", 0), 0)
        if sum((beta > 1, topk > 1, eps > 0)) > 1:
            raise ValueError("beta (GAD++), topk and eps (Blockwise) are different acceptance rules: give one")
        min_block = _int("min_block", rule.get("min_block", 1), 1)
        if k is not None and min_block > k:
            raise ValueError(f"min_block {min_block} must not exceed the block size k = {k}")
        if policy != "fixed" and min_block > 1:
            raise ValueError(f"policy={policy} shortens drafts, min_block needs blocks of at least min_block tokens: "
                             "give one of them")
        cap = rule.get("max_draft_len")
        args = {**(drafter_args or {}), **kv} if name != "greedy" else {}
        return Method(name, batch_size=batch, k=k, beta=beta, tau=tau if beta > 1 else 0.0, topk=topk, eps=eps, min_block=min_block,
                      max_draft_len=None if cap is None else _int("max_draft_len", cap, 1), precision=precision,
                      backend=backend, policy=policy, drafter_args=args, custom_label=label)
    except (ValueError, TypeError) as exc:
        raise ValueError(f"method {text!r}: {exc}") from None


def parse_methods(text: str | Sequence[str], **kwargs) -> List[Method]:
    """A comma-separated list (or a list) of methods; labels must be unique."""
    items = [t.strip() for t in (text.split(",") if isinstance(text, str) else text) if t and t.strip()]
    if not items:
        raise ValueError("no methods given")
    methods = [parse_method(t, **kwargs) for t in items]
    labels = [m.label for m in methods]
    dup = sorted({x for x in labels if labels.count(x) > 1})
    if dup:
        raise ValueError(f"several methods have the label {', '.join(dup)}; name them apart with ':label=NAME'")
    return methods
