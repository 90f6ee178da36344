// Dense matmul of f32 activations with a weight matrix stored as bf16, f16 or f32 in the
// Hugging Face nn.Linear layout [out, in] (y = x W^T), accumulated in f32. The weight is
// borrowed (usually a view into the memory-mapped checkpoint); nothing is copied at load.
//
// Kernel variants (dispatch.h picks the target):
// - n < kGemvRows: GEMV, each weight streamed once, widened in registers, activations f32.
// - n >= kGemvRows: GEMM over packed panels. A BF16 matrix marked `bf16_activations` meets
//   activations rounded to bf16 (as a bf16 model in transformers computes), on AVX-512 BF16
//   with vdpbf16ps; otherwise activations stay f32.
// - scalar target: matmul_reference, the plain loop the others are tested against.
#pragma once

#include <cstdint>
#include <span>
#include <string>

#include "base/thread_pool.h"
#include "tensor/tensor.h"

namespace staticlm::cpu {

struct WeightMatrix {
  DType dtype = DType::kF32;  // kF32, kF16, kBF16, or quantized (quant/formats.h): kI8 (q8), kI4 (q4),
                              // kU4 / kU8 (npu-w4)
  std::int64_t rows = 0;      // out features
  std::int64_t cols = 0;      // in features
  const void* data = nullptr;  // not owned
  // BF16 only: GEMMs round activations to bf16 (the backend's precision policy).
  bool bf16_activations = false;
  // Quantized only: I8, U4, U8 F32 [rows]; I4 F16 bits [rows, cols / 32]. Not owned.
  const void* scales = nullptr;
  // U4, U8 only: zero points [rows]. Not owned.
  const std::uint8_t* zero_points = nullptr;
};

// True for the quantized weight dtypes (I8, I4, U4, U8).
inline bool quantized_dtype(DType t) { return t == DType::kI8 || t == DType::kI4 || t == DType::kU4 || t == DType::kU8; }

// The scales (and zero points) a quantized matrix of dtype t and [rows, cols] carries: the
// layout quantized_weight_matrix checks and --no-mmap copies.
struct QuantizedScales {
  DType dtype;             // I4: F16; the others: F32
  Shape shape;             // I4: [rows, cols / 32]; the others: [rows]
  bool has_zero_points;    // U4, U8: U8 [rows]
};
QuantizedScales quantized_scales(DType t, std::int64_t rows, std::int64_t cols);

// Rows below which matmul runs the GEMV path.
inline constexpr std::int64_t kGemvRows = 4;

// Checks that `view` is a rank-2 float tensor of [rows, cols] (either may be -1: any) and
// returns it as a WeightMatrix; kInvalidFile naming `name` otherwise.
WeightMatrix weight_matrix(const TensorView& view, const std::string& name, std::int64_t rows = -1,
                           std::int64_t cols = -1);

// A quantized matrix (quant/formats.h): q8 = values I8 [rows, cols] + scales F32 [rows]; q4 =
// values I4 [rows, cols] + scales F16 [rows, cols / 32]; npu-w4 = values U4 or U8 [rows, cols] +
// scales F32 [rows] + zero points U8 [rows] (`zero_points` required for U4 / U8, ignored
// otherwise). kInvalidFile naming `name` and the tensor at fault for a wrong dtype, shape or
// zero point.
WeightMatrix quantized_weight_matrix(const TensorView& values, const TensorView& scales, const std::string& name,
                                     std::int64_t rows = -1, std::int64_t cols = -1,
                                     const TensorView* zero_points = nullptr);

// Row r of w converted to f32 (dequantized when quantized): out[cols].
void weight_row_f32(const WeightMatrix& w, std::int64_t r, float* out);

// y [n, w.rows] = x [n, w.cols] . w^T. y must not alias x. With a pool, output rows are split
// across its threads in blocks; every output is computed the same way either way.
void matmul(const float* x, std::int64_t n, const WeightMatrix& w, float* y, ThreadPool* pool = nullptr);

// One product of matmul_same_input: y = x . w^T.
struct MatmulOut {
  const WeightMatrix* w;
  float* y;
};

// Every product in `outs` for the same x [n, cols] (q, k and v of a layer): for decode rows one
// parallel loop covers the output rows of all of them, and x is prepared once, when the matrices
// share dtype and width; otherwise matmul() each. Results equal matmul()'s.
void matmul_same_input(const float* x, std::int64_t n, std::span<const MatmulOut> outs, ThreadPool* pool = nullptr);

// GEMMs matmul() has run on AMX in this process (bench tells from it whether AMX ran: the
// "+AMX" target runs only GEMMs of bf16-rounded activations on it).
std::int64_t amx_gemm_calls();

// The scalar reference: f32 dot products in a fixed order (x rounded to bf16 first when the
// weight is marked bf16_activations and n >= kGemvRows, as matmul does).
void matmul_reference(const float* x, std::int64_t n, const WeightMatrix& w, float* y, ThreadPool* pool = nullptr);

// out [n, F] = gelu_tanh(x . gate^T) * (x . up^T): the MLP's first half. For decode rows one
// parallel loop computes both products and the activation for each thread's rows.
void matmul_gate_up_gelu(const float* x, std::int64_t n, const WeightMatrix& gate, const WeightMatrix& up, float* out,
                         float* scratch, ThreadPool* pool = nullptr);

}  // namespace staticlm::cpu
