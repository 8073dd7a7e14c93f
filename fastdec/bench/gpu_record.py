"""``fastdec gpu-record OUT``: a GPU suite's output folder (:mod:`fastdec.bench.gpu_suite`) into the docs.

Writes ``docs/gpu/<date>-<experiment>-<device>/`` (the suite's CSV files and meta.json, ``TABLES.md`` with the
papers' speedups beside ours, ``pass_cost.png`` and ``batch.png``) and appends a dated row to ``docs/GPU.md``
(device, versions, command, headline figures). The report reads the newest such folder (:func:`latest_gpu_run`).

    fastdec gpu-record OUT [--docs docs] [--command "bash scripts/gpu_suite.sh gpu_pack OUT"]
"""
from __future__ import annotations

import glob
import json
import os
import re
import shutil
from pathlib import Path
from typing import Dict, Optional

import pandas as pd

from fastdec.report.markdown import df_to_markdown

__all__ = ["paper_speedup", "tables_markdown", "record", "latest_gpu_run"]

_FILES = ("summary.csv", "selfcheck.csv", "pass_cost.csv", "meta.json", "log.txt")


def paper_speedup(section: str, label: str) -> Optional[str]:
    """The paper's speedup for the same row (what it is measured against in brackets), or None."""
    from fastdec.tracks.blockwise.paper import TABLE4
    from fastdec.tracks.gad.paper import GAD_TABLE1
    from fastdec.tracks.gec.paper import IAD_TABLE1

    base = section.split("-")[0]
    if base == "gec":
        key = {"fairseq-beam5": "fairseq-beam", "fairseq-greedy": "fairseq-greedy", "iad": "iad"}.get(label)
        return f"{IAD_TABLE1[key]['speedup']}x beam (Ge T1)" if key else None
    if base == "gad":
        generic = re.sub(r"^gad-k\d+", "gad-k", label)
        key = {"fairseq-beam5": "verifier_b5", "fairseq-greedy": "verifier_b1", "gad-k": "gad",
               "gad-k-top3-tau1": "gad_pp_hq", "gad-k-top5-tau3": "gad_pp_he"}.get(generic)
        return f"{GAD_TABLE1[key]['speed']}x beam (Xia T1{', k=25' if generic.startswith('gad') else ''})" if key else None
    if base == "blockwise":
        m = re.fullmatch(r"blockwise-k(\d+)(-float)?", label)
        if m and int(m.group(1)) in TABLE4:
            return f"{TABLE4[int(m.group(1))][1]}x greedy (Stern T4)"
    return None


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


def record(out: str, docs: str = "docs", command: Optional[str] = None) -> Path:
    """Copy the suite's output into ``docs/gpu/<date>-<experiment>-<device>/`` and append a row to docs/GPU.md."""
    meta_path = os.path.join(out, "meta.json")
    if not os.path.isfile(meta_path):
        raise ValueError(f"{out}: no meta.json; give the folder `scripts/gpu_suite.sh PACK OUT` wrote")
    meta = json.load(open(meta_path, encoding="utf-8"))
    date = str(meta.get("started", ""))[:10]
    device = re.sub(r"[^A-Za-z0-9]+", "-", str(meta.get("device", "device"))).strip("-")
    dest = Path(docs) / "gpu" / f"{date}-{meta.get('pack')}-{device}"
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


def latest_gpu_run(docs: str = "docs", experiment: Optional[str] = None) -> Optional[Dict[str, object]]:
    """The newest recorded GPU run (of ``experiment``'s models, when given): ``{"path", "meta", "summary"}``
    (summary a DataFrame), or None."""
    for summary in sorted(glob.glob(os.path.join(docs, "gpu", "*", "summary.csv")), reverse=True):
        folder = os.path.dirname(summary)
        meta = json.load(open(os.path.join(folder, "meta.json"), encoding="utf-8"))
        if experiment is None or meta.get("pack") == experiment:
            return {"path": folder, "meta": meta, "summary": pd.read_csv(summary)}
    return None


def add_arguments(p) -> None:
    p.add_argument("out", help="the folder scripts/gpu_suite.sh wrote")
    p.add_argument("--docs", default="docs", help="the docs folder (default docs)")
    p.add_argument("--command", help="the command as run there (default: read from meta.json)")


def main(a) -> int:
    dest = record(a.out, a.docs, a.command)
    print(f"wrote {dest} and a row of {a.docs}/GPU.md")
    return 0
