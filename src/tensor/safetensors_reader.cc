// Reading safetensors: SafetensorsFile validates one memory-mapped file and hands out views into
// the map; TensorStore gathers the files of a checkpoint directory (one file or an index of shards).
#include <algorithm>
#include <cstring>
#include <filesystem>
#include <optional>
#include <set>
#include <string_view>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "base/error.h"
#include "base/file.h"
#include "base/json_limits.h"
#include "tensor/safetensors.h"

namespace staticlm {
namespace {

using nlohmann::json;

// Real safetensors dtypes this runtime does not handle, with their bits per element, so a file
// holding them is still checked for structure before it is refused as unsupported.
struct ForeignDType {
  std::string_view name;
  int bits;
};
constexpr ForeignDType kForeignDTypes[] = {
    {"F64", 64},    {"I16", 16},    {"U16", 16},     {"U32", 32},     {"U64", 64}, {"C64", 64},
    {"F8_E4M3", 8}, {"F8_E5M2", 8}, {"F8_E8M0", 8},  {"F6_E2M3", 6},  {"F6_E3M2", 6}, {"F4", 4},
};

constexpr const char* kSupportedNames = "F32, F16, BF16, I8, U8, I32, I64, BOOL, I4, U4";

// A name in double quotes, JSON-escaped (bytes that are not UTF-8 become U+FFFD).
std::string quoted(const std::string& s) { return json(s).dump(-1, ' ', false, json::error_handler_t::replace); }

// Parses JSON text (the `part` of the file at `path`, "header" or "index") and refuses a key
// that appears twice in one object, which nlohmann::json would silently resolve to the last one.
// A SAX pass that only fails on a key repeated inside one object (nlohmann keeps the last
// silently). Linear: nlohmann's parse with a callback rescans a parent array each time one of its
// objects ends, so a header of a million empty objects took minutes.
struct DuplicateKeys : nlohmann::json_sax<json> {
  const std::string& path;
  const char* part;
  std::vector<std::set<std::string>> keys;  // one set per object being read
  DuplicateKeys(const std::string& p, const char* what) : path(p), part(what) {}
  bool null() override { return true; }
  bool boolean(bool) override { return true; }
  bool number_integer(number_integer_t) override { return true; }
  bool number_unsigned(number_unsigned_t) override { return true; }
  bool number_float(number_float_t, const string_t&) override { return true; }
  bool string(string_t&) override { return true; }
  bool binary(binary_t&) override { return true; }
  bool start_object(std::size_t) override {
    keys.emplace_back();
    return true;
  }
  bool key(string_t& k) override {
    if (!keys.back().insert(k).second) {
      if (keys.size() == 1) invalid_file(path + ": " + part + ": duplicate name " + (quoted)(k) + " (each may appear once)");
      invalid_file(path + ": " + part + ": duplicate key " + (quoted)(k) + " inside one JSON object");
    }
    return true;
  }
  bool end_object() override {
    keys.pop_back();
    return true;
  }
  bool start_array(std::size_t) override { return true; }
  bool end_array() override { return true; }
  bool parse_error(std::size_t, const std::string&, const nlohmann::detail::exception&) override { return false; }
};

json parse_json_strict(const std::string& path, const char* part, const char* begin, const char* end) {
  // nlohmann's lexer takes a NUL byte for the end of input and would ignore what follows.
  if (const void* nul = std::memchr(begin, 0, static_cast<std::size_t>(end - begin)))
    invalid_file(path + ": " + part + " is not valid JSON (NUL byte at offset " +
                 std::to_string(static_cast<const char*>(nul) - begin) + ")");
  // Deep nesting is refused before any parse: 50 million "[" took 3.7 GB to build.
  check_json_limits(std::string_view(begin, static_cast<std::size_t>(end - begin)), path + ": " + part);
  try {
    json j = json::parse(begin, end);
    DuplicateKeys check(path, part);
    json::sax_parse(begin, end, &check);
    return j;
  } catch (const json::exception& e) {
    invalid_file(path + ": " + part + " is not valid JSON (" + e.what() + ")");
  }
}

// A JSON integer >= 0; nullopt for negatives, fractions and anything that is not a number.
std::optional<std::uint64_t> as_count(const json& j) {
  if (j.is_number_unsigned()) return j.get<std::uint64_t>();
  if (j.is_number_integer() && j.get<std::int64_t>() >= 0) return static_cast<std::uint64_t>(j.get<std::int64_t>());
  return std::nullopt;
}

struct Span {
  std::string name;
  std::uint64_t begin = 0, end = 0;
};

// "[begin, end]" (appending piece by piece avoids a false -Wrestrict in g++ 12).
std::string range_text(std::uint64_t begin, std::uint64_t end) {
  std::string s = "[";
  s += std::to_string(begin);
  s += ", ";
  s += std::to_string(end);
  s += "]";
  return s;
}

}  // namespace

// Turns the mapped bytes of a SafetensorsFile into its tensor table (a friend of the class).
struct SafetensorsParser {
  static void parse(SafetensorsFile& f);

 private:
  static void parse_metadata(SafetensorsFile& f, const json& j);
  // Checks one header entry; fills the view (but its data pointer) and its byte range.
  // Returns the name of a foreign dtype when the entry uses one.
  static std::optional<std::string> parse_entry(const std::string& where, const json& j, std::uint64_t data_size,
                                                TensorView& view, Span& span);
  static void check_tiling(const std::string& path, std::vector<Span>& spans, std::uint64_t data_size);
};

void SafetensorsParser::parse(SafetensorsFile& f) {
  const std::string& path = f.file_->path();
  const std::uint8_t* base = f.file_->data();
  const std::size_t size = f.file_->size();
  if (size == 0) invalid_file(path + ": empty file (expected an 8-byte header length, a JSON header and tensor data)");
  if (size < 8) invalid_file(path + ": truncated: " + std::to_string(size) + " bytes, shorter than the 8-byte header length");
  std::uint64_t n = 0;
  for (int i = 7; i >= 0; --i) n = (n << 8) | base[i];  // little-endian
  if (n > kMaxSafetensorsHeader)
    invalid_file(path + ": header length " + std::to_string(n) + " is larger than the limit of " +
                 std::to_string(kMaxSafetensorsHeader) + " bytes (not a safetensors file?)");
  if (n > size - 8)
    invalid_file(path + ": header length " + std::to_string(n) + " runs past the end of the file (" +
                 std::to_string(size) + " bytes; truncated?)");

  const char* text = reinterpret_cast<const char*>(base + 8);
  const json header = parse_json_strict(path, "header", text, text + n);
  if (!header.is_object())
    invalid_file(path + ": header is a JSON " + header.type_name() + ", expected an object of tensor entries");

  const std::uint8_t* data = base + 8 + n;
  const std::uint64_t data_size = size - 8 - n;
  std::vector<Span> spans;
  std::optional<std::string> foreign;  // the first unsupported tensor, as: "a" has dtype F64
  for (const auto& [name, entry] : header.items()) {
    if (name == "__metadata__") {
      parse_metadata(f, entry);
      continue;
    }
    TensorView view;
    Span span;
    span.name = name;
    const std::string where = path + ": tensor " + quoted(name);
    if (auto d = parse_entry(where, entry, data_size, view, span); d && !foreign) foreign = quoted(name) + " has dtype " + *d;
    view.data = data + span.begin;
    f.tensors_.emplace(name, std::move(view));
    spans.push_back(std::move(span));
  }
  check_tiling(path, spans, data_size);
  if (foreign)
    unsupported(path + ": tensor " + *foreign + ", which this runtime does not support (supported: " + kSupportedNames + ")");
  for (auto& s : spans) f.names_.push_back(std::move(s.name));
}

void SafetensorsParser::parse_metadata(SafetensorsFile& f, const json& j) {
  const std::string& path = f.file_->path();
  if (!j.is_object())
    invalid_file(path + ": __metadata__ is a JSON " + j.type_name() + ", expected an object of string values");
  for (const auto& [key, value] : j.items()) {
    if (!value.is_string())
      invalid_file(path + ": __metadata__ value of " + quoted(key) + " is a JSON " + value.type_name() +
                   ", expected a string");
    f.metadata_.emplace(key, value.get<std::string>());
  }
}

std::optional<std::string> SafetensorsParser::parse_entry(const std::string& where, const json& j,
                                                          std::uint64_t data_size, TensorView& view, Span& span) {
  if (!j.is_object()) invalid_file(where + ": entry is a JSON " + std::string(j.type_name()) + ", expected an object");
  auto field = [&](const char* key, bool (json::*is_type)() const noexcept, const char* expected) -> const json& {
    auto it = j.find(key);
    if (it == j.end()) invalid_file(where + ": missing \"" + key + "\"");
    if (!((*it).*is_type)())
      invalid_file(where + ": \"" + key + "\" is a JSON " + it->type_name() + ", expected " + expected);
    return *it;
  };
  const auto& dtype_j = field("dtype", &json::is_string, "a string");
  const auto& shape_j = field("shape", &json::is_array, "an array of extents");
  const auto& offsets_j = field("data_offsets", &json::is_array, "an array [begin, end]");

  const std::string dtype_name_str = dtype_j.get<std::string>();
  int bits = 0;
  std::optional<std::string> foreign;
  if (auto dt = dtype_from_name(dtype_name_str)) {
    view.dtype = *dt;
    bits = dtype_bits(*dt);
  } else {
    auto it = std::find_if(std::begin(kForeignDTypes), std::end(kForeignDTypes),
                           [&](const ForeignDType& d) { return d.name == dtype_name_str; });
    if (it == std::end(kForeignDTypes))
      invalid_file(where + ": unknown dtype " + quoted(dtype_name_str) + " (expected one of " + kSupportedNames + ")");
    bits = it->bits;
    foreign = dtype_name_str;
  }

  std::vector<std::int64_t> dims;
  std::uint64_t numel = 1;
  bool overflow = false;
  for (std::size_t i = 0; i < shape_j.size(); ++i) {
    auto d = as_count(shape_j[i]);
    if (!d || *d > static_cast<std::uint64_t>(INT64_MAX))
      invalid_file(where + ": shape[" + std::to_string(i) + "] is " + shape_j[i].dump() + ", expected a non-negative integer");
    dims.push_back(static_cast<std::int64_t>(*d));
    overflow = overflow || __builtin_mul_overflow(numel, *d, &numel);
  }
  view.shape = Shape(std::move(dims));

  if (offsets_j.size() != 2)
    invalid_file(where + ": data_offsets has " + std::to_string(offsets_j.size()) + " elements, expected [begin, end]");
  auto begin = as_count(offsets_j[0]), end = as_count(offsets_j[1]);
  if (!begin || !end) invalid_file(where + ": data_offsets " + offsets_j.dump() + " must be two non-negative integers");
  const std::string offsets = range_text(*begin, *end);
  if (*begin > *end) invalid_file(where + ": data_offsets " + offsets + " begin after they end");
  if (*end > data_size)
    invalid_file(where + ": data_offsets " + offsets + " run past the end of the data (" + std::to_string(data_size) +
                 " bytes; truncated?)");

  // Bytes the dtype and shape need; more than 2^61 elements cannot fit any file we can map.
  overflow = overflow || numel > (UINT64_MAX >> 3);
  const std::uint64_t need = (numel * static_cast<std::uint64_t>(bits) + 7) / 8;
  if (overflow || need != *end - *begin)
    invalid_file(where + ": dtype " + dtype_name_str + " and shape " + view.shape.to_string() + " need " +
                 (overflow ? std::string("too many") : std::to_string(need)) + " bytes, but data_offsets " + offsets +
                 " hold " + std::to_string(*end - *begin));
  span.begin = *begin;
  span.end = *end;
  return foreign;
}

void SafetensorsParser::check_tiling(const std::string& path, std::vector<Span>& spans, std::uint64_t data_size) {
  std::sort(spans.begin(), spans.end(), [](const Span& a, const Span& b) {
    return std::tie(a.begin, a.end, a.name) < std::tie(b.begin, b.end, b.name);
  });
  std::uint64_t covered = 0;
  const Span* prev = nullptr;
  for (const Span& s : spans) {
    if (s.begin < covered)
      invalid_file(path + ": tensors " + quoted(prev->name) + " (data_offsets " + range_text(prev->begin, prev->end) +
                   ") and " + quoted(s.name) + " (data_offsets " + range_text(s.begin, s.end) + ") overlap");
    if (s.begin > covered)
      invalid_file(path + ": gap in the data: bytes [" + std::to_string(covered) + ", " + std::to_string(s.begin) +
                   ") before tensor " + quoted(s.name) + " belong to no tensor");
    covered = s.end;
    prev = &s;
  }
  if (covered != data_size)
    invalid_file(path + ": " + std::to_string(data_size - covered) + " unused bytes at the end of the data (tensors cover " +
                 std::to_string(covered) + " of " + std::to_string(data_size) + " bytes)");
}

std::unique_ptr<SafetensorsFile> SafetensorsFile::open(const std::string& path) {
  std::unique_ptr<SafetensorsFile> f(new SafetensorsFile());
  f->file_ = MappedFile::open(path);
  SafetensorsParser::parse(*f);
  return f;
}

TensorView SafetensorsFile::get(const std::string& name) const {
  auto it = tensors_.find(name);
  if (it == tensors_.end()) invalid_argument(path() + ": no tensor named " + quoted(name));
  return it->second;
}

// ---- TensorStore ----

std::unique_ptr<TensorStore> TensorStore::open_file(const std::string& path) {
  auto store = std::make_unique<TensorStore>();
  store->source_ = path;
  store->files_.push_back(SafetensorsFile::open(path));
  for (const auto& name : store->files_.back()->names()) store->where_.emplace(name, store->files_.back().get());
  return store;
}

std::unique_ptr<TensorStore> TensorStore::open_dir(const std::string& dir) {
  std::error_code ec;
  if (!std::filesystem::is_directory(dir, ec)) invalid_file(dir + ": not a directory");
  const std::string single = path_join(dir, "model.safetensors");
  const std::string index = path_join(dir, "model.safetensors.index.json");
  if (file_exists(single)) {  // the single file wins, as in Hugging Face transformers
    auto store = open_file(single);
    store->source_ = dir;
    return store;
  }
  if (!file_exists(index)) invalid_file(dir + ": holds neither model.safetensors nor model.safetensors.index.json");

  const std::string text = read_file(index);
  const json j = parse_json_strict(index, "index", text.data(), text.data() + text.size());
  if (!j.is_object()) invalid_file(index + ": index is a JSON " + std::string(j.type_name()) + ", expected an object");
  auto wm = j.find("weight_map");
  if (wm == j.end()) invalid_file(index + ": missing \"weight_map\"");
  if (!wm->is_object())
    invalid_file(index + ": \"weight_map\" is a JSON " + wm->type_name() + ", expected an object of shard file names");

  std::map<std::string, std::string> shard_of;  // tensor -> shard file name, as the index says
  std::map<std::string, std::string> first_tensor;  // shard file name -> a tensor mapped to it
  for (const auto& [tensor, shard] : wm->items()) {
    if (!shard.is_string())
      invalid_file(index + ": weight_map entry " + quoted(tensor) + " is a JSON " + shard.type_name() +
                   ", expected a shard file name");
    const std::string s = shard.get<std::string>();
    if (s.empty() || s.find('/') != std::string::npos || s == "." || s == "..")
      invalid_file(index + ": weight_map entry " + quoted(tensor) + " names shard " + quoted(s) +
                   ", expected a file name in the same directory");
    shard_of.emplace(tensor, s);
    first_tensor.emplace(s, tensor);
  }

  auto store = std::make_unique<TensorStore>();
  store->source_ = dir;
  std::map<std::string, const SafetensorsFile*> by_shard;
  for (const auto& [shard, tensor] : first_tensor) {
    const std::string shard_path = path_join(dir, shard);
    if (!file_exists(shard_path))
      invalid_file(index + ": shard " + quoted(shard) + " (named for tensor " + quoted(tensor) + ") is missing: " +
                   shard_path + " does not exist");
    store->files_.push_back(SafetensorsFile::open(shard_path));
    const SafetensorsFile* file = store->files_.back().get();
    by_shard.emplace(shard, file);
    for (const auto& name : file->names()) {
      auto [it, inserted] = store->where_.emplace(name, file);
      if (!inserted)
        invalid_file(index + ": tensor " + quoted(name) + " is held by two shards, " + it->second->path() + " and " +
                     file->path());
      if (!shard_of.count(name))
        invalid_file(index + ": shard " + quoted(shard) + " holds tensor " + quoted(name) + ", which weight_map does not list");
    }
  }
  for (const auto& [tensor, shard] : shard_of) {
    if (by_shard.at(shard)->contains(tensor)) continue;
    auto elsewhere = store->where_.find(tensor);
    invalid_file(index + ": weight_map puts tensor " + quoted(tensor) + " in shard " + quoted(shard) +
                 ", but that shard does not hold it" +
                 (elsewhere == store->where_.end() ? std::string() : " (" + elsewhere->second->path() + " does)"));
  }
  return store;
}

TensorView TensorStore::get(const std::string& name) const {
  auto it = where_.find(name);
  if (it == where_.end()) invalid_argument(source_ + ": no tensor named " + quoted(name));
  return it->second->get(name);
}

std::vector<std::string> TensorStore::names() const {
  std::vector<std::string> out;
  out.reserve(where_.size());
  for (const auto& [name, file] : where_) out.push_back(name);
  return out;
}

bool TensorStore::maps(const void* p) const {
  const auto* b = static_cast<const std::uint8_t*>(p);
  for (const auto& file : files_) {
    const MappedFile& m = file->mapping();
    if (m.data() != nullptr && b >= m.data() && b < m.data() + m.size()) return true;
  }
  return false;
}

std::optional<std::string> TensorStore::metadata(const std::string& key) const {
  for (const auto& file : files_) {
    auto it = file->metadata().find(key);
    if (it != file->metadata().end()) return it->second;
  }
  return std::nullopt;
}

}  // namespace staticlm
