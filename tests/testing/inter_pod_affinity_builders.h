#pragma once
// Builders and runners for InterPodAffinity tests: pods with (anti-)affinity terms, and
// one-plugin runners for the engine and the reference that keep a cluster across binds.
#include <deque>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include "kplace/config/profile.h"
#include "kplace/engine/framework.h"
#include "kplace/engine/snapshot.h"
#include "kplace/reference/plugin.h"

namespace kplace::testing::ipa {

inline LabelSelectorRequirement Req(const std::string& key, const std::string& op,
                                    const std::vector<std::string>& values = {}) {
  return LabelSelectorRequirement{key, op, values};
}

inline LabelSelector Sel(const std::vector<LabelSelectorRequirement>& exprs, const Labels& match = {}) {
  LabelSelector s;
  s.match_labels = match;
  s.match_expressions = exprs;
  return s;
}

inline PodAffinityTerm Term(std::optional<LabelSelector> selector, const std::string& topology_key,
                            const std::vector<std::string>& namespaces = {},
                            std::optional<LabelSelector> namespace_selector = std::nullopt) {
  PodAffinityTerm t;
  t.label_selector = std::move(selector);
  t.topology_key = topology_key;
  t.namespaces = namespaces;
  t.namespace_selector = std::move(namespace_selector);
  return t;
}

inline Node TopoNode(const std::string& name, const Labels& labels) {
  Node n;
  n.meta.name = name;
  n.meta.labels = labels;
  return n;
}

inline Pod LabeledPod(const std::string& name, const std::string& ns, const Labels& labels,
                      const std::string& node_name = "") {
  Pod p;
  p.meta.name = name;
  p.meta.namespace_ = ns;
  p.meta.labels = labels;
  p.node_name = node_name;
  return p;
}

inline Namespace MakeNamespace(const std::string& name, const Labels& labels) {
  Namespace ns;
  ns.meta.name = name;
  ns.meta.labels = labels;
  return ns;
}

inline PodAffinity& AffinityOf(Pod& p) {
  if (!p.affinity) p.affinity.emplace();
  if (!p.affinity->pod_affinity) p.affinity->pod_affinity.emplace();
  return *p.affinity->pod_affinity;
}
inline PodAffinity& AntiAffinityOf(Pod& p) {
  if (!p.affinity) p.affinity.emplace();
  if (!p.affinity->pod_anti_affinity) p.affinity->pod_anti_affinity.emplace();
  return *p.affinity->pod_anti_affinity;
}
inline Pod& RequireAffinity(Pod& p, PodAffinityTerm t) {
  AffinityOf(p).required.push_back(std::move(t));
  return p;
}
inline Pod& RequireAnti(Pod& p, PodAffinityTerm t) {
  AntiAffinityOf(p).required.push_back(std::move(t));
  return p;
}
inline Pod& PreferAffinity(Pod& p, int32_t weight, PodAffinityTerm t) {
  AffinityOf(p).preferred.push_back({weight, std::move(t)});
  return p;
}
inline Pod& PreferAnti(Pod& p, int32_t weight, PodAffinityTerm t) {
  AntiAffinityOf(p).preferred.push_back({weight, std::move(t)});
  return p;
}

/** Every phase of one InterPodAffinity cycle. Scores are over the scored nodes (all nodes,
 *  or those that passed Filter); a PreScore that did not succeed leaves them 0. */
struct Outcome {
  PluginStatus pre_filter;
  std::vector<PluginStatus> filter;  // every node, whatever PreFilter said
  PluginStatus pre_score;
  std::vector<int32_t> scored;
  std::vector<int64_t> raw, normalized;
};

inline std::vector<int32_t> Scored(const std::vector<PluginStatus>& filter, bool feasible_only) {
  std::vector<int32_t> out;
  for (int32_t i = 0; i < static_cast<int32_t>(filter.size()); ++i) {
    if (!feasible_only || filter[i].IsSuccess()) out.push_back(i);
  }
  return out;
}

inline const std::vector<std::string>& Plugins() {
  static const std::vector<std::string> kPlugins = {"InterPodAffinity"};
  return kPlugins;
}

/** The engine framework with InterPodAffinity alone, over a snapshot that takes binds. */
class EngineRunner {
 public:
  EngineRunner(const ObjectSet& cluster, const PluginArgs& args = {}, const FeatureGates& gates = {},
               engine::Backend backend = engine::Backend::kOmp)
      : snapshot_(cluster, gates) {
    Profile profile = SinglePluginsProfile(Plugins());
    profile.args = args;
    std::string error;
    fw_ = engine::Framework::Create(backend, profile, gates, &error);
    if (!fw_) throw std::runtime_error(error);
    fw_->Prepare(snapshot_);
  }

  Outcome Run(const Pod& pod, bool feasible_only = false) {
    Outcome out;
    // One plugin: the merged PreFilter result is its own status (Skip shows as skip_filter).
    engine::PreFilterResult pre = fw_->PreFilter(pod);
    out.pre_filter = pre.skip_filter.at(0) ? PluginStatus::Skip() : pre.status;
    std::vector<engine::VerdictCode> codes = fw_->FilterEach().at(0);
    for (engine::VerdictCode c : codes) out.filter.push_back(c == 0 ? PluginStatus::Success() : fw_->Verdict(0, c));
    out.scored = Scored(out.filter, feasible_only);
    engine::ScoreResult r = fw_->Score(std::vector<engine::NodeIndex>(out.scored.begin(), out.scored.end()));
    if (r.skipped.at(0)) {
      out.pre_score = PluginStatus::Skip();
    } else if (!r.status.IsSuccess()) {
      // The framework wraps a PreScore error; keep the plugin's own message.
      const std::string prefix = "running PreScore plugin \"InterPodAffinity\": ";
      std::string m = r.status.Message();
      if (m.compare(0, prefix.size(), prefix) == 0) m = m.substr(prefix.size());
      out.pre_score = PluginStatus::Error(m);
    }
    out.raw = r.raw.at(0);
    out.normalized = r.normalized.at(0);
    return out;
  }

  void Bind(const Pod& pod, int32_t node) { fw_->Bind(snapshot_.Bind(pod, node), node); }
  /** `node` joins (no pods); returns its index. */
  int32_t AddNode(const Node& node) {
    joined_.push_back(node);
    const int32_t i = snapshot_.AddNode(&joined_.back());
    fw_->AddNode(i);
    return i;
  }
  engine::Snapshot& snapshot() { return snapshot_; }

 private:
  std::deque<Node> joined_;  // what the snapshot points to (declared first: outlives it)
  engine::Snapshot snapshot_;
  std::unique_ptr<engine::Framework> fw_;
};

/** The reference plugin over its own copy of the objects; binds append pods. */
class ReferenceRunner {
 public:
  ReferenceRunner(const ObjectSet& cluster, const PluginArgs& args = {}, const FeatureGates& gates = {})
      : objects_(cluster), gates_(gates) {
    auto p = reference::MakePlugin("InterPodAffinity", args, gates);
    if (!p.ok()) throw std::runtime_error(std::string(p.status().message()));
    plugin_ = std::move(*p);
  }

  Outcome Run(const Pod& pod, bool feasible_only = false) {
    reference::ClusterState state = reference::MakeClusterState(objects_, gates_);
    reference::CycleState cycle;
    Outcome out;
    reference::NodeNameSet nodes;
    out.pre_filter = plugin_->PreFilter(cycle, pod, state, &nodes);
    for (const auto& n : state.nodes) out.filter.push_back(plugin_->Filter(cycle, pod, n, state));
    out.scored = Scored(out.filter, feasible_only);
    std::vector<const reference::NodeInfo*> scored;
    for (int32_t i : out.scored) scored.push_back(&state.nodes[i]);
    out.pre_score = plugin_->PreScore(cycle, pod, scored, state);
    out.raw.assign(scored.size(), 0);
    if (out.pre_score.IsSuccess()) {
      for (size_t k = 0; k < scored.size(); ++k) plugin_->Score(cycle, pod, *scored[k], state, &out.raw[k]);
      out.normalized = out.raw;
      plugin_->NormalizeScore(cycle, pod, out.normalized);
    } else {
      out.normalized = out.raw;
    }
    return out;
  }

  void Bind(const Pod& pod, int32_t node) {
    objects_.pods.push_back(pod);
    objects_.pods.back().node_name = objects_.nodes[node].meta.name;
  }
  void AddNode(const Node& node) { objects_.nodes.push_back(node); }

 private:
  ObjectSet objects_;
  FeatureGates gates_;
  std::unique_ptr<reference::Plugin> plugin_;
};

inline std::string Describe(const PluginStatus& s) {
  return std::string(CodeName(s.code)) + " [" + s.Message() + "]";
}

/** The first difference between two outcomes, or "" when equal. */
inline std::string DiffOutcomes(const Outcome& e, const Outcome& r) {
  if (!(e.pre_filter == r.pre_filter)) return "PreFilter: engine " + Describe(e.pre_filter) + " vs reference " + Describe(r.pre_filter);
  if (e.filter.size() != r.filter.size()) return "filter node count differs";
  for (size_t i = 0; i < e.filter.size(); ++i) {
    if (!(e.filter[i] == r.filter[i])) {
      return "Filter node " + std::to_string(i) + ": engine " + Describe(e.filter[i]) + " vs reference " +
             Describe(r.filter[i]);
    }
  }
  if (!(e.pre_score == r.pre_score)) {
    return "PreScore: engine " + Describe(e.pre_score) + " vs reference " + Describe(r.pre_score);
  }
  if (e.scored != r.scored) return "scored node lists differ";
  for (size_t k = 0; k < e.raw.size(); ++k) {
    if (e.raw[k] != r.raw[k]) {
      return "raw score of node " + std::to_string(e.scored[k]) + ": engine " + std::to_string(e.raw[k]) +
             " vs reference " + std::to_string(r.raw[k]);
    }
    if (e.normalized[k] != r.normalized[k]) {
      return "normalized score of node " + std::to_string(e.scored[k]) + ": engine " +
             std::to_string(e.normalized[k]) + " vs reference " + std::to_string(r.normalized[k]);
    }
  }
  return "";
}

}  // namespace kplace::testing::ipa
