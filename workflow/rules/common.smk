# Shared paths and helper functions. Every other .smk reads paths from here, so a new stage only adds rules.
import json
import os
import sys

EXP = config["experiment"]
R = f"results/{EXP}"
TRACKS = config["tracks"]
MT_CHAIN = TRACKS["mt_at"] or TRACKS["gad"] or TRACKS["blockwise"]
if MT_CHAIN:
    missing = [k for k in ("data", "bpe", "train") if k not in config]
    if missing:
        raise ValueError(f"config: tracks mt_at/gad/blockwise need the sections {missing}; add them or turn the "
                         f"tracks off under `tracks:`")
DATA = config.get("data", {})
SRC = DATA.get("src_lang", "src")
TGT = DATA.get("tgt_lang", "tgt")
DEC = config["decode"]
KD = config["distill"]
SHARDS = list(range(KD["shards"]))
SPLITS = ["train", "valid", "test"]

# Absolute paths into the repository, so `--directory elsewhere` works (tests run the workflow in temp dirs).
REPO = workflow.basedir
SCRIPTS = os.path.join(REPO, "scripts")
PLUGIN = os.path.join(REPO, "fastdec_fairseq")
# fairseq checkpoints are pickled Namespaces: torch>=2.6 defaults to weights_only loading.
os.environ.setdefault("TORCH_FORCE_NO_WEIGHTS_ONLY_LOAD", "1")

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
# Jobs find the interpreter and the scripts through the environment, so rules stay free of global variables.
shell.prefix(f"set -euo pipefail; export PY='{PY}' SCRIPTS='{SCRIPTS}'; ")

# Systems of the GAD paper's Table 1 that the AT chain produces: name -> (model, beam)
AT_SYSTEMS = {
    "teacher_b5": ("teacher", DEC["beam"]),
    "baseline_b5": ("baseline", DEC["beam"]),
    "verifier_b5": ("verifier", DEC["beam"]),
    "verifier_b1": ("verifier", 1),
}
# Training data of each AT model: the teacher and the no-KD baseline see the original data, the verifier Seq-KD.
AT_DATA = {
    "teacher": f"{R}/data-bin/raw",
    "baseline": f"{R}/data-bin/raw",
    "verifier": f"{R}/data-bin/distill",
}


def repo_path(path):
    """A config path relative to the working directory if it exists there, else to the repository."""
    return path if os.path.isabs(path) or os.path.exists(path) else os.path.join(REPO, path)


def log(name):
    return f"{R}/logs/{name}.log"


def bench(name):
    return f"{R}/benchmarks/{name}.tsv"


# --- data ---------------------------------------------------------------------------------------------------------
def _download_pairs(split):
    return DATA["download"]["train"] if split == "train" else [DATA["download"][split]]


def prepare_inputs(wc):
    if DATA["source"] == "embedded":
        d = repo_path(DATA["embedded_dir"])
        return {"src": f"{d}/{wc.split}.{SRC}.gz", "tgt": f"{d}/{wc.split}.{TGT}.gz"}
    return {"archives": sorted({f"results/downloads/{p['archive']}" for p in _download_pairs(wc.split)})}


def prepare_source_args(wc, input):
    if DATA["source"] == "embedded":
        return f"--src {input.src} --tgt {input.tgt}"
    return " ".join(
        f"--member 'results/downloads/{p['archive']}::{p['src']}::{p['tgt']}::{p.get('format', 'text')}'"
        for p in _download_pairs(wc.split)
    )


# --- training and decoding ----------------------------------------------------------------------------------------
def train_spec(name):
    return config["train"][name]


def at_system(wc):
    return AT_SYSTEMS[wc.system]


# --- report -------------------------------------------------------------------------------------------------------
# Each track's .smk appends the tables (CSV) and figures (PNG) it produces, in report order. The report rule reads
# this list lazily (after every include), and the caption of `<stem>.csv|png` is workflow/report/<stem>.rst.
REPORT_ITEMS = []


def all_targets():
    return [f"{R}/report/report.md"]
