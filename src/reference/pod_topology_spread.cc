// Reference PodTopologySpread, straight from podtopologyspread.md §2-§8 and shaped like
// upstream: PreFilter walks every node and its pods, Score counts per node.
#include <algorithm>
#include <climits>
#include <cmath>
#include <map>
#include <set>

#include "kplace/plugins/pod_topology_spread_common.h"
#include "kplace/reference/plugin.h"

namespace kplace::reference {
namespace {

constexpr char kName[] = "PodTopologySpread";
constexpr char kPreFilterKey[] = "PreFilterPodTopologySpread";
constexpr char kPreScoreKey[] = "PreScorePodTopologySpread";
constexpr char kDoNotSchedule[] = "DoNotSchedule";
constexpr char kScheduleAnyway[] = "ScheduleAnyway";

struct Constraint {
  int32_t max_skew = 0;
  std::string topology_key;
  spread::PodSelector selector;
  int32_t min_domains = 1;
  std::string node_affinity_policy = "Honor";
  std::string node_taints_policy = "Ignore";
};

struct PreFilterState {
  std::vector<Constraint> constraints;
  std::vector<std::map<std::string, int64_t>> tp_value_to_match_num;  // per constraint
  std::vector<int64_t> global_min;                                  // per constraint
};

struct PreScoreState {
  std::vector<Constraint> constraints;
  std::set<std::string> ignored_nodes;
  std::vector<std::map<std::string, int64_t>> tp_value_to_pod_counts;
  std::vector<double> weights;
  std::vector<std::string> scored;  // node names in Score call order, for NormalizeScore
};

bool HasAllKeys(const Node& node, const std::vector<Constraint>& constraints) {
  for (const Constraint& c : constraints) {
    if (!node.meta.labels.count(c.topology_key)) return false;
  }
  return true;
}

class PodTopologySpread final : public Plugin {
 public:
  PodTopologySpread(const PodTopologySpreadArgs& args, const FeatureGates& gates) {
    system_defaulted_ = args.defaulting_type.empty() || args.defaulting_type == "System";
    if (system_defaulted_) {
      TopologySpreadConstraint host, zone;
      host.max_skew = 3;
      host.topology_key = spread::kHostnameLabel;
      host.when_unsatisfiable = kScheduleAnyway;
      zone.max_skew = 5;
      zone.topology_key = spread::kZoneLabel;
      zone.when_unsatisfiable = kScheduleAnyway;
      default_constraints_ = {host, zone};
    } else {
      default_constraints_ = args.default_constraints;
    }
    enable_node_inclusion_ = gates.Enabled("NodeInclusionPolicyInPodTopologySpread");
    enable_match_label_keys_ = gates.Enabled("MatchLabelKeysInPodTopologySpread");
    comparison_operators_ = gates.Enabled("TaintTolerationComparisonOperators");
    legacy_empty_selector_ = gates.Enabled(spread::kLegacyEmptySelectorGate);
  }

  const char* Name() const override { return kName; }
  unsigned ExtensionPoints() const override {
    return kPreFilterPoint | kFilterPoint | kPreScorePoint | kScorePoint | kNormalizeScorePoint;
  }

  PluginStatus PreFilter(CycleState& cycle, const Pod& pod, const ClusterState& cluster, NodeNameSet*) override {
    auto s = std::make_shared<PreFilterState>();
    std::string error;
    if (!GetConstraints(pod, cluster, kDoNotSchedule, &s->constraints, &error)) return PluginStatus::Error(error);
    if (s->constraints.empty()) {
      cycle.Put(kPreFilterKey, s);
      return PluginStatus::Skip();
    }
    const size_t k = s->constraints.size();
    s->tp_value_to_match_num.assign(k, {});
    spread::RequiredPlacement placement(pod);
    for (const NodeInfo& info : cluster.nodes) {
      const Node& node = *info.node;
      if (!enable_node_inclusion_ && !placement.Matches(node)) continue;
      if (!HasAllKeys(node, s->constraints)) continue;
      for (size_t i = 0; i < k; ++i) {
        const Constraint& c = s->constraints[i];
        if (enable_node_inclusion_ && !MatchNodeInclusionPolicies(c, pod, node, placement)) continue;
        const std::string& value = node.meta.labels.at(c.topology_key);
        // Creating the entry even for 0 makes an empty domain a real domain.
        s->tp_value_to_match_num[i][value] += CountPodsMatchSelector(info.pods, c.selector, pod.meta.namespace_);
      }
    }
    s->global_min.assign(k, INT32_MAX);
    for (size_t i = 0; i < k; ++i) {
      for (const auto& [value, count] : s->tp_value_to_match_num[i]) {
        s->global_min[i] = std::min(s->global_min[i], count);
      }
    }
    cycle.Put(kPreFilterKey, s);
    return PluginStatus::Success();
  }

  PluginStatus Filter(CycleState& cycle, const Pod& pod, const NodeInfo& info, const ClusterState&) override {
    const PreFilterState* s = cycle.Get<PreFilterState>(kPreFilterKey);
    if (!s) return PluginStatus::Error(std::string("reading \"") + kPreFilterKey + "\" from cycleState: not found");
    if (s->constraints.empty()) return PluginStatus::Success();
    const Node& node = *info.node;
    for (size_t i = 0; i < s->constraints.size(); ++i) {
      const Constraint& c = s->constraints[i];
      auto label = node.meta.labels.find(c.topology_key);
      if (label == node.meta.labels.end()) {
        return PluginStatus::Make(Code::kUnschedulableAndUnresolvable,
                                  "node(s) didn't match pod topology spread constraints (missing required label)");
      }
      int64_t min_match = s->global_min[i];
      if (static_cast<int64_t>(s->tp_value_to_match_num[i].size()) < c.min_domains) min_match = 0;
      int64_t self_match = c.selector.Matches(pod.meta.labels) ? 1 : 0;
      auto it = s->tp_value_to_match_num[i].find(label->second);
      int64_t match_num = it == s->tp_value_to_match_num[i].end() ? 0 : it->second;
      if (match_num + self_match - min_match > c.max_skew) {
        return PluginStatus::Make(Code::kUnschedulable, "node(s) didn't match pod topology spread constraints");
      }
    }
    return PluginStatus::Success();
  }

  PluginStatus PreScore(CycleState& cycle, const Pod& pod, const std::vector<const NodeInfo*>& filtered,
                        const ClusterState& cluster) override {
    if (cluster.nodes.empty()) return PluginStatus::Skip();
    auto s = std::make_shared<PreScoreState>();
    const bool require_all = !pod.topology_spread_constraints.empty() || !system_defaulted_;
    std::string error;
    if (!GetConstraints(pod, cluster, kScheduleAnyway, &s->constraints, &error)) {
      return PluginStatus::Error("calculating preScoreState: obtaining pod's soft topology spread constraints: " +
                                 error);
    }
    if (s->constraints.empty()) return PluginStatus::Skip();
    const size_t k = s->constraints.size();
    s->tp_value_to_pod_counts.assign(k, {});
    std::vector<int64_t> topo_size(k, 0);
    for (const NodeInfo* info : filtered) {
      const Node& node = *info->node;
      if (require_all && !HasAllKeys(node, s->constraints)) {
        s->ignored_nodes.insert(node.meta.name);
        continue;
      }
      for (size_t i = 0; i < k; ++i) {
        const Constraint& c = s->constraints[i];
        if (c.topology_key == spread::kHostnameLabel) continue;  // counted per node in Score
        std::string value = LabelOrEmpty(node, c.topology_key);
        if (!s->tp_value_to_pod_counts[i].count(value)) {
          s->tp_value_to_pod_counts[i][value] = 0;
          ++topo_size[i];
        }
      }
    }
    s->weights.assign(k, 0);
    for (size_t i = 0; i < k; ++i) {
      int64_t size = topo_size[i];
      if (s->constraints[i].topology_key == spread::kHostnameLabel) {
        size = static_cast<int64_t>(filtered.size()) - static_cast<int64_t>(s->ignored_nodes.size());
      }
      s->weights[i] = std::log(static_cast<double>(size + 2));
    }
    spread::RequiredPlacement placement(pod);
    for (const NodeInfo& info : cluster.nodes) {
      const Node& node = *info.node;
      if (!enable_node_inclusion_ && !placement.Matches(node)) continue;
      if (require_all && !HasAllKeys(node, s->constraints)) continue;
      for (size_t i = 0; i < k; ++i) {
        const Constraint& c = s->constraints[i];
        if (enable_node_inclusion_ && !MatchNodeInclusionPolicies(c, pod, node, placement)) continue;
        // Only domains with a candidate node count; hostname domains are never here.
        auto it = s->tp_value_to_pod_counts[i].find(LabelOrEmpty(node, c.topology_key));
        if (it == s->tp_value_to_pod_counts[i].end()) continue;
        it->second += CountPodsMatchSelector(info.pods, c.selector, pod.meta.namespace_);
      }
    }
    cycle.Put(kPreScoreKey, s);
    return PluginStatus::Success();
  }

  PluginStatus Score(CycleState& cycle, const Pod& pod, const NodeInfo& info, const ClusterState&,
                     int64_t* score) override {
    *score = 0;
    PreScoreState* s = cycle.Get<PreScoreState>(kPreScoreKey);
    if (!s) return PluginStatus::Error(std::string("reading \"") + kPreScoreKey + "\" from cycleState: not found");
    const Node& node = *info.node;
    s->scored.push_back(node.meta.name);
    if (s->ignored_nodes.count(node.meta.name)) return PluginStatus::Success();
    double sum = 0;
    for (size_t i = 0; i < s->constraints.size(); ++i) {
      const Constraint& c = s->constraints[i];
      auto label = node.meta.labels.find(c.topology_key);
      if (label == node.meta.labels.end()) continue;
      int64_t cnt = 0;
      if (c.topology_key == spread::kHostnameLabel) {
        cnt = CountPodsMatchSelector(info.pods, c.selector, pod.meta.namespace_);
      } else {
        auto it = s->tp_value_to_pod_counts[i].find(label->second);
        if (it != s->tp_value_to_pod_counts[i].end()) cnt = it->second;
      }
      sum += static_cast<double>(cnt) * s->weights[i] + static_cast<double>(c.max_skew - 1);
    }
    *score = static_cast<int64_t>(std::round(sum));
    return PluginStatus::Success();
  }

  PluginStatus NormalizeScore(CycleState& cycle, const Pod&, std::vector<int64_t>& scores) override {
    const PreScoreState* s = cycle.Get<PreScoreState>(kPreScoreKey);
    if (!s) return PluginStatus::Success();
    // scores[j] belongs to the j-th node of the latest Score pass.
    const size_t offset = s->scored.size() >= scores.size() ? s->scored.size() - scores.size() : 0;
    auto ignored = [&](size_t j) {
      return offset + j < s->scored.size() && s->ignored_nodes.count(s->scored[offset + j]) > 0;
    };
    int64_t min_score = INT64_MAX, max_score = 0;
    for (size_t j = 0; j < scores.size(); ++j) {
      if (ignored(j)) continue;
      min_score = std::min(min_score, scores[j]);
      max_score = std::max(max_score, scores[j]);
    }
    for (size_t j = 0; j < scores.size(); ++j) {
      if (ignored(j)) {
        scores[j] = 0;
      } else if (max_score == 0) {
        scores[j] = kMaxNodeScore;
      } else {
        scores[j] = kMaxNodeScore * (max_score + min_score - scores[j]) / max_score;
      }
    }
    return PluginStatus::Success();
  }

 private:
  static std::string LabelOrEmpty(const Node& node, const std::string& key) {
    auto it = node.meta.labels.find(key);
    return it == node.meta.labels.end() ? std::string() : it->second;
  }

  int64_t CountPodsMatchSelector(const std::vector<const Pod*>& pods, const spread::PodSelector& selector,
                                 const std::string& ns) const {
    if (legacy_empty_selector_ && selector.Empty()) return 0;
    int64_t count = 0;
    for (const Pod* p : pods) {
      if (spread::IsTerminating(*p) || p->meta.namespace_ != ns) continue;
      if (selector.Matches(p->meta.labels)) ++count;
    }
    return count;
  }

  bool MatchNodeInclusionPolicies(const Constraint& c, const Pod& pod, const Node& node,
                                  const spread::RequiredPlacement& placement) const {
    if (c.node_affinity_policy == "Honor" && !placement.Matches(node)) return false;
    if (c.node_taints_policy == "Honor" &&
        !spread::ToleratesHardTaints(pod.tolerations, node, comparison_operators_)) {
      return false;
    }
    return true;
  }

  bool FilterConstraints(const std::vector<TopologySpreadConstraint>& in, const Labels& pod_labels,
                         const std::string& action, std::vector<Constraint>* out, std::string* error) const {
    for (const TopologySpreadConstraint& t : in) {
      if (t.when_unsatisfiable != action) continue;
      Constraint c;
      if (!spread::ParsePodSelector(t.label_selector, &c.selector, error)) return false;
      if (enable_match_label_keys_ && !t.match_label_keys.empty()) {
        Labels match_labels;
        for (const std::string& key : t.match_label_keys) {
          auto it = pod_labels.find(key);
          if (it != pod_labels.end()) match_labels[key] = it->second;
        }
        if (!match_labels.empty()) c.selector = spread::MergeSetIntoSelector(match_labels, c.selector);
      }
      c.max_skew = t.max_skew;
      c.topology_key = t.topology_key;
      c.min_domains = t.min_domains.value_or(1);
      if (enable_node_inclusion_) {
        if (t.node_affinity_policy) c.node_affinity_policy = *t.node_affinity_policy;
        if (t.node_taints_policy) c.node_taints_policy = *t.node_taints_policy;
      }
      out->push_back(std::move(c));
    }
    return true;
  }

  bool GetConstraints(const Pod& pod, const ClusterState& cluster, const std::string& action,
                      std::vector<Constraint>* out, std::string* error) const {
    out->clear();
    if (!pod.topology_spread_constraints.empty()) {
      return FilterConstraints(pod.topology_spread_constraints, pod.meta.labels, action, out, error);
    }
    if (!FilterConstraints(default_constraints_, pod.meta.labels, action, out, error)) return false;
    if (out->empty()) return true;
    static const ObjectSet kNoObjects;
    spread::PodSelector selector = spread::DefaultSelector(pod, cluster.objects ? *cluster.objects : kNoObjects);
    if (selector.Empty()) {
      out->clear();
      return true;
    }
    for (Constraint& c : *out) c.selector = selector;
    return true;
  }

  bool system_defaulted_ = true;
  std::vector<TopologySpreadConstraint> default_constraints_;
  bool enable_node_inclusion_ = true;
  bool enable_match_label_keys_ = true;
  bool comparison_operators_ = false;
  bool legacy_empty_selector_ = false;
};

}  // namespace

KPLACE_REGISTER_REFERENCE_PLUGIN(PodTopologySpread,
                                 [](const PluginArgs& args, const FeatureGates& gates)
                                     -> absl::StatusOr<std::unique_ptr<Plugin>> {
                                   const PodTopologySpreadArgs& a = args.pod_topology_spread;
                                   bool system = a.defaulting_type.empty() || a.defaulting_type == "System";
                                   if (!system && a.defaulting_type != "List") {
                                     return absl::InvalidArgumentError(
                                         "PodTopologySpread: defaultingType must be System or List");
                                   }
                                   if (system && !a.default_constraints.empty()) {
                                     return absl::InvalidArgumentError(
                                         "PodTopologySpread: defaultConstraints must be empty when "
                                         "defaultingType is System");
                                   }
                                   return std::unique_ptr<Plugin>(new PodTopologySpread(a, gates));
                                 });

}  // namespace kplace::reference
