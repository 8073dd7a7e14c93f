# Shared paths and helpers. Every other .smk reads paths from here, so a new stage only adds rules.
import os
import sys

# With --software-deployment-method conda each job runs in envs/fastdec.yaml and calls that env's python;
# otherwise jobs use the interpreter running Snakemake (the project's .venv).
CONDA_ENV = "../../envs/fastdec.yaml"  # relative to workflow/rules/


def _uses_conda():
    try:
        from snakemake.settings.types import DeploymentMethod

        return DeploymentMethod.CONDA in workflow.deployment_settings.deployment_method
    except Exception:
        return False


PY = "python" if _uses_conda() else sys.executable
EXP = config["experiment"]
R = f"results/{EXP}"
SRC = config["data"]["src_lang"]
TGT = config["data"]["tgt_lang"]
# Absolute paths into the repository, so `--directory elsewhere` works (tests run the workflow in temp dirs).
REPO = workflow.basedir
SCRIPTS = os.path.join(REPO, "scripts")
PLUGIN = os.path.join(REPO, "fastdec_fairseq")


def repo_path(path):
    """A config path relative to the working directory if it exists there, else to the repository."""
    return path if os.path.isabs(path) or os.path.exists(path) else os.path.join(REPO, path)

# fairseq checkpoints are pickled Namespaces: torch>=2.6 defaults to weights_only loading.
os.environ.setdefault("TORCH_FORCE_NO_WEIGHTS_ONLY_LOAD", "1")

SPLITS = ["train", "valid", "test"]
# Systems of the GAD paper's Table 1 that the AT chain produces: name -> (model, beam)
AT_SYSTEMS = {
    "teacher_b5": ("teacher", config["decode"]["beam"]),
    "baseline_b5": ("baseline", config["decode"]["beam"]),
    "verifier_b5": ("verifier", config["decode"]["beam"]),
    "verifier_b1": ("verifier", 1),
}


def log(name):
    return f"{R}/logs/{name}.log"


def bench(name):
    return f"{R}/benchmarks/{name}.tsv"


def all_targets():
    targets = [f"{R}/report/report.md"]
    return targets
