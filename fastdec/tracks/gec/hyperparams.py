"""Ge et al. Table 11: the GEC model's training settings ("train from scratch"; with gec.pretrain the "Pretrain" and
"Fine-tune" columns), the paper's beside what fairseq would run for the workflow's models
(fastdec.tracks.hyperparams)."""
from __future__ import annotations

import pandas as pd

from fastdec.tracks.gec import plan as gec
from fastdec.tracks.hyperparams import INVERSE_SQRT, ONE_GPU, P, REPO, compare, effective_args

TRANSFORMER_BIG = "6+6 layers, 1024/4096, 16 heads"

# Ge et al. Table 11, "train from scratch" (the pretrain / fine-tune columns belong to the BART-initialised 12+2
# model of Table 3: config/gec_bart.yaml)
GEC_TABLE11 = {
    "model": {
        "model architecture": P(TRANSFORMER_BIG, text="Transformer-big"), "max epochs": P(60),
        "devices (GPUs)": P(4, text="4 Nvidia V100"), "max tokens (per GPU)": P(5120), "update frequency": P(4),
        "tokens per update (devices x max tokens x update frequency)": P(4 * 5120 * 4),
        "Adam beta_1": P(0.9), "Adam beta_2": P(0.98), "Adam epsilon": P(1e-8),
        "Adam lr": P(interval=[3e-4, 5e-4]), "lr scheduler": INVERSE_SQRT, "warmup updates": P(4000),
        "weight decay": P(0.0), "label smoothing": P(0.1), "dropout rate": P(choices=[0.3, 0.4, 0.5]),
    },
}
GEC_PAPER_ONLY = [
    ("pretrain", "number of epochs 10, update frequency 16, lr 3e-4, warmup 8000, dropout 0.3"),
    ("fine-tune", "number of epochs 60, update frequency 4, lr 3e-4, warmup 4000, dropout 0.3"),
]
# With gec.pretrain (synthetic pretraining, then fine-tuning): Table 11's "Pretrain" and "Fine-tune" columns, which
# state only what differs from "train from scratch" (the rest is shared)
_SHARED = {k: v for k, v in GEC_TABLE11["model"].items()
           if k not in ("max epochs", "update frequency", "tokens per update (devices x max tokens x update frequency)",
                        "Adam lr", "warmup updates", "dropout rate")}
GEC_TABLE11_PRETRAIN = {
    "pretrain": {**_SHARED, "max epochs": P(10), "update frequency": P(16),
                 "tokens per update (devices x max tokens x update frequency)": P(4 * 5120 * 16),
                 "Adam lr": P(3e-4), "warmup updates": P(8000), "dropout rate": P(0.3)},
    "fine-tune": {**_SHARED, "max epochs": P(60), "update frequency": P(4),
                  "tokens per update (devices x max tokens x update frequency)": P(4 * 5120 * 4),
                  "Adam lr": P(3e-4), "warmup updates": P(4000), "dropout rate": P(0.3)},
}

# Where a paper-scale config differs on purpose: (model, hyperparameter) -> why
DEVIATIONS = {(stage, key): ONE_GPU for stage in ("model", "pretrain", "fine-tune")
              for key in ("devices (GPUs)", "update frequency")}


def _effective(config: dict, name: str, repo: str):
    return effective_args(gec.model(config, f"results/{config['experiment']}", name, f"{repo}/fastdec_fairseq"),
                          config["device"])


def gec_table11(config: dict, repo: str = REPO) -> pd.DataFrame:
    """Ge et al. Table 11, "train from scratch", for the GEC model; the pretrain / fine-tune columns paper-only, or
    with gec.pretrain the pretrained model and the GEC model fine-tuned from it against them."""
    if config["gec"].get("pretrain", {}).get("enabled"):
        return compare(GEC_TABLE11_PRETRAIN, {"pretrain": _effective(config, "gec_pretrain", repo),
                                              "fine-tune": _effective(config, "gec", repo)}, DEVIATIONS)
    df = compare(GEC_TABLE11, {"model": _effective(config, "gec", repo)}, DEVIATIONS)
    # with init_from_bart (config/gec_bart.yaml) the model is the 12+2 one, fine-tuned once from BART with the
    # fine-tune settings; the synthetic-data pretraining stage is still not configured
    bart = bool(config["gec"]["model"].get("init_from_bart"))
    extra = pd.DataFrame([{"model": stage, "hyperparameter": "(paper only)", "paper": text, "ours": "–",
                           "match": "see the model rows" if bart and stage == "fine-tune" else "not configured",
                           "note": ("the model rows above: one fine-tuning stage from BART" if bart and stage == "fine-tune"
                                    else "the BART-initialised 12+2 model (Ge Table 3)")}
                          for stage, text in GEC_PAPER_ONLY])
    return pd.concat([df, extra], ignore_index=True)
