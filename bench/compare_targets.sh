#!/bin/sh
# The tiny training step of the builds for each CPU target, side by side in
# one run (docs/results.md, "CPU targets"): the native build (AVX-512 on the
# project's machine), the avx2 preset and the sse42 preset, one after
# another in each round, each with BLIS on its kernels for that width.
#
#   bench/compare_targets.sh [ROUNDS] [STEPS]
#
# Needs build/release, build/avx2 and build/sse42 (cmake --preset NAME &&
# cmake --build --preset NAME). One thread each. Prints every round's
# ms/step, then the medians and the median over rounds of each narrow
# target's ratio to the native step; run it under `nice -n -15` on a shared
# machine.
set -eu
cd "$(dirname "$0")/.."
. bench/common.sh
rounds=${1:-5}
steps=${2:-200}
case "$rounds,$steps" in
  *[!0-9,]* | 0*,* | *,0*) echo "usage: $0 [ROUNDS] [STEPS] (positive whole numbers; got '$rounds' '$steps')" >&2; exit 2 ;;
esac
for b in release avx2 sse42; do
  [ -x "build/$b/bench/train_step" ] || { echo "compare_targets: build/$b/bench/train_step is missing (cmake --preset $b && cmake --build --preset $b)" >&2; exit 2; }
done
run_ms() {  # BLIS_ARCH_TYPE (or "") and build folder -> the tiny step's wall ms
  if [ -n "$1" ]; then export BLIS_ARCH_TYPE="$1"; else unset BLIS_ARCH_TYPE; fi
  out=$(OMP_NUM_THREADS=1 "build/$2/bench/train_step" --config tiny --threads 1 --steps "$steps") ||
    { echo "compare_targets: build/$2/bench/train_step failed" >&2; exit 1; }
  ms=$(echo "$out" | grep "^tiny " | step_ms)
  [ -n "$ms" ] || { echo "compare_targets: no ms/step in build/$2/bench/train_step's output" >&2; exit 1; }
  echo "$ms"
}
results=$(mktemp)
trap 'rm -f "$results"' EXIT
r=1
while [ "$r" -le "$rounds" ]; do
  native=$(run_ms "" release)
  avx2=$(run_ms 3 avx2)    # BLIS's haswell kernels
  sse42=$(run_ms 5 sse42)  # BLIS's penryn (SSE) kernels
  echo "round $r  native $native ms  avx2 $avx2 ms  sse42 $sse42 ms  load $(cut -d' ' -f1 /proc/loadavg)"
  echo "$native $avx2 $sse42" >> "$results"
  r=$((r + 1))
done
n=$(cut -d' ' -f1 "$results" | median)
a=$(cut -d' ' -f2 "$results" | median)
s=$(cut -d' ' -f3 "$results" | median)
echo "median ms/step: native $n  avx2 $a  sse42 $s"
# Each round's own ratios, then their medians: the speed of a shared core
# drifts between rounds, and a ratio of medians from different rounds
# would mix that drift in (bench/data_parallel.sh reports its speed-ups so too).
ra=$(awk '{printf "%.4f\n", $2 / $1}' "$results" | median)
rs=$(awk '{printf "%.4f\n", $3 / $1}' "$results" | median)
printf 'median of the rounds: avx2 / native %.2fx  sse42 / native %.2fx\n' "$ra" "$rs"
