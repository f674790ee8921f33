// NodeResourcesBalancedAllocation on the engine: NodeResourcesFit's resource columns, the
// pod's raw requests compiled in PreScore, Score as a per-node functor.
#include "kernels/backend.cuh"
#include "kernels/plugins/resource_columns.cuh"
#include "kplace/model/requests.h"
#include "kplace/plugins/node_resources_balanced_allocation.h"

namespace kplace::KPLACE_BACKEND_NS {
namespace {

using engine::NodeIndex;
using engine::Snapshot;
using plugins::BalancedParams;
using plugins::FitNodeView;
using plugins::FitResourceKind;

struct BalancedScoreFn {
  FitNodeView v;
  BalancedParams p;
  KPLACE_HOST_DEVICE int64_t operator()(int32_t i) const { return plugins::BalancedScoreNode(v, p, i); }
};

// Cpu and memory, the default resources, carry only the pod's two requests: Thrust copies a
// functor several times per call, and BalancedParams is ~1.5 KB.
struct BalancedCpuMemoryFn {
  FitNodeView v;
  plugins::BalancedCpuMemory p;
  KPLACE_HOST_DEVICE int64_t operator()(int32_t i) const { return plugins::BalancedScoreCpuMemory(v, p, i); }
};

class NodeResourcesBalancedAllocation final : public ResourceColumnsPlugin {
 public:
  static std::unique_ptr<engine::Plugin> Create(const PluginArgs& args, const FeatureGates&, std::string* error) {
    if (args.balanced_allocation.resources.size() > static_cast<size_t>(plugins::kMaxScoringResources)) {
      *error = "NodeResourcesBalancedAllocation: at most 8 resources are supported";
      return nullptr;
    }
    return std::unique_ptr<engine::Plugin>(new NodeResourcesBalancedAllocation(args.balanced_allocation));
  }

  const char* Name() const override { return "NodeResourcesBalancedAllocation"; }
  unsigned ExtensionPoints() const override { return kPreScorePoint | kScorePoint; }

  void Prepare(const Snapshot& s) override {
    columns_.KeepsOwnBalance();
    columns_.Build(s);
  }

  PluginStatus PreScore(const Pod& pod, const Snapshot&, const std::vector<NodeIndex>&) override {
    const ResourceList raw = PodRequests(pod, nullptr, columns_.pod_level());
    Resource p = Resource::From(raw, /*keep_pods=*/false);
    params_ = BalancedParams{};
    plugins::FitScoreParams& f = params_.fit;
    f.use_non_zero = false;  // raw requests for the pod and for the node
    f.num_resources = static_cast<int32_t>(args_.resources.size());
    bool any = false;
    for (int32_t k = 0; k < f.num_resources; ++k) {
      const std::string& name = args_.resources[k].name;
      plugins::FitScoreResource& r = f.resources[k];
      r.weight = 1;
      r.pod_request = p.Get(name);
      r.scalar_slot = -1;
      // Skip looks at the request as upstream reads it: any name, cpu in millis.
      auto q = raw.find(name);
      if (q != raw.end()) any |= (name == "cpu" ? q->second.MilliValue() : q->second.Value()) != 0;
      if (name == "cpu") {
        r.kind = FitResourceKind::kCpu;
      } else if (name == "memory") {
        r.kind = FitResourceKind::kMemory;
      } else if (name == "ephemeral-storage") {
        r.kind = FitResourceKind::kEphemeral;
      } else if (name != "pods") {
        r.kind = FitResourceKind::kScalar;
        r.scalar_slot = columns_.FindSlot(name);
      } else {
        r.kind = FitResourceKind::kNone;
      }
    }
    // Best-effort pods (nothing requested of the configured resources) are not scored.
    if (!any) return PluginStatus::Skip();
    return PluginStatus::Success();
  }

  void Score(const NodeIndex* nodes, int32_t count, int64_t* scores) override {
    if (plugins::BalancedScoresCpuMemory(params_)) {
      const plugins::FitNodeView v = columns_.View();
      ForListedNodesAhead(nodes, count, scores, BalancedCpuMemoryFn{v, plugins::BalancedCpuMemoryOf(params_)},
                          [v](NodeIndex i) {
                            KPLACE_PREFETCH(v.rows + i);
                            KPLACE_PREFETCH(v.own_balance + i);
                          });
    } else {
      ForListedNodes(nodes, count, scores, BalancedScoreFn{columns_.View(), params_});
    }
  }

  // A node's score reads its own resource columns; a bind adds to the bound node's.
  bool NodeLocal() const override { return true; }

 private:
  explicit NodeResourcesBalancedAllocation(NodeResourcesBalancedAllocationArgs args) : args_(std::move(args)) {}

  NodeResourcesBalancedAllocationArgs args_;
  BalancedParams params_{};
};

KPLACE_REGISTER_ENGINE_PLUGIN(NodeResourcesBalancedAllocation, NodeResourcesBalancedAllocation);

}  // namespace
}  // namespace kplace::KPLACE_BACKEND_NS
