"""The coverage registry cannot drift: its default-run paths are the files the default config writes, and every
table or figure of the default config is in it; the report starts with it."""
import re
from pathlib import Path

import yaml
from snakemake.utils import validate

from fastdec.report import coverage as C
from fastdec.report.markdown import build_report
from fastdec.tracks import table_items

REPO = Path(__file__).resolve().parents[1]


def default_outputs() -> set:
    """Every table/figure path (relative to results/<exp>) the default config writes: the tracks' table items and
    the track-specific report rules (REPORT_ITEMS of workflow/rules/*.smk)."""
    cfg = yaml.safe_load((REPO / "config/config.yaml").read_text())
    validate(cfg, str(REPO / "workflow/schemas/config.schema.yaml"))
    for section in ("gec", "blockwise"):
        if section in cfg:
            validate(cfg[section], str(REPO / f"workflow/schemas/{section}.schema.yaml"))
    items = set(table_items(cfg, "R"))
    gad_rules = (REPO / "workflow/rules/gad.smk").read_text()
    extra = set(re.findall(r'f"\{G\}/(tables/[\w.]+)"', gad_rules.split("REPORT_ITEMS.extend")[1]))
    assert extra, "gad.smk's REPORT_ITEMS not found"
    return items | {f"gad/{p}" for p in extra if cfg["tracks"]["gad"]}


def test_default_entries_are_written_and_every_default_item_is_listed():
    written, listed = default_outputs(), C.default_paths()
    assert listed - written == set(), "registry paths the default run does not write"
    assert written - listed == set(), "default-run tables/figures missing from the registry"


def test_every_entry_has_a_status_and_one_per_paper_item():
    keys = [(e.paper, e.item) for e in C.REGISTRY]
    assert len(keys) == len(set(keys))
    assert sum(C.counts().values()) == len(C.REGISTRY)
    for paper in ("Xia", "Ge", "Stern", "Hsu"):
        assert any(e.paper == paper for e in C.REGISTRY)
    # every numbered table and figure of the four papers (papers/README.md) is listed
    for paper, tables, figures in (("Xia", 11, 4), ("Ge", 17, 8), ("Stern", 4, 4), ("Hsu", 3, 2)):
        numbered = {f"Table {i}" for i in range(1, tables + 1)} | {f"Figure {i}" for i in range(1, figures + 1)}
        assert numbered <= set(keys_of(paper)), paper


def keys_of(paper):
    return [e.item for e in C.REGISTRY if e.paper == paper]


def test_report_starts_with_the_coverage_table(tmp_path):
    text = build_report("x", [])
    head = text.split("## ")[1]
    assert head.startswith("Coverage of the papers")
    c = C.counts()
    assert f"{C.DEFAULT}: {c[C.DEFAULT]}" in head and head.count("\n| ") == len(C.REGISTRY) + 1


def test_single_config_paper_scale_entries_are_written_by_their_config():
    """A paper-scale entry "config/<name>.yaml (<path>)" names a table that config's tracks write."""
    checked = 0
    for e in C.REGISTRY:
        m = re.fullmatch(r"(config/\w+\.yaml) \(([\w/.]+)\)", e.where)
        if e.status != C.PAPER_SCALE or not m:
            continue
        cfg = yaml.safe_load((REPO / m.group(1)).read_text())
        validate(cfg, str(REPO / "workflow/schemas/config.schema.yaml"))
        if "gec" in cfg:
            validate(cfg["gec"], str(REPO / "workflow/schemas/gec.schema.yaml"))
        assert m.group(2) in table_items(cfg, "R"), e
        checked += 1
    assert checked >= 2  # Ge Table 3 (config/gec_bart.yaml) and Table 10 (config/cnndm.yaml)
