#include "runtime/static_inputs_check.h"

#include <algorithm>
#include <cstring>

namespace staticlm {

namespace {

// Compares a runtime tensor with an expected one of the same dtype, element by element.
template <typename T>
InputCheck compare(const std::string& name, const Tensor& actual, const Tensor& expected) {
  InputCheck c{name, false, ""};
  if (actual.dtype() != expected.dtype()) {
    c.detail = std::string("dtype ") + dtype_name(actual.dtype()) + ", expected " + dtype_name(expected.dtype());
    return c;
  }
  if (actual.shape() != expected.shape()) {
    c.detail = "shape " + actual.shape().to_string() + ", expected " + expected.shape().to_string();
    return c;
  }
  const auto a = actual.as<T>();
  const auto e = expected.as<T>();
  for (std::size_t i = 0; i < a.size(); ++i) {
    // Bitwise for floats too: the same processor output must come through unchanged.
    if (std::memcmp(&a[i], &e[i], sizeof(T)) != 0) {
      c.detail = "element " + std::to_string(i) + " is " + std::to_string(a[i]) + ", expected " + std::to_string(e[i]);
      return c;
    }
  }
  c.passed = true;
  c.detail = "exact match, shape " + actual.shape().to_string();
  return c;
}

// Compares an optional tensor that must be present on both sides or on neither.
template <typename T>
InputCheck compare_optional(const std::string& name, const std::optional<Tensor>& actual,
                            const std::optional<Tensor>& expected) {
  if (actual.has_value() != expected.has_value()) {
    return {name, false,
            std::string("presence mismatch: runtime=") + (actual ? "true" : "false") +
                ", reference=" + (expected ? "true" : "false")};
  }
  if (!actual) return {name, true, "absent on both sides (text-only prompt)"};
  return compare<T>(name, *actual, *expected);
}

}  // namespace

std::vector<InputCheck> check_static_inputs(const StaticInputs& rt, const ProcessorBatch& ref, std::int64_t max_seq,
                                            std::int64_t pad_token_id, std::optional<std::int64_t> image_token_id) {
  // The reference layout, derived directly from the raw processor ids.
  const auto raw = ref.input_ids.as<std::int64_t>();
  std::int64_t t = static_cast<std::int64_t>(raw.size());
  if (ref.attention_mask) {
    // Trailing padding the processor may have added is not part of the prompt.
    const TensorView m = ref.attention_mask->view();
    while (t > 0 && m.get_f32(t - 1) == 0.0f) --t;
  }
  Tensor ids(DType::kI64, Shape{1, max_seq});
  Tensor mask(DType::kBool, Shape{1, max_seq});
  Tensor length(DType::kI64, Shape{1});
  auto ids_v = ids.as<std::int64_t>();
  std::fill(ids_v.begin(), ids_v.end(), pad_token_id);
  for (std::int64_t i = 0; i < std::min(t, max_seq); ++i) {
    ids_v[i] = raw[i];
    mask.as<std::uint8_t>()[i] = 1;
  }
  if (image_token_id) {
    for (auto& v : ids_v) {
      if (v == *image_token_id) v = pad_token_id;
    }
  }
  length.as<std::int64_t>()[0] = t;

  std::vector<InputCheck> checks;
  checks.push_back(compare<std::int64_t>("llm_input_ids", rt.llm_input_ids, ids));
  checks.push_back(compare<std::uint8_t>("attention_mask", rt.attention_mask, mask));
  checks.push_back(compare_optional<float>("pixel_values", rt.pixel_values, ref.pixel_values));
  std::optional<Tensor> ref_pos;
  if (ref.image_position_ids) {
    // The runtime keeps position ids as I64; widen the reference the same way.
    const TensorView p = ref.image_position_ids->view();
    ref_pos = Tensor(DType::kI64, p.shape);
    for (std::int64_t i = 0; i < p.numel(); ++i) {
      ref_pos->as<std::int64_t>()[i] = p.dtype == DType::kI32 ? p.as<std::int32_t>()[i] : p.as<std::int64_t>()[i];
    }
  }
  checks.push_back(compare_optional<std::int64_t>("image_position_ids", rt.image_position_ids, ref_pos));
  checks.push_back(compare<std::int64_t>("valid_length", rt.valid_length, length));

  // Explicit padding check: every slot past T holds the pad id.
  InputCheck padding{"padding", true, ""};
  const auto rt_ids = rt.llm_input_ids.as<std::int64_t>();
  for (std::size_t i = static_cast<std::size_t>(std::max<std::int64_t>(t, 0)); i < rt_ids.size(); ++i) {
    if (rt_ids[i] != pad_token_id) {
      padding.passed = false;
      padding.detail = "slot " + std::to_string(i) + " past T=" + std::to_string(t) + " holds " +
                       std::to_string(rt_ids[i]) + ", not the pad id " + std::to_string(pad_token_id);
      break;
    }
  }
  if (padding.passed) {
    padding.detail = std::to_string(rt_ids.size() - std::min<std::size_t>(rt_ids.size(), static_cast<std::size_t>(t))) +
                     " slots past T hold the pad id " + std::to_string(pad_token_id);
  }
  checks.push_back(padding);
  return checks;
}

bool all_passed(const std::vector<InputCheck>& checks) {
  for (const InputCheck& c : checks) {
    if (!c.passed) return false;
  }
  return true;
}

}  // namespace staticlm
