"""The MT track (GAD paper, Table 1 AT rows): teacher, no-KD baseline and Seq-KD verifier decoded by
fairseq-generate (workflow/rules/decode.smk, evaluate.smk) -> ``tables/table1_at.csv``."""
from __future__ import annotations

from typing import Dict

from . import TableItem


def at_systems(beam: int) -> Dict[str, tuple]:
    """Rows of the table, decoded by the MT chain: name -> (model, beam); ``beam`` is config decode.beam."""
    return {"teacher_b5": ("teacher", beam), "baseline_b5": ("baseline", beam), "verifier_b5": ("verifier", beam),
            "verifier_b1": ("verifier", 1)}


def table_items(config: dict, R: str) -> Dict[str, TableItem]:
    from fastdec.report.orderings import inputs

    out = {"tables/table1_at.csv": TableItem("mt", "table1_at", [f"{R}/eval/{s}.json" for s in at_systems(1)])}
    checked = inputs(config, R)
    if checked:  # the papers' orderings, on the tables of the other tracks (fastdec.report.orderings)
        out["tables/orderings.csv"] = TableItem("mt", "orderings", checked)
    return out


def make_table(name: str, config: dict, R: str, output: str) -> None:
    from fastdec.report.tables import at_table

    if name == "orderings":
        from fastdec.report.orderings import check, failed

        df = check(config, R)
        df.to_csv(output, index=False)
        print(df.to_string(index=False), flush=True)
        for claim in failed(df):
            print(f"ORDERING DOES NOT HOLD: {claim}", flush=True)
        return
    if name != "table1_at":
        raise ValueError(f"the mt track has no table {name!r}; it has table1_at, orderings")
    item = table_items(config, R)["tables/table1_at.csv"]
    df = at_table(item.inputs, config.get("gad", {}).get("paper_reference", "wmt14_en-de"))
    df.to_csv(output, index=False)
    print(df.to_string(index=False), flush=True)
