#!/bin/bash
# Per-call time of a small streaming model (e.g. a voice-activity detector)
# on rlx's CPU and GPU sessions and on onnxruntime (CPU, one thread), each
# the median of `rlx run --iters N` or bench/ort_time.py, REPS rounds
# alternating the rlx builds given (before / after in one run).
#
#   bench/per_call.sh MODEL.onnx "NAME=FILE.npy ..." [RLX_BINARY ...]
#
# Environment: REPS (default 3), ITERS (default 200), RLX_NUM_THREADS
# (default 1, as onnxruntime's --threads 1). Prints one line per run.
set -u
MODEL=$1
FEEDS=$2
shift 2
BINS=("$@")
[ ${#BINS[@]} -eq 0 ] && BINS=(build/rlx)
ROOT=$(cd "$(dirname "$0")/.." && pwd)
PY=${PY:-$ROOT/.venv/bin/python}
export RLX_NUM_THREADS=${RLX_NUM_THREADS:-1}
RLX_IN=()
for f in $FEEDS; do RLX_IN+=(--input "$f"); done
echo "# $MODEL, $(date -u +%F' '%H:%M) UTC, load $(cut -d' ' -f1-3 /proc/loadavg), threads $RLX_NUM_THREADS"
for rep in $(seq "${REPS:-3}"); do
    for b in "${BINS[@]}"; do
        for d in cpu gpu; do
            echo "$rep $b $d: $("$b" run "$MODEL" "${RLX_IN[@]}" --device $d --iters "${ITERS:-200}" --quiet 2>&1 |
                grep -o 'median [0-9.]* ms')"
        done
    done
    echo "$rep onnxruntime: $("$PY" "$ROOT/bench/ort_time.py" "$MODEL" $FEEDS --iters "${ITERS:-200}" --threads 1 |
        "$PY" -c 'import json,sys; print("median %.3f ms" % json.load(sys.stdin)["median_ms"])')"
done
