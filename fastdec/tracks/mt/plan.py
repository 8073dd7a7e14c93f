"""The MT track (GAD paper, Table 1 AT rows): teacher, no-KD baseline and Seq-KD verifier of the MT chain
(fastdec.tracks.chain) decoded by fairseq-generate (workflow/rules/decode.smk, evaluate.smk) ->
``tables/table1_at.csv``."""
from __future__ import annotations

from typing import Dict

from fastdec.layout import ResultsLayout
from fastdec.tracks.base import TableItem
from fastdec.tracks.chain import at_systems

AT_TABLE = "tables/table1_at.csv"


def table_items(config: dict, R: str) -> Dict[str, TableItem]:
    L = ResultsLayout(R)
    return {AT_TABLE: TableItem("mt", "table1_at", [L.eval(s) for s in at_systems(1)])}
