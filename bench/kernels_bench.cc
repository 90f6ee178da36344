// The CPU kernel families on their own, at E2B sizes, on the dispatched kernel target
// (STATICLM_KERNEL_TARGET pins another): decode GEMV (bytes/s of weights streamed from memory),
// prefill GEMM (flop/s, bf16 and f32 activations), attention (decode over a context, causal
// prefill), and the GELU gate. Compare the GEMV rate with `staticlm bench`'s read bandwidth and
// the GEMM rate with its FMA / bf16-dot peaks.
//   build/bench_kernels [--benchmark_filter=Gemv]
#include <benchmark/benchmark.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <memory>
#include <vector>

#include "backends/cpu/kernels/activations.h"
#include "backends/cpu/kernels/attention.h"
#include "backends/cpu/kernels/dispatch.h"
#include "backends/cpu/kernels/gemv_vnni.h"
#include "backends/cpu/kernels/matmul.h"
#include "base/bandwidth.h"
#include "quant/formats.h"
#include "runtime/masks.h"

namespace staticlm::cpu {
namespace {

std::vector<float> wave(std::size_t n, double f) {
  std::vector<float> v(n);
  for (std::size_t i = 0; i < v.size(); ++i) v[i] = static_cast<float>(std::sin(f * static_cast<double>(i))) * 0.05f;
  return v;
}

ThreadPool& pool_of(int threads) {
  static ThreadPool one(1), two(2);
  return threads == 1 ? one : two;
}

// args: dtype (0 f32, 1 f16, 2 bf16, 3 q8, 4 q4, 5 npu-w4 U4), threads, rows. Matrices of rows x 1536 rotate
// through about 1 GB so the weights come from memory, as in a decode step; small matrices show
// the cost of each parallel loop. Bytes counted: values plus scales. `offset`: the weight values
// start that many bytes past a cache line (0: on one, as in the files staticlm writes).
void gemv_bench(benchmark::State& state, std::int64_t offset) {
  const int kind = static_cast<int>(state.range(0));
  const std::int64_t rows = state.range(2), cols = state.range(4);
  struct Stored {
    Tensor values;
    std::vector<float> s8;
    std::vector<std::uint16_t> s4;
    std::vector<std::uint8_t> zero;
    std::shared_ptr<std::uint8_t[]> shifted;  // the values, on a cache line plus `offset`
    WeightMatrix w;
  };
  const DType dt = kind == 0 ? DType::kF32 : kind == 1 ? DType::kF16 : kind == 2 ? DType::kBF16 : kind == 3 ? DType::kI8 : kind == 4 ? DType::kI4 : DType::kU4;
  std::int64_t bytes = static_cast<std::int64_t>(dtype_bytes(dt, static_cast<std::size_t>(rows * cols)));
  bytes += kind == 3 ? rows * 4 : kind == 4 ? rows * cols / quant::kQ4Group * 2 : kind == 5 ? rows * 5 : 0;
  // The 4th argument, when present, is the bytes cycled through in KiB: 1 GiB measures streaming
  // from memory; a working set that fits in L2 measures the kernel's arithmetic alone.
  const std::int64_t cycled = state.range(3) > 0 ? state.range(3) << 10 : std::int64_t{1} << 30;
  const std::int64_t count = std::max<std::int64_t>(2, cycled / bytes);
  std::vector<Stored> w(static_cast<std::size_t>(count));
  for (std::int64_t i = 0; i < count; ++i) {
    Stored& s = w[static_cast<std::size_t>(i)];
    if (i > 0) {
      // Copies of the first matrix with one byte per page changed: distinct contents (identical
      // pages could be merged by the host and served from cache) without quantizing 1 GB again.
      s = w[0];
      auto* bytes = static_cast<std::uint8_t*>(s.values.data());
      for (std::size_t b = 0; b < s.values.nbytes(); b += 4096) bytes[b] = static_cast<std::uint8_t>(bytes[b] + i);
      s.w.data = s.values.data();
      if (kind == 3 || kind == 5) s.w.scales = s.s8.data();
      if (kind == 4) s.w.scales = s.s4.data();
      if (kind == 5) s.w.zero_points = s.zero.data();
      if (kind <= 2) s.w = weight_matrix(s.values.view(), "w");
      continue;
    }
    const auto v = wave(static_cast<std::size_t>(rows * cols), 0.37);
    if (kind <= 2) {
      s.values = Tensor::from_f32(dt, Shape{rows, cols}, v);
      s.w = weight_matrix(s.values.view(), "w");
    } else if (kind == 3) {
      s.values = Tensor(DType::kI8, Shape{rows, cols});
      s.s8.resize(static_cast<std::size_t>(rows));
      quant::quantize_q8(v, rows, cols, {static_cast<std::int8_t*>(s.values.data()), v.size()}, s.s8);
      s.w = {DType::kI8, rows, cols, s.values.data()};
      s.w.scales = s.s8.data();
    } else if (kind == 5) {  // npu-w4 U4
      s.values = Tensor(DType::kU4, Shape{rows, cols});
      s.s8.resize(static_cast<std::size_t>(rows));
      s.zero.resize(static_cast<std::size_t>(rows));
      quant::quantize_asym(v, rows, cols, 4, {static_cast<std::uint8_t*>(s.values.data()), v.size() / 2}, s.s8, s.zero);
      s.w = {DType::kU4, rows, cols, s.values.data()};
      s.w.scales = s.s8.data();
      s.w.zero_points = s.zero.data();
    } else {
      s.values = Tensor(DType::kI4, Shape{rows, cols});
      s.s4.resize(static_cast<std::size_t>(rows * cols / quant::kQ4Group));
      quant::quantize_q4(v, rows, cols, {static_cast<std::uint8_t*>(s.values.data()), v.size() / 2}, s.s4);
      s.w = {DType::kI4, rows, cols, s.values.data()};
      s.w.scales = s.s4.data();
    }
  }
  // Every matrix is copied to a buffer of its own that starts on a cache line (a Tensor's
  // storage may not: glibc puts large blocks 16 bytes past a page), plus `offset`.
  for (Stored& s : w) {
    const std::size_t n = s.values.nbytes();
    s.shifted.reset(new std::uint8_t[n + 128]);
    const auto line = (reinterpret_cast<std::uintptr_t>(s.shifted.get()) + 63) / 64 * 64;
    auto* at = reinterpret_cast<std::uint8_t*>(line) + offset;
    std::memcpy(at, s.values.data(), n);
    s.w.data = at;
    s.values = Tensor();
  }
  const auto x = wave(cols, 0.11);
  std::vector<float> y(rows);
  ThreadPool& pool = pool_of(static_cast<int>(state.range(1)));
  std::int64_t i = 0;
  for (auto _ : state) {
    matmul(x.data(), 1, w[static_cast<std::size_t>(i++ % count)].w, y.data(), &pool);
    benchmark::DoNotOptimize(y.data());
  }
  state.SetBytesProcessed(state.iterations() * bytes);
  state.SetLabel(kernel_target());
}
void BM_Gemv(benchmark::State& state) { gemv_bench(state, 0); }
// args: weight kind (0 f32, 1 f16, 2 bf16, 3 q8, 4 q4, 5 npu-w4 U4), threads, rows, KiB cycled
// (0: 1 GiB, from memory; 512 or 8192: a few matrices that stay in L2 / L3, the arithmetic
// alone), columns (1536: E2B's hidden size; 256: its per-layer projection; 6144 and 12288: its
// MLP down projections, whose q4 rows carry 6 and 12 lines of group scales).
BENCHMARK(BM_Gemv)
    ->ArgsProduct({{0, 1, 2, 3, 4, 5}, {1, 2}, {6144}, {0}, {1536}})
    ->Args({2, 2, 256, 0, 1536})
    ->Args({2, 2, 2048, 0, 1536})
    ->ArgsProduct({{2, 3, 4, 5}, {1}, {256}, {512}, {1536}})
    ->ArgsProduct({{2, 3, 4, 5}, {1}, {2048}, {8192}, {1536}})
    ->ArgsProduct({{3, 4, 5}, {1, 2}, {256, 1536}, {0, 4096}, {1536, 256}})
    ->ArgsProduct({{3, 4, 5}, {2}, {1536}, {0}, {6144, 12288}})
    ->UseRealTime();

// BM_Gemv's args, then the byte offset of the weights from a cache line: 52 is where E2B's
// npu-w4 matrices lay in files written before tensors were put on cache lines (every 64-byte
// load then touches two lines).
void BM_GemvOffset(benchmark::State& state) { gemv_bench(state, state.range(5)); }
BENCHMARK(BM_GemvOffset)->ArgsProduct({{3, 4, 5}, {2}, {1536}, {0}, {6144}, {0, 52}})->UseRealTime();

// args: threads. The ceiling for BM_Gemv's bytes/s from memory, measured as `staticlm bench`
// does (base/bandwidth.h): run it next to the GEMVs, the machine's bandwidth varies by the minute.
void BM_ReadBandwidth(benchmark::State& state) {
  ThreadPool& pool = pool_of(static_cast<int>(state.range(0)));
  double best = 0;
  for (auto _ : state) best = std::max(best, measure_read_bandwidth(pool, std::size_t{1} << 30, 1));
  state.counters["GB/s"] = best;
}
BENCHMARK(BM_ReadBandwidth)->Arg(1)->Arg(2)->Iterations(3)->UseRealTime();

// args: rows n, bf16 activations (0/1), threads: [n, 1536] x [6144, 1536]^T, bf16 weights.
void BM_Gemm(benchmark::State& state) {
  const std::int64_t n = state.range(0), k = 1536, m = 6144;
  const Tensor w = Tensor::from_f32(DType::kBF16, Shape{m, k}, wave(static_cast<std::size_t>(m * k), 0.37));
  WeightMatrix wm = weight_matrix(w.view(), "w");
  wm.bf16_activations = state.range(1) != 0;
  const auto x = wave(static_cast<std::size_t>(n * k), 0.11);
  std::vector<float> y(static_cast<std::size_t>(n * m));
  ThreadPool& pool = pool_of(static_cast<int>(state.range(2)));
  for (auto _ : state) {
    matmul(x.data(), n, wm, y.data(), &pool);
    benchmark::DoNotOptimize(y.data());
  }
  state.counters["GFLOP/s"] = benchmark::Counter(static_cast<double>(2 * n * k * m) * state.iterations() / 1e9,
                                                 benchmark::Counter::kIsRate);
  state.SetLabel(kernel_target());
}
BENCHMARK(BM_Gemm)->ArgsProduct({{64, 512}, {0, 1}, {1, 2}})->UseRealTime();

// args: context length, threads, head_dim (512: a full-attention E2B layer, 256: a sliding
// one), caches cycled. One decode row, 8 heads, one KV head, max_seq 2048 (1 cache) or ctx + 64
// (128 caches: as in a decode step, where the weights streamed since the last step have pushed
// the cache out to memory).
void BM_AttentionDecode(benchmark::State& state) {
  const std::int64_t ctx = state.range(0), heads = 8, hd = state.range(2), caches = state.range(3);
  const std::int64_t s = caches == 1 ? 2048 : ctx + 64;
  std::vector<std::vector<float>> k, v;
  for (std::int64_t c = 0; c < caches; ++c) {
    k.push_back(wave(static_cast<std::size_t>((s - 1) * hd), 0.3 + 0.01 * static_cast<double>(c)));
    v.push_back(wave(static_cast<std::size_t>((s - 1) * hd), 0.7 + 0.01 * static_cast<double>(c)));
  }
  const auto ck = wave(static_cast<std::size_t>(hd), 0.2), cv = wave(static_cast<std::size_t>(hd), 0.9);
  const auto q = wave(static_cast<std::size_t>(heads * hd), 0.5);
  std::vector<float> mask(s), out(heads * hd), scratch;
  build_decode_mask(mask, s, ctx, std::nullopt, -120.0f);
  ThreadPool& pool = pool_of(static_cast<int>(state.range(1)));
  std::int64_t i = 0;
  for (auto _ : state) {
    const auto c = static_cast<std::size_t>(i++ % caches);
    const KvSegment segs[2] = {{k[c].data(), v[c].data(), s - 1, (s - 1) * hd}, {ck.data(), cv.data(), 1, hd}};
    attention(q.data(), {1, heads, 1, hd}, segs, mask.data(), s, 1.0f, out.data(), scratch, &pool);
    benchmark::DoNotOptimize(out.data());
  }
  state.SetLabel(kernel_target());
}
BENCHMARK(BM_AttentionDecode)
    ->ArgsProduct({{128, 1024}, {1, 2}, {512}, {1}})
    ->ArgsProduct({{16, 48, 128}, {1, 2}, {256}, {128}})
    ->ArgsProduct({{128}, {1, 2}, {512}, {128}})
    ->UseRealTime();

// args: valid rows, threads. Causal prefill of a sliding E2B layer's shape (8 heads of 256).
void BM_AttentionPrefill(benchmark::State& state) {
  const std::int64_t n = state.range(0), heads = 8, hd = 256;
  const auto k = wave(static_cast<std::size_t>(n * hd), 0.3), v = wave(static_cast<std::size_t>(n * hd), 0.7);
  const auto q = wave(static_cast<std::size_t>(n * heads * hd), 0.5);
  std::vector<float> mask(static_cast<std::size_t>(n * n)), out(q.size()), scratch;
  build_prefill_mask(mask, n, n, std::nullopt, -120.0f);
  const KvSegment seg{k.data(), v.data(), n, n * hd};
  ThreadPool& pool = pool_of(static_cast<int>(state.range(1)));
  for (auto _ : state) {
    attention(q.data(), {n, heads, 1, hd}, std::span(&seg, 1), mask.data(), n, 1.0f, out.data(), scratch, &pool);
    benchmark::DoNotOptimize(out.data());
  }
  // QK^T and PV over the causal half: 2 x 2 x heads x hd x n (n + 1) / 2 flops.
  state.counters["GFLOP/s"] = benchmark::Counter(2.0 * heads * hd * n * (n + 1) * state.iterations() / 1e9,
                                                 benchmark::Counter::kIsRate);
  state.SetLabel(kernel_target());
}
BENCHMARK(BM_AttentionPrefill)->ArgsProduct({{512}, {1, 2}})->UseRealTime();

void BM_GeluTanhMul(benchmark::State& state) {
  const std::int64_t n = 512 * 6144;
  auto g = wave(static_cast<std::size_t>(n), 0.3);
  const auto u = wave(static_cast<std::size_t>(n), 0.7);
  for (auto _ : state) {
    gelu_tanh_mul(g.data(), u.data(), n);
    benchmark::DoNotOptimize(g.data());
  }
  state.SetItemsProcessed(state.iterations() * n);
  state.SetLabel(kernel_target());
}
BENCHMARK(BM_GeluTanhMul);

// A decode GEMV's activation row quantized to int8 groups (prepare_vnni_row: the caller does it
// alone before each quantized decode GEMV, so it is serial time in every decode step). args:
// dtype (3 q8, 4 q4, 5 npu-w4 U4), k. Items: activations.
void BM_PrepareVnniRow(benchmark::State& state) {
  const DType dt = state.range(0) == 3 ? DType::kI8 : state.range(0) == 4 ? DType::kI4 : DType::kU4;
  const std::int64_t k = state.range(1);
  if (!vnni_kernels()) return state.SkipWithError("no AVX-512 VNNI kernels on this CPU");
  const auto x = wave(static_cast<std::size_t>(k), 0.37);
  VnniRow row;
  for (auto _ : state) {
    prepare_vnni_row(x.data(), k, dt, row);
    benchmark::DoNotOptimize(row.xq.data());
  }
  state.SetItemsProcessed(state.iterations() * k);
  state.SetLabel(kernel_target());
}
BENCHMARK(BM_PrepareVnniRow)->ArgsProduct({{3, 4, 5}, {1536, 12288}});

}  // namespace
}  // namespace staticlm::cpu

BENCHMARK_MAIN();
