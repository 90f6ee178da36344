#include "backends/cpu/kernels/matmul.h"

#include <algorithm>
#include <atomic>
#include <cstring>
#include <vector>

#include "base/error.h"
#include "base/half.h"
#include "backends/cpu/kernels/activations.h"
#include "backends/cpu/kernels/dispatch.h"
#include "backends/cpu/kernels/dot.h"
#include "backends/cpu/kernels/gemm.h"
#include "backends/cpu/kernels/gemm_amx.h"
#include "backends/cpu/kernels/gemm_int8.h"
#include "backends/cpu/kernels/gemv_vnni.h"
#include "backends/cpu/kernels/row_streams.h"
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

QuantizedScales quantized_scales(DType t, std::int64_t rows, std::int64_t cols) {
  if (t == DType::kI4) return {DType::kF16, Shape{rows, cols / quant::kQ4Group}, false};
  return {DType::kF32, Shape{rows}, t == DType::kU4 || t == DType::kU8};
}

WeightMatrix quantized_weight_matrix(const TensorView& values, const TensorView& scales, const std::string& name,
                                     std::int64_t rows, std::int64_t cols, const TensorView* zero_points) {
  if (!quantized_dtype(values.dtype)) {
    invalid_file("weight " + name + ": dtype " + dtype_name(values.dtype) +
                 ", expected I8 (q8), I4 (q4), U4 or U8 (npu-w4)");
  }
  if (values.shape.rank() != 2 || (rows >= 0 && values.shape[0] != rows) || (cols >= 0 && values.shape[1] != cols)) {
    invalid_file("weight " + name + ": shape " + values.shape.to_string() + ", expected [" +
                 (rows >= 0 ? std::to_string(rows) : std::string("*")) + ", " +
                 (cols >= 0 ? std::to_string(cols) : std::string("*")) + "]");
  }
  const std::int64_t r = values.shape[0], c = values.shape[1];
  const DType t = values.dtype;
  const char* scheme = t == DType::kI8 ? "q8" : t == DType::kI4 ? "q4" : "npu-w4";
  if (t == DType::kI4 && c % quant::kQ4Group != 0) {
    invalid_file("weight " + name + ": q4 input width " + std::to_string(c) + " is not a multiple of " +
                 std::to_string(quant::kQ4Group));
  }
  if (t == DType::kU4 && c % 2 != 0) {
    invalid_file("weight " + name + ": U4 input width " + std::to_string(c) + " is odd; rows are whole bytes");
  }
  const QuantizedScales want = quantized_scales(t, r, c);
  if (scales.dtype != want.dtype || scales.shape != want.shape) {
    invalid_file("weight " + name + "_scale: " + dtype_name(scales.dtype) + " " + scales.shape.to_string() +
                 ", expected " + dtype_name(want.dtype) + " " + want.shape.to_string() + " for " + scheme);
  }
  WeightMatrix w{t, r, c, values.data};
  w.scales = scales.data;
  if (want.has_zero_points) {
    if (zero_points == nullptr) invalid_file("weight " + name + " is quantized (" + dtype_name(t) + ") but " + name + "_zero_point is missing");
    if (zero_points->dtype != DType::kU8 || zero_points->shape != Shape{r}) {
      invalid_file("weight " + name + "_zero_point: " + dtype_name(zero_points->dtype) + " " +
                   zero_points->shape.to_string() + ", expected U8 [" + std::to_string(r) + "] for npu-w4");
    }
    w.zero_points = static_cast<const std::uint8_t*>(zero_points->data);
    if (t == DType::kU4) quant::check_u4_zero_points(w.zero_points, r, "weight " + name + "_zero_point");
  }
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
    case DType::kI4:
    case DType::kU4:
    case DType::kU8:
      quant::dequantize_range(w.dtype, w.data, w.scales, w.zero_points, n, r, 0, n, out);
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

std::atomic<std::int64_t> g_amx_gemm_calls{0};

// Bytes of the weight values a GEMV streams (scales and zero points aside).
double weight_bytes(const WeightMatrix& w) {
  return static_cast<double>(dtype_bytes(w.dtype, static_cast<std::size_t>(w.rows * w.cols)));
}

// Activations as a GEMM reads them, prepared once per call and shared by the threads.
struct PreparedX {
  std::vector<float> rounded;          // bf16-rounded f32 (Highway path)
  std::vector<std::uint32_t> pairs;    // bf16 pairs (AVX-512 BF16 path)
};

PreparedX& prepared_x() {
  static thread_local PreparedX p;
  return p;
}

// Decode rows quantized for the VNNI GEMV of `w`, or nullptr when that kernel does not apply.
// `slot` keeps two sets apart (gate and up may differ in dtype).
const std::vector<VnniRow>* vnni_rows(const float* x, std::int64_t n, const WeightMatrix& w, int slot = 0) {
  if (!vnni_kernels() || !vnni_gemv_supported(w.dtype, w.cols)) return nullptr;
  static thread_local std::vector<VnniRow> rows[2];
  std::vector<VnniRow>& r = rows[slot];
  r.resize(static_cast<std::size_t>(n));
  for (std::int64_t i = 0; i < n; ++i) prepare_vnni_row(x + i * w.cols, w.cols, w.dtype, r[static_cast<std::size_t>(i)]);
  return &r;
}

// Rows [j0, j1) of every decode row: the VNNI kernel when `rows` is set, else the f32 GEMV.
void gemv_rows(const GemmArgs& a, const std::vector<VnniRow>* rows, std::int64_t j0, std::int64_t j1) {
  if (rows == nullptr) return gemv_f32(a, j0, j1);
  for (std::int64_t r = 0; r < a.n; ++r) gemv_vnni((*rows)[static_cast<std::size_t>(r)], a, a.y + r * a.ldy, j0, j1);
}

}  // namespace

std::int64_t amx_gemm_calls() { return g_amx_gemm_calls.load(std::memory_order_relaxed); }

void matmul(const float* x, std::int64_t n, const WeightMatrix& w, float* y, ThreadPool* pool) {
  if (scalar_kernels()) return matmul_reference(x, n, w, y, pool);
  const std::int64_t in = w.cols, out = w.rows;
  GemmArgs a{x, in, n, in, w.data, w.dtype, in, y, out, w.scales, w.zero_points};
  if (n < kGemvRows) {
    // Decode: output rows shared by the pool's threads (row_streams.h), each weight row read
    // once.
    const std::vector<VnniRow>* rows = vnni_rows(x, n, w);
    parallel_rows_shared(pool, (out + 15) / 16, static_cast<double>(16 * in * n), weight_bytes(w),
                         [&](std::int64_t b0, std::int64_t b1) {
      gemv_rows(a, rows, b0 * 16, std::min(out, b1 * 16));
    });
    return;
  }
  const std::int64_t blocks = (out + kGemmColumnBlock - 1) / kGemmColumnBlock;
  const double cost = static_cast<double>(kGemmColumnBlock * in * n);
  if (amx_kernels() && w.bf16_activations && (w.dtype == DType::kBF16 || quantized_dtype(w.dtype))) {
    // AMX: x as bf16 pairs in tiles, rows and pairs padded with zeros to whole tiles.
    PreparedX& p = prepared_x();
    const std::int64_t ld = ((in + 1) / 2 + kAmxPairs - 1) / kAmxPairs * kAmxPairs;
    const std::int64_t rows = (n + kAmxRows - 1) / kAmxRows * kAmxRows;
    p.pairs.resize(static_cast<std::size_t>(rows * ld));
    pack_amx_tiles(x, n, in, p.pairs.data(), ld);
    g_amx_gemm_calls.fetch_add(1, std::memory_order_relaxed);
    const std::uint32_t* xb = p.pairs.data();
    parallel_for(pool, blocks, 1, cost, [&](std::int64_t b0, std::int64_t b1, int) {
      gemm_bf16_amx(xb, ld, a, b0 * kGemmColumnBlock, std::min(out, b1 * kGemmColumnBlock));
    });
    return;
  }
  if (vnni_kernels() && int8_gemm_supported(w.dtype, in)) {
    // Quantized weights on VNNI CPUs: int8 activations, int8 dot products.
    static thread_local Int8Rows this_thread;
    const Int8Rows& rows = this_thread;  // a reference: the pool's threads must see this thread's rows
    prepare_int8_rows(x, n, in, this_thread, pool);
    parallel_for(pool, blocks, 1, cost, [&](std::int64_t b0, std::int64_t b1, int) {
      gemm_int8(rows, a, b0 * kGemmColumnBlock, std::min(out, b1 * kGemmColumnBlock));
    });
    return;
  }
  const bool round = w.bf16_activations && w.dtype == DType::kBF16;
  // Quantized weights marked bf16_activations take the bf16 dot path where the CPU has it
  // (dequantized into bf16 panels); elsewhere they stay f32 like the reference.
  const bool quantized_bf16 = w.bf16_activations && quantized_dtype(w.dtype) && bf16_dot_kernels();
  if ((round && bf16_dot_kernels()) || quantized_bf16) {
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

void matmul_same_input(const float* x, std::int64_t n, std::span<const MatmulOut> outs, ThreadPool* pool) {
  bool fuse = !scalar_kernels() && n < kGemvRows && outs.size() > 1;
  for (const MatmulOut& o : outs) fuse = fuse && o.w->dtype == outs[0].w->dtype && o.w->cols == outs[0].w->cols;
  if (!fuse) {
    for (const MatmulOut& o : outs) matmul(x, n, *o.w, o.y, pool);
    return;
  }
  const std::int64_t in = outs[0].w->cols;
  const std::vector<VnniRow>* rows = vnni_rows(x, n, *outs[0].w);
  std::vector<GemmArgs> args;
  std::vector<std::int64_t> first_block = {0};  // blocks of 16 output rows, matrix after matrix
  double bytes = 0;
  for (const MatmulOut& o : outs) {
    const WeightMatrix& w = *o.w;
    args.push_back({x, in, n, in, w.data, w.dtype, in, o.y, w.rows, w.scales, w.zero_points});
    first_block.push_back(first_block.back() + (w.rows + 15) / 16);
    bytes += weight_bytes(w);
  }
  parallel_rows_shared(pool, first_block.back(), static_cast<double>(16 * in * n), bytes,
                       [&](std::int64_t b0, std::int64_t b1) {
    for (std::size_t i = 0; i < args.size(); ++i) {
      const std::int64_t lo = std::max(b0, first_block[i]), hi = std::min(b1, first_block[i + 1]);
      if (lo >= hi) continue;
      const std::int64_t m = outs[i].w->rows;
      gemv_rows(args[i], rows, (lo - first_block[i]) * 16, std::min(m, (hi - first_block[i]) * 16));
    }
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
  const GemmArgs g{x, in, n, in, gate.data, gate.dtype, in, out, f, gate.scales, gate.zero_points};
  const GemmArgs u{x, in, n, in, up.data, up.dtype, in, scratch, f, up.scales, up.zero_points};
  const std::vector<VnniRow>* grows = vnni_rows(x, n, gate, 0);
  const std::vector<VnniRow>* urows = up.dtype == gate.dtype ? grows : vnni_rows(x, n, up, 1);
  parallel_rows_shared(pool, (f + 15) / 16, static_cast<double>(32 * in * n), weight_bytes(gate) + weight_bytes(up),
                       [&](std::int64_t b0, std::int64_t b1) {
    const std::int64_t j0 = b0 * 16, j1 = std::min(f, b1 * 16);
    gemv_rows(g, grows, j0, j1);
    gemv_rows(u, urows, j0, j1);
    for (std::int64_t r = 0; r < n; ++r) gelu_tanh_mul(out + r * f + j0, scratch + r * f + j0, j1 - j0);
  });
}

}  // namespace staticlm::cpu
