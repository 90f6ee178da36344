// The vision tower's invariances (spec/gemma4.md 4.2): padding keys are masked and padding rows
// zeroed, so the fixed-shape run on padded rows equals the run on the valid rows alone, for any
// padding content and any patch order; vision_prefill (canonical positions baked in) equals the
// tower on the valid rows; profile and weight errors are named.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <random>
#include <vector>

#include "backends/cpu/vision_prefill.h"
#include "backends/cpu/vision_tower.h"
#include "base/error.h"
#include "mini_vision.h"

namespace staticlm::cpu {
namespace {

constexpr std::int64_t kPv = 12, kD = 4;

std::vector<float> random_pixels(std::int64_t n, unsigned seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> u(0.0f, 1.0f);
  std::vector<float> v(static_cast<std::size_t>(n * kPv));
  for (float& x : v) x = u(rng);
  return v;
}

std::vector<std::int64_t> grid_positions(std::int64_t h, std::int64_t w, std::int64_t total) {
  std::vector<std::int64_t> pos(static_cast<std::size_t>(2 * total), -1);
  for (std::int64_t i = 0; i < h * w; ++i) {
    pos[2 * i] = i % w;
    pos[2 * i + 1] = i / w;
  }
  return pos;
}

std::vector<float> tower(const test::MiniVision& m, const std::vector<float>& px, const std::vector<std::int64_t>& pos,
                         std::int64_t max_tokens, std::int64_t* tokens = nullptr) {
  const CpuVisionWeights w = load_vision_weights(m.config, m.getter());
  VisionScratch s;
  std::vector<float> out(static_cast<std::size_t>(max_tokens * kD), 0.0f);
  const std::int64_t n = static_cast<std::int64_t>(pos.size() / 2);
  const std::int64_t t = run_vision_tower(w, *m.config.vision, px.data(), pos.data(), n, out.data(), max_tokens, s,
                                          nullptr);
  if (tokens) *tokens = t;
  out.resize(static_cast<std::size_t>(t * kD));
  return out;
}

float max_abs_diff(const std::vector<float>& a, const std::vector<float>& b) {
  float m = 0;
  for (std::size_t i = 0; i < a.size(); ++i) m = std::max(m, std::abs(a[i] - b[i]));
  return m;
}

// 6 x 9 patches (6 tokens) in a 72-patch capacity (8 tokens): 18 padding rows.
constexpr std::int64_t kH = 6, kW = 9, kCap = 72;

TEST(VisionTower, PaddedRowsGiveTheSameOutputAsValidRowsOnly) {
  const test::MiniVision m(1);
  std::vector<float> px = random_pixels(kCap, 2);  // padding rows hold junk pixels
  const std::vector<std::int64_t> padded_pos = grid_positions(kH, kW, kCap);
  std::int64_t padded_tokens = 0, valid_tokens = 0;
  const std::vector<float> padded = tower(m, px, padded_pos, 8, &padded_tokens);
  const std::vector<float> valid_px(px.begin(), px.begin() + kH * kW * kPv);
  const std::vector<float> valid = tower(m, valid_px, grid_positions(kH, kW, kH * kW), 8, &valid_tokens);
  ASSERT_EQ(padded_tokens, 6);
  ASSERT_EQ(valid_tokens, 6);
  EXPECT_LT(max_abs_diff(padded, valid), 1e-5f);
  // Not vacuous: the output depends on the valid pixels.
  px[0] += 0.5f;
  EXPECT_GT(max_abs_diff(tower(m, px, padded_pos, 8), padded), 1e-4f);
}

TEST(VisionTower, PaddingContentAndPatchOrderDoNotMatter) {
  const test::MiniVision m(3);
  const std::vector<float> px = random_pixels(kCap, 4);
  const std::vector<std::int64_t> pos = grid_positions(kH, kW, kCap);
  const std::vector<float> ref = tower(m, px, pos, 8);

  std::vector<float> other_pad = px;
  for (std::int64_t i = kH * kW * kPv; i < kCap * kPv; ++i) other_pad[i] = 1.0f - other_pad[i];
  EXPECT_LT(max_abs_diff(tower(m, other_pad, pos, 8), ref), 1e-6f);

  // Reverse the rows (patches and their positions together): positions carry all geometry.
  std::vector<float> rpx(px.size());
  std::vector<std::int64_t> rpos(pos.size());
  for (std::int64_t r = 0; r < kCap; ++r) {
    std::copy_n(px.begin() + r * kPv, kPv, rpx.begin() + (kCap - 1 - r) * kPv);
    std::copy_n(pos.begin() + 2 * r, 2, rpos.begin() + 2 * (kCap - 1 - r));
  }
  EXPECT_LT(max_abs_diff(tower(m, rpx, rpos, 8), ref), 1e-5f);
}

TEST(VisionTower, ClipBoundsThatBiteChangeTheOutput) {
  const std::vector<float> px = random_pixels(kH * kW, 5);
  const std::vector<std::int64_t> pos = grid_positions(kH, kW, kH * kW);
  const std::vector<float> loose = tower(test::MiniVision(6), px, pos, 6);
  const std::vector<float> tight = tower(test::MiniVision(6, 0.05f), px, pos, 6);
  EXPECT_GT(max_abs_diff(loose, tight), 1e-3f);
}

TEST(VisionPrefill, EqualsTheTowerOnTheValidPatchesOfTheCanonicalGrid) {
  const test::MiniVision m(7);
  SubgraphProfile p;
  p.max_seq = 32;
  p.visual_start_idx = 2;
  p.num_visual_tokens = 6;
  p.num_patches = kCap;
  p.patch_vector_size = kPv;
  p.patch_grid_height = kH;
  p.patch_grid_width = kW;
  auto g = VisionPrefill::create(m.config, m.getter(), p);
  const std::vector<float> px = random_pixels(kCap, 8);
  std::vector<float> out(6 * kD);
  g->run(px.data(), out.data(), nullptr);
  const std::vector<float> valid_px(px.begin(), px.begin() + kH * kW * kPv);
  EXPECT_LT(max_abs_diff(out, tower(m, valid_px, grid_positions(kH, kW, kH * kW), 6)), 1e-5f);
  EXPECT_EQ(g->positions()[2 * 10], 1);      // patch 10: x = 10 % 9
  EXPECT_EQ(g->positions()[2 * 10 + 1], 1);  // y = 10 / 9
  EXPECT_EQ(g->positions()[2 * 54], -1);     // first padding patch
}

void expect_error(const std::function<void()>& f, ErrorKind kind, const std::string& part) {
  try {
    f();
    FAIL() << "expected an error containing: " << part;
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), kind) << e.what();
    EXPECT_NE(std::string(e.what()).find(part), std::string::npos) << e.what();
  }
}

TEST(VisionPrefill, RefusesBadProfilesAndWeights) {
  const test::MiniVision m(9);
  SubgraphProfile p;
  p.visual_start_idx = 0;
  p.num_visual_tokens = 6;
  p.num_patches = kCap;
  p.patch_vector_size = kPv;
  p.patch_grid_height = kH;
  p.patch_grid_width = kW;
  const VisionConfig& v = *m.config.vision;
  auto with = [&](auto edit) {
    SubgraphProfile q = p;
    edit(q);
    return [q, &v] { canonical_patch_positions(q, v); };
  };
  expect_error(with([](SubgraphProfile& q) { q.patch_grid_width = 0; }), ErrorKind::kInvalidArgument,
               "patch grid 6x0 (patch_grid_height x patch_grid_width) must be positive");
  expect_error(with([](SubgraphProfile& q) { q.patch_grid_width = 8; }), ErrorKind::kInvalidArgument,
               "must be divisible by pooling_kernel_size 3");
  expect_error(with([](SubgraphProfile& q) { q.num_patches = 45; }), ErrorKind::kInvalidArgument,
               "holds more patches than num_patches 45");
  expect_error(with([](SubgraphProfile& q) { q.num_visual_tokens = 5; }), ErrorKind::kInvalidArgument,
               "pools to 6 tokens, expected num_visual_tokens 5");
  expect_error(with([](SubgraphProfile& q) { q.patch_vector_size = 768; }), ErrorKind::kInvalidArgument,
               "patch_vector_size 768, expected 3 * patch_size^2 = 12");

  test::MiniVision nan_bound(9);
  nan_bound.tensors["model.vision_tower.encoder.layers.1.mlp.up_proj.output_max"] =
      Tensor::from_f32(DType::kF32, Shape{}, std::vector<float>{NAN});
  expect_error([&] { load_vision_weights(nan_bound.config, nan_bound.getter()); }, ErrorKind::kInvalidFile,
               "encoder.layers.1.mlp.up_proj.output_max: clip bound is NaN");
  test::MiniVision bad_table(9);
  bad_table.tensors["model.vision_tower.patch_embedder.position_embedding_table"] =
      Tensor::from_f32(DType::kF32, Shape{2, 16, 16}, std::vector<float>(512));
  expect_error([&] { load_vision_weights(bad_table.config, bad_table.getter()); }, ErrorKind::kInvalidFile,
               "position_embedding_table: shape [2, 16, 16], expected [2, 32, 16]");

  const std::vector<float> px = random_pixels(2, 1);
  const std::vector<std::int64_t> far = {0, 0, 40, 0};
  expect_error([&] { tower(m, px, far, 4); }, ErrorKind::kInvalidArgument,
               "patch 1 has x position 40, expected [0, 32)");
}

}  // namespace
}  // namespace staticlm::cpu
