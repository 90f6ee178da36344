// A structure-aware mutator for targets whose input is one JSON document (tokenizer.json,
// vision_profile.json, chat messages). Byte-level mutation of a large JSON seed almost always
// breaks the syntax, so the parser's first check refuses it and the loader's semantic checks
// are never reached (docs/robustness.md: tokenizer_json reached 247 edges in 3 minutes). Here a
// parsed document has one node changed (a number set to a boundary value, a string mutated, a
// key or element removed, duplicated or swapped, a node given another type, a subtree copied
// over another) and is written back, so most mutants stay valid JSON and go deeper. One call in
// four, and any input that does not parse, gets libFuzzer's own byte mutation instead.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

extern "C" std::size_t LLVMFuzzerMutate(std::uint8_t* data, std::size_t size, std::size_t max_size);

namespace staticlm::fuzz {

namespace json_mutation {

using Json = nlohmann::json;

// Every node of the document, depth first (the root first).
inline void collect(Json& j, std::vector<Json*>& out) {
  out.push_back(&j);
  if (j.is_object() || j.is_array()) {
    for (auto& child : j) collect(child, out);
  }
}

// Numbers that sit on the limits a loader must check: signs, int32 / uint32 / int64 edges,
// doubles past every integer type, and sizes near the Gemma vocabulary.
inline Json boundary_number(std::minstd_rand& rng) {
  static const Json values[] = {0,
                                -1,
                                1,
                                2,
                                255,
                                256,
                                65535,
                                262143,
                                262144,
                                std::numeric_limits<std::int32_t>::max(),
                                static_cast<std::int64_t>(std::numeric_limits<std::int32_t>::max()) + 1,
                                std::numeric_limits<std::int32_t>::min(),
                                std::numeric_limits<std::uint32_t>::max(),
                                std::numeric_limits<std::int64_t>::max(),
                                std::numeric_limits<std::int64_t>::min(),
                                0.5,
                                -0.0,
                                1e300,
                                -1e300};
  return values[rng() % (sizeof(values) / sizeof(values[0]))];
}

// The string's bytes through libFuzzer's byte mutation.
inline std::string mutate_bytes(const std::string& s) {
  std::vector<std::uint8_t> buf(s.begin(), s.end());
  buf.resize(2 * s.size() + 16);
  const std::size_t n = LLVMFuzzerMutate(buf.data(), s.size(), buf.size());
  return std::string(buf.begin(), buf.begin() + static_cast<std::ptrdiff_t>(n));
}

// Changes one node of `root`; false when the chosen change does not apply to the chosen node.
inline bool mutate_once(Json& root, std::minstd_rand& rng) {
  std::vector<Json*> nodes;
  collect(root, nodes);
  Json& node = *nodes[rng() % nodes.size()];
  switch (rng() % 7) {
    case 0:  // a number at a boundary, or nudged by one
      if (!node.is_number()) return false;
      if (rng() % 2 == 0 && node.is_number_integer()) {
        // In unsigned arithmetic: the int64 edges wrap instead of overflowing.
        const std::uint64_t bits = static_cast<std::uint64_t>(node.get<std::int64_t>());
        node = static_cast<std::int64_t>(rng() % 2 == 0 ? bits + 1 : bits - 1);
      } else {
        node = boundary_number(rng);
      }
      return true;
    case 1:  // a string's bytes mutated, or an object key renamed that way
      if (node.is_string()) {
        node = mutate_bytes(node.get<std::string>());
        return true;
      }
      if (node.is_object() && !node.empty()) {
        auto it = node.begin();
        std::advance(it, static_cast<std::ptrdiff_t>(rng() % node.size()));
        const std::string key = it.key();
        Json value = it.value();
        node.erase(key);
        node[mutate_bytes(key)] = std::move(value);
        return true;
      }
      return false;
    case 2:  // a member or element removed
      if ((!node.is_object() && !node.is_array()) || node.empty()) return false;
      if (node.is_object()) {
        auto it = node.begin();
        std::advance(it, static_cast<std::ptrdiff_t>(rng() % node.size()));
        node.erase(it);
      } else {
        node.erase(node.begin() + static_cast<std::ptrdiff_t>(rng() % node.size()));
      }
      return true;
    case 3:  // an element duplicated (duplicate ids, tokens, merges)
      if (!node.is_array() || node.empty()) return false;
      node.push_back(node[rng() % node.size()]);
      return true;
    case 4:  // two elements swapped (order-dependent tables: merges, added tokens)
      if (!node.is_array() || node.size() < 2) return false;
      std::swap(node[rng() % node.size()], node[rng() % node.size()]);
      return true;
    case 5: {  // another type where a loader expects this one
      static const Json others[] = {nullptr, true, 0, -1, "", Json::array(), Json::object()};
      node = others[rng() % (sizeof(others) / sizeof(others[0]))];
      return true;
    }
    default: {  // a subtree copied over another node (deep nesting, values of the wrong shape)
      const Json copy = *nodes[rng() % nodes.size()];
      node = copy;
      return true;
    }
  }
}

}  // namespace json_mutation

// LLVMFuzzerCustomMutator's contract: mutate data[0, size) in place, return the new size (at
// most max_size).
inline std::size_t mutate_json(std::uint8_t* data, std::size_t size, std::size_t max_size, unsigned seed) {
  std::minstd_rand rng(seed);
  if (rng() % 4 == 0) return LLVMFuzzerMutate(data, size, max_size);
  json_mutation::Json doc =
      json_mutation::Json::parse(reinterpret_cast<const char*>(data), reinterpret_cast<const char*>(data) + size, nullptr,
                                 /*allow_exceptions=*/false);
  if (doc.is_discarded()) return LLVMFuzzerMutate(data, size, max_size);
  // One to three changes, so that combinations (a removed key and a changed count) are reached.
  const int changes = 1 + static_cast<int>(rng() % 3);
  for (int done = 0, tries = 0; done < changes && tries < 32; ++tries) done += json_mutation::mutate_once(doc, rng) ? 1 : 0;
  // Invalid UTF-8 from a byte mutation is written as U+FFFD; raw invalid bytes still come from
  // the byte-level branch above.
  const std::string out = doc.dump(-1, ' ', false, json_mutation::Json::error_handler_t::replace);
  if (out.size() > max_size) return LLVMFuzzerMutate(data, size, max_size);
  std::memcpy(data, out.data(), out.size());
  return out.size();
}

}  // namespace staticlm::fuzz

// Defines the target's LLVMFuzzerCustomMutator as mutate_json.
#define STATICLM_FUZZ_JSON_MUTATOR                                                                        \
  extern "C" std::size_t LLVMFuzzerCustomMutator(std::uint8_t* data, std::size_t size, std::size_t max_size, \
                                                 unsigned seed) {                                           \
    return staticlm::fuzz::mutate_json(data, size, max_size, seed);                                        \
  }
