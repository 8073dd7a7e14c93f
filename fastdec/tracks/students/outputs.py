"""Writes one table or figure of the students track (``fastdec tables students NAME``) from its benchmark runs."""
from __future__ import annotations

from fastdec.layout import ResultsLayout
from fastdec.tracks.students.plan import (decoded_models, gad_method, gpu_run_dir, pruned_names, pruning_bases,
                                         run_dir, section)


def make_table(name: str, config: dict, R: str, output: str) -> None:
    from fastdec.tracks.students import tables as T

    st = section(config)
    dec = st["decode"]
    L = ResultsLayout(R)
    gpu = dec.get("gpu")
    runs = {n: {**m, "summary": L.run(f"{run_dir(n, dec['split'])}/summary.csv"), "checkpoint": L.model(n, "students/"),
                **({"gpu_summary": L.run(f"{gpu_run_dir(n, dec['split'])}/summary.csv")} if gpu else {})}
            for n, m in decoded_models(st).items()}
    if name == "students_gad_verifier":
        from fastdec.bench.methods import parse_method

        label = parse_method(gad_method(config, st, R)[0]).label
        return T.dump(T.verifier_table({n: r["summary"] for n, r in runs.items()}, label), output)
    df = T.collect(runs, dec["beam"], dec["batch_size"], gpu["batch_size"] if gpu else None)
    if name == "students_figure2" and output.endswith(".png"):
        return T.plot_figure2(T.figure2_table(df), output, title=config.get("experiment", ""))
    out = {"students_table1": lambda: T.table1(df, st["baseline"]),
           "students_figure2": lambda: T.figure2_table(df),
           "students_table2": lambda: T.table2(df, pruning_bases(st), pruned_names(st)),
           "students_table3": lambda: T.table3(df, st["baseline"], pruning_bases(st))}[name]()
    T.dump(out, output)
