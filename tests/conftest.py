"""Shared pytest fixtures.

``tiny_databin`` builds a real fairseq data-bin (joined dictionary) from a small synthetic
parallel corpus, so plugin and engine tests can run fairseq-train / load real models in seconds;
``tiny_checkpoint`` is a real fairseq-train checkpoint on it. ``smoke_run`` is the whole Snakefile on
config/smoke.yaml, run once per session (tests/e2e checks it; tests/cluster compares its SLURM run with it).
"""
import os
import random
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest
from hypothesis import HealthCheck, settings

os.environ.setdefault("TORCH_FORCE_NO_WEIGHTS_ONLY_LOAD", "1")
# measured pass costs go to a cache of this run, not the user's (fastdec.engine.policy)
os.environ.setdefault("FASTDEC_PASS_COST_CACHE", tempfile.mkdtemp(prefix="fastdec-pass-cost-"))
# property tests draw `full` examples (make test, CI) or `fast` ones (make test-fast): pytest --hypothesis-profile=NAME;
# each file scales the profile's count by what one example costs (tests/helpers/properties.py)
_PROFILE = dict(deadline=None, derandomize=True, suppress_health_check=[HealthCheck.too_slow])
settings.register_profile("full", max_examples=60, **_PROFILE)
settings.register_profile("fast", max_examples=10, **_PROFILE)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "full"))
REPO = Path(__file__).resolve().parents[1]
BIN = Path(sys.executable).parent


def _write_parallel(prefix: Path, n: int, seed: int):
    """A learnable toy translation: target = source words mapped through a fixed lexicon, with one swap."""
    rng = random.Random(seed)
    vocab = [f"w{i}" for i in range(40)]
    lex = {w: f"t{i}" for i, w in enumerate(vocab)}
    src_lines, tgt_lines = [], []
    for _ in range(n):
        words = [rng.choice(vocab) for _ in range(rng.randint(3, 12))]
        tgt = [lex[w] for w in words]
        if len(tgt) > 3:
            tgt[0], tgt[1] = tgt[1], tgt[0]
        src_lines.append(" ".join(words))
        tgt_lines.append(" ".join(tgt))
    prefix.with_suffix(".src").write_text("\n".join(src_lines) + "\n")
    prefix.with_suffix(".tgt").write_text("\n".join(tgt_lines) + "\n")


@pytest.fixture(scope="session")
def tiny_databin(tmp_path_factory) -> Path:
    """Path to a fairseq data-bin with train/valid/test splits, languages src -> tgt."""
    root = tmp_path_factory.mktemp("tinydata")
    _write_parallel(root / "train", 400, 1)
    _write_parallel(root / "valid", 40, 2)
    _write_parallel(root / "test", 40, 3)
    out = root / "data-bin"
    subprocess.run(
        [str(BIN / "fairseq-preprocess"), "--source-lang", "src", "--target-lang", "tgt",
         "--trainpref", str(root / "train"), "--validpref", str(root / "valid"),
         "--testpref", str(root / "test"), "--destdir", str(out), "--joined-dictionary",
         "--workers", "1"],
        check=True, capture_output=True,
    )
    return out


@pytest.fixture(scope="session")
def tiny_checkpoint(tiny_databin, tmp_path_factory) -> Path:
    """A real fairseq-train checkpoint (transformer_tiny, 2 updates) on ``tiny_databin``."""
    save = tmp_path_factory.mktemp("tinyckpt")
    env = dict(os.environ, OMP_NUM_THREADS="1")
    subprocess.run(
        [str(BIN / "fairseq-train"), str(tiny_databin), "--arch", "transformer_tiny", "--share-all-embeddings",
         "--optimizer", "adam", "--lr", "0.005", "--max-tokens", "500", "--max-update", "2", "--cpu",
         "--save-dir", str(save), "--no-epoch-checkpoints", "--log-format", "simple", "--num-workers", "0",
         "--disable-validation", "--no-save-optimizer-state", "--seed", "1"],
        check=True, capture_output=True, env=env,
    )
    ckpt = save / "checkpoint_last.pt"
    assert ckpt.is_file()
    return ckpt


@pytest.fixture(scope="session")
def smoke_run(tmp_path_factory, worker_id) -> Path:
    """results/smoke of a local run of the whole Snakefile on config/smoke.yaml (real data, training, decoding), made
    once for the whole test session (tests/helpers/shared.py)."""
    from helpers.shared import build_once
    from helpers.workflow_runs import SMOKE, snakemake

    def run(workdir):
        r = snakemake(workdir, "--configfile", str(SMOKE), timeout=2400)
        return "" if r.returncode == 0 else r.stderr[-4000:]

    return build_once(tmp_path_factory, worker_id, "smoke_run", run) / "results/smoke"


# fixtures that run a workflow, fairseq training or a cluster: a test using one is `slow` (make test-fast skips it),
# as is every test of tests/cluster and tests/e2e, and a test marked so where it runs them itself
SLOW_FIXTURES = {"smoke_run", "local_slurm", "slurm_smoke", "gec_run", "nlpcc18_run", "wikilarge_run",
                 "paper_scale_jobs", "tiny_checkpoint", "gad_checkpoints", "base_ckpt", "converted", "releases",
                 "release", "news_crawl_server"}
_SLOW_DIRS = ("tests/cluster/", "tests/e2e/")
# make test runs pytest-xdist with --dist loadgroup, which cannot group tests here: it renames a test's node id, which
# pytest 9 no longer takes, so every test is its own unit, sent to whichever worker is free. That balanced the long
# workflow and SLURM tests better than --dist load's split up front (2026-11-26, 2 cores: 19.8 against 22.8 minutes).
# The expensive session fixture several tests read, the smoke run, is shared across workers through a file lock
# (`smoke_run`).


def pytest_collection_modifyitems(config, items):
    for item in items:
        used = set(getattr(item, "fixturenames", ()))
        if used & SLOW_FIXTURES or item.nodeid.startswith(_SLOW_DIRS):
            item.add_marker(pytest.mark.slow)
