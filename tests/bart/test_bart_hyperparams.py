"""The hyperparameter tables of the BART configs say what is configured: the 12+2 GEC model is Table 11's
fine-tuning stage (pretraining on synthetic data is not configured), and the CNN-DM verifier differs from the
paper's WMT14 settings because it follows fairseq's BART fine-tuning recipe."""
from pathlib import Path

import yaml
from snakemake.utils import validate

from fastdec.tracks.gad.hyperparams import gad_table10
from fastdec.tracks.gec.hyperparams import gec_table11

REPO = Path(__file__).resolve().parents[2]


def load(name):
    cfg = yaml.safe_load((REPO / "config" / name).read_text())
    validate(cfg, str(REPO / "workflow/schemas/config.schema.yaml"))
    for section in ("gec", "gad"):
        if section in cfg:
            validate(cfg[section], str(REPO / f"fastdec/tracks/{section}/schema.yaml"))
    return cfg


def test_gec_bart_table11_rows():
    df = gec_table11(load("gec_bart.yaml")).set_index("model")
    assert df.loc["fine-tune", "match"] == "see the model rows" and df.loc["pretrain", "match"] == "not configured"
    model = df.loc["model"].set_index("hyperparameter")
    assert model.loc["warmup updates", "match"] == "same" and model.loc["max epochs", "match"] == "same"
    assert model.loc["model architecture", "ours"].startswith("12+2 layers")


def test_cnndm_verifier_rows_name_the_bart_recipe():
    df = gad_table10(load("cnndm.yaml"))
    verifier = df[df["model"] == "verifier"].set_index("hyperparameter")
    assert verifier.loc["Adam lr", "ours"] == "3e-05" and "BART fine-tuning recipe" in verifier.loc["Adam lr", "note"]
    drafter = df[df["model"] == "drafter"].set_index("hyperparameter")
    assert drafter.loc["Adam lr", "match"] == "same" and drafter.loc["warmup updates", "match"] == "same"
