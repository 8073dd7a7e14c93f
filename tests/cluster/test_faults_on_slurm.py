"""Faults on a real (local) SLURM through `profiles/slurm`, on the MT chain up to a trained teacher of a small slice
of the smoke config (its data chain prepared once, locally: `fault_data`):
- a training job killed with scancel: Snakemake reports it, the profile's retry resumes from checkpoint_last.pt;
- a job failing on bad input: the error names the rule and the SLURM log; the rerun after the fix redoes nothing done;
- Snakemake killed while its jobs are queued: the rerun completes and no model is trained twice.
The first also checks the GPU request of a training job (`gpu` resource -> `sbatch --gpus`) against CPU-only jobs."""
import gzip
import json
import os
import shutil
import signal
import subprocess
import time

import pytest

from helpers.workflow_runs import FAULTS, REPO, copy_data_chain, slurm_submissions, small_config, snakemake_command

pytestmark = pytest.mark.slow
PROFILE = REPO / "profiles/slurm"


def run(slurm, workdir, config, *args, timeout=900):
    # targets and flags before --configfile, which takes several values
    r = subprocess.run(snakemake_command(workdir, PROFILE, *args, "--configfile", str(config)), cwd=REPO,
                       env=slurm.env(), capture_output=True, text=True, timeout=timeout)
    return r


def start(slurm, workdir, config, *targets):
    """Snakemake in the background, its log in workdir/snakemake.log, in its own process group (to kill it)."""
    log = open(workdir / "snakemake.log", "w")
    return subprocess.Popen(snakemake_command(workdir, PROFILE, *targets, "--configfile", str(config)), cwd=REPO,
                            env=slurm.env(), stdout=log, stderr=subprocess.STDOUT, start_new_session=True)


def wait_for(condition, timeout, what, proc=None):
    deadline = time.time() + timeout
    while time.time() < deadline:
        if condition():
            return
        if proc is not None and proc.poll() is not None:
            raise AssertionError(f"Snakemake exited ({proc.returncode}) before {what}")
        time.sleep(0.5)
    raise AssertionError(f"timed out after {timeout} s waiting for {what}")


def jobs_of_rule(slurm, rule, states=("RUNNING",)):
    return [i for i, state, comment in slurm.queue() if comment.startswith(f"rule_{rule}") and state in states]


def test_scancel_mid_training_is_retried_and_resumes_from_checkpoint(local_slurm, fault_data, tmp_path):
    # the teacher asks for one GPU (the local node's GPUs are stand-ins; training runs on the CPU)
    config = small_config(tmp_path, FAULTS, models={"teacher": {"gpus": 1}})
    copy_data_chain(fault_data, tmp_path)
    shutil.rmtree(tmp_path / f"results/{FAULTS}/data-bin")  # binarizing again: a CPU-only job beside the training
    target = f"results/{FAULTS}/models/teacher/model.pt"
    ckpt = tmp_path / f"results/{FAULTS}/models/teacher/checkpoints/checkpoint_last.pt"
    proc = start(local_slurm, tmp_path, config, target)
    try:
        wait_for(ckpt.exists, 600, "the teacher's first checkpoint", proc)
        (train_job,) = jobs_of_rule(local_slurm, "train")
        # GPU request: the training job was submitted with --gpus=1 and holds one of the node's GPUs
        info = local_slurm.job_info(train_job)
        assert info["TresPerJob"] == "gres:gpu:1" and info["JOB_GRES"].startswith("gpu:1"), info
        cpu_jobs = [i for i, _, comment in local_slurm.queue()
                    if comment.startswith("rule_") and not comment.startswith("rule_train")]  # binarize
        for info in map(local_slurm.job_info, cpu_jobs):
            assert "TresPerJob" not in info and info["JOB_GRES"] == "(null)", info
        assert cpu_jobs
        subprocess.run(["scancel", train_job], env=local_slurm.env(), check=True)
        assert proc.wait(timeout=900) == 0, (tmp_path / "snakemake.log").read_text()[-4000:]
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
    log = (tmp_path / "snakemake.log").read_text()
    assert f"SLURM-job '{train_job}' failed, SLURM status is: 'CANCELLED'" in log
    assert "Trying to restart job" in log
    retried = [s for _, s, p in slurm_submissions(log) if "rule_train" in str(p)]
    assert len(retried) == 2 and str(retried[0]) == train_job
    train_log = (tmp_path / f"results/{FAULTS}/logs/train_teacher.log").read_text()
    assert train_log.count("resuming from") == 1 and "Loaded checkpoint" in train_log
    summary = json.loads((tmp_path / f"results/{FAULTS}/models/teacher/train.json").read_text())
    assert summary["resumed"] and summary["num_updates"] == 150


def test_failed_job_names_rule_and_slurm_log_and_rerun_keeps_finished_jobs(local_slurm, tmp_path):
    data = tmp_path / "corpus"
    shutil.copytree(REPO / "resources/ende_libreoffice", data)
    good = (data / "valid.de.gz").read_bytes()
    lines = gzip.decompress(good).decode().splitlines(keepends=True)
    (data / "valid.de.gz").write_bytes(gzip.compress("".join(lines[:-1]).encode()))  # one line short
    config = small_config(tmp_path, "badinput", data={"embedded_dir": str(data)})
    # the three splits and the BPE codes learnt from the training split: the bad file fails one split only
    targets = [f"results/badinput/data/raw/{split}.de" for split in ("train", "valid", "test")]
    targets.append("results/badinput/data/bpe/codes")
    # --keep-going: the jobs that do not need the bad file finish, so the rerun has finished jobs to keep
    first = run(local_slurm, tmp_path, config, *targets, "--keep-going")
    assert first.returncode != 0
    assert "Error in rule prepare_split" in first.stderr
    failed = [(s, p) for _, s, p in slurm_submissions(first.stderr) if "rule_prepare_split/valid" in str(p)]
    assert failed, first.stderr[-3000:]
    errors = first.stderr.split("Error in rule prepare_split")[1:]
    for slurm_id, slurm_log in failed:  # the failed job, and its retry (profile `retries: 1`)
        assert any(f"SLURM-job '{slurm_id}' failed" in e and str(slurm_log) in e for e in errors), slurm_log
        assert slurm_log.is_file() and "Error in rule prepare_split" in slurm_log.read_text()
    assert "valid.de.gz" in first.stderr  # the rule's log, shown by the profile: names the bad file
    finished = {p: p.stat().st_mtime for p in (tmp_path / "results/badinput").rglob("*")
                if p.is_file() and "logs" not in p.parts and "benchmarks" not in p.parts}
    assert any("train." in p.name for p in finished) and any("test." in p.name for p in finished)
    assert any(p.name == "codes" for p in finished)

    (data / "valid.de.gz").write_bytes(good)
    second = run(local_slurm, tmp_path, config, *targets)
    assert second.returncode == 0, second.stderr[-4000:]
    assert all(p.stat().st_mtime == t for p, t in finished.items()), "a finished job was redone"
    redone = [str(p.parent.relative_to(tmp_path / ".snakemake/slurm_logs")) for _, _, p in
              slurm_submissions(second.stderr)]
    assert "rule_prepare_split/valid" in redone and not {"rule_prepare_split/train", "rule_prepare_split/test"} & set(
        redone), redone


def test_killed_snakemake_rerun_completes_without_training_twice(local_slurm, fault_data, tmp_path):
    # two trainings of two CPUs each on the two-CPU node: one runs, the other waits in the queue
    config = small_config(tmp_path, FAULTS, models={"teacher": {"threads": 2},
                                                    "baseline": {"threads": 2, "max_update": 60}})
    copy_data_chain(fault_data, tmp_path)
    targets = [f"results/{FAULTS}/models/{m}/model.pt" for m in ("teacher", "baseline")]
    proc = start(local_slurm, tmp_path, config, *targets)
    try:
        wait_for(lambda: len(jobs_of_rule(local_slurm, "train", ("RUNNING", "PENDING"))) == 2, 600,
                 "both trainings submitted", proc)
        assert jobs_of_rule(local_slurm, "train", ("PENDING",))  # one is still queued
    finally:
        os.killpg(proc.pid, signal.SIGKILL)  # Snakemake, not its SLURM jobs: they stay queued/running
        proc.wait()
    orphans = jobs_of_rule(local_slurm, "train", ("RUNNING", "PENDING"))
    assert len(orphans) == 2
    # the documented recovery: unlock, rerun (profiles/slurm has rerun-incomplete), with the orphans still there
    assert run(local_slurm, tmp_path, config, "--unlock").returncode == 0
    second = run(local_slurm, tmp_path, config, *targets, timeout=1200)
    assert second.returncode == 0, second.stderr[-4000:]
    for model, updates in (("teacher", 150), ("baseline", 60)):
        train_log = (tmp_path / f"results/{FAULTS}/logs/train_{model}.log").read_text()
        summary = json.loads((tmp_path / f"results/{FAULTS}/models/{model}/train.json").read_text())
        # fairseq-train trained each model once, in the orphaned job, to its max_update and never past it: the rerun's
        # job (Snakemake gives it a fresh log) started no fairseq-train and published the orphan's model again
        assert "publishing it again without training" in train_log and "\n+ " not in f"\n{train_log}", train_log
        assert summary["num_updates"] == updates and summary["republished"] and not summary["resumed"]
        checkpoints = tmp_path / f"results/{FAULTS}/models/{model}/checkpoints"
        saved = [int(p.stem.rsplit("_", 1)[1]) for p in checkpoints.glob("checkpoint_*_*.pt")]
        assert saved and max(saved) == updates, saved
