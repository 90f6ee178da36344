// The C API (include/staticlm/staticlm.h): misuse is an error code and a message, never a crash;
// the C example built against libstaticlm.so generates `staticlm run`'s greedy tokens (text and
// image); the shared library exports only staticlm_* symbols.
#include <gtest/gtest.h>

#include <cstring>
#include <fstream>
#include <functional>
#include <nlohmann/json.hpp>
#include <sstream>
#include <limits>
#include <string>
#include <vector>

#include "runtime/logits_dump.h"
#include "staticlm/model.h"
#include "staticlm/staticlm.h"
#include "tensor/safetensors.h"
#include "test_util.h"
#include "tiny_model.h"

namespace staticlm {
namespace {

std::string last_error() { return staticlm_last_error(); }

class CApi : public test::TinyModelTest {
 protected:
  // The tiny model and a session of max_seq 64 on it, freed by TearDown.
  staticlm_session* open_session() {
    EXPECT_EQ(staticlm_model_open(model().c_str(), &model_), STATICLM_OK) << last_error();
    staticlm_session_params sp = staticlm_session_default_params();
    sp.max_seq = 64;
    EXPECT_EQ(staticlm_session_create(model_, &sp, &session_), STATICLM_OK) << last_error();
    return session_;
  }
  // Greedy, n tokens whatever the end tokens say.
  static staticlm_generate_params greedy_params(int64_t n) {
    staticlm_generate_params g = staticlm_generate_default_params();
    g.max_new_tokens = n;
    g.temperature = 0;
    g.ignore_eos = 1;
    return g;
  }
  void TearDown() override {
    if (session_ != nullptr) staticlm_session_free(session_);
    if (model_ != nullptr) staticlm_model_free(model_);
  }
  staticlm_model* model_ = nullptr;
  staticlm_session* session_ = nullptr;
};

TEST_F(CApi, NullAndFreedHandlesAreErrors) {
  int64_t vocab = 0;
  EXPECT_EQ(staticlm_model_vocab_size(nullptr, &vocab), STATICLM_ERROR_INVALID_HANDLE);
  EXPECT_EQ(last_error(), "staticlm_model_vocab_size: null staticlm_model handle");
  EXPECT_EQ(staticlm_session_free(nullptr), STATICLM_ERROR_INVALID_HANDLE);

  staticlm_model* m = nullptr;
  ASSERT_EQ(staticlm_model_open(model().c_str(), &m), STATICLM_OK) << last_error();
  ASSERT_EQ(staticlm_model_vocab_size(m, &vocab), STATICLM_OK);
  EXPECT_GT(vocab, 0);
  EXPECT_EQ(last_error(), "");
  staticlm_session* s = nullptr;
  ASSERT_EQ(staticlm_session_create(m, nullptr, &s), STATICLM_OK) << last_error();
  ASSERT_EQ(staticlm_model_free(m), STATICLM_OK);
  // Freed: every use and a second free are refused by name.
  EXPECT_EQ(staticlm_model_vocab_size(m, &vocab), STATICLM_ERROR_INVALID_HANDLE);
  EXPECT_NE(last_error().find("not a live staticlm_model handle (freed, or never created)"), std::string::npos)
      << last_error();
  EXPECT_EQ(staticlm_model_free(m), STATICLM_ERROR_INVALID_HANDLE);
  // A live handle of another type (a session is not a model).
  EXPECT_EQ(staticlm_model_vocab_size(reinterpret_cast<staticlm_model*>(s), &vocab), STATICLM_ERROR_INVALID_HANDLE);
  // The session outlives its model's handle.
  const int64_t ids[] = {2, 105, 2364};
  staticlm_prompt p = {nullptr, ids, 3, nullptr};
  staticlm_generate_params g = staticlm_generate_default_params();
  g.max_new_tokens = 2;
  g.temperature = 0;
  size_t n = 0;
  int64_t out[2];
  EXPECT_EQ(staticlm_generate(s, &p, &g, nullptr, nullptr, out, 2, &n), STATICLM_OK) << last_error();
  EXPECT_EQ(n, 2u);
  ASSERT_EQ(staticlm_session_free(s), STATICLM_OK);
  EXPECT_EQ(staticlm_generate(s, &p, &g, nullptr, nullptr, out, 2, &n), STATICLM_ERROR_INVALID_HANDLE);
  EXPECT_EQ(staticlm_session_free(s), STATICLM_ERROR_INVALID_HANDLE);
}

// A token callback that calls back into its own session: a nested staticlm_generate and a
// staticlm_session_free are refused by name (they ran a second generation over the cache and
// freed the session under the running one), and the outer reply is the reply without them.
struct Reentry {
  staticlm_session* session = nullptr;
  staticlm_status nested = STATICLM_OK, freed = STATICLM_OK;
  std::string nested_error, freed_error;
  int calls = 0;
};
int reenter(int64_t, const char*, size_t, void* user) {
  auto* r = static_cast<Reentry*>(user);
  if (r->calls++ > 0) return 1;
  const int64_t ids[] = {2, 105};
  staticlm_prompt p = {nullptr, ids, 2, nullptr};
  staticlm_generate_params g = staticlm_generate_default_params();
  g.max_new_tokens = 2;
  g.temperature = 0;
  r->nested = staticlm_generate(r->session, &p, &g, nullptr, nullptr, nullptr, 0, nullptr);
  r->nested_error = staticlm_last_error();
  r->freed = staticlm_session_free(r->session);
  r->freed_error = staticlm_last_error();
  return 1;
}

TEST_F(CApi, CallsFromTheTokenCallbackIntoItsSessionAreRefused) {
  staticlm_session* s = open_session();
  const int64_t ids[] = {2, 105, 2364};
  staticlm_prompt p = {nullptr, ids, 3, nullptr};
  const staticlm_generate_params g = greedy_params(6);
  int64_t plain[6], outer[6];
  size_t n = 0;
  ASSERT_EQ(staticlm_generate(s, &p, &g, nullptr, nullptr, plain, 6, &n), STATICLM_OK) << last_error();
  Reentry r;
  r.session = s;
  ASSERT_EQ(staticlm_generate(s, &p, &g, reenter, &r, outer, 6, &n), STATICLM_OK) << last_error();
  EXPECT_EQ(r.nested, STATICLM_ERROR_INVALID_ARGUMENT);
  EXPECT_NE(r.nested_error.find("this session is in a call already"), std::string::npos) << r.nested_error;
  EXPECT_EQ(r.freed, STATICLM_ERROR_INVALID_ARGUMENT);
  EXPECT_NE(r.freed_error.find("staticlm_session_free: the session is in a staticlm_generate call"), std::string::npos)
      << r.freed_error;
  EXPECT_EQ(std::vector<int64_t>(outer, outer + 6), std::vector<int64_t>(plain, plain + 6));
  // Afterwards the session is free for both.
  EXPECT_EQ(staticlm_generate(s, &p, &g, nullptr, nullptr, outer, 6, &n), STATICLM_OK) << last_error();
  EXPECT_EQ(staticlm_session_free(s), STATICLM_OK);
  session_ = nullptr;
}

// The abort callback is polled before each layer of the prompt and after each token: nonzero
// during the prompt stops with no tokens; set to NULL, generation is as before. Not settable from
// within a call.
struct AbortPolls {
  int polls = 0, stop_at = 0;
  staticlm_session* session = nullptr;
  staticlm_status set_inside = STATICLM_OK;
};

int abort_at(void* data) {
  auto* a = static_cast<AbortPolls*>(data);
  if (a->polls++ == 0) a->set_inside = staticlm_session_set_abort_callback(a->session, nullptr, nullptr);
  return a->polls == a->stop_at ? 1 : 0;
}

TEST_F(CApi, AbortCallbackStopsThePromptPartWay) {
  staticlm_session* s = open_session();
  const int64_t ids[] = {2, 105, 2364, 107};
  staticlm_prompt p = {nullptr, ids, 4, nullptr};
  const staticlm_generate_params g = greedy_params(5);
  int64_t plain[5], out[5];
  size_t n = 0;
  ASSERT_EQ(staticlm_generate(s, &p, &g, nullptr, nullptr, plain, 5, &n), STATICLM_OK) << last_error();
  staticlm_stats st;
  AbortPolls a;
  a.session = s;
  ASSERT_EQ(staticlm_session_set_abort_callback(s, abort_at, &a), STATICLM_OK) << last_error();
  ASSERT_EQ(staticlm_generate(s, &p, &g, nullptr, nullptr, out, 5, &n), STATICLM_OK) << last_error();
  EXPECT_EQ(std::vector<int64_t>(out, out + 5), std::vector<int64_t>(plain, plain + 5));
  EXPECT_EQ(a.set_inside, STATICLM_ERROR_INVALID_ARGUMENT);
  const int layers = a.polls - 5;  // one poll per prompt layer, then one per token
  EXPECT_EQ(layers, api::Model::open(model()).info().num_layers);
  a.polls = 0;
  a.stop_at = 2;
  ASSERT_EQ(staticlm_generate(s, &p, &g, nullptr, nullptr, out, 5, &n), STATICLM_OK) << last_error();
  EXPECT_EQ(n, 0u);
  EXPECT_EQ(a.polls, 2);
  ASSERT_EQ(staticlm_session_stats(s, &st), STATICLM_OK);
  EXPECT_STREQ(st.stop_reason, "stopped by caller");
  ASSERT_EQ(staticlm_session_set_abort_callback(s, nullptr, nullptr), STATICLM_OK);
  ASSERT_EQ(staticlm_generate(s, &p, &g, nullptr, nullptr, out, 5, &n), STATICLM_OK) << last_error();
  EXPECT_EQ(std::vector<int64_t>(out, out + n), std::vector<int64_t>(plain, plain + 5));
  EXPECT_EQ(staticlm_session_set_abort_callback(nullptr, nullptr, nullptr), STATICLM_ERROR_INVALID_HANDLE);
}

TEST_F(CApi, BadArgumentsAndSmallBuffers) {
  staticlm_model* m = nullptr;
  EXPECT_EQ(staticlm_model_open(dir_->file("nope").c_str(), &m), STATICLM_ERROR_INVALID_ARGUMENT);
  EXPECT_NE(last_error().find(dir_->file("nope")), std::string::npos) << last_error();
  EXPECT_EQ(m, nullptr);
  EXPECT_EQ(staticlm_model_open(nullptr, &m), STATICLM_ERROR_INVALID_ARGUMENT);
  EXPECT_EQ(last_error(), "staticlm_model_open: dir is null");
  ASSERT_EQ(staticlm_model_open(model().c_str(), &m), STATICLM_OK) << last_error();

  // Tokenize into a buffer one id too small: the count needed comes back.
  size_t needed = 0;
  ASSERT_EQ(staticlm_tokenize(m, "Hello world, again", nullptr, 0, &needed), STATICLM_ERROR_BUFFER_TOO_SMALL);
  ASSERT_GT(needed, 1u);
  std::vector<int64_t> ids(needed);
  EXPECT_EQ(staticlm_tokenize(m, "Hello world, again", ids.data(), needed - 1, &needed), STATICLM_ERROR_BUFFER_TOO_SMALL);
  EXPECT_NE(last_error().find("holds " + std::to_string(needed - 1) + " ids but " + std::to_string(needed)),
            std::string::npos)
      << last_error();
  ASSERT_EQ(staticlm_tokenize(m, "Hello world, again", ids.data(), ids.size(), &needed), STATICLM_OK);
  EXPECT_EQ(staticlm_tokenize(m, "x", nullptr, 4, &needed), STATICLM_ERROR_INVALID_ARGUMENT);
  size_t size = 0;
  char small[4];
  EXPECT_EQ(staticlm_detokenize(m, ids.data(), ids.size(), small, sizeof small, &size), STATICLM_ERROR_BUFFER_TOO_SMALL);
  std::string text(size, '\0');
  ASSERT_EQ(staticlm_detokenize(m, ids.data(), ids.size(), text.data(), text.size(), &size), STATICLM_OK);
  EXPECT_STREQ(text.c_str(), "Hello world, again");
  const int64_t bad_id = -7;
  EXPECT_EQ(staticlm_detokenize(m, &bad_id, 1, text.data(), text.size(), &size), STATICLM_ERROR_OUT_OF_RANGE);
  EXPECT_NE(last_error().find("-7"), std::string::npos) << last_error();

  staticlm_session_params sp = staticlm_session_default_params();
  sp.max_seq = 16;
  const char* bad_set[] = {"bogus_key=1"};
  sp.sets = bad_set;
  sp.n_sets = 1;
  staticlm_session* s = nullptr;
  EXPECT_EQ(staticlm_session_create(m, &sp, &s), STATICLM_ERROR_INVALID_ARGUMENT);
  EXPECT_NE(last_error().find("bogus_key"), std::string::npos) << last_error();
  sp.n_sets = 0;
  ASSERT_EQ(staticlm_session_create(m, &sp, &s), STATICLM_OK) << last_error();
  staticlm_generate_params g = staticlm_generate_default_params();
  g.max_new_tokens = 4;
  g.temperature = 0;
  size_t n = 0;
  int64_t out[2];
  staticlm_prompt both = {"hi", ids.data(), ids.size(), nullptr};
  EXPECT_EQ(staticlm_generate(s, &both, &g, nullptr, nullptr, out, 2, &n), STATICLM_ERROR_INVALID_ARGUMENT);
  EXPECT_EQ(staticlm_generate(s, nullptr, &g, nullptr, nullptr, out, 2, &n), STATICLM_ERROR_INVALID_ARGUMENT);
  // Four tokens into a buffer of two: the first two are written, the count needed comes back.
  staticlm_prompt p = {nullptr, ids.data(), ids.size(), nullptr};
  EXPECT_EQ(staticlm_generate(s, &p, &g, nullptr, nullptr, out, 2, &n), STATICLM_ERROR_BUFFER_TOO_SMALL);
  EXPECT_EQ(n, 4u);
  int64_t all[4];
  ASSERT_EQ(staticlm_generate(s, &p, &g, nullptr, nullptr, all, 4, &n), STATICLM_OK) << last_error();
  EXPECT_EQ(out[0], all[0]);
  EXPECT_EQ(out[1], all[1]);
  // NaN sampling values are refused by name (negative ones mean "the default").
  staticlm_generate_params nan_temp = g, nan_top_p = g;
  nan_temp.temperature = std::numeric_limits<float>::quiet_NaN();
  nan_top_p.top_p = std::numeric_limits<float>::quiet_NaN();
  EXPECT_EQ(staticlm_generate(s, &p, &nan_temp, nullptr, nullptr, all, 4, &n), STATICLM_ERROR_INVALID_ARGUMENT);
  EXPECT_NE(last_error().find("params->temperature is NaN"), std::string::npos) << last_error();
  EXPECT_EQ(staticlm_generate(s, &p, &nan_top_p, nullptr, nullptr, all, 4, &n), STATICLM_ERROR_INVALID_ARGUMENT);
  EXPECT_NE(last_error().find("params->top_p is NaN"), std::string::npos) << last_error();
  // A prompt that leaves no decode slot.
  std::vector<int64_t> long_ids(16, 2);
  staticlm_prompt full = {nullptr, long_ids.data(), long_ids.size(), nullptr};
  EXPECT_EQ(staticlm_generate(s, &full, &g, nullptr, nullptr, all, 4, &n), STATICLM_ERROR_INVALID_ARGUMENT);
  EXPECT_NE(last_error().find("the prompt has 16 tokens but max_seq 16"), std::string::npos) << last_error();
  staticlm_stats st;
  EXPECT_EQ(staticlm_session_stats(s, nullptr), STATICLM_ERROR_INVALID_ARGUMENT);
  ASSERT_EQ(staticlm_session_stats(s, &st), STATICLM_OK);
  EXPECT_STREQ(st.stop_reason, "max new tokens");
  EXPECT_EQ(st.generated_tokens, 4);
  staticlm_session_free(s);
  staticlm_model_free(m);
}

// The example's "tokens: ..." line.
std::vector<std::int64_t> example_tokens(const std::string& out) {
  const auto at = out.rfind("tokens:");
  EXPECT_NE(at, std::string::npos) << out;
  std::istringstream in(out.substr(at + 7));
  std::vector<std::int64_t> ids;
  for (std::int64_t t; in >> t;) ids.push_back(t);
  return ids;
}

// The C example (examples/generate.c, linked to libstaticlm.so) and `staticlm run --dump-logits`
// on the same prompt: the same greedy tokens.
std::vector<std::int64_t> run_tokens(const std::string& model_dir, const std::string& args, const std::string& dump) {
  const auto r = test::run_staticlm("run -m " + model_dir + " " + args + " --dump-logits " + dump);
  EXPECT_EQ(r.exit_code, 0) << r.err;
  return read_logits_dump(dump).tokens;
}

TEST_F(CApi, ExampleGeneratesRunsTokens) {
  const auto text = test::run_command(std::string(STATICLM_EXAMPLE) + " " + model() +
                                      " -p 'The quick brown fox' -n 8 --max-seq 64");
  ASSERT_EQ(text.exit_code, 0) << text.err;
  const auto expected = run_tokens(model(), "-p 'The quick brown fox' -n 8 --temp 0 --max-seq 64", dir_->file("t.st"));
  ASSERT_EQ(expected.size(), 8u);
  EXPECT_EQ(example_tokens(text.out), expected);

  const std::string image = test::fixture("images/gradient.png");
  const auto img = test::run_command(std::string(STATICLM_EXAMPLE) + " " + model() + " --image " + image +
                                     " --set image_fit=fit -p '<|image|>Describe the image.' -n 3");
  ASSERT_EQ(img.exit_code, 0) << img.err;
  EXPECT_EQ(example_tokens(img.out),
            run_tokens(model(), "--image " + image + " --set image_fit=fit -p '<|image|>Describe the image.' -n 3 --temp 0",
                       dir_->file("i.st")));
  const auto bad = test::run_command(std::string(STATICLM_EXAMPLE) + " " + dir_->file("nope") + " -p hi");
  EXPECT_EQ(bad.exit_code, 2);
  EXPECT_NE(bad.err.find("error: staticlm_model_open: "), std::string::npos) << bad.err;
}

// The fields after seed in staticlm_generate_params are `staticlm run`'s flags of the same names:
// each setting gives run's tokens (and text, for stop), and changes them from the plain call's,
// so a field the C API dropped would fail here.
TEST_F(CApi, GenerateParamsAreRunsFlags) {
  staticlm_session* s = open_session();
  ASSERT_NE(s, nullptr);
  const std::string prompt = "The quick brown fox";
  staticlm_prompt p = {prompt.c_str(), nullptr, 0, nullptr};
  std::string text;
  auto generate = [&](const staticlm_generate_params& g) {
    std::vector<int64_t> out(16);
    size_t n = 0;
    EXPECT_EQ(staticlm_generate(s, &p, &g, nullptr, nullptr, out.data(), out.size(), &n), STATICLM_OK) << last_error();
    out.resize(n);
    size_t size = 0;
    text.assign(4096, '\0');
    EXPECT_EQ(staticlm_session_text(s, text.data(), text.size(), &size), STATICLM_OK) << last_error();
    text.resize(size - 1);  // size counts the terminating NUL
    return out;
  };
  staticlm_generate_params plain = staticlm_generate_default_params();
  plain.max_new_tokens = 8;
  plain.temperature = 0;
  const std::vector<int64_t> greedy = generate(plain);
  ASSERT_EQ(greedy.size(), 8u);
  const std::string greedy_text = text;
  int case_number = 0;
  auto expect_run = [&](const staticlm_generate_params& g, const std::string& flags) {
    const std::vector<int64_t> got = generate(g);
    EXPECT_NE(got, greedy) << flags << ": the setting changed nothing, so the check is empty";
    EXPECT_EQ(got, run_tokens(model(), "-p '" + prompt + "' -n 8 --temp 0 --max-seq 64 " + flags,
                              dir_->file("g" + std::to_string(case_number++) + ".st")))
        << flags;
  };
  // A penalty below 1 favours the tokens seen: with a window of 2 it favours only the last two.
  staticlm_generate_params g = plain;
  g.repetition_penalty = 0.2;
  g.repeat_last_n = 2;
  expect_run(g, "--repeat-penalty 0.2 --repeat-last-n 2");
  g = plain;
  g.presence_penalty = -2;
  expect_run(g, "--presence-penalty -2");
  g = plain;
  g.frequency_penalty = -2;
  g.presence_penalty = 1;
  expect_run(g, "--frequency-penalty -2 --presence-penalty 1");
  // Banning the greedy first token.
  const int64_t banned[] = {greedy[0]};
  const float minus_inf[] = {-std::numeric_limits<float>::infinity()};
  g = plain;
  g.logit_bias_tokens = banned;
  g.logit_bias_values = minus_inf;
  g.n_logit_bias = 1;
  expect_run(g, "--logit-bias " + std::to_string(greedy[0]) + "-inf");
  // DRY: a +50 bias makes the greedy reply "hello" (token 23391) over and over; a penalty of 100
  // on the token that continues a repeat breaks that, as run's flags do; with "e" a breaker
  // ("hello" holds it) no repeat is matched and the reply is the biased one again.
  const int64_t hello[] = {23391};
  const float plus50[] = {50};
  staticlm_generate_params biased = plain;
  biased.logit_bias_tokens = hello;
  biased.logit_bias_values = plus50;
  biased.n_logit_bias = 1;
  const std::vector<int64_t> hellos = generate(biased);
  EXPECT_EQ(hellos, std::vector<int64_t>(8, 23391));
  g = biased;
  g.dry_multiplier = 100;
  g.dry_allowed_length = 1;
  const std::vector<int64_t> dried = generate(g);
  EXPECT_NE(dried, hellos);
  EXPECT_EQ(dried, run_tokens(model(), "-p '" + prompt + "' -n 8 --temp 0 --max-seq 64 -l 23391+50 --dry-multiplier 100 --dry-allowed-length 1",
                              dir_->file("dry.st")));
  const char* breakers[] = {"qz", "e"};
  g.dry_sequence_breakers = breakers;
  g.n_dry_sequence_breakers = 2;
  EXPECT_EQ(generate(g), hellos);
  g = plain;
  g.grammar = "root ::= [a-c]+ \" \" [xyz]*";
  expect_run(g, "--grammar '" + std::string(g.grammar) + "'");
  g = plain;
  g.json_schema = R"({"type": "array", "items": {"type": "integer"}})";
  expect_run(g, "--json-schema '" + std::string(g.json_schema) + "'");
  // llama.cpp's samplers act on a sampled reply: each changes the seeded one, as run's flag does.
  staticlm_generate_params sampled = plain;
  sampled.temperature = 3;
  sampled.seed = 5;
  const std::vector<int64_t> base = generate(sampled);
  for (const auto& [set, flags] : std::vector<std::pair<std::function<void(staticlm_generate_params&)>, std::string>>{
           {[](staticlm_generate_params& x) { x.top_n_sigma = 1; }, "--top-n-sigma 1"},
           {[](staticlm_generate_params& x) { x.typical_p = 0.2; }, "--typical 0.2"},
           {[](staticlm_generate_params& x) {
              x.xtc_probability = 1;
              x.xtc_threshold = 0.001;
            },
            "--xtc-probability 1 --xtc-threshold 0.001"},
           {[](staticlm_generate_params& x) {
              x.mirostat = 2;
              x.mirostat_tau = 3;
            },
            "--mirostat 2 --mirostat-ent 3"},
           {[](staticlm_generate_params& x) {
              x.mirostat = 1;
              x.mirostat_eta = 0.5;
            },
            "--mirostat 1 --mirostat-lr 0.5"}}) {
    g = sampled;
    set(g);
    const std::vector<int64_t> got = generate(g);
    EXPECT_NE(got, base) << flags << ": the setting changed nothing, so the check is empty";
    EXPECT_EQ(got, run_tokens(model(), "-p '" + prompt + "' -n 8 --temp 3 -s 5 --max-seq 64 " + flags,
                              dir_->file(std::string("g").append(std::to_string(case_number++)).append(".st"))))
        << flags;
  }

  // A stop string from the greedy text's middle: the reply ends at the token that completes it, as run's.
  ASSERT_GT(greedy_text.size(), 4u) << greedy_text;
  const std::string stop = greedy_text.substr(greedy_text.size() / 2, 2);
  const char* stops[] = {"\x01never", stop.c_str()};
  g = plain;
  g.stop = stops;
  g.n_stop = 2;
  const std::vector<int64_t> stopped = generate(g);
  EXPECT_LT(stopped.size(), greedy.size());
  staticlm_stats st;
  ASSERT_EQ(staticlm_session_stats(s, &st), STATICLM_OK);
  EXPECT_STREQ(st.stop_reason, "stop string");
  const auto r = test::run_staticlm("run -m " + model() + " -p '" + prompt + "' -n 8 --temp 0 --max-seq 64 --stop '\x01never' --stop '" + stop + "'");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(text + "\n", r.out);
  EXPECT_NE(text.find(stop), std::string::npos) << text;  // it ends with the token that completed it

  // ignore_eos: the end tokens banned, as run's flag (here: the same tokens as a ban by logit bias).
  g = plain;
  g.ignore_eos = 1;
  EXPECT_EQ(generate(g), run_tokens(model(), "-p '" + prompt + "' -n 8 --temp 0 --max-seq 64 --ignore-eos", dir_->file("e.st")));
}

// staticlm_generate_with_options: the options the struct has no field for, as run's flags
// (dynamic temperature, an order of the stages) or their effect (special: the control tokens in
// the text; thought_first: a JSON reply may open a thought).
TEST_F(CApi, OptionsJsonAreRunsFlags) {
  staticlm_session* s = open_session();
  ASSERT_NE(s, nullptr);
  const std::string prompt = "The quick brown fox";
  staticlm_prompt p = {prompt.c_str(), nullptr, 0, nullptr};
  std::string text;
  auto generate = [&](const staticlm_generate_params& g, const char* options) {
    std::vector<int64_t> out(16);
    size_t n = 0;
    EXPECT_EQ(staticlm_generate_with_options(s, &p, &g, options, nullptr, nullptr, out.data(), out.size(), &n), STATICLM_OK)
        << last_error();
    out.resize(n);
    size_t size = 0;
    text.assign(4096, '\0');
    EXPECT_EQ(staticlm_session_text(s, text.data(), text.size(), &size), STATICLM_OK) << last_error();
    text.resize(size - 1);
    return out;
  };
  staticlm_generate_params sampled = staticlm_generate_default_params();
  sampled.max_new_tokens = 8;
  sampled.temperature = 3;
  sampled.seed = 5;
  const std::vector<int64_t> base = generate(sampled, nullptr);
  EXPECT_EQ(generate(sampled, "{}"), base);
  int case_number = 0;
  staticlm_generate_params top_p = sampled;
  top_p.top_p = 0.5;
  for (const auto& [g, options, flags] : std::vector<std::tuple<staticlm_generate_params, std::string, std::string>>{
           {sampled, R"({"dynatemp_range": 2.5, "dynatemp_exponent": 0.5})", "--dynatemp-range 2.5 --dynatemp-exp 0.5"},
           {top_p, R"({"samplers": ["top_p", "temperature"]})", "--top-p 0.5 --sampling-seq pt"}}) {
    const std::vector<int64_t> got = generate(g, options.c_str());
    EXPECT_NE(got, base) << flags << ": the setting changed nothing, so the check is empty";
    EXPECT_EQ(got, run_tokens(model(), "-p '" + prompt + "' -n 8 --temp 3 -s 5 --max-seq 64 " + flags,
                              dir_->file("o" + std::to_string(case_number++) + ".st")))
        << flags;
  }
  // special: a bias forces <bos> (a control token), which the text leaves out unless asked.
  staticlm_generate_params bos = staticlm_generate_default_params();
  bos.max_new_tokens = 3;
  bos.temperature = 0;
  const int64_t two[] = {2};
  const float plus1000[] = {1000};
  bos.logit_bias_tokens = two;
  bos.logit_bias_values = plus1000;
  bos.n_logit_bias = 1;
  EXPECT_EQ(generate(bos, R"({"special": true})"), std::vector<int64_t>(3, 2));
  EXPECT_EQ(text, "<bos><bos><bos>");
  generate(bos, R"({"special": false})");
  EXPECT_EQ(text, "");
  // thought_first: with a JSON Schema the first token may be <|channel> (100) only so.
  staticlm_generate_params json = staticlm_generate_default_params();
  json.max_new_tokens = 2;
  json.temperature = 0;
  json.json_schema = R"({"type": "integer"})";
  const int64_t channel[] = {100};
  const float plus50[] = {50};
  json.logit_bias_tokens = channel;
  json.logit_bias_values = plus50;
  json.n_logit_bias = 1;
  EXPECT_NE(generate(json, nullptr).at(0), 100);
  EXPECT_EQ(generate(json, R"({"thought_first": true})").at(0), 100);
}

// Bad options_json: not an object, an unknown key, a wrong type, a value the sampler refuses.
TEST_F(CApi, BadOptionsJsonIsRefusedByName) {
  staticlm_session* s = open_session();
  ASSERT_NE(s, nullptr);
  const int64_t ids[] = {2, 105, 2364};
  staticlm_prompt p = {nullptr, ids, 3, nullptr};
  staticlm_generate_params g = staticlm_generate_default_params();
  g.max_new_tokens = 1;
  for (const auto& [options, named] : std::vector<std::pair<const char*, std::string>>{
           {"[1]", "options_json: expected a JSON object"},
           {"{bad", "options_json: expected a JSON object"},
           {R"({"bogus": 1})", "options_json: unknown key 'bogus'"},
           {R"({"special": 1})", "options_json.special: expected true or false"},
           {R"({"dynatemp_range": "wide"})", "options_json.dynatemp_range: expected a number"},
           {R"({"samplers": "kt"})", "options_json.samplers: expected an array of sampler names"},
           {R"({"samplers": ["frobnicate"]})", "samplers: unknown sampler 'frobnicate'"},
           {R"({"dynatemp_range": -1})", "dynatemp_range"}}) {
    size_t n = 0;
    EXPECT_EQ(staticlm_generate_with_options(s, &p, &g, options, nullptr, nullptr, nullptr, 0, &n), STATICLM_ERROR_INVALID_ARGUMENT)
        << options;
    EXPECT_NE(last_error().find(named), std::string::npos) << options << ": " << last_error();
  }
  // Without options, an error still names the function the caller called.
  staticlm_prompt both = {"hi", ids, 3, nullptr};
  EXPECT_EQ(staticlm_generate_with_options(s, &both, &g, nullptr, nullptr, nullptr, nullptr, 0, nullptr),
            STATICLM_ERROR_INVALID_ARGUMENT);
  EXPECT_EQ(last_error().rfind("staticlm_generate_with_options:", 0), 0u) << last_error();
  EXPECT_EQ(staticlm_generate(s, &both, &g, nullptr, nullptr, nullptr, 0, nullptr), STATICLM_ERROR_INVALID_ARGUMENT);
  EXPECT_EQ(last_error().rfind("staticlm_generate:", 0), 0u) << last_error();
}

// The same fields' bad values are refused by name (sanitized too: the arrays are read at the boundary).
TEST_F(CApi, BadGenerateParamsAreRefusedByName) {
  staticlm_model* m = nullptr;
  ASSERT_EQ(staticlm_model_open(model().c_str(), &m), STATICLM_OK) << last_error();
  staticlm_session* s = nullptr;
  ASSERT_EQ(staticlm_session_create(m, nullptr, &s), STATICLM_OK) << last_error();
  staticlm_prompt p = {"hi", nullptr, 0, nullptr};
  staticlm_generate_params plain = staticlm_generate_default_params();
  plain.max_new_tokens = 2;
  plain.temperature = 0;
  std::vector<int64_t> out(8);
  size_t n = 0;
  auto expect_refused = [&](const staticlm_generate_params& g, const std::string& message) {
    EXPECT_EQ(staticlm_generate(s, &p, &g, nullptr, nullptr, out.data(), out.size(), &n), STATICLM_ERROR_INVALID_ARGUMENT) << message;
    EXPECT_NE(last_error().find(message), std::string::npos) << last_error();
  };
  staticlm_generate_params g = plain;
  g.presence_penalty = std::numeric_limits<double>::quiet_NaN();
  expect_refused(g, "params->presence_penalty is NaN");
  g = plain;
  g.frequency_penalty = 3;
  expect_refused(g, "frequency_penalty");
  g = plain;
  g.repeat_last_n = -2;
  expect_refused(g, "repeat_last_n");
  g = plain;
  g.n_stop = 1;
  expect_refused(g, "params->stop is null but params->n_stop is not 0");
  const char* empty_stop[] = {""};
  g.stop = empty_stop;
  expect_refused(g, "params->stop[0] is null or empty");
  g = plain;
  g.n_logit_bias = 1;
  expect_refused(g, "n_logit_bias");
  const int64_t outside[] = {1 << 30};
  const float one[] = {1};
  g.logit_bias_tokens = outside;
  g.logit_bias_values = one;
  expect_refused(g, "logit_bias: token 1073741824 is outside the vocabulary");
  g = plain;
  g.grammar = "root ::= ";
  g.json_schema = "{}";
  expect_refused(g, "give one constraint");
  g.json_schema = nullptr;
  g.grammar = "root ::= undefined_rule";
  expect_refused(g, "undefined_rule");
  g = plain;
  g.xtc_threshold = std::numeric_limits<double>::quiet_NaN();
  expect_refused(g, "params->xtc_threshold is NaN");
  g = plain;
  g.typical_p = 0;
  expect_refused(g, "typical_p = 0: expected a number in (0, 1]");
  g = plain;
  g.dry_multiplier = 1;
  const char* empty_breaker[] = {""};
  g.dry_sequence_breakers = empty_breaker;
  g.n_dry_sequence_breakers = 1;
  expect_refused(g, "dry_sequence_breakers: an empty sequence breaker");
  g = plain;
  g.dry_base = 0.5;
  expect_refused(g, "dry_base = 0.5: expected a number >= 1");
  g = plain;
  g.mirostat = 3;
  expect_refused(g, "mirostat 3: expected 0 (off), 1 or 2");
  g = plain;
  g.xtc_probability = 1.5;
  expect_refused(g, "xtc_probability = 1.5: expected a number in [0, 1]");
  // The session still generates after the refusals.
  EXPECT_EQ(staticlm_generate(s, &p, &plain, nullptr, nullptr, out.data(), out.size(), &n), STATICLM_OK) << last_error();
  EXPECT_EQ(n, 2u);
  staticlm_session_free(s);
  staticlm_model_free(m);
}

// An agent loop in C: the chat prompt with tools, the grammar forcing a call, generate, and the
// calls parsed out: the JSON line `run --tool-choice required --json` prints.
TEST_F(CApi, ToolCallGrammarAndParseGiveRunsCalls) {
  const std::string tools = R"([{"type": "function", "function": {"name": "set_alarm", "parameters": {"type": "object",
    "properties": {"loud": {"type": "boolean"}, "tone": {"enum": ["beep", "ring"]}}, "required": ["loud", "tone"]}}}])";
  const std::string messages = R"([{"role": "user", "content": "Wake me at seven"}])";
  const std::string template_file = test::fixture("jinja/templates/gemma4_tools.jinja");
  std::ofstream(dir_->file("tc_messages.json")) << messages;
  std::ofstream(dir_->file("tc_tools.json")) << tools;
  const auto cli = test::run_staticlm("run -m " + model() + " --messages " + dir_->file("tc_messages.json") + " --tools " +
                                      dir_->file("tc_tools.json") + " --chat-template " + template_file +
                                      " --tool-choice required -n 40 --temp 0 --max-seq 512 --json");
  ASSERT_EQ(cli.exit_code, 0) << cli.err;
  ASSERT_FALSE(nlohmann::json::parse(cli.out)["tool_calls"].empty()) << cli.out;

  staticlm_model* m = nullptr;
  ASSERT_EQ(staticlm_model_open(model().c_str(), &m), STATICLM_OK) << last_error();
  staticlm_chat_format_params cp = staticlm_chat_format_default_params();
  cp.template_file = template_file.c_str();
  cp.tools_json = tools.c_str();
  std::string prompt(1 << 16, '\0');
  size_t size = 0;
  ASSERT_EQ(staticlm_chat_format(m, messages.c_str(), &cp, prompt.data(), prompt.size(), &size), STATICLM_OK) << last_error();
  prompt.resize(size - 1);
  std::string grammar(1 << 16, '\0');
  ASSERT_EQ(staticlm_tool_call_grammar(tools.c_str(), nullptr, 1, grammar.data(), grammar.size(), &size), STATICLM_OK) << last_error();
  grammar.resize(size - 1);
  staticlm_session_params sp = staticlm_session_default_params();
  sp.max_seq = 512;
  staticlm_session* s = nullptr;
  ASSERT_EQ(staticlm_session_create(m, &sp, &s), STATICLM_OK) << last_error();
  staticlm_prompt p = {prompt.c_str(), nullptr, 0, nullptr};
  staticlm_generate_params g = staticlm_generate_default_params();
  g.max_new_tokens = 40;
  g.temperature = 0;
  g.grammar = grammar.c_str();
  size_t n = 0;
  ASSERT_EQ(staticlm_generate(s, &p, &g, nullptr, nullptr, nullptr, 0, &n), STATICLM_OK) << last_error();
  std::string text(1 << 16, '\0');
  ASSERT_EQ(staticlm_session_text(s, text.data(), text.size(), &size), STATICLM_OK) << last_error();
  text.resize(size - 1);
  std::string reply(1 << 16, '\0');
  ASSERT_EQ(staticlm_parse_tool_calls(text.c_str(), reply.data(), reply.size(), &size), STATICLM_OK) << last_error();
  reply.resize(size - 1);
  EXPECT_EQ(reply + "\n", cli.out);

  // Refused by name.
  EXPECT_EQ(staticlm_tool_call_grammar(tools.c_str(), "get_time", 1, grammar.data(), grammar.size(), &size),
            STATICLM_ERROR_INVALID_ARGUMENT);
  EXPECT_NE(last_error().find("no tool is named \"get_time\""), std::string::npos) << last_error();
  EXPECT_EQ(staticlm_tool_call_grammar("[1", nullptr, 1, grammar.data(), grammar.size(), &size), STATICLM_ERROR_INVALID_ARGUMENT);
  EXPECT_NE(last_error().find("tools: expected a JSON array"), std::string::npos) << last_error();
  EXPECT_EQ(staticlm_parse_tool_calls(nullptr, reply.data(), reply.size(), &size), STATICLM_ERROR_INVALID_ARGUMENT);
  staticlm_session_free(s);
  staticlm_model_free(m);
}

// staticlm_build_static_inputs: the tensors `staticlm inputs` writes, byte for byte.
TEST_F(CApi, StaticInputsEqualInputsCommand) {
  const std::string image = test::fixture("images/gradient.png");
  const std::string out = dir_->file("inputs.safetensors");
  const auto r = test::run_staticlm("inputs -m " + model() + " --prompt '<|image|>Describe.' --image " + image +
                                    " --set image_fit=fit --out " + out);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const auto file = SafetensorsFile::open(out);
  const char* sets[] = {"image_fit=fit"};
  staticlm_tensors* t = nullptr;
  ASSERT_EQ(staticlm_build_static_inputs(model().c_str(), "<|image|>Describe.", image.c_str(), sets, 1, &t), STATICLM_OK)
      << last_error();
  size_t count = 0;
  ASSERT_EQ(staticlm_tensors_count(t, &count), STATICLM_OK);
  ASSERT_EQ(count, file->names().size());
  for (size_t i = 0; i < count; ++i) {
    staticlm_tensor_info info;
    ASSERT_EQ(staticlm_tensors_info(t, i, &info), STATICLM_OK);
    const TensorView v = file->get(info.name);
    EXPECT_EQ(std::vector<std::int64_t>(info.shape, info.shape + info.rank), v.shape.dims()) << info.name;
    ASSERT_EQ(info.nbytes, v.nbytes()) << info.name;
    std::vector<unsigned char> bytes(info.nbytes);
    size_t needed = 0;
    if (info.nbytes > 0) {
      EXPECT_EQ(staticlm_tensors_copy(t, info.name, bytes.data(), info.nbytes - 1, &needed), STATICLM_ERROR_BUFFER_TOO_SMALL);
      EXPECT_EQ(needed, info.nbytes);
    }
    ASSERT_EQ(staticlm_tensors_copy(t, info.name, bytes.data(), bytes.size(), &needed), STATICLM_OK);
    EXPECT_EQ(0, std::memcmp(bytes.data(), v.data, v.nbytes())) << info.name;
  }
  staticlm_tensor_info info;
  EXPECT_EQ(staticlm_tensors_info(t, count, &info), STATICLM_ERROR_OUT_OF_RANGE);
  size_t needed = 0;
  EXPECT_EQ(staticlm_tensors_copy(t, "nope", nullptr, 0, &needed), STATICLM_ERROR_INVALID_ARGUMENT);
  EXPECT_EQ(last_error(), "staticlm_tensors_copy: no tensor named nope");
  ASSERT_EQ(staticlm_tensors_free(t), STATICLM_OK);
  EXPECT_EQ(staticlm_tensors_count(t, &count), STATICLM_ERROR_INVALID_HANDLE);
  EXPECT_EQ(staticlm_build_static_inputs(model().c_str(), "hi", nullptr, nullptr, 1, &t), STATICLM_ERROR_INVALID_ARGUMENT);
}

// staticlm_chat_format: the text `staticlm chat-format --messages` prints for the same messages.
TEST_F(CApi, ChatFormatEqualsChatFormatCommand) {
  const std::string messages =
      R"([{"role": "system", "content": "Be brief."}, {"role": "user", "content": "Hi there"},)"
      R"( {"role": "assistant", "content": "Hello."}, {"role": "user", "content": "And again?"}])";
  const std::string file = dir_->file("messages.json");
  std::ofstream(file) << messages;
  const auto cli = test::run_staticlm("chat-format -m " + model() + " --messages " + file);
  ASSERT_EQ(cli.exit_code, 0) << cli.err;
  const auto cli_open = test::run_staticlm("chat-format -m " + model() + " --messages " + file + " --no-generation-prompt");
  ASSERT_EQ(cli_open.exit_code, 0) << cli_open.err;

  staticlm_model* m = nullptr;
  ASSERT_EQ(staticlm_model_open(model().c_str(), &m), STATICLM_OK) << last_error();
  size_t size = 0;
  ASSERT_EQ(staticlm_chat_format(m, messages.c_str(), nullptr, nullptr, 0, &size), STATICLM_ERROR_BUFFER_TOO_SMALL);
  EXPECT_EQ(size, cli.out.size() + 1);
  std::string text(size, '\0');
  EXPECT_EQ(staticlm_chat_format(m, messages.c_str(), nullptr, text.data(), size - 1, &size), STATICLM_ERROR_BUFFER_TOO_SMALL);
  EXPECT_NE(last_error().find("holds " + std::to_string(size - 1) + " bytes but " + std::to_string(size)), std::string::npos)
      << last_error();
  ASSERT_EQ(staticlm_chat_format(m, messages.c_str(), nullptr, text.data(), text.size(), &size), STATICLM_OK) << last_error();
  EXPECT_STREQ(text.c_str(), cli.out.c_str());

  // Without the generation prompt: what --no-generation-prompt prints (the model's turn not opened).
  staticlm_chat_format_params p = staticlm_chat_format_default_params();
  EXPECT_EQ(p.add_generation_prompt, 1);
  p.add_generation_prompt = 0;
  std::vector<char> open(4096);
  ASSERT_EQ(staticlm_chat_format(m, messages.c_str(), &p, open.data(), open.size(), &size), STATICLM_OK) << last_error();
  EXPECT_STREQ(open.data(), cli_open.out.c_str());
  EXPECT_LT(std::strlen(open.data()), cli.out.size());

  // Misuse: bad JSON names the problem; a bad template variable; null pointers; a null handle.
  EXPECT_EQ(staticlm_chat_format(m, "[{\"role\": \"user\"", nullptr, open.data(), open.size(), &size),
            STATICLM_ERROR_INVALID_ARGUMENT);
  EXPECT_EQ(last_error().rfind("staticlm_chat_format: ", 0), 0u) << last_error();
  const char* bad_var[] = {"no_equals_sign"};
  p.vars = bad_var;
  p.n_vars = 1;
  EXPECT_EQ(staticlm_chat_format(m, messages.c_str(), &p, open.data(), open.size(), &size), STATICLM_ERROR_INVALID_ARGUMENT);
  EXPECT_NE(last_error().find("no_equals_sign"), std::string::npos) << last_error();
  p.vars = nullptr;
  EXPECT_EQ(staticlm_chat_format(m, messages.c_str(), &p, open.data(), open.size(), &size), STATICLM_ERROR_INVALID_ARGUMENT);
  EXPECT_EQ(last_error(), "staticlm_chat_format: vars is null but its count is not 0");
  EXPECT_EQ(staticlm_chat_format(m, nullptr, nullptr, open.data(), open.size(), &size), STATICLM_ERROR_INVALID_ARGUMENT);
  EXPECT_EQ(last_error(), "staticlm_chat_format: messages_json is null");
  EXPECT_EQ(staticlm_chat_format(m, messages.c_str(), nullptr, nullptr, 8, &size), STATICLM_ERROR_INVALID_ARGUMENT);
  EXPECT_EQ(staticlm_chat_format(nullptr, messages.c_str(), nullptr, open.data(), open.size(), &size),
            STATICLM_ERROR_INVALID_HANDLE);
  ASSERT_EQ(staticlm_model_free(m), STATICLM_OK);
  EXPECT_EQ(staticlm_chat_format(m, messages.c_str(), nullptr, open.data(), open.size(), &size),
            STATICLM_ERROR_INVALID_HANDLE);
}

// staticlm_preprocess_image: the pixel_values `staticlm inputs` writes for the same image.
TEST_F(CApi, PreprocessImageEqualsInputsCommand) {
  const std::string image = test::fixture("images/gradient.png");
  const std::string out = dir_->file("pixels.safetensors");
  const auto r = test::run_staticlm("inputs -m " + model() + " --prompt '<|image|>Describe.' --image " + image +
                                    " --set image_fit=fit --out " + out);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const auto file = SafetensorsFile::open(out);
  const TensorView expected = file->get("pixel_values");

  const char* sets[] = {"image_fit=fit"};
  size_t n = 0;
  int64_t shape[3] = {0, 0, 0};
  ASSERT_EQ(staticlm_preprocess_image(model().c_str(), image.c_str(), sets, 1, nullptr, 0, &n, shape),
            STATICLM_ERROR_BUFFER_TOO_SMALL);
  EXPECT_EQ(std::vector<std::int64_t>(shape, shape + 3), expected.shape.dims());
  ASSERT_EQ(n, static_cast<size_t>(expected.numel()));
  std::vector<float> pixels(n);
  EXPECT_EQ(staticlm_preprocess_image(model().c_str(), image.c_str(), sets, 1, pixels.data(), n - 1, &n, nullptr),
            STATICLM_ERROR_BUFFER_TOO_SMALL);
  EXPECT_NE(last_error().find("holds " + std::to_string(n - 1) + " floats but " + std::to_string(n)), std::string::npos)
      << last_error();
  ASSERT_EQ(staticlm_preprocess_image(model().c_str(), image.c_str(), sets, 1, pixels.data(), n, &n, shape), STATICLM_OK)
      << last_error();
  EXPECT_EQ(0, std::memcmp(pixels.data(), expected.data, expected.nbytes()));

  // Misuse: a missing image is named; null arguments; a null buffer with a capacity.
  const std::string missing = dir_->file("missing.png");
  EXPECT_EQ(staticlm_preprocess_image(model().c_str(), missing.c_str(), sets, 1, pixels.data(), n, &n, shape),
            STATICLM_ERROR_INVALID_FILE);
  EXPECT_NE(last_error().find(missing), std::string::npos) << last_error();
  EXPECT_EQ(staticlm_preprocess_image(model().c_str(), nullptr, sets, 1, pixels.data(), n, &n, shape),
            STATICLM_ERROR_INVALID_ARGUMENT);
  EXPECT_EQ(last_error(), "staticlm_preprocess_image: image is null");
  EXPECT_EQ(staticlm_preprocess_image(model().c_str(), image.c_str(), sets, 1, nullptr, 16, &n, shape),
            STATICLM_ERROR_INVALID_ARGUMENT);
  EXPECT_EQ(staticlm_preprocess_image(model().c_str(), image.c_str(), nullptr, 1, pixels.data(), n, &n, shape),
            STATICLM_ERROR_INVALID_ARGUMENT);
  EXPECT_EQ(staticlm_preprocess_image(model().c_str(), image.c_str(), sets, 1, pixels.data(), n, nullptr, shape),
            STATICLM_ERROR_INVALID_ARGUMENT);
}

// staticlm_inspect: the report `staticlm inspect --report` writes for the same prompt, and the
// verdict with it.
TEST_F(CApi, InspectReportEqualsInspectCommand) {
  const std::string report = dir_->file("inspect.json");
  const auto r = test::run_staticlm("inspect -m " + model() + " -p 'The capital of France is' --max-seq 64 --threads 2" +
                                    " --report " + report);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  std::ifstream in(report);
  const nlohmann::json expected = nlohmann::json::parse(in);

  staticlm_inspect_params p = staticlm_inspect_default_params();
  p.prompt = "The capital of France is";
  p.max_seq = 64;
  p.threads = 2;
  int pass = -1;
  size_t size = 0;
  char small[16];
  EXPECT_EQ(staticlm_inspect(model().c_str(), &p, &pass, small, sizeof small, &size), STATICLM_ERROR_BUFFER_TOO_SMALL);
  EXPECT_EQ(pass, 1);  // the verdict comes back with a small buffer too
  ASSERT_GT(size, sizeof small);
  std::string text(size, '\0');
  pass = -1;
  ASSERT_EQ(staticlm_inspect(model().c_str(), &p, &pass, text.data(), text.size(), &size), STATICLM_OK) << last_error();
  EXPECT_EQ(pass, 1);
  const nlohmann::json got = nlohmann::json::parse(text.c_str());
  EXPECT_EQ(got.at("pass"), expected.at("pass"));
  EXPECT_EQ(got.at("reference"), expected.at("reference"));
  EXPECT_EQ(got.at("tolerance"), expected.at("tolerance"));
  ASSERT_EQ(got.at("steps").size(), expected.at("steps").size());
  for (std::size_t i = 0; i < got.at("steps").size(); ++i) {
    EXPECT_EQ(got["steps"][i]["name"], expected["steps"][i]["name"]) << i;
    EXPECT_EQ(got["steps"][i]["status"], expected["steps"][i]["status"]) << i;
  }

  // Misuse: a bad reference and bad steps are named; prompt and ids together; null arguments.
  p.reference = "bogus:x";
  EXPECT_EQ(staticlm_inspect(model().c_str(), &p, &pass, text.data(), text.size(), &size), STATICLM_ERROR_INVALID_ARGUMENT);
  EXPECT_NE(last_error().find("bogus:x"), std::string::npos) << last_error();
  p.reference = nullptr;
  p.steps = "9";
  EXPECT_EQ(staticlm_inspect(model().c_str(), &p, &pass, text.data(), text.size(), &size), STATICLM_ERROR_INVALID_ARGUMENT);
  EXPECT_NE(last_error().find("9"), std::string::npos) << last_error();
  p.steps = nullptr;
  const int64_t ids[] = {2, 105};
  p.prompt_ids = ids;
  p.n_prompt_ids = 2;
  EXPECT_EQ(staticlm_inspect(model().c_str(), &p, &pass, text.data(), text.size(), &size), STATICLM_ERROR_INVALID_ARGUMENT);
  EXPECT_EQ(last_error(), "staticlm_inspect: give at most one of prompt and prompt_ids");
  p.prompt_ids = nullptr;
  EXPECT_EQ(staticlm_inspect(model().c_str(), &p, &pass, text.data(), text.size(), &size), STATICLM_ERROR_INVALID_ARGUMENT);
  EXPECT_EQ(last_error(), "staticlm_inspect: prompt_ids is null but n_prompt_ids is not 0");
  EXPECT_EQ(staticlm_inspect(nullptr, &p, &pass, text.data(), text.size(), &size), STATICLM_ERROR_INVALID_ARGUMENT);
  EXPECT_EQ(last_error(), "staticlm_inspect: model_dir is null");
  EXPECT_EQ(staticlm_inspect(model().c_str(), nullptr, &pass, nullptr, 4, &size), STATICLM_ERROR_INVALID_ARGUMENT);
  EXPECT_EQ(staticlm_inspect(model().c_str(), nullptr, &pass, text.data(), text.size(), nullptr),
            STATICLM_ERROR_INVALID_ARGUMENT);
}

// ABI hygiene: the shared library's dynamic symbol table defines staticlm_* and nothing else
// (no C++ class, no Highway or std:: instantiation).
TEST_F(CApi, SharedLibraryExportsOnlyTheCApi) {
  const auto r = test::run_command("nm -D --defined-only " + std::string(STATICLM_SHARED_LIB));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  std::istringstream in(r.out);
  int exported = 0;
  for (std::string line; std::getline(in, line);) {
    const std::string name = line.substr(line.rfind(' ') + 1);
    EXPECT_EQ(name.rfind("staticlm_", 0), 0u) << "exported: " << line;
    ++exported;
  }
  EXPECT_GE(exported, 15) << r.out;  // the API itself is there
}

}  // namespace
}  // namespace staticlm
