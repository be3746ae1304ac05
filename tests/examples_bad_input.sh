#!/usr/bin/env bash
# Bad invocations of the example programs, as an outside tester types them:
# wrong flags and values, contradictory flags, unwritable outputs, damaged
# checkpoints of every kind, SIGTERM in the middle of --compare. Each row of
# the table must end with exactly its exit status (2: usage, 1: runtime; never
# a signal), print its error on one line that names the culprit (a usage
# error adds one line pointing at --help, nothing more), and leave no
# temporary or truncated file behind.
#
#   tests/examples_bad_input.sh BUILD_DIR/examples SCRATCH_DIR
# Only coreutils and bash: it runs from a fresh clone.
set -uo pipefail
bin=${1:?usage: examples_bad_input.sh EXAMPLES_DIR SCRATCH_DIR}
work=${2:?usage: examples_bad_input.sh EXAMPLES_DIR SCRATCH_DIR}
rm -rf "$work" && mkdir -p "$work" || exit 1
export OMP_NUM_THREADS=1
failures=0 rows=0

fail() {
  echo "FAIL: $*"
  failures=$((failures + 1))
}

# expect STATUS REGEX PROGRAM ARGS...: runs it, checks the status, that the
# first line of stderr matches REGEX (grep -E), and the line count.
expect() {
  local status=$1 regex=$2 program=$3
  shift 3
  rows=$((rows + 1))
  "$bin/$program" "$@" > "$work/stdout" 2> "$work/stderr"
  local got=$?
  local first
  first=$(head -n 1 "$work/stderr")
  local lines
  lines=$(wc -l < "$work/stderr")
  local what="$program $*"
  if [ "$got" -ne "$status" ]; then
    fail "$what: exit status $got, expected $status; stderr: $(head -c 300 "$work/stderr")"
  elif ! grep -qE -- "$regex" <<< "$first"; then
    fail "$what: first line of stderr '$first' does not match '$regex'"
  elif [ "$status" -eq 2 ] && { [ "$lines" -ne 2 ] || ! sed -n 2p "$work/stderr" | grep -q -- "--help"; }; then
    fail "$what: a usage error is the error and one line pointing at --help; got $lines lines"
  elif [ "$status" -eq 1 ] && [ "$lines" -ne 1 ]; then
    fail "$what: a runtime error is one line; got $lines lines: $(head -c 300 "$work/stderr")"
  fi
}

# No staged or temporary file anywhere under the scratch folder.
no_leftovers() {
  local left
  left=$(find "$work" \( -name '*.tmp-*' -o -name '.*.staged-*' -o -name '.write-test-*' \) -print)
  [ -z "$left" ] || fail "$1: temporary files left: $left"
}

# ---- a good checkpoint to damage ----
good="$work/good"
"$bin/train_encoder" --steps 20 --eval-every 10 --out "$good" > "$work/good.log" 2>&1 ||
  { echo "FAIL: cannot train the checkpoint the damaged ones are made from:"; cat "$work/good.log"; exit 1; }
ck="$good/shift_sinusoidal_seed0/model.safetensors"

# safetensors: 8-byte little-endian header length, JSON header, data.
header_len() { od -An -t u8 -N 8 "$1" | tr -d ' '; }
header() { tail -c +9 "$1" | head -c "$(header_len "$1")"; }
u64le() {  # the 8 bytes of $1, little-endian
  local n=$1 i
  for ((i = 0; i < 8; i++)); do printf "\\$(printf '%03o' $((n & 255)))"; n=$((n >> 8)); done
}
# with_header SRC DEST NEWHEADER: DEST has SRC's data under NEWHEADER.
with_header() {
  local n
  n=$(header_len "$1")
  { u64le "${#3}"; printf '%s' "$3"; tail -c +$((9 + n)) "$1"; } > "$2"
}
# The good checkpoint without its checksums (as a writer without them,
# PyTorch's, would leave it), so that the edits below reach the checks
# behind them; with the checksums, any edit is refused as damaged first.
checked=$ck
ck="$work/good-unchecked.safetensors"
with_header "$checked" "$ck" "$(header "$checked" | sed -E 's/,"checksum":"crc32c","checksum\.crc32c":"(\\.|[^"\\])*"//')"
header "$ck" | grep -q checksum && { echo "FAIL: the checksums were not taken out of $ck"; exit 1; }
# edit_meta DEST SED_EXPR: the good checkpoint with its header edited.
edit_meta() { with_header "$ck" "$1" "$(header "$ck" | sed -E "$2")"; }

d="$work/damaged"
mkdir -p "$d"
edit_meta "$d/vocab_abc.safetensors" 's/"vocab":"[0-9]+"/"vocab":"abc"/'
edit_meta "$d/vocab_huge.safetensors" 's/"vocab":"[0-9]+"/"vocab":"1234567890123456789012"/'
edit_meta "$d/vocab_negative.safetensors" 's/"vocab":"[0-9]+"/"vocab":"-16"/'
edit_meta "$d/task_foo.safetensors" 's/"task":"[a-z]+"/"task":"foo"/'
edit_meta "$d/positional_bad.safetensors" 's/"positional":"[a-z]+"/"positional":"t5"/'
edit_meta "$d/lengths_swapped.safetensors" 's/"min_len":"[0-9]+"/"min_len":"30"/'
edit_meta "$d/no_task.safetensors" 's/"task":"[a-z]+",?//'
edit_meta "$d/seed_bad.safetensors" 's/"seed":"[0-9]+"/"seed":"-1"/'
edit_meta "$d/pre_norm_bad.safetensors" 's/"pre_norm":"[01]"/"pre_norm":"yes"/'
edit_meta "$d/hidden_other.safetensors" 's/"hidden":"[0-9]+"/"hidden":"32"/'
edit_meta "$d/shift_too_far.safetensors" 's/"shift":"[0-9]+"/"shift":"12"/'
# NaN in the first float32 tensor of the data: 0x7fc00000 over its first element.
first_offset=$(header "$ck" | grep -oE '"data_offsets":\[[0-9]+' | head -n 1 | grep -oE '[0-9]+$')
cp "$ck" "$d/nan.safetensors"
printf '\x00\x00\xc0\x7f' |
  dd of="$d/nan.safetensors" bs=1 seek=$((8 + $(header_len "$ck") + first_offset)) conv=notrunc status=none
# The same two damages to the file with its checksums.
with_header "$checked" "$d/vocab_abc_checked.safetensors" "$(header "$checked" | sed -E 's/"vocab":"[0-9]+"/"vocab":"abc"/')"
cp "$checked" "$d/nan_checked.safetensors"
printf '\x00\x00\xc0\x7f' | dd of="$d/nan_checked.safetensors" bs=1 conv=notrunc status=none \
  seek=$((8 + $(header_len "$checked") + $(header "$checked" | grep -oE '"data_offsets":\[[0-9]+' | head -n 1 | grep -oE '[0-9]+$')))
head -c $(($(wc -c < "$ck") / 2)) "$ck" > "$d/truncated.safetensors"
head -c 5 "$ck" > "$d/stub.safetensors"
: > "$d/empty.safetensors"
printf 'not a checkpoint at all' > "$d/text.safetensors"

te=train_encoder
# ---- train_encoder: values ----
expect 2 "--steps.*not a whole number" $te --steps abc
expect 2 "--steps.*out of range" $te --steps 0
expect 2 "--steps.*not a whole number" $te --steps 1.5
expect 2 "--lr.*out of range" $te --lr -1
expect 2 "--lr.*not a number" $te --lr fast
expect 2 "--seed.*out of range" $te --seed -1
expect 2 "--dropout.*out of range" $te --dropout 1.5
expect 2 "--threads.*out of range" $te --threads 100000
expect 2 "--task.*nope" $te --task nope
expect 2 "--positional.*alibis" $te --positional alibis
expect 2 "--causal-tasks.*sort" $te --compare --causal-tasks shift,sort
expect 2 "--studies.*decoder" $te --compare --studies encoder,decoder
expect 2 "--tasks.*" $te --compare --tasks shift,nope
expect 2 "unknown flag --stpes \(did you mean --steps\?\)" $te --stpes 100
expect 2 "unknown flag --bogus" $te --bogus
expect 2 "unexpected argument 'extra'" $te extra
expect 2 "--steps" $te --steps
expect 2 "--blocks.*out of range" $te --blocks 0
expect 2 "heads" $te --heads 3
expect 2 "rotary|even" $te --positional rotary --hidden 12 --heads 4
# ---- train_encoder: combinations ----
expect 2 "--load.*--compare|--compare.*--load" $te --load "$ck" --compare
expect 2 "--load.*--steps|--steps.*--load" $te --load "$ck" --steps 10
expect 2 "--load.*--out|--out.*--load" $te --load "$ck" --out "$work/x"
expect 2 "--report.*(not exist|Directory)" $te --report "$work/no-such-folder"
expect 2 "--report.*--compare|--compare.*--report" $te --report "$work" --compare
expect 2 "--report.*--load|--load.*--report" $te --report "$work" --load "$ck"
expect 2 "--tasks.*--compare" $te --tasks shift
expect 2 "--seeds.*--compare" $te --seeds 2
expect 2 "--task.*--compare|--compare.*--task" $te --compare --task sort
expect 2 "--shift 20 must be less than --max-len 12" $te --shift 20
expect 2 "--shift applies to the shift task" $te --task sort --shift 2
expect 2 "--back applies to the recall task" $te --task shift --back 2
expect 2 "--back 12 must be less than --max-len 12" $te --task recall --back 12
expect 2 "--heads 3 must divide --hidden 64" $te --heads 3
expect 2 "--hidden 63 must be even for --positional sinusoidal" $te --hidden 63 --heads 1
expect 2 "--hidden 12 / --heads 4 = 3 features per head must be even for --positional rotary" $te --hidden 12 --heads 4 --positional rotary
expect 2 "task 'sort'.*causal mask" $te --causal --task sort
expect 2 "--causal.*--compare|--compare.*--causal" $te --compare --causal
expect 2 "--studies.*--compare" $te --studies causal
expect 2 "--causal-tasks.*--compare" $te --causal-tasks tally
expect 2 "--causal-steps.*--compare" $te --causal-steps 10
expect 2 "--max-distance applies to relative" $te --positional learned --max-distance 4
expect 2 "--relative-values applies to relative" $te --compare --positionals none --relative-values 0
expect 2 "--eval-min-len 13 must be above --max-len 20" $te --max-len 20
expect 2 "--max-len 3 is below --min-len 4" $te --max-len 3
expect 2 "--min-lr.*above" $te --min-lr 0.1
expect 2 "--min-lr applies to the cosine" $te --schedule constant --min-lr 0.001
expect 2 "--load.*does not exist|--load.*not exist" $te --load "$work/nothing.safetensors"
# ---- train_encoder: outputs ----
: > "$work/a_file"
expect 1 "--out '$work/a_file.*cannot make" $te --steps 5 --out "$work/a_file"
expect 1 "--out '/proc/.*cannot make" $te --steps 5 --out /proc/no_such_place
expect 2 "--out.*cannot be empty" $te --steps 5 --out ""
expect 1 "--out '$work/a_file.*cannot make" $te --compare --steps 5 --out "$work/a_file"
mkdir -p "$work/blocked/shift_sinusoidal_seed0/curve.svg"
expect 1 "curve.svg.*other than a file" $te --steps 5 --out "$work/blocked"
[ -z "$(ls "$work/blocked/shift_sinusoidal_seed0" | grep -v '^curve.svg$')" ] ||
  fail "a refused run wrote into its folder: $(ls "$work/blocked/shift_sinusoidal_seed0")"
# ---- train_encoder: damaged checkpoints ----
expect 1 "vocab.*abc.*not a whole number" $te --load "$d/vocab_abc.safetensors"
expect 1 "vocab.*out of range" $te --load "$d/vocab_huge.safetensors"
expect 1 "vocab.*out of range" $te --load "$d/vocab_negative.safetensors"
expect 1 "task.*foo.*not a task" $te --load "$d/task_foo.safetensors"
expect 1 "positional.*t5" $te --load "$d/positional_bad.safetensors"
expect 1 "inconsistent metadata.*lengths" $te --load "$d/lengths_swapped.safetensors"
expect 1 "no 'task'" $te --load "$d/no_task.safetensors"
expect 1 "seed.*-1" $te --load "$d/seed_bad.safetensors"
expect 1 "pre_norm.*yes" $te --load "$d/pre_norm_bad.safetensors"
expect 1 "hidden_other|shape" $te --load "$d/hidden_other.safetensors"
expect 1 "--shift 12 must be less than --max-len 12" $te --load "$d/shift_too_far.safetensors"
expect 1 "tensor '.*' .*nan" $te --load "$d/nan.safetensors"
expect 1 "vocab_abc_checked.safetensors': the metadata fails its CRC-32C check" $te --load "$d/vocab_abc_checked.safetensors"
expect 1 "nan_checked.safetensors': tensor '.*' fails its CRC-32C check" $te --load "$d/nan_checked.safetensors"
expect 0 "" $te --load "$ck"  # no checksums: loads unchecked
expect 1 "truncated.safetensors" $te --load "$d/truncated.safetensors"
expect 1 "stub.safetensors" $te --load "$d/stub.safetensors"
expect 1 "empty.safetensors" $te --load "$d/empty.safetensors"
expect 1 "text.safetensors" $te --load "$d/text.safetensors"
expect 2 "--load.*directory" $te --load "$good"
# ---- the other examples ----
expect 2 "--threads.*out of range" tensor_tour --threads 100000
expect 2 "--steps.*not a whole number" tensor_tour --steps x
expect 2 "unknown flag --stesp \(did you mean --steps\?\)" tensor_tour --stesp 5
expect 2 "unknown flag --steps" self_attention --steps 3
expect 1 "--out '$work/a_file.*cannot make" self_attention --out "$work/a_file"
expect 2 "unexpected argument 'now'" self_attention now
expect 2 "--out" positional_encoding --out
expect 2 "--out.*cannot be empty" attention_graph --out ""
expect 1 "--out '$work/a_file.*cannot make" positional_encoding --out "$work/a_file"
expect 1 "--out '/proc/.*cannot make" positional_encoding --out /proc/no_such_place
expect 1 "--out '$work/a_file.*cannot make" attention_graph --out "$work/a_file"
expect 2 "--steps.*out of range" custom_layer --steps 0
expect 2 "unknown flag --thread \(did you mean --threads\?\)" custom_layer --thread 2
expect 2 "--iters.*out of range" higher_order --iters 0
expect 2 "--seed.*not a whole number" higher_order --seed x
expect 2 "unknown flag --step \(did you mean --steps\?\)" higher_order --step 5
expect 1 "--out '$work/a_file.*cannot make" higher_order --out "$work/a_file"
expect 2 "--iters.*out of range" curvature --iters 0
# The MPI example, when built (SMALLGRAD_MPI and libopenmpi-dev), run as one process.
if [ -x "$bin/train_encoder_mpi" ]; then
  export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
  expect 2 "--threads.*out of range" train_encoder_mpi --threads 0
  expect 2 "--batch.*out of range" train_encoder_mpi --batch 0
  expect 2 "--task" train_encoder_mpi --task nope
  expect 1 "--out '$work/a_file.*cannot make" train_encoder_mpi --steps 1 --out "$work/a_file"
fi
# --help: every flag described, defaults shown, exit 0.
for p in train_encoder tensor_tour positional_encoding self_attention attention_graph custom_layer higher_order curvature; do
  rows=$((rows + 1))
  if ! "$bin/$p" --help > "$work/help" 2>&1; then
    fail "$p --help: exit status not 0"
  # a flag line with nothing after it, whose next line is not its description
  elif awk '/^ +-/ { if (bare) exit 0; bare = ($0 ~ /^ +-[-a-zA-Z,]+( [^ ]+)? *$/); next }
            { if (bare && $0 !~ /^          +[^ ]/) exit 0; bare = 0 }
            END { exit bare ? 0 : 1 }' "$work/help"; then
    fail "$p --help: a flag without a description"
  fi
done
grep -q -- "--steps [^ ]*=800 " <("$bin/train_encoder" --help) || fail "train_encoder --help does not show --steps' default 800"
grep -q -- "--out [^ ]*=out " <("$bin/train_encoder" --help) || fail "train_encoder --help does not show --out's default"

# ---- SIGTERM during --compare: the last complete table stays ----
cmp_out="$work/cmp"
flags=(--compare --tasks shift --positionals none --seeds 1 --eval-every 10 --out "$cmp_out")
"$bin/$te" "${flags[@]}" --steps 20 > /dev/null 2>&1 || fail "a short --compare failed"
before=$(cd "$cmp_out/compare" && cat results.md results.csv | cksum)
rows=$((rows + 1))
"$bin/$te" "${flags[@]}" --positionals none,sinusoidal,learned --steps 100000 > /dev/null 2> "$work/stderr" &
pid=$!
sleep 2
kill -TERM "$pid"
wait "$pid"
got=$?
[ "$got" -eq 1 ] || fail "--compare stopped by SIGTERM: exit status $got, expected 1"
grep -q "stopped by SIGTERM" "$work/stderr" || fail "--compare stopped by SIGTERM: no message: $(tail -c 300 "$work/stderr")"
after=$(cd "$cmp_out/compare" && cat results.md results.csv | cksum)
[ "$before" = "$after" ] || fail "--compare stopped by SIGTERM changed the last complete results"
# A run stopped before its folder existed leaves no folder.
rows=$((rows + 1))
"$bin/$te" --steps 100000 --out "$work/stopped" > /dev/null 2>&1 &
pid=$!
sleep 2
kill -INT "$pid"
wait "$pid"
got=$?
[ "$got" -eq 1 ] || fail "a run stopped by SIGINT: exit status $got, expected 1"
[ ! -e "$work/stopped" ] || fail "a run stopped by SIGINT left $(find "$work/stopped")"
no_leftovers "after every row"
# A SVG or CSV anywhere must be whole.
while IFS= read -r f; do
  [ -s "$f" ] || fail "empty file $f"
  case $f in *.svg) tail -c 7 "$f" | grep -q '</svg>' || fail "truncated $f" ;; esac
done < <(find "$work" -type f \( -name '*.svg' -o -name '*.csv' -o -name '*.md' \))

echo "$rows invocations, $failures failures"
[ "$failures" -eq 0 ]
