// NodeResourcesFit on the engine: resource columns per node, the pod compiled once in
// PreFilter/PreScore, Filter and Score as per-node functors.
#include <algorithm>
#include <map>

#include "kernels/backend.cuh"
#include "kernels/plugins/resource_columns.cuh"
#include "kplace/model/requests.h"
#include "kplace/plugins/node_resources_fit.h"

namespace kplace::KPLACE_BACKEND_NS {
namespace {

using engine::NodeIndex;
using engine::Snapshot;
using engine::VerdictCode;
using plugins::FitFilterParams;
using plugins::FitNodeView;
using plugins::FitResourceKind;
using plugins::FitScoreParams;

struct FitFilterFn {
  FitNodeView v;
  FitFilterParams p;
  KPLACE_HOST_DEVICE VerdictCode operator()(int32_t i) const { return plugins::FitFilterNode(v, p, i); }
};

// The common cases carry only what they read: Thrust copies a functor several times per
// call, and the full parameter blocks are hundreds of bytes (the score's over a kilobyte).
struct FitFilterBasicFn {
  FitNodeView v;
  plugins::FitBasicRequests p;
  KPLACE_HOST_DEVICE VerdictCode operator()(int32_t i) const { return plugins::FitFilterBasic(v, p, i); }
};

struct FitLeastCpuMemoryFn {
  FitNodeView v;
  plugins::FitLeastCpuMemory p;
  KPLACE_HOST_DEVICE int64_t operator()(int32_t i) const { return plugins::FitLeastAllocatedCpuMemory(v, p, i); }
};

struct FitScoreFn {
  FitNodeView v;
  FitScoreParams p;
  KPLACE_HOST_DEVICE int64_t operator()(int32_t i) const { return plugins::FitScoreNode(v, p, i); }
};

class NodeResourcesFit final : public ResourceColumnsPlugin {
 public:
  static std::unique_ptr<engine::Plugin> Create(const PluginArgs& args, const FeatureGates& gates,
                                                std::string* error) {
    const NodeResourcesFitArgs& a = args.node_resources_fit;
    if (a.resources.size() > static_cast<size_t>(plugins::kMaxScoringResources)) {
      *error = "NodeResourcesFit: at most 8 scoring resources are supported";
      return nullptr;
    }
    return std::unique_ptr<engine::Plugin>(new NodeResourcesFit(a, gates));
  }

  const char* Name() const override { return "NodeResourcesFit"; }
  unsigned ExtensionPoints() const override {
    return kPreFilterPoint | kFilterPoint | kPreScorePoint | kScorePoint;
  }

  void Prepare(const Snapshot& s) override { columns_.Build(s); }

  PluginStatus PreFilter(const Pod& pod, const Snapshot&, std::vector<NodeIndex>*, bool*) override {
    if (!gates_.Enabled("SidecarContainers")) {
      for (const Container& c : pod.init_containers) {
        if (c.restart_policy && *c.restart_policy == "Always") {
          return PluginStatus::Make(Code::kUnschedulableAndUnresolvable,
                                    "Pod has a restartable init container and the SidecarContainers feature is disabled");
        }
      }
    }
    Resource f = Resource::From(PodRequests(pod, nullptr, columns_.pod_level()), /*keep_pods=*/false);
    filter_ = FitFilterParams{};
    filter_.cpu_milli = f.milli_cpu;
    filter_.mem_bytes = f.memory;
    filter_.ephemeral_bytes = f.ephemeral_storage;
    filter_.has_scalars = !f.scalars.empty();
    scalar_names_.clear();
    for (const auto& [name, value] : f.scalars) {
      if (filter_.num_scalars == plugins::kMaxFitScalars) {
        return PluginStatus::Error("NodeResourcesFit: a pod may request at most 16 scalar resources");
      }
      int32_t s = filter_.num_scalars++;
      filter_.scalar_slot[s] = columns_.FindSlot(name);
      filter_.scalar_value[s] = value;
      filter_.scalar_checked[s] = value != 0 && !Ignored(name);
      scalar_names_.push_back(name);
    }
    return PluginStatus::Success();
  }

  void Filter(int32_t n, VerdictCode* codes) override {
    if (filter_.num_scalars == 0) {
      ForEachNode(n, codes, FitFilterBasicFn{columns_.View(), Basic()});
    } else {
      ForEachNode(n, codes, FitFilterFn{columns_.View(), filter_});
    }
  }
  bool FilterNodes(const NodeIndex* nodes, int32_t count, VerdictCode* codes) override {
    if (filter_.num_scalars == 0) {
      ForListedNodesAhead(nodes, count, codes, FitFilterBasicFn{columns_.View(), Basic()}, columns_.RowAhead());
    } else {
      ForListedNodes(nodes, count, codes, FitFilterFn{columns_.View(), filter_});
    }
    return true;
  }
  bool FilterWithout(NodeIndex node, const std::vector<const Pod*>& removed, VerdictCode, const Snapshot& s,
                     VerdictCode* code) override {
    if (!columns_.RowWithout(node, removed, s, &row_)) return false;
    *code = plugins::FitFilterNode(row_.View(), filter_, 0);
    return true;
  }
  // A node's fit and score read its own resource columns; a bind adds to the bound node's.
  bool NodeLocal() const override { return true; }

  PluginStatus Verdict(VerdictCode code) const override {
    PluginStatus s{code & plugins::kFitUnresolvable ? Code::kUnschedulableAndUnresolvable : Code::kUnschedulable, {}};
    if (code & plugins::kFitTooManyPods) s.reasons.push_back("Too many pods");
    if (code & plugins::kFitCpu) s.reasons.push_back("Insufficient cpu");
    if (code & plugins::kFitMemory) s.reasons.push_back("Insufficient memory");
    if (code & plugins::kFitEphemeral) s.reasons.push_back("Insufficient ephemeral-storage");
    for (size_t k = 0; k < scalar_names_.size(); ++k) {
      if (code & (1u << (plugins::kFitScalarShift + k))) s.reasons.push_back("Insufficient " + scalar_names_[k]);
    }
    return s;
  }

  PluginStatus PreScore(const Pod& pod, const Snapshot&, const std::vector<NodeIndex>&) override {
    Resource p = Resource::From(PodRequests(pod, &NonZeroDefaults(), columns_.pod_level()), false);
    score_.use_non_zero = true;
    score_.num_resources = static_cast<int32_t>(args_.resources.size());
    for (int32_t k = 0; k < score_.num_resources; ++k) {
      const ResourceSpec& spec = args_.resources[k];
      plugins::FitScoreResource& r = score_.resources[k];
      r.weight = spec.weight;
      r.pod_request = p.Get(spec.name);
      r.scalar_slot = -1;
      if (spec.name == "cpu") {
        r.kind = FitResourceKind::kCpu;
      } else if (spec.name == "memory") {
        r.kind = FitResourceKind::kMemory;
      } else if (spec.name == "ephemeral-storage") {
        r.kind = FitResourceKind::kEphemeral;
      } else if (spec.name != "pods") {
        r.kind = FitResourceKind::kScalar;
        r.scalar_slot = columns_.FindSlot(spec.name);
      } else {
        r.kind = FitResourceKind::kNone;
      }
    }
    return PluginStatus::Success();
  }

  void Score(const NodeIndex* nodes, int32_t count, int64_t* scores) override {
    if (plugins::FitScoresLeastCpuMemory(score_)) {
      ForListedNodesAhead(nodes, count, scores, FitLeastCpuMemoryFn{columns_.View(), plugins::FitLeastCpuMemoryOf(score_)},
                          columns_.RowAhead());
    } else {
      ForListedNodes(nodes, count, scores, FitScoreFn{columns_.View(), score_});
    }
  }


 private:
  NodeResourcesFit(const NodeResourcesFitArgs& args, const FeatureGates& gates) : args_(args), gates_(gates) {
    score_ = FitScoreParams{};
    if (args.strategy == "MostAllocated") {
      score_.strategy = plugins::FitStrategy::kMostAllocated;
    } else if (args.strategy == "RequestedToCapacityRatio") {
      score_.strategy = plugins::FitStrategy::kRequestedToCapacityRatio;
      score_.num_points = static_cast<int32_t>(std::min<size_t>(args.shape.size(), plugins::kMaxShapePoints));
      for (int32_t j = 0; j < score_.num_points; ++j) {
        score_.shape_utilization[j] = args.shape[j].utilization;
        score_.shape_score[j] = static_cast<int64_t>(args.shape[j].score) * (kMaxNodeScore / 10);
      }
    } else {
      score_.strategy = plugins::FitStrategy::kLeastAllocated;
    }
  }

  // FitFilterNode of a pod without scalar requests is FitFilterBasic of these.
  plugins::FitBasicRequests Basic() const {
    return plugins::FitBasicRequests{filter_.cpu_milli, filter_.mem_bytes, filter_.ephemeral_bytes};
  }

  // ignoredResources / ignoredResourceGroups apply to extended resources only.
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

  NodeResourcesFitArgs args_;
  FeatureGates gates_;
  FitFilterParams filter_{};
  ResourceColumns::NodeRow row_{};  // FilterWithout's node
  FitScoreParams score_{};
  std::vector<std::string> scalar_names_;
};

KPLACE_REGISTER_ENGINE_PLUGIN(NodeResourcesFit, NodeResourcesFit);

}  // namespace
}  // namespace kplace::KPLACE_BACKEND_NS
