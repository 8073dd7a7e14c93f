#!/usr/bin/env python
"""Blockwise track tables and figures (CSV / PNG) from blockwise_eval.py results, the paper's numbers beside ours.

Each ``--out-*`` is optional; only the given outputs are written. ``--gad-summary`` is the GAD track's benchmark
``summary.csv`` for the comparison table (``--out-vs-gad``).
"""
import argparse
import sys
from pathlib import Path

from _common import run_cli


def _ints(text, name):
    if text in (None, "", "none"):
        return []
    try:
        return [int(x) for x in text.split(",") if x.strip()]
    except ValueError:
        raise ValueError(f"--{name} must be comma-separated integers, got {text!r}") from None


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--valid", nargs="*", default=[], help="blockwise_eval.py JSON files of the valid set")
    ap.add_argument("--test", nargs="*", default=[], help="blockwise_eval.py JSON files of the test set")
    ap.add_argument("--gad-summary", help="the GAD track's test benchmark summary.csv")
    ap.add_argument("--gad-sentences", help="the GAD track's sentences.jsonl (recompute its rows on our sentences)")
    ap.add_argument("--ref", help="raw test references (BLEU of the recomputed GAD rows)")
    ap.add_argument("--lang", help="target language of --ref")
    ap.add_argument("--block-sizes", default="", help="k values of Table 1 (default: all decoded)")
    ap.add_argument("--topk", default="2,3")
    ap.add_argument("--min-block-sizes", default="2,3")
    ap.add_argument("--beam", type=int, default=5)
    ap.add_argument("--title", default="", help="label of our points in the figures (e.g. the experiment)")
    for name in ("table1", "table1-png", "approx", "minblock", "figure4", "figure4-png", "table4", "vs-gad"):
        ap.add_argument(f"--out-{name}")
    a = ap.parse_args(argv)
    if not a.valid and not a.test:
        raise ValueError("no inputs: give --valid and/or --test result files")
    for p in list(a.valid) + list(a.test):
        if not Path(p).is_file():
            raise ValueError(f"input not found: {p}")

    import pandas as pd

    from fastdec.blockwise import tables as T

    ks = _ints(a.block_sizes, "block-sizes")
    df = T.load_evals(list(a.valid) + list(a.test))
    written = {}

    def save(df_out, path):
        Path(path).parent.mkdir(parents=True, exist_ok=True)
        df_out.to_csv(path, index=False)
        written[path] = df_out

    if a.out_table1:
        save(T.table1(df, ks or None), a.out_table1)
    if a.out_table1_png:
        T.plot_table1(df, a.out_table1_png, ks or None, title=a.title)
    if a.out_approx:
        save(T.approx_table(df, _ints(a.topk, "topk")), a.out_approx)
    if a.out_minblock:
        save(T.min_block_table(df, _ints(a.min_block_sizes, "min-block-sizes")), a.out_minblock)
    fig4 = T.figure4_table(df)
    if a.out_figure4:  # k as text, so the Markdown report does not print it as a float
        save(fig4.assign(k=[f"k={k}" for k in fig4["k"]]) if len(fig4) else fig4, a.out_figure4)
    if a.out_figure4_png:
        T.plot_figure4(fig4, a.out_figure4_png, title=a.title)
    if a.out_table4:
        save(T.table4(df, beam=a.beam), a.out_table4)
    if a.out_vs_gad:
        for path in (a.gad_summary, a.gad_sentences, a.ref):
            if path and not Path(path).is_file():
                raise ValueError(f"input not found: {path}")
        refs = None
        if a.ref:
            from fastdec.data.parallel import read_lines

            refs = read_lines(a.ref)
        save(T.comparison_table(df, a.gad_summary, gad_sentences=a.gad_sentences, refs=refs, lang=a.lang,
                                beam=a.beam), a.out_vs_gad)
    with pd.option_context("display.width", 200, "display.max_columns", 30):
        for path, d in written.items():
            print(f"== {path}\n{d.to_string(index=False)}\n", file=sys.stderr)
    return 0


if __name__ == "__main__":
    run_cli(main)
