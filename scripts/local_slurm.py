#!/usr/bin/env python
"""A single-node SLURM on this machine (fastdec/cluster/local_slurm.py), to try `--profile profiles/slurm` locally.

  python scripts/local_slurm.py start --dir /tmp/slurm      # prints `export SLURM_CONF=...`
  python scripts/local_slurm.py stop --dir /tmp/slurm       # cancels its jobs, stops the daemons it started
  python scripts/local_slurm.py run --dir /tmp/slurm -- snakemake --profile profiles/slurm ...   # start, run, stop

Needs Debian's slurmctld slurmd slurm-client munge (`--install` runs apt-get when root).
"""
import argparse
import os
import subprocess
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from fastdec.cluster.local_slurm import LocalSlurm, install_packages  # noqa: E402


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
