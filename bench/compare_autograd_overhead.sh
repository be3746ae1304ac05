#!/usr/bin/env bash
# Autograd overhead, smallgrad against PyTorch, side by side.
#
#   bench/compare_autograd_overhead.sh [--threads N] [--rounds R] [--reps R] [--ops N]
#                                      [--build DIR] [--openblas DIR]
#
# Runs build/release/bench/autograd_overhead and bench/torch_autograd_overhead.py
# (with /usr/bin/python3, where Debian's python3-torch lives) in alternation,
# R rounds each, with the same thread count, chain and repetitions, so that a
# change in machine load hits both alike. Prints each round, then the median
# over rounds of each benchmark's median, and the ratio.
#
# PyTorch's BLAS: by default it uses whatever libblas.so.3 points to (BLIS
# here). --openblas DIR runs it over the OpenBLAS in DIR instead (see
# docs toolchain notes: LD_LIBRARY_PATH=DIR, OPENBLAS_NUM_THREADS=1,
# OPENBLAS_CORETYPE unset). A chain of 64-element elementwise ops calls no
# BLAS, so the choice barely matters here; the script says which it used.
set -euo pipefail

usage() {
  cat >&2 <<EOF
usage: $0 [--threads N] [--rounds R] [--reps R] [--ops N] [--build DIR] [--openblas DIR]
  --threads N    threads for both (default 1)
  --rounds R     alternating rounds (default 5)
  --reps R       timed repetitions inside each run (default 200)
  --ops N        ops in the chain (default 1000)
  --build DIR    smallgrad build folder (default build/release)
  --openblas DIR run PyTorch over the OpenBLAS libraries in DIR
EOF
  exit 2
}

root="$(cd "$(dirname "$0")/.." && pwd)"
. "$root/bench/common.sh"  # median
threads=1 rounds=5 reps=200 ops=1000 build="$root/build/release" openblas=""
is_count() { [[ "$1" =~ ^[1-9][0-9]*$ ]]; }
while [ $# -gt 0 ]; do
  case "$1" in
    --threads|--rounds|--reps|--ops)
      [ $# -ge 2 ] && is_count "$2" || usage
      declare "${1#--}=$2"; shift 2 ;;
    --build) [ $# -ge 2 ] || usage; build="$2"; shift 2 ;;
    --openblas) [ $# -ge 2 ] && [ -d "$2" ] || usage; openblas="$(cd "$2" && pwd)"; shift 2 ;;
    -h|--help) usage ;;
    *) echo "$0: unknown argument '$1'" >&2; usage ;;
  esac
done

sg_bin="$build/bench/autograd_overhead"
torch_py="$root/bench/torch_autograd_overhead.py"
if [ ! -x "$sg_bin" ]; then
  echo "$0: $sg_bin not found; build first: cmake --preset release && cmake --build build/release" >&2
  exit 1
fi
if ! /usr/bin/python3 -c 'import torch' 2>/dev/null; then
  echo "$0: PyTorch missing: apt-get install -y --no-install-recommends python3-torch" >&2
  exit 1
fi

common=(--threads "$threads" --ops "$ops" --reps "$reps")
run_sg() { "$sg_bin" "${common[@]}"; }
if [ -n "$openblas" ]; then
  blas_note="OpenBLAS from $openblas (OPENBLAS_NUM_THREADS=1, OPENBLAS_CORETYPE unset)"
  run_torch() {
    env -u OPENBLAS_CORETYPE LD_LIBRARY_PATH="$openblas" OPENBLAS_NUM_THREADS=1 \
      /usr/bin/python3 "$torch_py" "${common[@]}"
  }
else
  blas_note="the system libblas.so.3 ($(readlink -f /usr/lib/x86_64-linux-gnu/libblas.so.3 2>/dev/null || echo unknown))"
  run_torch() { /usr/bin/python3 "$torch_py" "${common[@]}"; }
fi

field() { sed -n "s/.* $1=\([^ ]*\).*/\1/p" <<<"$2"; }

echo "autograd overhead: ${ops}-op chain (mul, add, tanh, scalar mul) on 64-element float32 tensors,"
echo "forward + backward; ${threads} thread(s); ${rounds} alternating rounds of ${reps} reps each"
echo "PyTorch over $blas_note; load at start: $(cut -d' ' -f1-3 /proc/loadavg)"
echo
printf '%-6s %-10s %12s %12s %12s %12s\n' round impl "fwd us" "bwd us" "total us" "us/op"
sg_total=() torch_total=() sg_fwd=() sg_bwd=() torch_fwd=() torch_bwd=()
for r in $(seq 1 "$rounds"); do
  for impl in smallgrad torch; do
    if [ "$impl" = smallgrad ]; then line="$(run_sg | grep '^RESULT')"; else line="$(run_torch | grep '^RESULT')"; fi
    f="$(field fwd_us "$line")" b="$(field bwd_us "$line")" t="$(field total_us "$line")"
    printf '%-6s %-10s %12s %12s %12s %12s\n' "$r" "$impl" "$f" "$b" "$t" "$(field us_per_op "$line")"
    if [ "$impl" = smallgrad ]; then
      sg_total+=("$t") sg_fwd+=("$f") sg_bwd+=("$b"); sg_check="$(field loss "$line") $(field grad_w "$line")"
    else
      torch_total+=("$t") torch_fwd+=("$f") torch_bwd+=("$b"); torch_check="$(field loss "$line") $(field grad_w "$line")"
    fi
  done
done

med() { printf '%s\n' "$@" | median; }
st="$(med "${sg_total[@]}")" tt="$(med "${torch_total[@]}")"
echo
echo "median over rounds (each round's value is itself a median of ${reps} reps):"
printf '| %-9s | %10s | %10s | %10s | %10s | %10s |\n' impl "fwd us" "bwd us" "total us" "chains/s" "us per op"
printf '|%s|%s|%s|%s|%s|%s|\n' ----------- ------------ ------------ ------------ ------------ ------------
for impl in smallgrad torch; do
  if [ "$impl" = smallgrad ]; then f="$(med "${sg_fwd[@]}")" b="$(med "${sg_bwd[@]}")" t="$st"
  else f="$(med "${torch_fwd[@]}")" b="$(med "${torch_bwd[@]}")" t="$tt"; fi
  awk -v i="$impl" -v f="$f" -v b="$b" -v t="$t" -v n="$ops" \
    'BEGIN { printf "| %-9s | %10.1f | %10.1f | %10.1f | %10.1f | %10.3f |\n", i, f, b, t, 1e6 / t, t / n }'
done
awk -v s="$st" -v t="$tt" 'BEGIN { printf "ratio PyTorch / smallgrad time: %.2f (above 1: smallgrad is faster)\n", t / s }'
echo "checksums (loss, sum of w.grad): smallgrad $sg_check, PyTorch $torch_check"
echo "load at end: $(cut -d' ' -f1-3 /proc/loadavg)"
