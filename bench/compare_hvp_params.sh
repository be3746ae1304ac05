#!/usr/bin/env bash
# The cost of hvp over a model's parameters against one gradient, smallgrad
# and PyTorch side by side.
#
#   bench/compare_hvp_params.sh [--threads N] [--rounds R] [--reps R] [--batch N] [--in N]
#                               [--hidden N] [--build DIR]
#
# Runs build/release/bench/hvp_params and bench/torch_hvp_params.py (with
# /usr/bin/python3, where Debian's python3-torch lives) in alternation, R
# rounds each, with the same model, batch, values and thread count, so that
# a change in machine load hits both alike. Prints each round, then the
# median over rounds of each one's medians: gradient ms, hvp ms, and the
# ratio hvp / gradient (the cost of a Hessian-vector product in gradients;
# each run's is the median of its repetitions' ratios, the two timed back
# to back, so it holds up better than the times on a loaded machine).
set -euo pipefail

usage() {
  cat >&2 <<USAGE
usage: $0 [--threads N] [--rounds R] [--reps R] [--batch N] [--in N] [--hidden N] [--build DIR]
  --threads N  threads for both (default 1)
  --rounds R   alternating rounds (default 5)
  --reps R     timed repetitions inside each run (default 20)
  --batch N    rows of the batch (default 256)
  --in N       input features (default 64)
  --hidden N   width of both hidden layers (default 256)
  --build DIR  smallgrad build folder (default build/release)
USAGE
  exit 2
}

root="$(cd "$(dirname "$0")/.." && pwd)"
. "$root/bench/common.sh"  # median
threads=1 rounds=5 reps=20 batch=256 in=64 hidden=256 build="$root/build/release"
is_count() { [[ "$1" =~ ^[1-9][0-9]*$ ]]; }
while [ $# -gt 0 ]; do
  case "$1" in
    --threads|--rounds|--reps|--batch|--in|--hidden)
      [ $# -ge 2 ] && is_count "$2" || usage
      declare "${1#--}=$2"; shift 2 ;;
    --build) [ $# -ge 2 ] || usage; build="$2"; shift 2 ;;
    -h|--help) usage ;;
    *) echo "$0: unknown argument '$1'" >&2; usage ;;
  esac
done

sg_bin="$build/bench/hvp_params"
torch_py="$root/bench/torch_hvp_params.py"
if [ ! -x "$sg_bin" ]; then
  echo "$0: $sg_bin not found; build first: cmake --preset release && cmake --build build/release --target hvp_params" >&2
  exit 1
fi
if ! /usr/bin/python3 -c 'import torch' 2>/dev/null; then
  echo "$0: PyTorch missing: apt-get install -y --no-install-recommends python3-torch" >&2
  exit 1
fi

common=(--threads "$threads" --reps "$reps" --batch "$batch" --in "$in" --hidden "$hidden")
field() { sed -n "s/.* $1=\([^ ]*\).*/\1/p" <<<"$2"; }

echo "hvp over a model's parameters against one gradient: Linear($in, $hidden) -> tanh -> Linear($hidden, $hidden)"
echo "-> tanh -> Linear($hidden, 1), float32, MSE, batch $batch; $threads thread(s); $rounds alternating rounds of $reps reps"
echo "CPU: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ //'); load at start: $(cut -d' ' -f1-3 /proc/loadavg)"
echo
printf '%-6s %-10s %10s %10s %8s %12s %12s\n' round impl "grad ms" "hvp ms" ratio loss "v.Hv"
sg_g=() sg_h=() sg_r=() t_g=() t_h=() t_r=()
for r in $(seq 1 "$rounds"); do
  for impl in smallgrad torch; do
    if [ "$impl" = smallgrad ]; then line="$("$sg_bin" "${common[@]}" | grep '^RESULT')"
    else line="$(/usr/bin/python3 "$torch_py" "${common[@]}" | grep '^RESULT')"; fi
    g="$(field grad_ms "$line")" h="$(field hvp_ms "$line")" q="$(field ratio "$line")"
    printf '%-6s %-10s %10s %10s %8s %12s %12s\n' "$r" "$impl" "$g" "$h" "$q" "$(field loss "$line")" "$(field vhv "$line")"
    if [ "$impl" = smallgrad ]; then sg_g+=("$g") sg_h+=("$h") sg_r+=("$q"); else t_g+=("$g") t_h+=("$h") t_r+=("$q"); fi
  done
done

med() { printf '%s\n' "$@" | median; }
echo
echo "median over rounds (each round's value is itself a median of $reps reps):"
printf '| %-9s | %10s | %10s | %14s |\n' impl "grad ms" "hvp ms" "hvp / grad"
printf '|%s|%s|%s|%s|\n' ----------- ------------ ------------ ----------------
printf '| %-9s | %10s | %10s | %14s |\n' smallgrad "$(med "${sg_g[@]}")" "$(med "${sg_h[@]}")" "$(med "${sg_r[@]}")"
printf '| %-9s | %10s | %10s | %14s |\n' torch "$(med "${t_g[@]}")" "$(med "${t_h[@]}")" "$(med "${t_r[@]}")"
echo "load at end: $(cut -d' ' -f1-3 /proc/loadavg)"
