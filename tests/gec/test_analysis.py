"""Per-sentence analysis, Table 1/12/2 builders and Figure 5 from small JSON/CSV fixtures (fast)."""
import csv
import json
import math
from pathlib import Path

import pandas as pd
import pytest

from fastdec.gec import analysis, tables
from fastdec.gec.examples import render_blocks, select_examples, table2
from fastdec.gec.figures import figure5
from fastdec.report.paper_gec import IAD_TABLE1, IAD_TABLE12


def test_remove_bpe_levenshtein_edit_ratio():
    assert analysis.remove_bpe("Ді@@ ти ходять до шко@@ ли@@") == "Діти ходять до школи"
    assert analysis.levenshtein("a b c".split(), "a c d".split()) == 2
    # the paper's Table 2 example: "the" inserted, advantage -> advantages: 2 edits over 15 input words = 0.13
    src = "As a result , people have more time to enjoy advantage of modern life ."
    out = "As a result , people have more time to enjoy the advantages of modern life ."
    assert round(analysis.edit_ratio(src, out), 2) == 0.13
    assert analysis.edit_ratio("a b", "a b") == 0.0


def test_iad_blocks_reconstruct_iterations():
    toks = "Because the birth rate is reduced".split()
    # it0: 1 draft token accepted + verifier's "the"; it1: no unique match -> one token; it2: rest + EOS
    blocks = analysis.iad_blocks(toks, accepted=[1, 0, 3], drafted=[7, 0, 4], n_tokens=7)
    assert [b["tokens"] for b in blocks] == [["Because", "the"], ["birth"], ["rate", "is", "reduced"]]
    assert [b["parallel"] for b in blocks] == [True, False, True]
    assert render_blocks(blocks) == "[Because the]₀ ⟨birth⟩₁ [rate is reduced]₂"
    # a final iteration that accepted the draft's EOS appends one token fewer
    assert analysis.iad_blocks(["a", "b"], accepted=[2], n_tokens=3)[0]["tokens"] == ["a", "b"]
    # counts that do not add up -> None (e.g. special tokens lost from the hypothesis text)
    assert analysis.iad_blocks(["a", "b"], accepted=[0], n_tokens=3) is None
    assert analysis.iad_blocks(["a"], accepted=[0, 0], n_tokens=3) is None


def test_spearman():
    assert analysis.spearman([1, 2, 3, 4], [10, 20, 30, 40]) == pytest.approx(1.0)
    assert analysis.spearman([1, 2, 3, 4], [4, 3, 2, 1]) == pytest.approx(-1.0)
    assert math.isnan(analysis.spearman([1, 1], [1, 2]))


BENCH_COLS = ["label", "method", "batch_size", "n_sentences", "wall_time", "sent_per_s", "mean_time_ms",
              "speedup_vs_beam", "identical_to_greedy", "mean_iterations", "tokens_per_iteration",
              "mean_accepted_per_iteration", "time_encoder", "time_drafter", "time_verifier", "time_other",
              "peak_mem_mb", "device", "dtype", "threads", "params"]


def write_bench(path, times, identical=None, n=10, threads=1):
    identical = identical or {}
    with open(path, "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=BENCH_COLS)
        w.writeheader()
        for label, method in (("fairseq-beam5", "fairseq-beam"), ("fairseq-greedy", "fairseq-greedy"),
                              ("greedy", "greedy"), ("iad", "iad")):
            w.writerow({"label": label, "method": method, "batch_size": 1, "n_sentences": n,
                        "wall_time": times[method], "identical_to_greedy": identical.get(method, n),
                        "mean_iterations": 20.0 if method != "iad" else 4.5, "tokens_per_iteration": 1.0,
                        "device": "cpu", "threads": threads, "params": "{}"})
    return path


def write_m2(path, p, r, f):
    Path(path).write_text(json.dumps({"precision": p, "recall": r, "f0.5": f, "approximate_sentences": 0}))
    return str(path)


def test_table1_from_fixtures(tmp_path):
    bench = write_bench(tmp_path / "bench.csv", {"fairseq-beam": 10.0, "fairseq-greedy": 8.0, "greedy": 7.5,
                                                 "iad": 2.0}, identical={"fairseq-beam": 7})
    m2 = [write_m2(tmp_path / f"m2.{lab}.json", 0.5, 0.2, 0.385) for lab in
          ("fairseq-beam5", "fairseq-greedy", "greedy", "iad")]
    df = tables.table1(bench, m2, beam=5, split="test", corpus="uagec")
    assert list(df["method"]) == ["fairseq-beam5", "fairseq-greedy", "greedy", "iad"]
    row = df.set_index("method").loc["iad"]
    assert row["speedup_vs_beam"] == 5.0 and row["total_latency_s"] == 2.0 and row["ms_per_sentence"] == 200.0
    assert row["speedup_vs_engine_greedy"] == 3.75
    assert row["P"] == 50.0 and row["R"] == 20.0 and row["F0.5"] == 38.5
    assert row["identical_to_greedy_pct"] == 100.0 and row["mean_iterations"] == 4.5
    assert row["paper_speedup"] == IAD_TABLE1["iad"]["speedup"] and row["paper_F0.5"] == 38.36
    assert df.set_index("method").loc["fairseq-beam5", "identical_to_greedy_pct"] == 70.0
    assert pd.isna(df.set_index("method").loc["greedy", "paper_speedup"])  # no paper row for the engine's greedy
    assert tables.check_identical(bench) == (10, 10)
    with pytest.raises(tables.TableError, match="m2.<label>.json"):
        tables.table1(bench, [str(tmp_path / "bench.csv")])


def test_table1_adds_draft_capped_iad_rows_and_checks_them_too(tmp_path):
    bench = write_bench(tmp_path / "bench.csv", {"fairseq-beam": 10.0, "fairseq-greedy": 8.0, "greedy": 7.5,
                                                 "iad": 2.0})
    with open(bench, "a", newline="") as f:  # what benchmark_decoding.py --max-draft-lens 16,4 adds
        w = csv.DictWriter(f, fieldnames=BENCH_COLS)
        for cap, t, same in ((16, 1.6, 10), (4, 2.5, 9)):
            w.writerow({"label": f"iad-draft{cap}", "method": "iad", "batch_size": 1, "n_sentences": 10,
                        "wall_time": t, "identical_to_greedy": same, "mean_iterations": 5.0,
                        "tokens_per_iteration": 3.0, "device": "cpu", "threads": 1, "params": "{}"})
    df = tables.table1(bench, beam=5).set_index("method")
    assert list(df.index) == ["fairseq-beam5", "fairseq-greedy", "greedy", "iad", "iad-draft4", "iad-draft16"]
    assert df.loc["iad-draft16", "system"] == "engine IAD, drafts of at most 16 tokens"
    assert df.loc["iad-draft16", "speedup_vs_beam"] == 6.25 and pd.isna(df.loc["iad-draft16", "paper_speedup"])
    assert list(tables.read_bench(bench).index) == ["fairseq-beam", "fairseq-greedy", "greedy", "iad"]
    assert tables.check_identical(bench) == (29, 30)  # a capped run that is not lossless is caught as well
    assert tables.table12({1: bench}).set_index("threads").loc[1, "iad_speedup"] == 5.0


def test_table12_rows_for_our_and_the_papers_thread_counts(tmp_path):
    b2 = write_bench(tmp_path / "t2.csv", {"fairseq-beam": 6.0, "fairseq-greedy": 5.0, "greedy": 5.0, "iad": 1.5})
    b1 = write_bench(tmp_path / "t1.csv", {"fairseq-beam": 9.0, "fairseq-greedy": 7.0, "greedy": 7.0, "iad": 2.0})
    df = tables.table12({2: b2, 1: b1}, model="3+3").set_index("threads")
    assert list(df.index) == [8, 2, 1]
    assert df.loc[2, "iad_speedup"] == 4.0 and df.loc[2, "paper_iad_speedup"] == IAD_TABLE12[2]["iad_speedup"]
    assert df.loc[1, "iad_speedup"] == 4.5 and pd.isna(df.loc[1, "paper_iad_speedup"])
    assert pd.isna(df.loc[8, "iad_speedup"]) and df.loc[8, "paper_iad_speedup"] == 6.5
    assert pd.isna(df.loc[8, "model"]) and df.loc[2, "model"] == "3+3"


def rows_fixture():
    def row(i, src, out, gt, it, accepted):
        toks = out.split()
        return analysis.SentenceRow(
            id=i, source=src, output=out, src_words=len(src.split()), edit_ratio=analysis.edit_ratio(src, out),
            greedy_time=gt, iad_time=it, speedup=gt / it, iterations=len(accepted), out_tokens=len(toks) + 1,
            identical=True, blocks=analysis.iad_blocks(toks, accepted, n_tokens=len(toks) + 1))
    return [
        row(0, "a b c d e f", "a b c d e f", 0.07, 0.01, [6]),
        row(1, "a b c d", "a x c d", 0.05, 0.02, [1, 2]),
        row(2, "p q r", "s t u v", 0.04, 0.04, [0, 0, 0, 0, 0]),
        row(3, "k l m n o", "k l m n o", 0.05, 0.01, [5]),
    ]


def test_table2_selects_nearest_edit_ratio_and_marks_blocks():
    df = table2(rows_fixture())
    assert len(df) == 4  # as many rows as sentences available (the paper has 7)
    first = df.iloc[0]
    assert first["paper_speedup"] == 16.7 and first["edit_ratio"] == 0.0 and first["sentence"] == 1  # longer one
    assert first["output"] == "[a b c d e f]₀" and first["parallel_tokens_pct"] == 100.0
    assert "⟨" in df.set_index("sentence").loc[3, "output"]
    pairs = select_examples(rows_fixture())
    assert len({r.id for _, r in pairs}) == len(pairs)


def test_figure5_writes_png(tmp_path):
    out = tmp_path / "fig.png"
    summary = figure5(rows_fixture(), out, title="test")
    assert out.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert summary["sentences"] == 4 and summary["unedited_sentences"] == 2
    assert summary["spearman_rho"] < 0  # more edits, less speedup


def test_render_blocks_caps_long_outputs():
    blocks = [{"tokens": ["x"], "parallel": False}] * 70
    text = render_blocks(blocks, max_blocks=60)
    assert text.endswith("… (+10 blocks)") and text.count("⟨x⟩") == 60
