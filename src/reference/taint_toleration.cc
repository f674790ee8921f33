// Reference TaintToleration, straight from small-plugins.md §3.
#include "kplace/reference/plugin.h"
#include "kplace/reference/tolerations.h"

namespace kplace::reference {
namespace {

constexpr char kName[] = "TaintToleration";
constexpr char kPreScoreKey[] = "PreScoreTaintToleration";

struct PreScoreState {
  std::vector<Toleration> prefer_no_schedule;  // tolerations with an empty or PreferNoSchedule effect
};

class TaintToleration final : public Plugin {
 public:
  explicit TaintToleration(const FeatureGates& gates)
      : comparison_operators_(gates.Enabled("TaintTolerationComparisonOperators")) {}

  const char* Name() const override { return kName; }
  unsigned ExtensionPoints() const override {
    return kFilterPoint | kPreScorePoint | kScorePoint | kNormalizeScorePoint;
  }

  PluginStatus Filter(CycleState&, const Pod& pod, const NodeInfo& node, const ClusterState&) override {
    for (const Taint& taint : node.node->taints) {
      if (taint.effect != "NoSchedule" && taint.effect != "NoExecute") continue;
      if (!TolerationsTolerateTaint(pod.tolerations, taint, comparison_operators_)) {
        return PluginStatus::Make(Code::kUnschedulableAndUnresolvable, "node(s) had untolerated taint(s)");
      }
    }
    return PluginStatus::Success();
  }

  PluginStatus PreScore(CycleState& state, const Pod& pod, const std::vector<const NodeInfo*>&,
                        const ClusterState&) override {
    auto s = std::make_shared<PreScoreState>();
    for (const Toleration& t : pod.tolerations) {
      if (t.effect.empty() || t.effect == "PreferNoSchedule") s->prefer_no_schedule.push_back(t);
    }
    state.Put(kPreScoreKey, s);
    return PluginStatus::Success();
  }

  PluginStatus Score(CycleState& state, const Pod&, const NodeInfo& node, const ClusterState&,
                     int64_t* score) override {
    *score = 0;
    const PreScoreState* s = state.Get<PreScoreState>(kPreScoreKey);
    if (s == nullptr) {
      return PluginStatus::Error("failed to read \"PreScoreTaintToleration\" from cycleState: not found");
    }
    for (const Taint& taint : node.node->taints) {
      if (taint.effect != "PreferNoSchedule") continue;
      if (!TolerationsTolerateTaint(s->prefer_no_schedule, taint, comparison_operators_)) ++*score;
    }
    return PluginStatus::Success();
  }

  PluginStatus NormalizeScore(CycleState&, const Pod&, std::vector<int64_t>& scores) override {
    DefaultNormalizeScore(scores, /*reverse=*/true);
    return PluginStatus::Success();
  }

 private:
  bool comparison_operators_;
};

KPLACE_REGISTER_REFERENCE_PLUGIN(TaintToleration, [](const PluginArgs&, const FeatureGates& gates)
                                                      -> absl::StatusOr<std::unique_ptr<Plugin>> {
  return std::unique_ptr<Plugin>(new TaintToleration(gates));
});

}  // namespace
}  // namespace kplace::reference
