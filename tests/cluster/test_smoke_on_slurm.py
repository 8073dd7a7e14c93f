"""Two of config/smoke.yaml's GEC tables through `snakemake --profile profiles/slurm` on a real (local, single-node)
SLURM: Table 1 (IAD against greedy and beam, scored with M2) and Figure 6's batch curves (CTranslate2 conversion,
batched decoding) need every kind of job the workflow has (data, BPE, training, benchmarks, scoring, conversion,
tables); every job is a SLURM job, the status queries use squeue (no accounting database here), and the tables have
the rows of the local smoke run (tests/conftest.py `smoke_run`; numbers from training may differ). The MT chain's jobs on SLURM, with faults, are in
test_faults_on_slurm.py; the whole smoke workflow runs locally once (`smoke_run`), not again through SLURM."""
import subprocess
import time
from types import SimpleNamespace

import pandas as pd
import pytest

from helpers.workflow_runs import (REPO, SMOKE, rules_started, slurm_submissions, snakemake_command,
                                   steps_done)

pytestmark = pytest.mark.slow


SLURM_TABLES = ("gec_table1.csv", "gec_figure6_batch.csv")


def gec_targets():
    """The GEC tables of SLURM_TABLES under results/smoke (the paths the workflow's table rules write)."""
    import yaml
    from snakemake.utils import validate

    from fastdec.tracks.registry import track
    from fastdec.workflow.plan import check_config

    cfg = yaml.safe_load(SMOKE.read_text())
    validate(cfg, str(REPO / "workflow/schemas/config.schema.yaml"))
    check_config(cfg, str(REPO))  # fills every section's defaults, as the Snakefile does
    paths = [f"results/{cfg['experiment']}/{path}" for path in track("gec").plan.table_items(cfg, "R")]
    picked = [p for p in paths if p.rsplit("/", 1)[1] in SLURM_TABLES]
    assert len(picked) == len(SLURM_TABLES), paths
    return picked


@pytest.fixture(scope="module")
def slurm_smoke(local_slurm, tmp_path_factory):
    workdir = tmp_path_factory.mktemp("smoke_slurm")
    start = time.time()
    # targets before --configfile, which takes several values
    r = subprocess.run(snakemake_command(workdir, REPO / "profiles/slurm", *gec_targets(), "--configfile", str(SMOKE)),
                       cwd=REPO, env=local_slurm.env(), capture_output=True, text=True, timeout=3000)
    wall = time.time() - start
    print(f"\nsmoke workflow through profiles/slurm: {wall:.0f} s, "
          f"{len(slurm_submissions(r.stderr))} SLURM jobs")
    assert r.returncode == 0, r.stderr[-5000:]
    return SimpleNamespace(workdir=workdir, results=workdir / "results/smoke", log=r.stderr, wall=wall)


def test_every_job_went_through_sbatch(slurm_smoke):
    log = slurm_smoke.log
    submissions = slurm_submissions(log)
    local = rules_started(log, local=True)
    # `all` only collects the targets; `resolved_config` writes the validated config for the table jobs
    assert set(local) <= {"all", "resolved_config"}, f"jobs run outside SLURM: {local}"
    assert len(submissions) == len(rules_started(log)) == steps_done(log) - len(local) > 15
    slurm_ids = [s for _, s, _ in submissions]
    assert len(set(slurm_ids)) == len(slurm_ids)
    logdir = slurm_smoke.workdir / ".snakemake/slurm_logs"
    for _, slurm_id, path in submissions:
        # profiles/slurm keeps the SLURM log of every job: the job's own Snakemake ran the rule there
        assert path.is_file() and path.is_relative_to(logdir) and path.name == f"{slurm_id}.log", path
        assert "1 of 1 steps (100%) done" in path.read_text(), path
    assert "Falling back to 'sacct'" not in log
    assert "with SLURM jobid" in log and "Error" not in log


def table_outputs(results, track=None, names=None):
    return sorted(p.relative_to(results) for p in results.rglob("*")
                  if p.is_file() and {"tables", "figures"} & set(p.parts) and (track is None or p.parts[
                      len(results.parts)] == track) and (names is None or p.name in names))


def assert_same_rows(local, slurm, track):
    """Same table and figure files of ``track``, same columns, the same rows: their labels (the text columns among the
    first two: systems, methods, settings) in the same order. Numbers may differ."""
    files = table_outputs(local, track, SLURM_TABLES)
    assert table_outputs(slurm, track) == files and len(files) == len(SLURM_TABLES)
    for rel in (p for p in files if p.suffix == ".csv"):
        a, b = pd.read_csv(local / rel), pd.read_csv(slurm / rel)
        assert list(a.columns) == list(b.columns), rel
        labels = [c for c in a.columns[:2] if not pd.api.types.is_numeric_dtype(a[c])]
        assert labels and len(a) == len(b), rel
        assert a[labels].astype(str).values.tolist() == b[labels].astype(str).values.tolist(), (rel, labels)


def test_tables_have_the_rows_of_the_local_run(slurm_smoke, smoke_run):
    assert_same_rows(smoke_run, slurm_smoke.results, "gec")
    assert sorted(str(p) for p in table_outputs(slurm_smoke.results, "gec")) == sorted(
        t.split("/", 2)[2] for t in gec_targets())
