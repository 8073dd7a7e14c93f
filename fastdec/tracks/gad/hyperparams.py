"""Xia et al. Table 10 (= Ge et al. Table 13): the AT verifier's and the NAT drafter's training settings, the
paper's beside what fairseq would run for the workflow's models (fastdec.tracks.hyperparams)."""
from __future__ import annotations

import pandas as pd

from fastdec.layout import ResultsLayout
from fastdec.tracks import chain
from fastdec.tracks.base import section
from fastdec.tracks.gad import plan as gad
from fastdec.tracks.hyperparams import DIFFERS, INVERSE_SQRT, NO_AVERAGING, P, REPO, compare, effective_args

# Xia et al. Table 10 / Ge et al. Table 13 (the journal table adds max tokens and update frequency; devices: 8 V100)
# and Ge et al. B.1 ("average model parameters from the last 10 checkpoints")
GAD_TABLE10 = {
    "verifier": {
        "devices (GPUs)": P(8, text="8 Nvidia V100"), "label smoothing": P(0.1), "max tokens (per GPU)": P(20000),
        "update frequency": P(4), "tokens per update (devices x max tokens x update frequency)": P(8 * 20000 * 4),
        "dropout rate": P(choices=[0.1, 0.2, 0.3]), "max source positions": P(1000), "max target positions": P(1000),
        "Adam lr": P(1e-3), "Adam beta_1": P(0.9), "Adam beta_2": P(0.99), "lr scheduler": INVERSE_SQRT,
        "warm-up lr": P(1e-7), "weight decay": P(1e-5), "clip norm": P(3.0), "warmup updates": P(4000),
        "max updates": P(100000), "max epochs": P(1000), "checkpoint averaging": P("last 10"),
    },
    "drafter": {
        "devices (GPUs)": P(8, text="8 Nvidia V100"), "label smoothing": P(0.1), "max tokens (per GPU)": P(4096),
        "update frequency": P(4), "tokens per update (devices x max tokens x update frequency)": P(8 * 4096 * 4),
        "dropout rate": P(0.1, text="0.1 (Xia Table 10; Ge Table 13: 0.1, 0.2 or 0.3)"),
        "max source positions": P(1000), "max target positions": P(1000), "Adam lr": P(5e-4), "Adam beta_1": P(0.9),
        "Adam beta_2": P(0.999), "Adam epsilon": P(1e-6),
        "lr scheduler": INVERSE_SQRT, "warm-up lr": P(1e-7), "weight decay": P(0.01), "clip norm": P(5.0),
        "warmup updates": P(10000), "max updates": P(300000), "checkpoint averaging": P("last 10"),
    },
}

# Where a paper-scale config differs on purpose: (model, hyperparameter) -> why
DEVIATIONS = {(model, "checkpoint averaging"): NO_AVERAGING for model in ("verifier", "drafter")}


def gad_table10(config: dict, repo: str = REPO) -> pd.DataFrame:
    """Xia et al. Table 10 / Ge et al. Table 13: the verifier's and the block-size drafter's training settings."""
    layout = ResultsLayout.of(config)
    k = int(section(config, "gad")["block_size"])
    drafter = gad.model(config, layout.root, f"drafter_k{k}", f"{repo}/fastdec_fairseq")
    models = {"verifier": effective_args(chain.model(config, layout, "verifier"), config["device"]),
              "drafter": effective_args(drafter, config["device"])}
    df = compare(GAD_TABLE10, models, DEVIATIONS)
    if config["gad"].get("task") == "summarization":  # the paper's settings are for WMT14; CNN-DM gives none
        differs = (df["model"] == "verifier") & (df["match"] == DIFFERS) & (df["note"] == "")
        df.loc[differs, "note"] = "CNN-DM: fairseq's BART fine-tuning recipe (the paper gives MT settings only)"
    return df
