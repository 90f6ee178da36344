// staticlm bench -m DIR [-p N] [-n N] [-r N] [--max-seq S] [--threads T] [--image-encode] [--json | -o FMT]
// [--backend cpu|plugin:PATH.so[:k=v,...]] [--fallback none|cpu]:
// prefill and decode speed of the CPU backend on a checkpoint, each next to a ceiling measured
// in the same run. Decode reads every text weight once per token (the tied LM head included; of
// the per-layer embedding table one row), so bytes-per-token x tok/s over the read bandwidth
// says how close decoding runs to the memory limit. Prefill (and, with --image-encode, one
// vision_prefill over a full patch grid) is compute-bound: its flops (model/flops.h) per second
// over the measured f32 FMA and bf16 dot-product peaks say how close it runs to the compute limit.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "api/bench.h"
#include "backends/cpu/kernels/dispatch.h"
#include "base/error.h"
#include "base/median.h"
#include "backend_option.h"
#include "commands.h"
#include "count_list.h"
#include "kernel_target_option.h"
#include "llama_cpp_flags.h"
#include "model/config.h"
#include "threads_option.h"

namespace staticlm::cli {

namespace {

struct BenchArgs {
  std::vector<std::string> models;  // -m, each given
  std::string model;                // the one measured now
  // llama-bench's list flags as typed (count_list.h); one value each, and no -pg, keeps the one
  // run of prompt_len then decode_tokens on `threads` threads.
  std::vector<std::string> prompt_lens{"512"}, decode_lens{"32"}, thread_counts{"0"}, prompt_gen, depths{"0"};
  std::int64_t prompt_len = 512;
  std::int64_t decode_tokens = 32;
  std::int64_t max_seq = 1024;
  int threads = 0;
  int repetitions = 1;
  bool no_warmup = false;
  bool image_encode = false;
  bool json = false;
  std::string output = "text";  // llama-bench's -o: text, json, jsonl, md, csv or sql
  bool f32_activations = false;
  bool resident_weights = false;
  std::optional<std::string> kernel_target;
  BackendChoice backend;
};

std::string percent(double fraction) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.1f%%", 100.0 * fraction);
  return buf;
}

// The mean and the sample standard deviation (0 for one value).
std::pair<double, double> mean_and_sd(const std::vector<double>& x) {
  const double n = static_cast<double>(x.size());
  double sum = 0, sq = 0;
  for (const double v : x) sum += v;
  const double mean = sum / n;
  for (const double v : x) sq += (v - mean) * (v - mean);
  return {mean, x.size() > 1 ? std::sqrt(sq / (n - 1)) : 0.0};
}

// Tokens per second of each run: their mean and sample deviation are what llama-bench reports.
std::vector<double> rates(std::int64_t tokens, const std::vector<double>& seconds) {
  std::vector<double> tps;
  for (const double s : seconds) tps.push_back(static_cast<double>(tokens) / s);
  return tps;
}

// The weight bytes a decode step reads over the median step's seconds, in GB/s (0 without steps).
double median_step_gb_s(std::uint64_t bytes, const std::vector<double>& steps) {
  const double step = median(steps);
  return step > 0 ? static_cast<double>(bytes) / step / 1e9 : 0.0;
}

std::string plus_minus(const std::vector<double>& x) {
  const auto [mean, sd] = mean_and_sd(x);
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.2f ± %.2f", mean, sd);
  return buf;
}

// What the table says of the model: its name and scheme, the safetensors bytes, the parameters
// and the back end.
struct ModelColumns {
  std::string model, size, params, backend;
  std::uintmax_t size_bytes = 0;
};

// A row of llama-bench's table: a test (ppN: prefill of N tokens, tgN: decoding N, ppN+tgM
// both, imgN: encoding an image into N tokens) of a model on `threads` threads, its t/s per run,
// and the share of the ceiling this run measured (the compute ceiling for pp and img: the AMX
// bf16 peak where the GEMMs ran on AMX, else the f32 FMA peak; the read
// bandwidth for tg's median step; none for pp+tg).
struct TableRow {
  ModelColumns model;
  int threads = 0;
  std::string test;
  std::int64_t n_prompt = 0, n_gen = 0, n_depth = 0;
  std::vector<double> rates;
  bool one_run = false;  // measured once (img): no deviation
  std::optional<double> share;
  std::string ceiling;  // "FMA", "AMX" or "bandwidth"
};


ModelColumns model_columns(const BenchArgs& a, const api::BenchResult& r) {
  ModelColumns c;
  std::error_code ec;
  for (const auto& e : std::filesystem::directory_iterator(a.model, ec)) {
    if (e.path().extension() == ".safetensors") c.size_bytes += e.file_size(ec);
  }
  const std::string name = std::filesystem::path(a.model).lexically_normal().filename().string();
  char model[256], size_text[32], params[32];
  std::snprintf(model, sizeof model, "%s %s", name.empty() ? a.model.c_str() : name.c_str(),
                r.quantization_scheme == "none" ? "(unquantized)" : r.quantization_scheme.c_str());
  std::snprintf(size_text, sizeof size_text, "%.2f GiB", static_cast<double>(c.size_bytes) / (1024.0 * 1024.0 * 1024.0));
  std::snprintf(params, sizeof params, "%.2f B", static_cast<double>(r.parameters) / 1e9);
  c.model = model;
  c.size = size_text;
  c.params = params;
  c.backend = a.backend.backend == "cpu" ? "CPU (" + r.dispatch_target + ")" : a.backend.backend;
  return c;
}

std::string rate_text(const TableRow& row) {
  if (!row.one_run) return plus_minus(row.rates);
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.2f", row.rates.front());
  return buf;
}

// llama-bench's markdown table (model, size, params, backend, threads, test, t/s) and the share
// of the ceiling after it.
void print_markdown(const std::vector<TableRow>& rows) {
  std::printf("| model | size | params | backend | threads | test | t/s | of the ceiling |\n");
  std::printf("| --- | ---: | ---: | --- | ---: | ---: | ---: | ---: |\n");
  for (const TableRow& row : rows) {
    const ModelColumns& c = row.model;
    const std::string share = row.share ? percent(*row.share) + " " + row.ceiling : "-";
    std::printf("| %s | %s | %s | %s | %d | %s | %s | %s |\n", c.model.c_str(), c.size.c_str(), c.params.c_str(),
                c.backend.c_str(), row.threads, row.test.c_str(), rate_text(row).c_str(), share.c_str());
  }
}

// A row's fields as CSV and SQL print them: the name, the SQL column type, the value (text, or
// a number's digits; nullopt: none, as a test without a ceiling's share).
struct Field {
  const char* name;
  const char* sql_type;
  std::optional<std::string> value;
};

std::vector<Field> row_fields(const TableRow& row) {
  const ModelColumns& c = row.model;
  const auto number = [](double v) {
    char buf[32];
    std::snprintf(buf, sizeof buf, "%.6g", v);
    return std::string(buf);
  };
  const auto [mean, sd] = row.rates.empty() ? std::pair(0.0, 0.0) : mean_and_sd(row.rates);
  return {{"model", "TEXT", c.model},
          {"size_bytes", "INTEGER", std::to_string(c.size_bytes)},
          {"params", "TEXT", c.params},
          {"backend", "TEXT", c.backend},
          {"threads", "INTEGER", std::to_string(row.threads)},
          {"test", "TEXT", row.test},
          {"n_prompt", "INTEGER", std::to_string(row.n_prompt)},
          {"n_gen", "INTEGER", std::to_string(row.n_gen)},
          {"n_depth", "INTEGER", std::to_string(row.n_depth)},
          {"repetitions", "INTEGER", std::to_string(row.rates.size())},
          {"avg_ts", "REAL", number(mean)},
          {"stddev_ts", "REAL", number(sd)},
          {"fraction_of_ceiling", "REAL", row.share ? std::optional(std::to_string(*row.share)) : std::nullopt},
          {"ceiling", "TEXT", row.share ? std::optional(row.ceiling) : std::nullopt}};
}

// `item` after the items of `list`, `sep` between.
void append_item(std::string& list, const char* sep, const std::string& item) {
  if (!list.empty()) list += sep;
  list += item;
}

// The same rows as CSV (llama-bench's -o csv): a header, then a row per test; fields that hold a
// comma or a quote are quoted; a missing value is an empty field.
void print_csv(const std::vector<TableRow>& rows) {
  const auto quoted = [](const std::string& v) {
    if (v.find_first_of(",\"\n") == std::string::npos) return v;
    std::string q = "\"";
    for (const char ch : v) q += ch == '"' ? std::string("\"\"") : std::string(1, ch);
    return q + "\"";
  };
  std::string header;
  for (const Field& f : row_fields(TableRow{})) append_item(header, ",", f.name);
  std::printf("%s\n", header.c_str());
  for (const TableRow& row : rows) {
    std::string line;
    for (const Field& f : row_fields(row)) append_item(line, ",", quoted(f.value.value_or("")));
    std::printf("%s\n", line.c_str());
  }
}

// The same rows as SQL (llama-bench's -o sql, for `| sqlite3 results.db`): the table `test`
// made if missing, then an INSERT per test; text in single quotes (a quote doubled), a missing
// value NULL.
void print_sql(const std::vector<TableRow>& rows) {
  const std::vector<Field> columns = row_fields(TableRow{});
  std::printf("CREATE TABLE IF NOT EXISTS test (\n");
  for (std::size_t i = 0; i < columns.size(); ++i) {
    std::printf("  %s %s%s\n", columns[i].name, columns[i].sql_type, i + 1 < columns.size() ? "," : "");
  }
  std::printf(");\n");
  std::string names;
  for (const Field& f : columns) append_item(names, ", ", f.name);
  for (const TableRow& row : rows) {
    std::string values;
    for (const Field& f : row_fields(row)) {
      std::string v = "NULL";
      if (f.value && std::string_view(f.sql_type) == "TEXT") {
        v = "'";
        for (const char ch : *f.value) v += ch == '\'' ? std::string("''") : std::string(1, ch);
        v += "'";
      } else if (f.value) {
        v = *f.value;
      }
      append_item(values, ", ", v);
    }
    std::printf("INSERT INTO test (%s) VALUES (%s);\n", names.c_str(), values.c_str());
  }
}

// The ceiling of the compute-bound tests (pp, img): the AMX bf16 peak where the GEMMs ran on AMX,
// else the f32 FMA peak.
struct ComputeCeiling {
  double gflop_s;
  const char* name;  // the rows' `ceiling`
  const char* text;
};
ComputeCeiling compute_ceiling(const api::BenchResult& r) {
  if (r.amx_kernels) return {r.amx_peak_gflop_s, "AMX", "the AMX bf16 peak"};
  return {r.fma_peak_gflop_s, "FMA", "the f32 FMA peak"};
}

// A compute-bound test's share of each peak, for its JSON object: the f32 FMA one, and the AMX
// one where the GEMMs ran on AMX (else null).
void add_peak_fractions(nlohmann::ordered_json& j, double gflop_s, const api::BenchResult& r) {
  j["fraction_of_fma_peak"] = gflop_s / r.fma_peak_gflop_s;
  j["fraction_of_amx_peak"] = r.amx_kernels ? nlohmann::ordered_json(gflop_s / r.amx_peak_gflop_s) : nullptr;
}

// The image row (one encode: image tokens per second against the compute ceiling).
TableRow image_row(const ModelColumns& model, int threads, const api::BenchResult& r) {
  TableRow row;
  row.model = model;
  row.threads = threads;
  row.test = "img" + std::to_string(r.image->tokens);
  row.rates = {static_cast<double>(r.image->tokens) / r.image->seconds};
  row.one_run = true;
  row.share = static_cast<double>(r.image->flops) / r.image->seconds / 1e9 / compute_ceiling(r).gflop_s;
  row.ceiling = compute_ceiling(r).name;
  return row;
}

api::BenchOptions bench_options(const BenchArgs& a, int threads) {
  api::BenchOptions o;
  o.model = a.model;
  o.prompt_len = a.prompt_len;
  o.decode_tokens = a.decode_tokens;
  o.max_seq = a.max_seq;
  o.threads = threads;
  o.repetitions = a.repetitions;
  o.image_encode = a.image_encode;
  o.f32_activations = a.f32_activations;
  o.resident_weights = a.resident_weights;
  o.backend = a.backend;
  o.kernel_target = a.kernel_target;
  o.log = log_to_stderr;
  return o;
}

// One -p and one -n: a prefill of prompt_len tokens, then decode_tokens decoded after it, -r
// times (the cold first run counted), reported in full.
void bench_one_run(const BenchArgs& a) {
  const api::BenchOptions o = bench_options(a, resolve_threads(a.threads));
  const api::BenchResult r = api::run_bench(o);
  const int threads = o.threads;
  const std::string& target = r.dispatch_target;
  const double bandwidth = r.read_bandwidth_gb_s, fma_peak = r.fma_peak_gflop_s, bf16_peak = r.bf16_dot_peak_gflop_s;
  const double prefill_s = r.prefill_seconds, decode_s = r.decode_seconds, first_token_s = r.time_to_first_token_seconds;
  const std::uint64_t decode_rss = r.decode_peak_rss_bytes, kv_bytes = r.kv_cache_bytes, rss = r.process_peak_rss_bytes;
  const std::optional<api::BenchImageEncode>& image = r.image;
  const double prefill_tps = a.prompt_len / prefill_s, decode_tps = a.decode_tokens / decode_s;
  const std::uint64_t bytes = r.decode_weight_bytes;
  const double achieved = decode_tps * static_cast<double>(bytes) / 1e9;
  // Per decode step: the median step's rate next to the mean one (steps the host preempted and
  // the first step's warm-up weigh on the mean only), the fastest and slowest steps.
  const std::vector<double>& steps = r.decode_step_seconds;
  const double step_median = median(steps);
  const double step_min = steps.empty() ? 0.0 : *std::min_element(steps.begin(), steps.end());
  const double step_max = steps.empty() ? 0.0 : *std::max_element(steps.begin(), steps.end());
  const double step_first = steps.empty() ? 0.0 : steps.front();
  const double median_gb_s = median_step_gb_s(bytes, steps);
  const std::int64_t flops = r.prefill_flops;
  const double prefill_gflop_s = static_cast<double>(flops) / prefill_s / 1e9;
  const double image_gflop_s = image ? static_cast<double>(image->flops) / image->seconds / 1e9 : 0.0;
  const std::vector<double> prefill_rates = rates(a.prompt_len, r.prefill_seconds_each);
  const std::vector<double> decode_rates = rates(a.decode_tokens, r.decode_seconds_each);
  if (a.output == "md" || a.output == "csv" || a.output == "sql") {
    const ModelColumns columns = model_columns(a, r);
    std::vector<TableRow> rows(2);
    rows[0] = {columns, threads, "pp" + std::to_string(a.prompt_len), a.prompt_len, 0, 0, prefill_rates, false,
               prefill_gflop_s / compute_ceiling(r).gflop_s, compute_ceiling(r).name};
    rows[1] = {columns, threads, "tg" + std::to_string(a.decode_tokens), 0, a.decode_tokens, 0, decode_rates, false,
               median_gb_s / bandwidth, "bandwidth"};
    if (image) rows.push_back(image_row(columns, threads, r));
    a.output == "md" ? print_markdown(rows) : a.output == "csv" ? print_csv(rows) : print_sql(rows);
    return;
  }
  if (a.json || a.output == "json" || a.output == "jsonl") {
    nlohmann::ordered_json j = {{"model_dir", a.model},
                                {"threads", threads},
                                {"max_seq", a.max_seq},
                                {"dispatch_target", target},
                                {"read_bandwidth_gb_s", bandwidth},
                                {"weights_in_huge_pages", a.resident_weights},
                                {"use_mmap", !a.resident_weights},
                                {"fma_peak_gflop_s", fma_peak},
                                {"bf16_dot_peak_gflop_s", bf16_peak},
                                {"bf16_dot_kernels", r.bf16_dot_kernels},
                                {"bf16_dot_speed_over_fma", r.bf16_dot_speed_over_fma},
                                {"amx_peak_gflop_s", r.amx_peak_gflop_s},
                                {"amx_kernels", r.amx_kernels},
                                {"repetitions", a.repetitions},
                                {"prompt_tokens", a.prompt_len},
                                {"prefill_seconds", prefill_s},
                                {"prefill_tok_s", prefill_tps},
                                {"prefill_seconds_each", r.prefill_seconds_each},
                                {"prefill_tok_s_mean", mean_and_sd(prefill_rates).first},
                                {"prefill_tok_s_stdev", mean_and_sd(prefill_rates).second},
                                {"prefill_flops", flops},
                                {"prefill_gflop_s", prefill_gflop_s},
                                {"prefill_fraction_of_peak", prefill_gflop_s / fma_peak},
                                {"prefill_fraction_of_bf16_peak",
                                 r.bf16_dot_kernels ? nlohmann::ordered_json(prefill_gflop_s / bf16_peak) : nullptr},
                                {"prefill_fraction_of_amx_peak",
                                 r.amx_kernels ? nlohmann::ordered_json(prefill_gflop_s / r.amx_peak_gflop_s) : nullptr},
                                {"time_to_first_token_s", first_token_s},
                                {"decode_tokens", a.decode_tokens},
                                {"decode_seconds", decode_s},
                                {"decode_tok_s", decode_tps},
                                {"decode_seconds_each", r.decode_seconds_each},
                                {"decode_tok_s_mean", mean_and_sd(decode_rates).first},
                                {"decode_tok_s_stdev", mean_and_sd(decode_rates).second},
                                {"decode_weight_bytes_per_token", bytes},
                                {"decode_gb_s", achieved},
                                {"decode_fraction_of_bandwidth", achieved / bandwidth},
                                {"decode_step_seconds", steps},
                                {"decode_step_median_s", step_median},
                                {"decode_step_min_s", step_min},
                                {"decode_step_max_s", step_max},
                                {"decode_median_step_gb_s", median_gb_s},
                                {"decode_median_step_fraction_of_bandwidth", median_gb_s / bandwidth},
                                {"weight_matrices", r.matrices.matrices},
                                {"weight_matrices_on_cache_lines", r.matrices.on_cache_lines}};
    if (image) {
      j["image_encode_seconds"] = image->seconds;
      j["image_encode_flops"] = image->flops;
      j["image_encode_gflop_s"] = image_gflop_s;
      j["image_encode_fraction_of_peak"] = image_gflop_s / fma_peak;
      j["image_encode_fraction_of_amx_peak"] =
          r.amx_kernels ? nlohmann::ordered_json(image_gflop_s / r.amx_peak_gflop_s) : nullptr;
    }
    j["peak_rss_bytes"] = decode_rss;
    j["kv_cache_bytes"] = kv_bytes;
    j["backend"] = a.backend.backend;
    j["backend_placement"] = r.backend_placement;
    j["peak_rss_fraction_of_decode_bytes"] =
        static_cast<double>(decode_rss) / static_cast<double>(bytes + kv_bytes);
    j["process_peak_rss_bytes"] = rss;
    j["quantization_scheme"] = r.quantization_scheme;
    j["parameters"] = r.parameters;
    std::cout << j.dump(a.output == "jsonl" ? -1 : 2) << "\n";
    return;
  }
  std::printf("bench    %s, %d threads, max_seq %lld, kernels %s\n", a.model.c_str(), threads,
              static_cast<long long>(a.max_seq), target.c_str());
  std::printf("memory   read bandwidth %.1f GB/s (measured%s)\n", bandwidth,
              a.resident_weights ? " on 2 MiB pages, as the --no-mmap weights" : "");
  std::printf("compute  f32 FMA peak %.1f GFLOP/s (%s, measured)\n", fma_peak, r.fma_peak_target.c_str());
  if (r.bf16_dot_kernels) {
    std::printf("compute  bf16 dot peak %.1f GFLOP/s (vdpbf16ps, measured)\n", bf16_peak);
  } else if (bf16_peak > 0 && r.amx_kernels) {
    std::printf("compute  bf16 dot peak %.1f GFLOP/s (vdpbf16ps, measured; not used: the bf16 GEMMs run on AMX)\n",
                bf16_peak);
  } else if (bf16_peak > 0 && target == cpu::default_kernel_target()) {
    std::printf("compute  bf16 dot peak %.1f GFLOP/s (vdpbf16ps, measured; not used: it runs at %.2fx the f32 FMA's "
                "flops on this CPU, so bf16 GEMMs multiply bf16-rounded activations with f32 FMAs)\n",
                bf16_peak, r.bf16_dot_speed_over_fma);
  } else if (bf16_peak > 0) {
    std::printf("compute  bf16 dot peak %.1f GFLOP/s (vdpbf16ps, measured; not used by the pinned kernel target %s)\n", bf16_peak,
                target.c_str());
  } else {
    std::printf("compute  bf16 dot peak n/a (this CPU has no AVX-512 BF16)\n");
  }
  if (r.amx_kernels) {
    std::printf("compute  AMX bf16 peak %.1f GFLOP/s (tdpbf16ps, measured)\n", r.amx_peak_gflop_s);
  } else if (r.amx_peak_gflop_s > 0) {
    std::printf("compute  AMX bf16 peak %.1f GFLOP/s (tdpbf16ps, measured; not used by the pinned kernel target %s)\n",
                r.amx_peak_gflop_s, target.c_str());
  }
  std::string bf16_share;
  if (r.bf16_dot_kernels) bf16_share = ", " + percent(prefill_gflop_s / bf16_peak) + " of the bf16 dot peak";
  if (r.amx_kernels) bf16_share = ", " + percent(prefill_gflop_s / r.amx_peak_gflop_s) + " of the AMX bf16 peak";
  std::printf("prefill  %lld tokens in %.3f s: %.2f tok/s; %.3f GFLOP -> %.2f GFLOP/s, %s of the f32 FMA peak%s\n",
              static_cast<long long>(a.prompt_len), prefill_s, prefill_tps, flops / 1e9, prefill_gflop_s,
              percent(prefill_gflop_s / fma_peak).c_str(), bf16_share.c_str());
  if (a.repetitions > 1) {
    std::printf("runs     %d: prefill %s tok/s, decode %s tok/s (mean ± sample deviation of the runs' rates; the seconds "
                "above are their means)\n",
                a.repetitions, plus_minus(prefill_rates).c_str(), plus_minus(decode_rates).c_str());
  }
  std::printf("first    token after %.3f s (prefill and the LM-head argmax)\n", first_token_s);
  std::printf("decode   %lld tokens in %.3f s: %.2f tok/s; %.3f GB of weights per token -> %.2f GB/s, %s of the "
              "measured bandwidth\n",
              static_cast<long long>(a.decode_tokens), decode_s, decode_tps, bytes / 1e9, achieved,
              percent(achieved / bandwidth).c_str());
  std::printf("decode   per step: median %.2f ms -> %.2f GB/s, %s of the measured bandwidth; fastest %.2f ms, "
              "slowest %.2f ms, first %.2f ms\n",
              step_median * 1e3, median_gb_s, percent(median_gb_s / bandwidth).c_str(), step_min * 1e3,
              step_max * 1e3, step_first * 1e3);
  if (r.matrices.on_cache_lines < r.matrices.matrices) {
    std::printf("note     %d of %d weight matrices start off a 64-byte cache line: their rows straddle lines and "
                "decode streams them slower (quantize and make-model write them on lines)\n",
                r.matrices.matrices - r.matrices.on_cache_lines, r.matrices.matrices);
  }
  if (image) {
    std::printf("image    %lld patches (%lldx%lld grid) -> %lld tokens in %.3f s; %.3f GFLOP -> %.2f GFLOP/s, %s of "
                "%s\n",
                static_cast<long long>(image->patches), static_cast<long long>(image->grid_height),
                static_cast<long long>(image->grid_width), static_cast<long long>(image->tokens), image->seconds,
                image->flops / 1e9, image_gflop_s, percent(image_gflop_s / compute_ceiling(r).gflop_s).c_str(),
                compute_ceiling(r).text);
  }
  std::printf("rss      peak %.3f GB during decode, %.2f x (weights per token %.3f GB + KV cache %.3f GB); "
              "%.3f GB for the whole run (getrusage, incl. the bandwidth buffer)\n",
              decode_rss / 1e9, static_cast<double>(decode_rss) / static_cast<double>(bytes + kv_bytes), bytes / 1e9,
              kv_bytes / 1e9, rss / 1e9);
}

constexpr std::int64_t kMaxCount = std::int64_t{1} << 31;

// -pg P,N: a prompt and the tokens generated after it, timed together.
api::BenchTest prompt_gen_test(const std::string& item) {
  const auto count = [&](const std::string& text) {
    const std::optional<std::int64_t> v = parse_count(text, kMaxCount);
    if (!v || *v < 1) invalid_argument("-pg " + item + ": expected PROMPT,GEN, two counts of at least 1 (as -pg 512,128)");
    return *v;
  };
  const std::size_t comma = item.find(',');
  if (comma == std::string::npos) count("");  // throws
  return {count(item.substr(0, comma)), count(item.substr(comma + 1))};
}

// A test's row and its JSON object: t/s of each run ((prompt + generated tokens) / seconds),
// pp against the f32 FMA peak (its flops over the mean seconds), tg's median step against the
// read bandwidth.
// The CPU's name as /proc/cpuinfo gives it ("" where it does not).
std::string cpu_name() {
  std::ifstream f("/proc/cpuinfo");
  for (std::string line; std::getline(f, line);) {
    if (line.rfind("model name", 0) != 0) continue;
    const std::size_t value = line.find_first_not_of(" \t", line.find(':') + 1);
    return value == std::string::npos ? "" : line.substr(value);
  }
  return "";
}

// Now in UTC as ISO 8601 (llama-bench's test_time).
std::string utc_now() {
  const std::time_t now = std::time(nullptr);
  std::tm tm{};
  gmtime_r(&now, &tm);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", &tm);
  return buf;
}

void add_test(const BenchArgs& a, const api::BenchResult& r, const ModelColumns& columns, int threads,
              const api::BenchTestResult& t, std::vector<TableRow>& rows, nlohmann::ordered_json& objects) {
  const std::int64_t p = t.test.prompt_len, n = t.test.decode_tokens;
  TableRow row;
  row.model = columns;
  row.threads = threads;
  row.test = api::bench_test_name(t.test);
  row.n_prompt = p;
  row.n_gen = n;
  row.n_depth = t.test.depth;
  row.rates = rates(p + n, t.seconds_each);
  std::vector<std::int64_t> samples_ns;
  for (const double s : t.seconds_each) samples_ns.push_back(std::llround(s * 1e9));
  const auto [mean_s, sd_s] = mean_and_sd(t.seconds_each);
  const auto [mean_ts, sd_ts] = mean_and_sd(row.rates);
  // llama-bench's fields (cpu_info, model_filename, model_type, model_size, model_n_params,
  // n_threads, test_time, ...) beside staticlm's own.
  nlohmann::ordered_json j = {{"cpu_info", cpu_name()},
                              {"backends", a.backend.backend == "cpu" ? std::string("CPU") : a.backend.backend},
                              {"model_filename", a.model},
                              {"model_type", columns.model},
                              {"model_size", columns.size_bytes},
                              {"model_n_params", r.parameters},
                              {"n_threads", threads},
                              {"test_time", utc_now()},
                              {"model_dir", a.model},
                              {"quantization_scheme", r.quantization_scheme},
                              {"parameters", r.parameters},
                              {"backend", a.backend.backend},
                              {"dispatch_target", r.dispatch_target},
                              {"threads", threads},
                              {"max_seq", a.max_seq},
                              {"use_mmap", !a.resident_weights},
                              {"read_bandwidth_gb_s", r.read_bandwidth_gb_s},
                              {"fma_peak_gflop_s", r.fma_peak_gflop_s},
                              {"bf16_dot_peak_gflop_s", r.bf16_dot_peak_gflop_s},
                              {"amx_peak_gflop_s", r.amx_peak_gflop_s},
                              {"test", row.test},
                              {"n_prompt", p},
                              {"n_gen", n},
                              {"n_depth", t.test.depth},
                              {"warmup", !a.no_warmup},
                              {"repetitions", t.seconds_each.size()},
                              {"samples_ns", samples_ns},
                              {"samples_ts", row.rates},
                              {"avg_ns", std::llround(mean_s * 1e9)},
                              {"stddev_ns", std::llround(sd_s * 1e9)},
                              {"avg_ts", mean_ts},
                              {"stddev_ts", sd_ts}};
  if (n == 0) {
    const double gflop_s = static_cast<double>(t.prefill_flops) / mean_s / 1e9;
    row.share = gflop_s / compute_ceiling(r).gflop_s;
    row.ceiling = compute_ceiling(r).name;
    j["prefill_flops"] = t.prefill_flops;
    j["gflop_s"] = gflop_s;
    add_peak_fractions(j, gflop_s, r);
  } else if (p == 0) {
    const double step = median(t.decode_step_seconds), gb_s = median_step_gb_s(r.decode_weight_bytes, t.decode_step_seconds);
    row.share = gb_s / r.read_bandwidth_gb_s;
    row.ceiling = "bandwidth";
    j["decode_weight_bytes_per_token"] = r.decode_weight_bytes;
    j["decode_step_seconds"] = t.decode_step_seconds;
    j["decode_median_step_s"] = step;
    j["decode_median_step_gb_s"] = gb_s;
    j["decode_median_step_fraction_of_bandwidth"] = *row.share;
  }
  rows.push_back(row);
  objects.push_back(j);
}

// The text lines of one thread count's tests.
void print_tests_text(const api::BenchResult& r, int threads, const std::vector<TableRow>& rows) {
  char amx[64] = "";
  if (r.amx_peak_gflop_s > 0) std::snprintf(amx, sizeof amx, ", AMX bf16 peak %.1f GFLOP/s", r.amx_peak_gflop_s);
  std::printf("threads  %d: read bandwidth %.1f GB/s, f32 FMA peak %.1f GFLOP/s (%s)%s, kernels %s (measured before "
              "and after the tests, best of each)\n",
              threads, r.read_bandwidth_gb_s, r.fma_peak_gflop_s, r.fma_peak_target.c_str(), amx,
              r.dispatch_target.c_str());
  for (const TableRow& row : rows) {
    char share[160] = "";
    if (row.share && row.ceiling != "bandwidth") {
      std::snprintf(share, sizeof share, "; %s of %s", percent(*row.share).c_str(), compute_ceiling(r).text);
    }
    if (row.share && row.ceiling == "bandwidth") {
      const double gb_s = *row.share * r.read_bandwidth_gb_s;
      std::snprintf(share, sizeof share, "; median step %.2f ms -> %.2f GB/s, %s of the measured bandwidth",
                    static_cast<double>(r.decode_weight_bytes) / gb_s / 1e6, gb_s, percent(*row.share).c_str());
    }
    std::printf("test     %s: %s t/s%s\n", row.test.c_str(), rate_text(row).c_str(), share);
  }
}

// Lists (llama-bench): on each thread count and at each depth (-d), the pp tests (-p values above
// 0), the tg tests (-n values above 0) and the pg tests (-pg), each -r times after a warm-up run,
// one model load and a pair of ceiling measurements per thread count; a row per test.
void bench_tests(const BenchArgs& a, const std::vector<std::int64_t>& prompts, const std::vector<std::int64_t>& gens,
                 const std::vector<std::int64_t>& thread_counts, const std::vector<api::BenchTest>& prompt_gen,
                 const std::vector<std::int64_t>& depths) {
  std::vector<api::BenchTest> tests;
  for (const std::int64_t d : depths) {
    for (const std::int64_t p : prompts) {
      if (p > 0) tests.push_back({p, 0, d});
    }
    for (const std::int64_t n : gens) {
      if (n > 0) tests.push_back({0, n, d});
    }
    for (api::BenchTest pg : prompt_gen) {
      pg.depth = d;
      tests.push_back(pg);
    }
  }
  if (tests.empty()) invalid_argument("bench: no test to run: -p and -n are 0 and there is no -pg");
  std::vector<int> threads;
  for (const std::int64_t t : thread_counts) threads.push_back(resolve_threads(static_cast<int>(t)));
  std::vector<TableRow> rows;
  nlohmann::ordered_json objects = nlohmann::ordered_json::array();
  const bool text = a.output == "text" && !a.json;
  for (const std::string& model : a.models) {  // llama-bench's -m list: each model's tests in turn
    BenchArgs am = a;
    am.model = model;
    std::optional<ModelColumns> columns;
    for (const int t : threads) {
      api::BenchOptions o = bench_options(am, t);
      o.tests = tests;
      o.warmup = !a.no_warmup;
      const api::BenchResult r = api::run_bench(o);
      if (!columns) {  // the model's first results: a bad flag was refused before anything was printed
        columns = model_columns(am, r);
        if (text) {
          std::printf("bench    %s, max_seq %lld, each test %d time%s%s\n", model.c_str(), static_cast<long long>(a.max_seq),
                      a.repetitions, a.repetitions == 1 ? "" : "s", a.no_warmup ? "" : " after a warm-up run");
        }
      }
      const std::size_t first = rows.size();
      for (const api::BenchTestResult& test : r.tests) add_test(am, r, *columns, t, test, rows, objects);
      if (r.image) {
        rows.push_back(image_row(*columns, t, r));
        objects.push_back({{"model_dir", model}, {"threads", t}, {"test", rows.back().test}, {"image_encode_seconds", r.image->seconds},
                           {"image_encode_flops", r.image->flops}, {"avg_ts", rows.back().rates.front()}});
        add_peak_fractions(objects.back(), static_cast<double>(r.image->flops) / r.image->seconds / 1e9, r);
      }
      if (text) print_tests_text(r, t, std::vector<TableRow>(rows.begin() + static_cast<std::ptrdiff_t>(first), rows.end()));
      std::fflush(stdout);
    }
  }
  if (a.output == "md") print_markdown(rows);
  if (a.output == "csv") print_csv(rows);
  if (a.output == "sql") print_sql(rows);
  if (a.output == "jsonl") {
    for (const auto& j : objects) std::cout << j.dump() << "\n";
  }
  if (a.json || a.output == "json") std::cout << objects.dump(2) << "\n";
}

// A thin adapter over the library's measurement (api/bench.h): flags in, the report out.
void bench_command(BenchArgs a) {
  const std::vector<std::int64_t> prompts = parse_count_list("-p", a.prompt_lens, kMaxCount);
  const std::vector<std::int64_t> gens = parse_count_list("-n", a.decode_lens, kMaxCount);
  const std::vector<std::int64_t> threads = parse_count_list("--threads", a.thread_counts, kMaxThreads);
  const std::vector<std::int64_t> depths = parse_count_list("-d", a.depths, kMaxCount);
  std::vector<api::BenchTest> prompt_gen;
  for (const std::string& item : a.prompt_gen) prompt_gen.push_back(prompt_gen_test(item));
  // Every model's config is read before the first is measured: a bad directory late in the list
  // is refused now, not after minutes of tests.
  if (a.models.size() > 1) {
    for (const std::string& m : a.models) load_model_config(m);
  }
  a.model = a.models.front();
  if (a.models.size() == 1 && prompts.size() == 1 && gens.size() == 1 && threads.size() == 1 && prompt_gen.empty() &&
      prompts[0] > 0 && gens[0] > 0 && depths == std::vector<std::int64_t>{0}) {
    a.prompt_len = prompts[0];
    a.decode_tokens = gens[0];
    a.threads = static_cast<int>(threads[0]);
    return bench_one_run(a);
  }
  bench_tests(a, prompts, gens, threads, prompt_gen, depths);
}

}  // namespace

void add_bench_command(CLI::App& app) {
  auto a = std::make_shared<BenchArgs>();
  auto* cmd = app.add_subcommand("bench", "measure prefill and decode speed against the machine's measured memory "
                                          "bandwidth and compute peaks");
  cmd->add_option("-m,--model", a->models, "checkpoint directory (the flag again: each model's tests in turn, as "
                                           "llama-bench's -m list)")
      ->required()
      ->expected(1)
      ->multi_option_policy(CLI::MultiOptionPolicy::TakeAll);
  const char* lists = "; a comma list, a range first-last[+step|*mult] or the flag again runs a test per value (llama-bench)";
  cmd->add_option("-p,--prompt-len,--n-prompt", a->prompt_lens, std::string("prompt tokens to prefill (default 512)") + lists)
      ->expected(1)->multi_option_policy(CLI::MultiOptionPolicy::TakeAll);
  cmd->add_option("-n,--decode-tokens,--n-gen", a->decode_lens, std::string("tokens to decode (default 32)") + lists)->expected(1)->multi_option_policy(CLI::MultiOptionPolicy::TakeAll);
  cmd->add_option("--prompt-gen", a->prompt_gen, "PROMPT,GEN: a prompt and the tokens generated after it, timed together (llama-bench's -pg; "
                                        "test; the flag again for more)")
      ->expected(1)->multi_option_policy(CLI::MultiOptionPolicy::TakeAll);
  cmd->add_option("-d,--n-depth", a->depths, std::string("tokens in the cache before each test (default 0): prefilled untimed, "
                                                         "the test's prompt appended after them") + lists)
      ->expected(1)->multi_option_policy(CLI::MultiOptionPolicy::TakeAll);
  cmd->add_option("--max-seq", a->max_seq, "static sequence length")->capture_default_str()->check(max_seq_range());
  cmd->add_option("-t,--threads", a->thread_counts, std::string("threads (default: one per hardware thread)") + lists)->expected(1)->multi_option_policy(CLI::MultiOptionPolicy::TakeAll);

  cmd->add_flag("--image-encode", a->image_encode,
                "also time one vision_prefill over a full synthetic patch grid (models with a vision tower)");
  cmd->add_flag("--json", a->json, "print JSON: one object (with lists or -pg, an array of tests), as -o json");
  cmd->add_option("-r,--repetitions", a->repetitions, "prefill and decode this many times on the loaded model; t/s as mean ± "
                                                     "sample deviation (llama-bench's -r; default 1)");
  cmd->add_option("-o,--output", a->output,
                  "text (default), json (as --json), jsonl (one line), md (llama-bench's table), csv (its rows) or sql "
                  "(CREATE TABLE and INSERT statements, for sqlite3)")
      ->check(CLI::IsMember({"text", "json", "jsonl", "md", "csv", "sql"}));
  add_llama_cpp_tuning_flags(*cmd);
  // llama-bench's own: the tuning flags' note (nothing warmed up) does not hold here.
  cmd->remove_option(cmd->get_option("--no-warmup"));
  cmd->remove_option(cmd->get_option("--warmup"));
  cmd->add_flag("--no-warmup,!--warmup", a->no_warmup,
                "lists and -pg: no untimed warm-up run before each test's runs (--warmup, the default: one)");
  cmd->add_flag("--f32-activations", a->f32_activations, "keep prefill/vision activations f32 on bf16 weights");
  add_kernel_target_option(*cmd, a->kernel_target);
  add_backend_options(*cmd, a->backend);
  add_mmap_flags(*cmd, a->resident_weights);
  add_llama_bench_flags(*cmd, a->resident_weights);
  cmd->callback([a] { bench_command(*a); });
}

}  // namespace staticlm::cli
