"""What the GEC track's data rules (workflow/rules/gec.smk) build: the corpus files, the downloaded sources (BEA-2019,
and Ge et al. Table 4's Wikilarge and NLPCC-18) and their arguments, the benchmark set and its gold files. Config
checks of the ``gec:`` section that its schema cannot express are in :func:`check_gec`.
"""
from __future__ import annotations

import json
import os
import shlex
import sys
from typing import List, Tuple

# The prepared corpus (data/full) and the selected one (data/raw) of every source: the gold is an M2 file (GEC) or
# tab-separated references (``.refs``, simplification scored with SARI), per ``gec.metric``.
FULL = ["train.src", "train.tgt", "valid.src", "valid.tgt", "test.src", "test.{gold}", "stats.json"]
RAW = ["train.src", "train.tgt", "valid.src", "valid.tgt", "valid.{gold}", "test.src", "test.{gold}", "report.json"]
GOLD = {"m2": "m2", "sari": "refs"}
# rough lines per minute of the synthetic-data jobs (reading gzip; Moses tokenising + noising; cat), for runtime
PRETRAIN_LINES_PER_MINUTE = {"split": 1_000_000, "corrupt": 200_000, "join": 10_000_000}
# sources whose data the fetch rule downloads (gec.data.<source>.archives), prepared by scripts/gec_data.py <source>
DOWNLOADED = ("bea19", "wikilarge", "nlpcc18")
# the metric each source's gold supports
METRIC = {"uagec": "m2", "bea19": "m2", "nlpcc18": "m2", "wikilarge": "sari"}


def check_gec(gec: dict) -> None:
    """The ``gec:`` section beyond its schema: the metric fits the source's gold, the source's section is there and
    names only its own archives."""
    data, source = gec["data"], gec["data"]["source"]
    if gec["metric"] != METRIC[source]:
        raise ValueError(f"config gec.metric: {gec['metric']!r} cannot score gec.data.source {source!r} (its gold "
                         f"supports {METRIC[source]!r}); set gec.metric: {METRIC[source]}")
    if source in ("wikilarge", "nlpcc18"):
        spec = data.get(source)
        if not spec:
            raise ValueError(f"config gec.data.source is {source} but gec.data.{source} is missing (see "
                             f"config/{source}.yaml)")
        for split in ("train", "valid", "test"):
            if split in spec and spec[split]["archive"] not in spec["archives"]:
                raise ValueError(f"config gec.data.{source}.{split}.archive: {spec[split]['archive']!r} is not a "
                                 f"name under gec.data.{source}.archives")
    if gec["bpe"].get("kind") == "gpt2" and (gec["metric"] != "m2" or data.get("tokenisation", "word") != "word"):
        raise ValueError("config gec.bpe.kind: gpt2 (a BART-initialised model) is wired to word-level M2 scoring only; "
                         "use gec.metric: m2 with word tokenisation, or bpe.kind: subword_nmt")
    check_bea19(data)
    check_pretrain(gec)


def check_pretrain(gec: dict) -> None:
    """``gec.pretrain`` when enabled: the clean text names its archives, the noise is a distribution, the
    pretrained model has the GEC model's architecture (the fine-tuning starts from its weights)."""
    pre = gec.get("pretrain") or {}
    if not pre.get("enabled"):
        return
    for key in ("text", "model"):
        if key not in pre:
            raise ValueError(f"config gec.pretrain.enabled is true but gec.pretrain.{key} is missing (see the "
                             f"commented section of config/gec_bea19.yaml)")
    text = pre["text"]
    for i, f in enumerate(text["files"]):
        name = f if isinstance(f, str) else f["archive"]
        if name not in text["archives"]:
            raise ValueError(f"config gec.pretrain.text.files[{i}]: {name!r} is not a name under "
                             f"gec.pretrain.text.archives")
    clash = {a: s for a, s in (gec["data"].get(gec["data"]["source"]) or {}).get("archives", {}).items()
             if a in text["archives"] and text["archives"][a] != s}
    if clash:
        raise ValueError(f"config gec.pretrain.text.archives: {sorted(clash)} also name different archives under "
                         f"gec.data.{gec['data']['source']}.archives (both download to results/gec_downloads/); "
                         f"rename them")
    from fastdec.gec.synthetic import NoiseParams

    NoiseParams.from_config(pre["noise"])  # rates in [0, 1], operation probabilities summing to 1
    from fastdec.workflow.models import architecture

    if architecture(pre["model"]) != architecture(gec["model"]):
        raise ValueError(f"config gec.pretrain.model: the GEC model fine-tunes from it, so it needs gec.model's "
                         f"architecture (arch and the size flags of extra_args): {architecture(pre['model'])} vs "
                         f"{architecture(gec['model'])}")


def bea19_sources(bea: dict) -> List[Tuple[str, dict]]:
    """(config key, source) of every BEA-2019 train/valid/test source."""
    specs = [(f"gec.data.bea19.train[{i}]", s) for i, s in enumerate(bea["train"])]
    return specs + [("gec.data.bea19.valid", bea["valid"]), ("gec.data.bea19.test", bea["test"])]


def check_bea19(data: dict) -> None:
    """Archive and local names must exist (error); a missing licensed local file only warns (a dry run must work
    anywhere; the data job stops with the same message)."""
    if data["source"] != "bea19":
        return
    bea = data.get("bea19")
    if not bea:
        raise ValueError("config gec.data.source is bea19 but gec.data.bea19 is missing")
    for key, spec in bea19_sources(bea):
        if "archive" in spec and spec["archive"] not in bea["archives"]:
            raise ValueError(f"config {key}.archive: {spec['archive']!r} is not a name under gec.data.bea19.archives")
        if "local" in spec and spec["local"] not in bea["local"]:
            raise ValueError(f"config {key}.local: {spec['local']!r} is not a name under gec.data.bea19.local")
        if "local" in spec and not (bea["local"][spec["local"]] and os.path.isfile(bea["local"][spec["local"]])):
            print(f"gec: config key gec.data.bea19.local.{spec['local']}: file not found: "
                  f"{bea['local'][spec['local']]!r}; the job gec_prepare_download will stop there", file=sys.stderr)


class GecPlan:
    """Data names and paths of the GEC track for one validated ``config["gec"]`` section; ``results`` is
    ``results/<experiment>`` (its benchmark runs and tables: fastdec.tracks.gec)."""

    def __init__(self, gec: dict, results: str, device: str):
        self.c = gec
        self.G = f"{results}/gec"
        data = gec["data"]
        self.source = data["source"]
        self.gold = GOLD[gec["metric"]]
        self.bea = data.get("bea19") if self.source == "bea19" else None
        # the downloaded source's section (archives, members), None for UA-GEC
        self.dl = data.get(self.source) if self.source in DOWNLOADED else None
        if self.bea:
            self.archives = sorted({s["archive"] for _, s in bea19_sources(self.bea) if "archive" in s})
        elif self.dl:
            self.archives = sorted({self.dl[split]["archive"] for split in ("train", "valid", "test")
                                    if split in self.dl})
        else:
            self.archives = []
        self.downloads = [f"results/gec_downloads/{a}" for a in self.archives]  # the fetch rule's outputs
        full = [f.format(gold=self.gold) for f in FULL] + (["valid.m2"] if self.bea else [])
        self.full = [f"{self.G}/data/full/{f}" for f in full]
        self.raw = [f"{self.G}/data/raw/{f.format(gold=self.gold)}" for f in RAW]
        pre = gec.get("pretrain") or {}
        self.pretrain = pre if pre.get("enabled") else None
        self.PT = f"{self.G}/pretrain"  # the synthetic data: clean/, noised/, data/ (text, bpe), data-bin/
        # the archives the clean text is read from (others under gec.pretrain.text.archives are not downloaded)
        files = self.pretrain["text"]["files"] if self.pretrain else []
        self.pretrain_archives = sorted({f if isinstance(f, str) else f["archive"] for f in files})

    # ------------------------------------------------------------------ synthetic pretraining (gec_pretrain.smk)
    def pretrain_downloads(self) -> list:
        return [f"results/gec_downloads/{a}" for a in self.pretrain_archives]

    def pretrain_shards(self) -> List[str]:
        return [f"train.{k}" for k in range(self.pretrain["shards"])]

    def pretrain_clean(self) -> List[str]:
        return [f"{self.PT}/clean/{part}.txt" for part in ["valid"] + self.pretrain_shards()]

    def pretrain_file_args(self) -> str:
        """--file ARCHIVE[::MEMBER] of every clean-text file, in the config's order."""
        args = []
        for f in self.pretrain["text"]["files"]:
            path = f"results/gec_downloads/{f if isinstance(f, str) else f['archive']}"
            args.append(path if isinstance(f, str) else f"{path}::{f['member']}")
        return " ".join(f"--file {shlex.quote(a)}" for a in args)

    def pretrain_flag(self, key: str, name: str) -> str:
        """``--name value`` of a gec.pretrain count, nothing when it is null (every line)."""
        section, _, leaf = key.rpartition(".")
        value = (self.pretrain[section] if section else self.pretrain)[leaf]
        return f"--{name} {value}" if value else ""

    def pretrain_tokenize_flag(self) -> str:
        return "--tokenize" if self.pretrain["text"]["tokenize"] else ""

    def pretrain_noise_arg(self) -> str:
        return shlex.quote(json.dumps(self.pretrain["noise"]))

    def pretrain_runtime(self, step: str) -> int:
        """Minutes of a pretraining-data job: an hour plus the lines one job handles at its rough throughput."""
        lines = (self.pretrain["sentences"] or 0) // (self.pretrain["shards"] if step == "corrupt" else 1)
        return 60 + lines // PRETRAIN_LINES_PER_MINUTE[step]

    @staticmethod
    def pretrain_shard_number(wildcards) -> int:
        return int(wildcards.part.split(".")[1]) if wildcards.part.startswith("train.") else -1

    # ------------------------------------------------------------------ arguments of the data rules
    def subset_arg(self) -> str:
        return " ".join(f"--subset-{k} {v}" for k, v in self.c["data"]["subset"].items() if v)

    def debpe_inputs(self) -> List[str]:
        """The GPT-2 BPE files m2score reads (gpt2 kind), else none."""
        if self.c["bpe"].get("kind") != "gpt2":
            return []
        from fastdec.workflow.bart import BartPlan

        return [BartPlan.file("encoder.json"), BartPlan.file("vocab.bpe")]

    def debpe_arg(self) -> str:
        """scripts/m2score.py's way back from BPE to words: subword-nmt's @@, or BART's GPT-2 BPE files."""
        if self.c["bpe"].get("kind") == "gpt2":
            from fastdec.workflow.bart import BartPlan

            return f"--gpt2-bpe {BartPlan.file('encoder.json')} {BartPlan.file('vocab.bpe')}"
        return "--remove-bpe"

    def max_words_arg(self) -> str:
        return f"--max-words {self.c['data']['max_words']}" if self.c["data"]["max_words"] else ""

    def tokenisation_arg(self) -> str:
        return f"--tokenisation {self.c['data']['tokenisation']}"

    def prepare_spec_arg(self) -> str:
        """The downloaded source's members for scripts/gec_data.py (BEA-2019: --sources; the others: --spec)."""
        if self.bea:
            return "--sources " + shlex.quote(json.dumps({"train": self.bea["train"], "valid": self.bea["valid"],
                                                           "test": self.bea["test"]}))
        return "--spec " + shlex.quote(json.dumps(self.dl))

    def archive_args(self, wildcards, input) -> str:
        return " ".join(f"--archive {a}={shlex.quote(p)}" for a, p in zip(self.archives, input.archives))

    def local_args(self) -> str:
        if not self.bea:
            return ""
        return " ".join(f"--local {shlex.quote(f'{k}={v or str()}')}" for k, v in self.bea["local"].items())

    # ------------------------------------------------------------------ the benchmark set (rule gec_bench_set)
    def bench_set_inputs(self, split: str) -> dict:
        raw = f"{self.G}/data/raw"
        return {"bpe": f"{self.G}/data/bpe/{split}.src", "src": f"{raw}/{split}.src",
                "gold": f"{raw}/{split}.{self.gold}"}

    def bench_set_outputs(self) -> dict:
        b = f"{self.G}/bench"
        return {"bpe": f"{b}/set.bpe", "src": f"{b}/set.src", "gold": f"{b}/set.{self.gold}"}

    def bench_gold_flag(self) -> str:
        """M2 blocks are cut by block (--m2), references by line (--pair)."""
        return "--m2" if self.gold == "m2" else "--pair"
