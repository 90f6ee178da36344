#include "backends/plugin/plugin_abi.h"

#include <algorithm>

#include "base/error.h"

namespace staticlm::plugin {

namespace {

// The ABI's dtype values by DType (index: the DType's value); 0: none.
constexpr std::int32_t kAbiDtypes[] = {STATICLM_DTYPE_F32, STATICLM_DTYPE_F16, STATICLM_DTYPE_BF16,
                                       STATICLM_DTYPE_I8,  STATICLM_DTYPE_U8,  STATICLM_DTYPE_I32,
                                       STATICLM_DTYPE_I64, STATICLM_DTYPE_BOOL, 0, 0};

Shape shape_from_abi(std::int32_t rank, const std::int64_t* dims, const std::string& where) {
  if (rank < 0 || rank > STATICLM_PLUGIN_MAX_RANK) {
    invalid_argument(where + ": rank " + std::to_string(rank) + ", expected 0.." +
                     std::to_string(STATICLM_PLUGIN_MAX_RANK));
  }
  return Shape(std::vector<std::int64_t>(dims, dims + rank));
}

void dims_to_abi(const Shape& shape, std::int32_t& rank, std::int64_t* dims) {
  if (shape.rank() > STATICLM_PLUGIN_MAX_RANK) invalid_argument("shape " + shape.to_string() + ": rank above the ABI's 8");
  rank = shape.rank();
  std::copy(shape.dims().begin(), shape.dims().end(), dims);
}

}  // namespace

std::int32_t abi_dtype(DType t) { return kAbiDtypes[static_cast<int>(t)]; }

std::optional<DType> dtype_from_abi(std::int32_t t) {
  for (int i = 0; i < static_cast<int>(std::size(kAbiDtypes)); ++i) {
    if (kAbiDtypes[i] != 0 && kAbiDtypes[i] == t) return static_cast<DType>(i);
  }
  return std::nullopt;
}

staticlm_profile abi_profile(const SubgraphProfile& p) {
  staticlm_profile c{};
  c.struct_size = sizeof(staticlm_profile);
  c.max_seq = p.max_seq;
  c.rope_sine = p.rope_sine == RopeSine::kHf ? STATICLM_ROPE_SINE_HF : STATICLM_ROPE_SINE_PRE_NEGATED;
  c.has_visual_span = p.visual_start_idx.has_value() ? 1 : 0;
  c.visual_start_idx = p.visual_start_idx.value_or(0);
  c.num_visual_tokens = p.num_visual_tokens;
  c.num_patches = p.num_patches;
  c.patch_vector_size = p.patch_vector_size;
  c.patch_grid_height = p.patch_grid_height;
  c.patch_grid_width = p.patch_grid_width;
  c.num_append_lengths = p.append_lengths.size();
  c.append_lengths = p.append_lengths.data();
  return c;
}

SubgraphProfile profile_from_abi(const staticlm_profile& c) {
  if (c.struct_size < sizeof(staticlm_profile)) {
    invalid_argument("profile struct_size " + std::to_string(c.struct_size) + ", expected at least " +
                     std::to_string(sizeof(staticlm_profile)));
  }
  if (c.rope_sine != STATICLM_ROPE_SINE_HF && c.rope_sine != STATICLM_ROPE_SINE_PRE_NEGATED) {
    invalid_argument("profile rope_sine " + std::to_string(c.rope_sine) + ", expected 0 or 1");
  }
  if (c.num_append_lengths > 0 && c.append_lengths == nullptr) invalid_argument("profile append_lengths: null");
  SubgraphProfile p;
  p.max_seq = c.max_seq;
  p.rope_sine = c.rope_sine == STATICLM_ROPE_SINE_HF ? RopeSine::kHf : RopeSine::kPreNegatedSin;
  if (c.has_visual_span) p.visual_start_idx = c.visual_start_idx;
  p.num_visual_tokens = c.num_visual_tokens;
  p.num_patches = c.num_patches;
  p.patch_vector_size = c.patch_vector_size;
  p.patch_grid_height = c.patch_grid_height;
  p.patch_grid_width = c.patch_grid_width;
  p.append_lengths.assign(c.append_lengths, c.append_lengths + c.num_append_lengths);
  return p;
}

staticlm_tensor_spec abi_spec(const TensorSpec& spec) {
  staticlm_tensor_spec s{};
  s.name = spec.name.c_str();
  s.dtype = abi_dtype(spec.dtype);
  if (s.dtype == 0) invalid_argument("tensor " + spec.name + ": dtype " + dtype_name(spec.dtype) + " has no ABI value");
  dims_to_abi(spec.shape, s.rank, s.dims);
  s.dynamic_axis = spec.dynamic_axis;
  return s;
}

TensorSpec spec_from_abi(const staticlm_tensor_spec& s, const std::string& where) {
  if (s.name == nullptr) invalid_argument(where + ": null name");
  TensorSpec spec;
  spec.name = s.name;
  const auto dtype = dtype_from_abi(s.dtype);
  if (!dtype) invalid_argument(where + " " + spec.name + ": unknown dtype value " + std::to_string(s.dtype));
  spec.dtype = *dtype;
  spec.shape = shape_from_abi(s.rank, s.dims, where + " " + spec.name);
  spec.dynamic_axis = s.dynamic_axis;
  return spec;
}

staticlm_tensor_buffer abi_buffer(DType dtype, const Shape& shape, const void* data) {
  staticlm_tensor_buffer b{};
  b.dtype = abi_dtype(dtype);
  dims_to_abi(shape, b.rank, b.dims);
  b.data = const_cast<void*>(data);  // inputs: the ABI's rule is read-only
  b.byte_size = dtype_bytes(dtype, static_cast<std::size_t>(shape.numel()));
  return b;
}

TensorView view_from_abi(const staticlm_tensor_buffer& b, const std::string& where) {
  const auto dtype = dtype_from_abi(b.dtype);
  if (!dtype) invalid_argument(where + ": unknown dtype value " + std::to_string(b.dtype));
  TensorView v{*dtype, shape_from_abi(b.rank, b.dims, where), b.data};
  if (b.byte_size != v.nbytes()) {
    invalid_argument(where + ": byte_size " + std::to_string(b.byte_size) + ", expected " + std::to_string(v.nbytes()) +
                     " for " + v.shape.to_string());
  }
  if (b.data == nullptr && b.byte_size > 0) invalid_argument(where + ": null data");
  return v;
}

AbiSignatures abi_signatures(const std::vector<SubgraphSignature>& sigs) {
  AbiSignatures a;
  for (const SubgraphSignature& sig : sigs) {
    auto& in = a.inputs.emplace_back();
    for (const TensorSpec& t : sig.inputs) in.push_back(abi_spec(t));
    auto& out = a.outputs.emplace_back();
    for (const TensorSpec& t : sig.outputs) out.push_back(abi_spec(t));
  }
  // Pointers are taken once every vector has its final size.
  for (std::size_t i = 0; i < sigs.size(); ++i) {
    a.signatures.push_back({sigs[i].name.c_str(), a.inputs[i].size(), a.inputs[i].data(), a.outputs[i].size(),
                            a.outputs[i].data()});
  }
  return a;
}

}  // namespace staticlm::plugin
