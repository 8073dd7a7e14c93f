"""A fairseq checkpoint to start fine-tuning from, made of the public pretrained BART's weights.

``bart.base.tar.gz`` / ``bart.large.tar.gz`` (dl.fbaipublicfiles.com/fairseq/models/) hold ``<name>/model.pt``. All
its encoder layers are kept; the decoder keeps every layer, or the layers ``decoder_layers`` names, renumbered
0, 1, ... in that order (the 12+2 GEC model of Ge et al. Table 3 keeps two of BART-large's twelve). The embeddings
keep BART's extra ``<mask>`` row: fairseq's ``BARTModel`` drops it itself when the fine-tuning dictionary (the
GPT-2 ``dict.txt``) has no ``<mask>``. fairseq-train starts from the file with ``--finetune-from-model`` (fresh
optimiser, schedule and data loader).
"""
from __future__ import annotations

import io
import os
import re
from typing import Dict, List, Optional, Sequence

import torch

__all__ = ["read_bart_state", "select_layers", "build_bart_init"]

_LAYER = re.compile(r"^(encoder|decoder)\.layers\.(\d+)\.(.*)$")


def read_bart_state(archive: str, member: str) -> dict:
    """The checkpoint dict of ``member`` (e.g. ``bart.base/model.pt``) inside the release archive."""
    from fastdec.data.download import read_member

    if not os.path.isfile(archive):
        raise ValueError(f"BART archive not found: {archive} (the fetch rule downloads it; config bart.checkpoints)")
    state = torch.load(io.BytesIO(read_member(archive, member)), map_location="cpu", weights_only=False)
    if not isinstance(state, dict) or "model" not in state:
        raise ValueError(f"{archive}::{member} is not a fairseq checkpoint (no 'model' state)")
    return state


def num_layers(model: Dict[str, torch.Tensor], side: str) -> int:
    ids = {int(m.group(2)) for k in model if (m := _LAYER.match(k)) and m.group(1) == side}
    return max(ids) + 1 if ids else 0


def select_layers(model: Dict[str, torch.Tensor], side: str, keep: Optional[Sequence[int]]) -> Dict[str, torch.Tensor]:
    """``model`` with only the ``side`` layers in ``keep`` (renumbered 0..len(keep)-1 in that order); None keeps all."""
    if keep is None:
        return dict(model)
    have = num_layers(model, side)
    bad = [i for i in keep if not 0 <= int(i) < have]
    if bad or len(set(keep)) != len(keep) or not keep:
        raise ValueError(f"{side} layers {list(keep)}: BART has {side} layers 0..{have - 1}; name each at most once")
    new_index = {int(i): j for j, i in enumerate(keep)}
    out = {}
    for key, value in model.items():
        m = _LAYER.match(key)
        if m and m.group(1) == side:
            i = int(m.group(2))
            if i in new_index:
                out[f"{side}.layers.{new_index[i]}.{m.group(3)}"] = value
        else:
            out[key] = value
    return out


def build_bart_init(archive: str, member: str, output: str, *, decoder_layers: Optional[List[int]] = None) -> dict:
    """Write ``output`` (see the module docstring); returns a small report."""
    from fastdec.train import write_start_checkpoint

    state = read_bart_state(archive, member)
    model = state["model"]
    before = {side: num_layers(model, side) for side in ("encoder", "decoder")}
    model = select_layers(model, "decoder", decoder_layers)
    write_start_checkpoint(None, model, output, [{"criterion_name": "CrossEntropyCriterion",
                                                  "optimizer_name": "FairseqAdam", "lr_scheduler_state": {},
                                                  "num_updates": 0}])
    return {"archive": archive, "member": member, "output": output, "bart_layers": before,
            "decoder_layers_kept": decoder_layers if decoder_layers is not None else list(range(before["decoder"])),
            "embedding_rows": int(model["encoder.embed_tokens.weight"].shape[0])}
