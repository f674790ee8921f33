// Reference NodeName, straight from small-plugins.md §7.
#include "kplace/reference/plugin.h"

namespace kplace::reference {
namespace {

class NodeName final : public Plugin {
 public:
  const char* Name() const override { return "NodeName"; }
  unsigned ExtensionPoints() const override { return kFilterPoint; }

  PluginStatus Filter(CycleState&, const Pod& pod, const NodeInfo& node, const ClusterState&) override {
    if (pod.node_name.empty() || pod.node_name == node.node->meta.name) return PluginStatus::Success();
    return PluginStatus::Make(Code::kUnschedulableAndUnresolvable, "node(s) didn't match the requested node name");
  }
};

KPLACE_REGISTER_REFERENCE_PLUGIN(NodeName, [](const PluginArgs&, const FeatureGates&)
                                               -> absl::StatusOr<std::unique_ptr<Plugin>> {
  return std::unique_ptr<Plugin>(new NodeName());
});

}  // namespace
}  // namespace kplace::reference
