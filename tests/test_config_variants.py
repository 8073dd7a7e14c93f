"""Paper-scale variants (config/variants/*.yaml, merged into config/wmt14_ende.yaml by Snakemake): GAD Tables 4, 5 and 6
as dry runs offline -- each trains what the table needs, in its own results folder."""
import re
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
SNAKEMAKE = str(Path(sys.executable).with_name("snakemake"))


def dry_run(tmp_path, variant: str) -> str:
    r = subprocess.run([SNAKEMAKE, "-s", str(REPO / "Snakefile"), "--directory", str(tmp_path), "-n", "-p",
                        "--cores", "2", "--configfile", str(REPO / "config/wmt14_ende.yaml"),
                        str(REPO / f"config/variants/{variant}.yaml")], capture_output=True, text=True, cwd=REPO,
                       timeout=600)
    assert r.returncode == 0, r.stderr[-3000:]
    return r.stdout


def train_spec(out: str, model: str) -> str:
    """The --spec of the training command that writes ``model`` (e.g. models/verifier)."""
    cmds = [c for c in out.splitlines() if "fastdec train --spec" in c and f"{model}/checkpoints" in c]
    assert len(cmds) == 1, model
    return re.search(r"--spec '([^']*)'", cmds[0]).group(1)


@pytest.mark.parametrize("variant,experiment,verifier,drafter", [
    ("gad_big", "wmt14_ende_gad_big", "transformer_wmt_en_de_big", "nat_block_drafter_big"),
    ("nat_big_drafter", "wmt14_ende_nat_big", "transformer_wmt_en_de", "nat_block_drafter_big"),
    ("kd_ensemble", "wmt14_ende_kd3", "transformer_wmt_en_de", "nat_block_drafter_base"),
])
def test_variant_trains_what_its_table_needs(tmp_path, variant, experiment, verifier, drafter):
    out = dry_run(tmp_path, variant)
    R = f"results/{experiment}"
    assert f'"arch": "{verifier}"' in train_spec(out, f"{R}/models/verifier")
    assert f'"arch": "{drafter}"' in train_spec(out, f"{R}/gad/models/drafter_k25")
    assert "blockwise/models" not in out
    teachers = ":".join(f"{R}/models/{t}/model.pt" for t in (["teacher", "teacher2", "teacher3"]
                                                             if variant == "kd_ensemble" else ["teacher"]))
    assert f"--checkpoint {teachers} " in out
    if variant == "kd_ensemble":
        assert '"seed": 3' in train_spec(out, f"{R}/models/teacher3")
