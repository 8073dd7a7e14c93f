"""The GEC track (Ge et al. 2022, Input-guided Aggressive Decoding), config section ``gec:``.

A Transformer GEC model trained in the workflow (rules.smk) decodes the benchmark set
(``gec/bench/set.bpe``, rule gec_bench_set) at batch 1 with fairseq beam search, fairseq greedy, the engine's greedy
decoding, IAD and IAD with each draft cap of benchmark.iad_draft_caps, in one ``fastdec bench`` run on the same
weights; rule gec_m2score writes ``m2.<label>.json`` (MaxMatch) into the run. Runs are named
``gec/bench/<device>-t<threads>-n<sentences|all>``: Table 1, Figure 5 and Table 2 read the run on the config's
device with benchmark.threads, Table 12 one CPU run per benchmark.cpu_threads (an identical run is reused).
With benchmark.batch_sizes, the run ``gec/bench/batch-<device>-t<threads>-n<batch_sentences>`` decodes with fairseq
beam search, fairseq greedy, the engine's greedy decoding and IAD at every batch size -> Figure 6 (latency per batch;
its data as a table).

Ge et al. Table 4's settings (``gec.data.source`` wikilarge or nlpcc18: config/wikilarge.yaml, config/nlpcc18.yaml)
make the Table 1 run only and one table from it, ``gec_table4`` (the dataset's columns of the paper's Table 4): the
English-GEC tables would put the paper's CoNLL numbers beside another corpus. Scores are ``m2.<label>.json`` or,
with ``gec.metric: sari``, ``sari.<label>.json`` (rule gec_sari).

Data: what the track's data rules (rules.smk, pretrain.smk) build: the corpus files, the downloaded sources (BEA-2019,
and Ge et al. Table 4's Wikilarge and NLPCC-18) and their arguments, the benchmark set and its gold files. Config
checks of the ``gec:`` section that its schema cannot express are in :func:`check_gec`.
"""
from __future__ import annotations

import json
import os
import shlex
import sys
from typing import Dict, List, Optional, Tuple

from fastdec.bench.methods import parse_methods
from fastdec.layout import ResultsLayout
from fastdec.tracks.bart import BartPlan
from fastdec.tracks.base import (BenchRun, TableItem, backend_methods, ct2_methods, policy_item, policy_methods,
                                 section)
from fastdec.tracks.specs import Dataset, Model, architecture, bart_init, starting_from

# The prepared corpus (data/full) and the selected one (data/raw) of every source: the gold is an M2 file (GEC) or
# tab-separated references (``.refs``, simplification scored with SARI), per ``gec.metric``.
FULL = ["train.src", "train.tgt", "valid.src", "valid.tgt", "test.src", "test.{gold}", "stats.json"]
RAW = ["train.src", "train.tgt", "valid.src", "valid.tgt", "valid.{gold}", "test.src", "test.{gold}", "report.json"]
GOLD = {"m2": "m2", "sari": "refs"}
# rough lines per minute of the synthetic-data jobs (reading gzip; Moses tokenising + noising; cat), for runtime
PRETRAIN_LINES_PER_MINUTE = {"split": 1_000_000, "corrupt": 200_000, "join": 10_000_000}
# sources whose data the fetch rule downloads (gec.data.<source>.archives), prepared by `fastdec gec-data` <source>
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
    from fastdec.tracks.gec.synthetic import NoiseParams

    NoiseParams.from_config(pre["noise"])  # rates in [0, 1], operation probabilities summing to 1
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
    ``results/<experiment>`` (its benchmark runs and tables: below)."""

    def __init__(self, gec: dict, results: str, device: str):
        self.c = gec
        self.G = gec_path(results)
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
        return [BartPlan.file("encoder.json"), BartPlan.file("vocab.bpe")]

    def debpe_arg(self) -> str:
        """`fastdec m2score`'s way back from BPE to words: subword-nmt's @@, or BART's GPT-2 BPE files."""
        if self.c["bpe"].get("kind") == "gpt2":
                return f"--gpt2-bpe {BartPlan.file('encoder.json')} {BartPlan.file('vocab.bpe')}"
        return "--remove-bpe"

    def max_words_arg(self) -> str:
        return f"--max-words {self.c['data']['max_words']}" if self.c["data"]["max_words"] else ""

    def tokenisation_arg(self) -> str:
        return f"--tokenisation {self.c['data']['tokenisation']}"

    def prepare_spec_arg(self) -> str:
        """The downloaded source's members for `fastdec gec-data` (BEA-2019: --sources; the others: --spec)."""
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





# ------------------------------------------------------------------ what the workflow builds for the track
MODEL_NAMES = r"gec(?:_pretrain)?"


def check(config: dict) -> None:
    check_gec(config["gec"])


def model(config: dict, R: str, name: str, plugin: str) -> Model:
    """The GEC model, or with gec.pretrain the model pretrained on the synthetic pairs, which the GEC model then
    continues (fairseq --finetune-from-model, as the MT chain's init_from)."""
    gec = section(config, "gec")
    g, L = GecPlan(gec, R, config["device"]), ResultsLayout(R)
    pre = g.pretrain
    if name == "gec_pretrain":
        if not pre:
            raise ValueError("no model gec/models/gec_pretrain: gec.pretrain.enabled is false")
        data = f"{g.PT}/data-bin"
        return Model(json.dumps(pre["model"]), data, {"data": f"{data}/dict.src.txt"}, pre["model"], priority=40)
    spec, data = gec["model"], f"{g.G}/data-bin"
    inputs = {"data": f"{data}/dict.src.txt"}
    if pre and spec.get("init_from_bart"):
        raise ValueError("config gec.pretrain with gec.model.init_from_bart: the synthetic pretraining stage of a "
                         "BART-initialised model is not built; turn one of them off")
    if pre:
        spec = starting_from(spec, inputs, L.model("gec_pretrain", "gec/"))
    else:
        spec = bart_init(L, "gec/", name, spec, inputs)
    return Model(json.dumps(spec), data, inputs, gec["model"], priority=40)


def datasets(config: dict, R: str) -> List[Dataset]:
    """The GEC corpus and, with gec.pretrain, the synthetic pairs: BPE per noised shard (train.<k>, joined by
    gec_pretrain_join), binarised with the GEC corpus's codes and dictionary (fairseq: ~1M lines a minute)."""
    g = GecPlan(config["gec"], R, config["device"])
    bpe = config["gec"]["bpe"]
    out = [Dataset("gec/", f"{g.G}/data/raw", "gec/data-bin", "src", "tgt", bpe, ("train", "valid"))]
    if g.pretrain:
        n = g.pretrain["sentences"] or 0
        out.append(Dataset("gec/pretrain/", f"{g.PT}/noised", "gec/pretrain/data-bin", "src", "tgt", bpe,
                           ("train", "valid"), codes_from="gec/", dict_from="gec/data-bin",
                           bin_runtime=60 + 2 * n // 1_000_000))
    return out


def downloads(config: dict, R: str) -> Dict[str, dict]:
    """BEA-2019, Wikilarge or NLPCC-18, and the clean text of gec.pretrain: results/gec_downloads/."""
    g = GecPlan(config["gec"], R, config["device"])
    if not (g.dl or g.pretrain):
        return {}
    return {"gec_downloads": {**{a: g.dl["archives"][a] for a in g.archives},
                              **{a: g.pretrain["text"]["archives"][a] for a in g.pretrain_archives}}}


def bart_inits(config: dict) -> dict:
    init = config["gec"]["model"].get("init_from_bart")
    return {("gec/", "gec"): init} if init else {}

def gec_path(R: str, *parts: str) -> str:
    """A file of the track under results/<experiment>/gec (its data, models, benchmark set and runs)."""
    return ResultsLayout(R).path("gec", *parts)


Spec = Tuple[str, int, Optional[int]]  # device, threads, sentences (None: all)
TABLE4_SOURCES = ("wikilarge", "nlpcc18")  # the datasets of the paper's Table 4


def table4_setting(config: dict) -> bool:
    return config["gec"]["data"]["source"] in TABLE4_SOURCES


def score_file(config: dict, run_dir: str, label: str) -> str:
    """Where the scoring rule writes one method's scores (gec_m2score: m2.<label>.json, gec_sari: sari.<label>.json)."""
    return f"{run_dir}/{config['gec'].get('metric', 'm2')}.{label}.json"


def methods(config: dict, R: str = "results") -> list:
    """The Table 1 methods (``R`` = results/<experiment>: where the CTranslate2 rows find the converted model)."""
    gb = config["gec"]["benchmark"]
    if gb["beam"] < 2:
        raise ValueError("config gec.benchmark.beam must be >= 2 (the fairseq greedy row, beam 1, is always there)")
    fast = backend_methods(gb.get("backends", []), ["greedy", "iad"], config.get("device", "cpu"))
    return [f"fairseq:beam={gb['beam']}", "fairseq:beam=1", "greedy", "iad",
            *(f"iad:max_draft_len={c}" for c in gb["iad_draft_caps"]), *fast,
            *policy_methods(gb.get("policies", []), ["iad", *fast]),
            *ct2_methods(gb["ct2"], gb["beam"], ResultsLayout(R).ct2("gec", "gec/"))]


def labels(config: dict) -> list:
    return [m.label for m in parse_methods(methods(config))]


def run_name(spec: Spec) -> str:
    return f"gec/bench/{spec[0]}-t{spec[1]}-n{spec[2] or 'all'}"


def runs(config: dict) -> Tuple[Spec, Dict[int, Spec]]:
    """The Table 1 run and the Table 12 run of each CPU thread count."""
    gb = config["gec"]["benchmark"]
    n, cpu_n = gb["sentences"], gb["cpu_sentences"]
    cpu_n = cpu_n if cpu_n and (n is None or cpu_n < n) else n
    cpu = {} if table4_setting(config) else {t: ("cpu", t, cpu_n) for t in gb["cpu_threads"]}  # Table 12's runs
    return (config["device"], gb["threads"], n), cpu


def table1_run(config: dict) -> str:
    """The benchmark run of Table 1, Figure 5 and Table 2 (relative to results/<experiment>); ``config`` may be one
    no Snakefile has validated."""
    return run_name(runs({**config, "gec": section(config, "gec")})[0])


def batch_specs(config: dict, R: str = "results") -> list:
    """The Figure 6 curves (each at every benchmark.batch_sizes)."""
    gb = config["gec"]["benchmark"]
    fast = backend_methods(gb.get("backends", []), ["greedy", "iad"], config.get("device", "cpu"))
    # beyond the paper: the same curves on the C verifier (batched in C) and CTranslate2's batched greedy, a peer
    # engine on the same weights (the converted model of Table 1)
    model = ResultsLayout(R).ct2("gec", "gec/")
    ct2 = [f"ct2:beam=1:compute={c}:model={model}" for c in gb["ct2"]] if fast else []
    return [f"fairseq:beam={gb['beam']}", "fairseq:beam=1", "greedy", "iad", *fast,
            *policy_methods(gb.get("policies", []), ["iad", *fast]), *ct2]


def batch_run(config: dict) -> Optional[str]:
    gb = config["gec"]["benchmark"]
    if not gb.get("batch_sizes"):
        return None
    return f"gec/bench/batch-{config['device']}-t{gb['threads']}-n{gb.get('batch_sentences') or 'all'}"


def bench_runs(config: dict, R: str) -> Dict[str, BenchRun]:
    gb, L = config["gec"]["benchmark"], ResultsLayout(R)
    run1, cpu = runs(config)
    ct2 = {"ct2_model": L.ct2("gec", "gec/"), "langs": ("src", "tgt")} if gb["ct2"] else {}
    return {run_name(s): BenchRun("gec", L.model("gec", "gec/"), gec_path(R, "data-bin", "dict.src.txt"),
                              gec_path(R, "bench", "set.bpe"),
                              methods(config, R), limit=s[2], warmup=gb["warmup"], threads=s[1], **ct2,
                              exclusive=gb["exclusive"], device=s[0], max_len_a=gb["max_len_a"],
                              max_len_b=gb["max_len_b"], mem_mb=gb["mem_mb"], runtime=gb["runtime"],
                              gpus=gb["gpus"] if s[0] == "cuda" else 0)
            for s in (run1, *cpu.values())} | _batch_bench_run(config, R)


def _batch_bench_run(config: dict, R: str) -> Dict[str, BenchRun]:
    from fastdec.bench.batch_curves import at_batch_sizes

    gb, L, run = config["gec"]["benchmark"], ResultsLayout(R), batch_run(config)
    if run is None:
        return {}
    specs = batch_specs(config, R)
    ct2 = {"ct2_model": L.ct2("gec", "gec/"), "langs": ("src", "tgt")} if any(x.startswith("ct2") for x in specs) else {}
    return {run: BenchRun("gec", L.model("gec", "gec/"), gec_path(R, "data-bin", "dict.src.txt"),
                          gec_path(R, "bench", "set.bpe"),
                          at_batch_sizes(specs, gb["batch_sizes"]), limit=gb.get("batch_sentences"), **ct2,
                          warmup=gb["warmup"], repeats=gb["batch_repeats"], threads=gb["threads"],
                          exclusive=gb["exclusive"], device=config["device"], max_len_a=gb["max_len_a"],
                          max_len_b=gb["max_len_b"], mem_mb=gb["mem_mb"], runtime=gb["runtime"],
                          gpus=gb["gpus"] if config["device"] == "cuda" else 0)}


def table_items(config: dict, R: str) -> Dict[str, TableItem]:
    run1, cpu = runs(config)
    L = ResultsLayout(R)
    run = L.run(run_name(run1))
    per_sentence = [gec_path(R, "bench", "set.src"), f"{run}/sentences.jsonl"]
    table1_inputs = [f"{run}/summary.csv"] + [score_file(config, run, label) for label in labels(config)]
    if table4_setting(config):
        return {"gec/tables/gec_table4.csv": TableItem("gec", "gec_table4", table1_inputs)}
    batch = batch_run(config)
    figure6 = {} if batch is None else {
        "gec/figures/gec_figure6_batch.png": TableItem("gec", "gec_figure6_batch", [L.run(f"{batch}/summary.csv")]),
        "gec/tables/gec_figure6_batch.csv": TableItem("gec", "gec_figure6_batch", [L.run(f"{batch}/summary.csv")])}
    # report order: Table 1, Table 3, Figure 5, Table 2, Table 12, Table 11, Figure 6 (captions: workflow/report/)
    return {
        "gec/tables/gec_table1.csv": TableItem("gec", "gec_table1", table1_inputs),
        "gec/tables/gec_table3.csv": TableItem("gec", "gec_table3", table1_inputs),
        "gec/figures/gec_figure5.png": TableItem("gec", "gec_figure5", per_sentence),
        "gec/tables/gec_table2.csv": TableItem("gec", "gec_table2", per_sentence),
        "gec/tables/gec_table12.csv": TableItem("gec", "gec_table12", [L.run(f"{run_name(s)}/summary.csv")
                                                                       for s in cpu.values()]),
        # from the config alone (the training command fairseq would run)
        "gec/tables/gec_table11_hyperparameters.csv": TableItem("gec", "gec_table11_hyperparameters", []),
        **figure6,
        **policy_item("gec", {run: b.methods for run, b in bench_runs(config, R).items()}, R),
    }


def debpe_kwargs(config: dict) -> dict:
    """How hypotheses become words: subword-nmt's default, or BART's GPT-2 decoder (gec.bpe.kind gpt2)."""
    if config["gec"]["bpe"].get("kind") != "gpt2":
        return {}
    from fastdec.data.gpt2_bpe import decode_line, load_encoder

    encoder = load_encoder(BartPlan.file("encoder.json"), BartPlan.file("vocab.bpe"))
    return {"debpe": lambda line: decode_line(encoder, line)}


def model_description(config: dict) -> str:
    m = config["gec"]["model"]
    x = m["extra_args"]
    return (f"{x.get('encoder-layers', 6)}+{x.get('decoder-layers', 6)}"
            f" ({m['arch']}, {x.get('encoder-embed-dim', '')})").replace(", )", ")")
