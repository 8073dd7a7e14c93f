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


# ---------------------------------------------------------------------------- a local HTTP server of the releases
WORDS = ("the council said on monday that new rules for city parks will start in june after a long debate about "
         "noise dogs and late games police will check the parks at night").split()


def cnndm_lines(n: int, seed: int):
    """(articles, summaries): untokenised lines of the CNN-DM layout (one article / summary per line); each summary
    repeats the article's first words, so a few updates teach a model to copy."""
    import random

    rng = random.Random(seed)
    arts, sums = [], []
    for _ in range(n):
        words = [rng.choice(WORDS) for _ in range(rng.randint(8, 14))]
        arts.append(" ".join(words).capitalize() + ". " + " ".join(rng.choice(WORDS) for _ in range(6)) + ".")
        sums.append(" ".join(words[:5]).capitalize() + ".")
    return arts, sums


def write_release_tree(root: Path) -> Path:
    """The files of the real URLs' last path parts under ``root``: cnn_dm_v2.tgz (cnn_cln/{train,val,test}.{source,
    target}), bart.base.tar.gz and bart.large.tar.gz (tiny random BART, the large one with other weights), and the
    GPT-2 BPE files."""
    root.mkdir(parents=True, exist_ok=True)
    files = gpt2_files(root)
    with tarfile.open(root / "cnn_dm_v2.tgz", "w:gz") as tar:
        for split, n, seed in (("train", 60, 1), ("val", 6, 2), ("test", 5, 3)):
            arts, sums = cnndm_lines(n, seed)
            add_bytes(tar, f"cnn_cln/{split}.source", ("\n".join(arts) + "\n").encode())
            add_bytes(tar, f"cnn_cln/{split}.target", ("\n".join(sums) + "\n").encode())
    write_bart_archive(root / "bart.base.tar.gz", files["dict.txt"], name="bart.base", layers=2, seed=1)
    write_bart_archive(root / "bart.large.tar.gz", files["dict.txt"], name="bart.large", layers=2, decoder_layers=3,
                       seed=2)
    return root


def serve(root: Path):
    """(server, base url) of a threaded HTTP server on 127.0.0.1 serving ``root``; ``server.shutdown()`` stops it."""
    import functools
    import http.server
    import threading

    handler = functools.partial(http.server.SimpleHTTPRequestHandler, directory=str(root))
    handler.log_message = lambda *a, **k: None
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server, f"http://127.0.0.1:{server.server_address[1]}"


def local_urls(cfg: dict, base: str) -> dict:
    """Every download URL of a config pointed at the local server (same file names)."""
    def point(spec):
        spec["url"] = base + "/" + spec["url"].rsplit("/", 1)[1]

    for spec in cfg.get("data", {}).get("download", {}).get("archives", {}).values():
        point(spec)
    for group in ("checkpoints", "gpt2"):
        for spec in cfg.get("bart", {}).get(group, {}).values():
            point(spec)
    for spec in cfg.get("gec", {}).get("data", {}).get("bea19", {}).get("archives", {}).values():
        point(spec)
    return cfg


# ---------------------------------------------------------------------------- BEA-2019 / CoNLL fixtures (M2)
GEC_PAIRS = [("He go to school every day .", [(1, 2, "goes")]), ("She have a cat .", [(1, 2, "has")]),
             ("They plays football .", [(1, 2, "play")]), ("The park is nice .", []),
             ("I has two dogs .", [(1, 2, "have")]), ("We likes the music .", [(1, 2, "like")])]


def m2_text(n: int, shift: int = 0) -> str:
    """An M2 file of ``n`` sentences (the BEA-2019 / CoNLL format, one annotator)."""
    blocks = []
    for i in range(n):
        src, edits = GEC_PAIRS[(i + shift) % len(GEC_PAIRS)]
        lines = [f"S {src}"] + [f"A {a} {b}|||R:VERB|||{c}|||REQUIRED|||-NONE-|||0" for a, b, c in edits]
        if not edits:
            lines.append("A -1 -1|||noop|||-NONE-|||REQUIRED|||-NONE-|||0")
        blocks.append("\n".join(lines))
    return "\n\n".join(blocks) + "\n\n"


def write_gec_release_tree(root: Path, local: Path) -> dict:
    """The BEA-2019 / CoNLL archives of config/gec_bart.yaml (their real member paths) under ``root``, the licensed
    Lang-8 / NUCLE M2 files under ``local``; returns the local paths."""
    root.mkdir(parents=True, exist_ok=True)
    local.mkdir(parents=True, exist_ok=True)
    for name, member, n in (("wi+locness_v2.1.bea19.tar.gz", "wi+locness/m2/ABC.train.gold.bea19.m2", 30),
                            ("fce_v2.1.bea19.tar.gz", "fce/m2/fce.train.gold.bea19.m2", 30),
                            ("release2.3.1.tar.gz", "release2.3.1/revised/data/official-preprocessed.m2", 8),
                            ("conll14st-test-data.tar.gz", "conll14st-test-data/noalt/official-2014.combined.m2", 5)):
        with tarfile.open(root / name, "w:gz") as tar:
            add_bytes(tar, member, m2_text(n, shift=len(name)).encode())
    paths = {"lang8": local / "lang8.train.auto.bea19.m2", "nucle": local / "nucle.train.gold.bea19.m2"}
    for i, p in enumerate(paths.values()):
        p.write_text(m2_text(20, shift=i))
    return paths
