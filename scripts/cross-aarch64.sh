#!/usr/bin/env bash
# Builds smallgrad and its tests for aarch64 (ARM64, 128-bit NEON vectors:
# the NEON GEMM tile) with Debian's cross toolchain, then runs the tests on
# this x86 machine under qemu-user. Installs what it needs when missing
# (arm64 multiarch for BLIS and libgomp), as scripts/setup.sh does.
#
#   scripts/cross-aarch64.sh           build, then the CI subset (below)
#   scripts/cross-aarch64.sh --full    build, then the whole suite under ctest
#   scripts/cross-aarch64.sh --build   build only
#
# The subset: every gradcheck, the GEMM tests but the three against naive
# loops over many shapes (each takes minutes under emulation; the NEON
# tile's own test checks every tile height and panel width against a naive
# product), the CPU-target tests and the fixtures checked against PyTorch
# (an encoder's forward, gradients and optimizer steps: one training step). Emulation runs the code ~10-50x slower than native, so
# the whole suite takes much longer (times in docs/results.md, "CPU targets").
# Examples and benchmarks are not built: they are x86 measurements.
set -euo pipefail
cd "$(dirname "$0")/.."
mode=${1:---subset}
case "$mode" in --subset|--full|--build) ;; *) echo "usage: $0 [--subset|--full|--build]" >&2; exit 2;; esac

packages=(cmake g++-aarch64-linux-gnu qemu-user catch2 nlohmann-json3-dev
          libblis-dev:arm64 libblis4-openmp:arm64 libgomp1:arm64)
sudo=""; [ "$(id -u)" -eq 0 ] || sudo="sudo"
if ! dpkg --print-foreign-architectures | grep -qx arm64; then
  echo "cross-aarch64: adding the arm64 architecture (Debian multiarch)"
  $sudo dpkg --add-architecture arm64
  $sudo apt-get update -qq
fi
missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if ((${#missing[@]})); then
  echo "cross-aarch64: installing ${missing[*]}"
  $sudo apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}"
fi

# The subset compiles only its test files (the op files' gradchecks, GEMM,
# the CPU check, the PyTorch fixtures): a third of the suite's compile time.
build=build/aarch64
files=()
if [ "$mode" = --subset ]; then
  build=build/aarch64-subset
  files=("-DSMALLGRAD_TEST_FILES=autograd/ops/|autograd/test_gradcheck|core/kernels/test_gemm|core/test_cpu_target|nn/test_pytorch_fixtures")
fi
launcher=()
command -v ccache > /dev/null && launcher=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache)
cmake -S . -B "$build" -DCMAKE_TOOLCHAIN_FILE="$PWD/scripts/aarch64-linux-gnu.cmake" \
  -DCMAKE_BUILD_TYPE=Release -DSMALLGRAD_NATIVE=OFF -DSMALLGRAD_EXAMPLES=OFF -DSMALLGRAD_BENCH=OFF \
  "${files[@]}" "${launcher[@]}" > /dev/null
cmake --build "$build" -j2

case "$mode" in
  --build) ;;
  --subset)
    # One process, one thread (as ctest gives each test), from the build
    # directory as ctest runs them.
    (cd "$build" && OMP_NUM_THREADS=1 qemu-aarch64 -L /usr/aarch64-linux-gnu \
      -E LD_LIBRARY_PATH=/usr/aarch64-linux-gnu/lib:/usr/lib/aarch64-linux-gnu tests/smallgrad_tests \
      "[gradcheck],[gemm]~*naive*,[cpu],[fixtures]")
    ;;
  --full)
    ctest --test-dir "$build" -j2 --output-on-failure
    ;;
esac
