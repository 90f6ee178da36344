// staticlm backend-check --backend plugin:PATH.so[:k=v,...] -m DIR [--record DIR]
// [--report OUT.json] [-p TEXT | --prompt-ids IDS] [--image F] [--max-seq S] [--config F]
// [--set k=v]... [--decode-steps N] [--tolerance f32|half|q8|q4|npu-w4] [--threads N]
//
// The conformance suite of a back-end plug-in (inspect/backend_check.h, docs/backends.md): the
// plug-in is loaded and checked against the contract, then each graph it provides runs on the
// first call of that graph from a recording (--record DIR, made by `run --record`), or from a
// CPU run of the prompt (prefill, with --image an image prefill, and --decode-steps decode
// steps); every output is compared with the CPU back end's, and the contract checks run.
// Prints a table and one FAIL line per problem naming the graph; exit 0 when every graph
// passes, 1 when one fails, 2 for bad input.
#include <iostream>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "api/backend_check.h"
#include "base/file.h"
#include "commands.h"
#include "threads_option.h"

namespace staticlm::cli {

namespace {

struct BackendCheckArgs {
  api::BackendCheckOptions check;  // every flag but --report and --threads
  std::optional<std::string> report;
  int threads = 0;
};

// A thin adapter over the library's conformance run (api/backend_check.h): flags in, the table
// and report out.
void backend_check_command(const BackendCheckArgs& a) {
  api::BackendCheckOptions o = a.check;
  o.threads = resolve_threads(a.threads);
  o.log = log_to_stderr;
  if (a.report) check_output_file(*a.report);  // before the slow check
  const inspect::BackendCheck check = api::run_backend_check(o);
  std::cout << inspect::format_backend_check(check) << std::flush;
  if (a.report) write_text_atomic(*a.report, inspect::backend_check_json(check).dump(1) + "\n");
  if (!check.pass()) throw CommandExit{1};
}

}  // namespace

void add_backend_check_command(CLI::App& app) {
  auto a = std::make_shared<BackendCheckArgs>();
  auto* cmd = app.add_subcommand("backend-check",
                                 "conformance suite of a back-end plug-in: every graph it provides against the CPU back end");
  cmd->add_option("--backend", a->check.backend, "the plug-in: plugin:PATH.so[:key=value,...]")->required();
  cmd->add_option("-m,--model", a->check.model, "checkpoint directory")->required();
  cmd->add_option("--record", a->check.record, "take the inputs from this recording (run --record DIR)");
  cmd->add_option("--report", a->report, "write the results as JSON");
  cmd->add_option("-p,--prompt", a->check.prompt, "prompt text for a generated run (\"<|image|>\" marks the image)");
  cmd->add_option("--prompt-ids", a->check.prompt_ids, "prompt as comma-separated token ids for a generated run");
  cmd->add_option("--image", a->check.images, "image file (JPEG or PNG) for a generated run");
  cmd->add_option("--max-seq", a->check.max_seq, "static sequence length of a generated run")->check(max_seq_range());
  cmd->add_option("--config", a->check.config_file, "runtime config (YAML) of a generated run");
  cmd->add_option("--set", a->check.sets, "override a runtime config key: key=value (repeatable)");
  cmd->add_option("--decode-steps", a->check.decode_steps, "decode steps of a generated run (default 2)");
  cmd->add_option("--tolerance", a->check.tolerance, "tolerance class of the bounds: f32 (default), half, q8, q4, npu-w4");
  cmd->add_option("-t,--threads", a->threads, "CPU threads of the reference (default 0: one per core)");
  cmd->callback([a] { backend_check_command(*a); });
}

}  // namespace staticlm::cli
