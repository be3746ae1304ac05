#!/usr/bin/env bash
# Runs every command of README.md, so none of them can rot:
#   * the ```sh blocks, line by line, in a scratch folder whose build/release
#     is this build and whose $HOME is scratch too (the install goes there);
#   * the C++ snippet and its CMakeLists.txt, written to hello/ first, as the
#     README says, and built against the installed package.
# Two lines are stand-ins for what takes too long inside the test suite:
#   * the README's first command: `scripts/setup.sh` has already run (this is
#     its build), and --compare trains 20 steps of one seed instead of 800 of three;
#   * the README's test command is what .ci/run runs: it is checked to be
#     there, word for word, not run again from inside itself.
# Single training runs (train_encoder, translate_numbers, train_gpt) train 20 steps;
# sample_gpt samples 20 tokens.
#
#   tests/readme_commands.sh SOURCE_DIR BUILD_DIR SCRATCH_DIR
# CXXFLAGS / LDFLAGS in the environment reach the snippet's build (a
# sanitizer build's library needs a sanitizer-built program).
set -euo pipefail
src=${1:?usage: readme_commands.sh SOURCE_DIR BUILD_DIR SCRATCH_DIR}
build=${2:?}
work=${3:?}
readme="$src/README.md"
rm -rf "$work" && mkdir -p "$work/build" && ln -s "$build" "$work/build/release"
export HOME="$work" OMP_NUM_THREADS=1

# The fenced blocks of one language, each line once.
block() { awk -v lang="$1" '/^```/ { inside = ($0 == "```" lang) ? !inside : 0; next } inside' "$readme"; }

mkdir -p "$work/hello"
block cpp > "$work/hello/hello.cpp"
block cmake > "$work/hello/CMakeLists.txt"
[ -s "$work/hello/hello.cpp" ] && [ -s "$work/hello/CMakeLists.txt" ] || { echo "FAIL: no C++ snippet or CMakeLists.txt in the README"; exit 1; }

first=$(block sh | sed -n 1p)
second=$(block sh | sed -n 2p)
[ "$first" = "scripts/setup.sh && build/release/examples/train_encoder --compare   # set up, build, run the main example" ] ||
  { echo "FAIL: the README's first command changed; update this test's stand-in for it: $first"; exit 1; }
grep -qxF -- "$second" "$src/.ci/run" || { echo "FAIL: .ci/run does not run the README's test command: $second"; exit 1; }

ran=0
cd "$work"
while IFS= read -r line; do
  cmd=${line%%#*}  # comments off
  [ -n "${cmd// /}" ] || continue
  [ "$line" = "$second" ] && continue
  cmd=${cmd/#scripts\/setup.sh && /}
  case $cmd in
    *train_encoder*--compare*) cmd="$cmd --steps 20 --seeds 1 --eval-every 10" ;;
    *train_encoder*--load* | *train_encoder*--report* | *--help*) ;;
    *train_encoder*) cmd="$cmd --steps 20 --eval-every 10" ;;
    *translate_numbers*) cmd="$cmd --steps 20 --eval-every 10" ;;
    *pronounce*) cmd="$cmd --max-words 2000 --steps 20 --eval-every 10 --eval-words 20 --hidden 32 --ffn 64 --blocks 1 --warmup 5" ;;
    *train_gpt*) cmd="$cmd --max-iters 20 --warmup-iters 5 --eval-interval 10 --eval-iters 2 --sample-tokens 20" ;;
    *sample_gpt*) cmd="$cmd --max-new-tokens 20" ;;
  esac
  echo "\$ $cmd"
  if ! bash -c "$cmd" > "$work/out.log" 2>&1; then
    echo "FAIL: README command failed: $line"
    tail -n 20 "$work/out.log"
    exit 1
  fi
  ran=$((ran + 1))
done < <(block sh)
grep -q "gradcheck passed" "$work/out.log" || grep -q "gradcheck passed" <("$work/hello/build/hello") ||
  { echo "FAIL: the snippet did not print a passed gradcheck"; exit 1; }
echo "ran $ran README commands (and checked the test command against .ci/run)"
