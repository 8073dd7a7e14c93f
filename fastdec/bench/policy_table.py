"""Cost-aware draft lengths against the papers' fixed k, read back from benchmark runs: every ``policy=cost`` row of a
run beside its fixed-k twin and the greedy decoding of the same backend and batch size, with the draft lengths the
policy chose (each iteration's ``planned`` length, :mod:`fastdec.engine.policy`) and the time it took to choose them.

The policy's promise is a row that is never much slower than greedy decoding, and is lossless whatever it chooses:
``at_least_097`` says whether a row is at 0.97x greedy or above, ``identical_to_greedy_pct`` whether its outputs are
greedy's.
"""
from __future__ import annotations

from typing import List, Mapping, Optional

import pandas as pd

from .methods import Method
from .results import Run, backend_identical_pct, lossless_pct, read_run

__all__ = ["COLUMNS", "FLOOR", "policy_table", "write_policy_table", "summary_line"]

FLOOR = 0.97  # the least share of greedy's speed a cost-aware exact row is to keep

COLUMNS = ["run", "method", "backend", "batch_size", "exact", "n_sentences", "greedy_ms_per_sentence",
           "fixed_x_greedy", "cost_x_greedy", "cost_vs_fixed", "at_least_097", "fixed_tokens_per_iteration",
           "cost_tokens_per_iteration", "drafted_iterations_pct", "mean_draft_length", "longest_draft",
           "policy_time_pct", "identical_to_greedy_pct", "identical_to_backend_greedy_pct"]


def fixed_twin(m: Method, methods: List[Method]) -> Optional[Method]:
    """The method of ``methods`` that is ``m`` with the papers' fixed k (None: not in the run)."""
    key = m.policy_twin("fixed")
    return next((t for t in methods if t.policy == "fixed" and t.policy_twin("fixed") == key), None)


def _float(row: Optional[pd.Series], column: str) -> Optional[float]:
    if row is None or column not in row.index or pd.isna(row[column]):
        return None
    return float(row[column])


def _family(m: Method) -> str:
    """The row's label without its batch size and policy (``iad-fast``, ``gad-k10-cheap-fast``)."""
    return "-".join(p for p in m.label.split("-") if p not in ("cost", f"bs{m.batch_size}"))


def policy_rows(name: str, run: Run) -> List[dict]:
    """The cost-aware rows of one run (see the module docstring); ``name`` says which run in the table."""
    methods = run.methods()
    cost = [m for m in methods if m.kind == "engine" and m.policy == "cost"]
    if not cost:
        return []
    records = run.records()
    rows = []
    for m in cost:
        r, twin = run.row(m.label), fixed_twin(m, methods)
        if r is None:
            raise ValueError(f"{run.path}: no row {m.label!r}; rerun the benchmark (snakemake regenerates it)")
        f = run.row(twin.label) if twin is not None else None
        planned = [n for rec in records.get(m.label, []) for n in rec.planned]
        drafted = [n for n in planned if n > 0]
        x_cost = _float(r, "speedup_vs_greedy_same_batch")
        total, fixed_total = _float(r, "total_time_s"), _float(f, "total_time_s")
        rows.append({
            "run": name, "method": _family(m), "backend": m.backend, "batch_size": m.batch_size, "exact": m.exact,
            "n_sentences": int(r["n_sentences"]),
            "greedy_ms_per_sentence": (_float(r, "ms_per_sentence") * x_cost) if x_cost else None,
            "fixed_x_greedy": _float(f, "speedup_vs_greedy_same_batch"), "cost_x_greedy": x_cost,
            "cost_vs_fixed": fixed_total / total if fixed_total and total else None,
            "at_least_097": None if x_cost is None else bool(x_cost >= FLOOR),
            "fixed_tokens_per_iteration": _float(f, "tokens_per_iteration"),
            "cost_tokens_per_iteration": _float(r, "tokens_per_iteration"),
            "drafted_iterations_pct": 100.0 * len(drafted) / len(planned) if planned else None,
            "mean_draft_length": sum(drafted) / len(drafted) if drafted else None,
            "longest_draft": max(drafted, default=0) if planned else None,
            "policy_time_pct": (100.0 * (_float(r, "time_policy_s") or 0.0) / total) if total else None,
            "identical_to_greedy_pct": _float(r, "identical_to_greedy_pct"),
            "identical_to_backend_greedy_pct": backend_identical_pct(r)})
    return rows


def policy_table(runs: Mapping[str, Run]) -> pd.DataFrame:
    """Every cost-aware row of ``runs`` (``{name: run}``, in that order), by batch size within a run."""
    rows = [row for name, run in runs.items() for row in policy_rows(name, run)]
    df = pd.DataFrame(rows, columns=COLUMNS)
    if len(df):
        order = {name: i for i, name in enumerate(runs)}
        df = df.sort_values(["run", "batch_size"], key=lambda c: c.map(order) if c.name == "run" else c, kind="stable")
    return df.reset_index(drop=True)


def write_policy_table(run_dirs: Mapping[str, str], output: str) -> pd.DataFrame:
    """:func:`policy_table` of the runs in ``run_dirs`` (``{name: run folder}``) written to ``output`` (CSV) and
    printed for the rule's log."""
    df = policy_table({name: read_run(path) for name, path in run_dirs.items()})
    if df.empty:
        raise ValueError(f"no cost-aware method (policy=cost) in the runs {sorted(run_dirs.values())}: add one to the "
                         "track's benchmark (its `policies:` setting)")
    df.to_csv(output, index=False)
    print(df.to_string(index=False), flush=True)
    return df


def summary_line(df: pd.DataFrame) -> Optional[str]:
    """The table's answer in one line: how many exact cost-aware rows keep 0.97x greedy's speed, how many beat fixed
    k, the slowest, and whether every one is lossless (None: no exact row)."""
    exact = df[df["exact"].astype(bool)] if len(df) else df
    timed = exact.dropna(subset=["cost_x_greedy"])
    if timed.empty:
        return None
    kept = int((timed["cost_x_greedy"] >= FLOOR).sum())
    vs_fixed = timed.dropna(subset=["cost_vs_fixed"])
    beat = int((vs_fixed["cost_vs_fixed"] >= 1.0).sum())
    slowest = timed.loc[timed["cost_x_greedy"].idxmin()]
    where = f"{slowest['method']} at batch {int(slowest['batch_size'])}, {slowest['run']}"
    lossless = lossless_pct(timed)
    return (f"{kept} of {len(timed)} exact cost-aware rows at {FLOOR:.2f}x greedy of the same backend and batch or "
            f"above (slowest {slowest['cost_x_greedy']:.2f}x: {where}); faster than fixed k in {beat} of "
            f"{len(vs_fixed)}; identical to their own backend's greedy: {lossless.min():.1f}-{lossless.max():.1f} %")
