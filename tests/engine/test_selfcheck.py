"""``fastdec selfcheck``, the lossless check that scripts/gpu_run.sh runs on the GPU before the workflow: on the
CPU it passes for the exact methods, and it does report outputs that differ from greedy (a relaxed rule)."""
import math
import subprocess
import sys

import pytest
import torch

from conftest import REPO
from fastdec.engine import InputCopyDrafter, Verifier, accept_top_beta
from fastdec.engine.profile import build_random_transformer
from fastdec.engine.selfcheck import check_model


def test_selfcheck_passes_on_the_cpu():
    r = subprocess.run([sys.executable, "-m", "fastdec", "selfcheck", "--device", "cpu", "--sentences", "10",
                        "--batch", "4"], cwd=REPO, capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stdout + r.stderr
    lines = r.stdout.splitlines()
    # per model: batched greedy, then 5 methods and 3 of them with the cost-aware policy, x 3 modes; the summary
    assert len(lines) == 3 * (1 + (5 + 3) * 3) + 1
    for method in ("iad", "gad", "noisy-top1", "gad++-beta1", "blockwise-k1", "iad+cost", "gad+cost",
                   "noisy-top1+cost"):
        assert f" {method} " in r.stdout and "batch 4 packed" in r.stdout
    assert lines[-1].startswith("selfcheck: 750 of 750 outputs identical to greedy on cpu")


def test_selfcheck_reports_outputs_that_differ_from_greedy():
    model, d, _ = build_random_transformer(seed=7, dtype=torch.float64, max_positions=64)
    relaxed = [("top3", InputCopyDrafter(), accept_top_beta(3, math.inf))]  # not lossless: any top-3 token passes
    rows = check_model(Verifier(model), len(d), d.eos(), sentences=12, batch=4, seed=0, methods=relaxed)
    assert rows[0]["method"] == "greedy" and rows[0]["identical"] == rows[0]["total"] == 12
    assert {r["mode"] for r in rows[1:]} == {"batch 1", "batch 4 padded", "batch 4 packed"}
    assert all(r["identical"] < r["total"] for r in rows[1:])


@pytest.mark.parametrize("args, msg", [(["--device", "cuda"], "torch sees no GPU"),
                                       (["--device", "cpu", "--batch", "1"], "--batch >= 2"),
                                       (["--device", "cpu", "--dtype", "bfloat16"], "needs a GPU (--device cuda)")])
def test_selfcheck_bad_arguments(args, msg):
    if args[:2] == ["--device", "cuda"] and torch.cuda.is_available():
        pytest.skip("a GPU is here")
    r = subprocess.run([sys.executable, "-m", "fastdec", "selfcheck", *args], cwd=REPO, capture_output=True,
                       text=True, timeout=120)
    assert r.returncode == 2 and msg in r.stderr
