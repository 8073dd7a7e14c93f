"""Writes one table or figure of the GEC track (``fastdec tables gec NAME``) from its benchmark runs and scores."""
from __future__ import annotations

import json
import os
import sys

from fastdec.layout import ResultsLayout
from fastdec.tracks.base import write_policy_item
from fastdec.tracks.gec.plan import (batch_run, run_name, runs, batch_specs, debpe_kwargs, gec_path, labels,
                                     model_description, score_file, table_items)


def make_table(name: str, config: dict, R: str, output: str) -> None:
    from fastdec.bench.results import read_run
    from fastdec.tracks.gec import tables

    if name == "gec_policy":
        return write_policy_item(table_items(config, R), "gec", output)
    gb, source = config["gec"]["benchmark"], config["gec"]["data"]["source"]
    run1, cpu = runs(config)
    if name == "gec_table11_hyperparameters":
        from fastdec.tracks.gec.hyperparams import gec_table11

        df = gec_table11(config)
    elif name == "gec_figure6_batch":
        from fastdec.bench.batch_curves import write_batch_curve

        write_batch_curve(read_run(ResultsLayout(R).run(batch_run(config))), batch_specs(config, R), gb["batch_sizes"],
                          batch_specs(config, R)[0], "figure6", output,
                          title=(f"{config['experiment']}: IAD at batch sizes {gb['batch_sizes']}, {source} "
                                 f"{gb['split']}, {model_description(config)}, {config['device']}, "
                                 f"{gb['threads']} thread(s)"))
        return
    elif name == "gec_table12":
        df = tables.table12({t: read_run(ResultsLayout(R).run(run_name(s))) for t, s in cpu.items()}, model=model_description(config),
                            beam=gb["beam"])
    elif name in ("gec_table1", "gec_table3", "gec_table4"):
        run = read_run(ResultsLayout(R).run(run_name(run1)))
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
        from fastdec.tracks.gec.analysis import per_sentence
        from fastdec.tracks.gec.examples import table2
        from fastdec.tracks.gec.figures import figure5
        from fastdec.text import read_lines

        run = read_run(ResultsLayout(R).run(run_name(run1)))
        recs = run.records()
        rows = per_sentence(read_lines(gec_path(R, "bench", "set.src")), recs["greedy"], recs["iad"], run.hyps("iad"),
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
