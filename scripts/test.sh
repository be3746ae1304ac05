#!/usr/bin/env bash
# Sets up, builds and runs every test, stage by stage; CI (.ci/run) runs it
# with no arguments, from a fresh clone. Each stage installs what it needs.
#
#   scripts/test.sh              every stage, in the order below
#   scripts/test.sh STAGE...     only these stages (for example: release)
#
# Stages:
#   release   the whole suite, this machine's CPU (-march=native: examples,
#             README commands, the reports in a headless browser, two MPI ranks)
# BEGIN INSTRUCTOR ONLY
#   course    the course kit's self-check: the reference passes every hidden test,
#             every planted bug is caught, student trees fail exactly their
#             assignments' tests (scripts/course.sh self-check; needs release)
# END INSTRUCTOR ONLY
#   asan      the whole suite under AddressSanitizer, UBSan and LeakSanitizer
#   avx2      the CPUs with AVX2 + FMA students own: the library built for
#             -march=haswell (Intel) and for -march=znver3 (AMD Zen 3), each
#             with its own tuning and BLIS on its kernels for that CPU
#   avx512    the library built for -march=skylake-avx512 (Intel's AVX-512)
#   sse42     the library built for -march=x86-64-v2 (SSE4.2, no AVX)
#   tsan      the thread-safety tests under ThreadSanitizer
#   fuzz      the checkpoint reader fuzzed for 60 s (scripts/fuzz.sh)
#   aarch64   cross-built for ARM64 (NEON), a subset under qemu-user: every
#             gradcheck, GEMM, the CPU check, the PyTorch fixtures
#             (scripts/cross-aarch64.sh; --full there runs every test)
# Prints each stage's time, and a summary at the end; stops at the first
# failing stage with its status.
#
# The CPU stages (avx2, avx512, sse42) build only the library and the
# study's library for their -march (the cpu-* presets, about half a build)
# and run the release build's tests against it (ctest --preset cpu-NAME:
# LD_LIBRARY_PATH comes before the programs' RUNPATH, and the test "the
# library names the CPU target it was compiled for" fails if the library
# found is another). No coverage is lost by not compiling the tests and
# examples again: they are built for plain x86-64 in every build and hold
# no kernel; every float operation the target changes runs in the library.
# They leave out the tests that no vector width changes (the README's
# commands, the install, the pages in a browser, the documents' tables, the
# examples' bad invocations: CMakePresets.json's filter), which release runs.
# The asan stage leaves out readme_commands, which runs the README's
# commands: the same programs the examples' tests run under ASan, its own
# one the C++ snippet, which install_and_consume's consumer covers; under
# ASan it ran past its 900 s limit on 2 loaded cores (release runs it).
# It leaves out the four tests whose point is that the shift
# task is learned in 200 to 800 steps (or not, without positions): under
# ASan they took 859 of the stage's 2,104 test-seconds, and what ASan and
# UBSan check, the memory and behaviour of that training code, runs in
# example_train_encoder and example_compare (every kind of positions) under
# ASan too; whether the task is learned is checked by release and the CPU
# stages. The studies' example tests train 10 steps a run there, not 40
# (tests/CMakeLists.txt), and the data-parallel curve 20 steps, not 60.
# A target this CPU cannot run is skipped with a line saying so (an AVX-512
# target on an AVX2 machine: nothing here emulates AVX-512), and so is one
# the release stage already ran (-march=native is -march=znver3 on a Zen 3).
set -euo pipefail
cd "$(dirname "$0")/.."

all=(release course asan avx2 avx512 sse42 tsan fuzz aarch64)  # instructor only
# student only: all=(release asan avx2 avx512 sse42 tsan fuzz aarch64)
stages=("$@")
((${#stages[@]})) || stages=("${all[@]}")
for s in "${stages[@]}"; do
  [[ " ${all[*]} " == *" $s "* ]] || { echo "test.sh: unknown stage '$s' (stages: ${all[*]})" >&2; exit 2; }
done

# The -march=... -mtune=... the compiler makes of its flags (as CMakeLists.txt asks it).
resolved() { g++ "$@" -Q --help=target 2>/dev/null | awk '$1 ~ /^-m(arch|tune)=$/ {printf "%s%s ", $1, $2}'; }

# One CPU target: the library for -march=$1 and the release build's tests
# against it; skipped when this CPU lacks an extension it uses, or when it
# is what -march=native already is here.
cpu_stage() {
  local march=$1 missing=() f
  for f in $(g++ -march="$march" -Q --help=target 2>/dev/null |
             awk '$2 == "[enabled]" && $1 ~ /^-m(sse4\.2|avx|avx2|fma|bmi2|avx512(f|bw|dq|vl|cd))$/ {sub(/^-m/, "", $1); print $1}'); do
    grep -qw "${f/./_}" /proc/cpuinfo || missing+=("$f")
  done
  if ((${#missing[@]})); then
    echo "== test.sh: -march=$march skipped: this CPU lacks ${missing[*]} (a machine that has them runs it)"
    return 0
  fi
  if [[ "$(resolved -march="$march")" == "$(resolved -march=native)" ]]; then
    echo "== test.sh: -march=$march skipped: it is this CPU's own target, which the release stage ran"
    return 0
  fi
  echo "== test.sh: -march=$march: the library, then the release build's tests against it"
  scripts/setup.sh release && scripts/setup.sh "cpu-$march" && ctest --preset "cpu-$march"
}

summary=()
start_all=$SECONDS
for s in "${stages[@]}"; do
  echo "== test.sh: stage $s"
  start=$SECONDS
  status=0
  case $s in
    release | asan | tsan) scripts/setup.sh "$s" && ctest --preset "$s" || status=$? ;;
    course) scripts/setup.sh release && scripts/course.sh self-check --public-build build/release || status=$? ;;  # instructor only
    avx2) { cpu_stage haswell && cpu_stage znver3; } || status=$? ;;
    avx512) cpu_stage skylake-avx512 || status=$? ;;
    sse42) cpu_stage x86-64-v2 || status=$? ;;
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
