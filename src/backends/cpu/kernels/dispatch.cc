#include "backends/cpu/kernels/dispatch.h"

#include <atomic>
#include <cstdlib>
#include <mutex>

#include "backends/cpu/kernels/bf16_dot_probe.h"
#include "backends/cpu/kernels/gemm_amx.h"
#include "base/error.h"
#include "hwy/highway.h"
#include "hwy/targets.h"

namespace staticlm::cpu {

namespace {

// Highway targets compiled into this binary and supported here, worst first; read once, before
// any pin (SetSupportedTargetsForTest changes what Highway reports).
const std::vector<std::int64_t>& hwy_targets() {
  static const std::vector<std::int64_t> targets = [] {
    std::vector<std::int64_t> best_first = hwy::SupportedAndGeneratedTargets();
    std::vector<std::int64_t> out;
    for (auto it = best_first.rbegin(); it != best_first.rend(); ++it) {
      if (*it == HWY_SCALAR || *it == HWY_EMU128) continue;  // "scalar" is our own reference
      out.push_back(*it);
    }
    return out;
  }();
  return targets;
}

std::mutex& mu() {
  static std::mutex m;
  return m;
}

std::string g_name;  // guarded by mu()
std::atomic<bool> g_ready{false}, g_scalar{false}, g_bf16{false}, g_vnni{false}, g_amx{false};

bool cpu_has_avx512_vnni() {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_cpu_init();
  return __builtin_cpu_supports("avx512vnni") && __builtin_cpu_supports("avx512bw");
#else
  return false;
#endif
}

void apply(const std::string& name) {
  bool scalar = false, bf16 = false, vnni = false, amx = false;
  if (name == "scalar") {
    scalar = true;
  } else {
    std::string base = name;
    auto strip = [&](const std::string& suffix) {
      if (base.size() <= suffix.size() || !base.ends_with(suffix)) return false;
      base.resize(base.size() - suffix.size());
      return true;
    };
    bf16 = strip("+BF16");
    amx = !bf16 && strip("+AMX");
    std::int64_t chosen = 0;
    for (std::int64_t t : hwy_targets()) {
      if (base == hwy::TargetName(t)) chosen = t;
    }
    bool ok = chosen != 0;
    if (bf16) ok = ok && cpu_has_avx512_bf16() && (chosen == HWY_AVX3 || chosen == HWY_AVX3_DL);
    if (amx) ok = ok && cpu_has_avx512_bf16() && cpu_has_amx() && chosen == HWY_AVX3_DL;
    if (ok && amx && !amx_permitted()) {
      invalid_argument("kernel target '" + name +
                       "': Linux refused this process the AMX tile registers (arch_prctl ARCH_REQ_XCOMP_PERM)");
    }
    if (!ok) {
      std::string known;
      for (const std::string& k : kernel_targets()) known += (known.empty() ? "" : ", ") + k;
      invalid_argument("kernel target '" + name + "' is not available on this CPU; available: " + known);
    }
    // Highway's AVX3_DL requires VNNI; the int8 GEMV (gemv_vnni.cc) runs on it.
    vnni = chosen == HWY_AVX3_DL && cpu_has_avx512_vnni();
    hwy::SetSupportedTargetsForTest(chosen);
    hwy::GetChosenTarget().Update(hwy::SupportedTargets());
  }
  g_name = name;
  g_scalar = scalar;
  g_bf16 = bf16;
  g_vnni = vnni;
  g_amx = amx;
  g_ready = true;
}

void ensure_initialised() {
  if (g_ready.load(std::memory_order_acquire)) return;
  std::lock_guard<std::mutex> lock(mu());
  if (g_ready.load()) return;
  const char* env = std::getenv("STATICLM_KERNEL_TARGET");
  apply(env != nullptr && *env != '\0' ? std::string(env) : default_kernel_target());
}

}  // namespace

std::vector<std::string> kernel_targets() {
  std::vector<std::string> out = {"scalar"};
  std::int64_t best = 0;
  for (std::int64_t t : hwy_targets()) {
    out.push_back(hwy::TargetName(t));
    best = t;
  }
  if ((best == HWY_AVX3 || best == HWY_AVX3_DL) && cpu_has_avx512_bf16()) {
    out.push_back(std::string(hwy::TargetName(best)) + "+BF16");
    if (best == HWY_AVX3_DL && cpu_has_amx()) out.push_back("AVX3_DL+AMX");
  }
  return out;
}

std::string default_kernel_target() {
  std::vector<std::string> t = kernel_targets();
  if (t.back().ends_with("+AMX")) {
    if (amx_permitted()) return t.back();
    t.pop_back();
  }
  // kernel_targets() appends the "+BF16" form right after its Highway target.
  if (t.back().ends_with("+BF16") && bf16_dot_speed_over_fma() < kBf16DotMinSpeed) return t[t.size() - 2];
  return t.back();
}

void select_kernel_target(const std::string& name) {
  std::lock_guard<std::mutex> lock(mu());
  apply(name);
}

std::string kernel_target() {
  ensure_initialised();
  std::lock_guard<std::mutex> lock(mu());
  return g_name;
}

bool scalar_kernels() {
  ensure_initialised();
  return g_scalar.load(std::memory_order_relaxed);
}

bool vnni_kernels() {
  ensure_initialised();
  return g_vnni.load(std::memory_order_relaxed);
}

bool bf16_dot_kernels() {
  ensure_initialised();
  return g_bf16.load(std::memory_order_relaxed);
}

bool amx_kernels() {
  ensure_initialised();
  return g_amx.load(std::memory_order_relaxed);
}

}  // namespace staticlm::cpu
