#!/usr/bin/env bash
# The default thread count against one thread (and against every core, the
# old default), on the default run of train_encoder (task shift, 800 steps),
# with the machine as found (idle, if nothing else runs: the load average is
# printed with the table) and with one competing busy process (`yes`).
# Wall time of the whole program, median of REPEATS runs, one markdown table.
#
#   bench/thread_default.sh [REPEATS] [extra train_encoder flags...]
#   (build first: cmake --build --preset release)
set -euo pipefail
cd "$(dirname "$0")/.."
repeats=${1:-3}
shift || true
exe=build/release/examples/train_encoder
[ -x "$exe" ] || { echo "thread_default.sh: $exe not built (cmake --build --preset release)" >&2; exit 1; }
out=$(mktemp -d)
busy_pid=
cleanup() {
  [ -n "$busy_pid" ] && kill "$busy_pid" 2>/dev/null || true
  rm -rf "$out"
}
trap cleanup EXIT
unset OMP_NUM_THREADS OMP_WAIT_POLICY GOMP_SPINCOUNT

# seconds of one run
run() {
  local start end
  start=$(date +%s.%N)
  "$exe" --out "$out" "$@" > /dev/null 2>&1
  end=$(date +%s.%N)
  awk -v a="$start" -v b="$end" 'BEGIN {printf "%.3f", b - a}' 
}
median() { sort -g | awk '{v[NR] = $1} END {printf "%.2f", NR % 2 ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2}'; }

declare -A result
for condition in idle busy; do
  if [ "$condition" = busy ]; then
    yes > /dev/null &
    busy_pid=$!
    sleep 1
  fi
  for threads in 1 default all; do
    case $threads in
      1) flags=(--threads 1) ;;
      default) flags=() ;;
      all) flags=(--threads "$(nproc)") ;;
    esac
    times=()
    for ((r = 0; r < repeats; r++)); do times+=("$(run "${flags[@]}" "$@")"); done
    result[$condition,$threads]=$(printf '%s\n' "${times[@]}" | median)
    echo "$condition, threads $threads: ${times[*]} -> median ${result[$condition,$threads]} s" >&2
  done
  if [ -n "$busy_pid" ]; then kill "$busy_pid"; wait "$busy_pid" 2>/dev/null || true; busy_pid=; fi
done

echo
echo "| machine | --threads 1 | default (automatic) | --threads $(nproc) (every core) | default / best |"
echo "|---|---|---|---|---|"
for condition in idle busy; do
  one=${result[$condition,1]} def=${result[$condition,default]} all=${result[$condition,all]}
  ratio=$(awk -v o="$one" -v d="$def" -v a="$all" 'BEGIN {printf "%.2f", d / (o < a ? o : a)}')
  label=$([ "$condition" = idle ] && echo "as found (idle if nothing else runs)" || echo "plus one \`yes\`")
  printf '| %s | %s s | %s s | %s s | %s |\n' "$label" "$one" "$def" "$all" "$ratio"
done
echo
echo "($(nproc) cores, median of $repeats runs each, $(date -u +%Y-%m-%d), load average before: $(cut -d' ' -f1-3 /proc/loadavg))"
