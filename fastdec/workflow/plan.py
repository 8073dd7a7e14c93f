"""One validated config -> everything the rules need: paths, the wildcards of the stages every track shares (fetch,
BPE, binarise, train) and the per-item arguments behind them, collected from the tracks of fastdec.tracks.registry.
The .smk files hold rules, config reads and calls to these; nothing here imports more than the standard library at
parse time.
"""
from __future__ import annotations

import os
import sys
from typing import Dict, List

from fastdec.layout import ResultsLayout
from fastdec.tracks import chain, registry
from fastdec.tracks.bart import BartPlan
from fastdec.tracks.chain import at_systems
from fastdec.tracks.specs import Dataset, alternatives
from fastdec.workflow.models import Models


def check_config(config: dict, repo: str) -> None:
    """Called once, after the top-level schema: every switched-on track has its section, valid against its schema
    (defaults filled in), and the checks a schema cannot express hold. Errors name the config key."""
    from snakemake.utils import validate

    registry.fill_switches(config)
    shared = _shared_sections(repo)
    unknown = [k for k in config if k not in shared and k not in registry.sections()]
    if unknown:
        raise ValueError(f"config: unknown section `{unknown[0]}:`; the config has {', '.join(shared)} and the "
                         f"tracks' sections {', '.join(registry.sections())}")
    tracks = registry.enabled(config)
    if registry.mt_chain(config):
        missing = [k for k in ("data", "bpe", "train") if k not in config]
        if missing:
            raise ValueError(f"config: tracks mt_at/gad/blockwise need the sections {missing}; add them or turn the "
                             f"tracks off under `tracks:`")
    for t in tracks:
        if t.schema:
            if t.name not in config:
                raise ValueError(f"config: tracks.{t.switch} is on but there is no `{t.name}:` section (see "
                                 f"{os.path.relpath(t.schema, repo)})")
            validate(config[t.name], t.schema)
    if registry.mt_chain(config):
        chain.check_init_from(config["train"])
    for t in tracks:
        if hasattr(t.plan, "check"):
            t.plan.check(config)


def load_config(paths, dtype=None) -> dict:
    """The config as the workflow sees it: the files merged as Snakemake merges several ``--configfile``s, validated,
    defaults filled (errors name the key); ``dtype`` replaces the config's (``--config dtype=...``)."""
    import yaml
    from snakemake.exceptions import WorkflowError
    from snakemake.utils import update_config, validate

    config = {}
    for path in [paths] if isinstance(paths, str) else paths:
        with open(path, encoding="utf-8") as f:
            update_config(config, yaml.safe_load(f) or {})
    if dtype:
        config["dtype"] = dtype
    repo = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    try:
        validate(config, os.path.join(repo, "workflow", "schemas", "config.schema.yaml"))
        check_config(config, repo)  # the switched-on tracks' sections too (fastdec/tracks/<track>/schema.yaml)
    except WorkflowError as e:  # a schema error: a known input error of the commands that read a config
        raise ValueError(str(e)) from None
    return config


def _shared_sections(repo: str) -> List[str]:
    """The top-level keys of workflow/schemas/config.schema.yaml (the tracks' sections come from the registry)."""
    import yaml

    with open(os.path.join(repo, "workflow", "schemas", "config.schema.yaml"), encoding="utf-8") as f:
        return list(yaml.safe_load(f)["properties"])


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
    itself (conda-inject), and ``--default-resources`` covers resources only. A ``run:`` rule executes inside the
    Snakemake process and gets none. Call this after the last rule."""
    for rule in workflow.rules:
        if not (rule.norun or rule.is_run or rule.conda_env or rule.container_img or rule.env_modules):
            rule.conda_env = env_file


class Plan:
    def __init__(self, config: dict, repo: str, python: str = sys.executable):
        self.config = config
        self.exp = config["experiment"]
        self.L = L = ResultsLayout.of(config)
        self.R = R = L.root
        self.tracks = config["tracks"]
        self.mt_chain = registry.mt_chain(config)
        data = config.get("data", {})
        self.src, self.tgt = data.get("src_lang", "src"), data.get("tgt_lang", "tgt")
        self.repo = repo
        self.plugin = os.path.join(repo, "fastdec_fairseq")
        # every job step is `$PY -m fastdec ...` (fastdec/cli.py sets what torch needs to load fairseq checkpoints).
        # A conda env (python == "python") has the pinned dependencies but not the package: `-m fastdec` finds it here.
        path = f" PYTHONPATH='{repo}'${{PYTHONPATH:+:$PYTHONPATH}}" if python == "python" else ""
        self.shell_prefix = f"set -euo pipefail; export PY='{python}'{path}; "
        self.at_systems = at_systems(config["decode"]["beam"])  # the rows of tables/table1_at.csv
        # Training data of each AT model: the teacher and the no-KD baseline see the original data, the verifier
        # Seq-KD.
        self.teachers = chain.teachers(config, L)
        self.models = Models(self)
        enabled = registry.enabled(config)
        # the stages every track shares, collected from the MT chain and the tracks (fastdec.tracks.registry)
        self.rule_files = [t.rules for t in enabled if t.rules]
        self.datasets: Dict[str, Dataset] = {}
        inits = {}  # models starting from the pretrained BART (init_from_bart)
        self.downloads: Dict[str, dict] = {}  # folder under results/ -> archive name -> {url, sha256}
        if self.mt_chain:
            self.datasets.update((d.key, d) for d in chain.datasets(config, L))
            inits.update(chain.bart_inits(config))
            self.downloads.update(chain.downloads(config))
        for t in enabled:
            self.datasets.update((d.key, d) for d in getattr(t.plan, "datasets", lambda c, r: [])(config, R))
            inits.update(getattr(t.plan, "bart_inits", lambda c: {})(config))
            self.downloads.update(getattr(t.plan, "downloads", lambda c, r: {})(config, R))
        self.bart = BartPlan(config, R, inits, any(d.gpt2 for d in self.datasets.values()))
        if self.bart.used:
            self.downloads["bart_downloads"] = self.bart.downloads()

    # ------------------------------------------------------------------ logs, paths
    def log(self, name: str) -> str:
        return self.L.log(name)

    def bench(self, name: str) -> str:
        return self.L.benchmark(name)

    def repo_path(self, path: str) -> str:
        """A config path relative to the working directory if it exists there, else to the repository."""
        return path if os.path.isabs(path) or os.path.exists(path) else os.path.join(self.repo, path)

    def all_targets(self) -> List[str]:
        return [self.L.report("report.md")]

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
        return self.L.path(f"{d.codes_from or d.key}data", "bpe", "codes")

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
        return [self.L.path(f"{d.key}data", "bpe", f"{split}.{lang}") for split in d.splits for lang in (d.src, d.tgt)]

    def binarize_dict(self, wildcards) -> List[str]:
        """The dictionary a dataset is binarised with (none: fairseq builds one from its training data): BART's
        dict.txt for GPT-2 data (its embedding rows), or another dataset's (``dict_from``)."""
        d = self._binned(wildcards)
        if d.gpt2:
            return [self.bart.file("dict.txt")]
        return [self.L.path(d.dict_from, f"dict.{d.src}.txt")] if d.dict_from else []

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


def write_resolved_config(config_json: str, output: str, log: str) -> None:
    """The resolved_config rule: the validated config (defaults filled in) as YAML, for the table jobs."""
    import json

    import yaml

    with open(output, "w", encoding="utf-8") as f:
        yaml.safe_dump(json.loads(config_json), f, sort_keys=False)
    with open(log, "w", encoding="utf-8") as f:
        f.write(f"wrote {output}\n")
