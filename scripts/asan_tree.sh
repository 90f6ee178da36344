# Sourced by scripts/sanitize.sh and scripts/fuzz.sh: configures build-asan/, the one sanitized
# tree: clang 14, AddressSanitizer + UBSan (any report aborts), -O1, every library area, the
# CLI, the C API, the plug-ins, the tests and the libFuzzer targets (no benchmarks). Highway is
# compiled for one static target (AVX2), so the tree builds in ~9 minutes on 2 cores instead of
# ~25; the dispatched SIMD targets are each tested against the scalar reference by the normal
# build (scripts/test.sh). Linked by lld, executables not position independent: the ~30 links of
# 35 MB binaries took 71 CPU-s with GNU ld (12 s with lld), and every sanitized CLI process of
# the integration tests relocated its PIE binary at start (~10 ms each).
asan_tree=build-asan
cmake -S . -B "$asan_tree" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCMAKE_CXX_COMPILER=clang++-14 \
  -DCMAKE_C_COMPILER=clang-14 -DCMAKE_CXX_FLAGS_RELWITHDEBINFO="-O1 -g1" -DCMAKE_C_FLAGS_RELWITHDEBINFO="-O1 -g1" \
  -DCMAKE_CXX_FLAGS="-mavx2 -mfma -mf16c -mbmi -mbmi2 -DHWY_COMPILE_ONLY_STATIC=1" \
  -DCMAKE_EXE_LINKER_FLAGS="-fuse-ld=lld-14 -no-pie" -DCMAKE_SHARED_LINKER_FLAGS="-fuse-ld=lld-14" \
  -DSTATICLM_FUZZ=ON -DSTATICLM_BENCH=OFF >/dev/null
export ASAN_OPTIONS=detect_leaks=1:abort_on_error=1
export UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1
