// Each subcommand lives in its own file and registers itself on the CLI11 app here.
#pragma once

#include <CLI/CLI.hpp>
#include <cstdint>
#include <string>

namespace staticlm::cli {

void add_info_command(CLI::App& app);
void add_bench_command(CLI::App& app);
void add_make_model_command(CLI::App& app);
void add_preprocess_command(CLI::App& app);
void add_tokenize_command(CLI::App& app);
void add_detokenize_command(CLI::App& app);
void add_chat_format_command(CLI::App& app);
void add_run_command(CLI::App& app);
void add_chat_command(CLI::App& app);
void add_serve_command(CLI::App& app);
void add_inputs_command(CLI::App& app);
void add_quantize_command(CLI::App& app);
void add_quant_report_command(CLI::App& app);
void add_replay_command(CLI::App& app);
void add_inspect_command(CLI::App& app);
void add_backend_check_command(CLI::App& app);

// The library's progress lines (the `log` callbacks of its options) as the CLI shows them: on
// stderr, one per line.
void log_to_stderr(const std::string& line);

// --max-seq's range, checked on the text as typed (0 and 99999999999999999999 are named as the
// user wrote them, not as a --set or a clamped integer); the model's max_position_embeddings
// is checked later against the value.
inline CLI::Range max_seq_range() { return CLI::Range(std::int64_t{1}, std::int64_t{1} << 31, "a sequence length"); }

// Thrown by a command that did its work and printed its result, but must exit with this code
// (replay: an output that differs); main prints nothing more.
struct CommandExit {
  int code = 1;
};

}  // namespace staticlm::cli
