#include "quant/quantize_checkpoint.h"

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <memory>
#include <nlohmann/json.hpp>
#include <vector>

#include "backends/cpu/kernels/matmul.h"
#include "base/error.h"
#include "base/file.h"
#include "base/thread_pool.h"
#include "model/checkpoint.h"
#include "model/weight_stats.h"
#include "quant/formats.h"
#include "tensor/safetensors.h"

namespace staticlm::quant {

namespace fs = std::filesystem;

namespace {

// Rows quantized per step: bounds the f32 staging buffer (e.g. 1024 x 12288 floats = 48 MiB).
constexpr std::int64_t kRowChunk = 1024;

// How one tensor is written: kept as it is, converted to F32 (npu-w4 norms and scalars), or
// quantized to `values` with companion tensors (_scale; _zero_point for U4 / U8).
struct Plan {
  enum Kind { kKeep, kToF32, kQuantize } kind = kKeep;
  DType values = DType::kI8;
};

bool ends_with(const std::string& s, const std::string& tail) {
  return s.size() >= tail.size() && s.compare(s.size() - tail.size(), tail.size(), tail) == 0;
}

// npu-w4 keeps 8 bits where the NPU recipe does: the token embedding / LM head, the per-layer
// embedding table and the vision patch embedding.
bool eight_bit_in_npu_recipe(const std::string& name) {
  return ends_with(name, "embed_tokens.weight") || ends_with(name, "embed_tokens_per_layer.weight") ||
         ends_with(name, "patch_embedder.input_proj.weight");
}

Plan plan_for(const std::string& name, const TensorView& v, const std::string& scheme) {
  if (!dtype_is_float(v.dtype)) return {};
  const bool matrix = v.shape.rank() == 2 && ends_with(name, ".weight");
  if (scheme == "npu-w4") {
    if (!matrix) return {v.shape.rank() <= 1 && v.dtype != DType::kF32 ? Plan::kToF32 : Plan::kKeep};
    if (eight_bit_in_npu_recipe(name)) return {Plan::kQuantize, DType::kU8};
    return v.shape[1] % 2 == 0 ? Plan{Plan::kQuantize, DType::kU4} : Plan{Plan::kQuantize, DType::kU8};
  }
  if (!matrix) return {};
  if (scheme == "q8") return {Plan::kQuantize, DType::kI8};
  return v.shape[1] % kQ4Group == 0 ? Plan{Plan::kQuantize, DType::kI4} : Plan{};
}

// Rows [r0, r0 + n) of v as f32.
void rows_f32(const TensorView& v, std::int64_t r0, std::int64_t n, std::vector<float>& out) {
  const cpu::WeightMatrix w{v.dtype, v.shape[0], v.shape[1], v.data};
  out.resize(static_cast<std::size_t>(n * w.cols));
  for (std::int64_t r = 0; r < n; ++r) cpu::weight_row_f32(w, r0 + r, out.data() + r * w.cols);
}

// The three parts of one quantized chunk of rows: packed values, scales, zero points.
struct QuantizedChunk {
  std::vector<std::uint8_t> values;
  std::vector<std::uint8_t> scales;  // raw bytes (F32 or F16)
  std::vector<std::uint8_t> zero_points;
};

// Bytes per row of each part for `values` at `cols` columns.
struct RowBytes {
  std::int64_t values, scales, zero_points;
};
RowBytes row_bytes(DType values, std::int64_t cols) {
  switch (values) {
    case DType::kI8: return {cols, 4, 0};
    case DType::kI4: return {cols / 2, 2 * (cols / kQ4Group), 0};
    case DType::kU4: return {cols / 2, 4, 1};
    default: return {cols, 4, 1};  // U8
  }
}

// Rows [0, n) of f (n x cols) quantized as `values` into c at row offset 0 (the caller's slices).
void quantize_rows(DType values, const float* f, std::int64_t n, std::int64_t cols, std::uint8_t* q, std::uint8_t* s,
                   std::uint8_t* z) {
  const std::span<const float> in(f, static_cast<std::size_t>(n * cols));
  const RowBytes b = row_bytes(values, cols);
  const auto count = [&](std::int64_t per_row) { return static_cast<std::size_t>(n * per_row); };
  switch (values) {
    case DType::kI8:
      quantize_q8(in, n, cols, {reinterpret_cast<std::int8_t*>(q), count(b.values)},
                  {reinterpret_cast<float*>(s), static_cast<std::size_t>(n)});
      return;
    case DType::kI4:
      quantize_q4(in, n, cols, {q, count(b.values)},
                  {reinterpret_cast<std::uint16_t*>(s), static_cast<std::size_t>(n * (cols / kQ4Group))});
      return;
    default:
      quantize_asym(in, n, cols, values == DType::kU4 ? 4 : 8, {q, count(b.values)},
                    {reinterpret_cast<float*>(s), static_cast<std::size_t>(n)}, {z, static_cast<std::size_t>(n)});
      return;
  }
}

// Quantizes v [rows, cols] kRowChunk rows at a time (rows split over the pool), calling emit on
// each chunk in order.
template <typename Emit>
void for_each_chunk(const std::string& name, const TensorView& v, DType values, ThreadPool* pool, const Emit& emit) {
  const std::int64_t rows = v.shape[0], cols = v.shape[1];
  const RowBytes b = row_bytes(values, cols);
  std::vector<float> f;
  QuantizedChunk c;
  for (std::int64_t r0 = 0; r0 < rows; r0 += kRowChunk) {
    const std::int64_t n = std::min(kRowChunk, rows - r0);
    rows_f32(v, r0, n, f);
    // A NaN or Inf would make its row's (or group's) scale NaN: refuse it by name and place.
    const auto bad = std::find_if(f.begin(), f.end(), [](float x) { return !std::isfinite(x); });
    if (bad != f.end()) {
      const std::int64_t at = bad - f.begin();
      invalid_file("quantize: tensor " + name + " holds " + (std::isnan(*bad) ? "NaN" : "Inf") + " at row " +
                   std::to_string(r0 + at / cols) + ", column " + std::to_string(at % cols) +
                   "; only finite weights can be quantized");
    }
    c.values.resize(static_cast<std::size_t>(n * b.values));
    c.scales.resize(static_cast<std::size_t>(n * b.scales));
    c.zero_points.resize(static_cast<std::size_t>(n * b.zero_points));
    parallel_for(pool, n, 1, static_cast<double>(cols) * 8, [&](std::int64_t i0, std::int64_t i1, int) {
      quantize_rows(values, f.data() + i0 * cols, i1 - i0, cols, c.values.data() + i0 * b.values,
                    c.scales.data() + i0 * b.scales, c.zero_points.data() + i0 * b.zero_points);
    });
    emit(c);
  }
}

}  // namespace

QuantizeReport quantize_checkpoint(const QuantizeOptions& o) {
  if (!known_scheme(o.scheme)) {
    invalid_argument("quantize: unknown scheme '" + o.scheme + "'; expected q8, q4 or npu-w4");
  }
  std::error_code ec;
  if (fs::exists(o.out_dir) && fs::equivalent(o.model_dir, o.out_dir, ec)) {
    invalid_argument("quantize: --out " + o.out_dir + " is the input directory; write to another one");
  }
  auto ck = Checkpoint::open(o.model_dir);
  const TensorStore& store = ck->weights();
  if (const std::string done = quantization_scheme(*ck); done != "none") {
    invalid_argument("quantize: " + o.model_dir + " is already quantized (" + done +
                     "); quantize the float checkpoint it came from");
  }
  std::unique_ptr<ThreadPool> pool;
  if (o.threads > 1) pool = std::make_unique<ThreadPool>(o.threads);
  const bool created = fs::create_directories(o.out_dir, ec);
  if (ec) invalid_argument("quantize: --out " + o.out_dir + ": cannot create the directory (" + ec.message() + ")");

  QuantizeReport report;
  std::uint64_t total = 0, done = 0;
  for (const std::string& name : store.names()) total += store.get(name).nbytes();
  SafetensorsWriter writer;
  writer.add_metadata("format", "pt");
  writer.add_metadata("staticlm_quantization", o.scheme);
  ThreadPool* tp = pool.get();
  for (const std::string& name : store.names()) {
    const TensorView v = store.get(name);
    report.bytes_in += v.nbytes();
    const Plan plan = plan_for(name, v, o.scheme);
    if (plan.kind == Plan::kToF32) {
      ++report.kept;
      report.bytes_out += dtype_bytes(DType::kF32, static_cast<std::size_t>(v.numel()));
      writer.add(name, DType::kF32, v.shape, [&, v](ByteSink& sink) {
        std::vector<float> f(static_cast<std::size_t>(v.numel()));
        for (std::int64_t i = 0; i < v.numel(); ++i) f[static_cast<std::size_t>(i)] = v.get_f32(i);
        sink.write(f.data(), f.size() * 4);
        done += v.nbytes();
        if (o.progress) o.progress(done, total);
      });
      continue;
    }
    if (plan.kind == Plan::kKeep) {
      ++report.kept;
      report.bytes_out += v.nbytes();
      writer.add(name, v.dtype, v.shape, [&, v](ByteSink& sink) {
        sink.write(v.data, v.nbytes());
        done += v.nbytes();
        if (o.progress) o.progress(done, total);
      });
      continue;
    }
    ++report.quantized;
    const std::int64_t rows = v.shape[0], cols = v.shape[1];
    const DType values = plan.values;
    const bool asym = values == DType::kU4 || values == DType::kU8;
    const Shape scale_shape = values == DType::kI4 ? Shape{rows, cols / kQ4Group} : Shape{rows};
    const DType scale_dtype = values == DType::kI4 ? DType::kF16 : DType::kF32;
    report.bytes_out += dtype_bytes(values, static_cast<std::size_t>(rows * cols)) +
                        dtype_bytes(scale_dtype, static_cast<std::size_t>(scale_shape.numel())) +
                        (asym ? static_cast<std::uint64_t>(rows) : 0);
    // The values, scales and zero points come from the same chunked quantization; each producer
    // redoes it and writes its part (so nothing larger than a chunk is held).
    writer.add(name, values, v.shape, [&, name, v, values](ByteSink& sink) {
      for_each_chunk(name, v, values, tp, [&](const QuantizedChunk& c) { sink.write(c.values.data(), c.values.size()); });
      done += v.nbytes();
      if (o.progress) o.progress(done, total);
    });
    writer.add(name + "_scale", scale_dtype, scale_shape, [name, v, values, tp](ByteSink& sink) {
      for_each_chunk(name, v, values, tp, [&](const QuantizedChunk& c) { sink.write(c.scales.data(), c.scales.size()); });
    });
    if (asym) {
      writer.add(name + "_zero_point", DType::kU8, Shape{rows}, [name, v, values, tp](ByteSink& sink) {
        for_each_chunk(name, v, values, tp,
                       [&](const QuantizedChunk& c) { sink.write(c.zero_points.data(), c.zero_points.size()); });
      });
    }
  }
  try {
    writer.write((fs::path(o.out_dir) / "model.safetensors").string());
    // Every other file of the checkpoint, config.json with the scheme added.
    for (const auto& e : fs::directory_iterator(o.model_dir)) {
      const std::string file = e.path().filename().string();
      if (!e.is_regular_file() || e.path().extension() == ".safetensors" || file == "model.safetensors.index.json") {
        continue;
      }
      if (file == "config.json") {
        nlohmann::ordered_json config = nlohmann::ordered_json::parse(read_file(e.path().string()));
        config["quantization_config"] = {{"quant_method", "staticlm"}, {"scheme", o.scheme}};
        write_text_atomic((fs::path(o.out_dir) / file).string(), config.dump(2) + "\n");
      } else {
        write_text_atomic((fs::path(o.out_dir) / file).string(), read_file(e.path().string()));
      }
    }
  } catch (...) {
    // Nothing half-made left behind: a directory quantize made holds only its files.
    if (created) fs::remove_all(o.out_dir, ec);
    throw;
  }

  return report;
}

}  // namespace staticlm::quant
