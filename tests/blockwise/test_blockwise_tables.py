"""Blockwise track on the common experiment layer: its runs and methods (fastdec.tracks.blockwise), its tables and
figures from synthetic run directories in the results schema, and ``fastdec bench`` on a real tiny blockwise model."""
import copy
import json
import os
import sys
from pathlib import Path

import pytest
import yaml

torch = pytest.importorskip("torch")
pd = pytest.importorskip("pandas")

REPO = Path(__file__).resolve().parents[2]
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))
os.environ.setdefault("TORCH_FORCE_NO_WEIGHTS_ONLY_LOAD", "1")

from fastdec.bench.methods import parse_methods  # noqa: E402
from fastdec.bench.results import Record, read_run, write_run  # noqa: E402
from fastdec.tracks.blockwise import tables as T  # noqa: E402
from fastdec.cli import main as fastdec  # noqa: E402
from fastdec.tracks.blockwise import paper as P  # noqa: E402
from fastdec.tracks.blockwise import outputs as BO  # noqa: E402
from fastdec.tracks.blockwise import plan as B  # noqa: E402

SCHEMA = str(REPO / "fastdec" / "tracks" / "blockwise" / "schema.yaml")


def _config(tmp_path=None, gad=True, **bw):
    section = {"block_sizes": [4, 2], "share_heads": True, "train": {"max_update": 10, "max_tokens": 100, "lr": 0.1},
               "decode": {"topk": [2], "min_block_sizes": [2], "head_precision": "int8", "test_sentences": 4}, **bw}
    return {"experiment": "toy", "device": "cpu", "data": {"src_lang": "en", "tgt_lang": "de"},
            "decode": {"beam": 5, "max_len_a": 1.2, "max_len_b": 10}, "tracks": {"blockwise": True, "gad": gad},
            "blockwise": section}


# ------------------------------------------------------------------------------------------ runs and methods
@pytest.mark.parametrize("name", ["config", "smoke", "wmt14_ende"])
def test_config_sections_plan_runs(name):
    from snakemake.utils import validate

    cfg = yaml.safe_load((REPO / "config" / f"{name}.yaml").read_text())
    validate(cfg, str(REPO / "workflow" / "schemas" / "config.schema.yaml"))
    runs = B.bench_runs(cfg, "R")
    items = B.table_items(cfg, "R")
    assert set(B.runs(B.section(cfg))) == set(runs)
    for run in runs.values():
        parse_methods(run.methods)  # every method parses in the one grammar
        assert run.checkpoint.startswith("R/blockwise/models/") and run.ref.startswith("R/data/raw/")
    assert "blockwise/tables/blockwise_table1.csv" in items
    if name == "wmt14_ende":  # the paper's grid: one model per k and variant
        assert len(runs) == 4 * 5 + 5 and runs["blockwise/bench/valid/regular_k6"].methods == [
            "greedy", "blockwise:k=6:precision=float"]


def test_methods_runs_and_items():
    cfg = _config()
    runs = B.bench_runs(cfg, "R")
    assert sorted(runs) == ["blockwise/bench/test/both_k4"] + [f"blockwise/bench/valid/{v}_k4" for v in
                                                                ("both", "distill", "finetune", "regular")]
    assert runs["blockwise/bench/valid/regular_k4"].methods == [
        "greedy", "blockwise:k=2:precision=int8", "blockwise:k=4:precision=int8"]
    both = parse_methods(runs["blockwise/bench/valid/both_k4"].methods)
    assert [m.label for m in both] == [
        "greedy", "blockwise-k2-int8", "blockwise-k4-int8", "blockwise-k2-top2-int8", "blockwise-k4-top2-int8",
        "blockwise-k2-min2-int8", "blockwise-k4-min2-int8"]
    test = runs["blockwise/bench/test/both_k4"]
    assert test.methods == ["fairseq:beam=5", "fairseq:beam=1", "greedy", "blockwise:k=2:precision=int8",
                            "blockwise:k=4:precision=int8", "blockwise:k=2:precision=float",
                            "blockwise:k=4:precision=float"]
    assert test.limit == 4 and test.src == "R/data/bpe/test.en" and test.lang == "de" and test.max_len_b == 10
    assert test.dictionary == "R/data-bin/raw/dict.en.txt" and test.checkpoint == "R/blockwise/models/both_k4/model.pt"
    # one model per k without shared heads; ℓ > k is skipped; no precision comparison on a GPU
    per_k = B.bench_runs(_config(share_heads=False, decode={"min_block_sizes": [4], "head_precision": "float"}), "R")
    assert per_k["blockwise/bench/valid/both_k2"].methods == ["greedy", "blockwise:k=2:precision=float",
                                                              "blockwise:k=2:topk=2:precision=float",
                                                              "blockwise:k=2:topk=3:precision=float"]
    gpu = B.bench_runs({**_config(decode={"head_precision": "float"}), "device": "cuda"}, "R")
    assert all("int8" not in m for m in gpu["blockwise/bench/test/both_k4"].methods)

    items = B.table_items(cfg, "R")
    assert [os.path.basename(p) for p in items] == [
        "blockwise_table1.csv", "blockwise_table1_scatter.png", "blockwise_approx.csv", "blockwise_minblock.csv",
        "blockwise_figure4.csv", "blockwise_figure4.png", "blockwise_table4.csv", "blockwise_example.csv",
        "blockwise_vs_gad.csv"]
    assert len(items["blockwise/tables/blockwise_table1.csv"].inputs) == 4
    assert items["blockwise/tables/blockwise_approx.csv"].inputs == ["R/blockwise/bench/valid/both_k4/summary.csv"]
    assert "R/gad/bench/test/sentences.jsonl" in items["blockwise/tables/blockwise_vs_gad.csv"].inputs
    assert "blockwise/tables/blockwise_vs_gad.csv" not in B.table_items(_config(gad=False), "R")
    only = B.table_items(_config(variants=["regular", "distill"]), "R")
    assert {i.name for i in only.values()} == {"blockwise_table1", "blockwise_table1_scatter"}


def test_bad_config_sections_are_refused():
    with pytest.raises(ValueError, match="CPU-only"):
        B.bench_runs({**_config(), "device": "cuda"}, "R")
    with pytest.raises(ValueError, match="must not exceed"):
        B.bench_runs(_config(decode={"min_block_sizes": [9]}), "R")
    with pytest.raises(ValueError, match="no `blockwise:` section"):
        B.table_items({"tracks": {"blockwise": True}}, "R")
    for bad in ({"block_sizes": [1]}, {"block_sizes": []}, {"decode": {"topk": [1]}}, {"variants": ["bogus"]},
                {"unknown": 1}):
        with pytest.raises(ValueError, match="config blockwise"):
            B.section(_config(**bad))


def test_training_helpers():
    from snakemake.utils import validate

    bw = copy.deepcopy(_config(block_sizes=[4, 2, 8])["blockwise"])
    validate(bw, SCHEMA)
    assert B.train_block_sizes(bw) == [8] and len(B.models(bw)) == 4
    assert B.decode_block_sizes(bw, 8) == [2, 4, 8] and B.decode_block_sizes({**bw, "share_heads": False}, 4) == [4]
    spec = B.train_spec(bw, "regular", "8", "base.pt")
    assert spec["arch"] == "blockwise_transformer_from_base"
    assert spec["extra_args"]["freeze-base"] is True and spec["extra_args"]["block-size"] == 8
    assert B.train_spec(bw, "both", 8, "b.pt")["extra_args"]["freeze-base"] is False
    ft = {**bw, "train": {**bw["train"], "finetune_lr": 0.01}}
    assert B.train_spec(ft, "both", 8, "b.pt")["lr"] == 0.01 and B.train_spec(ft, "distill", 8, "b.pt")["lr"] == 0.1


# ------------------------------------------------------------------------------------ tables on synthetic runs
# Four test/valid sentences; greedy outputs (EOS = 2) of 5, 3, 6 and 4 tokens: 14 tokens after each first pass.
GREEDY = [[5, 6, 7, 8, 2], [9, 10, 2], [5, 7, 9, 11, 13, 2], [6, 8, 10, 2]]
# decoder passes per sentence -> mean accepted block size 14 / sum(iterations - 1)
ITERS = {"greedy": [5, 3, 6, 4], 2: [3, 2, 4, 3], 4: [2, 2, 3, 2], "both2": [3, 2, 3, 2], "both4": [2, 2, 2, 2]}
WORD = {i: f"w{i}" for i in range(3, 20)}


def _decode(tokens):
    return " ".join(WORD[t] for t in tokens if t != 2)


def _records(label, times, iters, tokens=GREEDY, verifier=0.8, drafter=0.1):
    return [Record(label, i, list(t), times[i], iters[i], time_verifier=verifier * times[i],
                   time_drafter=drafter * times[i]) for i, t in enumerate(tokens)]


def _write(path, specs, recs):
    path.mkdir(parents=True, exist_ok=True)
    write_run(str(path), parse_methods(specs), recs, _decode, refs=[_decode(t) for t in GREEDY] + ["w3 w4"] * 2,
              lang="de")


def _valid_run(path, variant):
    bw = B.section(_config())
    specs = B.methods(bw, "valid", variant, 4)
    ms = parse_methods(specs)
    both = variant == "both"
    recs = {"greedy": _records("greedy", [0.1] * 4, ITERS["greedy"])}
    for m in ms[1:]:
        iters = ITERS[f"both{m.k}" if both else m.k]
        tokens = GREEDY
        if m.topk > 1 or m.min_block > 1:  # approximate: sentence 0 differs (and a longer block there)
            tokens = [[5, 6, 7, 9, 2]] + GREEDY[1:]
            iters = [1 + (m.min_block > 1)] + iters[1:]
        recs[m.label] = _records(m.label, [0.1 - 0.01 * m.k - 0.005 * both] * 4, iters, tokens)
    _write(path, specs, recs)


def _test_run(path):
    specs = B.methods(B.section(_config()), "test", "both", 4)
    recs = {"fairseq-beam5": _records("fairseq-beam5", [0.3] * 4, [len(t) for t in GREEDY],
                                      [GREEDY[0], GREEDY[1], [9, 2], GREEDY[3]]),
            "fairseq-greedy": _records("fairseq-greedy", [0.2] * 4, [len(t) for t in GREEDY]),
            "greedy": _records("greedy", [0.1] * 4, ITERS["greedy"])}
    for m in parse_methods(specs)[3:]:  # int8 heads are cheaper than float ones here
        recs[m.label] = _records(m.label, [0.1 - 0.01 * m.k - 0.01 * (m.precision == "int8")] * 4, ITERS[f"both{m.k}"])
    _write(path, specs, recs)


def _gad_run(path):
    """The GAD track's test run over 6 sentences; sentences 4 and 5 (which we did not decode) are very slow."""
    specs = "fairseq:beam=5,fairseq:beam=1,greedy,nat:k=4,gad:k=4,gad:k=4:beta=3:tau=1"
    slow = [1, 1, 1, 1, 100, 100]
    out = GREEDY + [[3, 4, 2]] * 2
    recs = {}
    for m, t, iters in zip(parse_methods(specs), (0.4, 0.2, 0.1, 0.01, 0.04, 0.03), (5, 5, 5, 1, 1, 1)):
        tokens = [[5, 5, 2]] + out[1:] if m.label in ("nat-k4", "gad-k4-top3-tau1") else out
        recs[m.label] = [Record(m.label, i, tokens[i], t * slow[i], iters if m.kind != "fairseq" else len(tokens[i]))
                         for i in range(6)]
    _write(path, specs, recs)


@pytest.fixture()
def results(tmp_path):
    R = tmp_path / "results" / "toy"
    for v in P.VARIANTS:
        _valid_run(R / f"blockwise/bench/valid/{v}_k4", v)
    _test_run(R / "blockwise/bench/test/both_k4")
    _gad_run(R / "gad/bench/test")
    (R / "data/raw").mkdir(parents=True)
    (R / "data/raw/test.de").write_text("\n".join([_decode(t) for t in GREEDY] + ["w3 w4"] * 2) + "\n")
    return R


def _table(R, name, ext="csv", config=None):
    out = R / f"blockwise/tables/{name}.{ext}"
    assert fastdec(["tables", "blockwise", name, "--config", json.dumps(config or _config()), "--results", str(R),
                    "--output", str(out)]) == 0
    return pd.read_csv(out) if ext == "csv" else out.read_bytes()


def test_table1_and_scatter(results):
    bleu = read_run(str(results / "blockwise/bench/valid/both_k4")).row("greedy")["bleu"]
    assert bleu == 100.0
    t1 = _table(results, "blockwise_table1").set_index("k")
    assert list(t1.index) == [1, 2, 4]
    assert t1.loc[1, "Regular"] == "100.00 / 1.00" and pd.isna(t1.loc[1, "Both"])
    assert t1.loc[1, "paper Regular"] == "26.00 / 1.00"
    # k̂ = 14 / 8 (k = 2) and 14 / 5 (k = 4) for the frozen variants; 14 / 6 and 14 / 4 for "both"
    assert t1.loc[2, "Regular"] == "100.00 / 1.75" and t1.loc[4, "Fine Tuning"] == "100.00 / 2.80"
    assert t1.loc[2, "Both"] == "100.00 / 2.33" and t1.loc[4, "Both"] == "100.00 / 3.50"
    assert t1.loc[2, "paper Both"] == "26.58 / 1.88" and t1.loc[4, "identical to greedy p_1 (min %)"] == 100.0
    png = _table(results, "blockwise_table1_scatter", "png")
    assert png[:8] == b"\x89PNG\r\n\x1a\n" and len(png) > 5000


def test_approx_and_min_block(results):
    approx = read_run(str(results / "blockwise/bench/valid/both_k4")).row("blockwise-k4-top2-int8")
    assert approx["identical_to_greedy_pct"] == 75.0 and 0 < approx["bleu"] < 100
    ap = _table(results, "blockwise_approx").set_index("k")
    # sentence 0 in one pass (no verification step): 10 tokens in 3 verification steps
    assert ap.loc[4, "top-2"] == f"{approx['bleu']:.2f} / {10 / 3:.2f} (75%)"
    assert ap.loc[4, "exact"] == "100.00 / 3.50 (100%)" and ap.loc[4, "paper top-2"] == "26.22 / 3.47"
    assert "top-3" not in ap.columns and ap.loc[2, "paper exact"] == "26.58 / 1.88"
    mb = _table(results, "blockwise_minblock").set_index("k")
    assert mb.loc[4, "min block ℓ=2"] == f"{approx['bleu']:.2f} / {14 / 4:.2f} (75%)"
    assert mb.loc[2, "paper"] == P.MIN_BLOCK_NOTE


def test_figure4(results):
    f4 = _table(results, "blockwise_figure4").set_index("k")
    assert list(f4.index) == ["k=2", "k=4", "k=6", "k=8", "k=10"]
    # greedy: 0.4 s in 18 passes; "both" k = 4: 0.055 s a sentence in 8 passes, verifier 80 %, heads 10 %
    assert f4.loc["k=4", "speedup_vs_greedy"] == pytest.approx(0.1 / 0.055)
    assert f4.loc["k=4", "tokens_per_iteration"] == pytest.approx(18 / 8)
    assert f4.loc["k=4", "verify_ms_per_call"] == pytest.approx(1000 * 0.8 * 0.22 / 8)
    assert f4.loc["k=4", "call_cost_vs_greedy_step"] == pytest.approx((0.9 * 0.22 / 8) / (0.8 * 0.4 / 18))
    assert f4.loc["k=8", "paper_speedup"] == 3.31 and pd.isna(f4.loc["k=8", "mean_block"])
    png = _table(results, "blockwise_figure4", "png")
    assert png[:8] == b"\x89PNG\r\n\x1a\n"


def test_table4(results):
    full = _table(results, "blockwise_table4")
    t4 = full[full["source"] == "ours"]
    cited = full[full["source"] == "paper only (cited)"]
    assert len(cited) == 17 and cited["bleu"].isna().all() and cited["paper_bleu"].notna().all()
    assert list(t4["system"][:2]) == ["fairseq beam 5", "greedy, k = 1 (p_1 of the blockwise model; paper: "
                                                        "distilled Transformer)"]
    assert t4.iloc[0]["identical_to_greedy_pct"] == 75.0 and t4.iloc[0]["bleu"] < 100
    assert t4.iloc[1]["paper_bleu"] == 29.11 and t4.iloc[1]["speedup_vs_beam"] == pytest.approx(3.0)
    k4 = t4[t4["system"] == "blockwise k=4"]
    assert list(k4["heads"]) == ["int8", "float"]  # the config's precision first, the other beside it
    assert k4.iloc[0]["paper_speedup"] == 2.69 and pd.isna(k4.iloc[1]["paper_speedup"])
    assert k4.iloc[0]["speedup_vs_beam"] == pytest.approx(0.3 / 0.05)
    assert k4.iloc[1]["speedup_vs_greedy"] == pytest.approx(0.1 / 0.06) and k4.iloc[0]["mean_block"] == 3.5
    assert set(t4["n_sentences"]) == {4}


def test_batched_curve_run_and_table(results):
    """decode.batch_sizes adds one batched run (the largest "both" model, its largest k, test sentences) and the
    blockwise_batch table and figure, read through the one batch-curve reader."""
    cfg = _config(decode={"topk": [2], "min_block_sizes": [2], "head_precision": "int8", "test_sentences": 4,
                          "batch_sizes": [1, 2], "batch_sentences": 3})
    runs = B.bench_runs(cfg, "R")
    batch = runs["blockwise/bench/batch/both_k4"]
    assert batch.methods == ["fairseq:beam=5", "fairseq:beam=1", "greedy", "blockwise:k=4:precision=int8",
                             "fairseq:beam=5:batch=2", "fairseq:beam=1:batch=2", "greedy:batch=2",
                             "blockwise:k=4:precision=int8:batch=2"]
    assert batch.src == "R/data/bpe/test.en" and batch.ref == "R/data/raw/test.de" and batch.limit == 3
    items = B.table_items(cfg, "R")
    assert items["blockwise/tables/blockwise_batch.png"].inputs == ["R/blockwise/bench/batch/both_k4/summary.csv"]
    assert "blockwise/tables/blockwise_batch.csv" not in B.table_items(_config(), "R")  # off by default
    assert not any("batch" in r for r in B.runs(B.section(_config(variants=["regular"], decode=cfg["blockwise"][
        "decode"]))))  # no "both" model, no batched run
    specs = B.methods(B.section(cfg), "batch", "both", 4)
    recs = {}
    for m in parse_methods(specs):
        t = {"fairseq": 0.3, "greedy": 0.1}.get(m.kind if m.kind == "fairseq" else m.name, 0.05) / m.batch_size
        recs[m.label] = _records(m.label, [t] * 4, [len(x) for x in GREEDY] if m.drafter is None else ITERS["both4"])
    _write(results / "blockwise/bench/batch/both_k4", specs, recs)
    curve = _table(results, "blockwise_batch", config=cfg).set_index(["method", "batch_size"])
    assert curve.loc[("blockwise-k4-int8", 2), "speedup_vs_greedy_same_batch"] == pytest.approx(2.0)
    assert curve.loc[("fairseq-beam5", 2), "speedup_vs_beam_at_max_batch"] == pytest.approx(1.0)
    assert curve.loc[("blockwise-k4-int8", 1), "speedup_vs_beam_at_max_batch"] == pytest.approx(0.15 / 0.05)
    assert "batch 1 only" in curve["paper_note"].iloc[0]
    assert _table(results, "blockwise_batch", "png", config=cfg)[:8] == b"\x89PNG\r\n\x1a\n"


def test_comparison_with_the_gad_run_on_our_sentences(results):
    cmp = _table(results, "blockwise_vs_gad").set_index("system")
    assert list(cmp.index) == ["AT fairseq beam 5 (blockwise model's p_1)", "AT greedy (blockwise model's p_1)",
                               "Blockwise k=4 (int8 heads)", "Blockwise k=4 (float heads)", "fairseq-beam5",
                               "fairseq-greedy", "greedy", "gad-k4", "gad-k4-top3-tau1"]
    assert set(cmp["track"]) == {"blockwise", "gad"} and set(cmp["n_sentences"]) == {4}
    gad = cmp.loc["gad-k4"]
    # on the first 4 sentences only: beam 1.6 s, greedy 0.4 s, GAD 0.16 s; 18 tokens in 4 passes
    assert gad["speedup_vs_beam"] == pytest.approx(10.0) and gad["speedup_vs_greedy"] == pytest.approx(2.5)
    assert gad["tokens_per_iteration"] == pytest.approx(18 / 4) and gad["bleu"] == 100.0
    assert cmp.loc["gad-k4-top3-tau1", "identical_to_greedy_pct"] == 75.0
    assert pd.isna(cmp.loc["fairseq-beam5", "tokens_per_iteration"])
    assert cmp.loc["Blockwise k=4 (int8 heads)", "speedup_vs_beam"] == pytest.approx(6.0)


def test_missing_or_old_runs_say_what_to_do(results, tmp_path):
    (results / "blockwise/bench/test/both_k4/summary.csv").unlink()
    out = str(tmp_path / "t4.csv")
    args = ["tables", "blockwise", "blockwise_table4", "--config", json.dumps(_config()), "--results", str(results),
            "--output", out]
    assert fastdec(args) == 2
    pd.DataFrame({"label": ["k4"], "identical_pct": [100.0]}).to_csv(
        results / "blockwise/bench/test/both_k4/summary.csv", index=False)
    with pytest.raises(ValueError, match="older fastdec"):
        BO.make_table("blockwise_table4", _config(), str(results), out)
    assert fastdec(args[:2] + ["blockwise_vs_gad"] + args[3:7] + ["--output", out]) == 2
    no_gad = json.dumps(_config(gad=False))
    assert fastdec(["tables", "blockwise", "blockwise_vs_gad", "--config", no_gad, "--results", str(results),
                    "--output", out]) == 2


# --------------------------------------------------------------------------------- fastdec bench on a real model
@pytest.fixture(scope="module")
def bw_checkpoint(tiny_databin, tmp_path_factory):
    """A random blockwise_transformer_tiny (k = 3) saved as a fairseq checkpoint loadable by load_model."""
    pytest.importorskip("fairseq")
    import fastdec_fairseq  # noqa: F401
    from fairseq import options, tasks
    from fairseq.dataclass.utils import convert_namespace_to_omegaconf

    parser = options.get_training_parser()
    args = options.parse_args_and_arch(parser, [str(tiny_databin), "--arch", "blockwise_transformer_tiny",
                                                "--source-lang", "src", "--target-lang", "tgt",
                                                "--share-all-embeddings", "--block-size", "3"])
    task = tasks.setup_task(args)
    torch.manual_seed(0)
    model = task.build_model(args)
    with torch.no_grad():
        model.decoder.blockwise_head.fc2.weight.normal_(0, 0.05)
    path = tmp_path_factory.mktemp("bwckpt") / "bw.pt"
    history = [{"criterion_name": "BlockwiseCrossEntropyCriterion", "optimizer_name": "adam",
                "lr_scheduler_state": {}, "num_updates": 0}]
    torch.save({"cfg": convert_namespace_to_omegaconf(args), "model": model.state_dict(), "args": None,
                "optimizer_history": history, "extra_state": {}}, path)
    return path


def test_bench_on_a_blockwise_model(bw_checkpoint, tiny_databin, tmp_path, capsys):
    src, ref = tmp_path / "src.txt", tmp_path / "ref.txt"
    src.write_text("w1 w2 w3 w4\nw5 w6 w7\nw8 w9 w10 w11 w12\nw13 w3 w1\n")
    ref.write_text("t1 t2 t3 t4\nt5 t6 t7\nt8 t9 t10 t11 t12\nt13 t3 t1\n")
    bw = B.section(_config(block_sizes=[2, 3]))
    methods = B.methods(bw, "valid", "both", 3) + B.methods(bw, "test", "both", 3)[:1] + [
        "blockwise:k=3:precision=float"]
    common = ["bench", "--checkpoint", str(bw_checkpoint), "--data-bin", str(tiny_databin), "--input", str(src),
              "--ref", str(ref), "--lang", "de", "--warmup", "1", "--max-len-a", "0", "--max-len-b", "8"]
    out = tmp_path / "run"
    assert fastdec(common + ["--methods", ",".join(methods), "--out-dir", str(out)]) == 0
    run = read_run(str(out))
    s = run.summary
    assert set(s.index) == {"greedy", "fairseq-beam5", "blockwise-k2-int8", "blockwise-k3-int8", "blockwise-k3-float",
                            "blockwise-k2-top2-int8", "blockwise-k3-top2-int8", "blockwise-k3-min2-int8",
                            "blockwise-k2-min2-int8"}
    exact = s[(s["method"] == "blockwise") & s["exact"]]
    assert len(exact) == 3 and (exact["identical_to_greedy_pct"] == 100.0).all()
    for label in exact.index:  # exact blockwise decoding == greedy decoding with p_1, token for token
        assert run.hyps(label) == run.hyps("greedy")
    assert s.loc["blockwise-k3-top2-int8", "topk"] == 2 and not s.loc["blockwise-k3-top2-int8", "exact"]
    assert s.loc["blockwise-k3-min2-int8", "min_block"] == 2 and s.loc["blockwise-k3-min2-int8", "precision"] == "int8"
    assert s.loc["greedy", "mean_block"] == 1.0 and s.loc["fairseq-beam5", "speedup_vs_beam"] == 1.0
    recs = run.records()["blockwise-k3-int8"]
    assert s.loc["blockwise-k3-int8", "mean_block"] == pytest.approx(
        sum(len(r.tokens) - 1 for r in recs if r.iterations > 1) / sum(r.iterations - 1 for r in recs))
    assert all(max(r.accepted, default=0) <= 2 for r in recs) and s["bleu"].notna().all()
    # bad settings: one clear error line, exit status 2
    for bad, msg in (("blockwise:k=4", "exceeds the model's trained block size"),
                     ("blockwise:k=2:min_block=3", "must not exceed the block size"),
                     ("blockwise:k=2:precision=int4", "precision must be float or int8"),
                     ("blockwise", "needs a block size k")):
        capsys.readouterr()
        assert fastdec(common + ["--methods", bad, "--out-dir", str(tmp_path / "bad")]) == 2
        assert msg in capsys.readouterr().err
