"""The GEC track's tables (IAD paper, Tables 1 and 12), from the benchmark CSV and the M2 scores.

Inputs:

* ``bench.csv`` of ``scripts/benchmark_decoding.py`` (one row per method label: ``wall_time`` = sum of the
  per-sentence decoding times at batch 1, ``speedup_vs_beam``, ``identical_to_greedy``, ``mean_iterations`` ...);
* one M2 JSON per label (``scripts/m2score.py --json``: ``precision``, ``recall``, ``f0.5`` ...).

Every table carries the paper's figure beside ours (``paper_*`` columns, :mod:`fastdec.report.paper_gec`).
"""
from __future__ import annotations

import json
from pathlib import Path
from typing import Mapping, Sequence

import pandas as pd

from fastdec.report.paper_gec import IAD_TABLE1, IAD_TABLE12
from fastdec.report.tables import to_float as _num

__all__ = ["SYSTEMS", "system_key", "read_bench", "read_draft_capped", "table1", "table12", "check_identical", "TableError"]

# Our systems in table order: benchmark method -> display label (fairseq-beam's label carries the beam).
SYSTEMS = {
    "fairseq-beam": "fairseq beam={beam}",
    "fairseq-greedy": "fairseq greedy (beam=1)",
    "greedy": "engine greedy",
    "iad": "engine IAD",
}


class TableError(ValueError):
    pass


def system_key(method: str) -> str:
    return method.lower()


_DRAFT_CAP = r"-draft(\d+)$"  # label suffix of benchmark_decoding.py --max-draft-lens rows


def _read_split(path) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Batch-1 rows of a benchmark CSV (the paper's online setting), split into the plain methods (indexed by
    method) and the draft-capped variants (``<method>-draft<N>``, cap in column ``draft_cap``, by cap)."""
    df = pd.read_csv(path)
    missing = {"label", "method", "batch_size", "wall_time", "n_sentences"} - set(df.columns)
    if missing:
        raise TableError(f"{path}: not a benchmark_decoding.py CSV (missing columns {sorted(missing)})")
    df = df[df["batch_size"] == 1]
    cap = df["label"].str.extract(_DRAFT_CAP, expand=False)
    main, capped = df[cap.isna()], df[cap.notna()].copy()
    if main["method"].duplicated().any():
        raise TableError(f"{path}: several batch-1 rows for one method")
    capped["draft_cap"] = cap[cap.notna()].astype(int)
    return main.set_index("method", drop=False), capped.sort_values("draft_cap")


def read_bench(path) -> pd.DataFrame:
    """The benchmark CSV restricted to batch size 1 (the paper's online setting), indexed by method.

    Rows of draft-capped variants (``iad-draft8`` ...) are left out: see :func:`read_draft_capped`.
    """
    return _read_split(path)[0]


def read_draft_capped(path) -> pd.DataFrame:
    """The batch-1 rows of draft-capped variants (``<method>-draft<N>``), with the cap in column ``draft_cap``."""
    return _read_split(path)[1]


def _pct(num, den):
    return round(100.0 * num / den, 2) if den else None


def _m2(scores: Mapping[str, dict], label: str) -> dict:
    d = scores.get(label)
    if d is None:
        return {}
    f = d.get("f0.5", d.get("f"))
    return {"p": 100 * d["precision"], "r": 100 * d["recall"], "f05": 100 * f if f is not None else None,
            "approx": d.get("approximate_sentences", 0)}


def table1(bench_csv, m2_jsons: Sequence[str] = (), *, beam: int = 5, split: str = "test",
           corpus: str = "") -> pd.DataFrame:
    """IAD paper, Table 1: total latency, speedup over beam 5, P/R/F0.5, identical-to-greedy %, iterations.

    ``m2_jsons`` are named ``m2.<label>.json``; the label is taken from the file name.
    """
    df, capped = _read_split(bench_csv)
    scores = {}
    for p in m2_jsons:
        name = Path(p).name
        if not (name.startswith("m2.") and name.endswith(".json")):
            raise TableError(f"M2 score files must be named m2.<label>.json, got {name}")
        scores[name[3:-5]] = json.loads(Path(p).read_text())
    base = df.loc["fairseq-beam"] if "fairseq-beam" in df.index else None
    greedy = _num(df.loc["greedy", "wall_time"]) if "greedy" in df.index else None
    def row(r, system: str, paper: dict) -> dict:
        n = int(r["n_sentences"])
        m2 = _m2(scores, r["label"])
        latency = _num(r["wall_time"])
        speedup = (_num(base["wall_time"]) / latency) if base is not None and latency else None
        ident = _num(r.get("identical_to_greedy"))
        return {
            "system": system,
            "method": r["label"],
            "sentences": n,
            "total_latency_s": round(latency, 2) if latency is not None else None,
            "ms_per_sentence": round(1000 * latency / n, 2) if latency is not None and n else None,
            "speedup_vs_beam": round(speedup, 2) if speedup else None,
            "speedup_vs_engine_greedy": round(greedy / latency, 2) if greedy and latency else None,
            "P": round(m2["p"], 2) if m2 else None,
            "R": round(m2["r"], 2) if m2 else None,
            "F0.5": round(m2["f05"], 2) if m2 and m2["f05"] is not None else None,
            "identical_to_greedy_pct": _pct(ident, n) if ident is not None else None,
            "m2_approximate_sentences": m2.get("approx") if m2 else None,
            "mean_iterations": round(_num(r.get("mean_iterations")) or 0, 2),
            "tokens_per_iteration": round(_num(r.get("tokens_per_iteration")) or 0, 2),
            "paper_system": paper.get("label"),
            "paper_latency_s": paper.get("latency_s"),
            "paper_speedup": paper.get("speedup"),
            "paper_P": paper.get("p"),
            "paper_R": paper.get("r"),
            "paper_F0.5": paper.get("f05"),
            "paper_identical_pct": paper.get("identical_pct"),
            "device": r.get("device"),
            "threads": r.get("threads"),
            "eval_set": f"{corpus} {split}".strip(),
        }

    rows = [row(df.loc[method], template.format(beam=beam), IAD_TABLE1.get(method, {}))
            for method, template in SYSTEMS.items() if method in df.index]
    # optional variants beyond the paper: IAD with drafts of at most N tokens (benchmark.iad_draft_caps)
    for _, r in capped.iterrows():
        name = SYSTEMS.get(r["method"], r["method"]).format(beam=beam)
        rows.append(row(r, f"{name}, drafts of at most {r['draft_cap']} tokens", {}))
    if not rows:
        raise TableError(f"{bench_csv}: none of the methods {list(SYSTEMS)} at batch size 1")
    return pd.DataFrame(rows)


def check_identical(bench_csv, method: str = "iad") -> tuple[int, int]:
    """(identical, sentences) of ``method`` against the engine's greedy output, summed over its batch-1 row and
    its draft-capped variants (all of them must be lossless)."""
    df, capped = _read_split(bench_csv)
    if method not in df.index:
        raise TableError(f"{bench_csv}: no batch-1 row for {method}")
    rows = [df.loc[method]] + [r for _, r in capped[capped["method"] == method].iterrows()]
    return sum(int(r["identical_to_greedy"]) for r in rows), sum(int(r["n_sentences"]) for r in rows)


def table12(runs: Mapping[int, str], *, model: str = "", beam: int = 5) -> pd.DataFrame:
    """IAD paper, Table 12: CPU latency and speedup over beam 5 by thread count.

    ``runs`` maps a thread count to the benchmark CSV measured with it. One row per thread count of ours or of
    the paper's (8 and 2 threads), ours and the paper's side by side.
    """
    rows = []
    for threads in sorted(set(runs) | set(IAD_TABLE12), reverse=True):
        paper = IAD_TABLE12.get(threads, {})
        row = {"threads": threads, "model": None}
        if threads in runs:
            row["model"] = model or None
            df = read_bench(runs[threads])
            if "fairseq-beam" not in df.index:
                raise TableError(f"{runs[threads]}: no fairseq-beam row (the baseline of Table 12)")
            base = _num(df.loc["fairseq-beam", "wall_time"])

            def lat(m):
                return _num(df.loc[m, "wall_time"]) if m in df.index else None

            n = int(df.loc["fairseq-beam", "n_sentences"])
            iad = lat("iad")
            row.update({
                "sentences": n,
                f"beam{beam}_latency_s": round(base, 2),
                "fairseq_greedy_latency_s": round(lat("fairseq-greedy"), 2) if lat("fairseq-greedy") else None,
                "engine_greedy_latency_s": round(lat("greedy"), 2) if lat("greedy") else None,
                "iad_latency_s": round(iad, 2) if iad else None,
                f"beam{beam}_speedup": 1.0,
                "fairseq_greedy_speedup": round(base / lat("fairseq-greedy"), 2) if lat("fairseq-greedy") else None,
                "iad_speedup": round(base / iad, 2) if iad else None,
                "iad_identical_to_greedy_pct": (_pct(_num(df.loc["iad", "identical_to_greedy"]), n)
                                                if "iad" in df.index else None),
            })
        row.update({"paper_model": paper.get("model"), "paper_beam5_speedup": paper.get("beam5_speedup"),
                    "paper_iad_speedup": paper.get("iad_speedup")})
        rows.append(row)
    cols = ["threads", "model", "sentences", f"beam{beam}_latency_s", "fairseq_greedy_latency_s",
            "engine_greedy_latency_s", "iad_latency_s", f"beam{beam}_speedup", "fairseq_greedy_speedup",
            "iad_speedup", "iad_identical_to_greedy_pct", "paper_model", "paper_beam5_speedup", "paper_iad_speedup"]
    return pd.DataFrame(rows).reindex(columns=cols)
