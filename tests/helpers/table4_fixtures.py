"""Small archives with the layout of the real Ge et al. Table 4 downloads (the members named by config/wikilarge.yaml
and config/nlpcc18.yaml), served by a local HTTP server on 127.0.0.1 at the real URLs' paths, and a config that
points the real config at that server with a tiny model.

The text is synthetic but learnable in a few hundred updates, so the tiny model's outputs are not all empty:
simplification drops a parenthetical clause; the Chinese learner sentences carry a superfluous 了 that the
correction deletes."""
from __future__ import annotations

import functools
import http.server
import io
import random
import tarfile
import threading
import zipfile
from contextlib import contextmanager
from pathlib import Path
from urllib.parse import urlparse

import yaml

REPO = Path(__file__).resolve().parents[2]
WORDS = "the a cat dog city river old new small big walks sees near under house garden".split()
EXTRA = "which is very old and famous in the region".split()
HANZI = list("我你他们喜欢吃苹果去学校看书写字今天明天朋友老师")


def _tar(path: Path, members: dict, mode: str):
    path.parent.mkdir(parents=True, exist_ok=True)
    with tarfile.open(path, mode) as tar:
        for name, text in members.items():
            data = text.encode("utf-8")
            info = tarfile.TarInfo(name)
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))


def _zip(path: Path, members: dict):
    path.parent.mkdir(parents=True, exist_ok=True)
    with zipfile.ZipFile(path, "w") as z:
        for name, text in members.items():
            z.writestr(name, text)


def _lines(xs) -> str:
    return "\n".join(xs) + "\n"


def _simplification_pair(rng) -> tuple:
    core = [rng.choice(WORDS) for _ in range(rng.randint(4, 9))]
    tgt = " ".join(core + ["."])
    if rng.random() < 0.6:  # a parenthetical the simplification drops
        cut = rng.randint(1, len(core) - 1)
        extra = [",", *EXTRA[:rng.randint(3, len(EXTRA))], ","]
        src = " ".join(core[:cut] + extra + core[cut:] + ["."])
    else:
        src = tgt
    return src[0].upper() + src[1:], tgt[0].upper() + tgt[1:]  # cased, as DRESS's text: lowercased by the config


def wikilarge_archives(root: Path, cfg: dict, n_train: int = 400, n_test: int = 20):
    """The DRESS archive (tar.bz2) and the TurkCorpus repository zip, at the members config/wikilarge.yaml names."""
    w = cfg["gec"]["data"]["wikilarge"]
    rng = random.Random(1)
    train = [_simplification_pair(rng) for _ in range(n_train)]
    valid = [_simplification_pair(rng) for _ in range(20)]
    test = [_simplification_pair(rng) for _ in range(n_test)]
    dress = {w["train"]["src"]: _lines(s for s, _ in train), w["train"]["tgt"]: _lines(t for _, t in train),
             w["valid"]["src"]: _lines(s for s, _ in valid), w["valid"]["tgt"]: _lines(t for _, t in valid)}
    _tar(root / urlparse(w["archives"]["dress"]["url"]).path.lstrip("/"), dress, "w:bz2")
    t = w["test"]
    turk = {t["src"]: _lines(s.lower() for s, _ in test)}  # TurkCorpus is lowercased
    for k, member in enumerate(t["refs"]):  # 8 references: the simplification, some also dropping a first word
        turk[member] = _lines((tt if k % 2 == 0 else " ".join(tt.split()[1:])).lower() for _, tt in test)
    _zip(root / urlparse(w["archives"]["turkcorpus"]["url"]).path.lstrip("/"), turk)
    return test


def _learner_sentence(rng) -> tuple:
    """(words, the index of a superfluous 了 or None)."""
    words = ["".join(rng.choice(HANZI) for _ in range(rng.randint(1, 2))) for _ in range(rng.randint(3, 7))]
    if rng.random() < 0.5:
        i = rng.randint(1, len(words) - 1)
        return words[:i] + ["了"] + words[i:], i
    return words, None


def nlpcc18_archives(root: Path, cfg: dict, n_train: int = 400, n_test: int = 20):
    """The training tar.gz (data.train) and the task repository's zip (gold.01), at config/nlpcc18.yaml's members."""
    c = cfg["gec"]["data"]["nlpcc18"]
    rng = random.Random(2)
    lines = []
    for i in range(n_train):
        words, bad = _learner_sentence(rng)
        src = "".join(words)
        corr = [] if bad is None else ["".join(words[:bad] + words[bad + 1:])]
        lines.append("\t".join([str(i + 1), str(len(corr)), src, *corr]))
    lines.insert(7, "broken line without tabs")  # malformed: dropped and counted
    _tar(root / urlparse(c["archives"]["nlpcc18_train"]["url"]).path.lstrip("/"),
         {c["train"]["member"]: _lines(lines)}, "w:gz")
    blocks = []
    for _ in range(n_test):  # word-segmented gold, as gold.01
        words, bad = _learner_sentence(rng)
        edit = ("A -1 -1|||noop|||-NONE-|||REQUIRED|||-NONE-|||0" if bad is None else
                f"A {bad} {bad + 1}|||R|||-NONE-|||REQUIRED|||-NONE-|||0")
        blocks.append(f"S {' '.join(words)}\n{edit}\n")
    _zip(root / urlparse(c["archives"]["nlpcc18_test"]["url"]).path.lstrip("/"),
         {c["test"]["member"]: "\n".join(blocks)})
    return blocks


@contextmanager
def http_server(root: Path):
    """Serve ``root`` on 127.0.0.1; yields the base URL."""
    handler = functools.partial(http.server.SimpleHTTPRequestHandler, directory=str(root))
    handler.log_message = lambda *a, **k: None
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()


def paper_config(name: str) -> dict:
    return yaml.safe_load((REPO / f"config/{name}.yaml").read_text())


def localised(cfg: dict, base_url: str) -> dict:
    """The config with every archive URL moved to ``base_url`` (same path)."""
    source = cfg["gec"]["data"]["source"]
    for spec in cfg["gec"]["data"][source]["archives"].values():
        spec["url"] = base_url + urlparse(spec["url"]).path
    return cfg


def tiny(cfg: dict, experiment: str) -> dict:
    """The paper config on CPU with a tiny model and a benchmark of every test sentence (1 thread)."""
    cfg["experiment"], cfg["device"] = experiment, "cpu"
    g = cfg["gec"]
    g["bpe"]["merges"] = max(1, min(g["bpe"]["merges"], 300))
    g["model"] = {"arch": "transformer", "max_update": 800, "max_tokens": 1024, "lr": 0.003, "warmup_updates": 50,
                  "save_interval_updates": 400, "threads": 1, "mem_mb": 2000, "runtime": 20,
                  "extra_args": {"encoder-layers": 1, "decoder-layers": 1, "encoder-embed-dim": 64,
                                 "decoder-embed-dim": 64, "encoder-ffn-embed-dim": 128, "decoder-ffn-embed-dim": 128,
                                 "encoder-attention-heads": 2, "decoder-attention-heads": 2,
                                 "share-all-embeddings": True}}
    g["benchmark"].update(sentences=None, threads=1, warmup=1, gpus=0, mem_mb=2000, runtime=20)
    if g["data"]["source"] == "nlpcc18":
        g["data"]["nlpcc18"]["valid_size"] = 20  # of the fixture's 400 training sentences
    return cfg
