"""The workflow's plan (fastdec/workflow): one training rule, one BPE/binarise set and one fetch rule serve every
track, so their per-item details must come out right for each."""
import json
import re
from pathlib import Path
from types import SimpleNamespace as W

import pytest
import yaml
from snakemake.utils import validate

from fastdec.tracks.gec.plan import GecPlan
from fastdec.tracks.specs import alternatives
from fastdec.workflow import Plan, check_config

REPO = Path(__file__).resolve().parents[1]


def plan(name="smoke.yaml", mutate=None):
    cfg = yaml.safe_load((REPO / "config" / name).read_text())
    if mutate:
        mutate(cfg)
    validate(cfg, str(REPO / "workflow/schemas/config.schema.yaml"))
    check_config(cfg, str(REPO))
    return Plan(cfg, str(REPO), "python")


def test_alternatives_match_exactly_and_empty_is_a_value():
    assert re.fullmatch(alternatives([""]), "") and not re.fullmatch(alternatives([""]), "gec/")
    assert re.fullmatch(alternatives(["", "gec/"]), "gec/") and not re.fullmatch(alternatives(["a.b"]), "axb")
    assert not re.fullmatch(alternatives([]), "") and not re.fullmatch(alternatives(iter([])), "")


def test_one_training_rule_serves_every_track():
    p = plan()
    m, R = p.models, p.R
    assert set(m.enabled_tracks()) == {"", "gec/", "gad/", "blockwise/", "students/", "superres/"}
    for track, name in (("", "teacher"), ("gec/", "gec"), ("gad/", "drafter_k4"), ("blockwise/", "both_k4"),
                        ("superres/", "base"), ("superres/", "finetune_k4")):
        assert re.fullmatch(m.track_regex(), track) and re.fullmatch(m.name_regex(), name)
    teacher = m.get(W(track="", name="teacher"))
    assert json.loads(teacher.spec) == p.config["train"]["teacher"] and teacher.flags == "" and teacher.priority == 50
    assert teacher.inputs == {"data": f"{R}/data-bin/raw/dict.en.txt"}
    assert m.data(W(track="", name="verifier")) == f"{R}/data-bin/distill"
    gec = m.get(W(track="gec/", name="gec"))
    assert gec.data == f"{R}/gec/data-bin" and gec.priority == 40 and gec.flags == ""
    drafter = m.get(W(track="gad/", name="drafter_k4"))
    assert "--task block_drafting --criterion glat_block_loss --user-dir" in drafter.flags
    assert json.loads(drafter.spec)["extra_args"]["block-size"] == 4
    assert drafter.inputs["init"] == f"{R}/gad/models/init_from_verifier.pt"
    bw = m.get(W(track="blockwise/", name="both_k4"))
    assert bw.inputs["base"] == f"{R}/models/verifier/model.pt" and "blockwise_cross_entropy" in bw.flags
    assert m.threads(W(track="blockwise/", name="both_k4")) == p.config["blockwise"]["train"]["threads"]
    assert m.resource("mem_mb")(W(track="", name="teacher")) == p.config["train"]["teacher"]["mem_mb"]
    with pytest.raises(ValueError, match="no model"):
        m.get(W(track="gec/", name="teacher"))


def test_single_quotes_in_a_training_config_stop_the_spec():
    p = plan(mutate=lambda c: c["train"]["teacher"].update(arch="it's"))
    with pytest.raises(ValueError, match="single quotes"):
        p.models.spec(W(track="", name="teacher"))


def test_bpe_binarise_and_fetch_per_dataset():
    p = plan()
    R = p.R
    assert p.bpe_train_text(W(ds="gec/")) == [f"{R}/gec/data/raw/train.src", f"{R}/gec/data/raw/train.tgt"]
    assert p.bpe_text(W(ds="", split="test", lang="en")) == f"{R}/data/tok/test.en"
    assert p.binarize_inputs(W(bin="gec/data-bin")) == [f"{R}/gec/data/bpe/{s}.{x}" for s in ("train", "valid")
                                                         for x in ("src", "tgt")]
    mt = W(bin="data-bin/raw")
    assert p.binarize_tgt(mt) == "de" and len(p.binarize_inputs(mt)) == 8
    assert p.binarize_test_arg(mt, [f"{R}/data/bpe/train.en"]) == (
        f"--testpref {R}/data/bpe/test,{R}/data/bpe/latency")
    assert p.binarize_test_arg(W(bin="gec/data-bin"), [f"{R}/gec/data/bpe/train.src"]) == ""
    assert p.downloads == {}  # embedded data, UA-GEC: nothing to fetch
    wmt = plan("wmt14_ende.yaml")
    assert set(wmt.datasets) == {""} and set(wmt.downloads) == {"downloads"}
    assert wmt.fetch_url(W(store="downloads", archive="dev.tgz")).endswith("/dev.tgz")
    bea = plan("gec_bea19.yaml")
    archives = GecPlan(bea.config["gec"], bea.R, bea.config["device"]).archives
    assert set(bea.datasets) == {"gec/"} and sorted(bea.downloads["gec_downloads"]) == archives


def test_cross_field_checks_name_the_key():
    def bad_archive(c):
        c["gec"]["data"]["bea19"]["valid"]["archive"] = "nope"

    with pytest.raises(ValueError, match=r"gec.data.bea19.valid.archive: 'nope' is not a name"):
        plan("gec_bea19.yaml", bad_archive)
    with pytest.raises(ValueError, match="must not exceed"):
        plan(mutate=lambda c: c["blockwise"]["decode"].update(min_block_sizes=[99]))
    with pytest.raises(ValueError, match="no `gad:` section"):
        plan(mutate=lambda c: c.pop("gad"))
    with pytest.raises(ValueError, match="tracks.gadd: no such track"):
        plan(mutate=lambda c: c["tracks"].update(gadd=True))
    with pytest.raises(ValueError, match="unknown section `decod:`"):
        plan(mutate=lambda c: c.update(decod={"beam": 4}))


def test_the_registry_fills_the_switches_a_config_leaves_out():
    p = plan(mutate=lambda c: [c["tracks"].pop(k) for k in ("mt_at", "students")])
    assert p.tracks["mt_at"] is True and p.tracks["students"] is False


def _checked(name):
    cfg = yaml.safe_load((REPO / f"config/{name}.yaml").read_text())
    validate(cfg, str(REPO / "workflow/schemas/config.schema.yaml"))
    check_config(cfg, str(REPO))  # each track's section with its defaults
    return cfg


def test_a_cuda_run_without_a_gpu_request_is_a_config_error():
    """A run that decodes on CUDA must ask the scheduler for a GPU (a cluster job without one cannot see CUDA)."""
    import copy

    from fastdec.tracks.registry import bench_runs

    cuda = copy.deepcopy(_checked("smoke")) | {"device": "cuda"}
    cuda["tracks"] = {**cuda["tracks"], "blockwise": False}  # its int8 heads are CPU-only (another error)
    with pytest.raises(ValueError, match="asks for no GPU"):
        bench_runs(cuda, "R")
    runs = bench_runs(_checked("wmt14_ende"), "R")  # the students' CPU batch-1 runs stay on the CPU, their GPU runs not
    assert {r.device for k, r in runs.items() if k.startswith("students/bench/")} == {"cpu"}
    assert {r.device for k, r in runs.items() if k.startswith("students/bench_gpu/")} == {"cuda"}


CLUSTER_CONFIGS = ("wmt14_ende", "wmt14_deen", "wmt16_enro", "wmt16_roen", "cnndm", "celeba_superres", "gec_bea19",
                   "gec_bart", "nlpcc18", "wikilarge")


def test_benchmarks_run_alone_on_one_machine_and_share_a_cluster():
    """Every benchmark of the default run claims every core Snakemake was given, so no training or other benchmark
    runs beside its timing (the GAD and Blockwise batch curves once ran side by side); on a cluster, where each job
    has its own share of a node, none does (a claim of every core would ask SLURM for them)."""
    from fastdec.tracks.registry import bench_runs

    runs = bench_runs(_checked("config"), "R")
    assert {k.split("/")[0] for k in runs} == {"gec", "gad", "blockwise", "students", "superres"}
    assert [k for k, r in runs.items() if not r.exclusive] == []
    for name in CLUSTER_CONFIGS:
        assert [k for k, r in bench_runs(_checked(name), "R").items() if r.exclusive] == [], name


def test_the_default_batch_curves_decode_each_batch_twice_and_the_batch_1_runs_once():
    """A batch curve keeps each method's faster of two decodes of a batch (``batch_repeats``): with one, a batch that
    stalled stayed in its row, and rows of the same work (a cost-aware row that never drafted against greedy) read
    0.89-1.14x. The tables' batch-1 runs decode each sentence once."""
    from fastdec.tracks.registry import bench_runs

    runs = bench_runs(_checked("config"), "R")
    batched = {k for k in runs if "/bench/batch" in k}
    assert {k.split("/")[0] for k in batched} == {"gec", "gad", "blockwise"}
    assert {k: runs[k].repeats for k in batched} == {k: 2 for k in batched}
    assert {runs[k].repeats for k in runs if k.startswith(("gad/", "blockwise/")) and k not in batched} == {1}
