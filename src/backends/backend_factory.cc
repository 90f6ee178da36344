#include "backends/backend_factory.h"

#include <filesystem>

#include "backends/plugin/elf_extent.h"
#include "backends/routed_backend.h"
#include "backends/subgraph_contract.h"
#include "base/error.h"
#include "model/checkpoint.h"

namespace staticlm {

BackendSpec parse_backend_spec(const std::string& text) {
  BackendSpec spec;
  if (text == "cpu") return spec;
  const std::string prefix = "plugin:";
  if (text.rfind(prefix, 0) != 0) {
    invalid_argument("--backend '" + text + "': expected cpu or plugin:PATH.so[:key=value,...]");
  }
  spec.plugin = true;
  spec.path = text.substr(prefix.size());
  // Options follow the first ':' in the file name after which a '=' comes (directories may
  // hold ':', and so may option values: device=npu:0).
  const std::size_t name = spec.path.rfind('/');
  std::size_t colon = spec.path.find(':', name == std::string::npos ? 0 : name);
  while (colon != std::string::npos && spec.path.find('=', colon) == std::string::npos) colon = spec.path.find(':', colon + 1);
  if (colon != std::string::npos) {
    const std::string list = spec.path.substr(colon + 1);
    spec.path.resize(colon);
    std::size_t start = 0;
    while (start <= list.size()) {
      const std::size_t end = std::min(list.find(',', start), list.size());
      const std::string item = list.substr(start, end - start);
      const std::size_t eq = item.find('=');
      if (eq == std::string::npos || eq == 0) {
        invalid_argument("--backend '" + text + "': option '" + item + "' is not key=value");
      }
      spec.options.emplace_back(item.substr(0, eq), item.substr(eq + 1));
      start = end + 1;
    }
  }
  if (spec.path.empty()) invalid_argument("--backend '" + text + "': no plug-in path after plugin:");
  return spec;
}

BackendSpec check_backend_choice(const BackendChoice& choice) {
  BackendSpec spec = parse_backend_spec(choice.backend);
  if (choice.fallback != "none" && choice.fallback != "cpu") {
    invalid_argument("--fallback '" + choice.fallback + "': expected none or cpu");
  }
  if (choice.fallback == "cpu" && !spec.plugin) invalid_argument("--fallback cpu goes with --backend plugin:PATH.so");
  if (spec.plugin && !std::filesystem::is_regular_file(spec.path)) invalid_argument("plugin " + spec.path + ": no such file");
  if (spec.plugin) check_elf_extent(spec.path, "plugin " + spec.path);  // a file cut short, before the slow load
  return spec;
}

std::unique_ptr<Backend> create_backend(const BackendChoice& choice, const Checkpoint& checkpoint,
                                        const SubgraphProfile& profile, const CpuBackendOptions& cpu) {
  const BackendSpec spec = check_backend_choice(choice);
  if (!spec.plugin) return CpuBackend::create(checkpoint, profile, cpu);
  auto plugin = PluginBackend::load(spec.path, spec.options, checkpoint.dir(), checkpoint.config(), checkpoint.layers(),
                                    profile);
  std::unique_ptr<Backend> fallback;
  if (choice.fallback == "cpu") fallback = CpuBackend::create(checkpoint, profile, cpu);
  return std::make_unique<RoutedBackend>(std::move(plugin), std::move(fallback),
                                         gemma4_subgraph_signatures(checkpoint.config(), checkpoint.layers(), profile));
}

std::string backend_placement(const Backend& backend, bool with_calls) {
  const auto* routed = dynamic_cast<const RoutedBackend*>(&backend);
  return routed != nullptr ? routed->placement(with_calls) : "";
}

}  // namespace staticlm
