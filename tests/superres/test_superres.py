"""The super-resolution track: patches and splits from the shipped image, the track's plan and config checks, and
Table 2 / Figure 4 computed from benchmark runs with known answers."""
import json

import numpy as np
import pandas as pd
import pytest
import yaml

from fastdec.bench.results import Run
from fastdec.tracks.superres import images, plan
from fastdec.tracks.superres.paper import STERN_TABLE2
from fastdec.tracks.superres.tables import figure4_table, pixel_error, table2
from helpers.workflow_runs import REPO, SMOKE


def test_low_resolution_pixel_is_the_rounded_block_mean_in_raster_order():
    image = np.arange(64, dtype=np.uint8).reshape(8, 8) * 3
    low, high = images.patches(image, side=4, scale=2, stride=4)
    assert low.shape == (4, 4) and high.shape == (4, 16)
    assert high[1].tolist() == image[0:4, 4:8].ravel().tolist()  # the second patch: rows 0-3, columns 4-7
    block = image[0:2, 4:6].astype(float).mean()
    assert low[1, 0] == int(np.rint(block))
    with pytest.raises(ValueError, match="multiple of the scale"):
        images.patches(image, side=5, scale=2, stride=1)


def test_the_shipped_image_gives_disjoint_training_and_held_out_patches(tmp_path):
    image = images.sample_image("grace_hopper.jpg")
    assert image.shape == (600, 512) and image.dtype == np.uint8 and image.std() > 20
    sizes = images.write_corpus(tmp_path, image, side=8, scale=2, stride=4, held_out=0.2, valid=20, test=20, seed=3,
                                max_train=500)
    assert sizes == {"train": 500, "valid": 20, "test": 20}
    read = {f"{s}.{x}": (tmp_path / f"{s}.{x}").read_text().splitlines() for s in sizes for x in ("lr", "hr")}
    assert all(len(v[0].split()) == (16 if k.endswith("lr") else 64) for k, v in read.items())
    assert all(0 <= int(t) <= 255 for t in read["valid.hr"][0].split())
    assert not set(read["valid.hr"]) & set(read["test.hr"])
    # held-out patches come from rows no training patch covers: the bottom 120 rows, the training ones from the top 480
    top, bottom = images.split_rows(image, 0.2)
    train_rows = {tuple(p) for p in images.patches(top, 8, 2, 4)[1].tolist()}
    assert not train_rows & {tuple(map(int, line.split())) for line in read["valid.hr"] + read["test.hr"]}
    with pytest.raises(ValueError, match="held_out"):
        images.write_corpus(tmp_path, image, side=8, scale=2, stride=4, held_out=0.01, valid=500, test=500, seed=3)
    with pytest.raises(ValueError, match="superres.image"):
        images.sample_image("lena.png")


def _config(**superres):
    cfg = yaml.safe_load(SMOKE.read_text())
    cfg["superres"] = {**cfg["superres"], **superres}
    return cfg


def test_plan_models_methods_and_runs():
    cfg = _config(block_sizes=[2, 4, 6], epsilon=3)
    sr = plan.section(cfg)
    assert plan.models(sr) == ["regular_k6", "finetune_k6"]
    assert plan.methods(sr) == ["greedy", "greedy:backend=fast", "blockwise:k=2:backend=fast",
                                "blockwise:k=2:eps=3:backend=fast", "blockwise:k=4:backend=fast",
                                "blockwise:k=4:eps=3:backend=fast", "blockwise:k=6:backend=fast",
                                "blockwise:k=6:eps=3:backend=fast"]
    assert plan.label(sr, 4, 3) == "blockwise-k4-eps3-fast" and plan.label(sr, 1) == "greedy-fast"
    torch = plan.section(_config(block_sizes=[2], decode={"backend": "torch"}))
    assert plan.methods(torch) == ["greedy", "blockwise:k=2", "blockwise:k=2:eps=2"]
    runs = plan.bench_runs(cfg, "results/x")
    assert set(runs) == {"superres/bench/valid/regular_k6", "superres/bench/valid/finetune_k6"}
    run = runs["superres/bench/valid/finetune_k6"]
    assert run.checkpoint == "results/x/superres/models/finetune_k6/model.pt"
    assert run.max_len_b == 64 and run.max_len_a == 0  # at most 64 pixels, then EOS
    heads = json.loads(plan.model(cfg, "results/x", "finetune_k6", "plugin").spec)
    frozen = json.loads(plan.model(cfg, "results/x", "regular_k6", "plugin").spec)
    assert heads["extra_args"]["block-size"] == 6 and not heads["extra_args"]["freeze-base"]
    assert frozen["extra_args"]["freeze-base"]
    assert frozen["extra_args"]["load-base"].endswith("superres/models/base/model.pt")
    assert set(plan.table_items(cfg, "results/x")) == {f"superres/tables/{n}" for n in (
        "stern_table2.csv", "stern_figure4_superres.csv", "stern_figure4_superres.png")}


@pytest.mark.parametrize("change,words", [
    (dict(patch_side=7), "multiple of superres.scale"),
    (dict(heads={"max_update": 10, "max_tokens": 100, "lr": 0.1, "nonsense": 1}), "superres.heads"),
    (dict(base={"arch": "transformer", "max_update": 10, "max_tokens": 100}),
     "superres(.|\\n)*'lr' is a required"),
    (dict(base={"arch": "transformer", "max_update": 10, "max_tokens": 100, "lr": 0.1, "dropout": 2}),
     "superres.base.dropout"),
    (dict(epsilon=0), "epsilon"),
])
def test_bad_settings_name_the_key(change, words):
    with pytest.raises(ValueError, match=words):
        plan.section(_config(**change))


def _run(tmp_path, name, rows, hyps):
    path = tmp_path / name
    (path / "hyps").mkdir(parents=True)
    for label, lines in hyps.items():
        (path / "hyps" / f"{label}.txt").write_text("".join(line + "\n" for line in lines))
    df = pd.DataFrame(rows)
    return Run(str(path), df.set_index("label", drop=False), {})


def test_table2_and_figure4_from_runs(tmp_path):
    truth = ["10 20 30 40", "0 0 0 0"]
    exact, off = ["10 20 30 40", "0 0 0 0"], ["12 20 30 40", "0 0 0 3"]

    def rows(blocks, identical):
        return [dict(label="greedy", mean_block=1.0, n_sentences=2, identical_to_backend_greedy=2,
                     speedup_vs_greedy_same_batch=1.0, ms_per_sentence=10.0)] + [
            dict(label=label, mean_block=b, n_sentences=2, identical_to_backend_greedy=i,
                 speedup_vs_greedy_same_batch=b / 1.5, ms_per_sentence=10.0 * 1.5 / b)
            for label, b, i in zip(("blockwise-k2", "blockwise-k2-eps2"), blocks, identical)]
    hyps = {"greedy": exact, "blockwise-k2": exact, "blockwise-k2-eps2": off}
    runs = {"regular": _run(tmp_path, "r", rows([1.2, 1.5], [2, 0]), hyps),
            "finetune": _run(tmp_path, "f", rows([1.6, 1.9], [2, 1]), hyps)}
    def label(k, eps):
        return "greedy" if k == 1 else f"blockwise-k{k}" + (f"-eps{eps}" if eps else "")

    df = table2(runs, [2], 2, truth, pixels=4, label=label).set_index("k")
    assert df.loc[1, "regular"] == 1.0 and df.loc[2, "regular"] == 1.2 and df.loc[2, "approximate"] == 1.5
    assert df.loc[2, "fine_tuning"] == 1.6 and df.loc[2, "both"] == 1.9
    assert df.loc[2, "paper_both"] == STERN_TABLE2[2]["both"] == 1.96
    assert df.loc[2, "fine_tuning_identical_pct"] == 100.0 and df.loc[2, "both_identical_pct"] == 50.0
    assert df.loc[2, "regular_pixel_error"] == 0.0 and df.loc[2, "approximate_pixel_error"] == pytest.approx(
        (2 / 4 + 3 / 4) / 2, abs=0.01)
    fig = figure4_table(runs["finetune"], [2], 2, label)
    assert fig["mean_block"].tolist() == [1.9] and fig["speedup_vs_greedy"].tolist() == [round(1.9 / 1.5, 2)]
    assert "4.0x at k = 6" in fig["paper_note"].iloc[0]


def test_pixel_error_counts_missing_and_non_numeric_pixels_as_255_off():
    assert pixel_error(["1 2 3 4"], ["1 2 3 4"], 4) == 0.0
    assert pixel_error(["1 2"], ["1 2 3 4"], 4) == pytest.approx(255 / 2)
    assert pixel_error(["1 2 <unk> 4"], ["1 2 3 4"], 4) == pytest.approx(255 / 4)


def test_the_smoke_and_default_configs_turn_the_track_on():
    for path in (SMOKE, REPO / "config/config.yaml"):
        cfg = yaml.safe_load(path.read_text())
        assert cfg["tracks"]["superres"] is True
        plan.section(cfg)
