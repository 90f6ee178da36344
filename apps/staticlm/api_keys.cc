#include "api_keys.h"

#include <sstream>

#include "base/error.h"
#include "base/file.h"

namespace staticlm::cli {

std::vector<std::string> read_api_keys(const std::string& list, const std::optional<std::string>& file) {
  std::vector<std::string> keys;
  if (!list.empty()) {
    std::istringstream in(list);
    for (std::string key; std::getline(in, key, ',');) {
      if (key.empty()) invalid_argument("--api-key: an empty key in '" + list + "' (keys are separated by commas)");
      keys.push_back(key);
    }
  }
  if (file) {
    std::istringstream in(read_file(*file));
    for (std::string line; std::getline(in, line);) {
      if (!line.empty() && line.back() == '\r') line.pop_back();
      if (!line.empty()) keys.push_back(line);
    }
    if (keys.empty()) invalid_argument("--api-key-file " + *file + ": holds no key (one a line)");
  }
  return keys;
}

bool api_key_public_path(const std::string& path) {
  return path == "/health" || path == "/v1/health" || path == "/models" || path == "/v1/models" ||
         path.rfind("/v1/models/", 0) == 0;
}

namespace {

bool same(const std::string& a, const std::string& b) {
  unsigned char diff = a.size() == b.size() ? 0 : 1;
  for (std::size_t i = 0; i < a.size(); ++i) diff |= static_cast<unsigned char>(a[i] ^ (i < b.size() ? b[i] : 0));
  return diff == 0;
}

}  // namespace

bool api_key_accepted(const std::vector<std::string>& keys, const std::string& authorization, const std::string& x_api_key) {
  constexpr std::string_view kBearer = "Bearer ";
  const std::string given = authorization.compare(0, kBearer.size(), kBearer) == 0 ? authorization.substr(kBearer.size()) : x_api_key;
  if (given.empty()) return false;
  bool ok = false;
  for (const std::string& k : keys) ok = same(k, given) || ok;  // every key compared
  return ok;
}

}  // namespace staticlm::cli
