#include "runtime/softcap.h"

#include <cmath>

namespace staticlm {

void apply_final_softcap(std::span<float> logits, std::optional<double> cap) {
  if (!cap) return;
  const float c = static_cast<float>(*cap);
  for (float& l : logits) l = std::tanh(l / c) * c;
}

}  // namespace staticlm
