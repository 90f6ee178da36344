// The matrices decode reads whole every step (every decoder layer's projections, the LM head,
// the per-layer projection), copied into one buffer of transparent huge pages instead of being
// read through the checkpoint's memory map (`--no-mmap`; docs/quantization.md has what it
// measured). Tables read a few rows at a time (the per-layer embeddings) stay mapped.
#pragma once

#include <cstddef>
#include <functional>
#include <memory>
#include <vector>

#include "backends/cpu/kernels/matmul.h"
#include "base/huge_pages.h"

namespace staticlm::cpu {

// Told each source range make_resident copied.
using ReleasedRange = std::function<void(const void*, std::size_t)>;

// Bytes of a matrix's values, scales and zero points, each padded to 64 bytes as copied.
std::size_t resident_bytes(const WeightMatrix& m);

// Copies the values, scales and zero points of each non-empty matrix into one new buffer and
// points the matrices at the copies. `released` is then told each source range (it may drop a
// memory-mapped file's pages from the process; empty: nothing is told).
std::unique_ptr<HugePageBuffer> make_resident(const std::vector<WeightMatrix*>& matrices,
                                              const ReleasedRange& released);

}  // namespace staticlm::cpu
