#include "quant/quantize_checkpoint.h"

#include <filesystem>
#include <nlohmann/json.hpp>
#include <vector>

#include "backends/cpu/kernels/matmul.h"
#include "base/error.h"
#include "base/file.h"
#include "model/checkpoint.h"
#include "quant/formats.h"
#include "tensor/safetensors.h"

namespace staticlm::quant {

namespace fs = std::filesystem;

namespace {

// Rows quantized per step: bounds the f32 staging buffer (e.g. 1024 x 12288 floats = 48 MiB).
constexpr std::int64_t kRowChunk = 1024;

bool should_quantize(const std::string& name, const TensorView& v, const std::string& scheme) {
  if (v.shape.rank() != 2 || !dtype_is_float(v.dtype)) return false;
  if (name.size() < 7 || name.compare(name.size() - 7, 7, ".weight") != 0) return false;
  return scheme == "q8" || v.shape[1] % kQ4Group == 0;
}

// Rows [r0, r0 + n) of v as f32.
void rows_f32(const TensorView& v, std::int64_t r0, std::int64_t n, std::vector<float>& out) {
  const cpu::WeightMatrix w{v.dtype, v.shape[0], v.shape[1], v.data};
  out.resize(static_cast<std::size_t>(n * w.cols));
  for (std::int64_t r = 0; r < n; ++r) cpu::weight_row_f32(w, r0 + r, out.data() + r * w.cols);
}

// Rows of one chunk quantized: q8 values and scales, or q4 packed values and f16 scales.
struct QuantizedChunk {
  std::vector<std::int8_t> q8;
  std::vector<float> s8;
  std::vector<std::uint8_t> q4;
  std::vector<std::uint16_t> s4;
};

// Quantizes v [rows, cols] kRowChunk rows at a time, calling emit on each chunk in order.
template <typename Emit>
void for_each_chunk(const TensorView& v, bool q8, const Emit& emit) {
  const std::int64_t rows = v.shape[0], cols = v.shape[1];
  std::vector<float> f;
  QuantizedChunk c;
  for (std::int64_t r0 = 0; r0 < rows; r0 += kRowChunk) {
    const std::int64_t n = std::min(kRowChunk, rows - r0);
    rows_f32(v, r0, n, f);
    if (q8) {
      c.q8.resize(static_cast<std::size_t>(n * cols));
      c.s8.resize(static_cast<std::size_t>(n));
      quantize_q8(f, n, cols, c.q8, c.s8);
    } else {
      c.q4.resize(static_cast<std::size_t>(n * cols / 2));
      c.s4.resize(static_cast<std::size_t>(n * cols / kQ4Group));
      quantize_q4(f, n, cols, c.q4, c.s4);
    }
    emit(c);
  }
}

}  // namespace

QuantizeReport quantize_checkpoint(const QuantizeOptions& o) {
  if (o.scheme == "npu-w4") unsupported("quantize: scheme npu-w4 is not implemented yet; available: q8, q4");
  if (o.scheme != "q8" && o.scheme != "q4") {
    invalid_argument("quantize: unknown scheme '" + o.scheme + "'; expected q8 or q4");
  }
  std::error_code ec;
  if (fs::exists(o.out_dir) && fs::equivalent(o.model_dir, o.out_dir, ec)) {
    invalid_argument("quantize: --out " + o.out_dir + " is the input directory; write to another one");
  }
  auto ck = Checkpoint::open(o.model_dir);
  const TensorStore& store = ck->weights();
  fs::create_directories(o.out_dir);

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

  QuantizeReport report;
  std::uint64_t total = 0, done = 0;
  for (const std::string& name : store.names()) total += store.get(name).nbytes();
  SafetensorsWriter writer;
  writer.add_metadata("format", "pt");
  writer.add_metadata("staticlm_quantization", o.scheme);
  const bool q8 = o.scheme == "q8";
  for (const std::string& name : store.names()) {
    const TensorView v = store.get(name);
    report.bytes_in += v.nbytes();
    if (!should_quantize(name, v, o.scheme)) {
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
    const DType values = q8 ? DType::kI8 : DType::kI4;
    const Shape scale_shape = q8 ? Shape{rows} : Shape{rows, cols / kQ4Group};
    const DType scale_dtype = q8 ? DType::kF32 : DType::kF16;
    report.bytes_out += dtype_bytes(values, static_cast<std::size_t>(rows * cols)) +
                        dtype_bytes(scale_dtype, static_cast<std::size_t>(scale_shape.numel()));
    // Values and scales come from the same per-chunk quantization; each producer redoes it for
    // its own part (the scales are a small fraction of the work).
    // The values and the scales come from the same chunked quantization; each producer redoes
    // it and writes its part (so nothing larger than a chunk is held).
    writer.add(name, values, v.shape, [&, v, q8](ByteSink& sink) {
      for_each_chunk(v, q8, [&](const QuantizedChunk& c) {
        if (q8) sink.write(c.q8.data(), c.q8.size()); else sink.write(c.q4.data(), c.q4.size());
      });
      done += v.nbytes();
      if (o.progress) o.progress(done, total);
    });
    writer.add(name + "_scale", scale_dtype, scale_shape, [v, q8](ByteSink& sink) {
      for_each_chunk(v, q8, [&](const QuantizedChunk& c) {
        if (q8) sink.write(c.s8.data(), c.s8.size() * 4); else sink.write(c.s4.data(), c.s4.size() * 2);
      });
    });
  }
  writer.write((fs::path(o.out_dir) / "model.safetensors").string());
  return report;
}

}  // namespace staticlm::quant
