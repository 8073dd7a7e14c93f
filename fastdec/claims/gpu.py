"""The GPU rows the report shows under a table: the newest run recorded in docs/gpu/ (``fastdec gpu-record``) that
has them.

The workflow's tables are measured where the workflow runs; the papers' speed claims are GPU claims. Under Ge et al.
Table 1 and Figures 6/7, Xia et al. Tables 1 and 7 and Stern et al. Table 4 the report adds the same rows decoded
on a GPU from the same trained models (``fastdec gpu-pack`` / ``scripts/gpu_suite.sh``), the paper's speedup beside.
"""
from __future__ import annotations

import glob
import json
import os
import re
from pathlib import Path
from typing import Dict, Optional, Sequence, Tuple

import pandas as pd

__all__ = ["GPU_SECTIONS", "gpu_rows", "latest_gpu_run", "paper_speedup"]

REPO = Path(__file__).resolve().parents[2]
# table or figure stem -> the GPU suite's sections with the same rows
GPU_SECTIONS = {
    "gec_table1": ("gec", "gec-bf16"), "gad_table1": ("gad", "gad-bf16"), "gad_table7_modules": ("gad",),
    "blockwise_table4": ("blockwise", "blockwise-bf16"), "gec_figure6_batch": ("batch-gec",),
    "gad_figure7_batch": ("batch-gad",), "blockwise_batch": ("batch-blockwise",),
}


def gpu_rows(stem: str, experiment: Optional[str] = None, docs: Optional[str] = None
             ) -> Optional[Tuple[str, pd.DataFrame]]:
    """``(caption, rows)`` of the newest GPU run recorded for ``experiment``'s models (any, when None) with rows for a
    report item, or None (no run has them)."""
    sections = GPU_SECTIONS.get(stem)
    run = latest_gpu_run(docs or str(REPO / "docs"), experiment, sections) if sections else None
    if run is None:
        return None
    s = run["summary"]
    s = s[s["section"].isin(sections)]
    if s.empty:
        return None
    rows = pd.DataFrame({"section": s["section"], "row": s["label"], "dtype": s["dtype"],
                         "batch": s["batch_size"], "sentences": s["n_sentences"],
                         "ms/sentence": s["ms_per_sentence"], "x beam 5": s["speedup_vs_beam"],
                         "x greedy (same batch)": s["speedup_vs_greedy_same_batch"],
                         "paper": [paper_speedup(a, b) for a, b in zip(s["section"], s["label"])],
                         "tokens/iteration": s["tokens_per_iteration"],
                         "identical %": s["identical_to_greedy_pct"]})
    if stem == "gad_table7_modules":
        rows = rows.assign(**{f"{m} s": s[f"time_{m}_s"] for m in ("encoder", "drafter", "verifier", "other")})
    meta = run["meta"]
    caption = (f"On a GPU: {meta.get('device')} ({str(meta.get('started', ''))[:10]}, torch {meta.get('torch')}), "
               f"the same trained models, batch-1 rows CUDA-synchronised; recorded in "
               f"{Path(run['path']).relative_to(REPO) if Path(run['path']).is_relative_to(REPO) else run['path']}.")
    return caption, rows.reset_index(drop=True)


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


def latest_gpu_run(docs: str = "docs", experiment: Optional[str] = None,
                   sections: Optional[Sequence[str]] = None) -> Optional[Dict[str, object]]:
    """The newest recorded GPU run (of ``experiment``'s models, when given; with rows of one of ``sections``, when
    given: a later run of some sections only leaves the others' rows to the run before): ``{"path", "meta",
    "summary"}`` (summary a DataFrame), or None."""
    runs = []
    for summary in glob.glob(os.path.join(docs, "gpu", "*", "summary.csv")):
        folder = os.path.dirname(summary)
        meta = json.load(open(os.path.join(folder, "meta.json"), encoding="utf-8"))
        if experiment is None or meta.get("pack") == experiment:
            runs.append((str(meta.get("started", "")), folder, meta, summary))
    # newest by the time it started (two runs of one day are named by their devices, not in time order)
    for _, folder, meta, summary in sorted(runs, key=lambda r: (r[0], r[1]), reverse=True):
        table = pd.read_csv(summary)
        if sections is None or table["section"].isin(list(sections)).any():
            return {"path": folder, "meta": meta, "summary": table}
    return None
