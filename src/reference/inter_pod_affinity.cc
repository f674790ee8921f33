// Reference InterPodAffinity, straight from interpodaffinity.md §2-§6: PreFilter scans
// every existing pod into topology-pair maps, Filter looks them up per node, PreScore
// builds the topology score map, Score sums it per node, NormalizeScore is min-max.
#include <climits>
#include <cstdint>
#include <map>
#include <set>
#include <string>
#include <utility>

#include "kplace/plugins/inter_pod_affinity_common.h"
#include "kplace/reference/plugin.h"

namespace kplace::reference {
namespace {

constexpr char kName[] = "InterPodAffinity";
constexpr char kPreFilterKey[] = "PreFilterInterPodAffinity";
constexpr char kPreScoreKey[] = "PreScoreInterPodAffinity";

bool SelectorMatches(const std::optional<LabelSelector>& s, const Labels& labels) {
  if (!s) return false;  // nil selects nothing
  for (const auto& [k, v] : s->match_labels) {
    auto it = labels.find(k);
    if (it == labels.end() || it->second != v) return false;
  }
  for (const LabelSelectorRequirement& r : s->match_expressions) {
    auto it = labels.find(r.key);
    bool has = it != labels.end();
    bool in = false;
    for (const std::string& v : r.values) in = in || (has && it->second == v);
    if (r.op == "In" && !in) return false;
    if (r.op == "NotIn" && in) return false;
    if (r.op == "Exists" && !has) return false;
    if (r.op == "DoesNotExist" && has) return false;
  }
  return true;
}

/** A processed term (§2.1). */
struct AffinityTerm {
  std::optional<LabelSelector> selector;
  std::set<std::string> namespaces;
  std::optional<LabelSelector> namespace_selector;
  std::string topology_key;
  int64_t weight = 0;

  bool Matches(const Pod& pod, const Labels& ns_labels) const {
    if (namespaces.count(pod.meta.namespace_) || SelectorMatches(namespace_selector, ns_labels)) {
      return SelectorMatches(selector, pod.meta.labels);
    }
    return false;
  }
};

AffinityTerm Process(const PodAffinityTerm& t, const Pod& owner, int64_t weight) {
  AffinityTerm out;
  out.selector = t.label_selector;
  out.namespace_selector = t.namespace_selector;
  out.topology_key = t.topology_key;
  out.weight = weight;
  if (t.namespaces.empty() && !t.namespace_selector) {
    out.namespaces.insert(owner.meta.namespace_);
  } else {
    out.namespaces.insert(t.namespaces.begin(), t.namespaces.end());
  }
  return out;
}

/** Upstream's PodInfo: a pod's four processed term lists. */
struct PodTerms {
  std::vector<AffinityTerm> required_affinity, required_anti, preferred_affinity, preferred_anti;
  std::string error;
};

PodTerms ParsePod(const Pod& pod, bool match_label_keys) {
  plugins::IpaPodTerms parsed = plugins::ParseIpaPodTerms(pod, match_label_keys);
  PodTerms out;
  out.error = parsed.error;
  for (const auto& t : parsed.required_affinity) out.required_affinity.push_back(Process(t, pod, 0));
  for (const auto& t : parsed.required_anti_affinity) out.required_anti.push_back(Process(t, pod, 0));
  for (const auto& t : parsed.preferred_affinity) out.preferred_affinity.push_back(Process(t.term, pod, t.weight));
  for (const auto& t : parsed.preferred_anti_affinity) out.preferred_anti.push_back(Process(t.term, pod, t.weight));
  return out;
}

bool IsEmptySelector(const std::optional<LabelSelector>& s) {
  return s && s->match_labels.empty() && s->match_expressions.empty();
}

// §2.2: a non-empty namespace selector becomes the names of the namespaces it selects.
void MergeNamespaces(AffinityTerm& t, const ClusterState& state) {
  if (IsEmptySelector(t.namespace_selector)) return;
  if (state.objects) {
    for (const Namespace& ns : state.objects->namespaces) {
      if (SelectorMatches(t.namespace_selector, ns.meta.labels)) t.namespaces.insert(ns.meta.name);
    }
  }
  t.namespace_selector.reset();
}

Labels NamespaceLabels(const std::string& name, const ClusterState& state) {
  if (state.objects) {
    for (const Namespace& ns : state.objects->namespaces) {
      if (ns.meta.name == name) return ns.meta.labels;
    }
  }
  return {};
}

using TopologyPair = std::pair<std::string, std::string>;
using PairCounts = std::map<TopologyPair, int64_t>;

void Update(PairCounts& m, const Node& node, const std::string& key, int64_t value) {
  auto it = node.meta.labels.find(key);
  if (it == node.meta.labels.end()) return;
  TopologyPair pair{key, it->second};
  m[pair] += value;
  if (m[pair] == 0) m.erase(pair);
}

bool MatchesAll(const std::vector<AffinityTerm>& terms, const Pod& pod) {
  if (terms.empty()) return false;
  for (const AffinityTerm& t : terms) {
    if (!t.Matches(pod, {})) return false;
  }
  return true;
}

struct PreFilterState {
  PodTerms terms;
  Labels namespace_labels;
  PairCounts existing_anti, affinity, anti;
};

struct PreScoreState {
  std::map<std::string, std::map<std::string, int64_t>> topology_score;
};

class InterPodAffinity final : public Plugin {
 public:
  InterPodAffinity(InterPodAffinityArgs args, FeatureGates gates)
      : args_(args), match_label_keys_(gates.Enabled("MatchLabelKeysInPodAffinity")) {}

  const char* Name() const override { return kName; }
  unsigned ExtensionPoints() const override {
    return kPreFilterPoint | kFilterPoint | kPreScorePoint | kScorePoint | kNormalizeScorePoint;
  }

  PluginStatus PreFilter(CycleState& cycle, const Pod& pod, const ClusterState& state, NodeNameSet*) override {
    auto s = std::make_shared<PreFilterState>();
    s->terms = ParsePod(pod, match_label_keys_);
    if (!s->terms.error.empty()) {
      return PluginStatus::Make(Code::kUnschedulableAndUnresolvable, "parsing pod: " + s->terms.error);
    }
    for (AffinityTerm& t : s->terms.required_affinity) MergeNamespaces(t, state);
    for (AffinityTerm& t : s->terms.required_anti) MergeNamespaces(t, state);
    s->namespace_labels = NamespaceLabels(pod.meta.namespace_, state);

    // E: existing pods' required anti-affinity terms that match the incoming pod.
    for (const NodeInfo& info : state.nodes) {
      for (const Pod* q : info.pods) {
        PodTerms qt = ParsePod(*q, match_label_keys_);  // a bad list is dropped, not reported
        for (const AffinityTerm& t : qt.required_anti) {
          if (t.Matches(pod, s->namespace_labels)) Update(s->existing_anti, *info.node, t.topology_key, 1);
        }
      }
    }
    // A and N: the incoming pod's required terms against every existing pod.
    const auto& ra = s->terms.required_affinity;
    const auto& rn = s->terms.required_anti;
    if (!ra.empty() || !rn.empty()) {
      for (const NodeInfo& info : state.nodes) {
        for (const Pod* q : info.pods) {
          if (MatchesAll(ra, *q)) {
            for (const AffinityTerm& t : ra) Update(s->affinity, *info.node, t.topology_key, 1);
          }
          for (const AffinityTerm& t : rn) {
            if (t.Matches(*q, {})) Update(s->anti, *info.node, t.topology_key, 1);
          }
        }
      }
    }
    cycle.Put(kPreFilterKey, s);
    if (s->existing_anti.empty() && ra.empty() && rn.empty()) return PluginStatus::Skip();
    return PluginStatus::Success();
  }

  PluginStatus Filter(CycleState& cycle, const Pod& pod, const NodeInfo& info, const ClusterState&) override {
    const PreFilterState* s = cycle.Get<PreFilterState>(kPreFilterKey);
    if (!s) return PluginStatus::Error("error reading \"PreFilterInterPodAffinity\" from cycleState: not found");
    const Labels& labels = info.node->meta.labels;
    if (!SatisfiesAffinity(*s, pod, labels)) {
      return PluginStatus::Make(Code::kUnschedulableAndUnresolvable, "node(s) didn't match pod affinity rules");
    }
    if (!s->anti.empty()) {
      for (const AffinityTerm& t : s->terms.required_anti) {
        auto it = labels.find(t.topology_key);
        if (it == labels.end()) continue;
        auto c = s->anti.find({t.topology_key, it->second});
        if (c != s->anti.end() && c->second > 0) {
          return PluginStatus::Make(Code::kUnschedulable, "node(s) didn't match pod anti-affinity rules");
        }
      }
    }
    if (!s->existing_anti.empty()) {
      for (const auto& [k, v] : labels) {
        auto c = s->existing_anti.find({k, v});
        if (c != s->existing_anti.end() && c->second > 0) {
          return PluginStatus::Make(Code::kUnschedulable, "node(s) didn't satisfy existing pods anti-affinity rules");
        }
      }
    }
    return PluginStatus::Success();
  }

  PluginStatus PreScore(CycleState& cycle, const Pod& pod, const std::vector<const NodeInfo*>& nodes,
                        const ClusterState& state) override {
    if (nodes.empty()) return PluginStatus::Skip();
    const bool has_pref = plugins::IpaHasPreferredPodAffinity(pod);
    if (args_.ignore_preferred_terms_of_existing_pods && !has_pref) return PluginStatus::Skip();
    PodTerms terms = ParsePod(pod, match_label_keys_);
    if (!terms.error.empty()) return PluginStatus::Error("failed to parse pod: " + terms.error);
    for (AffinityTerm& t : terms.preferred_affinity) MergeNamespaces(t, state);
    for (AffinityTerm& t : terms.preferred_anti) MergeNamespaces(t, state);
    const Labels ns_labels = NamespaceLabels(pod.meta.namespace_, state);

    auto s = std::make_shared<PreScoreState>();
    auto process = [&](const AffinityTerm& t, int64_t weight, const Pod& target, const Labels& target_ns_labels,
                       const Node& node, int64_t sign) {
      if (!t.Matches(target, target_ns_labels)) return;
      auto it = node.meta.labels.find(t.topology_key);
      if (it == node.meta.labels.end()) return;
      s->topology_score[t.topology_key][it->second] += weight * sign;
    };
    for (const NodeInfo& info : state.nodes) {
      const Node& node = *info.node;
      for (const Pod* q : info.pods) {
        // Without preferred terms of its own the pod is scored only by pods with affinity.
        if (!has_pref && !plugins::IpaHasPodAffinity(*q)) continue;
        if (node.meta.labels.empty()) continue;
        for (const AffinityTerm& t : terms.preferred_affinity) process(t, t.weight, *q, {}, node, 1);
        for (const AffinityTerm& t : terms.preferred_anti) process(t, t.weight, *q, {}, node, -1);
        PodTerms qt = ParsePod(*q, match_label_keys_);
        if (args_.hard_pod_affinity_weight > 0) {
          for (const AffinityTerm& t : qt.required_affinity) {
            process(t, args_.hard_pod_affinity_weight, pod, ns_labels, node, 1);
          }
        }
        for (const AffinityTerm& t : qt.preferred_affinity) process(t, t.weight, pod, ns_labels, node, 1);
        for (const AffinityTerm& t : qt.preferred_anti) process(t, t.weight, pod, ns_labels, node, -1);
      }
    }
    if (s->topology_score.empty()) return PluginStatus::Skip();
    cycle.Put(kPreScoreKey, s);
    return PluginStatus::Success();
  }

  PluginStatus Score(CycleState& cycle, const Pod&, const NodeInfo& info, const ClusterState&,
                     int64_t* score) override {
    *score = 0;
    const PreScoreState* s = cycle.Get<PreScoreState>(kPreScoreKey);
    if (!s) return PluginStatus::Error("error reading \"PreScoreInterPodAffinity\" from cycleState: not found");
    for (const auto& [key, values] : s->topology_score) {
      auto it = info.node->meta.labels.find(key);
      if (it == info.node->meta.labels.end()) continue;
      auto v = values.find(it->second);
      if (v != values.end()) *score += v->second;
    }
    return PluginStatus::Success();
  }

  PluginStatus NormalizeScore(CycleState& cycle, const Pod&, std::vector<int64_t>& scores) override {
    const PreScoreState* s = cycle.Get<PreScoreState>(kPreScoreKey);
    if (!s) return PluginStatus::Error("error reading \"PreScoreInterPodAffinity\" from cycleState: not found");
    if (s->topology_score.empty()) return PluginStatus::Success();
    int64_t mn = INT64_MAX, mx = INT64_MIN;
    for (int64_t v : scores) {
      mn = std::min(mn, v);
      mx = std::max(mx, v);
    }
    const int64_t diff = mx - mn;
    for (int64_t& v : scores) {
      double f = 0;
      if (diff > 0) f = static_cast<double>(kMaxNodeScore) * (static_cast<double>(v - mn) / static_cast<double>(diff));
      v = static_cast<int64_t>(f);
    }
    return PluginStatus::Success();
  }

 private:
  static bool SatisfiesAffinity(const PreFilterState& s, const Pod& pod, const Labels& labels) {
    const auto& ra = s.terms.required_affinity;
    bool pods_exist = true;
    for (const AffinityTerm& t : ra) {
      auto it = labels.find(t.topology_key);
      if (it == labels.end()) return false;  // every topology key must be on the node
      auto c = s.affinity.find({t.topology_key, it->second});
      if (c == s.affinity.end() || c->second <= 0) pods_exist = false;
    }
    if (pods_exist) return true;
    // The first pod of a group with affinity to itself.
    return s.affinity.empty() && MatchesAll(ra, pod);
  }

  InterPodAffinityArgs args_;
  bool match_label_keys_;
};

absl::StatusOr<std::unique_ptr<Plugin>> Make(const PluginArgs& args, const FeatureGates& gates) {
  const InterPodAffinityArgs& a = args.inter_pod_affinity;
  if (a.hard_pod_affinity_weight < 0 || a.hard_pod_affinity_weight > 100) {
    return absl::InvalidArgumentError("InterPodAffinity: hardPodAffinityWeight must be in the range 0-100");
  }
  return std::unique_ptr<Plugin>(new InterPodAffinity(a, gates));
}

}  // namespace

KPLACE_REGISTER_REFERENCE_PLUGIN(InterPodAffinity, Make);

}  // namespace kplace::reference
