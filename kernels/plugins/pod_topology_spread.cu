// PodTopologySpread on the engine. Counting is per topology domain: for every distinct
// (namespace, selector, topology key, node-inclusion inputs, required keys) the plugin
// keeps a table of matching pods per domain, kept exact by OnBind in O(1) per table. A
// pod with the same constraints as an earlier one reuses the tables, so PreFilter/PreScore
// cost grows with domains and constraints, not with pods x nodes. Tables of one
// (namespace, selector) share its matching pods per node (SelectorCounts), counted once
// and kept by OnBind: a new table (a pod with a new node placement) adds up the nodes
// that hold matching pods, never the pods, and its node placement is the pod's required
// node affinity compiled to label-id comparisons (node_selector_program.cuh), no label
// string read per node. Filter and Score gather a node's domain count through a dense
// domain-id column.
#include <algorithm>
#include <climits>
#include <cmath>
#include <deque>
#include <memory>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include <thrust/transform_reduce.h>

#include "kernels/backend.cuh"
#include "kernels/plugins/node_selector_program.cuh"
#include "kplace/plugins/pod_topology_spread.h"
#include "kplace/plugins/pod_topology_spread_common.h"

namespace kplace::KPLACE_BACKEND_NS {
namespace {

using engine::NodeIndex;
using engine::Snapshot;
using engine::VerdictCode;
using plugins::SpreadFilterConstraint;
using plugins::SpreadFilterParams;
using plugins::SpreadScoreConstraint;
using plugins::SpreadScoreParams;
using spread::PodSelector;

constexpr char kMissingLabelReason[] = "node(s) didn't match pod topology spread constraints (missing required label)";
constexpr char kSkewReason[] = "node(s) didn't match pod topology spread constraints";
constexpr size_t kMaxDomainTables = 256;
constexpr size_t kMaxSelectorCounts = 64;  // more while domain tables hold them

struct SpreadFilterFn {
  SpreadFilterParams p;
  KPLACE_HOST_DEVICE VerdictCode operator()(int32_t n) const { return plugins::SpreadFilterNode(p, n); }
};

struct SpreadScoreFn {
  SpreadScoreParams p;
  KPLACE_HOST_DEVICE int64_t operator()(int32_t n) const { return plugins::SpreadScoreNode(p, n); }
};

struct SpreadIgnoredFn {
  SpreadScoreParams p;
  KPLACE_HOST_DEVICE uint8_t operator()(int32_t n) const { return plugins::SpreadIgnoredNode(p, n) ? 1 : 0; }
};

// Raw score of scored position k, or +inf for an ignored node (min over the others).
struct SpreadMinKeyFn {
  const int64_t* scores;
  const uint8_t* ignored;
  KPLACE_HOST_DEVICE int64_t operator()(int32_t k) const { return ignored[k] ? INT64_MAX : scores[k]; }
};

struct SpreadNormalizeFn {
  const int64_t* scores;
  const uint8_t* ignored;
  int64_t max_raw, min_raw;
  KPLACE_HOST_DEVICE int64_t operator()(int32_t k) const {
    return plugins::SpreadNormalize(scores[k], ignored[k] != 0, max_raw, min_raw);
  }
};

/** One constraint after §2: selector resolved, gates and defaults applied. */
struct Constraint {
  int64_t max_skew = 1;
  std::string topology_key;
  PodSelector selector;
  int32_t min_domains = 1;
  bool affinity_honored = true;
  bool taints_honored = false;
};

/** Dense domain ids of one topology key: -1 where a node lacks the key. Nodes missing
 *  the key fall into `empty_domain` (the value "") when a table asks for it. */
struct DomainColumn {
  Column<int32_t> dom;
  int32_t num_domains = 0;
  int32_t empty_domain = 0;
};

/** Matching pods per node for one (namespace, selector): counted once from the pods of the
 *  namespace, then kept by OnBind/OnUnbind. `nodes` lists every node that ever held one, so
 *  that a table built over it visits those nodes only. Soft kubernetes.io/hostname
 *  constraints (§7) read `counts` on the backend (uploaded on first such use). */
struct SelectorCounts {
  std::string ns;
  PodSelector selector;
  bool count_pods = true;
  Column<int64_t> counts;        // per node; `dev` only once on_device
  std::vector<NodeIndex> nodes;  // each node once, in the order it first held a matching pod
  std::vector<uint8_t> listed;   // per node: in `nodes`
  bool on_device = false;
  bool matched = false;  // OnBind/OnUnbind: whether the pod at hand matches
  uint64_t last_used = 0;

  void Add(NodeIndex n, int64_t delta) {
    if (!listed[n]) {
      listed[n] = 1;
      nodes.push_back(n);
    }
    if (on_device) {
      counts.Set(n, counts.host[n] + delta);
    } else {
      counts.host[n] += delta;
    }
  }

  const int64_t* DeviceCounts() {
    if (!on_device) {
      counts.Upload();
      on_device = true;
    }
    return counts.ptr();
  }
};

/** The nodes a table counts and how many per domain. They follow from the key, the
 *  inclusion and the required keys, not from the selector: tables of one node placement
 *  share them, so a new selector there costs no pass over every node. */
struct Eligibility {
  std::vector<uint8_t> eligible;        // per node
  std::vector<int32_t> eligible_nodes;  // per domain
  uint64_t last_used = 0;
};

/** Matching pods per domain for one (namespace, selector, key, inclusion, keys) tuple. */
struct DomainTable {
  std::shared_ptr<SelectorCounts> pods;  // the (namespace, selector) it counts
  const DomainColumn* column = nullptr;
  bool missing_as_empty = false;
  std::shared_ptr<const Eligibility> eligibility;
  Column<int64_t> counts;  // per domain
  int32_t eligible_domains = 0;
  int64_t min_count = INT32_MAX;  // over eligible domains; MaxInt32 when there are none
  int32_t at_min = 0;
  uint64_t last_used = 0;

  int32_t DomainOf(NodeIndex n) const {
    int32_t d = column->dom.host[n];
    return d < 0 && missing_as_empty ? column->empty_domain : d;
  }

  void RecomputeMin() {
    eligible_domains = 0;
    min_count = INT32_MAX;
    at_min = 0;
    const std::vector<int32_t>& eligible_nodes = eligibility->eligible_nodes;
    for (size_t d = 0; d < eligible_nodes.size(); ++d) {
      if (eligible_nodes[d] == 0) continue;
      ++eligible_domains;
      int64_t c = counts.host[d];
      if (c < min_count) {
        min_count = c;
        at_min = 1;
      } else if (c == min_count) {
        ++at_min;
      }
    }
  }

  /** One more matching pod on node n. Counts only grow, so the minimum moves only when
   *  the last domain at the minimum leaves it. */
  void AddPodOn(NodeIndex n) {
    if (!eligibility->eligible[n]) return;
    int32_t d = DomainOf(n);
    int64_t before = counts.host[d];
    counts.Set(d, before + 1);
    if (before == min_count && --at_min == 0) RecomputeMin();
  }

  /** One matching pod fewer on node n: the domain may become the minimum alone. */
  void RemovePodOn(NodeIndex n) {
    if (!eligibility->eligible[n]) return;
    int32_t d = DomainOf(n);
    int64_t after = counts.host[d] - 1;
    counts.Set(d, after);
    if (after < min_count) {
      min_count = after;
      at_min = 1;
    } else if (after == min_count) {
      ++at_min;
    }
  }
};

/** The incoming pod's required node placement (§3) per node: spec.nodeSelector AND its
 *  required node affinity terms, compiled as NodeAffinity compiles them (without the
 *  profile's addedAffinity) and evaluated over the interned label columns. */
struct PlacementFn {
  plugins::NaNodeView v;
  NaProgram p;
  KPLACE_HOST_DEVICE uint8_t operator()(int32_t i) const { return plugins::NodeAffinityFilterNode(v, p, i) == 0; }
};

class PlacementMasks {
 public:
  void Build(const Snapshot& s) { slots_.Build(s); }
  void AddNode(const Snapshot& s, NodeIndex n) { slots_.AddNode(s, n); }
  void UpdateNode(const Snapshot& s, NodeIndex n) { slots_.UpdateNode(s, n); }

  void Compute(const spread::RequiredPlacement& placement, const Snapshot& s, std::vector<uint8_t>* out) {
    const int32_t n = s.num_nodes();
    buffers_.Clear();
    NaProgram p{};
    for (const auto& [key, value] : placement.node_selector()) buffers_.AddEquals(s, &slots_, key, value);
    p.selector_count = buffers_.num_reqs();
    p.has_required = placement.has_affinity();
    for (const NodeSelectorTerm& t : placement.terms()) buffers_.AddTerm(s, &slots_, t, 0);
    p.required_count = buffers_.num_terms();
    const NaProgram program = buffers_.Upload(p);
    uint8_t* mask = Scratch(&mask_, n);
    ForEachNode(n, mask, PlacementFn{slots_.View(), program});
    out->resize(n);
    Download(mask_, n, out->data());
  }

 private:
  LabelSlots slots_;
  ProgramBuffers buffers_;
  vector<uint8_t> mask_;
};

struct PodRef {
  const Pod* pod;
  NodeIndex node;
  int32_t cls = -1;  // the pod's label class (PodTopologySpread::LabelClassOf), set by AddRef
};

/** Node inclusion of the incoming pod (§3), computed on first use in one cycle. */
class PodContext {
 public:
  PodContext(const Pod& pod, const Snapshot& s, PlacementMasks* masks, bool comparison_operators)
      : pod_(pod), s_(s), masks_(masks), placement_(pod), comparison_operators_(comparison_operators) {}

  const spread::RequiredPlacement& placement() const { return placement_; }
  const std::string& tolerations_key() {
    if (!tolerations_key_) tolerations_key_ = spread::TolerationsKey(pod_.tolerations);
    return *tolerations_key_;
  }
  const std::vector<uint8_t>& PlacementMask() {
    if (placement_mask_.empty() && s_.num_nodes() > 0) masks_->Compute(placement_, s_, &placement_mask_);
    return placement_mask_;
  }
  const std::vector<uint8_t>& TaintMask() {
    if (taint_mask_.empty() && s_.num_nodes() > 0) {
      taint_mask_.resize(s_.num_nodes());
      for (NodeIndex n = 0; n < s_.num_nodes(); ++n) {
        taint_mask_[n] = spread::ToleratesHardTaints(pod_.tolerations, s_.node(n), comparison_operators_);
      }
    }
    return taint_mask_;
  }

 private:
  const Pod& pod_;
  const Snapshot& s_;
  PlacementMasks* masks_;
  spread::RequiredPlacement placement_;
  bool comparison_operators_;
  std::optional<std::string> tolerations_key_;
  std::vector<uint8_t> placement_mask_, taint_mask_;
};

class PodTopologySpread final : public engine::Plugin {
 public:
  static std::unique_ptr<engine::Plugin> Create(const PluginArgs& args, const FeatureGates& gates,
                                                std::string* error) {
    const PodTopologySpreadArgs& a = args.pod_topology_spread;
    bool system = a.defaulting_type.empty() || a.defaulting_type == "System";
    if (!system && a.defaulting_type != "List") {
      *error = "PodTopologySpread: defaultingType must be System or List, got \"" + a.defaulting_type + "\"";
      return nullptr;
    }
    if (system && !a.default_constraints.empty()) {
      *error = "PodTopologySpread: defaultConstraints must be empty when defaultingType is System";
      return nullptr;
    }
    return std::unique_ptr<engine::Plugin>(new PodTopologySpread(a, gates, system));
  }

  const char* Name() const override { return "PodTopologySpread"; }
  unsigned ExtensionPoints() const override {
    return kPreFilterPoint | kFilterPoint | kPreScorePoint | kScorePoint | kNormalizeScorePoint;
  }

  void Prepare(const Snapshot& s) override {
    n_ = s.num_nodes();
    columns_.clear();
    ForgetTables();
    selector_counts_.clear();
    masks_.Build(s);
    pods_by_ns_.clear();
    ref_at_.clear();
    owned_pods_.clear();
    label_class_.clear();
    class_labels_.clear();
    for (NodeIndex n = 0; n < n_; ++n) {
      for (const Pod* p : s.pods_on(n)) {
        if (!spread::IsTerminating(*p)) AddRef(PodRef{p, n});
      }
    }
    filter_ = SpreadFilterParams{0, nullptr, 0};
    score_ = SpreadScoreParams{0, 0, nullptr};
  }

  PluginStatus PreFilter(const Pod& pod, const Snapshot& s, std::vector<NodeIndex>*, bool*) override {
    ++epoch_;
    filter_ = SpreadFilterParams{0, nullptr, 0};
    std::vector<Constraint> constraints;
    std::string error;
    if (!Resolve(pod, s, "DoNotSchedule", &constraints, &error)) {
      // Upstream's Filter then finds no cycle state.
      filter_.all_nodes_code = plugins::kSpreadError;
      return PluginStatus::Error(error);
    }
    if (constraints.empty()) return PluginStatus::Skip();
    std::vector<std::string> keys = KeysOf(constraints);
    PodContext ctx(pod, s, &masks_, comparison_operators_);
    std::vector<SpreadFilterConstraint> host;
    for (const Constraint& c : constraints) {
      DomainTable* t = GetTable(s, ctx, pod.meta.namespace_, c, keys, /*missing_as_empty=*/false);
      int64_t min_match = t->eligible_domains < c.min_domains ? 0 : t->min_count;
      host.push_back(SpreadFilterConstraint{t->column->dom.ptr(), t->counts.ptr(), c.max_skew,
                                            c.selector.Matches(pod.meta.labels) ? 1 : 0, min_match});
    }
    Upload(host, &filter_dev_);
    filter_.num_constraints = static_cast<int32_t>(host.size());
    filter_.constraints = Ptr(filter_dev_);
    return PluginStatus::Success();
  }

  void Filter(int32_t n, VerdictCode* codes) override { ForEachNode(n, codes, SpreadFilterFn{filter_}); }
  bool FilterNodes(const NodeIndex* nodes, int32_t count, VerdictCode* codes) override {
    ForListedNodes(nodes, count, codes, SpreadFilterFn{filter_});
    return true;
  }

  // Constraints come from the pod and from objects no bind changes (defaulting's selector).
  bool SkipHoldsForRun(const Pod&) const override { return true; }

  PluginStatus Verdict(VerdictCode code) const override {
    if (code == plugins::kSpreadMissingLabel) {
      return PluginStatus::Make(Code::kUnschedulableAndUnresolvable, kMissingLabelReason);
    }
    if (code == plugins::kSpreadSkew) return PluginStatus::Make(Code::kUnschedulable, kSkewReason);
    return PluginStatus::Error("reading \"PreFilterPodTopologySpread\" from cycleState: not found");
  }

  PluginStatus PreScore(const Pod& pod, const Snapshot& s, const std::vector<NodeIndex>& feasible) override {
    ++epoch_;
    score_ = SpreadScoreParams{0, 0, nullptr};
    if (s.num_live_nodes() == 0) return PluginStatus::Skip();
    std::vector<Constraint> constraints;
    std::string error;
    if (!Resolve(pod, s, "ScheduleAnyway", &constraints, &error)) {
      return PluginStatus::Error("calculating preScoreState: obtaining pod's soft topology spread constraints: " +
                                 error);
    }
    if (constraints.empty()) return PluginStatus::Skip();
    // Only System defaulting tolerates nodes that miss a key (§6).
    const bool require_all = !pod.topology_spread_constraints.empty() || !system_defaulted_;
    std::vector<std::string> keys = KeysOf(constraints);
    std::vector<const DomainColumn*> cols;
    for (const Constraint& c : constraints) cols.push_back(GetColumn(s, c.topology_key));

    // Candidates that lack a key are ignored; the rest define the domains that count.
    std::vector<NodeIndex> kept;
    kept.reserve(feasible.size());
    for (NodeIndex f : feasible) {
      bool ignored = false;
      if (require_all) {
        for (const DomainColumn* col : cols) ignored |= col->dom.host[f] < 0;
      }
      if (!ignored) kept.push_back(f);
    }
    PodContext ctx(pod, s, &masks_, comparison_operators_);
    std::vector<SpreadScoreConstraint> host;
    static const std::vector<std::string> kNoKeys;
    for (size_t i = 0; i < constraints.size(); ++i) {
      const Constraint& c = constraints[i];
      SpreadScoreConstraint out{cols[i]->dom.ptr(), nullptr, 0, 0.0, static_cast<double>(c.max_skew - 1)};
      int64_t size;
      if (c.topology_key == spread::kHostnameLabel) {
        out.counts = GetSelectorCounts(pod.meta.namespace_, c.selector)->DeviceCounts();
        out.per_node = 1;
        size = static_cast<int64_t>(kept.size());
      } else {
        DomainTable* t = GetTable(s, ctx, pod.meta.namespace_, c, require_all ? keys : kNoKeys, !require_all);
        out.counts = t->counts.ptr();
        size = DistinctDomains(*t, kept);
      }
      out.weight = std::log(static_cast<double>(size + 2));
      host.push_back(out);
    }
    Upload(host, &score_dev_);
    score_.num_constraints = static_cast<int32_t>(host.size());
    score_.require_all = require_all ? 1 : 0;
    score_.constraints = Ptr(score_dev_);
    return PluginStatus::Success();
  }

  void Score(const NodeIndex* nodes, int32_t count, int64_t* scores) override {
    Resize(&ignored_, static_cast<size_t>(count > 0 ? count : 0));
    ForListedNodes(nodes, count, scores, SpreadScoreFn{score_});
    ForListedNodes(nodes, count, Ptr(ignored_), SpreadIgnoredFn{score_});
  }

  void NormalizeScore(int32_t count, int64_t* scores) override {
    if (count <= 0) return;
    const uint8_t* ignored = Ptr(ignored_);
    int64_t max_raw = MaxScore(scores, count);  // ignored nodes score 0, so they never raise it
    const int64_t min_raw = ReduceNodes(count, SpreadMinKeyFn{scores, ignored}, int64_t{INT64_MAX}, thrust::minimum<int64_t>());
    ForEachNode(count, scores, SpreadNormalizeFn{scores, ignored, max_raw, min_raw});
  }

  // Domains and node inclusion read node labels and taints: the tables built from them go
  // (the next pod builds what it needs from the pods, which stay counted per node).
  bool OnNodeUpdate(NodeIndex node, const Node& old, const Snapshot& s) override {
    masks_.UpdateNode(s, node);
    const Node& now = s.node(node);
    if (old.meta.labels == now.meta.labels && old.taints == now.taints) return true;
    columns_.clear();
    ForgetTables();
    return true;
  }

  // Tables and counts are per node: they go, and are built again on first use.
  bool OnNodeAdd(NodeIndex node, const Snapshot& s) override {
    n_ = s.num_nodes();
    masks_.AddNode(s, node);
    columns_.clear();
    ForgetTables();
    selector_counts_.clear();
    return true;
  }

  bool OnUnbind(const Pod& pod, NodeIndex node, const Snapshot&) override {
    if (spread::IsTerminating(pod)) return true;  // never counted
    if (!RemoveRef(pod, node)) return false;
    if (MatchCounts(pod, node, -1)) {
      for (const auto& [pods, t] : TableList()) {
        if (pods->matched) t->RemovePodOn(node);
      }
    }
    return true;
  }

  void OnBind(const Pod& pod, NodeIndex node, const Snapshot& s) override {
    if (spread::IsTerminating(pod)) return;
    // Keep a pointer that outlives the call: the snapshot's copy (what the framework is
    // given), or our own.
    const auto& on_node = s.pods_on(node);
    const Pod* stored = nullptr;
    for (size_t k = on_node.size(); k-- > 0 && !stored;) {
      if (on_node[k] == &pod) stored = &pod;
    }
    if (!stored) {
      owned_pods_.push_back(pod);
      stored = &owned_pods_.back();
    }
    AddRef(PodRef{stored, node});
    if (MatchCounts(pod, node, +1)) {
      for (const auto& [pods, t] : TableList()) {
        if (pods->matched) t->AddPodOn(node);
      }
    }
  }

 private:
  PodTopologySpread(const PodTopologySpreadArgs& args, const FeatureGates& gates, bool system)
      : system_defaulted_(system),
        node_inclusion_(gates.Enabled("NodeInclusionPolicyInPodTopologySpread")),
        match_label_keys_(gates.Enabled("MatchLabelKeysInPodTopologySpread")),
        comparison_operators_(gates.Enabled("TaintTolerationComparisonOperators")),
        legacy_empty_selector_(gates.Enabled(spread::kLegacyEmptySelectorGate)) {
    if (system) {
      TopologySpreadConstraint host, zone;
      host.max_skew = 3;
      host.topology_key = spread::kHostnameLabel;
      host.when_unsatisfiable = "ScheduleAnyway";
      zone.max_skew = 5;
      zone.topology_key = spread::kZoneLabel;
      zone.when_unsatisfiable = "ScheduleAnyway";
      defaults_ = {host, zone};
    } else {
      defaults_ = args.default_constraints;
    }
  }

  // §2: the pod's constraints of one mode, or the defaults with the default selector.
  bool Resolve(const Pod& pod, const Snapshot& s, const std::string& mode, std::vector<Constraint>* out,
               std::string* error) const {
    out->clear();
    const bool from_pod = !pod.topology_spread_constraints.empty();
    const auto& source = from_pod ? pod.topology_spread_constraints : defaults_;
    for (const TopologySpreadConstraint& t : source) {
      if (t.when_unsatisfiable != mode) continue;
      Constraint c;
      c.max_skew = t.max_skew;
      c.topology_key = t.topology_key;
      if (!spread::ParsePodSelector(t.label_selector, &c.selector, error)) return false;
      if (match_label_keys_ && !t.match_label_keys.empty()) {
        Labels set;
        for (const std::string& k : t.match_label_keys) {
          auto it = pod.meta.labels.find(k);
          if (it != pod.meta.labels.end()) set[k] = it->second;
        }
        if (!set.empty()) c.selector = spread::MergeSetIntoSelector(set, c.selector);
      }
      c.min_domains = t.min_domains ? *t.min_domains : 1;
      if (node_inclusion_) {
        c.affinity_honored = !t.node_affinity_policy || *t.node_affinity_policy == "Honor";
        c.taints_honored = t.node_taints_policy && *t.node_taints_policy == "Honor";
      }
      out->push_back(std::move(c));
    }
    if (from_pod || out->empty()) return true;
    PodSelector selector = spread::DefaultSelector(pod, s.objects());
    if (selector.Empty()) {
      out->clear();
      return true;
    }
    for (Constraint& c : *out) c.selector = selector;
    return true;
  }

  static std::vector<std::string> KeysOf(const std::vector<Constraint>& constraints) {
    std::vector<std::string> keys;
    for (const Constraint& c : constraints) keys.push_back(c.topology_key);
    std::sort(keys.begin(), keys.end());
    keys.erase(std::unique(keys.begin(), keys.end()), keys.end());
    return keys;
  }

  const DomainColumn* GetColumn(const Snapshot& s, const std::string& key) {
    auto it = columns_.find(key);
    if (it != columns_.end()) return it->second.get();
    auto col = std::make_unique<DomainColumn>();
    col->dom.host.assign(n_, -1);
    const std::vector<int32_t>* values = s.LabelColumn(key);
    std::unordered_map<int32_t, int32_t> dense;
    if (values) {
      for (NodeIndex n = 0; n < n_; ++n) {
        int32_t v = (*values)[n];
        if (v == engine::kNoId) continue;
        auto [d, inserted] = dense.emplace(v, static_cast<int32_t>(dense.size()));
        col->dom.host[n] = d->second;
      }
    }
    col->num_domains = static_cast<int32_t>(dense.size());
    // A node without the key reads as "" where a table asks for it: the domain of the
    // value "" when some node carries it, else one more domain.
    int32_t empty_id = s.strings().Find("");
    auto e = empty_id == engine::kNoId ? dense.end() : dense.find(empty_id);
    col->empty_domain = e != dense.end() ? e->second : col->num_domains++;
    col->dom.Upload();
    return (columns_[key] = std::move(col)).get();
  }

  DomainTable* GetTable(const Snapshot& s, PodContext& ctx, const std::string& ns, const Constraint& c,
                        const std::vector<std::string>& required_keys, bool missing_as_empty) {
    // A pod with no nodeSelector and no required node affinity is placed anywhere: no mask.
    const spread::RequiredPlacement& placement = ctx.placement();
    const bool placed = c.affinity_honored && (!placement.node_selector().empty() || placement.has_affinity());
    std::string key;
    auto field = [&key](const std::string& v) {
      key += std::to_string(v.size());
      key += ':';
      key += v;
    };
    field(c.topology_key);
    field(placed ? placement.key() : std::string("-"));
    field(c.taints_honored ? ctx.tolerations_key() : std::string("-"));
    key += std::to_string(required_keys.size());
    for (const std::string& k : required_keys) field(k);
    key += missing_as_empty ? 'E' : 'M';
    const std::string eligibility_key = key;
    field(ns);
    field(c.selector.Key());
    if (auto* held = Touch(tables_, key)) return held->get();

    auto t = std::make_unique<DomainTable>();
    t->pods = GetSelectorCounts(ns, c.selector);
    t->column = GetColumn(s, c.topology_key);
    t->missing_as_empty = missing_as_empty;
    t->last_used = epoch_;
    t->eligibility = GetEligibility(s, ctx, eligibility_key, *t, c, placed, required_keys);
    t->counts.host.assign(t->column->num_domains, 0);
    const std::vector<uint8_t>& eligible = t->eligibility->eligible;
    const SelectorCounts& pods = *t->pods;
    for (NodeIndex n : pods.nodes) {
      if (eligible[n]) t->counts.host[t->DomainOf(n)] += pods.counts.host[n];
    }
    t->RecomputeMin();
    t->counts.Upload();
    Evict(tables_, kMaxDomainTables, [](const std::unique_ptr<DomainTable>&) { return true; });
    table_list_valid_ = false;
    return (tables_[key] = std::move(t)).get();
  }

  // The nodes table `t` counts: one pass over every node when its key is new.
  std::shared_ptr<const Eligibility> GetEligibility(const Snapshot& s, PodContext& ctx, const std::string& key,
                                                    const DomainTable& t, const Constraint& c, bool placed,
                                                    const std::vector<std::string>& required_keys) {
    if (auto* held = Touch(eligibilities_, key)) return *held;
    auto e = std::make_shared<Eligibility>();
    e->last_used = epoch_;
    std::vector<const DomainColumn*> required;
    for (const std::string& k : required_keys) required.push_back(GetColumn(s, k));
    e->eligible.assign(n_, 0);
    e->eligible_nodes.assign(t.column->num_domains, 0);
    for (NodeIndex n = 0; n < n_; ++n) {
      bool ok = t.DomainOf(n) >= 0;
      for (const DomainColumn* col : required) ok = ok && col->dom.host[n] >= 0;
      if (ok && placed) ok = ctx.PlacementMask()[n];
      if (ok && c.taints_honored) ok = ctx.TaintMask()[n];
      if (!ok) continue;
      e->eligible[n] = 1;
      ++e->eligible_nodes[t.DomainOf(n)];
    }
    // One a table holds stays: the table reads it on every bind.
    Evict(eligibilities_, kMaxDomainTables,
          [](const std::shared_ptr<Eligibility>& held) { return held.use_count() == 1; });
    return eligibilities_[key] = std::move(e);
  }

  // Matching pods per node of (ns, selector): one pass over the namespace's pods when new.
  const std::shared_ptr<SelectorCounts>& GetSelectorCounts(const std::string& ns, const PodSelector& selector) {
    std::string key = std::to_string(ns.size()) + ":" + ns + selector.Key();
    if (auto* held = Touch(selector_counts_, key)) return *held;
    auto t = std::make_shared<SelectorCounts>();
    t->ns = ns;
    t->selector = selector;
    t->count_pods = !selector.nothing && !(legacy_empty_selector_ && selector.Empty());
    t->last_used = epoch_;
    t->counts.host.assign(n_, 0);
    t->listed.assign(n_, 0);
    auto pods = pods_by_ns_.find(ns);
    if (t->count_pods && pods != pods_by_ns_.end()) {
      // The selector is matched once per label class: a namespace's pods share few.
      class_match_.assign(class_labels_.size(), -1);
      for (const PodRef& r : pods->second) {
        int8_t& match = class_match_[r.cls];
        if (match < 0) match = selector.Matches(class_labels_[r.cls]) ? 1 : 0;
        if (match) t->Add(r.node, 1);
      }
    }
    // Counts that a domain table holds stay: its tables are kept by them.
    Evict(selector_counts_, kMaxSelectorCounts,
          [](const std::shared_ptr<SelectorCounts>& c) { return c.use_count() == 1; });
    return selector_counts_[key] = std::move(t);
  }

  // A pod bound (+1) or taken off (-1) node `node`: the counts of every (namespace,
  // selector) it matches follow, each marked `matched` for the tables over it. True when
  // any matched.
  bool MatchCounts(const Pod& pod, NodeIndex node, int64_t delta) {
    bool any = false;
    for (auto& [key, c] : selector_counts_) {
      c->matched = c->count_pods && c->ns == pod.meta.namespace_ && c->selector.Matches(pod.meta.labels);
      if (c->matched) c->Add(node, delta);
      any |= c->matched;
    }
    return any;
  }

  void ForgetTables() {
    tables_.clear();
    eligibilities_.clear();
    table_list_valid_ = false;
  }

  // The tables with the counts each reads, in one array: a bind visits every table, and
  // walking the map's nodes to each table's counts misses the cache per table.
  const std::vector<std::pair<const SelectorCounts*, DomainTable*>>& TableList() {
    if (!table_list_valid_) {
      table_list_.clear();
      for (auto& [key, t] : tables_) table_list_.emplace_back(t->pods.get(), t.get());
      table_list_valid_ = true;
    }
    return table_list_;
  }

  // The cached entry of `key`, marked used by the current pod; null when there is none.
  template <typename Map>
  typename Map::mapped_type* Touch(Map& map, const std::string& key) {
    auto it = map.find(key);
    if (it == map.end()) return nullptr;
    it->second->last_used = epoch_;
    return &it->second;
  }

  // Drops the least recently used entry that `evictable` allows once the cache is full,
  // sparing entries the current pod already holds (used in this phase or the one before).
  template <typename Map, typename Pred>
  void Evict(Map& map, size_t cap, Pred evictable) {
    if (map.size() < cap) return;
    auto victim = map.end();
    for (auto it = map.begin(); it != map.end(); ++it) {
      if (it->second->last_used + 1 >= epoch_ || !evictable(it->second)) continue;
      if (victim == map.end() || it->second->last_used < victim->second->last_used) victim = it;
    }
    if (victim != map.end()) map.erase(victim);
  }

  // |V_i| of §6: distinct domains among the kept candidates.
  int64_t DistinctDomains(const DomainTable& t, const std::vector<NodeIndex>& kept) {
    seen_.assign(t.column->num_domains, 0);
    int64_t size = 0;
    for (NodeIndex n : kept) {
      int32_t d = t.DomainOf(n);
      if (d < 0 || seen_[d]) continue;
      seen_[d] = 1;
      ++size;
    }
    return size;
  }

  bool system_defaulted_;
  bool node_inclusion_, match_label_keys_, comparison_operators_, legacy_empty_selector_;
  std::vector<TopologySpreadConstraint> defaults_;
  int32_t n_ = 0;
  uint64_t epoch_ = 1;
  std::unordered_map<std::string, std::unique_ptr<DomainColumn>> columns_;
  std::unordered_map<std::string, std::unique_ptr<DomainTable>> tables_;
  std::unordered_map<std::string, std::shared_ptr<Eligibility>> eligibilities_;  // by key, shared by tables
  std::vector<std::pair<const SelectorCounts*, DomainTable*>> table_list_;      // TableList()
  bool table_list_valid_ = false;
  std::unordered_map<std::string, std::shared_ptr<SelectorCounts>> selector_counts_;
  PlacementMasks masks_;
  void AddRef(PodRef r) {
    r.cls = LabelClassOf(r.pod->meta.labels);
    std::vector<PodRef>& refs = pods_by_ns_[r.pod->meta.namespace_];
    ref_at_[r.pod] = refs.size();
    refs.push_back(r);
    if (class_labels_.size() > 2 * ref_at_.size() + kSpareLabelClasses) RenumberLabelClasses();
  }

  // The dense id of a label set: pods with equal labels share it, so a new selector is
  // matched per distinct label set of a namespace, not per pod.
  int32_t LabelClassOf(const Labels& labels) {
    std::string key;
    for (const auto& [k, v] : labels) {
      key += std::to_string(k.size());
      key += ':';
      key += k;
      key += std::to_string(v.size());
      key += ':';
      key += v;
    }
    auto [it, inserted] = label_class_.emplace(std::move(key), static_cast<int32_t>(class_labels_.size()));
    if (inserted) class_labels_.push_back(labels);
    return it->second;
  }

  // Label classes of pods no longer counted stay until there are many: then the counted
  // pods' classes are made again.
  void RenumberLabelClasses() {
    label_class_.clear();
    class_labels_.clear();
    for (auto& [ns, refs] : pods_by_ns_) {
      for (PodRef& r : refs) r.cls = LabelClassOf(r.pod->meta.labels);
    }
  }

  // Takes a counted pod out of its namespace's list (order there does not matter: tables
  // only count). The snapshot's copy is found by address, an own copy by name.
  bool RemoveRef(const Pod& pod, NodeIndex node) {
    auto pods = pods_by_ns_.find(pod.meta.namespace_);
    if (pods == pods_by_ns_.end()) return false;
    std::vector<PodRef>& refs = pods->second;
    size_t at = refs.size();
    auto it = ref_at_.find(&pod);
    if (it != ref_at_.end()) {
      at = it->second;
    } else {
      for (size_t k = refs.size(); k-- > 0 && at == refs.size();) {
        if (refs[k].node == node && refs[k].pod->meta.name == pod.meta.name) at = k;
      }
    }
    if (at >= refs.size()) return false;
    ref_at_.erase(refs[at].pod);
    if (at + 1 != refs.size()) {
      refs[at] = refs.back();
      ref_at_[refs[at].pod] = at;
    }
    refs.pop_back();
    return true;
  }

  std::unordered_map<std::string, std::vector<PodRef>> pods_by_ns_;
  std::unordered_map<const Pod*, size_t> ref_at_;  // where each counted pod sits in pods_by_ns_
  std::unordered_map<std::string, int32_t> label_class_;  // encoded labels -> class
  std::vector<Labels> class_labels_;                      // by class
  std::vector<int8_t> class_match_;                       // GetSelectorCounts: per class, -1 unknown
  static constexpr size_t kSpareLabelClasses = 1024;
  std::deque<Pod> owned_pods_;
  std::vector<uint8_t> seen_;
  SpreadFilterParams filter_{0, nullptr, 0};
  vector<SpreadFilterConstraint> filter_dev_;
  SpreadScoreParams score_{0, 0, nullptr};
  vector<SpreadScoreConstraint> score_dev_;
  vector<uint8_t> ignored_;
};

KPLACE_REGISTER_ENGINE_PLUGIN(PodTopologySpread, PodTopologySpread);

}  // namespace
}  // namespace kplace::KPLACE_BACKEND_NS
