"""A NAT drafter checkpoint initialised from ALL weights of the AT verifier (encoder, decoder, embeddings).

The ``nat_block_drafter`` has exactly the parameters of a fairseq Transformer (its decoder only drops the causal
mask), plus one embedding row for ``<mask>``. Starting the drafter from the verifier gives it the verifier's
source encoding and target language model for free; training then only has to teach the decoder to fill ``k``
masks at once, which matters when the training budget is minutes on a CPU (demo config). fairseq-train starts
from this file with ``--finetune-from-model`` (first launch only: a killed run still resumes from its own
``checkpoint_last.pt``); optimizer, scheduler and data loader start fresh. The plugin's ``--init-encoder-from``
is the lighter alternative (encoder and embeddings only).

The ``<mask>`` rows of the token embeddings (and of a separate output projection) are drawn from
``N(0, embed_dim^-0.5)`` like fairseq's embedding initialisation (seeded).
"""
from __future__ import annotations

import os
from typing import Dict, List

import torch

__all__ = ["ROW_KEYS", "build_init_checkpoint"]

ROW_KEYS = ("encoder.embed_tokens.weight", "decoder.embed_tokens.weight", "decoder.output_projection.weight")


def build_init_checkpoint(verifier_checkpoint: str, dict_path: str, output: str, *, seed: int = 1) -> Dict:
    """Write ``output``: the verifier checkpoint with the ``<mask>`` row added, and no optimizer state.

    ``dict_path`` is the data-bin's target dictionary (``dict.<tgt>.txt``) both models are trained on; the
    verifier's embedding matrices must have exactly ``len(dictionary)`` rows (else: ``ValueError``, the drafter
    would be trained on another vocabulary). Returns a small report.
    """
    from fairseq import checkpoint_utils
    from fairseq.data import Dictionary

    from fastdec_fairseq.models.nat_block_drafter import MASK_SYMBOL

    if not os.path.isfile(verifier_checkpoint):
        raise ValueError(f"verifier checkpoint not found: {verifier_checkpoint}")
    if not os.path.isfile(dict_path):
        raise ValueError(f"dictionary not found: {dict_path}")
    d = Dictionary.load(dict_path)
    n = len(d)
    if MASK_SYMBOL in d.indices:
        raise ValueError(f"{dict_path} already holds {MASK_SYMBOL}; expected the plain translation dictionary")
    state = checkpoint_utils.load_checkpoint_to_cpu(verifier_checkpoint)
    model: Dict[str, torch.Tensor] = state["model"]
    g = torch.Generator().manual_seed(seed)
    extended: List[str] = []
    new_rows: Dict[int, torch.Tensor] = {}
    for key in ROW_KEYS:
        if key not in model:
            continue
        w = model[key]
        if w.dim() != 2 or w.size(0) != n:
            raise ValueError(f"{verifier_checkpoint}: {key} has shape {tuple(w.shape)} but the dictionary "
                             f"{dict_path} has {n} symbols; train the drafter on the verifier's data-bin")
        # tied matrices (share-all-embeddings) get the same new row
        row = new_rows.get(w.data_ptr())
        if row is None:
            row = (torch.randn(1, w.size(1), generator=g) * w.size(1) ** -0.5).to(w.dtype)
            new_rows[w.data_ptr()] = row
        model[key] = torch.cat([w, row], 0)
        extended.append(key)
    if "decoder.embed_tokens.weight" not in extended:
        raise ValueError(f"{verifier_checkpoint} does not look like a fairseq transformer checkpoint")
    state["model"] = model
    state["last_optimizer_state"] = None
    # a fresh run: epoch 1, no meters, no best loss, no training time carried over from the verifier
    state["extra_state"] = {"train_iterator": {"epoch": 1, "iterations_in_epoch": 0, "version": 2}}
    state.pop("criterion", None)
    os.makedirs(os.path.dirname(os.path.abspath(output)), exist_ok=True)
    tmp = output + ".part"
    torch.save(state, tmp)
    os.replace(tmp, output)
    return {"verifier": verifier_checkpoint, "output": output, "dictionary_symbols": n,
            "extended": extended, "parameters": sum(v.numel() for k, v in model.items() if v.is_floating_point())}
