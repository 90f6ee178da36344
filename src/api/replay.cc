#include "api/replay.h"

#include <algorithm>
#include <cmath>

#include "backends/cpu/cpu_backend.h"
#include "backends/cpu/kernels/dispatch.h"
#include "base/error.h"
#include "base/file.h"
#include "base/thread_pool.h"
#include "model/checkpoint.h"

namespace staticlm::api {

namespace {

void note(const ReplayOptions& o, const std::string& line) {
  if (o.log) o.log(line);
}

// Pins the recorded kernel target when this CPU has it (an explicit kernel_target wins);
// returns the target the replay runs on.
std::string apply_target(const ReplayOptions& o, const std::string& recorded) {
  if (o.kernel_target) {
    cpu::select_kernel_target(*o.kernel_target);
  } else if (!recorded.empty()) {
    const std::vector<std::string> have = cpu::kernel_targets();
    if (std::find(have.begin(), have.end(), recorded) != have.end()) {
      cpu::select_kernel_target(recorded);
    } else {
      note(o, "note: the recording ran on kernel target " + recorded + ", which this CPU does not have; replaying on " +
                  cpu::kernel_target() + " (outputs may differ in the last bits)");
    }
  }
  return cpu::kernel_target();
}

}  // namespace

ReplayResult replay(const ReplayOptions& o, const std::function<void(const ReplayPlan&)>& on_start,
                    const std::function<void(const inspect::CallReplay&)>& on_call) {
  if (o.tolerance && (!std::isfinite(*o.tolerance) || *o.tolerance < 0)) {
    invalid_argument("--tolerance: must be a finite PEIR >= 0");
  }
  const inspect::Recording rec = inspect::read_recording(o.record);
  if (rec.setup.backend != "cpu") note(o, "note: recorded on the " + rec.setup.backend + " backend; replaying on cpu");
  ReplayPlan plan;
  plan.target = apply_target(o, rec.setup.kernel_target);
  plan.model = o.model.value_or(rec.setup.model_dir);
  plan.dir = rec.dir;
  auto ck = Checkpoint::open(plan.model);
  ThreadPool pool(o.threads);
  CpuBackendOptions bo;
  bo.pool = &pool;
  bo.bf16_activations = rec.setup.bf16_activations;
  bo.skip_padded_rows = rec.setup.skip_padded_rows;
  auto cpu = CpuBackend::create(*ck, rec.setup.profile, bo);
  const std::vector<inspect::RecordedCallEntry> calls = inspect::select_calls(rec, *cpu, o.graph);

  // Every file is checked before anything runs: a broken recording is refused as a whole.
  for (const auto& c : calls) inspect::open_call_file(path_join(rec.dir, c.file), cpu->signature(c.graph));
  plan.selected = calls.size();
  plan.recorded = rec.calls.size();
  if (on_start) on_start(plan);

  ReplayResult r;
  for (const auto& c : calls) {
    const auto f = inspect::open_call_file(path_join(rec.dir, c.file), cpu->signature(c.graph));
    r.calls.push_back(inspect::replay_call(*cpu, c, *f));
    if (on_call) on_call(r.calls.back());
  }
  r.report = inspect::replay_report_json(rec, plan.model, "cpu", plan.target, r.calls, o.tolerance);
  return r;
}

}  // namespace staticlm::api
