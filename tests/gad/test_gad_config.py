"""The `gad:` config section: validated by fastdec/tracks/gad/schema.yaml (defaults filled in), bad values stop
the workflow before any job with the key's name; every shipped config gives the track runs of valid methods."""
import copy
import subprocess
import sys
from pathlib import Path

import pytest
import yaml
from snakemake.utils import validate

REPO = Path(__file__).resolve().parents[2]
SCHEMA = str(REPO / "fastdec/tracks/gad/schema.yaml")
SNAKEMAKE = str(Path(sys.executable).with_name("snakemake"))


def _section(name):
    return yaml.safe_load((REPO / "config" / name).read_text())["gad"]


@pytest.mark.parametrize("name", ["config.yaml", "smoke.yaml", "wmt14_ende.yaml", "wmt14_deen.yaml", "wmt16_enro.yaml",
                                  "wmt16_roen.yaml"])
def test_shipped_sections_validate_and_get_defaults(name):
    from fastdec.bench.methods import parse_methods
    from fastdec.tracks.gad import plan as gad

    cfg = copy.deepcopy(_section(name))
    validate(cfg, SCHEMA)
    assert cfg["high_quality"]["beta"] >= 1 and cfg["high_efficiency"]["tau"] >= 0
    assert cfg["init_from_verifier"] in ("all", "encoder", "none")
    full = yaml.safe_load((REPO / "config" / name).read_text())
    validate(full, str(REPO / "workflow/schemas/config.schema.yaml"))
    for run in gad.bench_runs(full, "results/x").values():
        methods = parse_methods(run.methods)
        assert "greedy" in [m.label for m in methods] and all(m.drafter_args["checkpoint"] in run.drafters
                                                               for m in methods if m.drafter)


def test_paper_scale_sections_follow_table_10():
    for name in ("wmt14_ende.yaml", "wmt16_enro.yaml"):
        g = _section(name)
        t = g["train"]
        assert g["block_size"] == 25 and t["lr"] == 0.0005 and t["max_tokens"] == 4096 and t["update_freq"] == 4
        assert t["warmup_updates"] == 10000 and t["max_update"] == 300000 and t["clip_norm"] == 5.0
        assert t["weight_decay"] == 0.01 and t["adam_betas"] == "(0.9, 0.999)"
        assert t["extra_args"]["max-target-positions"] == 1000


@pytest.mark.parametrize("mutate", [
    lambda g: g.update(block_size=0),
    lambda g: g.update(block_size=-4),
    lambda g: g["high_quality"].update(beta=0),
    lambda g: g["high_efficiency"].update(tau=-1.0),
    lambda g: g.update(grid={"betas": [0], "taus": [1.0]}),
    lambda g: g.update(grid={"betas": [3], "taus": [-0.5]}),
    lambda g: g.update(block_sizes=[0, 4]),
    lambda g: g.update(bogus=1),
    lambda g: g.update(init_from_verifier="half"),
])
def test_bad_values_are_rejected(mutate):
    g = copy.deepcopy(_section("wmt14_ende.yaml"))
    mutate(g)
    with pytest.raises(Exception) as e:
        validate(g, SCHEMA)
    assert "ValidationError" in type(e.value).__name__ or "valid" in str(e.value).lower()


def test_bad_gad_config_stops_the_workflow_before_any_job(tmp_path):
    cfg = yaml.safe_load((REPO / "config/smoke.yaml").read_text())
    cfg["gad"]["high_quality"] = {"beta": 0, "tau": 1.0}
    path = tmp_path / "bad.yaml"
    path.write_text(yaml.safe_dump(cfg))
    r = subprocess.run([SNAKEMAKE, "-s", str(REPO / "Snakefile"), "--directory", str(tmp_path), "-n", "--cores", "1",
                        "--configfile", str(path)], capture_output=True, text=True, timeout=300)
    out = r.stdout + r.stderr
    assert r.returncode != 0 and "beta" in out and "Job stats" not in out


def test_from_verifier_arch():
    from fastdec.tracks.gad.plan import Plan
    import json

    cfg = yaml.safe_load((REPO / "config" / "config.yaml").read_text())
    ver = {"arch": "transformer", "extra_args": {"encoder-layers": 3, "share-all-embeddings": True}}
    spec = json.loads(Plan({**cfg, "train": {"verifier": ver}}, "r").train_spec(10, init="i.pt"))
    assert spec["arch"] == "nat_block_drafter" and spec["extra_args"]["encoder-layers"] == 3
    assert spec["extra_args"]["block-size"] == 10 and spec["extra_args"]["finetune-from-model"] == "i.pt"
    with pytest.raises(ValueError, match="from_verifier"):
        Plan({**cfg, "train": {"verifier": {"arch": "lstm"}}}, "r").train_spec(10)
