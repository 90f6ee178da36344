// staticlm quant-report -m BASE -q QUANT [--prompts FILE] [--max-seq N] [--threads N] [--json]
// [--out REPORT.md]: how far a quantized checkpoint is from its base (quant/accuracy.h):
// per-tensor weight SQNR, and logits teacher-forced over a prompt set (NMSE, max |diff|, top-1
// agreement). Progress on stderr; --out writes the same as a markdown report with the command.
#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdio>
#include <iostream>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "base/error.h"
#include "base/file.h"
#include "commands.h"
#include "threads_option.h"
#include "quant/accuracy.h"
#include "text/utf8.h"

namespace staticlm::cli {

namespace {

struct QuantReportArgs {
  std::string base, quant;
  std::optional<std::string> prompts_file;
  std::int64_t max_seq = 0;
  int threads = 0;
  bool json = false;
  std::optional<std::string> out;
};

constexpr std::size_t kWorst = 5;

// One prompt per line; blank lines skipped.
std::vector<std::string> read_prompts(const std::string& path) {
  std::vector<std::string> prompts;
  std::istringstream in(read_file(path));
  int number = 0;
  for (std::string line; std::getline(in, line);) {
    ++number;
    if (!line.empty() && line.back() == '\r') line.pop_back();
    if (const std::size_t bad = utf8_first_invalid(line); bad != std::string::npos) {
      invalid_argument("--prompts " + path + ":" + std::to_string(number) + ": not valid UTF-8 (bad byte at offset " +
                       std::to_string(bad) + ")");
    }
    if (!line.empty()) prompts.push_back(line);
  }
  if (prompts.empty()) invalid_argument("--prompts " + path + ": no prompts (one per line)");
  return prompts;
}

// An argument as a shell reads it back: single-quoted unless plain.
std::string shell_quote(const std::string& s) {
  const bool plain = !s.empty() && std::all_of(s.begin(), s.end(), [](char c) {
    return std::isalnum(static_cast<unsigned char>(c)) || std::string("_./-=,:+").find(c) != std::string::npos;
  });
  if (plain) return s;
  std::string q = "'";
  for (char c : s) q += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return q + "'";
}

// The command as given (options at their defaults left out).
std::string command_line(const QuantReportArgs& a) {
  std::string c = "staticlm quant-report -m " + shell_quote(a.base) + " -q " + shell_quote(a.quant);
  if (a.prompts_file) c += " --prompts " + shell_quote(*a.prompts_file);
  if (a.max_seq > 0) c += " --max-seq " + std::to_string(a.max_seq);
  if (a.threads > 0) c += " --threads " + std::to_string(a.threads);
  if (a.json) c += " --json";
  if (a.out) c += " --out " + shell_quote(*a.out);
  return c;
}

// Indices of the tensors with the lowest SQNR, worst first.
std::vector<std::size_t> worst_tensors(const std::vector<quant::TensorSqnr>& t) {
  std::vector<std::size_t> order(t.size());
  for (std::size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::stable_sort(order.begin(), order.end(), [&t](std::size_t a, std::size_t b) { return t[a].sqnr_db < t[b].sqnr_db; });
  order.resize(std::min(order.size(), kWorst));
  return order;
}

std::string fmt(const char* format, double v) {
  char buf[64];
  std::snprintf(buf, sizeof buf, format, v);
  return buf;
}

std::string db(double v) { return std::isinf(v) && v > 0 ? "exact" : fmt("%.2f dB", v); }

// JSON has no infinity: an exact tensor's SQNR is null.
nlohmann::ordered_json db_json(double v) { return std::isfinite(v) ? nlohmann::ordered_json(v) : nullptr; }

nlohmann::ordered_json logits_json(const quant::LogitsAgreement& l) {
  return {{"positions", l.positions},      {"nmse", l.nmse()},         {"max_abs_diff", l.max_abs_diff},
          {"top1_agreement", l.top1()}, {"top1_same", l.top1_same}};
}

nlohmann::ordered_json report_json(const QuantReportArgs& a, const quant::AccuracyReport& r) {
  const quant::SqnrSummary s = quant::summarize_sqnr(r.tensors);
  nlohmann::ordered_json tensors = nlohmann::ordered_json::array();
  for (const quant::TensorSqnr& t : r.tensors) {
    tensors.push_back({{"name", t.name},
                       {"base_dtype", t.base_dtype},
                       {"quant_dtype", t.quant_dtype},
                       {"elements", t.elements},
                       {"sqnr_db", db_json(t.sqnr_db)}});
  }
  nlohmann::ordered_json worst = nlohmann::ordered_json::array();
  for (std::size_t i : worst_tensors(r.tensors)) worst.push_back(r.tensors[i].name);
  nlohmann::ordered_json prompts = nlohmann::ordered_json::array();
  for (const quant::PromptResult& p : r.prompts) {
    nlohmann::ordered_json j = {{"prompt", p.text}, {"tokens", p.tokens}};
    j.update(logits_json(p.logits));
    prompts.push_back(std::move(j));
  }
  nlohmann::ordered_json logits = logits_json(r.overall);
  logits["prompts"] = std::move(prompts);
  return {{"command", command_line(a)},
          {"base_dir", a.base},
          {"quant_dir", a.quant},
          {"base_scheme", r.base_scheme},
          {"quant_scheme", r.quant_scheme},
          {"max_seq", r.max_seq},
          {"weights",
           {{"tensors_differing", r.tensors.size()},
            {"tensors_exact", s.exact},
            {"sqnr_db_min", s.tensors ? nlohmann::ordered_json(s.min_db) : nullptr},
            {"sqnr_db_median", s.tensors ? nlohmann::ordered_json(s.median_db) : nullptr},
            {"sqnr_db_mean", s.tensors ? nlohmann::ordered_json(s.mean_db) : nullptr},
            {"worst", std::move(worst)},
            {"tensors", std::move(tensors)}}},
          {"logits", std::move(logits)}};
}

std::string top1_text(const quant::LogitsAgreement& l) {
  return fmt("%.1f%%", 100.0 * l.top1()) + " (" + std::to_string(l.top1_same) + " of " +
         std::to_string(l.positions) + ")";
}

std::string summary_text(const quant::SqnrSummary& s) {
  if (s.tensors == 0) return "none lossy";
  return "min " + db(s.min_db) + ", median " + db(s.median_db) + ", mean " + db(s.mean_db);
}

void print_text(const QuantReportArgs& a, const quant::AccuracyReport& r) {
  const quant::SqnrSummary s = quant::summarize_sqnr(r.tensors);
  std::printf("base     %s (%s)\n", a.base.c_str(), r.base_scheme.c_str());
  std::printf("quant    %s (%s)\n", a.quant.c_str(), r.quant_scheme.c_str());
  std::printf("weights  %zu tensors differ (%d exactly equal in value); SQNR %s\n", r.tensors.size(), s.exact,
              summary_text(s).c_str());
  for (std::size_t i : worst_tensors(r.tensors)) {
    const quant::TensorSqnr& t = r.tensors[i];
    std::printf("  worst  %-10s %s (%s -> %s)\n", db(t.sqnr_db).c_str(), t.name.c_str(), t.base_dtype.c_str(),
                t.quant_dtype.c_str());
  }
  std::printf("logits   %zu prompts, %lld positions teacher-forced (max_seq %lld): NMSE %.3g, max |diff| %.4g, "
              "top-1 agreement %s\n",
              r.prompts.size(), static_cast<long long>(r.overall.positions), static_cast<long long>(r.max_seq),
              r.overall.nmse(), r.overall.max_abs_diff, top1_text(r.overall).c_str());
  std::printf("\nprompt  tokens  NMSE        max|diff|   top-1   text\n");
  for (std::size_t i = 0; i < r.prompts.size(); ++i) {
    const quant::PromptResult& p = r.prompts[i];
    std::printf("%-7zu %-7lld %-11.3g %-11.4g %-7s %s\n", i + 1, static_cast<long long>(p.tokens), p.logits.nmse(),
                p.logits.max_abs_diff, fmt("%.1f%%", 100.0 * p.logits.top1()).c_str(), p.text.c_str());
  }
}

// A prompt inside a markdown table cell.
std::string md_cell(const std::string& s) {
  std::string out;
  for (char c : s) out += c == '|' ? std::string("\\|") : std::string(1, c);
  return out;
}

std::string report_markdown(const QuantReportArgs& a, const quant::AccuracyReport& r) {
  const quant::SqnrSummary s = quant::summarize_sqnr(r.tensors);
  std::ostringstream md;
  md << "# Quantization accuracy: " << r.quant_scheme << " against " << r.base_scheme << "\n\n";
  md << "```\n" << command_line(a) << "\n```\n\n";
  md << "| | |\n| --- | --- |\n";
  md << "| base | `" << a.base << "` (" << r.base_scheme << ") |\n";
  md << "| quantized | `" << a.quant << "` (" << r.quant_scheme << ") |\n";
  md << "| tensors that differ | " << r.tensors.size() << " (" << s.exact << " exactly equal in value) |\n";
  md << "| weight SQNR | " << summary_text(s) << " |\n";
  md << "| prompts, positions | " << r.prompts.size() << ", " << r.overall.positions << " (teacher-forced, max_seq "
     << r.max_seq << ") |\n";
  md << "| logits NMSE | " << fmt("%.3g", r.overall.nmse()) << " |\n";
  md << "| logits max \\|diff\\| | " << fmt("%.4g", r.overall.max_abs_diff) << " |\n";
  md << "| top-1 agreement | " << top1_text(r.overall) << " |\n\n";
  md << "Lowest weight SQNR:\n\n| tensor | dtype | SQNR |\n| --- | --- | --- |\n";
  for (std::size_t i : worst_tensors(r.tensors)) {
    const quant::TensorSqnr& t = r.tensors[i];
    md << "| `" << t.name << "` | " << t.base_dtype << " -> " << t.quant_dtype << " | " << db(t.sqnr_db) << " |\n";
  }
  md << "\nPer prompt:\n\n| # | tokens | NMSE | max \\|diff\\| | top-1 | prompt |\n"
     << "| --- | --- | --- | --- | --- | --- |\n";
  for (std::size_t i = 0; i < r.prompts.size(); ++i) {
    const quant::PromptResult& p = r.prompts[i];
    md << "| " << i + 1 << " | " << p.tokens << " | " << fmt("%.3g", p.logits.nmse()) << " | "
       << fmt("%.4g", p.logits.max_abs_diff) << " | " << top1_text(p.logits) << " | " << md_cell(p.text) << " |\n";
  }
  return md.str();
}

void run_quant_report(const QuantReportArgs& a) {
  if (a.max_seq < 0) invalid_argument("--max-seq " + std::to_string(a.max_seq) + ": must be positive (0: fit the prompts)");
  quant::AccuracyOptions o;
  o.base_dir = a.base;
  o.quant_dir = a.quant;
  if (a.prompts_file) o.prompts = read_prompts(*a.prompts_file);
  o.max_seq = a.max_seq;
  o.threads = resolve_threads(a.threads);
  o.progress = [](const std::string& line) { std::fprintf(stderr, "quant-report: %s\n", line.c_str()); };
  if (a.out) check_output_file(*a.out);  // before the slow report
  const quant::AccuracyReport r = quant::accuracy_report(o);
  if (a.json) {
    std::cout << report_json(a, r).dump(2) << "\n";
  } else {
    print_text(a, r);
  }
  if (a.out) write_text_atomic(*a.out, report_markdown(a, r));
}

}  // namespace

void add_quant_report_command(CLI::App& app) {
  auto a = std::make_shared<QuantReportArgs>();
  auto* cmd = app.add_subcommand("quant-report", "compare a quantized checkpoint with its base: weight SQNR and "
                                                 "teacher-forced logits over a prompt set");
  cmd->add_option("-m,--model", a->base, "base checkpoint directory")->required();
  cmd->add_option("-q,--quantized", a->quant, "quantized checkpoint directory (staticlm quantize)")->required();
  cmd->add_option("--prompts", a->prompts_file, "prompts, one per line (default: 8 built-in English prompts)");
  cmd->add_option("--max-seq", a->max_seq, "static sequence length (default: the longest prompt plus one)")
      ->check(max_seq_range());
  cmd->add_option("-t,--threads", a->threads, "threads (default: one per hardware thread)");
  cmd->add_flag("--json", a->json, "print one JSON object");
  cmd->add_option("--out", a->out, "also write the report as markdown to this file");
  cmd->callback([a] { run_quant_report(*a); });
}

}  // namespace staticlm::cli
