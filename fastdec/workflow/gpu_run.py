"""The record of a workflow run on a GPU machine (``scripts/gpu_run.sh``): which tables to build, and a dated row in
docs/GPU.md (``fastdec gpu-record --config ...``).

Several ``--config`` files are merged as Snakemake merges several ``--configfile``s (later nested keys replace
earlier single values); ``--dtype`` replaces the config's, as ``snakemake --config dtype=...`` does.

:func:`targets` gives the result paths Snakemake is asked for: the tables the GPU run is for (Ge Table 1 and Figures
6/7, Xia Tables 1 and 7, Stern Table 4, the AT table) with ``part="bench"``, the whole report with ``"all"``.
:func:`record_run` copies those tables into ``docs/gpu/<date>-<experiment>-<device>/`` and appends a row to
``docs/GPU.md``: date, device (GPU name, torch and CUDA versions, dtype), the command, and the headline figures read
from the benchmark runs (speedups over beam search, identical-to-greedy %, batched speedups over greedy at the same
batch size).
"""
from __future__ import annotations

import datetime as dt
import os
import re
import shutil
from pathlib import Path

from fastdec.workflow.plan import load_config

__all__ = ["load_config", "targets", "headline", "device_name", "record_run"]

KEY_TABLES = ("table1_at", "gec_table1", "gec_figure6_batch", "gad_table1", "gad_table7_modules", "gad_figure7_batch",
              "blockwise_table4", "blockwise_batch")


def key_items(config: dict, R: str) -> dict:
    from fastdec.workflow.experiments import table_items

    return {path: item for path, item in table_items(config, R).items() if item.name in KEY_TABLES}


def targets(config: dict, part: str) -> list:
    R = f"results/{config['experiment']}"
    if part == "all":
        return [f"{R}/report/report.md"]
    return [f"{R}/{path}" for path in key_items(config, R)]


def _row(summary, label: str):
    return summary.loc[label] if label in summary.index else None


def headline(config: dict, R: str) -> str:
    """The figures of the row: read from the benchmark runs that exist (a missing run is skipped, not guessed)."""
    from fastdec.bench.results import read_run
    from fastdec.tracks.registry import bench_runs

    parts = []
    for run_dir in bench_runs(config, R):
        path = f"{R}/{run_dir}"
        if not os.path.isfile(f"{path}/summary.csv"):
            continue
        s = read_run(path).summary
        if run_dir.startswith("gec/bench/") and not run_dir.startswith("gec/bench/batch") and "iad" in s.index:
            if path.endswith(f"-n{config['gec']['benchmark']['sentences'] or 'all'}") and \
                    f"/{config['device']}-" in path:
                r = s.loc["iad"]
                parts.append(f"IAD {r['speedup_vs_beam']:.2f}x vs beam ({r['identical_to_greedy_pct']:.0f}% = greedy)")
        elif run_dir == "gad/bench/test":
            for label in s.index:
                if label.startswith("gad-") and _row(s, label) is not None:
                    r = s.loc[label]
                    parts.append(f"{label} {r['speedup_vs_beam']:.2f}x ({r['identical_to_greedy_pct']:.0f}% = greedy)")
        elif "batch" in run_dir:
            for label in s.index:
                m = re.fullmatch(r"(iad|gad-k\d+)-bs(\d+)", label)
                if m and int(m.group(2)) in (8, 32):
                    parts.append(f"{label} {s.loc[label, 'speedup_vs_greedy_same_batch']:.2f}x vs greedy-bs{m.group(2)}")
    return "; ".join(parts) or "no benchmark run found under " + R


def device_name(given) -> str:
    if given:
        return given
    import torch

    if torch.cuda.is_available():
        return f"{torch.cuda.get_device_name(0)} (torch {torch.__version__}, CUDA {torch.version.cuda})"
    return f"no CUDA device (torch {torch.__version__})"


def record_run(config: dict, command: str, device: str, docs: str, dry_run: bool, today=None) -> str:
    """The dated row of docs/GPU.md for the run of ``config`` (written unless ``dry_run``), the key tables copied."""
    R = f"results/{config['experiment']}"
    day = (today or dt.date.today()).isoformat()
    slug = re.sub(r"[^A-Za-z0-9]+", "-", device.split("(")[0]).strip("-").lower() or "gpu"
    folder = Path(docs) / "gpu" / f"{day}-{config['experiment']}-{slug}"
    copied = []
    for path in key_items(config, R):
        src = Path(R) / path
        if src.is_file():
            copied.append(src.name)
            if not dry_run:
                folder.mkdir(parents=True, exist_ok=True)
                shutil.copy2(src, folder / src.name)
    tables = f"tables: {folder.relative_to(docs).as_posix()}/ ({len(copied)} files)" if copied else "no tables built"
    result = f"{headline(config, R)}; dtype {config.get('dtype', 'float32')}; {tables}"
    row = f"| {day} | {device} | `{command}` | {result.replace('|', '/')} |\n"
    if not dry_run:
        with open(Path(docs) / "GPU.md", "a", encoding="utf-8") as f:
            f.write(row)
    return row
