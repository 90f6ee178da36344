// staticlm bench -m DIR [-p N] [-n N] [--max-seq S] [--threads T] [--json]: prefill and decode
// speed of the CPU backend on a checkpoint, next to the machine's measured memory bandwidth.
// Decode reads every text weight once per token (the tied LM head included; of the per-layer
// embedding table one row), so bytes-per-token x tok/s over the bandwidth says how close
// decoding runs to the memory limit.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <iostream>
#include <nlohmann/json.hpp>
#include <string>
#include <thread>
#include <vector>

#include "backends/cpu/cpu_backend.h"
#include "base/bandwidth.h"
#include "base/error.h"
#include "base/thread_pool.h"
#include "commands.h"
#include "model/checkpoint.h"
#include "runtime/runtime.h"

namespace staticlm::cli {

namespace {

struct BenchArgs {
  std::string model;
  std::int64_t prompt_len = 32;
  std::int64_t decode_tokens = 16;
  std::int64_t max_seq = 256;
  int threads = 0;
  bool json = false;
};

// Bytes of weights one decode step reads: every text tensor except the per-layer embedding
// table, of which it reads one row.
std::uint64_t decode_weight_bytes(const Checkpoint& ck) {
  const std::string prefix = ck.config().text_prefix();
  const auto& store = ck.weights();
  std::uint64_t bytes = 0;
  for (const std::string& name : store.names()) {
    if (name.rfind(prefix, 0) != 0) continue;
    const TensorView v = store.get(name);
    if (name == prefix + "embed_tokens_per_layer.weight") {
      bytes += v.nbytes() / static_cast<std::uint64_t>(std::max<std::int64_t>(1, v.shape[0]));
    } else {
      bytes += v.nbytes();
    }
  }
  return bytes;
}

double seconds_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

void run_bench(const BenchArgs& a) {
  if (a.prompt_len < 1) invalid_argument("-p " + std::to_string(a.prompt_len) + ": the prompt needs at least 1 token");
  if (a.decode_tokens < 1) invalid_argument("-n " + std::to_string(a.decode_tokens) + ": must be at least 1");
  if (a.prompt_len + a.decode_tokens > a.max_seq - 1) {
    invalid_argument("bench: -p " + std::to_string(a.prompt_len) + " plus -n " + std::to_string(a.decode_tokens) +
                     " tokens do not fit max_seq " + std::to_string(a.max_seq) + " (one slot is kept); raise --max-seq");
  }
  auto ck = Checkpoint::open(a.model);
  const int threads = a.threads > 0 ? a.threads : std::max(1, static_cast<int>(std::thread::hardware_concurrency()));
  ThreadPool pool(threads);
  std::fprintf(stderr, "bench: measuring memory read bandwidth...\n");
  const double bandwidth = measure_read_bandwidth(pool);

  SubgraphProfile profile;
  profile.max_seq = a.max_seq;
  CpuBackendOptions bo;
  bo.pool = &pool;
  auto backend = CpuBackend::create(*ck, profile, bo);
  auto runtime = Runtime::create(*backend, ck->config(), ck->layers());

  // A fixed prompt of ordinary text ids after <bos>; speed does not depend on which ids.
  std::vector<std::int64_t> prompt(static_cast<std::size_t>(a.prompt_len));
  prompt[0] = ck->config().text.bos_token_id;
  for (std::size_t i = 1; i < prompt.size(); ++i) prompt[i] = 1000 + static_cast<std::int64_t>(i);

  auto t0 = std::chrono::steady_clock::now();
  auto logits = runtime->prefill_tokens(prompt);
  const double prefill_s = seconds_since(t0);
  std::int64_t token = std::max_element(logits.begin(), logits.end()) - logits.begin();
  t0 = std::chrono::steady_clock::now();
  for (std::int64_t i = 0; i < a.decode_tokens; ++i) {
    logits = runtime->decode(token);
    token = std::max_element(logits.begin(), logits.end()) - logits.begin();
  }
  const double decode_s = seconds_since(t0);

  const double prefill_tps = a.prompt_len / prefill_s, decode_tps = a.decode_tokens / decode_s;
  const std::uint64_t bytes = decode_weight_bytes(*ck);
  const double achieved = decode_tps * static_cast<double>(bytes) / 1e9;
  if (a.json) {
    nlohmann::ordered_json j = {{"model_dir", a.model},
                                {"threads", threads},
                                {"max_seq", a.max_seq},
                                {"read_bandwidth_gb_s", bandwidth},
                                {"prompt_tokens", a.prompt_len},
                                {"prefill_seconds", prefill_s},
                                {"prefill_tok_s", prefill_tps},
                                {"decode_tokens", a.decode_tokens},
                                {"decode_seconds", decode_s},
                                {"decode_tok_s", decode_tps},
                                {"decode_weight_bytes_per_token", bytes},
                                {"decode_gb_s", achieved},
                                {"decode_fraction_of_bandwidth", achieved / bandwidth}};
    std::cout << j.dump(2) << "\n";
    return;
  }
  std::printf("bench    %s, %d threads, max_seq %lld\n", a.model.c_str(), threads, static_cast<long long>(a.max_seq));
  std::printf("memory   read bandwidth %.1f GB/s (measured)\n", bandwidth);
  std::printf("prefill  %lld tokens in %.3f s: %.2f tok/s\n", static_cast<long long>(a.prompt_len), prefill_s, prefill_tps);
  std::printf("decode   %lld tokens in %.3f s: %.2f tok/s; %.3f GB of weights per token -> %.2f GB/s, %.0f%% of the "
              "measured bandwidth\n",
              static_cast<long long>(a.decode_tokens), decode_s, decode_tps, bytes / 1e9, achieved,
              100.0 * achieved / bandwidth);
}

}  // namespace

void add_bench_command(CLI::App& app) {
  auto a = std::make_shared<BenchArgs>();
  auto* cmd = app.add_subcommand("bench", "measure prefill and decode speed against the machine's memory bandwidth");
  cmd->add_option("-m,--model", a->model, "checkpoint directory")->required();
  cmd->add_option("-p,--prompt-len", a->prompt_len, "prompt tokens to prefill")->capture_default_str();
  cmd->add_option("-n,--decode-tokens", a->decode_tokens, "tokens to decode")->capture_default_str();
  cmd->add_option("--max-seq", a->max_seq, "static sequence length")->capture_default_str();
  cmd->add_option("--threads", a->threads, "threads (default: one per hardware thread)");
  cmd->add_flag("--json", a->json, "print one JSON object");
  cmd->callback([a] { run_bench(*a); });
}

}  // namespace staticlm::cli
