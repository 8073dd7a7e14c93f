"""Paper-scale variants (config/variants/*.yaml, merged into config/wmt14_ende.yaml by Snakemake): GAD Tables 4, 5 and 6
as dry runs offline -- each trains what the table needs, in its own results folder."""
import re
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
SNAKEMAKE = str(Path(sys.executable).with_name("snakemake"))


def dry_run(tmp_path, *variants: str, targets=()) -> str:
    """``snakemake -n`` of config/wmt14_ende.yaml with ``variants`` merged in (the targets first: --configfile
    takes every file after it)."""
    r = subprocess.run([SNAKEMAKE, "-s", str(REPO / "Snakefile"), "--directory", str(tmp_path), "-n", "-p",
                        "--cores", "2", *targets, "--configfile", str(REPO / "config/wmt14_ende.yaml"),
                        *[str(REPO / f"config/variants/{v}.yaml") for v in variants]], capture_output=True,
                       text=True, cwd=REPO, timeout=600)
    assert r.returncode == 0, r.stderr[-3000:]
    return r.stdout


def train_spec(out: str, model: str) -> str:
    """The --spec of the training command that writes ``model`` (e.g. models/verifier)."""
    cmds = [c for c in out.splitlines() if "fastdec train --spec" in c and f"{model}/checkpoints" in c]
    assert len(cmds) == 1, model
    return re.search(r"--spec '([^']*)'", cmds[0]).group(1)


# variant(s) -> results folder, verifier arch, {drafter: arch}, the paper tables it writes
VARIANTS = {
    "gad_big": ("wmt14_ende_gad_big", "transformer_wmt_en_de_big", {"drafter_k30": "nat_block_drafter_big"},
                ["gad_table4_big", "gad_table6_teachers"]),
    "nat_big_drafter": ("wmt14_ende_nat_big", "transformer_wmt_en_de",
                        {"drafter_k30": "nat_block_drafter_base", "drafter_k30_big": "nat_block_drafter_big"},
                        ["gad_table5_nat_big"]),
    "kd_ensemble": ("wmt14_ende_kd3", "transformer_wmt_en_de", {"drafter_k25": "nat_block_drafter_base"},
                    ["gad_table6_teachers"]),
    "gad_big+kd_ensemble_big": ("wmt14_ende_gad_big_kd3", "transformer_wmt_en_de_big",
                                {"drafter_k30": "nat_block_drafter_big"}, ["gad_table4_big", "gad_table6_teachers"]),
}


@pytest.mark.parametrize("variant", list(VARIANTS))
def test_variant_trains_what_its_table_needs(tmp_path, variant):
    experiment, verifier, drafters, paper_tables = VARIANTS[variant]
    R = f"results/{experiment}"
    tables = [f"{R}/gad/tables/{t}.csv" for t in paper_tables]
    out = dry_run(tmp_path, *variant.split("+"), targets=tables)
    assert all(f"fastdec tables gad {t} " in out or f"tables gad {t}" in out for t in paper_tables), out[-2000:]
    assert f'"arch": "{verifier}"' in train_spec(out, f"{R}/models/verifier")
    for drafter, arch in drafters.items():
        assert f'"arch": "{arch}"' in train_spec(out, f"{R}/gad/models/{drafter}")
    assert "blockwise/models" not in out
    ensemble = "kd_ensemble" in variant
    teachers = ":".join(f"{R}/models/{t}/model.pt" for t in (["teacher", "teacher2", "teacher3"]
                                                             if ensemble else ["teacher"]))
    assert f"--checkpoint {teachers} " in out
    if variant == "nat_big_drafter":  # both drafters decode in the one test run (Table 5)
        assert "gad-k30-natbig" in out and "drafter_k30_big/model.pt" in out
    if variant == "kd_ensemble":
        assert '"seed": 3' in train_spec(out, f"{R}/models/teacher3")
