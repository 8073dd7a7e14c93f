"""scripts/gpu_lease.sh, the lease wrapper around scripts/gpu_run.sh: a run in a session of its own that goes on
between commands, each call waiting a bounded time and packing what was written so far. Exercised with real
gpu_run.sh dry runs (snakemake -n on config/demo_gpu.yaml) and a failing run; nothing here needs a GPU."""
import os
import subprocess
import sys
import tarfile
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]


def _lease(tmp_path, *args, timeout=600, **env_extra):
    env = dict(os.environ, PYTHONPATH=str(REPO), GPU_LEASE_DIR=str(tmp_path / "state"), OUT=str(tmp_path / "out"),
               **env_extra)
    (tmp_path / "out").mkdir(exist_ok=True)
    return subprocess.run(["bash", str(REPO / "scripts/gpu_lease.sh"), *args], cwd=REPO, capture_output=True,
                          text=True, env=env, timeout=timeout)


def test_wait_and_stop_without_a_run_say_how_to_start(tmp_path):
    r = _lease(tmp_path, "wait")
    assert r.returncode == 2 and "no run was started here" in r.stderr and "gpu_lease.sh start" in r.stderr
    r = _lease(tmp_path, "stop")
    assert r.returncode == 2 and "no run is going on" in r.stderr
    r = _lease(tmp_path, "frobnicate")
    assert r.returncode == 2 and "unknown command 'frobnicate'" in r.stderr
    r = _lease(tmp_path, "start", "--max", "soon")
    assert r.returncode == 2 and "--max needs a number of seconds" in r.stderr


@pytest.mark.parametrize("detach", ["setsid", "python"])
def test_a_run_goes_on_between_calls_and_each_call_packs_it(tmp_path, detach):
    env = {"GPU_LEASE_NO_SETSID": "1"} if detach == "python" else {}
    dry = ["--dry-run", "--python", sys.executable, "--venv", str(tmp_path / "venv")]
    r = _lease(tmp_path, "start", "--max", "0", *dry, **env)
    assert r.returncode == 3, r.stdout + r.stderr  # the call returned; the run did not end with it
    assert "still running" in r.stdout and "wait' again now" in r.stdout
    pid = (tmp_path / "state/pid").read_text().strip()
    sid = subprocess.run(["ps", "-o", "sid=", "-p", pid], capture_output=True, text=True).stdout.strip()
    assert sid == pid  # the leader of a session of its own, which a lease does not end with the command
    r = _lease(tmp_path, "start", *dry)
    assert r.returncode == 2 and "a run is going on" in r.stderr
    r = _lease(tmp_path, "wait", "--max", "500")
    out = r.stdout + r.stderr
    assert r.returncode == 0 and "the run finished" in out, out[-3000:]
    assert "| dry run |" in out  # the record's row, from the end of the log
    with tarfile.open(tmp_path / "out/gpu_lease.tgz") as tar:
        names = tar.getnames()
        log = tar.extractfile("gpu_run.log").read().decode()
    assert "docs/GPU.md" in names and "This was a dry-run" in log and "scripts/gpu_run.sh --dry-run" in log
    assert (tmp_path / "state/rc").read_text().strip() == "0"


def test_a_failing_run_returns_its_status_and_its_log(tmp_path):
    r = _lease(tmp_path, "start", "--max", "120", "--config", "nope.yaml")
    assert r.returncode == 2 and "the run failed (exit 2)" in r.stderr
    assert "config file nope.yaml not found" in r.stdout  # the log's tail
    assert (tmp_path / "out/gpu_lease.tgz").is_file()
