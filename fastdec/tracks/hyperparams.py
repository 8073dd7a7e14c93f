"""Hyperparameter tables generated from the configs (Xia et al. Table 10: fastdec.tracks.gad.hyperparams; Ge et al.
Table 11: fastdec.tracks.gec.hyperparams), paper value beside ours: the comparison they share.

"Ours" is not read off the YAML: it is what fairseq itself would run. The workflow's own training command for the
model (:func:`fastdec.train.fairseq_train_command` on the track's :class:`fastdec.tracks.specs.Model`) is parsed
by fairseq's training parser, so defaults of fairseq, of the architecture and of the plugin's task all count. A
paper-scale config is expected to match every value the paper gives; where it cannot, the row's ``note`` says why
(each track's ``DEVIATIONS``) and the test lists it explicitly.
"""
from __future__ import annotations

import ast
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


def effective_args(model, device: str) -> Effective:
    """fairseq's parsed arguments of the workflow's training command for ``model`` (a
    :class:`fastdec.tracks.specs.Model`) on ``device``."""
    from fairseq import options

    from fastdec.train import fairseq_train_command

    flags = dict(zip(*[iter(shlex.split(model.flags))] * 2))
    spec = json.loads(model.spec)
    # checkpoints it starts from are only stored by the parser; their paths need not exist
    cmd = fairseq_train_command(spec, model.data, "checkpoints", device=device,
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
ONE_GPU = "one GPU with 4x the update frequency: the same tokens per update"
NO_AVERAGING = "not implemented: the workflow uses the last checkpoint"

def compare(paper: Dict[str, Dict[str, PaperValue]], models: Dict[str, Effective],
            deviations: Dict[tuple, str]) -> pd.DataFrame:
    """One row per hyperparameter the paper gives; ``deviations``: (model, hyperparameter) -> why a paper-scale
    config differs on purpose (the row's note)."""
    rows: List[dict] = []
    for role, values in paper.items():
        eff = models[role]
        for key, getter in GETTERS.items():
            if key not in values:
                continue
            pv, ours = values[key], getter(eff)
            match = pv.compare(ours)
            note = deviations.get((role, key), "") if match == DIFFERS else ""
            rows.append({"model": role, "hyperparameter": key, "paper": pv.show(), "ours": _show(ours),
                         "match": match, "note": note})
    return pd.DataFrame(rows)
