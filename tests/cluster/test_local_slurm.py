"""The local SLURM itself: one idle node with two schedulable GPUs, jobs run through sbatch, GPU requests granted."""
import subprocess
import time

import pytest

pytestmark = pytest.mark.slow


def wait_until_ended(slurm, job_id, timeout=60):
    deadline = time.time() + timeout
    while time.time() < deadline:
        if job_id not in slurm.job_ids():
            return
        time.sleep(0.5)
    raise AssertionError(f"SLURM job {job_id} still queued/running after {timeout} s: {slurm.queue()}")


def sbatch(slurm, tmp_path, *flags):
    wrap = "srun -n1 true; echo gpus=${SLURM_GPUS_ON_NODE:-0} devices=${CUDA_VISIBLE_DEVICES:-none}"
    r = subprocess.run(["sbatch", "--parsable", "-D", str(tmp_path), *flags, "--wrap", wrap],
                       capture_output=True, text=True, env=slurm.env(), check=True)
    return r.stdout.strip().split(";")[0]


def test_node_idle_with_gpus(local_slurm):
    assert local_slurm.node_idle()
    gres = subprocess.run(["sinfo", "-h", "-N", "-o", "%G"], capture_output=True, text=True, env=local_slurm.env(),
                          check=True).stdout.strip()
    assert gres == "gpu:2"


def test_gpu_request_is_allocated_and_cpu_job_gets_none(local_slurm, tmp_path):
    gpu_job = sbatch(local_slurm, tmp_path, "--gpus=1", "--mem=100")
    cpu_job = sbatch(local_slurm, tmp_path, "--mem=100")
    for job in (gpu_job, cpu_job):
        wait_until_ended(local_slurm, job)
    gpu_info, cpu_info = local_slurm.job_info(gpu_job), local_slurm.job_info(cpu_job)
    assert gpu_info["JobState"] == cpu_info["JobState"] == "COMPLETED"
    assert gpu_info["TresPerJob"] == "gres:gpu:1"
    assert "TresPerJob" not in cpu_info and cpu_info["JOB_GRES"] == "(null)"
    # the job saw its one GPU (a stand-in device: no CUDA behind it)
    assert (tmp_path / f"slurm-{gpu_job}.out").read_text().split() == ["gpus=1", "devices=0"]
    assert (tmp_path / f"slurm-{cpu_job}.out").read_text().split() == ["gpus=0", "devices=none"]


def test_too_many_gpus_is_refused(local_slurm, tmp_path):
    r = subprocess.run(["sbatch", "--parsable", "-D", str(tmp_path), "--gpus=3", "--wrap", "true"],
                       capture_output=True, text=True, env=local_slurm.env())
    assert r.returncode != 0 and "configuration is not available" in r.stderr.lower()
