// A Backend decorator that times vision_prefill and keeps its output: the image encode is
// reported apart from prefill, and a logits dump writes the image rows.
//
// Ownership: borrows the backend it wraps, which must outlive it.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "staticlm/backend.h"

namespace staticlm::api {

class VisionTap : public Backend {
 public:
  explicit VisionTap(Backend& inner) : inner_(inner) {}
  std::string name() const override { return inner_.name(); }
  const SubgraphProfile& profile() const override { return inner_.profile(); }
  const std::vector<SubgraphSignature>& signatures() const override { return inner_.signatures(); }
  void run(const std::string& name, std::span<const TensorView> inputs,
           std::span<const TensorBuffer> outputs) override;

  double vision_seconds() const { return vision_seconds_; }  // summed over every call
  const std::vector<float>& vision_embeds() const { return embeds_; }  // [rows, D] of the last call
  std::int64_t vision_rows() const { return rows_; }

 private:
  Backend& inner_;
  double vision_seconds_ = 0;
  std::vector<float> embeds_;
  std::int64_t rows_ = 0;
};

}  // namespace staticlm::api
