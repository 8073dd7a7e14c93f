#!/usr/bin/env bash
# One command for the GPU tables: install what is missing (offline, from a wheelhouse made by `make gpu-wheels`),
# check in seconds that decoding is lossless on this GPU (`fastdec selfcheck`), run the GPU config (its benchmark
# tables, or everything), and append a dated row to docs/GPU.md with the tables copied to docs/gpu/. For a machine
# with Python + CUDA torch and no package registry.
#
#   scripts/gpu_run.sh --wheelhouse /path/to/wheelhouse              # config/demo_gpu.yaml, benchmark tables
#   scripts/gpu_run.sh --part all --dtype float16 --cores 16         # the whole report, half precision
#   scripts/gpu_run.sh --config config/demo_gpu.yaml --config config/variants/gpu_lease.yaml   # a time-boxed run
#   scripts/gpu_run.sh --install-only --wheelhouse wheelhouse        # set up and check .venv-gpu; no GPU needed
#   scripts/gpu_run.sh --dry-run                                     # print the plan; no CUDA needed
#
# Options: --wheelhouse DIR (default: ./wheelhouse when it exists), --config FILE (config/demo_gpu.yaml; repeat it
# for overlays, merged as Snakemake merges them), --part bench|all (bench), --dtype float32|float16|bfloat16 (the
# config's), --cores N (all), --python PY (python3: the interpreter with CUDA torch), --venv DIR (.venv-gpu: sees
# PY's packages, also when PY is itself a venv's), --install-only, --dry-run. Anything after `--` goes to snakemake,
# after the targets (`-- --prioritize results/<experiment>/gec/tables/gec_table1.csv`: that table's chain first).
# Killed or timed out, it resumes where it stopped when run again (Snakemake --rerun-incomplete; training resumes
# from its last checkpoint).
set -euo pipefail
REPO="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
WHEELHOUSE=""; CONFIGS=(); PART="bench"; DTYPE=""; CORES="all"; PY="${PYTHON:-python3}"
VENV=".venv-gpu"; DRY=0; INSTALL_ONLY=0; EXTRA=()

die() { echo "gpu_run.sh: error: $*" >&2; exit 2; }
need() { [[ $# -ge 2 && -n "$2" && "$2" != --* ]] || die "$1 needs a value"; }
while [[ $# -gt 0 ]]; do
  case "$1" in
    --wheelhouse) need "$@"; WHEELHOUSE="$2"; shift 2 ;;
    --config) need "$@"; CONFIGS+=("$2"); shift 2 ;;
    --part) need "$@"; PART="$2"; shift 2 ;;
    --dtype) need "$@"; DTYPE="$2"; shift 2 ;;
    --cores) need "$@"; CORES="$2"; shift 2 ;;
    --python) need "$@"; PY="$2"; shift 2 ;;
    --venv) need "$@"; VENV="$2"; shift 2 ;;
    --dry-run) DRY=1; shift ;;
    --install-only) INSTALL_ONLY=1; shift ;;
    -h|--help) awk 'NR > 1 && /^#/ {print; next} NR > 1 {exit}' "$0"; exit 0 ;;
    --) shift; EXTRA=("$@"); break ;;
    *) die "unknown option $1 (see --help)" ;;
  esac
done
cd "$REPO"
[[ "$PART" == bench || "$PART" == all ]] || die "--part must be bench or all, got '$PART'"
[[ -z "$DTYPE" || "$DTYPE" =~ ^(float32|float16|bfloat16)$ ]] || die "--dtype must be float32, float16 or bfloat16, got '$DTYPE'"
[[ "$CORES" == all || "$CORES" =~ ^[1-9][0-9]*$ ]] || die "--cores must be a positive integer or 'all', got '$CORES'"
[[ ${#CONFIGS[@]} -gt 0 ]] || CONFIGS=(config/demo_gpu.yaml)
for c in "${CONFIGS[@]}"; do [[ -f "$c" ]] || die "config file $c not found"; done
RECARGS=(); for c in "${CONFIGS[@]}"; do RECARGS+=(--config "$c"); done
if [[ -z "$WHEELHOUSE" && -d wheelhouse ]]; then WHEELHOUSE=wheelhouse; fi
if [[ -n "$WHEELHOUSE" ]]; then
  [[ -f "$WHEELHOUSE/requirements-gpu.txt" ]] || die "$WHEELHOUSE/requirements-gpu.txt not found: make the wheelhouse with 'make gpu-wheels' on a connected machine and copy the folder"
fi
run() { echo "+ $*"; if [[ $DRY -eq 0 ]]; then "$@"; fi; }

# 1. the interpreter: CUDA torch must be importable (a dry run only plans)
command -v "$PY" >/dev/null || die "python '$PY' not found (--python)"
"$PY" -c "import torch" 2>/dev/null || die "$PY cannot import torch: use --python with the interpreter that has (CUDA) torch"
if [[ $DRY -eq 0 && $INSTALL_ONLY -eq 0 ]]; then
  "$PY" -c "import torch, sys; sys.exit(0 if torch.cuda.is_available() else 1)" 2>/dev/null \
    || die "$PY has no CUDA torch that sees a GPU (torch.cuda.is_available() is False); use --python, or --dry-run"
fi
# 2. a venv that sees the local torch; install only what is missing, from the wheelhouse, no index. A venv made from
# another venv's python sees the base installation, not that venv: a .pth file adds PY's own site-packages (its CUDA
# torch) behind the new venv's.
# (without ensurepip in the base installation the venv gets no pip of its own, and uses PY's through the .pth)
if [[ ! -x "$VENV/bin/python" ]]; then
  run "$PY" -m venv --system-site-packages "$VENV" || run "$PY" -m venv --system-site-packages --without-pip "$VENV"
fi
VPY="$VENV/bin/python"; [[ $DRY -eq 1 && ! -x "$VPY" ]] && VPY="$PY"
if [[ $DRY -eq 0 ]]; then
  VSITE=$("$VPY" -c "import sysconfig; print(sysconfig.get_paths()['purelib'])")
  # addsitedir, not a bare path: the parent's own .pth files (namespace packages, editable installs) count too
  "$PY" -c "import site; print('import site; ' + '; '.join(f'site.addsitedir({p!r})' for p in site.getsitepackages()))" \
    > "$VSITE/_gpu_run_parent_site.pth"
fi
NEEDED="import torch, fairseq, snakemake, fastdec, sacrebleu, sacremoses, subword_nmt, pandas, matplotlib, yaml"
missing() { "$VPY" -c "$NEEDED" >/dev/null 2>&1 && return 1 || return 0; }
if missing || [[ -n "$WHEELHOUSE" ]]; then
  [[ -n "$WHEELHOUSE" ]] || die "packages are missing (fairseq, snakemake, ...) and no --wheelhouse was given: run 'make gpu-wheels' on a connected machine and copy the folder"
  # exactly the listed versions (the listing is a closure: no resolver), sources built against what is here
  PIPI=("$VPY" -m pip install --disable-pip-version-check --no-index --find-links "$WHEELHOUSE" --no-build-isolation
        --no-deps)
  run "${PIPI[@]}" -r <(grep -v '^fairseq-fixed' "$WHEELHOUSE/requirements-gpu.txt")
  FAIRSEQ=$(grep '^fairseq-fixed' "$WHEELHOUSE/requirements-gpu.txt" || true)
  # fairseq's CUDA extensions (NAT edit distance, n-gram blocking) are never used here: without CUDA_HOME its
  # setup.py builds the C++/Cython ones only, minutes less of nvcc
  if [[ -n "$FAIRSEQ" ]]; then run env -u CUDA_HOME MAX_JOBS="$(nproc)" "${PIPI[@]}" "$FAIRSEQ"; fi
  run "${PIPI[@]}" -e .
fi
if [[ $DRY -eq 0 ]]; then
  "$VPY" -c "$NEEDED" || die "$VENV cannot import what the workflow needs (above): a wheelhouse made for another Python or missing a package? ('make gpu-wheels GPU_PY=x.y')"
  "$VPY" -m pip check --disable-pip-version-check || echo "gpu_run.sh: warning: pip check reports the conflicts above; the run goes on" >&2
fi
# 3. lossless on this device, in seconds, before any training (random models, every exact method at batch 1 and
# batched): float64 must be identical to greedy, or the run stops here rather than after the minutes of training;
# float32 (and --dtype's half precision) is reported. Without a GPU (--install-only) it checks the engine on the CPU
# under this torch.
SELFCHECK=("$VPY" -m fastdec selfcheck --device auto)
[[ $INSTALL_ONLY -eq 1 ]] && SELFCHECK+=(--sentences 8)
run "${SELFCHECK[@]}" --dtype float64 || die "fastdec selfcheck: outputs differ from greedy in float64 (above): a defect in the engine on this device; nothing was trained"
if [[ $INSTALL_ONLY -eq 1 ]]; then
  if [[ $DRY -eq 1 ]]; then echo "gpu_run.sh: dry run: $VENV is set up as above"; exit 0; fi
  echo "gpu_run.sh: $VENV is ready ($("$VPY" -c 'import torch, fairseq; print(f"torch {torch.__version__}, fairseq {fairseq.__version__}, CUDA available: {torch.cuda.is_available()}")'))"
  exit 0
fi
for dt in float32 ${DTYPE/float32/}; do
  run "${SELFCHECK[@]}" --dtype "$dt" || echo "gpu_run.sh: warning: in $dt some outputs of the random models differ from greedy (above); the run goes on and reports identical-to-greedy per table" >&2
done
# 4. the run: snakemake on the GPU config; one GPU is the resource every GPU job claims
TARGETS=$("$VPY" -m fastdec gpu-record --targets "${RECARGS[@]}" --part "$PART") || die "config ${CONFIGS[*]} is invalid (above)"
SMK=("$VENV/bin/snakemake"); [[ -x "${SMK[0]}" ]] || SMK=("$VPY" -m snakemake)
CFG=(); [[ -n "$DTYPE" ]] && CFG=(--config "dtype=$DTYPE")
DRYFLAG=(); [[ $DRY -eq 1 ]] && DRYFLAG=(-n)
CMD="scripts/gpu_run.sh ${RECARGS[*]} --part $PART${DTYPE:+ --dtype $DTYPE}"
echo "+ ${SMK[*]} --configfile ${CONFIGS[*]} --cores $CORES --resources gpu=1 ${CFG[*]} ${DRYFLAG[*]} <targets> ${EXTRA[*]}"
# the options after `--` come last: one that takes several values (--prioritize FILE) must not swallow the targets
# shellcheck disable=SC2086
"${SMK[@]}" --configfile "${CONFIGS[@]}" --cores "$CORES" --resources gpu=1 --rerun-incomplete "${CFG[@]}" \
  "${DRYFLAG[@]}" $TARGETS "${EXTRA[@]}"
# 5. the record: a dated row in docs/GPU.md, the tables in docs/gpu/
REC=("$VPY" -m fastdec gpu-record "${RECARGS[@]}" ${DTYPE:+--dtype "$DTYPE"} --command "$CMD")
[[ $DRY -eq 1 ]] && REC+=(--dry-run --device-name "dry run")
"${REC[@]}"
