#!/usr/bin/env bash
# scripts/gpu_run.sh through a time-limited GPU lease: a per-command limit (10 minutes on the machines lent here) and
# a machine that is kept only while commands follow each other (30 s). `start` runs gpu_run.sh in a session of its
# own, so it goes on between commands instead of being killed and resumed at every limit; each call then waits up to
# --max seconds and packs what the run has written so far (docs/GPU.md, docs/gpu/, every results/*/tables and
# figures folder, the benchmark summaries and the run's log) into $OUT/gpu_lease.tgz (.gpu-lease/ without $OUT).
#
#   scripts/gpu_lease.sh start [--max S] [gpu_run.sh options]   # e.g. --wheelhouse wheelhouse --cores 16 --config ...
#   scripts/gpu_lease.sh wait [--max S]                          # call again at once while it says "still running"
#   scripts/gpu_lease.sh stop                                    # end the run (it resumes on the next start)
#
# Exit status of start and wait: 0 the run finished, 3 still running (call wait again), 2 a usage error, otherwise
# the run's own failing status. --max defaults to 540 s, inside a 600 s command limit with time to pack.
set -euo pipefail
REPO="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
STATE="${GPU_LEASE_DIR:-$REPO/.gpu-lease}"
STILL_RUNNING=3

die() { echo "gpu_lease.sh: error: $*" >&2; exit 2; }
detach() {  # run "$@" as the leader of a new session: setsid, or Python's os.setsid where util-linux is missing
  if command -v setsid > /dev/null 2>&1 && [[ -z "${GPU_LEASE_NO_SETSID:-}" ]]; then
    setsid "$@"
  else
    python3 -c 'import os, sys; os.setsid(); os.execvp(sys.argv[1], sys.argv[1:])' "$@"
  fi
}
alive() { [[ -f "$STATE/pid" ]] && kill -0 "$(cat "$STATE/pid")" 2>/dev/null; }

pack() {  # what the run has written so far, in one file that a lease brings back ($OUT)
  local dest="${OUT:-$STATE}/gpu_lease.tgz" items=() p
  mkdir -p "$(dirname "$dest")"
  cd "$REPO"
  [[ -f docs/GPU.md ]] && items+=(docs/GPU.md)
  [[ -d docs/gpu ]] && items+=(docs/gpu)
  if [[ -d results ]]; then
    while IFS= read -r -d '' p; do items+=("$p"); done < <(find results -mindepth 2 -maxdepth 3 -type d \
      \( -name tables -o -name figures \) -print0; find results -path '*/bench/*' -name summary.csv -print0)
  fi
  tar czf "$dest" "${items[@]}" -C "$STATE" gpu_run.log
  echo "gpu_lease.sh: packed $dest ($(du -h "$dest" | cut -f1), ${#items[@]} paths and the log)"
}

wait_run() {
  local max="$1" t0=$SECONDS rc
  [[ -f "$STATE/pid" ]] || die "no run was started here ($STATE): scripts/gpu_lease.sh start [gpu_run.sh options]"
  while alive && (( SECONDS - t0 < max )); do sleep 2; done
  echo "--- the last lines of $STATE/gpu_run.log"
  tail -n 40 "$STATE/gpu_run.log" | cut -c1-300 || true  # Snakemake's shell lines carry the whole config
  echo "---"
  pack
  if alive; then
    local steps
    steps=$(grep -o '[0-9]* of [0-9]* steps ([0-9]*%) done' "$STATE/gpu_run.log" | tail -n 1 || true)
    echo "gpu_lease.sh: still running (pid $(cat "$STATE/pid")${steps:+, $steps}); call 'scripts/gpu_lease.sh wait'" \
      "again now"
    exit "$STILL_RUNNING"
  fi
  rc=$(cat "$STATE/rc" 2>/dev/null || true)
  [[ -n "$rc" ]] || { echo "gpu_lease.sh: the run ended without an exit status (stopped or killed);" \
    "'start' with the same options resumes it" >&2; exit 1; }
  if [[ "$rc" -ne 0 ]]; then echo "gpu_lease.sh: the run failed (exit $rc): see the log above" >&2; exit "$rc"; fi
  echo "gpu_lease.sh: the run finished"
}

max_arg() {  # --max S, when given first
  MAX=540
  if [[ "${1:-}" == --max ]]; then
    [[ "${2:-}" =~ ^[0-9]+$ ]] || die "--max needs a number of seconds"
    MAX="$2"; SHIFT=2
  else
    SHIFT=0
  fi
}

cmd="${1:-}"; [[ $# -gt 0 ]] && shift
case "$cmd" in
  start)
    max_arg "$@"; shift "$SHIFT"
    alive && die "a run is going on (pid $(cat "$STATE/pid")): scripts/gpu_lease.sh wait, or stop"
    mkdir -p "$STATE"; rm -f "$STATE/pid" "$STATE/rc"
    echo "== $(date -u +%FT%TZ) scripts/gpu_run.sh $*" >> "$STATE/gpu_run.log"
    # a session of its own: the lease ends a command's processes when it returns, not those of another session
    PYTHONUNBUFFERED=1 detach bash -c 'state=$1; shift; echo $$ > "$state/pid.new"; mv "$state/pid.new" "$state/pid"
      "$@" >> "$state/gpu_run.log" 2>&1 < /dev/null; echo $? > "$state/rc"' gpu_lease "$STATE" \
      "$REPO/scripts/gpu_run.sh" "$@" > /dev/null 2>&1 < /dev/null &
    for _ in $(seq 100); do [[ -f "$STATE/pid" ]] && break; sleep 0.1; done
    [[ -f "$STATE/pid" ]] || die "the run did not start (see $STATE/gpu_run.log)"
    echo "gpu_lease.sh: started scripts/gpu_run.sh $* (pid $(cat "$STATE/pid"), log $STATE/gpu_run.log)"
    wait_run "$MAX" ;;
  wait)
    max_arg "$@"; shift "$SHIFT"
    [[ $# -eq 0 ]] || die "wait takes only --max S"
    wait_run "$MAX" ;;
  stop)
    alive || die "no run is going on"
    kill -INT -- "-$(cat "$STATE/pid")"  # the whole session: Snakemake ends its jobs and marks them incomplete
    for _ in $(seq 60); do alive || break; sleep 1; done
    alive && kill -TERM -- "-$(cat "$STATE/pid")"
    echo "gpu_lease.sh: stopped; 'start' with the same options resumes" ;;
  -h|--help|"") awk 'NR > 1 && /^#/ {print; next} NR > 1 {exit}' "$0"; [[ -n "$cmd" ]] || exit 2 ;;
  *) die "unknown command '$cmd': start, wait or stop (see --help)" ;;
esac
