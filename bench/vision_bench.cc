// The CPU vision tower at Gemma 4 E2B sizes (width 768, 12 heads of 64, MLP 3072, bf16 weights,
// f32 math) over the fixed 2520-patch input of a 66 x 36 profile: patch embedder, ONE encoder
// layer, pooler and projection, on 1 or 2 threads. E2B's image encode is about 16 x the layer
// share of this time.
//   build/bench_vision [--benchmark_filter=...]
#include <benchmark/benchmark.h>

#include <cmath>
#include <vector>

#include "backends/cpu/vision_tower.h"

namespace staticlm::cpu {
namespace {

Tensor random_bf16(Shape shape) {
  std::vector<float> v(static_cast<std::size_t>(shape.numel()));
  for (std::size_t i = 0; i < v.size(); ++i) v[i] = static_cast<float>(std::sin(0.37 * static_cast<double>(i))) * 0.03f;
  return Tensor::from_f32(DType::kBF16, std::move(shape), v);
}

// args: encoder layers, threads.
void BM_VisionTowerE2B(benchmark::State& state) {
  const std::int64_t d = 768, inter = 3072, table = 10240, patches = 2520, h = 36, w = 66;
  VisionConfig c;
  c.num_hidden_layers = state.range(0);
  std::vector<Tensor> owned;
  auto matrix = [&](std::int64_t rows, std::int64_t cols) {
    owned.push_back(random_bf16(Shape{rows, cols}));
    return weight_matrix(owned.back().view(), "w", rows, cols);
  };
  owned.reserve(64);
  CpuVisionWeights wt;
  wt.input_proj = matrix(d, 768);
  wt.position_table = matrix(2 * table, d);
  for (std::int64_t l = 0; l < c.num_hidden_layers; ++l) {
    CpuVisionLayerWeights lw;
    for (ClippedLinear* lin : {&lw.q_proj, &lw.k_proj, &lw.v_proj, &lw.o_proj}) lin->w = matrix(d, d);
    lw.gate_proj.w = matrix(inter, d);
    lw.up_proj.w = matrix(inter, d);
    lw.down_proj.w = matrix(d, inter);
    lw.q_norm = lw.k_norm = std::vector<float>(64, 1.0f);
    lw.input_norm = lw.post_attention_norm = lw.pre_feedforward_norm = lw.post_feedforward_norm =
        std::vector<float>(d, 1.0f);
    wt.layers.push_back(std::move(lw));
  }
  wt.embedding_projection = matrix(1536, d);
  std::vector<std::int64_t> pos(2 * patches, -1);
  for (std::int64_t i = 0; i < h * w; ++i) {
    pos[2 * i] = i % w;
    pos[2 * i + 1] = i / w;
  }
  std::vector<float> px(patches * 768), out(264 * 1536);
  for (std::size_t i = 0; i < px.size(); ++i) px[i] = static_cast<float>(i % 256) / 255.0f;
  ThreadPool pool(static_cast<int>(state.range(1)));
  VisionScratch s;
  for (auto _ : state) {
    benchmark::DoNotOptimize(run_vision_tower(wt, c, px.data(), pos.data(), patches, out.data(), 264, s, &pool));
  }
}
BENCHMARK(BM_VisionTowerE2B)->Args({0, 2})->Args({1, 1})->Args({1, 2})->Iterations(1)->UseRealTime()->Unit(
    benchmark::kMillisecond);

}  // namespace
}  // namespace staticlm::cpu

BENCHMARK_MAIN();
