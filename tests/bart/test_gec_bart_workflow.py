"""The 12+2 BART-initialised GEC model (config/gec_bart.yaml) through the real rules on fixture releases served on
127.0.0.1: BEA-2019 / CoNLL archives of the real member layout and local Lang-8 / NUCLE files -> GPT-2 BPE -> a
tiny BART-initialised model keeping the fixture bart.large's decoder layers 0 and 2 -> beam / greedy / IAD in one
run -> M2 after GPT-2 decoding -> Tables 1 and 3 (our greedy and IAD rows beside the paper's 12+2 BART-Init rows)."""
import json
import sys
from pathlib import Path

import pandas as pd
import pytest
import torch
import yaml

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO / "tests"))

from helpers.bart import local_urls, serve, write_gec_release_tree, write_release_tree  # noqa: E402
from helpers.workflow_runs import snakemake  # noqa: E402
from fastdec.bart.init import read_bart_state  # noqa: E402


@pytest.fixture(scope="module")
def releases(tmp_path_factory):
    root = tmp_path_factory.mktemp("www")
    write_release_tree(root)
    local = write_gec_release_tree(root, tmp_path_factory.mktemp("licensed"))
    server, base = serve(root)
    yield base, local
    server.shutdown()


def fixture_config(tmp_path, base, local) -> Path:
    cfg = local_urls(yaml.safe_load((REPO / "config/gec_bart.yaml").read_text()), base)
    cfg.update(experiment="gec_bart_fixture", device="cpu")
    g = cfg["gec"]
    g["data"]["bea19"]["local"] = {k: str(v) for k, v in local.items()}
    g["model"].update(max_update=10, max_tokens=4096, lr=0.001, warmup_updates=2, save_interval_updates=0,
                      threads=1, gpus=0, mem_mb=2000, runtime=10,
                      init_from_bart={"checkpoint": "bart.large", "decoder_layers": [0, 2]})
    g["model"]["extra_args"] = {"encoder-layers": 2, "decoder-layers": 2, "encoder-embed-dim": 16,
                                "decoder-embed-dim": 16, "encoder-ffn-embed-dim": 32, "decoder-ffn-embed-dim": 32,
                                "encoder-attention-heads": 2, "decoder-attention-heads": 2,
                                "share-all-embeddings": True, "layernorm-embedding": True,
                                "required-batch-size-multiple": 1}
    g["benchmark"].update(cpu_threads=[1], warmup=0, gpus=0, mem_mb=2000, runtime=10, max_len_b=5)
    path = tmp_path / "gec_bart_fixture.yaml"
    path.write_text(yaml.safe_dump(cfg))
    return path


def test_gec_bart_fixture_run_to_table3(tmp_path, releases):
    r = snakemake(tmp_path, "--configfile", str(fixture_config(tmp_path, *releases)), timeout=900)
    assert r.returncode == 0, (r.stdout + r.stderr)[-4000:]
    G = tmp_path / "results/gec_bart_fixture/gec"
    t1 = pd.read_csv(G / "tables/gec_table1.csv").set_index("method")
    assert t1.loc["iad", "identical_to_greedy_pct"] == 100.0 and t1.loc["iad", "F0.5"] >= 0
    t3 = pd.read_csv(G / "tables/gec_table3.csv")
    ours = t3[t3["source"] == "ours"].set_index("method")
    assert ours.loc["iad", "paper_F0.5"] == 66.4 and ours.loc["fairseq-greedy", "paper_speedup"] == 2.3
    # the model started from the fixture BART-large's encoder and its decoder layers 0 and 2
    bart = read_bart_state(str(tmp_path / "results/bart_downloads/bart.large.tar.gz"), "bart.large/model.pt")["model"]
    init = torch.load(G / "models/gec/bart_init.pt", weights_only=False)["model"]
    assert torch.equal(init["decoder.layers.1.fc1.weight"], bart["decoder.layers.2.fc1.weight"])
    assert "decoder.layers.2.fc1.weight" not in init
    # M2 was computed on GPT-2-decoded words, and Table 2 shows words, not BPE ids
    m2s = sorted((G / "bench").glob("*/m2.*.json"))
    assert len(m2s) == 4  # beam 5, fairseq greedy, engine greedy, IAD
    for m2 in m2s:
        assert json.loads(m2.read_text())["gpt2_bpe"] is True, m2
    table2 = (G / "tables/gec_table2.csv").read_text()
    assert not any(tok.isdigit() and int(tok) > 255 for tok in table2.replace(",", " ").split())
