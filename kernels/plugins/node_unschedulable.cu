// NodeUnschedulable on the engine: an unschedulable flag per node; whether the pod
// tolerates the synthetic unschedulable taint is decided once on the host.
#include "kernels/backend.cuh"
#include "kplace/plugins/node_unschedulable.h"
#include "kplace/plugins/taint_common.h"

namespace kplace::KPLACE_BACKEND_NS {
namespace {

using engine::NodeIndex;
using engine::Snapshot;
using engine::VerdictCode;
using plugins::NodeUnschedulableParams;
using plugins::NodeUnschedulableView;

struct UnschedulableFilterFn {
  NodeUnschedulableView v;
  NodeUnschedulableParams p;
  KPLACE_HOST_DEVICE VerdictCode operator()(int32_t i) const { return plugins::NodeUnschedulableFilterNode(v, p, i); }
};

class NodeUnschedulable final : public engine::Plugin {
 public:
  static std::unique_ptr<engine::Plugin> Create(const PluginArgs&, const FeatureGates& gates, std::string*) {
    return std::unique_ptr<engine::Plugin>(
        new NodeUnschedulable(gates.Enabled("TaintTolerationComparisonOperators")));
  }

  const char* Name() const override { return "NodeUnschedulable"; }
  unsigned ExtensionPoints() const override { return kFilterPoint; }

  // Columns of node objects only: nothing to undo.
  bool OnUnbind(const Pod&, NodeIndex, const Snapshot&) override { return true; }
  bool FilterReadsPods() const override { return false; }
  bool OnNodeAdd(NodeIndex node, const Snapshot& s) override {
    unschedulable_.Push(s.node(node).unschedulable ? 1 : 0);
    return true;
  }
  bool OnNodeUpdate(NodeIndex node, const Node&, const Snapshot& s) override {
    unschedulable_.Set(node, s.node(node).unschedulable ? 1 : 0);
    return true;
  }
  void Prepare(const Snapshot& s) override {
    unschedulable_.host.assign(s.num_nodes(), 0);
    for (NodeIndex i = 0; i < s.num_nodes(); ++i) unschedulable_.host[i] = s.node(i).unschedulable ? 1 : 0;
    unschedulable_.Upload();
  }

  void StartPod(const Pod& pod, const Snapshot&) override {
    const Taint taint{"node.kubernetes.io/unschedulable", "", "NoSchedule"};
    params_.tolerates = false;
    for (const Toleration& t : pod.tolerations) {
      if (plugins::HostToleratesTaint(t, taint, comparison_operators_)) params_.tolerates = true;
    }
  }

  void Filter(int32_t n, VerdictCode* codes) override {
    ForEachNode(n, codes, UnschedulableFilterFn{NodeUnschedulableView{unschedulable_.ptr()}, params_});
  }

  bool FilterNodes(const NodeIndex* nodes, int32_t count, VerdictCode* codes) override {
    ForListedNodes(nodes, count, codes, UnschedulableFilterFn{NodeUnschedulableView{unschedulable_.ptr()}, params_});
    return true;
  }
  bool NodeLocal() const override { return true; }  // the flag never changes while scheduling

  PluginStatus Verdict(VerdictCode) const override {
    return PluginStatus::Make(Code::kUnschedulableAndUnresolvable, "node(s) were unschedulable");
  }

 private:
  explicit NodeUnschedulable(bool comparison_operators) : comparison_operators_(comparison_operators) {}

  bool comparison_operators_;
  Column<uint8_t> unschedulable_;
  NodeUnschedulableParams params_{false};
};

KPLACE_REGISTER_ENGINE_PLUGIN(NodeUnschedulable, NodeUnschedulable);

}  // namespace
}  // namespace kplace::KPLACE_BACKEND_NS
