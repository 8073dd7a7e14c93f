"""Writes the MT track's table (``fastdec tables mt table1_at``) from the results of the workflow."""
from __future__ import annotations

from fastdec.tracks.mt.plan import AT_TABLE, table_items


def make_table(name: str, config: dict, R: str, output: str) -> None:
    from fastdec.tracks.mt.tables import at_table

    if name != "table1_at":
        raise ValueError(f"the mt track has no table {name!r}; it has table1_at")
    item = table_items(config, R)[AT_TABLE]
    df = at_table(item.inputs, config.get("gad", {}).get("paper_reference", "wmt14_en-de"))
    df.to_csv(output, index=False)
    print(df.to_string(index=False), flush=True)
