"""gec.pretrain (synthetic pretraining, then fine-tuning) through the real rules: config checks, the paper-scale dry
run of config/gec_bea19.yaml + config/variants/gec_synthetic.yaml offline, the download and split rules against a
local HTTP server serving a file with News Crawl's layout, and a tiny end-to-end run (UA-GEC, tiny models) in which
the GEC model starts from the pretrained model's weights."""
import copy
import re

import pytest
import torch
import yaml
from snakemake.utils import validate

from fastdec.tracks.gec.plan import check_gec
from helpers.gec_pretrain import GEC_SCHEMA, REPO, news_crawl_server, run, train_spec  # noqa: F401  (fixture)

VARIANT = ["config/gec_bea19.yaml", "config/variants/gec_synthetic.yaml"]
R = "results/gec_bea19_synthetic"


def bea19_gec(enabled=True):
    g = copy.deepcopy(yaml.safe_load((REPO / "config/gec_bea19.yaml").read_text())["gec"])
    g["pretrain"]["enabled"] = enabled
    g["data"]["bea19"]["local"] = {"lang8": None, "nucle": None}  # no warnings about licensed files here
    validate(g, GEC_SCHEMA)
    return g


@pytest.mark.parametrize("mutate, message", [
    (lambda p: p["noise"].update(substitute=0.5), "substitute \\+ delete \\+ insert \\+ swap sum to 0.8"),
    (lambda p: p["text"].update(files=["news1999"]), r"gec.pretrain.text.files\[0\]: 'news1999'"),
    (lambda p: p.pop("text"), "gec.pretrain.text is missing"),
    (lambda p: p["model"].update(arch="transformer"), "gec.pretrain.model: .*architecture"),
    (lambda p: p["model"]["extra_args"].update({"encoder-layers": 3}), "gec.pretrain.model: .*architecture"),
])
def test_bad_pretrain_config_names_the_key(mutate, message):
    g = bea19_gec()
    mutate(g["pretrain"])
    with pytest.raises(ValueError, match=message):
        check_gec(g)


@pytest.mark.parametrize("mutate, key", [
    (lambda p: p["noise"].update(error_rate=1.2), "error_rate"),
    (lambda p: p["noise"].update(char_rate=-0.5), "char_rate"),
    (lambda p: p["text"]["archives"]["news2019"].update(url="data.statmt.org/x.gz"), "url"),
    (lambda p: p.update(shards=0), "shards"),
    (lambda p: p["confusion"].update(source="aspell"), "source"),
])
def test_pretrain_schema_errors_name_the_key(mutate, key):
    g = bea19_gec()
    mutate(g["pretrain"])
    with pytest.raises(Exception, match=key):
        validate(g, GEC_SCHEMA)


def test_off_by_default_and_valid_when_off():
    g = bea19_gec(enabled=False)
    check_gec(g)
    smoke = yaml.safe_load((REPO / "config/smoke.yaml").read_text())["gec"]
    validate(smoke, GEC_SCHEMA)
    assert smoke["pretrain"]["enabled"] is False


def test_paper_scale_dry_run_pretrains_then_fine_tunes(tmp_path):
    out = run(tmp_path, "-n", "-p", "--configfile", *VARIANT).stdout
    shards = yaml.safe_load((REPO / "config/gec_bea19.yaml").read_text())["gec"]["pretrain"]["shards"]
    assert out.count("rule gec_pretrain_corrupt:") == shards + 1       # every shard and the held-out lines
    assert out.count("rule fetch:") == 4 + 11 and "news.2019.en.shuffled.deduped.gz" in out
    # BPE per shard with the GEC track's codes, binarised with its dictionary
    assert f"--codes {R}/gec/data/bpe/codes --input {R}/gec/pretrain/noised/train.7.src" in out
    assert f"--srcdict {R}/gec/data-bin/dict.src.txt" in out
    pre = train_spec(out, f"{R}/gec/models/gec_pretrain")
    gec = train_spec(out, f"{R}/gec/models/gec")
    assert pre["update_freq"] == 64 and pre["warmup_updates"] == 8000 and pre["lr"] == 0.0003
    assert "finetune-from-model" not in pre["extra_args"]
    assert gec["extra_args"]["finetune-from-model"] == f"{R}/gec/models/gec_pretrain/model.pt"
    assert gec["lr"] == 0.0003 and f"--data-bin {R}/gec/pretrain/data-bin " in out
    # the fine-tuning job waits for the pretrained model
    job = out.split(f"output: {R}/gec/models/gec/model.pt")[0].rsplit("rule train:", 1)[1]
    assert f"{R}/gec/models/gec_pretrain/model.pt" in job


def test_switch_off_trains_from_scratch(tmp_path):
    out = run(tmp_path, "-n", "-p", "--configfile", "config/gec_bea19.yaml").stdout
    assert "gec_pretrain" not in out and "finetune-from-model" not in out and "rule fetch:" in out


def test_download_and_split_rules_real_layout(tmp_path, news_crawl_server):
    base, lines = news_crawl_server
    override = {"experiment": "synth_fixture", "device": "cpu", "gec": {"pretrain": {
        "text": {"archives": {"news2019": {"url": f"{base}/news-crawl/en/news.2019.en.shuffled.deduped.gz"}},
                 "files": ["news2019"]},
        "sentences": 300, "valid_sentences": 20, "shards": 3}}}
    (tmp_path / "override.yaml").write_text(yaml.safe_dump(override))
    clean = "results/synth_fixture/gec/pretrain/clean"
    r = run(tmp_path, f"{clean}/valid.txt", "--configfile", *VARIANT, str(tmp_path / "override.yaml"))
    assert r.returncode == 0, r.stderr[-3000:]
    got = (tmp_path / "results/gec_downloads/news2019").read_bytes()
    assert got[:2] == b"\x1f\x8b"                                   # the gzip as served
    assert (tmp_path / f"{clean}/valid.txt").read_text().splitlines() == lines[:20]
    shard1 = (tmp_path / f"{clean}/train.1.txt").read_text().splitlines()
    assert len(shard1) == 100 and shard1[:2] == [lines[21], lines[24]]  # round-robin after the held-out lines
    assert not (tmp_path / "results/gec_downloads/news2018").exists()   # only the files the config reads


@pytest.mark.slow
def test_tiny_end_to_end_fine_tunes_from_the_pretrained_weights(tmp_path, news_crawl_server):
    pytest.importorskip("ua_gec")
    base, _ = news_crawl_server
    smoke = yaml.safe_load((REPO / "config/smoke.yaml").read_text())
    gec = smoke["gec"]
    gec["data"]["subset"] = {"train": 300, "valid": 30, "test": 30}
    gec["bpe"]["merges"] = 200
    tiny = {**gec["model"], "max_update": 20, "save_interval_updates": 0}
    # a tiny learning rate: after its updates the fine-tuned model must still be (nearly) the pretrained one
    gec["model"] = {**tiny, "lr": 1e-9, "warmup_updates": 1, "max_update": 3}
    gec["pretrain"] = {"enabled": True, "sentences": 600, "valid_sentences": 30, "shards": 2,
                       "text": {"archives": {"news": {"url": f"{base}/news-crawl/en/news.2019.en.shuffled.deduped.gz"}},
                                "files": ["news"]},
                       "confusion": {"vocab_size": 2000, "sample_sentences": None}, "model": tiny}
    cfg = {"experiment": "synth_e2e", "device": "cpu", "gec": gec,
           "tracks": {"mt_at": False, "gec_iad": True, "gad": False, "blockwise": False}}
    (tmp_path / "cfg.yaml").write_text(yaml.safe_dump(cfg))
    M = "results/synth_e2e/gec/models"
    r = run(tmp_path, f"{M}/gec/model.pt", "--configfile", str(tmp_path / "cfg.yaml"), timeout=600)
    assert r.returncode == 0, r.stderr[-4000:]
    for rule in ("gec_pretrain_split", "gec_pretrain_confusion", "gec_pretrain_corrupt", "gec_pretrain_join"):
        assert f"rule {rule}:" in r.stderr, rule
    noised = tmp_path / "results/synth_e2e/gec/pretrain/noised"
    src, tgt = ((noised / f"train.0.{s}").read_text().splitlines() for s in ("src", "tgt"))
    assert len(src) == len(tgt) > 250 and sum(a != b for a, b in zip(src, tgt)) > len(src) // 3
    pre_dict = (tmp_path / "results/synth_e2e/gec/pretrain/data-bin/dict.src.txt").read_text()
    assert pre_dict == (tmp_path / "results/synth_e2e/gec/data-bin/dict.src.txt").read_text()
    log = (tmp_path / "results/synth_e2e/logs/gec/train_gec.log").read_text()
    # `fastdec train` hands fairseq a copy of the init checkpoint (checkpoints/init_weights.pt)
    assert re.search(r"loading pretrained model from \S*gec/checkpoints/init_weights\.pt", log)
    pre = torch.load(tmp_path / f"{M}/gec_pretrain/model.pt", map_location="cpu", weights_only=False)["model"]
    fin = torch.load(tmp_path / f"{M}/gec/model.pt", map_location="cpu", weights_only=False)["model"]
    assert pre.keys() == fin.keys()
    diff = max((pre[k].float() - fin[k].float()).abs().max().item() for k in pre)
    assert diff < 1e-4, diff  # a model trained from scratch would differ by ~0.1 (its own random initialisation)


def test_plan_shares_the_gec_codes_and_dictionary():
    from types import SimpleNamespace as W

    from fastdec.tracks.gec.plan import GecPlan
    from fastdec.workflow.plan import Plan, check_config

    cfg = yaml.safe_load((REPO / "config/gec_bea19.yaml").read_text())
    cfg["gec"]["pretrain"]["enabled"] = True
    validate(cfg, str(REPO / "workflow/schemas/config.schema.yaml"))
    check_config(cfg, str(REPO))
    p = Plan(cfg, str(REPO))
    R = p.R
    assert set(p.datasets) == {"gec/", "gec/pretrain/"}
    assert p.bpe_codes(W(ds="gec/pretrain/")) == p.bpe_codes(W(ds="gec/")) == f"{R}/gec/data/bpe/codes"
    assert p.bpe_text(W(ds="gec/pretrain/", split="train.3", lang="src")) == f"{R}/gec/pretrain/noised/train.3.src"
    assert p.binarize_dict(W(bin="gec/pretrain/data-bin")) == [f"{R}/gec/data-bin/dict.src.txt"]
    assert p.binarize_dict(W(bin="gec/data-bin")) == []
    assert p.binarize_runtime(W(bin="gec/pretrain/data-bin")) == 660 and p.binarize_runtime(W(bin="gec/data-bin")) == 60
    files = cfg["gec"]["pretrain"]["text"]["files"]
    g = GecPlan(cfg["gec"], R, cfg["device"])
    assert set(p.downloads["gec_downloads"]) == set(g.archives) | set(files)
    assert g.pretrain_file_args().split()[:2] == ["--file", "results/gec_downloads/news2021"]
    assert g.pretrain_runtime("corrupt") == 60 + 3_000_000 // 200_000
    gec = p.models.model("gec/", "gec")
    assert gec.inputs["init"] == f"{R}/gec/models/gec_pretrain/model.pt"
    assert p.models.model("gec/", "gec_pretrain").data == f"{R}/gec/pretrain/data-bin"
    cfg["gec"]["pretrain"]["enabled"] = False
    off = Plan(cfg, str(REPO))
    assert "init" not in off.models.model("gec/", "gec").inputs
    with pytest.raises(ValueError, match="gec.pretrain.enabled is false"):
        off.models.model("gec/", "gec_pretrain")
