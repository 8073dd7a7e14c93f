"""The super-resolution track (Stern et al. 2018, Sec. 7.2): what it builds under ``results/<experiment>/superres/``.

* ``data/{train,valid,test}.{lr,hr}`` patches of the image, or CelebA faces from ``results/superres_downloads/``
  (``source: celeba``, the paper's scale) (rule superres_data, :mod:`.images`) and their data-bin
  ``data-bin/`` with one joined dictionary of intensity tokens (rule superres_binarize);
* ``models/base``: a Transformer low -> high resolution (the ONE training rule); ``models/<variant>_k<K>``: its
  blockwise proposal heads, K = max(block_sizes), frozen (regular) or fine-tuned (finetune), with the Blockwise track's
  training recipe (fastdec.tracks.blockwise.plan.train_spec);
* ``bench/valid/<variant>_k<K>``: greedy decoding and, at every k, exact (``blockwise:k=k``) and distance-based
  (``blockwise:k=k:eps=E``) blockwise decoding of the validation patches;
* ``tables/stern_table2.csv`` (mean accepted block size per k and column, the paper's beside), and
  ``stern_figure4_superres.csv``/``.png`` (wall-clock speedup against mean block size, the "Both" column).
"""
from __future__ import annotations

import copy
import functools
import json
import os
from typing import Dict, List, Tuple

from fastdec.layout import ResultsLayout
from fastdec.tracks.base import TRACKS_DIR, BenchRun, TableItem, schema_path, section as validated_section
from fastdec.tracks.specs import Model

TRACK = "superres/"
SRC, TGT = "lr", "hr"
MODEL_NAMES = r"base|(?:regular|finetune)_k\d+"
_TABLES = "superres/tables"


@functools.lru_cache(maxsize=None)
def _config_definitions() -> dict:
    """The config schema's definitions, read once (every model of the track is checked against them)."""
    import yaml

    with open(os.path.join(os.path.dirname(os.path.dirname(TRACKS_DIR)), "workflow/schemas/config.schema.yaml"),
              encoding="utf-8") as f:
        return yaml.safe_load(f)["definitions"]


def _check_base(base: dict) -> None:
    """``superres.base`` against the config schema's model spec (the MT chain's ``train.<model>``)."""
    import jsonschema

    try:
        jsonschema.validate(base, {"$ref": "#/definitions/train_spec", "definitions": _config_definitions()})
    except jsonschema.ValidationError as e:
        where = ".".join(str(p) for p in e.absolute_path)
        raise ValueError(f"config superres.base{'.' + where if where else ''}: {e.message}") from None


def heads_section(sr: dict) -> dict:
    """``superres.heads`` checked against, and filled in with the defaults of, the Blockwise track's ``train``."""
    from snakemake.utils import validate

    bw = {"block_sizes": sr["block_sizes"], "train": copy.deepcopy(sr["heads"])}
    try:
        validate(bw, schema_path("blockwise"))
    except Exception as e:  # noqa: BLE001  (snakemake's WorkflowError)
        raise ValueError(f"config superres.heads (the keys of blockwise.train): {e}") from None
    return bw["train"]


def section(config: dict) -> dict:
    """The ``superres:`` section validated (defaults filled in, on a copy), its heads too."""
    sr = validated_section(config, "superres")
    _check_base(sr["base"])
    sr["heads"] = heads_section(sr)
    if sr["patch_side"] % sr["scale"]:
        raise ValueError(f"config superres.patch_side {sr['patch_side']} must be a multiple of superres.scale "
                         f"{sr['scale']}")
    if sr["source"] == "celeba" and "celeba" not in sr:
        raise ValueError("config superres.source: celeba needs a superres.celeba section (the archive's url)")
    return sr


def check(config: dict) -> None:
    section(config)


def K(sr: dict) -> int:
    """The number of proposal heads of every model (decoded at each block size with its first k heads)."""
    return max(sr["block_sizes"])


def models(sr: dict) -> List[str]:
    return [f"{v}_k{K(sr)}" for v in sr["variants"]]


def data_file(R: str, split: str, side: str) -> str:
    """One file of patches: ``superres/data/<split>.<lr|hr>``."""
    return ResultsLayout(R).path("superres/data", f"{split}.{side}")


def data_files(R: str) -> List[str]:
    """The patches the data job writes (rule superres_data)."""
    return [data_file(R, split, side) for split in ("train", "valid", "test") for side in (SRC, TGT)]


DOWNLOADS = "superres_downloads"  # results/<store>/ of the fetch rule


def celeba_archive(sr: dict) -> str:
    """Where the fetch rule puts the CelebA archive (``source: celeba``)."""
    return f"results/{DOWNLOADS}/{sr['celeba']['archive']}"


def downloads(config: dict, R: str) -> Dict[str, dict]:
    """The CelebA archive (``source: celeba``): results/superres_downloads/."""
    sr = section(config)
    if sr["source"] != "celeba":
        return {}
    c = sr["celeba"]
    return {DOWNLOADS: {c["archive"]: {"url": c["url"], "sha256": c["sha256"]}}}


def data_inputs(sr: dict) -> List[str]:
    """What the data job reads besides the package: the CelebA archive, or nothing (the sample image)."""
    return [celeba_archive(sr)] if sr["source"] == "celeba" else []


def data_args(sr: dict) -> str:
    """The data job's options (fastdec.tracks.superres.images)."""
    args = (f"--image {sr['image']} --side {sr['patch_side']} --scale {sr['scale']} --stride {sr['stride']} "
            f"--held-out {sr['held_out']} --valid {sr['valid_patches']} --test {sr['test_patches']} "
            f"--max-train {sr['max_train']} --seed {sr['seed']}")
    if sr["source"] == "celeba":
        c = sr["celeba"]
        args += f" --celeba {celeba_archive(sr)} --train-images {c['train_images']} --dev-images {c['dev_images']}"
    return args


def job_runtime(sr: dict, demo_minutes: int) -> int:
    """Minutes a data or binarize job may take: the demo's, or 4 hours for the ~200,000 CelebA faces."""
    return demo_minutes if sr["source"] == "sample" else 240


def tokens(sr: dict) -> int:
    """Output tokens per example: one intensity per pixel (grey patches) or three (CelebA's RGB faces)."""
    return sr["patch_side"] ** 2 * (3 if sr["source"] == "celeba" else 1)


def data_bin(R: str) -> str:
    return ResultsLayout(R).path("superres/data-bin")


def model(config: dict, R: str, name: str, plugin: str) -> Model:
    """``superres/models/base`` (a Transformer on the patches) or ``<variant>_k<K>`` (its proposal heads)."""
    from fastdec.tracks.blockwise.plan import train_spec

    sr, L = section(config), ResultsLayout(R)
    dictionary = f"{data_bin(R)}/dict.{SRC}.txt"
    if name == "base":
        return Model(json.dumps(sr["base"]), data_bin(R), {"data": dictionary}, sr["base"], priority=10)
    variant, k = name.rsplit("_k", 1)
    base = L.model("base", TRACK)
    spec = train_spec({"train": sr["heads"]}, variant, k, base)  # regular: frozen base; finetune: not
    return Model(json.dumps(spec), data_bin(R), {"base": base, "data": dictionary}, sr["heads"],
                 f"--criterion blockwise_cross_entropy --user-dir {plugin}")


def method(sr: dict, k: int, eps: int = 0) -> str:
    """Greedy decoding (k = 1) or blockwise decoding at k, exact (eps = 0) or within eps, on decode.backend."""
    backend = sr["decode"]["backend"]
    spec = "greedy" if k == 1 else f"blockwise:k={k}" + (f":eps={eps}" if eps else "")
    return spec + (f":backend={backend}" if backend != "torch" else "")


def label(sr: dict, k: int, eps: int = 0) -> str:
    """The row of :func:`method` in the run's summary."""
    from fastdec.bench.methods import parse_method

    return parse_method(method(sr, k, eps)).label


def methods(sr: dict) -> List[str]:
    """Greedy decoding (the PyTorch reference, and on decode.backend), then exact and distance-based blockwise
    decoding at every k."""
    out = list(dict.fromkeys(["greedy", method(sr, 1)]))
    for k in sorted(sr["block_sizes"]):
        out += [method(sr, k), method(sr, k, sr["epsilon"])]
    return out


def runs(sr: dict) -> Dict[str, Tuple[str, str]]:
    """Run dir (relative to R) -> (variant, model name)."""
    return {f"superres/bench/valid/{name}": (name.rsplit("_k", 1)[0], name) for name in models(sr)}


def bench_runs(config: dict, R: str) -> Dict[str, BenchRun]:
    sr, L = section(config), ResultsLayout(R)
    dec = sr["decode"]
    return {run: BenchRun(
        "superres", checkpoint=L.model(name, TRACK), dictionary=f"{data_bin(R)}/dict.{SRC}.txt",
        src=data_file(R, "valid", SRC), methods=methods(sr), langs=(SRC, TGT), limit=sr["valid_patches"],
        warmup=dec["warmup"], threads=dec["threads"], exclusive=dec["exclusive"], device=config.get("device", "cpu"),
        max_len_a=0.0, max_len_b=tokens(sr), mem_mb=dec["mem_mb"], runtime=dec["runtime"], gpus=dec["gpus"])
        for run, (_, name) in runs(sr).items()}


def table_items(config: dict, R: str) -> Dict[str, TableItem]:
    sr, L = section(config), ResultsLayout(R)
    summaries = [L.run(f"{run}/summary.csv") for run in runs(sr)]
    truth = [data_file(R, "valid", TGT)]
    metas = [L.run(f"{run}/meta.json") for run in runs(sr)]  # Table 2 also reads each run's hypotheses
    items = {"stern_table2.csv": summaries + metas + truth, "stern_figure4_superres.csv": summaries,
             "stern_figure4_superres.png": summaries}
    return {f"{_TABLES}/{path}": TableItem("superres", path.rsplit(".", 1)[0], inputs)
            for path, inputs in items.items()}
