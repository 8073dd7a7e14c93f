"""Download rules of the BART tracks, run for real against a local HTTP server on 127.0.0.1 serving fixture files of
the real layout (cnn_dm_v2.tgz, bart.base.tar.gz / bart.large.tar.gz, the GPT-2 BPE files); offline, the fetch job
stops with a message naming the URL and where to put the file by hand."""
import socket
import sys
import tarfile
from pathlib import Path

import pytest
import yaml

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO / "tests"))

from helpers.bart import local_urls, serve, write_release_tree  # noqa: E402
from helpers.workflow_runs import snakemake  # noqa: E402

FILES = ["cnn_dm_v2.tgz", "bart.base.tar.gz", "bart.large.tar.gz", "encoder.json", "vocab.bpe", "dict.txt"]


@pytest.fixture(scope="module")
def releases(tmp_path_factory):
    root = write_release_tree(tmp_path_factory.mktemp("www"))
    server, base = serve(root)
    yield root, base
    server.shutdown()


def config_at(tmp_path, base: str) -> Path:
    cfg = local_urls(yaml.safe_load((REPO / "config/cnndm.yaml").read_text()), base)
    cfg.update(experiment="cnndm_fetch", device="cpu")
    path = tmp_path / "cfg.yaml"
    path.write_text(yaml.safe_dump(cfg))
    return path


def test_fetch_rules_download_the_releases_and_prepare_reads_the_layout(tmp_path, releases):
    root, base = releases
    targets = ["results/downloads/cnn_dm_v2.tgz"] + [f"results/bart_downloads/{f}" for f in FILES[1:]] + [
        f"results/cnndm_fetch/data/raw/{s}.{side}" for s in ("train", "valid", "test") for side in ("src", "tgt")]
    r = snakemake(tmp_path, *targets, "--configfile", str(config_at(tmp_path, base)), timeout=300)
    assert r.returncode == 0, r.stderr[-3000:]
    for f in FILES[1:]:
        assert (tmp_path / "results/bart_downloads" / f).read_bytes() == (root / f).read_bytes()
    with tarfile.open(root / "cnn_dm_v2.tgz") as tar:
        want = tar.extractfile("cnn_cln/val.target").read().decode().splitlines()
    assert (tmp_path / "results/cnndm_fetch/data/raw/valid.tgt").read_text().splitlines() == want


def closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_offline_fetch_names_the_url_and_the_fix(tmp_path):
    base = f"http://127.0.0.1:{closed_port()}"
    r = snakemake(tmp_path, "results/bart_downloads/bart.base.tar.gz", "--configfile",
                  str(config_at(tmp_path, base)), timeout=300)
    assert r.returncode != 0
    log = (tmp_path / "results/bart_downloads/logs/bart.base.tar.gz.log").read_text()
    assert f"could not download {base}/bart.base.tar.gz" in log
    assert "Are you offline? Download it by hand and place it at results/bart_downloads/bart.base.tar.gz" in log
