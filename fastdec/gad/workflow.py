"""What the GAD track's rules (workflow/rules/gad.smk) build: system names, paths and the drafter's training spec.

Kept out of the .smk file (Snakemake's linter wants functions in a module) and free of heavy imports, so the
Snakefile can import it at parse time.
"""
from __future__ import annotations

import json
import os
from typing import Dict, List, Optional


# fairseq transformer architectures -> the nat_block_drafter architecture with the same sizes
DRAFTER_ARCH = {
    "transformer": "nat_block_drafter",
    "transformer_wmt_en_de": "nat_block_drafter",
    "transformer_wmt_en_de_big": "nat_block_drafter_big",
    "transformer_vaswani_wmt_en_de_big": "nat_block_drafter_big",
}


def tau_str(t) -> str:
    return f"{float(t):g}"


def gadpp_name(k: int, bt: dict) -> str:
    return f"gadpp_k{int(k)}_b{int(bt['beta'])}_t{tau_str(bt['tau'])}"


class GadPlan:
    """Names and paths of the GAD track for one validated ``config["gad"]`` section.

    ``results`` is ``results/<experiment>``; ``beam`` the beam of the speed baseline (config ``decode.beam``).
    """

    def __init__(self, gad: dict, results: str, beam: int, src: str, tgt: str, verifier_spec: Optional[dict] = None):
        self.c = gad
        self.verifier_spec = verifier_spec or {}
        self.R = results
        self.G = f"{results}/gad"
        self.k = int(gad["block_size"])
        self.beam = int(beam)
        self.src, self.tgt = src, tgt
        self.data = f"{results}/data-bin/distill"
        self.baseline = f"at_b{self.beam}"
        self.hq = gadpp_name(self.k, gad["high_quality"])
        self.he = gadpp_name(self.k, gad["high_efficiency"])
        self.test_systems = list(dict.fromkeys(
            [self.baseline, "at_b1", "greedy", f"nat_k{self.k}", f"gad_k{self.k}", self.hq, self.he]))
        self.valid_systems = list(dict.fromkeys(
            [self.baseline, "greedy"]
            + [s for k in gad["block_sizes"] for s in (f"gad_k{k}", gadpp_name(k, gad["table2"]))]
            + [gadpp_name(self.k, {"beta": b, "tau": t}) for b in gad["grid"]["betas"] for t in gad["grid"]["taus"]]))
        self.runs = {
            "test": (f"{results}/data/bpe/test.{src}", f"{results}/data/raw/test.{tgt}", self.test_systems,
                     gad.get("test_sentences")),
            "valid": (f"{results}/data/bpe/valid.{src}", f"{results}/data/raw/valid.{tgt}", self.valid_systems,
                      gad.get("valid_sentences")),
        }

    # ------------------------------------------------------------------ drafters
    def drafter(self, k) -> str:
        """Checkpoint decoding block size k: its own (retrain_block_sizes) or the block_size drafter's."""
        k = int(k)
        own = self.c.get("retrain_block_sizes") and k in self.c["block_sizes"]
        return f"{self.G}/models/drafter_k{k if own else self.k}/model.pt"

    def bench_drafters(self, run: str) -> Dict[str, str]:
        ks = {self.k} | (set(self.c["block_sizes"]) if run == "valid" else set())
        return {f"drafter_k{k}": self.drafter(k) for k in sorted(ks)}

    def drafter_for_args(self, run: str, input) -> str:
        return " ".join(f"--drafter-for {name[len('drafter_k'):]}={getattr(input, name)}"
                        for name in self.bench_drafters(run))

    def train_inputs(self) -> Dict[str, str]:
        inputs = {"data": f"{self.data}/dict.{self.src}.txt"}
        mode = self.c.get("init_from_verifier", "all")
        if mode == "all":
            inputs["init"] = f"{self.G}/models/init_from_verifier.pt"
        elif mode == "encoder":
            inputs["verifier"] = f"{self.R}/models/verifier/model.pt"
        return inputs

    def train_spec(self, k, init: Optional[str] = None, verifier: Optional[str] = None) -> str:
        """fairseq-train spec (JSON, for scripts/train.py) of the drafter with block size k."""
        spec = json.loads(json.dumps(self.c["train"]))
        extra = dict(spec.get("extra_args") or {})
        if spec["arch"] == "from_verifier":
            # the verifier's architecture: its arch mapped to the drafter's, its flags as defaults
            varch = self.verifier_spec.get("arch")
            if varch not in DRAFTER_ARCH:
                raise ValueError(f"gad.train.arch: from_verifier needs a verifier arch in {sorted(DRAFTER_ARCH)}, "
                                 f"got {varch!r}; name the drafter's arch and sizes explicitly instead")
            spec["arch"] = DRAFTER_ARCH[varch]
            extra = {**(self.verifier_spec.get("extra_args") or {}), **extra}
        extra["block-size"] = int(k)
        extra.setdefault("label-smoothing", spec.get("label_smoothing", 0.1))
        g = self.c.get("glancing") or {}
        extra.setdefault("glance-start", g.get("start", 0.5))
        extra.setdefault("glance-end", g.get("end", 0.3))
        extra.setdefault("glance-anneal-updates", g.get("anneal_updates", 300000))
        if init:
            extra["finetune-from-model"] = init
        if verifier:
            extra["init-encoder-from"] = verifier
        spec["extra_args"] = extra
        out = json.dumps(spec)
        if "'" in out:
            raise ValueError("config gad.train must not contain single quotes (it is passed to the shell quoted)")
        return out

    # ------------------------------------------------------------------ benchmark runs
    def limit_arg(self, run: str) -> str:
        n = self.runs[run][3]
        return f"--limit {int(n)}" if n else ""

    def table_path(self, stem: str, ext: str = "csv") -> str:
        sub = "figures" if ext == "png" else "tables"
        return f"{self.G}/{sub}/{stem}.{ext}"

    def report_items(self) -> List[str]:
        """Tables and figures in the paper's order (captions: workflow/report/<stem>.rst)."""
        return [self.table_path("gad_table1"), self.table_path("gad_table2_block_size"),
                self.table_path("gad_table3_beta_tau"), self.table_path("gad_figure4_speedup", "png"),
                self.table_path("gad_table7_modules"), self.table_path("gad_table8_memory"),
                self.table_path("gad_table9_repetition"), self.table_path("gad_table11_case_study")]

    def case_ids_arg(self) -> str:
        ids = (self.c.get("case_study") or {}).get("ids")
        return f"--ids {','.join(str(int(i)) for i in ids)}" if ids else ""


def data_dir(path: str) -> str:
    return os.path.dirname(path)
