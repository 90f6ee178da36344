// The non-virtual lookups of the Backend interface (include/staticlm/backend.h).
#include "staticlm/backend.h"

#include "base/error.h"

namespace staticlm {

const SubgraphSignature* Backend::find(const std::string& name) const {
  for (const SubgraphSignature& s : signatures()) {
    if (s.name == name) return &s;
  }
  return nullptr;
}

const SubgraphSignature& Backend::signature(const std::string& name) const {
  const SubgraphSignature* s = find(name);
  if (s == nullptr) invalid_argument("backend " + this->name() + " has no subgraph named \"" + name + "\"");
  return *s;
}

}  // namespace staticlm
