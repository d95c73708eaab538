#!/usr/bin/env bash
# Builds the libFuzzer targets (clang, AddressSanitizer + UndefinedBehaviorSanitizer) and runs
# each for a while, starting from a copy of its seed corpus in fuzz/corpus/ (the committed corpus
# is never written to). Exits non-zero when any target crashes, naming the reproducer.
# Usage: bash scripts/fuzz.sh [seconds-per-target]     (default: 60)
# Installs nothing: needs the Debian packages clang-14, libclang-rt-14-dev and libomp-14-dev.
set -euo pipefail
cd "$(dirname "$0")/.."
SECONDS_PER_TARGET=${1:-60}
BUILD_DIR=build-fuzz

# target, longest input in bytes, dictionary (- for none)
TARGETS=(
  "fuzz_scenario 4096 fuzz/scenario.dict"
  "fuzz_npy 8192 fuzz/npy.dict"
  "fuzz_tokenizer 1024 -"
  "fuzz_lesson 8192 fuzz/lesson.dict"
  "fuzz_session 4096 fuzz/session.dict"
  "fuzz_safetensors 4096 fuzz/safetensors.dict"
  "fuzz_safetensors_header 64 -"
  "fuzz_bpe_files 4096 fuzz/bpe.dict"
  "fuzz_imported_attention 4096 fuzz/npy.dict"
  "fuzz_tokenizer_json 4106 -"
  "fuzz_wordpiece 4096 -"
)

if ! [[ $SECONDS_PER_TARGET =~ ^[1-9][0-9]*$ ]]; then
  echo "usage: bash scripts/fuzz.sh [seconds-per-target]  (a whole number of seconds, got '$SECONDS_PER_TARGET')" >&2
  exit 2
fi

missing=()
for p in clang-14 libclang-rt-14-dev libomp-14-dev; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if ((${#missing[@]})) || ! command -v clang++-14 > /dev/null; then
  echo "fuzz.sh: needs clang 14 with its libFuzzer and OpenMP runtimes; missing Debian packages: ${missing[*]:-clang-14}" >&2
  echo "fuzz.sh: install them with: apt-get install ${missing[*]:-clang-14}" >&2
  exit 2
fi

# Optimised, with line tables (-g1) for the crash reports' file and line.
CC=clang-14 CXX=clang++-14 cmake -S . -B "$BUILD_DIR" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DATTNVIZ_FUZZ=ON \
  -DCMAKE_CXX_FLAGS_RELWITHDEBINFO="-O2 -g1 -DNDEBUG" -DCMAKE_C_FLAGS_RELWITHDEBINFO="-O2 -g1 -DNDEBUG" \
  -DATTNVIZ_BUILD_APP=OFF -DATTNVIZ_BUILD_TESTS=OFF -DATTNVIZ_BUILD_BENCH=OFF > /dev/null
cmake --build "$BUILD_DIR" --target attnviz_fuzz -j "$(nproc)"

WORK=$(mktemp -d "${TMPDIR:-/tmp}/attnviz-fuzz.XXXXXX")
trap 'rm -rf "$WORK"' EXIT
mkdir -p "$BUILD_DIR/fuzz/logs"

# One thread per process: the forward pass's OpenMP regions run, without spinning other cores.
# The targets run side by side, as many at once as there are cores: each still gets its full time
# on a core of its own, and the run takes a fraction of the time one after another would.
JOBS=$(nproc)  # before OMP_NUM_THREADS is set: GNU nproc counts by it
export OMP_NUM_THREADS=1

# Runs one target; its summary line goes to $WORK/<target>.line, and the exit status says whether
# it passed.
run_target() {
  local target=$1 maxLen=$2 dict=$3
  local corpus="$WORK/$target" artifacts="$BUILD_DIR/fuzz/artifacts/$target/" log="$BUILD_DIR/fuzz/logs/$target.log"
  mkdir -p "$corpus" "$artifacts"
  cp fuzz/corpus/"$target"/* "$corpus"/
  local args=("$corpus" -max_total_time="$SECONDS_PER_TARGET" -max_len="$maxLen" -timeout=5 -artifact_prefix="$artifacts")
  [ "$dict" = "-" ] || args+=(-dict="$dict")
  local line status=0
  if "$BUILD_DIR/fuzz/$target" "${args[@]}" > "$log" 2>&1; then
    # libFuzzer's last line: "Done 123456 runs in 60 second(s)"
    local done_line runs secs
    done_line=$(grep -E '^Done [0-9]+ runs in [0-9]+ second' "$log" | tail -n 1)
    runs=$(awk '{print $2}' <<< "$done_line")
    secs=$(awk '{print $5}' <<< "$done_line")
    line=$(printf '%-23s %12s runs in %5s s  %8s exec/s' "$target" "$runs" "$secs" "$((runs / (secs > 0 ? secs : 1)))")
  else
    status=1
    local reproducer
    reproducer=$(grep -oE 'Test unit written to .*' "$log" | tail -n 1 | sed 's/^Test unit written to //')
    tail -n 40 "$log" >&2
    line=$(printf '%-23s FAILED  reproducer: %s  (re-run: %s %s)' "$target" "${reproducer:-none, see $log}" \
      "$BUILD_DIR/fuzz/$target" "${reproducer:-}")
  fi
  echo "$line" > "$WORK/$target.line"
  echo "$line"
  return "$status"
}

failed=0
running=0
for entry in "${TARGETS[@]}"; do
  read -r target maxLen dict <<< "$entry"
  echo "== $target: ${SECONDS_PER_TARGET} s, inputs up to $maxLen bytes, log in $BUILD_DIR/fuzz/logs/$target.log"
  run_target "$target" "$maxLen" "$dict" &
  running=$((running + 1))
  if ((running >= JOBS)); then
    wait -n || failed=1
    running=$((running - 1))
  fi
done
while ((running > 0)); do
  wait -n || failed=1
  running=$((running - 1))
done
summary=()
for entry in "${TARGETS[@]}"; do
  read -r target _ <<< "$entry"
  summary+=("$(cat "$WORK/$target.line" 2> /dev/null || echo "$target: no result")")
done

echo
echo "== summary"
printf '%s\n' "${summary[@]}"
exit "$failed"
