"""The GAD / GAD++ track (Xia et al. 2022; Ge et al. 2022, Sec. 3.2/4.2): two benchmark runs and their tables.

* ``gad/bench/test``  (the first ``gad.test_sentences`` test sentences, null = all): fairseq beam search
  (``decode.beam``, the speed baseline), fairseq greedy, engine greedy, the NAT drafter alone, GAD and GAD++
  (``high_quality``, ``high_efficiency``) at ``block_size`` -> Tables 1, 7, 9 and Figure 4;
* ``gad/bench/valid`` (the first ``valid_sentences`` validation sentences): GAD and GAD++ (``table2``) at every
  ``block_sizes`` k, GAD++ at ``block_size`` for every ``grid`` beta x tau -> Tables 2 and 3.

* ``gad/bench/batch`` (with ``batch_sizes``; the first ``batch_sentences`` test sentences): fairseq beam search,
  fairseq greedy, engine greedy, GAD and GAD++ (``high_efficiency``) at every batch size -> Figure 7 (Ge et al.).

Every drafting method names its drafter checkpoint (``:checkpoint=PATH``): ``gad/models/drafter_k<K>/model.pt`` of
``block_size`` K, or with ``retrain_block_sizes`` the one trained for that k. Table 8 (peak memory, a fresh process
per method: `fastdec gad-memory`) and Table 11 (case study) have their own rules in fastdec/tracks/gad/rules.smk.

With ``gad.task: summarization`` (CNN-DM, config/cnndm.yaml) the track builds Ge et al. Table 10 instead: the
``test`` run without BLEU (the data is GPT-2 BPE'd; ROUGE is computed from the hypotheses by the table), and two
runs of one method each, beam search of the teacher (``gad/bench/teacher``) and of the w/o-Seq-KD baseline
(``gad/bench/baseline``) -> ``gad/tables/ge_table10_cnndm.csv`` (fastdec.tracks.gad.cnndm), plus the hyperparameter table.

Training (the ONE training rule, through :func:`model`): the drafter ``gad/models/drafter_k<K>`` on the verifier's
Seq-KD data, initialised from the verifier (``init_from_verifier``; rule gad_init_drafter in rules.smk).
"""
from __future__ import annotations

import json
from typing import Dict, List, Optional, Tuple

from fastdec.bench.methods import parse_method
from fastdec.layout import ResultsLayout
from fastdec.tracks.base import (BenchRun, TableItem, backend_methods, ct2_methods, policy_item, policy_methods,
                                 section)
from fastdec.tracks.gad.paper import GAD_BIG_REFERENCE
from fastdec.tracks.specs import Model

# fairseq transformer architectures -> the nat_block_drafter architecture with the same sizes
DRAFTER_ARCH = {
    "transformer": "nat_block_drafter",
    "transformer_wmt_en_de": "nat_block_drafter",
    "transformer_wmt_en_de_big": "nat_block_drafter_big",
    "transformer_vaswani_wmt_en_de_big": "nat_block_drafter_big",
    "bart_base": "nat_block_drafter_bart_base",  # BART's architecture flags come with the arch (CNN-DM track)
    "bart_large": "nat_block_drafter_bart_large",
}


CHEAP = "_cheap"  # name suffix of the cheap_drafter: gad/models/drafter_k<K>_cheap
BIG = "_big"  # name suffix of the big_drafter (GAD Table 5's NAT-big): gad/models/drafter_k<K>_big
NAT_BIG = "-natbig"  # label suffix of the methods decoding with the big_drafter
# measured 2026-11-25 (200 valid sentences, k=10): reading the first token at the prefix took GAD from 1.41 to 2.00
# tokens per iteration and from 16.7 to 12.0 ms per sentence (docs/PERFORMANCE.md)
CHEAP_DRAFTER = {"attention": "prefix-causal", "freeze_encoder": True, "first_from_prefix": True}

# gad.paper_tables -> the table of the paper's big-model and teacher studies it writes from the test run
PAPER_TABLES = {"table4": "gad_table4_big", "table5": "gad_table5_nat_big", "table6": "gad_table6_teachers"}

# table name -> the run it reads (report order); the figure also reads the per-sentence times
TABLES = {"gad_table1": "test", "gad_figure1_bleu_speedup": "test", "gad_table2_block_size": "valid",
          "gad_table3_beta_tau": "valid", "gad_figure4_speedup": "test", "gad_table7_modules": "test",
          "gad_table9_repetition": "test"}
BATCH_TABLE = "gad_figure7_batch"  # with batch_sizes: a figure and its data table, both from the batch run
CNNDM_TABLE = "ge_table10_cnndm"  # gad.task summarization: Ge et al. Table 10 (ROUGE)
AR_ROWS = ("teacher", "baseline")  # summarization: the models of the MT chain decoded by beam search alone


def _gadpp(k, setting: dict) -> str:
    return f"gad:k={int(k)}:beta={int(setting['beta'])}:tau={float(setting['tau']):g}"


class Plan:
    """The GAD track of one workflow config: its methods, drafters and paths (``R`` = ``results/<experiment>``)."""

    def __init__(self, config: dict, R: str):
        self.g = g = section(config, "gad")
        self.L = L = ResultsLayout(R)
        self.G = L.track("gad")
        self.verifier_spec = config.get("train", {}).get("verifier") or {}
        self.init_from_verifier = f"{self.G}/models/init_from_verifier.pt"
        if set(R) & set(":,'"):
            raise ValueError(f"results directory {R!r}: ':' and ',' separate methods and their keys, and a quote "
                             "breaks the shell command; rename it")
        self.R, self.k = R, g["block_size"]
        if "table5" in g["paper_tables"] and not g["big_drafter"]:
            raise ValueError("gad.paper_tables: table5 compares the drafter with a big one; set gad.big_drafter: true")
        if "table4" in g["paper_tables"] and g["paper_reference"] != GAD_BIG_REFERENCE:
            raise ValueError(f"gad.paper_tables: table4 is the big models' table; set gad.paper_reference: "
                             f"{GAD_BIG_REFERENCE}")
        self.task = g.get("task", "translation")
        data = config.get("data", {})
        self.src, self.tgt = data.get("src_lang", "src"), data.get("tgt_lang", "tgt")
        self.data = L.data_bin("distill")  # the verifier's Seq-KD data: the drafter trains and decodes on it
        self.dictionary = L.dictionary(self.src, "distill")
        self.baseline = f"fairseq:beam={config['decode']['beam']}"
        self.gad = f"gad:k={self.k}"
        self.hq, self.he = _gadpp(self.k, g["high_quality"]), _gadpp(self.k, g["high_efficiency"])
        self.ct2_model = L.ct2("verifier") if g["ct2"] else None
        ct2 = ct2_methods(g["ct2"], config["decode"]["beam"], self.ct2_model)
        # the cheap drafter (gad.cheap_drafter): GAD and GAD++ high_efficiency again, labelled "-cheap"
        cheap = self.drafter_checkpoint(f"{self.k}{CHEAP}")
        self.cheap = [f"{s}:label={parse_method(s).label}-cheap:checkpoint={cheap}"
                      for s in (self.gad, self.he)] if g.get("cheap_drafter") else []
        # the big drafter (gad.big_drafter, GAD Table 5): GAD and both GAD++ again with it, labelled "-natbig"
        big = self.drafter_checkpoint(f"{self.k}{BIG}")
        self.natbig = [f"{s}:label={parse_method(s).label}{NAT_BIG}:checkpoint={big}"
                       for s in (self.gad, self.hq, self.he)] if g.get("big_drafter") else []
        fast = backend_methods(g.get("backends", []), ["greedy", self.gad, self.he, *self.cheap],
                               config.get("device", "cpu"))
        # beyond the paper: the exact drafting rows again with a draft-length policy (gad.policies)
        policy = policy_methods(g.get("policies", []), [self.gad, *self.cheap[:1], *[s for s in fast if "beta" not in s]])
        self.test = [self.baseline, "fairseq:beam=1", "greedy", f"nat:k={self.k}", self.gad, self.hq, self.he,
                     *self.cheap, *self.natbig, *fast, *policy, *ct2]
        sweep = [s for k in g["block_sizes"] for s in (f"gad:k={k}", _gadpp(k, g["table2"]))]
        grid = [_gadpp(self.k, {"beta": b, "tau": t}) for b in g["grid"]["betas"] for t in g["grid"]["taus"]]
        self.valid = [self.baseline, "fairseq:beam=1", "greedy", *sweep, *grid]
        self.memory = [self.baseline, "greedy", self.gad, self.he]  # Table 8
        self.batch_curves = [self.baseline, "fairseq:beam=1", "greedy", self.gad, self.he,  # Figure 7
                             *policy_methods(g.get("policies", []), [self.gad])]
        self.batch_sizes = g.get("batch_sizes") or []

    def drafter(self, k) -> str:
        """The checkpoint decoding block size k: its own (``retrain_block_sizes``) or the ``block_size`` drafter."""
        own = self.g["retrain_block_sizes"] and int(k) in self.g["block_sizes"]
        return self.drafter_checkpoint(int(k) if own else self.k)

    def drafter_checkpoint(self, k) -> str:
        """``gad/models/drafter_k<k>/model.pt`` (``k`` = ``"10_cheap"`` / ``"30_big"``: the cheap / big drafter of
        block size 10 / 30)."""
        return self.L.model(f"drafter_k{k}", "gad/")

    def methods(self, specs: List[str]) -> List[str]:
        """``specs`` without repeated labels, each drafting method with its drafter checkpoint."""
        out: Dict[str, str] = {}
        for s in specs:
            m = parse_method(s)
            named = "checkpoint" in m.drafter_args  # the cheap drafter's methods name theirs
            out.setdefault(m.label, f"{s}:checkpoint={self.drafter(m.k)}" if m.drafter and not named else s)
        return list(out.values())

    @staticmethod
    def labels(specs: List[str]) -> List[str]:
        return list(dict.fromkeys(parse_method(s).label for s in specs))

    def run(self, split: str):
        from fastdec.bench.results import read_run

        return read_run(self.L.run(f"gad/bench/{split}"))

    def case_ids_arg(self) -> str:
        ids = self.g["case_study"].get("ids")
        return f"--ids {','.join(str(int(i)) for i in ids)}" if ids else ""

    # ------------------------------------------------------------------ training (the ONE training rule)
    def train_inputs(self) -> Dict[str, str]:
        inputs = {"data": self.dictionary}
        mode = self.g.get("init_from_verifier", "all")
        if mode == "all":
            inputs["init"] = self.init_from_verifier
        elif mode == "encoder":
            inputs["verifier"] = self.L.model("verifier")
        return inputs

    def train_spec(self, k, init: Optional[str] = None, verifier: Optional[str] = None) -> str:
        """fairseq-train spec (JSON, for `fastdec train`) of the drafter ``drafter_k<k>``; ``k`` = ``"10_cheap"``
        is the ``cheap_drafter`` of block size 10, ``"30_big"`` the ``big_drafter`` of block size 30."""
        k, cheap = (str(k)[: -len(CHEAP)], True) if str(k).endswith(CHEAP) else (k, False)
        k, big = (str(k)[: -len(BIG)], True) if str(k).endswith(BIG) else (k, False)
        variant = CHEAP_DRAFTER if cheap else self.g
        spec = json.loads(json.dumps(self.g["train"]))
        if big:  # the same recipe with the big architecture (Xia et al. Table 5: NAT-big in GAD-base)
            spec["arch"] = self.g["big_drafter_arch"]
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
        if variant.get("freeze_encoder") and self.g.get("init_from_verifier", "all") == "none":
            raise ValueError("gad: freeze_encoder keeps the verifier's encoder the drafter starts from; it needs "
                             "init_from_verifier: all or encoder (got none)")
        extra["drafter-attention"] = variant.get("attention", "bidirectional")
        extra["freeze-encoder"] = bool(variant.get("freeze_encoder", False))
        if variant.get("first_from_prefix"):  # only when set: other drafters keep their specs (and checkpoints)
            extra["first-from-prefix"] = True
        extra.setdefault("label-smoothing", spec.get("label_smoothing", 0.1))
        g = self.g.get("glancing") or {}
        extra.setdefault("glance-start", g.get("start", 0.5))
        extra.setdefault("glance-end", g.get("end", 0.3))
        extra.setdefault("glance-anneal-updates", g.get("anneal_updates", 300000))
        if init:
            extra["finetune-from-model"] = init
        if verifier:
            extra["init-encoder-from"] = verifier
        spec["extra_args"] = extra
        return json.dumps(spec)


MODEL_NAMES = r"drafter_k\d+(?:_cheap|_big)?"


def model(config: dict, R: str, name: str, plugin: str) -> Model:
    """The training rule's view of ``gad/models/<name>``."""
    p = Plan(config, R)
    inputs = p.train_inputs()
    spec = p.train_spec(name[len("drafter_k"):], inputs.get("init"), inputs.get("verifier"))
    return Model(spec, p.data, inputs, p.g["train"],
                 f"--task block_drafting --criterion glat_block_loss --user-dir {plugin}")


def _runs(p: Plan) -> List[Tuple[str, str, List[str]]]:
    """``(run, split, method specs)`` of each benchmark run of the track."""
    if p.task == "summarization":
        return [("test", "test", p.methods(p.test))]
    runs = [("test", "test", p.test), ("valid", "valid", p.valid)]
    if p.batch_sizes:
        from fastdec.bench.batch_curves import at_batch_sizes

        runs.append(("batch", "test", at_batch_sizes(p.batch_curves, p.batch_sizes)))
    return [(run, split, p.methods(specs)) for run, split, specs in runs]


def bench_runs(config: dict, R: str) -> Dict[str, BenchRun]:
    p, dec = Plan(config, R), config["decode"]
    out = {}
    summarization = p.task == "summarization"
    for run, split, methods in _runs(p):
        out[f"gad/bench/{run}"] = BenchRun(
            "gad", p.L.model("verifier"), p.dictionary, p.L.bpe(split, p.src), methods,
            ref=None if summarization else p.L.raw(split, p.tgt), lang=None if summarization else p.tgt,
            limit=p.g[f"{run}_sentences"],
            drafters=sorted({m.drafter_args.get("checkpoint") or p.drafter(m.k)
                             for m in map(parse_method, methods) if m.drafter}),
            ct2_model=p.ct2_model if any(s.startswith("ct2") for s in methods) else None, langs=(p.src, p.tgt),
            warmup=p.g["warmup"], repeats=p.g["batch_repeats" if run == "batch" else "repeats"],
            threads=p.g["threads"], exclusive=p.g["exclusive"],
            device=config["device"], max_len_a=dec["max_len_a"], max_len_b=dec["max_len_b"], mem_mb=p.g["mem_mb"],
            runtime=p.g["runtime"], gpus=p.g["gpus"])
    if summarization:  # Table 10's teacher and w/o-Seq-KD baseline rows: their beam search alone
        for name in AR_ROWS:
            out[f"gad/bench/{name}"] = BenchRun(
                "gad", p.L.model(name), p.L.dictionary(p.src), p.L.bpe("test", p.src), [p.baseline],
                limit=p.g["test_sentences"], warmup=p.g["warmup"], repeats=p.g["repeats"], threads=p.g["threads"],
                exclusive=p.g["exclusive"], device=config["device"], max_len_a=dec["max_len_a"],
                max_len_b=dec["max_len_b"], mem_mb=p.g["mem_mb"], runtime=p.g["runtime"], gpus=p.g["gpus"])
    return out


def table_items(config: dict, R: str) -> Dict[str, TableItem]:
    out = {}
    if section(config, "gad").get("task") == "summarization":
        from fastdec.tracks.bart import BartPlan

        L = ResultsLayout(R)
        runs = [L.run(f"gad/bench/{r}") for r in ("test", *AR_ROWS)]
        tgt = config["data"]["tgt_lang"]
        inputs = [f"{r}/{f}" for r in runs for f in ("summary.csv", "meta.json")] + [
            L.raw("test", tgt), BartPlan.file("encoder.json"), BartPlan.file("vocab.bpe")]
        return {f"gad/tables/{CNNDM_TABLE}.csv": TableItem("gad", CNNDM_TABLE, inputs),
                "gad/tables/gad_table10_hyperparameters.csv": TableItem("gad", "gad_table10_hyperparameters", [])}
    for name, split in TABLES.items():
        run = ResultsLayout(R).run(f"gad/bench/{split}")
        figure = name.startswith("gad_figure")
        per_sentence = name == "gad_figure4_speedup"
        inputs = [f"{run}/summary.csv", f"{run}/meta.json"] + ([f"{run}/sentences.jsonl"] if per_sentence else [])
        out[f"gad/figures/{name}.png" if figure else f"gad/tables/{name}.csv"] = TableItem("gad", name, inputs)
    for key in section(config, "gad").get("paper_tables", []):
        run = ResultsLayout(R).run("gad/bench/test")
        teacher = [ResultsLayout(R).eval("teacher_b5")] if key == "table6" and config["tracks"].get("mt_at") else []
        out[f"gad/tables/{PAPER_TABLES[key]}.csv"] = TableItem(
            "gad", PAPER_TABLES[key], [f"{run}/summary.csv", f"{run}/meta.json", *teacher])
    # from the config alone (the training commands fairseq would run)
    out["gad/tables/gad_table10_hyperparameters.csv"] = TableItem("gad", "gad_table10_hyperparameters", [])
    if section(config, "gad").get("batch_sizes"):
        inputs = [ResultsLayout(R).run("gad/bench/batch/summary.csv")]
        out[f"gad/figures/{BATCH_TABLE}.png"] = TableItem("gad", BATCH_TABLE, inputs)
        out[f"gad/tables/{BATCH_TABLE}.csv"] = TableItem("gad", BATCH_TABLE, inputs)
    out.update(policy_item("gad", {f"gad/bench/{run}": methods for run, _, methods in _runs(Plan(config, R))}, R))
    return out
