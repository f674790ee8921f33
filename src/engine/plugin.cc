#include "kplace/engine/plugin.h"

#include <map>

namespace kplace::engine {
namespace {

std::map<std::pair<Backend, std::string>, PluginFactory>& Registry() {
  static auto* registry = new std::map<std::pair<Backend, std::string>, PluginFactory>();
  return *registry;
}

}  // namespace

const char* BackendName(Backend b) { return b == Backend::kCuda ? "cuda" : "omp"; }

bool RegisterPlugin(Backend backend, const std::string& name, PluginFactory factory) {
  Registry()[{backend, name}] = std::move(factory);
  return true;
}

std::unique_ptr<Plugin> MakePlugin(Backend backend, const std::string& name, const PluginArgs& args,
                                   const FeatureGates& gates, std::string* error) {
  auto it = Registry().find({backend, name});
  if (it == Registry().end()) {
    *error = "plugin \"" + name + "\" is not built for the " + BackendName(backend) + " backend";
    return nullptr;
  }
  return it->second(args, gates, error);
}

std::vector<std::string> RegisteredPlugins(Backend backend) {
  std::vector<std::string> names;
  for (const auto& [key, factory] : Registry()) {
    if (key.first == backend) names.push_back(key.second);
  }
  return names;
}

}  // namespace kplace::engine
