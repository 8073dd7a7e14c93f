"""Decoding systems of the GAD track and the interleaved batch-1 runner.

System names (also used in file names and table rows):

==================================  ============================================================================
``at_b<N>``                          fairseq ``SequenceGenerator`` beam N on the AT verifier (``at_b5`` = the
                                     paper's speed baseline, ``at_b1`` = fairseq greedy)
``greedy``                           the engine's greedy decoding (draft -> verify -> accept with no drafter):
                                     the lossless reference every ``identical_to_greedy`` count compares with
``nat_k<K>``                         the NAT drafter alone, block after block, every drafted token kept
``gad_k<K>``                         GAD: NAT drafter + AT verifier, exact top-1 acceptance (== greedy)
``gadpp_k<K>_b<BETA>_t<TAU>``        GAD++: top-BETA within log-likelihood gap TAU (Eq. 8-9), e.g.
                                     ``gadpp_k10_b3_t1``, ``gadpp_k10_b5_t3``, ``gadpp_k25_b5_t1.5``
==================================  ============================================================================

:func:`run_interleaved` decodes sentence after sentence and, for each sentence, runs every system back to back
(rotating their order), so that the load of a shared machine hits all systems alike and the per-sentence speed
ratios (Figure 4) compare like with like. Everything runs in one process on the same loaded weights.
"""
from __future__ import annotations

import math
import re
import time
from dataclasses import asdict, dataclass, field
from typing import TYPE_CHECKING, Any, Callable, Dict, Iterable, List, Optional, Sequence

if TYPE_CHECKING:  # pragma: no cover
    import torch

__all__ = ["SystemSpec", "parse_system", "system_name", "Record", "SystemRunner", "run_interleaved",
           "paper_key", "check_gad_params"]

_PATTERNS = [
    (re.compile(r"at_b(\d+)$"), "fairseq"),
    (re.compile(r"greedy$"), "greedy"),
    (re.compile(r"nat_k(\d+)$"), "nat"),
    (re.compile(r"gad_k(\d+)$"), "gad"),
    (re.compile(r"gadpp_k(\d+)_b(\d+)_t(\d+(?:\.\d+)?)$"), "gadpp"),
]


def _fmt_tau(tau: float) -> str:
    return f"{float(tau):g}"


def check_gad_params(k: Optional[int] = None, beta: Optional[int] = None, tau: Optional[float] = None) -> None:
    """Clear errors for bad GAD/GAD++ settings: ``k >= 1``, ``beta >= 1`` (integer), ``tau >= 0`` (finite)."""
    if k is not None and (isinstance(k, bool) or not isinstance(k, int) or k < 1):
        raise ValueError(f"block size k must be an integer >= 1, got {k!r}")
    if beta is not None and (isinstance(beta, bool) or not isinstance(beta, int) or beta < 1):
        raise ValueError(f"GAD++ top-beta must be an integer >= 1, got {beta!r}")
    if tau is not None:
        if isinstance(tau, bool) or not isinstance(tau, (int, float)) or math.isnan(tau) or tau < 0 \
                or math.isinf(tau):
            raise ValueError(f"GAD++ tolerance tau must be a finite number >= 0, got {tau!r}")


def system_name(kind: str, *, k: Optional[int] = None, beta: Optional[int] = None, tau: Optional[float] = None,
                beam: Optional[int] = None) -> str:
    """Inverse of :func:`parse_system`."""
    if kind == "fairseq":
        return f"at_b{beam}"
    if kind == "greedy":
        return "greedy"
    check_gad_params(k, beta, tau)
    if kind == "nat":
        return f"nat_k{k}"
    if kind == "gad":
        return f"gad_k{k}"
    if kind == "gadpp":
        return f"gadpp_k{k}_b{beta}_t{_fmt_tau(tau)}"
    raise ValueError(f"unknown system kind {kind!r}")


@dataclass(frozen=True)
class SystemSpec:
    name: str
    kind: str                  # fairseq | greedy | nat | gad | gadpp
    beam: int = 1
    k: Optional[int] = None
    beta: int = 1
    tau: float = 0.0

    @property
    def label(self) -> str:
        if self.kind == "fairseq":
            return f"AT verifier (b={self.beam})" + (", fairseq" if self.beam == 1 else "")
        if self.kind == "greedy":
            return "AT verifier (b=1, engine greedy)"
        if self.kind == "nat":
            return f"NAT drafter (k={self.k})"
        if self.kind == "gad":
            return f"GAD (k={self.k})"
        return f"GAD++ (k={self.k}, top-{self.beta}, tau={self.tau:.1f})"

    @property
    def uses_drafter(self) -> bool:
        return self.kind in ("nat", "gad", "gadpp")


def parse_system(name: str) -> SystemSpec:
    """``at_b5`` / ``greedy`` / ``nat_k10`` / ``gad_k10`` / ``gadpp_k10_b3_t1`` -> :class:`SystemSpec`."""
    for pat, kind in _PATTERNS:
        m = pat.match(name or "")
        if not m:
            continue
        if kind == "fairseq":
            beam = int(m.group(1))
            if beam < 1:
                raise ValueError(f"{name}: beam must be >= 1")
            return SystemSpec(name, kind, beam=beam)
        if kind == "greedy":
            return SystemSpec(name, kind)
        k = int(m.group(1))
        check_gad_params(k=k)
        if kind == "gadpp":
            beta, tau = int(m.group(2)), float(m.group(3))
            check_gad_params(beta=beta, tau=tau)
            return SystemSpec(name, kind, k=k, beta=beta, tau=tau)
        return SystemSpec(name, kind, k=k)
    raise ValueError(f"unknown system {name!r}; expected at_b<N>, greedy, nat_k<K>, gad_k<K> or "
                     "gadpp_k<K>_b<BETA>_t<TAU>")


def paper_key(spec: SystemSpec) -> Optional[str]:
    """Key of :data:`fastdec.report.paper.GAD_TABLE1` this system corresponds to (None if no paper row)."""
    if spec.kind == "fairseq":
        return {5: "verifier_b5", 1: "verifier_b1"}.get(spec.beam)
    if spec.kind == "greedy":
        return "verifier_b1"
    if spec.kind == "nat":
        return "nat_drafter"
    if spec.kind == "gad":
        return "gad"
    if (spec.beta, spec.tau) == (3, 1.0):
        return "gad_pp_hq"
    if (spec.beta, spec.tau) == (5, 3.0):
        return "gad_pp_he"
    return None


@dataclass
class Record:
    """One sentence decoded by one system (times in seconds)."""

    system: str
    id: int
    tokens: List[int]
    time: float
    iterations: int
    src_len: int = 0
    drafted: List[int] = field(default_factory=list)
    accepted: List[int] = field(default_factory=list)
    time_encoder: float = 0.0
    time_drafter: float = 0.0
    time_verifier: float = 0.0
    time_other: float = 0.0
    nat_encoder: float = 0.0
    nat_decoder: float = 0.0
    peak_mem_mb: float = 0.0

    def to_dict(self) -> Dict[str, Any]:
        return asdict(self)


class SystemRunner:
    """Decodes one sentence with any system, on one loaded verifier and lazily loaded drafters.

    ``drafter_for_k(k)`` returns a :class:`~fastdec.engine.nat_drafter.NATDrafter` proposing ``k`` tokens (the
    drafter trained for that block size, or the main drafter decoded with block size ``k``).
    """

    def __init__(self, loaded, verifier, drafter_for_k: Optional[Callable[[int], Any]] = None, *,
                 max_len_a: float = 1.2, max_len_b: int = 10, sync_timing: bool = True):
        self.loaded, self.verifier = loaded, verifier
        self.drafter_for_k = drafter_for_k
        self.max_len_a, self.max_len_b = max_len_a, max_len_b
        self.sync_timing = sync_timing
        self._generators: Dict[int, Any] = {}
        self._drafters: Dict[int, Any] = {}
        self._rules: Dict[str, Any] = {}

    def drafter(self, k: int):
        if self.drafter_for_k is None:
            raise ValueError("this run has no NAT drafter (pass one to decode nat/gad/gadpp systems)")
        if k not in self._drafters:
            self._drafters[k] = self.drafter_for_k(k)
        return self._drafters[k]

    def rule(self, spec: SystemSpec):
        from fastdec.engine.acceptance import accept_top1, accept_top_beta

        if spec.name not in self._rules:
            self._rules[spec.name] = accept_top1 if spec.kind != "gadpp" else accept_top_beta(spec.beta, spec.tau)
        return self._rules[spec.name]

    def prepare(self, specs: Iterable[SystemSpec]) -> None:
        """Build generators / drafters / rules up front (so loading is never timed)."""
        for s in specs:
            if s.kind == "fairseq":
                self._generator(s.beam)
            elif s.uses_drafter:
                self.drafter(s.k)
                self.rule(s)

    def _generator(self, beam: int):
        from fastdec.engine.fairseq_baseline import FairseqGenerator

        if beam not in self._generators:
            self._generators[beam] = FairseqGenerator(self.loaded.model, self.loaded.tgt_dict, beam=beam,
                                                      max_len_a=self.max_len_a, max_len_b=self.max_len_b,
                                                      device=self.verifier.device)
        return self._generators[beam]

    def max_len(self, src) -> int:
        from fastdec.engine.loop import compute_max_len

        return compute_max_len(int(src.numel()), self.max_len_a, self.max_len_b, self.verifier.max_positions)

    def run(self, spec: SystemSpec, src, sent_id: int = 0) -> Record:
        from fastdec.engine.loop import draft_verify_accept
        from fastdec.engine.nat_drafter import drafter_alone_decode
        from fastdec.engine.stats import peak_memory_mb

        n_src = int(src.numel())
        if spec.kind == "fairseq":
            r = self._generator(spec.beam).generate([src], batch_size=1)[0]
            return Record(spec.name, sent_id, r.tokens, r.time, len(r.tokens), n_src, peak_mem_mb=r.peak_mem_mb)
        if spec.kind == "nat":
            d = self.drafter(spec.k)
            max_len = self.max_len(src)
            before = dict(d.totals)
            t0 = _now(self.verifier.device, self.sync_timing)
            tokens, passes = drafter_alone_decode(d, src, max_len)
            dt = _now(self.verifier.device, self.sync_timing) - t0
            return Record(spec.name, sent_id, tokens, dt, passes, n_src, time_drafter=dt,
                          nat_encoder=d.totals["nat_encoder"] - before["nat_encoder"],
                          nat_decoder=dt - (d.totals["nat_encoder"] - before["nat_encoder"]),
                          peak_mem_mb=peak_memory_mb(self.verifier.device))
        drafter = None
        rule = self.rule(spec)
        if spec.uses_drafter:
            drafter = self.drafter(spec.k)
            before = dict(drafter.totals)
        res = draft_verify_accept(self.verifier, src, drafter, rule, max_len_a=self.max_len_a,
                                  max_len_b=self.max_len_b, sent_id=sent_id, method=spec.name,
                                  sync_timing=self.sync_timing)
        st = res.stats
        rec = Record(spec.name, sent_id, res.tokens, st.time, st.iterations, n_src, list(st.drafted),
                     list(st.accepted), st.time_encoder, st.time_drafter, st.time_verifier, st.time_other,
                     peak_mem_mb=st.peak_mem_mb)
        if drafter is not None:
            rec.nat_encoder = drafter.totals["nat_encoder"] - before["nat_encoder"]
            rec.nat_decoder = drafter.totals["nat_decoder"] - before["nat_decoder"]
        return rec


def _now(device, sync: bool) -> float:
    if sync and device.type == "cuda":
        import torch

        torch.cuda.synchronize(device)
    return time.perf_counter()


def run_interleaved(runner: SystemRunner, specs: Sequence[SystemSpec], sources: Sequence["torch.Tensor"], *,
                    warmup: int = 0, repeats: int = 1,
                    progress: Optional[Callable[[int, int], None]] = None) -> Dict[str, List[Record]]:
    """Decode every source with every system, sentence by sentence (batch 1, rotating the system order).

    ``warmup`` sentences are first decoded by every system untimed. With ``repeats > 1`` every (system,
    sentence) is decoded that many times and the fastest time is kept (outputs are deterministic; a differing
    output across repeats is an error). Returns ``{system name: [Record per sentence]}``.
    """
    import torch

    if repeats < 1 or warmup < 0:
        raise ValueError("repeats must be >= 1 and warmup >= 0")
    names = [s.name for s in specs]
    if len(set(names)) != len(names):
        raise ValueError(f"duplicate systems in {names}")
    runner.prepare(specs)
    for src in sources[:warmup]:
        for s in specs:
            runner.run(s, src)
    out: Dict[str, List[Record]] = {s.name: [] for s in specs}
    n = len(specs)
    with torch.inference_mode():
        for i, src in enumerate(sources):
            order = [specs[(i + j) % n] for j in range(n)]
            for s in order:
                best = None
                for _ in range(repeats):
                    rec = runner.run(s, src, sent_id=i)
                    if best is not None and rec.tokens != best.tokens:
                        raise RuntimeError(f"{s.name}: sentence {i} decoded differently across repeats")
                    if best is None or rec.time < best.time:
                        best = rec
                out[s.name].append(best)
            if progress is not None:
                progress(i, len(sources))
    return out
