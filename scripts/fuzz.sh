#!/usr/bin/env bash
# Builds the libFuzzer targets of fuzz/ (in the sanitized tree build-asan/, scripts/asan_tree.sh)
# and runs them:
#   scripts/fuzz.sh                   every target, 60 s each
#   scripts/fuzz.sh TARGET [SECONDS]  one target (e.g. safetensors), default 60 s
#   scripts/fuzz.sh all SECONDS       every target, SECONDS each
# Seeds come from fuzz/corpus/<target>/ (read only); what the fuzzer finds goes to
# build-asan/corpus/<target>/, and a crashing input to build-asan/artifacts/. Exits 1 on the
# first target that crashes, leaks or trips a sanitizer.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
target=${1:-all}
seconds=${2:-60}
targets=()
for f in fuzz/*_fuzz.cc; do
  name=$(basename "$f" _fuzz.cc)
  if [ "$target" = all ] || [ "$target" = "$name" ]; then targets+=("$name"); fi
done
if ((${#targets[@]} == 0)); then
  echo "error: fuzz target '$target' does not exist; targets: $(ls fuzz/*_fuzz.cc | xargs -n1 basename | sed 's/_fuzz.cc//' | tr '\n' ' ')" >&2
  exit 2
fi
jobs=$(nproc 2>/dev/null || echo 2)
source scripts/asan_tree.sh
cmake --build build-asan -j "$jobs" --target "${targets[@]/#/fuzz_}"
mkdir -p build-asan/artifacts
for name in "${targets[@]}"; do
  mkdir -p "build-asan/corpus/$name"
  echo "fuzz: $name for ${seconds} s" >&2
  # -rss_limit_mb: running out of memory is a finding too (bad input must be refused first).
  log="build-asan/$name.log"
  status=0
  dict=()
  if [ -f "fuzz/dicts/$name.dict" ]; then dict=(-dict="fuzz/dicts/$name.dict"); fi
  # The outer kill: libFuzzer can deadlock while reporting out-of-memory.
  timeout -s KILL $((seconds + 120)) build-asan/fuzz_"$name" -max_total_time="$seconds" -rss_limit_mb=2048 -timeout=30 -print_final_stats=1 "${dict[@]}" \
    -artifact_prefix="build-asan/artifacts/$name-" "build-asan/corpus/$name" "fuzz/corpus/$name" >"$log" 2>&1 || status=$?
  grep -E "^(#[0-9]+ +DONE|stat::number_of_executed_units|stat::average_exec_per_sec|stat::peak_rss_mb|INFO: seed corpus)" "$log" || true
  if [ "$status" -ne 0 ]; then
    grep -E "ERROR|SUMMARY|Test unit written" "$log" >&2 || true
    echo "fuzz: $name FAILED (exit $status); log: $log, input in build-asan/artifacts/" >&2
    exit 1
  fi
done
