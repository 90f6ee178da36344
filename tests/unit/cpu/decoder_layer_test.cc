// A decoder layer with identity-like weights, whose output has a closed form:
//   q_proj = 0            -> every allowed key gets the same score: attention averages V
//   k/v/o_proj = I, norms 1 -> V rows are x_k / rms(x_k); K rows the same, rotated
//   gate/up/down = I      -> the MLP adds norm(gelu(m) * m), m = norm(x1)
//   PLE gate / proj = I   -> the PLE block adds norm(pad(gelu(x2[:P]) * pli))
//   layer_scalar = 0.5
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <vector>

#include "backends/cpu/cpu_backend.h"
#include "mini_model.h"
#include "runtime/masks.h"
#include "runtime/rope.h"

namespace staticlm {
namespace {

constexpr std::int64_t kD = 4, kP = 2, kS = 8, kWindow = 3;
constexpr double kEps = 1e-6;

test::MiniModel closed_form_model(bool sliding) {
  test::MiniModel m;
  TextConfig& t = m.config.text;
  m.config.model_type = "gemma4_text";
  t.vocab_size = 8;
  t.vocab_size_per_layer_input = 8;
  t.hidden_size = kD;
  t.intermediate_size = kD;
  t.num_hidden_layers = 1;
  t.num_attention_heads = 1;
  t.num_key_value_heads = 1;
  t.head_dim = kD;
  t.global_head_dim = kD;
  t.sliding_window = kWindow;
  t.hidden_size_per_layer_input = kP;
  t.final_logit_softcapping = 30.0;
  LayerInfo l;
  l.index = 0;
  l.sliding = sliding;
  l.type = sliding ? kSlidingAttention : kFullAttention;
  l.head_dim = kD;
  l.num_heads = 1;
  l.num_kv_heads = 1;
  l.q_width = kD;
  l.kv_width = kD;
  l.intermediate_size = kD;
  l.rope_type = "default";
  l.rope_theta = 100.0;
  l.rotary_dims = kD;
  m.layers = {l};
  const std::string p = m.config.text_prefix(), n = p + "layers.0.";
  const std::vector<float> ones(kD, 1.0f);
  m.set(p + "embed_tokens.weight", {8, kD}, std::vector<float>(8 * kD, 0.25f));
  m.set(p + "embed_tokens_per_layer.weight", {8, kP}, std::vector<float>(8 * kP, 0.5f));
  m.set(p + "per_layer_model_projection.weight", {kP, kD}, test::identity(kP, kD));
  m.set(p + "per_layer_projection_norm.weight", {kP}, {1.0f, 1.0f});
  m.set(p + "norm.weight", {kD}, ones);
  for (const char* norm : {"input_layernorm", "post_attention_layernorm", "pre_feedforward_layernorm",
                           "post_feedforward_layernorm", "post_per_layer_input_norm"}) {
    m.set(n + norm + ".weight", {kD}, ones, DType::kBF16);
  }
  m.set(n + "self_attn.q_proj.weight", {kD, kD}, std::vector<float>(kD * kD, 0.0f));
  m.set(n + "self_attn.k_proj.weight", {kD, kD}, test::identity(kD, kD), DType::kBF16);
  m.set(n + "self_attn.v_proj.weight", {kD, kD}, test::identity(kD, kD), DType::kF16);
  m.set(n + "self_attn.o_proj.weight", {kD, kD}, test::identity(kD, kD));
  m.set(n + "self_attn.q_norm.weight", {kD}, ones);
  m.set(n + "self_attn.k_norm.weight", {kD}, ones);
  m.set(n + "mlp.gate_proj.weight", {kD, kD}, test::identity(kD, kD));
  m.set(n + "mlp.up_proj.weight", {kD, kD}, test::identity(kD, kD));
  m.set(n + "mlp.down_proj.weight", {kD, kD}, test::identity(kD, kD));
  m.set(n + "per_layer_input_gate.weight", {kP, kD}, test::identity(kP, kD));
  m.set(n + "per_layer_projection.weight", {kD, kP}, test::identity(kD, kP));
  m.set(n + "layer_scalar", {1}, {0.5f});
  return m;
}

using Vec = std::vector<double>;
Vec normalize(const Vec& x) {
  double ms = 0;
  for (double v : x) ms += v * v;
  ms /= static_cast<double>(x.size());
  Vec y;
  for (double v : x) y.push_back(v / std::sqrt(ms + kEps));
  return y;
}
double gelu(double x) { return 0.5 * x * (1 + std::tanh(std::sqrt(2 / M_PI) * (x + 0.044715 * x * x * x))); }

// The closed form of the layer for query row q.
Vec expected_row(const std::vector<float>& x, const std::vector<float>& pli, std::int64_t q, bool sliding) {
  Vec mean(kD, 0.0);
  int count = 0;
  for (std::int64_t k = 0; k <= q; ++k) {
    if (sliding && k <= q - kWindow) continue;
    const Vec vk = normalize(normalize(Vec(x.begin() + k * kD, x.begin() + (k + 1) * kD)));
    for (int i = 0; i < kD; ++i) mean[i] += vk[i];
    ++count;
  }
  for (double& v : mean) v /= count;
  const Vec a = normalize(mean);
  Vec x1(kD);
  for (int i = 0; i < kD; ++i) x1[i] = x[q * kD + i] + a[i];
  const Vec m = normalize(x1);
  Vec g(kD);
  for (int i = 0; i < kD; ++i) g[i] = gelu(m[i]) * m[i];
  const Vec mg = normalize(g);
  Vec x2(kD);
  for (int i = 0; i < kD; ++i) x2[i] = x1[i] + mg[i];
  Vec ple(kD, 0.0);
  for (int i = 0; i < kP; ++i) ple[i] = gelu(x2[i]) * pli[q * kP + i];
  const Vec pn = normalize(ple);
  Vec out(kD);
  for (int i = 0; i < kD; ++i) out[i] = 0.5 * (x2[i] + pn[i]);
  return out;
}

std::vector<float> inputs(std::int64_t n, int salt) {
  std::vector<float> v(static_cast<std::size_t>(n));
  for (std::int64_t i = 0; i < n; ++i) v[i] = static_cast<float>(std::sin(1.3 * i + salt) * 1.5);
  return v;
}

struct Tables {
  std::vector<float> cos, sin;
};
Tables rope(std::int64_t first, std::int64_t count, RopeSine sine) {
  const auto inv = rope_inv_freq(100.0, kD, kD);
  Tables t{std::vector<float>(count * kD), std::vector<float>(count * kD)};
  build_rope_table(inv, first, count, sine, t.cos, t.sin);
  return t;
}

class ClosedFormLayer : public ::testing::TestWithParam<bool> {};

TEST_P(ClosedFormLayer, PrefillMatchesClosedForm) {
  const bool sliding = GetParam();
  const test::MiniModel m = closed_form_model(sliding);
  SubgraphProfile profile;
  profile.max_seq = kS;
  profile.rope_sine = RopeSine::kHf;
  CpuBackendOptions full;
  full.skip_padded_rows = false;
  full.bf16_activations = false;  // the closed form is exact f32
  auto b = CpuBackend::create(m.config, m.layers, m.getter(), profile, full);

  const std::int64_t valid = 6;
  const auto x = inputs(kS * kD, 1), pli = inputs(kS * kP, 2);
  std::vector<float> mask(kS * kS);
  build_prefill_mask(mask, kS, valid, sliding ? std::optional<std::int64_t>(kWindow) : std::nullopt, -120.0f);
  const Tables t = rope(0, kS, RopeSine::kHf);
  std::vector<float> out(kS * kD), nk(kS * kD), nv(kS * kD);
  const TensorView in[5] = {{DType::kF32, {1, kS, kD}, x.data()},
                            {DType::kF32, {1, 1, kS, kS}, mask.data()},
                            {DType::kF32, {1, kS, kD}, t.cos.data()},
                            {DType::kF32, {1, kS, kD}, t.sin.data()},
                            {DType::kF32, {1, kS, kP}, pli.data()}};
  const TensorBuffer o[3] = {{DType::kF32, {1, kS, kD}, out.data()},
                             {DType::kF32, {1, 1, kS, kD}, nk.data()},
                             {DType::kF32, {1, 1, kS, kD}, nv.data()}};
  b->run("decoder_layer_prefill_0", in, o);
  const auto inv = rope_inv_freq(100.0, kD, kD);
  for (std::int64_t q = 0; q < valid; ++q) {
    const Vec want = expected_row(x, pli, q, sliding);
    for (int i = 0; i < kD; ++i) EXPECT_NEAR(out[q * kD + i], want[i], 2e-5) << "row " << q << " dim " << i;
    // V = norm(norm(x)); K = the same rotated by position q (pairs (0,2), (1,3)).
    const Vec v = normalize(normalize(Vec(x.begin() + q * kD, x.begin() + (q + 1) * kD)));
    for (int i = 0; i < kD; ++i) EXPECT_NEAR(nv[q * kD + i], v[i], 2e-6);
    for (int j = 0; j < kD / 2; ++j) {
      const double a = static_cast<double>(static_cast<float>(q) * inv[j]);
      EXPECT_NEAR(nk[q * kD + j], v[j] * std::cos(a) - v[j + 2] * std::sin(a), 2e-6);
      EXPECT_NEAR(nk[q * kD + j + 2], v[j + 2] * std::cos(a) + v[j] * std::sin(a), 2e-6);
    }
  }
}

// The decode graph for position p, given the prefill's K/V rows 0..p-1 as its fixed past,
// gives prefill's row p (the same layer computed the dynamic way), and its K/V row too.
TEST_P(ClosedFormLayer, DecodeEqualsPrefillRow) {
  const bool sliding = GetParam();
  const test::MiniModel m = closed_form_model(sliding);
  SubgraphProfile profile;
  profile.max_seq = kS;
  profile.rope_sine = RopeSine::kPreNegatedSin;
  CpuBackendOptions f32;
  f32.bf16_activations = false;  // decode rows (GEMV) keep f32 activations; compare like with like
  auto b = CpuBackend::create(m.config, m.layers, m.getter(), profile, f32);
  const std::optional<std::int64_t> w = sliding ? std::optional<std::int64_t>(kWindow) : std::nullopt;

  const auto x = inputs(kS * kD, 3), pli = inputs(kS * kP, 4);
  std::vector<float> mask(kS * kS);
  build_prefill_mask(mask, kS, kS - 1, w, -120.0f);
  const Tables t = rope(0, kS, RopeSine::kPreNegatedSin);
  std::vector<float> out(kS * kD), nk(kS * kD), nv(kS * kD);
  {
    const TensorView in[5] = {{DType::kF32, {1, kS, kD}, x.data()},
                              {DType::kF32, {1, 1, kS, kS}, mask.data()},
                              {DType::kF32, {1, kS, kD}, t.cos.data()},
                              {DType::kF32, {1, kS, kD}, t.sin.data()},
                              {DType::kF32, {1, kS, kP}, pli.data()}};
    const TensorBuffer o[3] = {{DType::kF32, {1, kS, kD}, out.data()},
                               {DType::kF32, {1, 1, kS, kD}, nk.data()},
                               {DType::kF32, {1, 1, kS, kD}, nv.data()}};
    b->run("decoder_layer_prefill_0", in, o);
  }
  for (std::int64_t p = 0; p < kS - 1; ++p) {
    std::vector<float> past_k((kS - 1) * kD, 0.0f), past_v((kS - 1) * kD, 0.0f);
    std::copy_n(nk.begin(), p * kD, past_k.begin());
    std::copy_n(nv.begin(), p * kD, past_v.begin());
    std::vector<float> dmask(kS);
    build_decode_mask(dmask, kS, p, w, -120.0f);
    const Tables r = rope(p, 1, RopeSine::kPreNegatedSin);
    std::vector<float> h(kD), dk(kD), dv(kD);
    const TensorView in[7] = {{DType::kF32, {1, 1, kD}, x.data() + p * kD},
                              {DType::kF32, {1, 1, kS}, dmask.data()},
                              {DType::kF32, {1, 1, kD}, r.cos.data()},
                              {DType::kF32, {1, 1, kD}, r.sin.data()},
                              {DType::kF32, {1, 1, kP}, pli.data() + p * kP},
                              {DType::kF32, {1, 1, kS - 1, kD}, past_k.data()},
                              {DType::kF32, {1, 1, kS - 1, kD}, past_v.data()}};
    const TensorBuffer o[3] = {{DType::kF32, {1, 1, kD}, h.data()},
                               {DType::kF32, {1, 1, 1, kD}, dk.data()},
                               {DType::kF32, {1, 1, 1, kD}, dv.data()}};
    b->run("decoder_layer_decode_0", in, o);
    for (int i = 0; i < kD; ++i) {
      EXPECT_NEAR(h[i], out[p * kD + i], 1e-6) << "position " << p;
      EXPECT_NEAR(dk[i], nk[p * kD + i], 1e-6);
      EXPECT_NEAR(dv[i], nv[p * kD + i], 1e-6);
    }
  }
}

INSTANTIATE_TEST_SUITE_P(FullAndSliding, ClosedFormLayer, ::testing::Values(false, true));

TEST(CpuBackend, SignaturesFollowTheContract) {
  const test::MiniModel m = closed_form_model(true);
  SubgraphProfile profile;
  profile.max_seq = kS;
  auto b = CpuBackend::create(m.config, m.layers, m.getter(), profile);
  std::vector<std::string> names;
  for (const auto& s : b->signatures()) names.push_back(s.name);
  EXPECT_EQ(names, (std::vector<std::string>{"token_embedding", "ple_embedding", "ple_projection",
                                             "decoder_layer_prefill_0", "decoder_layer_decode_0", "lm_head"}));
  const auto& dec = b->signature("decoder_layer_decode_0");
  ASSERT_EQ(dec.inputs.size(), 7u);
  EXPECT_EQ(dec.inputs[1].shape, (Shape{1, 1, kS}));
  EXPECT_EQ(dec.inputs[5].name, "past_key");
  EXPECT_EQ(dec.inputs[5].shape, (Shape{1, 1, kS - 1, kD}));
  EXPECT_EQ(dec.outputs[1].shape, (Shape{1, 1, 1, kD}));
  EXPECT_EQ(b->signature("token_embedding").inputs[0].dynamic_axis, 1);
  EXPECT_EQ(b->signature("lm_head").outputs[0].shape, (Shape{1, 1, 8}));
  try {
    b->signature("vision_prefill");
    FAIL();
  } catch (const Error& e) {
    EXPECT_STREQ(e.what(), "backend cpu has no subgraph named \"vision_prefill\"");
  }
}

TEST(CpuBackend, BadCallsAreRefused) {
  const test::MiniModel m = closed_form_model(false);
  SubgraphProfile profile;
  profile.max_seq = kS;
  auto b = CpuBackend::create(m.config, m.layers, m.getter(), profile);
  std::vector<std::int64_t> ids(kS + 1, 1);
  std::vector<float> out((kS + 1) * kD);
  const TensorView in{DType::kI64, {1, kS + 1}, ids.data()};
  const TensorBuffer o{DType::kF32, {1, kS + 1, kD}, out.data()};
  try {
    b->run("token_embedding", std::span(&in, 1), std::span(&o, 1));
    FAIL();
  } catch (const Error& e) {
    EXPECT_STREQ(e.what(),
                 "subgraph token_embedding: input input_ids has shape [1, 9], expected [1, 8] (axis 1 any of 1..8)");
  }
  const TensorView in3{DType::kI64, {1, 3}, ids.data()};
  const TensorBuffer o2{DType::kF32, {1, 2, kD}, out.data()};
  try {
    b->run("token_embedding", std::span(&in3, 1), std::span(&o2, 1));
    FAIL();
  } catch (const Error& e) {
    EXPECT_STREQ(e.what(),
                 "subgraph token_embedding: output inputs_embeds has shape [1, 2, 4], expected [1, 8, 4] (axis 1 any "
                 "of 1..8, 3 in this call)");
  }
  const TensorView f{DType::kF32, {1, 3}, out.data()};
  EXPECT_THROW(b->run("token_embedding", std::span(&f, 1), std::span(&o2, 1)), Error);
  EXPECT_THROW(b->run("decoder_layer_prefill_7", {}, {}), Error);
  // A missing weight names the tensor.
  test::MiniModel broken = closed_form_model(false);
  broken.tensors.erase("model.layers.0.mlp.up_proj.weight");
  try {
    CpuBackend::create(broken.config, broken.layers, broken.getter(), profile);
    FAIL();
  } catch (const Error& e) {
    EXPECT_STREQ(e.what(), "no tensor model.layers.0.mlp.up_proj.weight");
  }
}

}  // namespace
}  // namespace staticlm

namespace staticlm {
namespace {

// safetensors does not promise alignment: a matrix at an odd address is copied once, with the
// same values, and used from the copy.
TEST(CpuTextWeights, MisalignedMatricesAreCopied) {
  const test::MiniModel m = closed_form_model(false);
  const std::string name = "model.layers.0.self_attn.o_proj.weight";
  const TensorView original = m.tensors.at(name).view();
  std::vector<std::uint8_t> bytes(original.nbytes() + 2);
  std::memcpy(bytes.data() + 2, original.data, original.nbytes());
  const TensorView shifted{original.dtype, original.shape, bytes.data() + 2};
  const auto base = m.getter();
  const auto w = cpu::load_text_weights(m.config, m.layers, [&](const std::string& n) {
    return n == name ? shifted : base(n);
  });
  const cpu::WeightMatrix& o = w.layers[0].o_proj;
  EXPECT_NE(o.data, shifted.data);
  EXPECT_EQ(reinterpret_cast<std::uintptr_t>(o.data) % 4, 0u);
  EXPECT_EQ(std::memcmp(o.data, original.data, original.nbytes()), 0);
  EXPECT_EQ(w.aligned_copies.size(), 1u);
  EXPECT_EQ(w.layers[0].q_proj.data, m.tensors.at("model.layers.0.self_attn.q_proj.weight").view().data);
}

}  // namespace
}  // namespace staticlm
