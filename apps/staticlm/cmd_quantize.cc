// staticlm quantize -m DIR --scheme q8|q4 --out DIR2: the checkpoint with quantized weights
// (quant/quantize_checkpoint.h, docs/quantization.md); progress on stderr.
#include <cstdio>
#include <memory>
#include <string>

#include "commands.h"
#include "quant/quantize_checkpoint.h"

namespace staticlm::cli {

void add_quantize_command(CLI::App& app) {
  auto o = std::make_shared<quant::QuantizeOptions>();
  auto* cmd = app.add_subcommand("quantize", "write a copy of a checkpoint with q8 or q4 weights");
  cmd->add_option("-m,--model", o->model_dir, "checkpoint directory")->required();
  cmd->add_option("--scheme", o->scheme, "q8 (int8 per output channel) or q4 (int4, groups of 32)")->required();
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
