// Image-conditioned prefill on the tiny model made by make_model: the static path (padded ids
// with the pad id on the image span, vision_prefill on the padded patch grid with its canonical
// positions, multimodal_fusion_prefill on the fixed span) gives logits that differ from the
// text-only ones and equal those of the dynamic path, where the same image is encoded from its
// valid patches alone and its rows are scattered by placeholder id into an unpadded sequence
// (Hugging Face's masked_scatter), with the pad id only for the PLE lookup.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <fstream>
#include <random>
#include <vector>

#include "backends/cpu/cpu_backend.h"
#include "backends/cpu/vision_tower.h"
#include "backends/subgraph_contract.h"
#include "base/error.h"
#include "model/checkpoint.h"
#include "model/make_model.h"
#include "runtime/logits_dump.h"
#include "runtime/runtime.h"
#include "tensor/safetensors.h"
#include "test_util.h"

namespace staticlm {
namespace {

// A 6 x 9 patch grid (2 x 3 = 6 soft tokens) in a capacity of 8 tokens (72 patches).
constexpr std::int64_t kGridH = 6, kGridW = 9, kTokens = 6, kPatches = 72, kStart = 5, kMaxSeq = 40;

// Delegates to a CpuBackend (without an image span) and adds the dynamic image path: rows of
// token_embedding whose id is the image placeholder get the injected embeddings in order, and
// ple_embedding looks those ids up as the pad id.
class InjectingBackend : public Backend {
 public:
  InjectingBackend(Backend& inner, std::int64_t image_id, std::int64_t pad_id, std::vector<float> image, std::int64_t d)
      : inner_(inner), image_id_(image_id), pad_id_(pad_id), image_(std::move(image)), d_(d) {}
  std::string name() const override { return "injecting"; }
  const SubgraphProfile& profile() const override { return inner_.profile(); }
  const std::vector<SubgraphSignature>& signatures() const override { return inner_.signatures(); }
  void run(const std::string& name, std::span<const TensorView> in, std::span<const TensorBuffer> out) override {
    if (name != kTokenEmbedding && name != kPleEmbedding) return inner_.run(name, in, out);
    const auto* ids = static_cast<const std::int64_t*>(in[0].data);
    std::vector<std::int64_t> padded(ids, ids + in[0].numel());
    for (std::int64_t& id : padded) id = id == image_id_ ? pad_id_ : id;
    const TensorView v{DType::kI64, in[0].shape, padded.data()};
    inner_.run(name, std::span(&v, 1), out);
    if (name != kTokenEmbedding) return;
    std::size_t next = 0;
    for (std::int64_t r = 0; r < in[0].numel(); ++r) {
      if (ids[r] != image_id_) continue;
      ASSERT_LT(next, image_.size() / d_) << "more placeholders than image rows";
      std::copy_n(image_.data() + next * d_, d_, static_cast<float*>(out[0].data) + r * d_);
      ++next;
    }
    EXPECT_EQ(next, image_.size() / d_) << "every image row is placed";
  }

 private:
  Backend& inner_;
  std::int64_t image_id_, pad_id_;
  std::vector<float> image_;
  std::int64_t d_;
};

class VisionPrefillRun : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    if (test::gemma3_tokenizer_path().empty()) return;
    dir_ = new test::TempDir();
    const std::string out_dir = dir_->file("m");
    test::make_tiny_model(out_dir, 3);
    ck_ = Checkpoint::open(out_dir).release();
  }
  static void TearDownTestSuite() {
    delete ck_;
    delete dir_;
  }
  void SetUp() override {
    if (!dir_) GTEST_SKIP() << "Gemma 3 tokenizer.json not fetched: run scripts/setup.sh";
  }
  static test::TempDir* dir_;
  static Checkpoint* ck_;
};
test::TempDir* VisionPrefillRun::dir_ = nullptr;
Checkpoint* VisionPrefillRun::ck_ = nullptr;

TEST_F(VisionPrefillRun, StaticImagePrefillDiffersFromTextAndEqualsDynamicInjection) {
  const ModelConfig& c = ck_->config();
  const std::int64_t image_id = *c.image_token_id, pad = c.text.pad_token_id, d = c.text.hidden_size;
  // <bos> <|turn>user \n <|image> [6 x <|image|>] <image|> and a few text ids.
  std::vector<std::int64_t> prompt = {2, 105, 2364, 107, c.boi_token_id};
  prompt.insert(prompt.end(), kTokens, image_id);
  for (std::int64_t id : std::vector<std::int64_t>{c.eoi_token_id, 818, 563, 496, 1607, 106, 107, 105, 4368, 107}) prompt.push_back(id);
  const std::int64_t valid = static_cast<std::int64_t>(prompt.size());

  std::mt19937 rng(11);
  std::uniform_real_distribution<float> u(0.0f, 1.0f);
  std::vector<float> pixels(kPatches * 768);
  for (float& v : pixels) v = u(rng);  // padding rows too: they must not matter

  // Static path.
  SubgraphProfile sp;
  sp.max_seq = kMaxSeq;
  sp.visual_start_idx = kStart;
  sp.num_visual_tokens = kTokens;
  sp.num_patches = kPatches;
  sp.patch_vector_size = 768;
  sp.patch_grid_height = kGridH;
  sp.patch_grid_width = kGridW;
  auto sb = CpuBackend::create(*ck_, sp);
  auto rt = Runtime::create(*sb, c, ck_->layers());
  std::vector<std::int64_t> ids(kMaxSeq, pad);
  std::copy(prompt.begin(), prompt.end(), ids.begin());
  std::fill_n(ids.begin() + kStart, kTokens, pad);  // placeholder ids become pad (spec 2.2)
  PrefillInput in;
  in.llm_input_ids = ids;
  in.valid_length = valid;
  in.pixel_values = pixels;
  const std::span<const float> first = rt->prefill(in);
  const std::vector<float> image_logits(first.begin(), first.end());
  in.pixel_values = {};
  const std::span<const float> text = rt->prefill(in);
  float text_diff = 0;
  for (std::size_t i = 0; i < text.size(); ++i) text_diff = std::max(text_diff, std::abs(text[i] - image_logits[i]));
  EXPECT_GT(text_diff, 1e-3f) << "the image must change the logits";

  // Dynamic path: valid patches only, unpadded sequence (max_seq = valid + 1), scatter by id.
  cpu::CpuVisionWeights vw = cpu::load_vision_weights(c, [](const std::string& n) {
    return ck_->weights().get(n);
  });
  cpu::set_bf16_activations(vw, true);  // the backends' default precision policy
  std::vector<std::int64_t> pos;
  for (std::int64_t i = 0; i < kGridH * kGridW; ++i) {
    pos.push_back(i % kGridW);
    pos.push_back(i / kGridW);
  }
  std::vector<float> embeds(kTokens * d);
  cpu::VisionScratch scratch;
  ASSERT_EQ(cpu::run_vision_tower(vw, *c.vision, pixels.data(), pos.data(), kGridH * kGridW, embeds.data(), kTokens,
                                  scratch, nullptr),
            kTokens);
  SubgraphProfile dp;
  dp.max_seq = valid + 1;
  auto db = CpuBackend::create(*ck_, dp);
  InjectingBackend inj(*db, image_id, pad, embeds, d);
  auto drt = Runtime::create(inj, c, ck_->layers());
  const std::span<const float> dyn = drt->prefill_tokens(prompt);
  float diff = 0, scale = 0;
  for (std::size_t i = 0; i < dyn.size(); ++i) {
    diff = std::max(diff, std::abs(dyn[i] - image_logits[i]));
    scale = std::max(scale, std::abs(dyn[i]));
  }
  EXPECT_LT(diff, 1e-4f * std::max(1.0f, scale)) << "static vs dynamic image prefill";
}

TEST_F(VisionPrefillRun, BackendRefusesAProfileWhoseGridDoesNotPoolToTheSpan) {
  SubgraphProfile sp;
  sp.max_seq = kMaxSeq;
  sp.visual_start_idx = kStart;
  sp.num_visual_tokens = 5;
  sp.num_patches = kPatches;
  sp.patch_vector_size = 768;
  sp.patch_grid_height = kGridH;
  sp.patch_grid_width = kGridW;
  try {
    CpuBackend::create(*ck_, sp);
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::kInvalidArgument);
    EXPECT_NE(std::string(e.what()).find("pools to 6 tokens, expected num_visual_tokens 5"), std::string::npos)
        << e.what();
  }
}

// `staticlm run --image` end to end on the same model: the dump's vision_embeds equal the tower
// run (in this process, on the valid patches only) over the pixel values `staticlm inputs`
// writes for the same prompt and image; the image encode is reported on its own line.
TEST_F(VisionPrefillRun, RunWithImageGeneratesAndDumpsVisionEmbeds) {
  const std::string image = test::fixture("images/gradient.png");
  const std::string m = dir_->file("m"), dump = dir_->file("img.safetensors"), in = dir_->file("in.safetensors");
  const std::string common = " -m " + m + " --image " + image + " --set image_fit=fit";
  const auto r = test::run_staticlm("run" + common + " -p '<|image|>Describe the image.' -n 3 --dump-logits " + dump);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.err.find("image encode: 1 image in "), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("prefill: 270 tokens in "), std::string::npos) << r.err;  // 264 image + 6 text
  const LogitsDump d = read_logits_dump(dump);
  EXPECT_EQ(d.tokens.size(), 3u);
  ASSERT_EQ(d.vision_rows, 264);
  const std::int64_t hidden = ck_->config().text.hidden_size;
  ASSERT_EQ(static_cast<std::int64_t>(d.vision_embeds.size()), 264 * hidden);

  const auto ir = test::run_staticlm("inputs" + common + " --prompt '<|image|>Describe the image.' --out " + in);
  ASSERT_EQ(ir.exit_code, 0) << ir.err;
  const auto f = SafetensorsFile::open(in);
  const Tensor px = Tensor::copy_of(f->get("pixel_values"));
  const Tensor pos = Tensor::copy_of(f->get("image_position_ids"));
  std::int64_t valid = 0;
  while (valid < pos.shape()[1] && pos.as<std::int64_t>()[2 * valid] >= 0) ++valid;
  ASSERT_EQ(valid, 36 * 66);
  cpu::CpuVisionWeights vw = cpu::load_vision_weights(ck_->config(), [](const std::string& n) {
    return ck_->weights().get(n);
  });
  cpu::set_bf16_activations(vw, true);  // `run`'s default precision policy
  std::vector<float> ref(264 * hidden);
  cpu::VisionScratch scratch;
  ASSERT_EQ(cpu::run_vision_tower(vw, *ck_->config().vision, px.as<float>().data(), pos.as<std::int64_t>().data(),
                                  valid, ref.data(), 264, scratch, nullptr),
            264);
  float diff = 0;
  for (std::size_t i = 0; i < ref.size(); ++i) diff = std::max(diff, std::abs(ref[i] - d.vision_embeds[i]));
  EXPECT_LT(diff, 1e-4f);
}

TEST_F(VisionPrefillRun, RunWithImageInChatFormatAndErrors) {
  const std::string image = test::fixture("images/gradient.png");
  const std::string common = "run -m " + dir_->file("m") + " --image " + image + " --set image_fit=fit -n 2";
  // The chat format puts <bos><|turn>user\n<|image> first: the span starts at 5.
  const auto chat = test::run_staticlm(common + " --chat -p '<|image|>Describe the image.'" +
                                       " --set vision_profile.visual_start_idx=5");
  EXPECT_EQ(chat.exit_code, 0) << chat.err;
  EXPECT_NE(chat.err.find("generated 2 tokens"), std::string::npos) << chat.err;
  const auto two = test::run_staticlm(common + " --image " + image + " -p '<|image|><|image|>Compare.'");
  EXPECT_EQ(two.exit_code, 2);
  EXPECT_NE(two.err.find("error: run: 2 images given, but the static profile holds one image span: give one --image"),
            std::string::npos)
      << two.err;
  // --messages whose image part names the file: the image is encoded (it was dropped once,
  // leaving a bare <|image|> token); a part naming a missing file is refused by name.
  const std::string messages = dir_->file("image_messages.json");
  std::ofstream(messages) << R"([{"role": "user", "content": [{"type": "image", "path": ")" + image +
                                 R"("}, {"type": "text", "text": "Describe the image."}]}])";
  const std::string plain = "run -m " + dir_->file("m") + " --set image_fit=fit -n 2 --set vision_profile.visual_start_idx=5";
  const auto from_messages = test::run_staticlm(plain + " --messages " + messages);
  EXPECT_EQ(from_messages.exit_code, 0) << from_messages.err;
  EXPECT_NE(from_messages.err.find("image encode: 1 image"), std::string::npos) << from_messages.err;
  const std::string missing = dir_->file("missing_messages.json");
  std::ofstream(missing) << R"([{"role": "user", "content": [{"type": "image", "path": "/nonexistent/zz.png"}, {"type": "text", "text": "x"}]}])";
  const auto missing_run = test::run_staticlm(plain + " --messages " + missing);
  EXPECT_EQ(missing_run.exit_code, 2) << missing_run.err;
  EXPECT_NE(missing_run.err.find("/nonexistent/zz.png"), std::string::npos) << missing_run.err;
  const auto ids = test::run_staticlm(common + " --prompt-ids 2,105");
  EXPECT_EQ(ids.exit_code, 2);
  EXPECT_NE(ids.err.find("--image goes with -p"), std::string::npos) << ids.err;
  const auto broken = test::run_staticlm("run -m " + dir_->file("m") + " --image " +
                                         test::fixture("images/bad_truncated.png") + " -p '<|image|>Hi' -n 2");
  EXPECT_EQ(broken.exit_code, 2);
  EXPECT_NE(broken.err.find("bad_truncated.png: truncated PNG"), std::string::npos) << broken.err;
  const auto text_only = test::run_staticlm("make-model --preset tiny --text-only --seed 1 --out " + dir_->file("t") +
                                            " --tokenizer-from " + test::gemma3_tokenizer_path());
  ASSERT_EQ(text_only.exit_code, 0) << text_only.err;
  const auto no_tower = test::run_staticlm("run -m " + dir_->file("t") + " --image " + image + " -p '<|image|>Hi' -n 2");
  EXPECT_EQ(no_tower.exit_code, 2);
  EXPECT_NE(no_tower.err.find("error: run: --image needs a model with a vision tower; "), std::string::npos)
      << no_tower.err;
  const auto shifted = test::run_staticlm(common + " --chat -p '<|image|>Describe.'");
  EXPECT_EQ(shifted.exit_code, 2);
  EXPECT_NE(shifted.err.find("not at visual_start_idx 1"), std::string::npos) << shifted.err;
}

}  // namespace
}  // namespace staticlm
