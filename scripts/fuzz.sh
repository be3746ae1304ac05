#!/usr/bin/env bash
# Fuzzes the safetensors reader with libFuzzer under AddressSanitizer and
# UndefinedBehaviorSanitizer for a fixed time, starting from the checkpoint
# fixtures. Fails on a crash, a sanitizer report, a leak, an exception other
# than sg::Error, or an input that takes over 10 s.
#   scripts/fuzz.sh [seconds]      default 60
# Needs clang and its runtime (scripts/setup.sh installs clang and
# libclang-rt-14-dev). Everything goes to build/fuzz/: the binary, the
# corpus it grows (kept between runs), fuzz.log, and crash-* inputs.
# To replay a crash: build/fuzz/fuzz_safetensors build/fuzz/crash-<hash>
set -euo pipefail
cd "$(dirname "$0")/.."
seconds=${1:-60}
cxx=${FUZZ_CXX:-clang++}
out=build/fuzz
mkdir -p "$out/corpus"

# Only what the reader needs: the file format (checkpoint/safetensors.cpp) and
# tensors (core/tensor.cpp, its allocator, fill_ in core/kernels/unary.cpp). No BLIS,
# and no -fopenmp: clang's would bring LLVM's OpenMP runtime, and without it
# the few `omp` pragmas in these files are ignored (loops run on one thread).
sources=(tests/fuzz/fuzz_safetensors.cpp checkpoint/safetensors.cpp core/tensor.cpp core/allocator.cpp core/kernels/unary.cpp)
"$cxx" -std=c++20 -g -O1 -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=all \
  -Wno-unknown-pragmas -I. "${sources[@]}" -o "$out/fuzz_safetensors"

# The first directory receives new inputs; tests/fixtures is only read.
log=$out/fuzz.log
if ! "$out/fuzz_safetensors" -max_total_time="$seconds" -timeout=10 -print_final_stats=1 \
    -artifact_prefix="$out/" "$out/corpus" tests/fixtures > "$log" 2>&1; then
  tail -n 60 "$log"
  echo "fuzz: FAILED; full log in $log, the failing input in $out/crash-* (or leak-*, timeout-*)" >&2
  exit 1
fi
execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log")
rate=$(sed -n 's/^stat::average_exec_per_sec: *//p' "$log")
echo "fuzz: parse_safetensors ran $execs inputs in ${seconds} s ($rate per second), no crash, no sanitizer report" \
  "(corpus: $(ls "$out/corpus" | wc -l) files in $out/corpus)"
