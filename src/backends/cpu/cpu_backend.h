// CpuBackend: every subgraph of the contract (text and vision) computed by this project's own kernels, in
// f32, from bf16 / f16 / f32 weights borrowed from the checkpoint. It is the embedded default
// backend and the numerical reference the others are compared with.
//
// Ownership: the backend borrows the weights (the TensorStore, or whatever the WeightGetter
// reads) and the optional thread pool; they must outlive it. It owns its scratch activations. Not thread-safe: one run() at
// a time.
#pragma once

#include <map>
#include <optional>
#include <memory>
#include <string>
#include <vector>

#include "backends/cpu/decoder_layer.h"
#include "backends/cpu/resident_weights.h"
#include "backends/cpu/text_weights.h"
#include "backends/cpu/vision_prefill.h"
#include "backends/cpu/workspace.h"
#include "base/thread_pool.h"
#include "model/config.h"
#include "model/layer_table.h"
#include "staticlm/backend.h"

namespace staticlm {

class Checkpoint;

struct CpuBackendOptions {
  // Prefill layers skip trailing padding rows when that cannot change a valid output
  // (cpu::active_prefill_rows). false runs the full fixed-shape computation.
  bool skip_padded_rows = true;
  // Splits matmuls and attention across these threads; borrowed, must outlive the backend.
  // Null runs everything on the calling thread. Results are the same either way.
  ThreadPool* pool = nullptr;
  // Precision policy of GEMMs (prefill, vision) on BF16 matrices: true rounds activations to
  // bf16, as transformers computes a bf16 model, and lets AVX-512 BF16 dot products run; false
  // keeps activations f32 (weights widened), so prefill rows equal decode rows to f32 rounding.
  // F32 and F16 matrices always compute in f32; decode (GEMV) always keeps activations f32.
  bool bf16_activations = true;
  // Copies the matrices decode reads every step into huge-page memory (resident_weights.h):
  // they are then anonymous memory, never evicted and re-read from disk under page-cache
  // pressure, and stream in 2 MiB pages. From a checkpoint, the copied pages of its memory map
  // are dropped from the process. false (default): read through the map, no copy at load.
  bool resident_weights = false;
  // Debugging hook (staticlm inspect): shown each vision encoder layer's output [num_patches, Dv]
  // inside vision_prefill. Empty: nothing is shown.
  cpu::VisionLayerTap vision_layer_tap;
};

class CpuBackend : public Backend {
 public:
  // Gathers and checks the weights (kInvalidFile naming a missing or misshapen tensor) and
  // builds the signatures (kInvalidArgument for a bad profile).
  static std::unique_ptr<CpuBackend> create(const ModelConfig& config, const std::vector<LayerInfo>& layers,
                                            const cpu::WeightGetter& weights, const SubgraphProfile& profile,
                                            const CpuBackendOptions& options = {});
  // The same from an open checkpoint (which must outlive the backend).
  static std::unique_ptr<CpuBackend> create(const Checkpoint& checkpoint, const SubgraphProfile& profile,
                                            const CpuBackendOptions& options = {});

  std::string name() const override { return "cpu"; }
  const SubgraphProfile& profile() const override { return profile_; }
  const std::vector<SubgraphSignature>& signatures() const override { return signatures_; }
  void run(const std::string& name, std::span<const TensorView> inputs,
           std::span<const TensorBuffer> outputs) override;

 private:
  CpuBackend() = default;
  // Both public creates: `released` is told each source range --no-mmap copied (resident_weights.h).
  static std::unique_ptr<CpuBackend> create(const ModelConfig& config, const std::vector<LayerInfo>& layers,
                                            const cpu::WeightGetter& weights, const SubgraphProfile& profile,
                                            const CpuBackendOptions& options, const cpu::ReleasedRange& released);
  enum class Kind { kTokenEmbedding, kPleEmbedding, kPleProjection, kVision, kFusion, kPrefillLayer, kDecodeLayer, kAppendLayer, kLmHead };
  struct Entry {
    Kind kind;
    int layer = -1;
    std::size_t signature = 0;  // index into signatures_
    std::int64_t append = 0;    // the bucket Q of an append layer
  };
  void run_layer(const Entry& e, std::span<const TensorView> in, std::span<const TensorBuffer> out);

  ModelConfig config_;
  std::vector<LayerInfo> layers_;
  SubgraphProfile profile_;
  CpuBackendOptions options_;
  cpu::CpuTextWeights weights_;
  std::vector<SubgraphSignature> signatures_;
  std::map<std::string, Entry> entries_;
  cpu::Workspace workspace_;
  std::unique_ptr<cpu::VisionPrefill> vision_;  // when the signatures include vision_prefill
};


}  // namespace staticlm
