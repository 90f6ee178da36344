// llama-server's --api-key KEY[,KEY...] and --api-key-file F (one key a line): with keys set, a
// request must carry one ("Authorization: Bearer KEY", or "X-Api-Key: KEY"), else 401; the
// health and model-list endpoints and CORS preflights stay open, as in llama.cpp.
#pragma once

#include <optional>
#include <string>
#include <vector>

namespace staticlm::cli {

// The keys of both flags; kInvalidArgument naming the flag for an empty key or an unreadable file.
std::vector<std::string> read_api_keys(const std::string& list, const std::optional<std::string>& file);

// Whether `path` is answered without a key.
bool api_key_public_path(const std::string& path);

// Whether the request's headers carry one of `keys` (compared in time that does not depend on
// where a wrong key differs).
bool api_key_accepted(const std::vector<std::string>& keys, const std::string& authorization, const std::string& x_api_key);

}  // namespace staticlm::cli
