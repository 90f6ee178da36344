// The valid-token mask of an unpadded processor batch and the padding-layout rule of the static
// runtime (TICO's _normalize_valid_token_mask and _validate_padding_layout): valid tokens first,
// then padding. Gemma 4's static runtime supports right padding only. Pure functions: tensors
// are borrowed, the returned mask is owned by the caller.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "tensor/tensor.h"

namespace staticlm {

// input_ids [B, T] (I64 or I32); attention_mask [B, T] (BOOL, U8, I8, I32 or I64) or null.
// Returns BOOL [B, T]: attention_mask != 0 when given; else input_ids != pad_token_id; else all
// true when there is no pad id. An attention_mask of another shape is kInvalidArgument
// ("attention_mask shape [..] does not match input_ids shape [..]").
Tensor normalize_valid_token_mask(const TensorView& input_ids, const TensorView* attention_mask,
                                  std::optional<std::int64_t> pad_token_id);

// Refuses any padding_side but "right" (kUnsupported, "Unsupported padding_side ...: only
// 'right' padding is supported"). `where` prefixes the message (e.g. a config file name).
void check_padding_side(const std::string& padding_side, const std::string& where = "");

// valid_token_mask [B, T] (BOOL or U8): check_padding_side, then every row must be valid tokens
// followed only by padding; a valid token after padding ("True after False", e.g. [1,1,0,1]) is
// kInvalidArgument "Right padding expected but not found: row R has a valid token at position
// P after padding at position Q".
void validate_padding_layout(const TensorView& valid_token_mask, const std::string& padding_side);

}  // namespace staticlm
