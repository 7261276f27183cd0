#!/usr/bin/env bash
# The whole suite several times in a row beside CPU burners (issue 38: no timing flake under load).
#   devtools/test_under_load.sh [RUNS [BURNERS]]   default: 3 runs beside 2 burners
# Each burner is a plain busy loop at normal priority, so on two cores the tests get about half the CPU
# they get on an idle machine. Stops at the first failing run; prints each run's result, wall time and the
# load average sampled every 30 s (the run's own log is in $LOG_DIR, default a fresh temporary directory).
set -euo pipefail
RUNS="${1:-3}"
BURNERS="${2:-2}"
[[ "$RUNS" =~ ^[1-9][0-9]*$ && "$BURNERS" =~ ^[0-9]+$ ]] || { sed -n '2,3p' "$0" | sed 's/^# \{0,1\}//' >&2; exit 2; }
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
LOG_DIR="${LOG_DIR:-$(mktemp -d)}"
pids=()
cleanup() { for pid in "${pids[@]}"; do kill "$pid" 2>/dev/null || true; done; }
trap cleanup EXIT
for _ in $(seq "$BURNERS"); do
    python3 -c 'while True: pass' &
    pids+=($!)
done
( while true; do echo "$(date -u +%H:%M:%S) load $(cut -d' ' -f1-3 /proc/loadavg)"; sleep 30; done ) >"$LOG_DIR/load.txt" &
pids+=($!)
echo "$RUNS run(s) of bin/test beside $BURNERS burner(s); logs in $LOG_DIR"
for run in $(seq "$RUNS"); do
    started=$(date +%s)
    if "$ROOT/bin/test" >"$LOG_DIR/run$run.log" 2>&1; then result=passed; else result=FAILED; fi
    loads=$(awk '{print $3}' "$LOG_DIR/load.txt" | sort -n | sed -n '1p;$p' | paste -sd- -)
    echo "run $run: $result in $(( ($(date +%s) - started) / 60 )) min; load (1 min) $loads; $(grep -E '^[0-9]+ (passed|failed)|[0-9]+ passed' "$LOG_DIR/run$run.log" | tail -1)"
    : >"$LOG_DIR/load.txt"
    [ "$result" = passed ] || exit 1
done
