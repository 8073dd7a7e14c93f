"""The `gec:` section: schema errors name the key, defaults are filled, configs with the GEC track dry-run."""
import copy
import subprocess
import sys
from pathlib import Path

import pytest
import yaml
from snakemake.utils import validate

REPO = Path(__file__).resolve().parents[2]
SCHEMA = str(REPO / "fastdec/tracks/gec/schema.yaml")
SNAKEMAKE = str(Path(sys.executable).with_name("snakemake"))


def smoke_gec():
    return copy.deepcopy(yaml.safe_load((REPO / "config/smoke.yaml").read_text())["gec"])


def test_shipped_sections_validate_and_get_defaults():
    for name in ("config.yaml", "smoke.yaml", "gec_bea19.yaml"):
        cfg = yaml.safe_load((REPO / "config" / name).read_text())
        assert "gec" in cfg, name
        gec = copy.deepcopy(cfg["gec"])
        validate(gec, SCHEMA)
        assert gec["benchmark"]["beam"] == 5 and gec["benchmark"]["split"] in ("valid", "test")
        assert gec["model"]["extra_args"].get("share-all-embeddings") is True


def test_bea19_is_paper_scale_and_only_gec():
    cfg = yaml.safe_load((REPO / "config/gec_bea19.yaml").read_text())
    assert cfg["tracks"] == {"mt_at": False, "gec_iad": True, "gad": False, "blockwise": False}
    g = cfg["gec"]
    assert g["bpe"]["merges"] == 32000 and g["model"]["arch"] == "transformer_vaswani_wmt_en_de_big"
    assert set(g["data"]["bea19"]["local"]) == {"lang8", "nucle"}
    assert "conll13" in g["data"]["bea19"]["valid"]["archive"] and "conll14" in g["data"]["bea19"]["test"]["archive"]


@pytest.mark.parametrize("mutate, expected", [
    (lambda g: g["bpe"].update(mergez=10), "mergez"),
    (lambda g: g["model"].update(max_update="lots"), "max_update"),
    (lambda g: g["data"].update(source="lang8"), "source"),
    (lambda g: g["benchmark"].update(split="train"), "split"),
    (lambda g: g["benchmark"].update(cpu_threads=[0]), "cpu_threads"),
    (lambda g: g["data"].update(bea19={"archives": {}, "train": [{"archive": "x"}], "valid": {"local": "a"},
                                       "test": {"local": "b"}}), "train"),
])
def test_schema_errors_name_the_key(mutate, expected):
    g = smoke_gec()
    mutate(g)
    with pytest.raises(Exception) as e:
        validate(g, SCHEMA)
    assert expected in str(e.value)


def dry_run(tmp_path, cfg):
    path = tmp_path / "cfg.yaml"
    path.write_text(yaml.safe_dump(cfg))
    return subprocess.run([SNAKEMAKE, "-s", str(REPO / "Snakefile"), "--directory", str(tmp_path), "-n", "--cores", "2",
                           "--configfile", str(path)], cwd=REPO, capture_output=True, text=True, timeout=300)


def test_bad_gec_key_stops_the_dry_run(tmp_path):
    cfg = yaml.safe_load((REPO / "config/smoke.yaml").read_text())
    cfg["tracks"] = {"mt_at": False, "gec_iad": True, "gad": False, "blockwise": False}
    cfg["gec"]["benchmark"]["beem"] = 4
    r = dry_run(tmp_path, cfg)
    assert r.returncode != 0 and "beem" in r.stdout + r.stderr and "Job stats" not in r.stdout


def test_gec_track_dry_run_jobs(tmp_path):
    cfg = yaml.safe_load((REPO / "config/smoke.yaml").read_text())
    cfg["tracks"] = {"mt_at": False, "gec_iad": True, "gad": False, "blockwise": False}
    cfg["gec"]["benchmark"].update(threads=1, cpu_threads=[2, 1], sentences=50, cpu_sentences=None)
    r = dry_run(tmp_path, cfg)
    assert r.returncode == 0, r.stderr[-3000:]
    out = r.stdout
    # Table 1's run (1 thread) is reused by Table 12: two benchmark jobs and the batched run of Figure 6, one M2
    # score per system (beam 5, fairseq greedy, engine greedy, IAD, IAD with the smoke config's draft cap of 4, and
    # CTranslate2 greedy and beam 5 on the model converted once)
    # M2 scores: beam 5, fairseq greedy, greedy, IAD, IAD capped, CTranslate2 greedy and beam 5, greedy-fast, IAD-fast,
    # and IAD with cost-aware draft lengths on both backends
    assert out.count("rule bench:") == 3 and out.count("rule gec_m2score:") == 11
    assert out.count("rule ct2_convert:") == 1 and "gec/models/gec/ct2/model.bin" in out
    assert "gec/bench/cpu-t1-n50/m2.iad-draft4.json" in out and "gec/bench/cpu-t2-n50/summary.csv" in out
    assert "gec/bench/batch-cpu-t1-n8/summary.csv" in out and "iad:batch=4" in out
    for f in ("gec_table1.csv", "gec_figure5.png", "gec_table2.csv", "gec_table12.csv", "gec_figure6_batch.png",
              "gec_figure6_batch.csv"):
        assert f in out


def test_bea19_dry_runs_offline_and_warns_about_missing_licensed_files():
    r = subprocess.run([SNAKEMAKE, "-s", str(REPO / "Snakefile"), "--directory", str(REPO), "-n", "--cores", "1",
                        "--configfile", "config/gec_bea19.yaml"], cwd=REPO, capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr[-3000:]
    assert r.stdout.count("rule fetch:") == 4 and "rule gec_prepare_download:" in r.stdout
    if not Path("/data/bea19/lang8.train.auto.bea19.m2").exists():
        assert "gec.data.bea19.local.lang8" in r.stderr
