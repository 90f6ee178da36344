#include "quant/accuracy.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <limits>
#include <memory>
#include <nlohmann/json.hpp>

#include "backends/cpu/cpu_backend.h"
#include "backends/cpu/kernels/matmul.h"
#include "backends/cpu/weight_loading.h"
#include "base/error.h"
#include "base/file.h"
#include "base/median.h"
#include "model/checkpoint.h"
#include "model/weight_stats.h"
#include "runtime/runtime.h"
#include "text/tokenizer.h"

namespace staticlm::quant {

namespace {

struct Sums {
  double signal = 0, noise = 0;  // sum w^2, sum (w - wq)^2
};

bool same_tensor(const TensorView& a, const TensorView& b) {
  return a.dtype == b.dtype && a.shape == b.shape && std::memcmp(a.data, b.data, a.nbytes()) == 0;
}

// The sums of one tensor over its two stores: matrices row by row (split across the pool),
// anything else element by element.
Sums tensor_sums(const TensorStore& base, const TensorStore& quant, const std::string& name, ThreadPool* pool) {
  const TensorView a = base.get(name), b = quant.get(name);
  if (a.shape != b.shape) {
    invalid_argument("quant-report: tensor " + name + " has shape " + a.shape.to_string() + " in " + base.source() +
                     " but " + b.shape.to_string() + " in " + quant.source());
  }
  Sums total;
  if (a.shape.rank() != 2) {
    for (std::int64_t i = 0; i < a.numel(); ++i) {
      const double w = a.get_f32(i), d = w - b.get_f32(i);
      total.signal += w * w;
      total.noise += d * d;
    }
    return total;
  }
  const std::int64_t rows = a.shape[0], cols = a.shape[1];
  std::vector<std::unique_ptr<Tensor>> copies;
  const cpu::WeightMatrix wa =
      cpu::load_weight_matrix([&base](const std::string& n) { return base.get(n); }, a, name, rows, cols, copies);
  const cpu::WeightMatrix wb =
      cpu::load_weight_matrix([&quant](const std::string& n) { return quant.get(n); }, b, name, rows, cols, copies);
  std::vector<Sums> parts(static_cast<std::size_t>(pool ? pool->size() : 1));
  parallel_for(pool, rows, 1, 4.0 * static_cast<double>(cols), [&](std::int64_t r0, std::int64_t r1, int worker) {
    std::vector<float> ra(static_cast<std::size_t>(cols)), rb(static_cast<std::size_t>(cols));
    Sums& s = parts[static_cast<std::size_t>(worker)];
    for (std::int64_t r = r0; r < r1; ++r) {
      cpu::weight_row_f32(wa, r, ra.data());
      cpu::weight_row_f32(wb, r, rb.data());
      for (std::int64_t i = 0; i < cols; ++i) {
        const double w = ra[i], d = w - rb[i];
        s.signal += w * w;
        s.noise += d * d;
      }
    }
  });
  for (const Sums& s : parts) {
    total.signal += s.signal;
    total.noise += s.noise;
  }
  return total;
}

// kInvalidArgument naming the first field where the two configs differ.
void check_same_model(const Checkpoint& base, const Checkpoint& quant) {
  const auto a = nlohmann::json::parse(model_config_to_json(base.config()));
  const auto b = nlohmann::json::parse(model_config_to_json(quant.config()));
  if (a == b) return;
  const nlohmann::json op = nlohmann::json::diff(a, b).at(0);
  const std::string path = op.at("path").get<std::string>();
  const nlohmann::json::json_pointer ptr(path);
  const std::string in_a = op.at("op") == "add" ? "absent" : a.at(ptr).dump();
  const std::string in_b = op.at("op") == "remove" ? "absent" : b.at(ptr).dump();
  invalid_argument("quant-report: " + path_join(base.dir(), "config.json") + " and " +
                   path_join(quant.dir(), "config.json") + " describe different models: " + path.substr(1) + " is " +
                   in_a + " vs " + in_b);
}

// The base checkpoint's tokenizer; kInvalidArgument when it has none or the quantized
// checkpoint carries a different one.
std::unique_ptr<Tokenizer> load_common_tokenizer(const std::string& base_dir, const std::string& quant_dir) {
  const std::string base_path = path_join(base_dir, "tokenizer.json");
  const std::string quant_path = path_join(quant_dir, "tokenizer.json");
  if (!file_exists(base_path)) invalid_argument("quant-report: " + base_path + " is missing; the prompts need it");
  const std::string text = read_file(base_path);
  if (file_exists(quant_path) && read_file(quant_path) != text) {
    invalid_argument("quant-report: " + base_path + " and " + quant_path + " differ (another vocabulary?)");
  }
  return Tokenizer::from_json(text, base_path);
}

// Logits after every token of `ids`, teacher-forced: a prefill of ids[0], then one decode per
// further token. on(i, logits) sees the logits after token i.
template <typename OnPosition>
void forced_logits(Runtime& rt, std::span<const std::int64_t> ids, const OnPosition& on) {
  on(std::size_t{0}, rt.prefill_tokens(ids.first(1)));
  for (std::size_t i = 1; i < ids.size(); ++i) on(i, rt.decode(ids[i]));
}

}  // namespace

std::vector<TensorSqnr> weight_sqnr(const TensorStore& base, const TensorStore& quant, ThreadPool* pool) {
  std::vector<TensorSqnr> out;
  for (const std::string& name : base.names()) {
    if (!quant.contains(name)) continue;
    const TensorView a = base.get(name), b = quant.get(name);
    if (same_tensor(a, b)) continue;
    const Sums s = tensor_sums(base, quant, name, pool);
    TensorSqnr t;
    t.name = name;
    t.base_dtype = dtype_name(a.dtype);
    t.quant_dtype = dtype_name(b.dtype);
    t.elements = a.numel();
    t.sqnr_db = s.noise > 0 ? 10.0 * std::log10(s.signal / s.noise) : std::numeric_limits<double>::infinity();
    out.push_back(std::move(t));
  }
  return out;
}

SqnrSummary summarize_sqnr(const std::vector<TensorSqnr>& tensors) {
  SqnrSummary s;
  std::vector<double> db;
  for (const TensorSqnr& t : tensors) {
    if (std::isinf(t.sqnr_db) && t.sqnr_db > 0) {
      ++s.exact;
    } else {
      db.push_back(t.sqnr_db);
    }
  }
  s.tensors = static_cast<int>(db.size());
  if (db.empty()) return s;
  const std::size_t n = db.size();
  s.min_db = *std::min_element(db.begin(), db.end());
  s.median_db = median(db);
  double sum = 0;
  for (double d : db) sum += d;
  s.mean_db = sum / static_cast<double>(n);
  return s;
}

void LogitsAgreement::add(std::span<const float> a, std::span<const float> b) {
  for (std::size_t i = 0; i < a.size(); ++i) {
    const double d = static_cast<double>(a[i]) - b[i];
    err += d * d;
    ref += static_cast<double>(a[i]) * a[i];
    max_abs_diff = std::max(max_abs_diff, std::abs(d));
  }
  ++positions;
  top1_same += std::max_element(a.begin(), a.end()) - a.begin() == std::max_element(b.begin(), b.end()) - b.begin();
}

void LogitsAgreement::merge(const LogitsAgreement& o) {
  positions += o.positions;
  top1_same += o.top1_same;
  err += o.err;
  ref += o.ref;
  max_abs_diff = std::max(max_abs_diff, o.max_abs_diff);
}

const std::vector<std::string>& default_accuracy_prompts() {
  static const std::vector<std::string> prompts = {
      "The capital of France is",
      "Once upon a time, in a small village by the sea, there lived an old fisherman who",
      "def add(a, b): return a + b  # adds two numbers",
      "Water boils at 100 degrees Celsius at sea level because",
      "Translate to German: The weather is nice today.",
      "1, 1, 2, 3, 5, 8, 13, 21,",
      "Dear hiring manager, I am writing to apply for the position of",
      "Q: Why is the sky blue? A:",
  };
  return prompts;
}

AccuracyReport accuracy_report(const AccuracyOptions& o) {
  std::error_code ec;
  if (std::filesystem::equivalent(o.base_dir, o.quant_dir, ec)) {
    invalid_argument("quant-report: " + o.quant_dir + " is the base checkpoint " + o.base_dir +
                     " itself; give the quantized copy");
  }
  const auto progress = [&o](const std::string& line) {
    if (o.progress) o.progress(line);
  };
  auto base = Checkpoint::open(o.base_dir);
  auto quant = Checkpoint::open(o.quant_dir);
  check_same_model(*base, *quant);
  const auto tokenizer = load_common_tokenizer(o.base_dir, o.quant_dir);

  const std::vector<std::string>& texts = o.prompts.empty() ? default_accuracy_prompts() : o.prompts;
  std::vector<std::vector<std::int64_t>> ids;
  std::int64_t longest = 0;
  for (const std::string& text : texts) {
    std::vector<std::int64_t> p = {base->config().text.bos_token_id};
    for (int id : tokenizer->encode(text)) p.push_back(id);
    longest = std::max(longest, static_cast<std::int64_t>(p.size()));
    ids.push_back(std::move(p));
  }
  const std::int64_t max_seq = o.max_seq > 0 ? o.max_seq : longest + 1;
  if (max_seq > base->config().text.max_position_embeddings) {
    invalid_argument("--max-seq " + std::to_string(max_seq) + " exceeds the model's max_position_embeddings " +
                     std::to_string(base->config().text.max_position_embeddings));
  }
  for (std::size_t i = 0; i < ids.size(); ++i) {
    if (static_cast<std::int64_t>(ids[i].size()) > max_seq - 1) {
      invalid_argument("quant-report: prompt " + std::to_string(i + 1) + " has " + std::to_string(ids[i].size()) +
                       " tokens (with <bos>) but --max-seq " + std::to_string(max_seq) + " leaves room for " +
                       std::to_string(max_seq - 1));
    }
  }

  AccuracyReport r;
  r.base_scheme = quantization_scheme(*base);
  r.quant_scheme = quantization_scheme(*quant);
  r.max_seq = max_seq;
  ThreadPool pool(o.threads);
  progress("comparing weights");
  r.tensors = weight_sqnr(base->weights(), quant->weights(), &pool);

  SubgraphProfile profile;
  profile.max_seq = max_seq;
  CpuBackendOptions bo;
  bo.pool = &pool;
  auto base_backend = CpuBackend::create(*base, profile, bo);
  auto quant_backend = CpuBackend::create(*quant, profile, bo);
  auto base_rt = Runtime::create(*base_backend, base->config(), base->layers());
  auto quant_rt = Runtime::create(*quant_backend, quant->config(), quant->layers());
  const auto vocab = static_cast<std::size_t>(base->config().text.vocab_size);
  std::vector<float> base_logits;
  for (std::size_t p = 0; p < ids.size(); ++p) {
    progress("prompt " + std::to_string(p + 1) + "/" + std::to_string(ids.size()) + ", " +
             std::to_string(ids[p].size()) + " tokens");
    // The base model's logits are kept for one prompt at a time, then met by the quantized one's.
    base_logits.resize(ids[p].size() * vocab);
    forced_logits(*base_rt, ids[p], [&](std::size_t i, std::span<const float> l) {
      std::copy(l.begin(), l.end(), base_logits.begin() + static_cast<std::ptrdiff_t>(i * vocab));
    });
    PromptResult result;
    result.text = texts[p];
    result.tokens = static_cast<std::int64_t>(ids[p].size());
    forced_logits(*quant_rt, ids[p], [&](std::size_t i, std::span<const float> l) {
      result.logits.add(std::span<const float>(base_logits).subspan(i * vocab, vocab), l);
    });
    r.overall.merge(result.logits);
    r.prompts.push_back(std::move(result));
  }
  return r;
}

}  // namespace staticlm::quant
