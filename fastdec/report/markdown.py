"""The Markdown report: one section per table, the paper's figures in their own columns."""
from __future__ import annotations

import datetime
import platform
from pathlib import Path

import pandas as pd

# table file stem -> (title, explanation). New stages add their tables here and in workflow/rules/report.smk.
SECTIONS = {
    "table1_at": (
        "GAD paper, Table 1 (AT rows): teacher, AT without Seq-KD, AT verifier",
        "BLEU: sacreBLEU on detokenised output against the raw references. sentences_per_s: fairseq-generate's own "
        "timing on the batched test run. latency_ms_batch1: mean time per sentence at batch 1. "
        "speed_vs_verifier_b5: latency of the verifier with beam 5 divided by this system's (paper: speed vs beam 5). "
        "identical_to_greedy: outputs token-identical to the verifier's greedy output. "
        "paper_*: Xia et al. 2022 on WMT14 En-De with a V100 GPU; ours: the experiment's data, models and device.",
    ),
}


def _fmt(v):
    if v is None or (isinstance(v, float) and pd.isna(v)):
        return "–"
    if isinstance(v, float):
        return f"{v:.2f}"
    return str(v).replace("|", "\\|")


def df_to_markdown(df: pd.DataFrame) -> str:
    cols = list(df.columns)
    lines = ["| " + " | ".join(cols) + " |", "|" + "---|" * len(cols)]
    for _, row in df.iterrows():
        lines.append("| " + " | ".join(_fmt(row[c]) for c in cols) + " |")
    return "\n".join(lines)


def build_report(experiment: str, tables: list[str]) -> str:
    now = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    parts = [f"# fastdec report: `{experiment}`", "",
             f"Generated {now} on {platform.machine()} ({platform.processor() or 'cpu'}).", ""]
    for path in tables:
        stem = Path(path).stem
        title, note = SECTIONS.get(stem, (stem, ""))
        df = pd.read_csv(path)
        signature = None
        if "signature" in df.columns:
            signature = df["signature"].dropna().iloc[0] if df["signature"].notna().any() else None
            df = df.drop(columns=["signature"])
        parts += [f"## {title}", "", note, "", df_to_markdown(df), ""]
        if signature:
            parts += [f"sacreBLEU signature: `{signature}`", ""]
        parts += [f"Source: `{path}`", ""]
    return "\n".join(parts)
