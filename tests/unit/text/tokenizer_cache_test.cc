// The tokenizer cache (text/tokenizer_cache.h): a tokenizer loaded from its cache file encodes and
// decodes as the `tokenizers` library does (every component of the case files, and the real
// Gemma vocabulary against the JSON's tokenizer); a damaged, truncated, foreign or crafted file
// is a miss (the JSON is read and the file written again), never a crash; the switches work.
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <random>

#include "base/error.h"
#include "text/tokenizer_cache.h"
#include "text_test_util.h"

namespace staticlm {
namespace {

// STATICLM_CACHE_DIR (and STATICLM_NO_CACHE) for one test, put back after.
class CacheEnv {
 public:
  explicit CacheEnv(const char* dir, const char* no_cache = nullptr) {
    for (const char* name : {"STATICLM_CACHE_DIR", "STATICLM_NO_CACHE"}) {
      const char* v = std::getenv(name);
      saved_.emplace_back(name, v ? std::optional<std::string>(v) : std::nullopt);
    }
    set("STATICLM_CACHE_DIR", dir);
    set("STATICLM_NO_CACHE", no_cache);
  }
  ~CacheEnv() {
    for (const auto& [name, v] : saved_) set(name.c_str(), v ? v->c_str() : nullptr);
  }

 private:
  static void set(const char* name, const char* v) {
    if (v == nullptr) {
      unsetenv(name);
    } else {
      setenv(name, v, 1);
    }
  }
  std::vector<std::pair<std::string, std::optional<std::string>>> saved_;
};

std::vector<std::filesystem::path> cache_files(const std::string& dir) {
  std::vector<std::filesystem::path> files;
  std::error_code ec;
  for (const auto& e : std::filesystem::directory_iterator(dir, ec)) files.push_back(e.path());
  return files;
}

// The case files' expectations (tools/tokenizer_cases.mjs, the `tokenizers` library) hold for the
// tokenizer from the cache, file by file: added tokens, every normalizer, pre-tokenizer, model
// option, post-processor and decoder come back from the binary form.
TEST(TokenizerCache, EveryCaseFileEncodesAsTheLibraryFromTheCache) {
  test::TempDir dir;
  CacheEnv env(dir.file("cache").c_str());
  std::size_t files = 0, rows = 0;
  for (const auto& e : std::filesystem::directory_iterator(test::fixture("text/cases"))) {
    if (e.path().extension() != ".json") continue;
    SCOPED_TRACE(e.path().string());
    const nlohmann::json doc = nlohmann::json::parse(read_file(e.path().string()));
    const std::string json_path = dir.file("tokenizer" + std::to_string(files++) + ".json");
    write_text_atomic(json_path, doc["tokenizer"].dump());
    const auto built = Tokenizer::load(json_path);
    EXPECT_FALSE(built->from_cache());
    const auto cached = Tokenizer::load(json_path);
    ASSERT_TRUE(cached->from_cache());
    EXPECT_EQ(cached->id_limit(), built->id_limit());
    for (int id = 0; id < built->id_limit(); ++id) {
      ASSERT_EQ(cached->id_to_token(id), built->id_to_token(id)) << id;
      ASSERT_EQ(cached->is_special(id), built->is_special(id)) << id;
    }
    for (const auto& row : doc["cases"]) {
      const std::string text = row["text"].get<std::string>();
      SCOPED_TRACE(nlohmann::json(text).dump());
      const auto ids = row["ids"].get<std::vector<int>>();
      EXPECT_EQ(cached->encode(text), ids);
      EXPECT_EQ(cached->encode(text, true), row["ids_bos"].get<std::vector<int>>());
      if (!row["decoded"].is_null()) {
        EXPECT_EQ(cached->decode(ids), row["decoded"].get<std::string>());
      }
      ++rows;
    }
  }
  EXPECT_GE(files, 17u);
  EXPECT_GE(rows, 1000u);
  // One file per distinct tokenizer.json, none left half-written.
  const auto written = cache_files(dir.file("cache"));
  EXPECT_GE(written.size(), 17u);
  for (const auto& f : written) EXPECT_EQ(f.string().find(".tmp"), std::string::npos) << f;
}

// The real Gemma vocabulary: every id's token and random texts' ids equal the JSON's tokenizer.
TEST(TokenizerCache, GemmaVocabularyFromTheCacheEqualsTheJsons) {
  test::TempDir dir;
  const std::string json_path = dir.file("tokenizer.json");
  ASSERT_FALSE(test::gemma3_tokenizer_path().empty()) << "run scripts/setup.sh";
  std::filesystem::copy_file(test::gemma3_tokenizer_path(), json_path);
  const std::string json = read_file(json_path);
  const auto reference = Tokenizer::from_json(json, json_path);
  CacheEnv env(dir.file("cache").c_str());
  EXPECT_FALSE(Tokenizer::load(json_path)->from_cache());
  const auto cached = Tokenizer::load(json_path);
  ASSERT_TRUE(cached->from_cache());
  ASSERT_EQ(cached->id_limit(), reference->id_limit());
  for (int id = 0; id < reference->id_limit(); ++id) ASSERT_EQ(cached->id_to_token(id), reference->id_to_token(id)) << id;
  std::mt19937 rng(7);
  for (int n = 0; n < 300; ++n) {
    std::string text;  // pieces of random tokens' text, so that long merges happen
    for (int k = 0; k < 12; ++k) {
      const auto t = reference->decode(std::vector<int>{static_cast<int>(rng() % 262144)});
      text += t;
      if (rng() % 3 == 0) text += ' ';
    }
    ASSERT_EQ(cached->encode(text, true), reference->encode(text, true)) << text;
  }
}

// A file holding something else is a miss: the JSON is read and the file written again.
TEST(TokenizerCache, DamagedOrForeignFilesAreMissesAndWrittenAgain) {
  test::TempDir dir;
  CacheEnv env(dir.file("cache").c_str());
  const nlohmann::json doc = nlohmann::json::parse(read_file(test::fixture("text/cases/metaspace_always.json")));
  const std::string a = dir.file("a.json"), b = dir.file("b.json");
  write_text_atomic(a, doc["tokenizer"].dump());
  write_text_atomic(b, doc["tokenizer"].dump(2));  // the same tokenizer, other bytes: another key
  const std::vector<int> ids = Tokenizer::load(a)->encode("Hello world, how are you?");
  ASSERT_EQ(cache_files(dir.file("cache")).size(), 1u);
  const std::string file = cache_files(dir.file("cache"))[0].string();
  const std::string good = read_file(file);
  const auto reload = [&](const std::string& bytes) {
    write_text_atomic(file, bytes);
    const auto t = Tokenizer::load(a);
    EXPECT_EQ(t->encode("Hello world, how are you?"), ids);
    return t->from_cache();
  };
  EXPECT_TRUE(reload(good));
  EXPECT_FALSE(reload(good.substr(0, good.size() / 2)));  // truncated
  EXPECT_EQ(read_file(file), good);                       // and written again
  std::string flipped = good;
  flipped[good.size() - 5] ^= 0x40;  // payload: its checksum fails
  EXPECT_FALSE(reload(flipped));
  std::string version = good;
  version[8] ^= 1;  // the format version
  EXPECT_FALSE(reload(version));
  EXPECT_FALSE(reload(""));
  // b's file is another name; a's file renamed to it is refused by its header's key.
  ASSERT_FALSE(Tokenizer::load(b)->from_cache());
  ASSERT_EQ(cache_files(dir.file("cache")).size(), 2u);
  const std::string b_file = tokenizer_cache_file(dir.file("cache"), tokenizer_cache_key(read_file(b)));
  write_text_atomic(b_file, good);
  EXPECT_FALSE(Tokenizer::load(b)->from_cache());
  EXPECT_TRUE(Tokenizer::load(b)->from_cache());
}

// Crafted files: random bytes of the payload changed and the checksum made to match. Each is
// either refused or a tokenizer that encodes without reading out of bounds (the sanitized build
// runs this too); at least some changes must be refused by restore's checks.
TEST(TokenizerCache, CraftedPayloadsAreRefusedOrSafe) {
  const nlohmann::json doc = nlohmann::json::parse(read_file(test::fixture("text/cases/gemma_shape.json")));
  const std::string json = doc["tokenizer"].dump();
  const auto t = Tokenizer::from_json(json, "t.json");
  test::TempDir dir;
  const std::string path = dir.file("t.json");
  write_text_atomic(path, json);
  {
    CacheEnv env(dir.file("cache").c_str());
    Tokenizer::load(path);
  }
  const std::string good = read_file(cache_files(dir.file("cache"))[0].string());
  ASSERT_NE(Tokenizer::from_cache(good, json, "t.json"), nullptr);
  const std::string payload = good.substr(kTokenizerCacheHeaderBytes);
  EXPECT_EQ(tokenizer_cache_with_header(tokenizer_cache_key(json), payload), good);
  std::mt19937 rng(11);
  int refused = 0;
  for (int n = 0; n < 400; ++n) {
    std::string changed = payload;
    for (int k = 0, changes = 1 + static_cast<int>(rng() % 4); k < changes; ++k) {
      changed[rng() % changed.size()] = static_cast<char>(rng());
    }
    const auto c = Tokenizer::from_cache(tokenizer_cache_with_header(tokenizer_cache_key(json), changed), json, "t.json");
    if (c == nullptr) {
      ++refused;
      continue;
    }
    for (const char* text : {"Hello world", "\xE2\x96\x81\xE2\x96\x81 x\xC3\xA9\xF0\x9F\x98\x80 12345", ""}) {
      try {
        const std::vector<int> ids = c->encode(text, true);
        (void)c->decode(ids);
      } catch (const Error&) {
        // a changed table may give ids or text the checks refuse by name; reading out of bounds is what must not happen
      }
    }
  }
  EXPECT_GT(refused, 40);
  // The unchanged bytes with the JSON of another tokenizer: refused by the key.
  EXPECT_EQ(Tokenizer::from_cache(good, json + " ", "t.json"), nullptr);
}

// STATICLM_NO_CACHE and an empty STATICLM_CACHE_DIR turn it off; a cache directory that cannot be
// made (a file stands there) only costs the speed.
TEST(TokenizerCache, SwitchesAndAnUnwritableDirectory) {
  test::TempDir dir;
  const std::string path = dir.file("t.json");
  write_text_atomic(path, nlohmann::json::parse(read_file(test::fixture("text/cases/metaspace_always.json")))["tokenizer"].dump());
  {
    CacheEnv env(dir.file("off").c_str(), "1");
    EXPECT_EQ(tokenizer_cache_dir(), "");
    Tokenizer::load(path);
    Tokenizer::load(path);
    EXPECT_FALSE(std::filesystem::exists(dir.file("off")));
  }
  {
    CacheEnv env("");
    EXPECT_EQ(tokenizer_cache_dir(), "");
  }
  {
    CacheEnv env(dir.file("on").c_str(), "0");
    EXPECT_EQ(tokenizer_cache_dir(), dir.file("on"));
  }
  write_text_atomic(dir.file("blocked"), "a file, not a directory");
  CacheEnv env(dir.file("blocked").c_str());
  EXPECT_FALSE(Tokenizer::load(path)->from_cache());
  EXPECT_FALSE(Tokenizer::load(path)->from_cache());
  EXPECT_EQ(read_file(dir.file("blocked")), "a file, not a directory");
}

}  // namespace
}  // namespace staticlm
