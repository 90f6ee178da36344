// Append-prefill after an image first turn, on the tiny model made by make_model: the first
// turn goes through the max_seq prefill with vision_prefill fused into the image span, the next
// turns through decoder_layer_append_q{Q}_{i}; the logits equal one-shot image prefill of the
// whole history, and feeding the same tokens by decode.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <random>
#include <vector>

#include "backends/cpu/cpu_backend.h"
#include "model/checkpoint.h"
#include "runtime/runtime.h"
#include "test_util.h"

namespace staticlm {
namespace {

// A 6 x 9 patch grid pooled to 6 soft tokens at positions [5, 11).
constexpr std::int64_t kTokens = 6, kPatches = 72, kStart = 5, kMaxSeq = 48;

float max_diff(std::span<const float> a, std::span<const float> b) {
  float m = 0;
  for (std::size_t i = 0; i < a.size(); ++i) m = std::max(m, std::abs(a[i] - b[i]));
  return m;
}

TEST(AppendAfterImage, EqualsOneShotImagePrefillAndDecode) {
  test::TempDir dir;
  test::make_tiny_model(dir.file("m"), 5);
  const auto ck = Checkpoint::open(dir.file("m"));
  const ModelConfig& c = ck->config();
  const std::int64_t pad = c.text.pad_token_id;
  std::vector<std::int64_t> history = {2, 105, 2364, 107, c.boi_token_id};
  history.insert(history.end(), kTokens, pad);  // the span: placeholder ids are the pad id
  // Image turn ends at 18; two more turns cross the sliding window (16) and reach 45.
  for (std::int64_t i = 0; static_cast<std::int64_t>(history.size()) < 45; ++i) history.push_back(300 + (i * 37) % 900);
  const std::size_t first = 18, second = 30;
  std::mt19937 rng(3);
  std::uniform_real_distribution<float> u(0.0f, 1.0f);
  std::vector<float> pixels(kPatches * 768);
  for (float& v : pixels) v = u(rng);

  SubgraphProfile sp;
  sp.max_seq = kMaxSeq;
  sp.visual_start_idx = kStart;
  sp.num_visual_tokens = kTokens;
  sp.num_patches = kPatches;
  sp.patch_vector_size = 768;
  sp.patch_grid_height = 6;
  sp.patch_grid_width = 9;
  sp.append_lengths = {4, 16};
  CpuBackendOptions o;
  o.bf16_activations = false;
  auto b = CpuBackend::create(*ck, sp, o);
  auto image_prefill = [&](std::size_t n, Runtime& rt) {
    std::vector<std::int64_t> ids(kMaxSeq, pad);
    std::copy_n(history.begin(), n, ids.begin());
    PrefillInput in{ids, static_cast<std::int64_t>(n), pixels};
    const auto l = rt.prefill(in);
    return std::vector<float>(l.begin(), l.end());
  };
  auto rt = Runtime::create(*b, c, ck->layers());
  auto by_decode = Runtime::create(*b, c, ck->layers());
  auto whole = Runtime::create(*b, c, ck->layers());
  image_prefill(first, *rt);
  image_prefill(first, *by_decode);
  for (std::size_t end : {second, history.size()}) {
    const std::size_t begin = static_cast<std::size_t>(rt->past_len());
    const auto a = rt->append(std::span(history).subspan(begin, end - begin));
    const std::vector<float> appended(a.begin(), a.end());
    std::vector<float> decoded;
    for (std::size_t i = begin; i < end; ++i) {
      const auto d = by_decode->decode(history[i]);
      decoded.assign(d.begin(), d.end());
    }
    const std::vector<float> one_shot = image_prefill(end, *whole);
    EXPECT_LT(max_diff(appended, one_shot), 1e-4f) << "history of " << end;
    EXPECT_LT(max_diff(appended, decoded), 1e-4f) << "history of " << end;
  }
  // The image mattered: the same history without it gives other logits.
  std::vector<std::int64_t> ids(kMaxSeq, pad);
  std::copy(history.begin(), history.end(), ids.begin());
  const auto t = whole->prefill(PrefillInput{ids, static_cast<std::int64_t>(history.size()), {}});
  const std::vector<float> text(t.begin(), t.end());
  EXPECT_GT(max_diff(text, image_prefill(history.size(), *whole)), 1e-3f);
}

}  // namespace
}  // namespace staticlm
