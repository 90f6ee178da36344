#!/usr/bin/env bash
# The hostile-input stage of CI (docs/robustness.md): one clang build with AddressSanitizer and
# UBSan (any report aborts) of the parsers (every source area but the CPU kernels, the
# inspector and quantization) into build-asan/, then
#   1. the unit tests of the parser areas that need no kernels (base, tensor, static, model,
#      text, vision) and of the runtime's host side (runtime_host: KV cache, masks, RoPE,
#      sampling, soft-capping) under the sanitizers, those that run the CLI binary aside, and
#   2. every libFuzzer target of fuzz/ once over the inputs fuzzing found (fuzz/regressions/), then
#      for SECONDS each (default 15), from its committed seeds.
# Usage: scripts/sanitize.sh [SECONDS]. Exits non-zero on the first failure.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
seconds=${1:-15}
jobs=$(nproc 2>/dev/null || echo 2)
areas=(base tensor static model text vision runtime_host)
# Tests that run the staticlm binary (not built here: it links the kernels) are left out.
cli_tests="-TextCli.*:PreprocessCli.*:ChatTemplate.ChatFormat*:ChatTemplate.TokenizerConfig*:ChatTemplate.TemplateErrors*"
fuzzers=()
for f in fuzz/*_fuzz.cc; do fuzzers+=("fuzz_$(basename "$f" _fuzz.cc)"); done
cmake -S . -B build-asan -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCMAKE_CXX_COMPILER=clang++-14 \
  -DCMAKE_CXX_FLAGS_RELWITHDEBINFO="-O1 -g1" -DSTATICLM_FUZZ=ON >/dev/null
cmake --build build-asan -j "$jobs" --target "${areas[@]/#/hostile_test_}" "${fuzzers[@]}"
export ASAN_OPTIONS=detect_leaks=1:abort_on_error=1
export UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1
for area in "${areas[@]}"; do
  echo "sanitize: unit tests of $area" >&2
  build-asan/"hostile_test_$area" --gtest_filter="$cli_tests"
done
mkdir -p build-asan/artifacts
for fuzzer in "${fuzzers[@]}"; do
  name=${fuzzer#fuzz_}
  corpus="build-asan/corpus/$name"
  mkdir -p "$corpus"
  status=0
  if [ -d "fuzz/regressions/$name" ]; then
    build-asan/"$fuzzer" fuzz/regressions/"$name"/* >"build-asan/$name.regressions.log" 2>&1 || status=$?
    echo "sanitize: fuzz $name regressions: exit $status" >&2
    if [ "$status" -ne 0 ]; then
      grep -E "ERROR|SUMMARY|what\(\)" "build-asan/$name.regressions.log" >&2 || true
      exit 1
    fi
  fi
  dict=()
  if [ -f "fuzz/dicts/$name.dict" ]; then dict=(-dict="fuzz/dicts/$name.dict"); fi
  build-asan/"$fuzzer" -max_total_time="$seconds" -rss_limit_mb=2048 -timeout=30 -print_final_stats=1 "${dict[@]}" \
    -artifact_prefix="build-asan/artifacts/$name-" "$corpus" "fuzz/corpus/$name" >"build-asan/$name.log" 2>&1 || status=$?
  runs=$(grep -E "^stat::number_of_executed_units" "build-asan/$name.log" | awk '{print $2}')
  echo "sanitize: fuzz $name ${seconds} s: ${runs:-0} runs, exit $status" >&2
  if [ "$status" -ne 0 ]; then
    grep -E "ERROR|SUMMARY|what\(\)|Test unit written" "build-asan/$name.log" >&2 || true
    exit 1
  fi
done
echo "sanitize: all passed" >&2
