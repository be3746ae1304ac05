#!/usr/bin/env bash
# train_gpt and sample_gpt as a student runs them, on a small text: a run
# that stops and resumes ends bit for bit where an uninterrupted one does;
# sampling with and without the cache writes the same text; bad input
# (missing, empty or too short a text, bytes that are not UTF-8, a prompt
# with a character the vocabulary lacks, a checkpoint of another
# configuration or tokenizer, a damaged checkpoint, one flipped bit) gets
# one line and exit status 1 (2 for flags), and nothing half written is
# left behind; model.safetensors holds the weights alone, the optimizer's
# state is in train_state.safetensors, and an older smallgrad's single
# ckpt.safetensors still samples and resumes.
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

# The tensor names of a safetensors file, one a line, sorted.
names() {
  python3 - "$1" <<'PY'
import json, struct, sys
with open(sys.argv[1], "rb") as f:
    header = json.loads(f.read(struct.unpack("<Q", f.read(8))[0]))
print("\n".join(sorted(k for k in header if k != "__metadata__")))
PY
}

# An older smallgrad's single ckpt.safetensors (weights, "optimizer.*", the
# training metadata in one file) still samples and resumes.
old_layout() {
  mkdir -p "$2" && python3 - "$1" "$2/ckpt.safetensors" <<'PY'
import json, struct, sys
def read(path):
    with open(path, "rb") as f:
        header = json.loads(f.read(struct.unpack("<Q", f.read(8))[0]))
        data = f.read()
    meta = header.pop("__metadata__", {})
    meta.pop("checksum", None), meta.pop("checksum.crc32c", None)
    return {k: (v, data[v["data_offsets"][0]:v["data_offsets"][1]]) for k, v in header.items()}, meta
model, meta = read(sys.argv[1] + "/model.safetensors")
state, smeta = read(sys.argv[1] + "/train_state.safetensors")
meta.update(smeta)
tensors = dict(model, **{"optimizer." + k: v for k, v in state.items()})
header, blobs, offset = {"__metadata__": meta}, [], 0
for k, (e, blob) in tensors.items():
    header[k] = {"dtype": e["dtype"], "shape": e["shape"], "data_offsets": [offset, offset + len(blob)]}
    blobs.append(blob); offset += len(blob)
text = json.dumps(header).encode(); text += b" " * (-len(text) % 8)
open(sys.argv[2], "wb").write(struct.pack("<Q", len(text)) + text + b"".join(blobs))
PY
}

# An uninterrupted run, and one stopped at 10 and resumed.
expect 0 '' train_gpt "${small[@]}" "${text[@]}" "${model[@]}" --out "$work/whole"
grep -q "^final: train loss" "$work/stdout" || fail "train_gpt printed no final losses"
for f in model.safetensors train_state.safetensors log.csv samples.md report.html; do
  [ -s "$work/whole/$f" ] || fail "no $f"
done
# The model file holds nanoGPT's weights and nothing else; the optimizer's state is in a file of its own.
names "$work/whole/model.safetensors" > "$work/model-names"
grep -qx "transformer.h.1.attn.c_attn.weight" "$work/model-names" || fail "nanoGPT's names missing"
grep -qx "lm_head.weight" "$work/model-names" || fail "the tied head is not under nanoGPT's lm_head.weight"
grep -qvE '^(transformer\.|lm_head\.)' "$work/model-names" && fail "model.safetensors holds more than the model: $(grep -vE '^(transformer\.|lm_head\.)' "$work/model-names" | head -3)"
# A PyTorch GPT with nanoGPT's names loads it with strict=True (where Debian's python3-torch is installed).
if /usr/bin/python3 -c "import torch" 2> /dev/null; then
  /usr/bin/python3 "$(dirname "$0")/fixtures/check_gpt_model_file.py" "$work/whole/model.safetensors" ||
    fail "model.safetensors does not load strictly into a GPT with nanoGPT's names"
else
  echo "note: no python3-torch, so the strict load of model.safetensors into PyTorch was not tried"
fi
names "$work/whole/train_state.safetensors" > "$work/state-names"
grep -q "^exp_avg\." "$work/state-names" || fail "train_state.safetensors holds no AdamW state"
expect 0 '' train_gpt "${small[@]}" "${text[@]}" "${model[@]}" --out "$work/parts" --stop-at 10
grep -q "^stopped: .* after 10 of 20" "$work/stdout" || fail "--stop-at 10 did not stop at 10: $(cat "$work/stdout")"
old_layout "$work/parts" "$work/old"
expect 0 '' train_gpt "${small[@]}" "${text[@]}" "${model[@]}" --out "$work/parts" --resume
grep -q "resuming .* at iteration 10" "$work/stdout" || fail "--resume did not resume at 10"
for f in model.safetensors train_state.safetensors; do
  same_tensors "$work/whole/$f" "$work/parts/$f" ||
    fail "the resumed run's $f differs from the uninterrupted run's"
done
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
expect 1 "--load '.*nothing-here': no such file" sample_gpt --load "$work/nothing-here"
head -c 3000 "$work/whole/model.safetensors" > "$work/damaged.safetensors"
expect 1 "damaged.safetensors" sample_gpt --load "$work/damaged.safetensors"
# One flipped bit in a weight: refused, naming the tensor and the file.
python3 - "$work/whole/model.safetensors" "$work/flipped.safetensors" <<'PY'
import struct, sys
b = bytearray(open(sys.argv[1], "rb").read())
b[-5] ^= 0x04
open(sys.argv[2], "wb").write(b)
PY
expect 1 "flipped.safetensors': tensor '.*' fails its CRC-32C check" sample_gpt --load "$work/flipped.safetensors"

# An older smallgrad's single ckpt.safetensors (made from the run stopped at
# 10 above) still samples, and resumes to the uninterrupted run's weights.
expect 0 '' sample_gpt --load "$work/old" --prompt "In the" --max-new-tokens 20
expect 2 "holds a checkpoint already \(ckpt.safetensors\)" train_gpt "${small[@]}" "${text[@]}" "${model[@]}" --out "$work/old"
expect 0 '' train_gpt "${small[@]}" "${text[@]}" "${model[@]}" --out "$work/old" --resume
grep -q "resuming .*ckpt.safetensors' at iteration 10 (an older smallgrad's single file" "$work/stdout" ||
  fail "--resume did not read the older file: $(head -3 "$work/stdout")"
[ -e "$work/old/ckpt.safetensors" ] && fail "--resume left the older single file beside the new ones"
for f in model.safetensors train_state.safetensors; do
  same_tensors "$work/whole/$f" "$work/old/$f" || fail "the run resumed from an older file: $f differs"
done
# Stale temporaries of a killed run (a process that no longer runs) are
# removed by the next run in that --out, which says so; those of a running
# process are left alone.
sleep 60 & dead=$!; kill $dead; wait $dead 2> /dev/null
sleep 60 & alive=$!
touch "$work/parts/model.safetensors.tmp-$dead-3" "$work/parts/.log.csv.staged-$alive"
expect 0 "removed '.*model.safetensors.tmp-$dead-3', a temporary file left by process $dead, which no longer runs" \
  train_gpt "${small[@]}" "${text[@]}" "${model[@]}" --out "$work/parts" --resume
[ -e "$work/parts/.log.csv.staged-$alive" ] || fail "a running process's temporary was removed"
kill $alive; wait $alive 2> /dev/null
rm -f "$work/parts/.log.csv.staged-$alive"

# --max-iters alone, however small, runs with the other defaults (the warmup shortens).
expect 0 '' train_gpt --block-size 16 --batch-size 2 --n-layer 1 --eval-iters 1 --sample-tokens 5 --threads 1 \
  "${text[@]}" "${model[@]}" --max-iters 1 --out "$work/one"
grep -q "after 1 of 1 iterations" "$work/stdout" || fail "--max-iters 1: $(tail -3 "$work/stdout")"

# A stop signal acts within a second, and says what it kept: during the
# final sample, the model saved at the last evaluation; in sample_gpt,
# after text was printed, that the sample was cut.
stop_after() {  # stop_after PATTERN PROGRAM ARGS...: SIGINT once stdout shows PATTERN
  local pattern=$1; shift
  "$bin/$@" > "$work/stdout" 2> "$work/stderr" &
  local pid=$! waited=0
  until grep -q -- "$pattern" "$work/stdout" 2> /dev/null || [ $waited -ge 600 ]; do sleep 0.1; waited=$((waited + 1)); done
  sleep 0.5
  local t0=$(date +%s%N)
  kill -INT $pid
  wait $pid; stopped_status=$?
  stopped_ms=$(( ($(date +%s%N) - t0) / 1000000 ))
}
stop_after "^final:" train_gpt --block-size 16 --batch-size 4 --n-layer 2 --max-iters 20 --warmup-iters 5 \
  --eval-interval 10 --eval-iters 2 --threads 1 "${text[@]}" "${model[@]}" --sample-tokens 100000 --out "$work/cut"
[ "$stopped_status" -eq 1 ] || fail "train_gpt stopped in its final sample: exit status $stopped_status, expected 1"
[ "$stopped_ms" -lt 1500 ] || fail "train_gpt took $stopped_ms ms to stop in its final sample"
grep -q "stopped by SIGINT; the model and training state at iteration 20 kept in .*cut; the final sample was cut" "$work/stderr" ||
  fail "train_gpt stopped in its final sample says: $(tail -c 300 "$work/stderr")"
[ -s "$work/cut/model.safetensors" ] || fail "the model kept by a stopped train_gpt is not there"
stop_after "^In the" sample_gpt --load "$work/whole" --prompt "In the" --max-new-tokens 1000000
[ "$stopped_status" -eq 1 ] || fail "sample_gpt stopped: exit status $stopped_status, expected 1"
[ "$stopped_ms" -lt 1500 ] || fail "sample_gpt took $stopped_ms ms to stop"
grep -q "stopped by SIGINT; sample 1 was cut after [0-9]* of 1000000 tokens" "$work/stderr" ||
  fail "sample_gpt stopped says: $(tail -c 300 "$work/stderr")"

leftovers=$(find "$work" -name '*.tmp*' -o -name '.write-test*' -o -name '*.staged-*')
[ -z "$leftovers" ] || fail "temporary files left behind: $leftovers"

if [ "$failures" -ne 0 ]; then
  echo "$failures failure(s)"
  exit 1
fi
echo "gpt programs: all checks passed"
