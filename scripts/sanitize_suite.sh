#!/usr/bin/env bash
# The whole test suite under AddressSanitizer + UBSan (any report aborts), in build-asan-suite/:
# every library area, the CLI, the C API, the plug-ins and all the tests, with clang. Highway is
# compiled for one static target (AVX2) so the build takes ~9 minutes on 2 cores instead of
# ~25; the dispatched SIMD targets are each tested against the scalar reference by the normal
# build (scripts/test.sh). The suite takes ~10 minutes under the sanitizers, which does not fit
# the 30-minute CI beside the normal build, so CI runs scripts/sanitize.sh (the parsers and the
# runtime host, plus the fuzz targets) and this one is for a longer job or by hand.
# Usage: scripts/sanitize_suite.sh [CTEST ARGS...]  (e.g. -R Serve)
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
jobs=$(nproc 2>/dev/null || echo 2)
cmake -S . -B build-asan-suite -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCMAKE_CXX_COMPILER=clang++-14 \
  -DCMAKE_C_COMPILER=clang-14 -DCMAKE_CXX_FLAGS_RELWITHDEBINFO="-O1 -g1" \
  -DCMAKE_CXX_FLAGS="-mavx2 -mfma -mf16c -mbmi -mbmi2 -DHWY_COMPILE_ONLY_STATIC=1" -DSTATICLM_SANITIZE=ON >/dev/null
cmake --build build-asan-suite -j "$jobs"
export ASAN_OPTIONS=detect_leaks=1:abort_on_error=1
export UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1
ctest --test-dir build-asan-suite --output-on-failure -j "$jobs" --timeout 900 "$@"
