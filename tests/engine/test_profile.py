"""verify_cost: the pass-length cost curve that explains CPU speedups (`fastdec verify-cost`)."""
import csv

import pytest
import torch

from conftest import random_model
from fastdec.engine.profile import verify_cost



def test_verify_cost_rows_and_cache_state():
    model, d, ver = random_model(0)
    src = torch.tensor([5, 9, 11, 2])
    rows = verify_cost(ver, src, [4, 1, 2], prefix_len=3, repeats=2, warmup=1)
    assert [r["k"] for r in rows] == [1, 2, 4]
    assert rows[0]["cost_vs_k1"] == pytest.approx(1.0)
    assert all(r["ms_per_pass"] > 0 and r["ms_per_token"] == pytest.approx(r["ms_per_pass"] / r["k"]) for r in rows)
    assert ver.length == 3  # every measured pass was rolled back
    for bad in ([], [0, 2]):
        with pytest.raises(ValueError, match="block sizes"):
            verify_cost(ver, src, bad)
    with pytest.raises(ValueError, match="max_target_positions"):
        verify_cost(ver, src, [ver.max_positions])


def test_verify_cost_cli_random_model(tmp_path, capsys):
    from fastdec.cli import main

    out = tmp_path / "c.csv"
    assert main(["verify-cost", "--random", "demo", "--vocab", "64", "--ks", "1,3", "--repeats", "2",
                 "--csv", str(out)]) == 0
    rows = list(csv.DictReader(out.open()))
    assert [r["k"] for r in rows] == ["1", "3"] and rows[0]["vocab"] == "64"
    assert main(["verify-cost", "--random", "demo", "--vocab", "64", "--ks", "1,2", "--repeats", "2",
                 "--backend", "fast", "--csv", str(out)]) == 0
    assert [r["backend"] for r in csv.DictReader(out.open())] == ["fast", "fast"]
    assert main(["verify-cost", "--checkpoint", "x.pt", "--csv", str(out)]) == 2
    assert capsys.readouterr().err.strip().endswith("--checkpoint needs --data-bin (the folder with its dictionaries)")
