// staticlm: the command-line front end. Errors print "error: <message>" on stderr; bad input
// or usage exits 2, an internal error exits 1.
#include <exception>
#include <iostream>
#include <string>
#include <string_view>

#include "base/error.h"
#include "commands.h"
#include "llama_cpp_flags.h"
#include "staticlm/error.h"
#include "text/utf8.h"

namespace {

// "info, make-model, ...": the subcommands in registration order.
std::string subcommand_names(CLI::App& app) {
  std::string names;
  for (const CLI::App* sub : app.get_subcommands({})) names += (names.empty() ? "" : ", ") + sub->get_name();
  return names;
}

// CLI11 reports a missing or unknown subcommand without naming the valid ones; this names them.
// Returns the message, or "" when argv starts with a known subcommand (or a flag such as --help).
std::string subcommand_problem(CLI::App& app, int argc, char** argv) {
  if (argc < 2) return "a subcommand is required; one of: " + subcommand_names(app);
  const std::string first = argv[1];
  if (first.empty() || first[0] == '-') return "";
  for (const CLI::App* sub : app.get_subcommands({})) {
    if (sub->check_name(first)) return "";
  }
  return "unknown subcommand '" + first + "'; valid subcommands: " + subcommand_names(app);
}

// A path flag given an empty value ("--out ''"), refused before any work: files were written
// nowhere ("--dump-logits ''" silently skipped) or failed after minutes of work with ": cannot
// rename temporary file".
std::string empty_path_problem(int argc, char** argv) {
  static const char* const kPathFlags[] = {"--out", "--report", "--record", "--dump-logits", "-m", "--model", "--config",
                                           "--image", "--messages", "--tools", "--chat-template", "--chat-template-file",
                                           "--tokenizer", "-f", "--file", "--jsonl", "--tokenizer-from", "--reference"};
  for (int i = 1; i < argc; ++i) {
    const std::string_view arg = argv[i];
    for (const char* flag : kPathFlags) {
      const std::string_view f = flag;
      const bool separate = arg == f && i + 1 < argc && argv[i + 1][0] == '\0';
      const bool joined = arg.size() == f.size() + 1 && arg.starts_with(f) && arg.back() == '=';
      if (separate || joined) return std::string(flag) + ": the path is empty";
    }
  }
  return "";
}

// An error is one line on stderr, whatever text it quotes (a template line, a tokenizer pattern,
// a file name): newlines, other control bytes and bytes that are not UTF-8 are written as
// escapes, and a message quoting megabytes (a token, a shape) is cut in its middle.
std::string one_line(std::string_view message) {
  while (!message.empty() && (message.back() == '\n' || message.back() == '\r')) message.remove_suffix(1);
  constexpr std::size_t kHead = 3000, kTail = 1000;
  std::string out;
  static const char* hex = "0123456789abcdef";
  bool cut = message.size() <= kHead + kTail + 100;  // true once nothing is left to cut
  for (std::size_t i = 0; i < message.size();) {
    if (!cut && i >= kHead) {
      cut = true;
      const std::size_t tail = message.size() - kTail;
      out += " [... " + std::to_string(tail - i) + " bytes left out ...] ";
      i = tail;
      while (i < message.size() && (static_cast<unsigned char>(message[i]) & 0xC0) == 0x80) ++i;  // a whole character
      continue;
    }
    const char c = message[i];
    const unsigned char u = static_cast<unsigned char>(c);
    // The well-formed UTF-8 sequence starting here, if one does (0: not one).
    const std::size_t len = static_cast<std::size_t>(staticlm::utf8_sequence_length(u));
    const std::size_t n = i + len <= message.size() && staticlm::is_valid_utf8(message.substr(i, len)) ? len : 0;
    if (c == '\n') {
      out += "\\n";
    } else if (c == '\r') {
      out += "\\r";
    } else if (n == 0 || (u < 0x20 && c != '\t') || u == 0x7f) {
      out += {'\\', 'x', hex[u >> 4], hex[u & 15]};
    } else {
      out.append(message.substr(i, n));
      i += n;
      continue;
    }
    ++i;
  }
  return out;
}

}  // namespace


int main(int argc, char** argv) {
  staticlm::cli::spell_llama_cpp_flags(argc, argv);
  CLI::App app{"staticlm: Gemma 4 E2B through fixed-shape subgraphs, with a host runtime"};
  app.require_subcommand(1);
  app.set_version_flag("--version", "staticlm 0.1.0");
  staticlm::cli::add_info_command(app);
  staticlm::cli::add_make_model_command(app);
  staticlm::cli::add_preprocess_command(app);
  staticlm::cli::add_tokenize_command(app);
  staticlm::cli::add_detokenize_command(app);
  staticlm::cli::add_chat_format_command(app);
  staticlm::cli::add_run_command(app);
  staticlm::cli::add_chat_command(app);
  staticlm::cli::add_serve_command(app);
  staticlm::cli::add_inputs_command(app);
  staticlm::cli::add_bench_command(app);
  staticlm::cli::add_quantize_command(app);
  staticlm::cli::add_quant_report_command(app);
  staticlm::cli::add_replay_command(app);
  staticlm::cli::add_inspect_command(app);
  staticlm::cli::add_backend_check_command(app);
  if (const std::string problem = empty_path_problem(argc, argv); !problem.empty()) {
    std::cerr << "error: " << problem << "\n";
    return 2;
  }
  if (const std::string problem = subcommand_problem(app, argc, argv); !problem.empty()) {
    std::cerr << "error: " << one_line(problem) << "\n";
    return 2;
  }
  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp&) {
    std::cout << app.help();
    return 0;
  } catch (const CLI::CallForAllHelp&) {
    std::cout << app.help("", CLI::AppFormatMode::All);
    return 0;
  } catch (const CLI::CallForVersion& e) {
    std::cout << e.what() << "\n";
    return 0;
  } catch (const CLI::ParseError& e) {
    // Subcommand help (`staticlm info --help`) arrives as CallForHelp from the subcommand too.
    if (e.get_exit_code() == 0) return app.exit(e);
    std::cerr << "error: " << one_line(e.what()) << "\n";
    return 2;
  } catch (const staticlm::cli::CommandExit& e) {
    return e.code;
  } catch (const staticlm::Error& e) {
    std::cerr << "error: " << one_line(e.what()) << "\n";
    return staticlm::exit_code_for(e.kind());
  } catch (const staticlm::api::Error& e) {  // from the library's public API
    std::cerr << "error: " << one_line(e.what()) << "\n";
    return e.code() == staticlm::api::ErrorCode::kInternal ? 1 : 2;
  } catch (const std::bad_alloc&) {
    // What the input asked for (a max_seq, an image, a file) needs more memory than there is:
    // a limit of this machine, not a bug.
    std::cerr << "error: out of memory: the input needs more memory than this machine gives "
                 "(a smaller --max-seq, image or file may fit)\n";
    return 2;
  } catch (const std::exception& e) {
    std::cerr << "error: internal: " << one_line(e.what()) << "\n";
    return 1;
  }
  return 0;
}
