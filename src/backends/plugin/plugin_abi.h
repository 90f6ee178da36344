// Conversions between the plug-in C ABI (staticlm/backend_plugin.h) and the C++ types of
// staticlm/backend.h, shared by the loader (plugin_backend.h) and the exporter
// (plugin_export.h), so both sides read and write the structs the same way.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "staticlm/backend.h"
#include "staticlm/backend_plugin.h"

namespace staticlm::plugin {

// STATICLM_DTYPE_* for a DType; 0 for one the ABI has no value for (I4, U4).
std::int32_t abi_dtype(DType t);
std::optional<DType> dtype_from_abi(std::int32_t t);

// A C profile pointing into `append` (which must outlive it).
staticlm_profile abi_profile(const SubgraphProfile& p);
// Throws kInvalidArgument naming the field for a bad struct size or value.
SubgraphProfile profile_from_abi(const staticlm_profile& p);

// A tensor spec as C; `name` points into `spec.name` (which must outlive it). Throws
// kInvalidArgument for a rank above STATICLM_PLUGIN_MAX_RANK or a dtype the ABI lacks.
staticlm_tensor_spec abi_spec(const TensorSpec& spec);
// Throws kInvalidArgument naming `where` for a null name, bad rank or unknown dtype.
TensorSpec spec_from_abi(const staticlm_tensor_spec& s, const std::string& where);

// A buffer descriptor for a view (data is not copied).
staticlm_tensor_buffer abi_buffer(DType dtype, const Shape& shape, const void* data);
// Throws kInvalidArgument naming `where` for a bad rank, dtype or byte size.
TensorView view_from_abi(const staticlm_tensor_buffer& b, const std::string& where);

// C signatures that point into `sigs` (which must outlive them), and their tensor arrays.
struct AbiSignatures {
  std::vector<std::vector<staticlm_tensor_spec>> inputs, outputs;
  std::vector<staticlm_subgraph_signature> signatures;
};
AbiSignatures abi_signatures(const std::vector<SubgraphSignature>& sigs);

}  // namespace staticlm::plugin
