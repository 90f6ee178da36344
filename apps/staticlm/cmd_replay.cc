// staticlm replay --record DIR [--graph NAME] [-m MODEL] [--threads N] [--tolerance PEIR]
// [--kernel-target T] [--json] [--report OUT.json]
//
// Runs the calls of a recording (`run --record DIR`; inspect/recorder.h) again on the CPU
// backend, built as recorded (model, profile, bf16 activations, kernel target), and compares each
// output with the recorded one: one row per output (call, graph, output, max|d|, mean|d|, PEIR,
// cosine, bit-exact) and a summary line. --graph NAME replays only that graph, or every graph
// NAME is a prefix of up to a '_' ("decoder_layer_prefill": all prefill layers).
//
// Exit 0: every output bit-exact (or, with --tolerance, within that PEIR); 1: some output is
// not; 2: the recording is refused (missing or malformed index, a call file missing, or missing
// a tensor, or holding one with another dtype or shape than the graph's signature) or a bad flag.
// docs/record-replay.md.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <iostream>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include <nlohmann/json.hpp>

#include "backends/cpu/cpu_backend.h"
#include "backends/cpu/kernels/dispatch.h"
#include "base/error.h"
#include "base/file.h"
#include "base/thread_pool.h"
#include "commands.h"
#include "threads_option.h"
#include "inspect/replay.h"
#include "kernel_target_option.h"
#include "model/checkpoint.h"

namespace staticlm::cli {

namespace {

struct ReplayArgs {
  std::string record;
  std::optional<std::string> graph, model, report, kernel_target;
  std::optional<double> tolerance;
  int threads = 0;
  bool json = false;
};

std::string metric(double v, const char* fmt) {
  if (!std::isfinite(v)) return "nan";
  char buf[32];
  std::snprintf(buf, sizeof buf, fmt, v);
  return buf;
}

void print_row(const inspect::CallReplay& c, const inspect::OutputComparison& o) {
  char buf[256];
  std::snprintf(buf, sizeof buf, "%6lld  %-26s %-22s %10s %10s %10s %10s  %s\n", static_cast<long long>(c.index),
                c.graph.c_str(), o.name.c_str(), metric(o.metrics.max_abs, "%.3e").c_str(),
                metric(o.metrics.mean_abs, "%.3e").c_str(), metric(o.metrics.peir, "%.3e").c_str(),
                metric(o.metrics.cosine, "%.6f").c_str(), o.bit_exact ? "yes" : "no");
  std::cout << buf;
}

// Pins the recorded kernel target when this CPU has it (an explicit --kernel-target wins);
// returns the target the replay runs on.
std::string apply_target(const ReplayArgs& a, const std::string& recorded) {
  if (a.kernel_target) {
    apply_kernel_target(a.kernel_target);
  } else if (!recorded.empty()) {
    const std::vector<std::string> have = cpu::kernel_targets();
    if (std::find(have.begin(), have.end(), recorded) != have.end()) {
      cpu::select_kernel_target(recorded);
    } else {
      std::cerr << "note: the recording ran on kernel target " << recorded << ", which this CPU does not have; "
                << "replaying on " << cpu::kernel_target() << " (outputs may differ in the last bits)\n";
    }
  }
  return cpu::kernel_target();
}

void replay_command(const ReplayArgs& a) {
  if (a.tolerance && (!std::isfinite(*a.tolerance) || *a.tolerance < 0)) {
    invalid_argument("--tolerance: must be a finite PEIR >= 0");
  }
  const inspect::Recording rec = inspect::read_recording(a.record);
  if (rec.setup.backend != "cpu") {
    std::cerr << "note: recorded on the " << rec.setup.backend << " backend; replaying on cpu\n";
  }
  const std::string target = apply_target(a, rec.setup.kernel_target);
  const std::string model = a.model.value_or(rec.setup.model_dir);
  auto ck = Checkpoint::open(model);
  const int threads = resolve_threads(a.threads);
  ThreadPool pool(threads);
  CpuBackendOptions bo;
  bo.pool = &pool;
  bo.bf16_activations = rec.setup.bf16_activations;
  bo.skip_padded_rows = rec.setup.skip_padded_rows;
  auto cpu = CpuBackend::create(*ck, rec.setup.profile, bo);
  const std::vector<inspect::RecordedCallEntry> calls = inspect::select_calls(rec, *cpu, a.graph);

  // Every file is checked before anything runs: a broken recording is refused as a whole.
  for (const auto& c : calls) inspect::open_call_file(path_join(rec.dir, c.file), cpu->signature(c.graph));

  if (!a.json) {
    std::cerr << "replaying " << calls.size() << " of " << rec.calls.size() << " recorded calls from " << rec.dir
              << " on cpu (kernel target " << target << ", model " << model << ")\n";
    char head[256];
    std::snprintf(head, sizeof head, "%6s  %-26s %-22s %10s %10s %10s %10s  %s\n", "call", "graph", "output", "max|d|",
                  "mean|d|", "PEIR", "cosine", "bit-exact");
    std::cout << head;
  }
  std::vector<inspect::CallReplay> results;
  for (const auto& c : calls) {
    const auto f = inspect::open_call_file(path_join(rec.dir, c.file), cpu->signature(c.graph));
    results.push_back(inspect::replay_call(*cpu, c, *f));
    if (!a.json) {
      for (const auto& o : results.back().outputs) print_row(results.back(), o);
    }
  }

  const nlohmann::json report = inspect::replay_report_json(rec, model, "cpu", target, results, a.tolerance);
  if (a.report) write_text_atomic(*a.report, report.dump(1) + "\n");
  if (a.json) std::cout << report.dump(1) << "\n";

  const auto& s = report.at("summary");
  const std::int64_t outputs = s.at("outputs"), exact = s.at("bit_exact"), failed = s.at("failed");
  std::string line = "replayed " + std::to_string(results.size()) + " calls, " + std::to_string(outputs) +
                     " outputs: " + std::to_string(exact) + " bit-exact";
  if (a.tolerance) line += ", " + std::to_string(outputs - failed) + " within PEIR " + metric(*a.tolerance, "%g");
  if (failed == 0) {
    line += "; pass";
  } else {
    line += "; FAIL: " + std::to_string(failed) + " output" + (failed == 1 ? "" : "s") +
            (a.tolerance ? " over the tolerance" : " not bit-exact") + " (";
    int shown = 0;
    for (const auto& c : results) {
      for (const auto& o : c.outputs) {
        if (inspect::output_passes(o, a.tolerance)) continue;
        if (shown < 5) line += (shown ? ", " : "") + ("call " + std::to_string(c.index) + " " + c.graph + " " + o.name);
        ++shown;
      }
    }
    line += shown > 5 ? ", ...)" : ")";
  }
  (a.json ? std::cerr : std::cout) << line << "\n";
  if (failed > 0) throw CommandExit{1};
}

}  // namespace

void add_replay_command(CLI::App& app) {
  auto a = std::make_shared<ReplayArgs>();
  auto* cmd = app.add_subcommand("replay", "run a recording's subgraph calls (run --record) again and compare outputs");
  cmd->add_option("--record", a->record, "recording directory (holds index.json)")->required();
  cmd->add_option("--graph", a->graph,
                  "replay only this graph, or the graphs it is a prefix of up to '_' (decoder_layer_prefill: all "
                  "prefill layers)");
  cmd->add_option("-m,--model", a->model, "checkpoint directory (default: the one recorded)");
  cmd->add_option("--threads", a->threads, "CPU threads for the subgraphs (default 0: one per core)");
  cmd->add_option("--tolerance", a->tolerance,
                  "pass an output within this PEIR (default: every output must be bit-exact)");
  add_kernel_target_option(*cmd, a->kernel_target);
  cmd->add_flag("--json", a->json, "print the report as JSON instead of the table");
  cmd->add_option("--report", a->report, "also write the report as JSON to this file");
  cmd->callback([a] { replay_command(*a); });
}

}  // namespace staticlm::cli
