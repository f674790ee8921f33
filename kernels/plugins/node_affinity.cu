// NodeAffinity on the engine: label columns cached per referenced key, the pod's
// selectors compiled to a flat requirement program over interned ids, Filter and Score
// as per-node functors.
#include <algorithm>
#include <iterator>
#include <set>
#include <string>
#include <unordered_map>

#include "kernels/backend.cuh"
#include "kplace/plugins/node_affinity.h"
#include "kplace/plugins/node_affinity_common.h"

namespace kplace::KPLACE_BACKEND_NS {
namespace {

using engine::NodeIndex;
using engine::Snapshot;
using engine::VerdictCode;
using plugins::NaNodeView;
using plugins::NaOp;
using plugins::NaProgram;
using plugins::NaRequirement;
using plugins::NaTerm;

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

/** Label columns of the keys pods have referenced so far, plus node names. Node labels
 *  never change while scheduling, so a key's column is built once. */
class LabelSlots {
 public:
  void Build(const Snapshot& s) {
    n_ = s.num_nodes();
    slots_.clear();
    ids_.host.clear();
    ints_.host.clear();
    ok_.host.clear();
    ids_.Upload();
    ints_.Upload();
    ok_.Upload();
    names_.host = s.node_name_ids();
    names_.Upload();
    empty_name_id_ = s.strings().Find("");
  }

  /** The slot of label `key`, or -1 when no node has it. */
  int32_t SlotOf(const Snapshot& s, const std::string& key) {
    const std::vector<int32_t>* column = s.LabelColumn(key);
    if (column == nullptr) return -1;
    int32_t key_id = s.strings().Find(key);
    auto it = slots_.find(key_id);
    if (it != slots_.end()) return it->second;
    int32_t slot = static_cast<int32_t>(slots_.size());
    slots_.emplace(key_id, slot);
    size_t off = static_cast<size_t>(slot) * n_;
    ids_.host.insert(ids_.host.end(), column->begin(), column->end());
    ints_.host.resize(off + n_, 0);
    ok_.host.resize(off + n_, 0);
    // Gt/Lt compare integers on the device: parse each node's value once here.
    for (NodeIndex i = 0; i < n_; ++i) {
      int32_t id = (*column)[i];
      int64_t value = 0;
      if (id >= 0 && plugins::node_affinity::ParseGoInt64(s.strings().Name(id), &value)) {
        ints_.host[off + i] = value;
        ok_.host[off + i] = 1;
      }
    }
    Append(&ids_, off);
    Append(&ints_, off);
    Append(&ok_, off);
    return slot;
  }

  /** Node i joined: the slots (laid out with n nodes each) are dropped, to be laid out
   *  again as pods ask for keys; its name goes at the end. No backend work here. */
  void AddNode(const Snapshot& s, NodeIndex i) {
    n_ = s.num_nodes();
    slots_.clear();
    ids_.host.clear();
    ints_.host.clear();
    ok_.host.clear();
    names_.Push(s.node_name_ids()[i]);
  }

  /** Node i's values in every slot, from the snapshot's label columns. */
  void UpdateNode(const Snapshot& s, NodeIndex i) {
    if (names_.host[i] != s.node_name_ids()[i]) names_.Set(i, s.node_name_ids()[i]);  // it left or came back
    for (const auto& [key_id, slot] : slots_) {
      const std::vector<int32_t>* column = s.LabelColumn(s.strings().Name(key_id));
      const int32_t id = column ? (*column)[i] : engine::kNoId;
      int64_t value = 0;
      const bool ok = id >= 0 && plugins::node_affinity::ParseGoInt64(s.strings().Name(id), &value);
      const size_t at = static_cast<size_t>(slot) * n_ + i;
      ids_.Set(at, id);
      ints_.Set(at, ok ? value : 0);
      ok_.Set(at, ok ? 1 : 0);
    }
  }

  NaNodeView View() const {
    return NaNodeView{n_, ids_.ptr(), ints_.ptr(), ok_.ptr(), names_.ptr(), empty_name_id_};
  }

 private:
  template <typename T>
  static void Append(Column<T>* c, size_t off) {
    c->dev.resize(c->host.size());
    thrust::copy(c->host.begin() + off, c->host.end(), c->dev.begin() + off);
  }

  int32_t n_ = 0;
  int32_t empty_name_id_ = engine::kNoId;
  std::unordered_map<int32_t, int32_t> slots_;  // key id -> slot
  Column<int32_t> ids_;
  Column<int64_t> ints_;
  Column<uint8_t> ok_;
  Column<int32_t> names_;
};

/** A program under construction on the host, uploaded once complete. */
class ProgramBuffers {
 public:
  void Clear() {
    reqs_.clear();
    values_.clear();
    terms_.clear();
  }

  /** Appends a parsable, non-empty term. */
  void AddTerm(const Snapshot& s, LabelSlots* slots, const NodeSelectorTerm& t, int64_t weight) {
    NaTerm term{};
    term.weight = weight;
    term.label_begin = static_cast<int32_t>(reqs_.size());
    for (const NodeSelectorRequirement& r : t.match_expressions) reqs_.push_back(LabelReq(s, slots, r));
    term.label_count = static_cast<int32_t>(t.match_expressions.size());
    term.field_begin = static_cast<int32_t>(reqs_.size());
    for (const NodeSelectorRequirement& r : t.match_fields) reqs_.push_back(FieldReq(s, r));
    term.field_count = static_cast<int32_t>(t.match_fields.size());
    terms_.push_back(term);
  }

  /** spec.nodeSelector: every key present with exactly that value. */
  void AddEquals(const Snapshot& s, LabelSlots* slots, const std::string& key, const std::string& value) {
    NaRequirement r{};
    r.slot = slots->SlotOf(s, key);
    if (r.slot < 0) {
      r.op = NaOp::kFalse;
    } else {
      r.op = NaOp::kIn;
      r.value_begin = AddValue(s, value);
      r.value_count = 1;
    }
    reqs_.push_back(r);
  }

  int32_t num_reqs() const { return static_cast<int32_t>(reqs_.size()); }
  int32_t num_terms() const { return static_cast<int32_t>(terms_.size()); }

  /** Uploads and returns the program with its pointers set (spans filled by the caller). */
  NaProgram Upload(NaProgram p) {
    kplace::KPLACE_BACKEND_NS::Upload(reqs_, &reqs_dev_);
    kplace::KPLACE_BACKEND_NS::Upload(values_, &values_dev_);
    kplace::KPLACE_BACKEND_NS::Upload(terms_, &terms_dev_);
    p.reqs = Ptr(reqs_dev_);
    p.values = Ptr(values_dev_);
    p.terms = Ptr(terms_dev_);
    return p;
  }

 private:
  int32_t AddValue(const Snapshot& s, const std::string& value) {
    int32_t id = s.strings().Find(value);
    values_.push_back(id == engine::kNoId ? plugins::kNaNoValue : id);
    return static_cast<int32_t>(values_.size()) - 1;
  }

  NaRequirement LabelReq(const Snapshot& s, LabelSlots* slots, const NodeSelectorRequirement& in) {
    NaRequirement r{};
    r.slot = slots->SlotOf(s, in.key);
    const bool absent_everywhere = r.slot < 0;
    if (in.op == "In" || in.op == "NotIn") {
      if (absent_everywhere) {
        r.op = in.op == "In" ? NaOp::kFalse : NaOp::kTrue;
      } else {
        r.op = in.op == "In" ? NaOp::kIn : NaOp::kNotIn;
        r.value_begin = static_cast<int32_t>(values_.size());
        for (const std::string& v : in.values) AddValue(s, v);
        r.value_count = static_cast<int32_t>(in.values.size());
      }
    } else if (in.op == "Exists") {
      r.op = absent_everywhere ? NaOp::kFalse : NaOp::kExists;
    } else if (in.op == "DoesNotExist") {
      r.op = absent_everywhere ? NaOp::kTrue : NaOp::kDoesNotExist;
    } else {  // Gt / Lt; the term parsed, so there is one integer value
      plugins::node_affinity::ParseGoInt64(in.values[0], &r.bound);
      r.op = absent_everywhere ? NaOp::kFalse : in.op == "Gt" ? NaOp::kGt : NaOp::kLt;
    }
    if (r.slot < 0) r.slot = 0;  // constants read no column
    return r;
  }

  NaRequirement FieldReq(const Snapshot& s, const NodeSelectorRequirement& in) {
    NaRequirement r{};
    const bool in_op = in.op == "In";
    if (in.key == "metadata.name") {
      r.op = in_op ? NaOp::kNameIn : NaOp::kNameNotIn;
      r.value_begin = AddValue(s, in.values[0]);
      r.value_count = 1;
    } else {
      // Any other field reads as "" on a named node.
      bool equal = in.values[0].empty();
      r.op = (in_op ? equal : !equal) ? NaOp::kTrue : NaOp::kFalse;
    }
    return r;
  }

  std::vector<NaRequirement> reqs_;
  std::vector<int32_t> values_;
  std::vector<NaTerm> terms_;
  vector<NaRequirement> reqs_dev_;
  vector<int32_t> values_dev_;
  vector<NaTerm> terms_dev_;
};

class NodeAffinity final : public engine::Plugin {
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

  // Columns of node objects only: nothing to undo.
  bool OnUnbind(const Pod&, NodeIndex, const Snapshot&) override { return true; }
  bool FilterReadsPods() const override { return false; }
  bool OnNodeUpdate(NodeIndex node, const Node&, const Snapshot& s) override {
    slots_.UpdateNode(s, node);
    return true;
  }
  // Slots are laid out node-major per key: they are laid out again, lazily, as pods ask.
  bool OnNodeAdd(NodeIndex node, const Snapshot& s) override {
    slots_.AddNode(s, node);
    return true;
  }
  void Prepare(const Snapshot& s) override { slots_.Build(s); }

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

  // Adds the terms of `selector` that can match: non-empty and parsable (lazy parsing).
  void AddSelectorTerms(const Snapshot& s, const NodeSelector& selector) {
    for (size_t i = 0; i < selector.terms.size(); ++i) {
      const NodeSelectorTerm& t = selector.terms[i];
      if (plugins::node_affinity::IsEmptyTerm(t) || !plugins::node_affinity::NodeSelectorTermErrors(t, "").empty()) continue;
      filter_buffers_.AddTerm(s, &slots_, t, 0);
    }
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
    if (p.has_added) AddSelectorTerms(s, *args_.added_affinity->required);
    p.added_count = filter_buffers_.num_terms() - p.added_begin;
    p.has_required = required != nullptr;
    p.required_begin = filter_buffers_.num_terms();
    if (required != nullptr) AddSelectorTerms(s, *required);
    p.required_count = filter_buffers_.num_terms() - p.required_begin;
    filter_ = filter_buffers_.Upload(p);
  }

  NodeAffinityArgs args_;
  LabelSlots slots_;
  ProgramBuffers filter_buffers_, score_buffers_;
  NaProgram filter_{}, score_{};
};

KPLACE_REGISTER_ENGINE_PLUGIN(NodeAffinity, NodeAffinity);

}  // namespace
}  // namespace kplace::KPLACE_BACKEND_NS
