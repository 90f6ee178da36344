#include "api/engine.h"

#include <cmath>
#include <optional>
#include <string>

#include "backends/backend_factory.h"
#include "backends/cpu/cpu_backend.h"
#include "base/error.h"

namespace staticlm::api {

RuntimeConfig session_config(const SessionOptions& o) {
  std::optional<std::string> file;
  if (!o.config_file.empty()) file = o.config_file;
  RuntimeConfig config = load_runtime_config(file, o.sets);
  if (o.max_seq != 0) config.max_seq = o.max_seq;
  if (config.max_seq < 2) invalid_argument("max_seq " + std::to_string(config.max_seq) + ": must be at least 2");
  if (!(config.mask_fill_value < 0) || !std::isfinite(config.mask_fill_value)) {
    invalid_argument("mask_fill_value: must be a finite negative number");
  }
  check_backend_choice(BackendChoice{o.backend, o.fallback});
  if (o.record_dir.empty() && !o.record_graphs.empty()) invalid_argument("record_graphs goes with record_dir");
  if (!o.record_dir.empty()) inspect::Recorder::check_dir(o.record_dir);
  return config;
}

RuntimeConfig session_config(const ModelInfo& model, const SessionOptions& o) {
  RuntimeConfig config = session_config(o);
  if (config.max_seq > model.max_position_embeddings) {
    invalid_argument("max_seq " + std::to_string(config.max_seq) + " exceeds the model's max_position_embeddings " +
                     std::to_string(model.max_position_embeddings));
  }
  return config;
}

std::unique_ptr<Engine> make_engine(const Model::Impl& model, const SessionOptions& options, const RuntimeConfig& config,
                                    const SubgraphProfile& profile, ThreadPool& pool,
                                    std::unique_ptr<inspect::Recorder>& recorder) {
  CpuBackendOptions bo;
  bo.pool = &pool;
  bo.bf16_activations = !options.f32_activations;
  bo.resident_weights = options.resident_weights;
  auto e = std::make_unique<Engine>();
  e->backend = create_backend(BackendChoice{options.backend, options.fallback}, *model.checkpoint, profile, bo);
  Backend* backend = e->backend.get();
  // With record_dir, every call goes through the recorder too (after the back end computed it).
  if (!options.record_dir.empty()) {
    if (!recorder) {
      recorder = std::make_unique<inspect::Recorder>(options.record_dir,
                                                     inspect::record_setup(model.info.dir, *e->backend, bo));
      recorder->only_graphs(options.record_graphs);
    }
    e->observed = std::make_unique<ObservedBackend>(*e->backend);
    e->observed->add_observer(recorder->observer());
    backend = e->observed.get();
  }
  e->tap = std::make_unique<VisionTap>(*backend);
  RuntimeOptions ro;
  ro.mask_fill_value = static_cast<float>(config.mask_fill_value);
  ro.pool = &pool;
  e->runtime = Runtime::create(*e->tap, model.checkpoint->config(), model.checkpoint->layers(), ro);
  return e;
}

}  // namespace staticlm::api
