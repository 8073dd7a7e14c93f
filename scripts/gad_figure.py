#!/usr/bin/env python
"""GAD paper, Figure 4: histogram of per-sentence speedups of one system over the beam-5 baseline (PNG)."""
import argparse
import json

from _common import run_cli


def main():
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--sentences", required=True, help="sentences.jsonl of a gad_bench.py run")
    ap.add_argument("--system", required=True, help="e.g. gadpp_k10_b5_t3")
    ap.add_argument("--baseline", default="at_b5")
    ap.add_argument("--output", required=True, help="PNG")
    ap.add_argument("--stats", help="also write the distribution's statistics (JSON)")
    a = ap.parse_args()
    from fastdec.gad.bench import read_sentences
    from fastdec.gad.figures import per_sentence_speedup, speedup_histogram
    from fastdec.gad.systems import parse_system

    spec = parse_system(a.system)
    speedup = per_sentence_speedup(read_sentences(a.sentences), a.system, a.baseline)
    title = (f"{spec.label} vs beam search, {speedup.size} sentences\n"
             "(paper, WMT14 test, k=25 top-5 tau=3.0: most sentences 3x-6x)")
    stats = speedup_histogram(speedup, a.output, title=title)
    stats.update(system=a.system, baseline=a.baseline)
    if a.stats:
        with open(a.stats, "w") as f:
            json.dump(stats, f, indent=2)
    print(json.dumps(stats), flush=True)


if __name__ == "__main__":
    run_cli(main)
