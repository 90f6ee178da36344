// What `staticlm serve` runs on, set up in one place: the checkpoint, its tokenizer, the thread
// pool, the back end for the slots' profile (the vision profile when the model takes images),
// the image intake and the serve engine (serve/serve_engine.h). The HTTP front end only parses
// requests against context() and hands them to engine(). Internal to the library (the CLI's).
//
// Ownership and threading: a ServeHost owns all of the above; members are destroyed in reverse
// order, the engine (and its worker thread) first. engine() is thread-safe; the rest is
// read-only once created. Threads are started here, so a caller that wants signals blocked in
// them blocks them before create().
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "backends/backend_factory.h"
#include "base/thread_pool.h"
#include "model/checkpoint.h"
#include "runtime/static_input_builder.h"
#include "serve/serve_engine.h"
#include "staticlm/session.h"
#include "text/tokenizer.h"

namespace staticlm::api {

struct ServeHostOptions {
  std::string model;
  std::string alias;  // the model's name in the API ("": the directory's name)
  int threads = 1;  // workers of the pool (already resolved: > 0)
  int slots = 1, queue = 8;
  std::optional<std::string> config_file;
  std::vector<std::string> sets;
  std::optional<std::int64_t> max_seq;  // wins over the config
  GenerateParams defaults;              // sampling defaults of every request
  // A request without a seed (or with seed -1) draws a random one, as llama-server does when it
  // has no --seed; false: such a request takes defaults.seed.
  bool random_seed = false;
  bool allow_local_files = false;
  bool f32_activations = false;
  bool resident_weights = false;  // CpuBackendOptions::resident_weights (`--no-mmap`)
  std::string chat_template;  // a template file ("" : the checkpoint's own)
  // llama.cpp's --chat-template-kwargs: a JSON object of template variables every chat request
  // gets (under its own chat_template_kwargs); "" for none.
  std::string chat_template_kwargs;
  // llama.cpp's --reasoning-format: what a chat request without reasoning_format gets ("none":
  // thoughts stay in the content; "auto", "deepseek", "deepseek-legacy": reasoning_content).
  std::string reasoning_format = "auto";
  // llama.cpp's --reasoning-budget: -1 leaves thinking to the template's variables, 0 turns it
  // off (enable_thinking=false under --chat-template-kwargs and each request's).
  std::int64_t reasoning_budget = -1;
  BackendChoice backend;
  // Notes for the operator ("staticlm serve: text only: ...", the plug-in placement); null: none.
  std::function<void(const std::string&)> log;
};

class ServeHost {
 public:
  // Throws Error (kInvalidArgument naming the flag, file or value) before any request is taken.
  static std::unique_ptr<ServeHost> create(const ServeHostOptions& options);

  ServeEngine& engine() { return *engine_; }
  const RequestContext& context() const { return context_; }
  const std::string& model_name() const { return model_name_; }  // the alias, else the directory's name
  std::int64_t max_seq() const { return context_.max_seq; }

 private:
  ServeHost() = default;
  std::unique_ptr<Checkpoint> checkpoint_;
  std::unique_ptr<staticlm::Tokenizer> tokenizer_;
  std::unique_ptr<ThreadPool> pool_;
  std::unique_ptr<StaticInputBuilder> builder_;  // with images
  std::unique_ptr<Backend> backend_;
  RequestContext context_;
  std::string model_name_;
  std::unique_ptr<ServeEngine> engine_;
};

}  // namespace staticlm::api
