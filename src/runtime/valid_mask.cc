#include "runtime/valid_mask.h"

#include "base/error.h"

namespace staticlm {

namespace {

// Element i of an integer or boolean tensor, widened to int64.
std::int64_t int_at(const TensorView& t, std::int64_t i, const char* what) {
  switch (t.dtype) {
    case DType::kI64: return t.as<std::int64_t>()[i];
    case DType::kI32: return t.as<std::int32_t>()[i];
    case DType::kI8: return t.as<std::int8_t>()[i];
    case DType::kU8:
    case DType::kBool: return t.as<std::uint8_t>()[i];
    default: break;
  }
  invalid_argument(std::string(what) + " must be an integer or boolean tensor, got " + dtype_name(t.dtype));
}

void require_rank2(const TensorView& t, const char* what) {
  if (t.shape.rank() != 2) invalid_argument(std::string(what) + " must be [batch, seq], got shape " + t.shape.to_string());
}

}  // namespace

Tensor normalize_valid_token_mask(const TensorView& input_ids, const TensorView* attention_mask,
                                  std::optional<std::int64_t> pad_token_id) {
  require_rank2(input_ids, "input_ids");
  if (attention_mask != nullptr && attention_mask->shape != input_ids.shape) {
    invalid_argument("attention_mask shape " + attention_mask->shape.to_string() + " does not match input_ids shape " +
                     input_ids.shape.to_string());
  }
  Tensor valid(DType::kBool, input_ids.shape);
  auto out = valid.as<std::uint8_t>();
  for (std::int64_t i = 0; i < input_ids.numel(); ++i) {
    if (attention_mask != nullptr) {
      out[i] = int_at(*attention_mask, i, "attention_mask") != 0;
    } else if (pad_token_id) {
      out[i] = int_at(input_ids, i, "input_ids") != *pad_token_id;
    } else {
      out[i] = 1;
    }
  }
  return valid;
}

void check_padding_side(const std::string& padding_side, const std::string& where) {
  if (padding_side != "right") {
    unsupported((where.empty() ? "" : where + ": ") + "Unsupported padding_side '" + padding_side +
                "': only 'right' padding is supported by the Gemma 4 static runtime");
  }
}

void validate_padding_layout(const TensorView& valid_token_mask, const std::string& padding_side) {
  check_padding_side(padding_side);
  require_rank2(valid_token_mask, "valid_token_mask");
  const std::int64_t rows = valid_token_mask.shape[0], cols = valid_token_mask.shape[1];
  for (std::int64_t r = 0; r < rows; ++r) {
    std::int64_t first_pad = -1;
    for (std::int64_t c = 0; c < cols; ++c) {
      const bool valid = int_at(valid_token_mask, r * cols + c, "valid_token_mask") != 0;
      if (!valid && first_pad < 0) first_pad = c;
      if (valid && first_pad >= 0) {
        invalid_argument("Right padding expected but not found: row " + std::to_string(r) +
                         " has a valid token at position " + std::to_string(c) + " after padding at position " +
                         std::to_string(first_pad));
      }
    }
  }
}

}  // namespace staticlm
