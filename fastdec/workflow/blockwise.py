"""What the Blockwise track builds (workflow/rules/blockwise.smk, and the training rule through
fastdec.workflow.models): the variants of Table 1, the fairseq-train spec of a blockwise model, and the decoding
settings of each evaluation run.
All functions take the validated ``blockwise:`` config section (defaults filled in by the schema).
"""
from __future__ import annotations

from typing import List

# variant -> (base AT model of the MT chain, data-bin folder, base parameters frozen)
VARIANT_SETUP = {
    "regular": ("baseline", "raw", True),
    "distill": ("verifier", "distill", True),
    "finetune": ("baseline", "raw", False),
    "both": ("verifier", "distill", False),
}
TRAIN_KEYS = ("max_update", "max_tokens", "update_freq", "lr", "warmup_updates", "dropout", "label_smoothing",
              "weight_decay", "clip_norm", "adam_betas", "save_interval_updates", "keep_last", "seed")


def check_config(bw: dict, device: str) -> None:
    """Cross-field checks the JSON schema cannot express (clear ``ValueError``)."""
    ks = bw["block_sizes"]
    bad = [ell for ell in bw["decode"]["min_block_sizes"] if ell > max(ks)]
    if bad:
        raise ValueError(f"config blockwise.decode.min_block_sizes {bad}: a minimum block size ℓ must not exceed the "
                         f"largest block size k = {max(ks)} (Sec. 5.3: 1 <= ℓ <= k)")
    if bw["decode"]["head_precision"] == "int8" and device != "cpu":
        raise ValueError("config blockwise.decode.head_precision: int8 proposal heads are CPU-only; use float with "
                         f"device {device!r}")


def train_block_sizes(bw: dict) -> List[int]:
    """Block sizes K that get a model: every k (paper), or only max(k) with ``share_heads``."""
    ks = sorted(bw["block_sizes"])
    return [ks[-1]] if bw["share_heads"] else ks


def models(bw: dict) -> List[tuple]:
    """(variant, K) of every blockwise model to train."""
    return [(v, k) for v in bw["variants"] for k in train_block_sizes(bw)]


def train_spec(bw: dict, variant: str, k, base: str) -> dict:
    """The JSON spec scripts/train.py turns into a fairseq-train command (architecture copied from the base)."""
    t = bw["train"]
    extra = {
        "block-size": int(k),
        "load-base": base,
        "freeze-base": VARIANT_SETUP[variant][2],
        "p1-through-layer": t["p1_through_layer"],
        "all-heads": t["loss"] == "all_heads",
        "label-smoothing": t["label_smoothing"],
    }
    extra.update(t["extra_args"])
    spec = {"arch": "blockwise_transformer_from_base", **{key: t[key] for key in TRAIN_KEYS}, "extra_args": extra}
    if t.get("stop_time_minutes"):  # fastdec.train turns max_minutes into fairseq's --stop-time-hours
        spec["max_minutes"] = t["stop_time_minutes"]
    if not VARIANT_SETUP[variant][2] and t.get("finetune_lr"):
        spec["lr"] = t["finetune_lr"]
    return spec
