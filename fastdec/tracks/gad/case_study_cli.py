"""``fastdec gad-case-study``: GAD paper, Table 11: iteration-by-iteration case study of GAD and GAD++ on a few test
sentences (CSV).

Picks --n examples among the first --pool sentences (preferring ones where GAD++ differs from greedy and that take
2-6 iterations) unless --ids are given, and writes, per example: SOURCE, GREEDY, then for GAD and GAD++ the draft
(D) and verification (V) of every iteration and the RESULT (notation: fastdec/tracks/gad/case_study.py).
"""
import argparse


def add_arguments(ap: argparse.ArgumentParser) -> None:
    ap.add_argument("--verifier", required=True)
    ap.add_argument("--drafter", required=True)
    ap.add_argument("--data-bin", required=True)
    ap.add_argument("--input", required=True, help="BPE'd source sentences")
    ap.add_argument("--k", type=int, required=True, help="block size (the drafter's)")
    ap.add_argument("--beta", type=int, default=3)
    ap.add_argument("--tau", type=float, default=1.0)
    ap.add_argument("--n", type=int, default=3, help="number of examples (default 3)")
    ap.add_argument("--pool", type=int, default=200, help="choose among the first N sentences (default 200)")
    ap.add_argument("--ids", help="comma-separated sentence ids (0-based) instead of the automatic choice")
    ap.add_argument("--max-len-a", type=float, default=1.2)
    ap.add_argument("--max-len-b", type=int, default=10)
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--output", required=True)


def main(a: argparse.Namespace) -> int:
    if a.n < 0 or a.pool < 1 or a.threads < 1:
        raise ValueError("--n must be >= 0, --pool and --threads >= 1")
    if a.beta < 1 or a.tau < 0:
        raise ValueError(f"--beta must be >= 1 and --tau >= 0, got {a.beta} and {a.tau}")
    import pandas as pd
    import torch

    from fastdec.bench.trace import MethodTracer, drafting_method
    from fastdec.text import read_lines
    from fastdec.tracks.gad.case_study import case_study_rows, select_examples

    torch.set_num_threads(a.threads)
    lines = read_lines(a.input)
    # GAD and GAD++ as the benchmark decodes them (the method grammar; the two share one drafter)
    drafter_args = {"checkpoint": a.drafter}
    gad = drafting_method(f"gad:k={a.k}", drafter_args)
    gadpp = drafting_method(f"gad:k={a.k}:beta={a.beta}:tau={a.tau:g}", drafter_args)
    tracer = MethodTracer(a.verifier, a.data_bin, max_len_a=a.max_len_a, max_len_b=a.max_len_b)
    loaded, k = tracer.loaded, tracer.drafter(gad).k
    d = loaded.tgt_dict
    if a.ids:
        ids = [int(x) for x in a.ids.split(",") if x.strip()]
        bad = [i for i in ids if not 0 <= i < len(lines)]
        if bad:
            raise ValueError(f"--ids {bad} outside 0..{len(lines) - 1}")
    else:
        cands = []
        for i, line in enumerate(lines[: a.pool]):
            src = loaded.encode(line)
            g, r = tracer.greedy(src), tracer.decode(gadpp, src)
            cands.append({"id": i, "differs": r.tokens != g.tokens, "iterations": r.stats.iterations,
                          "src_len": int(src.numel())})
        ids = select_examples(cands, a.n)
    rows = []
    for n, i in enumerate(ids, 1):
        src = loaded.encode(lines[i])
        greedy = tracer.greedy(src)
        traces = [(f"GAD (k={k})", tracer.trace(gad, src)),
                  (f"GAD++ (k={k}, top-{a.beta}, tau={a.tau:g})", tracer.trace(gadpp, src))]
        if traces[0][1].tokens != greedy.tokens:
            raise RuntimeError(f"sentence {i}: GAD output differs from greedy decoding (engine bug)")
        rows += case_study_rows(i, lines[i], loaded.decode(greedy.tokens), traces, lambda t: d[t], d.eos(),
                                loaded.decode)
    df = pd.DataFrame(rows, columns=["example", "system", "iteration", "step", "accepted", "text"])
    # integers stay integers in the CSV (an empty cell would turn the column into floats when read back)
    for col in ("iteration", "accepted"):
        df[col] = [("-" if v is None or v != v else str(int(v))) for v in df[col]]
    df.to_csv(a.output, index=False)
    print(df.to_string(index=False), flush=True)
