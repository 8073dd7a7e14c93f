"""The papers' orderings, checked on a run's own tables: statements that do not depend on the hardware
and that a researcher's first run should reproduce. Each row says what the paper reports, what this run measured
and whether the ordering holds; ``fastdec orderings`` exits non-zero when one does not.

* GAD++ accepts more tokens per iteration than vanilla GAD at every block size (GAD Table 2);
* GAD++'s speedup peaks at a middle block size, not the smallest or the largest tried (GAD Table 2: k = 25 of
  10..30);
* Seq-KD raises the verifier's agreement with the drafter: Blockwise with frozen heads accepts longer blocks on
  distilled data than on the original data, at every k (Stern et al. Table 1, "Distillation" vs "Regular");
* fine-tuning together with distillation gives the largest Blockwise blocks at every k (Stern et al. Table 1,
  "Both");
* IAD's speedup over greedy decoding falls as the edit ratio rises (IAD paper Figure 5: a negative correlation).
"""
from __future__ import annotations

import math
from typing import Callable, Dict, List, Optional

import pandas as pd

from fastdec.layout import ResultsLayout
from fastdec.tracks.base import TableItem

COLUMNS = ["claim", "paper", "ours", "holds"]
TABLE = "tables/orderings.csv"


def _block(cell) -> Optional[float]:
    """The mean block of a Blockwise Table 1 cell ``"BLEU / block"``."""
    if not isinstance(cell, str) or "/" not in cell:
        return None
    try:
        return float(cell.split("/")[1].split("(")[0])
    except ValueError:
        return None


def _gad_rows(df: pd.DataFrame) -> pd.DataFrame:
    rows = df[df["k"].astype(str).str.fullmatch(r"\d+")].copy()
    rows["k"] = rows["k"].astype(int)
    return rows.sort_values("k")


def gadpp_accepts_more(df: pd.DataFrame) -> dict:
    rows = _gad_rows(df)
    pairs = [(int(r.k), float(r.tokens_per_iteration), float(r.gad_tokens_per_iteration)) for r in rows.itertuples()
             if pd.notna(r.tokens_per_iteration) and pd.notna(r.gad_tokens_per_iteration)]
    return {"claim": "GAD++ accepts more tokens per iteration than GAD, at every block size k",
            "paper": "Xia footnote 8 (WMT14 En-De dev, k = 25): GAD++ 10.99 vs GAD 6.13 tokens per iteration; Ge "
                     "Table 5: GAD++ above GAD",
            "ours": "; ".join(f"k={k}: {pp:.2f} vs {g:.2f}" for k, pp, g in pairs),
            "holds": bool(pairs) and all(pp > g for _, pp, g in pairs)}


def speedup_peaks_in_the_middle(df: pd.DataFrame) -> dict:
    rows = _gad_rows(df).dropna(subset=["speedup_vs_beam"])
    ks, speed = list(rows["k"]), list(rows["speedup_vs_beam"].astype(float))
    best = ks[speed.index(max(speed))] if ks else None
    return {"claim": "GAD++'s speedup peaks at a middle block size (not the smallest or largest k tried)",
            "paper": "GAD Table 2: peak at k = 25 among k = 10 .. 30",
            "ours": ", ".join(f"k={k}: {s:.2f}x" for k, s in zip(ks, speed)) + (f"; peak at k={best}" if ks else ""),
            "holds": len(ks) >= 3 and best not in (ks[0], ks[-1])}


def _blockwise_blocks(df: pd.DataFrame, label: str) -> Dict[int, float]:
    if label not in df.columns:
        return {}
    return {int(k): b for k, b in zip(df["k"], df[label].map(_block)) if b is not None and int(k) > 1}


def distillation_raises_blocks(df: pd.DataFrame) -> dict:
    reg, dis = _blockwise_blocks(df, "Regular"), _blockwise_blocks(df, "Distillation")
    ks = sorted(set(reg) & set(dis))
    return {"claim": "Seq-KD raises the base model's agreement with the proposals: longer Blockwise blocks on "
                     "distilled data (frozen heads), at every k",
            "paper": "Stern et al. Table 1: Distillation above Regular at every k (k=8: 1.91 vs 1.76)",
            "ours": "; ".join(f"k={k}: {dis[k]:.2f} vs {reg[k]:.2f}" for k in ks),
            "holds": bool(ks) and all(dis[k] > reg[k] for k in ks)}


def both_gives_largest_blocks(df: pd.DataFrame) -> dict:
    blocks = {label: _blockwise_blocks(df, label) for label in ("Regular", "Distillation", "Fine Tuning", "Both")}
    ks = sorted(set.intersection(*(set(b) for b in blocks.values()))) if all(blocks.values()) else []
    return {"claim": "fine-tuning + distillation gives the largest Blockwise blocks, at every k",
            "paper": "Stern et al. Table 1: Both has the largest mean block at every k (k=8: 4.69)",
            "ours": "; ".join(f"k={k}: Both {blocks['Both'][k]:.2f}, next "
                              f"{max(blocks[v][k] for v in blocks if v != 'Both'):.2f}" for k in ks),
            "holds": bool(ks) and all(blocks["Both"][k] >= max(blocks[v][k] for v in blocks if v != "Both")
                                      for k in ks)}


def iad_speedup_falls_with_edits(rows) -> dict:
    """``rows``: :func:`fastdec.tracks.gec.analysis.per_sentence` of the GEC benchmark run."""
    from fastdec.tracks.gec.analysis import spearman

    xs = [r.edit_ratio for r in rows]
    ys = [r.greedy_time / r.iad_time for r in rows if r.iad_time > 0]
    rho = spearman(xs, ys) if len(xs) == len(ys) and len(xs) > 2 else float("nan")
    return {"claim": "IAD's speedup over greedy decoding falls as the edit ratio rises",
            "paper": "IAD paper Figure 5: speedup decreases with the edit ratio",
            "ours": f"Spearman rho(edit ratio, speedup) = {rho:.3f} over {len(xs)} sentences",
            "holds": not math.isnan(rho) and rho < 0}


def inputs(config: dict, R: str) -> List[str]:
    """The files the check reads, for the enabled tracks."""
    tracks, L = config["tracks"], ResultsLayout(R)
    out = []
    if tracks.get("gad"):
        out.append(L.table("gad", "gad_table2_block_size"))
    if tracks.get("blockwise"):
        out.append(L.table("blockwise", "blockwise_table1"))
    if tracks.get("gec_iad"):
        run = _gec_run(config, R)
        out += [L.path("gec", "bench", "set.src"), f"{run}/summary.csv", f"{run}/sentences.jsonl"]
    return out


def _gec_run(config: dict, R: str) -> str:
    """The GEC benchmark run of Table 1 and Figure 5."""
    from fastdec.tracks.gec.plan import table1_run

    return ResultsLayout(R).run(table1_run(config))


def check(config: dict, R: str) -> pd.DataFrame:
    """Every ordering the enabled tracks can show, one row each (``holds``: True/False)."""
    tracks, L = config["tracks"], ResultsLayout(R)
    checks: List[Callable[[], dict]] = []
    if tracks.get("gad"):
        gad = pd.read_csv(L.table("gad", "gad_table2_block_size"))
        checks += [lambda: gadpp_accepts_more(gad), lambda: speedup_peaks_in_the_middle(gad)]
    if tracks.get("blockwise"):
        bw = pd.read_csv(L.table("blockwise", "blockwise_table1"))
        checks += [lambda: distillation_raises_blocks(bw), lambda: both_gives_largest_blocks(bw)]
    if tracks.get("gec_iad"):
        from fastdec.bench.results import read_run
        from fastdec.tracks.gec.analysis import per_sentence
        from fastdec.text import read_lines

        run = read_run(_gec_run(config, R))
        recs = run.records()
        rows = per_sentence(read_lines(L.path("gec", "bench", "set.src")), recs["greedy"], recs["iad"],
                            run.hyps("iad"))
        checks.append(lambda: iad_speedup_falls_with_edits(rows))
    return pd.DataFrame([c() for c in checks], columns=COLUMNS)


def failed(df: pd.DataFrame) -> List[str]:
    return [str(c) for c, h in zip(df["claim"], df["holds"]) if not bool(h)]




def table_items(config: dict, R: str) -> Dict[str, TableItem]:
    """``tables/orderings.csv`` beside the MT chain's AT table (built with the mt_at track), when a track it checks
    is on."""
    checked = inputs(config, R) if config["tracks"].get("mt_at") else []
    return {TABLE: TableItem("claims", "orderings", checked)} if checked else {}


def make_table(name: str, config: dict, R: str, output: str) -> None:
    if name != "orderings":
        raise ValueError(f"the claims have no table {name!r}; they have orderings")
    df = check(config, R)
    df.to_csv(output, index=False)
    print(df.to_string(index=False), flush=True)
    for claim in failed(df):
        print(f"ORDERING DOES NOT HOLD: {claim}", flush=True)
