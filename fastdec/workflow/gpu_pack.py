"""``fastdec gpu-pack RESULTS --out DIR``: what a GPU benchmark needs from a finished run, in one small folder.

A time-limited GPU machine (one command, a few minutes, no package registry, a cap on what travels) cannot train;
it can decode. This collects, from a finished workflow run (``results/<experiment>``), the trained weights the
speed tables decode with, without their optimizer state (a third of the size): the GEC model (IAD), the AT
verifier and both GAD drafters, the Blockwise model, one efficient student; their dictionaries; the benchmark
inputs and references; and ``site.tgz``, the Python packages the GPU machine's image lacks (envs/gpu-image-cuda.txt),
copied from this environment as importable folders (fairseq without its C extensions, which decoding never
imports; a compiled package is taken from a wheel for the target Python). The weights are stored as byte planes
compressed with zlib (:mod:`fastdec.bench.pack_files`, which also unpacks a pack: the install step there).
``manifest.json`` lists every benchmark section the GPU run (:mod:`fastdec.bench.gpu_suite`,
``scripts/gpu_suite.sh``) decodes, in the unpacked pack's relative paths.

    fastdec gpu-pack results/demo --out gpu_pack [--config config/config.yaml] [--python-version 3.12]

The config defaults to the one of ``config/`` whose ``experiment`` names the results folder.
"""
from __future__ import annotations

import glob
import json
import os
import shutil
import subprocess
import sys
import tarfile
import zipfile
from pathlib import Path
from typing import Dict, List, Optional

from fastdec.bench.pack_files import SUFFIX, compress_file, encode_state

__all__ = ["SITE_DISTRIBUTIONS", "find_config", "plan_sections", "make_pack", "strip_checkpoint"]

REPO = Path(__file__).resolve().parents[2]
# What decoding imports that the lent GPU image lacks (checked against envs/gpu-image-cuda.txt by a test); sacrebleu
# travels although the image has one, so BLEU is computed by the tested version.
SITE_DISTRIBUTIONS = ["fairseq-fixed", "hydra-core", "omegaconf", "antlr4-python3-runtime", "bitarray", "sacrebleu",
                      "sacremoses"]
# decoding never imports fairseq's C/Cython extensions (fairseq imports each lazily, where it is used) nor its
# examples/ folder
_DROP_COMPILED = {"fairseq-fixed"}
_STUDENT = "ssru_noffn_3_3"   # the fastest student of the demo's Table 1


def find_config(results: str) -> str:
    """The config of ``config/`` (or ``config/variants``) whose ``experiment`` is the results folder's name."""
    import yaml

    name = Path(results).name
    for path in sorted(glob.glob(str(REPO / "config" / "*.yaml"))):
        with open(path, encoding="utf-8") as f:
            if (yaml.safe_load(f) or {}).get("experiment") == name:
                return path
    raise ValueError(f"{results}: no config/*.yaml has `experiment: {name}`; give the run's config with --config")


def _pick(runs: dict, prefix: str, prefer=()):
    """The first non-batch run under ``prefix``, preferring one whose name holds a string of ``prefer`` (in order)."""
    keys = [k for k in runs if k.startswith(prefix) and "batch" not in k]
    for p in prefer:
        keys = sorted(keys, key=lambda k, p=p: p not in Path(k).name)
    return runs[keys[0]] if keys else None


def plan_sections(config: dict, results: str) -> Dict[str, dict]:
    """The models each GPU section decodes, from the tracks' own benchmark runs (absolute run paths):
    ``{section: {checkpoint, data_bin, src, ref, lang, drafters, max_len_a, max_len_b}}`` for the sections whose
    track is on in ``config``."""
    from fastdec.tracks.registry import bench_runs

    runs = bench_runs(config, results)
    out = {}

    def add(name, run, drafters=(), k=None):
        if run is not None:
            out[name] = {"checkpoint": run.checkpoint, "data_bin": os.path.dirname(run.dictionary), "src": run.src,
                         "ref": run.ref, "lang": run.lang, "drafters": list(drafters), "max_len_a": run.max_len_a,
                         "max_len_b": run.max_len_b, "k": k}

    add("gec", _pick(runs, "gec/bench/"))
    gad = _pick(runs, "gad/bench/test")
    if gad is not None:
        add("gad", gad, gad.drafters, k=config["gad"]["block_size"])
    if config["tracks"].get("blockwise"):
        # k = 2 .. the most heads the model has
        add("blockwise", _pick(runs, "blockwise/bench/test/", prefer=("both",)),
            k=max(config["blockwise"]["block_sizes"]))
    add("student", _pick(runs, "students/bench/test/", prefer=("ssru_noffn", _STUDENT)))
    return out


def strip_checkpoint(src: str, langs=None) -> dict:
    """A fairseq checkpoint's state without its optimizer state (what decoding reads: the model, its config/args).
    ``langs`` (source, target) are written into its task config where it has none: fairseq otherwise infers them
    from the training files of the data folder, which the pack does not carry."""
    import torch

    state = torch.load(src, map_location="cpu", weights_only=False)
    state["last_optimizer_state"] = None
    task = (state.get("cfg") or {}).get("task") if isinstance(state.get("cfg"), dict) else None
    if langs and task is not None and not task.get("source_lang"):
        task["source_lang"], task["target_lang"] = langs
    elif langs and state.get("args") is not None and not getattr(state["args"], "source_lang", None):
        state["args"].source_lang, state["args"].target_lang = langs
    return state


def _langs(data_bin: str):
    """(source, target) of a binarised data folder, as fairseq infers them (from its ``train.src-tgt.*`` files)."""
    from fairseq.data.data_utils import infer_language_pair

    src, tgt = infer_language_pair(data_bin)
    if src is None:
        raise ValueError(f"{data_bin}: no binarised split (train.SRC-TGT.*) to tell the language pair from")
    return src, tgt


def _dist_files(name: str):
    from importlib.metadata import distribution

    try:
        dist = distribution(name)
    except Exception:  # noqa: BLE001  (PackageNotFoundError)
        raise ValueError(f"the Python package {name} is not installed here; run `make setup` first") from None
    return dist, [f for f in dist.files or [] if not str(f).startswith("..") and "__pycache__" not in str(f)]


def _compiled(files) -> bool:
    return any(str(f).endswith((".so", ".pyd")) for f in files)


def _wheel_for(name: str, version: str, python_version: str, tmp: Path) -> Path:
    """Download the wheel of ``name==version`` for CPython ``python_version`` on manylinux x86_64 (the registry)."""
    abi = "cp" + python_version.replace(".", "")
    cmd = [sys.executable, "-m", "pip", "download", "--disable-pip-version-check", "-q", "--no-deps",
           "--only-binary=:all:", "--python-version", python_version, "--implementation", "cp", "--abi", abi,
           "-d", str(tmp)]
    for p in ("manylinux2014_x86_64", "manylinux_2_17_x86_64", "manylinux_2_28_x86_64", "manylinux_2_34_x86_64"):
        cmd += ["--platform", p]
    r = subprocess.run(cmd + [f"{name}=={version}"], capture_output=True, text=True)
    wheels = sorted(tmp.glob("*.whl"))
    if r.returncode != 0 or not wheels:
        raise ValueError(f"no wheel of {name}=={version} for Python {python_version} (pip: "
                         f"{(r.stderr or r.stdout).strip()[-300:]}); pack on a machine that reaches the registry, "
                         f"or with --python-version of this interpreter")
    return wheels[0]


def build_site(out: Path, python_version: str) -> List[str]:
    """``out`` <- importable copies of :data:`SITE_DISTRIBUTIONS`; returns ``name==version`` of each."""
    here = f"{sys.version_info.major}.{sys.version_info.minor}"
    pins = []
    for name in SITE_DISTRIBUTIONS:
        dist, files = _dist_files(name)
        pins.append(f"{name}=={dist.version}")
        drop = name in _DROP_COMPILED
        if _compiled(files) and not drop and python_version != here:
            tmp = out.parent / f".wheel-{name}"
            tmp.mkdir(exist_ok=True)
            with zipfile.ZipFile(_wheel_for(name, dist.version, python_version, tmp)) as z:
                z.extractall(out)
            shutil.rmtree(tmp)
            continue
        for f in files:
            if drop and (str(f).endswith((".so", ".pyd", ".pyx", ".cpp", ".c", ".h", ".cu"))
                         or str(f).startswith("fairseq/examples/")):  # 17 MiB of research recipes
                continue
            source = Path(dist.locate_file(f))
            if source.is_file():
                target = out / str(f)
                target.parent.mkdir(parents=True, exist_ok=True)
                shutil.copy2(source, target)
    return pins


def _copy(src: str, dst: Path) -> str:
    if not os.path.isfile(src):
        raise ValueError(f"{src} is missing: finish the run first (snakemake --cores all {src})")
    dst.parent.mkdir(parents=True, exist_ok=True)
    shutil.copy2(src, dst)
    return str(dst)


def make_pack(results: str, out: str, *, config_path: Optional[str] = None, python_version: str = "3.12",
              sentences: int = 300) -> dict:
    """Write the pack (see the module docstring) and return its manifest."""
    results = results.rstrip("/")
    if not os.path.isdir(results):
        raise ValueError(f"{results}: no such results folder (run the workflow first, e.g. `make run`)")
    from fastdec.workflow.plan import load_config

    config_path = config_path or find_config(results)
    sections = plan_sections(load_config(config_path), results)
    if not sections:
        raise ValueError(f"{config_path}: no track with a GPU section is on (gec_iad, gad, blockwise, students)")
    dest = Path(out)
    if dest.exists():
        shutil.rmtree(dest)
    (dest / "models").mkdir(parents=True)
    import torch

    from fastdec_fairseq.models.blockwise_transformer import HEAD_PREFIX

    models: Dict[str, str] = {}     # source checkpoint -> pack-relative path
    inputs: Dict[str, str] = {}     # source file -> pack-relative path
    # the verifier is the base the drafters and the student were fine-tuned from; without the MT tracks, the first
    base_name = "gad" if "gad" in sections else next(iter(sections))

    base: Dict[str, object] = {}   # the first model packed (the verifier, or the GEC model): the XOR base

    def model(src: str, name: str, data_bin: str) -> str:
        if src not in models:
            if not os.path.isfile(src):
                raise ValueError(f"{src} is missing: finish the run first (snakemake --cores all {src})")
            plain = dest / "models" / f"{name}.pt"
            state = strip_checkpoint(src, langs=_langs(data_bin))
            rel = f"models/{name}.pt"   # as unpacked (fastdec.bench.pack_files)
            if not base and name == base_name:
                base.update(path=rel, model=state["model"])
                torch.save(state, plain)
            else:  # the GEC model shares no training with the verifier: its XOR would only add entropy
                related = name != "gec"
                torch.save(encode_state(state, base.get("model") if related else None, base.get("path", ""),
                                        bfloat16=lambda n: n.startswith(HEAD_PREFIX)), plain)
            compress_file(str(plain), str(plain) + SUFFIX)
            plain.unlink()
            models[src] = rel
        return models[src]

    def data(src: str, rel: str) -> str:
        """Copy an input once: a file the sections share travels once, under the first name."""
        if src not in inputs:
            inputs[src] = os.path.relpath(_copy(src, dest / rel), dest)
        return inputs[src]

    manifest = {"experiment": Path(results).name, "config": os.path.relpath(config_path, REPO),
                "python_version": python_version, "sentences": sentences, "sections": {}}
    order = sorted(sections, key=lambda n: n != base_name)   # the base first
    for name in order:
        s = sections[name]
        data_bin = next((e["data_bin"] for n, e in manifest["sections"].items()
                         if sections[n]["data_bin"] == s["data_bin"]), f"dicts/{name}")
        for d in sorted(glob.glob(os.path.join(s["data_bin"], "dict.*.txt"))):
            data(d, f"{data_bin}/{os.path.basename(d)}")
        entry = {"checkpoint": model(s["checkpoint"], name, s["data_bin"]), "data_bin": data_bin,
                 "src": data(s["src"], f"inputs/{name}.src"),
                 "ref": None, "lang": s["lang"], "max_len_a": s["max_len_a"], "max_len_b": s["max_len_b"], "k": s["k"],
                 "drafters": [model(d, f"{name}_{Path(d).parent.name}", s["data_bin"]) for d in s["drafters"]]}
        if s["ref"]:
            entry["ref"] = data(s["ref"], f"inputs/{name}.ref")
        manifest["sections"][name] = entry
    manifest["sections"] = {n: manifest["sections"][n] for n in sections}   # the sections' order
    manifest["xor_base"] = base.get("path")
    site = dest / ".site" / "site"
    site.mkdir(parents=True)
    manifest["site"] = build_site(site, python_version)
    with tarfile.open(dest / "site.tgz", "w:gz") as tar:
        tar.add(site, arcname="site")
    shutil.rmtree(site.parent)
    with open(dest / "manifest.json", "w", encoding="utf-8") as f:
        json.dump(manifest, f, indent=2)
    manifest["size_mib"] = round(sum(p.stat().st_size for p in dest.rglob("*") if p.is_file()) / 2 ** 20, 2)
    return manifest


def add_arguments(p) -> None:
    p.add_argument("results", help="a finished run's folder, e.g. results/demo")
    p.add_argument("--out", default="gpu_pack", help="the pack folder (default gpu_pack; replaced if it exists)")
    p.add_argument("--config", help="the run's config (default: the config/*.yaml whose experiment names RESULTS)")
    p.add_argument("--python-version", default="3.12", help="the GPU machine's Python (default 3.12, the lent image)")
    p.add_argument("--sentences", type=int, default=300, help="sentences of each Table 1 section (default 300)")


def tracked_tree_mib() -> Optional[float]:
    """MiB of the files git tracks in this checkout (what travels with the pack), or None outside a checkout."""
    r = subprocess.run(["git", "ls-files", "-z"], cwd=REPO, capture_output=True)
    if r.returncode != 0:
        return None
    files = [REPO / f for f in r.stdout.decode().split("\0") if f]
    return sum(f.stat().st_size for f in files if f.is_file()) / 2 ** 20


def main(a) -> int:
    if a.sentences < 1:
        raise ValueError("--sentences must be >= 1")
    m = make_pack(a.results, a.out, config_path=a.config, python_version=a.python_version, sentences=a.sentences)
    tree = tracked_tree_mib()
    with_tree = f" (+ the tracked tree {tree:.1f} MiB = {m['size_mib'] + tree:.1f} MiB)" if tree is not None else ""
    print(f"wrote {a.out}: sections {', '.join(m['sections'])}; {len(m['site'])} packages for Python "
          f"{a.python_version}; {m['size_mib']:.1f} MiB{with_tree}")
    print(f"on the GPU machine, from the repository root: bash scripts/gpu_suite.sh {a.out} OUTDIR")
    return 0
