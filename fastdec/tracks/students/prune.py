"""``fastdec students-prune``: remove the heads an L0-trained student switched off, a smaller model, not a masked
one.

Each attention's deterministic Hard Concrete gate ``g`` (eval mode) is folded into its output projection
(``W_o[:, head h] *= g_h``: the head outputs of the gated model were multiplied by exactly these values), the
heads with ``g_h = 0`` are cut out of the q/k/v/out projections, and the gates are removed. The result is an
ordinary ``efficient_student`` with per-layer head counts (``--encoder-heads`` / ``--enc-dec-heads`` /
``--decoder-self-heads``) that fairseq and the engine's StudentVerifier load like any other checkpoint; it
computes the same function as the gated model in eval mode. Fine-tune it with ``--finetune-from-model OUT
--heads-from OUT`` (the paper's 100-150k updates after pruning).

CLI: ``fastdec students-prune --checkpoint gated.pt --data-bin DIR --out pruned.pt [--report heads.json]``
(``--no-prune``: the same fresh start checkpoint of an ungated model, for its L0 phase).
"""
from __future__ import annotations

import argparse
import json
from typing import Dict, List

import torch

__all__ = ["prune_model", "prune_checkpoint", "head_counts"]

_KIND = {"--encoder-heads": "encoder_heads", "--enc-dec-heads": "enc_dec_heads",
         "--decoder-self-heads": "decoder_self_heads"}


def head_counts(model) -> Dict[str, List[int]]:
    """Heads per layer of each attention kind (``encoder_heads``, ``enc_dec_heads``, ``decoder_self_heads``)."""
    out: Dict[str, List[int]] = {}
    for attn, flag, _ in model.attention_modules():
        out.setdefault(_KIND[flag], []).append(int(attn.num_heads))
    return out


@torch.no_grad()
def prune_model(model, min_heads_per_layer: int = 0) -> Dict[str, List[int]]:
    """Prune ``model`` (a gated efficient_student) in place; returns the kept head counts per layer.

    A layer that would lose every head raises ``ValueError`` before anything changes, unless
    ``min_heads_per_layer`` > 0: it then keeps that many of its most open heads (largest log_alpha), whose output
    weights are multiplied by their gate (0) like every head's, so the model computes what the gated one did."""
    from fastdec_fairseq.models.head_gates import detach_gate, shrink_heads

    if not hasattr(model, "attention_modules"):
        raise TypeError(f"head pruning needs an efficient_student model, got {type(model).__name__}")
    plan = []
    for attn, flag, layer in model.attention_modules():
        gate = getattr(attn, "head_gate", None)
        if gate is None:
            raise ValueError(f"{flag} layer {layer} has no head gate: train the student with --head-gates and the "
                             f"l0_head_cross_entropy criterion before pruning")
        gate.eval()
        g = gate().detach()
        keep = [h for h in range(attn.num_heads) if g[h] > 0]
        if not keep and min_heads_per_layer > 0:
            order = torch.argsort(gate.alpha().detach(), descending=True).tolist()
            keep = sorted(order[:min_heads_per_layer])
            print(f"{flag[2:]} layer {layer}: every gate closed; keeping head(s) {keep} with zero output weights "
                  f"(min_heads_per_layer={min_heads_per_layer})", flush=True)
        if not keep:
            raise ValueError(f"pruning would remove every head of {flag[2:]} layer {layer} (all gates are 0): "
                             f"lower the L0 penalty --l0-lambda, or train the L0 phase for fewer updates")
        plan.append((attn, g, keep))
    for attn, g, keep in plan:
        D = attn.head_dim
        w = attn.out_proj.weight
        w.mul_(g.to(w.dtype).repeat_interleave(D).unsqueeze(0))
        detach_gate(attn)
        shrink_heads(attn, keep)
    return head_counts(model)


def prune_checkpoint(checkpoint: str, data_bin: str, out: str, prune: bool = True,
                     min_heads_per_layer: int = 0) -> Dict[str, List[int]]:
    """Write ``out``: the start of the next training phase, ``checkpoint`` pruned (``prune``; a gated checkpoint) or
    as it is, without optimizer state and with a fresh data-loader state (the training-time record is dropped here
    too; fastdec.train.fresh_start does that for every ``--finetune-from-model`` start)."""
    from fairseq import checkpoint_utils

    from fastdec.engine.load import load_model
    from fastdec.train import write_start_checkpoint

    loaded = load_model(checkpoint, data_bin, dtype="float32")
    counts = prune_model(loaded.model, min_heads_per_layer) if prune else head_counts(loaded.model)
    state = checkpoint_utils.load_checkpoint_to_cpu(checkpoint)
    if prune:
        cfg_model = state["cfg"]["model"]
        for name, values in counts.items():
            setattr(cfg_model, name, ",".join(map(str, values)))
        cfg_model.head_gates = False
        cfg_model.heads_from = None
    write_start_checkpoint(state["cfg"], loaded.model.state_dict(), out, state.get("optimizer_history", [])[-1:])
    return counts


def add_arguments(ap: argparse.ArgumentParser) -> None:
    ap.add_argument("--checkpoint", required=True, help="gated efficient_student checkpoint (after the L0 phase)")
    ap.add_argument("--data-bin", required=True, help="folder with the dictionaries")
    ap.add_argument("--out", required=True, help="pruned checkpoint to write")
    ap.add_argument("--report", help="JSON file: kept heads per layer and in total")
    ap.add_argument("--no-prune", action="store_true", help="only write a fresh start checkpoint (the L0 phase's)")
    ap.add_argument("--min-heads-per-layer", type=int, default=0,
                    help="0: a layer whose gates all closed is an error; N: it keeps its N most open heads, zeroed")


def main(a: argparse.Namespace) -> int:
    if a.min_heads_per_layer < 0:
        raise ValueError(f"--min-heads-per-layer must be >= 0, got {a.min_heads_per_layer}")
    counts = prune_checkpoint(a.checkpoint, a.data_bin, a.out, prune=not a.no_prune,
                              min_heads_per_layer=a.min_heads_per_layer)
    summary = {"heads": counts, "kept": {k: sum(v) for k, v in counts.items()}}
    if a.report:
        with open(a.report, "w") as f:
            json.dump(summary, f, indent=1)
    print(json.dumps(summary["kept"]))
    return 0

