// Reference DynamicResources, straight from dynamicresources.go through the shared host
// side (kplace/plugins/dynamic_resources_common.h): allocated claims' node selectors are
// matched against each node's labels and name as strings.
#include "kplace/plugins/dynamic_resources_common.h"
#include "kplace/reference/plugin.h"

namespace kplace::reference {
namespace {

using plugins::dra::PreFilterPlan;

class DynamicResources final : public Plugin {
 public:
  explicit DynamicResources(FeatureGates gates) : gates_(std::move(gates)) {}

  const char* Name() const override { return plugins::dra::kName; }
  unsigned ExtensionPoints() const override { return kPreFilterPoint | kFilterPoint | kScorePoint | kNormalizeScorePoint; }

  PluginStatus PreFilter(CycleState& cycle, const Pod& pod, const ClusterState& state, NodeNameSet*) override {
    auto plan = std::make_shared<PreFilterPlan>(plugins::dra::PreFilter(pod, *state.objects, gates_, &index_));
    return cycle.Put(plugins::dra::kName, std::move(plan))->status;
  }

  PluginStatus Filter(CycleState& cycle, const Pod&, const NodeInfo& node, const ClusterState&) override {
    const PreFilterPlan* plan = cycle.Get<PreFilterPlan>(plugins::dra::kName);
    if (!plan) return PluginStatus::Error("not found");
    return plugins::dra::Filter(*plan, *node.node);
  }

  // Score is 0 without claims to allocate (which never reach it), and so after normalizing.
  PluginStatus NormalizeScore(CycleState&, const Pod&, std::vector<int64_t>& scores) override {
    DefaultNormalizeScore(scores, /*reverse=*/false);
    return PluginStatus::Success();
  }

 private:
  FeatureGates gates_;
  plugins::dra::ResourceIndex index_;
};

KPLACE_REGISTER_REFERENCE_PLUGIN(DynamicResources, [](const PluginArgs&, const FeatureGates& gates)
                                                       -> absl::StatusOr<std::unique_ptr<Plugin>> {
  return std::unique_ptr<Plugin>(new DynamicResources(gates));
});

}  // namespace
}  // namespace kplace::reference
