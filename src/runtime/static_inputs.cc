#include "runtime/static_inputs.h"

#include <algorithm>

#include "base/error.h"
#include "runtime/valid_mask.h"

namespace staticlm {

namespace {

void check_image_tensors(const ProcessorBatch& b, const VisionProfile& profile, std::int64_t image_token_id,
                         std::span<const std::int64_t> ids) {
  if (!b.pixel_values) invalid_argument("processor output has image_position_ids but no pixel_values");
  if (!b.image_position_ids) invalid_argument("processor output has pixel_values but no image_position_ids");
  // Text span first: a stale visual_start_idx must never silently fuse the image elsewhere.
  profile.validate_text_input_ids(ids, image_token_id);
  profile.validate_image_position_ids(b.image_position_ids->view());
  if (b.pixel_values->dtype() != DType::kF32) {
    invalid_argument(std::string("pixel_values must be F32, got ") + dtype_name(b.pixel_values->dtype()));
  }
  profile.validate_pixel_values_shape(b.pixel_values->shape());
  if (!b.num_soft_tokens_per_image.empty()) profile.validate_soft_token_counts(b.num_soft_tokens_per_image);
}

}  // namespace

StaticInputs build_static_inputs(const ProcessorBatch& b, const StaticInputOptions& o) {
  o.layout.validate();
  const Shape& shape = b.input_ids.shape();
  if (shape.rank() != 2 || shape[0] != 1) {
    invalid_argument("processor input_ids must be [1, T] (batch 1), got " + shape.to_string());
  }
  if (b.input_ids.dtype() != DType::kI64) {
    invalid_argument(std::string("processor input_ids must be I64, got ") + dtype_name(b.input_ids.dtype()));
  }
  const TensorView mask_view = b.attention_mask ? b.attention_mask->view() : TensorView{};
  const Tensor valid = normalize_valid_token_mask(b.input_ids.view(), b.attention_mask ? &mask_view : nullptr, o.pad_token_id);
  validate_padding_layout(valid.view(), o.padding_side);

  // With right padding the valid tokens are a prefix; its length is T.
  const auto valid_flags = valid.as<std::uint8_t>();
  const std::int64_t t = std::count(valid_flags.begin(), valid_flags.end(), std::uint8_t{1});
  const std::int64_t max_seq = o.layout.max_seq;
  if (t == 0) invalid_argument("the processor produced no valid tokens for the prompt");
  if (t > max_seq) {
    out_of_range("Input sequence length T=" + std::to_string(t) + " exceeds max_seq " + std::to_string(max_seq));
  }
  if (o.reserve_decode_slot && t > max_seq - 1) {
    out_of_range("Input sequence length T=" + std::to_string(t) + " leaves no decode slot: with max_seq " +
                 std::to_string(max_seq) + " a prompt may have at most max_seq - 1 = " + std::to_string(max_seq - 1) +
                 " tokens");
  }
  if (!o.image_token_id) {
    invalid_argument("config.image_token_id is required (the top-level config.json field; text_config's is not used)");
  }
  if (!o.pad_token_id) invalid_argument("text_config.pad_token_id is required to pad the prompt to max_seq");
  const std::int64_t image_id = *o.image_token_id, pad = *o.pad_token_id;
  const std::span<const std::int64_t> ids = b.input_ids.as<std::int64_t>().subspan(0, static_cast<std::size_t>(t));

  const bool has_image = b.pixel_values || b.image_position_ids;
  if (has_image) {
    check_image_tensors(b, o.profile, image_id, ids);
    if (o.layout.visual_start_idx != o.profile.visual_start_idx || o.layout.num_visual_tokens != o.profile.num_visual_tokens) {
      invalid_argument("static layout span [" + std::to_string(o.layout.visual_start_idx) + ", " +
                       std::to_string(o.layout.visual_end_idx()) + ") differs from vision profile '" + o.profile.name +
                       "' span [" + std::to_string(o.profile.visual_start_idx) + ", " +
                       std::to_string(o.profile.visual_end_idx()) + ")");
    }
  } else {
    const auto stray = std::find(ids.begin(), ids.end(), image_id);
    if (stray != ids.end()) {
      invalid_argument("the prompt has an image placeholder (id " + std::to_string(image_id) + ") at position " +
                       std::to_string(stray - ids.begin()) + " but no image was given");
    }
  }

  StaticInputs out;
  out.llm_input_ids = Tensor(DType::kI64, Shape{1, max_seq});
  out.attention_mask = Tensor(DType::kBool, Shape{1, max_seq});
  out.valid_length = Tensor(DType::kI64, Shape{1});
  auto llm = out.llm_input_ids.as<std::int64_t>();
  auto mask = out.attention_mask.as<std::uint8_t>();
  for (std::int64_t i = 0; i < max_seq; ++i) {
    // Placeholders become pad ids: HF's Gemma4Model.forward does the same before embedding.
    llm[i] = i < t && ids[i] != image_id ? ids[i] : pad;
    mask[i] = i < t;
  }
  out.valid_length.as<std::int64_t>()[0] = t;
  out.raw_input_ids = Tensor(DType::kI64, Shape{1, t});
  std::copy(ids.begin(), ids.end(), out.raw_input_ids.as<std::int64_t>().begin());
  if (has_image) {
    out.pixel_values = Tensor::copy_of(b.pixel_values->view());
    // Kept as I64 whatever integer type the processor used (the values were checked above).
    const TensorView pos = b.image_position_ids->view();
    out.image_position_ids = Tensor(DType::kI64, pos.shape);
    auto dst = out.image_position_ids->as<std::int64_t>();
    for (std::int64_t i = 0; i < pos.numel(); ++i) {
      dst[i] = pos.dtype == DType::kI64 ? pos.as<std::int64_t>()[i] : pos.as<std::int32_t>()[i];
    }
  }
  return out;
}

}  // namespace staticlm
