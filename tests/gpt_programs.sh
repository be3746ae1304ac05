#!/usr/bin/env bash
# train_gpt and sample_gpt as a student runs them, on a small text: a run
# that stops and resumes ends bit for bit where an uninterrupted one does;
# sampling with and without the cache writes the same text; bad input
# (missing, empty or too short a text, bytes that are not UTF-8, a prompt
# with a character the vocabulary lacks, a checkpoint of another
# configuration or tokenizer, a damaged checkpoint) gets one line and exit
# status 1 (2 for flags), and nothing half written is left behind.
#
#   tests/gpt_programs.sh BUILD_DIR/examples SCRATCH_DIR
set -uo pipefail
bin=${1:?usage: gpt_programs.sh EXAMPLES_DIR SCRATCH_DIR}
work=${2:?usage: gpt_programs.sh EXAMPLES_DIR SCRATCH_DIR}
rm -rf "$work" && mkdir -p "$work" || exit 1
export OMP_NUM_THREADS=1
failures=0
fail() { echo "FAIL: $*"; failures=$((failures + 1)); }

# A text of 3,000 characters with a few dozen distinct ones.
for i in $(seq 1 60); do echo "In the beginning $i: and the earth was without form, and void."; done > "$work/text.txt"
# The flags every run shares; each run adds its --text, --n-embd, --n-head (and --tokenizer).
small=(--block-size 16 --batch-size 4 --n-layer 2 --max-iters 20 --warmup-iters 5 --eval-interval 10
       --eval-iters 2 --sample-tokens 40 --threads 1)
text=(--text "$work/text.txt")
model=(--n-head 2 --n-embd 16)

# expect STATUS REGEX PROGRAM ARGS...: the status, one line of stderr (two
# for a usage error: the error, then the pointer to --help) matching REGEX.
expect() {
  local status=$1 regex=$2 program=$3
  shift 3
  "$bin/$program" "$@" > "$work/stdout" 2> "$work/stderr"
  local got=$? lines
  lines=$(wc -l < "$work/stderr")
  if [ "$got" -ne "$status" ]; then
    fail "$program $*: exit status $got, expected $status; stderr: $(head -c 300 "$work/stderr")"
  elif [ -n "$regex" ] && ! head -n 1 "$work/stderr" | grep -qE -- "$regex"; then
    fail "$program $*: stderr '$(head -n 1 "$work/stderr")' does not match '$regex'"
  elif [ "$lines" -gt $((status == 2 ? 2 : 1)) ]; then
    fail "$program $*: $lines lines on stderr"
  fi
}

# The tensors of two checkpoints, byte for byte (the metadata holds times).
same_tensors() {
  python3 - "$1" "$2" <<'PY'
import json, struct, sys
def tensors(path):
    with open(path, "rb") as f:
        n = struct.unpack("<Q", f.read(8))[0]
        header = json.loads(f.read(n))
        data = f.read()
    header.pop("__metadata__", None)
    return {k: data[v["data_offsets"][0]:v["data_offsets"][1]] for k, v in header.items()}
a, b = tensors(sys.argv[1]), tensors(sys.argv[2])
sys.exit(0 if a == b and len(a) > 0 else 1)
PY
}

# An uninterrupted run, and one stopped at 10 and resumed.
expect 0 '' train_gpt "${small[@]}" "${text[@]}" "${model[@]}" --out "$work/whole"
grep -q "^final: train loss" "$work/stdout" || fail "train_gpt printed no final losses"
for f in ckpt.safetensors log.csv samples.md report.html; do [ -s "$work/whole/$f" ] || fail "no $f"; done
grep -q "transformer.h.1.attn.c_attn.weight" "$work/whole/ckpt.safetensors" || fail "nanoGPT's names missing"
expect 0 '' train_gpt "${small[@]}" "${text[@]}" "${model[@]}" --out "$work/parts" --stop-at 10
grep -q "^stopped: .* after 10 of 20" "$work/stdout" || fail "--stop-at 10 did not stop at 10: $(cat "$work/stdout")"
expect 0 '' train_gpt "${small[@]}" "${text[@]}" "${model[@]}" --out "$work/parts" --resume
grep -q "resuming .* at iteration 10" "$work/stdout" || fail "--resume did not resume at 10"
same_tensors "$work/whole/ckpt.safetensors" "$work/parts/ckpt.safetensors" ||
  fail "the resumed run's weights, optimizer or generator differ from the uninterrupted run's"
cut -d, -f1-3 "$work/whole/log.csv" > "$work/a.csv"; cut -d, -f1-3 "$work/parts/log.csv" > "$work/b.csv"
cmp -s "$work/a.csv" "$work/b.csv" || fail "the resumed run's losses differ: $(paste "$work/a.csv" "$work/b.csv")"

# Sampling: the cache changes nothing but the time.
expect 0 '' sample_gpt --load "$work/whole" --prompt "In the" --max-new-tokens 60 --seed 3
cp "$work/stdout" "$work/cached.txt"
expect 0 '' sample_gpt --load "$work/whole" --prompt "In the" --max-new-tokens 60 --seed 3 --no-cache
cmp -s "$work/cached.txt" "$work/stdout" || fail "sampling with and without the cache differ"
grep -q "^In the" "$work/cached.txt" || fail "the sample does not start with its prompt"

# BPE: trains, samples, and its checkpoint refuses a character run's flags.
expect 0 '' train_gpt "${small[@]}" "${text[@]}" "${model[@]}" --tokenizer bpe --vocab 300 --out "$work/bpe"
expect 0 '' sample_gpt --load "$work/bpe" --prompt "any bytes: é" --max-new-tokens 20

# Bad input: one line, status 1 (2 for flags), nothing half written.
printf '' > "$work/empty.txt"
head -c 100 "$work/text.txt" > "$work/short.txt"  # 10 validation characters
{ head -c 2000 "$work/text.txt"; printf '\xff\xfe'; head -c 2000 "$work/text.txt"; } > "$work/binary.txt"
expect 1 "--text '.*nope.txt': cannot open" train_gpt "${small[@]}" "${model[@]}" --text "$work/nope.txt" --out "$work/bad"
expect 1 "the file is empty" train_gpt "${small[@]}" "${model[@]}" --text "$work/empty.txt" --out "$work/bad"
expect 1 "longer than the context, --block-size 16" train_gpt "${small[@]}" "${model[@]}" --text "$work/short.txt" --out "$work/bad"
expect 1 "offset 2000 are not UTF-8" train_gpt "${small[@]}" "${model[@]}" --text "$work/binary.txt" --out "$work/bad"
[ -e "$work/bad" ] && fail "a failed run left --out behind: $(ls -A "$work/bad")"
expect 1 "--prompt: .*'Z' \\(U\\+005A\\) at offset 3" sample_gpt --load "$work/whole" --prompt "In Z"
expect 2 "--n-embd 16 in the checkpoint, 32 now" train_gpt "${small[@]}" "${text[@]}" --n-head 2 --n-embd 32 --out "$work/whole" --resume
expect 2 "--tokenizer \"char\" in the checkpoint, \"bpe\" now" train_gpt "${small[@]}" "${text[@]}" "${model[@]}" --tokenizer bpe --out "$work/whole" --resume
expect 2 "holds a checkpoint already" train_gpt "${small[@]}" "${text[@]}" "${model[@]}" --out "$work/whole"
expect 2 "--stop-at 15 must be a multiple of --eval-interval 10" train_gpt "${small[@]}" "${text[@]}" "${model[@]}" --stop-at 15 --out "$work/x"
expect 2 "--n-head 3 must divide --n-embd 16" train_gpt "${small[@]}" "${text[@]}" --n-embd 16 --n-head 3 --out "$work/x"
expect 2 "" train_gpt --no-such-flag
expect 1 "no checkpoint" sample_gpt --load "$work/nothing-here"
head -c 3000 "$work/whole/ckpt.safetensors" > "$work/damaged.safetensors"
expect 1 "damaged.safetensors" sample_gpt --load "$work/damaged.safetensors"
leftovers=$(find "$work" -name '*.tmp*' -o -name '.write-test*')
[ -z "$leftovers" ] || fail "temporary files left behind: $leftovers"

if [ "$failures" -ne 0 ]; then
  echo "$failures failure(s)"
  exit 1
fi
echo "gpt programs: all checks passed"
