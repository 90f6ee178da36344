#include "runtime/kv_cache.h"

#include <algorithm>
#include <string>

#include "base/error.h"

namespace staticlm {

KvCache::KvCache(const std::vector<LayerInfo>& layers, std::int64_t max_seq) : max_seq_(max_seq) {
  if (max_seq < 2) invalid_argument("kv cache: max_seq " + std::to_string(max_seq) + " must be at least 2");
  entries_.resize(layers.size());
  for (std::size_t i = 0; i < layers.size(); ++i) {
    const LayerInfo& l = layers[i];
    if (!l.owns_kv) continue;
    Entry& e = entries_[i];
    e.heads = l.num_kv_heads;
    e.head_dim = l.head_dim;
    const auto n = static_cast<std::size_t>(e.heads * (max_seq - 1) * e.head_dim);
    e.k.assign(n, 0.0f);
    e.v.assign(n, 0.0f);
    if (l.stores_shared_kv) {
      const auto m = static_cast<std::size_t>(e.heads * max_seq * e.head_dim);
      e.mirror_k.assign(m, 0.0f);
      e.mirror_v.assign(m, 0.0f);
    }
  }
}

int KvCache::owned_layers() const {
  return static_cast<int>(std::count_if(entries_.begin(), entries_.end(), [](const Entry& e) { return !e.k.empty(); }));
}

std::int64_t KvCache::bytes() const {
  std::int64_t n = 0;
  for (const Entry& e : entries_) n += static_cast<std::int64_t>(e.k.size() + e.v.size() + e.mirror_k.size() + e.mirror_v.size());
  return n * 4;
}

bool KvCache::owns(int layer) const {
  return layer >= 0 && static_cast<std::size_t>(layer) < entries_.size() && !entries_[layer].k.empty();
}

bool KvCache::has_mirror(int layer) const { return owns(layer) && !entries_[layer].mirror_k.empty(); }

const KvCache::Entry& KvCache::entry(int layer, const char* what) const {
  if (!owns(layer)) {
    invalid_argument(std::string("kv cache: ") + what + ": layer " + std::to_string(layer) + " has no K/V buffer");
  }
  return entries_[static_cast<std::size_t>(layer)];
}

KvCache::Entry& KvCache::entry(int layer, const char* what) {
  return const_cast<Entry&>(static_cast<const KvCache*>(this)->entry(layer, what));
}

Shape KvCache::shape(int layer) const {
  const Entry& e = entry(layer, "shape");
  return Shape{1, e.heads, max_seq_ - 1, e.head_dim};
}

std::span<const float> KvCache::k(int layer) const { return entry(layer, "k").k; }
std::span<const float> KvCache::v(int layer) const { return entry(layer, "v").v; }

Shape KvCache::mirror_shape(int layer) const {
  const Entry& e = entry(layer, "mirror");
  if (e.mirror_k.empty()) invalid_argument("kv cache: layer " + std::to_string(layer) + " is not a shared-KV donor");
  return Shape{1, e.heads, max_seq_, e.head_dim};
}

std::span<const float> KvCache::mirror_k(int layer) const {
  mirror_shape(layer);
  return entries_[static_cast<std::size_t>(layer)].mirror_k;
}

std::span<const float> KvCache::mirror_v(int layer) const {
  mirror_shape(layer);
  return entries_[static_cast<std::size_t>(layer)].mirror_v;
}

void KvCache::reset() {
  for (Entry& e : entries_) {
    std::fill(e.k.begin(), e.k.end(), 0.0f);
    std::fill(e.v.begin(), e.v.end(), 0.0f);
    std::fill(e.mirror_k.begin(), e.mirror_k.end(), 0.0f);
    std::fill(e.mirror_v.begin(), e.mirror_v.end(), 0.0f);
  }
}

void KvCache::check_row(const Entry& e, std::span<const float> k, std::span<const float> v, std::int64_t rows,
                        const char* what) const {
  const auto n = static_cast<std::size_t>(e.heads * rows * e.head_dim);
  if (k.size() != n || v.size() != n) {
    invalid_argument(std::string("kv cache: ") + what + ": K/V of " + std::to_string(k.size()) + "/" +
                     std::to_string(v.size()) + " floats, expected [1, " + std::to_string(e.heads) + ", " +
                     std::to_string(rows) + ", " + std::to_string(e.head_dim) + "]");
  }
}

void KvCache::write_prefill(int layer, std::span<const float> new_k, std::span<const float> new_v,
                            std::int64_t seq_len, std::int64_t valid_len) {
  Entry& e = entry(layer, "prefill write-back");
  check_row(e, new_k, new_v, seq_len, "prefill write-back");
  if (valid_len < 0 || valid_len > seq_len || valid_len > max_seq_ - 1) {
    out_of_range("kv cache: prefill valid_len " + std::to_string(valid_len) + " must be within [0, " +
                 std::to_string(std::min(seq_len, max_seq_ - 1)) + "] (max_seq " + std::to_string(max_seq_) +
                 " must reserve one decode slot)");
  }
  const std::int64_t hd = e.head_dim, cap = max_seq_ - 1;
  for (std::int64_t h = 0; h < e.heads; ++h) {
    const std::size_t src = static_cast<std::size_t>(h * seq_len * hd);
    const std::size_t n = static_cast<std::size_t>(valid_len * hd);
    std::copy_n(new_k.data() + src, n, e.k.data() + h * cap * hd);
    std::copy_n(new_v.data() + src, n, e.v.data() + h * cap * hd);
    if (!e.mirror_k.empty()) {
      std::copy_n(new_k.data() + src, n, e.mirror_k.data() + h * max_seq_ * hd);
      std::copy_n(new_v.data() + src, n, e.mirror_v.data() + h * max_seq_ * hd);
    }
  }
}

void KvCache::write_decode(int layer, std::span<const float> new_k, std::span<const float> new_v,
                           std::int64_t past_len) {
  Entry& e = entry(layer, "decode write-back");
  check_row(e, new_k, new_v, 1, "decode write-back");
  if (past_len < 0 || past_len >= max_seq_ - 1) {
    out_of_range("kv cache: decode write-back at slot " + std::to_string(past_len) + ", but the cache holds " +
                 std::to_string(max_seq_ - 1) + " slots: the cache is full");
  }
  const std::int64_t hd = e.head_dim, cap = max_seq_ - 1;
  for (std::int64_t h = 0; h < e.heads; ++h) {
    std::copy_n(new_k.data() + h * hd, hd, e.k.data() + (h * cap + past_len) * hd);
    std::copy_n(new_v.data() + h * hd, hd, e.v.data() + (h * cap + past_len) * hd);
    if (!e.mirror_k.empty()) {
      std::copy_n(new_k.data() + h * hd, hd, e.mirror_k.data() + (h * max_seq_ + past_len) * hd);
      std::copy_n(new_v.data() + h * hd, hd, e.mirror_v.data() + (h * max_seq_ + past_len) * hd);
    }
  }
}

void KvCache::write_append(int layer, std::span<const float> new_k, std::span<const float> new_v, std::int64_t rows,
                           std::int64_t past_len, std::int64_t count) {
  Entry& e = entry(layer, "append write-back");
  check_row(e, new_k, new_v, rows, "append write-back");
  if (count < 0 || count > rows || past_len < 0 || past_len + count > max_seq_ - 1) {
    out_of_range("kv cache: append write-back of " + std::to_string(count) + " rows at slot " +
                 std::to_string(past_len) + " passes the " + std::to_string(max_seq_ - 1) + " cache slots");
  }
  const std::int64_t hd = e.head_dim, cap = max_seq_ - 1;
  for (std::int64_t h = 0; h < e.heads; ++h) {
    const std::size_t src = static_cast<std::size_t>(h * rows * hd), n = static_cast<std::size_t>(count * hd);
    std::copy_n(new_k.data() + src, n, e.k.data() + (h * cap + past_len) * hd);
    std::copy_n(new_v.data() + src, n, e.v.data() + (h * cap + past_len) * hd);
    if (!e.mirror_k.empty()) {
      std::copy_n(new_k.data() + src, n, e.mirror_k.data() + (h * max_seq_ + past_len) * hd);
      std::copy_n(new_v.data() + src, n, e.mirror_v.data() + (h * max_seq_ + past_len) * hd);
    }
  }
}

void KvCache::copy_past(int layer, std::int64_t count, std::span<float> k_out, std::span<float> v_out) const {
  const Entry& e = entry(layer, "copy past");
  const std::int64_t hd = e.head_dim, cap = max_seq_ - 1;
  const auto n = static_cast<std::size_t>(e.heads * count * hd);
  if (count < 0 || count > cap || k_out.size() < n || v_out.size() < n) {
    invalid_argument("kv cache: copy of " + std::to_string(count) + " past slots into buffers of " +
                     std::to_string(k_out.size()) + " floats");
  }
  for (std::int64_t h = 0; h < e.heads; ++h) {
    std::copy_n(e.k.data() + h * cap * hd, count * hd, k_out.data() + h * count * hd);
    std::copy_n(e.v.data() + h * cap * hd, count * hd, v_out.data() + h * count * hd);
  }
}

void KvCache::set_mirror_current(int layer, std::span<const float> new_k, std::span<const float> new_v) {
  mirror_shape(layer);
  Entry& e = entries_[static_cast<std::size_t>(layer)];
  check_row(e, new_k, new_v, 1, "shared K/V current row");
  const std::int64_t hd = e.head_dim;
  for (std::int64_t h = 0; h < e.heads; ++h) {
    std::copy_n(new_k.data() + h * hd, hd, e.mirror_k.data() + (h * max_seq_ + max_seq_ - 1) * hd);
    std::copy_n(new_v.data() + h * hd, hd, e.mirror_v.data() + (h * max_seq_ + max_seq_ - 1) * hd);
  }
}

}  // namespace staticlm
