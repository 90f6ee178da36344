// The static KV cache the host owns (spec/static-runtime.md (c), NEWER layout). One K and one V
// buffer [1, Hkv, max_seq-1, hd] (f32, zeroed) per K/V-owning layer; none for KV-shared
// layers (E2B: 15 layers, 30 buffers). Decode graphs only return the new token's row; the host
// writes it at its logical slot (no shifting, no eviction) and masks what is not yet written.
//
// Donor layers (LayerInfo::stores_shared_kv) also get a mirror [1, Hkv, max_seq, hd] that is
// kept equal to cat(cache, current row): what decode consumers of that type take as
// shared_key_value, maintained one row per step instead of being rebuilt.
//
// The KvCache owns all of its buffers; spans returned stay valid for its lifetime.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "model/layer_table.h"
#include "tensor/shape.h"

namespace staticlm {

class KvCache {
 public:
  // Throws kInvalidArgument when max_seq < 2.
  KvCache(const std::vector<LayerInfo>& layers, std::int64_t max_seq);

  std::int64_t max_seq() const { return max_seq_; }
  // Past slots: max_seq - 1 (the last K position of a decode graph is the current token).
  std::int64_t capacity() const { return max_seq_ - 1; }
  // Number of layers with their own buffers (E2B: 15).
  int owned_layers() const;
  std::int64_t bytes() const;
  bool owns(int layer) const;
  bool has_mirror(int layer) const;

  // [1, Hkv, max_seq-1, hd] of an owning layer; kInvalidArgument for another layer.
  Shape shape(int layer) const;
  std::span<const float> k(int layer) const;
  std::span<const float> v(int layer) const;
  // [1, Hkv, max_seq, hd] of a donor layer.
  Shape mirror_shape(int layer) const;
  std::span<const float> mirror_k(int layer) const;
  std::span<const float> mirror_v(int layer) const;

  // Zeroes every buffer (before each prefill).
  void reset();

  // Prefill write-back: rows [0, valid_len) of new_k / new_v [1, Hkv, seq_len, hd] into slots
  // [0, valid_len); rows past valid_len (padding) are dropped. kOutOfRange when valid_len does
  // not leave the one decode slot, i.e. valid_len > max_seq - 1.
  void write_prefill(int layer, std::span<const float> new_k, std::span<const float> new_v,
                     std::int64_t seq_len, std::int64_t valid_len);

  // Decode write-back: new_k / new_v [1, Hkv, 1, hd] into slot past_len (cache and mirror).
  // kOutOfRange when past_len >= max_seq - 1 (the cache is full).
  void write_decode(int layer, std::span<const float> new_k, std::span<const float> new_v, std::int64_t past_len);

  // Append write-back: rows [0, count) of new_k / new_v [1, Hkv, rows, hd] into slots
  // [past_len, past_len + count) (cache and mirror). kOutOfRange when they pass slot max_seq - 2.
  void write_append(int layer, std::span<const float> new_k, std::span<const float> new_v, std::int64_t rows,
                    std::int64_t past_len, std::int64_t count);

  // Copies slots [0, count) of every head of the layer's K and V into k_out / v_out
  // [1, Hkv, count, hd] (count <= max_seq - 1).
  void copy_past(int layer, std::int64_t count, std::span<float> k_out, std::span<float> v_out) const;

  // Puts the current token's row [1, Hkv, 1, hd] into the mirror's last slot (max_seq - 1).
  void set_mirror_current(int layer, std::span<const float> new_k, std::span<const float> new_v);

 private:
  struct Entry {
    std::int64_t heads = 0, head_dim = 0;
    std::vector<float> k, v;                  // [heads, max_seq-1, head_dim]
    std::vector<float> mirror_k, mirror_v;    // [heads, max_seq, head_dim], donors only
  };
  const Entry& entry(int layer, const char* what) const;
  Entry& entry(int layer, const char* what);
  void check_row(const Entry& e, std::span<const float> k, std::span<const float> v, std::int64_t rows,
                 const char* what) const;

  std::int64_t max_seq_;
  std::vector<Entry> entries_;  // indexed by layer; empty vectors for shared layers
};

}  // namespace staticlm
