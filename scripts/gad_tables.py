#!/usr/bin/env python
"""GAD track tables (CSV) from benchmark summaries, with the paper's numbers beside ours.

    gad_tables.py table1 --summary bench/test/summary.csv [--paper wmt16_en-ro] --output gad_table1.csv
    gad_tables.py table2 --summary bench/valid/summary.csv --block-sizes 4,6,8,10 --beta 3 --tau 1.0 --output ...
    gad_tables.py table3 --summary bench/valid/summary.csv --k 10 --betas 3,5 --taus 1,2,3,4,5 --output ...
    gad_tables.py table7 --summary bench/test/summary.csv --systems gadpp_k10_b5_t3,gad_k10 --output ...
    gad_tables.py table9 --summary bench/test/summary.csv --systems greedy,gad_k10,... --hq gadpp_k10_b3_t1 --output ...
"""
import argparse

from _common import run_cli


def _ints(s):
    try:
        return [int(x) for x in s.split(",") if x.strip()]
    except ValueError:
        raise ValueError(f"expected comma-separated integers, got {s!r}") from None


def _floats(s):
    try:
        return [float(x) for x in s.split(",") if x.strip()]
    except ValueError:
        raise ValueError(f"expected comma-separated numbers, got {s!r}") from None


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("kind", choices=["table1", "table2", "table3", "table7", "table9"])
    ap.add_argument("--summary", required=True, help="summary.csv of a gad_bench.py run")
    ap.add_argument("--output", required=True)
    ap.add_argument("--block-sizes", help="table2: block sizes k")
    ap.add_argument("--beta", type=int, default=3, help="table2: GAD++ top-beta (default 3)")
    ap.add_argument("--tau", type=float, default=1.0, help="table2: GAD++ tau (default 1.0)")
    ap.add_argument("--k", type=int, help="table3: block size")
    ap.add_argument("--betas", help="table3: comma-separated betas")
    ap.add_argument("--taus", help="table3: comma-separated taus")
    ap.add_argument("--systems", help="table7/table9: comma-separated systems")
    ap.add_argument("--hq", help="table9: the GAD++ system compared with the paper's GAD++ (top-3, tau=1.0)")
    ap.add_argument("--paper", default="wmt14_en-de",
                    help="table1: paper reference (wmt14_en-de = GAD Table 1; wmt14_de-en, wmt16_en-ro, wmt16_ro-en)")
    a = ap.parse_args()
    import pandas as pd

    from fastdec.gad import tables
    from fastdec.gad.systems import check_gad_params

    summary = pd.read_csv(a.summary)
    if a.kind == "table1":
        df = tables.table1(summary, a.paper)
    elif a.kind == "table2":
        if not a.block_sizes:
            raise ValueError("table2 needs --block-sizes")
        ks = _ints(a.block_sizes)
        for k in ks:
            check_gad_params(k=k)
        check_gad_params(beta=a.beta, tau=a.tau)
        df = tables.table2_block_size(summary, ks, a.beta, a.tau)
    elif a.kind == "table3":
        if a.k is None or not a.betas or not a.taus:
            raise ValueError("table3 needs --k, --betas and --taus")
        betas, taus = _ints(a.betas), _floats(a.taus)
        check_gad_params(k=a.k)
        for b in betas:
            check_gad_params(beta=b)
        for t in taus:
            check_gad_params(tau=t)
        df = tables.table3_beta_tau(summary, a.k, betas, taus)
    else:
        if not a.systems:
            raise ValueError(f"{a.kind} needs --systems")
        systems = [s.strip() for s in a.systems.split(",") if s.strip()]
        df = tables.table7_modules(summary, systems) if a.kind == "table7" else \
            tables.table9_repetition(summary, systems, hq=a.hq)
    df.to_csv(a.output, index=False)
    print(df.to_string(index=False), flush=True)


if __name__ == "__main__":
    run_cli(main)
