# Two commands do all the set-up:
#   make run    installs everything (once) and runs the default workflow to its report
#   make test   installs everything (once) and runs the test suite
#   make cluster-test   only the tests against a real single-node SLURM on this machine (tests/cluster; docs/CLUSTER.md)
# Both are idempotent: the environment is rebuilt only when a file in envs/ changes.
PYTHON ?= python3.11
VENV   ?= .venv
BIN     = $(VENV)/bin
STAMP   = $(VENV)/.fastdec-installed
CORES  ?= all
PIP     = $(BIN)/python -m pip install --disable-pip-version-check -q

.PHONY: setup run test test-fast cluster-test smoke lint clean-results gpu-wheels

# A wheelhouse for a GPU machine without a package registry (Python $(GPU_PY), its own CUDA torch): copy the folder
# over and run scripts/gpu_run.sh --wheelhouse $(WHEELHOUSE) there (docs/GPU.md: "On a GPU machine you own"). GPU_HAVE: the GPU
# machine's `pip freeze`, whose packages stay out of the folder (envs/gpu-image-cuda.txt: the machines lent here).
GPU_PY     ?= 3.12
GPU_HAVE   ?=
WHEELHOUSE ?= wheelhouse

setup: $(STAMP)

$(STAMP): envs/requirements-torch.txt envs/requirements-build.txt envs/requirements.txt pyproject.toml
	@echo ">> creating $(VENV) and installing pinned requirements (cold: ~5 min, mostly building fairseq)"
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(PIP) -r envs/requirements-torch.txt
	$(PIP) -r envs/requirements-build.txt
	$(PIP) --no-build-isolation -r envs/requirements.txt
	$(PIP) --no-build-isolation --no-deps -e .
	touch $(STAMP)

run: setup
	$(BIN)/snakemake --cores $(CORES) --profile profiles/default

smoke: setup
	$(BIN)/snakemake --cores $(CORES) --profile profiles/default --configfile config/smoke.yaml

# one pytest-xdist worker per core, each test handed to whichever worker is free (tests/conftest.py says why this is
# `loadgroup`); the smoke run is made once for all workers, the local SLURM once per worker that needs it
PYTEST = $(BIN)/python -m pytest -q -n auto --dist loadgroup

test: setup
	$(PYTEST) tests

# the unit and property tests only (no workflow, training or cluster runs; fewer hypothesis examples): minutes
test-fast: setup
	$(PYTEST) tests -m "not slow" --hypothesis-profile=fast

gpu-wheels: setup
	$(BIN)/fastdec gpu-wheels --out $(WHEELHOUSE) --python-version $(GPU_PY) $(if $(GPU_HAVE),--have $(GPU_HAVE))

# Installs Debian's slurmctld/slurmd/slurm-client/munge first where they are missing (root and apt-get needed).
cluster-test: setup
	$(BIN)/python -m pytest -q tests/cluster

lint: setup
	$(BIN)/snakefmt --check Snakefile workflow/rules fastdec/tracks
	$(BIN)/snakemake --lint
