#include "kplace/reference/plugin.h"

#include <algorithm>
#include <unordered_map>

#include "kplace/common/strings.h"
#include "kplace/plugins/volume_binding_assume.h"

namespace kplace::reference {
namespace {

std::map<std::string, PluginFactory>& Registry() {
  static auto* registry = new std::map<std::string, PluginFactory>();
  return *registry;
}

}  // namespace

bool RegisterPlugin(const std::string& name, PluginFactory factory) {
  Registry()[name] = std::move(factory);
  return true;
}

absl::StatusOr<std::unique_ptr<Plugin>> MakePlugin(const std::string& name, const PluginArgs& args,
                                                   const FeatureGates& gates) {
  auto it = Registry().find(name);
  if (it == Registry().end()) return absl::NotFoundError(StrCat("unknown plugin \"", name, "\""));
  return it->second(args, gates);
}

std::vector<std::string> RegisteredPlugins() {
  std::vector<std::string> names;
  for (const auto& [name, factory] : Registry()) names.push_back(name);
  return names;
}

ClusterState MakeClusterState(const ObjectSet& objects, const FeatureGates& gates) {
  ClusterState state;
  state.objects = &objects;
  state.gates = gates;
  state.volume_assume = std::make_shared<plugins::volume::VolumeAssumeCache>();
  state.nodes.reserve(objects.nodes.size());
  std::unordered_map<std::string, size_t> index;
  for (const Node& n : objects.nodes) {
    index[n.meta.name] = state.nodes.size();
    state.nodes.push_back(NodeInfo{&n, {}});
  }
  for (const Pod& p : objects.pods) {
    if (p.node_name.empty() || p.phase == "Succeeded" || p.phase == "Failed") continue;
    auto it = index.find(p.node_name);
    if (it != index.end()) state.nodes[it->second].pods.push_back(&p);
  }
  return state;
}

void DefaultNormalizeScore(std::vector<int64_t>& scores, bool reverse) {
  int64_t max = 0;
  for (int64_t s : scores) max = std::max(max, s);
  if (max == 0) {
    if (reverse) std::fill(scores.begin(), scores.end(), kMaxNodeScore);
    return;
  }
  for (int64_t& s : scores) {
    s = kMaxNodeScore * s / max;
    if (reverse) s = kMaxNodeScore - s;
  }
}

}  // namespace kplace::reference
