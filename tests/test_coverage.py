"""The coverage registry cannot drift: its default-run paths are the files the default config writes, and every
table or figure of the default config is in it; the report starts with it."""
import re
from pathlib import Path

import yaml
from snakemake.utils import validate

from fastdec.claims import coverage as C
from fastdec.claims.report import build_report
from fastdec.workflow.experiments import table_items

REPO = Path(__file__).resolve().parents[1]


def default_outputs() -> set:
    """Every table/figure path (relative to results/<exp>) the default config writes: the tracks' table items and
    the track-specific report rules (REPORT_ITEMS of fastdec/tracks/*/rules.smk)."""
    cfg = yaml.safe_load((REPO / "config/config.yaml").read_text())
    validate(cfg, str(REPO / "workflow/schemas/config.schema.yaml"))
    for section in ("gec", "blockwise"):
        if section in cfg:
            validate(cfg[section], str(REPO / f"fastdec/tracks/{section}/schema.yaml"))
    items = set(table_items(cfg, "R"))
    gad_rules = (REPO / "fastdec/tracks/gad/rules.smk").read_text()
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


def test_report_ends_with_the_coverage_table(tmp_path):
    text = build_report("x", [])
    head = text.split("## ")[-1]
    assert head.startswith("Coverage of the papers")
    c = C.counts()
    assert f"{C.DEFAULT}: {c[C.DEFAULT]}" in head and head.count("\n| ") == len(C.REGISTRY) + 1


CONFIG_REF = re.compile(r"config/[\w/]+\.yaml")
TABLE_REF = re.compile(r"\b\w+/(?:tables|figures)/[\w.]+\.(?:csv|png)")


def paper_scale_outputs(config_path: str, *variants: str) -> set:
    """Table/figure paths (relative to results/<exp>) of a paper-scale config with ``variants`` merged in as Snakemake
    merges --configfile files, validated as the Snakefile does."""
    from snakemake.utils import update_config

    from fastdec.workflow.plan import check_config

    cfg = yaml.safe_load((REPO / config_path).read_text())
    for v in variants:
        update_config(cfg, yaml.safe_load((REPO / v).read_text()))
    validate(cfg, str(REPO / "workflow/schemas/config.schema.yaml"))
    check_config(cfg, str(REPO))
    return set(table_items(cfg, "R"))


def test_paper_scale_entries_name_configs_that_write_their_tables():
    for e in (e for e in C.REGISTRY if e.status == C.PAPER_SCALE):
        configs = CONFIG_REF.findall(e.where)
        assert configs, e
        for path in configs:
            assert (REPO / path).is_file(), (e.item, path)
        # a named table or figure is written by every full config the entry names, or (an entry naming variants) by
        # its first config with all its variants merged in
        variants = [c for c in configs if "/variants/" in c]
        runs = [(configs[0], *variants)] if variants else [(c,) for c in configs]
        for run in runs:
            for table in TABLE_REF.findall(e.where):
                assert table in paper_scale_outputs(*run), (e.paper, e.item, run, table)
