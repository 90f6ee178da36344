// The order of the sampling stages, as llama.cpp's --samplers / --sampling-seq and its server's
// `samplers` field give it. An empty order is staticlm's default (Hugging Face's: penalties,
// temperature, top-k, top-p, min-p, typical; runtime/sampler.h).
#pragma once

#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

namespace staticlm {

enum class SamplerStage { kPenalties, kDry, kTopNSigma, kTopK, kTypicalP, kTopP, kMinP, kXtc, kTemperature };

// The most stages an order may hold (a stage may repeat; each runs every step, over up to the
// whole vocabulary, so a request's order is bounded as its other sizes are).
inline constexpr std::size_t kMaxSamplerStages = 64;

// llama.cpp's name of a stage ("top_k", "typ_p", ...).
std::string_view sampler_stage_name(SamplerStage stage);

// Names in order (llama.cpp's, and its other spellings: "typical_p", "typical", "nucleus",
// "temp", "top-k", ...). An unknown name (or "infill", which needs fill-in-the-middle prompts)
// is kInvalidArgument naming `field`, the name and the known ones; so are more than
// kMaxSamplerStages names (the letters' and the list's forms too).
std::vector<SamplerStage> sampler_order_from_names(const std::vector<std::string>& names, std::string_view field);

// llama.cpp's names separated by ';' (its --samplers), e.g. "top_k;top_p;temperature".
std::vector<SamplerStage> sampler_order_from_list(std::string_view list, std::string_view field);

// llama.cpp's letters (its --sampling-seq), e.g. "edskypmxt": e penalties, d dry, s top-n-sigma,
// k top-k, y typical, p top-p, m min-p, x XTC, t temperature.
std::vector<SamplerStage> sampler_order_from_letters(std::string_view letters, std::string_view field);

}  // namespace staticlm
