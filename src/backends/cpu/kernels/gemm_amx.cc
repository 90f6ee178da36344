// AMX bf16 GEMM (gemm_amx.h). Intrinsics in functions compiled for AMX only; dispatch.cc offers
// the target only where cpu_has_amx(). Weight panels are gemm_bf16_dot's (pack_bf16_panel): a
// block of 32 columns holds, for each pair p, 32 u32 pairs, so 16 pairs x 16 columns of it are
// one B tile (rows 128 bytes apart). Each step multiplies two A tiles (32 rows of x, 16 pairs)
// by two B tiles into four 16 x 16 f32 C tiles.
#include "backends/cpu/kernels/gemm_amx.h"

#include <immintrin.h>

#include <algorithm>
#include <cstring>

#if defined(__linux__)
#include <sys/syscall.h>
#include <unistd.h>
#endif

#if defined(__x86_64__)
#include <cpuid.h>
#define STATICLM_AMX_TARGET __attribute__((target("avx512f,avx512bw,avx512vl,avx512bf16,amx-tile,amx-bf16")))
#endif

namespace staticlm::cpu {

#if defined(__x86_64__) && defined(__linux__)

namespace {

constexpr std::int64_t kNr = kGemmColumnBlock;  // two B tiles of 16 columns
constexpr std::int64_t kKp = 512;               // pairs per panel: 32 tile steps
constexpr std::int64_t kNc = 256;               // columns per panel: 256 x 512 x 4 B = 512 KiB, in L2
static_assert(kNr == 2 * 16 && kKp % kAmxPairs == 0);

// The tile configuration (palette 1): tiles 0-3 C (16 rows of 16 f32), 4-5 A (16 rows of 16
// pairs), 6-7 B (16 pairs of 16 columns); each row 64 bytes. A constant in memory: GCC 12
// does not see that ldtilecfg reads a local one and dropped its stores (the tiles were then
// unconfigured and the first tile load faulted).
struct alignas(64) TileConfig {
  std::uint8_t palette;
  std::uint8_t start_row;
  std::uint8_t reserved[14];
  std::uint16_t bytes_per_row[16];
  std::uint8_t rows[16];
};
constexpr TileConfig kTileConfig = {1, 0, {}, {64, 64, 64, 64, 64, 64, 64, 64}, {16, 16, 16, 16, 16, 16, 16, 16}};

STATICLM_AMX_TARGET void configure_tiles() { _tile_loadconfig(&kTileConfig); }

// C tiles of rows [0, 16 * A) x columns [0, 32) of y (ldy floats apart), `rows` x `cols` of them
// real; through `tmp` when that is not all of them.
// GCC 12's tile loads are asm statements with no memory operand: nothing stops the compiler from
// moving stores to what they read past them. A barrier before each group of loads.
inline void memory_barrier() { __asm__ __volatile__("" ::: "memory"); }

template <int A>
STATICLM_AMX_TARGET void load_c(const float* y, std::int64_t ldy, std::int64_t rows, std::int64_t cols, bool whole,
                                float* tmp) {
  memory_barrier();
  if (whole) {
    _tile_loadd(0, y, ldy * 4);
    _tile_loadd(1, y + 16, ldy * 4);
    if constexpr (A == 2) {
      _tile_loadd(2, y + 16 * ldy, ldy * 4);
      _tile_loadd(3, y + 16 * ldy + 16, ldy * 4);
    }
    return;
  }
  std::fill(tmp, tmp + 32 * 32, 0.0f);
  for (std::int64_t r = 0; r < rows; ++r) std::memcpy(tmp + r * 32, y + r * ldy, static_cast<std::size_t>(cols) * 4);
  memory_barrier();
  _tile_loadd(0, tmp, 128);
  _tile_loadd(1, tmp + 16, 128);
  if constexpr (A == 2) {
    _tile_loadd(2, tmp + 16 * 32, 128);
    _tile_loadd(3, tmp + 16 * 32 + 16, 128);
  }
}

template <int A>
STATICLM_AMX_TARGET void store_c(float* y, std::int64_t ldy, std::int64_t rows, std::int64_t cols, bool whole,
                                 float* tmp) {
  float* dst = whole ? y : tmp;
  const std::int64_t ld = whole ? ldy : 32;
  _tile_stored(0, dst, ld * 4);
  _tile_stored(1, dst + 16, ld * 4);
  if constexpr (A == 2) {
    _tile_stored(2, dst + 16 * ld, ld * 4);
    _tile_stored(3, dst + 16 * ld + 16, ld * 4);
  }
  if (!whole) {
    for (std::int64_t r = 0; r < rows; ++r) std::memcpy(y + r * ldy, tmp + r * 32, static_cast<std::size_t>(cols) * 4);
  }
}

// y block [rows, cols] (+)= x rows (A row tiles, `tiles` u32 apart) . panel block, kp pairs (a
// multiple of 16).
template <int A>
STATICLM_AMX_TARGET void block(const std::uint32_t* x, std::int64_t tiles, const std::uint32_t* panel, std::int64_t kp,
                               float* y, std::int64_t ldy, std::int64_t rows, std::int64_t cols, bool accumulate) {
  alignas(64) float tmp[32 * 32];
  const bool whole = rows == 16 * A && cols == kNr;
  memory_barrier();  // the panel and x were just written
  if (accumulate) {
    load_c<A>(y, ldy, rows, cols, whole, tmp);
  } else {
    _tile_zero(0);
    _tile_zero(1);
    if constexpr (A == 2) {
      _tile_zero(2);
      _tile_zero(3);
    }
  }
  for (std::int64_t p = 0; p < kp; p += kAmxPairs) {
    _tile_loadd(6, panel + p * kNr, kNr * 4);
    _tile_loadd(7, panel + p * kNr + 16, kNr * 4);
    _tile_loadd(4, x + p * 16, 64);
    _tile_dpbf16ps(0, 4, 6);
    _tile_dpbf16ps(1, 4, 7);
    if constexpr (A == 2) {
      _tile_loadd(5, x + tiles + p * 16, 64);
      _tile_dpbf16ps(2, 5, 6);
      _tile_dpbf16ps(3, 5, 7);
    }
  }
  store_c<A>(y, ldy, rows, cols, whole, tmp);
}

// Linux's XFEATURE_XTILEDATA permission request (arch/x86/include/uapi/asm/prctl.h).
constexpr int kArchReqXcompPerm = 0x1023;
constexpr int kXfeatureXtiledata = 18;

bool detect_amx() {
  // The kernels around the tiles are AVX-512 BF16 (libgcc checks the OS saves the zmm state).
  __builtin_cpu_init();
  if (!__builtin_cpu_supports("avx512bf16") || !__builtin_cpu_supports("avx512bw") ||
      !__builtin_cpu_supports("avx512vl")) {
    return false;
  }
  unsigned a, b, c, d;
  if (__get_cpuid_max(0, nullptr) < 7) return false;
  __cpuid_count(7, 0, a, b, c, d);
  const bool tile = (d >> 24) & 1, bf16 = (d >> 22) & 1;
  __cpuid(1, a, b, c, d);
  const bool osxsave = (c >> 27) & 1;
  if (!tile || !bf16 || !osxsave) return false;
  unsigned lo, hi;
  __asm__("xgetbv" : "=a"(lo), "=d"(hi) : "c"(0));
  return ((lo >> 17) & 3) == 3;  // XTILECFG and XTILEDATA saved by the OS
}

}  // namespace

bool cpu_has_amx() {
  static const bool has = detect_amx();
  return has;
}

bool amx_permitted() {
  static const bool granted = cpu_has_amx() && syscall(SYS_arch_prctl, kArchReqXcompPerm, kXfeatureXtiledata) == 0;
  return granted;
}

STATICLM_AMX_TARGET void gemm_bf16_amx(const std::uint32_t* xb, std::int64_t ldxb, const GemmArgs& a,
                                       std::int64_t j0, std::int64_t j1) {
  if (gemm_without_products(a, j0, j1)) return;
  const std::int64_t pairs = (a.k + 1) / 2;
  static thread_local AlignedScratch scratch;
  auto* panel = static_cast<std::uint32_t*>(scratch.get(sizeof(std::uint32_t) * kNc * kKp));
  configure_tiles();
  for (std::int64_t jc = j0; jc < j1; jc += kNc) {
    const std::int64_t nc = std::min(kNc, j1 - jc);
    for (std::int64_t pc = 0; pc < pairs; pc += kKp) {
      const std::int64_t kp = std::min(kKp, pairs - pc);
      const std::int64_t kp_tiles = (kp + kAmxPairs - 1) / kAmxPairs * kAmxPairs;
      pack_bf16_panel(a, jc, nc, pc, kp, kp_tiles, panel);
      for (std::int64_t ir = 0; ir < a.n; ir += 2 * kAmxRows) {
        const std::int64_t rows = std::min(2 * kAmxRows, a.n - ir);
        for (std::int64_t jr = 0; jr < nc; jr += kNr) {
          const std::uint32_t* x = xb + ir * ldxb + pc * 16;  // row tile ir / 16, pair tile pc / 16
          const std::uint32_t* p = panel + (jr / kNr) * kNr * kp_tiles;
          float* y = a.y + ir * a.ldy + jc + jr;
          const std::int64_t cols = std::min(kNr, nc - jr);
          if (rows > kAmxRows) {
            block<2>(x, 16 * ldxb, p, kp_tiles, y, a.ldy, rows, cols, pc > 0);
          } else {
            block<1>(x, 16 * ldxb, p, kp_tiles, y, a.ldy, rows, cols, pc > 0);
          }
        }
      }
    }
  }
  _tile_release();
}

STATICLM_AMX_TARGET void pack_amx_tiles(const float* x, std::int64_t n, std::int64_t k, std::uint32_t* out,
                                        std::int64_t ld) {
  const std::int64_t rows = (n + kAmxRows - 1) / kAmxRows * kAmxRows;
  for (std::int64_t r = 0; r < rows; ++r) {
    std::uint32_t* row = out + (r / 16) * 16 * ld + (r % 16) * 16;  // pair tile q at row + q * 256
    for (std::int64_t e = 0; e < 2 * ld; e += 32) {
      __m512 lo = _mm512_setzero_ps(), hi = _mm512_setzero_ps();
      if (r < n && e < k) {
        const float* src = x + r * k + e;
        const std::int64_t left = k - e;
        const __mmask16 m0 = static_cast<__mmask16>(left >= 16 ? 0xFFFF : (1u << left) - 1);
        const __mmask16 m1 = static_cast<__mmask16>(left >= 32 ? 0xFFFF : left <= 16 ? 0 : (1u << (left - 16)) - 1);
        lo = _mm512_maskz_loadu_ps(m0, src);
        hi = _mm512_maskz_loadu_ps(m1, src + 16);
      }
      // cvtne2ps: the second operand's 16 bf16 values first (elements e..e+15), then the first's.
      _mm512_storeu_si512(row + (e / 32) * 256, (__m512i)_mm512_cvtne2ps_pbh(hi, lo));
    }
  }
}

STATICLM_AMX_TARGET float amx_dot_chains(std::int64_t iters, float seed) {
  configure_tiles();
  alignas(64) float one[16 * 16];
  alignas(64) std::uint32_t pairs[16 * 16];
  std::uint32_t bits;
  std::memcpy(&bits, &seed, 4);
  std::fill(pairs, pairs + 16 * 16, (bits >> 16) * 0x10001u);  // (seed, seed) truncated to bf16
  memory_barrier();
  _tile_loadd(4, pairs, 64);
  _tile_loadd(5, pairs, 64);
  _tile_loadd(6, pairs, 64);
  _tile_loadd(7, pairs, 64);
  _tile_zero(0);
  _tile_zero(1);
  _tile_zero(2);
  _tile_zero(3);
  for (std::int64_t i = 0; i < iters; ++i) {
    _tile_dpbf16ps(0, 4, 6);
    _tile_dpbf16ps(1, 4, 7);
    _tile_dpbf16ps(2, 5, 6);
    _tile_dpbf16ps(3, 5, 7);
  }
  _tile_stored(3, one, 64);
  _tile_release();
  return one[0];
}

#else

bool cpu_has_amx() { return false; }

bool amx_permitted() { return false; }

void pack_amx_tiles(const float*, std::int64_t, std::int64_t, std::uint32_t*, std::int64_t) {}

float amx_dot_chains(std::int64_t, float) { return 0; }

void gemm_bf16_amx(const std::uint32_t*, std::int64_t, const GemmArgs&, std::int64_t, std::int64_t) {}

#endif

}  // namespace staticlm::cpu
