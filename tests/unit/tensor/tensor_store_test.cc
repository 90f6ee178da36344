// TensorStore: one file, a checkpoint directory, and sharded checkpoints through
// model.safetensors.index.json, with every inconsistency between index and shards refused.
#include <gtest/gtest.h>

#include "base/file.h"
#include "safetensors_test_util.h"
#include "tensor/safetensors.h"
#include "test_util.h"

namespace staticlm {
namespace {

using test::fails_with;

// Writes a shard holding F32 tensors of shape [2] whose values are {base, base + 1}.
void write_shard(const std::string& path, const std::map<std::string, float>& tensors) {
  SafetensorsWriter w;
  for (const auto& [name, base] : tensors) {
    const std::vector<float> v = {base, base + 1};
    w.add(name, DType::kF32, {2}, [v](ByteSink& s) { s.write(v.data(), v.size() * sizeof(float)); });
  }
  w.write(path);
}

class TensorStoreTest : public ::testing::Test {
 protected:
  void SetUp() override {
    write_shard(dir_.file("model-00001-of-00002.safetensors"), {{"embed", 10.0f}, {"layer.0", 20.0f}});
    write_shard(dir_.file("model-00002-of-00002.safetensors"), {{"layer.1", 30.0f}, {"norm", 40.0f}});
  }
  void write_index(const std::string& text) { write_text_atomic(index(), text); }
  std::string index() const { return dir_.file("model.safetensors.index.json"); }
  // The index that matches the two shards, with `extra` appended inside weight_map.
  std::string good_index(const std::string& extra = "") const {
    return R"({"metadata": {"total_size": 32}, "weight_map": {
      "embed": "model-00001-of-00002.safetensors", "layer.0": "model-00001-of-00002.safetensors",
      "layer.1": "model-00002-of-00002.safetensors", "norm": "model-00002-of-00002.safetensors")" +
           extra + "}}";
  }
  ::testing::AssertionResult index_fails(const std::vector<std::string>& parts) {
    return fails_with([&] { TensorStore::open_dir(dir_.path()); }, ErrorKind::kInvalidFile, index() + ": ", parts);
  }
  test::TempDir dir_;
};

TEST_F(TensorStoreTest, ShardedRoundTrip) {
  write_index(good_index());
  auto store = TensorStore::open_dir(dir_.path());
  EXPECT_EQ(store->source(), dir_.path());
  EXPECT_EQ(store->names(), (std::vector<std::string>{"embed", "layer.0", "layer.1", "norm"}));
  const std::map<std::string, float> base = {{"embed", 10}, {"layer.0", 20}, {"layer.1", 30}, {"norm", 40}};
  for (const auto& [name, b] : base) {
    ASSERT_TRUE(store->contains(name));
    const TensorView v = store->get(name);
    EXPECT_EQ(v.shape, Shape({2}));
    EXPECT_EQ(v.get_f32(0), b) << name;
    EXPECT_EQ(v.get_f32(1), b + 1) << name;
  }
  // Views of one shard lie next to each other in its mapping; the other shard is elsewhere.
  const auto* e = static_cast<const std::uint8_t*>(store->get("embed").data);
  EXPECT_EQ(static_cast<const std::uint8_t*>(store->get("layer.0").data) - e, 8);
  EXPECT_FALSE(store->contains("absent"));
  EXPECT_TRUE(fails_with([&] { store->get("absent"); }, ErrorKind::kInvalidArgument, dir_.path() + ": ",
                         {"no tensor named \"absent\""}));
}

TEST_F(TensorStoreTest, SingleFileDirectoryAndFile) {
  const std::string single = dir_.file("model.safetensors");
  write_shard(single, {{"w", 5.0f}});
  write_index(good_index());  // the single file wins over the index, as in transformers
  auto store = TensorStore::open_dir(dir_.path());
  EXPECT_EQ(store->names(), std::vector<std::string>{"w"});
  EXPECT_EQ(store->get("w").get_f32(1), 6.0f);
  auto file_store = TensorStore::open_file(single);
  EXPECT_EQ(file_store->source(), single);
  EXPECT_EQ(file_store->names(), std::vector<std::string>{"w"});
}

TEST_F(TensorStoreTest, DirectoryWithoutCheckpoint) {
  test::TempDir empty;
  EXPECT_TRUE(fails_with([&] { TensorStore::open_dir(empty.path()); }, ErrorKind::kInvalidFile, empty.path() + ": ",
                         {"neither model.safetensors nor model.safetensors.index.json"}));
  const std::string not_dir = dir_.file("model-00001-of-00002.safetensors");
  EXPECT_TRUE(fails_with([&] { TensorStore::open_dir(not_dir); }, ErrorKind::kInvalidFile, not_dir + ": ", {"not a directory"}));
}

TEST_F(TensorStoreTest, IndexNamesMissingShard) {
  write_index(good_index(R"(, "extra": "model-00003-of-00002.safetensors")"));
  EXPECT_TRUE(index_fails({"shard \"model-00003-of-00002.safetensors\"", "tensor \"extra\"", "missing",
                           dir_.file("model-00003-of-00002.safetensors") + " does not exist"}));
}

TEST_F(TensorStoreTest, IndexInvalidJson) {
  write_index(R"({"weight_map": {"embed": )");
  EXPECT_TRUE(index_fails({"not valid JSON"}));
  write_index(std::string("{\"weight_map\": {}}\0 trailing", 27));
  EXPECT_TRUE(index_fails({"not valid JSON", "NUL byte at offset 18"}));
  write_index(R"([1])");
  EXPECT_TRUE(index_fails({"JSON array", "expected an object"}));
  // Nesting past the JSON limit is refused before it is parsed.
  write_index("{\"weight_map\": {}, \"x\": " + std::string(300, '[') + std::string(300, ']') + "}");
  EXPECT_TRUE(index_fails({"index: JSON nested deeper than 128 levels"}));
}

TEST_F(TensorStoreTest, IndexWithoutWeightMap) {
  write_index(R"({"metadata": {}})");
  EXPECT_TRUE(index_fails({"missing \"weight_map\""}));
  write_index(R"({"weight_map": ["model-00001-of-00002.safetensors"]})");
  EXPECT_TRUE(index_fails({"\"weight_map\" is a JSON array"}));
  write_index(good_index(R"(, "bad": 3)"));
  EXPECT_TRUE(index_fails({"weight_map entry \"bad\" is a JSON number", "expected a shard file name"}));
}

TEST_F(TensorStoreTest, IndexShardOutsideDirectory) {
  write_index(good_index(R"(, "x": "../model-00001-of-00002.safetensors")"));
  EXPECT_TRUE(index_fails({"weight_map entry \"x\"", "expected a file name in the same directory"}));
}

TEST_F(TensorStoreTest, IndexNamesTensorItsShardLacks) {
  write_index(good_index(R"(, "ghost": "model-00002-of-00002.safetensors")"));
  EXPECT_TRUE(index_fails({"tensor \"ghost\"", "shard \"model-00002-of-00002.safetensors\"", "does not hold it"}));
  // Mapped to the wrong shard: the message says which file does hold it.
  write_index(R"({"weight_map": {
      "embed": "model-00002-of-00002.safetensors", "layer.0": "model-00001-of-00002.safetensors",
      "layer.1": "model-00002-of-00002.safetensors", "norm": "model-00002-of-00002.safetensors"}})");
  EXPECT_TRUE(index_fails({"tensor \"embed\"", "does not hold it", dir_.file("model-00001-of-00002.safetensors") + " does"}));
}

TEST_F(TensorStoreTest, TwoShardsHoldTheSameTensor) {
  write_shard(dir_.file("model-00002-of-00002.safetensors"), {{"layer.1", 30.0f}, {"norm", 40.0f}, {"embed", 1.0f}});
  write_index(good_index());
  EXPECT_TRUE(index_fails({"tensor \"embed\"", "held by two shards", dir_.file("model-00001-of-00002.safetensors"),
                           dir_.file("model-00002-of-00002.safetensors")}));
}

TEST_F(TensorStoreTest, ShardHoldsTensorTheIndexDoesNotList) {
  write_shard(dir_.file("model-00002-of-00002.safetensors"), {{"layer.1", 30.0f}, {"norm", 40.0f}, {"stray", 1.0f}});
  write_index(good_index());
  EXPECT_TRUE(index_fails({"shard \"model-00002-of-00002.safetensors\"", "tensor \"stray\"", "does not list"}));
}

TEST_F(TensorStoreTest, DuplicateNameInIndex) {
  write_index(good_index(R"(, "norm": "model-00001-of-00002.safetensors")"));
  EXPECT_TRUE(index_fails({"duplicate", "\"norm\""}));
}

TEST_F(TensorStoreTest, BadShardNamesTheShard) {
  const std::string shard = dir_.file("model-00002-of-00002.safetensors");
  test::write_bytes(shard, "abc");
  write_index(good_index());
  EXPECT_TRUE(fails_with([&] { TensorStore::open_dir(dir_.path()); }, ErrorKind::kInvalidFile, shard + ": ", {"truncated"}));
}

}  // namespace
}  // namespace staticlm
