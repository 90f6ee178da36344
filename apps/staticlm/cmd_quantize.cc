// staticlm quantize -m DIR --scheme q8|q4|npu-w4 --out DIR2 [--threads N]: the checkpoint with quantized weights
// (quant/quantize_checkpoint.h, docs/quantization.md); progress on stderr.
#include <cstdio>
#include <memory>
#include <string>
#include <thread>
#include <algorithm>

#include "commands.h"
#include "quant/quantize_checkpoint.h"

namespace staticlm::cli {

void add_quantize_command(CLI::App& app) {
  auto o = std::make_shared<quant::QuantizeOptions>();
  auto* cmd = app.add_subcommand("quantize", "write a copy of a checkpoint with q8, q4 or npu-w4 weights");
  cmd->add_option("-m,--model", o->model_dir, "checkpoint directory")->required();
  cmd->add_option("--scheme", o->scheme,
                  "q8 (int8 per output channel), q4 (int4, groups of 32) or npu-w4 (uint4 / uint8 asymmetric "
                  "per output channel, the NPU recipe)")
      ->required();
  o->threads = std::max(1, static_cast<int>(std::thread::hardware_concurrency()));
  cmd->add_option("-t,--threads", o->threads, "threads (default: the CPUs this process may use)")
      ->check(CLI::Range(1, 1024));
  cmd->add_option("--out", o->out_dir, "output directory")->required();
  cmd->callback([o] {
    int last = -1;
    o->progress = [&last](std::uint64_t done, std::uint64_t total) {
      const int pct = total ? static_cast<int>(100 * done / total) : 100;
      if (pct / 5 != last / 5) std::fprintf(stderr, "\rquantize: %3d%% (%.2f of %.2f GB)", pct, done / 1e9, total / 1e9);
      last = pct;
    };
    const quant::QuantizeReport r = quant::quantize_checkpoint(*o);
    std::fprintf(stderr, "\nquantize: %s: %d tensors quantized, %d kept; %.3f GB -> %.3f GB in %s\n", o->scheme.c_str(),
                 r.quantized, r.kept, r.bytes_in / 1e9, r.bytes_out / 1e9, o->out_dir.c_str());
  });
}

}  // namespace staticlm::cli
