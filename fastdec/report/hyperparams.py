"""Hyperparameter tables generated from the configs: Xia et al. Table 10 (= Ge et al. Table 13: the AT verifier and
the NAT drafter of GAD) and Ge et al. Table 11 (the GEC Transformer trained from scratch), paper value beside ours.

"Ours" is not read off the YAML: it is what fairseq itself would run. The workflow's own training command for the
model (:func:`fastdec.train.fairseq_train_command` on the spec of :class:`fastdec.workflow.models.Models`) is parsed
by fairseq's training parser, so defaults of fairseq, of the architecture and of the plugin's task all count. A
paper-scale config is expected to match every value the paper gives; where it cannot, the row's ``note`` says why
(``DEVIATIONS``) and the test lists it explicitly.
"""
from __future__ import annotations

import ast
import copy
import json
import math
import shlex
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Dict, List, Optional, Sequence

import pandas as pd

SAME, IN_RANGE, DIFFERS = "same", "within the paper's range", "differs"
REPO = str(Path(__file__).resolve().parents[2])


@dataclass(frozen=True)
class PaperValue:
    """A value as the paper states it: one value, a set it tuned over (``choices``), or an interval."""

    value: object = None
    choices: Optional[Sequence] = None
    interval: Optional[Sequence] = None
    text: str = ""

    def show(self) -> str:
        if self.text:
            return self.text
        if self.choices is not None:
            return "[" + ", ".join(f"{c:g}" for c in self.choices) + "]"
        if self.interval is not None:
            return f"[{self.interval[0]:g}, {self.interval[1]:g}]"
        return _show(self.value)

    def compare(self, ours) -> str:
        if ours is None:
            return DIFFERS
        if self.choices is not None:
            return IN_RANGE if any(_equal(ours, c) for c in self.choices) else DIFFERS
        if self.interval is not None:
            lo, hi = self.interval
            return IN_RANGE if lo - 1e-12 <= ours <= hi + 1e-12 else DIFFERS
        return SAME if _equal(ours, self.value) else DIFFERS


def _equal(a, b) -> bool:
    if isinstance(a, (int, float)) and isinstance(b, (int, float)):
        return math.isclose(float(a), float(b), rel_tol=1e-9, abs_tol=1e-15)
    return a == b


def _show(v) -> str:
    if isinstance(v, float):
        return f"{v:g}"
    return "–" if v is None else str(v)


def P(value=None, *, choices=None, interval=None, text="") -> PaperValue:
    return PaperValue(value, tuple(choices) if choices else None, tuple(interval) if interval else None, text)


# ---------------------------------------------------------------- what fairseq would run
@dataclass
class Effective:
    """The parsed fairseq-train arguments of one model plus the GPUs its job asks for."""

    args: object
    gpus: int

    @property
    def devices(self) -> int:
        return max(self.gpus, 1)

    def tokens_per_update(self) -> int:
        return int(self.args.max_tokens) * int(self.args.update_freq[0]) * self.devices


def effective_args(config: dict, track: str, name: str, repo: str = REPO) -> Effective:
    """fairseq's parsed arguments of the workflow's training command for ``<track>models/<name>``."""
    from fairseq import options

    from fastdec.train import fairseq_train_command
    from fastdec.workflow.plan import Plan, check_config

    # the track sections with their schema defaults, as the workflow sees them (a table command may get a config
    # no Snakefile has checked)
    config = copy.deepcopy(config)
    check_config(config, repo)
    model = Plan(config, repo).models.model(track, name)
    flags = dict(zip(*[iter(shlex.split(model.flags))] * 2))
    spec = json.loads(model.spec)
    # checkpoints it starts from are only stored by the parser; their paths need not exist
    cmd = fairseq_train_command(spec, model.data, "checkpoints", device=config["device"],
                                user_dir=flags.get("--user-dir"), task=flags.get("--task", "translation"),
                                criterion=flags.get("--criterion", "label_smoothed_cross_entropy"))
    parser = options.get_training_parser()
    args = options.parse_args_and_arch(parser, input_args=cmd[1:])
    return Effective(args, int(model.resources.get("gpus", 0)))


def _betas(a) -> tuple:
    return tuple(float(x) for x in ast.literal_eval(a.adam_betas))


def _positions(a, side: str) -> int:
    """The model's max positions: the flag, or the default fairseq's Transformer builds with when none is given."""
    from fairseq.models import transformer

    value = getattr(a, f"max_{side}_positions", None)
    return int(value if value is not None else getattr(transformer, f"DEFAULT_MAX_{side.upper()}_POSITIONS"))


def _architecture(a) -> str:
    return (f"{a.encoder_layers}+{a.decoder_layers} layers, {a.encoder_embed_dim}/{a.encoder_ffn_embed_dim}, "
            f"{a.encoder_attention_heads} heads")


TRANSFORMER_BIG = "6+6 layers, 1024/4096, 16 heads"

# hyperparameter -> how to read it off the effective arguments
GETTERS: Dict[str, Callable[[Effective], object]] = {
    "model architecture": lambda e: _architecture(e.args),
    "devices (GPUs)": lambda e: e.gpus,
    "label smoothing": lambda e: float(e.args.label_smoothing),
    "max tokens (per GPU)": lambda e: int(e.args.max_tokens),
    "update frequency": lambda e: int(e.args.update_freq[0]),
    "tokens per update (devices x max tokens x update frequency)": lambda e: e.tokens_per_update(),
    "dropout rate": lambda e: float(e.args.dropout),
    "max source positions": lambda e: _positions(e.args, "source"),
    "max target positions": lambda e: _positions(e.args, "target"),
    "Adam lr": lambda e: float(e.args.lr[0]),
    "Adam beta_1": lambda e: _betas(e.args)[0],
    "Adam beta_2": lambda e: _betas(e.args)[1],
    "Adam epsilon": lambda e: float(e.args.adam_eps),
    "lr scheduler": lambda e: e.args.lr_scheduler,
    "warm-up lr": lambda e: float(e.args.warmup_init_lr),
    "weight decay": lambda e: float(e.args.weight_decay),
    "clip norm": lambda e: float(e.args.clip_norm),
    "warmup updates": lambda e: int(e.args.warmup_updates),
    "max updates": lambda e: int(e.args.max_update),
    "max epochs": lambda e: int(e.args.max_epoch) or None,  # fairseq: 0 = no limit
    "checkpoint averaging": lambda e: None,  # the workflow keeps the last checkpoint
}

INVERSE_SQRT = P("inverse_sqrt", text="inverse square (root)")

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
        "dropout rate": P(0.1), "max source positions": P(1000), "max target positions": P(1000),
        "Adam lr": P(5e-4), "Adam beta_1": P(0.9), "Adam beta_2": P(0.999), "Adam epsilon": P(1e-6),
        "lr scheduler": INVERSE_SQRT, "warm-up lr": P(1e-7), "weight decay": P(0.01), "clip norm": P(5.0),
        "warmup updates": P(10000), "max updates": P(300000), "max epochs": P(1000),
        "checkpoint averaging": P("last 10"),
    },
}

# Ge et al. Table 11, "train from scratch" (the pretrain / fine-tune columns belong to the BART-initialised 12+2
# model of Table 3, which no config builds yet)
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
DEVIATIONS = {
    ("verifier", "checkpoint averaging"): "not implemented: the workflow uses the last checkpoint",
    ("drafter", "checkpoint averaging"): "not implemented: the workflow uses the last checkpoint",
    ("model", "devices (GPUs)"): "one GPU with 4x the update frequency: the same tokens per update",
    ("model", "update frequency"): "one GPU with 4x the update frequency: the same tokens per update",
    **{(stage, key): "one GPU with 4x the update frequency: the same tokens per update"
       for stage in ("pretrain", "fine-tune") for key in ("devices (GPUs)", "update frequency")},
}


def compare(paper: Dict[str, Dict[str, PaperValue]], models: Dict[str, Effective]) -> pd.DataFrame:
    rows: List[dict] = []
    for role, values in paper.items():
        eff = models[role]
        for key, getter in GETTERS.items():
            if key not in values:
                continue
            pv, ours = values[key], getter(eff)
            match = pv.compare(ours)
            note = DEVIATIONS.get((role, key), "") if match == DIFFERS else ""
            rows.append({"model": role, "hyperparameter": key, "paper": pv.show(), "ours": _show(ours),
                         "match": match, "note": note})
    return pd.DataFrame(rows)


def gad_table10(config: dict, repo: str = REPO) -> pd.DataFrame:
    """Xia et al. Table 10 / Ge et al. Table 13: the verifier's and the block-size drafter's training settings."""
    k = int(config["gad"]["block_size"])
    models = {"verifier": effective_args(config, "", "verifier", repo),
              "drafter": effective_args(config, "gad/", f"drafter_k{k}", repo)}
    df = compare(GAD_TABLE10, models)
    if config["gad"].get("task") == "summarization":  # the paper's settings are for WMT14; CNN-DM gives none
        differs = (df["model"] == "verifier") & (df["match"] == DIFFERS) & (df["note"] == "")
        df.loc[differs, "note"] = "CNN-DM: fairseq's BART fine-tuning recipe (the paper gives MT settings only)"
    return df


def gec_table11(config: dict, repo: str = REPO) -> pd.DataFrame:
    """Ge et al. Table 11, "train from scratch", for the GEC model; the pretrain / fine-tune columns paper-only, or
    with gec.pretrain the pretrained model and the GEC model fine-tuned from it against them."""
    if config["gec"].get("pretrain", {}).get("enabled"):
        return compare(GEC_TABLE11_PRETRAIN, {"pretrain": effective_args(config, "gec/", "gec_pretrain", repo),
                                              "fine-tune": effective_args(config, "gec/", "gec", repo)})
    df = compare(GEC_TABLE11, {"model": effective_args(config, "gec/", "gec", repo)})
    # with init_from_bart (config/gec_bart.yaml) the model is the 12+2 one, fine-tuned once from BART with the
    # fine-tune settings; the synthetic-data pretraining stage is still not configured
    bart = bool(config["gec"]["model"].get("init_from_bart"))
    extra = pd.DataFrame([{"model": stage, "hyperparameter": "(paper only)", "paper": text, "ours": "–",
                           "match": "see the model rows" if bart and stage == "fine-tune" else "not configured",
                           "note": ("the model rows above: one fine-tuning stage from BART" if bart and stage == "fine-tune"
                                    else "the BART-initialised 12+2 model (Ge Table 3)")}
                          for stage, text in GEC_PAPER_ONLY])
    return pd.concat([df, extra], ignore_index=True)
