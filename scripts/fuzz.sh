#!/usr/bin/env bash
# Builds the libFuzzer harnesses of tests/fuzz/ (clang, ASan + UBSan) and runs
# each for a while (docs/ROBUSTNESS.md "Fuzzing").
#
#   scripts/fuzz.sh                      every harness for 60 s (the CI run)
#   scripts/fuzz.sh -t 3600 -j 4 onnx    the ONNX harness for an hour, 4 processes
#   scripts/fuzz.sh --build-only
#
# Options:
#   -t SECONDS   time per harness (default 60)
#   -s SEED      libFuzzer's random seed (default: a new one per run); with a
#                fixed seed the same build mutates the same inputs in the
#                same order, so a finding repeats (make fuzz-short: seed 1)
#   -j N         libFuzzer's fork mode with N processes per harness: keeps
#                going after a finding (default: one process, which stops
#                at the first finding)
#   --build-only build the harnesses and the seeds, run nothing
#   harness...   onnx, npy, tensor_pb (default: all)
# Environment:
#   FUZZ_DIR     where the build, the seeds, the grown corpora and the findings
#                go (default build-fuzz/); a long run keeps its corpus there
#   CC           the clang to use (default clang)
#   FUZZ_ARGS    more libFuzzer flags
#
# A finding (crash, sanitizer report, RLX_ERR_INTERNAL, leak, timeout over
# 20 s, more than 2.5 GB) is written to $FUZZ_DIR/findings/<harness>/ and
# makes the script exit 1; reproduce it with
#   $FUZZ_DIR/fuzz_<harness> FILE
# then turn it into a regression input (tests/fuzz/regress/<harness>/) and
# a fix. Exit 0: no finding. The last line per harness gives the executions.
set -euo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
T=60
J=0
SEED=
BUILD_ONLY=0
HARNESSES=()
while [ $# -gt 0 ]; do
  case "$1" in
    -t) T=$2; shift 2 ;;
    -j) J=$2; shift 2 ;;
    -s) SEED=$2; shift 2 ;;
    --build-only) BUILD_ONLY=1; shift ;;
    -h|--help) sed -n '2,30p' "$0"; exit 0 ;;
    onnx|npy|tensor_pb) HARNESSES+=("$1"); shift ;;
    *) echo "fuzz.sh: unknown argument '$1' (try --help)" >&2; exit 2 ;;
  esac
done
[ ${#HARNESSES[@]} -gt 0 ] || HARNESSES=(onnx npy tensor_pb)
DIR=${FUZZ_DIR:-$ROOT/build-fuzz}
CC=${CC:-clang}
command -v "$CC" >/dev/null || { echo "fuzz.sh: $CC not found (apt-get install clang)" >&2; exit 2; }

# the library without the WebGPU backend: the harnesses run on the CPU
CC=$CC cmake -S "$ROOT" -B "$DIR" -DRLX_FUZZ=ON -DRLX_WEBGPU=OFF -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
cmake --build "$DIR" -j"$(nproc 2>/dev/null || echo 2)" --target "${HARNESSES[@]/#/fuzz_}" >/dev/null
python3 "$ROOT/scripts/fuzz_seeds.py" "$DIR/seeds" >&2
[ "$BUILD_ONLY" = 1 ] && exit 0

found=0
for h in "${HARNESSES[@]}"; do
  mkdir -p "$DIR/corpus/$h" "$DIR/findings/$h"
  mkdir -p "$DIR/logs"
  log="$DIR/logs/fuzz_$h-$(date +%Y%m%d-%H%M%S).log"
  extra=()
  [ "$J" -gt 0 ] && extra=(-fork="$J" -ignore_crashes=1 -ignore_timeouts=1 -ignore_ooms=1)
  [ -n "$SEED" ] && extra+=(-seed="$SEED")
  echo "fuzz.sh: $h for ${T}s (log: $log)" >&2
  # -timeout 20: a bounded run of a small model never needs that long;
  # -rss_limit_mb 2560: the sanitizer allocator refuses single allocations
  # over 256 MiB (src/base/sanitize.c), so more than this is a leak or a
  # runaway loop; -max_len 65536: the seeds are up to 32 KiB
  set +e
  # shellcheck disable=SC2086
  "$DIR/tests/fuzz/fuzz_$h" "$DIR/corpus/$h" "$DIR/seeds/$h" -max_total_time="$T" -timeout=20 \
      -rss_limit_mb=2560 -max_len=65536 -print_final_stats=1 -artifact_prefix="$DIR/findings/$h/" \
      "${extra[@]}" ${FUZZ_ARGS:-} >"$log" 2>&1
  rc=$?
  set -e
  execs=$(grep -E "^#[0-9]+" "$log" | tail -1 || true)
  n_find=$(find "$DIR/findings/$h" -type f | wc -l)
  echo "fuzz.sh: $h: exit $rc, findings $n_find; $execs" >&2
  if [ "$rc" != 0 ] || [ "$n_find" != 0 ]; then
    found=1
    tail -40 "$log" >&2
  fi
done
exit $found
