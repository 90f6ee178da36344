// DynamicReference, the unpadded dynamic-shape forward pass: it matches Hugging Face's goldens
// (prefill and teacher-forced decode), matches the static runtime on an image prompt (so the
// static padding, fixed image span and canonical patch grid change nothing), builds RoPE and masks
// as HF does, and refuses bad input with a message naming the value.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <functional>
#include <sstream>

#include "backends/cpu/cpu_backend.h"
#include "base/error.h"
#include "inspect/dynamic_reference.h"
#include "inspect/metrics.h"
#include "model/checkpoint.h"
#include "runtime/logits_dump.h"
#include "runtime/runtime.h"
#include "runtime/runtime_config.h"
#include "runtime/static_input_builder.h"
#include "tensor/safetensors.h"
#include "test_util.h"
#include "vision/image_decode.h"

namespace staticlm::inspect {
namespace {

std::vector<std::int64_t> parse_ids(const std::string& csv) {
  std::vector<std::int64_t> ids;
  std::stringstream in(csv);
  for (std::string item; std::getline(in, item, ',');) ids.push_back(std::stoll(item));
  return ids;
}

std::span<const float> row(const std::vector<float>& m, std::int64_t r, std::int64_t width) {
  return std::span(m).subspan(static_cast<std::size_t>(r * width), static_cast<std::size_t>(width));
}

// The tiny f32 model (vision tower included) and its text-only twin, made once.
class DynamicReferenceTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    if (test::gemma3_tokenizer_path().empty()) return;
    dir_ = new test::TempDir();
    made_ = test::run_staticlm("make-model --preset tiny --seed 1 --dtype f32 --out " + dir_->file("m"));
    made_text_ = test::run_staticlm("make-model --preset tiny --seed 1 --dtype f32 --text-only --out " +
                                    dir_->file("t"));
  }
  static void TearDownTestSuite() { delete dir_; }
  void SetUp() override {
    if (!dir_) GTEST_SKIP() << "Gemma 3 tokenizer.json not fetched: run scripts/setup.sh";
    ASSERT_EQ(made_.exit_code, 0) << made_.err;
    ASSERT_EQ(made_text_.exit_code, 0) << made_text_.err;
  }
  static test::TempDir* dir_;
  static test::CommandResult made_, made_text_;
};
test::TempDir* DynamicReferenceTest::dir_ = nullptr;
test::CommandResult DynamicReferenceTest::made_;
test::CommandResult DynamicReferenceTest::made_text_;

// Hugging Face transformers (float32, eager) on the checkpoint make-model rebuilds: prefill of the
// prompt, then teacher-forced decode of the tokens HF generated.
TEST_F(DynamicReferenceTest, MatchesHuggingFaceGoldens) {
  ThreadPool pool(2);
  for (const char* name : {"tiny_text_f32.safetensors", "tiny_f32.safetensors"}) {
    const std::string golden = test::fixture(std::string("golden/") + name);
    SCOPED_TRACE(golden);
    const LogitsDump want = read_logits_dump(golden);
    const auto meta = SafetensorsFile::open(golden)->metadata();
    test::TempDir tmp;
    const auto remade = test::run_staticlm("make-model " + meta.at("make_model_args") + " --out " + tmp.file("m"));
    ASSERT_EQ(remade.exit_code, 0) << remade.err;
    const auto ck = Checkpoint::open(tmp.file("m"));
    const std::int64_t v = ck->config().text.vocab_size;
    auto ref = DynamicReference::create(*ck, {&pool, true});

    DynamicPrompt prompt;
    prompt.input_ids = parse_ids(meta.at("prompt_ids"));
    DynamicStep step = ref->prefill(prompt);
    ASSERT_EQ(static_cast<std::int64_t>(step.logits.size()), v);
    ASSERT_EQ(step.hidden.size(), ck->layers().size());
    EXPECT_EQ(step.hidden[0].size(), prompt.input_ids.size() * static_cast<std::size_t>(ck->config().text.hidden_size));
    const DiffMetrics pre = compare(step.logits, want.prefill_logits);
    std::cout << "[golden " << name << "] prefill max|d| " << pre.max_abs;
    EXPECT_LT(pre.max_abs, 1e-4);
    ASSERT_FALSE(want.tokens.empty());
    EXPECT_EQ(argmax(step.logits), want.tokens[0]);
    for (std::size_t j = 0; j + 1 < want.tokens.size(); ++j) {
      step = ref->decode(want.tokens[j]);
      EXPECT_EQ(ref->past_len(), static_cast<std::int64_t>(prompt.input_ids.size() + j + 1));
      const DiffMetrics dm = compare(step.logits, row(want.decode_logits, static_cast<std::int64_t>(j), v));
      std::cout << ", decode " << j << " " << dm.max_abs;
      EXPECT_LT(dm.max_abs, 1e-4) << "decode row " << j;
      EXPECT_EQ(argmax(step.logits), want.tokens[j + 1]) << "decode row " << j;
    }
    std::cout << "\n";
  }
}

// An image prompt on the tiny f32 model: the static runtime (right padding, fixed image span,
// vision_prefill on the padded canonical grid) and the dynamic reference (unpadded, valid patches,
// scatter by placeholder id) give the same prefill logits and the same greedy continuation.
TEST_F(DynamicReferenceTest, ImagePromptMatchesStaticRuntime) {
  const std::string m = dir_->file("m");
  const RuntimeConfig rc = load_runtime_config(std::nullopt, {"image_fit=fit", "max_seq=288"});
  const auto builder = StaticInputBuilder::create(m, rc, /*reserve_decode_slot=*/true);
  const RgbImage image = decode_image_file(test::fixture("images/gradient.png"));
  const StaticInputs in = builder->build("<|image|>Describe the image.", std::span(&image, 1));
  ASSERT_TRUE(in.has_image());

  const auto ck = Checkpoint::open(m);
  const VisionProfile& vp = builder->options().profile;
  SubgraphProfile sp;
  sp.max_seq = in.max_seq();
  sp.rope_sine = rc.rope_sine;
  set_vision_profile(sp, vp);
  ThreadPool pool(2);
  CpuBackendOptions bo;
  bo.pool = &pool;
  auto backend = CpuBackend::create(*ck, sp, bo);
  auto rt = Runtime::create(*backend, ck->config(), ck->layers());
  PrefillInput pi;
  pi.llm_input_ids = in.llm_input_ids.as<std::int64_t>();
  pi.valid_length = in.length();
  pi.pixel_values = in.pixel_values->as<float>();
  const std::span<const float> s0 = rt->prefill(pi);
  std::vector<float> static_logits(s0.begin(), s0.end());

  auto ref = DynamicReference::create(*ck, {&pool, true});
  DynamicPrompt prompt;
  const auto raw = in.raw_input_ids.as<std::int64_t>();
  prompt.input_ids.assign(raw.begin(), raw.end());
  prompt.pixel_values = in.pixel_values->as<float>();
  prompt.image_position_ids = in.image_position_ids->as<std::int64_t>();
  DynamicStep step = ref->prefill(prompt);

  const ModelConfig& c = ck->config();
  const std::int64_t d = c.text.hidden_size, t = in.length();
  const std::int64_t placeholders = std::count(prompt.input_ids.begin(), prompt.input_ids.end(), *c.image_token_id);
  EXPECT_EQ(placeholders, vp.num_visual_tokens);
  EXPECT_EQ(static_cast<std::int64_t>(ref->image_features().size()), placeholders * d);
  EXPECT_EQ(static_cast<std::int64_t>(ref->token_embeddings().size()), t * d);
  EXPECT_EQ(static_cast<std::int64_t>(ref->per_layer_inputs().size()),
            t * static_cast<std::int64_t>(ck->layers().size()) * c.text.hidden_size_per_layer_input);
  // The first image row of inputs_embeds is the first soft token; a text row is the scaled embedding.
  const std::int64_t first = std::find(prompt.input_ids.begin(), prompt.input_ids.end(), *c.image_token_id) -
                             prompt.input_ids.begin();
  EXPECT_EQ(compare(row(ref->inputs_embeds(), first, d), row(ref->image_features(), 0, d)).max_abs, 0.0);
  EXPECT_EQ(compare(row(ref->inputs_embeds(), t - 1, d), row(ref->token_embeddings(), t - 1, d)).max_abs, 0.0);

  DiffMetrics dm = compare(step.logits, static_logits);
  std::cout << "[image prompt, " << t << " tokens] prefill max|d| " << dm.max_abs;
  EXPECT_LT(dm.max_abs, 1e-3);
  std::int64_t token = argmax(static_logits);
  EXPECT_EQ(argmax(step.logits), token);
  for (int j = 0; j < 3; ++j) {
    const std::span<const float> s = rt->decode(token);
    static_logits.assign(s.begin(), s.end());
    step = ref->decode(token);
    dm = compare(step.logits, static_logits);
    std::cout << ", decode " << j << " " << dm.max_abs;
    EXPECT_LT(dm.max_abs, 1e-3) << "decode step " << j;
    token = argmax(static_logits);
    EXPECT_EQ(argmax(step.logits), token) << "decode step " << j;
  }
  std::cout << "\n";
}

// RoPE as HF builds it: position 0 is the identity; sliding layers rotate every pair with
// theta^(-2i/hd); the proportional full layers rotate only the first int(p * hd / 2) pairs.
// Masks: causal everywhere, the window of sliding_window keys on sliding layers.
TEST_F(DynamicReferenceTest, RopeTablesAndMaskPredicate) {
  const auto ck = Checkpoint::open(dir_->file("m"));
  auto ref = DynamicReference::create(*ck);
  const TextConfig& t = ck->config().text;
  int sliding = -1, full = -1;
  for (const LayerInfo& l : ck->layers()) (l.sliding ? sliding : full) = l.index;
  ASSERT_GE(sliding, 0);
  ASSERT_GE(full, 0);

  std::vector<float> cos, sin;
  const std::int64_t hs = ck->layers()[sliding].head_dim;
  ref->rope_tables(sliding, 3, cos, sin);
  ASSERT_EQ(static_cast<std::int64_t>(cos.size()), 3 * hs);
  for (std::int64_t j = 0; j < hs; ++j) {
    EXPECT_EQ(cos[j], 1.0f);
    EXPECT_EQ(sin[j], 0.0f);
  }
  const double theta = t.rope_parameters.at(kSlidingAttention).rope_theta;
  const double f1 = std::pow(theta, -2.0 / static_cast<double>(hs));  // pair 1
  EXPECT_FLOAT_EQ(cos[2 * hs + 1], static_cast<float>(std::cos(2 * f1)));
  EXPECT_FLOAT_EQ(sin[2 * hs + 1 + hs / 2], static_cast<float>(std::sin(2 * f1)));

  const std::int64_t hf = ck->layers()[full].head_dim;
  const RopeParameters& rp = t.rope_parameters.at(kFullAttention);
  ASSERT_EQ(rp.rope_type, "proportional");
  const std::int64_t angles = static_cast<std::int64_t>(rp.partial_rotary_factor * static_cast<double>(hf) / 2);
  ref->rope_tables(full, 5, cos, sin);
  const float* c4 = cos.data() + 4 * hf;
  const float* s4 = sin.data() + 4 * hf;
  EXPECT_FLOAT_EQ(c4[0], static_cast<float>(std::cos(4.0)));  // inv_freq[0] = 1
  EXPECT_FLOAT_EQ(s4[angles - 1 + hf / 2],
                  static_cast<float>(std::sin(4 * std::pow(rp.rope_theta, -2.0 * (angles - 1) / hf))));
  for (std::int64_t j = angles; j < hf / 2; ++j) {
    EXPECT_EQ(c4[j], 1.0f) << j;
    EXPECT_EQ(s4[j + hf / 2], 0.0f) << j;
  }

  const std::int64_t w = t.sliding_window;
  EXPECT_TRUE(ref->attends(sliding, 40, 40));
  EXPECT_TRUE(ref->attends(sliding, 40, 40 - w + 1));
  EXPECT_FALSE(ref->attends(sliding, 40, 40 - w));
  EXPECT_FALSE(ref->attends(sliding, 40, 41));
  EXPECT_TRUE(ref->attends(full, 40, 0));
  EXPECT_FALSE(ref->attends(full, 40, 41));
}

void expect_invalid(const std::function<void()>& f, const std::string& message) {
  try {
    f();
    ADD_FAILURE() << "expected an error containing: " << message;
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::kInvalidArgument) << e.what();
    EXPECT_NE(std::string(e.what()).find(message), std::string::npos) << e.what();
  }
}

TEST_F(DynamicReferenceTest, RefusesBadInputNamingTheValue) {
  const auto ck = Checkpoint::open(dir_->file("m"));
  auto ref = DynamicReference::create(*ck);
  const ModelConfig& c = ck->config();
  const std::int64_t v = c.text.vocab_size;

  DynamicPrompt p;
  expect_invalid([&] { ref->prefill(p); }, "input_ids is empty");
  p.input_ids = {2, 105, v};
  expect_invalid([&] { ref->prefill(p); },
                 "input_ids[2] = " + std::to_string(v) + " is outside the vocabulary [0, " + std::to_string(v) + ")");
  p.input_ids = {2, -1};
  expect_invalid([&] { ref->prefill(p); }, "input_ids[1] = -1 is outside the vocabulary");
  expect_invalid([&] { ref->decode(5); }, "decode before prefill");

  // Two placeholders but one image feature: a 3 x 3 patch grid pools to one soft token.
  const std::int64_t pv = 3 * c.vision->patch_size * c.vision->patch_size;
  std::vector<float> pixels(static_cast<std::size_t>(10 * pv), 0.25f);
  std::vector<std::int64_t> pos;
  for (std::int64_t i = 0; i < 9; ++i) {
    pos.push_back(i % 3);
    pos.push_back(i / 3);
  }
  pos.push_back(-1);  // one padding patch
  pos.push_back(-1);
  const std::int64_t image = *c.image_token_id;
  p.input_ids = {2, c.boi_token_id, image, image, c.eoi_token_id};
  p.pixel_values = pixels;
  p.image_position_ids = pos;
  expect_invalid([&] { ref->prefill(p); },
                 "2 image placeholder ids (" + std::to_string(image) + ") but 1 image features");
  // The same with one placeholder runs; then placeholders without an image are refused.
  p.input_ids = {2, c.boi_token_id, image, c.eoi_token_id};
  const DynamicStep ok = ref->prefill(p);
  EXPECT_EQ(ref->image_features().size(), static_cast<std::size_t>(c.text.hidden_size));
  EXPECT_EQ(ok.logits.size(), static_cast<std::size_t>(v));
  EXPECT_THROW(ref->decode(v), Error);
  EXPECT_EQ(ref->past_len(), 4);  // a refused decode leaves the cache as it was
  p.pixel_values = {};
  p.image_position_ids = {};
  expect_invalid([&] { ref->prefill(p); }, "1 image placeholder ids (" + std::to_string(image) + ") but 0 image features");
  // Sizes that disagree.
  p.pixel_values = pixels;
  p.image_position_ids = std::span(pos).first(18);
  expect_invalid([&] { ref->prefill(p); }, "image_position_ids has 18 values, expected 2 * 10 patches = 20");
  p.pixel_values = std::span(pixels).first(pixels.size() - 1);
  expect_invalid([&] { ref->prefill(p); }, "not a multiple of 3 * patch_size^2 = " + std::to_string(pv));

  // Pixel values on a text-only checkpoint.
  const auto text_ck = Checkpoint::open(dir_->file("t"));
  auto text_ref = DynamicReference::create(*text_ck);
  p.input_ids = {2, 105};
  p.pixel_values = pixels;
  p.image_position_ids = pos;
  expect_invalid([&] { text_ref->prefill(p); },
                 std::to_string(pixels.size()) + " pixel values given, but the checkpoint has no vision tower");
}

}  // namespace
}  // namespace staticlm::inspect
