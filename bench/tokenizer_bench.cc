// Tokenizer benchmarks on the real Gemma tokenizer.json (from scripts/setup.sh):
//   BM_Load            load time of the 33 MB file;
//   BM_Encode/<text>   encoding throughput in bytes/s (MB/s) on about 1 MB of text;
//   BM_Decode          decoding throughput over the ids of the mixed text.
// Texts: "mixed" repeats the test corpus (prose, code, CJK, RTL, emoji, whitespace runs);
// "english" repeats plain English prose.
#include <benchmark/benchmark.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>

#include "text/tokenizer.h"

namespace {

std::string deps_tokenizer() { return std::string(STATICLM_DEPS_DIR) + "/tokenizer-gemma3/tokenizer.json"; }

const staticlm::Tokenizer& tokenizer() {
  static const auto tok = staticlm::Tokenizer::load(deps_tokenizer());
  return *tok;
}

std::string repeat_to(const std::string& unit, std::size_t size) {
  std::string s;
  while (s.size() < size) s += unit;
  return s;
}

std::string mixed_text() {
  std::ifstream in(std::string(STATICLM_SOURCE_DIR) + "/tests/fixtures/text/corpus.jsonl");
  std::string line, unit;
  while (std::getline(in, line)) {
    if (!line.empty()) unit += nlohmann::json::parse(line).get<std::string>() + "\n";
  }
  return repeat_to(unit, 1 << 20);
}

std::string english_text() {
  const std::string unit =
      "It was the best of times, it was the worst of times, it was the age of wisdom, it was the age of "
      "foolishness, it was the epoch of belief, it was the epoch of incredulity, it was the season of Light, "
      "it was the season of Darkness, it was the spring of hope, it was the winter of despair, we had "
      "everything before us, we had nothing before us, we were all going direct to Heaven, we were all going "
      "direct the other way - in short, the period was so far like the present period, that some of its "
      "noisiest authorities insisted on its being received, for good or for evil, in the superlative degree "
      "of comparison only.\n\n";
  return repeat_to(unit, 1 << 20);
}

bool have_tokenizer(benchmark::State& state) {
  if (std::filesystem::exists(deps_tokenizer())) return true;
  state.SkipWithError("the Gemma tokenizer.json is missing: run scripts/setup.sh");
  return false;
}

void BM_Load(benchmark::State& state) {
  if (!have_tokenizer(state)) return;
  for (auto _ : state) benchmark::DoNotOptimize(staticlm::Tokenizer::load(deps_tokenizer()));
  state.SetBytesProcessed(static_cast<std::int64_t>(state.iterations()) *
                          static_cast<std::int64_t>(std::filesystem::file_size(deps_tokenizer())));
}
BENCHMARK(BM_Load)->Unit(benchmark::kMillisecond)->Iterations(5);

void BM_Encode(benchmark::State& state, const std::string& (*text)()) {
  if (!have_tokenizer(state)) return;
  const std::string& t = text();
  const auto& tok = tokenizer();
  std::size_t count = 0;
  for (auto _ : state) {
    const auto ids = tok.encode(t);
    count = ids.size();
    benchmark::DoNotOptimize(ids.data());
  }
  state.SetBytesProcessed(static_cast<std::int64_t>(state.iterations() * t.size()));
  state.counters["tokens"] = static_cast<double>(count);
}
const std::string& mixed() {
  static const std::string t = mixed_text();
  return t;
}
const std::string& english() {
  static const std::string t = english_text();
  return t;
}
BENCHMARK_CAPTURE(BM_Encode, mixed, &mixed)->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_Encode, english, &english)->Unit(benchmark::kMillisecond);

void BM_Decode(benchmark::State& state) {
  if (!have_tokenizer(state)) return;
  const auto ids = tokenizer().encode(mixed());
  for (auto _ : state) benchmark::DoNotOptimize(tokenizer().decode(ids));
  state.SetBytesProcessed(static_cast<std::int64_t>(state.iterations() * mixed().size()));
}
BENCHMARK(BM_Decode)->Unit(benchmark::kMillisecond);

}  // namespace

BENCHMARK_MAIN();
