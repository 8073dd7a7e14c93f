"""The experiment layer's view of every table (workflow/rules/experiments.smk, ``fastdec tables``): the tracks'
tables in registry order, and the claims checked across them (fastdec.claims) beside the MT chain's AT table."""
from __future__ import annotations

from typing import Dict

from fastdec.claims import orderings
from fastdec.tracks import registry
from fastdec.tracks.base import TableItem
from fastdec.tracks.registry import bench_runs

__all__ = ["bench_runs", "make_table", "table_items", "track_table_items"]

CLAIMS = "claims"


def table_items(config: dict, R: str) -> Dict[str, TableItem]:
    """Every table and figure of the enabled tracks and the claims, keyed by path relative to R, in report order."""
    out: Dict[str, TableItem] = {}
    for t in registry.enabled(config):
        out.update(t.plan.table_items(config, R))
        if t.name == "mt":
            out.update(orderings.table_items(config, R))
    return out


def track_table_items(track: str, config: dict, R: str) -> Dict[str, TableItem]:
    """The tables of one ``track`` (a TableItem's track: a track's name, or the claims)."""
    return orderings.table_items(config, R) if track == CLAIMS else registry.track(track).plan.table_items(config, R)


def make_table(track: str, name: str, config: dict, R: str, output: str) -> None:
    """Write one table or figure of ``track`` to ``output``."""
    writer = orderings if track == CLAIMS else registry.track(track).outputs
    writer.make_table(name, config, R, output)
