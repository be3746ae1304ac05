#!/usr/bin/env bash
# Sets up smallgrad on a Debian bookworm machine: installs the Debian
# packages it needs (only when one is missing), configures and builds.
#   scripts/setup.sh [preset]     preset: release (default), debug, asan, tsan, avx2, sse42, or
#                                 cpu-NAME (the library alone for -march=NAME: CMakePresets.json)
# BEGIN STUDENT ONLY
# In a course tree, with no preset named, it builds the release build's
# library and test program alone (the build preset "tests"), all that
# `ctest --preset release -L aN` needs: the examples and benchmarks are
# built by `scripts/setup.sh release` (or `cmake --build --preset release`).
# END STUDENT ONLY
set -euo pipefail
cd "$(dirname "$0")/.."
preset=${1:-release}
build=$preset
# student only: (($#)) || build=tests

# clang and its runtime (libFuzzer, sanitizers; only recommended by clang,
# so named here) build the fuzzer of scripts/fuzz.sh. chromium and python3
# run the reports' browser test (tests/report_browser.py, headless); OpenMPI
# builds and runs the two-rank training (examples/mpi, docs/distributed.md).
# bible-kjv is train_gpt's default corpus (the King James Bible, as
# `bible Gen1:1-Rev22:21` prints it); festlex-cmu holds pronounce's
# dictionary (the CMU pronouncing dictionary, in Festival's format). ccache
# lets the course kit's grading builds compile a file once per content (its
# cache lives under build/course).
packages=(cmake g++ make libblis-dev libblis4-openmp catch2 libcli11-dev nlohmann-json3-dev
          clang libclang-rt-14-dev chromium python3 libopenmpi-dev openmpi-bin bible-kjv festlex-cmu
          ccache)
missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if ((${#missing[@]})); then
  echo "setup: installing ${missing[*]}"
  sudo=""; [ "$(id -u)" -eq 0 ] || sudo="sudo"
  $sudo apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}"
fi

cmake --preset "$preset" > /dev/null
cmake --build --preset "$build"
