#include "backends/cpu/kernels/matmul.h"

#include <algorithm>
#include <cstring>
#include <vector>

#include "base/error.h"
#include "base/half.h"
#include "backends/cpu/kernels/activations.h"
#include "backends/cpu/kernels/dispatch.h"
#include "backends/cpu/kernels/dot.h"
#include "backends/cpu/kernels/gemm.h"
#include "quant/formats.h"

namespace staticlm::cpu {

namespace {

// Output rows converted per block and reused for every input row.
constexpr std::int64_t kRowBlock = 16;

}  // namespace

WeightMatrix weight_matrix(const TensorView& view, const std::string& name, std::int64_t rows, std::int64_t cols) {
  if (view.dtype != DType::kF32 && view.dtype != DType::kF16 && view.dtype != DType::kBF16) {
    invalid_file("weight " + name + ": dtype " + dtype_name(view.dtype) + ", expected F32, F16 or BF16");
  }
  if (view.shape.rank() != 2 || (rows >= 0 && view.shape[0] != rows) || (cols >= 0 && view.shape[1] != cols)) {
    invalid_file("weight " + name + ": shape " + view.shape.to_string() + ", expected [" +
                 (rows >= 0 ? std::to_string(rows) : std::string("*")) + ", " +
                 (cols >= 0 ? std::to_string(cols) : std::string("*")) + "]");
  }
  return {view.dtype, view.shape[0], view.shape[1], view.data};
}

WeightMatrix quantized_weight_matrix(const TensorView& values, const TensorView& scales, const std::string& name,
                                     std::int64_t rows, std::int64_t cols) {
  if (values.dtype != DType::kI8 && values.dtype != DType::kI4) {
    invalid_file("weight " + name + ": dtype " + dtype_name(values.dtype) + ", expected I8 (q8) or I4 (q4)");
  }
  if (values.shape.rank() != 2 || (rows >= 0 && values.shape[0] != rows) || (cols >= 0 && values.shape[1] != cols)) {
    invalid_file("weight " + name + ": shape " + values.shape.to_string() + ", expected [" +
                 (rows >= 0 ? std::to_string(rows) : std::string("*")) + ", " +
                 (cols >= 0 ? std::to_string(cols) : std::string("*")) + "]");
  }
  const std::int64_t r = values.shape[0], c = values.shape[1];
  const bool q8 = values.dtype == DType::kI8;
  if (!q8 && c % quant::kQ4Group != 0) {
    invalid_file("weight " + name + ": q4 input width " + std::to_string(c) + " is not a multiple of " +
                 std::to_string(quant::kQ4Group));
  }
  const Shape want = q8 ? Shape{r} : Shape{r, c / quant::kQ4Group};
  const DType want_dtype = q8 ? DType::kF32 : DType::kF16;
  if (scales.dtype != want_dtype || scales.shape != want) {
    invalid_file("weight " + name + "_scale: " + dtype_name(scales.dtype) + " " + scales.shape.to_string() +
                 ", expected " + dtype_name(want_dtype) + " " + want.to_string() + " for " + (q8 ? "q8" : "q4"));
  }
  WeightMatrix w{values.dtype, r, c, values.data};
  w.scales = scales.data;
  return w;
}

void weight_row_f32(const WeightMatrix& w, std::int64_t r, float* out) {
  const std::int64_t n = w.cols;
  switch (w.dtype) {
    case DType::kF32:
      std::memcpy(out, static_cast<const float*>(w.data) + r * n, static_cast<std::size_t>(n) * 4);
      return;
    case DType::kBF16: {
      const auto* p = static_cast<const std::uint16_t*>(w.data) + r * n;
      for (std::int64_t i = 0; i < n; ++i) out[i] = bf16_to_f32(p[i]);
      return;
    }
    case DType::kF16: {
      const auto* p = static_cast<const std::uint16_t*>(w.data) + r * n;
      for (std::int64_t i = 0; i < n; ++i) out[i] = f16_to_f32(p[i]);
      return;
    }
    case DType::kI8:
      quant::dequantize_q8_row(static_cast<const std::int8_t*>(w.data), static_cast<const float*>(w.scales), r, n, out);
      return;
    case DType::kI4:
      quant::dequantize_q4_row(static_cast<const std::uint8_t*>(w.data), static_cast<const std::uint16_t*>(w.scales), r,
                               n, out);
      return;
    default:
      internal_error(std::string("weight_row_f32: dtype ") + dtype_name(w.dtype));
  }
}

void matmul_reference(const float* x, std::int64_t n, const WeightMatrix& w, float* y, ThreadPool* pool) {
  const std::int64_t in = w.cols, out = w.rows;
  std::vector<float> rounded;
  if (w.bf16_activations && w.dtype == DType::kBF16 && n >= kGemvRows) {
    rounded.resize(static_cast<std::size_t>(n * in));
    for (std::size_t i = 0; i < rounded.size(); ++i) rounded[i] = bf16_to_f32(f32_to_bf16(x[i]));
    x = rounded.data();
  }
  // Parallel over blocks of output rows; each block's weights are widened once and reused for
  // every input row.
  const std::int64_t blocks = (out + kRowBlock - 1) / kRowBlock;
  parallel_for(pool, blocks, 1, static_cast<double>(kRowBlock * in * n), [&](std::int64_t b0, std::int64_t b1, int) {
    std::vector<float> block;
    if (w.dtype != DType::kF32) block.resize(static_cast<std::size_t>(kRowBlock * in));
    for (std::int64_t b = b0; b < b1; ++b) {
      const std::int64_t o0 = b * kRowBlock, rows = std::min(kRowBlock, out - o0);
      const float* wb = static_cast<const float*>(w.data) + o0 * in;
      if (w.dtype != DType::kF32) {
        for (std::int64_t j = 0; j < rows; ++j) weight_row_f32(w, o0 + j, block.data() + j * in);
        wb = block.data();
      }
      for (std::int64_t r = 0; r < n; ++r) {
        for (std::int64_t j = 0; j < rows; ++j) y[r * out + o0 + j] = dot(x + r * in, wb + j * in, in);
      }
    }
  });
}

namespace {

// Activations as a GEMM reads them, prepared once per call and shared by the threads.
struct PreparedX {
  std::vector<float> rounded;          // bf16-rounded f32 (Highway path)
  std::vector<std::uint32_t> pairs;    // bf16 pairs (AVX-512 BF16 path)
};

PreparedX& prepared_x() {
  static thread_local PreparedX p;
  return p;
}

}  // namespace

void matmul(const float* x, std::int64_t n, const WeightMatrix& w, float* y, ThreadPool* pool) {
  if (scalar_kernels()) return matmul_reference(x, n, w, y, pool);
  const std::int64_t in = w.cols, out = w.rows;
  GemmArgs a{x, in, n, in, w.data, w.dtype, in, y, out, w.scales};
  if (n < kGemvRows) {
    // Decode: output rows split statically over the pool, each weight row read once.
    parallel_for(pool, (out + 15) / 16, 1, static_cast<double>(16 * in * n), [&](std::int64_t b0, std::int64_t b1, int) {
      gemv_f32(a, b0 * 16, std::min(out, b1 * 16));
    });
    return;
  }
  const std::int64_t blocks = (out + kGemmColumnBlock - 1) / kGemmColumnBlock;
  const double cost = static_cast<double>(kGemmColumnBlock * in * n);
  const bool round = w.bf16_activations && w.dtype == DType::kBF16;
  if (round && bf16_dot_kernels()) {
    PreparedX& p = prepared_x();
    const std::int64_t ld = (in + 1) / 2;
    p.pairs.resize(static_cast<std::size_t>(n * ld));
    pack_bf16_pairs(x, n, in, p.pairs.data());
    const std::uint32_t* xb = p.pairs.data();
    parallel_for(pool, blocks, 1, cost, [&](std::int64_t b0, std::int64_t b1, int) {
      gemm_bf16_dot(xb, ld, a, b0 * kGemmColumnBlock, std::min(out, b1 * kGemmColumnBlock));
    });
    return;
  }
  if (round) {
    PreparedX& p = prepared_x();
    p.rounded.resize(static_cast<std::size_t>(n * in));
    round_to_bf16(x, n * in, p.rounded.data());
    a.x = p.rounded.data();
  }
  parallel_for(pool, blocks, 1, cost, [&](std::int64_t b0, std::int64_t b1, int) {
    gemm_f32(a, b0 * kGemmColumnBlock, std::min(out, b1 * kGemmColumnBlock));
  });
}

void matmul_gate_up_gelu(const float* x, std::int64_t n, const WeightMatrix& gate, const WeightMatrix& up, float* out,
                         float* scratch, ThreadPool* pool) {
  const std::int64_t f = gate.rows, in = gate.cols;
  if (scalar_kernels() || n >= kGemvRows) {
    matmul(x, n, gate, out, pool);
    matmul(x, n, up, scratch, pool);
    gelu_tanh_mul(out, scratch, n * f);
    return;
  }
  // Decode: each thread computes its rows of both products, then the activation on them.
  const GemmArgs g{x, in, n, in, gate.data, gate.dtype, in, out, f, gate.scales};
  const GemmArgs u{x, in, n, in, up.data, up.dtype, in, scratch, f, up.scales};
  parallel_for(pool, (f + 15) / 16, 1, static_cast<double>(32 * in * n), [&](std::int64_t b0, std::int64_t b1, int) {
    const std::int64_t j0 = b0 * 16, j1 = std::min(f, b1 * 16);
    gemv_f32(g, j0, j1);
    gemv_f32(u, j0, j1);
    for (std::int64_t r = 0; r < n; ++r) gelu_tanh_mul(out + r * f + j0, scratch + r * f + j0, j1 - j0);
  });
}

}  // namespace staticlm::cpu
