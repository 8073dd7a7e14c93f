"""The decoder's parameters and its feed-forward share (Hsu et al. §2.3: "the feed-forward sub-layer is responsible
for 33% of parameters within the 6-layer decoder"), counted on a trained checkpoint or on the paper's shape built by
the plugin's own model code (no weights allocated)."""
from __future__ import annotations

import re
from typing import Iterable, Tuple

_FFN = re.compile(r"^decoder\.layers\.\d+\.fc[12]\.")
# Hsu §3: Transformer-base students with a 6-layer SSRU decoder, 32K SentencePiece units shared by both languages
PAPER_SHAPE = {"decoder_self_attn": "ssru", "decoder_no_ffn": False, "share_all_embeddings": True,
               "encoder_layers": 6, "decoder_layers": 6}
PAPER_VOCABULARY = 32000


def decoder_split(named: Iterable[Tuple[str, object]]) -> Tuple[int, int]:
    """(decoder parameters, decoder feed-forward parameters) of distinct ``(name, tensor)`` pairs of a model (tied
    embeddings given once, under any name: a decoder's input/output embedding belongs to it even when the encoder
    shares it)."""
    total = ffn = 0
    for name, tensor in named:
        if not name.startswith("decoder.") or name.endswith(("_float_tensor", "version")) or "head_gate" in name:
            continue
        total += tensor.numel()
        ffn += tensor.numel() if _FFN.match(name) else 0
    return int(total), int(ffn)


def checkpoint_decoder_split(state: dict) -> Tuple[int, int]:
    """:func:`decoder_split` of a loaded checkpoint's ``model`` state (tied tensors share storage: counted once)."""
    seen, named = set(), []
    for name, tensor in state.items():
        if name.startswith("decoder.") and tensor.data_ptr() not in seen:
            seen.add(tensor.data_ptr())
            named.append((name, tensor))
    return decoder_split(named)


def paper_shape_split() -> Tuple[int, int]:
    """:func:`decoder_split` of the paper's student shape, built by the plugin's ``efficient_student`` on the meta
    device (shapes only)."""
    import argparse
    from types import SimpleNamespace

    import torch
    from fairseq.data import Dictionary

    from fastdec_fairseq.models.efficient_student import EfficientStudentModel

    words = Dictionary()
    for i in range(PAPER_VOCABULARY - len(words)):
        words.add_symbol(f"w{i}")
    task = SimpleNamespace(source_dictionary=words, target_dictionary=words)
    with torch.device("meta"):
        model = EfficientStudentModel.build_model(argparse.Namespace(**PAPER_SHAPE), task)
    return decoder_split((f"decoder.{n}", p) for n, p in model.decoder.named_parameters())
