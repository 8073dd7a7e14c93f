"""``fastdec tables TRACK NAME``: write one table or figure of a track from the results of the workflow.

The table finds its inputs under ``--results`` through the same track functions the Snakefile uses
(fastdec.tracks.registry, fastdec.workflow.experiments), so a table is regenerated from the results directory alone::

    fastdec tables gec gec_table1 --config config.json --results results/demo --output results/demo/gec/tables/gec_table1.csv
"""
from __future__ import annotations

import argparse
import json
import os


def add_arguments(ap: argparse.ArgumentParser) -> None:
    ap.add_argument("track", help="mt | gec | gad | blockwise | students | claims")
    ap.add_argument("name", help="table or figure name, e.g. gec_table1, gad_table2_block_size")
    ap.add_argument("--config", required=True, help="the workflow's config: a JSON string or a .json/.yaml file")
    ap.add_argument("--results", required=True, help="results/<experiment>")
    ap.add_argument("--output", required=True)


def load_config(text: str) -> dict:
    if os.path.isfile(text):
        import yaml

        with open(text, encoding="utf-8") as f:
            return yaml.safe_load(f)
    return json.loads(text)


def main(a: argparse.Namespace) -> int:
    from fastdec.workflow.experiments import make_table, track_table_items

    config = load_config(a.config)
    known = {item.name for item in track_table_items(a.track, config, a.results).values()}
    if a.name not in known:
        raise ValueError(f"track {a.track} has no table {a.name!r} in this config; it has {', '.join(sorted(known))}")
    os.makedirs(os.path.dirname(os.path.abspath(a.output)), exist_ok=True)
    make_table(a.track, a.name, config, a.results, a.output)
    print(f"wrote {a.output}")
    return 0
