"""``fastdec gpu-record``: a GPU run into the docs -- a GPU suite's output folder, or a workflow run on a GPU machine.

``fastdec gpu-record OUT``: the folder :mod:`fastdec.bench.gpu_suite` wrote (``scripts/gpu_suite.sh PACK OUT``).

Writes ``docs/gpu/<date>-<experiment>-<device>/`` (the suite's CSV files and meta.json, ``TABLES.md`` with the
papers' speedups beside ours, ``pass_cost.png`` and ``batch.png``) and appends a dated row to ``docs/GPU.md``
(device, versions, command, headline figures). The report reads the newest such folder
(:func:`fastdec.claims.gpu.latest_gpu_run`).

    fastdec gpu-record OUT [--docs docs] [--command "bash scripts/gpu_suite.sh gpu_pack OUT"]

``fastdec gpu-record --config C [--config OVERLAY ...]``: the workflow run ``scripts/gpu_run.sh`` made with that
config (:mod:`fastdec.workflow.gpu_run`); ``--targets`` prints the result paths to build instead.

    fastdec gpu-record --config config/demo_gpu.yaml --targets [--part bench|all]
    fastdec gpu-record --config config/demo_gpu.yaml --command "scripts/gpu_run.sh ..." [--dtype float16] \\
        [--device-name "NVIDIA H100 80GB HBM3"] [--docs docs] [--dry-run]
"""
from __future__ import annotations

import json
import os
import re
import shutil
from pathlib import Path
from typing import Optional

import pandas as pd

from fastdec.claims.gpu import paper_speedup
from fastdec.report.markdown import df_to_markdown

__all__ = ["tables_markdown", "record"]

_FILES = ("summary.csv", "selfcheck.csv", "pass_cost.csv", "meta.json", "log.txt")


def tables_markdown(out: str) -> str:
    """TABLES.md of a suite output folder: the rows of each section beside the paper, the pass-cost curve, the
    selfcheck."""
    meta = json.load(open(os.path.join(out, "meta.json"), encoding="utf-8"))
    parts = [f"# GPU run: {meta.get('device')}, {meta.get('started')}",
             f"torch {meta.get('torch')}, CUDA {meta.get('cuda')}, Python {meta.get('python')}; pack "
             f"{meta.get('pack')}; budget {meta.get('budget_s')} s, {meta.get('elapsed_s')} s used. Batch-1 rows "
             "are CUDA-synchronised; speedups are against rows of the same section (same sentences, same run).",
             "", "Sections: " + ", ".join(f"{k} ({v['status']}, {v.get('seconds', 0)} s)"
                                          for k, v in meta.get("sections", {}).items())]
    path = os.path.join(out, "summary.csv")
    if os.path.isfile(path):
        s = pd.read_csv(path)
        for section, df in s.groupby("section", sort=False):
            batch = section.startswith("batch")
            rows = pd.DataFrame({
                "row": df["label"], "batch": df["batch_size"], "sentences": df["n_sentences"],
                "ms/sentence": df["ms_per_sentence"], "x beam 5": df["speedup_vs_beam"],
                "x greedy" + (" (same batch)" if batch else ""): df["speedup_vs_greedy_same_batch"],
                "paper": [paper_speedup(section, lab) for lab in df["label"]],
                "tokens/iteration": df["tokens_per_iteration"], "identical %": df["identical_to_greedy_pct"],
                "BLEU": df["bleu"] if "bleu" in df else None})
            if not batch:
                rows = rows.drop(columns=["batch"])
            dtype = df["dtype"].iloc[0]
            parts += ["", f"## {section} ({dtype})", "", df_to_markdown(rows)]
    path = os.path.join(out, "pass_cost.csv")
    if os.path.isfile(path):
        p = pd.read_csv(path)
        wide = p.pivot_table(index=["model", "dtype"], columns="k", values="cost_vs_k1", sort=False)
        k1 = p[p["k"] == 1].set_index(["model", "dtype"])["ms_per_pass"]
        wide.insert(0, "ms (k=1)", k1)
        wide = wide.reset_index()
        wide.columns = [c if isinstance(c, str) else f"k={c}" for c in wide.columns]
        parts += ["", "## Pass cost: one verifier pass of k tokens / a one-token pass (batch 1)", "", df_to_markdown(wide)]
    path = os.path.join(out, "selfcheck.csv")
    if os.path.isfile(path):
        c = pd.read_csv(path).groupby("dtype", sort=False)[["identical", "total"]].sum().reset_index()
        parts += ["", "## Selfcheck: random models, every exact method at batch 1 and batched, against greedy", "",
                  df_to_markdown(c)]
    return "\n".join(parts) + "\n"


def _plot(groups, x: str, y: str, path: Path, *, xlabel: str, ylabel: str, logy: bool = False) -> None:
    """One line per ``(label, frame)`` of ``groups``, log2 x axis."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(6, 4))
    for label, g in groups:
        ax.plot(g[x], g[y], marker="o", label=label)
    ax.set_xscale("log", base=2)
    if logy:
        ax.set_yscale("log")
    ax.set(xlabel=xlabel, ylabel=ylabel)
    ax.legend(fontsize=7)
    ax.grid(alpha=.3)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


def _figures(out: str, dest: Path) -> None:
    path = os.path.join(out, "pass_cost.csv")
    if os.path.isfile(path):
        p = pd.read_csv(path)
        _plot(((f"{m} {d}", g) for (m, d), g in p.groupby(["model", "dtype"], sort=False)), "k", "cost_vs_k1",
              dest / "pass_cost.png", xlabel="tokens in one verifier pass (k)", ylabel="pass cost / one-token pass")
    path = os.path.join(out, "summary.csv")
    if os.path.isfile(path):
        s = pd.read_csv(path)
        s = s[s["section"].str.startswith("batch") & (s["method"] != "fairseq")]
        if len(s):
            _plot(((f"{a}: {m}", g) for (a, m), g in s.groupby(["section", "method"], sort=False)), "batch_size",
                  "ms_per_batch", dest / "batch.png", xlabel="batch size", ylabel="ms per batch", logy=True)


def _headline(out: str) -> str:
    path = os.path.join(out, "summary.csv")
    if not os.path.isfile(path):
        return "no bench section finished"
    s = pd.read_csv(path)
    bits = []
    for section, label in (("gec", r"iad"), ("gad", r"gad-k\d+"), ("gad", r"gad-k\d+-top5-tau3"),
                           ("blockwise", r"blockwise-k8(-float)?")):
        r = s[(s["section"] == section) & s["label"].str.fullmatch(label)]
        if len(r):
            r = r.iloc[0]
            beam = "" if pd.isna(r["speedup_vs_beam"]) else f"{r['speedup_vs_beam']:.2f}x beam 5 / "
            bits.append(f"{section} {r['label']} {beam}{r['speedup_vs_greedy']:.2f}x greedy "
                        f"({r['tokens_per_iteration']:.2f} tok/it, {r['identical_to_greedy_pct']:.0f} % identical)")
    exact = s[(s["dtype"] == "float32") & s["exact"].astype(bool)]
    bits.append(f"float32 exact rows identical to greedy: {int((exact['identical_to_greedy_pct'] == 100).sum())}"
                f" of {len(exact)}")
    return "; ".join(bits)


def _run_folder(dest: Path, meta: dict) -> Path:
    """``dest``, or -- where it holds another run of the same day and device -- ``dest-HHMM`` by this run's start,
    so that recording a second run never overwrites the first one's tables (recording the same run again does)."""
    held = dest / "meta.json"
    if not held.is_file() or json.load(open(held, encoding="utf-8")).get("started") == meta.get("started"):
        return dest
    clock = re.sub(r"[^0-9]", "", str(meta.get("started", ""))[11:16]) or "2"
    return dest.with_name(f"{dest.name}-{clock}")


def record(out: str, docs: str = "docs", command: Optional[str] = None) -> Path:
    """Copy the suite's output into ``docs/gpu/<date>-<experiment>-<device>/`` and append a row to docs/GPU.md."""
    meta_path = os.path.join(out, "meta.json")
    if not os.path.isfile(meta_path):
        raise ValueError(f"{out}: no meta.json; give the folder `scripts/gpu_suite.sh PACK OUT` wrote")
    meta = json.load(open(meta_path, encoding="utf-8"))
    date = str(meta.get("started", ""))[:10]
    device = re.sub(r"[^A-Za-z0-9]+", "-", str(meta.get("device", "device"))).strip("-")
    dest = _run_folder(Path(docs) / "gpu" / f"{date}-{meta.get('pack')}-{device}", meta)
    dest.mkdir(parents=True, exist_ok=True)
    for name in _FILES:
        if os.path.isfile(os.path.join(out, name)):
            shutil.copyfile(os.path.join(out, name), dest / name)  # writable, whatever the source's mode
    (dest / "TABLES.md").write_text(tables_markdown(out), encoding="utf-8")
    _figures(out, dest)
    command = command or str(meta.get("command", "")).strip()
    row = (f"| {date} | {meta.get('device')} (torch {meta.get('torch')}, CUDA {meta.get('cuda')}) | `{command}` | "
           f"{_headline(out)}; tables: [{dest.name}](gpu/{dest.name}/TABLES.md) |\n")
    gpu_md = Path(docs) / "GPU.md"
    text = gpu_md.read_text(encoding="utf-8") if gpu_md.is_file() else ""
    if row not in text:
        gpu_md.write_text(text + ("" if text.endswith("\n") or not text else "\n") + row, encoding="utf-8")
    return dest


def add_arguments(p) -> None:
    p.add_argument("out", nargs="?", help="the folder scripts/gpu_suite.sh wrote (without --config)")
    p.add_argument("--docs", default="docs", help="the docs folder (default docs)")
    p.add_argument("--command", help="the command as run there (default: read from meta.json; with --config: "
                                     "scripts/gpu_run.sh)")
    run = p.add_argument_group("a workflow run on a GPU machine (scripts/gpu_run.sh)")
    run.add_argument("--config", action="append", help="the run's config file; repeat for overlays")
    run.add_argument("--dtype", choices=["float32", "float16", "bfloat16"], help="replaces the config's dtype")
    run.add_argument("--targets", action="store_true", help="print the result paths to build, record nothing")
    run.add_argument("--part", choices=["bench", "all"], default="bench",
                     help="--targets: the GPU tables (bench) or the whole report (all)")
    run.add_argument("--device-name", help="default: torch.cuda.get_device_name(0) with torch and CUDA versions")
    run.add_argument("--dry-run", action="store_true", help="print the row, write nothing")


def main(a) -> int:
    if a.config:
        from fastdec.workflow import gpu_run

        config = gpu_run.load_config(a.config, a.dtype)
        if a.targets:
            print("\n".join(gpu_run.targets(config, a.part)))
        else:
            print(gpu_run.record_run(config, a.command or "scripts/gpu_run.sh", gpu_run.device_name(a.device_name),
                                     a.docs, a.dry_run), end="")
        return 0
    if not a.out:
        raise ValueError("give the GPU suite's output folder, or --config for a workflow run")
    dest = record(a.out, a.docs, a.command)
    print(f"wrote {dest} and a row of {a.docs}/GPU.md")
    return 0
