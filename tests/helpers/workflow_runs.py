"""Running the Snakefile on a config in a temporary directory: locally (tests/e2e) or through a Snakemake profile on
a SLURM (tests/cluster), and reading what Snakemake's log says it ran."""
import re
import shutil
import subprocess
import sys
from pathlib import Path

import yaml

REPO = Path(__file__).resolve().parents[2]
SNAKEMAKE = str(Path(sys.executable).with_name("snakemake"))
SMOKE = REPO / "config/smoke.yaml"


def snakemake(workdir, *args, **kw):
    """The workflow on 2 local cores."""
    return subprocess.run([SNAKEMAKE, "-s", str(REPO / "Snakefile"), "--directory", str(workdir), "--cores", "2",
                           *args], cwd=REPO, capture_output=True, text=True, **kw)


# The SLURM executor checks a job's status `init` seconds after submitting it, then backs off by 10 s per round in
# which nothing finished: with the profile's 5 s every short job of the local SLURM was seen done ~20 s after its
# submission (5 + 15); with 1 s, ~12 s. Everything else comes from the profile under test.
SLURM_FIRST_CHECK = ("--slurm-init-seconds-before-status-checks", "1")


def snakemake_command(workdir, profile, *args):
    """Snakemake through ``profile`` (a SLURM profile) in ``workdir``; ``args``: targets and flags."""
    return [SNAKEMAKE, "-s", str(REPO / "Snakefile"), "--directory", str(workdir), "--profile", str(profile),
            *SLURM_FIRST_CHECK, *args]


def small_config(tmp_path, name, models=None, **sections):
    """config/smoke.yaml as experiment ``name`` on a smaller slice (300 training pairs). The teacher, and each model
    of ``models`` ({name: settings}), trains for 150 updates with a checkpoint every 10, updated by its settings;
    ``sections`` update top-level config sections."""
    cfg = yaml.safe_load(SMOKE.read_text())
    cfg["experiment"] = name
    cfg["data"]["subset"] = {"train": 300, "valid": 20, "test": 10}
    cfg["bpe"]["merges"] = 200
    for model, settings in {"teacher": {}, **(models or {})}.items():
        cfg["train"][model] = {**cfg["train"][model], "max_update": 150, "save_interval_updates": 10, **settings}
    for section, values in sections.items():
        cfg[section] = {**cfg[section], **values}
    path = Path(tmp_path) / f"{name}.yaml"
    path.write_text(yaml.safe_dump(cfg))
    return path


# the experiment of the SLURM fault tests that train: their configs differ in the models only, so one data chain,
# prepared once without SLURM (tests/cluster/conftest.py `fault_data`), serves them all
FAULTS = "faults"


def copy_data_chain(template, workdir):
    """The prepared data chain into ``workdir``, with Snakemake's record of it (.snakemake/metadata) and the files'
    modification times, so Snakemake in ``workdir`` sees those jobs done."""
    shutil.copytree(Path(template) / "results", Path(workdir) / "results", dirs_exist_ok=True)
    shutil.copytree(Path(template) / ".snakemake/metadata", Path(workdir) / ".snakemake/metadata", dirs_exist_ok=True)


# --------------------------------------------------------------------------- what the log says
SUBMITTED = re.compile(r"Job (\d+) has been submitted with SLURM jobid (\d+) \(log: (\S+)\)")


def slurm_submissions(log: str) -> list:
    """(Snakemake job id, SLURM job id, SLURM log path) of each submission, in order."""
    return [(int(j), int(s), Path(p)) for j, s, p in SUBMITTED.findall(log)]


def rules_started(log: str, local: bool = False) -> list:
    """The rule of each job Snakemake started (``localrule`` blocks when ``local``)."""
    return re.findall(rf"^{'localrule' if local else 'rule'} (\w+):$", log, re.M)


def steps_done(log: str) -> int:
    m = re.findall(r"(\d+) of (\d+) steps \(100%\) done", log)
    return int(m[-1][0]) if m else 0
