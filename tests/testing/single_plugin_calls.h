#pragma once
// Calls one plugin's PreFilter or PreScore directly, on the engine and on the reference,
// and reports the status plus the node restriction by name — what upstream's plugin
// tests assert beside Filter and Score (which tests/testing/differential.h covers).
#include <algorithm>
#include <optional>
#include <set>
#include <stdexcept>
#include <string>
#include <vector>

#include "kplace/engine/plugin.h"
#include "kplace/engine/snapshot.h"
#include "kplace/reference/plugin.h"

namespace kplace::testing {

struct PreFilterOutcome {
  PluginStatus status;
  std::optional<std::vector<std::string>> nodes;  // sorted names; nullopt: no restriction
};

inline std::unique_ptr<engine::Plugin> MakeEnginePlugin(const std::string& name, const PluginArgs& args,
                                                        const FeatureGates& gates) {
  std::string error;
  auto p = engine::MakePlugin(engine::Backend::kOmp, name, args, gates, &error);
  if (!p) throw std::runtime_error(error);
  return p;
}

inline std::unique_ptr<reference::Plugin> MakeReferencePlugin(const std::string& name, const PluginArgs& args,
                                                              const FeatureGates& gates) {
  auto p = reference::MakePlugin(name, args, gates);
  if (!p.ok()) throw std::runtime_error(std::string(p.status().message()));
  return std::move(*p);
}

inline PreFilterOutcome EnginePreFilter(const std::string& plugin, const ObjectSet& cluster, const Pod& pod,
                                        const PluginArgs& args = {}, const FeatureGates& gates = {}) {
  auto p = MakeEnginePlugin(plugin, args, gates);
  engine::Snapshot snapshot(cluster, gates);
  p->Prepare(snapshot);
  p->StartPod(pod, snapshot);
  std::vector<engine::NodeIndex> nodes;
  bool restricts = false;
  PreFilterOutcome out;
  out.status = p->PreFilter(pod, snapshot, &nodes, &restricts);
  if (restricts) {
    out.nodes.emplace();
    for (engine::NodeIndex i : nodes) out.nodes->push_back(snapshot.node(i).meta.name);
    std::sort(out.nodes->begin(), out.nodes->end());
  }
  return out;
}

inline PreFilterOutcome ReferencePreFilter(const std::string& plugin, const ObjectSet& cluster, const Pod& pod,
                                           const PluginArgs& args = {}, const FeatureGates& gates = {}) {
  auto p = MakeReferencePlugin(plugin, args, gates);
  reference::ClusterState state = reference::MakeClusterState(cluster, gates);
  reference::CycleState cycle;
  reference::NodeNameSet names;
  PreFilterOutcome out;
  out.status = p->PreFilter(cycle, pod, state, &names);
  if (names) out.nodes = std::vector<std::string>(names->begin(), names->end());
  return out;
}

inline PluginStatus EnginePreScore(const std::string& plugin, const ObjectSet& cluster, const Pod& pod,
                                   const PluginArgs& args = {}, const FeatureGates& gates = {}) {
  auto p = MakeEnginePlugin(plugin, args, gates);
  engine::Snapshot snapshot(cluster, gates);
  p->Prepare(snapshot);
  p->StartPod(pod, snapshot);
  std::vector<engine::NodeIndex> all(snapshot.num_nodes());
  for (int32_t i = 0; i < snapshot.num_nodes(); ++i) all[i] = i;
  return p->PreScore(pod, snapshot, all);
}

inline PluginStatus ReferencePreScore(const std::string& plugin, const ObjectSet& cluster, const Pod& pod,
                                      const PluginArgs& args = {}, const FeatureGates& gates = {}) {
  auto p = MakeReferencePlugin(plugin, args, gates);
  reference::ClusterState state = reference::MakeClusterState(cluster, gates);
  reference::CycleState cycle;
  std::vector<const reference::NodeInfo*> all;
  for (const auto& n : state.nodes) all.push_back(&n);
  return p->PreScore(cycle, pod, all, state);
}

}  // namespace kplace::testing
