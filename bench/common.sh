# Helpers the benchmark scripts share (sourced: `. bench/common.sh`).

# The median of the numbers on stdin, one per line.
median() { sort -g | awk '{v[NR] = $1} END {print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2}'; }

# The wall time per step of bench/train_step's output on stdin: the number
# before the first "ms/step" (its line ends with the CPU time, "CPU x ms/step").
step_ms() { awk '{for (i = 2; i <= NF; i++) if ($i == "ms/step") {print $(i - 1); exit}}'; }
