"""Start a student from the AT verifier's weights (``students.init_from: verifier``): every parameter whose name and
shape the two models share is copied; the rest (SSRU / AAN self-attention, encoder or decoder layers deeper than the
verifier's) keep their fresh initialisation. ``fastdec students-warm-start`` writes that first checkpoint.

Why: on the demo's few minutes of CPU a student trained from scratch reaches BLEU 1-6 against the verifier's ~20
(docs/PERFORMANCE.md), so Hsu et al.'s claims ("BLEU within 1.0 of the standard decoder") cannot be checked at all.
Starting every student -- the standard-attention baseline included -- from the verifier spends the budget on what the
students change. The paper trains its students from scratch (``init_from: none``, the paper-scale configs).

Student layer ``i`` takes verifier layer ``i`` (encoder and decoder alike); a shallower student keeps the verifier's
lowest layers. A deeper student's extra layers start with zero output projections (attention ``out_proj`` and
``fc2``): in a pre-norm model such a layer adds nothing to the residual stream, so the deep student starts by
computing what the verifier's layers compute, and training grows the new layers from there.

CLI: ``fastdec students-warm-start --verifier model.pt --data-bin DIR --spec JSON --user-dir PLUGIN
--out init.pt [--report copied.json]``; ``--spec`` is the student's training spec (what the training rule gets).
"""
from __future__ import annotations

import argparse
import json
import os
from typing import Dict, List

import torch

from fastdec.tracks.students.plan import SHARED_WITH_VERIFIER

__all__ = ["build_student", "copy_shared", "warm_start"]

# settings that change what a copied tensor computes: they must be equal in the verifier and the student (the config
# check compares the flags; the built models' settings include the architectures' defaults)
_SAME = tuple(flag.replace("-", "_") for flag in SHARED_WITH_VERIFIER) + ("activation_fn",)


def build_student(spec: dict, data_bin: str, user_dir: str):
    """(fairseq cfg, untrained model) of a student training spec, built by fairseq-train's own parser, its fresh
    tensors drawn from the spec's seed (fairseq's --seed, 1 unless set)."""
    from fairseq import options, tasks
    from fairseq.dataclass.utils import convert_namespace_to_omegaconf

    from fastdec.train import fairseq_train_command

    cmd = fairseq_train_command(spec, data_bin, "checkpoints", user_dir=user_dir)  # only parsed, nothing is saved
    parser = options.get_training_parser()
    args = options.parse_args_and_arch(parser, cmd[1:])
    cfg = convert_namespace_to_omegaconf(args)
    task = tasks.setup_task(cfg.task)
    # the student's own tensors start as fairseq-train would draw them for its seed: the same start on every run
    torch.manual_seed(cfg.common.seed)
    return cfg, task.build_model(cfg.model)


def copy_shared(model, verifier_state: Dict[str, torch.Tensor], pre_norm: bool = False) -> Dict[str, List[str]]:
    """Copy into ``model`` every tensor of ``verifier_state`` with the same name and shape; returns the names
    ``copied``, ``fresh`` (the student's own), ``shape_mismatch`` and ``zeroed`` (``pre_norm``: the output projections
    of layers the verifier does not have at all, so that they start as the identity)."""
    own = model.state_dict()
    report: Dict[str, List[str]] = {"copied": [], "fresh": [], "shape_mismatch": []}
    with torch.no_grad():
        for name, tensor in own.items():
            theirs = verifier_state.get(name)
            if theirs is None:
                report["fresh"].append(name)
            elif theirs.shape != tensor.shape:
                report["shape_mismatch"].append(name)
            else:
                tensor.copy_(theirs.to(tensor.dtype))
                report["copied"].append(name)
        report["zeroed"] = []
        if pre_norm:
            new_layers = {_layer(n) for n in report["fresh"]} - {_layer(n) for n in report["copied"]} - {None}
            for name, tensor in own.items():
                if _layer(name) in new_layers and (".out_proj." in name or ".fc2." in name):
                    tensor.zero_()
                    report["zeroed"].append(name)
    return report


def _layer(name: str):
    """``encoder.layers.4.fc2.weight`` -> ``encoder.layers.4``; None outside the layer stacks."""
    parts = name.split(".")
    return ".".join(parts[:3]) if len(parts) > 3 and parts[1] == "layers" else None


def _check_compatible(verifier_cfg, student_cfg, verifier: str) -> None:
    for key in _SAME:
        a, b = getattr(verifier_cfg, key, None), getattr(student_cfg, key, None)
        if a != b:
            flag = key.replace("_", "-")
            raise ValueError(f"students.init_from: verifier needs the students' {flag} to equal the verifier's "
                             f"({verifier}: {a!r}, students: {b!r}); set students.train.extra_args.{flag} to match "
                             "or use init_from: none")


def warm_start(verifier: str, data_bin: str, spec: dict, user_dir: str, out: str) -> Dict[str, List[str]]:
    from fairseq import checkpoint_utils
    from omegaconf import OmegaConf

    from fastdec.train import write_start_checkpoint

    if not os.path.isfile(verifier):
        raise FileNotFoundError(f"students.init_from: verifier: no checkpoint {verifier} (train the verifier first)")
    cfg, model = build_student(spec, data_bin, user_dir)
    state = checkpoint_utils.load_checkpoint_to_cpu(verifier)
    _check_compatible(state["cfg"]["model"], cfg.model, verifier)
    pre_norm = bool(cfg.model.encoder_normalize_before and cfg.model.decoder_normalize_before)
    report = copy_shared(model, state["model"], pre_norm=pre_norm)
    if report["shape_mismatch"]:
        raise ValueError(f"students.init_from: verifier: {verifier} has tensors of other shapes than the student "
                         f"({', '.join(report['shape_mismatch'][:4])} ...): the students' sizes must be the verifier's")
    cfg = OmegaConf.to_container(cfg, resolve=True, enum_to_str=True)
    write_start_checkpoint(cfg, model.state_dict(), out, state.get("optimizer_history", [])[-1:])
    return report


def add_arguments(ap: argparse.ArgumentParser) -> None:
    ap.add_argument("--verifier", required=True)
    ap.add_argument("--data-bin", required=True)
    ap.add_argument("--spec", required=True, help="the student's training spec (JSON)")
    ap.add_argument("--user-dir", required=True)
    ap.add_argument("--out", required=True)
    ap.add_argument("--report", help="JSON file: the names copied from the verifier and those left fresh")


def main(a: argparse.Namespace) -> int:
    report = warm_start(a.verifier, a.data_bin, json.loads(a.spec), a.user_dir, a.out)
    print(f"{len(report['copied'])} tensors from {a.verifier}, {len(report['fresh'])} fresh: "
          f"{', '.join(report['fresh']) or '-'}", flush=True)
    if a.report:
        with open(a.report, "w") as f:
            json.dump(report, f, indent=1)
    return 0

