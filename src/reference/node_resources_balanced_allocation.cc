// Reference NodeResourcesBalancedAllocation: noderesources.md §9 with v1.37's
// change-in-balance score, 50 + (50 + B(with pod) - B(without pod)) / 2.
#include <cmath>

#include "kplace/model/requests.h"
#include "kplace/reference/plugin.h"

namespace kplace::reference {
namespace {

// §9.2 over fractions in configuration order.
int64_t Balance(const std::vector<double>& f) {
  double std_dev = 0;
  if (f.size() == 2) {
    std_dev = std::fabs((f[0] - f[1]) / 2);
  } else if (f.size() > 2) {
    double total = 0;
    for (double x : f) total += x;
    double mean = total / static_cast<double>(f.size());
    double sum = 0;
    for (double x : f) sum = sum + (x - mean) * (x - mean);
    std_dev = std::sqrt(sum / static_cast<double>(f.size()));
  }
  return static_cast<int64_t>((1 - std_dev) * static_cast<double>(kMaxNodeScore));
}

double Fraction(int64_t q, int64_t a) {
  double f = static_cast<double>(q) / static_cast<double>(a);
  return f > 1 ? 1 : f;
}

class BalancedAllocation final : public Plugin {
 public:
  BalancedAllocation(NodeResourcesBalancedAllocationArgs args, FeatureGates gates)
      : args_(std::move(args)), gates_(std::move(gates)) {}

  const char* Name() const override { return "NodeResourcesBalancedAllocation"; }
  unsigned ExtensionPoints() const override { return kPreScorePoint | kScorePoint; }

  PluginStatus PreScore(CycleState&, const Pod& pod, const std::vector<const NodeInfo*>&,
                        const ClusterState&) override {
    ResourceList requests = PodRequests(pod, nullptr, PodLevel());
    for (const ResourceSpec& spec : args_.resources) {
      auto it = requests.find(spec.name);
      if (it == requests.end()) continue;
      int64_t v = spec.name == "cpu" ? it->second.MilliValue() : it->second.Value();
      if (v != 0) return PluginStatus::Success();
    }
    return PluginStatus::Skip();
  }

  PluginStatus Score(CycleState&, const Pod& pod, const NodeInfo& node, const ClusterState&,
                     int64_t* score) override {
    Resource p = Resource::From(PodRequests(pod, nullptr, PodLevel()), false);
    NodeResources r = ComputeNodeResources(*node.node, node.pods, PodLevel());
    std::vector<double> with_pod, without_pod;
    for (const ResourceSpec& spec : args_.resources) {
      int64_t want = p.Get(spec.name);
      int64_t a = 0, used = 0;
      if (want == 0 && IsScalarResourceName(spec.name)) continue;
      if (spec.name == "cpu") {
        a = r.allocatable.milli_cpu;
        used = r.requested.milli_cpu;
      } else if (spec.name == "memory") {
        a = r.allocatable.memory;
        used = r.requested.memory;
      } else if (spec.name == "ephemeral-storage") {
        a = r.allocatable.ephemeral_storage;
        used = r.requested.ephemeral_storage;
      } else if (r.allocatable.scalars.count(spec.name)) {
        a = r.allocatable.scalars.at(spec.name);
        used = r.requested.Get(spec.name);
      }
      if (a == 0) continue;
      with_pod.push_back(Fraction(used + want, a));
      without_pod.push_back(Fraction(used, a));
    }
    *score = kMaxNodeScore / 2 + (kMaxNodeScore / 2 + Balance(with_pod) - Balance(without_pod)) / 2;
    return PluginStatus::Success();
  }

 private:
  bool PodLevel() const { return gates_.Enabled("PodLevelResources"); }

  NodeResourcesBalancedAllocationArgs args_;
  FeatureGates gates_;
};

}  // namespace

KPLACE_REGISTER_REFERENCE_PLUGIN(NodeResourcesBalancedAllocation,
                                 [](const PluginArgs& args, const FeatureGates& gates)
                                     -> absl::StatusOr<std::unique_ptr<Plugin>> {
                                   return std::make_unique<BalancedAllocation>(args.balanced_allocation, gates);
                                 });

}  // namespace kplace::reference
