"""The GEC track (Ge et al. 2022, Input-guided Aggressive Decoding), config section ``gec:``.

A Transformer GEC model trained in the workflow (workflow/rules/gec.smk) decodes the benchmark set
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
"""
from __future__ import annotations

import json
import os
import sys
from typing import Dict, Optional, Tuple

from fastdec.bench.methods import parse_methods

from . import BenchRun, TableItem, backend_methods, ct2_methods, policy_methods

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
            *ct2_methods(gb["ct2"], gb["beam"], f"{R}/gec/models/gec/ct2")]


def labels(config: dict) -> list:
    return [m.label for m in parse_methods(methods(config))]


def _run(spec: Spec) -> str:
    return f"gec/bench/{spec[0]}-t{spec[1]}-n{spec[2] or 'all'}"


def _runs(config: dict) -> Tuple[Spec, Dict[int, Spec]]:
    """The Table 1 run and the Table 12 run of each CPU thread count."""
    gb = config["gec"]["benchmark"]
    n, cpu_n = gb["sentences"], gb["cpu_sentences"]
    cpu_n = cpu_n if cpu_n and (n is None or cpu_n < n) else n
    cpu = {} if table4_setting(config) else {t: ("cpu", t, cpu_n) for t in gb["cpu_threads"]}  # Table 12's runs
    return (config["device"], gb["threads"], n), cpu


def batch_specs(config: dict, R: str = "results") -> list:
    """The Figure 6 curves (each at every benchmark.batch_sizes)."""
    gb = config["gec"]["benchmark"]
    fast = backend_methods(gb.get("backends", []), ["greedy", "iad"], config.get("device", "cpu"))
    # beyond the paper: the same curves on the C verifier (batched in C) and CTranslate2's batched greedy, a peer
    # engine on the same weights (the converted model of Table 1)
    ct2 = [f"ct2:beam=1:compute={c}:model={R}/gec/models/gec/ct2" for c in gb["ct2"]] if fast else []
    return [f"fairseq:beam={gb['beam']}", "fairseq:beam=1", "greedy", "iad", *fast,
            *policy_methods(gb.get("policies", []), ["iad", *fast]), *ct2]


def _batch_run(config: dict) -> Optional[str]:
    gb = config["gec"]["benchmark"]
    if not gb.get("batch_sizes"):
        return None
    return f"gec/bench/batch-{config['device']}-t{gb['threads']}-n{gb.get('batch_sentences') or 'all'}"


def bench_runs(config: dict, R: str) -> Dict[str, BenchRun]:
    gb, G = config["gec"]["benchmark"], f"{R}/gec"
    run1, cpu = _runs(config)
    ct2 = {"ct2_model": f"{G}/models/gec/ct2", "langs": ("src", "tgt")} if gb["ct2"] else {}
    return {_run(s): BenchRun("gec", f"{G}/models/gec/model.pt", f"{G}/data-bin/dict.src.txt", f"{G}/bench/set.bpe",
                              methods(config, R), limit=s[2], warmup=gb["warmup"], threads=s[1], **ct2,
                              exclusive=gb["exclusive"], device=s[0], max_len_a=gb["max_len_a"],
                              max_len_b=gb["max_len_b"], mem_mb=gb["mem_mb"], runtime=gb["runtime"],
                              gpus=gb["gpus"] if s[0] == "cuda" else 0)
            for s in (run1, *cpu.values())} | _batch_bench_run(config, R)


def _batch_bench_run(config: dict, R: str) -> Dict[str, BenchRun]:
    from fastdec.bench.batch_curves import at_batch_sizes

    gb, G, run = config["gec"]["benchmark"], f"{R}/gec", _batch_run(config)
    if run is None:
        return {}
    specs = batch_specs(config, R)
    ct2 = {"ct2_model": f"{G}/models/gec/ct2", "langs": ("src", "tgt")} if any(x.startswith("ct2") for x in specs) else {}
    return {run: BenchRun("gec", f"{G}/models/gec/model.pt", f"{G}/data-bin/dict.src.txt", f"{G}/bench/set.bpe",
                          at_batch_sizes(specs, gb["batch_sizes"]), limit=gb.get("batch_sentences"), **ct2,
                          warmup=gb["warmup"], threads=gb["threads"], exclusive=gb["exclusive"],
                          device=config["device"], max_len_a=gb["max_len_a"], max_len_b=gb["max_len_b"],
                          mem_mb=gb["mem_mb"], runtime=gb["runtime"],
                          gpus=gb["gpus"] if config["device"] == "cuda" else 0)}


def table_items(config: dict, R: str) -> Dict[str, TableItem]:
    run1, cpu = _runs(config)
    run = f"{R}/{_run(run1)}"
    per_sentence = [f"{R}/gec/bench/set.src", f"{run}/sentences.jsonl"]
    table1_inputs = [f"{run}/summary.csv"] + [score_file(config, run, label) for label in labels(config)]
    if table4_setting(config):
        return {"gec/tables/gec_table4.csv": TableItem("gec", "gec_table4", table1_inputs)}
    batch = _batch_run(config)
    figure6 = {} if batch is None else {
        "gec/figures/gec_figure6_batch.png": TableItem("gec", "gec_figure6_batch", [f"{R}/{batch}/summary.csv"]),
        "gec/tables/gec_figure6_batch.csv": TableItem("gec", "gec_figure6_batch", [f"{R}/{batch}/summary.csv"])}
    # report order: Table 1, Table 3, Figure 5, Table 2, Table 12, Table 11, Figure 6 (captions: workflow/report/)
    return {
        "gec/tables/gec_table1.csv": TableItem("gec", "gec_table1", table1_inputs),
        "gec/tables/gec_table3.csv": TableItem("gec", "gec_table3", table1_inputs),
        "gec/figures/gec_figure5.png": TableItem("gec", "gec_figure5", per_sentence),
        "gec/tables/gec_table2.csv": TableItem("gec", "gec_table2", per_sentence),
        "gec/tables/gec_table12.csv": TableItem("gec", "gec_table12", [f"{R}/{_run(s)}/summary.csv"
                                                                       for s in cpu.values()]),
        # from the config alone (the training command fairseq would run)
        "gec/tables/gec_table11_hyperparameters.csv": TableItem("gec", "gec_table11_hyperparameters", []),
        **figure6,
    }


def debpe_kwargs(config: dict) -> dict:
    """How hypotheses become words: subword-nmt's default, or BART's GPT-2 decoder (gec.bpe.kind gpt2)."""
    if config["gec"]["bpe"].get("kind") != "gpt2":
        return {}
    from fastdec.data.gpt2_bpe import decode_line, load_encoder
    from fastdec.workflow.bart import BartPlan

    encoder = load_encoder(BartPlan.file("encoder.json"), BartPlan.file("vocab.bpe"))
    return {"debpe": lambda line: decode_line(encoder, line)}


def model_description(config: dict) -> str:
    m = config["gec"]["model"]
    x = m["extra_args"]
    return (f"{x.get('encoder-layers', 6)}+{x.get('decoder-layers', 6)}"
            f" ({m['arch']}, {x.get('encoder-embed-dim', '')})").replace(", )", ")")


def make_table(name: str, config: dict, R: str, output: str) -> None:
    from fastdec.bench.results import read_run
    from fastdec.gec import tables

    gb, source = config["gec"]["benchmark"], config["gec"]["data"]["source"]
    run1, cpu = _runs(config)
    if name == "gec_table11_hyperparameters":
        from fastdec.report.hyperparams import gec_table11

        df = gec_table11(config)
    elif name == "gec_figure6_batch":
        from fastdec.bench.batch_curves import write_batch_curve

        write_batch_curve(read_run(f"{R}/{_batch_run(config)}"), batch_specs(config, R), gb["batch_sizes"],
                          batch_specs(config, R)[0], "figure6", output,
                          title=(f"{config['experiment']}: IAD at batch sizes {gb['batch_sizes']}, {source} "
                                 f"{gb['split']}, {model_description(config)}, {config['device']}, "
                                 f"{gb['threads']} thread(s)"))
        return
    elif name == "gec_table12":
        df = tables.table12({t: read_run(f"{R}/{_run(s)}") for t, s in cpu.items()}, model=model_description(config),
                            beam=gb["beam"])
    elif name in ("gec_table1", "gec_table3", "gec_table4"):
        run = read_run(f"{R}/{_run(run1)}")
        scores = {}
        for label in labels(config):
            path = score_file(config, run.path, label)
            if not os.path.isfile(path):
                sari = config["gec"].get("metric") == "sari"
                raise ValueError(f"{path}: no {'SARI' if sari else 'M2'} score; snakemake writes it (rule "
                                 f"{'gec_sari' if sari else 'gec_m2score'})")
            with open(path, encoding="utf-8") as f:
                scores[label] = json.load(f)
        if name == "gec_table4":
            df = tables.table4(run, scores, dataset=source, split=gb["split"])
        else:
            df = tables.table1(run, scores, split=gb["split"], corpus=source,
                               synthetic=bool(config["gec"].get("pretrain", {}).get("enabled")))
        if name == "gec_table3":
            df = tables.table3(df, bart_12_2=bool(config["gec"]["model"].get("init_from_bart")))
        bad = tables.not_lossless(run)
        if bad:
            msg = f"not token-identical to the engine's greedy output: {'; '.join(bad)} (see {run.path}/sentences.jsonl)"
            if gb["strict_identical"]:
                raise ValueError(msg + "; IAD must be lossless (benchmark.strict_identical is on)")
            print("WARNING: " + msg, file=sys.stderr)
    else:
        from fastdec.gec.analysis import per_sentence
        from fastdec.gec.examples import table2
        from fastdec.gec.figures import figure5
        from fastdec.text import read_lines

        run = read_run(f"{R}/{_run(run1)}")
        recs = run.records()
        rows = per_sentence(read_lines(f"{R}/gec/bench/set.src"), recs["greedy"], recs["iad"], run.hyps("iad"),
                            **debpe_kwargs(config))
        if name == "gec_figure5":
            title = (f"{config['experiment']}: {source} {gb['split']}, {model_description(config)}, "
                     f"{config['device']}, {gb['threads']} thread(s)")
            summary = figure5(rows, output, title=title)
            summary.update(identical_to_greedy=sum(r.identical for r in rows),
                           blocks_unavailable=sum(r.blocks is None for r in rows))
            print(json.dumps(summary), flush=True)
            return
        df = table2(rows)
    df.to_csv(output, index=False)
    print(df.drop(columns=["input"], errors="ignore").to_string(index=False), flush=True)
