"""Blockwise track: tables/figures from synthetic eval results, workflow helpers, config sections, and the CLIs
(blockwise_eval.py, engine_decode.py with --drafter-module, blockwise_tables.py) on a real fairseq checkpoint."""
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
for p in (REPO, REPO / "scripts"):
    if str(p) not in sys.path:
        sys.path.insert(0, str(p))
os.environ.setdefault("TORCH_FORCE_NO_WEIGHTS_ONLY_LOAD", "1")

from fastdec.blockwise import tables as T  # noqa: E402
from fastdec.blockwise import workflow as W  # noqa: E402
from fastdec.report import paper_blockwise as P  # noqa: E402


# ------------------------------------------------------------------------------------------- synthetic inputs
def _res(label, bleu, block, ident=100.0, speed=1.0, ms=10.0, **extra):
    return {"label": label, "bleu": bleu, "mean_block": block, "identical_pct": ident, "speedup_vs_greedy": speed,
            "ms_per_sentence": ms, "n_sentences": 50, "tokens_per_call": block and block * 0.8, **extra}


def _doc(tmp_path, variant, trained_k, split, results, precision="int8"):
    path = tmp_path / f"{split}_{variant}_k{trained_k}.json"
    path.write_text(json.dumps({"variant": variant, "split": split, "trained_block_size": trained_k,
                                "head_precision": precision, "results": results}))
    return str(path)


@pytest.fixture()
def evals(tmp_path):
    paths = []
    # shared-heads models (K = 4) for every variant; for "regular" also a model trained for exactly k = 2
    for v, base in (("regular", 20.0), ("distill", 21.0), ("finetune", 19.0), ("both", 20.5)):
        res = [_res("greedy", base, 1.0), _res("k2", base, 1.5 + (v == "both")), _res("k4", base, 1.7 + (v == "both"),
                                                                                     speed=1.3)]
        if v == "both":
            res += [_res("k2-top2", base - 0.2, 2.0, ident=80.0), _res("k4-top2", base - 0.5, 3.0, ident=60.0),
                    _res("k4-min2", base - 2.0, 2.9, ident=30.0)]
        paths.append(_doc(tmp_path, v, 4, "valid", res))
    paths.append(_doc(tmp_path, "regular", 2, "valid", [_res("greedy", 20.0, 1.0), _res("k2", 20.0, 1.66)]))
    test = [_res("greedy", 22.0, 1.0, speedup_vs_beam5=2.0),
            _res("k2", 22.0, 1.9, speed=1.4, speedup_vs_beam5=2.8),
            _res("k4", 22.0, 2.6, speed=1.9, speedup_vs_beam5=3.8),
            _res("k4-float", 22.0, 2.6, speed=1.2, speedup_vs_beam5=2.4),
            {**_res("fairseq-beam5", 22.5, None, ident=40.0, speed=0.5, speedup_vs_beam5=1.0)}]
    paths.append(_doc(tmp_path, "both", 4, "test", test))
    return T.load_evals(paths)


def test_table1_cells_and_selection(evals):
    t1 = T.table1(evals, [2, 4])
    assert list(t1["k"]) == [1, 2, 4]
    row1 = t1.set_index("k").loc[1]
    assert row1["Regular"] == "20.00 / 1.00" and row1["Distillation"] == "21.00 / 1.00"
    assert pd.isna(row1["Fine Tuning"]) and pd.isna(row1["Both"])
    assert row1["paper Regular"] == "26.00 / 1.00"
    row2 = t1.set_index("k").loc[2]
    # the model trained for exactly k = 2 wins over the shared K = 4 model
    assert row2["Regular"] == "20.00 / 1.66"
    assert row2["Both"] == "20.50 / 2.50" and row2["paper Both"] == "26.58 / 1.88"
    assert row2["identical to greedy p_1 (min %)"] == 100.0
    assert t1.set_index("k").loc[4]["Fine Tuning"] == "19.00 / 1.70"


def test_approx_minblock_figure4_table4(evals):
    ap = T.approx_table(evals, [2, 3]).set_index("k")
    assert ap.loc[4, "top-2"] == "20.00 / 3.00 (60%)"
    assert ap.loc[4, "paper top-2"] == "26.22 / 3.47" and ap.loc[2, "paper top-3"] == "26.41 / 1.93"
    assert pd.isna(ap.loc[4, "top-3"]) and ap.loc[4, "exact"] == "20.50 / 2.70 (100%)"
    mb = T.min_block_table(evals, [2, 3]).set_index("k")
    assert mb.loc[4, "min block ℓ=2"] == "18.50 / 2.90 (30%)" and pd.isna(mb.loc[2, "min block ℓ=3"])
    assert mb.loc[4, "paper"] == P.MIN_BLOCK_NOTE
    f4 = T.figure4_table(evals).set_index("k")
    assert f4.loc[4, "speedup_vs_greedy"] == 1.3 and f4.loc[4, "mean_block"] == 2.7
    assert f4.loc[8, "paper_speedup"] == 3.31 and pd.isna(f4.loc[8, "mean_block"])
    t4 = T.table4(evals)
    assert t4.iloc[0]["system"] == "fairseq beam 5" and t4.iloc[0]["bleu"] == 22.5
    assert t4.iloc[1]["paper_bleu"] == 29.11 and t4.iloc[1]["speedup_vs_fairseq_beam5"] == 2.0
    k4 = t4[t4["system"] == "blockwise k=4"]
    assert list(k4["heads"]) == ["int8", "float"]
    assert k4.iloc[0]["paper_speedup"] == 2.69 and pd.isna(k4.iloc[1]["paper_speedup"])
    assert k4.iloc[0]["speedup_vs_fairseq_beam5"] == 3.8


def test_comparison_with_gad_summary(evals, tmp_path):
    no_gad = T.comparison_table(evals, None)
    assert [r for r in no_gad["track"]] == ["blockwise"] * 4
    assert no_gad.iloc[2]["system"] == "Blockwise k=4 (int8 heads)"  # fastest exact setting first
    gad = tmp_path / "summary.csv"
    pd.DataFrame([
        {"system": "at_b5", "label": "AT verifier (b=5)", "kind": "fairseq", "bleu": 23.0, "n_sentences": 50,
         "total_time_s": 10.0, "speed_vs_at_b5": 1.0, "tokens_per_iteration": 1.0, "mean_latency_ms": 200.0},
        {"system": "greedy", "label": "AT verifier (b=1, engine greedy)", "kind": "greedy", "bleu": 22.8,
         "n_sentences": 50, "total_time_s": 5.0, "speed_vs_at_b5": 2.0, "tokens_per_iteration": 1.0},
        {"system": "nat_k10", "label": "NAT drafter", "kind": "nat", "bleu": 10.0, "n_sentences": 50,
         "total_time_s": 1.0},
        {"system": "gad_k10", "label": "GAD (k=10)", "kind": "gad", "bleu": 22.8, "n_sentences": 50,
         "total_time_s": 2.5, "speed_vs_at_b5": 4.0, "tokens_per_iteration": 3.0, "identical_to_greedy_pct": 100.0},
    ]).to_csv(gad, index=False)
    cmp = T.comparison_table(evals, str(gad)).set_index("system")
    assert "NAT drafter" not in cmp.index
    assert cmp.loc["GAD (k=10)", "speedup_vs_greedy"] == 2.0
    assert cmp.loc["GAD (k=10)", "speedup_vs_fairseq_beam5"] == 4.0 and cmp.loc["GAD (k=10)", "track"] == "gad"
    # with the per-sentence records, the GAD rows are recomputed on our first 50 sentences (of its 80)
    sent = tmp_path / "sentences.jsonl"
    with open(sent, "w") as f:
        for i in range(80):
            slow = 1.0 if i < 50 else 100.0  # sentences we did not decode must not count
            for system, t, toks, it in (("at_b5", 0.2 * slow, [5, 6, 2], 3), ("greedy", 0.1 * slow, [5, 6, 2], 3),
                                        ("gad_k10", 0.04 * slow, [5, 6, 2] if i % 2 else [5, 7, 2], 1)):
                f.write(json.dumps({"system": system, "id": i, "tokens": toks, "time": t, "iterations": it,
                                    "hyp": "t1 t2 t3 t4 t5"}) + "\n")
    refs = ["t1 t2 t3 t4 t5"] * 80
    cmp2 = T.comparison_table(evals, str(gad), gad_sentences=str(sent), refs=refs, lang="de").set_index("system")
    g = cmp2.loc["GAD (k=10)"]
    assert g["sentences"] == 50 and g["speedup_vs_fairseq_beam5"] == pytest.approx(5.0)
    assert g["speedup_vs_greedy"] == pytest.approx(2.5) and g["tokens_per_call"] == pytest.approx(3.0)
    assert g["identical_to_greedy_pct"] == pytest.approx(50.0) and g["bleu"] == pytest.approx(100.0)
    assert pd.isna(cmp2.loc["AT verifier (b=5)", "tokens_per_call"])


def test_plots(evals, tmp_path):
    T.plot_table1(evals, str(tmp_path / "t1.png"), [2, 4], title="demo")
    T.plot_figure4(T.figure4_table(evals), str(tmp_path / "f4.png"))
    for name in ("t1.png", "f4.png"):
        data = (tmp_path / name).read_bytes()
        assert data[:8] == b"\x89PNG\r\n\x1a\n" and len(data) > 5000


def test_tables_cli(evals, tmp_path):
    import blockwise_tables

    paths = sorted(set(evals["source"]))
    valid = [p for p in paths if "/valid_" in p]
    test = [p for p in paths if "/test_" in p]
    out = tmp_path / "out"
    rc = blockwise_tables.main(["--valid", *valid, "--test", *test, "--block-sizes", "2,4", "--topk", "2",
                                "--min-block-sizes", "2", "--out-table1", str(out / "blockwise_table1.csv"),
                                "--out-figure4", str(out / "blockwise_figure4.csv"),
                                "--out-figure4-png", str(out / "f4.png"), "--out-table4", str(out / "t4.csv")])
    assert rc == 0
    assert pd.read_csv(out / "blockwise_figure4.csv")["k"].iloc[0] == "k=2"
    assert (out / "f4.png").exists() and len(pd.read_csv(out / "t4.csv")) == 5
    with pytest.raises(ValueError, match="no inputs"):
        blockwise_tables.main(["--out-table1", str(out / "x.csv")])
    with pytest.raises(ValueError, match="not found"):
        blockwise_tables.main(["--valid", str(tmp_path / "missing.json")])


# ------------------------------------------------------------------------------------------ workflow helpers
def _section(name):
    """The `blockwise:` section of config/<name>.yaml validated by the track's schema (defaults filled)."""
    from snakemake.utils import validate

    cfg = yaml.safe_load((REPO / "config" / f"{name}.yaml").read_text())
    if "blockwise" not in cfg:
        pytest.skip(f"config/{name}.yaml has no blockwise section yet")
    section = copy.deepcopy(cfg["blockwise"])
    validate(section, str(REPO / "workflow" / "schemas" / "blockwise.schema.yaml"))
    return cfg, section


@pytest.mark.parametrize("name", ["config", "smoke", "wmt14_ende"])
def test_config_sections_validate(name):
    cfg, bw = _section(name)
    W.check_config(bw, cfg.get("device", "cpu"))
    assert W.models(bw)
    if name == "wmt14_ende":  # the paper's grid
        assert sorted(bw["block_sizes"]) == [2, 4, 6, 8, 10] and not bw["share_heads"]
        assert bw["variants"] == ["regular", "distill", "finetune", "both"]


def test_workflow_helpers():
    from snakemake.utils import validate

    bw = {"block_sizes": [4, 2, 8], "share_heads": True, "train": {"max_update": 10, "max_tokens": 100, "lr": 0.1},
          "decode": {"topk": [2], "min_block_sizes": [2, 3], "head_precision": "int8"}}
    validate(bw, str(REPO / "workflow" / "schemas" / "blockwise.schema.yaml"))
    assert W.train_block_sizes(bw) == [8] and len(W.models(bw)) == 4
    assert W.valid_settings(bw, "regular", 8) == "k2,k4,k8"
    assert W.valid_settings(bw, "both", 8) == "k2,k4,k8,k2-top2,k4-top2,k8-top2,k2-min2,k4-min2,k4-min3,k8-min2,k8-min3"
    assert W.test_settings(bw, 8, "cpu") == "k2,k4,k8,k2-float,k4-float,k8-float"
    spec = W.train_spec(bw, "regular", "8", "base.pt")
    assert spec["arch"] == "blockwise_transformer_from_base"
    assert spec["extra_args"]["freeze-base"] is True and spec["extra_args"]["block-size"] == 8
    assert W.train_spec(bw, "both", 8, "b.pt")["extra_args"]["freeze-base"] is False
    assert W.train_spec(bw, "both", 8, "b.pt")["lr"] == 0.1  # finetune_lr null: the same rate
    ft = {**bw, "train": {**bw["train"], "finetune_lr": 0.01}}
    assert W.train_spec(ft, "both", 8, "b.pt")["lr"] == 0.01 and W.train_spec(ft, "distill", 8, "b.pt")["lr"] == 0.1
    capped = {**bw, "train": {**bw["train"], "stop_time_minutes": 3}}
    assert W.train_spec(capped, "both", 8, "b.pt")["max_minutes"] == 3 and "max_minutes" not in spec
    bw2 = {**bw, "share_heads": False}
    assert W.train_block_sizes(bw2) == [2, 4, 8] and W.valid_settings(bw2, "regular", 4) == "k4"
    with pytest.raises(ValueError, match="CPU-only"):
        W.check_config(bw, "cuda")
    bad = copy.deepcopy(bw)
    bad["decode"]["min_block_sizes"] = [9]
    with pytest.raises(ValueError, match="must not exceed"):
        W.check_config(bad, "cpu")
    outs = W.table_outputs(bw, "t")
    assert "vs_gad" not in outs and "table4" in outs
    assert "vs_gad" in W.table_outputs(bw, "t", ["gad.csv"])
    assert set(W.table_outputs({**bw, "variants": ["regular"]}, "t")) == {"table1", "table1_png"}
    for bad_cfg in ({**bw, "block_sizes": [1]}, {**bw, "block_sizes": []},
                    {**bw, "decode": {"topk": [1]}}, {**bw, "variants": ["bogus"]}, {**bw, "unknown": 1}):
        with pytest.raises(Exception):
            validate(copy.deepcopy(bad_cfg), str(REPO / "workflow" / "schemas" / "blockwise.schema.yaml"))


# --------------------------------------------------------------------------------- CLIs on a real checkpoint
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


def test_cli_eval_and_engine_decode(bw_checkpoint, tiny_databin, tmp_path):
    import blockwise_eval
    import engine_decode

    src = tmp_path / "src.txt"
    ref = tmp_path / "ref.txt"
    src.write_text("w1 w2 w3 w4\nw5 w6 w7\nw8 w9 w10 w11 w12\n")
    ref.write_text("t1 t2 t3 t4\nt5 t6 t7\nt8 t9 t10 t11 t12\n")
    out = tmp_path / "eval.json"
    rc = blockwise_eval.main(["--checkpoint", str(bw_checkpoint), "--data-bin", str(tiny_databin),
                              "--input", str(src), "--ref", str(ref), "--lang", "de",
                              "--settings", "k2,k3,k3-top2,k3-min2,k3-float", "--beams", "2", "--warmup", "1",
                              "--max-len-a", "0", "--max-len-b", "8", "--meta", "variant=both",
                              "--meta", "split=valid", "--output", str(out), "--hyp-dir", str(tmp_path / "hyps")])
    assert rc == 0
    doc = json.loads(out.read_text())
    assert doc["variant"] == "both" and doc["trained_block_size"] == 3
    res = {r["label"]: r for r in doc["results"]}
    assert set(res) == {"greedy", "k2", "k3", "k3-top2", "k3-min2", "k3-float", "fairseq-beam2"}
    for label in ("k2", "k3", "k3-float"):
        assert res[label]["identical_to_greedy"] == 3  # exact blockwise == greedy of p_1
    assert res["greedy"]["mean_block"] == 1.0 and "speedup_vs_beam2" in res["k3"]
    greedy_hyps = (tmp_path / "hyps" / "greedy.txt").read_text()
    assert (tmp_path / "hyps" / "k3.txt").read_text() == greedy_hyps
    # the engine's own CLI with the drafter module
    hyp = tmp_path / "engine.txt"
    rc = engine_decode.main(["--checkpoint", str(bw_checkpoint), "--data-bin", str(tiny_databin),
                             "--input", str(src), "--output", str(hyp), "--method", "blockwise",
                             "--drafter-module", "fastdec.engine.blockwise_drafter", "--drafter-arg", "block_size=2",
                             "--max-len-a", "0", "--max-len-b", "8"])
    assert rc == 0 and hyp.read_text() == greedy_hyps
    # bad settings -> clear errors
    for bad, msg in (("k4", "more heads than the model's block size"), ("k2-min3", "exceeds the block size"),
                     ("k0", "block size k must be >= 1"), ("k2-top0", "top-k must be >= 1")):
        with pytest.raises(ValueError, match=msg):
            blockwise_eval.main(["--checkpoint", str(bw_checkpoint), "--data-bin", str(tiny_databin),
                                 "--input", str(src), "--settings", bad, "--output", str(tmp_path / "x.json")])
