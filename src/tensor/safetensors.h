// safetensors: a memory-mapped reader (one file, or a sharded checkpoint through
// model.safetensors.index.json) that never copies weights, and a streaming writer that writes
// to a temporary name and renames, so a failure leaves no half file.
//
// Format: 8-byte little-endian header length N, N bytes of JSON
// {"name": {"dtype": "BF16", "shape": [..], "data_offsets": [begin, end]}, "__metadata__": {..}},
// then the data; offsets are relative to the start of the data and must tile it exactly.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "base/mmap.h"
#include "tensor/tensor.h"

namespace staticlm {

// Headers above this size are refused as absurd (the format's own limit is 100 MB).
inline constexpr std::uint64_t kMaxSafetensorsHeader = 100ull << 20;
// SafetensorsWriter starts the data, and every tensor whose size is a multiple of this, on a
// multiple of this many bytes of the file (a cache line).
inline constexpr std::uint64_t kSafetensorsAlignment = 64;

// Owns the mapping of one file; the TensorViews that get() returns point into it and stay valid
// while this object lives.
class SafetensorsFile {
 public:
  // Maps and validates the file. Throws kInvalidFile with a message that starts with the path
  // and names the problem (truncated, header length, JSON, offsets, overlap, gap, dtype/shape
  // vs byte size, unknown dtype, duplicate name); kUnsupported for a known but unsupported dtype.
  static std::unique_ptr<SafetensorsFile> open(const std::string& path);

  const std::string& path() const { return file_->path(); }
  // Tensor names in file order (sorted by data offset).
  const std::vector<std::string>& names() const { return names_; }
  bool contains(const std::string& name) const { return tensors_.count(name) != 0; }
  // Throws kInvalidArgument naming the tensor and the file when absent.
  TensorView get(const std::string& name) const;
  const std::map<std::string, std::string>& metadata() const { return metadata_; }
  // The whole file as mapped; every TensorView from get() points inside it.
  const MappedFile& mapping() const { return *file_; }

 private:
  SafetensorsFile() = default;
  std::unique_ptr<MappedFile> file_;
  std::map<std::string, TensorView> tensors_;
  std::vector<std::string> names_;
  std::map<std::string, std::string> metadata_;
  friend struct SafetensorsParser;
};

// All tensors of a checkpoint directory: model.safetensors, or the shards that
// model.safetensors.index.json names (an index naming a missing shard, or a tensor that its
// shard does not hold, is a kInvalidFile error naming both). Owns the open files; views from
// get() stay valid while the store lives.
class TensorStore {
 public:
  static std::unique_ptr<TensorStore> open_dir(const std::string& dir);
  // One file.
  static std::unique_ptr<TensorStore> open_file(const std::string& path);

  bool contains(const std::string& name) const { return where_.count(name) != 0; }
  TensorView get(const std::string& name) const;
  // All names, sorted.
  std::vector<std::string> names() const;
  const std::string& source() const { return source_; }
  // Whether p points into one of the files' memory maps (and not into memory a caller owns).
  bool maps(const void* p) const;
  // The value of a "__metadata__" key in the first file (shard) that has it; nullopt when none does.
  std::optional<std::string> metadata(const std::string& key) const;

 private:
  std::string source_;
  std::vector<std::unique_ptr<SafetensorsFile>> files_;
  std::map<std::string, const SafetensorsFile*> where_;
};

// Receives the bytes of one tensor while it is written, in order, in any number of pieces.
class ByteSink {
 public:
  virtual ~ByteSink() = default;
  virtual void write(const void* data, std::size_t size) = 0;
};

// Holds the tensor list and producers (and the bytes of tensors added by view) until write().
class SafetensorsWriter {
 public:
  using Producer = std::function<void(ByteSink&)>;

  // Registers a tensor whose bytes the producer streams when write() runs (so a checkpoint
  // larger than memory can be written). The producer must write exactly dtype_bytes(numel).
  void add(const std::string& name, DType dtype, const Shape& shape, Producer produce);
  // Registers a tensor whose bytes are copied now.
  void add(const std::string& name, const TensorView& view);
  void add_metadata(const std::string& key, const std::string& value) { metadata_[key] = value; }

  // Writes every tensor (whole cache lines first, see kSafetensorsAlignment) to path.tmp.<pid>,
  // then renames to path. A duplicate name is kInvalidArgument at add(); a producer that writes
  // the wrong byte count is kInternal.
  void write(const std::string& path) const;

 private:
  struct Entry {
    std::string name;
    DType dtype;
    Shape shape;
    Producer produce;
  };
  std::vector<Entry> entries_;
  std::map<std::string, std::string> metadata_;
};

}  // namespace staticlm
