"""A real single-node SLURM on this machine, for testing cluster submission (`profiles/slurm`) without a cluster.

It installs nothing: it needs Debian's ``slurmctld slurmd slurm-client munge`` (``install_packages`` installs them
where root and apt-get are available). ``LocalSlurm(root).start()`` writes a slurm.conf, gres.conf and a munge key
under ``root``, starts ``munged``, ``slurmctld`` and ``slurmd`` on loopback as its own children (foreground, pids
recorded in ``root/pids.json``), and waits until ``sinfo`` shows the node idle; ``stop()`` cancels the jobs left and
stops those pids, nothing else. Clients reach it through ``SLURM_CONF`` (``env()``).

Choices, each because of this kind of machine (a container, root, no systemd, no cgroup delegation):
- no cgroups: ``ProctrackType=proctrack/linuxproc`` and ``TaskPlugin=task/none``;
- no accounting database (``accounting_storage/none``), so ``sacct`` knows no jobs: Snakemake's SLURM executor must
  query ``squeue``, which forgets a job ``MinJobAge`` seconds after it ends -- hence a long ``MinJobAge``;
- ``DefMemPerCPU`` so that a job without ``--mem`` does not take the node's whole memory; the node declares at least
  16 GB (``config_overrides``) so that every rule's request schedules on a smaller machine too;
- the node declares ``Gres=gpu:<n>`` backed by stand-in character devices (like /dev/null; slurmd ignores a GPU
  without a device file): GPU requests schedule and a job gets ``CUDA_VISIBLE_DEVICES``, but there is no GPU behind
  it. That is enough to test what is requested and granted.
- own ports and own munge socket, so several instances (or a system SLURM) can coexist.

From the command line, to try ``--profile profiles/slurm`` locally (``--install`` runs apt-get when root)::

  python tests/helpers/local_slurm.py start --dir /tmp/slurm      # prints `export SLURM_CONF=...`
  python tests/helpers/local_slurm.py stop --dir /tmp/slurm       # cancels its jobs, stops the daemons it started
  python tests/helpers/local_slurm.py run --dir /tmp/slurm -- snakemake --profile profiles/slurm ...
"""
from __future__ import annotations

import argparse
import json
import os
import shutil
import signal
import socket
import stat
import subprocess
import sys
import time
from pathlib import Path

DAEMONS = ("munged", "slurmctld", "slurmd")
CLIENTS = ("sbatch", "squeue", "sinfo", "scancel", "srun", "scontrol", "sacct")
PACKAGES = ("slurmctld", "slurmd", "slurm-client", "munge")
NODE = "fastdec-node"
PARTITION = "local"


def missing_binaries() -> list:
    """Names of the SLURM/munge programs not found on PATH (or in /usr/sbin, where Debian puts the daemons)."""
    path = os.environ.get("PATH", "") + os.pathsep + "/usr/sbin" + os.pathsep + "/sbin"
    return [b for b in DAEMONS + CLIENTS if shutil.which(b, path=path) is None]


def install_packages(timeout: int = 900) -> str:
    """Install the Debian packages when root and apt-get are available. Returns "" on success, else why not."""
    if not missing_binaries():
        return ""
    if os.geteuid() != 0:
        return f"missing {missing_binaries()} and not root: install {' '.join(PACKAGES)} (Debian/Ubuntu)"
    if shutil.which("apt-get") is None:
        return f"missing {missing_binaries()} and no apt-get: install the SLURM and munge packages of this system"
    env = dict(os.environ, DEBIAN_FRONTEND="noninteractive")
    for cmd in (["apt-get", "update", "-q"], ["apt-get", "install", "-y", "-q", *PACKAGES]):
        r = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=timeout)
        if r.returncode != 0:
            return f"`{' '.join(cmd)}` failed: {r.stderr.strip()[-500:]}"
    return "" if not missing_binaries() else f"still missing after apt-get: {missing_binaries()}"


def _sbin(name: str) -> str:
    return shutil.which(name, path=os.environ.get("PATH", "") + os.pathsep + "/usr/sbin" + os.pathsep + "/sbin")


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _mem_total_mb() -> int:
    for line in Path("/proc/meminfo").read_text().splitlines():
        if line.startswith("MemTotal:"):
            return int(line.split()[1]) // 1024
    raise RuntimeError("no MemTotal in /proc/meminfo")


class LocalSlurm:
    """One SLURM controller + one node on loopback, all state under ``root``."""

    def __init__(self, root, cpus: int | None = None, gpus: int = 2, mem_mb: int | None = None,
                 def_mem_per_cpu: int = 1000, min_job_age: int = 600):
        self.root = Path(root).resolve()
        self.cpus = cpus or os.cpu_count() or 1
        self.gpus = gpus
        # 80 % of the machine (room for the daemons and Snakemake), but at least what the workflow's rules ask for:
        # memory is not enforced here (no cgroups), only scheduled, and a smaller CI machine must still run them
        self.mem_mb = mem_mb or max(16000, int(_mem_total_mb() * 0.8))
        self.def_mem_per_cpu = def_mem_per_cpu
        self.min_job_age = min_job_age
        self.conf = self.root / "etc/slurm.conf"
        self.munge_socket = self.root / "munge/munge.socket"
        self.pids_file = self.root / "pids.json"

    # ------------------------------------------------------------------ configuration
    def env(self) -> dict:
        """The environment for clients (sbatch, squeue, Snakemake) of this SLURM: its client wrappers first on PATH
        (see ``write_client_wrappers``) and SLURM_CONF."""
        return dict(os.environ, SLURM_CONF=str(self.conf),
                    PATH=f"{self.root / 'bin'}{os.pathsep}{os.environ.get('PATH', '')}")

    def write_client_wrappers(self):
        """``bin/<client>`` runs the real client with this SLURM_CONF. A real cluster's clients find
        /etc/slurm/slurm.conf; ours is elsewhere, and SLURM_CONF alone does not reach every client: Snakemake's
        jobstep executor strips SLURM_* variables from the environment of the srun it runs inside each job."""
        (self.root / "bin").mkdir(exist_ok=True)
        for client in CLIENTS:
            wrapper = self.root / "bin" / client
            wrapper.write_text(f'#!/bin/sh\nSLURM_CONF={self.conf} exec {shutil.which(client)} "$@"\n')
            wrapper.chmod(0o755)

    def _slurm_conf(self) -> str:
        r = self.root
        host = socket.gethostname().split(".")[0]
        gres = f" Gres=gpu:{self.gpus}" if self.gpus else ""
        return "\n".join([
            "ClusterName=fastdec-local",
            f"SlurmctldHost={host}(127.0.0.1)",
            f"SlurmctldPort={_free_port()}",
            f"SlurmdPort={_free_port()}",
            "SlurmUser=root",
            "SlurmdUser=root",
            "AuthType=auth/munge",
            "CredType=cred/munge",
            f"AuthInfo=socket={self.munge_socket}",
            f"StateSaveLocation={r}/state",
            f"SlurmdSpoolDir={r}/spool",
            f"SlurmctldPidFile={r}/run/slurmctld.pid",
            f"SlurmdPidFile={r}/run/slurmd.pid",
            f"SlurmctldLogFile={r}/log/slurmctld.log",
            f"SlurmdLogFile={r}/log/slurmd.log",
            "ProctrackType=proctrack/linuxproc",
            "TaskPlugin=task/none",
            "JobAcctGatherType=jobacct_gather/none",
            "AccountingStorageType=accounting_storage/none",
            "JobCompType=jobcomp/none",
            "MpiDefault=none",
            "SwitchType=switch/none",
            "SchedulerType=sched/backfill",
            "SelectType=select/cons_tres",
            "SelectTypeParameters=CR_Core_Memory",
            f"DefMemPerCPU={self.def_mem_per_cpu}",
            # squeue (the status command without accounting) must still know a job this long after it ended
            f"MinJobAge={self.min_job_age}",
            "ReturnToService=2",
            # the node is what this file says (CPUs, RealMemory), not what slurmd finds: no drain on a small machine
            "SlurmdParameters=config_overrides",
            "SlurmdTimeout=300",
            "InactiveLimit=0",
            "KillWait=10",
            "GresTypes=gpu",
            f"NodeName={NODE} NodeHostname={host} NodeAddr=127.0.0.1 CPUs={self.cpus} "
            f"RealMemory={self.mem_mb}{gres} State=UNKNOWN",
            f"PartitionName={PARTITION} Nodes={NODE} Default=YES MaxTime=INFINITE State=UP",
            "",
        ])

    def write_config(self):
        for sub in ("etc", "state", "spool", "run", "log", "munge"):
            (self.root / sub).mkdir(parents=True, exist_ok=True)
        # munged refuses keys and sockets in group/world-writable directories
        os.chmod(self.root / "etc", 0o700)
        os.chmod(self.root / "munge", 0o755)
        self.conf.write_text(self._slurm_conf())
        self.write_client_wrappers()
        # slurmd drops a GPU without a device File, so each GPU gets a stand-in device: schedulable, nothing to
        # bind (task/none binds no devices)
        (self.root / "dev").mkdir(exist_ok=True)
        for i in range(self.gpus):
            _null_device(self.root / f"dev/gpu{i}")
        (self.root / "etc/gres.conf").write_text(
            f"NodeName={NODE} Name=gpu File={self.root}/dev/gpu[0-{self.gpus - 1}]\n" if self.gpus else "")
        key = self.root / "etc/munge.key"
        key.write_bytes(os.urandom(1024))
        os.chmod(key, 0o400)

    # ------------------------------------------------------------------ processes
    def _spawn(self, name: str, argv: list) -> subprocess.Popen:
        log = open(self.root / f"log/{name}.out", "ab")
        # own session: a Ctrl-C of the test runner reaches the daemons only through stop()
        return subprocess.Popen(argv, stdout=log, stderr=subprocess.STDOUT, env=self.env(),
                                start_new_session=True)

    def _record(self, pids: dict):
        self.pids_file.write_text(json.dumps(pids))

    def start(self, timeout: float = 120) -> "LocalSlurm":
        missing = missing_binaries()
        if missing:
            raise RuntimeError(f"cannot start a local SLURM: {missing} not found; install {' '.join(PACKAGES)}")
        self.write_config()
        r = self.root
        pids = {}
        try:
            munged = self._spawn("munged", [
                _sbin("munged"), "--foreground", "--force", f"--socket={self.munge_socket}",
                f"--key-file={r}/etc/munge.key", f"--log-file={r}/log/munged.log",
                f"--pid-file={r}/run/munged.pid", f"--seed-file={r}/munge/munged.seed"])
            pids["munged"] = munged.pid
            self._record(pids)
            self._wait(lambda: self.munge_socket.exists(), 30, "munged to create its socket", "munged")
            for name, flags in (("slurmctld", ["-D", "-i"]), ("slurmd", ["-D", "-N", NODE])):
                proc = self._spawn(name, [_sbin(name), *flags, "-f", str(self.conf)])
                pids[name] = proc.pid
                self._record(pids)
            self._wait(self.node_idle, timeout, f"node {NODE} to be idle in sinfo", "slurmctld")
        except BaseException:
            self.stop()
            raise
        return self

    def _wait(self, ready, timeout: float, what: str, log_name: str):
        deadline = time.time() + timeout
        while time.time() < deadline:
            if ready():
                return
            for name, pid in json.loads(self.pids_file.read_text()).items():
                if not _alive(pid):
                    raise RuntimeError(f"{name} exited while waiting for {what}; see {self.root}/log/{name}.log "
                                       f"and {self.root}/log/{name}.out")
            time.sleep(0.5)
        raise RuntimeError(f"timed out after {timeout:.0f} s waiting for {what}; see {self.root}/log/{log_name}.log")

    def node_state(self) -> str:
        r = subprocess.run(["sinfo", "-h", "-N", "-n", NODE, "-o", "%T"], capture_output=True, text=True,
                           env=self.env())
        return r.stdout.strip() if r.returncode == 0 else ""

    def node_idle(self) -> bool:
        return self.node_state() == "idle"

    def queue(self) -> list:
        """(job id, state, comment) of each job squeue knows: queued, running, and ended less than MinJobAge ago.
        Snakemake's executor puts ``rule_<rule>[_wildcards_<...>]`` in the comment."""
        r = subprocess.run(["squeue", "-h", "-t", "all", "-o", "%i|%T|%k"], capture_output=True, text=True,
                           env=self.env())
        return [tuple(line.split("|", 2)) for line in r.stdout.splitlines()] if r.returncode == 0 else []

    def job_ids(self) -> list:
        """Jobs still queued or running."""
        return [i for i, state, _ in self.queue() if state in ("PENDING", "RUNNING", "CONFIGURING", "COMPLETING")]

    def job_info(self, job_id) -> dict:
        """``scontrol -d show job`` of one job as {field: value}: JobState, TresPerJob (what it requested), and
        JOB_GRES (the GRES it was given, ``gpu:1(IDX:0)``; ``(null)`` for none), ..."""
        out = subprocess.run(["scontrol", "-d", "-o", "show", "job", str(job_id)], capture_output=True, text=True,
                             env=self.env(), check=True).stdout
        return dict(field.split("=", 1) for field in out.split() if "=" in field)

    def stop(self, grace: float = 15):
        """Cancel the jobs still queued or running here, then stop the daemons this instance started, by pid."""
        if not self.pids_file.exists():
            return
        pids = json.loads(self.pids_file.read_text())
        if _alive(pids.get("slurmctld")) and _alive(pids.get("slurmd")):
            jobs = self.job_ids()
            if jobs:
                subprocess.run(["scancel", *jobs], capture_output=True, env=self.env())
                deadline = time.time() + grace
                while self.job_ids() and time.time() < deadline:
                    time.sleep(0.5)
        for name in reversed([n for n in DAEMONS if n in pids]):
            _terminate(pids[name], grace)
        self.pids_file.unlink()

    def __enter__(self):
        return self.start()

    def __exit__(self, *exc):
        self.stop()


def _null_device(path: Path):
    """A character device like /dev/null (slurmd wants a character or block device; a plain file works too, with
    an error in its log, where mknod is not permitted)."""
    if path.exists():
        return
    try:
        os.mknod(path, 0o600 | stat.S_IFCHR, os.makedev(1, 3))
    except PermissionError:
        path.touch()


def _alive(pid) -> bool:
    if not pid:
        return False
    try:
        waited, _ = os.waitpid(pid, os.WNOHANG)  # reap our own exited child
        if waited == pid:
            return False
    except ChildProcessError:
        pass  # not our child (a CLI `stop` of an earlier `start`)
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True


def _terminate(pid: int, grace: float):
    if not _alive(pid):
        return
    os.kill(pid, signal.SIGTERM)
    deadline = time.time() + grace
    while _alive(pid) and time.time() < deadline:
        time.sleep(0.2)
    if _alive(pid):
        os.kill(pid, signal.SIGKILL)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("action", choices=["start", "stop", "run"])
    ap.add_argument("--dir", required=True, help="state, configuration and logs of this SLURM")
    ap.add_argument("--gpus", type=int, default=2, help="GPUs the node declares (stand-in devices)")
    ap.add_argument("--cpus", type=int, default=None, help="CPUs the node declares (default: this machine's)")
    ap.add_argument("--install", action="store_true", help="apt-get install the packages when missing")
    argv = sys.argv[1:]
    split = argv.index("--") if "--" in argv else len(argv)
    args, command = ap.parse_args(argv[:split]), argv[split + 1:]
    slurm = LocalSlurm(args.dir, cpus=args.cpus, gpus=args.gpus)
    if args.action == "stop":
        slurm.stop()
        return 0
    if args.install:
        why = install_packages()
        if why:
            print(f"error: {why}", file=sys.stderr)
            return 2
    if args.action == "start":
        slurm.start()
        print(f"export SLURM_CONF={slurm.conf} PATH={slurm.root / 'bin'}:$PATH")
        return 0
    if not command:
        ap.error("run needs a command after --")
    with slurm:
        return subprocess.run(command, env=slurm.env()).returncode


if __name__ == "__main__":
    try:
        sys.exit(main())
    except RuntimeError as e:
        print(f"error: {e}", file=sys.stderr)
        sys.exit(2)
