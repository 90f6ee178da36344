#include "inspect/metrics.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <string>

#include "base/error.h"

namespace staticlm::inspect {

bool DiffMetrics::finite() const {
  return std::isfinite(max_abs) && std::isfinite(mean_abs) && std::isfinite(peir) && std::isfinite(cosine) &&
         std::isfinite(rel_l2);
}

DiffMetrics compare(std::span<const float> actual, std::span<const float> reference) {
  if (actual.size() != reference.size()) {
    invalid_argument("compare: " + std::to_string(actual.size()) + " values against a reference of " +
                     std::to_string(reference.size()));
  }
  DiffMetrics m;
  m.count = static_cast<std::int64_t>(actual.size());
  if (actual.empty()) return m;
  // Sums in double: a few million values of mixed sign.
  double sum_abs = 0, max_abs = 0, dot = 0, aa = 0, rr = 0, dd = 0;
  double lo = std::numeric_limits<double>::infinity(), hi = -lo;
  bool bad = false;
  for (std::size_t i = 0; i < actual.size(); ++i) {
    const double a = actual[i], r = reference[i];
    if (!std::isfinite(a) || !std::isfinite(r)) {
      bad = true;
      break;
    }
    const double d = a - r;
    sum_abs += std::fabs(d);
    max_abs = std::max(max_abs, std::fabs(d));
    dot += a * r;
    aa += a * a;
    rr += r * r;
    dd += d * d;
    lo = std::min(lo, r);
    hi = std::max(hi, r);
  }
  if (bad) {
    const double nan = std::numeric_limits<double>::quiet_NaN();
    m.max_abs = m.mean_abs = m.peir = m.cosine = m.rel_l2 = nan;
    return m;
  }
  m.max_abs = max_abs;
  m.mean_abs = sum_abs / static_cast<double>(actual.size());
  const double range = hi - lo;
  m.peir = max_abs / (range > 0 ? range : 1.0);
  // Two zero vectors are the same direction; one zero vector against another is not.
  if (aa == 0 && rr == 0) {
    m.cosine = 1;
  } else if (aa == 0 || rr == 0) {
    m.cosine = 0;
  } else {
    m.cosine = dot / (std::sqrt(aa) * std::sqrt(rr));
  }
  m.rel_l2 = rr > 0 ? std::sqrt(dd / rr) : (dd > 0 ? std::numeric_limits<double>::infinity() : 0.0);
  return m;
}

std::int64_t argmax(std::span<const float> x) {
  if (x.empty()) return -1;
  return static_cast<std::int64_t>(std::max_element(x.begin(), x.end()) - x.begin());
}

double top2_margin(std::span<const float> x) {
  if (x.size() < 2) return 0;
  double best = -std::numeric_limits<double>::infinity(), second = best;
  for (float v : x) {
    if (v > best) {
      second = best;
      best = v;
    } else if (v > second) {
      second = v;
    }
  }
  return best - second;
}

TokenAgreement agree(std::span<const std::int64_t> actual, std::span<const std::int64_t> reference) {
  TokenAgreement t;
  t.compared = static_cast<std::int64_t>(std::min(actual.size(), reference.size()));
  for (std::int64_t i = 0; i < t.compared; ++i) {
    if (actual[i] == reference[i]) {
      ++t.matched;
    } else if (t.first_mismatch < 0) {
      t.first_mismatch = i;
    }
  }
  if (t.first_mismatch < 0 && actual.size() != reference.size()) t.first_mismatch = t.compared;
  return t;
}

}  // namespace staticlm::inspect
