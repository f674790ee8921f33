// Reference NodeResourcesFit, straight from noderesources.md §3-§8.
#include <cmath>

#include "kplace/common/int_math.h"
#include "kplace/model/requests.h"
#include "kplace/reference/plugin.h"

namespace kplace::reference {
namespace {

constexpr char kName[] = "NodeResourcesFit";

struct FitState {
  Resource request;     // §3.1
  Resource score_request;  // §3.2, with non-zero defaults
};

class NodeResourcesFit final : public Plugin {
 public:
  NodeResourcesFit(NodeResourcesFitArgs args, FeatureGates gates) : args_(std::move(args)), gates_(std::move(gates)) {}

  const char* Name() const override { return kName; }
  unsigned ExtensionPoints() const override { return kPreFilterPoint | kFilterPoint | kPreScorePoint | kScorePoint; }

  PluginStatus PreFilter(CycleState& state, const Pod& pod, const ClusterState&, NodeNameSet*) override {
    if (!gates_.Enabled("SidecarContainers")) {
      for (const Container& c : pod.init_containers) {
        if (c.restart_policy && *c.restart_policy == "Always") {
          return PluginStatus::Make(Code::kUnschedulableAndUnresolvable,
                                    "Pod has a restartable init container and the SidecarContainers feature is disabled");
        }
      }
    }
    State(state, pod);
    return PluginStatus::Success();
  }

  PluginStatus Filter(CycleState& state, const Pod& pod, const NodeInfo& node, const ClusterState&) override {
    const Resource& f = State(state, pod).request;
    NodeResources r = ComputeNodeResources(*node.node, node.pods, PodLevel());
    std::vector<std::string> reasons;
    bool unresolvable = false;
    for (const InsufficientResource& x : InsufficientResources(f, r, [&](const std::string& n) { return Ignored(n); })) {
      reasons.push_back(InsufficientReason(x));
      unresolvable |= x.resource != "pods" && x.requested > x.capacity;
    }
    if (reasons.empty()) return PluginStatus::Success();
    return PluginStatus{unresolvable ? Code::kUnschedulableAndUnresolvable : Code::kUnschedulable, reasons};
  }

  PluginStatus PreScore(CycleState& state, const Pod& pod, const std::vector<const NodeInfo*>&,
                        const ClusterState&) override {
    State(state, pod);
    return PluginStatus::Success();
  }

  PluginStatus Score(CycleState& state, const Pod& pod, const NodeInfo& node, const ClusterState&,
                     int64_t* score) override {
    const Resource& p = State(state, pod).score_request;
    NodeResources r = ComputeNodeResources(*node.node, node.pods, PodLevel());
    int64_t numerator = 0, weights = 0;
    for (const ResourceSpec& spec : args_.resources) {
      int64_t want = p.Get(spec.name);
      int64_t a = 0, q = 0;
      if (want == 0 && IsScalarResourceName(spec.name)) {
        continue;
      } else if (spec.name == "cpu") {
        a = r.allocatable.milli_cpu;
        q = SaturatingAdd(r.non_zero_milli_cpu, want);
      } else if (spec.name == "memory") {
        a = r.allocatable.memory;
        q = SaturatingAdd(r.non_zero_memory, want);
      } else if (spec.name == "ephemeral-storage") {
        a = r.allocatable.ephemeral_storage;
        q = SaturatingAdd(r.requested.ephemeral_storage, want);
      } else if (r.allocatable.scalars.count(spec.name)) {
        a = r.allocatable.scalars.at(spec.name);
        q = SaturatingAdd(r.requested.Get(spec.name), want);
      }
      if (a == 0) continue;
      if (args_.strategy == "MostAllocated") {
        numerator += GoMul(std::min(q, a), kMaxNodeScore) / a * spec.weight;
        weights += spec.weight;
      } else if (args_.strategy == "RequestedToCapacityRatio") {
        int64_t utilization = q > a ? kMaxNodeScore : GoMul(q, kMaxNodeScore) / a;
        int64_t s = Shape(utilization);
        if (s > 0) {
          numerator += s * spec.weight;
          weights += spec.weight;
        }
      } else {
        numerator += (q > a ? 0 : GoMul(a - q, kMaxNodeScore) / a) * spec.weight;
        weights += spec.weight;
      }
    }
    if (weights == 0) {
      *score = 0;
    } else if (args_.strategy == "RequestedToCapacityRatio") {
      *score = static_cast<int64_t>(std::round(static_cast<double>(numerator) / static_cast<double>(weights)));
    } else {
      *score = numerator / weights;
    }
    return PluginStatus::Success();
  }

 private:
  bool PodLevel() const { return gates_.Enabled("PodLevelResources"); }

  const FitState& State(CycleState& state, const Pod& pod) {
    if (FitState* s = state.Get<FitState>(kName)) return *s;
    auto s = std::make_shared<FitState>();
    s->request = Resource::From(PodRequests(pod, nullptr, PodLevel()), false);
    s->score_request = Resource::From(PodRequests(pod, &NonZeroDefaults(), PodLevel()), false);
    return *state.Put(kName, s);
  }

  bool Ignored(const std::string& name) const {
    if (!IsExtendedResourceName(name)) return false;
    for (const auto& r : args_.ignored_resources) {
      if (r == name) return true;
    }
    std::string group = name.substr(0, name.find('/'));
    for (const auto& g : args_.ignored_resource_groups) {
      if (g == group) return true;
    }
    return false;
  }

  // Broken-linear function over the shape, scores scaled to 0..100.
  int64_t Shape(int64_t u) const {
    const auto& pts = args_.shape;
    if (pts.empty()) return 0;
    if (u <= pts[0].utilization) return pts[0].score * 10;
    for (size_t j = 1; j < pts.size(); ++j) {
      if (u <= pts[j].utilization) {
        int64_t y0 = pts[j - 1].score * 10, y1 = pts[j].score * 10;
        return y0 + (y1 - y0) * (u - pts[j - 1].utilization) / (pts[j].utilization - pts[j - 1].utilization);
      }
    }
    return pts.back().score * 10;
  }

  NodeResourcesFitArgs args_;
  FeatureGates gates_;
};

}  // namespace

KPLACE_REGISTER_REFERENCE_PLUGIN(NodeResourcesFit, [](const PluginArgs& args, const FeatureGates& gates)
                                                       -> absl::StatusOr<std::unique_ptr<Plugin>> {
  return std::make_unique<NodeResourcesFit>(args.node_resources_fit, gates);
});

}  // namespace kplace::reference
