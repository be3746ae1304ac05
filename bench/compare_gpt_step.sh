#!/usr/bin/env bash
# The GPT's training step side by side: bench/gpt_step (smallgrad) against
# nanoGPT's own model.py and configure_optimizers (bench/torch_gpt_step.py
# --nanogpt, Debian's PyTorch), same shapes and threads, interleaved
# rounds, medians and their ratio.
#
#   bench/compare_gpt_step.sh NANOGPT_MODEL_PY [ROUNDS] [CONFIGS] [THREADS]
#   e.g. bench/compare_gpt_step.sh ../nanoGPT/model.py 3 "baby shakespeare" "1 2"
# nanoGPT is fetched and run beside the project, never copied into it.
set -euo pipefail
cd "$(dirname "$0")/.."
. bench/common.sh
model_py=${1:?usage: compare_gpt_step.sh NANOGPT_MODEL_PY [ROUNDS] [CONFIGS] [THREADS]}
rounds=${2:-3}
configs=${3:-baby shakespeare}
threads=${4:-1 2}
bin=build/release/bench/gpt_step
# PyTorch over OpenBLAS (Debian's libopenblas0-pthread) when it is there, as
# nanoGPT's figures for this machine were taken; OPENBLAS_CORETYPE unset
# (this environment's Haswell halves OpenBLAS's speed), single-threaded (PyTorch
# threads itself; both threading oversubscribes 2 cores), as
# bench/compare_train_step.py runs its peers. Else the system BLAS.
openblas=/usr/lib/x86_64-linux-gnu/openblas-pthread
peer_env=()
if [ -e "$openblas/libblas.so.3" ]; then
  peer_env=(env -u OPENBLAS_CORETYPE LD_LIBRARY_PATH="$openblas")
  echo "PyTorch over OpenBLAS ($openblas)"
else
  echo "PyTorch over the system BLAS (install libopenblas0-pthread for the OpenBLAS set-up)"
fi
echo "CPU: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ //'), $(grep -c '^processor' /proc/cpuinfo) logical CPUs, $(grep -q avx512f /proc/cpuinfo && echo AVX-512 || echo 'no AVX-512')"
for config in $configs; do
  steps=30; [ "$config" = shakespeare ] && steps=8
  for t in $threads; do
    ours=() theirs=()
    for r in $(seq 1 "$rounds"); do
      ours+=("$("$bin" --config "$config" --threads "$t" --steps $steps | awk '{for (i = 1; i <= NF; i++) if ($i == "median") print $(i + 1)}')")
      theirs+=("$("${peer_env[@]}" OPENBLAS_NUM_THREADS=1 OMP_NUM_THREADS=$t /usr/bin/python3 bench/torch_gpt_step.py --config "$config" --threads "$t" --steps $steps --nanogpt "$model_py" 2>/dev/null | awk '{for (i = 1; i <= NF; i++) if ($i == "median") print $(i + 1)}')")
    done
    a=$(printf '%s\n' "${ours[@]}" | median) b=$(printf '%s\n' "${theirs[@]}" | median)
    echo "$config, $t thread(s): smallgrad $a ms/step, nanoGPT $b ms/step (medians of $rounds interleaved rounds: ${ours[*]} | ${theirs[*]}); nanoGPT / smallgrad = $(awk -v a="$a" -v b="$b" 'BEGIN {printf "%.2f", b / a}')x"
  done
done
