#include "runtime/runtime_state.h"

#include "runtime/rope.h"

namespace staticlm {

RuntimeState::RuntimeState(Backend& b, ModelConfig c, std::vector<LayerInfo> l, float fill, ThreadPool* host_pool)
    : backend(b),
      config(std::move(c)),
      layers(std::move(l)),
      max_seq(b.profile().max_seq),
      mask_fill(fill),
      pool(host_pool),
      cache(layers, max_seq) {
  for (const LayerInfo& info : layers) inv_freq.push_back(rope_inv_freq(info));
}

}  // namespace staticlm
