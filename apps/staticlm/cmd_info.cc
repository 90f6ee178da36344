// staticlm info -m DIR [--json]: the config summary, the per-layer table, the parameter
// count and the quantization scheme. Works on a directory holding only config.json; when
// weights are present they are checked against the config, and their dtypes and the bytes one
// decoded token reads are reported. Other checks read --json exactly: "layers" (index, type,
// head_dim, intermediate_size, kv_source), "num_parameters", "quantization_scheme" (a string,
// "none" for a float checkpoint), "weight_dtypes" and "decode_weight_bytes_per_token" (null
// without weights; the same count as bench's key of that name); "weight_matrices" and
// "weight_matrices_on_cache_lines" (model/weight_stats.h) are null without weights too.
#include <cstdio>
#include <iostream>
#include <nlohmann/json.hpp>
#include <string>

#include "commands.h"
#include "model/checkpoint.h"
#include "model/weight_stats.h"
#include "model/weights.h"

namespace staticlm::cli {

namespace {

nlohmann::ordered_json info_json(const Checkpoint& ck) {
  const ModelConfig& c = ck.config();
  const TextConfig& t = c.text;
  const ParameterCount params = count_parameters(c);
  nlohmann::ordered_json j;
  j["model_dir"] = ck.dir();
  j["architecture"] = c.architecture;
  j["model_type"] = c.model_type;
  j["text"] = {{"vocab_size", t.vocab_size},
               {"hidden_size", t.hidden_size},
               {"num_hidden_layers", t.num_hidden_layers},
               {"num_attention_heads", t.num_attention_heads},
               {"num_key_value_heads", t.num_key_value_heads},
               {"head_dim", t.head_dim},
               {"global_head_dim", t.global_head_dim},
               {"intermediate_size", t.intermediate_size},
               {"sliding_window", t.sliding_window},
               {"hidden_size_per_layer_input", t.hidden_size_per_layer_input},
               {"num_kv_shared_layers", t.num_kv_shared_layers},
               {"final_logit_softcapping", t.final_logit_softcapping ? nlohmann::ordered_json(*t.final_logit_softcapping)
                                                                     : nlohmann::ordered_json(nullptr)}};
  if (c.vision) {
    const VisionConfig& v = *c.vision;
    j["vision"] = {{"hidden_size", v.hidden_size},         {"num_hidden_layers", v.num_hidden_layers},
                   {"num_attention_heads", v.num_attention_heads}, {"head_dim", v.head_dim},
                   {"patch_size", v.patch_size},           {"pooling_kernel_size", v.pooling_kernel_size},
                   {"default_output_length", v.default_output_length}};
  } else {
    j["vision"] = nullptr;
  }
  nlohmann::ordered_json layers = nlohmann::ordered_json::array();
  for (const LayerInfo& l : ck.layers()) {
    layers.push_back({{"index", l.index},
                      {"type", l.type},
                      {"head_dim", l.head_dim},
                      {"intermediate_size", l.intermediate_size},
                      {"kv_source", l.kv_source},
                      {"q_width", l.q_width},
                      {"kv_width", l.kv_width},
                      {"rope_type", l.rope_type},
                      {"rope_theta", l.rope_theta}});
  }
  j["layers"] = std::move(layers);
  j["num_parameters"] = params.total();
  j["num_parameters_text"] = params.text;
  j["num_parameters_vision"] = params.vision;
  j["weights"] = ck.has_weights() ? "ok" : "absent";
  j["quantization_scheme"] = quantization_scheme(ck);
  if (ck.has_weights()) {
    j["weight_dtypes"] = weight_dtype_counts(ck.weights());
    j["decode_weight_bytes_per_token"] = decode_weight_bytes(ck);
    const MatrixAlignment lines = matrix_alignment(ck.weights());
    j["weight_matrices"] = lines.matrices;
    j["weight_matrices_on_cache_lines"] = lines.on_cache_lines;
  } else {
    j["weight_dtypes"] = nullptr;
    j["decode_weight_bytes_per_token"] = nullptr;
    j["weight_matrices"] = nullptr;
    j["weight_matrices_on_cache_lines"] = nullptr;
  }
  return j;
}

std::string billions(std::int64_t n) {
  char buf[32];
  if (n >= 1000000000) std::snprintf(buf, sizeof buf, "%.2f B", n / 1e9);
  else std::snprintf(buf, sizeof buf, "%.2f M", n / 1e6);
  return buf;
}

void print_text(const Checkpoint& ck) {
  const ModelConfig& c = ck.config();
  const TextConfig& t = c.text;
  const ParameterCount params = count_parameters(c);
  std::printf("model    %s (%s, model_type %s)\n", ck.dir().c_str(), c.architecture.c_str(), c.model_type.c_str());
  std::printf("text     hidden %lld, %lld layers, %lld heads / %lld kv, head_dim %lld (full %lld), mlp %lld, vocab %lld\n",
              (long long)t.hidden_size, (long long)t.num_hidden_layers, (long long)t.num_attention_heads,
              (long long)t.num_key_value_heads, (long long)t.head_dim, (long long)t.global_head_dim,
              (long long)t.intermediate_size, (long long)t.vocab_size);
  char softcap_buf[32] = "none";
  if (t.final_logit_softcapping) std::snprintf(softcap_buf, sizeof softcap_buf, "%g", *t.final_logit_softcapping);
  const std::string softcap = softcap_buf;
  std::printf("         sliding window %lld, PLE width %lld, %lld KV-shared layers, logit softcap %s\n",
              (long long)t.sliding_window, (long long)t.hidden_size_per_layer_input, (long long)t.num_kv_shared_layers,
              softcap.c_str());
  if (c.vision) {
    const VisionConfig& v = *c.vision;
    std::printf("vision   hidden %lld, %lld layers, %lld heads, head_dim %lld, patch %lld, pooling %lld, %lld soft tokens\n",
                (long long)v.hidden_size, (long long)v.num_hidden_layers, (long long)v.num_attention_heads,
                (long long)v.head_dim, (long long)v.patch_size, (long long)v.pooling_kernel_size,
                (long long)v.default_output_length);
  } else {
    std::printf("vision   none (text-only layout)\n");
  }
  std::printf("params   %s (text %s, vision %s)\n", billions(params.total()).c_str(), billions(params.text).c_str(),
              billions(params.vision).c_str());
  std::printf("weights  %s\n", ck.has_weights() ? "present, match the config" : "absent (config only)");
  std::printf("quant    %s\n", quantization_scheme(ck).c_str());
  if (ck.has_weights()) {
    std::string dtypes;
    for (const auto& [dtype, count] : weight_dtype_counts(ck.weights())) {
      dtypes += (dtypes.empty() ? "" : ", ") + dtype + " " + std::to_string(count);
    }
    std::printf("dtypes   %s (tensors)\n", dtypes.c_str());
    const std::uint64_t bytes = decode_weight_bytes(ck);
    std::printf("decode   %llu bytes of weights per token (%.3f %s)\n", static_cast<unsigned long long>(bytes),
                bytes >= 1e9 ? bytes / 1e9 : bytes / 1e6, bytes >= 1e9 ? "GB" : "MB");
    const MatrixAlignment lines = matrix_alignment(ck.weights());
    std::printf("layout   %d of %d weight matrices start on a 64-byte cache line%s\n", lines.on_cache_lines, lines.matrices,
                lines.on_cache_lines < lines.matrices ? " (rows across lines decode slower; quantize / make-model write them on lines)" : "");
  }
  std::printf("\nlayer  type     head_dim  q/kv width   mlp     rope                 kv\n");
  for (const LayerInfo& l : ck.layers()) {
    const std::string kv = l.owns_kv ? (l.stores_shared_kv ? "own, shared" : "own") : "layer " + std::to_string(l.kv_source);
    const std::string widths = std::to_string(l.q_width) + "/" + (l.owns_kv ? std::to_string(l.kv_width) : "-");
    char rope[64];
    std::snprintf(rope, sizeof rope, "%s %g", l.rope_type.c_str(), l.rope_theta);
    std::printf("%-6d %-8s %-9lld %-12s %-7lld %-20s %s\n", l.index, l.sliding ? "sliding" : "full",
                (long long)l.head_dim, widths.c_str(), (long long)l.intermediate_size, rope, kv.c_str());
  }
}

}  // namespace

void add_info_command(CLI::App& app) {
  auto model = std::make_shared<std::string>();
  auto json = std::make_shared<bool>(false);
  auto* cmd = app.add_subcommand("info", "print a checkpoint's config summary, per-layer table and parameter count");
  cmd->add_option("-m,--model", *model, "checkpoint directory (config.json is enough)")->required();
  cmd->add_flag("--json", *json, "print one JSON object");
  cmd->callback([model, json] {
    auto ck = Checkpoint::open(*model, Checkpoint::Weights::kOptional);
    if (*json) {
      std::cout << info_json(*ck).dump(2) << "\n";
    } else {
      print_text(*ck);
    }
  });
}

}  // namespace staticlm::cli
