"""One validated config -> everything the rules need: paths, the wildcards of the stages every track shares (fetch,
BPE, binarise, train) and the per-item arguments behind them. The .smk files hold rules, config reads and calls to
these; nothing here imports more than the standard library at parse time.
"""
from __future__ import annotations

import os
import sys
from dataclasses import dataclass
from typing import Dict, List

from fastdec.workflow import blockwise as bwf
from fastdec.workflow.bart import BartPlan
from fastdec.workflow.gad import GadPlan
from fastdec.workflow.gec import GecPlan, check_gec
from fastdec.workflow.models import Models, alternatives, architecture
from fastdec.tracks.mt import at_systems

# config switch -> the track's config section and its schema (workflow/schemas/)
SECTIONS = {"gec_iad": "gec", "gad": "gad", "blockwise": "blockwise", "students": "students"}


def mt_chain(tracks: dict) -> bool:
    """The MT chain (teacher -> Seq-KD -> verifier) feeds the MT tracks."""
    return bool(tracks["mt_at"] or tracks["gad"] or tracks["blockwise"] or tracks.get("students"))


def check_config(config: dict, repo: str) -> None:
    """Called once, after the top-level schema: every switched-on track has its section, valid against its schema
    (defaults filled in), and the checks a schema cannot express hold. Errors name the config key."""
    from snakemake.utils import validate

    tracks = config["tracks"]
    if mt_chain(tracks):
        missing = [k for k in ("data", "bpe", "train") if k not in config]
        if missing:
            raise ValueError(f"config: tracks mt_at/gad/blockwise need the sections {missing}; add them or turn the "
                             f"tracks off under `tracks:`")
    for switch, section in SECTIONS.items():
        if tracks[switch]:
            schema = os.path.join(repo, "workflow", "schemas", f"{section}.schema.yaml")
            if section not in config:
                raise ValueError(f"config: tracks.{switch} is on but there is no `{section}:` section (see "
                                 f"workflow/schemas/{section}.schema.yaml)")
            validate(config[section], schema)
    if mt_chain(tracks):
        check_init_from(config["train"])
    if tracks["gec_iad"]:
        check_gec(config["gec"])
    if tracks["blockwise"]:
        bwf.check_config(config["blockwise"], config["device"])
    if tracks.get("students"):
        from fastdec.workflow.students import check_config as check_students

        check_students(config["students"], config)


def check_init_from(train: dict) -> None:
    """``train.<model>.init_from``: only the baseline and the verifier start from another model (the teacher),
    and only with its architecture (fairseq would stop at the first mismatched tensor, after the teacher trained)."""
    for name, spec in train.items():
        source = spec.get("init_from") if isinstance(spec, dict) else None
        if source is None:
            continue
        if name not in ("baseline", "verifier"):
            raise ValueError(f"config: train.{name}.init_from: only train.baseline and train.verifier may start "
                             f"from the teacher; remove the key")
        if architecture(spec) != architecture(train[source]):
            raise ValueError(f"config: train.{name}.init_from: {source} needs the same architecture as "
                             f"train.{source} (arch and the size flags of extra_args): {architecture(spec)} vs "
                             f"{architecture(train[source])}")


def job_python(workflow) -> str:
    """With --software-deployment-method conda each job runs in envs/fastdec.yaml and calls that env's python;
    otherwise jobs use the interpreter running Snakemake (the project's .venv)."""
    try:
        from snakemake.settings.types import DeploymentMethod

        if DeploymentMethod.CONDA in workflow.deployment_settings.deployment_method:
            return "python"
    except (ImportError, AttributeError):
        pass
    return sys.executable


def default_conda_env(workflow, env_file: str) -> None:
    """Give every rule without its own software environment the project's conda env, in one place.

    Snakemake has no per-job default: its top-level ``conda:`` directive deploys an env for the Snakemake process
    itself (conda-inject), and ``--default-resources`` covers resources only. Call this after the last rule."""
    for rule in workflow.rules:
        if not (rule.norun or rule.conda_env or rule.container_img or rule.env_modules):
            rule.conda_env = env_file


@dataclass(frozen=True)
class Dataset:
    """A parallel corpus that gets joint BPE and a fairseq data-bin with one joined dictionary."""

    key: str          # the {ds} wildcard: where under results/<experiment>/ its data/ lives ("" or "gec/")
    text: str         # folder of the text BPE is learnt on and applied to
    bin: str          # the {bin} wildcard: its data-bin folder under results/<experiment>/
    src: str
    tgt: str
    bpe: dict         # kind, merges, min_frequency, max_source_tokens
    splits: tuple     # binarised: train, valid, then fairseq's test, test1, ... (each a file pair in data/bpe)
    # another dataset's BPE codes ({ds}) and dictionary ({bin}) instead of its own: the GEC track's synthetic
    # pretraining pairs share the GEC model's vocabulary, so the GEC model can fine-tune from the pretrained one
    codes_from: str = ""
    dict_from: str = ""
    bin_runtime: int = 60  # minutes of its binarisation job

    @property
    def gpt2(self) -> bool:
        """BART's GPT-2 BPE on the untokenised text (rule gpt2_bpe, binarised with its dict.txt)."""
        return self.bpe.get("kind", "subword_nmt") == "gpt2"


class Plan:
    def __init__(self, config: dict, repo: str, python: str = sys.executable):
        self.config = config
        self.exp = config["experiment"]
        self.R = R = f"results/{self.exp}"
        self.tracks = config["tracks"]
        self.mt_chain = mt_chain(self.tracks)
        data = config.get("data", {})
        self.src, self.tgt = data.get("src_lang", "src"), data.get("tgt_lang", "tgt")
        self.repo = repo
        self.scripts = os.path.join(repo, "scripts")
        self.plugin = os.path.join(repo, "fastdec_fairseq")
        # fairseq checkpoints are pickled Namespaces: torch>=2.6 defaults to weights_only loading.
        # A conda env (python == "python") has the pinned dependencies but not the package: `-m fastdec` finds it here.
        path = f" PYTHONPATH='{repo}'${{PYTHONPATH:+:$PYTHONPATH}}" if python == "python" else ""
        self.shell_prefix = (f"set -euo pipefail; export PY='{python}' SCRIPTS='{self.scripts}' "
                             f"TORCH_FORCE_NO_WEIGHTS_ONLY_LOAD=1{path}; ")
        self.at_systems = at_systems(config["decode"]["beam"])  # the rows of tables/table1_at.csv
        # Training data of each AT model: the teacher and the no-KD baseline see the original data, the verifier
        # Seq-KD.
        self.at_data = {"teacher": f"{R}/data-bin/raw", "baseline": f"{R}/data-bin/raw",
                        "verifier": f"{R}/data-bin/distill"}
        n_teachers = config.get("distill", {}).get("teachers", 1)
        self.teachers = [f"{R}/models/teacher/model.pt"] + [f"{R}/models/teacher{n}/model.pt"
                                                            for n in range(2, n_teachers + 1)]
        on = self.tracks
        self.gec = GecPlan(config["gec"], R, config["device"]) if on["gec_iad"] else None
        self.gad = (GadPlan(config["gad"], R, self.src, self.tgt, config["train"]["verifier"]) if on["gad"]
                    else None)
        self.bw = config["blockwise"] if on["blockwise"] else None
        self.students = config["students"] if on.get("students") else None
        self.models = Models(self)
        self.datasets: Dict[str, Dataset] = {}
        if self.mt_chain:  # GPT-2 BPE reads the untokenised text (data/raw), subword-nmt the Moses tokens
            text = f"{R}/data/raw" if config["bpe"].get("kind") == "gpt2" else f"{R}/data/tok"
            self.datasets[""] = Dataset("", text, "data-bin/raw", self.src, self.tgt, config["bpe"],
                                        ("train", "valid", "test", "latency"))
        if self.gec:
            self.datasets["gec/"] = Dataset("gec/", f"{self.gec.G}/data/raw", "gec/data-bin", "src", "tgt",
                                            config["gec"]["bpe"], ("train", "valid"))
        if self.gec and self.gec.pretrain:
            # BPE per noised shard (train.<k>, joined by gec_pretrain_join); fairseq binarises ~1M lines a minute
            n = self.gec.pretrain["sentences"] or 0
            self.datasets["gec/pretrain/"] = Dataset("gec/pretrain/", f"{self.gec.PT}/noised",
                                                     "gec/pretrain/data-bin", "src", "tgt", config["gec"]["bpe"],
                                                     ("train", "valid"), codes_from="gec/", dict_from="gec/data-bin",
                                                     bin_runtime=60 + 2 * n // 1_000_000)
        inits = {}  # models starting from the pretrained BART (init_from_bart)
        if self.mt_chain:
            inits.update({("", n): s["init_from_bart"] for n, s in config["train"].items() if s.get("init_from_bart")})
        if self.gec and config["gec"]["model"].get("init_from_bart"):
            inits[("gec/", "gec")] = config["gec"]["model"]["init_from_bart"]
        self.bart = BartPlan(config, R, inits, any(d.gpt2 for d in self.datasets.values()))
        # downloads: folder under results/ -> archive name -> {url, sha256}
        self.downloads: Dict[str, dict] = {}
        if self.mt_chain and data.get("source") == "download":
            self.downloads["downloads"] = data["download"]["archives"]
        if self.gec and (self.gec.dl or self.gec.pretrain):  # bea19, wikilarge, nlpcc18; the clean text
            self.downloads["gec_downloads"] = {
                **{a: self.gec.dl["archives"][a] for a in self.gec.archives},
                **{a: self.gec.pretrain["text"]["archives"][a] for a in self.gec.pretrain_archives}}
        if self.bart.used:
            self.downloads["bart_downloads"] = self.bart.downloads()

    # ------------------------------------------------------------------ logs, paths
    def log(self, name: str) -> str:
        return f"{self.R}/logs/{name}.log"

    def bench(self, name: str) -> str:
        return f"{self.R}/benchmarks/{name}.tsv"

    def repo_path(self, path: str) -> str:
        """A config path relative to the working directory if it exists there, else to the repository."""
        return path if os.path.isabs(path) or os.path.exists(path) else os.path.join(self.repo, path)

    def all_targets(self) -> List[str]:
        return [f"{self.R}/report/report.md"]

    def _archive(self, wildcards) -> dict:
        return self.downloads[wildcards.store][wildcards.archive]

    def fetch_url(self, wildcards) -> str:
        return self._archive(wildcards)["url"]

    def fetch_sha_arg(self, wildcards) -> str:
        sha = self._archive(wildcards).get("sha256")
        return f"--sha256 {sha}" if sha else ""

    def fetch_constraints(self) -> dict:
        return {"store": alternatives(self.downloads),
                "archive": alternatives(a for archives in self.downloads.values() for a in archives)}

    # ------------------------------------------------------------------ MT data: prepare
    def _download_pairs(self, split):
        dl = self.config["data"]["download"]
        if split == "final":
            if "final_test" not in dl:
                raise ValueError("the split 'final' needs data.download.final_test (archive, src, tgt) in the config")
            return [dl["final_test"]]
        return dl["train"] if split == "train" else [dl[split]]

    def prepare_inputs(self, wildcards) -> dict:
        data = self.config["data"]
        if data["source"] == "embedded":
            d = self.repo_path(data["embedded_dir"])
            return {"src": f"{d}/{wildcards.split}.{self.src}.gz", "tgt": f"{d}/{wildcards.split}.{self.tgt}.gz"}
        pairs = self._download_pairs(wildcards.split)
        return {"archives": sorted({f"results/downloads/{p['archive']}" for p in pairs})}

    def prepare_source_args(self, wildcards, input) -> str:
        if self.config["data"]["source"] == "embedded":
            return f"--src {input.src} --tgt {input.tgt}"
        return " ".join(f"--member 'results/downloads/{p['archive']}::{p['src']}::{p['tgt']}::"
                        f"{p.get('format', 'text')}'" for p in self._download_pairs(wildcards.split))

    def at_system(self, wildcards):
        return self.at_systems[wildcards.system]

    # ------------------------------------------------------------------ BPE: {R}/{ds}data/bpe, binarise: {R}/{bin}
    def bpe_constraints(self, gpt2: bool = False) -> dict:
        """Wildcards of the subword-nmt datasets (learn_bpe, apply_bpe) or, ``gpt2``, of the GPT-2 ones (gpt2_bpe)."""
        ds = [d for d in self.datasets.values() if d.gpt2 == gpt2]
        return {"ds": alternatives(d.key for d in ds), "lang": alternatives(x for d in ds for x in (d.src, d.tgt))}

    def gpt2_truncate_arg(self, wildcards) -> str:
        """--max-tokens of a source side (bpe.max_source_tokens: fairseq --truncate-source for BART's positions)."""
        d = self.datasets[wildcards.ds]
        n = d.bpe.get("max_source_tokens")
        return f"--max-tokens {int(n)}" if n and wildcards.lang == d.src else ""

    def bin_constraints(self) -> dict:
        ds = self.datasets.values()
        return {"bin": alternatives(d.bin for d in ds), "src": alternatives(d.src for d in ds)}

    def bpe_train_text(self, wildcards) -> List[str]:
        d = self.datasets[wildcards.ds]
        return [f"{d.text}/train.{d.src}", f"{d.text}/train.{d.tgt}"]

    def bpe_codes(self, wildcards) -> str:
        d = self.datasets[wildcards.ds]
        return f"{self.R}/{d.codes_from or d.key}data/bpe/codes"

    def bpe_merges(self, wildcards) -> int:
        return self.datasets[wildcards.ds].bpe["merges"]

    def bpe_min_frequency(self, wildcards) -> int:
        return self.datasets[wildcards.ds].bpe.get("min_frequency", 2)

    def bpe_text(self, wildcards) -> str:
        return f"{self.datasets[wildcards.ds].text}/{wildcards.split}.{wildcards.lang}"

    def _binned(self, wildcards) -> Dataset:
        return next(d for d in self.datasets.values() if d.bin == wildcards.bin)

    def binarize_inputs(self, wildcards) -> List[str]:
        """The BPE'd splits (first: the folder fairseq reads)."""
        d = self._binned(wildcards)
        return [f"{self.R}/{d.key}data/bpe/{split}.{lang}" for split in d.splits for lang in (d.src, d.tgt)]

    def binarize_dict(self, wildcards) -> List[str]:
        """The dictionary a dataset is binarised with (none: fairseq builds one from its training data): BART's
        dict.txt for GPT-2 data (its embedding rows), or another dataset's (``dict_from``)."""
        d = self._binned(wildcards)
        if d.gpt2:
            return [self.bart.file("dict.txt")]
        return [f"{self.R}/{d.dict_from}/dict.{d.src}.txt"] if d.dict_from else []

    def binarize_dict_arg(self, wildcards, input) -> str:
        return f"--srcdict {input.srcdict}" if input.srcdict else ""

    def binarize_runtime(self, wildcards) -> int:
        return self._binned(wildcards).bin_runtime

    def binarize_tgt(self, wildcards) -> str:
        return self._binned(wildcards).tgt

    def binarize_test_arg(self, wildcards, input) -> str:
        """--testpref of the splits after train and valid (the MT chain's test and latency subset: fairseq names the
        second test split "test1")."""
        tests = self._binned(wildcards).splits[2:]
        prefix = os.path.dirname(input[0])  # the splits come first
        return f"--testpref {','.join(f'{prefix}/{s}' for s in tests)}" if tests else ""
