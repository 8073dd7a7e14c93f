"""The MT chain's AT rows of GAD Table 1 (teacher, w/o Seq-KD baseline, verifier; fairseq-generate)."""
from __future__ import annotations

import json

import pandas as pd

from fastdec.tracks.gad.paper import GAD_TABLE1, GAD_TABLE14


def at_table(paths: list[str], reference: str = "wmt14_en-de") -> pd.DataFrame:
    """The AT rows of GAD Table 1 with the paper's numbers of ``reference`` (a key of GAD_TABLE14): the GAD paper's
    Table 1 for WMT14 En-De, else the journal version's Table 14, which has the verifier rows only."""
    rows = [json.load(open(p)) for p in paths]
    base = next((r for r in rows if r["system"] == "verifier_b5"), None)
    ref = GAD_TABLE1 if reference == "wmt14_en-de" else GAD_TABLE14[reference]
    note = None if reference == "wmt14_en-de" else (
        f"paper: Ge et al. 2022 Table 14 ({reference}); it reports no teacher or w/o Seq-KD row for this pair")
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
            "sentences_per_s": r.get("sentences_per_s"),
            "latency_ms_batch1": r.get("latency_ms"),
            "speed_vs_verifier_b5": round(speed, 2) if speed else None,
            "paper_speed": paper.get("speed"),
            "identical_to_greedy": r.get("identical_to_greedy"),
            "sentences": r.get("sentences"),
            "device": r.get("device"),
            "signature": r.get("signature"),
            **({"paper_note": note} if note else {}),
        })
    return pd.DataFrame(out)
