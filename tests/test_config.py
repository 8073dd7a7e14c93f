"""Configs are validated against the JSON schema before any job runs, and every shipped config dry-runs offline."""
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

REPO = Path(__file__).resolve().parents[1]
SNAKEMAKE = str(Path(sys.executable).with_name("snakemake"))
CONFIGS = sorted(p.name for p in (REPO / "config").glob("*.yaml"))


def snakemake(*args, cwd=REPO):
    return subprocess.run([SNAKEMAKE, "-s", str(REPO / "Snakefile"), "--directory", str(REPO), *args],
                          cwd=cwd, capture_output=True, text=True, timeout=300)


@pytest.mark.parametrize("name", CONFIGS)
def test_every_config_dry_runs(name):
    # --forceall: plan every job even where a finished results/<experiment> exists in this checkout
    r = snakemake("-n", "--forceall", "--cores", "1", "--configfile", f"config/{name}")
    assert r.returncode == 0, r.stdout[-2000:] + r.stderr[-2000:]
    assert "report" in r.stdout


def bad_config(tmp_path, mutate):
    cfg = yaml.safe_load((REPO / "config/smoke.yaml").read_text())
    mutate(cfg)
    path = tmp_path / "bad.yaml"
    path.write_text(yaml.safe_dump(cfg))
    return path


@pytest.mark.parametrize("mutate, expected", [
    (lambda c: c["bpe"].update(mergez=10), "mergez"),
    (lambda c: c["train"]["teacher"].update(max_update="lots"), "max_update"),
    (lambda c: c["data"].update(source="ftp"), "source"),
    (lambda c: c["decode"].update(beam=0), "beam"),
    (lambda c: c.update(device="tpu"), "device"),
])
def test_bad_config_stops_before_any_job_naming_the_key(tmp_path, mutate, expected):
    path = bad_config(tmp_path, mutate)
    r = snakemake("-n", "--cores", "1", "--configfile", str(path))
    assert r.returncode != 0
    out = r.stdout + r.stderr
    assert "ValidationError" in out or "validation" in out.lower()
    assert expected in out
    assert "Job stats" not in out
