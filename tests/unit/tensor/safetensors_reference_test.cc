// Cross-check against files written by tools/make_safetensors_fixture.py (Python struct + json):
// the reader must see exactly what the script wrote, and the writer must keep every tensor's
// entry and bytes (and, none of these tensors being of whole cache lines, their data order).
#include <gtest/gtest.h>

#include <algorithm>
#include <map>

#include <cstring>
#include <nlohmann/json.hpp>

#include "base/file.h"
#include "base/half.h"
#include "safetensors_test_util.h"
#include "tensor/safetensors.h"
#include "test_util.h"

namespace staticlm {
namespace {

std::string hex(std::span<const std::uint8_t> bytes) {
  static const char* digits = "0123456789abcdef";
  std::string s;
  for (auto b : bytes) {
    s += digits[b >> 4];
    s += digits[b & 15];
  }
  return s;
}

class SafetensorsReference : public ::testing::Test {
 protected:
  void SetUp() override { expected_ = nlohmann::json::parse(read_file(test::fixture("safetensors/reference.json"))); }

  // Checks every tensor of the file against reference.json.
  void check_file(const SafetensorsFile& f) {
    const auto& tensors = expected_["tensors"];
    ASSERT_EQ(f.names().size(), tensors.size());
    for (const auto& [name, e] : tensors.items()) {
      SCOPED_TRACE(name);
      ASSERT_TRUE(f.contains(name));
      const TensorView v = f.get(name);
      EXPECT_STREQ(dtype_name(v.dtype), e["dtype"].get<std::string>().c_str());
      EXPECT_EQ(v.shape, Shape(e["shape"].get<std::vector<std::int64_t>>()));
      EXPECT_EQ(hex(v.bytes()), e["hex"].get<std::string>());
      const auto& values = e["values"];
      if (v.dtype == DType::kI4) continue;  // bytes checked above; get_f32 does not unpack nibbles
      ASSERT_EQ(static_cast<std::size_t>(v.numel()), values.size());
      for (std::size_t i = 0; i < values.size(); ++i) {
        if (v.dtype == DType::kI64) {  // exact, past f32 precision; memcpy as the data may be unaligned
          std::int64_t x;
          std::memcpy(&x, static_cast<const std::uint8_t*>(v.data) + 8 * i, 8);
          EXPECT_EQ(x, values[i].get<std::int64_t>()) << i;
        } else if (dtype_is_float(v.dtype)) {
          // Bit-exact, so -0.0 and the rounded f32/bf16/f16 values are checked exactly.
          EXPECT_EQ(f32_bits(v.get_f32(static_cast<std::int64_t>(i))), f32_bits(values[i].get<float>())) << i;
        } else {
          EXPECT_EQ(v.get_f32(static_cast<std::int64_t>(i)), values[i].get<float>()) << i;
        }
      }
    }
    std::map<std::string, std::string> meta = expected_["metadata"];
    EXPECT_EQ(f.metadata(), meta);
  }

  nlohmann::json expected_;
};

TEST_F(SafetensorsReference, ReaderSeesWhatPythonWrote) {
  auto f = SafetensorsFile::open(test::fixture("safetensors/reference.safetensors"));
  check_file(*f);
  // Data order of the official writer: wider elements first, then by name; with the header
  // padded to 8 bytes every tensor is aligned for its element type.
  const std::map<std::string, int> bits = {{"I64", 64}, {"F32", 32}, {"I32", 32}, {"BF16", 16}, {"F16", 16},
                                           {"I8", 8},   {"U8", 8},   {"BOOL", 8}, {"I4", 4}};
  std::vector<std::pair<int, std::string>> order;
  for (const auto& [name, e] : expected_["tensors"].items()) order.emplace_back(-bits.at(e["dtype"]), name);
  std::sort(order.begin(), order.end());
  std::vector<std::string> expected_names;
  for (const auto& o : order) expected_names.push_back(o.second);
  EXPECT_EQ(f->names(), expected_names);
  EXPECT_EQ(f->get("g.i64").as<std::int64_t>()[1], (std::int64_t{1} << 62) + 1);
  EXPECT_EQ(f->get("f.i32").as<std::int32_t>()[1], 7);
  EXPECT_EQ(f->get("a.f32").as<float>()[2], 3.25f);  // at offset 0: aligned
}

TEST_F(SafetensorsReference, ReaderHandlesAnyDataOrderAndHeaderStyle) {
  auto f = SafetensorsFile::open(test::fixture("safetensors/reference_shuffled.safetensors"));
  check_file(*f);
  // names() is file order, which the script made reverse name order (the empty "j.empty" shares
  // its offset with "i.scalar" and, ending first, still comes first).
  std::vector<std::string> order;
  for (const auto& [name, e] : expected_["tensors"].items()) order.push_back(name);
  std::reverse(order.begin(), order.end());
  EXPECT_EQ(f->names(), order);
}

TEST_F(SafetensorsReference, FromF32RoundsLikeThePythonScript) {
  // The script rounds f32 -> bf16 on integer bits and f32 -> f16 with struct 'e'.
  for (const char* name : {"b.bf16", "c.f16"}) {
    SCOPED_TRACE(name);
    const auto& e = expected_["tensors"][name];
    const auto source = e["source_f32"].get<std::vector<float>>();
    const Tensor t = Tensor::from_f32(*dtype_from_name(e["dtype"].get<std::string>()),
                                      Shape(e["shape"].get<std::vector<std::int64_t>>()), source);
    EXPECT_EQ(hex(t.view().bytes()), e["hex"].get<std::string>());
  }
}

TEST_F(SafetensorsReference, WriterKeepsWhatThePythonFileHolds) {
  // The script writes the official layout (wider elements first, header padded to 8 bytes);
  // ours differs only where the tensors lie (cache lines, safetensors_roundtrip_test.cc): the
  // same header entries but data_offsets, the same metadata and the same bytes per tensor.
  const std::string ref = test::fixture("safetensors/reference.safetensors");
  auto f = SafetensorsFile::open(ref);
  SafetensorsWriter w;
  for (const auto& name : f->names()) w.add(name, f->get(name));
  for (const auto& [k, v] : f->metadata()) w.add_metadata(k, v);
  test::TempDir dir;
  const std::string out = dir.file("copy.safetensors");
  w.write(out);
  const auto entries = [](const std::string& path) {
    const std::string bytes = test::read_bytes(path);
    nlohmann::json h = nlohmann::json::parse(bytes.substr(8, test::header_length(bytes)));
    for (auto& [name, e] : h.items())
      if (name != "__metadata__") e.erase("data_offsets");
    return h;
  };
  EXPECT_EQ(entries(out), entries(ref));
  // The only tensor of whole cache lines is empty, so the data sections are the same bytes.
  const std::string a = test::read_bytes(out), b = test::read_bytes(ref);
  EXPECT_EQ(a.substr(8 + test::header_length(a)), b.substr(8 + test::header_length(b)));
  auto g = SafetensorsFile::open(out);
  for (const auto& name : f->names()) {
    const TensorView a = f->get(name), b = g->get(name);
    ASSERT_EQ(a.nbytes(), b.nbytes()) << name;
    EXPECT_TRUE(std::equal(a.bytes().begin(), a.bytes().end(), b.bytes().begin())) << name;
  }
}

}  // namespace
}  // namespace staticlm
