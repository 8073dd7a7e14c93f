#!/usr/bin/env python
"""GEC track tables and figure (logic in fastdec/gec/{tables,analysis,examples,figures}.py).

  gec_tables.py table1 --bench bench.csv --m2 m2.<label>.json ... --output gec_table1.csv [--strict-identical]
      IAD paper Table 1: latency, speedup over beam 5, P/R/F0.5, identical-to-greedy %, iterations.
  gec_tables.py table12 --run THREADS=bench.csv ... --output gec_table12.csv
      IAD paper Table 12: CPU speedups by thread count.
  gec_tables.py analyze --source set.src --stats-prefix P --hyp-prefix P --figure gec_figure5.png
                        --examples gec_table2.csv --per-sentence per_sentence.csv --summary summary.json
      per-sentence speedup vs edit ratio (Figure 5) and decoding examples (Table 2).
"""
import argparse
import json
import sys

from _common import run_cli


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = ap.add_subparsers(dest="cmd", required=True)
    t1 = sub.add_parser("table1")
    t1.add_argument("--bench", required=True)
    t1.add_argument("--m2", nargs="*", default=[])
    t1.add_argument("--beam", type=int, default=5)
    t1.add_argument("--split", default="test")
    t1.add_argument("--corpus", default="")
    t1.add_argument("--strict-identical", action="store_true",
                    help="fail unless every IAD output is token-identical to the engine's greedy output")
    t1.add_argument("--output", required=True)
    t12 = sub.add_parser("table12")
    t12.add_argument("--run", action="append", required=True, metavar="THREADS=CSV")
    t12.add_argument("--model", default="")
    t12.add_argument("--beam", type=int, default=5)
    t12.add_argument("--output", required=True)
    an = sub.add_parser("analyze")
    an.add_argument("--source", required=True, help="benchmark set, tokenised words (one sentence per line)")
    an.add_argument("--stats-prefix", required=True)
    an.add_argument("--hyp-prefix", required=True)
    an.add_argument("--figure", required=True)
    an.add_argument("--examples", required=True)
    an.add_argument("--per-sentence", required=True)
    an.add_argument("--summary", required=True)
    an.add_argument("--title", default="")
    a = ap.parse_args()

    if a.cmd == "table1":
        from fastdec.gec.tables import check_identical, table1

        df = table1(a.bench, a.m2, beam=a.beam, split=a.split, corpus=a.corpus)
        df.to_csv(a.output, index=False)
        print(df.to_string(index=False), flush=True)
        same, n = check_identical(a.bench, "iad")
        msg = f"IAD identical to engine greedy: {same}/{n}"
        if same != n:
            if a.strict_identical:
                raise ValueError(msg + " -- IAD must be lossless; see the per-sentence stats of the benchmark run")
            print("WARNING: " + msg, file=sys.stderr)
        else:
            print(msg, flush=True)
    elif a.cmd == "table12":
        from fastdec.gec.tables import table12

        runs = {}
        for item in a.run:
            k, _, v = item.partition("=")
            if not k.isdigit() or not v:
                raise ValueError(f"--run expects THREADS=CSV, got {item!r}")
            runs[int(k)] = v
        df = table12(runs, model=a.model, beam=a.beam)
        df.to_csv(a.output, index=False)
        print(df.to_string(index=False), flush=True)
    else:
        from fastdec.gec import analysis
        from fastdec.gec.examples import table2
        from fastdec.gec.figures import figure5

        rows = analysis.per_sentence(
            analysis.read_lines(a.source),
            analysis.read_stats(f"{a.stats_prefix}.greedy.jsonl"), analysis.read_stats(f"{a.stats_prefix}.iad.jsonl"),
            analysis.read_lines(f"{a.hyp_prefix}.greedy.txt"), analysis.read_lines(f"{a.hyp_prefix}.iad.txt"))
        analysis.write_per_sentence(rows, a.per_sentence)
        summary = figure5(rows, a.figure, title=a.title)
        ex = table2(rows)
        ex.to_csv(a.examples, index=False)
        summary["identical_to_greedy"] = sum(r.identical for r in rows)
        summary["blocks_unavailable"] = sum(r.blocks is None for r in rows)
        with open(a.summary, "w", encoding="utf-8") as f:
            json.dump(summary, f, indent=2)
        print(json.dumps(summary), flush=True)
        print(ex.drop(columns=["input"]).to_string(index=False), flush=True)
    return 0


if __name__ == "__main__":
    run_cli(main)
