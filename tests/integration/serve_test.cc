// `staticlm serve` end to end on the tiny model, with curl as the client over loopback: health
// and model listing; greedy answers equal `staticlm run --messages` for the same messages
// (streamed and not); a request extending the previous conversation is served from the slot's
// cache (usage.prompt_tokens_details.cached_tokens) and still equals `run`; bad JSON and bad
// fields are 400 naming the field; an oversized body is 413; 16 concurrent clients against a
// queue of 4 (8 requests each) each get a complete answer (equal to the single-client one) or a 503, with the
// server's heap flat across such bursts; the npm
// `openai` client gets the same answers; llama.cpp's native /completion answers as /v1/completions.
#include <gtest/gtest.h>

#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <functional>
#include <iterator>
#include <span>
#include <map>
#include <sstream>
#include <regex>
#include <string>
#include <thread>
#include <tuple>
#include <vector>

#include <nlohmann/json.hpp>

#include "runtime/logits_dump.h"
#include "test_util.h"

namespace staticlm {
namespace {

using json = nlohmann::json;

std::string slurp(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(f), std::istreambuf_iterator<char>()};
}

void write(const std::string& path, const std::string& text) { std::ofstream(path, std::ios::binary) << text; }

// The logits `run --dump-logits` recorded for the reply's j-th token (0: the prefill's).
std::span<const float> dumped_logits(const LogitsDump& d, std::size_t j) {
  const std::size_t vocab = d.prefill_logits.size();
  return j == 0 ? std::span<const float>(d.prefill_logits)
                : std::span<const float>(d.decode_logits).subspan((j - 1) * vocab, vocab);
}

// log softmax(row)[id], in double (the reference for the server's log-probabilities).
double log_softmax(std::span<const float> row, std::int64_t id) {
  double max = row[0];
  for (float x : row) max = std::max(max, static_cast<double>(x));
  double sum = 0;
  for (float x : row) sum += std::exp(static_cast<double>(x) - max);
  return static_cast<double>(row[static_cast<std::size_t>(id)]) - max - std::log(sum);
}

struct HttpResult {
  int status = -1;
  std::string body;
};

class Serve : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    start({"--slots", "2", "--queue", "4", "--max-seq", "128", "--max-body", "65536", "--threads", "1"});
  }
  // Makes the tiny model, calls `prepare` (if any; it may change the model's files or set made_
  // to a failure) and starts `staticlm serve -m it --port 0 FLAGS`.
  static void start(const std::vector<std::string>& flags, const std::function<void()>& prepare = {}) {
    dir_ = new test::TempDir();
    port_ = 0;
    made_ = test::run_staticlm("make-model --preset tiny --seed 1 --out " + model());
    if (made_.exit_code == 0 && prepare) prepare();
    if (made_.exit_code != 0) return;
    const std::string log = dir_->file("server.out");
    std::vector<std::string> args = {STATICLM_BIN, "serve", "-m", model(), "--port", "0"};
    args.insert(args.end(), flags.begin(), flags.end());
    std::vector<char*> argv;
    for (std::string& x : args) argv.push_back(x.data());
    argv.push_back(nullptr);
    pid_ = fork();
    if (pid_ == 0) {
      prctl(PR_SET_PDEATHSIG, SIGKILL);  // never outlives the test binary, even when it crashes
      std::freopen(log.c_str(), "w", stdout);
      std::freopen(dir_->file("server.err").c_str(), "w", stderr);
      execv(STATICLM_BIN, argv.data());
      _exit(127);
    }
    // The first stdout line names the port (--port 0 picks a free one).
    const std::string marker = "listening on http://127.0.0.1:";
    for (int i = 0; i < 600 && port_ == 0; ++i) {
      const std::string out = slurp(log);
      const auto at = out.find(marker);
      if (at != std::string::npos && out.find(' ', at + marker.size()) != std::string::npos) {
        port_ = std::stoi(out.substr(at + marker.size()));
      } else if (waitpid(pid_, nullptr, WNOHANG) == pid_) {
        pid_ = -1;
        break;
      } else {
        std::this_thread::sleep_for(std::chrono::milliseconds(100));
      }
    }
  }
  static void TearDownTestSuite() {
    if (pid_ > 0) {
      kill(pid_, SIGTERM);
      int status = 0;
      waitpid(pid_, &status, 0);
      // SIGTERM stops the server cleanly.
      EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << "server status " << status;
    }
    delete dir_;
    pid_ = -1;
  }
  void SetUp() override {
    ASSERT_EQ(made_.exit_code, 0) << made_.err;
    ASSERT_GT(port_, 0) << "the server did not start: " << slurp(dir_->file("server.err"));
  }
  static std::string model() { return dir_->file("m"); }
  static std::string url(const std::string& path) { return "http://127.0.0.1:" + std::to_string(port_) + path; }

  // curl as the client: `body` (when given) is POSTed as JSON. Files are named by a counter, so
  // threads may call it at once.
  static HttpResult http(const std::string& path, const std::string* body = nullptr, bool post = true,
                         bool chunked = false) {
    const std::string n = std::to_string(counter_++);
    const std::string req = dir_->file("req" + n), resp = dir_->file("resp" + n), code = dir_->file("code" + n);
    std::string cmd = "curl -s -N -o " + resp + " -w '%{http_code}' ";
    if (chunked) cmd += "-H 'Transfer-Encoding: chunked' ";
    cmd += auth_;
    if (body) {
      write(req, *body);
      cmd += "-H 'Content-Type: application/json' --data-binary @" + req + " ";
    } else if (post) {
      cmd += "-X POST ";
    }
    cmd += "'" + url(path) + "' >" + code + " 2>/dev/null";
    HttpResult r;
    if (std::system(cmd.c_str()) != 0) return r;
    r.status = std::stoi("0" + slurp(code));
    r.body = slurp(resp);
    return r;
  }
  static HttpResult get(const std::string& path) { return http(path, nullptr, false); }
  // curl with METHOD and extra header flags; the response headers (lower-cased names) in `headers`.
  static HttpResult request_with(const std::string& method, const std::string& path, const std::string& header_flags,
                                 std::string* headers) {
    const std::string n = std::to_string(counter_++);
    const std::string resp = dir_->file("resp" + n), code = dir_->file("code" + n), hdr = dir_->file("hdr" + n);
    const std::string cmd = "curl -s -X " + method + " " + header_flags + " -D " + hdr + " -o " + resp +
                            " -w '%{http_code}' '" + url(path) + "' >" + code + " 2>/dev/null";
    HttpResult r;
    if (std::system(cmd.c_str()) != 0) return r;
    r.status = std::stoi("0" + slurp(code));
    r.body = slurp(resp);
    *headers = slurp(hdr);
    std::transform(headers->begin(), headers->end(), headers->begin(), [](unsigned char c) { return std::tolower(c); });
    return r;
  }
  static HttpResult chat(const json& request) {
    const std::string body = request.dump();
    return http("/v1/chat/completions", &body);
  }
  static json request(const json& messages, bool stream = false) {
    return {{"model", "m"}, {"messages", messages}, {"temperature", 0}, {"max_tokens", 8}, {"stream", stream}};
  }
  // `staticlm run --messages` with the same settings: the reference answer.
  static std::string run_answer(const json& messages) {
    const std::string f = dir_->file("messages" + std::to_string(counter_++) + ".json");
    write(f, messages.dump());
    const test::CommandResult r = test::run_staticlm("run -m " + model() + " --messages " + f + " -n 8 --temp 0 --max-seq 128 --json");
    EXPECT_EQ(r.exit_code, 0) << r.err;
    return json::parse(r.out).at("text").get<std::string>();
  }
  // The SSE events of a streamed body, "[DONE]" included as a string.
  static std::vector<std::string> events(const std::string& body) {
    std::vector<std::string> out;
    std::size_t at = 0;
    while ((at = body.find("data: ", at)) != std::string::npos) {
      const std::size_t end = body.find("\n\n", at);
      if (end == std::string::npos) break;
      out.push_back(body.substr(at + 6, end - at - 6));
      at = end + 2;
    }
    return out;
  }
  // The content a stream carries, and its last chunk (finish_reason, usage); "" when malformed.
  static std::string streamed_content(const std::string& body, json* last = nullptr) {
    const std::vector<std::string> ev = events(body);
    if (ev.size() < 3 || ev.back() != "[DONE]") return "<malformed stream>";
    std::string content;
    for (std::size_t i = 0; i + 1 < ev.size(); ++i) {
      const json c = json::parse(ev[i]);
      const json& delta = c.at("choices").at(0).at("delta");
      if (delta.contains("content")) content += delta["content"].get<std::string>();
      if (last) *last = c;
    }
    return content;
  }

  static test::TempDir* dir_;
  static test::CommandResult made_;
  static pid_t pid_;
  static int port_;
  static std::atomic<int> counter_;
  inline static std::string auth_;  // curl header flags every http() request sends (a server's API key)
};
test::TempDir* Serve::dir_ = nullptr;
test::CommandResult Serve::made_;
pid_t Serve::pid_ = -1;
int Serve::port_ = 0;
std::atomic<int> Serve::counter_{0};

const json kHello = json::array({{{"role", "user"}, {"content", "Hello there"}}});
const json kOther = json::array({{{"role", "system"}, {"content", "Be brief."}}, {{"role", "user"}, {"content", "What is two plus two?"}}});

TEST_F(Serve, HealthAndModels) {
  const HttpResult h = get("/health");
  EXPECT_EQ(h.status, 200);
  EXPECT_EQ(json::parse(h.body).at("status"), "ok");
  const HttpResult m = get("/v1/models");
  ASSERT_EQ(m.status, 200);
  const json j = json::parse(m.body);
  EXPECT_EQ(j.at("object"), "list");
  ASSERT_EQ(j.at("data").size(), 1u);
  EXPECT_EQ(j["data"][0].at("id"), "m");
  const HttpResult nothing = get("/v1/nothing");
  EXPECT_EQ(nothing.status, 404);
  EXPECT_EQ(json::parse(nothing.body).at("error").at("code"), 404) << nothing.body;
  const HttpResult metrics = get("/metrics");  // llama-server's answer without --metrics
  EXPECT_EQ(metrics.status, 501);
  EXPECT_EQ(json::parse(metrics.body).at("error").at("type"), "not_supported_error") << metrics.body;
  const HttpResult slots = get("/slots");
  ASSERT_EQ(slots.status, 200);
  EXPECT_EQ(json::parse(slots.body).size(), 2u) << slots.body;  // --slots 2
  const HttpResult v1 = get("/v1/health");  // llama-server's other spelling
  EXPECT_EQ(v1.status, 200);
  EXPECT_EQ(json::parse(v1.body).at("status"), "ok");

  // One model by id (the openai clients' models.retrieve), and an id the server does not serve.
  const HttpResult one = get("/v1/models/m");
  ASSERT_EQ(one.status, 200) << one.body;
  EXPECT_EQ(json::parse(one.body), j["data"][0]);
  const HttpResult other = get("/v1/models/gpt-4");
  EXPECT_EQ(other.status, 404);
  EXPECT_EQ(json::parse(other.body)["error"]["param"], "model");
  EXPECT_EQ(json::parse(other.body)["error"]["code"], 404);
  EXPECT_NE(other.body.find("model 'gpt-4' does not exist"), std::string::npos) << other.body;

  // A known endpoint with the wrong method: 405 and the method it takes.
  std::string headers;
  const HttpResult wrong = request_with("GET", "/v1/chat/completions", "", &headers);
  EXPECT_EQ(wrong.status, 405);
  EXPECT_NE(headers.find("allow: post"), std::string::npos) << headers;
  EXPECT_NE(wrong.body.find("GET /v1/chat/completions: method not allowed (use POST)"), std::string::npos) << wrong.body;
  EXPECT_EQ(request_with("POST", "/v1/models", "-d '{}'", &headers).status, 405);
  for (const char* method : {"PUT", "DELETE", "PATCH"}) {
    EXPECT_EQ(request_with(method, "/v1/completions", "-d '{}'", &headers).status, 405) << method;
    EXPECT_NE(headers.find("allow: post"), std::string::npos) << method << headers;
    EXPECT_EQ(request_with(method, "/health", "-d '{}'", &headers).status, 405) << method;
    EXPECT_NE(headers.find("allow: get"), std::string::npos) << method << headers;
  }

  // A form body is 415 naming the content type (it was a 500 with the C++ exception in a header).
  for (const char* path : {"/tokenize", "/v1/chat/completions", "/apply-template"}) {
    const HttpResult form = request_with("POST", path, "-F content=hi", &headers);
    EXPECT_EQ(form.status, 415) << path << " " << form.body;
    EXPECT_NE(form.body.find("not multipart/form-data"), std::string::npos) << form.body;
    EXPECT_EQ(headers.find("exception_what"), std::string::npos) << headers;
  }

  // A Range header does not cut a JSON answer (it returned the first bytes with 200).
  const HttpResult ranged = request_with("POST", "/tokenize", "-H 'Range: bytes=0-1' -d '{\"content\": \"hi\"}'", &headers);
  EXPECT_EQ(ranged.status, 200) << ranged.body;
  EXPECT_TRUE(json::parse(ranged.body).contains("tokens")) << ranged.body;
  EXPECT_EQ(headers.find("content-range"), std::string::npos) << headers;

  // Compressed bodies: gzip is read; data that does not decode is named as such (it read as "not
  // valid JSON"); an encoding httplib does not decode is 415 (zstd reached the JSON parser raw).
  const std::string gz = dir_->file("body.gz"), junk = dir_->file("junk.bin");
  ASSERT_EQ(std::system(("printf '{\"content\": \"hi\"}' | gzip > " + gz).c_str()), 0);
  write(junk, "not compressed at all");
  const HttpResult zipped = request_with("POST", "/tokenize", "-H 'Content-Encoding: gzip' --data-binary @" + gz, &headers);
  EXPECT_EQ(zipped.status, 200) << zipped.body;
  const std::string plain_hi = "{\"content\": \"hi\"}";
  EXPECT_EQ(json::parse(zipped.body)["tokens"], json::parse(http("/tokenize", &plain_hi).body)["tokens"]) << zipped.body;
  const HttpResult bad_gzip = request_with("POST", "/tokenize", "-H 'Content-Encoding: gzip' --data-binary @" + junk, &headers);
  EXPECT_EQ(bad_gzip.status, 400) << bad_gzip.body;
  EXPECT_NE(bad_gzip.body.find("not valid gzip data"), std::string::npos) << bad_gzip.body;
  for (const char* coding : {"br", "zstd", "compress"}) {
    const HttpResult other_coding =
        request_with("POST", "/v1/chat/completions", std::string("-H 'Content-Encoding: ") + coding + "' --data-binary @" + junk, &headers);
    EXPECT_EQ(other_coding.status, 415) << coding << " " << other_coding.body;
    EXPECT_NE(other_coding.body.find(std::string("Content-Encoding '") + coding + "' is not supported"), std::string::npos)
        << other_coding.body;
  }
  // A Content-Length that is not a number is 400 (-5 was a 413, "1x" read one byte).
  for (const char* length : {"-5", "1x"}) {
    const HttpResult bad_length =
        request_with("POST", "/tokenize", std::string("-H 'Content-Length: ") + length + "' -d '{}'", &headers);
    EXPECT_EQ(bad_length.status, 400) << length << " " << bad_length.body;
    EXPECT_NE(bad_length.body.find(std::string("Content-Length '") + length + "' is not a number of bytes"), std::string::npos)
        << bad_length.body;
  }

  // A second server on this one's port is refused (it used to share the port, SO_REUSEPORT).
  const test::CommandResult second =
      test::run_staticlm("serve -m " + model() + " --max-seq 64 --port " + std::to_string(port_));
  EXPECT_EQ(second.exit_code, 2) << second.err;
  EXPECT_NE(second.err.find("cannot listen on 127.0.0.1:" + std::to_string(port_) + " (Address already in use)"),
            std::string::npos)
      << second.err;

  // A browser's CORS preflight, then the header on an ordinary answer.
  const HttpResult pre = request_with("OPTIONS", "/v1/chat/completions",
                                      "-H 'Origin: http://example.com' -H 'Access-Control-Request-Method: POST' "
                                      "-H 'Access-Control-Request-Headers: content-type'",
                                      &headers);
  EXPECT_EQ(pre.status, 204);
  EXPECT_NE(headers.find("access-control-allow-origin: *"), std::string::npos) << headers;
  EXPECT_NE(headers.find("access-control-allow-methods: get, post, options"), std::string::npos) << headers;
  EXPECT_NE(headers.find("access-control-allow-headers: content-type"), std::string::npos) << headers;
  request_with("GET", "/v1/models", "-H 'Origin: http://example.com'", &headers);
  EXPECT_NE(headers.find("access-control-allow-origin: *"), std::string::npos) << headers;
}

// OpenAI's presence / frequency penalties reach the sampler as run's flags do.
TEST_F(Serve, PenaltiesEqualRunFlags) {
  json r = request(kHello);
  r["presence_penalty"] = 0.5;
  r["frequency_penalty"] = 2;  // the tiny model's greedy reply repeats a token: not any more
  const HttpResult h = chat(r);
  ASSERT_EQ(h.status, 200) << h.body;
  const std::string f = dir_->file("penalty_messages.json");
  write(f, kHello.dump());
  const test::CommandResult cli = test::run_staticlm("run -m " + model() + " --messages " + f +
                                                     " -n 8 --temp 0 --max-seq 128 --json --presence-penalty 0.5 --frequency-penalty 2");
  ASSERT_EQ(cli.exit_code, 0) << cli.err;
  const json penalized = json::parse(h.body)["choices"][0]["message"]["content"];
  EXPECT_EQ(penalized, json::parse(cli.out).at("text")) << h.body;
  EXPECT_NE(penalized.get<std::string>(), run_answer(kHello));
  const test::CommandResult bad = test::run_staticlm("run -m " + model() + " -p hi -n 1 --presence-penalty 3");
  EXPECT_EQ(bad.exit_code, 2) << bad.err;
  EXPECT_NE(bad.err.find("presence_penalty = 3: expected a number in [-2, 2]"), std::string::npos) << bad.err;
}

// logit_bias: the greedy reply's first token banned (-100, OpenAI's object; false, llama.cpp's
// array with the token's text) gives another reply, the one `run -l ID-100` gives; ignore_eos
// keeps a reply going that a +100 bias on the end of turn would stop at once.
TEST_F(Serve, LogitBiasAndIgnoreEosEqualRunFlags) {
  json r = request(kHello);
  r["logprobs"] = true;
  const HttpResult h = chat(r);
  ASSERT_EQ(h.status, 200) << h.body;
  const json first = json::parse(h.body)["choices"][0];
  const std::string plain = first["message"]["content"], piece = first["logprobs"]["content"][0]["token"];
  const std::string tok_body = json{{"content", piece}}.dump();
  const json ids = json::parse(http("/tokenize", &tok_body).body)["tokens"];
  ASSERT_EQ(ids.size(), 1u) << piece;
  const std::int64_t id = ids[0];

  const auto reply = [](const json& req) {
    const HttpResult x = chat(req);
    EXPECT_EQ(x.status, 200) << x.body;
    return json::parse(x.body)["choices"][0];
  };
  const std::string f = dir_->file("bias_messages.json");
  write(f, kHello.dump());
  const auto run_with = [&](const std::string& flags) {
    const test::CommandResult cli =
        test::run_staticlm("run -m " + model() + " --messages " + f + " -n 8 --temp 0 --max-seq 128 --json " + flags);
    EXPECT_EQ(cli.exit_code, 0) << cli.err;
    return json::parse(cli.out).at("text").get<std::string>();
  };
  json banned = r;
  banned["logit_bias"] = {{std::to_string(id), -100}};
  const json b = reply(banned);
  EXPECT_NE(b["logprobs"]["content"][0]["token"], piece) << b;
  EXPECT_NE(b["message"]["content"], plain);
  EXPECT_EQ(b["message"]["content"], run_with("-l " + std::to_string(id) + "-100"));
  banned["logit_bias"] = json::array({json::array({piece, false})});
  EXPECT_EQ(reply(banned)["message"]["content"], b["message"]["content"]);
  // A small bias leaves the greedy reply as it is.
  banned["logit_bias"] = {{std::to_string(id), -1e-6}};
  EXPECT_EQ(reply(banned)["message"]["content"], plain);

  // The end of turn (106) pushed up by 100 ends the reply at once; with ignore_eos it is never
  // sampled and the reply runs to max_tokens.
  json ends = request(kHello);
  ends["logit_bias"] = {{"106", 100}};
  const json e = reply(ends);
  EXPECT_EQ(e["finish_reason"], "stop") << e;
  EXPECT_EQ(e["message"]["content"], "") << e;
  ends["ignore_eos"] = true;
  const HttpResult long_reply = chat(ends);
  ASSERT_EQ(long_reply.status, 200) << long_reply.body;
  const json lj = json::parse(long_reply.body);
  EXPECT_EQ(lj["choices"][0]["finish_reason"], "length") << lj;
  EXPECT_EQ(lj["usage"]["completion_tokens"], 8) << lj;
  EXPECT_EQ(lj["choices"][0]["message"]["content"], run_with("-l 106+100 --ignore-eos"));
  EXPECT_EQ(run_with("-l 106+100"), "");

  for (const std::string& flag : std::vector<std::string>{"-l 5", "-l x+1", "--logit-bias 5+inf", "-l 999999999-1"}) {
    const test::CommandResult bad = test::run_staticlm("run -m " + model() + " -p hi -n 1 " + flag);
    EXPECT_EQ(bad.exit_code, 2) << flag << ": " << bad.err;
    EXPECT_NE(bad.err.find("logit"), std::string::npos) << bad.err;
  }
}

// response_format json_schema: the reply is JSON valid for the schema (checked here key by key),
// the same as `run -j SCHEMA` and as llama.cpp's top-level json_schema; json_object starts an
// object; a schema keyword that cannot be enforced is a 400 naming its place.
// llama.cpp's `grammar` (GBNF): the reply is a text of the grammar, the same as `run
// --grammar-file`, on the chat and the completion paths.
TEST_F(Serve, GrammarEqualsRunFlag) {
  const std::string grammar = "root ::= (\"yes\" | \"no\") \", \" word (\" \" word){1,3} \".\"\nword ::= [a-z]{2,6}\n";
  const std::regex text("(yes|no), [a-z]{2,6}( [a-z]{2,6}){1,3}\\.");
  json r = request(kHello);
  r["max_tokens"] = 60;
  r["grammar"] = grammar;
  const HttpResult h = chat(r);
  ASSERT_EQ(h.status, 200) << h.body;
  const json choice = json::parse(h.body)["choices"][0];
  EXPECT_EQ(choice["finish_reason"], "stop") << h.body;
  const std::string content = choice["message"]["content"];
  EXPECT_TRUE(std::regex_match(content, text)) << content;
  EXPECT_NE(run_answer(kHello), content);  // free text without it

  const std::string f = dir_->file("grammar_messages.json"), g = dir_->file("reply.gbnf");
  write(f, kHello.dump());
  write(g, grammar);
  const test::CommandResult cli =
      test::run_staticlm("run -m " + model() + " --messages " + f + " -n 60 --temp 0 --max-seq 128 --json --grammar-file " + g);
  ASSERT_EQ(cli.exit_code, 0) << cli.err;
  EXPECT_EQ(json::parse(cli.out).at("text"), content);

  const std::string completion = json{{"prompt", "<bos>hello"}, {"n_predict", 60}, {"temperature", 0.9}, {"seed", 3}, {"grammar", grammar}}.dump();
  const HttpResult c = http("/completion", &completion);
  ASSERT_EQ(c.status, 200) << c.body;
  EXPECT_TRUE(std::regex_match(json::parse(c.body)["content"].get<std::string>(), text)) << c.body;

  // Bad grammars: 400 naming the line and column; on the command line, the file.
  r["grammar"] = "root ::= word\n";
  const HttpResult b = chat(r);
  EXPECT_EQ(b.status, 400);
  EXPECT_EQ(json::parse(b.body)["error"]["message"], "grammar: line 1, column 10: rule 'word' is used but never defined") << b.body;
  write(g, "root ::= \"a\" | \"b\"\nroot ::= \"c\"\n");
  const test::CommandResult bad = test::run_staticlm("run -m " + model() + " -p hi -n 1 --grammar-file " + g);
  EXPECT_EQ(bad.exit_code, 2);
  EXPECT_NE(bad.err.find("--grammar-file " + g + ": line 2, column 1: rule 'root' is defined twice"), std::string::npos) << bad.err;
  const test::CommandResult both = test::run_staticlm("run -m " + model() + " -p hi -n 1 --grammar 'root ::= \"a\"' -j '{}'");
  EXPECT_EQ(both.exit_code, 2);
  EXPECT_NE(both.err.find("--grammar and --json-schema: give one constraint"), std::string::npos) << both.err;
}

TEST_F(Serve, ResponseFormatJsonSchemaEqualsRunFlag) {
  const json schema = json::parse(R"({"type": "object", "properties": {"name": {"type": "string", "maxLength": 8},
      "age": {"type": "integer"}, "ok": {"type": "boolean"}, "score": {"type": "number", "minimum": 0, "exclusiveMaximum": 0.5},
      "code": {"type": "string", "pattern": "^[A-Z]{2}-\\d{3}$"}},
      "required": ["name", "age", "ok", "score", "code"], "additionalProperties": false})");
  json r = request(kHello);
  r["max_tokens"] = 100;
  r["response_format"] = {{"type", "json_schema"}, {"json_schema", {{"name", "person"}, {"strict", true}, {"schema", schema}}}};
  const HttpResult h = chat(r);
  ASSERT_EQ(h.status, 200) << h.body;
  const json choice = json::parse(h.body)["choices"][0];
  EXPECT_EQ(choice["finish_reason"], "stop") << h.body;
  const std::string content = choice["message"]["content"];
  const json value = json::parse(content);  // throws (fails the test) unless it is JSON
  ASSERT_TRUE(value.is_object()) << content;
  EXPECT_EQ(value.size(), 5u) << content;
  EXPECT_TRUE(value.at("code").is_string() && std::regex_match(value["code"].get<std::string>(), std::regex("[A-Z]{2}-\\d{3}")))
      << content;
  EXPECT_TRUE(value.at("score").is_number() && value["score"].get<double>() >= 0 && value["score"].get<double>() < 0.5)
      << content;
  EXPECT_TRUE(value.at("name").is_string() && value["name"].get<std::string>().size() <= 8 * 4) << content;
  EXPECT_TRUE(value.at("age").is_number_integer()) << content;
  EXPECT_TRUE(value.at("ok").is_boolean()) << content;

  const std::string f = dir_->file("schema_messages.json"), s = dir_->file("schema.json");
  write(f, kHello.dump());
  write(s, schema.dump());
  const test::CommandResult cli = test::run_staticlm("run -m " + model() + " --messages " + f +
                                                     " -n 100 --temp 0 --max-seq 128 --json --json-schema-file " + s);
  ASSERT_EQ(cli.exit_code, 0) << cli.err;
  EXPECT_EQ(json::parse(cli.out).at("text"), content);
  json llama = request(kHello);
  llama["max_tokens"] = 100;
  llama["json_schema"] = schema;
  const HttpResult l = chat(llama);
  ASSERT_EQ(l.status, 200) << l.body;
  EXPECT_EQ(json::parse(l.body)["choices"][0]["message"]["content"], content);
  // Without a schema the same request answers free text.
  EXPECT_NE(run_answer(kHello), content);

  json object = request(kHello);
  object["response_format"] = {{"type", "json_object"}};
  const HttpResult o = chat(object);
  ASSERT_EQ(o.status, 200) << o.body;
  const std::string start = json::parse(o.body)["choices"][0]["message"]["content"];
  EXPECT_EQ(start.substr(start.find_first_not_of(" \n\t"), 1), "{") << start;

  // A whole value with the end tokens banned ends the reply there.
  json whole = request(kHello);
  whole["response_format"] = {{"type", "json_schema"}, {"json_schema", {{"schema", {{"type", "boolean"}}}}}};
  whole["ignore_eos"] = true;
  const HttpResult w = chat(whole);
  ASSERT_EQ(w.status, 200) << w.body;
  const json wj = json::parse(w.body)["choices"][0];
  EXPECT_EQ(wj["finish_reason"], "stop") << w.body;
  EXPECT_TRUE(json::parse(wj["message"]["content"].get<std::string>()).is_boolean()) << w.body;

  json refused = request(kHello);
  refused["response_format"] = {{"type", "json_schema"}, {"json_schema", {{"schema", {{"type", "string"}, {"not", {{"const", "a"}}}}}}}};
  const HttpResult p = chat(refused);
  EXPECT_EQ(p.status, 400) << p.body;
  EXPECT_EQ(json::parse(p.body)["error"]["message"],
            "response_format.json_schema.schema at /not: 'not' is not supported (it could not be enforced while generating)");
  const test::CommandResult bad = test::run_staticlm("run -m " + model() + " -p hi -n 1 -j '{\"not\": {\"const\": 1}}'");
  EXPECT_EQ(bad.exit_code, 2) << bad.err;
  EXPECT_EQ(bad.err, "error: json_schema at /not: 'not' is not supported (it could not be enforced while generating)\n");
}

TEST_F(Serve, GreedyAnswerEqualsRunStreamedAndNot) {
  const std::string expected = run_answer(kHello);
  const HttpResult r = chat(request(kHello));
  ASSERT_EQ(r.status, 200) << r.body;
  const json j = json::parse(r.body);
  EXPECT_EQ(j.at("object"), "chat.completion");
  EXPECT_EQ(j["choices"][0]["message"].at("role"), "assistant");
  EXPECT_EQ(j["choices"][0]["message"].at("content").get<std::string>(), expected);
  const json& u = j.at("usage");
  EXPECT_GT(u.at("prompt_tokens").get<int>(), 0);
  EXPECT_GE(u.at("completion_tokens").get<int>(), 1);
  EXPECT_LE(u.at("completion_tokens").get<int>(), 8);
  EXPECT_EQ(u.at("total_tokens").get<int>(), u["prompt_tokens"].get<int>() + u["completion_tokens"].get<int>());
  EXPECT_TRUE(u.at("prompt_tokens_details").contains("cached_tokens"));
  const std::string finish = j["choices"][0].at("finish_reason");
  EXPECT_TRUE(finish == "stop" || finish == "length") << finish;

  const HttpResult s = chat(request(kHello, /*stream=*/true));
  ASSERT_EQ(s.status, 200) << s.body;
  json last;
  EXPECT_EQ(streamed_content(s.body, &last), expected) << s.body;
  EXPECT_EQ(last.at("object"), "chat.completion.chunk");
  EXPECT_EQ(last["choices"][0].at("finish_reason").get<std::string>(), finish);
  EXPECT_EQ(last.at("usage").at("completion_tokens"), u["completion_tokens"]);

  // stream_options.include_usage: the usage comes in a chunk of its own with no choices (OpenAI's
  // shape), after the finish chunk, which then carries none.
  json with_usage = request(kHello, /*stream=*/true);
  with_usage["stream_options"] = {{"include_usage", true}};
  const HttpResult su = chat(with_usage);
  ASSERT_EQ(su.status, 200) << su.body;
  const std::vector<std::string> ev = events(su.body);
  ASSERT_GE(ev.size(), 4u) << su.body;
  EXPECT_EQ(ev.back(), "[DONE]");
  const json usage_chunk = json::parse(ev[ev.size() - 2]), finish_chunk = json::parse(ev[ev.size() - 3]);
  EXPECT_EQ(usage_chunk.at("choices"), json::array());
  EXPECT_EQ(usage_chunk.at("usage").at("prompt_tokens"), u["prompt_tokens"]);
  EXPECT_EQ(usage_chunk["usage"].at("completion_tokens"), u["completion_tokens"]);
  EXPECT_EQ(finish_chunk["choices"][0].at("finish_reason").get<std::string>(), finish);
  // Every other chunk says "usage": null (OpenAI's), and "logprobs": null when none were asked.
  for (std::size_t i = 0; i + 2 < ev.size(); ++i) {
    const json c = json::parse(ev[i]);
    EXPECT_TRUE(c.at("usage").is_null()) << ev[i];
    EXPECT_TRUE(c["choices"][0].at("logprobs").is_null()) << ev[i];
    EXPECT_EQ(c.at("id"), usage_chunk.at("id"));
  }
  const HttpResult no_usage = chat(request(kHello, /*stream=*/true));
  EXPECT_FALSE(json::parse(events(no_usage.body).front()).contains("usage"));
  with_usage["stream_options"] = {{"include_usage", "yes"}};
  const HttpResult bad_usage = chat(with_usage);
  EXPECT_EQ(bad_usage.status, 400);
  EXPECT_EQ(json::parse(bad_usage.body)["error"]["param"], "stream_options.include_usage");

  // A stop string ends the reply and is left out of it, streamed and not.
  ASSERT_GE(expected.size(), 6u);
  const std::string stop = expected.substr(expected.size() / 2, 3);
  const std::string cut = expected.substr(0, expected.find(stop));
  json with_stop = request(kHello);
  with_stop["stop"] = json::array({stop});
  const HttpResult st = chat(with_stop);
  ASSERT_EQ(st.status, 200) << st.body;
  EXPECT_EQ(json::parse(st.body)["choices"][0]["message"]["content"].get<std::string>(), cut) << st.body;
  EXPECT_EQ(json::parse(st.body)["choices"][0]["finish_reason"], "stop") << st.body;
  with_stop["stream"] = true;
  const HttpResult sst = chat(with_stop);
  EXPECT_EQ(streamed_content(sst.body), cut) << sst.body;

  // The other prompt gives its own answer (equal to run's too).
  const HttpResult o = chat(request(kOther));
  ASSERT_EQ(o.status, 200) << o.body;
  EXPECT_EQ(json::parse(o.body)["choices"][0]["message"]["content"].get<std::string>(), run_answer(kOther));

  // repetition_penalty (and llama.cpp's repeat_penalty) reach the sampler as run's flag does.
  const std::string f = dir_->file("penalty_messages.json");
  write(f, kOther.dump());
  const test::CommandResult pr =
      test::run_staticlm("run -m " + model() + " --messages " + f + " -n 8 --temp 0 --max-seq 128 --json --repetition-penalty 3");
  ASSERT_EQ(pr.exit_code, 0) << pr.err;
  for (const char* key : {"repetition_penalty", "repeat_penalty"}) {
    json penalised = request(kOther);
    penalised[key] = 3;
    const HttpResult p = chat(penalised);
    ASSERT_EQ(p.status, 200) << p.body;
    EXPECT_EQ(json::parse(p.body)["choices"][0]["message"]["content"], json::parse(pr.out).at("text")) << key;
  }
  // llama.cpp's repeat_last_n (and run's --repeat-last-n): the penalty's window; 0 turns it off.
  // A penalty below 1 favours the tokens seen, so the window changes this random model's answer.
  const auto run_penalised = [&](const std::string& window) {
    const test::CommandResult r = test::run_staticlm("run -m " + model() + " --messages " + f +
                                                     " -n 8 --temp 0 --max-seq 128 --json --repetition-penalty 0.2" + window);
    EXPECT_EQ(r.exit_code, 0) << r.err;
    return json::parse(r.out).at("text").get<std::string>();
  };
  const std::string all = run_penalised(""), last2 = run_penalised(" --repeat-last-n 2"), plain = run_answer(kOther);
  ASSERT_NE(all, last2) << "the window changes nothing here: the checks below would be empty";
  ASSERT_NE(last2, plain);
  for (std::int64_t last_n : {-1, 0, 2}) {
    json req = request(kOther);
    req["repeat_penalty"] = 0.2;
    req["repeat_last_n"] = last_n;
    const HttpResult p = chat(req);
    ASSERT_EQ(p.status, 200) << p.body;
    EXPECT_EQ(json::parse(p.body)["choices"][0]["message"]["content"].get<std::string>(),
              last_n == -1 ? all : last_n == 0 ? plain : last2)
        << last_n;
  }
}

// llama.cpp's native /completion continues a raw prompt as /v1/completions does (n_predict for
// max_tokens), in llama.cpp's shape: streamed, content events then the summary and no [DONE];
// a stop string is stop_type "word"; -1 runs to an end token or the cache; bad fields are 400.
// As llama-server without --seed: a sampled request without a seed (or with seed -1) draws its
// own, so asking again gives another reply; a seed given gives the same reply each time. Ids are
// random (unique across requests and restarts), in OpenAI's form.
TEST_F(Serve, EachRequestWithoutASeedSamplesAnew) {
  json r = {{"messages", kHello}, {"max_tokens", 8}, {"temperature", 1.5}};
  const HttpResult a = chat(r), b = chat(r);
  ASSERT_EQ(a.status, 200) << a.body;
  ASSERT_EQ(b.status, 200) << b.body;
  const json ja = json::parse(a.body), jb = json::parse(b.body);
  EXPECT_NE(ja["choices"][0]["message"]["content"], jb["choices"][0]["message"]["content"]);
  const std::regex id("chatcmpl-[A-Za-z0-9]{24}");
  EXPECT_TRUE(std::regex_match(ja.at("id").get<std::string>(), id)) << ja["id"];
  EXPECT_NE(ja.at("id"), jb.at("id"));
  r["seed"] = 7;
  const HttpResult c = chat(r), d = chat(r);
  ASSERT_EQ(c.status, 200) << c.body;
  EXPECT_EQ(json::parse(c.body)["choices"][0]["message"]["content"], json::parse(d.body)["choices"][0]["message"]["content"]);
  r["seed"] = -1;
  EXPECT_EQ(chat(r).status, 200);
  r["seed"] = -2;
  EXPECT_EQ(chat(r).status, 400);
  EXPECT_EQ(json::parse(get("/props").body)["default_generation_settings"]["params"].at("seed"), -1);
}

// A grammar too ambiguous to follow is found while generating: the client's fault, a 400 (it
// was a 500 "generation failed").
TEST_F(Serve, AmbiguousGrammarIs400) {
  json r = request(kHello);
  r["grammar"] = "root ::= ([a-z]* [a-z]*){10000}";
  const HttpResult g = chat(r);
  EXPECT_EQ(g.status, 400) << g.body;
  const json e = json::parse(g.body).at("error");
  EXPECT_EQ(e.at("type"), "invalid_request_error");
  EXPECT_EQ(e.at("code"), 400);  // llama-server's error objects carry the HTTP status
  EXPECT_NE(e.at("message").get<std::string>().find("grammar: more than"), std::string::npos) << g.body;
  const json health = json::parse(get("/health").body);
  EXPECT_GE(health.at("invalid").get<int>(), 1);  // the client's fault, not a failed generation
}

TEST_F(Serve, LlamaCppCompletionAnswersAsTextCompletions) {
  const auto post = [&](const std::string& path, const json& body) {
    const std::string b = body.dump();
    return http(path, &b);
  };
  const std::string prompt = "<bos>The quick brown fox";
  const HttpResult o = post("/v1/completions", {{"prompt", prompt}, {"max_tokens", 8}, {"temperature", 0}});
  ASSERT_EQ(o.status, 200) << o.body;
  const json oj = json::parse(o.body);
  const std::string text = oj["choices"][0]["text"];
  const HttpResult l = post("/completion", {{"prompt", prompt}, {"n_predict", 8}, {"temperature", 0}, {"return_tokens", true}});
  ASSERT_EQ(l.status, 200) << l.body;
  const json lj = json::parse(l.body);
  EXPECT_EQ(lj.at("content"), text);
  EXPECT_EQ(lj.at("stop"), true);
  EXPECT_EQ(lj.at("tokens_predicted"), oj["usage"]["completion_tokens"]);
  EXPECT_EQ(lj.at("tokens_evaluated"), oj["usage"]["prompt_tokens"]);
  EXPECT_EQ(lj.at("stop_type"), oj["choices"][0]["finish_reason"] == "length" ? "limit" : "eos") << l.body;
  EXPECT_EQ(lj.at("stopping_word"), "");
  // The ids are the reply's: their text is the content (an end token has none).
  std::vector<std::int64_t> ids = lj.at("tokens");
  ASSERT_EQ(static_cast<std::int64_t>(ids.size()), lj["tokens_predicted"].get<std::int64_t>());
  if (lj["stop_type"] == "eos") ids.pop_back();
  EXPECT_EQ(json::parse(post("/detokenize", {{"tokens", ids}}).body).at("content"), text);
  EXPECT_EQ(json::parse(post("/completion", {{"prompt", prompt}, {"max_tokens", 8}, {"temperature", 0}}).body).at("tokens"),
            json::array());

  const HttpResult s = post("/completion", {{"prompt", prompt}, {"n_predict", 8}, {"temperature", 0}, {"stream", true}});
  ASSERT_EQ(s.status, 200) << s.body;
  const std::vector<std::string> ev = events(s.body);
  ASSERT_GE(ev.size(), 2u) << s.body;
  std::string streamed;
  for (std::size_t i = 0; i + 1 < ev.size(); ++i) {
    const json c = json::parse(ev[i]);
    EXPECT_EQ(c.at("stop"), false) << ev[i];
    streamed += c.at("content").get<std::string>();
  }
  EXPECT_EQ(streamed, text);
  const json last = json::parse(ev.back());
  EXPECT_EQ(last.at("stop"), true);
  EXPECT_EQ(last.at("content"), "");
  EXPECT_EQ(last.at("tokens_predicted"), lj["tokens_predicted"]);
  EXPECT_EQ(s.body.find("[DONE]"), std::string::npos);

  // A stop string of whole characters from the middle of the reply (the tiny model's text is
  // mostly multi-byte).
  const auto boundary = [&](std::size_t i) {
    while (i < text.size() && (static_cast<unsigned char>(text[i]) & 0xC0) == 0x80) ++i;
    return i;
  };
  const std::size_t from = boundary(text.size() / 2), to = boundary(from + 1);
  ASSERT_LT(from, text.size()) << text;
  const std::string stop = text.substr(from, to - from);
  const json w = json::parse(post("/completion", {{"prompt", prompt}, {"n_predict", 8}, {"temperature", 0}, {"stop", {stop}}}).body);
  EXPECT_EQ(w.at("content"), text.substr(0, text.find(stop)));
  EXPECT_EQ(w.at("stop_type"), "word");
  EXPECT_EQ(w.at("stopping_word"), stop);
  const json unlimited = json::parse(post("/completion", {{"prompt", prompt}, {"n_predict", -1}, {"temperature", 0}}).body);
  const std::string unlimited_type = unlimited.at("stop_type");
  EXPECT_TRUE(unlimited_type == "eos" || (unlimited_type == "limit" && unlimited.at("tokens_predicted") ==
                                                                            128 - lj["tokens_evaluated"].get<int>()))
      << unlimited;

  for (const auto& [body, param] : std::vector<std::pair<json, std::string>>{
           {json{{"prompt", prompt}, {"n_predict", 0}}, "n_predict"},
           {json{{"prompt", prompt}, {"n_predict", -2}}, "n_predict"},
           {json{{"prompt", prompt}, {"n_probs", -1}}, "n_probs"},
           {json{{"prompt", prompt}, {"n_probs", 1025}}, "n_probs"},  // past kMaxNProbs
           {json{{"prompt", prompt}, {"n_probs", 2}, {"post_sampling_probs", true}}, "post_sampling_probs"},
           {json{{"prompt", prompt}, {"logprobs", 2}}, "logprobs"},
           {json{{"prompt", prompt}, {"return_tokens", "yes"}}, "return_tokens"},
           {json{{"prompt", prompt}, {"grammar", "root ::= \"yes\" | \"no"}}, "grammar"},
           {json{{"n_predict", 4}}, "prompt"}}) {
    const HttpResult b = post("/completion", body);
    EXPECT_EQ(b.status, 400) << body;
    EXPECT_EQ(json::parse(b.body)["error"]["param"], param) << b.body;
  }
  EXPECT_EQ(get("/completion").status, 405);
  // llama.cpp's default, an empty grammar, is none.
  EXPECT_EQ(post("/completion", {{"prompt", prompt}, {"n_predict", 2}, {"grammar", ""}}).status, 200);
}

// llama.cpp's GET /props: the server's context size and slots (its flags), its sampling
// defaults (the checkpoint's generation_config.json) and the checkpoint's chat template.
TEST_F(Serve, PropsNameTheServersSettings) {
  const HttpResult r = get("/props");
  ASSERT_EQ(r.status, 200) << r.body;
  const json p = json::parse(r.body);
  EXPECT_EQ(p.at("total_slots"), 2);
  const json& settings = p.at("default_generation_settings");
  EXPECT_EQ(settings.at("n_ctx"), 128);
  const json gc = json::parse(slurp(model() + "/generation_config.json"));
  for (const char* key : {"temperature", "top_k", "top_p"}) EXPECT_EQ(settings.at("params").at(key), gc.at(key)) << key;
  EXPECT_EQ(settings["params"].at("stop"), json::array());
  const std::string chat_template = slurp(model() + "/chat_template.jinja");
  ASSERT_FALSE(chat_template.empty());
  EXPECT_EQ(p.at("chat_template"), chat_template);
  EXPECT_EQ(p.at("model_path"), model());
  EXPECT_TRUE(p.at("modalities").at("vision").is_boolean()) << r.body;
  const std::string body = "{}";
  EXPECT_EQ(http("/props", &body).status, 405);
}

// llama.cpp's /tokenize and /detokenize answer as `staticlm tokenize` and `detokenize` do.
TEST_F(Serve, TokenizeAndDetokenizeAnswerAsTheCli) {
  const std::string text = "Hello there, <b>wörld</b> 42";
  const test::CommandResult cli = test::run_staticlm("tokenize -m " + model() + " --json --text '" + text + "'");
  ASSERT_EQ(cli.exit_code, 0) << cli.err;
  const json ids = json::parse(cli.out);
  const auto post = [&](const std::string& path, const json& body) {
    const std::string b = body.dump();
    return http(path, &b);
  };
  const HttpResult t = post("/tokenize", {{"content", text}});
  ASSERT_EQ(t.status, 200) << t.body;
  EXPECT_EQ(json::parse(t.body).at("tokens"), ids);
  const json with_bos = json::parse(post("/tokenize", {{"content", text}, {"add_special", true}}).body).at("tokens");
  ASSERT_EQ(with_bos.size(), ids.size() + 1);
  EXPECT_EQ(with_bos[0], 2);
  const json pieces = json::parse(post("/tokenize", {{"content", text}, {"with_pieces", true}}).body).at("tokens");
  std::string joined;
  for (std::size_t i = 0; i < pieces.size(); ++i) {
    EXPECT_EQ(pieces[i].at("id"), ids[i]);
    joined += pieces[i].at("piece").get<std::string>();
  }
  EXPECT_EQ(joined, text);
  // parse_special false: a special token written in the text is that text; with_pieces gives a
  // piece that is not UTF-8 alone (byte fallback) as its bytes, as llama-server.
  const json parsed = json::parse(post("/tokenize", {{"content", "<bos>Hi"}}).body).at("tokens");
  EXPECT_EQ(parsed[0], 2);
  const json plain = json::parse(post("/tokenize", {{"content", "<bos>Hi"}, {"parse_special", false}}).body).at("tokens");
  ASSERT_GT(plain.size(), 1u);
  for (const json& id : plain) EXPECT_NE(id, 2);
  const HttpResult plain_text = post("/detokenize", {{"tokens", plain}});
  EXPECT_EQ(json::parse(plain_text.body).at("content"), "<bos>Hi");
  const std::string rare = "\xF3\xB0\x80\x80";  // U+F0000, no token of its own
  const json bytes = json::parse(post("/tokenize", {{"content", rare}, {"with_pieces", true}}).body).at("tokens");
  std::string rebuilt;
  for (const json& t : bytes) {
    ASSERT_TRUE(t.at("piece").is_array()) << t;
    for (const json& b : t["piece"]) rebuilt += static_cast<char>(b.get<int>());
  }
  EXPECT_EQ(rebuilt, rare);
  const HttpResult d = post("/detokenize", {{"tokens", ids}});
  ASSERT_EQ(d.status, 200) << d.body;
  EXPECT_EQ(json::parse(d.body).at("content"), text);
  for (const auto& [path, body, param] : std::vector<std::tuple<std::string, json, std::string>>{
           {"/tokenize", json{{"content", 5}}, "content"},
           {"/tokenize", json{{"content", "x"}, {"add_special", "yes"}}, "add_special"},
           {"/tokenize", json{{"content", "x"}, {"parse_special", 1}}, "parse_special"},
           {"/detokenize", json{{"tokens", "1,2"}}, "tokens"},
           {"/detokenize", json{{"tokens", {1, 262144}}}, "tokens[1]"}}) {
    const HttpResult b = post(path, body);
    EXPECT_EQ(b.status, 400) << path << " " << body;
    EXPECT_EQ(json::parse(b.body)["error"]["param"], param) << b.body;
  }
}

// A reply that ends on an end token that is not a control token (Gemma 4's <|tool_response>,
// eos id 50 of the published generation_config, which ends a turn with a tool call) stops there
// with finish_reason "stop", and the token's text is not in the answer, streamed or not. Its own
// server, on a model whose generation_config.json names the third greedy token of kHello an end
// token.
class ServeEndToken : public Serve {
 protected:
  static void SetUpTestSuite() {
    start({"--max-seq", "128", "--threads", "1"}, [] {
      const std::string f = dir_->file("hello.json"), dump = dir_->file("hello.safetensors");
      write(f, kHello.dump());
      made_ = test::run_staticlm("run -m " + model() + " --messages " + f + " -n 8 --temp 0 --max-seq 128 --dump-logits " + dump);
      if (made_.exit_code != 0) return;
      free_ = read_logits_dump(dump).tokens;
      if (free_.size() < 3) return;
      json gc = json::parse(slurp(model() + "/generation_config.json"));
      gc["eos_token_id"] = {1, free_[2]};
      write(model() + "/generation_config.json", gc.dump());
    });
  }
  inline static std::vector<std::int64_t> free_;  // kHello's 8 greedy tokens before the change
};

TEST_F(ServeEndToken, EndTokenTextIsNotPartOfTheAnswer) {
  ASSERT_EQ(free_.size(), 8u);
  const std::int64_t end = free_[2];
  const auto stop = std::find(free_.begin(), free_.end(), end) - free_.begin();
  const auto post = [&](const std::string& path, const json& body) {
    const std::string b = body.dump();
    return http(path, &b);
  };
  const std::vector<std::int64_t> kept(free_.begin(), free_.begin() + stop);
  const HttpResult d = post("/detokenize", {{"tokens", kept}});
  const HttpResult e = post("/detokenize", {{"tokens", {end}}});
  ASSERT_EQ(d.status, 200) << d.body;
  const std::string expected = json::parse(d.body).at("content"), end_text = json::parse(e.body).at("content");
  ASSERT_FALSE(end_text.empty()) << "token " << end << " has no text: no test";
  const HttpResult r = chat(request(kHello));
  ASSERT_EQ(r.status, 200) << r.body;
  const json j = json::parse(r.body);
  EXPECT_EQ(j["choices"][0]["message"].at("content").get<std::string>(), expected);
  EXPECT_EQ(j["choices"][0].at("finish_reason"), "stop");
  EXPECT_EQ(j.at("usage").at("completion_tokens"), stop + 1);  // the end token is counted
  const HttpResult s = chat(request(kHello, /*stream=*/true));
  EXPECT_EQ(streamed_content(s.body), expected) << s.body;
  EXPECT_EQ(run_answer(kHello), expected);  // as `run` on the same model
}

// SIGTERM (as SIGINT) while a long reply streams and another request waits: the running reply
// stops at its next token and ends with a 503 error event (then [DONE], written whole before the
// server stops), the waiting request is answered 503 without running, and the server exits 0;
// nothing waits for the reply's 4000 tokens. Its own server (one slot, a long cache).
class ServeShutdown : public Serve {
 protected:
  static void SetUpTestSuite() { start({"--max-seq", "4096", "--threads", "1", "--queue", "2"}); }
};

TEST_F(ServeShutdown, AStopSignalAnswersEveryRequestAt503AndExits) {
  json running = request(kHello, /*stream=*/true);
  running["max_tokens"] = 4000;
  running["ignore_eos"] = true;
  HttpResult streamed, waited;
  // The reply streams once its first content reaches the response file (curl -N writes as it gets).
  const std::string first_resp = dir_->file("resp" + std::to_string(counter_));
  std::thread first([&] { streamed = chat(running); });
  for (int i = 0; i < 600 && slurp(first_resp).find("\"content\"") == std::string::npos; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  std::thread second([&] { waited = chat(request(kHello)); });
  // The second request waits behind the first: /health counts both in flight.
  for (int i = 0; i < 600; ++i) {
    const HttpResult h = get("/health");
    if (h.status == 200 && json::parse(h.body).value("in_flight", 0) == 2) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  kill(pid_, SIGTERM);
  first.join();
  second.join();
  int status = 0;
  waitpid(pid_, &status, 0);
  pid_ = -1;
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << "server status " << status;
  const std::vector<std::string> ev = events(streamed.body);
  ASSERT_GE(ev.size(), 2u) << streamed.status << " " << streamed.body << " / " << waited.status << " " << waited.body;
  EXPECT_EQ(ev.back(), "[DONE]");
  const json last = json::parse(ev[ev.size() - 2]);  // the error event, then [DONE] as after any error
  EXPECT_EQ(last.at("error").at("code"), 503) << last;
  EXPECT_NE(last["error"]["message"].get<std::string>().find("shutting down"), std::string::npos) << last;
  EXPECT_LT(ev.size(), 1000u);  // stopped long before its 4000 tokens
  EXPECT_EQ(waited.status, 503) << waited.body;
  EXPECT_EQ(json::parse(waited.body).at("error").at("type"), "unavailable_error") << waited.body;
}

// Thinking: --chat-template-kwargs gives every chat request template variables (here Gemma 4's
// enable_thinking, which puts <|think|> in the system turn), a request's chat_template_kwargs
// are set over them; a thought channel in the reply (<|channel>thought\n...<channel|>, forced
// here by a grammar, as the random model does not think) is answered as reasoning_content,
// streamed before the content, or left in the content with reasoning_format "none"; and with
// thinking on, a forced tool call may follow a thought. Its own server.
class ServeThinking : public Serve {
 protected:
  static void SetUpTestSuite() {
    start({"--max-seq", "128", "--threads", "1", "--chat-template-kwargs", "{\"enable_thinking\": true}"});
  }
};

TEST_F(ServeThinking, ThoughtsAreReasoningContentAndKwargsReachTheTemplate) {
  const auto post = [&](const std::string& path, const json& body) {
    const std::string b = body.dump();
    return http(path, &b);
  };
  const auto prompt = [&](const json& extra) {
    json body = {{"messages", kHello}};
    body.update(extra);
    const HttpResult h = post("/apply-template", body);
    EXPECT_EQ(h.status, 200) << h.body;
    return json::parse(h.body).value("prompt", std::string());
  };
  EXPECT_NE(prompt(json::object()).find("<|think|>"), std::string::npos);  // the server's kwargs
  EXPECT_EQ(prompt({{"chat_template_kwargs", {{"enable_thinking", false}}}}).find("<|think|>"), std::string::npos);
  for (const auto& [field, value] : std::vector<std::pair<std::string, json>>{
           {"chat_template_kwargs", 3}, {"chat_template_kwargs", json::array({"enable_thinking"})}, {"reasoning_format", "hidden"}}) {
    json r = request(kHello);
    r[field] = value;
    const HttpResult h = chat(r);
    EXPECT_EQ(h.status, 400) << h.body;
    EXPECT_EQ(json::parse(h.body)["error"]["param"], field) << h.body;
  }

  json r = request(kHello);
  r["max_tokens"] = 40;
  r["grammar"] = "root ::= <|channel> \"thought\\nTwo, I think.\" <channel|> \"Hi there\"";
  const HttpResult whole = chat(r);
  ASSERT_EQ(whole.status, 200) << whole.body;
  const json message = json::parse(whole.body)["choices"][0]["message"];
  EXPECT_EQ(message["content"], "Hi there") << whole.body;
  EXPECT_EQ(message["reasoning_content"], "Two, I think.") << whole.body;
  // run --json with the same grammar and variable: the same text and reasoning.
  const std::string f = dir_->file("think.json"), g = dir_->file("think.gbnf");
  write(f, kHello.dump());
  write(g, r["grammar"].get<std::string>());
  const test::CommandResult cli = test::run_staticlm("run -m " + model() + " --messages " + f +
                                                     " -n 40 --temp 0 --max-seq 128 --json --var enable_thinking=true --grammar-file " + g);
  ASSERT_EQ(cli.exit_code, 0) << cli.err;
  EXPECT_EQ(json::parse(cli.out), json::parse(R"({"text": "Hi there", "tool_calls": [], "reasoning": "Two, I think."})")) << cli.out;
  r["stream"] = true;
  const HttpResult streamed = chat(r);
  std::string reasoning;
  bool content_seen = false, reasoning_after_content = false;
  for (const std::string& e : events(streamed.body)) {
    if (e == "[DONE]") continue;
    const json delta = json::parse(e)["choices"][0]["delta"];
    if (delta.contains("reasoning_content")) {
      reasoning += delta["reasoning_content"].get<std::string>();
      reasoning_after_content = reasoning_after_content || content_seen;
    }
    content_seen = content_seen || !delta.value("content", std::string()).empty();
  }
  EXPECT_EQ(reasoning, "Two, I think.") << streamed.body;
  EXPECT_FALSE(reasoning_after_content) << streamed.body;
  EXPECT_EQ(streamed_content(streamed.body), "Hi there") << streamed.body;
  r["stream"] = false;
  r["reasoning_format"] = "none";
  const json raw = json::parse(chat(r).body)["choices"][0]["message"];
  EXPECT_FALSE(raw.contains("reasoning_content")) << raw;
  EXPECT_EQ(raw.value("content", std::string()), "<|channel>thought\nTwo, I think.<channel|>Hi there") << raw;

  // A forced call after a thought: the bias makes the model open a thought (allowed first only
  // with thinking on) and close it at once; the call follows.
  json t = request(kHello);
  t["max_tokens"] = 40;
  t["tools"] = json::parse(R"([{"type": "function", "function": {"name": "ping", "parameters": {"type": "object",
    "properties": {"now": {"type": "boolean"}}, "required": ["now"]}}}])");
  t["tool_choice"] = "required";
  t["parallel_tool_calls"] = false;
  t["logit_bias"] = {{"100", 40}, {"101", 50}};  // <|channel>, <channel|>
  t["reasoning_format"] = "none";
  const HttpResult called = chat(t);
  ASSERT_EQ(called.status, 200) << called.body;
  const json c = json::parse(called.body)["choices"][0];
  EXPECT_EQ(c["finish_reason"], "tool_calls") << called.body;
  EXPECT_EQ(c["message"]["content"], "<|channel><channel|>") << called.body;
  ASSERT_EQ(c["message"]["tool_calls"].size(), 1u) << called.body;
  EXPECT_EQ(c["message"]["tool_calls"][0]["function"]["name"], "ping") << called.body;
}

// With thinking on, a JSON reply (response_format) may follow one thought: the bias opens one
// and closes it at once; the value follows, and run --json-schema with the same variable gives
// the same. Thinking off: the bias cannot open one, the value comes first.
TEST_F(ServeThinking, AJsonReplyMayFollowAThought) {
  json r = request(kHello);
  r["max_tokens"] = 20;
  r["response_format"] = {{"type", "json_schema"}, {"json_schema", {{"schema", {{"type", "boolean"}}}}}};
  r["logit_bias"] = {{"100", 40}, {"101", 50}};  // <|channel>, <channel|>
  r["reasoning_format"] = "none";
  const HttpResult raw = chat(r);
  ASSERT_EQ(raw.status, 200) << raw.body;
  const std::string content = json::parse(raw.body)["choices"][0]["message"].value("content", std::string());
  ASSERT_EQ(content.rfind("<|channel><channel|>", 0), 0u) << raw.body;
  const json value = json::parse(content.substr(20), nullptr, false);
  EXPECT_TRUE(value.is_boolean()) << raw.body;
  r.erase("reasoning_format");
  const HttpResult split = chat(r);
  ASSERT_EQ(split.status, 200) << split.body;
  EXPECT_EQ(json::parse(json::parse(split.body)["choices"][0]["message"].value("content", std::string()), nullptr, false), value)
      << split.body;
  const std::string f = dir_->file("json_think.json"), schema = dir_->file("json_think_schema.json");
  write(f, kHello.dump());
  write(schema, R"({"type": "boolean"})");
  const test::CommandResult cli =
      test::run_staticlm("run -m " + model() + " --messages " + f + " -n 20 --temp 0 --max-seq 128 --var enable_thinking=true" +
                         " -l 100+40 -l 101+50 --json-schema-file " + schema);
  ASSERT_EQ(cli.exit_code, 0) << cli.err;
  EXPECT_EQ(cli.out, content + "\n");

  r["reasoning_format"] = "none";
  r["chat_template_kwargs"] = {{"enable_thinking", false}};
  const HttpResult off = chat(r);
  ASSERT_EQ(off.status, 200) << off.body;
  EXPECT_TRUE(json::parse(json::parse(off.body)["choices"][0]["message"].value("content", std::string()), nullptr, false).is_boolean())
      << off.body;
}

// llama.cpp's server flags: -a names the model in the API, -to / -cb / -sps / --no-webui are
// taken (the model list is asked for in the test below), and --reasoning-budget 0 turns thinking off (a request's
// chat_template_kwargs still set over it), --reasoning-format none leaves a thought in the
// content unless a request asks otherwise, --api-key K1,K2 wants a key of every request but the
// health and model list. Its own server; its http() requests send key k2.
class ServeLlamaCppFlags : public Serve {
 protected:
  static void SetUpTestSuite() {
    auth_ = "-H 'Authorization: Bearer k2' ";
    // A template that thinks unless told not to (as Qwen 3's): the budget must turn it off.
    start({"--max-seq", "128", "--threads", "1", "--reasoning-format", "none", "--reasoning-budget", "0", "--api-key", "k1,k2",
           "-a", "gemma-e2b-test", "-to", "30", "-cb", "-sps", "0.5", "--no-webui", "--slots", "--metrics",
           "--chat-template",
           "{% if enable_thinking is not defined or enable_thinking %}<think>{% endif %}"
           "{% for m in messages %}<|turn>{{ m.role }}\n{{ m.content }}<turn|>\n{% endfor %}<|turn>model\n"});
  }
  static void TearDownTestSuite() {
    auth_.clear();
    Serve::TearDownTestSuite();
  }
};

TEST_F(ServeLlamaCppFlags, ApiKeyIsAskedOfEveryRequestButHealthAndModels) {
  const std::string chat_body = "-H 'Content-Type: application/json' --data '" + request(kHello).dump() + "' ";
  std::string headers;
  for (const std::string& key : {std::string(), std::string("-H 'Authorization: Bearer k3' "), std::string("-H 'Authorization: k1' ")}) {
    const HttpResult refused = request_with("POST", "/v1/chat/completions", chat_body + key, &headers);
    EXPECT_EQ(refused.status, 401) << key << refused.body;
    EXPECT_EQ(json::parse(refused.body, nullptr, false)["error"]["type"], "authentication_error") << refused.body;
  }
  EXPECT_EQ(request_with("POST", "/tokenize", "--data '{\"content\": \"hi\"}' ", &headers).status, 401);
  EXPECT_EQ(request_with("POST", "/v1/chat/completions", chat_body + "-H 'X-Api-Key: k1' ", &headers).status, 200);
  EXPECT_EQ(request_with("POST", "/v1/chat/completions", chat_body + "-H 'Authorization: Bearer k2' ", &headers).status, 200);
  for (const char* open : {"/health", "/v1/models"}) EXPECT_EQ(request_with("GET", open, "", &headers).status, 200) << open;
  // -a: the model's name in the list, its own page and a reply.
  EXPECT_EQ(json::parse(request_with("GET", "/v1/models", "", &headers).body)["data"][0]["id"], "gemma-e2b-test");
  EXPECT_EQ(request_with("GET", "/v1/models/gemma-e2b-test", "", &headers).status, 200);
  EXPECT_EQ(json::parse(request_with("POST", "/v1/chat/completions", chat_body + "-H 'X-Api-Key: k1' ", &headers).body)["model"], "gemma-e2b-test");
  EXPECT_EQ(request_with("OPTIONS", "/v1/chat/completions", "-H 'Origin: http://x' -H 'Access-Control-Request-Method: POST' ", &headers).status,
            204);
}

// llama-server's --metrics: Prometheus counters that a request moves by its usage; /slots: the
// one slot's cache holds the prompt and the reply but its last token (never fed back).
TEST_F(ServeLlamaCppFlags, MetricsAndSlotsFollowTheRequests) {
  const auto metrics = [&] {
    const HttpResult m = get("/metrics");
    EXPECT_EQ(m.status, 200) << m.body;
    std::map<std::string, double> values;
    std::istringstream lines(m.body);
    for (std::string line; std::getline(lines, line);) {
      if (line.empty() || line[0] == '#') continue;
      const std::size_t space = line.find(' ');
      EXPECT_EQ(line.rfind("llamacpp:", 0), 0u) << line;
      values[line.substr(9, space - 9)] = std::stod(line.substr(space + 1));
    }
    return values;
  };
  auto before = metrics();
  for (const char* name : {"prompt_tokens_total", "prompt_seconds_total", "tokens_predicted_total", "tokens_predicted_seconds_total",
                           "n_decode_total", "prompt_tokens_seconds", "predicted_tokens_seconds", "requests_processing",
                           "requests_deferred"}) {
    EXPECT_TRUE(before.count(name)) << name;
  }
  json r = request(json::array({{{"role", "user"}, {"content", "Count the metrics for me"}}}));
  const HttpResult h = chat(r);
  ASSERT_EQ(h.status, 200) << h.body;
  const json usage = json::parse(h.body).at("usage");
  const std::int64_t prompt = usage.at("prompt_tokens"), completion = usage.at("completion_tokens");
  const std::int64_t cached = usage.value("prompt_tokens_details", json::object()).value("cached_tokens", std::int64_t{0});
  auto after = metrics();
  EXPECT_EQ(after["prompt_tokens_total"] - before["prompt_tokens_total"], static_cast<double>(prompt - cached));
  EXPECT_EQ(after["tokens_predicted_total"] - before["tokens_predicted_total"], static_cast<double>(completion));
  EXPECT_EQ(after["n_decode_total"] - before["n_decode_total"], static_cast<double>(completion));  // the prompt's, then one a token
  EXPECT_GT(after["prompt_seconds_total"], before["prompt_seconds_total"]);
  EXPECT_EQ(after["requests_processing"], 0);
  EXPECT_EQ(after["requests_deferred"], 0);
  // The throughput gauges cover the time since the previous /metrics (llama-server's buckets).
  EXPECT_NEAR(after["prompt_tokens_seconds"],
              (after["prompt_tokens_total"] - before["prompt_tokens_total"]) / (after["prompt_seconds_total"] - before["prompt_seconds_total"]),
              1e-6 * after["prompt_tokens_seconds"]);
  EXPECT_GT(after["predicted_tokens_seconds"], 0);
  auto quiet = metrics();
  EXPECT_EQ(quiet["prompt_tokens_seconds"], 0);
  EXPECT_EQ(quiet["predicted_tokens_seconds"], 0);
  EXPECT_EQ(quiet["prompt_tokens_total"], after["prompt_tokens_total"]);

  const HttpResult s = get("/slots");
  ASSERT_EQ(s.status, 200) << s.body;
  const json slots = json::parse(s.body);
  ASSERT_EQ(slots.size(), 1u) << s.body;
  EXPECT_EQ(slots[0].at("id"), 0);
  EXPECT_EQ(slots[0].at("n_ctx"), 128);
  EXPECT_EQ(slots[0].at("is_processing"), false);
  EXPECT_EQ(slots[0].at("n_cached_tokens"), prompt + completion - 1);
  EXPECT_EQ(slots[0].at("params").at("temperature"), json::parse(get("/props").body)["default_generation_settings"]["params"]["temperature"]);
  EXPECT_EQ(get("/slots?fail_on_no_slot=1").status, 200);  // idle: a slot is free
}

TEST_F(ServeLlamaCppFlags, BudgetZeroTurnsThinkingOffAndFormatNoneKeepsTheThought) {
  const auto prompt = [&](const json& extra) {
    json body = {{"messages", kHello}};
    body.update(extra);
    const std::string b = body.dump();
    const HttpResult h = http("/apply-template", &b);
    EXPECT_EQ(h.status, 200) << h.body;
    return json::parse(h.body).value("prompt", std::string());
  };
  EXPECT_EQ(prompt(json::object()).rfind("<|turn>user\nHello there", 0), 0u) << "the budget turns thinking off";
  EXPECT_EQ(prompt({{"chat_template_kwargs", {{"enable_thinking", true}}}}).rfind("<think><|turn>user", 0), 0u);
  json r = request(kHello);
  r["max_tokens"] = 40;
  r["grammar"] = "root ::= <|channel> \"thought\\nHmm.\" <channel|> \"Hi\"";
  const json kept = json::parse(chat(r).body)["choices"][0]["message"];
  EXPECT_EQ(kept.value("content", std::string()), "<|channel>thought\nHmm.<channel|>Hi") << kept;
  EXPECT_FALSE(kept.contains("reasoning_content")) << kept;
  r["reasoning_format"] = "auto";
  const json taken = json::parse(chat(r).body)["choices"][0]["message"];
  EXPECT_EQ(taken.value("content", std::string()), "Hi") << taken;
  EXPECT_EQ(taken.value("reasoning_content", std::string()), "Hmm.") << taken;
}

// logprobs / top_logprobs: each content token's log-probability is the log-softmax of the
// logits `run --dump-logits` records for the same greedy answer (computed here in double); the
// top alternatives are sorted, the greedy token is the first of them, the entries' bytes are the
// content, and a stream carries the same entries as the whole reply.
// Its own server, f32 activations as `run --f32-activations`: a prefix reused from a slot then
// gives the logits of a whole prefill up to summation order (docs/server.md), so the answers
// and log-probabilities compare closely, and these requests leave the other suite's slots alone.
class ServeF32 : public Serve {
 protected:
  static void SetUpTestSuite() { start({"--slots", "1", "--max-seq", "128", "--threads", "1", "--f32-activations"}); }
};

// llama.cpp's samplers (top_n_sigma, typical_p, xtc_probability / xtc_threshold, mirostat,
// dynatemp, an order of the stages as names or letters, DRY) reach the
// sampler as run's flags do: a seeded reply at temperature 3 changes with each, to run's. On
// ServeF32's server, as run --f32-activations: with bf16 activations a prefix reused from the
// slot gives logits a rounding apart from a whole prefill's, enough to move a sample this flat.
TEST_F(ServeF32, LlamaCppSamplersEqualRunFlags) {
  const std::string f = dir_->file("samplers_messages.json");
  write(f, kHello.dump());
  const auto run_text = [&](const std::string& flags) {
    const test::CommandResult r = test::run_staticlm("run -m " + model() + " --messages " + f +
                                                     " -n 8 --temp 3 -s 5 --max-seq 128 --f32-activations --json" + flags);
    EXPECT_EQ(r.exit_code, 0) << r.err;
    return json::parse(r.out).at("text").get<std::string>();
  };
  const std::string plain = run_text("");
  for (const auto& [fields, flags] : std::vector<std::pair<json, std::string>>{
           {{{"top_n_sigma", 1}}, " --top-n-sigma 1"},
           {{{"typical_p", 0.2}}, " --typical 0.2"},
           {{{"xtc_probability", 1}, {"xtc_threshold", 0.001}}, " --xtc-probability 1 --xtc-threshold 0.001"},
           {{{"mirostat", 2}, {"mirostat_tau", 3}}, " --mirostat 2 --mirostat-ent 3"},
           {{{"mirostat", 1}, {"mirostat_eta", 0.5}}, " --mirostat 1 --mirostat-lr 0.5"},
           {{{"dynatemp_range", 2.5}, {"dynatemp_exponent", 0.5}}, " --dynatemp-range 2.5 --dynatemp-exp 0.5"},
           {{{"top_k", 3}, {"samplers", {"top_k", "temperature"}}}, " --top-k 3 --samplers 'top_k;temperature'"},
           {{{"top_p", 0.5}, {"samplers", "pt"}}, " --top-p 0.5 --sampling-seq pt"}}) {
    json r = request(kHello);
    r["temperature"] = 3;
    r["seed"] = 5;
    for (const auto& [k, v] : fields.items()) r[k] = v;
    const HttpResult h = chat(r);
    ASSERT_EQ(h.status, 200) << h.body;
    const std::string got = json::parse(h.body)["choices"][0]["message"]["content"].get<std::string>();
    EXPECT_NE(got, plain) << flags << ": the setting changed nothing, so the check is empty";
    EXPECT_EQ(got, run_text(flags)) << flags;
  }
  // DRY, greedy: a +50 bias on "hello" (23391) makes the reply repeat it; a penalty of 100 on the
  // token continuing a repeat breaks that, to run's reply; with "e" a breaker nothing changes.
  const auto greedy_run = [&](const std::string& flags) {
    const test::CommandResult r = test::run_staticlm("run -m " + model() + " --messages " + f +
                                                     " -n 8 --temp 0 --max-seq 128 --f32-activations --json -l 23391+50" + flags);
    EXPECT_EQ(r.exit_code, 0) << r.err;
    return json::parse(r.out).at("text").get<std::string>();
  };
  const std::string hellos = greedy_run("");
  EXPECT_EQ(hellos, "hellohellohellohellohellohellohellohello");
  const auto serve_dry = [&](const json& breakers) {
    json r = request(kHello);
    r["temperature"] = 0;
    r["logit_bias"] = {{"23391", 50}};
    r["dry_multiplier"] = 100;
    r["dry_allowed_length"] = 1;
    if (!breakers.is_null()) r["dry_sequence_breakers"] = breakers;
    const HttpResult h = chat(r);
    EXPECT_EQ(h.status, 200) << h.body;
    return json::parse(h.body)["choices"][0]["message"]["content"].get<std::string>();
  };
  const std::string dried = serve_dry(nullptr);
  EXPECT_NE(dried, hellos);
  EXPECT_EQ(dried, greedy_run(" --dry-multiplier 100 --dry-allowed-length 1"));
  EXPECT_EQ(serve_dry(json::array({"qz", "e"})), hellos);
}

TEST_F(ServeF32, LogprobsAreTheLogSoftmaxOfTheModelsLogits) {
  const std::string f = dir_->file("logprob_messages.json"), dump = dir_->file("logprob_dump.safetensors");
  write(f, kOther.dump());
  const test::CommandResult pr =
      test::run_staticlm("run -m " + model() + " --messages " + f + " -n 8 --temp 0 --max-seq 128 --f32-activations --dump-logits " + dump);
  ASSERT_EQ(pr.exit_code, 0) << pr.err;
  const LogitsDump d = read_logits_dump(dump);
  ASSERT_GT(d.prefill_logits.size(), 0u);
  const auto logits_row = [&](std::size_t j) { return dumped_logits(d, j); };

  json req = request(kOther);
  req["logprobs"] = true;
  req["top_logprobs"] = 3;
  const HttpResult r = chat(req);
  ASSERT_EQ(r.status, 200) << r.body;
  const json j = json::parse(r.body);
  const std::string content = j["choices"][0]["message"]["content"];
  const json& entries = j["choices"][0].at("logprobs").at("content");
  ASSERT_FALSE(entries.empty()) << r.body;
  ASSERT_LE(entries.size(), d.tokens.size());
  std::string bytes;
  for (std::size_t k = 0; k < entries.size(); ++k) {
    const json& e = entries[k];
    // The reply's k-th token is the dump's k-th (content tokens come first; an end-of-turn
    // token, if any, is last and not content).
    const double expected = log_softmax(logits_row(k), d.tokens[k]);
    // The server may reuse a cached prefix and prefill the rest as fewer rows: the sums run in
    // another order.
    EXPECT_NEAR(e.at("logprob").get<double>(), expected, 1e-3) << k;
    EXPECT_LT(e["logprob"].get<double>(), 0.0);
    const json& top = e.at("top_logprobs");
    ASSERT_EQ(top.size(), 3u);
    EXPECT_EQ(top[0]["token"], e["token"]) << k;  // greedy: the likeliest token was chosen
    EXPECT_DOUBLE_EQ(top[0]["logprob"].get<double>(), e["logprob"].get<double>());
    EXPECT_GE(top[0]["logprob"].get<double>(), top[1]["logprob"].get<double>());
    EXPECT_GE(top[1]["logprob"].get<double>(), top[2]["logprob"].get<double>());
    EXPECT_LE(std::exp(top[0]["logprob"].get<double>()) + std::exp(top[1]["logprob"].get<double>()) +
                  std::exp(top[2]["logprob"].get<double>()),
              1.0 + 1e-9);
    for (const json& b : e.at("bytes")) bytes.push_back(static_cast<char>(b.get<int>()));
  }
  EXPECT_EQ(bytes, content);

  // Streamed: the same tokens in the content chunks, each with its chunk's text.
  req["stream"] = true;
  const HttpResult s = chat(req);
  ASSERT_EQ(s.status, 200) << s.body;
  std::vector<std::string> streamed_tokens;
  for (const std::string& ev : events(s.body)) {
    if (ev == "[DONE]") break;
    const json c = json::parse(ev)["choices"][0];
    if (c.at("logprobs").is_null()) continue;  // a chunk without tokens (the role, the finish)
    for (const json& e : c["logprobs"]["content"]) streamed_tokens.push_back(e["token"]);
  }
  std::vector<std::string> whole_tokens;
  for (const json& e : entries) whole_tokens.push_back(e["token"]);
  EXPECT_EQ(streamed_tokens, whole_tokens) << s.body;

  // Without logprobs the field is null; top_logprobs alone or past 20 is refused by name.
  const HttpResult plain = chat(request(kOther));
  EXPECT_TRUE(json::parse(plain.body)["choices"][0].at("logprobs").is_null()) << plain.body;
  json alone = request(kOther);
  alone["top_logprobs"] = 2;
  const HttpResult a = chat(alone);
  EXPECT_EQ(a.status, 400);
  EXPECT_EQ(json::parse(a.body)["error"]["param"], "top_logprobs");
  json many = req;
  many["top_logprobs"] = 21;
  EXPECT_EQ(json::parse(chat(many).body)["error"]["param"], "top_logprobs");
  json wrong = req;
  wrong["logprobs"] = "yes";
  EXPECT_EQ(json::parse(chat(wrong).body)["error"]["param"], "logprobs");
}

// llama.cpp's n_probs on /completion: each reply token's log-probability is the log-softmax of
// the logits `run --dump-logits` records for the same greedy reply to the same raw prompt
// (computed here in double), with the n_probs likeliest tokens, sorted, the chosen one first; a
// stream carries the same entries, each in the event with its text, and its summary none.
TEST_F(ServeF32, LlamaCppNProbsAreTheLogSoftmaxOfTheModelsLogits) {
  const auto post = [&](const std::string& path, const json& body) {
    const std::string b = body.dump();
    return http(path, &b);
  };
  // The prompt as ids (<bos> then the text's), given to both.
  json prompt = json::array({2});
  const json tokenized = json::parse(post("/tokenize", {{"content", "The quick brown fox"}}).body);
  for (const json& id : tokenized.at("tokens")) prompt.push_back(id);
  std::string ids;
  for (const json& id : prompt) ids += (ids.empty() ? "" : ",") + std::to_string(id.get<int>());
  const std::string dump = dir_->file("n_probs_dump.safetensors");
  const test::CommandResult pr = test::run_staticlm("run -m " + model() + " --prompt-ids " + ids +
                                                    " -n 6 --temp 0 --max-seq 128 --f32-activations --dump-logits " + dump);
  ASSERT_EQ(pr.exit_code, 0) << pr.err;
  const LogitsDump d = read_logits_dump(dump);
  ASSERT_GT(d.prefill_logits.size(), 0u);
  const auto logits_row = [&](std::size_t j) { return dumped_logits(d, j); };
  const json req = {{"prompt", prompt}, {"n_predict", 6}, {"temperature", 0}, {"n_probs", 4}, {"return_tokens", true}};
  const HttpResult r = post("/completion", req);
  ASSERT_EQ(r.status, 200) << r.body;
  const json j = json::parse(r.body);
  const json& probs = j.at("completion_probabilities");
  const json& tokens = j.at("tokens");
  ASSERT_FALSE(probs.empty()) << r.body;
  ASSERT_LE(probs.size(), tokens.size());
  std::string bytes;
  for (std::size_t k = 0; k < probs.size(); ++k) {
    const json& e = probs[k];
    EXPECT_EQ(e.at("id"), tokens[k]) << k;
    ASSERT_LT(k, d.tokens.size());
    EXPECT_EQ(e["id"].get<std::int64_t>(), d.tokens[k]) << k;  // the same greedy reply as `run`
    EXPECT_NEAR(e.at("logprob").get<double>(), log_softmax(logits_row(k), d.tokens[k]), 1e-3) << k;
    const json& top = e.at("top_logprobs");
    ASSERT_EQ(top.size(), 4u);
    EXPECT_EQ(top[0].at("id"), e["id"]) << k;
    EXPECT_EQ(top[0].at("token"), e.at("token")) << k;
    EXPECT_DOUBLE_EQ(top[0].at("logprob").get<double>(), e["logprob"].get<double>());
    for (std::size_t i = 0; i < top.size(); ++i) {
      EXPECT_NEAR(top[i]["logprob"].get<double>(), log_softmax(logits_row(k), top[i]["id"].get<std::int64_t>()), 1e-3);
      if (i > 0) {
        EXPECT_GE(top[i - 1]["logprob"].get<double>(), top[i]["logprob"].get<double>());
      }
    }
    for (const json& b : e.at("bytes")) bytes.push_back(static_cast<char>(b.get<int>()));
  }
  EXPECT_EQ(bytes, j.at("content").get<std::string>());
  EXPECT_FALSE(json::parse(post("/completion", {{"prompt", prompt}, {"n_predict", 2}, {"n_probs", 0}}).body).contains("completion_probabilities"));

  json streamed_req = req;
  streamed_req["stream"] = true;
  const HttpResult s = post("/completion", streamed_req);
  ASSERT_EQ(s.status, 200) << s.body;
  const std::vector<std::string> ev = events(s.body);
  ASSERT_GE(ev.size(), 2u) << s.body;
  json streamed = json::array();
  for (std::size_t i = 0; i + 1 < ev.size(); ++i) {
    const json c = json::parse(ev[i]);
    std::string text;
    for (const json& e : c.at("completion_probabilities")) {
      streamed.push_back(e);
      for (const json& b : e.at("bytes")) text.push_back(static_cast<char>(b.get<int>()));
    }
    EXPECT_EQ(text, c.at("content").get<std::string>()) << ev[i];
  }
  // The same entries; the stream may reuse the first request's cached prefix, whose logits then
  // differ from a whole prefill's in summation order (docs/server.md).
  ASSERT_EQ(streamed.size(), probs.size()) << s.body;
  for (std::size_t k = 0; k < probs.size(); ++k) {
    for (const char* key : {"id", "token", "bytes"}) EXPECT_EQ(streamed[k].at(key), probs[k].at(key)) << k << " " << key;
    EXPECT_NEAR(streamed[k].at("logprob").get<double>(), probs[k].at("logprob").get<double>(), 1e-3) << k;
    ASSERT_EQ(streamed[k].at("top_logprobs").size(), probs[k].at("top_logprobs").size()) << k;
    for (std::size_t i = 0; i < probs[k]["top_logprobs"].size(); ++i) {
      EXPECT_NEAR(streamed[k]["top_logprobs"][i].at("logprob").get<double>(), probs[k]["top_logprobs"][i].at("logprob").get<double>(), 1e-3);
    }
  }
  EXPECT_FALSE(json::parse(ev.back()).contains("completion_probabilities")) << ev.back();
}

// /v1/completions: a raw prompt (no chat template) continues as `run -p` continues it; the
// prompt given as the tokenizer's ids (<bos> included) answers the same; streamed text equals
// the whole reply; the legacy logprobs have one token, log-probability, alternatives and offset
// per token; unsupported fields are 400 by name.
TEST_F(ServeF32, TextCompletionsContinueARawPromptAsRunDoes) {
  const std::string prompt = "<bos>The capital of France is";  // special tokens are read as such
  const test::CommandResult rr =
      test::run_staticlm("run -m " + model() + " -p '" + prompt + "' -n 8 --temp 0 --max-seq 128 --f32-activations --json");
  ASSERT_EQ(rr.exit_code, 0) << rr.err;
  const std::string expected = json::parse(rr.out).at("text");
  const auto complete = [&](const json& body) {
    const std::string b = body.dump();
    return http("/v1/completions", &b);
  };
  const json base = {{"model", "m"}, {"prompt", prompt}, {"temperature", 0}, {"max_tokens", 8}};
  const HttpResult r = complete(base);
  ASSERT_EQ(r.status, 200) << r.body;
  const json j = json::parse(r.body);
  EXPECT_EQ(j.at("object"), "text_completion");
  EXPECT_EQ(j["choices"][0].at("text").get<std::string>(), expected);
  EXPECT_TRUE(j["choices"][0].at("logprobs").is_null());
  EXPECT_EQ(j.at("usage").at("completion_tokens").get<int>() + j["usage"]["prompt_tokens"].get<int>(),
            j["usage"]["total_tokens"].get<int>());

  const test::CommandResult ids = test::run_staticlm("tokenize -m " + model() + " --json --text '" + prompt + "'");
  ASSERT_EQ(ids.exit_code, 0) << ids.err;
  json by_ids = base;
  by_ids["prompt"] = json::parse(ids.out);
  ASSERT_EQ(by_ids["prompt"][0], 2);  // <bos>
  EXPECT_EQ(json::parse(complete(by_ids).body)["choices"][0]["text"].get<std::string>(), expected);
  by_ids["prompt"] = json::array({json::parse(ids.out)});  // a list of one prompt
  EXPECT_EQ(json::parse(complete(by_ids).body)["choices"][0]["text"].get<std::string>(), expected);

  json streamed = base;
  streamed["stream"] = true;
  const HttpResult s = complete(streamed);
  ASSERT_EQ(s.status, 200) << s.body;
  const std::vector<std::string> ev = events(s.body);
  ASSERT_GE(ev.size(), 2u) << s.body;
  EXPECT_EQ(ev.back(), "[DONE]");
  std::string text;
  for (std::size_t i = 0; i + 1 < ev.size(); ++i) {
    const json c = json::parse(ev[i]);
    EXPECT_EQ(c.at("object"), "text_completion");
    text += c["choices"][0].at("text").get<std::string>();
  }
  EXPECT_EQ(text, expected);
  EXPECT_EQ(json::parse(ev[ev.size() - 2])["choices"][0]["finish_reason"], j["choices"][0]["finish_reason"]);

  json with_logprobs = base;
  with_logprobs["logprobs"] = 2;
  const json lj = json::parse(complete(with_logprobs).body);
  const json& lp = lj["choices"][0].at("logprobs");
  const std::size_t n = lp.at("tokens").size();
  ASSERT_GE(n, 1u) << lj;
  ASSERT_EQ(lp.at("token_logprobs").size(), n);
  ASSERT_EQ(lp.at("top_logprobs").size(), n);
  ASSERT_EQ(lp.at("text_offset").size(), n);
  EXPECT_EQ(lp["text_offset"][0], 0);
  for (std::size_t k = 0; k < n; ++k) {
    const std::string token = lp["tokens"][k];
    const json& top = lp["top_logprobs"][k];
    EXPECT_GE(top.size(), 1u);
    EXPECT_LE(top.size(), 2u);
    ASSERT_TRUE(top.contains(token)) << k;  // greedy: the chosen token is the likeliest
    EXPECT_DOUBLE_EQ(top[token].get<double>(), lp["token_logprobs"][k].get<double>());
    for (const auto& [alt, value] : top.items()) EXPECT_LE(value.get<double>(), top[token].get<double>()) << alt;
    if (k > 0) {
      EXPECT_GE(lp["text_offset"][k].get<int>(), lp["text_offset"][k - 1].get<int>());
    }
  }

  for (const auto& [key, value] : std::vector<std::pair<std::string, json>>{
           {"echo", true}, {"suffix", "x"}, {"best_of", 2}, {"logprobs", 21}, {"prompt", json::object()},
           {"prompt", json::array({1, 99999999})}, {"prompt", json::array({"a", "b"})}}) {
    json bad = base;
    bad[key] = value;
    const HttpResult b = complete(bad);
    EXPECT_EQ(b.status, 400) << key << " " << value << ": " << b.body;
    const std::string param = json::parse(b.body)["error"]["param"];
    EXPECT_EQ(param.substr(0, key.size()), key) << b.body;
  }
}

TEST_F(Serve, ExtendingAConversationReusesTheCachedPrefix) {
  const json first = json::array({{{"role", "user"}, {"content", "Tell me a story"}}});
  const HttpResult a = chat(request(first));
  ASSERT_EQ(a.status, 200) << a.body;
  const json ja = json::parse(a.body);
  json second = first;
  second.push_back({{"role", "assistant"}, {"content", ja["choices"][0]["message"]["content"]}});
  second.push_back({{"role", "user"}, {"content", "And then?"}});
  const HttpResult b = chat(request(second));
  ASSERT_EQ(b.status, 200) << b.body;
  const json jb = json::parse(b.body);
  const int cached = jb["usage"]["prompt_tokens_details"]["cached_tokens"].get<int>();
  const int prompt = jb["usage"]["prompt_tokens"].get<int>();
  // At least the whole first prompt came from the cache, and not the new user turn.
  EXPECT_GE(cached, ja["usage"]["prompt_tokens"].get<int>());
  EXPECT_LT(cached, prompt);
  // Appending to the cached slot answers what a fresh one-shot run of the whole history does.
  EXPECT_EQ(jb["choices"][0]["message"]["content"].get<std::string>(), run_answer(second));
  // The same request again: everything but the last prompt token is reused; same answer.
  const HttpResult c = chat(request(second));
  ASSERT_EQ(c.status, 200) << c.body;
  const json jc = json::parse(c.body);
  EXPECT_EQ(jc["usage"]["prompt_tokens_details"]["cached_tokens"].get<int>(), prompt - 1);
  EXPECT_EQ(jc["choices"][0]["message"]["content"], jb["choices"][0]["message"]["content"]);
}

TEST_F(Serve, BadRequestsAre400NamingTheField) {
  const std::string not_json = "{\"messages\": [";
  const HttpResult r = http("/v1/chat/completions", &not_json);
  EXPECT_EQ(r.status, 400);
  EXPECT_NE(json::parse(r.body).at("error").at("message").get<std::string>().find("not valid JSON"), std::string::npos) << r.body;
  // Nesting that would overflow the stack of anything walking the document is refused up front.
  const std::string deep = "{\"messages\": [{\"role\": \"user\", \"content\": " + std::string(10000, '[') + std::string(10000, ']') + "}]}";
  const HttpResult d = http("/v1/chat/completions", &deep);
  EXPECT_EQ(d.status, 400) << d.body;
  EXPECT_NE(d.body.find("body: JSON nested deeper than 128 levels"), std::string::npos) << d.body;

  const std::vector<std::pair<std::string, json>> cases = {
      {"messages", {{"model", "m"}}},
      {"messages", {{"messages", "hello"}}},
      {"messages[0].role", {{"messages", json::array({{{"content", "hi"}}})}}},
      {"temperature", {{"messages", kHello}, {"temperature", "hot"}}},
      {"top_p", {{"messages", kHello}, {"top_p", 2.0}}},
      {"top_k", {{"messages", kHello}, {"top_k", -1}}},
      {"max_tokens", {{"messages", kHello}, {"max_tokens", 0}}},
      {"stop", {{"messages", kHello}, {"stop", 5}}},
      {"stream", {{"messages", kHello}, {"stream", "yes"}}},
      {"seed", {{"messages", kHello}, {"seed", 1.5}}},
      {"repetition_penalty", {{"messages", kHello}, {"repetition_penalty", 0}}},
      {"repeat_penalty", {{"messages", kHello}, {"repeat_penalty", "high"}}},
      {"repeat_penalty", {{"messages", kHello}, {"repeat_penalty", 0}}},  // the range check names the alias
      {"mirostat", {{"messages", kHello}, {"mirostat", 4294967298}}},       // 2^32 + 2: not wrapped to 2
      {"temperature", {{"messages", kHello}, {"temperature", -1}}},
      {"presence_penalty", {{"messages", kHello}, {"presence_penalty", 2.5}}},
      {"repeat_last_n", {{"messages", kHello}, {"repeat_last_n", -2}}},
      {"typical_p", {{"messages", kHello}, {"typical_p", 0}}},
      {"top_n_sigma", {{"messages", kHello}, {"top_n_sigma", "wide"}}},
      {"xtc_probability", {{"messages", kHello}, {"xtc_probability", 1.5}}},
      {"xtc_threshold", {{"messages", kHello}, {"xtc_threshold", -0.1}}},
      {"mirostat", {{"messages", kHello}, {"mirostat", 3}}},
      {"mirostat_tau", {{"messages", kHello}, {"mirostat_tau", -1}}},
      {"dynatemp_range", {{"messages", kHello}, {"dynatemp_range", -0.5}}},
      {"dynatemp_exponent", {{"messages", kHello}, {"dynatemp_exponent", "high"}}},
      {"samplers", {{"messages", kHello}, {"samplers", {"top_k", "frobnicate"}}}},
      {"samplers", {{"messages", kHello}, {"samplers", "kq"}}},
      {"samplers", {{"messages", kHello}, {"samplers", 5}}},
      {"samplers", {{"messages", kHello}, {"samplers", std::string(1000, 'k')}}},
      {"samplers", {{"messages", kHello}, {"samplers", {"temperature", "penalties"}}}},
      {"dry_base", {{"messages", kHello}, {"dry_base", 0.5}}},
      {"dry_allowed_length", {{"messages", kHello}, {"dry_allowed_length", 0}}},
      {"dry_sequence_breakers", {{"messages", kHello}, {"dry_sequence_breakers", "\n"}}},
      {"dry_sequence_breakers", {{"messages", kHello}, {"dry_multiplier", 1}, {"dry_sequence_breakers", {""}}}},
      {"frequency_penalty", {{"messages", kHello}, {"frequency_penalty", "some"}}},
      {"stream_options", {{"messages", kHello}, {"stream_options", 5}}},
      {"grammar", {{"messages", kHello}, {"grammar", "root ::= [a-z"}}},
      {"grammar", {{"messages", kHello}, {"grammar", 5}}},
      {"grammar_lazy", {{"messages", kHello}, {"grammar", "root ::= \"a\""}, {"grammar_lazy", true}}},
      {"grammar", {{"messages", kHello}, {"grammar", "root ::= \"a\""}, {"json_schema", {{"type", "string"}}}}},
      {"logit_bias", {{"messages", kHello}, {"logit_bias", "ban"}}},
      {"logit_bias.5", {{"messages", kHello}, {"logit_bias", {{"5", 101}}}}},
      {"logit_bias.999999999", {{"messages", kHello}, {"logit_bias", {{"999999999", 1}}}}},
      {"logit_bias[0]", {{"messages", kHello}, {"logit_bias", json::array({json::array({5})})}}},
      {"logit_bias[1]", {{"messages", kHello}, {"logit_bias", json::array({json::array({5, 1}), json::array({5, "x"})})}}},
      {"ignore_eos", {{"messages", kHello}, {"ignore_eos", "yes"}}},
      {"response_format", {{"messages", kHello}, {"response_format", "json"}}},
      {"response_format.type", {{"messages", kHello}, {"response_format", {{"type", "yaml"}}}}},
      {"response_format.json_schema.schema", {{"messages", kHello}, {"response_format", {{"type", "json_schema"}, {"json_schema", json::object()}}}}},
  };
  for (const auto& [field, body] : cases) {
    const HttpResult e = chat(body);
    EXPECT_EQ(e.status, 400) << field << ": " << e.body;
    const json j = json::parse(e.body);
    EXPECT_EQ(j.at("error").at("param"), field) << e.body;
    EXPECT_EQ(j["error"].at("message").get<std::string>().rfind(field + ":", 0), 0u) << e.body;
  }
  // A prompt longer than max_seq - 1 is the client's error too.
  std::string words;
  for (int i = 0; i < 200; ++i) words += "word" + std::to_string(i) + " ";
  const HttpResult t = chat(request(json::array({{{"role", "user"}, {"content", words}}})));
  EXPECT_EQ(t.status, 400) << t.body;
  EXPECT_NE(t.body.find("max_seq 128"), std::string::npos) << t.body;
}

TEST_F(Serve, OversizedBodyIs413) {
  const std::string body = R"({"messages": [{"role": "user", "content": ")" + std::string(70000, 'x') + "\"}]}";
  const HttpResult r = http("/v1/chat/completions", &body);
  EXPECT_EQ(r.status, 413) << r.body;
  // Sent in chunks (no Content-Length), the same body: the limit holds as well.
  const HttpResult c = http("/v1/chat/completions", &body, true, true);
  EXPECT_EQ(c.status, 413) << c.body;
  EXPECT_NE(c.body.find("--max-body 65536"), std::string::npos) << c.body;
  // A Content-Length over the limit is answered at once, not after the read timeout (the client
  // sends 2 of the bytes it declares and gives up after 3 s).
  std::string headers;
  for (const char* length : {"99999999999999", "65537", "999999999999999999999999"}) {
    const HttpResult declared = request_with(
        "POST", "/v1/chat/completions", "--max-time 3 -H 'Content-Length: " + std::string(length) + "' --data-binary '{}'", &headers);
    EXPECT_EQ(declared.status, 413) << length << " " << declared.body;
  }
  // The server goes on serving, chunked requests under the limit included.
  EXPECT_EQ(get("/health").status, 200);
  const std::string small = request(kHello).dump();
  EXPECT_EQ(http("/v1/chat/completions", &small, true, true).status, 200);
}

TEST_F(Serve, ConcurrentClientsGetCompleteAnswersOr503) {
  const std::vector<json> prompts = {kHello, kOther};
  std::vector<std::string> expected;
  for (const json& p : prompts) {
    const HttpResult r = chat(request(p));
    ASSERT_EQ(r.status, 200) << r.body;
    expected.push_back(json::parse(r.body)["choices"][0]["message"]["content"].get<std::string>());
  }
  ASSERT_NE(expected[0], expected[1]);  // so that a mixed-up answer would show
  // One burst: 16 clients x 8 requests, every third one streamed.
  auto burst = [&] {
    const json before = json::parse(get("/health").body);
    struct Outcome {
      int status;
      std::size_t prompt;
      std::string content, body;
    };
    std::vector<std::vector<Outcome>> outcomes(16);
    std::vector<std::thread> clients;
    for (int c = 0; c < 16; ++c) {
      clients.emplace_back([&, c] {
        const int n = 8;  // the issue's load: 16 clients x 8 requests
        for (int k = 0; k < n; ++k) {
          const std::size_t p = static_cast<std::size_t>(c + k) % 2;
          const bool stream = (c + k) % 3 == 0;
          const HttpResult r = chat(request(prompts[p], stream));
          Outcome o{r.status, p, "", r.body};
          if (r.status == 200) {
            o.content = stream ? streamed_content(r.body) : json::parse(r.body)["choices"][0]["message"]["content"].get<std::string>();
          }
          outcomes[static_cast<std::size_t>(c)].push_back(o);
        }
      });
    }
    for (std::thread& t : clients) t.join();
    int answered = 0, busy = 0, total = 0;
    for (const auto& list : outcomes) {
      for (const Outcome& o : list) {
        ++total;
        if (o.status == 200) {
          ++answered;
          EXPECT_EQ(o.content, expected[o.prompt]) << o.body;
        } else {
          EXPECT_EQ(o.status, 503) << o.body;
          if (o.status == 503) {
            ++busy;
            EXPECT_EQ(json::parse(o.body).at("error").at("type"), "server_busy") << o.body;
            EXPECT_EQ(json::parse(o.body).at("error").at("code"), 503) << o.body;
          }
        }
      }
    }
    int planned = 0;
    for (int c = 0; c < 16; ++c) planned += 8;
    EXPECT_EQ(total, planned);
    EXPECT_EQ(answered + busy, total);
    EXPECT_GT(answered, 0);
    // The server's own counts agree: every answer completed, every 503 was a rejection, none lost.
    const json after = json::parse(get("/health").body);
    EXPECT_EQ(after.at("completed").get<int>() - before.at("completed").get<int>(), answered) << after;
    EXPECT_EQ(after.at("rejected").get<int>() - before.at("rejected").get<int>(), busy) << after;
    EXPECT_EQ(after.at("cancelled"), before.at("cancelled")) << after;
    EXPECT_EQ(after.at("failed"), 0) << after;
    EXPECT_EQ(after.at("in_flight"), 0) << after;
  };
  // Four bursts; the server's heap in use grows by a few KB per burst at most once warm (caches,
  // the first bursts' connection threads), while a leak of a few KB per request, as the chat
  // template's macros once had, adds some 300 KB a burst.
  const auto heap = [&] { return json::parse(get("/health").body).at("heap_in_use_bytes").get<long>(); };
  burst();
  burst();
  const long heap_second = heap();
  burst();
  burst();
  const long heap_fourth = heap();
  ASSERT_GT(heap_second, 0);
  EXPECT_LT(heap_fourth - heap_second, 128 * 1024) << "heap bytes in use after the second burst " << heap_second
                                                  << ", after the fourth " << heap_fourth;
}

// The npm `openai` package (fetched into .deps/ by scripts/setup.sh) as the client: a missing
// node or package fails the test.
TEST_F(Serve, NpmOpenAiClientStreamedAndNot) {
  const std::string deps = STATICLM_DEPS_DIR;
  ASSERT_EQ(std::system("node --version >/dev/null 2>&1"), 0) << "node is missing: run scripts/setup.sh";
  ASSERT_TRUE(std::ifstream(deps + "/openai/node_modules/openai/package.json").good())
      << "the npm openai package is missing from " << deps << ": run scripts/setup.sh";
  const std::string script = std::string(STATICLM_TEST_FIXTURES) + "/../integration/serve_openai_client.cjs";
  const std::string out = dir_->file("openai.out"), err = dir_->file("openai.err");
  const std::string cmd = "node " + script + " " + deps + " " + url("/v1") + " m >" + out + " 2>" + err;
  ASSERT_EQ(std::system(cmd.c_str()), 0) << slurp(err);
  const json j = json::parse(slurp(out));
  const std::string expected = run_answer(kHello);
  EXPECT_EQ(j.at("text").get<std::string>(), expected);
  EXPECT_EQ(j.at("streamed").get<std::string>(), expected);
  EXPECT_GE(j.at("chunks").get<int>(), 3);  // the role, at least one piece, the finish
  EXPECT_GT(j.at("usage").at("prompt_tokens").get<int>(), 0);
  EXPECT_EQ(j["usage"].at("total_tokens").get<int>(),
            j["usage"]["prompt_tokens"].get<int>() + j["usage"].at("completion_tokens").get<int>());
  EXPECT_EQ(j.at("badStatus"), 400);
  EXPECT_EQ(j.at("badParam"), "top_p");
  EXPECT_EQ(j.at("models"), json::array({"m"}));
  EXPECT_EQ(j.at("retrieved"), "m");
  // The client reads chat logprobs and text completions (their values: ServeF32 below).
  EXPECT_GE(j.at("logprobTokens").size(), 1u);
  EXPECT_LE(j.at("logprobTokens").size(), 8u);
  EXPECT_EQ(j.at("completionObject"), "text_completion");
  EXPECT_FALSE(j.at("completion").get<std::string>().empty());
  EXPECT_FALSE(j.at("completionStreamed").get<std::string>().empty());
}

// Image parts on a server whose runtime config puts the vision profile's span where the chat
// format puts the image (after <bos><|turn>user\n). One slot, so a text request evicts the image.
// f32 activations: a reused prefix then answers exactly as a fresh prefill (with bf16 rounding,
// prefill, append and decode round at different points, and a random model's near-ties flip).
class ServeImage : public Serve {
 protected:
  static void SetUpTestSuite() {
    start({"--slots", "1", "--queue", "4", "--max-seq", "512", "--threads", "1", "--allow-local-files", "--f32-activations",
           "--set", "image_fit=fit", "--set", "vision_profile.visual_start_idx=5"});
  }
  static std::string image_path() { return test::fixture("images/gradient.png"); }
  static json image_turn(const json& image_part) {
    return json::array({{{"role", "user"}, {"content", json::array({image_part, {{"type", "text"}, {"text", "Describe the image."}}})}}});
  }
  static json data_url_part(const std::string& path) {
    const std::string b64 = dir_->file("b64_" + std::to_string(counter_++));
    EXPECT_EQ(std::system(("base64 -w0 " + path + " >" + b64).c_str()), 0);
    return {{"type", "image_url"}, {"image_url", {{"url", "data:image/png;base64," + slurp(b64)}}}};
  }
  static json answer(const HttpResult& h) { return json::parse(h.body); }
  static std::string content(const HttpResult& h) {
    return answer(h).at("choices").at(0).at("message").at("content").get<std::string>();
  }
  static std::int64_t cached(const HttpResult& h) {
    return answer(h).at("usage").at("prompt_tokens_details").at("cached_tokens").get<std::int64_t>();
  }
};

// With --allow-local-files no web page may call the server: no CORS header, no preflight.
TEST_F(ServeImage, LocalFilesServerSendsNoCorsHeaders) {
  std::string headers;
  ASSERT_EQ(request_with("GET", "/v1/models", "-H 'Origin: http://example.com'", &headers).status, 200);
  EXPECT_EQ(headers.find("access-control-allow-origin"), std::string::npos) << headers;
  EXPECT_NE(request_with("OPTIONS", "/v1/chat/completions", "-H 'Origin: http://example.com'", &headers).status, 204);
  EXPECT_EQ(headers.find("access-control-allow-origin"), std::string::npos) << headers;
}

TEST_F(ServeImage, DataUrlAnswersLikeRunAndReusesTheImageSlot) {
  const json first = image_turn(data_url_part(image_path()));
  const HttpResult a = chat(request(first));
  ASSERT_EQ(a.status, 200) << a.body;
  // The reference: `staticlm run --image` with the same prompt in the chat format.
  const test::CommandResult r = test::run_staticlm(
      "run -m " + model() + " --image " + image_path() + " --set image_fit=fit --set vision_profile.visual_start_idx=5"
      " --max-seq 512 --f32-activations --chat -p '<|image|>Describe the image.' -n 8 --temp 0");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const std::string reply = content(a);
  EXPECT_EQ(r.out, reply + "\n");
  EXPECT_EQ(cached(a), 0);
  // 5 chat-format tokens, the image's soft tokens with their begin/end markers, the rest.
  EXPECT_GT(answer(a)["usage"]["prompt_tokens"].get<int>(), 269);

  // The next turn reuses the cached image and the first reply...
  json second = first;
  second.push_back({{"role", "assistant"}, {"content", reply}});
  second.push_back({{"role", "user"}, {"content", "And its colours?"}});
  const HttpResult b = chat(request(second));
  ASSERT_EQ(b.status, 200) << b.body;
  EXPECT_GE(cached(b), 269);
  // ...and answers what a from-scratch prefill of the same conversation answers: a text request
  // takes the only slot, so the same conversation comes back to an empty cache.
  ASSERT_EQ(chat(request(kHello)).status, 200);
  const HttpResult b2 = chat(request(second));
  ASSERT_EQ(b2.status, 200) << b2.body;
  EXPECT_EQ(cached(b2), 0);
  EXPECT_EQ(content(b2), content(b));

  // The same image as a local file (the server allows them) is the same image: served from the cache.
  const HttpResult c = chat(request(image_turn({{"type", "image_url"}, {"image_url", {{"url", "file://" + image_path()}}}})));
  ASSERT_EQ(c.status, 200) << c.body;
  EXPECT_EQ(content(c), reply);
}

TEST_F(ServeImage, BadImagePartsAre400NamingThePart) {
  const json good = data_url_part(image_path());
  auto expect_400 = [&](const json& messages, const std::string& param, const std::string& words) {
    const HttpResult h = chat(request(messages));
    EXPECT_EQ(h.status, 400) << h.body;
    const json e = json::parse(h.body).at("error");
    EXPECT_EQ(e.at("param"), param) << h.body;
    EXPECT_NE(e.at("message").get<std::string>().find(words), std::string::npos) << h.body;
  };
  json two = image_turn(good);
  two[0]["content"].push_back(good);
  expect_400(two, "messages[0].content[2]", "one image per conversation");
  expect_400(image_turn({{"type", "image_url"}, {"image_url", {{"url", "data:image/png;base64,iVBO!!"}}}}),
             "messages[0].content[0].image_url.url", "not base64");
  expect_400(image_turn({{"type", "image_url"}, {"image_url", {{"url", "data:image/png;base64,aGVsbG8="}}}}),
             "messages[0].content[0].image_url.url", "image");
  expect_400(image_turn({{"type", "image_url"}, {"image_url", {{"url", "https://example.com/a.png"}}}}),
             "messages[0].content[0].image_url.url", "remote URLs are not fetched");
  expect_400(image_turn({{"type", "image_url"}, {"image_url", 7}}), "messages[0].content[0].image_url", "url");
  expect_400(image_turn({{"type", "image_url"}, {"image_url", {{"url", "/no/such/file.png"}}}}),
             "messages[0].content[0].image_url.url", "no such file");
  // A system turn moves the image off the profile's span: the builder names the rule.
  json moved = image_turn(good);
  const json system = {{"role", "system"}, {"content", "Be brief."}};
  moved.insert(moved.begin(), system);
  expect_400(moved, "messages", "image span");
  // The server still answers afterwards.
  EXPECT_EQ(chat(request(kHello)).status, 200);
}

// A client that hangs up cancels its generation, streamed or not: /health counts it as
// cancelled, not completed, and the worker is free long before the reply (up to 500 tokens, the
// room max_seq 512 leaves) could have been generated.
TEST_F(ServeImage, ClientThatDisconnectsCancelsItsGeneration) {
  for (const bool stream : {false, true}) {
    const json before = json::parse(get("/health").body);
    json r = request(kHello, stream);
    r["max_tokens"] = 100000;
    const std::string body = dir_->file("long" + std::to_string(counter_++) + ".json");
    write(body, r.dump());
    // curl gives up after 0.4 s: the server sees the connection close.
    const std::string cmd = "curl -s -N -o /dev/null --max-time 0.4 -H 'Content-Type: application/json' --data-binary @" +
                            body + " '" + url("/v1/chat/completions") + "'";
    EXPECT_NE(std::system(cmd.c_str()), 0) << "the request finished before the client hung up";
    json after;
    for (int i = 0; i < 100; ++i) {
      after = json::parse(get("/health").body);
      if (after.at("in_flight") == 0) break;
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
    EXPECT_EQ(after.at("in_flight"), 0) << "stream " << stream << ": " << after;
    EXPECT_EQ(after.at("cancelled").get<int>(), before.at("cancelled").get<int>() + 1) << "stream " << stream << ": " << after;
    EXPECT_EQ(after.at("completed"), before.at("completed")) << "stream " << stream << ": " << after;
  }
}

// Tools: a server with a chat template that renders them (--chat-template). The request's
// `tools` reach the template: the prompt and the answer are those of `run --messages --tools`
// with the same template. (A random model does not call tools; the parsing of calls out of a
// reply is tested in tests/unit/text/tool_call_stream_test.cc.)
class ServeTools : public Serve {
 protected:
  static void SetUpTestSuite() {
    start({"--max-seq", "512", "--threads", "1", "--chat-template", tools_template()});
  }
  static std::string tools_template() { return test::fixture("jinja/templates/gemma4_tools.jinja"); }
};

TEST_F(ServeTools, ToolsReachTheTemplate) {
  const json tools = json::array({{{"type", "function"},
                                   {"function", {{"name", "get_weather"},
                                                 {"description", "Weather of a city"},
                                                 {"parameters", {{"type", "object"},
                                                                 {"properties", {{"city", {{"type", "string"}}}}},
                                                                 {"required", {"city"}}}}}}}});
  json with_tools = request(kHello);
  with_tools["tools"] = tools;
  with_tools["tool_choice"] = "auto";
  const HttpResult h = chat(with_tools);
  ASSERT_EQ(h.status, 200) << h.body;
  const json a = json::parse(h.body);
  const std::string messages = dir_->file("tools_messages.json"), tools_file = dir_->file("tools.json");
  write(messages, kHello.dump());
  write(tools_file, tools.dump());
  const std::string common = " -m " + model() + " --chat-template " + tools_template() + " --messages " + messages +
                             " --tools " + tools_file;
  const test::CommandResult ids = test::run_staticlm("chat-format" + common + " --ids");
  ASSERT_EQ(ids.exit_code, 0) << ids.err;
  // --ids prints the ids separated by spaces.
  std::istringstream words(ids.out);
  const std::size_t count = std::distance(std::istream_iterator<std::string>(words), std::istream_iterator<std::string>());
  EXPECT_EQ(a["usage"]["prompt_tokens"].get<std::size_t>(), count) << ids.out;
  const test::CommandResult r = test::run_staticlm("run" + common + " -n 8 --temp 0 --max-seq 512 --json");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(a["choices"][0]["message"]["content"], json::parse(r.out).at("text")) << h.body;
  // llama.cpp's /apply-template: the text chat-format renders for the same messages and tools.
  const test::CommandResult text = test::run_staticlm("chat-format" + common);
  ASSERT_EQ(text.exit_code, 0) << text.err;
  const std::string body = with_tools.dump();
  const HttpResult t = http("/apply-template", &body);
  ASSERT_EQ(t.status, 200) << t.body;
  EXPECT_EQ(json::parse(t.body).at("prompt").get<std::string>(), text.out);
  json closed = with_tools;
  closed["add_generation_prompt"] = false;
  const std::string closed_body = closed.dump();
  const test::CommandResult closed_text = test::run_staticlm("chat-format" + common + " --no-generation-prompt");
  ASSERT_EQ(closed_text.exit_code, 0) << closed_text.err;
  const HttpResult c = http("/apply-template", &closed_body);
  ASSERT_EQ(c.status, 200) << c.body;
  EXPECT_EQ(json::parse(c.body).at("prompt").get<std::string>(), closed_text.out);
  EXPECT_NE(closed_text.out, text.out);
  const std::string no_messages = json{{"tools", tools}}.dump();
  const HttpResult m = http("/apply-template", &no_messages);
  EXPECT_EQ(m.status, 400) << m.body;
  EXPECT_EQ(json::parse(m.body)["error"]["param"], "messages") << m.body;
  // The OpenAI paths without /v1 answer as llama.cpp's server does.
  const HttpResult root = http("/chat/completions", &body);
  ASSERT_EQ(root.status, 200) << root.body;
  EXPECT_EQ(json::parse(root.body)["usage"]["prompt_tokens"], a["usage"]["prompt_tokens"]) << root.body;
  EXPECT_EQ(json::parse(get("/models").body), json::parse(get("/v1/models").body));
  // Without tools the prompt is shorter: the template renders the schemas.
  const HttpResult plain = chat(request(kHello));
  ASSERT_EQ(plain.status, 200) << plain.body;
  EXPECT_LT(json::parse(plain.body)["usage"]["prompt_tokens"].get<int>(), a["usage"]["prompt_tokens"].get<int>());
}

TEST_F(ServeTools, BadToolFieldsAre400) {
  for (const auto& [field, value] : std::vector<std::pair<std::string, json>>{
           {"tools", "get_weather"}, {"tools", json::array({1})}, {"tool_choice", "sometimes"}, {"tool_choice", 3}}) {
    json r = request(kHello);
    r[field] = value;
    const HttpResult h = chat(r);
    EXPECT_EQ(h.status, 400) << field << " " << value << ": " << h.body;
    EXPECT_EQ(json::parse(h.body)["error"]["param"].get<std::string>().rfind(field, 0), 0u) << h.body;
  }
}

// OpenAI clients send a call's arguments as a JSON string; the template gets the object (as
// chat-format renders a messages file holding the object), so Gemma's call syntax is used.
TEST_F(ServeTools, ToolCallArgumentsStringsReachTheTemplateAsObjects) {
  auto conversation = [](const json& arguments) {
    return json::array({{{"role", "user"}, {"content", "Weather in Paris?"}},
                        {{"role", "assistant"},
                         {"content", nullptr},
                         {"tool_calls", json::array({{{"id", "c1"},
                                                      {"type", "function"},
                                                      {"function", {{"name", "get_weather"}, {"arguments", arguments}}}}})}},
                        {{"role", "tool"}, {"tool_call_id", "c1"}, {"name", "get_weather"}, {"content", "sunny"}}});
  };
  const json object = {{"city", "Paris"}, {"days", 2}};
  const std::string messages = dir_->file("call_messages.json");
  write(messages, conversation(object).dump());
  const test::CommandResult text = test::run_staticlm("chat-format -m " + model() + " --chat-template " + tools_template() +
                                                      " --messages " + messages);
  ASSERT_EQ(text.exit_code, 0) << text.err;
  EXPECT_NE(text.out.find("call:get_weather{city:<|\"|>Paris<|\"|>,days:2}"), std::string::npos) << text.out;
  for (const json& arguments : {json(object.dump()), object}) {
    const std::string body = json{{"messages", conversation(arguments)}}.dump();
    const HttpResult t = http("/apply-template", &body);
    ASSERT_EQ(t.status, 200) << t.body;
    EXPECT_EQ(json::parse(t.body).at("prompt").get<std::string>(), text.out) << arguments;
  }
  // A string that is not a JSON object reaches the template as it is.
  const std::string loose = json{{"messages", conversation("city=Paris")}}.dump();
  const HttpResult l = http("/apply-template", &loose);
  ASSERT_EQ(l.status, 200) << l.body;
  EXPECT_NE(json::parse(l.body).at("prompt").get<std::string>().find("call:get_weathercity=Paris<tool_call|>"), std::string::npos) << l.body;
  // Malformed calls are refused by name.
  for (const auto& [tool_calls, param] : std::vector<std::pair<json, std::string>>{
           {5, "messages[1].tool_calls"},
           {json::array({7}), "messages[1].tool_calls[0]"},
           {json::array({{{"function", "f"}}}), "messages[1].tool_calls[0].function"},
           {json::array({{{"function", {{"name", 3}}}}}), "messages[1].tool_calls[0].function.name"},
           {json::array({{{"function", {{"name", "f"}, {"arguments", 4}}}}}), "messages[1].tool_calls[0].function.arguments"},
           {json::array({{{"function", {{"name", "f"}, {"arguments", std::string(200, '[')}}}}}),
            "messages[1].tool_calls[0].function.arguments"}}) {
    json m = conversation(object);
    m[1]["tool_calls"] = tool_calls;
    const HttpResult h = chat(request(m));
    EXPECT_EQ(h.status, 400) << tool_calls << ": " << h.body;
    EXPECT_EQ(json::parse(h.body)["error"]["param"], param) << h.body;
  }
}

// Two tools that take only bounded values, so that a random model's forced call closes.
json alarm_tools() {
  return json::parse(R"([
    {"type": "function", "function": {"name": "set_alarm", "parameters": {"type": "object",
      "properties": {"loud": {"type": "boolean"}, "tone": {"enum": ["beep", "ring"]}}, "required": ["loud", "tone"]}}},
    {"type": "function", "function": {"name": "stop_alarm", "parameters": {"type": "object",
      "properties": {"now": {"type": "boolean"}}, "required": ["now"]}}}])");
}

// tool_choice "required" and a named function force calls (a grammar of Gemma 4's call syntax
// over the tools' schemas: tests/unit/text/tool_call_grammar_test.cc); "none" bans the token that
// opens a call.
TEST_F(ServeTools, ToolChoiceForcesOrBansCalls) {
  const json tools = alarm_tools();
  auto ask = [&](const json& choice, const json& extra = json::object()) {
    json r = request(kHello);
    r["tools"] = tools;
    r["max_tokens"] = 48;
    if (!choice.is_null()) r["tool_choice"] = choice;
    r.update(extra);
    return chat(r);
  };
  for (const json& choice : {json("required"), json{{"type", "function"}, {"function", {{"name", "stop_alarm"}}}}}) {
    const HttpResult h = ask(choice, {{"parallel_tool_calls", false}});
    ASSERT_EQ(h.status, 200) << h.body;
    const json c = json::parse(h.body)["choices"][0];
    EXPECT_EQ(c["finish_reason"], "tool_calls") << h.body;
    ASSERT_EQ(c["message"]["tool_calls"].size(), 1u) << h.body;
    const json call = c["message"]["tool_calls"][0]["function"];
    const json args = json::parse(call["arguments"].get<std::string>());
    if (choice.is_object()) {
      EXPECT_EQ(call["name"], "stop_alarm") << h.body;
    }
    if (call["name"] == "set_alarm") {
      EXPECT_TRUE(args["loud"].is_boolean()) << h.body;
      EXPECT_TRUE(args["tone"] == "beep" || args["tone"] == "ring") << h.body;
      EXPECT_EQ(args.size(), 2u) << h.body;
    } else {
      ASSERT_EQ(call["name"], "stop_alarm") << h.body;
      EXPECT_EQ(args.size(), 1u) << h.body;
      EXPECT_TRUE(args["now"].is_boolean()) << h.body;
    }
  }
  // Unconstrained, this random model does not call: "auto" gives the plain answer.
  const HttpResult plain = ask("auto");
  ASSERT_EQ(plain.status, 200) << plain.body;
  EXPECT_EQ(json::parse(plain.body)["choices"][0]["finish_reason"], "length") << plain.body;

  // "none": the call-opening token is banned even where a bias would make it the first token.
  const test::CommandResult id = test::run_staticlm("tokenize -m " + model() + " --text '<|tool_call>'");
  ASSERT_EQ(id.exit_code, 0) << id.err;
  const std::string open = id.out.substr(0, id.out.find_first_of(" \n"));
  const HttpResult favoured = ask("auto", {{"logit_bias", {{open, 50}}}});
  const HttpResult none = ask("none", {{"logit_bias", {{open, 50}}}});
  const HttpResult banned = ask("auto", {{"logit_bias", {{open, false}}}});
  ASSERT_EQ(none.status, 200) << none.body;
  ASSERT_EQ(banned.status, 200) << banned.body;
  const auto message = [](const HttpResult& h) { return json::parse(h.body)["choices"][0]["message"]; };
  EXPECT_EQ(message(none), message(banned));
  EXPECT_NE(message(favoured), message(none)) << favoured.body;

  // Refused by name.
  for (const auto& [choice, extra, param, text] : std::vector<std::tuple<json, json, std::string, std::string>>{
           {"sometimes", json::object(), "tool_choice", "expected \"auto\""},
           {json{{"type", "function"}, {"function", {{"name", "get_time"}}}}, json::object(), "tool_choice",
            "no tool is named \"get_time\" (the tools: set_alarm, stop_alarm)"},
           {json{{"type", "function"}}, json::object(), "tool_choice.function.name", "expected the name"},
           {json{{"type", "tool"}, {"function", {{"name", "set_alarm"}}}}, json::object(), "tool_choice.type", "expected \"function\""},
           {"required", json{{"grammar", "root ::= \"x\""}}, "tool_choice", "cannot be combined with grammar"},
           {"required", json{{"response_format", {{"type", "json_object"}}}}, "tool_choice", "cannot be combined"},
           {"required", json{{"tools", json::array()}}, "tool_choice", "forcing a tool call needs tools"},
           {"required", json{{"parallel_tool_calls", 1}}, "parallel_tool_calls", ""}}) {
    const HttpResult h = ask(choice, extra);
    EXPECT_EQ(h.status, 400) << choice << extra << ": " << h.body;
    EXPECT_EQ(json::parse(h.body)["error"]["param"], param) << h.body;
    EXPECT_NE(json::parse(h.body)["error"]["message"].get<std::string>().find(text), std::string::npos) << h.body;
  }
}

// run --tool-choice is serve's tool_choice: the same calls (and, for none, the same text).
TEST_F(ServeTools, RunToolChoiceGivesServesCalls) {
  const json tools = alarm_tools();
  const std::string messages = dir_->file("choice_messages.json"), tools_file = dir_->file("choice_tools.json");
  write(messages, kHello.dump());
  write(tools_file, tools.dump());
  const test::CommandResult id = test::run_staticlm("tokenize -m " + model() + " --text '<|tool_call>'");
  ASSERT_EQ(id.exit_code, 0) << id.err;
  const std::string open = id.out.substr(0, id.out.find_first_of(" \n"));
  for (const auto& [choice, flag] : std::vector<std::pair<json, std::string>>{
           {"required", "required"}, {json{{"type", "function"}, {"function", {{"name", "set_alarm"}}}}, "set_alarm"}, {"none", "none"}}) {
    json r = request(kHello);
    r["tools"] = tools;
    r["max_tokens"] = 40;
    r["tool_choice"] = choice;
    r["logit_bias"] = {{open, 50}};  // ignored where a call is forced; banned by none
    const HttpResult h = chat(r);
    ASSERT_EQ(h.status, 200) << h.body;
    const json message = json::parse(h.body)["choices"][0]["message"];
    const test::CommandResult run = test::run_staticlm(
        "run -m " + model() + " --chat-template " + tools_template() + " --messages " + messages + " --tools " + tools_file +
        " --tool-choice " + flag + " --logit-bias " + open + "+50 -n 40 --temp 0 --max-seq 512 --json");
    ASSERT_EQ(run.exit_code, 0) << run.err;
    const json reply = json::parse(run.out);
    const json calls = message.contains("tool_calls") ? message["tool_calls"] : json::array();
    ASSERT_EQ(calls.size(), reply["tool_calls"].size()) << h.body << "\n" << run.out;
    for (std::size_t i = 0; i < calls.size(); ++i) {
      EXPECT_EQ(calls[i]["function"]["name"], reply["tool_calls"][i]["function"]["name"]);
      EXPECT_EQ(json::parse(calls[i]["function"]["arguments"].get<std::string>()), reply["tool_calls"][i]["function"]["arguments"]);
    }
    if (flag == "none") {
      EXPECT_TRUE(calls.empty()) << h.body;
      EXPECT_EQ(message["content"], reply["text"]) << h.body << "\n" << run.out;
    } else {
      EXPECT_FALSE(calls.empty()) << h.body;
      if (flag == "set_alarm") {
        EXPECT_EQ(calls[0]["function"]["name"], "set_alarm") << h.body;
      }
    }
  }
  // Refused before the model loads, by flag.
  for (const auto& [flags, text] : std::vector<std::pair<std::string, std::string>>{
           {" --tool-choice get_time", "--tool-choice: no tool is named \"get_time\""},
           {" --tool-choice required --grammar 'root ::= \"x\"'", "give one constraint"},
           {" --tool-choice ''", "--tool-choice: expected the name of one of the tools"}}) {
    const test::CommandResult bad = test::run_staticlm("run -m " + model() + " --messages " + messages + " --tools " + tools_file + flags);
    EXPECT_EQ(bad.exit_code, 2) << flags;
    EXPECT_NE(bad.err.find(text), std::string::npos) << bad.err;
  }
  const test::CommandResult no_tools = test::run_staticlm("run -m " + model() + " --messages " + messages + " --tool-choice none");
  EXPECT_EQ(no_tools.exit_code, 2);
  EXPECT_NE(no_tools.err.find("--tool-choice goes with --tools"), std::string::npos) << no_tools.err;
}

// The text server (max_seq 128 cannot hold the tiny profile's image span) refuses images by name.
TEST_F(Serve, ImagePartsRefusedWhenTheProfileDoesNotFit) {
  const json m = json::array({{{"role", "user"}, {"content", json::array({{{"type", "image_url"}, {"image_url", {{"url", "data:image/png;base64,AAAA"}}}}})}}});
  const HttpResult h = chat(request(m));
  EXPECT_EQ(h.status, 400) << h.body;
  EXPECT_EQ(json::parse(h.body)["error"]["param"], "messages[0].content[0]") << h.body;
  EXPECT_NE(h.body.find("does not take images"), std::string::npos) << h.body;
}

TEST(ServeCli, BadFlagsExit2WithOneLine) {
  test::TempDir d;
  test::make_tiny_model(d.file("m"), 1);
  for (const std::string& flags : std::vector<std::string>{"--slots 0", "--slots two", "-np 0", "--queue -1", "--port 70000", "--threads -3", "--max-body 0"}) {
    const test::CommandResult r = test::run_staticlm("serve -m " + d.file("m") + " " + flags);
    EXPECT_EQ(r.exit_code, 2) << flags << ": " << r.err;
    EXPECT_EQ(r.err.rfind("error: ", 0), 0u) << flags << ": " << r.err;
    EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << flags << ": " << r.err;
    EXPECT_TRUE(r.out.empty()) << flags;
  }
}

}  // namespace
}  // namespace staticlm
