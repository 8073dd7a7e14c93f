"""The students track on the experiment layer: models through the ONE training rule, runs through the ONE bench rule,
config errors before any job."""
import json
import re
from pathlib import Path
from types import SimpleNamespace as W

import pytest
import yaml
from snakemake.utils import validate

from fastdec.tracks.registry import bench_runs, table_items
from fastdec.workflow import Plan, check_config

REPO = Path(__file__).resolve().parents[2]


def config(name="smoke.yaml", mutate=None):
    cfg = yaml.safe_load((REPO / "config" / name).read_text())
    if mutate:
        mutate(cfg)
    validate(cfg, str(REPO / "workflow/schemas/config.schema.yaml"))
    check_config(cfg, str(REPO))
    return cfg


def test_students_train_through_the_one_training_rule_on_seq_kd_data():
    p = Plan(config(), str(REPO), "python")
    m, R = p.models, p.R
    assert "students/" in m.enabled_tracks()
    names = ["transformer_1_1", "ssru_noffn_2_1", "ssru_noffn_2_1_l0_0p05", "ssru_noffn_2_1_pruned_0p05"]
    for name in names:
        assert re.fullmatch(m.track_regex(), "students/") and re.fullmatch(m.name_regex(), name)
        assert m.data(W(track="students/", name=name)) == f"{R}/data-bin/distill"
    base = m.get(W(track="students/", name="ssru_noffn_2_1"))
    spec = json.loads(base.spec)
    assert spec["arch"] == "efficient_student_tiny" and "--user-dir" in base.flags
    assert spec["extra_args"]["decoder-self-attn"] == "ssru" and spec["extra_args"]["decoder-no-ffn"] is True
    assert spec["extra_args"]["encoder-layers"] == 2 and spec["extra_args"]["decoder-layers"] == 1
    # smoke.yaml: init_from: verifier -- the student starts from its warm-start checkpoint
    assert base.inputs["init"] == spec["extra_args"]["finetune-from-model"] == f"{R}/students/init/ssru_noffn_2_1.pt"
    l0 = m.get(W(track="students/", name="ssru_noffn_2_1_l0_0p05"))
    extra = json.loads(l0.spec)["extra_args"]
    assert extra["head-gates"] and extra["l0-lambda"] == 0.05 and "l0_head_cross_entropy" in l0.flags
    assert l0.inputs["init"] == extra["finetune-from-model"] == f"{R}/students/init/ssru_noffn_2_1_l0_0p05.pt"
    ft = m.get(W(track="students/", name="ssru_noffn_2_1_pruned_0p05"))
    extra = json.loads(ft.spec)["extra_args"]
    assert ft.inputs["init"] == extra["heads-from"] == f"{R}/students/init/ssru_noffn_2_1_pruned_0p05.pt"
    from fastdec.tracks.students.plan import init_source

    assert init_source(p.config["students"], "ssru_noffn_2_1_l0_0p05", R) == (
        f"{R}/students/models/ssru_noffn_2_1/model.pt", False)
    assert init_source(p.config["students"], "ssru_noffn_2_1_pruned_0p05", R) == (
        f"{R}/students/models/ssru_noffn_2_1_l0_0p05/model.pt", True)
    assert json.loads(ft.spec)["max_update"] == 10
    with pytest.raises(ValueError, match="students track trains"):
        m.get(W(track="students/", name="nope"))


def test_bench_runs_and_tables():
    cfg = config()
    runs = {k: v for k, v in bench_runs(cfg, "R").items() if v.track == "students"}
    assert set(runs) == {f"students/bench/test/{n}" for n in
                         ("transformer_1_1", "ssru_noffn_2_1", "ssru_noffn_2_1_pruned_0p05")}
    run = runs["students/bench/test/ssru_noffn_2_1"]
    assert run.methods[:4] == ["fairseq:beam=1", "greedy", "fairseq:beam=5", "fairseq:beam=5:batch=8"]
    assert run.methods[4] == "gad:k=4:checkpoint=R/gad/models/drafter_k4/model.pt" and run.threads == 1
    items = {k for k, v in table_items(cfg, "R").items() if v.track == "students"}
    assert items == {f"students/tables/students_{t}" for t in
                     ("table1.csv", "table2.csv", "table3.csv", "figure2.csv", "figure2.png", "gad_verifier.csv")}


def _set(path, value):
    def mutate(cfg):
        d = cfg
        for k in path[:-1]:
            d = d[k]
        d[path[-1]] = value
    return mutate


@pytest.mark.parametrize("path, value, message", [
    (("students", "pruning", "lambdas"), [-0.1], "-0.1 is less than the minimum of 0"),
    (("students", "models", "ssru_noffn_2_1", "decoder_layers"), 0, "0 is less than the minimum of 1"),
    (("students", "baseline"), "nope", "students.baseline 'nope' is not a key of students.models"),
    (("students", "baseline"), "ssru_noffn_2_1", "must name a standard-attention student"),
    (("students", "models", "transformer_1_1", "ffn"), False, "ffn: false needs self_attn ssru or aan"),
    (("students", "pruning", "base"), "x", "students.pruning.base 'x' is not a key"),
    (("students", "decode", "split"), "final", "students.decode.split: final decodes data.download.final_test"),
    (("students", "init_from"), "teacher", "'teacher' is not one of ['none', 'verifier']"),
    (("students", "train", "extra_args", "encoder-embed-dim"), 32,
     "students.init_from: verifier needs students.train.extra_args.encoder-embed-dim equal to "
     "train.verifier.extra_args.encoder-embed-dim (32 != 64)"),
])
def test_bad_config_is_a_clear_error_before_any_job(path, value, message):
    with pytest.raises(Exception, match=re.escape(message)):
        config(mutate=_set(path, value))


def test_speed_measurement_runs_every_structure_on_both_decoders():
    from fastdec.tracks.students.speed import STRUCTURES, measure

    rows = measure(embed_dim=16, heads=2, vocab=40, src_len=5, steps=4, rounds=2)
    assert [r["structure"] for r in rows] == list(STRUCTURES)
    assert all(r["fairseq_tokens_per_s"] > 0 and r["engine_tokens_per_s"] > 0 for r in rows)
    params = {r["structure"]: r["params"] for r in rows}
    assert params["ssru_noffn_3_3"] < params["ssru_3_3"] and params["ssru_noffn_6_1_pruned"] < params["ssru_noffn_6_1"]
