// DynamicResources on the engine: PreFilter on the host (the claims, their classes, where
// kplace refuses: kplace/plugins/dynamic_resources_common.h), each allocated claim's node
// selector compiled into NodeAffinity's program over the shared label columns, Filter as a
// per-node functor. Score is 0: a pod whose claims are all allocated scores 0 everywhere,
// and a pod with a claim to allocate never reaches Score.
#include <string>
#include <vector>

#include "kernels/backend.cuh"
#include "kernels/plugins/node_selector_program.cuh"
#include "kplace/plugins/dynamic_resources.h"
#include "kplace/plugins/dynamic_resources_common.h"

namespace kplace::KPLACE_BACKEND_NS {
namespace {

using engine::NodeIndex;
using engine::Snapshot;
using engine::VerdictCode;
using plugins::DraParams;
using plugins::DraSelector;

struct DraFilterFn {
  NaNodeView v;
  DraParams p;
  KPLACE_HOST_DEVICE VerdictCode operator()(int32_t i) const { return plugins::DynamicResourcesFilterNode(v, p, i); }
};

class DynamicResources final : public NodeSelectorPlugin {
 public:
  static std::unique_ptr<engine::Plugin> Create(const PluginArgs&, const FeatureGates& gates, std::string*) {
    return std::unique_ptr<engine::Plugin>(new DynamicResources(gates));
  }

  const char* Name() const override { return plugins::dra::kName; }
  unsigned ExtensionPoints() const override { return kPreFilterPoint | kFilterPoint | kScorePoint | kNormalizeScorePoint; }


  PluginStatus PreFilter(const Pod& pod, const Snapshot& s, std::vector<NodeIndex>*, bool*) override {
    plugins::dra::PreFilterPlan plan = plugins::dra::PreFilter(pod, s.objects(), gates_, &index_);
    params_ = DraParams{};
    if (!plan.status.IsSuccess()) return plan.status;
    buffers_.Clear();
    selectors_.clear();
    for (const NodeSelector* selector : plan.available_on) {
      if (!selector) continue;
      DraSelector d{buffers_.num_terms(), 0};
      buffers_.AddSelectorTerms(s, &slots_, *selector);
      d.term_count = buffers_.num_terms() - d.term_begin;
      selectors_.push_back(d);
    }
    params_.program = buffers_.Upload(NaProgram{});
    Upload(selectors_, &selectors_dev_);
    params_.selectors = Ptr(selectors_dev_);
    params_.num_selectors = static_cast<int32_t>(selectors_.size());
    params_.allocate = plan.to_allocate != nullptr;
    if (params_.allocate) refusal_ = plugins::dra::AllocationRefusal(*plan.to_allocate);
    return plan.status;
  }

  void Filter(int32_t n, VerdictCode* codes) override { ForEachNode(n, codes, DraFilterFn{slots_.View(), params_}); }
  bool FilterNodes(const NodeIndex* nodes, int32_t count, VerdictCode* codes) override {
    ForListedNodes(nodes, count, codes, DraFilterFn{slots_.View(), params_});
    return true;
  }
  // A pod's claims are read at PreFilter; node labels and names are what Filter reads.
  // (Binding a pod with claims changes those claims, which starts every run again.)
  bool NodeLocal() const override { return true; }
  bool SkipHoldsForRun(const Pod& pod) const override { return pod.resource_claims.empty(); }

  PluginStatus Verdict(VerdictCode code) const override {
    if (code == plugins::kDraAllocate) return refusal_;
    return PluginStatus::Make(Code::kUnschedulableAndUnresolvable, plugins::dra::kNotAvailable);
  }

  void Score(const NodeIndex*, int32_t count, int64_t* scores) override {
    WithPolicy(count, [&](auto p) { thrust::fill(p, scores, scores + count, int64_t{0}); });
  }
  // DefaultNormalizeScore(100, false) keeps scores that are all 0.
  void NormalizeScore(int32_t, int64_t*) override {}
  bool ConstantScore(int64_t* normalized) const override {
    *normalized = 0;
    return true;
  }

 private:
  explicit DynamicResources(const FeatureGates& gates) : gates_(gates) {}

  FeatureGates gates_;
  plugins::dra::ResourceIndex index_;
  ProgramBuffers buffers_;
  std::vector<DraSelector> selectors_;
  vector<DraSelector> selectors_dev_;
  DraParams params_{};
  PluginStatus refusal_;
};

KPLACE_REGISTER_ENGINE_PLUGIN(DynamicResources, DynamicResources);

}  // namespace
}  // namespace kplace::KPLACE_BACKEND_NS
