// Reference NodeUnschedulable, straight from small-plugins.md §6.
#include "kplace/reference/plugin.h"
#include "kplace/reference/tolerations.h"

namespace kplace::reference {
namespace {

class NodeUnschedulable final : public Plugin {
 public:
  explicit NodeUnschedulable(const FeatureGates& gates)
      : comparison_operators_(gates.Enabled("TaintTolerationComparisonOperators")) {}

  const char* Name() const override { return "NodeUnschedulable"; }
  unsigned ExtensionPoints() const override { return kFilterPoint; }

  PluginStatus Filter(CycleState&, const Pod& pod, const NodeInfo& node, const ClusterState&) override {
    if (!node.node->unschedulable) return PluginStatus::Success();
    // Tolerating the unschedulable taint also tolerates spec.unschedulable.
    const Taint taint{"node.kubernetes.io/unschedulable", "", "NoSchedule"};
    if (TolerationsTolerateTaint(pod.tolerations, taint, comparison_operators_)) return PluginStatus::Success();
    return PluginStatus::Make(Code::kUnschedulableAndUnresolvable, "node(s) were unschedulable");
  }

 private:
  bool comparison_operators_;
};

KPLACE_REGISTER_REFERENCE_PLUGIN(NodeUnschedulable, [](const PluginArgs&, const FeatureGates& gates)
                                                        -> absl::StatusOr<std::unique_ptr<Plugin>> {
  return std::unique_ptr<Plugin>(new NodeUnschedulable(gates));
});

}  // namespace
}  // namespace kplace::reference
