"""What the GEC track's data rules (workflow/rules/gec.smk) build: the corpus files, the BEA-2019 sources and their
arguments, the benchmark run names and the model's description. Config checks of the ``gec:`` section that its
schema cannot express are in :func:`check_bea19`.
"""
from __future__ import annotations

import json
import os
import shlex
import sys
from typing import List, Tuple

# The prepared corpus (data/full) and the selected one (data/raw) of every source.
FULL = ["train.src", "train.tgt", "valid.src", "valid.tgt", "test.src", "test.m2", "stats.json"]
RAW = ["train.src", "train.tgt", "valid.src", "valid.tgt", "valid.m2", "test.src", "test.m2", "report.json"]


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
                  f"{bea['local'][spec['local']]!r}; the job gec_prepare_bea19 will stop there", file=sys.stderr)


class GecPlan:
    """Data names and paths of the GEC track for one validated ``config["gec"]`` section; ``results`` is
    ``results/<experiment>`` (its benchmark runs and tables: fastdec.tracks.gec)."""

    def __init__(self, gec: dict, results: str, device: str):
        self.c = gec
        self.G = f"{results}/gec"
        data, gb = gec["data"], gec["benchmark"]
        self.source = data["source"]
        self.bea = data.get("bea19") if self.source == "bea19" else None
        self.archives = sorted({s["archive"] for _, s in bea19_sources(self.bea) if "archive" in s}) if self.bea else []
        self.downloads = [f"results/gec_downloads/{a}" for a in self.archives]  # the fetch rule's outputs
        self.full = [f"{self.G}/data/full/{f}" for f in FULL + (["valid.m2"] if self.bea else [])]
        self.raw = [f"{self.G}/data/raw/{f}" for f in RAW]

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

    def bea19_sources_arg(self) -> str:
        return shlex.quote(json.dumps({"train": self.bea["train"], "valid": self.bea["valid"],
                                       "test": self.bea["test"]}))

    def bea19_archive_args(self, wildcards, input) -> str:
        return " ".join(f"--archive {a}={shlex.quote(p)}" for a, p in zip(self.archives, input.archives))

    def bea19_local_args(self) -> str:
        return " ".join(f"--local {shlex.quote(f'{k}={v or str()}')}" for k, v in self.bea["local"].items())
