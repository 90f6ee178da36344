// Every malformed safetensors file, built byte by byte, must give a one-line error that starts
// with the file path and names the problem.
#include <gtest/gtest.h>
#include <sys/stat.h>

#include "safetensors_test_util.h"
#include "tensor/safetensors.h"
#include "test_util.h"

namespace staticlm {
namespace {

using test::fails_with;
using test::st_bytes;

class BadSafetensors : public ::testing::Test {
 protected:
  // Writes the bytes to a file and expects open() to fail with kind and message parts.
  ::testing::AssertionResult open_fails(const std::string& bytes, ErrorKind kind, const std::vector<std::string>& parts) {
    const std::string path = dir_.file("bad.safetensors");
    test::write_bytes(path, bytes);
    return fails_with([&] { SafetensorsFile::open(path); }, kind, path + ": ", parts);
  }
  ::testing::AssertionResult invalid(const std::string& bytes, const std::vector<std::string>& parts) {
    return open_fails(bytes, ErrorKind::kInvalidFile, parts);
  }
  test::TempDir dir_;
};

// One F32 tensor of shape [2] (8 bytes) named "a", with the given entry JSON.
std::string one(const std::string& entry, const std::string& data = std::string(8, 'x')) {
  return st_bytes("{\"a\":" + entry + "}", data);
}

TEST_F(BadSafetensors, ValidBaselineOpens) {
  // The helpers build a valid file when nothing is broken, so each failure below is the named fault.
  const std::string path = dir_.file("ok.safetensors");
  test::write_bytes(path, one(R"({"dtype":"F32","shape":[2],"data_offsets":[0,8]})"));
  auto f = SafetensorsFile::open(path);
  ASSERT_EQ(f->names().size(), 1u);
  EXPECT_EQ(f->get("a").shape, Shape({2}));
}

TEST_F(BadSafetensors, EmptyFile) { EXPECT_TRUE(invalid("", {"empty file"})); }

TEST_F(BadSafetensors, ShorterThanHeaderLength) {
  EXPECT_TRUE(invalid(std::string(5, '\x01'), {"truncated", "5 bytes", "8-byte header length"}));
}

TEST_F(BadSafetensors, HeaderLengthPastEnd) {
  std::string bytes = st_bytes("{}");
  bytes[0] = 100;  // claims 100 header bytes; the file holds 2
  EXPECT_TRUE(invalid(bytes, {"header length 100", "past the end of the file (10 bytes"}));
}

TEST_F(BadSafetensors, HeaderLengthAbsurd) {
  std::string bytes = st_bytes("{}");
  bytes[5] = 1;  // 2^40 + 2
  EXPECT_TRUE(invalid(bytes, {"header length 1099511627778", "larger than the limit"}));
  // Just past the limit is refused as absurd too, whatever the file size.
  const std::uint64_t n = kMaxSafetensorsHeader + 1;
  for (int i = 0; i < 8; ++i) bytes[static_cast<std::size_t>(i)] = static_cast<char>((n >> (8 * i)) & 0xff);
  EXPECT_TRUE(invalid(bytes, {"header length " + std::to_string(n), "larger than the limit"}));
}

TEST_F(BadSafetensors, InvalidJson) {
  EXPECT_TRUE(invalid(st_bytes("{\"a\": "), {"header is not valid JSON"}));
  EXPECT_TRUE(invalid(st_bytes(std::string("{\"a\xff\":1}")), {"header is not valid JSON"}));  // not UTF-8
  // nlohmann's lexer stops at a NUL byte; padding with NULs (or hiding bytes after one) is refused.
  EXPECT_TRUE(invalid(st_bytes(std::string("{}\0\0", 4)), {"header is not valid JSON", "NUL byte at offset 2"}));
  EXPECT_TRUE(invalid(st_bytes(std::string("{}\0,{", 4)), {"header is not valid JSON", "NUL byte at offset 2"}));
}

TEST_F(BadSafetensors, HeaderNotAnObject) {
  EXPECT_TRUE(invalid(st_bytes("[1, 2]"), {"header is a JSON array", "expected an object"}));
  EXPECT_TRUE(invalid(st_bytes("7"), {"header is a JSON number"}));
}

TEST_F(BadSafetensors, EntryMissingField) {
  EXPECT_TRUE(invalid(one(R"({"shape":[2],"data_offsets":[0,8]})"), {"tensor \"a\"", "missing \"dtype\""}));
  EXPECT_TRUE(invalid(one(R"({"dtype":"F32","data_offsets":[0,8]})"), {"tensor \"a\"", "missing \"shape\""}));
  EXPECT_TRUE(invalid(one(R"({"dtype":"F32","shape":[2]})"), {"tensor \"a\"", "missing \"data_offsets\""}));
}

TEST_F(BadSafetensors, EntryWrongJsonType) {
  EXPECT_TRUE(invalid(one(R"("F32")"), {"tensor \"a\"", "entry is a JSON string", "expected an object"}));
  EXPECT_TRUE(invalid(one(R"({"dtype":7,"shape":[2],"data_offsets":[0,8]})"), {"\"dtype\" is a JSON number"}));
  EXPECT_TRUE(invalid(one(R"({"dtype":"F32","shape":"2","data_offsets":[0,8]})"), {"\"shape\" is a JSON string"}));
  EXPECT_TRUE(invalid(one(R"({"dtype":"F32","shape":[2],"data_offsets":{"b":0}})"), {"\"data_offsets\" is a JSON object"}));
}

TEST_F(BadSafetensors, ShapeNotNonNegativeInteger) {
  EXPECT_TRUE(invalid(one(R"({"dtype":"F32","shape":[-2],"data_offsets":[0,8]})"),
                      {"tensor \"a\"", "shape[0] is -2", "non-negative integer"}));
  EXPECT_TRUE(invalid(one(R"({"dtype":"F32","shape":[1,2.5],"data_offsets":[0,8]})"), {"shape[1] is 2.5"}));
  EXPECT_TRUE(invalid(one(R"({"dtype":"F32","shape":["2"],"data_offsets":[0,8]})"), {"shape[0] is \"2\""}));
  EXPECT_TRUE(invalid(one(R"({"dtype":"F32","shape":[9223372036854775808],"data_offsets":[0,8]})"),
                      {"shape[0] is 9223372036854775808"}));
}

TEST_F(BadSafetensors, ShapeTooManyElements) {
  EXPECT_TRUE(invalid(one(R"({"dtype":"F32","shape":[4294967296,4294967296],"data_offsets":[0,8]})"),
                      {"tensor \"a\"", "need too many bytes"}));
}

TEST_F(BadSafetensors, OffsetsMalformed) {
  EXPECT_TRUE(invalid(one(R"({"dtype":"F32","shape":[2],"data_offsets":[0,8,8]})"), {"data_offsets has 3 elements"}));
  EXPECT_TRUE(invalid(one(R"({"dtype":"F32","shape":[2],"data_offsets":[-1,8]})"), {"[-1,8]", "two non-negative integers"}));
  EXPECT_TRUE(invalid(one(R"({"dtype":"F32","shape":[2],"data_offsets":[0,8.0]})"), {"two non-negative integers"}));
}

TEST_F(BadSafetensors, OffsetsBeginAfterEnd) {
  EXPECT_TRUE(invalid(one(R"({"dtype":"F32","shape":[0],"data_offsets":[8,0]})"), {"tensor \"a\"", "[8, 0] begin after they end"}));
}

TEST_F(BadSafetensors, DataShorterThanOffsets) {
  // A truncated file: the header promises 8 bytes of data, 5 remain.
  EXPECT_TRUE(invalid(one(R"({"dtype":"F32","shape":[2],"data_offsets":[0,8]})", "12345"),
                      {"tensor \"a\"", "[0, 8] run past the end of the data (5 bytes", "truncated"}));
}

TEST_F(BadSafetensors, OverlappingTensors) {
  const std::string h =
      R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},"b":{"dtype":"F32","shape":[2],"data_offsets":[4,12]}})";
  EXPECT_TRUE(invalid(st_bytes(h, std::string(12, 'x')), {"\"a\" (data_offsets [0, 8])", "\"b\" (data_offsets [4, 12])", "overlap"}));
  // The same range twice is an overlap as well.
  const std::string same =
      R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},"b":{"dtype":"I32","shape":[2],"data_offsets":[0,8]}})";
  EXPECT_TRUE(invalid(st_bytes(same, std::string(8, 'x')), {"overlap"}));
}

TEST_F(BadSafetensors, GapBetweenTensors) {
  const std::string h =
      R"({"a":{"dtype":"F32","shape":[1],"data_offsets":[0,4]},"b":{"dtype":"F32","shape":[1],"data_offsets":[8,12]}})";
  EXPECT_TRUE(invalid(st_bytes(h, std::string(12, 'x')), {"gap in the data", "[4, 8)", "tensor \"b\""}));
  EXPECT_TRUE(invalid(one(R"({"dtype":"F32","shape":[1],"data_offsets":[4,8]})"), {"gap in the data", "[0, 4)"}));
}

TEST_F(BadSafetensors, UnusedBytesAtEnd) {
  EXPECT_TRUE(invalid(one(R"({"dtype":"F32","shape":[1],"data_offsets":[0,4]})"),
                      {"4 unused bytes at the end of the data", "cover 4 of 8 bytes"}));
  EXPECT_TRUE(invalid(st_bytes("{}", "zz"), {"2 unused bytes"}));
}

TEST_F(BadSafetensors, ByteSizeMismatch) {
  EXPECT_TRUE(invalid(one(R"({"dtype":"F32","shape":[3],"data_offsets":[0,8]})"),
                      {"tensor \"a\"", "dtype F32 and shape [3] need 12 bytes", "[0, 8] hold 8"}));
  EXPECT_TRUE(invalid(one(R"({"dtype":"BF16","shape":[2],"data_offsets":[0,8]})"), {"BF16 and shape [2] need 4 bytes"}));
  // I4 packs two values per byte: 3 values need 2 bytes, not 1 or 3.
  EXPECT_TRUE(invalid(one(R"({"dtype":"I4","shape":[3],"data_offsets":[0,8]})"), {"I4 and shape [3] need 2 bytes"}));
}

TEST_F(BadSafetensors, UnknownDtype) {
  EXPECT_TRUE(invalid(one(R"({"dtype":"Q9","shape":[2],"data_offsets":[0,8]})"),
                      {"tensor \"a\"", "unknown dtype \"Q9\"", "expected one of F32"}));
  EXPECT_TRUE(invalid(one(R"({"dtype":"f32","shape":[2],"data_offsets":[0,8]})"), {"unknown dtype \"f32\""}));
}

TEST_F(BadSafetensors, UnsupportedDtypeIsUnsupported) {
  struct Case {
    const char* dtype;
    int bytes_per_value;
  };
  for (Case c : {Case{"F64", 8}, Case{"I16", 2}, Case{"U16", 2}, Case{"U32", 4}, Case{"U64", 8}, Case{"F8_E4M3", 1},
                 Case{"F8_E5M2", 1}}) {
    const int n = 2 * c.bytes_per_value;
    const std::string entry = std::string(R"({"dtype":")") + c.dtype + R"(","shape":[2],"data_offsets":[0,)" +
                              std::to_string(n) + "]}";
    EXPECT_TRUE(open_fails(one(entry, std::string(static_cast<std::size_t>(n), 'x')), ErrorKind::kUnsupported,
                           {"tensor \"a\" has dtype " + std::string(c.dtype), "not support"}))
        << c.dtype;
  }
}

TEST_F(BadSafetensors, UnsupportedDtypeInBrokenFileIsInvalid) {
  // A file that breaks the format is invalid even when it also holds an unsupported dtype.
  EXPECT_TRUE(invalid(one(R"({"dtype":"F64","shape":[2],"data_offsets":[0,8]})"), {"F64 and shape [2] need 16 bytes"}));
}

TEST_F(BadSafetensors, DuplicateTensorName) {
  const std::string h =
      R"({"a":{"dtype":"F32","shape":[1],"data_offsets":[0,4]},"a":{"dtype":"F32","shape":[1],"data_offsets":[4,8]}})";
  EXPECT_TRUE(invalid(st_bytes(h, std::string(8, 'x')), {"duplicate name \"a\""}));
  EXPECT_TRUE(invalid(one(R"({"dtype":"F32","dtype":"I32","shape":[2],"data_offsets":[0,8]})"), {"duplicate key \"dtype\""}));
}

// Headers made to cost time or memory, not only to be wrong: nesting deeper than the JSON limit
// is refused before any parse (50 million "[" took 3.7 GB to build), and a million objects in one
// array are read in one linear pass (the callback parse used for duplicate keys rescanned the
// array at each object's end: minutes).
TEST_F(BadSafetensors, CostlyHeadersAreRefusedByName) {
  EXPECT_TRUE(invalid(st_bytes("{\"a\":" + std::string(200, '[') + std::string(200, ']') + "}"),
                      {"header: JSON nested deeper than 128 levels"}));
  std::string many = "{\"a\":[";
  for (int i = 0; i < 1000000; ++i) many += "{},";
  many += "{}]}";
  EXPECT_TRUE(invalid(st_bytes(many), {"tensor \"a\"", "JSON array, expected an object"}));
  // The duplicate-key pass sees keys inside nested objects too.
  EXPECT_TRUE(invalid(st_bytes(R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8],"x":{"k":1,"k":2}}})", std::string(8, 'x')),
                      {"duplicate key \"k\""}));
}

// A FIFO where the file should be is refused at once (opening it for reading waited for a
// writer forever).
TEST_F(BadSafetensors, FifoIsNotARegularFile) {
  const std::string path = dir_.file("fifo.safetensors");
  ASSERT_EQ(::mkfifo(path.c_str(), 0600), 0);
  EXPECT_TRUE(fails_with([&] { SafetensorsFile::open(path); }, ErrorKind::kInvalidFile, path + ": ", {"not a regular file"}));
}

TEST_F(BadSafetensors, MetadataNotStringMap) {
  const std::string t = R"("a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]})";
  const std::string data(8, 'x');
  EXPECT_TRUE(invalid(st_bytes("{\"__metadata__\":[\"x\"]," + t + "}", data), {"__metadata__ is a JSON array"}));
  EXPECT_TRUE(invalid(st_bytes("{\"__metadata__\":{\"n\":3}," + t + "}", data), {"__metadata__ value of \"n\" is a JSON number"}));
  EXPECT_TRUE(invalid(st_bytes("{\"__metadata__\":{\"n\":null}," + t + "}", data), {"value of \"n\" is a JSON null"}));
}

TEST_F(BadSafetensors, MissingFileAndDirectory) {
  const std::string missing = dir_.file("nope.safetensors");
  EXPECT_TRUE(fails_with([&] { SafetensorsFile::open(missing); }, ErrorKind::kInvalidFile, missing + ": ", {"cannot open"}));
  EXPECT_TRUE(fails_with([&] { SafetensorsFile::open(dir_.path()); }, ErrorKind::kInvalidFile, dir_.path() + ": ",
                         {"not a regular file"}));
}

TEST_F(BadSafetensors, AbsentTensorIsInvalidArgument) {
  const std::string path = dir_.file("ok.safetensors");
  test::write_bytes(path, one(R"({"dtype":"F32","shape":[2],"data_offsets":[0,8]})"));
  auto f = SafetensorsFile::open(path);
  EXPECT_FALSE(f->contains("b"));
  EXPECT_TRUE(fails_with([&] { f->get("b"); }, ErrorKind::kInvalidArgument, path + ": ", {"no tensor named \"b\""}));
}

}  // namespace
}  // namespace staticlm
