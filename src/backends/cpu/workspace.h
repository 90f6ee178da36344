// Scratch activations of the CPU subgraphs, owned by the CpuBackend and reused across calls so
// a decode step allocates nothing after the first one.
#pragma once

#include <cstddef>
#include <vector>

namespace staticlm::cpu {

struct Workspace {
  std::vector<float> normed, q, k, v, attn, proj, gate, up, scores;

  // Grows `buf` to at least n floats and returns its data.
  static float* get(std::vector<float>& buf, std::size_t n) {
    if (buf.size() < n) buf.resize(n);
    return buf.data();
  }
};

}  // namespace staticlm::cpu
