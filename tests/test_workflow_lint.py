"""The workflow's own files follow the Snakemake catalog's conventions: every .smk file and the Snakefile formatted
as `snakefmt` formats them, and `snakemake --lint` finds nothing on the default and the smoke config."""
import subprocess
import sys
from pathlib import Path

import pytest

from helpers.workflow_runs import REPO, SMOKE

BIN = Path(sys.executable).parent
SNAKE_FILES = [REPO / "Snakefile", *sorted((REPO / "workflow/rules").glob("*.smk")),
               *sorted((REPO / "fastdec/tracks").glob("*/*.smk"))]


def test_every_snakemake_file_is_formatted():
    assert len(SNAKE_FILES) > 10
    r = subprocess.run([str(BIN / "snakefmt"), "--check", *map(str, SNAKE_FILES)], capture_output=True, text=True)
    assert r.returncode == 0, f"run `snakefmt Snakefile workflow/rules fastdec/tracks`:\n{r.stderr[-3000:]}"


@pytest.mark.parametrize("config", ["config/config.yaml", str(SMOKE)])
def test_snakemake_lint_is_clean(config, tmp_path):
    r = subprocess.run([str(BIN / "snakemake"), "-s", str(REPO / "Snakefile"), "--lint", "--cores", "1",
                        "--configfile", str(REPO / config)], cwd=REPO, capture_output=True, text=True, timeout=300)
    out = r.stdout + r.stderr
    assert r.returncode == 0 and "Congratulations" in out and "Lints for" not in out, out[-4000:]
