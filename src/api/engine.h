// What a Session and a Chat both run on (internal to src/api): the runtime config resolved from
// SessionOptions, and an Engine, one back end with the runtime over it.
#pragma once

#include <memory>

#include "api/model_impl.h"
#include "api/vision_tap.h"
#include "backends/observed_backend.h"
#include "base/thread_pool.h"
#include "inspect/recorder.h"
#include "runtime/runtime.h"
#include "runtime/runtime_config.h"
#include "runtime/static_input_builder.h"
#include "staticlm/backend.h"
#include "staticlm/session.h"

namespace staticlm::api {

// The runtime config of `o` (file, then overrides, then max_seq), checked against the model,
// with the back-end choice checked too: everything refused here is refused before slow work.
RuntimeConfig session_config(const ModelInfo& model, const SessionOptions& o);

// The same checks but the model's (max_position_embeddings): commands run them before the slow
// checkpoint load, so a bad flag or config file is refused in a moment.
RuntimeConfig session_config(const SessionOptions& o);

// One back end and the runtime over it. Members are destroyed in reverse order: the runtime
// before the decorators before the back end they borrow.
struct Engine {
  std::unique_ptr<Backend> backend;  // the CPU back end or a plug-in (backends/backend_factory.h)
  std::unique_ptr<ObservedBackend> observed;  // with a recorder
  std::unique_ptr<VisionTap> tap;             // times the image encode
  std::unique_ptr<Runtime> runtime;
};

// An engine for `profile` on `pool`. With options.record_dir every call also goes to
// `recorder`, made here on first use (one recorder for all of an owner's engines).
std::unique_ptr<Engine> make_engine(const Model::Impl& model, const SessionOptions& options, const RuntimeConfig& config,
                                    const SubgraphProfile& profile, ThreadPool& pool,
                                    std::unique_ptr<inspect::Recorder>& recorder);

}  // namespace staticlm::api
