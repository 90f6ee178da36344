// The Jinja engine against the real Python jinja2 (configured as transformers configures it):
// every corpus template x conversation and every snippet in tests/fixtures/jinja/, byte for
// byte; templates that jinja2 refuses must fail here too, with jinja2's message where it is a
// raise_exception or an undefined value. The fixtures come from tools/jinja_reference.py; the
// LiveReference tests run that script and the @huggingface/jinja one against the same files.
#include <gtest/gtest.h>

#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>

#include <nlohmann/json.hpp>

#include "base/error.h"
#include "base/file.h"
#include "test_util.h"
#include "text/jinja/template.h"

namespace staticlm {
namespace {

using json = nlohmann::ordered_json;

// The fixed time tools/jinja_reference.py gives strftime_now: 2026-04-02 13:05:09 (a Thursday).
std::tm reference_now() {
  std::tm t{};
  t.tm_year = 2026 - 1900;
  t.tm_mon = 3;
  t.tm_mday = 2;
  t.tm_hour = 13;
  t.tm_min = 5;
  t.tm_sec = 9;
  t.tm_wday = 4;
  t.tm_yday = 91;
  return t;
}

struct Outcome {
  bool ok = false;
  std::string text;  // the output, or the error message
};

Outcome render(const std::string& source, const std::string& name, const json& vars) {
  try {
    jinja::RenderOptions o;
    o.now = reference_now;
    return {true, jinja::Template::parse(source, name)->render(vars, o)};
  } catch (const Error& e) {
    return {false, e.what()};
  }
}

// Compares one rendering with jinja2's result; returns whether it matched.
bool check(const json& expected, const Outcome& got, const std::string& what) {
  if (expected.contains("output")) {
    if (!got.ok) {
      ADD_FAILURE() << what << ": jinja2 renders it, the engine fails: " << got.text;
      return false;
    }
    if (got.text != expected["output"].get<std::string>()) {
      ADD_FAILURE() << what << ": output differs\n--- jinja2:\n" << expected["output"].get<std::string>() << "\n--- engine:\n"
                    << got.text;
      return false;
    }
    return true;
  }
  if (got.ok) {
    ADD_FAILURE() << what << ": jinja2 fails (" << expected["error"] << ": " << expected["message"] << "), the engine renders:\n"
                  << got.text;
    return false;
  }
  const std::string kind = expected["error"].get<std::string>();
  if (kind == "raised" || kind == "undefined") {
    const std::string message = expected["message"].get<std::string>();
    if (got.text.find(message) == std::string::npos) {
      ADD_FAILURE() << what << ": the error should carry jinja2's message \"" << message << "\"; got: " << got.text;
      return false;
    }
  }
  if (kind == "syntax" && got.text.find(":" + std::to_string(expected["line"].get<int>()) + ": ") == std::string::npos) {
    ADD_FAILURE() << what << ": the syntax error should name line " << expected["line"] << "; got: " << got.text;
    return false;
  }
  return true;
}

struct CaseCounts {
  std::size_t outputs = 0, errors = 0, matched = 0;
};

// Renders every template x conversation case (cases.json's shape) of the templates in `dir`.
CaseCounts check_cases(const json& cases, const json& conversations, const std::string& dir) {
  CaseCounts n;
  for (const json& c : cases) {
    const std::string name = c["template"].get<std::string>();
    json vars = {{"tools", nullptr}};
    for (const auto& [k, v] : conversations[c["conversation"].get<std::string>()].items()) vars[k] = v;
    vars["bos_token"] = "<bos>";
    vars["eos_token"] = "<eos>";
    vars["add_generation_prompt"] = c["add_generation_prompt"];
    const std::string what = name + " x " + c["conversation"].get<std::string>() + " (add_generation_prompt=" +
                             (c["add_generation_prompt"].get<bool>() ? "true" : "false") + ")";
    (c.contains("output") ? n.outputs : n.errors) += 1;
    n.matched += check(c, render(read_file(dir + "/" + name), name, vars), what);
  }
  return n;
}

TEST(JinjaReference, CorpusTemplatesTimesConversationsMatchJinja2) {
  const json cases = json::parse(read_file(test::fixture("jinja/cases.json")));
  const json conversations = json::parse(read_file(test::fixture("jinja/conversations.json")));
  ASSERT_GE(cases.size(), 200u);
  const CaseCounts n = check_cases(cases, conversations, test::fixture("jinja/templates"));
  EXPECT_EQ(n.matched, cases.size());
  EXPECT_GE(n.outputs, 150u);  // most cases render; the rest check the engine refuses what jinja2 refuses
  EXPECT_GE(n.errors, 10u);
}

TEST(JinjaReference, SnippetsMatchJinja2) {
  const json snippets = json::parse(read_file(test::fixture("jinja/snippets.json")));
  ASSERT_GE(snippets.size(), 90u);
  std::size_t matched = 0;
  for (std::size_t i = 0; i < snippets.size(); ++i) {
    const json& s = snippets[i];
    const json vars = s.contains("vars") ? s["vars"] : json::object();
    matched += check(s, render(s["template"].get<std::string>(), "snippet", vars), "snippets[" + std::to_string(i) + "] " + s["template"].dump());
  }
  EXPECT_EQ(matched, snippets.size());
}

}  // namespace
}  // namespace staticlm

namespace staticlm {
namespace {

// Runs a command in the source tree; returns its exit status and output.
std::pair<int, std::string> run_in_source(const std::string& command) {
  const std::string root = std::string(STATICLM_TEST_FIXTURES) + "/../..";
  FILE* p = popen(("cd '" + root + "' && " + command + " 2>&1").c_str(), "r");
  if (p == nullptr) return {-1, "popen failed"};
  std::string out;
  char buf[4096];
  while (std::size_t n = fread(buf, 1, sizeof buf, p)) out.append(buf, n);
  const int status = pclose(p);
  return {WIFEXITED(status) ? WEXITSTATUS(status) : -1, out};
}

// The installed Python jinja2 renders every corpus case and snippet to the committed files
// (which the tests above hold the engine to), so the engine equals the live jinja2.
TEST(JinjaLiveReference, PythonJinja2RendersTheCommittedReferences) {
  const auto [rc, out] = run_in_source("python3 tools/jinja_reference.py --check");
  EXPECT_EQ(rc, 0) << out;
  EXPECT_NE(out.find("all reference files match"), std::string::npos) << out;
}

// Chat templates as their publishers ship them (Llama 3.1/3.2, Qwen 1.5/2.5/3, Mistral Nemo,
// DeepSeek V3, Command R+'s three, InternLM2, ChatGLM3, Gemma 3, and the 97 GGUF-embedded templates
// of Ollama's library that @huggingface/ollama-utils lists; scripts/setup.sh fetches them into
// .deps/published-templates, never committed): jinja2 renders each x every conversation now, and
// the engine must give the same bytes, or fail where jinja2 fails.
TEST(JinjaLiveReference, PublishedTemplatesMatchJinja2) {
  const std::string root = std::string(STATICLM_TEST_FIXTURES) + "/../..";
  const std::string dir = root + "/.deps/published-templates";
  ASSERT_TRUE(file_exists(dir + "/complete-with-ollama")) << dir << " is missing: run scripts/setup.sh";
  const std::string out = ::testing::TempDir() + "/published_cases_" + std::to_string(getpid()) + ".json";
  const auto [rc, log] = run_in_source("python3 tools/jinja_reference.py --published .deps/published-templates --out '" + out + "'");
  ASSERT_EQ(rc, 0) << log;
  const json reference = json::parse(read_file(out));
  std::remove(out.c_str());
  const json& cases = reference["cases"];
  ASSERT_GE(cases.size(), 108u * 22u);  // 108 templates x 11 conversations x 2
  const CaseCounts n = check_cases(cases, reference["conversations"], dir);
  EXPECT_EQ(n.matched, cases.size());
  EXPECT_GE(n.outputs, 1800u);
}

// @huggingface/jinja (npm, installed by scripts/setup.sh into .deps/hf-jinja) renders the same
// corpus; it must equal jinja2 everywhere except the listed, explained differences.
TEST(JinjaLiveReference, HuggingFaceJinjaAgreesExceptListedDifferences) {
  const auto [rc, out] = run_in_source("node tools/jinja_reference.mjs");
  EXPECT_EQ(rc, 0) << out;
  EXPECT_NE(out.find("renderings equal jinja2's"), std::string::npos) << out;
}

}  // namespace
}  // namespace staticlm
