// The AMX (Advanced Matrix Extensions) bf16 GEMM: a tile multiply-add (`tdpbf16ps`) does 16 x 16
// x 32 bf16 multiply-adds into f32, 16 times an AVX-512 f32 FMA's work. The same numbers as the
// AVX-512 BF16 GEMM (bf16 activations and weights, quantized weights dequantized and rounded to
// bf16; products exact, sums in f32), summed in another order. Linux hands a process the tile
// registers only on request (arch_prctl), which cpu_has_amx makes once.
#pragma once

#include <cstdint>

#include "backends/cpu/kernels/gemm.h"

namespace staticlm::cpu {

// True when the CPU has AMX-TILE and AMX-BF16 (and AVX-512 BF16) and the OS saves the tile
// state. Asks nothing of the OS.
bool cpu_has_amx();

// Asks Linux, once per process, for the tile registers (arch_prctl(ARCH_REQ_XCOMP_PERM,
// XFEATURE_XTILEDATA)); true when granted. Call before any tile instruction. A granted process
// has larger signal frames: a later sigaltstack() smaller than they need fails (an embedding
// program with small alternate signal stacks can pin a target without AMX).
bool amx_permitted();

// Rows of x in an A tile and pairs of k per tile step: gemm_bf16_amx's x has rows rounded up to
// a multiple of kAmxRows and pairs to a multiple of kAmxPairs, zero padded.
inline constexpr std::int64_t kAmxRows = 16;
inline constexpr std::int64_t kAmxPairs = 16;

// x [n, k] f32 -> bf16 pairs (round to nearest even) in A tiles, each one contiguous 1 KiB (a
// tile load then reads one sequential stream): the tile of rows [16 r, 16 r + 16) and pairs
// [16 q, 16 q + 16) at out + r * 16 * ld + q * 256, row-major inside; ld pairs per row, at
// least (k + 1) / 2 and a multiple of kAmxPairs; rows up to n rounded up to kAmxRows, zero
// past n and past k.
void pack_amx_tiles(const float* x, std::int64_t n, std::int64_t k, std::uint32_t* out, std::int64_t ld);

// y[:, j0:j1] = x . W^T for BF16 or quantized weights in `a` (a.x unused): x from
// pack_amx_tiles with ld = ldxb. Only call when amx_kernels().
void gemm_bf16_amx(const std::uint32_t* xb, std::int64_t ldxb, const GemmArgs& a, std::int64_t j0, std::int64_t j1);

// Tile multiply-adds per round of amx_dot_chains: four independent C tiles, each 16 x 16 x 32.
inline constexpr double kAmxFlopsPerRound = 4.0 * 16 * 16 * 32 * 2;
// `iters` rounds of tdpbf16ps on tiles only (no memory traffic); returns an element of the result
// so nothing folds. Only call when cpu_has_amx().
float amx_dot_chains(std::int64_t iters, float seed);

}  // namespace staticlm::cpu
