// NodeAffinity on the engine: label columns cached per referenced key, the pod's
// selectors compiled to a flat requirement program over interned ids, Filter and Score
// as per-node functors.
#include <algorithm>
#include <iterator>
#include <set>
#include <string>
#include <unordered_map>

#include "kernels/backend.cuh"
#include "kernels/plugins/node_selector_program.cuh"
#include "kplace/plugins/node_affinity.h"
#include "kplace/plugins/node_affinity_common.h"

namespace kplace::KPLACE_BACKEND_NS {
namespace {

using engine::NodeIndex;
using engine::Snapshot;
using engine::VerdictCode;

constexpr char kReasonPod[] = "node(s) didn't match Pod's node affinity/selector";
constexpr char kReasonEnforced[] = "node(s) didn't match scheduler-enforced node affinity";
constexpr char kReasonConflict[] = "pod affinity terms conflict";

struct NaFilterFn {
  NaNodeView v;
  NaProgram p;
  KPLACE_HOST_DEVICE VerdictCode operator()(int32_t i) const { return plugins::NodeAffinityFilterNode(v, p, i); }
};

struct NaScoreFn {
  NaNodeView v;
  NaProgram p;
  KPLACE_HOST_DEVICE int64_t operator()(int32_t i) const { return plugins::NodeAffinityScoreNode(v, p, i); }
};

class NodeAffinity final : public NodeSelectorPlugin {
 public:
  static std::unique_ptr<engine::Plugin> Create(const PluginArgs& args, const FeatureGates&, std::string* error) {
    const std::optional<kplace::NodeAffinity>& added = args.node_affinity.added_affinity;
    std::vector<std::string> errs;
    if (added && added->required) {
      for (size_t i = 0; i < added->required->terms.size(); ++i) {
        const NodeSelectorTerm& t = added->required->terms[i];
        if (plugins::node_affinity::IsEmptyTerm(t)) continue;
        for (std::string& e : plugins::node_affinity::NodeSelectorTermErrors(
                 t, "addedAffinity.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms[" +
                        std::to_string(i) + "]")) {
          errs.push_back(std::move(e));
        }
      }
    }
    if (added) {
      for (size_t i = 0; i < added->preferred.size(); ++i) {
        const PreferredSchedulingTerm& t = added->preferred[i];
        if (t.weight == 0 || plugins::node_affinity::IsEmptyTerm(t.preference)) continue;
        for (std::string& e : plugins::node_affinity::NodeSelectorTermErrors(
                 t.preference, "addedAffinity.preferredDuringSchedulingIgnoredDuringExecution[" + std::to_string(i) + "]")) {
          errs.push_back(std::move(e));
        }
      }
    }
    if (!errs.empty()) {
      *error = "NodeAffinity: " + plugins::node_affinity::AggregateErrors(errs);
      return nullptr;
    }
    return std::unique_ptr<engine::Plugin>(new NodeAffinity(args.node_affinity));
  }

  const char* Name() const override { return "NodeAffinity"; }
  unsigned ExtensionPoints() const override {
    return kPreFilterPoint | kFilterPoint | kPreScorePoint | kScorePoint | kNormalizeScorePoint;
  }


  PluginStatus PreFilter(const Pod& pod, const Snapshot& s, std::vector<NodeIndex>* nodes, bool* restricts) override {
    const NodeSelector* required = PodRequired(pod);
    CompileFilter(pod, required, s);
    const bool has_selector = pod.node_selector_set || !pod.node_selector.empty();
    if (required == nullptr && !HasAddedRequired() && !has_selector) return PluginStatus::Skip();
    if (required == nullptr || required->terms.empty()) return PluginStatus::Success();

    // Nodes named by matchFields metadata.name In, per term intersected, over terms united.
    std::set<std::string> all_names;
    for (const NodeSelectorTerm& t : required->terms) {
      bool constrained = false;
      std::set<std::string> names;
      for (const NodeSelectorRequirement& r : t.match_fields) {
        if (r.key != "metadata.name" || r.op != "In") continue;
        std::set<std::string> these(r.values.begin(), r.values.end());
        if (!constrained) {
          names = std::move(these);
          constrained = true;
        } else {
          std::set<std::string> both;
          std::set_intersection(names.begin(), names.end(), these.begin(), these.end(),
                                std::inserter(both, both.begin()));
          names = std::move(both);
        }
      }
      if (!constrained) return PluginStatus::Success();  // this term allows any node
      all_names.insert(names.begin(), names.end());
    }
    if (all_names.empty()) return PluginStatus::Make(Code::kUnschedulableAndUnresolvable, kReasonConflict);
    *restricts = true;
    restricted_names_.assign(all_names.begin(), all_names.end());
    nodes->clear();
    for (const std::string& name : all_names) {
      NodeIndex i = s.FindNode(name);
      if (i != engine::kNoId) nodes->push_back(i);
    }
    std::sort(nodes->begin(), nodes->end());
    return PluginStatus::Success();
  }

  // Upstream reports the names from the term, whether or not such nodes exist.
  const std::vector<std::string>* PreFilterNodeNames() const override { return &restricted_names_; }

  void Filter(int32_t n, VerdictCode* codes) override { ForEachNode(n, codes, NaFilterFn{slots_.View(), filter_}); }
  bool FilterNodes(const NodeIndex* nodes, int32_t count, VerdictCode* codes) override {
    ForListedNodes(nodes, count, codes, NaFilterFn{slots_.View(), filter_});
    return true;
  }
  // Node labels and names never change while scheduling.
  bool NodeLocal() const override { return true; }

  PluginStatus Verdict(VerdictCode code) const override {
    return PluginStatus::Make(Code::kUnschedulableAndUnresolvable,
                              code & plugins::kNodeAffinityEnforced ? kReasonEnforced : kReasonPod);
  }

  PluginStatus PreScore(const Pod& pod, const Snapshot& s, const std::vector<NodeIndex>&) override {
    const kplace::NodeAffinity* na = pod.affinity && pod.affinity->node_affinity ? &*pod.affinity->node_affinity : nullptr;
    const bool pod_preferred = na != nullptr && (na->preferred_set || !na->preferred.empty());
    if (pod_preferred) {
      std::vector<std::string> errs;
      for (size_t i = 0; i < na->preferred.size(); ++i) {
        const PreferredSchedulingTerm& t = na->preferred[i];
        if (t.weight == 0 || plugins::node_affinity::IsEmptyTerm(t.preference)) continue;
        for (std::string& e : plugins::node_affinity::NodeSelectorTermErrors(t.preference, "[" + std::to_string(i) + "]")) {
          errs.push_back(std::move(e));
        }
      }
      if (!errs.empty()) return PluginStatus::Error(plugins::node_affinity::AggregateErrors(errs));
    }
    const bool added_preferred = args_.added_affinity && !args_.added_affinity->preferred.empty();
    if (!pod_preferred && !added_preferred) return PluginStatus::Skip();

    score_buffers_.Clear();
    if (added_preferred) AddPreferred(s, args_.added_affinity->preferred);
    if (pod_preferred) AddPreferred(s, na->preferred);
    NaProgram p{};
    p.preferred_begin = 0;
    p.preferred_count = score_buffers_.num_terms();
    score_ = score_buffers_.Upload(p);
    return PluginStatus::Success();
  }

  void Score(const NodeIndex* nodes, int32_t count, int64_t* scores) override {
    ForListedNodes(nodes, count, scores, NaScoreFn{slots_.View(), score_});
  }

  void NormalizeScore(int32_t count, int64_t* scores) override { DefaultNormalize(scores, count, /*reverse=*/false); }

 private:
  explicit NodeAffinity(NodeAffinityArgs args) : args_(std::move(args)) {}

  std::vector<std::string> restricted_names_;  // the last PreFilter's restriction, by name

  bool HasAddedRequired() const { return args_.added_affinity && args_.added_affinity->required; }

  static const NodeSelector* PodRequired(const Pod& pod) {
    if (!pod.affinity || !pod.affinity->node_affinity || !pod.affinity->node_affinity->required) return nullptr;
    return &*pod.affinity->node_affinity->required;
  }

  void AddPreferred(const Snapshot& s, const std::vector<PreferredSchedulingTerm>& terms) {
    for (const PreferredSchedulingTerm& t : terms) {
      if (t.weight == 0 || plugins::node_affinity::IsEmptyTerm(t.preference)) continue;
      score_buffers_.AddTerm(s, &slots_, t.preference, t.weight);
    }
  }

  void CompileFilter(const Pod& pod, const NodeSelector* required, const Snapshot& s) {
    filter_buffers_.Clear();
    NaProgram p{};
    p.selector_begin = filter_buffers_.num_reqs();
    for (const auto& [key, value] : pod.node_selector) filter_buffers_.AddEquals(s, &slots_, key, value);
    p.selector_count = filter_buffers_.num_reqs() - p.selector_begin;
    p.has_added = HasAddedRequired();
    p.added_begin = filter_buffers_.num_terms();
    if (p.has_added) filter_buffers_.AddSelectorTerms(s, &slots_, *args_.added_affinity->required);
    p.added_count = filter_buffers_.num_terms() - p.added_begin;
    p.has_required = required != nullptr;
    p.required_begin = filter_buffers_.num_terms();
    if (required != nullptr) filter_buffers_.AddSelectorTerms(s, &slots_, *required);
    p.required_count = filter_buffers_.num_terms() - p.required_begin;
    filter_ = filter_buffers_.Upload(p);
  }

  NodeAffinityArgs args_;
  ProgramBuffers filter_buffers_, score_buffers_;
  NaProgram filter_{}, score_{};
};

KPLACE_REGISTER_ENGINE_PLUGIN(NodeAffinity, NodeAffinity);

}  // namespace
}  // namespace kplace::KPLACE_BACKEND_NS
