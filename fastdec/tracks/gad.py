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
per method: scripts/gad_memory.py) and Table 11 (case study) have their own rules in workflow/rules/gad.smk.

With ``gad.task: summarization`` (CNN-DM, config/cnndm.yaml) the track builds Ge et al. Table 10 instead: the
``test`` run without BLEU (the data is GPT-2 BPE'd; ROUGE is computed from the hypotheses by the table), and two
runs of one method each, beam search of the teacher (``gad/bench/teacher``) and of the w/o-Seq-KD baseline
(``gad/bench/baseline``) -> ``gad/tables/ge_table10_cnndm.csv`` (fastdec.gad.cnndm), plus the hyperparameter table.
"""
from __future__ import annotations

import json
from typing import Dict, List

from fastdec.bench.methods import parse_method

from . import BenchRun, TableItem, backend_methods, ct2_methods, policy_methods, section

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
        if set(R) & set(":,'"):
            raise ValueError(f"results directory {R!r}: ':' and ',' separate methods and their keys, and a quote "
                             "breaks the shell command; rename it")
        self.R, self.k = R, g["block_size"]
        self.task = g.get("task", "translation")
        data = config.get("data", {})
        self.src, self.tgt = data.get("src_lang", "src"), data.get("tgt_lang", "tgt")
        self.dictionary = f"{R}/data-bin/distill/dict.{self.src}.txt"
        self.baseline = f"fairseq:beam={config['decode']['beam']}"
        self.gad = f"gad:k={self.k}"
        self.hq, self.he = _gadpp(self.k, g["high_quality"]), _gadpp(self.k, g["high_efficiency"])
        self.ct2_model = f"{R}/models/verifier/ct2" if g["ct2"] else None
        ct2 = ct2_methods(g["ct2"], config["decode"]["beam"], self.ct2_model)
        # the cheap drafter (gad.cheap_drafter): GAD and GAD++ high_efficiency again, labelled "-cheap"
        self.cheap = [f"{s}:label={parse_method(s).label}-cheap:checkpoint={R}/gad/models/drafter_k{self.k}_cheap/"
                      "model.pt" for s in (self.gad, self.he)] if g.get("cheap_drafter") else []
        fast = backend_methods(g.get("backends", []), ["greedy", self.gad, self.he, *self.cheap],
                               config.get("device", "cpu"))
        # beyond the paper: the exact drafting rows again with a draft-length policy (gad.policies)
        policy = policy_methods(g.get("policies", []), [self.gad, *self.cheap[:1], *[s for s in fast if "beta" not in s]])
        self.test = [self.baseline, "fairseq:beam=1", "greedy", f"nat:k={self.k}", self.gad, self.hq, self.he,
                     *self.cheap, *fast, *policy, *ct2]
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
        return f"{self.R}/gad/models/drafter_k{int(k) if own else self.k}/model.pt"

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

        return read_run(f"{self.R}/gad/bench/{split}")

    def case_ids_arg(self) -> str:
        ids = self.g["case_study"].get("ids")
        return f"--ids {','.join(str(int(i)) for i in ids)}" if ids else ""


def bench_runs(config: dict, R: str) -> Dict[str, BenchRun]:
    p, dec = Plan(config, R), config["decode"]
    out = {}
    runs = [("test", "test", p.test), ("valid", "valid", p.valid)]
    summarization = p.task == "summarization"
    if summarization:
        runs = [("test", "test", p.test)]
    elif p.batch_sizes:
        from fastdec.bench.batch_curves import at_batch_sizes

        runs.append(("batch", "test", at_batch_sizes(p.batch_curves, p.batch_sizes)))
    for run, split, specs in runs:
        methods = p.methods(specs)
        out[f"gad/bench/{run}"] = BenchRun(
            "gad", f"{R}/models/verifier/model.pt", p.dictionary, f"{R}/data/bpe/{split}.{p.src}", methods,
            ref=None if summarization else f"{R}/data/raw/{split}.{p.tgt}", lang=None if summarization else p.tgt,
            limit=p.g[f"{run}_sentences"],
            drafters=sorted({m.drafter_args.get("checkpoint") or p.drafter(m.k)
                             for m in map(parse_method, methods) if m.drafter}),
            ct2_model=p.ct2_model if any(s.startswith("ct2") for s in methods) else None, langs=(p.src, p.tgt),
            warmup=p.g["warmup"], repeats=p.g["repeats"], threads=p.g["threads"], device=config["device"],
            max_len_a=dec["max_len_a"], max_len_b=dec["max_len_b"], mem_mb=p.g["mem_mb"], runtime=p.g["runtime"],
            gpus=p.g["gpus"])
    if summarization:  # Table 10's teacher and w/o-Seq-KD baseline rows: their beam search alone
        for name in AR_ROWS:
            out[f"gad/bench/{name}"] = BenchRun(
                "gad", f"{R}/models/{name}/model.pt", f"{R}/data-bin/raw/dict.{p.src}.txt",
                f"{R}/data/bpe/test.{p.src}", [p.baseline], limit=p.g["test_sentences"], warmup=p.g["warmup"],
                repeats=p.g["repeats"], threads=p.g["threads"], device=config["device"], max_len_a=dec["max_len_a"],
                max_len_b=dec["max_len_b"], mem_mb=p.g["mem_mb"], runtime=p.g["runtime"], gpus=p.g["gpus"])
    return out


def table_items(config: dict, R: str) -> Dict[str, TableItem]:
    out = {}
    if section(config, "gad").get("task") == "summarization":
        from fastdec.workflow.bart import BartPlan

        runs = [f"{R}/gad/bench/{r}" for r in ("test", *AR_ROWS)]
        tgt = config["data"]["tgt_lang"]
        inputs = [f"{r}/{f}" for r in runs for f in ("summary.csv", "meta.json")] + [
            f"{R}/data/raw/test.{tgt}", BartPlan.file("encoder.json"), BartPlan.file("vocab.bpe")]
        return {f"gad/tables/{CNNDM_TABLE}.csv": TableItem("gad", CNNDM_TABLE, inputs),
                "gad/tables/gad_table10_hyperparameters.csv": TableItem("gad", "gad_table10_hyperparameters", [])}
    for name, split in TABLES.items():
        run = f"{R}/gad/bench/{split}"
        figure = name.startswith("gad_figure")
        per_sentence = name == "gad_figure4_speedup"
        inputs = [f"{run}/summary.csv", f"{run}/meta.json"] + ([f"{run}/sentences.jsonl"] if per_sentence else [])
        out[f"gad/figures/{name}.png" if figure else f"gad/tables/{name}.csv"] = TableItem("gad", name, inputs)
    # from the config alone (the training commands fairseq would run)
    out["gad/tables/gad_table10_hyperparameters.csv"] = TableItem("gad", "gad_table10_hyperparameters", [])
    if section(config, "gad").get("batch_sizes"):
        inputs = [f"{R}/gad/bench/batch/summary.csv"]
        out[f"gad/figures/{BATCH_TABLE}.png"] = TableItem("gad", BATCH_TABLE, inputs)
        out[f"gad/tables/{BATCH_TABLE}.csv"] = TableItem("gad", BATCH_TABLE, inputs)
    return out


def make_table(name: str, config: dict, R: str, output: str) -> None:
    from fastdec.gad import tables as T

    p = Plan(config, R)
    g = p.g
    if name == BATCH_TABLE:
        from fastdec.bench.batch_curves import write_batch_curve

        write_batch_curve(p.run("batch"), p.batch_curves, p.batch_sizes, p.baseline, "figure7", output,
                          title=(f"{config['experiment']}: GAD (k={p.k}) and GAD++ {parse_method(p.he).label} at "
                                 f"batch sizes {p.batch_sizes}, {config['device']}, {g['threads']} thread(s)"))
        return
    if name == "gad_figure4_speedup":
        run, beam = p.run("test"), parse_method(p.baseline)
        he = parse_method(p.he)
        speedup = T.per_sentence_speedup(run.records(), he.label, beam.label)
        stats = T.speedup_histogram(
            speedup, output, xlabel=f"speedup over beam search (b={beam.beam}), per sentence",
            title=f"GAD++ (k={he.k}, top-{he.beta}, tau={he.tau:g}) vs beam search, {speedup.size} sentences\n"
                  "(paper, WMT14 test, k=25 top-5 tau=3.0: most sentences 3x-6x)")
        print(json.dumps({"method": he.label, "baseline": beam.label, **stats}), flush=True)
        return
    if name == "gad_figure1_bleu_speedup":
        from fastdec.gad.figures import figure1, paper_points

        ref = g["paper_reference"]
        paper = paper_points(T.paper_table1(ref), cited=ref == "wmt14_en-de")
        beam = parse_method(p.baseline).beam
        points = figure1(T.table1(p.run("test"), ref), paper, output,
                         title=f"ours: {config['experiment']}, {config['device']}, speedup over fairseq beam {beam}",
                         paper_title=f"paper: {ref} (Xia et al. Table 1 / Ge et al. Table 14; NAT systems cited)")
        print(json.dumps(points), flush=True)
        return
    if name == CNNDM_TABLE:
        from fastdec.gad.cnndm import table10

        item = table_items(config, R)[f"gad/tables/{CNNDM_TABLE}.csv"]
        ref, encoder, vocab = item.inputs[-3:]
        df = table10(p.run("test"), {n: p.run(n) for n in AR_ROWS}, p, ref, encoder, vocab)
    elif name == "gad_table10_hyperparameters":
        from fastdec.report.hyperparams import gad_table10

        df = gad_table10(config)
    elif name == "gad_table1":
        df = T.table1(p.run("test"), g["paper_reference"])
    elif name == "gad_table2_block_size":
        df = T.table2_block_size(p.run("valid"), g["block_sizes"], g["table2"]["beta"], g["table2"]["tau"])
    elif name == "gad_table3_beta_tau":
        df = T.table3_beta_tau(p.run("valid"), p.k, g["grid"]["betas"], g["grid"]["taus"])
    elif name == "gad_table7_modules":
        df = T.table7_modules(p.run("test"), p.labels([p.he, p.gad, *p.cheap, "greedy"]))
    elif name == "gad_table9_repetition":
        df = T.table9_repetition(p.run("test"), p.labels(["greedy", p.baseline, f"nat:k={p.k}", p.gad, p.hq, p.he]),
                                 hq=parse_method(p.hq).label)
    else:
        raise ValueError(f"the gad track has no table {name!r}; it has {', '.join(TABLES)}, "
                         "gad_table10_hyperparameters")
    # Table 1 has every direction (journal version, Table 14), Table 10 is the recipe; the others are En-De only
    if name not in ("gad_table1", "gad_table10_hyperparameters", CNNDM_TABLE):
        df = T.paper_en_de_only(df, g["paper_reference"], "Table " + name.split("_")[1][5:])
    df.to_csv(output, index=False)
    print(df.to_string(index=False), flush=True)
