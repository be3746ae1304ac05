#!/bin/sh
# Data-parallel steps against one thread, side by side in one run
# (docs/results.md, "Data-parallel steps"):
#
#   bench/data_parallel.sh [BUILD_DIR] [ROUNDS]
#
# Each round runs, one after another: bench/train_step for tiny, medium and
# large on 1 thread, on 2 threads data-parallel (the default) and on 2
# threads with each op's loops threaded (--parallel ops, the step before
# data parallelism), then the machine's ceiling for that step: two
# one-thread runs at once as separate processes; then a short
# `train_encoder --compare` (2 tasks x 5 encodings and the causal study's
# 3 tasks x 6, 200 steps, 1 seed) on 1 core and side by side on 2
# (--threads 1, 2), timed, and checks that both wrote the same table but for the seconds;
# then the machine's ceiling: the 1-core comparison twice at once, as two
# separate processes.
# Prints every run, the medians over rounds (wall time, and the process's
# CPU time per step over all its threads) and the median of the rounds'
# speed-ups, with the load average.
set -eu
. "$(dirname "$0")/common.sh"  # median, step_ms
build=${1:-build/release}
rounds=${2:-3}
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
steps() { case $1 in tiny) echo 60;; medium) echo 20;; large) echo 6;; esac; }
for r in $(seq "$rounds"); do
  echo "round $r, load average $(cut -d' ' -f1-3 /proc/loadavg)"
  for c in tiny medium large; do
    for mode in "1 data" "2 data" "2 ops"; do
      set -- $mode
      line=$("$build/bench/train_step" --config "$c" --threads "$1" --parallel "$2" --steps "$(steps "$c")" --warmup 3 --dropout 0.1 | grep "^$c ")
      echo "  $line"
      echo "$c $1 $2 $(echo "$line" | step_ms) $(echo "$line" | sed 's/.*CPU \([0-9.]*\) ms\/step.*/\1/')" >> "$out/steps"
    done
    # The ceiling: two one-thread steps at once, as separate processes.
    for p in a b; do
      "$build/bench/train_step" --config "$c" --threads 1 --steps "$(steps "$c")" --warmup 3 --dropout 0.1 > "$out/pair$p" &
    done
    wait
    pa=$(grep "^$c " "$out/paira" | step_ms)
    pb=$(grep "^$c " "$out/pairb" | step_ms)
    echo "  $c    two one-thread processes at once: $pa and $pb ms/step"
    echo "$c $pa $pb" >> "$out/pairs"
  done
  for t in 1 2; do
    start=$(date +%s.%N)
    "$build/examples/train_encoder" --compare --tasks shift,count --seeds 1 --steps 200 --eval-every 50 \
      --threads "$t" --out "$out/t$t" > "$out/log$t" 2>&1
    end=$(date +%s.%N)
    s=$(echo "$end - $start" | bc)
    echo "  compare --threads $t: $s s"
    echo "$t $s" >> "$out/compare"
  done
  # The machine's own ceiling: the same one-core run twice at once, as two
  # processes that share nothing. Their speed-up (twice the one-core time
  # over the wall time of both) is the most two cores give this workload
  # right now; a vCPU that the host shares is slower when both are busy.
  start=$(date +%s.%N)
  for p in a b; do
    "$build/examples/train_encoder" --compare --tasks shift,count --seeds 1 --steps 200 --eval-every 50 \
      --threads 1 --out "$out/p$p" > "$out/logp$p" 2>&1 &
  done
  wait
  end=$(date +%s.%N)
  s=$(echo "$end - $start" | bc)
  echo "  two one-core runs at once, separate processes: $s s"
  echo "$s" >> "$out/pair"
  # Both studies' tables (the encoder's and the causal one's), seconds column off.
  sed 's/| [0-9.]* |$/|/' "$out/t1/compare/results.md" "$out/t1/compare_causal/results.md" > "$out/a"
  sed 's/| [0-9.]* |$/|/' "$out/t2/compare/results.md" "$out/t2/compare_causal/results.md" > "$out/b"
  if cmp -s "$out/a" "$out/b"; then echo "  tables: the same but for the seconds"; else echo "  tables DIFFER"; diff "$out/a" "$out/b" || true; fi
done
echo "medians over $rounds rounds, load average now $(cut -d' ' -f1-3 /proc/loadavg):"
# The speed-up of each round (its own 1-thread time over its own 2-thread
# time, measured seconds apart), then their median: on a shared machine the
# speed of a core drifts between rounds, and a ratio of medians taken from
# different rounds would mix that drift in.
ratios() { paste -d' ' "$1" "$2" | awk '{printf "%.2f\n", $1 / $2}'; }
for c in tiny medium large; do
  awk -v c=$c '$1==c && $2==1 {print $4}' "$out/steps" > "$out/one"
  awk -v c=$c '$1==c && $2==2 && $3=="data" {print $4}' "$out/steps" > "$out/dp"
  awk -v c=$c '$1==c && $2==2 && $3=="ops" {print $4}' "$out/steps" > "$out/ops"
  echo "$c: 1 thread $(median < "$out/one") ms, 2 threads data-parallel $(median < "$out/dp") ms, 2 threads per-op $(median < "$out/ops") ms"
  echo "$c: speed-up data-parallel $(ratios "$out/one" "$out/dp" | median)x (rounds: $(ratios "$out/one" "$out/dp" | paste -sd' ')), per-op $(ratios "$out/one" "$out/ops" | median)x"
  cone=$(awk -v c=$c '$1==c && $2==1 {print $5}' "$out/steps" | median)
  cdp=$(awk -v c=$c '$1==c && $2==2 && $3=="data" {print $5}' "$out/steps" | median)
  echo "$c: CPU time per step (all threads): 1 thread $cone ms, 2 threads data-parallel $cdp ms"
  # Two processes finish two steps in the time of the slower one's step.
  awk -v c=$c '$1==c {print ($2 > $3 ? $2 : $3) / 2}' "$out/pairs" > "$out/pairstep"
  echo "$c: ceiling, two separate one-thread processes at once: $(ratios "$out/one" "$out/pairstep" | median)x (rounds: $(ratios "$out/one" "$out/pairstep" | paste -sd' '))"
done
awk '$1==1 {print $2}' "$out/compare" > "$out/c1"
awk '$1==2 {print $2}' "$out/compare" > "$out/c2"
echo "compare: 1 core $(median < "$out/c1") s, 2 cores $(median < "$out/c2") s, speed-up $(ratios "$out/c1" "$out/c2" | median)x (rounds: $(ratios "$out/c1" "$out/c2" | paste -sd' '))"
awk '{printf "%.4f\n", $1 / 2}' "$out/pair" > "$out/half"
echo "ceiling: two separate one-core runs at once, speed-up $(ratios "$out/c1" "$out/half" | median)x (rounds: $(ratios "$out/c1" "$out/half" | paste -sd' '))"
