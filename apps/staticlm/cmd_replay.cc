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
#include <cmath>
#include <cstdio>
#include <iostream>
#include <optional>
#include <string>

#include <nlohmann/json.hpp>

#include "api/replay.h"
#include "base/file.h"
#include "commands.h"
#include "kernel_target_option.h"
#include "threads_option.h"

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

// A thin adapter over the library's replay (api/replay.h): flags in, the table and report out.
void replay_command(const ReplayArgs& a) {
  api::ReplayOptions o;
  o.record = a.record;
  o.graph = a.graph;
  o.model = a.model;
  o.kernel_target = a.kernel_target;
  o.tolerance = a.tolerance;
  o.threads = resolve_threads(a.threads);
  o.log = log_to_stderr;
  const auto on_start = [&a](const api::ReplayPlan& p) {
    if (a.json) return;
    std::cerr << "replaying " << p.selected << " of " << p.recorded << " recorded calls from " << p.dir
              << " on cpu (kernel target " << p.target << ", model " << p.model << ")\n";
    char head[256];
    std::snprintf(head, sizeof head, "%6s  %-26s %-22s %10s %10s %10s %10s  %s\n", "call", "graph", "output", "max|d|",
                  "mean|d|", "PEIR", "cosine", "bit-exact");
    std::cout << head;
  };
  const auto on_call = [&a](const inspect::CallReplay& c) {
    if (a.json) return;
    for (const auto& out : c.outputs) print_row(c, out);
  };
  const api::ReplayResult replayed = api::replay(o, on_start, on_call);
  const std::vector<inspect::CallReplay>& results = replayed.calls;
  const nlohmann::json& report = replayed.report;
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
  cmd->add_option("-t,--threads", a->threads, "CPU threads for the subgraphs (default 0: one per core)");
  cmd->add_option("--tolerance", a->tolerance,
                  "pass an output within this PEIR (default: every output must be bit-exact)");
  add_kernel_target_option(*cmd, a->kernel_target);
  cmd->add_flag("--json", a->json, "print the report as JSON instead of the table");
  cmd->add_option("--report", a->report, "also write the report as JSON to this file");
  cmd->callback([a] { replay_command(*a); });
}

}  // namespace staticlm::cli
