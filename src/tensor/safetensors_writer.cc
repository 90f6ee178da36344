// Writing safetensors: the header is built from the registered tensors (offsets contiguous,
// large tensors on cache lines), then each producer streams its bytes straight to the file.
#include <algorithm>
#include <ostream>

#include <nlohmann/json.hpp>

#include "base/error.h"
#include "base/file.h"
#include "tensor/safetensors.h"

namespace staticlm {
namespace {

// Passes a producer's bytes to the file and counts them against what dtype and shape need.
class CountingSink final : public ByteSink {
 public:
  CountingSink(std::ostream& out, std::uint64_t expected, std::string who)
      : out_(out), expected_(expected), who_(std::move(who)) {}

  void write(const void* data, std::size_t size) override {
    if (size > expected_ - written_)  // refuse at once rather than write a huge excess
      internal_error(who_ + " wrote more than the " + std::to_string(expected_) + " bytes its dtype and shape need");
    out_.write(static_cast<const char*>(data), static_cast<std::streamsize>(size));
    if (!out_) invalid_file(who_ + ": write failed (disk full?)");
    written_ += size;
  }

  void finish() const {
    if (written_ != expected_)
      internal_error(who_ + " wrote " + std::to_string(written_) + " bytes, expected " + std::to_string(expected_));
  }

 private:
  std::ostream& out_;
  std::uint64_t expected_;
  std::uint64_t written_ = 0;
  std::string who_;
};

}  // namespace

void SafetensorsWriter::add(const std::string& name, DType dtype, const Shape& shape, Producer produce) {
  const std::string who = "safetensors writer: tensor " + nlohmann::json(name).dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
  if (name == "__metadata__") invalid_argument(who + ": the name is reserved for the metadata map");
  std::uint64_t numel = 1;
  for (std::int64_t d : shape.dims()) {
    if (d < 0) invalid_argument(who + ": shape " + shape.to_string() + " has a negative extent");
    if (__builtin_mul_overflow(numel, static_cast<std::uint64_t>(d), &numel) || numel > (UINT64_MAX >> 3))
      invalid_argument(who + ": shape " + shape.to_string() + " has too many elements");
  }
  if (!produce) invalid_argument(who + ": no producer");
  for (const Entry& e : entries_)
    if (e.name == name) invalid_argument(who + ": added twice");
  entries_.push_back({name, dtype, shape, std::move(produce)});
}

void SafetensorsWriter::add(const std::string& name, const TensorView& view) {
  if (view.data == nullptr && view.nbytes() != 0) invalid_argument("safetensors writer: tensor \"" + name + "\" has no data");
  auto bytes = std::make_shared<const std::vector<std::uint8_t>>(view.bytes().begin(), view.bytes().end());
  add(name, view.dtype, view.shape, [bytes](ByteSink& sink) { sink.write(bytes->data(), bytes->size()); });
}

void SafetensorsWriter::write(const std::string& path) const {
  std::vector<const Entry*> order;
  for (const Entry& e : entries_) order.push_back(&e);
  const auto size_of = [](const Entry* e) { return dtype_bytes(e->dtype, static_cast<std::size_t>(e->shape.numel())); };
  // Tensors of whole cache lines first, then the rest; within each, wider elements first, then
  // by name. The data starts at a multiple of kSafetensorsAlignment, so every tensor of the
  // first kind starts on a cache line (a decode GEMV whose rows straddle lines streams up to 30%
  // slower, docs/quantization.md) and every tensor at a multiple of its element size.
  std::sort(order.begin(), order.end(), [&](const Entry* a, const Entry* b) {
    const bool la = size_of(a) % kSafetensorsAlignment == 0, lb = size_of(b) % kSafetensorsAlignment == 0;
    if (la != lb) return la;
    const int wa = dtype_bits(a->dtype), wb = dtype_bits(b->dtype);
    return wa != wb ? wa > wb : a->name < b->name;
  });

  // nlohmann::json keeps object keys sorted, so the header lists tensors in name order too.
  nlohmann::json header = nlohmann::json::object();
  if (!metadata_.empty()) header["__metadata__"] = metadata_;
  std::vector<std::uint64_t> sizes;
  std::uint64_t offset = 0;
  for (const Entry* e : order) {
    sizes.push_back(size_of(e));
    header[e->name] = {{"dtype", dtype_name(e->dtype)},
                       {"shape", e->shape.dims()},
                       {"data_offsets", {offset, offset + sizes.back()}}};
    offset += sizes.back();
  }
  std::string text;
  try {
    text = header.dump();
  } catch (const nlohmann::json::exception& e) {
    invalid_argument(path + ": a tensor name or metadata string is not valid UTF-8 (" + e.what() + ")");
  }
  // Pad with spaces so the data starts on a cache line (8 + text.size() a multiple of 64).
  text.append((kSafetensorsAlignment - (8 + text.size()) % kSafetensorsAlignment) % kSafetensorsAlignment, ' ');
  if (text.size() > kMaxSafetensorsHeader)
    invalid_argument(path + ": header of " + std::to_string(text.size()) + " bytes exceeds the limit of " +
                     std::to_string(kMaxSafetensorsHeader));

  write_file_atomic(path, [&](std::ostream& out) {
    char len[8];
    for (int i = 0; i < 8; ++i) len[i] = static_cast<char>((text.size() >> (8 * i)) & 0xff);  // little-endian
    out.write(len, 8);
    out.write(text.data(), static_cast<std::streamsize>(text.size()));
    for (std::size_t i = 0; i < order.size(); ++i) {
      CountingSink sink(out, sizes[i], path + ": the producer of tensor \"" + order[i]->name + "\"");
      order[i]->produce(sink);
      sink.finish();
    }
  });
}

}  // namespace staticlm
