// The public C++ API (include/staticlm/) against the CLI on the tiny model: a Session's greedy
// tokens equal those `staticlm run` writes to its logits dump, for a text prompt and an image
// prompt; the callback sees each token in order; static inputs equal `staticlm inputs`'s.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "base/file.h"
#include "runtime/logits_dump.h"
#include "staticlm/inputs.h"
#include "staticlm/model.h"
#include "tensor/safetensors.h"
#include "test_util.h"
#include "tiny_model.h"

namespace staticlm {
namespace {

class ApiSession : public test::TinyModelTest {
 protected:
  // `staticlm run ARGS --dump-logits` -> the generated tokens.
  static std::vector<std::int64_t> cli_tokens(const std::string& args) {
    const std::string dump = dir_->file("dump.safetensors");
    const auto r = test::run_staticlm("run -m " + model() + " " + args + " --dump-logits " + dump);
    EXPECT_EQ(r.exit_code, 0) << r.err;
    return read_logits_dump(dump).tokens;
  }
};

TEST_F(ApiSession, TextPromptMatchesRun) {
  const auto expected = cli_tokens("-p 'The quick brown fox' -n 8 --temp 0 --max-seq 64");
  ASSERT_EQ(expected.size(), 8u);
  const api::Model m = api::Model::open(model());
  api::SessionOptions o;
  o.max_seq = 64;
  o.threads = 2;
  auto s = m.session(o);
  api::GenerateParams p;
  p.max_new_tokens = 8;
  p.temperature = 0;
  std::vector<std::int64_t> streamed;
  std::string text;
  const auto r = s->generate(api::Prompt{{}, "The quick brown fox", {}}, p, [&](std::int64_t t, std::string_view piece) {
    streamed.push_back(t);
    text += piece;
    return true;
  });
  EXPECT_EQ(r.tokens, expected);
  EXPECT_EQ(streamed, expected);
  EXPECT_EQ(text + r.text_tail, r.text);
  EXPECT_EQ(r.text, m.tokenizer()->decode(expected, /*skip_special_tokens=*/true));
  EXPECT_EQ(r.stats.prompt_tokens, static_cast<std::int64_t>(m.tokenizer()->encode("The quick brown fox").size()));
  EXPECT_EQ(r.stats.generated_tokens, 8);
  EXPECT_EQ(r.stop_reason, "max new tokens");
  // The same prompt as ids, on the same session (it starts over): the same tokens.
  const auto again = s->generate(api::Prompt{m.tokenizer()->encode("The quick brown fox"), "", {}}, p);
  EXPECT_EQ(again.tokens, expected);
  EXPECT_EQ(s->past_len(), again.stats.prompt_tokens + 7);  // every token but the last was fed back
}

TEST_F(ApiSession, ImagePromptMatchesRun) {
  const std::string image = test::fixture("images/gradient.png");
  const auto expected =
      cli_tokens("--image " + image + " --set image_fit=fit -p '<|image|>Describe the image.' -n 3 --temp 0");
  const api::Model m = api::Model::open(model());
  api::SessionOptions o;
  o.sets = {"image_fit=fit"};
  o.threads = 2;
  auto s = m.session(o);
  api::GenerateParams p;
  p.max_new_tokens = 3;
  p.temperature = 0;
  const auto r = s->generate(api::Prompt{{}, "<|image|>Describe the image.", {image}}, p);
  EXPECT_EQ(r.tokens, expected);
  EXPECT_EQ(r.stats.prompt_tokens, 270);  // 264 image + 6 text, as `run` reports
  EXPECT_GT(r.stats.image_encode_seconds, 0);
  // The text engine next to the image one: a text prompt still matches `run`.
  const auto text_expected = cli_tokens("-p 'Hello' -n 4 --temp 0 --set image_fit=fit");
  p.max_new_tokens = 4;
  EXPECT_EQ(s->generate(api::Prompt{{}, "Hello", {}}, p).tokens, text_expected);
}

TEST_F(ApiSession, StepwiseDecodeMatchesGenerate) {
  const api::Model m = api::Model::open(model());
  api::SessionOptions o;
  o.max_seq = 32;
  o.threads = 1;
  auto s = m.session(o);
  api::GenerateParams p;
  p.max_new_tokens = 4;
  p.temperature = 0;
  const std::vector<std::int64_t> prompt = {2, 105, 2364, 107};
  const auto r = s->generate(api::Prompt{prompt, "", {}}, p);
  std::vector<float> logits = s->prefill(api::Prompt{prompt, "", {}});
  ASSERT_EQ(static_cast<std::int64_t>(logits.size()), m.info().vocab_size);
  std::vector<std::int64_t> greedy;
  for (int i = 0; i < 4; ++i) {
    const auto best = static_cast<std::int64_t>(std::max_element(logits.begin(), logits.end()) - logits.begin());
    greedy.push_back(best);
    if (i < 3) logits = s->decode(best);
  }
  EXPECT_EQ(greedy, r.tokens);
}

// GenerateParams::should_stop is polled before each layer of the prompt's prefill and after each
// token. True during the prompt stops the call with no tokens and an empty cache; after a token,
// as a token callback's false. The next call starts over as a fresh session would. With prefill
// buckets (the prompt appended in chunks) the same, and a call after a call starts over too (it
// appended after the previous call's context).
TEST_F(ApiSession, ShouldStopGivesUpThePromptOrTheReply) {
  const api::Model m = api::Model::open(model());
  const std::int64_t layers = m.info().num_layers;
  const api::Prompt prompt{{}, "The quick brown fox jumps over the lazy dog, and then it jumps over the lazy dog again and again", {}};
  api::GenerateParams p = greedy(6);
  const auto want = m.session(session_options(96))->generate(prompt, p);
  ASSERT_EQ(want.tokens.size(), 6u);
  ASSERT_GT(want.stats.prompt_tokens, 16);  // two chunks with buckets 8 and 16
  for (const std::string buckets : {"", "prefill_buckets=[8,16]"}) {
    SCOPED_TRACE(buckets);
    api::SessionOptions o = session_options(96);
    if (!buckets.empty()) o.sets = {buckets};
    auto s = m.session(o);
    std::int64_t polls = 0;
    p.should_stop = [&] {
      ++polls;
      return false;
    };
    EXPECT_EQ(s->generate(prompt, p).tokens, want.tokens);
    EXPECT_EQ(polls, (buckets.empty() ? 1 : 2) * layers + 6);  // the prompt's layers (per chunk), each token
    // Stopped at the prompt's last poll (its last chunk's last layer): nothing generated, nothing
    // cached, the token callback never called.
    const std::int64_t last_prompt_poll = polls - 6;
    polls = 0;
    p.should_stop = [&] { return ++polls == last_prompt_poll; };
    p.dump_logits = dir_->file("stopped.safetensors");  // nothing to dump: no file, no error
    int streamed = 0;
    const auto stopped = s->generate(prompt, p, [&](std::int64_t, std::string_view) {
      ++streamed;
      return true;
    });
    EXPECT_TRUE(stopped.tokens.empty());
    EXPECT_EQ(stopped.stop_reason, "stopped by caller");
    EXPECT_NE(stopped.message.find("during the prompt"), std::string::npos) << stopped.message;
    EXPECT_EQ(streamed, 0);
    EXPECT_EQ(polls, last_prompt_poll);
    EXPECT_EQ(s->past_len(), 0);
    EXPECT_FALSE(std::filesystem::exists(p.dump_logits));
    p.dump_logits.clear();
    // After the second token: two tokens, as when the token callback returns false.
    polls = 0;
    p.should_stop = [&] { return ++polls == last_prompt_poll + 2; };
    const auto two = s->generate(prompt, p);
    EXPECT_EQ(two.tokens, std::vector<std::int64_t>(want.tokens.begin(), want.tokens.begin() + 2));
    EXPECT_EQ(two.stop_reason, "stopped by caller");
    p.should_stop = nullptr;
    EXPECT_EQ(s->generate(prompt, p).tokens, want.tokens);
    const auto again = s->generate(prompt, p);
    EXPECT_EQ(again.tokens, want.tokens);
    EXPECT_EQ(s->past_len(), again.stats.prompt_tokens + 5);
  }
}

// A reply that ends on an end token that is not a control token (Gemma 4's <|tool_response>,
// eos id 50 of the published generation_config) stops there, keeps the token, and leaves its text
// out of the stream and the result. Here the tiny model's third greedy token is made its end
// token through generation_config.json, in a copy of the model.
TEST_F(ApiSession, EndTokenTextIsNotPartOfTheReply) {
  const api::Model m = api::Model::open(model());
  api::SessionOptions o = session_options(64);
  api::GenerateParams p = greedy(8);
  const auto free = m.session(o)->generate(api::Prompt{{}, "The quick brown fox", {}}, p);
  ASSERT_EQ(free.tokens.size(), 8u);
  const std::int64_t end = free.tokens[2];
  const std::size_t stop = static_cast<std::size_t>(std::find(free.tokens.begin(), free.tokens.end(), end) - free.tokens.begin());
  const std::vector<std::int64_t> kept(free.tokens.begin(), free.tokens.begin() + static_cast<std::ptrdiff_t>(stop));
  const std::string end_text = m.tokenizer()->decode({end}, /*skip_special_tokens=*/true);
  ASSERT_FALSE(end_text.empty()) << "token " << end << " is a control token: no test of its text";

  const std::string copy = dir_->file("ends_on_" + std::to_string(end));
  std::filesystem::copy(model(), copy, std::filesystem::copy_options::recursive);
  const std::string gc_path = copy + "/generation_config.json";
  nlohmann::json gc = nlohmann::json::parse(read_file(gc_path));
  gc["eos_token_id"] = {1, end};
  write_text_atomic(gc_path, gc.dump());

  const api::Model ends = api::Model::open(copy);
  std::string streamed;
  const auto r = ends.session(o)->generate(api::Prompt{{}, "The quick brown fox", {}}, p, [&](std::int64_t, std::string_view piece) {
    streamed += piece;
    return true;
  });
  std::vector<std::int64_t> expected = kept;
  expected.push_back(end);
  EXPECT_EQ(r.tokens, expected);
  EXPECT_EQ(r.stop_reason, "eos");
  EXPECT_EQ(r.text, m.tokenizer()->decode(kept, /*skip_special_tokens=*/true));
  EXPECT_EQ(streamed + r.text_tail, r.text);
  // `run` prints that text and nothing of the end token.
  const auto cli = test::run_staticlm("run -m " + copy + " -p 'The quick brown fox' -n 8 --temp 0 --max-seq 64");
  ASSERT_EQ(cli.exit_code, 0) << cli.err;
  EXPECT_EQ(cli.out, r.text + "\n");
}

TEST_F(ApiSession, BadInputIsAnErrorNamingIt) {
  try {
    api::Model::open(dir_->file("nope"));
    FAIL() << "opened a missing directory";
  } catch (const api::Error& e) {
    EXPECT_NE(std::string(e.what()).find(dir_->file("nope")), std::string::npos) << e.what();
  }
  const api::Model m = api::Model::open(model());
  api::SessionOptions o;
  o.max_seq = 1;
  try {
    m.session(o);
    FAIL() << "max_seq 1 accepted";
  } catch (const api::Error& e) {
    EXPECT_EQ(e.code(), api::ErrorCode::kInvalidArgument);
    EXPECT_NE(std::string(e.what()).find("max_seq 1"), std::string::npos) << e.what();
  }
  o.max_seq = 8;
  auto s = m.session(o);
  EXPECT_THROW(s->decode(5), api::Error);  // nothing prefilled
  EXPECT_THROW(s->generate(api::Prompt{{1, 2}, "hi", {}}), api::Error);  // two sources
  EXPECT_THROW(s->generate(api::Prompt{{1, -3}, "", {}}), api::Error);
  EXPECT_THROW(s->generate(api::Prompt{std::vector<std::int64_t>(8, 2), "", {}}), api::Error);  // no decode slot
}

TEST_F(ApiSession, StaticInputsMatchInputsCommand) {
  const std::string image = test::fixture("images/gradient.png");
  const std::string out = dir_->file("inputs.safetensors");
  const auto r = test::run_staticlm("inputs -m " + model() + " --prompt '<|image|>Describe the image.' --image " + image +
                                    " --set image_fit=fit --out " + out);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  api::InputOptions o;
  o.sets = {"image_fit=fit"};
  const auto t = api::build_static_inputs(model(), "<|image|>Describe the image.", {image}, o);
  const auto f = SafetensorsFile::open(out);
  ASSERT_EQ(t.size(), f->names().size());
  for (const auto& [name, host] : t) {
    const TensorView v = f->get(name);
    EXPECT_EQ(host.shape, v.shape.dims()) << name;
    ASSERT_EQ(host.data.size(), v.nbytes()) << name;
    EXPECT_EQ(0, std::memcmp(host.data.data(), v.data, v.nbytes())) << name;
  }
  const auto pre = api::preprocess_image(model(), image, o);
  EXPECT_EQ(pre.at("pixel_values").data, t.at("pixel_values").data);
  EXPECT_EQ(pre.at("image_position_ids").data, t.at("image_position_ids").data);
}

}  // namespace
}  // namespace staticlm
