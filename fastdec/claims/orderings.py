"""The papers' hardware-independent claims, checked on a run's own tables: statements a researcher's first run should
reproduce whatever the machine. ``tables/orderings.csv`` (one row per claim: the study, the claim, the paper's
statement with its table or section, what this run shows, and the status ``holds`` / ``fails`` / ``not run`` /
``not checkable``) is a table of the report, built by the workflow's table rule beside the MT chain's AT table. A
failed claim is printed and shown at the top of the report; the run still finishes.

The claims live by paper: :mod:`.checks_xia` (GAD), :mod:`.checks_ge` (IAD), :mod:`.checks_stern` (Blockwise),
:mod:`.checks_hsu` (efficient students); :mod:`.claim` says how a claim turns a run's tables into a row.
"""
from __future__ import annotations

import os
from typing import Dict, List

import pandas as pd

from fastdec.layout import ResultsLayout
from fastdec.tracks.base import TableItem

from . import checks_ge, checks_hsu, checks_stern, checks_xia
from .claim import COLUMNS, FAILS, Claim, run_claims

__all__ = ["CLAIMS", "COLUMNS", "TABLE", "check", "failed", "inputs", "make_table", "table_items"]

CLAIMS: List[Claim] = checks_xia.CLAIMS + checks_ge.CLAIMS + checks_stern.CLAIMS + checks_hsu.CLAIMS
TABLE = "tables/orderings.csv"


def _run_tables(config: dict, R: str) -> Dict[str, str]:
    """The claims' tables this run writes: stem -> path."""
    from fastdec.tracks import registry
    from fastdec.tracks.base import section

    wanted = {t for c in CLAIMS for t in c.tables}
    rels = [rel for track in registry.enabled(config) for rel in track.plan.table_items(config, R)]
    # the memory table has its own rule (a fresh process per method), outside the GAD table items
    if config["tracks"].get("gad") and section(config, "gad").get("task") != "summarization":
        rels.append(f"gad/tables/{checks_xia.T8}.csv")
    stems = {os.path.splitext(os.path.basename(rel))[0]: rel for rel in rels if rel.endswith(".csv")}
    return {stem: os.path.join(R, rel) for stem, rel in stems.items() if stem in wanted}


def _gec_run(config: dict, R: str) -> str:
    """The GEC benchmark run of Table 1 and Figure 5."""
    from fastdec.tracks.gec.plan import table1_run

    return ResultsLayout(R).run(table1_run(config))


def inputs(config: dict, R: str) -> List[str]:
    """The files the checks read, for the enabled tracks."""
    out = list(_run_tables(config, R).values())
    if config["tracks"].get("gec_iad"):
        run = _gec_run(config, R)
        out += [ResultsLayout(R).path("gec", "bench", "set.src"), f"{run}/summary.csv", f"{run}/sentences.jsonl"]
    return out


def _iad_sentences(config: dict, R: str) -> pd.DataFrame:
    from fastdec.bench.results import read_run
    from fastdec.text import read_lines
    from fastdec.tracks.gec.analysis import per_sentence

    run = read_run(_gec_run(config, R))
    recs = run.records()
    rows = per_sentence(read_lines(ResultsLayout(R).path("gec", "bench", "set.src")), recs["greedy"], recs["iad"],
                        run.hyps("iad"))
    return pd.DataFrame([{"edit_ratio": r.edit_ratio, "greedy_time": r.greedy_time, "iad_time": r.iad_time}
                         for r in rows])


def check(config: dict, R: str) -> pd.DataFrame:
    """Every claim, one row each; the claims whose tables this run does not write are ``not run``."""
    tables = {stem: pd.read_csv(path) for stem, path in _run_tables(config, R).items()}
    if config["tracks"].get("gec_iad"):
        tables[checks_ge.SENTENCES] = _iad_sentences(config, R)
    return run_claims(CLAIMS, tables)


def failed(df: pd.DataFrame) -> List[str]:
    return [str(c) for c, s in zip(df["claim"], df["status"]) if s == FAILS]


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
        print(f"CLAIM DOES NOT HOLD: {claim}", flush=True)
