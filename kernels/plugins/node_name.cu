// NodeName on the engine: the snapshot's interned node-name ids against the id of the
// pod's spec.nodeName.
#include "kernels/backend.cuh"
#include "kplace/plugins/node_name.h"

namespace kplace::KPLACE_BACKEND_NS {
namespace {

using engine::NodeIndex;
using engine::Snapshot;
using engine::VerdictCode;
using plugins::NodeNameParams;
using plugins::NodeNameView;

struct NodeNameFilterFn {
  NodeNameView v;
  NodeNameParams p;
  KPLACE_HOST_DEVICE VerdictCode operator()(int32_t i) const { return plugins::NodeNameFilterNode(v, p, i); }
};

class NodeName final : public engine::Plugin {
 public:
  static std::unique_ptr<engine::Plugin> Create(const PluginArgs&, const FeatureGates&, std::string*) {
    return std::unique_ptr<engine::Plugin>(new NodeName());
  }

  const char* Name() const override { return "NodeName"; }
  unsigned ExtensionPoints() const override { return kFilterPoint; }

  // Columns of node objects only: nothing to undo.
  bool OnUnbind(const Pod&, NodeIndex, const Snapshot&) override { return true; }
  bool FilterReadsPods() const override { return false; }
  bool OnNodeUpdate(NodeIndex node, const Node&, const Snapshot& s) override {  // a node that leaves or comes back
    name_id_.Set(node, s.node_name_ids()[node]);
    return true;
  }
  bool OnNodeAdd(NodeIndex node, const Snapshot& s) override {
    name_id_.Push(s.node_name_ids()[node]);
    return true;
  }
  void Prepare(const Snapshot& s) override {
    name_id_.host = s.node_name_ids();
    name_id_.Upload();
  }

  void StartPod(const Pod& pod, const Snapshot& s) override {
    params_.any = pod.node_name.empty();
    // The snapshot interns every node name, so a miss means no node has that name.
    params_.want_id = params_.any ? engine::kNoId : s.strings().Find(pod.node_name);
  }

  void Filter(int32_t n, VerdictCode* codes) override {
    ForEachNode(n, codes, NodeNameFilterFn{NodeNameView{name_id_.ptr()}, params_});
  }

  bool FilterNodes(const engine::NodeIndex* nodes, int32_t count, VerdictCode* codes) override {
    ForListedNodes(nodes, count, codes, NodeNameFilterFn{NodeNameView{name_id_.ptr()}, params_});
    return true;
  }
  bool NodeLocal() const override { return true; }  // node names never change

  PluginStatus Verdict(VerdictCode) const override {
    return PluginStatus::Make(Code::kUnschedulableAndUnresolvable, "node(s) didn't match the requested node name");
  }

 private:
  Column<int32_t> name_id_;
  NodeNameParams params_{true, engine::kNoId};
};

KPLACE_REGISTER_ENGINE_PLUGIN(NodeName, NodeName);

}  // namespace
}  // namespace kplace::KPLACE_BACKEND_NS
