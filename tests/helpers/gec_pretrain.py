"""gec.pretrain tests: a local HTTP server on 127.0.0.1 serving a real English one-sentence-per-line gzip (the demo
corpus's English side, resources/ende_libreoffice/train.en.gz) at the path of a WMT News Crawl file
(data.statmt.org/news-crawl/en/news.<year>.en.shuffled.deduped.gz: a single gzip, one sentence per line), and
running the Snakefile from the repository on a config."""
from __future__ import annotations

import gzip
import json
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from helpers.table4_fixtures import REPO, http_server

SNAKEMAKE = str(Path(sys.executable).with_name("snakemake"))
GEC_SCHEMA = str(REPO / "fastdec/tracks/gec/schema.yaml")
CORPUS = REPO / "resources/ende_libreoffice/train.en.gz"


@pytest.fixture(scope="module")
def news_crawl_server(tmp_path_factory):
    """(base URL, the served file's non-blank lines)."""
    root = tmp_path_factory.mktemp("statmt")
    path = root / "news-crawl/en/news.2019.en.shuffled.deduped.gz"
    path.parent.mkdir(parents=True)
    shutil.copyfile(CORPUS, path)
    with gzip.open(CORPUS, "rt", encoding="utf-8") as fh:
        lines = [line.rstrip("\n") for line in fh if line.strip()]
    with http_server(root) as base:
        yield base, lines


def run(workdir, *args, timeout=300):
    """Snakemake on 2 cores in ``workdir`` (config paths relative to the repository)."""
    return subprocess.run([SNAKEMAKE, "-s", str(REPO / "Snakefile"), "--directory", str(workdir), "--cores", "2",
                           *args], cwd=REPO, capture_output=True, text=True, timeout=timeout)


def train_spec(out: str, model_dir: str) -> dict:
    """The training spec of the job that writes ``model_dir``/model.pt, out of a dry run's printed commands."""
    cmds = [c for c in out.splitlines() if "fastdec train --spec" in c and f"--save-dir {model_dir}/checkpoints " in c]
    assert len(cmds) == 1, model_dir
    return json.loads(re.search(r"--spec '([^']*)'", cmds[0]).group(1))
