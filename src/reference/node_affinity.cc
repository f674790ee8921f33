// Reference NodeAffinity, straight from small-plugins.md §1.4-1.7 and §4: selectors are
// matched against each node's labels and name as strings.
#include <algorithm>
#include <set>

#include "kplace/common/strings.h"
#include "kplace/plugins/node_affinity_common.h"
#include "kplace/reference/plugin.h"

namespace kplace::reference {
namespace {

constexpr char kName[] = "NodeAffinity";
constexpr char kReasonPod[] = "node(s) didn't match Pod's node affinity/selector";
constexpr char kReasonEnforced[] = "node(s) didn't match scheduler-enforced node affinity";
constexpr char kReasonConflict[] = "pod affinity terms conflict";

using plugins::node_affinity::Parses;
using plugins::node_affinity::SelectorMatches;
using plugins::node_affinity::TermMatches;

int64_t PreferredScore(const std::vector<PreferredSchedulingTerm>& terms, const Node& node) {
  int64_t score = 0;
  for (const PreferredSchedulingTerm& t : terms) {
    if (t.weight == 0 || plugins::node_affinity::IsEmptyTerm(t.preference) || !Parses(t.preference)) continue;
    if (TermMatches(t.preference, node)) score += t.weight;
  }
  return score;
}

const NodeAffinity* PodNodeAffinity(const Pod& pod) {
  return pod.affinity && pod.affinity->node_affinity ? &*pod.affinity->node_affinity : nullptr;
}

class NodeAffinityPlugin final : public Plugin {
 public:
  explicit NodeAffinityPlugin(NodeAffinityArgs args) : args_(std::move(args)) {}

  const char* Name() const override { return kName; }
  unsigned ExtensionPoints() const override {
    return kPreFilterPoint | kFilterPoint | kPreScorePoint | kScorePoint | kNormalizeScorePoint;
  }

  PluginStatus PreFilter(CycleState&, const Pod& pod, const ClusterState&, NodeNameSet* nodes) override {
    const NodeAffinity* na = PodNodeAffinity(pod);
    const bool no_required = na == nullptr || !na->required;
    const bool has_added_required = args_.added_affinity && args_.added_affinity->required;
    const bool has_selector = pod.node_selector_set || !pod.node_selector.empty();
    if (no_required && !has_added_required && !has_selector) return PluginStatus::Skip();
    if (no_required || na->required->terms.empty()) return PluginStatus::Success();
    std::set<std::string> all;
    for (const NodeSelectorTerm& t : na->required->terms) {
      std::optional<std::set<std::string>> names;
      for (const NodeSelectorRequirement& r : t.match_fields) {
        if (r.key != "metadata.name" || r.op != "In") continue;
        std::set<std::string> these(r.values.begin(), r.values.end());
        if (!names) {
          names = these;
        } else {
          std::set<std::string> both;
          for (const std::string& n : *names) {
            if (these.count(n)) both.insert(n);
          }
          names = both;
        }
      }
      if (!names) return PluginStatus::Success();
      all.insert(names->begin(), names->end());
    }
    if (all.empty()) return PluginStatus::Make(Code::kUnschedulableAndUnresolvable, kReasonConflict);
    *nodes = all;
    return PluginStatus::Success();
  }

  PluginStatus Filter(CycleState&, const Pod& pod, const NodeInfo& info, const ClusterState&) override {
    const Node& node = *info.node;
    if (args_.added_affinity && args_.added_affinity->required &&
        !SelectorMatches(*args_.added_affinity->required, node)) {
      return PluginStatus::Make(Code::kUnschedulableAndUnresolvable, kReasonEnforced);
    }
    for (const auto& [key, value] : pod.node_selector) {
      auto it = node.meta.labels.find(key);
      if (it == node.meta.labels.end() || it->second != value) {
        return PluginStatus::Make(Code::kUnschedulableAndUnresolvable, kReasonPod);
      }
    }
    const NodeAffinity* na = PodNodeAffinity(pod);
    if (na != nullptr && na->required && !SelectorMatches(*na->required, node)) {
      return PluginStatus::Make(Code::kUnschedulableAndUnresolvable, kReasonPod);
    }
    return PluginStatus::Success();
  }

  PluginStatus PreScore(CycleState&, const Pod& pod, const std::vector<const NodeInfo*>&,
                        const ClusterState&) override {
    const NodeAffinity* na = PodNodeAffinity(pod);
    const bool pod_preferred = na != nullptr && (na->preferred_set || !na->preferred.empty());
    if (pod_preferred) {
      std::vector<std::string> errors;
      for (size_t i = 0; i < na->preferred.size(); ++i) {
        const PreferredSchedulingTerm& t = na->preferred[i];
        if (t.weight == 0 || plugins::node_affinity::IsEmptyTerm(t.preference)) continue;
        for (const std::string& e : plugins::node_affinity::NodeSelectorTermErrors(t.preference, StrCat("[", i, "]"))) {
          errors.push_back(e);
        }
      }
      if (!errors.empty()) return PluginStatus::Error(plugins::node_affinity::AggregateErrors(errors));
    }
    const bool added_preferred = args_.added_affinity && !args_.added_affinity->preferred.empty();
    if (!pod_preferred && !added_preferred) return PluginStatus::Skip();
    return PluginStatus::Success();
  }

  PluginStatus Score(CycleState&, const Pod& pod, const NodeInfo& info, const ClusterState&,
                     int64_t* score) override {
    *score = 0;
    if (args_.added_affinity) *score += PreferredScore(args_.added_affinity->preferred, *info.node);
    const NodeAffinity* na = PodNodeAffinity(pod);
    if (na != nullptr) *score += PreferredScore(na->preferred, *info.node);
    return PluginStatus::Success();
  }

  PluginStatus NormalizeScore(CycleState&, const Pod&, std::vector<int64_t>& scores) override {
    DefaultNormalizeScore(scores, /*reverse=*/false);
    return PluginStatus::Success();
  }

 private:
  NodeAffinityArgs args_;
};

}  // namespace

KPLACE_REGISTER_REFERENCE_PLUGIN(NodeAffinity, [](const PluginArgs& args, const FeatureGates&)
                                                   -> absl::StatusOr<std::unique_ptr<Plugin>> {
  // addedAffinity is parsed strictly: any bad requirement rejects the profile.
  const auto& added = args.node_affinity.added_affinity;
  std::vector<std::string> errors;
  if (added && added->required) {
    for (size_t i = 0; i < added->required->terms.size(); ++i) {
      const NodeSelectorTerm& t = added->required->terms[i];
      if (plugins::node_affinity::IsEmptyTerm(t)) continue;
      for (const std::string& e : plugins::node_affinity::NodeSelectorTermErrors(
               t, StrCat("addedAffinity.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms[", i, "]"))) {
        errors.push_back(e);
      }
    }
  }
  if (added) {
    for (size_t i = 0; i < added->preferred.size(); ++i) {
      const PreferredSchedulingTerm& t = added->preferred[i];
      if (t.weight == 0 || plugins::node_affinity::IsEmptyTerm(t.preference)) continue;
      for (const std::string& e : plugins::node_affinity::NodeSelectorTermErrors(
               t.preference, StrCat("addedAffinity.preferredDuringSchedulingIgnoredDuringExecution[", i, "]"))) {
        errors.push_back(e);
      }
    }
  }
  if (!errors.empty()) return absl::InvalidArgumentError(StrCat("NodeAffinity: ", plugins::node_affinity::AggregateErrors(errors)));
  return std::make_unique<NodeAffinityPlugin>(args.node_affinity);
});

}  // namespace kplace::reference
