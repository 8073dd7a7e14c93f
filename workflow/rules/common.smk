# Shared names. Paths, per-item arguments and config checks come from the plan (fastdec/workflow, over the tracks of
# fastdec/tracks/registry.py); the .smk files hold rules, config reads and calls to it.
import json  # rules use json and os
import os

from fastdec.workflow import (
    Plan,
    check_config,
    check_device,
    default_conda_env,
    job_python,
)

check_config(config, workflow.basedir)
check_device(
    config, local_run=False
)  # dtype vs device now; CUDA present: at onstart (Snakefile), not in dry runs
P = Plan(config, workflow.basedir, job_python(workflow))

EXP = P.exp
R = P.R
L = P.L  # every path under results/<experiment> (fastdec.layout.ResultsLayout)
TRACKS = P.tracks
MT_CHAIN = P.mt_chain
DATA = config.get("data", {})
SRC = P.src
TGT = P.tgt
DEC = config["decode"]
KD = config["distill"]
SHARDS = list(range(KD["shards"]))
# Absolute paths into the repository, so `--directory elsewhere` works (tests run the workflow in temp dirs).
REPO = P.repo
# Every rule's conda env, set in one place (Snakefile: default_conda_env) and used with --software-deployment-method
# conda; otherwise jobs use the interpreter running Snakemake (the project's .venv).
CONDA_ENV = f"{REPO}/envs/fastdec.yaml"
# Jobs find the interpreter through the environment (`$PY -m fastdec ...`), so rules stay free of global variables.
shell.prefix(P.shell_prefix)

AT_SYSTEMS = P.at_systems
log = P.log
bench = P.bench
prepare_inputs = P.prepare_inputs
prepare_source_args = P.prepare_source_args
at_system = P.at_system
all_targets = P.all_targets
# Each track's rules.smk appends the tables (CSV) and figures (PNG) it produces, in report order. The report rule reads
# this list lazily (after every include), and the caption of `<stem>.csv|png` is workflow/report/<stem>.rst.
REPORT_ITEMS = []
