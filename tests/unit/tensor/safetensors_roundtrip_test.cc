// Writer then reader: what goes in comes out (names, dtypes, shapes, bytes, metadata), the file
// has the layout the format asks for, views point into the mapping, and failed writes leave no file.
#include <gtest/gtest.h>

#include <cstring>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <numeric>

#include "safetensors_test_util.h"
#include "tensor/safetensors.h"
#include "test_util.h"

namespace staticlm {
namespace {

using test::fails_with;

std::vector<std::string> dir_entries(const std::string& dir) {
  std::vector<std::string> out;
  for (const auto& e : std::filesystem::directory_iterator(dir)) out.push_back(e.path().filename().string());
  std::sort(out.begin(), out.end());
  return out;
}

// The header JSON of a file's bytes, parsed independently of the reader.
nlohmann::json header_json(const std::string& bytes) {
  return nlohmann::json::parse(bytes.substr(8, test::header_length(bytes)));
}

// Distinct bytes per tensor so a mix-up between tensors shows.
std::vector<std::uint8_t> pattern(std::size_t n, std::uint8_t seed) {
  std::vector<std::uint8_t> v(n);
  for (std::size_t i = 0; i < n; ++i) v[i] = static_cast<std::uint8_t>(seed + 31 * i + (i >> 8));
  return v;
}

struct Spec {
  std::string name;
  DType dtype;
  Shape shape;
};

const std::vector<Spec> kSpecs = {
    {"model.z.weight", DType::kBF16, {3, 5}}, {"model.a.bias", DType::kF32, {7}},  {"ids", DType::kI64, {2, 2}},
    {"mask", DType::kBool, {4}},              {"scalar", DType::kF32, {}},         {"empty", DType::kF16, {0, 3}},
    {"packed", DType::kI4, {5}},              {"q", DType::kI8, {2, 3}},           {"u", DType::kU8, {1, 1, 3}},
    {"pos", DType::kI32, {3}},                {"lines.u4", DType::kU4, {4, 32}},   {"lines.bf16", DType::kBF16, {2, 64}},
    {"lines.i8", DType::kI8, {3, 64}},
};

class SafetensorsRoundTrip : public ::testing::Test {
 protected:
  test::TempDir dir_;
};

TEST_F(SafetensorsRoundTrip, TensorsAndMetadataComeBack) {
  SafetensorsWriter w;
  std::map<std::string, std::vector<std::uint8_t>> want;
  std::uint8_t seed = 1;
  for (const auto& s : kSpecs) {
    auto bytes = pattern(dtype_bytes(s.dtype, static_cast<std::size_t>(s.shape.numel())), seed++);
    want[s.name] = bytes;
    if (seed % 2) {  // half through views, half through producers
      w.add(s.name, TensorView{s.dtype, s.shape, bytes.data()});
    } else {
      w.add(s.name, s.dtype, s.shape, [bytes](ByteSink& sink) { sink.write(bytes.data(), bytes.size()); });
    }
  }
  w.add_metadata("format", "pt");
  w.add_metadata("note", "a \"quoted\" value\nwith a newline, and UTF-8: \xc3\xa9");
  const std::string path = dir_.file("model.safetensors");
  w.write(path);

  auto f = SafetensorsFile::open(path);
  std::vector<std::string> sorted;
  for (const auto& s : kSpecs) sorted.push_back(s.name);
  // Written tensors of whole cache lines first, then the others; each part wider elements
  // first, then by name.
  std::stable_sort(sorted.begin(), sorted.end());
  std::vector<std::string> by_width;
  for (bool lines : {true, false})
    for (int bits : {64, 32, 16, 8, 4})
      for (const auto& name : sorted)
        for (const auto& s : kSpecs)
          if (s.name == name && dtype_bits(s.dtype) == bits &&
              (dtype_bytes(s.dtype, static_cast<std::size_t>(s.shape.numel())) % kSafetensorsAlignment == 0) == lines)
            by_width.push_back(name);
  EXPECT_EQ(f->names(), by_width);
  for (const auto& s : kSpecs) {
    ASSERT_TRUE(f->contains(s.name));
    const TensorView v = f->get(s.name);
    EXPECT_EQ(v.dtype, s.dtype) << s.name;
    EXPECT_EQ(v.shape, s.shape) << s.name;
    ASSERT_EQ(v.nbytes(), want[s.name].size()) << s.name;
    EXPECT_TRUE(std::equal(v.bytes().begin(), v.bytes().end(), want[s.name].begin())) << s.name;
  }
  const std::map<std::string, std::string> meta = {{"format", "pt"},
                                                   {"note", "a \"quoted\" value\nwith a newline, and UTF-8: \xc3\xa9"}};
  EXPECT_EQ(f->metadata(), meta);
}

TEST_F(SafetensorsRoundTrip, LayoutIsContiguousAlignedAndViewsPointIntoTheMap) {
  SafetensorsWriter w;
  for (const auto& s : kSpecs) {
    auto bytes = pattern(dtype_bytes(s.dtype, static_cast<std::size_t>(s.shape.numel())), 9);
    w.add(s.name, TensorView{s.dtype, s.shape, bytes.data()});
  }
  const std::string path = dir_.file("m.safetensors");
  w.write(path);
  const std::string bytes = test::read_bytes(path);
  const std::uint64_t n = test::header_length(bytes);
  const nlohmann::json h = header_json(bytes);
  EXPECT_FALSE(h.contains("__metadata__"));  // none added, none written

  // Offsets tile [0, data size), and each tensor starts at a multiple of its element size, and
  // one of whole cache lines at a multiple of 64 bytes of the file (8 + header length is).
  std::vector<std::pair<std::uint64_t, std::string>> by_offset;
  std::vector<std::string> names;
  for (const auto& [name, e] : h.items()) {
    names.push_back(name);
    by_offset.emplace_back(e["data_offsets"][0].get<std::uint64_t>(), name);
  }
  std::sort(by_offset.begin(), by_offset.end());
  EXPECT_EQ((8 + n) % kSafetensorsAlignment, 0u);
  std::uint64_t offset = 0;
  int lines = 0;
  for (const auto& [begin, name] : by_offset) {
    EXPECT_EQ(begin, offset) << name;
    const auto dt = dtype_from_name(h[name]["dtype"].get<std::string>());
    ASSERT_TRUE(dt.has_value());
    EXPECT_EQ(begin % std::max<std::uint64_t>(1, dtype_bits(*dt) / 8), 0u) << name << " is not aligned";
    const std::uint64_t end = h[name]["data_offsets"][1].get<std::uint64_t>();
    if ((end - begin) % kSafetensorsAlignment == 0) {
      EXPECT_EQ((8 + n + begin) % kSafetensorsAlignment, 0u) << name << " is not on a cache line";
      lines += end > begin;
    }
    offset = end;
  }
  EXPECT_EQ(lines, 3);  // the three "lines.*" tensors
  EXPECT_EQ(8 + n + offset, bytes.size());

  // No copy: every view lies inside the mapping, exactly where the header says.
  auto f = SafetensorsFile::open(path);
  const std::uint8_t* map = f->mapping().data();
  ASSERT_EQ(f->mapping().size(), bytes.size());
  for (const auto& name : names) {
    const auto* p = static_cast<const std::uint8_t*>(f->get(name).data);
    ASSERT_GE(p, map);
    ASSERT_LE(p + f->get(name).nbytes(), map + bytes.size());
    EXPECT_EQ(static_cast<std::uint64_t>(p - map), 8 + n + h[name]["data_offsets"][0].get<std::uint64_t>()) << name;
  }
}

TEST_F(SafetensorsRoundTrip, HeaderIsPaddedWithSpacesToACacheLine) {
  // Names of lengths 1..8 move the JSON length through 8 residues mod 64.
  std::set<std::size_t> pads;
  for (std::size_t len = 1; len <= 8; ++len) {
    SafetensorsWriter w;
    const float x = 1.0f;
    w.add(std::string(len, 'n'), TensorView{DType::kF32, {1}, &x});
    const std::string path = dir_.file(std::to_string(len) + ".safetensors");
    w.write(path);
    const std::string bytes = test::read_bytes(path);
    const std::uint64_t n = test::header_length(bytes);
    EXPECT_EQ((8 + n) % kSafetensorsAlignment, 0u) << len;
    const std::string header = bytes.substr(8, n);
    const std::size_t json_end = header.rfind('}') + 1;
    EXPECT_EQ(header.substr(json_end), std::string(n - json_end, ' ')) << len;
    EXPECT_LT(n - json_end, kSafetensorsAlignment);
    pads.insert(n - json_end);
    EXPECT_EQ(bytes.substr(8 + n), std::string(reinterpret_cast<const char*>(&x), 4));
    EXPECT_EQ(SafetensorsFile::open(path)->get(std::string(len, 'n')).get_f32(0), 1.0f);
  }
  EXPECT_EQ(pads.size(), 8u);  // 8 different paddings
}

TEST_F(SafetensorsRoundTrip, ProducerMayStreamInPieces) {
  // 1 MiB written one odd-sized piece at a time, never held as a whole by the writer.
  const std::size_t n = 1 << 18;  // f32 values
  SafetensorsWriter w;
  w.add("big", DType::kF32, {512, 512}, [n](ByteSink& sink) {
    std::vector<float> chunk;
    for (std::size_t i = 0; i < n;) {
      const std::size_t k = std::min<std::size_t>(1000 + i % 7, n - i);
      chunk.resize(k);
      for (std::size_t j = 0; j < k; ++j) chunk[j] = static_cast<float>(i + j);
      sink.write(chunk.data(), k * sizeof(float));
      i += k;
    }
  });
  w.add("small", DType::kI32, {1}, [](ByteSink& sink) {
    const std::int32_t v = -5;
    sink.write(&v, 4);
  });
  const std::string path = dir_.file("big.safetensors");
  w.write(path);
  auto f = SafetensorsFile::open(path);
  auto big = f->get("big").as<float>();
  ASSERT_EQ(big.size(), n);
  for (std::size_t i = 0; i < n; i += 4099) ASSERT_EQ(big[i], static_cast<float>(i));
  EXPECT_EQ(big[n - 1], static_cast<float>(n - 1));
  EXPECT_EQ(f->get("small").as<std::int32_t>()[0], -5);
}

TEST_F(SafetensorsRoundTrip, WrongProducerByteCountLeavesNoFile) {
  const std::string path = dir_.file("out.safetensors");
  for (std::size_t written : {0u, 7u, 9u}) {
    SafetensorsWriter w;
    w.add("a", DType::kF32, {2}, [written](ByteSink& sink) {
      const std::vector<std::uint8_t> b(written, 1);
      if (written) sink.write(b.data(), b.size());
    });
    const std::string expect = written > 8 ? "wrote more than the 8 bytes" : "wrote " + std::to_string(written) + " bytes, expected 8";
    EXPECT_TRUE(fails_with([&] { w.write(path); }, ErrorKind::kInternal, path + ": ", {"tensor \"a\"", expect}));
    EXPECT_TRUE(dir_entries(dir_.path()).empty()) << written;  // neither the file nor a temporary
  }
}

TEST_F(SafetensorsRoundTrip, FailedWriteKeepsTheOldFile) {
  const std::string path = dir_.file("out.safetensors");
  const float one = 1.0f;
  SafetensorsWriter good;
  good.add("a", TensorView{DType::kF32, {1}, &one});
  good.write(path);
  const std::string before = test::read_bytes(path);

  SafetensorsWriter bad;
  bad.add("b", DType::kF32, {1}, [](ByteSink&) { throw std::runtime_error("producer failed"); });
  EXPECT_THROW(bad.write(path), std::runtime_error);
  EXPECT_EQ(test::read_bytes(path), before);
  EXPECT_EQ(dir_entries(dir_.path()), std::vector<std::string>{"out.safetensors"});
}

TEST_F(SafetensorsRoundTrip, AddRefusesBadTensors) {
  SafetensorsWriter w;
  const float x = 0;
  w.add("a", TensorView{DType::kF32, {1}, &x});
  const std::string p = "safetensors writer: ";
  EXPECT_TRUE(fails_with([&] { w.add("a", TensorView{DType::kF32, {1}, &x}); }, ErrorKind::kInvalidArgument, p,
                         {"tensor \"a\"", "added twice"}));
  EXPECT_TRUE(fails_with([&] { w.add("__metadata__", TensorView{DType::kF32, {1}, &x}); }, ErrorKind::kInvalidArgument, p,
                         {"reserved"}));
  EXPECT_TRUE(fails_with([&] { w.add("neg", DType::kF32, Shape{2, -1}, [](ByteSink&) {}); }, ErrorKind::kInvalidArgument, p,
                         {"tensor \"neg\"", "[2, -1]", "negative"}));
  EXPECT_TRUE(fails_with([&] { w.add("none", DType::kF32, {1}, nullptr); }, ErrorKind::kInvalidArgument, p, {"no producer"}));
}

TEST_F(SafetensorsRoundTrip, NameThatIsNotUtf8IsRefusedAtWrite) {
  SafetensorsWriter w;
  const float x = 0;
  w.add("bad\xff", TensorView{DType::kF32, {1}, &x});
  const std::string path = dir_.file("u.safetensors");
  EXPECT_TRUE(fails_with([&] { w.write(path); }, ErrorKind::kInvalidArgument, path + ": ", {"not valid UTF-8"}));
  EXPECT_TRUE(dir_entries(dir_.path()).empty());
}

TEST_F(SafetensorsRoundTrip, EmptyCheckpoint) {
  // No tensors at all is still a valid file: header "{}" padded, no data.
  const std::string path = dir_.file("e.safetensors");
  SafetensorsWriter().write(path);
  EXPECT_EQ(test::read_bytes(path), test::st_bytes("{}" + std::string(54, ' ')));
  auto f = SafetensorsFile::open(path);
  EXPECT_TRUE(f->names().empty());
  EXPECT_TRUE(f->metadata().empty());
}

}  // namespace
}  // namespace staticlm
