#!/usr/bin/env python
"""The GPU run's record (called by scripts/gpu_run.sh): which tables to build, and a dated row in docs/GPU.md.

    python scripts/gpu_record.py targets --config config/demo_gpu.yaml [--config OVERLAY ...] [--part bench|all]
    python scripts/gpu_record.py record  --config config/demo_gpu.yaml --command "scripts/gpu_run.sh ..." \\
        [--dtype float16] [--device-name "NVIDIA H100 80GB HBM3"] [--docs docs] [--dry-run]

Several ``--config`` files are merged as Snakemake merges several ``--configfile``s (later nested keys replace
earlier single values); ``--dtype`` replaces the config's, as ``snakemake --config dtype=...`` does.

``targets`` prints the result paths Snakemake is asked for: the tables the GPU run is for (Ge Table 1 and Figures
6/7, Xia Tables 1 and 7, Stern Table 4, the AT table) with ``--part bench``, the whole report with ``all``. ``record``
copies those tables into ``docs/gpu/<date>-<device>/`` and appends a row to ``docs/GPU.md``: date, device (GPU name,
torch and CUDA versions, dtype), the command, and the headline figures read from the benchmark runs (speedups over
beam search, identical-to-greedy %, batched speedups over greedy at the same batch size).
"""
import argparse
import datetime as dt
import os
import re
import shutil
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
KEY_TABLES = ("table1_at", "gec_table1", "gec_figure6_batch", "gad_table1", "gad_table7_modules", "gad_figure7_batch",
              "blockwise_table4", "blockwise_batch")


def load_config(paths, dtype=None) -> dict:
    """The config as the workflow sees it: the files merged, validated, defaults filled (errors name the key)."""
    import yaml
    from snakemake.utils import update_config, validate

    from fastdec.workflow import check_config

    config = {}
    for path in [paths] if isinstance(paths, str) else paths:
        with open(path, encoding="utf-8") as f:
            update_config(config, yaml.safe_load(f) or {})
    if dtype:
        config["dtype"] = dtype
    validate(config, str(REPO / "workflow/schemas/config.schema.yaml"))
    check_config(config, str(REPO))  # the switched-on tracks' sections too (fastdec/tracks/<track>/schema.yaml)
    return config


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


def record(config: dict, command: str, device: str, docs: str, dry_run: bool, today=None) -> str:
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


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("action", choices=["targets", "record"])
    ap.add_argument("--config", required=True, action="append", help="a config file; repeat for overlays")
    ap.add_argument("--dtype", choices=["float32", "float16", "bfloat16"], help="replaces the config's dtype")
    ap.add_argument("--part", choices=["bench", "all"], default="bench")
    ap.add_argument("--command", default="scripts/gpu_run.sh")
    ap.add_argument("--device-name", help="default: torch.cuda.get_device_name(0) with torch and CUDA versions")
    ap.add_argument("--docs", default=str(REPO / "docs"))
    ap.add_argument("--dry-run", action="store_true", help="record: print the row, write nothing")
    a = ap.parse_args()
    try:
        config = load_config(a.config, a.dtype)
        if a.action == "targets":
            print("\n".join(targets(config, a.part)))
        else:
            print(record(config, a.command, device_name(a.device_name), a.docs, a.dry_run), end="")
    except Exception as e:  # noqa: BLE001  (schema errors are snakemake WorkflowErrors)
        print(f"error: {e}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
