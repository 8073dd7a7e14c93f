#!/usr/bin/env bash
# One command for the GPU tables: install what is missing (offline, from a wheelhouse made by `make gpu-wheels`),
# run the GPU config (its benchmark tables, or everything), and append a dated row to docs/GPU.md with the tables
# copied to docs/gpu/. For a machine with Python + CUDA torch and no package registry.
#
#   scripts/gpu_run.sh --wheelhouse /path/to/wheelhouse              # config/demo_gpu.yaml, benchmark tables
#   scripts/gpu_run.sh --part all --dtype float16 --cores 16         # the whole report, half precision
#   scripts/gpu_run.sh --dry-run                                     # print the plan; no CUDA needed
#
# Options: --wheelhouse DIR (default: ./wheelhouse when it exists), --config FILE (config/demo_gpu.yaml),
# --part bench|all (bench), --dtype float32|float16|bfloat16 (the config's), --cores N (all), --python PY
# (python3: the interpreter with CUDA torch), --venv DIR (.venv-gpu; made with --system-site-packages so the
# local torch is used), --dry-run. Anything after `--` goes to snakemake.
set -euo pipefail
REPO="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
WHEELHOUSE=""; CONFIG="config/demo_gpu.yaml"; PART="bench"; DTYPE=""; CORES="all"; PY="${PYTHON:-python3}"
VENV=".venv-gpu"; DRY=0; EXTRA=()

die() { echo "gpu_run.sh: error: $*" >&2; exit 2; }
need() { [[ $# -ge 2 && -n "$2" && "$2" != --* ]] || die "$1 needs a value"; }
while [[ $# -gt 0 ]]; do
  case "$1" in
    --wheelhouse) need "$@"; WHEELHOUSE="$2"; shift 2 ;;
    --config) need "$@"; CONFIG="$2"; shift 2 ;;
    --part) need "$@"; PART="$2"; shift 2 ;;
    --dtype) need "$@"; DTYPE="$2"; shift 2 ;;
    --cores) need "$@"; CORES="$2"; shift 2 ;;
    --python) need "$@"; PY="$2"; shift 2 ;;
    --venv) need "$@"; VENV="$2"; shift 2 ;;
    --dry-run) DRY=1; shift ;;
    -h|--help) sed -n '2,15p' "$0"; exit 0 ;;
    --) shift; EXTRA=("$@"); break ;;
    *) die "unknown option $1 (see --help)" ;;
  esac
done
cd "$REPO"
[[ "$PART" == bench || "$PART" == all ]] || die "--part must be bench or all, got '$PART'"
[[ -z "$DTYPE" || "$DTYPE" =~ ^(float32|float16|bfloat16)$ ]] || die "--dtype must be float32, float16 or bfloat16, got '$DTYPE'"
[[ "$CORES" == all || "$CORES" =~ ^[1-9][0-9]*$ ]] || die "--cores must be a positive integer or 'all', got '$CORES'"
[[ -f "$CONFIG" ]] || die "config file $CONFIG not found"
if [[ -z "$WHEELHOUSE" && -d wheelhouse ]]; then WHEELHOUSE=wheelhouse; fi
if [[ -n "$WHEELHOUSE" ]]; then
  [[ -f "$WHEELHOUSE/requirements-gpu.txt" ]] || die "$WHEELHOUSE/requirements-gpu.txt not found: make the wheelhouse with 'make gpu-wheels' on a connected machine and copy the folder"
fi
run() { echo "+ $*"; if [[ $DRY -eq 0 ]]; then "$@"; fi; }

# 1. the interpreter: CUDA torch must be importable (a dry run only plans)
command -v "$PY" >/dev/null || die "python '$PY' not found (--python)"
if [[ $DRY -eq 0 ]]; then
  "$PY" -c "import torch, sys; sys.exit(0 if torch.cuda.is_available() else 1)" 2>/dev/null \
    || die "$PY has no CUDA torch that sees a GPU (torch.cuda.is_available() is False); use --python, or --dry-run"
fi
# 2. a venv that sees the local torch; install only what is missing, from the wheelhouse, no index
if [[ ! -x "$VENV/bin/python" ]]; then run "$PY" -m venv --system-site-packages "$VENV"; fi
VPY="$VENV/bin/python"; [[ $DRY -eq 1 && ! -x "$VPY" ]] && VPY="$PY"
missing() { "$VPY" -c "import fairseq, snakemake, fastdec, sacrebleu, pandas, matplotlib" >/dev/null 2>&1 && return 1 || return 0; }
if missing || [[ -n "$WHEELHOUSE" ]]; then
  [[ -n "$WHEELHOUSE" ]] || die "packages are missing (fairseq, snakemake, ...) and no --wheelhouse was given: run 'make gpu-wheels' on a connected machine and copy the folder"
  PIPI=("$VPY" -m pip install --disable-pip-version-check --no-index --find-links "$WHEELHOUSE")
  run "${PIPI[@]}" -r <(grep -v '^fairseq-fixed' "$WHEELHOUSE/requirements-gpu.txt")
  run "${PIPI[@]}" --no-build-isolation --no-deps "$(grep '^fairseq-fixed' "$WHEELHOUSE/requirements-gpu.txt")"
  run "${PIPI[@]}" --no-build-isolation --no-deps -e .
fi
# 3. the run: snakemake on the GPU config; one GPU is the resource every GPU job claims
TARGETS=$("$VPY" scripts/gpu_record.py targets --config "$CONFIG" --part "$PART") || die "config $CONFIG is invalid (above)"
SMK=("$VENV/bin/snakemake"); [[ -x "${SMK[0]}" ]] || SMK=("$VPY" -m snakemake)
CFG=(); [[ -n "$DTYPE" ]] && CFG=(--config "dtype=$DTYPE")
DRYFLAG=(); [[ $DRY -eq 1 ]] && DRYFLAG=(-n)
CMD="scripts/gpu_run.sh --config $CONFIG --part $PART${DTYPE:+ --dtype $DTYPE}"
echo "+ ${SMK[*]} --configfile $CONFIG --cores $CORES --resources gpu=1 ${CFG[*]} ${DRYFLAG[*]} ${EXTRA[*]} <targets>"
# shellcheck disable=SC2086
"${SMK[@]}" --configfile "$CONFIG" --cores "$CORES" --resources gpu=1 --rerun-incomplete "${CFG[@]}" \
  "${DRYFLAG[@]}" "${EXTRA[@]}" $TARGETS
# 4. the record: a dated row in docs/GPU.md, the tables in docs/gpu/
RECCFG="$CONFIG"
if [[ -n "$DTYPE" ]]; then RECCFG="$(mktemp --suffix=.yaml)"; "$VPY" -c "import sys, yaml; c = yaml.safe_load(open(sys.argv[1])); c['dtype'] = sys.argv[2]; yaml.safe_dump(c, open(sys.argv[3], 'w'))" "$CONFIG" "$DTYPE" "$RECCFG"; fi
REC=("$VPY" scripts/gpu_record.py record --config "$RECCFG" --command "$CMD"); [[ $DRY -eq 1 ]] && REC+=(--dry-run --device-name "dry run")
"${REC[@]}"
