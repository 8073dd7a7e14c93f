"""The MT chain's AT rows of GAD Table 1 (teacher, w/o Seq-KD baseline, verifier; fairseq-generate)."""
from __future__ import annotations

import json

import pandas as pd

from fastdec.tracks.gad.paper import GAD_BIG_REFERENCE as BIG
from fastdec.tracks.gad.paper import GAD_TABLE1, GAD_TABLE4, GAD_TABLE14, GE_TABLE5_DIRECTIONS, ge_table5_bleu


def paper_rows(reference: str) -> dict:
    """The paper's AT rows for ``reference``: the GAD paper's Table 1 (WMT14 En-De) or Table 4 (its big models), else
    Ge et al.'s Table 14 (verifier rows) with its Table 5 (teacher and w/o Seq-KD baseline) of that direction."""
    if reference == "wmt14_en-de":
        return GAD_TABLE1
    if reference == BIG:
        return GAD_TABLE4
    ge = {key: {"bleu": ge_table5_bleu(key, reference)} for key in ("teacher_b5", "baseline_b5")}
    return {**ge, **GAD_TABLE14[reference]}


def at_table(paths: list[str], reference: str = "wmt14_en-de") -> pd.DataFrame:
    """The AT rows of GAD Table 1 with the paper's numbers of ``reference`` (:func:`paper_rows`), and Ge et al.'s
    Table 5 figure of each row in ``paper_ge_table5_bleu`` (base models; its En-De baseline, 27.38, is Kasai et
    al.'s, where Xia's Table 1 has 27.76)."""
    rows = [json.load(open(p)) for p in paths]
    base = next((r for r in rows if r["system"] == "verifier_b5"), None)
    ref = paper_rows(reference)
    out = []
    for r in rows:
        paper = {**GAD_TABLE1.get(r["system"], {}), "bleu": None, "speed": None, **ref.get(r["system"], {})}
        speed = (base["latency_ms"] / r["latency_ms"]) if base and r.get("latency_ms") else None
        out.append({
            "system": r["system"],
            "label": paper.get("label", r["system"]),
            "beam": r.get("beam"),
            "bleu": r["bleu"],
            "paper_bleu": paper.get("bleu"),
            **({"paper_ge_table5_bleu": ge_table5_bleu(r["system"], reference)}
               if reference in GE_TABLE5_DIRECTIONS else {}),
            "sentences_per_s": r.get("sentences_per_s"),
            "latency_ms_batch1": r.get("latency_ms"),
            "speed_vs_verifier_b5": round(speed, 2) if speed else None,
            "paper_speed": paper.get("speed"),
            "identical_to_greedy": r.get("identical_to_greedy"),
            "sentences": r.get("sentences"),
            "device": r.get("device"),
            "signature": r.get("signature"),
            **({"paper_note": "paper: Xia et al. 2022 Table 4 (big models); it has no w/o Seq-KD row"}
               if reference == BIG else {}),
        })
    return pd.DataFrame(out)
