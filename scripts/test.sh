#!/usr/bin/env bash
# Sets up, builds and runs every test, stage by stage; CI (.ci/run) runs it
# with no arguments, from a fresh clone. Each stage installs what it needs.
#
#   scripts/test.sh              every stage, in the order below
#   scripts/test.sh STAGE...     only these stages (for example: release)
#
# Stages:
#   release   the whole suite, this machine's CPU (examples, README commands, the
#             reports in a headless browser, two MPI ranks)
# BEGIN INSTRUCTOR ONLY
#   course    the course kit's self-check: the reference passes every hidden test,
#             every planted bug is caught, student trees fail exactly their
#             assignments' tests (scripts/course.sh self-check; needs release)
# END INSTRUCTOR ONLY
#   asan      the whole suite under AddressSanitizer, UBSan and LeakSanitizer
#   avx2      the whole suite built for an AVX2 + FMA CPU (-march=x86-64-v3), but
#             the tests of what no vector width changes (the README's commands,
#             the install, the pages in a browser, the documents' tables, the
#             examples' bad invocations: CMakePresets.json's filter), run by release
#   sse42     the same for an SSE4.2 CPU without AVX (-march=x86-64-v2)
#   tsan      the thread-safety tests under ThreadSanitizer
#   fuzz      the checkpoint reader fuzzed for 60 s (scripts/fuzz.sh)
#   aarch64   cross-built for ARM64 (NEON), a subset under qemu-user: every
#             gradcheck, GEMM, the CPU check, the PyTorch fixtures
#             (scripts/cross-aarch64.sh; --full there runs every test)
# Prints each stage's time, and a summary at the end; stops at the first
# failing stage with its status.
set -euo pipefail
cd "$(dirname "$0")/.."

all=(release course asan avx2 sse42 tsan fuzz aarch64)  # instructor only
# student only: all=(release asan avx2 sse42 tsan fuzz aarch64)
stages=("$@")
((${#stages[@]})) || stages=("${all[@]}")
for s in "${stages[@]}"; do
  [[ " ${all[*]} " == *" $s "* ]] || { echo "test.sh: unknown stage '$s' (stages: ${all[*]})" >&2; exit 2; }
done

summary=()
start_all=$SECONDS
for s in "${stages[@]}"; do
  echo "== test.sh: stage $s"
  start=$SECONDS
  status=0
  case $s in
    release | asan | avx2 | sse42 | tsan) scripts/setup.sh "$s" && ctest --preset "$s" || status=$? ;;
    course) scripts/setup.sh release && scripts/course.sh self-check --public-build build/release || status=$? ;;  # instructor only
    fuzz) scripts/fuzz.sh 60 || status=$? ;;
    aarch64) scripts/cross-aarch64.sh || status=$? ;;
  esac
  if ((status)); then
    echo "== test.sh: stage $s FAILED (status $status) after $((SECONDS - start)) s" >&2
    exit "$status"
  fi
  summary+=("$s $((SECONDS - start)) s")
  echo "== test.sh: stage $s passed in $((SECONDS - start)) s"
done
echo "== test.sh: every stage passed in $((SECONDS - start_all)) s: ${summary[*]}"
