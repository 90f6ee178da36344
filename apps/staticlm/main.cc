// staticlm: the command-line front end. Errors print "error: <message>" on stderr; bad input
// or usage exits 2, an internal error exits 1.
#include <exception>
#include <iostream>

#include "base/error.h"
#include "commands.h"

int main(int argc, char** argv) {
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
    std::cerr << "error: " << e.what() << "\n";
    return 2;
  } catch (const staticlm::cli::CommandExit& e) {
    return e.code;
  } catch (const staticlm::Error& e) {
    std::cerr << "error: " << e.what() << "\n";
    return staticlm::exit_code_for(e.kind());
  } catch (const std::bad_alloc&) {
    std::cerr << "error: out of memory\n";
    return 1;
  } catch (const std::exception& e) {
    std::cerr << "error: internal: " << e.what() << "\n";
    return 1;
  }
  return 0;
}
