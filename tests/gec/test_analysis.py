"""The GEC track on a small synthetic results directory (fastdec.bench.results.write_run): runs and tables of
fastdec.tracks.gec, `fastdec tables gec ...`, Tables 1/12/2 and Figure 5; per-sentence analysis helpers (fast)."""
import copy
import json
import math
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest
import yaml
from snakemake.utils import validate

from fastdec.bench.methods import parse_methods
from fastdec.bench.results import Record, write_run
from fastdec.tracks.gec import analysis
from fastdec.tracks.gec.examples import render_blocks, select_examples, table2
from fastdec.tracks.gec.figures import figure5
from fastdec.tracks.gec.paper import IAD_TABLE1, IAD_TABLE12
from fastdec.text import remove_bpe, write_lines
from fastdec.tracks.gec import outputs as gec_outputs
from fastdec.tracks.gec import plan as gec

REPO = Path(__file__).resolve().parents[2]


def test_remove_bpe_levenshtein_edit_ratio():
    assert remove_bpe("Ді@@ ти ходять до шко@@ ли@@") == "Діти ходять до школи"
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


# --- a synthetic GEC results directory -------------------------------------------------------------------------
VOCAB = {5: "a", 6: "b@@", 7: "c", 8: "d", 9: "e", 10: "f"}
SOURCES = ["a bc d", "e f", "a d", "f e a"]          # set.src (words)
GREEDY = [[5, 6, 7, 8, 2], [9, 10, 2], [5, 9, 8, 2], [10, 9, 5, 2]]
# per-sentence times (s) of each method; beam 5 takes 2.0 s in all, engine greedy 1.2 s, IAD 0.4 s
TIMES = {"fairseq-beam5": 0.5, "fairseq-greedy": 0.4, "greedy": 0.3, "iad": 0.1, "iad-draft2": 0.15}
# IAD: accepted draft tokens per iteration (sum + iterations = output tokens incl. EOS)
ACCEPTED = {"iad": [[4], [2], [0, 2], [3]], "iad-draft2": [[2, 0], [2], [0, 2], [2, 0]]}


def gec_config(**benchmark):
    cfg = yaml.safe_load((REPO / "config/smoke.yaml").read_text())
    g = copy.deepcopy(cfg["gec"])
    g["benchmark"].update({"sentences": 4, "threads": 1, "cpu_threads": [2, 1], "iad_draft_caps": [2], "batch_sizes": [], "ct2": [],
                           "backends": [], "policies": [], **benchmark})
    validate(g, str(REPO / "fastdec/tracks/gec/schema.yaml"))  # fills the defaults, as the workflow does
    return {"experiment": "synthetic", "device": "cpu", "tracks": {"gec_iad": True}, "gec": g}


def write_gec_run(path, speed=1.0, lossy=False):
    """A run of the GEC methods: beam 5 differs from greedy on sentence 0; with ``lossy`` the capped IAD too."""
    methods = parse_methods("fairseq:beam=5,fairseq:beam=1,greedy,iad,iad:max_draft_len=2")
    recs = {}
    for m in methods:
        toks = [list(t) for t in GREEDY]
        if m.label == "fairseq-beam5" or (lossy and m.label == "iad-draft2"):
            toks[0] = [5, 7, 2]
        acc = ACCEPTED.get(m.label, [[0] * len(t) for t in toks])
        if lossy and m.label == "iad-draft2":
            acc = [[2]] + acc[1:]
        recs[m.label] = [Record(m.label, i, t, TIMES[m.label] * speed, len(a), accepted=a, drafted=[x + 1 for x in a])
                         for i, (t, a) in enumerate(zip(toks, acc))]
    write_run(str(path), methods, recs, lambda toks: " ".join(VOCAB[t] for t in toks if t != 2),
              meta={"device": "cpu", "threads": 1})


@pytest.fixture
def results(tmp_path):
    """results/<experiment> with the Table 1 run (1 thread, reused by Table 12), a 2-thread run, M2 scores."""
    R = tmp_path / "results/synthetic"
    write_lines(R / "gec/bench/set.src", SOURCES)
    write_gec_run(R / "gec/bench/cpu-t1-n4")
    write_gec_run(R / "gec/bench/cpu-t2-n4", speed=0.5)
    for label, p in (("fairseq-beam5", 0.5), ("fairseq-greedy", 0.4), ("greedy", 0.4), ("iad", 0.4),
                     ("iad-draft2", 0.4)):
        (R / f"gec/bench/cpu-t1-n4/m2.{label}.json").write_text(json.dumps(
            {"precision": p, "recall": 0.2, "f0.5": 0.385, "approximate_sentences": 0}))
    return R


def test_bench_runs_and_table_items(results):
    cfg = gec_config()
    runs = gec.bench_runs(cfg, "R")
    assert list(runs) == ["gec/bench/cpu-t1-n4", "gec/bench/cpu-t2-n4"]  # Table 1's run is Table 12's 1-thread run
    r = runs["gec/bench/cpu-t2-n4"]
    assert r.methods == ["fairseq:beam=5", "fairseq:beam=1", "greedy", "iad", "iad:max_draft_len=2"]
    assert gec.bench_runs(gec_config(backends=["fast"]), "R")["gec/bench/cpu-t2-n4"].methods[-2:] == [
        "greedy:backend=fast", "iad:backend=fast"]  # the fast verifier's rows (benchmark.backends)
    # cost-aware draft lengths (benchmark.policies): IAD again on every backend, and in the batch curves
    cost = gec.bench_runs(gec_config(backends=["fast"], policies=["cost"], batch_sizes=[1, 4]), "R")
    assert cost["gec/bench/cpu-t2-n4"].methods[-2:] == ["iad:policy=cost", "iad:backend=fast:policy=cost"]
    curves = next(r for name, r in cost.items() if name.startswith("gec/bench/batch-")).methods
    assert "iad:backend=fast:policy=cost:batch=4" in curves and "greedy:backend=fast:batch=4" in curves
    assert (r.threads, r.limit, r.device, r.gpus, r.exclusive) == (2, 4, "cpu", 0, True)
    assert r.checkpoint == "R/gec/models/gec/model.pt" and r.src == "R/gec/bench/set.bpe"
    assert r.dictionary == "R/gec/data-bin/dict.src.txt"
    cuda = gec.bench_runs(gec_config(sentences=None, cpu_sentences=2, gpus=1) | {"device": "cuda"}, "R")
    assert list(cuda) == ["gec/bench/cuda-t1-nall", "gec/bench/cpu-t2-n2", "gec/bench/cpu-t1-n2"]
    assert cuda["gec/bench/cuda-t1-nall"].gpus == 1 and cuda["gec/bench/cuda-t1-nall"].limit is None
    items = gec.table_items(cfg, str(results))
    assert list(items) == ["gec/tables/gec_table1.csv", "gec/tables/gec_table3.csv", "gec/figures/gec_figure5.png",
                           "gec/tables/gec_table2.csv", "gec/tables/gec_table12.csv",
                           "gec/tables/gec_table11_hyperparameters.csv"]
    missing = [p for item in items.values() for p in item.inputs if not Path(p).is_file()]
    assert not missing  # the synthetic results directory holds exactly what the tables read
    with pytest.raises(ValueError, match="beam must be >= 2"):
        gec.bench_runs(gec_config(beam=1), "R")
    # CTranslate2 rows: greedy and beam per compute type, on the GEC model converted under R (rule ct2_convert)
    peer = gec.bench_runs(gec_config(ct2=["float32", "int8"]), "R")["gec/bench/cpu-t1-n4"]
    assert peer.methods[-4:] == [f"ct2:beam={b}:compute={c}:model=R/gec/models/gec/ct2"
                                 for c in ("float32", "int8") for b in (1, 5)]
    assert peer.inputs()["ct2"] == "R/gec/models/gec/ct2/model.bin" and peer.langs == ("src", "tgt")



def test_batch_run_and_figure6_items():
    cfg = gec_config(batch_sizes=[1, 4], batch_sentences=6)
    run = gec.bench_runs(cfg, "R")["gec/bench/batch-cpu-t1-n6"]
    assert run.methods == ["fairseq:beam=5", "fairseq:beam=1", "greedy", "iad", "fairseq:beam=5:batch=4",
                           "fairseq:beam=1:batch=4", "greedy:batch=4", "iad:batch=4"] and run.limit == 6
    items = gec.table_items(cfg, "R")
    assert items["gec/figures/gec_figure6_batch.png"].inputs == ["R/gec/bench/batch-cpu-t1-n6/summary.csv"]
    assert items["gec/tables/gec_figure6_batch.csv"].name == "gec_figure6_batch"


def tables_cli(cfg, results, name, output):
    return subprocess.run([sys.executable, "-m", "fastdec", "tables", "gec", name, "--config", json.dumps(cfg),
                           "--results", str(results), "--output", str(output)], capture_output=True, text=True,
                          cwd=REPO)


def test_table1_cli(results):
    out = results / "gec/tables/gec_table1.csv"
    r = tables_cli(gec_config(), results, "gec_table1", out)
    assert r.returncode == 0, r.stderr
    full = pd.read_csv(out)
    df = full[full["source"] == "ours"].set_index("method")
    assert list(df.index) == ["fairseq-beam5", "fairseq-greedy", "greedy", "iad", "iad-draft2"]
    synthetic = full[full["source"] == "paper only (cited)"]
    assert list(synthetic["paper_F0.5"]) == [44.47, 44.91, 44.91] and synthetic["F0.5"].isna().all()
    t3 = results / "gec/tables/gec_table3.csv"
    assert tables_cli(gec_config(), results, "gec_table3", t3).returncode == 0
    t3 = pd.read_csv(t3)
    assert list(t3["source"]) == ["ours"] * 5 + ["paper only (cited)"] * 8
    assert t3.iloc[3]["speedup_vs_beam"] == 5.0 and t3.iloc[-1]["paper_speedup"] == 9.6
    assert df.loc["iad-draft2", "system"] == "engine IAD, drafts of at most 2 tokens"
    iad = df.loc["iad"]
    assert iad["system"] == "engine IAD" and iad["n_sentences"] == 4
    assert iad["total_time_s"] == 0.4 and iad["ms_per_sentence"] == 100.0
    assert iad["speedup_vs_beam"] == 5.0 and iad["speedup_vs_greedy"] == 3.0
    # the paper's IAD over its own greedy (8.1 / 1.1 over beam 5) beside ours over the engine's greedy
    assert iad["paper_speedup_vs_greedy"] == 7.36 and pd.isna(df.loc["fairseq-greedy", "paper_speedup_vs_greedy"])
    assert df.loc["iad-draft2", "speedup_vs_beam"] == 3.33 and df.loc["fairseq-greedy", "speedup_vs_beam"] == 1.25
    assert iad["P"] == 40.0 and iad["R"] == 20.0 and iad["F0.5"] == 38.5 and df.loc["fairseq-beam5", "P"] == 50.0
    assert iad["identical_to_greedy_pct"] == 100.0 and df.loc["fairseq-beam5", "identical_to_greedy_pct"] == 75.0
    assert iad["mean_iterations"] == 1.25 and iad["tokens_per_iteration"] == 3.2  # 16 tokens in 5 passes
    assert df.loc["iad-draft2", "mean_iterations"] == 1.75
    assert iad["paper_speedup"] == IAD_TABLE1["iad"]["speedup"] and iad["paper_F0.5"] == 38.36
    assert pd.isna(df.loc["greedy", "paper_speedup"]) and pd.isna(df.loc["iad-draft2", "paper_speedup"])
    assert iad["device"] == "cpu" and iad["threads"] == 1 and iad["eval_set"] == "uagec test"


def test_table1_of_a_synthetically_pretrained_model_sits_beside_the_papers_synthetic_rows(tmp_path, results):
    cfg = gec_config()
    cfg["gec"]["pretrain"]["enabled"] = True  # gec.pretrain: the GEC model fine-tuned from the pretrained one
    out = tmp_path / "t1.csv"
    r = tables_cli(cfg, results, "gec_table1", out)
    assert r.returncode == 0, r.stderr
    full = pd.read_csv(out)
    ours = full[full["source"] == "ours"].set_index("method")
    assert ours.loc["iad", "paper_F0.5"] == 44.91 and ours.loc["iad", "paper_speedup"] == 7.3
    assert ours.loc["iad", "paper_system"] == "Transformer-big (IAD), synthetic data"
    cited = full[full["source"] == "paper only (cited)"]
    assert list(cited["paper_F0.5"]) == [38.50, 38.36, 38.36]  # the paper's model without synthetic data


def test_table1_refuses_a_lossy_iad_unless_told(tmp_path, results):
    write_gec_run(results / "gec/bench/cpu-t1-n4", lossy=True)
    out = tmp_path / "t1.csv"
    r = tables_cli(gec_config(), results, "gec_table1", out)
    assert r.returncode == 2 and "iad-draft2: 3/4" in r.stderr and "lossless" in r.stderr and not out.exists()
    r = tables_cli(gec_config(strict_identical=False), results, "gec_table1", out)
    assert r.returncode == 0 and "WARNING" in r.stderr
    assert pd.read_csv(out).set_index("method").loc["iad-draft2", "identical_to_greedy_pct"] == 75.0


def test_table1_missing_inputs_and_unknown_table_are_clear_errors(tmp_path, results):
    r = tables_cli(gec_config(), tmp_path / "nothing", "gec_table1", tmp_path / "t.csv")
    assert r.returncode == 2 and "no summary.csv" in r.stderr
    (results / "gec/bench/cpu-t1-n4/m2.iad.json").unlink()
    r = tables_cli(gec_config(), results, "gec_table1", tmp_path / "t.csv")
    assert r.returncode == 2 and "m2.iad.json: no M2 score" in r.stderr
    r = tables_cli(gec_config(), tmp_path, "gec_table9", tmp_path / "t.csv")
    assert r.returncode == 2 and "gec_table12" in r.stderr


def test_table12_rows_for_our_and_the_papers_thread_counts(tmp_path, results):
    out = tmp_path / "t12.csv"
    gec_outputs.make_table("gec_table12", gec_config(), str(results), str(out))
    df = pd.read_csv(out).set_index("threads")
    assert list(df.index) == [8, 2, 1]
    assert df.loc[2, "iad_speedup"] == 5.0 and df.loc[2, "paper_iad_speedup"] == IAD_TABLE12[2]["iad_speedup"]
    assert df.loc[2, "beam5_latency_s"] == 1.0 and df.loc[1, "iad_latency_s"] == 0.4
    assert df.loc[1, "fairseq_greedy_speedup"] == 1.25 and pd.isna(df.loc[1, "paper_iad_speedup"])
    assert df.loc[1, "iad_identical_to_greedy_pct"] == 100.0 and df.loc[1, "sentences"] == 4
    assert df.loc[1, "iad_speedup_vs_engine_greedy"] == 3.0  # the same implementation's ratio, as Table 1's
    assert pd.isna(df.loc[8, "iad_speedup"]) and df.loc[8, "paper_iad_speedup"] == 6.5
    assert pd.isna(df.loc[8, "model"]) and df.loc[2, "model"] == "1+1 (transformer, 64)"


def test_figure5_and_table2_from_the_run(tmp_path, results, capsys):
    cfg = gec_config()
    gec_outputs.make_table("gec_figure5", cfg, str(results), str(tmp_path / "f5.png"))
    assert (tmp_path / "f5.png").read_bytes()[:4] == b"\x89PNG"
    summary = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    assert summary["sentences"] == 4 and summary["identical_to_greedy"] == 4 and summary["blocks_unavailable"] == 0
    assert summary["unedited_sentences"] == 3  # only "a d" -> "a e d" is edited
    gec_outputs.make_table("gec_table2", cfg, str(results), str(tmp_path / "t2.csv"))
    df = pd.read_csv(tmp_path / "t2.csv").set_index("sentence")
    assert len(df) == 4 and (df["speedup"] == 3.0).all()
    assert df.loc[1, "output"] == "[a bc d]₀" and df.loc[1, "input"] == "a bc d" and df.loc[1, "edit_ratio"] == 0.0
    assert df.loc[3, "output"] == "⟨a⟩₀ [e d]₁" and df.loc[3, "parallel_tokens_pct"] == pytest.approx(66.7)


def test_per_sentence_checks_counts():
    recs = [Record("greedy", 0, [5, 2], 0.2, 2)]
    with pytest.raises(analysis.AnalysisError, match="IAD records: 0 entries for 1"):
        analysis.per_sentence(["a"], recs, [], ["a"])


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
