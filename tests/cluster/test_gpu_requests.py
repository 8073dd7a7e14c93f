"""GPU requests at paper scale: the rules that train or decode ask for GPUs through the `gpu` resource, which the
SLURM executor plugin turns into `sbatch --gpus=N` (tests/cluster/test_faults_on_slurm.py checks a real submission
on the local SLURM); CPU-only rules ask for none. Read from a dry run of config/wmt14_ende.yaml."""
import re
import subprocess

import pytest
from snakemake_executor_plugin_slurm.utils import set_gres_string

from helpers.workflow_runs import REPO, SNAKEMAKE

# rule -> GPUs per job in config/wmt14_ende.yaml (train: the teacher/baseline/verifier, drafters and Blockwise models)
GPU_RULES = {"train": 8, "distill_shard": 1, "decode_fairseq": 1, "bench": 1, "gad_table8_memory": 1}
# the students track measures the paper's CPU batch-1 speed on students/bench/ (no GPU) and its GPU columns on
# students/bench_gpu/ (rule bench, one GPU)
CPU_BENCH = "students/bench/"


class Resources(dict):
    """What the plugin reads of a job's resources: .get() and attribute access."""
    __getattr__ = dict.get


@pytest.fixture(scope="module")
def paper_scale_jobs(tmp_path_factory):
    workdir = tmp_path_factory.mktemp("dryrun")
    r = subprocess.run([SNAKEMAKE, "-s", str(REPO / "Snakefile"), "--directory", str(workdir), "--dry-run",
                        "--cores", "64", "--configfile", str(REPO / "config/wmt14_ende.yaml")],
                       cwd=REPO, capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-3000:]
    jobs = []
    for block in re.split(r"\n(?=(?:local)?rule \w+:\n)", r.stdout):
        m = re.match(r"(?:local)?rule (\w+):\n", block)
        res = re.search(r"^\s*resources: (.*)$", block, re.M)
        out = re.search(r"^\s*output: (\S+)", block, re.M)
        if m and res:
            values = dict(kv.split("=", 1) for kv in res.group(1).split(", "))
            rule = m.group(1) if not (out and CPU_BENCH in out.group(1)) else "bench (students, CPU)"
            jobs.append((rule, Resources({k: int(v) if v.isdigit() else v for k, v in values.items()}),
                         out.group(1) if out else ""))
    return jobs


def test_gpu_rules_request_gpus_and_cpu_rules_none(paper_scale_jobs):
    rules = {rule for rule, _, _ in paper_scale_jobs}
    assert set(GPU_RULES) <= rules and {"prepare_split", "learn_bpe", "binarize", "table", "report"} <= rules
    for rule, resources, _ in paper_scale_jobs:
        gres = set_gres_string(type("Job", (), {"resources": resources}))
        if rule in GPU_RULES:
            assert resources["gpu"] == GPU_RULES[rule], rule
            assert gres == f" --gpus={GPU_RULES[rule]}", (rule, gres)
        else:
            assert not resources.get("gpu") and gres == "", (rule, resources)
    trainings = [out for rule, _, out in paper_scale_jobs if rule == "train"]
    students = [out for out in trainings if "/students/" in out]
    # MT chain, GAD drafters k=10..30, Blockwise k x 4 variants; the students: 13 structures, and for each of the two
    # pruning bases (12-1 SSRU w/o FFN and standard attention) 3 L0 phases and 3 fine-tunes
    assert len(trainings) - len(students) == 3 + 5 + 5 * 4 and len(students) == 13 + 2 * (3 + 3)
    assert sum(rule == "bench (students, CPU)" for rule, _, _ in paper_scale_jobs) == 13 + 2 * 3
    gpu_runs = [out for rule, _, out in paper_scale_jobs if rule == "bench" and "/students/bench_gpu/" in out]
    assert len(gpu_runs) == 13 + 2 * 3 and any("/transformer_12_1_pruned_0p01/" in out for out in gpu_runs)
