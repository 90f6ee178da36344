// Host-side cost of the static input contract for one E2B prompt (max_seq 2048, one image under
// e2b_66x36_264): the layout with every profile check, the side-by-side step-1 check, and the
// canonical position ids' fingerprint (computed once per runtime).
#include <benchmark/benchmark.h>

#include "runtime/static_inputs.h"
#include "runtime/static_inputs_check.h"

namespace staticlm {
namespace {

ProcessorBatch e2b_batch(const VisionProfile& p) {
  std::vector<std::int64_t> ids = {255999};
  ids.insert(ids.end(), static_cast<std::size_t>(p.num_visual_tokens), 258880);
  ids.insert(ids.end(), {258882, 82858, 506, 2471, 236761});
  ProcessorBatch b;
  b.input_ids = Tensor(DType::kI64, Shape{1, static_cast<std::int64_t>(ids.size())});
  std::copy(ids.begin(), ids.end(), b.input_ids.as<std::int64_t>().begin());
  b.attention_mask = Tensor(DType::kI64, b.input_ids.shape());
  for (auto& v : b.attention_mask->as<std::int64_t>()) v = 1;
  b.pixel_values = Tensor(DType::kF32, Shape{1, p.num_patches(), p.patch_vector_size()});
  b.image_position_ids = p.image_position_ids();
  b.num_soft_tokens_per_image = {p.num_visual_tokens};
  return b;
}

StaticInputOptions options(const VisionProfile& p) {
  StaticInputOptions o;
  o.profile = p;
  o.layout = p.layout(2048);
  o.pad_token_id = 0;
  o.image_token_id = 258880;
  return o;
}

void BM_BuildStaticInputs(benchmark::State& state) {
  const VisionProfile& p = registered_vision_profile(kDefaultVisionProfile);
  const ProcessorBatch b = e2b_batch(p);
  const StaticInputOptions o = options(p);
  for (auto _ : state) benchmark::DoNotOptimize(build_static_inputs(b, o));
}
BENCHMARK(BM_BuildStaticInputs)->Unit(benchmark::kMicrosecond);

void BM_CheckStaticInputs(benchmark::State& state) {
  const VisionProfile& p = registered_vision_profile(kDefaultVisionProfile);
  const ProcessorBatch b = e2b_batch(p);
  const StaticInputs s = build_static_inputs(b, options(p));
  for (auto _ : state) benchmark::DoNotOptimize(check_static_inputs(s, b, 2048, 0, 258880));
}
BENCHMARK(BM_CheckStaticInputs)->Unit(benchmark::kMicrosecond);

void BM_PositionIdsSha256(benchmark::State& state) {
  const VisionProfile& p = registered_vision_profile(kDefaultVisionProfile);
  for (auto _ : state) benchmark::DoNotOptimize(p.position_ids_sha256());
}
BENCHMARK(BM_PositionIdsSha256)->Unit(benchmark::kMicrosecond);

}  // namespace
}  // namespace staticlm

BENCHMARK_MAIN();
