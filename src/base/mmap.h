// A read-only memory map of a whole file. Weights are views into such maps, never copies.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

namespace staticlm {

class MappedFile {
 public:
  // Maps path read-only; throws kInvalidFile naming the path on failure. An empty file maps
  // to size 0 and a null data pointer.
  static std::unique_ptr<MappedFile> open(const std::string& path);
  ~MappedFile();
  MappedFile(const MappedFile&) = delete;
  MappedFile& operator=(const MappedFile&) = delete;

  const std::uint8_t* data() const { return data_; }
  std::size_t size() const { return size_; }
  const std::string& path() const { return path_; }

 private:
  MappedFile(std::string path, const std::uint8_t* data, std::size_t size)
      : path_(std::move(path)), data_(data), size_(size) {}
  std::string path_;
  const std::uint8_t* data_;
  std::size_t size_;
};

}  // namespace staticlm
