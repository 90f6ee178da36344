// CPU backend kernel throughput at Gemma 4 E2B sizes: the matmuls of one decoder layer and of
// the LM head (bf16 weights, f32 math) for a decode step (1 row) and a prefill chunk (64 rows),
// and decode attention over a full 2048-slot cache, on 1 or 2 threads. A decode token of E2B costs about
// 35 layers x (q, k, v, o, gate, up, down, PLE) + the LM head; see the per-op times here.
//   build/bench_generate [--benchmark_filter=...]
#include <benchmark/benchmark.h>

#include <cmath>
#include <vector>

#include "backends/cpu/kernels/attention.h"
#include "backends/cpu/kernels/matmul.h"

namespace staticlm::cpu {
namespace {

Tensor random_bf16(std::int64_t rows, std::int64_t cols) {
  std::vector<float> v(static_cast<std::size_t>(rows * cols));
  for (std::size_t i = 0; i < v.size(); ++i) v[i] = static_cast<float>(std::sin(0.1 * static_cast<double>(i))) * 0.02f;
  return Tensor::from_f32(DType::kBF16, Shape{rows, cols}, v);
}

// args: out features, in features, rows, threads.
void BM_MatmulBf16(benchmark::State& state) {
  const std::int64_t out = state.range(0), in = state.range(1), n = state.range(2);
  ThreadPool pool(static_cast<int>(state.range(3)));
  const Tensor w = random_bf16(out, in);
  const WeightMatrix wm = weight_matrix(w.view(), "w");
  std::vector<float> x(static_cast<std::size_t>(n * in), 0.5f), y(static_cast<std::size_t>(n * out));
  for (auto _ : state) {
    matmul(x.data(), n, wm, y.data(), &pool);
    benchmark::DoNotOptimize(y.data());
  }
  state.counters["GFLOP/s"] =
      benchmark::Counter(2.0 * static_cast<double>(out * in * n), benchmark::Counter::kIsIterationInvariantRate,
                         benchmark::Counter::kIs1000);
}
// q_proj (sliding), MLP gate/up (6144) and down, double-wide MLP (12288), and the LM head.
BENCHMARK(BM_MatmulBf16)
    ->Args({2048, 1536, 1, 1})
    ->Args({6144, 1536, 1, 1})
    ->Args({1536, 6144, 1, 1})
    ->Args({12288, 1536, 1, 1})
    ->Args({262144, 1536, 1, 1})
    ->Args({6144, 1536, 64, 1})
    ->Args({6144, 1536, 1, 2})
    ->Args({6144, 1536, 64, 2})
    ->UseRealTime()
    ->Unit(benchmark::kMillisecond);

// args: head_dim, threads. One query, 8 heads over 1 KV head, 2048 keys (2047 past + current).
void BM_DecodeAttention(benchmark::State& state) {
  const std::int64_t hd = state.range(0), heads = 8, keys = 2048;
  ThreadPool pool(static_cast<int>(state.range(1)));
  std::vector<float> q(static_cast<std::size_t>(heads * hd), 0.1f), k(static_cast<std::size_t>(keys * hd), 0.2f),
      v(k.size(), 0.3f), mask(static_cast<std::size_t>(keys), 0.0f), out(q.size()), scratch;
  const KvSegment seg{k.data(), v.data(), keys, keys * hd};
  for (auto _ : state) {
    attention(q.data(), {1, heads, 1, hd}, std::span(&seg, 1), mask.data(), keys, 1.0f, out.data(), scratch, &pool);
    benchmark::DoNotOptimize(out.data());
  }
}
BENCHMARK(BM_DecodeAttention)->Args({256, 1})->Args({512, 1})->Args({512, 2})->UseRealTime()->Unit(benchmark::kMillisecond);

}  // namespace
}  // namespace staticlm::cpu

BENCHMARK_MAIN();
