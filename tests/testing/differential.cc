#include "tests/testing/differential.h"

#include <stdexcept>

#include "kplace/config/profile.h"
#include "kplace/engine/framework.h"
#include "kplace/reference/plugin.h"

namespace kplace::testing {

Quantity Q(const std::string& text) {
  auto q = Quantity::Parse(text);
  if (!q) throw std::invalid_argument("bad quantity in test: " + text);
  return *q;
}

Node MakeNode(const std::string& name, const std::map<std::string, std::string>& allocatable,
              const Labels& labels) {
  Node n;
  n.meta.name = name;
  n.meta.labels = labels;
  for (const auto& [k, v] : allocatable) n.allocatable[k] = Q(v);
  n.capacity = n.allocatable;
  return n;
}

PodDisruptionBudget MakePdb(const std::string& app, int32_t allowed) {
  PodDisruptionBudget pdb;
  pdb.meta.name = "pdb-" + app;
  pdb.meta.namespace_ = "default";
  pdb.selector = LabelSelector{{{"app", app}}, {}};
  pdb.disruptions_allowed = allowed;
  return pdb;
}

Pod MakePod(const std::string& name, const std::map<std::string, std::string>& requests,
            const std::string& node_name) {
  Pod p;
  p.meta.name = name;
  p.meta.namespace_ = "default";
  p.node_name = node_name;
  Container c;
  c.name = "c";
  for (const auto& [k, v] : requests) c.requests[k] = Q(v);
  p.containers.push_back(c);
  return p;
}

PhaseOutcome RunEngine(engine::Backend backend, const ObjectSet& cluster, const Pod& pod,
                       const std::vector<std::string>& plugins, const PluginArgs& args,
                       const FeatureGates& gates) {
  Profile profile = SinglePluginsProfile(plugins);
  profile.args = args;
  std::string error;
  auto fw = engine::Framework::Create(backend, profile, gates, &error);
  if (!fw) throw std::runtime_error(error);
  engine::Snapshot snapshot(cluster, gates);
  fw->Prepare(snapshot);
  PhaseOutcome out;
  engine::PreFilterResult pre = fw->PreFilter(pod);
  (void)pre;
  std::vector<std::vector<engine::VerdictCode>> codes = fw->FilterEach();
  for (size_t f = 0; f < codes.size(); ++f) {
    std::vector<PluginStatus> per_node;
    for (engine::VerdictCode c : codes[f]) per_node.push_back(c == 0 ? PluginStatus::Success() : fw->Verdict(f, c));
    out.filter.push_back(per_node);
  }
  std::vector<engine::NodeIndex> all(snapshot.num_nodes());
  for (int32_t i = 0; i < snapshot.num_nodes(); ++i) all[i] = i;
  engine::ScoreResult scores = fw->Score(all);
  out.raw = scores.raw;
  out.normalized = scores.normalized;
  return out;
}

PhaseOutcome RunReference(const ObjectSet& cluster, const Pod& pod, const std::vector<std::string>& plugins,
                          const PluginArgs& args, const FeatureGates& gates) {
  Profile profile = SinglePluginsProfile(plugins);
  reference::ClusterState state = reference::MakeClusterState(cluster, gates);
  reference::CycleState cycle;
  PhaseOutcome out;
  auto make = [&](const std::string& name) {
    auto p = reference::MakePlugin(name, args, gates);
    if (!p.ok()) throw std::runtime_error(std::string(p.status().message()));
    return std::move(*p);
  };
  std::map<std::string, std::unique_ptr<reference::Plugin>> by_name;
  for (const std::string& name : profile.AllPlugins()) by_name[name] = make(name);
  for (const std::string& name : profile.pre_filter) {
    reference::NodeNameSet nodes;
    out.pre_filter.push_back(by_name[name]->PreFilter(cycle, pod, state, &nodes));
  }
  for (const std::string& name : profile.filter) {
    std::vector<PluginStatus> per_node;
    for (const auto& n : state.nodes) per_node.push_back(by_name[name]->Filter(cycle, pod, n, state));
    out.filter.push_back(per_node);
  }
  std::vector<const reference::NodeInfo*> all;
  for (const auto& n : state.nodes) all.push_back(&n);
  std::vector<bool> skipped;
  for (const std::string& name : profile.pre_score) {
    out.pre_score.push_back(by_name[name]->PreScore(cycle, pod, all, state));
  }
  for (const WeightedPlugin& w : profile.score) {
    bool skip = false;
    for (size_t k = 0; k < profile.pre_score.size(); ++k) {
      if (profile.pre_score[k] == w.name && out.pre_score[k].IsSkip()) skip = true;
    }
    std::vector<int64_t> raw(state.nodes.size(), 0);
    if (!skip) {
      for (size_t i = 0; i < state.nodes.size(); ++i) by_name[w.name]->Score(cycle, pod, state.nodes[i], state, &raw[i]);
    }
    std::vector<int64_t> normalized = raw;
    if (!skip) by_name[w.name]->NormalizeScore(cycle, pod, normalized);
    out.raw.push_back(raw);
    out.normalized.push_back(normalized);
  }
  return out;
}

std::string Diff(const PhaseOutcome& e, const PhaseOutcome& r) {
  auto status = [](const PluginStatus& s) { return std::string(CodeName(s.code)) + " [" + s.Message() + "]"; };
  if (e.filter.size() != r.filter.size()) return "filter plugin count differs";
  for (size_t f = 0; f < e.filter.size(); ++f) {
    for (size_t i = 0; i < e.filter[f].size(); ++i) {
      // Upstream reports only a rejection's reasons; Success carries none.
      if (!(e.filter[f][i] == r.filter[f][i])) {
        return "filter plugin " + std::to_string(f) + " node " + std::to_string(i) + ": engine " +
               status(e.filter[f][i]) + " vs reference " + status(r.filter[f][i]);
      }
    }
  }
  if (e.raw.size() != r.raw.size()) return "score plugin count differs";
  for (size_t k = 0; k < e.raw.size(); ++k) {
    for (size_t i = 0; i < e.raw[k].size(); ++i) {
      if (e.raw[k][i] != r.raw[k][i]) {
        return "score plugin " + std::to_string(k) + " node " + std::to_string(i) + ": raw engine " +
               std::to_string(e.raw[k][i]) + " vs reference " + std::to_string(r.raw[k][i]);
      }
      if (e.normalized[k][i] != r.normalized[k][i]) {
        return "score plugin " + std::to_string(k) + " node " + std::to_string(i) + ": normalized engine " +
               std::to_string(e.normalized[k][i]) + " vs reference " + std::to_string(r.normalized[k][i]);
      }
    }
  }
  return "";
}

}  // namespace kplace::testing
