"""The CNN-DM track (config/cnndm.yaml) through the real rules on fixture releases served by a local HTTP server on
127.0.0.1 (the machine has no internet; URLs, archive layouts and rules are otherwise the real ones): download ->
GPT-2 BPE -> binarise with BART's dict.txt -> BART-initialised teacher, baseline and verifier (tiny, a few updates)
-> Seq-KD -> NAT drafter from the verifier -> one benchmark runner -> Ge et al. Table 10 with ROUGE and the paper's
column. Also: the dry run of the paper-scale config offline, and config errors that name the key."""
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest
import yaml

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO / "tests"))

from helpers.bart import local_urls, serve, write_release_tree  # noqa: E402
from helpers.workflow_runs import snakemake  # noqa: E402

TINY = {"encoder-layers": 2, "decoder-layers": 2, "encoder-embed-dim": 16, "decoder-embed-dim": 16,
        "encoder-ffn-embed-dim": 32, "decoder-ffn-embed-dim": 32, "encoder-attention-heads": 2,
        "decoder-attention-heads": 2, "share-all-embeddings": True, "layernorm-embedding": True,
        "required-batch-size-multiple": 1}  # as the BART recipe: fairseq drops a remainder batch under 8 sentences
TINY_TRAIN = {"max_update": 12, "max_tokens": 4096, "lr": 0.001, "warmup_updates": 4, "save_interval_updates": 0,
              "threads": 1, "gpus": 0, "mem_mb": 2000, "runtime": 10}


@pytest.fixture(scope="module")
def releases(tmp_path_factory):
    server, base = serve(write_release_tree(tmp_path_factory.mktemp("www")))
    yield base
    server.shutdown()


def fixture_config(tmp_path, base: str) -> Path:
    """config/cnndm.yaml on the fixture releases, on the CPU, with tiny models and training caps."""
    cfg = local_urls(yaml.safe_load((REPO / "config/cnndm.yaml").read_text()), base)
    cfg.update(experiment="cnndm_fixture", device="cpu")
    for name, spec in cfg["train"].items():  # the fixture bart.large has 3 decoder layers, bart.base 2
        extra = {**TINY, "decoder-layers": 3 if spec["arch"] == "bart_large" else 2}
        cfg["train"][name] = {**spec, **TINY_TRAIN, "extra_args": extra}
    cfg["distill"] = {"shards": 1, "beam": 2, "max_tokens": 4096, "gpus": 0}
    cfg["decode"] = {"beam": 5, "max_len_a": 0, "max_len_b": 30, "threads": 1, "gpus": 0}
    cfg["gad"]["train"] = {**cfg["gad"]["train"], **TINY_TRAIN, "extra_args": {"required-batch-size-multiple": 1}}
    cfg["gad"].update(threads=1, gpus=0, warmup=0, mem_mb=2000, runtime=10)
    path = tmp_path / "cnndm_fixture.yaml"
    path.write_text(yaml.safe_dump(cfg))
    return path


def test_cnndm_fixture_run_to_table10(tmp_path, releases):
    r = snakemake(tmp_path, "--configfile", str(fixture_config(tmp_path, releases)), timeout=900)
    assert r.returncode == 0, (r.stdout + r.stderr)[-4000:]
    R = tmp_path / "results/cnndm_fixture"
    table = pd.read_csv(R / "gad/tables/ge_table10_cnndm.csv").set_index("system")
    assert len(table) == 8 and table["sentences"].eq(5).all()
    gad = table.loc["GAD (k = 25)"]
    assert gad["identical_to_greedy_pct"] == 100.0  # vanilla GAD (top-1, beta = 1) is lossless
    # fairseq's own greedy search on the fine-tuned BART verifier = the engine's greedy output, and GAD's output
    bench = R / "gad/bench/test/hyps"
    assert table.loc["AR verifier (beam = 1)", "identical_to_greedy_pct"] == 100.0
    assert (bench / "gad-k25.txt").read_text() == (bench / "greedy.txt").read_text()
    assert gad["paper_rouge1"] == 43.00 and table.loc["Teacher: BART (Lewis et al., 2020)", "paper_rougeL"] == 40.90
    assert table[["rouge1", "rouge2", "rougeL"]].notna().all().all()
    assert (R / "report/report.md").read_text().count("ge_table10_cnndm") >= 1
    # every model started from the fixture BART: the init checkpoints were built by the bart_init rule
    for name in ("teacher", "baseline", "verifier"):
        assert (R / f"models/{name}/bart_init.pt").is_file()
    # the hypotheses are GPT-2 BPE ids, the references untokenised text
    assert all(t.isdigit() for t in (R / "gad/bench/test/hyps/gad-k25.txt").read_text().split())


def dry_run(tmp_path, *configs) -> subprocess.CompletedProcess:
    return snakemake(tmp_path, "-n", "-p", "--configfile", *map(str, configs), timeout=300)


def test_cnndm_dry_run_offline(tmp_path):
    r = dry_run(tmp_path, REPO / "config/cnndm.yaml")
    assert r.returncode == 0, r.stderr[-3000:]
    out = r.stdout
    assert "https://cdn-datasets.huggingface.co/summarization/cnn_dm_v2.tgz" in out
    assert "bart.base/model.pt" in out and "bart.large/model.pt" in out
    assert "--srcdict results/bart_downloads/dict.txt" in out and "--max-tokens 1023" in out
    assert '"arch": "nat_block_drafter_bart_base"' in out
    assert "gad_table8_memory" not in out and "ge_table10_cnndm.csv" in out


@pytest.mark.parametrize("edit,message", [
    (lambda c: c["bpe"].update(kind="sentencepiece"), "sentencepiece"),
    (lambda c: c["train"]["verifier"]["init_from_bart"].update(checkpoint="bart.huge"),
     "init_from_bart.checkpoint: 'bart.huge' is not a name under bart.checkpoints (bart.base, bart.large)"),
    (lambda c: c.pop("bart"), "need a `bart:` section"),
    (lambda c: c["bart"]["gpt2"].pop("vocab.bpe"), "vocab.bpe"),
    (lambda c: c["gad"].update(task="translate"), "translate"),
])
def test_config_errors_name_the_key(tmp_path, edit, message):
    cfg = yaml.safe_load((REPO / "config/cnndm.yaml").read_text())
    edit(cfg)
    path = tmp_path / "bad.yaml"
    path.write_text(yaml.safe_dump(cfg))
    r = dry_run(tmp_path, path)
    assert r.returncode != 0 and message in r.stderr + r.stdout, (r.stderr + r.stdout)[-2000:]
