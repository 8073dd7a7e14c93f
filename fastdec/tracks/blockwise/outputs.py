"""Writes one table or figure of the Blockwise track (``fastdec tables blockwise NAME``) from its benchmark runs."""
from __future__ import annotations

import os

from fastdec.layout import ResultsLayout
from fastdec.tracks.base import write_policy_item
from fastdec.tracks.blockwise.plan import GAD_RUN, batch_specs, example_run, runs, section, table_items


def make_table(name: str, config: dict, R: str, output: str) -> None:
    """Write one table (CSV) or figure (PNG; ``blockwise_figure4`` is both, by the output's extension)."""
    from fastdec.tracks.blockwise import tables as T

    if name == "blockwise_policy":
        return write_policy_item(table_items(config, R), "blockwise", output)
    bw = section(config)
    dec = bw["decode"]
    prec, beam, title = dec["head_precision"], dec["beam"], config.get("experiment", "")
    item = next(i for i in table_items(config, R).values() if i.name == name)
    if name == "blockwise_example":
        from fastdec.bench.trace import trace_table

        run, method = example_run(bw, config)
        sentences, _, checkpoint, src, dictionary = item.inputs
        out = trace_table(checkpoint, os.path.dirname(dictionary), src, method, run=ResultsLayout(R).run(run),
                          max_len_a=config["decode"]["max_len_a"], max_len_b=config["decode"]["max_len_b"])
        out.to_csv(output, index=False)
        print(out.to_string(index=False), flush=True)
        return
    if name == "blockwise_batch":
        from fastdec.bench.batch_curves import write_batch_curve
        from fastdec.bench.results import read_run

        run, (_, _, k) = next((r, key) for r, key in runs(bw).items() if key[0] == "batch")
        specs = batch_specs(bw, k)
        write_batch_curve(read_run(ResultsLayout(R).run(run)), specs, dec["batch_sizes"], specs[0], "blockwise", output,
                          title=(f"{title}: exact blockwise ({specs[3]}) at batch sizes {dec['batch_sizes']}, "
                                 f"{config.get('device', 'cpu')}, {dec['threads']} thread(s)"))
        return
    L = ResultsLayout(R)
    df = T.load_runs({L.run(run): key for run, key in runs(bw).items() if L.run(f"{run}/summary.csv") in item.inputs})
    if name == "blockwise_table1_scatter":
        return T.plot_table1(df, output, bw["block_sizes"], prec, title=title)
    if name == "blockwise_figure4" and output.endswith(".png"):
        return T.plot_figure4(T.figure4_table(df, prec), output, title=title)
    if name == "blockwise_vs_gad":
        from fastdec.bench.results import read_run
        from fastdec.text import read_lines

        tgt = config.get("data", {}).get("tgt_lang", "tgt")
        n = int(df.loc[df["method"] == "greedy", "n_sentences"].iloc[0])  # the sentences our test runs decoded
        gad = read_run(L.run(GAD_RUN)).resummarize(first=n, refs=read_lines(L.raw("test", tgt)), lang=tgt)
        out = T.comparison_table(df, gad, beam)
    else:
        out = {"blockwise_table1": lambda: T.table1(df, bw["block_sizes"], prec),
               "blockwise_approx": lambda: T.approx_table(df, dec["topk"], prec),
               "blockwise_minblock": lambda: T.min_block_table(df, dec["min_block_sizes"], prec),
               "blockwise_figure4": lambda: T.figure4_table(df, prec),
               "blockwise_table4": lambda: T.table4(df, beam, prec)}[name]()
    out.to_csv(output, index=False)
    print(out.to_string(index=False), flush=True)
