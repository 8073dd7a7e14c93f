"""The results schema every table reads: one record per (method, sentence), one summary row per method.

A benchmark run directory (written by :func:`write_run`, read by :func:`read_run`) holds:

* ``summary.csv``      one row per method, the columns of :data:`SUMMARY_COLUMNS` (documented in docs/RESULTS.md);
* ``sentences.jsonl``  one :class:`Record` per method and sentence;
* ``hyps/<label>.txt`` the BPE'd hypotheses of each method, in input order;
* ``meta.json``        how the run was made (checkpoints, input, device, dtype, threads, baselines, wall time).

Definitions (per method, over its sentences): ``speedup_vs_beam`` = total time of the fairseq beam baseline /
this method's total time; ``speedup_vs_greedy`` = the same against the engine's greedy decoding;
``identical_to_greedy`` = outputs token-identical to the engine's greedy output (the PyTorch reference);
``identical_to_backend_greedy`` = an engine row's outputs token-identical to the greedy output of its own verifier
backend (``greedy-fast`` for a ``-fast`` row; the lossless property of an exact row, whatever the backend; ``_pct``: as
a percentage); ``tokens_per_iteration`` = output
tokens (EOS included) per decoder pass (the GAD paper's "Tok."); ``mean_accepted`` = accepted *draft* tokens per
iteration (the verifier's own token not counted); ``mean_block`` = tokens added per verification step after the
first pass of each sentence (the Blockwise paper's mean accepted block size k̂, 1.0 for greedy decoding);
``ms_per_batch`` = total time / number of batches (``ceil(n / batch_size)``: the latency of one batch);
``speedup_vs_greedy_same_batch`` = total time of the engine's greedy decoding at the same batch size on the same
verifier backend (the PyTorch one's where the run has none on that backend) / this method's (the batched curves of Ge
et al. Figure 6 / Xia et al. Figure 7).
"""
from __future__ import annotations

import json
import math
import os
from dataclasses import asdict, dataclass, field
from typing import Callable, Dict, List, Optional, Sequence

import pandas as pd

from fastdec.text import postprocess, read_lines, write_lines

from .methods import Method, parse_method

__all__ = ["Record", "Run", "summarize", "write_run", "read_run", "speed_baseline", "backend_identical_pct",
           "lossless_pct", "SUMMARY_COLUMNS"]

SUMMARY_COLUMNS = [
    "label", "method", "beam", "batch_size", "k", "beta", "tau", "topk", "eps", "min_block", "max_draft_len",
    "precision", "backend", "backend_ran", "policy", "exact", "n_sentences", "total_time_s", "ms_per_sentence", "sent_per_s", "ms_per_batch", "speedup_vs_beam",
    "speedup_vs_greedy", "speedup_vs_greedy_same_batch",
    "identical_to_greedy", "identical_to_greedy_pct", "identical_to_backend_greedy",
    "identical_to_backend_greedy_pct", "mean_iterations", "tokens_per_iteration", "mean_accepted",
    "mean_drafted", "mean_block", "mean_out_len", "time_encoder_s", "time_drafter_s", "time_verifier_s",
    "time_other_s", "time_drafter_encoder_s", "time_drafter_decoder_s", "time_policy_s", "peak_mem_mb", "bleu", "bleu_signature",
]
_MODULES = ("encoder", "drafter", "verifier", "other")
_SUBMODULES = ("drafter_encoder", "drafter_decoder", "policy")


@dataclass
class Record:
    """One sentence decoded by one method (times in seconds)."""

    label: str
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
    time_modules: Dict[str, float] = field(default_factory=dict)
    peak_mem_mb: float = 0.0
    planned: List[int] = field(default_factory=list)  # a draft policy's length for each iteration (none: no policy)

    @classmethod
    def from_result(cls, label: str, i: int, result) -> "Record":
        """From an engine :class:`~fastdec.engine.loop.DecodeResult`."""
        st = result.stats
        return cls(label, i, list(result.tokens), st.time, st.iterations, st.src_len, list(st.drafted),
                   list(st.accepted), st.time_encoder, st.time_drafter, st.time_verifier, st.time_other,
                   dict(getattr(st, "time_modules", {}) or {}), st.peak_mem_mb, list(st.planned))

    @classmethod
    def from_fairseq(cls, label: str, i: int, src, r) -> "Record":
        """From a :class:`~fastdec.engine.fairseq_baseline.BaselineResult` (one decoder step per output token)."""
        return cls(label, i, list(r.tokens), r.time, len(r.tokens), int(src.numel()), peak_mem_mb=r.peak_mem_mb)

    def to_dict(self) -> dict:
        return asdict(self)


def backend_identical_pct(row) -> Optional[float]:
    """A summary row's ``identical_to_backend_greedy_pct`` (from its count where a run's summary predates the column);
    None where the row has no backend greedy to compare with."""
    pct = row.get("identical_to_backend_greedy_pct")
    if pct is not None and pct == pct:
        return float(pct)
    same, n = row.get("identical_to_backend_greedy"), row.get("n_sentences")
    return 100.0 * float(same) / float(n) if same is not None and same == same and n else None


def lossless_pct(rows: pd.DataFrame) -> pd.Series:
    """Each row's outputs identical to the greedy output of its own verifier, in %: ``identical_to_backend_greedy_pct``
    where the table has it (a row on the fast or int8 backend is held to that backend's greedy: an int8 verifier is
    another model), else ``identical_to_greedy_pct`` (the PyTorch reference's greedy; a table written before the
    column)."""
    pct = pd.to_numeric(rows["identical_to_greedy_pct"], errors="coerce")
    if "identical_to_backend_greedy_pct" in rows.columns:
        pct = pd.to_numeric(rows["identical_to_backend_greedy_pct"], errors="coerce").fillna(pct)
    return pct


def speed_baseline(methods: Sequence[Method]) -> Optional[str]:
    """The label ``speedup_vs_beam`` is measured against: the first fairseq method with beam > 1 at batch 1."""
    return next((m.label for m in methods if m.kind == "fairseq" and m.beam > 1 and m.batch_size == 1), None)


def _ratio(a, b):
    return a / b if a is not None and b else None


def summarize(methods: Sequence[Method], records: Dict[str, List[Record]], *, beam_label: Optional[str] = None,
              greedy_label: str = "greedy", hyps: Optional[Dict[str, List[str]]] = None,
              refs: Optional[Sequence[str]] = None, lang: Optional[str] = None) -> pd.DataFrame:
    """One row per method with the :data:`SUMMARY_COLUMNS`. ``beam_label`` names the speed baseline (default: the
    first fairseq method with beam > 1 at batch 1); BLEU needs the BPE'd ``hyps``, raw ``refs`` and ``lang``."""
    beam_label = beam_label or speed_baseline(methods)
    total = {label: sum(r.time for r in recs) for label, recs in records.items()}
    greedy = records.get(greedy_label)
    greedy_at = {(m.backend, m.batch_size): m.label for m in methods if m.name == "greedy" and not m.custom_label}
    greedy_of_backend = {"torch": greedy_label, **{m.backend: m.label for m in methods if m.name == "greedy"
                                                   and m.backend != "torch" and m.batch_size == 1}}
    rows = []
    for m in methods:
        recs = records[m.label]
        n = len(recs)
        iters = sum(r.iterations for r in recs)
        out_tok = sum(len(r.tokens) for r in recs)
        acc = [a for r in recs for a in r.accepted]
        drafted = [d for r in recs for d in r.drafted]
        verify = [(len(r.tokens) - 1, r.iterations - 1) for r in recs if r.iterations > 1]
        row = {**m.params(), "label": m.label, "n_sentences": n, "total_time_s": total[m.label],
               "ms_per_sentence": 1000.0 * total[m.label] / n if n else None,
               "sent_per_s": _ratio(n, total[m.label]),
               "ms_per_batch": 1000.0 * total[m.label] / math.ceil(n / m.batch_size) if n else None,
               "speedup_vs_greedy_same_batch": _ratio(total.get(greedy_at.get(
                   (m.backend if m.kind == "engine" and (m.backend, m.batch_size) in greedy_at else "torch",
                    m.batch_size))), total[m.label]),
               "speedup_vs_beam": _ratio(total.get(beam_label), total[m.label]),
               "speedup_vs_greedy": _ratio(total.get(greedy_label), total[m.label]),
               "mean_iterations": iters / n if n else None, "tokens_per_iteration": _ratio(out_tok, iters),
               "mean_out_len": out_tok / n if n else None,
               "peak_mem_mb": max((r.peak_mem_mb for r in recs), default=None)}
        if greedy is not None:
            same = sum(r.tokens == g.tokens for r, g in zip(recs, greedy))
            row.update(identical_to_greedy=same, identical_to_greedy_pct=100.0 * same / n if n else None)
        own = records.get(greedy_of_backend.get(m.backend)) if m.kind == "engine" else None
        if own is not None:
            same = sum(r.tokens == g.tokens for r, g in zip(recs, own))
            row.update(identical_to_backend_greedy=same,
                       identical_to_backend_greedy_pct=100.0 * same / n if n else None)
        if m.kind in ("engine", "drafter"):
            row.update(mean_accepted=sum(acc) / len(acc) if acc else 0.0,
                       mean_drafted=sum(drafted) / len(drafted) if drafted else 0.0,
                       mean_block=(sum(t for t, _ in verify) / sum(s for _, s in verify)) if verify else 1.0)
            row.update({f"time_{x}_s": sum(getattr(r, f"time_{x}") for r in recs) for x in _MODULES})
            row.update({f"time_{x}_s": sum(r.time_modules.get(x, 0.0) for r in recs) for x in _SUBMODULES})
        if hyps is not None and refs is not None and lang:
            from fastdec.eval.bleu import corpus_bleu

            score = corpus_bleu([postprocess(h, lang) for h in hyps[m.label]], list(refs[:n]))
            row.update(bleu=score["bleu"], bleu_signature=score["signature"])
        rows.append(row)
    return pd.DataFrame(rows).reindex(columns=SUMMARY_COLUMNS)


def write_run(out_dir: str, methods: Sequence[Method], records: Dict[str, List[Record]],
              decode: Callable[[List[int]], str], *, refs: Optional[Sequence[str]] = None, lang: Optional[str] = None,
              beam_label: Optional[str] = None, meta: Optional[dict] = None) -> pd.DataFrame:
    """Write a run directory (see the module docstring); ``decode(tokens)`` gives the BPE'd hypothesis."""
    beam_label = beam_label or speed_baseline(methods)
    hyps = {m.label: [decode(r.tokens) for r in records[m.label]] for m in methods}
    for label, lines in hyps.items():
        write_lines(os.path.join(out_dir, "hyps", f"{label}.txt"), lines)
    with open(os.path.join(out_dir, "sentences.jsonl"), "w", encoding="utf-8") as f:
        for m in methods:
            for r in records[m.label]:
                f.write(json.dumps(r.to_dict()) + "\n")
    df = summarize(methods, records, beam_label=beam_label, hyps=hyps, refs=refs, lang=lang)
    # what decoded each engine row: a fast backend that cannot run here falls back to the PyTorch reference
    ran = (meta or {}).get("verifier_backends") or {}
    df["backend_ran"] = [ran.get(label, b) if isinstance(b, str) else None for label, b in zip(df["label"], df["backend"])]
    df.to_csv(os.path.join(out_dir, "summary.csv"), index=False)
    meta = {**(meta or {}), "methods": [m.spec for m in methods], "speed_baseline": beam_label}
    with open(os.path.join(out_dir, "meta.json"), "w", encoding="utf-8") as f:
        json.dump(meta, f, indent=2, default=str)
    return df


@dataclass
class Run:
    """A benchmark run read back: ``summary`` indexed by label, ``meta``, and lazy per-sentence data."""

    path: str
    summary: pd.DataFrame
    meta: dict

    def row(self, label: str) -> Optional[pd.Series]:
        return self.summary.loc[label] if label in self.summary.index else None

    def methods(self) -> List[Method]:
        return [parse_method(s) for s in self.meta.get("methods", [])]

    def records(self) -> Dict[str, List[Record]]:
        out: Dict[str, List[Record]] = {}
        with open(os.path.join(self.path, "sentences.jsonl"), encoding="utf-8") as f:
            for line in f:
                if line.strip():
                    d = json.loads(line)
                    out.setdefault(d["label"], []).append(Record(**d))
        return out

    def hyps(self, label: str) -> List[str]:
        return read_lines(os.path.join(self.path, "hyps", f"{label}.txt"))

    def resummarize(self, first: Optional[int] = None, refs: Optional[Sequence[str]] = None,
                    lang: Optional[str] = None) -> pd.DataFrame:
        """The summary recomputed on the first ``first`` sentences (to compare runs over a common subset)."""
        methods = self.methods()
        recs = {k: v[:first] for k, v in self.records().items()}
        hyps = {m.label: self.hyps(m.label)[:first] for m in methods} if refs is not None else None
        return summarize(methods, recs, beam_label=self.meta.get("speed_baseline"), hyps=hyps, refs=refs,
                         lang=lang).set_index("label", drop=False)


def read_run(path: str) -> Run:
    """Read a run directory; a missing or pre-schema run is a ``ValueError`` that says how to regenerate it."""
    summary_csv = os.path.join(path, "summary.csv")
    if not os.path.isfile(summary_csv):
        raise ValueError(f"{path}: no summary.csv; run the benchmark first (snakemake regenerates it)")
    df = pd.read_csv(summary_csv)
    if "label" not in df.columns or "speedup_vs_beam" not in df.columns:
        raise ValueError(f"{summary_csv} was written by an older fastdec (before the common results schema); "
                         f"delete {path} and rerun snakemake to benchmark again")
    meta_path = os.path.join(path, "meta.json")
    meta = json.load(open(meta_path, encoding="utf-8")) if os.path.isfile(meta_path) else {}
    return Run(path, df.set_index("label", drop=False), meta)
