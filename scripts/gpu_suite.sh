#!/usr/bin/env bash
# Every GPU figure from a pack, inside a time limit, on a machine with Python 3 and CUDA torch and nothing else:
#
#   bash scripts/gpu_suite.sh PACK OUT [fastdec gpu-suite options, e.g. --budget-s 400 --only selfcheck,gec]
#
# PACK is what `fastdec gpu-pack results/<experiment> --out PACK` wrote on the machine that ran the workflow (models,
# dictionaries, inputs and the Python packages the GPU machine lacks, under PACK/site); OUT receives summary.csv,
# selfcheck.csv, pass_cost.csv, meta.json, runs.tgz and log.txt, each written as soon as its section is done.
# PYTHON picks the interpreter (default python3). Nothing is installed: the pack is unpacked into
# FASTDEC_GPU_WORK (default /tmp/fastdec-gpu-pack) and its packages put on the path. docs/GPU.md says how the output
# becomes a dated row and tables.
set -uo pipefail
if [ $# -lt 2 ] || [ "$1" = "-h" ] || [ "$1" = "--help" ]; then
    sed -n '2,10p' "$0" | sed 's/^# \{0,1\}//'
    exit 2
fi
PACK=$1 OUT=$2
shift 2
if [ ! -f "$PACK/manifest.json" ]; then
    echo "error: $PACK/manifest.json is missing; make the pack with: fastdec gpu-pack results/<experiment> --out $PACK" >&2
    exit 2
fi
mkdir -p "$OUT"
REPO=$(cd "$(dirname "$0")/.." && pwd)
PACK=$(cd "$PACK" && pwd)
OUT=$(cd "$OUT" && pwd)
WORK=${FASTDEC_GPU_WORK:-${TMPDIR:-/tmp}/fastdec-gpu-pack}
PY=${PYTHON:-python3}
cd "$REPO"
export PYTHONUNBUFFERED=1 TORCH_FORCE_NO_WEIGHTS_ONLY_LOAD=1
{
    start=$(date +%s)
    # the install: the pack's packages and weights unpacked (numpy and the standard library only)
    PYTHONPATH="$REPO" "$PY" -m fastdec.bench.pack_files "$PACK" "$WORK" || exit 2
    echo "install: $(( $(date +%s) - start )) s"
    PYTHONPATH="$REPO:$WORK/site${PYTHONPATH:+:$PYTHONPATH}" "$PY" -m fastdec gpu-suite "$WORK" "$OUT" "$@"
} 2>&1 | tee "$OUT/log.txt"
exit "${PIPESTATUS[0]}"
