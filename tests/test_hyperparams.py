"""Hyperparameter tables (Xia Table 10 = Ge Table 13, Ge Table 11) come from the training command fairseq would run,
and the paper-scale configs match the paper wherever it gives a value (or the row says why not)."""
import copy

import pandas as pd
import pytest
import yaml
from snakemake.utils import validate

from fastdec.tracks import hyperparams as H
from fastdec.tracks.gad import hyperparams as GH
from fastdec.tracks.gad import outputs as gad
from fastdec.tracks.gec import hyperparams as EH
from fastdec.tracks.gec import outputs as gec
from fastdec.workflow.plan import check_config

REPO = H.REPO
OK = {H.SAME, H.IN_RANGE}
DEVIATIONS = {**GH.DEVIATIONS, **EH.DEVIATIONS}


def load(name: str) -> dict:
    cfg = yaml.safe_load(open(f"{REPO}/config/{name}.yaml"))
    validate(cfg, f"{REPO}/workflow/schemas/config.schema.yaml")
    check_config(cfg, REPO)
    return cfg


def assert_matches_paper(df: pd.DataFrame) -> None:
    off = df[~df["match"].isin(OK) & (df["hyperparameter"] != "(paper only)")]
    unexplained = off[[(m, h) not in DEVIATIONS for m, h in zip(off["model"], off["hyperparameter"])]]
    assert unexplained.empty, f"differs from the paper without a reason:\n{unexplained.to_string()}"
    assert (off["note"] != "").all()


@pytest.mark.parametrize("name", ["wmt14_ende", "wmt14_deen", "wmt16_enro", "wmt16_roen"])
def test_paper_scale_gad_configs_follow_table10(name, tmp_path):
    cfg = load(name)
    out = tmp_path / "t10.csv"
    gad.make_table("gad_table10_hyperparameters", cfg, str(tmp_path), str(out))
    df = pd.read_csv(out, keep_default_na=False)
    assert set(df["model"]) == {"verifier", "drafter"}
    assert len(df) == sum(len(v) for v in GH.GAD_TABLE10.values())
    assert_matches_paper(df)


def test_paper_scale_gec_config_follows_table11(tmp_path):
    cfg = load("gec_bea19")
    out = tmp_path / "t11.csv"
    gec.make_table("gec_table11_hyperparameters", cfg, str(tmp_path), str(out))
    df = pd.read_csv(out, keep_default_na=False)
    assert_matches_paper(df)
    assert list(df[df["hyperparameter"] == "(paper only)"]["model"]) == ["pretrain", "fine-tune"]


def test_synthetic_pretraining_follows_table11_pretrain_and_fine_tune(tmp_path):
    cfg = load("gec_bea19")
    cfg["gec"]["pretrain"]["enabled"] = True   # config/variants/gec_synthetic.yaml: also gec.model.lr 3e-4
    cfg["gec"]["model"]["lr"] = 0.0003
    df = EH.gec_table11(cfg)
    assert_matches_paper(df)
    rows = df.set_index(["model", "hyperparameter"])
    assert rows.loc[("pretrain", "max epochs"), "ours"] == "10" and rows.loc[("fine-tune", "max epochs"), "ours"] == "60"
    assert rows.loc[("pretrain", "warmup updates"), "match"] == rows.loc[("fine-tune", "Adam lr"), "match"] == "same"
    cfg["gec"]["pretrain"]["model"]["warmup_updates"] = 4000
    assert EH.gec_table11(cfg).set_index(["model", "hyperparameter"]).loc[("pretrain", "warmup updates"),
                                                                         "match"] == H.DIFFERS


def test_a_changed_setting_shows_as_a_difference():
    """The table reads the command, so a config change (or a fairseq default) shows up; it is not the YAML echoed."""
    cfg = load("wmt14_ende")
    bad = copy.deepcopy(cfg)
    bad["gad"]["train"]["lr"] = 0.001
    del bad["train"]["verifier"]["extra_args"]["max-source-positions"]  # falls back to the arch default (1024)
    bad["train"]["verifier"]["gpus"] = 4
    df = GH.gad_table10(bad).set_index(["model", "hyperparameter"])
    assert df.loc[("drafter", "Adam lr"), "match"] == H.DIFFERS
    assert df.loc[("verifier", "max source positions"), "ours"] == "1024"
    assert df.loc[("verifier", "tokens per update (devices x max tokens x update frequency)"), "match"] == H.DIFFERS
    assert df.loc[("verifier", "Adam lr"), "match"] == H.SAME


def test_demo_table_shows_the_demo_settings():
    cfg = load("config")
    df = GH.gad_table10(cfg).set_index(["model", "hyperparameter"])
    assert df.loc[("verifier", "max tokens (per GPU)"), "ours"] == str(cfg["train"]["verifier"]["max_tokens"])
    assert float(df.loc[("drafter", "Adam lr"), "ours"]) == cfg["gad"]["train"]["lr"]
    assert df.loc[("drafter", "devices (GPUs)"), "ours"] == "0"
    t11 = EH.gec_table11(cfg).set_index(["model", "hyperparameter"])
    assert t11.loc[("model", "model architecture"), "ours"] == "3+3 layers, 128/512, 4 heads"
    assert t11.loc[("model", "model architecture"), "match"] == H.DIFFERS


@pytest.mark.parametrize("paper,ours,expected", [
    (H.P(0.1), 0.1, H.SAME), (H.P(0.1), 0.2, H.DIFFERS), (H.P(choices=[0.1, 0.3]), 0.3, H.IN_RANGE),
    (H.P(choices=[0.1, 0.3]), 0.2, H.DIFFERS), (H.P(interval=[3e-4, 5e-4]), 4e-4, H.IN_RANGE),
    (H.P(interval=[3e-4, 5e-4]), 6e-4, H.DIFFERS), (H.P(1000), None, H.DIFFERS), (H.P("a"), "a", H.SAME)])
def test_paper_value_comparison(paper, ours, expected):
    assert paper.compare(ours) == expected
