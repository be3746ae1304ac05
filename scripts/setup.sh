#!/usr/bin/env bash
# Sets up smallgrad on a Debian bookworm machine: installs the Debian
# packages it needs (only when one is missing), configures and builds.
#   scripts/setup.sh [preset]     preset: release (default), debug, asan, tsan, avx2 or sse42
set -euo pipefail
cd "$(dirname "$0")/.."
preset=${1:-release}

# clang and its runtime (libFuzzer, sanitizers; only recommended by clang,
# so named here) build the fuzzer of scripts/fuzz.sh. chromium and python3
# run the reports' browser test (tests/report_browser.py, headless); OpenMPI
# builds and runs the two-rank training (examples/mpi, docs/distributed.md).
# bible-kjv is train_gpt's default corpus (the King James Bible, as
# `bible Gen1:1-Rev22:21` prints it); festlex-cmu holds pronounce's
# dictionary (the CMU pronouncing dictionary, in Festival's format).
packages=(cmake g++ make libblis-dev libblis4-openmp catch2 libcli11-dev nlohmann-json3-dev
          clang libclang-rt-14-dev chromium python3 libopenmpi-dev openmpi-bin bible-kjv festlex-cmu)
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
cmake --build --preset "$preset"
