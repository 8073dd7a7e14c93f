"""Tiny BART fixtures: random ``bart`` models of BART's real architecture (fairseq's ``bart_base_architecture``:
learned positions with fairseq's offset, layernorm_embedding, GELU, no embedding scaling, post-norm, shared
embeddings) at toy sizes, and archives with the layout of the public fairseq releases (``bart.base.tar.gz``:
``bart.base/model.pt`` + ``bart.base/dict.txt``; the GPT-2 BPE files ``encoder.json`` / ``vocab.bpe`` / ``dict.txt``).

The real ``model.pt`` holds one embedding row more than ``dict.txt`` has symbols (+4 specials): the ``<mask>`` the
denoising task adds. The fixtures keep that, so the fine-tuning code meets the real shapes.
"""
import argparse
import io
import json
import tarfile
from pathlib import Path
from types import SimpleNamespace

import torch

# GPT-2 byte-level BPE fixture: the bytes of printable ASCII as single-character tokens (encoder.json maps token ->
# id; every id is a dict.txt symbol) plus a few merges, so real text round-trips through fairseq's GPT-2 encoder.
MERGES = ["t h", "Ġ t", "Ġt h", "e r", "Ġ a", "i n", "Ġ s", "o n", "Ġth e", "a t"]


def bytes_to_unicode():
    from fairseq.data.encoders.gpt2_bpe_utils import bytes_to_unicode as b2u

    return b2u()


def gpt2_files(root: Path) -> dict:
    """Write encoder.json, vocab.bpe and dict.txt (the gpt2_bpe layout) under ``root``; returns their paths."""
    root.mkdir(parents=True, exist_ok=True)
    symbols = [bytes_to_unicode()[b] for b in range(256)]
    symbols += ["".join(m.split()) for m in MERGES]
    encoder = {s: i for i, s in enumerate(symbols)}
    (root / "encoder.json").write_text(json.dumps(encoder))
    (root / "vocab.bpe").write_text("#version: 0.2\n" + "\n".join(MERGES) + "\n")
    # fairseq's gpt2 dict.txt lists ids (as strings) with counts, most frequent first
    (root / "dict.txt").write_text("".join(f"{i} {1000 - i % 997}\n" for i in range(len(symbols))))
    return {"encoder.json": root / "encoder.json", "vocab.bpe": root / "vocab.bpe", "dict.txt": root / "dict.txt"}


def bart_args(layers=2, decoder_layers=None, embed_dim=16, heads=2, ffn_dim=32, max_positions=64, arch="bart_base"):
    """The argparse namespace fairseq-train builds for ``--arch bart_base`` with toy sizes."""
    from fairseq.models.bart.model import bart_base_architecture

    args = argparse.Namespace(
        arch=arch, encoder_layers=layers, decoder_layers=decoder_layers or layers,
        encoder_embed_dim=embed_dim, decoder_embed_dim=embed_dim, encoder_ffn_embed_dim=ffn_dim,
        decoder_ffn_embed_dim=ffn_dim, encoder_attention_heads=heads, decoder_attention_heads=heads,
        max_source_positions=max_positions, max_target_positions=max_positions, dropout=0.0,
        attention_dropout=0.0, activation_dropout=0.0, relu_dropout=0.0, task="translation")
    bart_base_architecture(args)
    return args


def build_random_bart(dictionary, *, layers=2, decoder_layers=None, embed_dim=16, heads=2, ffn_dim=32,
                      max_positions=64, seed=0, dtype=torch.float64, init_std=None):
    """A randomly initialised fairseq ``BARTModel`` (eval mode) over ``dictionary``."""
    from fairseq.models.bart.model import BARTModel

    args = bart_args(layers, decoder_layers, embed_dim, heads, ffn_dim, max_positions)
    torch.manual_seed(seed)
    model = BARTModel.build_model(args, SimpleNamespace(source_dictionary=dictionary, target_dictionary=dictionary))
    if init_std is not None:
        g = torch.Generator().manual_seed(seed)
        with torch.no_grad():
            for p in model.parameters():
                if p.dim() >= 2:
                    p.copy_(torch.randn(p.shape, generator=g) * init_std)
    return model.to(dtype).eval()


def bart_checkpoint_bytes(dict_path: Path, *, layers=2, decoder_layers=None, embed_dim=16, seed=0) -> bytes:
    """A pretrained-BART ``model.pt`` as fairseq publishes it: args + the model's state with the ``<mask>`` row."""
    from fairseq.data import Dictionary

    d = Dictionary.load(str(dict_path))
    d.add_symbol("<mask>")  # the denoising task's extra symbol: one embedding row more than dict.txt
    model = build_random_bart(d, layers=layers, decoder_layers=decoder_layers, embed_dim=embed_dim, seed=seed,
                              dtype=torch.float32, max_positions=1024)  # 1,026 position rows, as released
    args = bart_args(layers, decoder_layers, embed_dim, max_positions=1024)
    args.task, args.criterion = "denoising", "cross_entropy"
    buf = io.BytesIO()
    torch.save({"args": args, "model": model.state_dict(), "last_optimizer_state": None,
                "optimizer_history": [{"criterion_name": "CrossEntropyCriterion", "optimizer_name": "FairseqAdam",
                                       "lr_scheduler_state": {}, "num_updates": 500000}],
                "extra_state": {}}, buf)
    return buf.getvalue()


def add_bytes(tar: tarfile.TarFile, name: str, data: bytes) -> None:
    info = tarfile.TarInfo(name)
    info.size = len(data)
    tar.addfile(info, io.BytesIO(data))


def write_bart_archive(path: Path, gpt2_dict: Path, name: str = "bart.base", **sizes) -> Path:
    """``bart.base.tar.gz`` (or ``bart.large``) of the real layout: ``<name>/model.pt``, ``<name>/dict.txt``."""
    with tarfile.open(path, "w:gz") as tar:
        add_bytes(tar, f"{name}/model.pt", bart_checkpoint_bytes(gpt2_dict, **sizes))
        add_bytes(tar, f"{name}/dict.txt", Path(gpt2_dict).read_bytes())
    return path
