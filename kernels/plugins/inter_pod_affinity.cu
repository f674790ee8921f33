// InterPodAffinity on the engine, counting per topology domain (interpodaffinity.md §7).
//
// Upstream rebuilds its topology-pair maps from every existing pod for every incoming
// pod. Here the existing pods are indexed once (Prepare) and kept exact on bind (OnBind):
//  * existing terms: the distinct (selector, namespaces, namespace selector, key) terms of
//    existing pods, each with per-domain cells (required anti-affinity count, required
//    affinity count, preferred weight sum). E and score rows 3-5 evaluate each distinct
//    term against the incoming pod once.
//  * match tables: for each incoming term set seen (A's conjunction, each N term, each
//    preferred term), the matching existing pods per domain of the terms' keys. A table is
//    reduced once from label classes (existing pods grouped by namespace and labels, with
//    their pods per domain) and then updated per bound pod, so replicas of one template
//    reuse it at O(domains) per pod.
// PreFilter/PreScore reduce those into small per-domain tables; Filter and Score gather
// them through per-node domain-id columns.
#include <algorithm>
#include <deque>
#include <limits>
#include <map>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "kernels/backend.cuh"
#include "kplace/plugins/inter_pod_affinity.h"
#include "kplace/plugins/inter_pod_affinity_common.h"

namespace kplace::KPLACE_BACKEND_NS {
namespace {

using engine::NodeIndex;
using engine::Snapshot;
using engine::VerdictCode;
using plugins::IpaFilterParams;
using plugins::IpaKeyTable;
using plugins::IpaScoreParams;

struct IpaFilterFn {
  IpaFilterParams p;
  KPLACE_HOST_DEVICE VerdictCode operator()(int32_t n) const { return plugins::IpaFilterNode(p, n); }
};

struct IpaScoreFn {
  IpaScoreParams p;
  KPLACE_HOST_DEVICE int64_t operator()(int32_t n) const { return plugins::IpaScoreNode(p, n); }
};

struct IpaNormalizeFn {
  int64_t min, diff;
  KPLACE_HOST_DEVICE int64_t operator()(int64_t s) const { return plugins::IpaNormalize(s, min, diff); }
};

/** Interned labels, sorted by key id. */
using LabelIds = std::vector<std::pair<int32_t, int32_t>>;

enum class Op : uint8_t { kIn, kNotIn, kExists, kDoesNotExist };

struct Requirement {
  int32_t key;
  Op op;
  std::vector<int32_t> values;  // sorted
};

/** A compiled label selector: nothing (nil), everything (no requirements) or an AND. */
struct Selector {
  bool nothing = true;
  std::vector<Requirement> reqs;

  bool everything() const { return !nothing && reqs.empty(); }
  bool Matches(const LabelIds& labels) const {
    if (nothing) return false;
    for (const Requirement& r : reqs) {
      auto it = std::lower_bound(labels.begin(), labels.end(), std::make_pair(r.key, std::numeric_limits<int32_t>::min()));
      bool has = it != labels.end() && it->first == r.key;
      switch (r.op) {
        case Op::kIn:
          if (!has || !std::binary_search(r.values.begin(), r.values.end(), it->second)) return false;
          break;
        case Op::kNotIn:
          if (has && std::binary_search(r.values.begin(), r.values.end(), it->second)) return false;
          break;
        case Op::kExists:
          if (!has) return false;
          break;
        case Op::kDoesNotExist:
          if (has) return false;
          break;
      }
    }
    return true;
  }
  void AppendKey(std::string* out) const {
    auto put = [out](int32_t v) { out->append(reinterpret_cast<const char*>(&v), sizeof(v)); };
    put(nothing ? -1 : static_cast<int32_t>(reqs.size()));
    for (const Requirement& r : reqs) {
      put(r.key);
      put(static_cast<int32_t>(r.op));
      put(static_cast<int32_t>(r.values.size()));
      for (int32_t v : r.values) put(v);
    }
  }
};

/** A processed affinity term (§2.1) over interned ids. */
struct Term {
  Selector selector;
  std::vector<int32_t> namespaces;  // sorted
  Selector ns_selector;
  int32_t slot = -1;  // -1: no node has the topology key

  bool Matches(int32_t ns, const LabelIds& labels, const LabelIds& ns_labels) const {
    if (!std::binary_search(namespaces.begin(), namespaces.end(), ns) && !ns_selector.Matches(ns_labels)) return false;
    return selector.Matches(labels);
  }
  std::string Key() const {
    std::string out;
    selector.AppendKey(&out);
    ns_selector.AppendKey(&out);
    auto put = [&out](int32_t v) { out.append(reinterpret_cast<const char*>(&v), sizeof(v)); };
    put(slot);
    put(static_cast<int32_t>(namespaces.size()));
    for (int32_t n : namespaces) put(n);
    return out;
  }
};

/** Existing pods that share (namespace, labels), counted per node and per domain. */
struct PodClass {
  int32_t ns;
  LabelIds labels;
  std::unordered_map<NodeIndex, int64_t> nodes;
  std::vector<std::unordered_map<int32_t, int64_t>> per_slot;  // [slot]: domain -> pods
};

/** What the existing pods' copies of one distinct term contribute to one domain. */
struct Cell {
  int64_t required_anti = 0;  // pods with it as a required anti-affinity term (E)
  int64_t required_aff = 0;   // ... as a required affinity term (score row 3, x H)
  int64_t preferred = 0;      // ... as a preferred term of either sign (rows 4-5 fire)
  int64_t preferred_weight = 0;  // +w for affinity, -w for anti-affinity
};

struct ExistingTerm {
  Term term;
  std::unordered_map<int32_t, Cell> cells;  // domain -> cell
  bool in_anti_list = false, in_score_list = false;
};

/** Existing pods matching every term of an incoming term set, per domain of each of the
 *  terms' keys: A (the required affinity set), N and score rows 1-2 (one term each).
 *  Built once from the classes, then kept exact on bind. */
struct MatchTable {
  std::vector<Term> terms;  // a conjunction
  std::vector<int32_t> slots;  // distinct slots >= 0 of the terms
  std::vector<std::unordered_map<int32_t, int64_t>> counts;  // [i]: domain of slots[i] -> pods

  bool Matches(int32_t ns, const LabelIds& labels) const {
    for (const Term& t : terms) {
      if (!t.Matches(ns, labels, {})) return false;
    }
    return true;
  }
  bool empty() const {
    for (const auto& c : counts) {
      if (!c.empty()) return false;
    }
    return true;
  }
  const std::unordered_map<int32_t, int64_t>* For(int32_t slot) const {
    for (size_t i = 0; i < slots.size(); ++i) {
      if (slots[i] == slot) return &counts[i];
    }
    return nullptr;
  }
};

// Cached term sets are dropped wholesale past this many (each costs a match per bind).
constexpr size_t kMaxMatchTables = 4096;

enum class TermKind { kRequiredAffinity, kRequiredAnti, kPreferredAffinity, kPreferredAnti };

/** Per-domain host tables of one pod, one per slot it touches. */
template <typename T>
struct DomainTables {
  std::map<int32_t, std::vector<T>> by_slot;  // ordered: deterministic key lists
  std::vector<T>& For(int32_t slot, int32_t num_domains) {
    auto it = by_slot.find(slot);
    if (it == by_slot.end()) it = by_slot.emplace(slot, std::vector<T>(num_domains, T{})).first;
    return it->second;
  }
};

class InterPodAffinity final : public engine::Plugin {
 public:
  static std::unique_ptr<engine::Plugin> Create(const PluginArgs& args, const FeatureGates& gates,
                                                std::string* error) {
    const InterPodAffinityArgs& a = args.inter_pod_affinity;
    if (a.hard_pod_affinity_weight < 0 || a.hard_pod_affinity_weight > 100) {
      *error = "InterPodAffinity: hardPodAffinityWeight must be in the range 0-100";
      return nullptr;
    }
    return std::unique_ptr<engine::Plugin>(new InterPodAffinity(a, gates));
  }

  const char* Name() const override { return "InterPodAffinity"; }
  unsigned ExtensionPoints() const override {
    return kPreFilterPoint | kFilterPoint | kPreScorePoint | kScorePoint | kNormalizeScorePoint;
  }

  void Prepare(const Snapshot& s) override {
    snapshot_ = &s;
    n_ = s.num_nodes();
    strings_ = engine::Interner();
    slot_of_.clear();
    slot_domains_.clear();
    domains_host_.clear();
    classes_.clear();
    class_of_.clear();
    tables_.clear();
    table_of_.clear();
    terms_.clear();
    term_of_.clear();
    anti_terms_.clear();
    score_terms_.clear();
    namespaces_.clear();
    namespace_labels_.clear();
    for (const Namespace& ns : s.objects().namespaces) {
      int32_t id = strings_.Intern(ns.meta.name);
      LabelIds labels = InternLabels(ns.meta.labels);
      namespaces_.emplace_back(id, labels);
      namespace_labels_[id] = std::move(labels);
    }
    for (NodeIndex i = 0; i < n_; ++i) {
      for (const Pod* p : s.pods_on(i)) AddExistingPod(*p, i);
    }
    UploadDomains();
    filter_ = IpaFilterParams{};
    filter_.no_state = true;
    score_ready_ = false;
  }

  PluginStatus PreFilter(const Pod& pod, const Snapshot&, std::vector<NodeIndex>*, bool*) override {
    TrimTables();
    filter_ = IpaFilterParams{};
    filter_.no_state = true;
    plugins::IpaPodTerms parsed = plugins::ParseIpaPodTerms(pod, match_label_keys_);
    if (!parsed.error.empty()) {
      return PluginStatus::Make(Code::kUnschedulableAndUnresolvable, "parsing pod: " + parsed.error);
    }
    const int32_t ns = strings_.Intern(pod.meta.namespace_);
    const LabelIds labels = InternLabels(pod.meta.labels);
    const LabelIds& ns_labels = NamespaceLabels(ns);
    std::vector<Term> affinity, anti;
    for (const PodAffinityTerm& t : parsed.required_affinity) affinity.push_back(Resolve(Compile(t, ns)));
    for (const PodAffinityTerm& t : parsed.required_anti_affinity) anti.push_back(Resolve(Compile(t, ns)));

    // E: existing pods' required anti-affinity terms that match the pod (§3.2).
    DomainTables<int64_t> existing;
    for (int32_t id : anti_terms_) {
      const ExistingTerm& et = terms_[id];
      if (!et.term.Matches(ns, labels, ns_labels)) continue;
      std::vector<int64_t>& table = existing.For(et.term.slot, slot_domains_[et.term.slot]);
      for (const auto& [d, cell] : et.cells) table[d] += cell.required_anti;
    }
    // A: pods matching every affinity term, counted in each term's domains (§3.3).
    DomainTables<int64_t> aff_counts;
    bool aff_empty = true;
    if (!affinity.empty()) {
      const MatchTable& a = Table(affinity);
      aff_empty = a.empty();
      for (size_t i = 0; i < a.slots.size(); ++i) {
        if (a.counts[i].empty()) continue;
        std::vector<int64_t>& table = aff_counts.For(a.slots[i], slot_domains_[a.slots[i]]);
        for (const auto& [d, count] : a.counts[i]) table[d] += count;
      }
    }
    // N: pods matching each anti-affinity term (§3.3).
    DomainTables<int64_t> anti_counts;
    for (const Term& t : anti) {
      if (t.slot < 0) continue;
      const std::unordered_map<int32_t, int64_t>* counts = Table({t}).For(t.slot);
      if (!counts || counts->empty()) continue;
      std::vector<int64_t>& table = anti_counts.For(t.slot, slot_domains_[t.slot]);
      for (const auto& [d, count] : *counts) table[d] += count;
    }
    bool existing_empty = true;
    for (const auto& [slot, table] : existing.by_slot) {
      for (int64_t v : table) existing_empty = existing_empty && v == 0;
    }
    filter_.no_state = false;
    if (existing_empty && affinity.empty() && anti.empty()) {
      // Skip: the framework runs no Filter; a direct Filter call passes every node.
      filter_.num_affinity = filter_.num_anti = filter_.num_existing = 0;
      return PluginStatus::Skip();
    }

    bool self_match = !affinity.empty();
    for (const Term& t : affinity) self_match = self_match && t.Matches(ns, labels, {});
    std::vector<IpaKeyTable> keys;
    std::vector<uint8_t> present;
    auto add = [&](int32_t slot, const std::vector<int64_t>* table) {
      keys.push_back(IpaKeyTable{slot, static_cast<int32_t>(present.size())});
      if (slot < 0) return;
      const int32_t d = slot_domains_[slot];
      for (int32_t i = 0; i < d; ++i) present.push_back(table && (*table)[i] > 0 ? 1 : 0);
    };
    auto find = [](const DomainTables<int64_t>& t, int32_t slot) -> const std::vector<int64_t>* {
      auto it = t.by_slot.find(slot);
      return it == t.by_slot.end() ? nullptr : &it->second;
    };
    for (int32_t slot : DistinctSlots(affinity)) add(slot, find(aff_counts, slot));
    for (const auto& [slot, table] : anti_counts.by_slot) add(slot, &table);
    for (const auto& [slot, table] : existing.by_slot) add(slot, &table);
    filter_.num_affinity = static_cast<int32_t>(DistinctSlots(affinity).size());
    filter_.num_anti = static_cast<int32_t>(anti_counts.by_slot.size());
    filter_.num_existing = static_cast<int32_t>(existing.by_slot.size());
    filter_.first_of_group = aff_empty && self_match;
    Upload(keys, &filter_keys_);
    Upload(present, &present_);
    SyncDomains();
    return PluginStatus::Success();
  }

  void Filter(int32_t n, VerdictCode* codes) override { ForEachNode(n, codes, IpaFilterFn{FilterParams()}); }
  bool FilterNodes(const NodeIndex* nodes, int32_t count, VerdictCode* codes) override {
    ForListedNodes(nodes, count, codes, IpaFilterFn{FilterParams()});
    return true;
  }

  PluginStatus Verdict(VerdictCode code) const override {
    switch (code) {
      case plugins::kIpaAffinityNotMatch:
        return PluginStatus::Make(Code::kUnschedulableAndUnresolvable, "node(s) didn't match pod affinity rules");
      case plugins::kIpaAntiAffinityNotMatch:
        return PluginStatus::Make(Code::kUnschedulable, "node(s) didn't match pod anti-affinity rules");
      case plugins::kIpaExistingAntiAffinity:
        return PluginStatus::Make(Code::kUnschedulable, "node(s) didn't satisfy existing pods anti-affinity rules");
      default:
        return PluginStatus::Error("error reading \"PreFilterInterPodAffinity\" from cycleState: not found");
    }
  }

  PluginStatus PreScore(const Pod& pod, const Snapshot&, const std::vector<NodeIndex>& feasible) override {
    score_ready_ = false;
    TrimTables();
    if (feasible.empty()) return PluginStatus::Skip();
    const bool has_pref = plugins::IpaHasPreferredPodAffinity(pod);
    if (args_.ignore_preferred_terms_of_existing_pods && !has_pref) return PluginStatus::Skip();
    plugins::IpaPodTerms parsed = plugins::ParseIpaPodTerms(pod, match_label_keys_);
    if (!parsed.error.empty()) return PluginStatus::Error("failed to parse pod: " + parsed.error);
    const int32_t ns = strings_.Intern(pod.meta.namespace_);
    const LabelIds labels = InternLabels(pod.meta.labels);
    const LabelIds& ns_labels = NamespaceLabels(ns);

    DomainTables<int64_t> score;
    bool fired = false;
    // Rows 1-2: the pod's preferred terms against existing pods, per class.
    auto incoming = [&](const WeightedPodAffinityTerm& wt, int64_t sign) {
      Term t = Resolve(Compile(wt.term, ns));
      if (t.slot < 0) return;
      const int64_t delta = static_cast<int64_t>(wt.weight) * sign;
      const std::unordered_map<int32_t, int64_t>* counts = Table({t}).For(t.slot);
      if (!counts || counts->empty()) return;
      std::vector<int64_t>& table = score.For(t.slot, slot_domains_[t.slot]);
      for (const auto& [d, count] : *counts) table[d] += delta * count;
      fired = true;
    };
    for (const WeightedPodAffinityTerm& wt : parsed.preferred_affinity) incoming(wt, 1);
    for (const WeightedPodAffinityTerm& wt : parsed.preferred_anti_affinity) incoming(wt, -1);
    // Rows 3-5: existing pods' required affinity (x H) and preferred terms matching the pod.
    const int64_t hard = args_.hard_pod_affinity_weight;
    for (int32_t id : score_terms_) {
      const ExistingTerm& et = terms_[id];
      if (!et.term.Matches(ns, labels, ns_labels)) continue;
      std::vector<int64_t>* table = nullptr;
      for (const auto& [d, cell] : et.cells) {
        const bool fires = (hard > 0 && cell.required_aff > 0) || cell.preferred > 0;
        if (!fires) continue;
        if (!table) table = &score.For(et.term.slot, slot_domains_[et.term.slot]);
        (*table)[d] += (hard > 0 ? hard * cell.required_aff : 0) + cell.preferred_weight;
        fired = true;
      }
    }
    if (!fired) return PluginStatus::Skip();

    std::vector<IpaKeyTable> keys;
    std::vector<int64_t> values;
    for (const auto& [slot, table] : score.by_slot) {
      keys.push_back(IpaKeyTable{slot, static_cast<int32_t>(values.size())});
      values.insert(values.end(), table.begin(), table.end());
    }
    Upload(keys, &score_keys_);
    Upload(values, &score_values_);
    num_score_keys_ = static_cast<int32_t>(keys.size());
    score_ready_ = true;
    SyncDomains();
    return PluginStatus::Success();
  }

  void Score(const NodeIndex* nodes, int32_t count, int64_t* scores) override {
    IpaScoreParams p{n_, Ptr(domains_), Ptr(score_values_), Ptr(score_keys_), score_ready_ ? num_score_keys_ : 0};
    ForListedNodes(nodes, count, scores, IpaScoreFn{p});
  }

  void NormalizeScore(int32_t count, int64_t* scores) override {
    if (!score_ready_ || count <= 0) return;
    WithPolicy(count, [&](auto p) {
      const int64_t mn =
          thrust::reduce(p, scores, scores + count, std::numeric_limits<int64_t>::max(), thrust::minimum<int64_t>());
      const int64_t mx =
          thrust::reduce(p, scores, scores + count, std::numeric_limits<int64_t>::min(), thrust::maximum<int64_t>());
      thrust::transform(p, scores, scores + count, scores, IpaNormalizeFn{mn, mx - mn});
    });
  }

  void OnBind(const Pod& pod, NodeIndex node, const Snapshot&) override {
    AddExistingPod(pod, node);
    SyncDomains();
  }

 private:
  IpaFilterParams FilterParams() {
    IpaFilterParams p = filter_;
    p.num_nodes = n_;
    p.domains = Ptr(domains_);
    p.present = Ptr(present_);
    p.keys = Ptr(filter_keys_);
    return p;
  }

  InterPodAffinity(const InterPodAffinityArgs& args, const FeatureGates& gates)
      : args_(args), match_label_keys_(gates.Enabled("MatchLabelKeysInPodAffinity")) {}

  LabelIds InternLabels(const Labels& labels) {
    LabelIds out;
    out.reserve(labels.size());
    for (const auto& [k, v] : labels) out.emplace_back(strings_.Intern(k), strings_.Intern(v));
    std::sort(out.begin(), out.end());
    return out;
  }

  const LabelIds& NamespaceLabels(int32_t ns) const {
    static const LabelIds kNone;
    auto it = namespace_labels_.find(ns);
    return it == namespace_labels_.end() ? kNone : it->second;
  }

  Selector CompileSelector(const std::optional<LabelSelector>& s) {
    Selector out;
    if (!s) return out;
    out.nothing = false;
    for (const auto& [k, v] : s->match_labels) out.reqs.push_back({strings_.Intern(k), Op::kIn, {strings_.Intern(v)}});
    for (const LabelSelectorRequirement& r : s->match_expressions) {
      Requirement req{strings_.Intern(r.key), Op::kIn, {}};
      if (r.op == "NotIn") req.op = Op::kNotIn;
      if (r.op == "Exists") req.op = Op::kExists;
      if (r.op == "DoesNotExist") req.op = Op::kDoesNotExist;
      for (const std::string& v : r.values) req.values.push_back(strings_.Intern(v));
      std::sort(req.values.begin(), req.values.end());
      out.reqs.push_back(std::move(req));
    }
    return out;
  }

  Term Compile(const PodAffinityTerm& t, int32_t pod_ns) {
    Term out;
    out.selector = CompileSelector(t.label_selector);
    out.ns_selector = CompileSelector(t.namespace_selector);
    if (t.namespaces.empty() && !t.namespace_selector) {
      out.namespaces.push_back(pod_ns);
    } else {
      for (const std::string& n : t.namespaces) out.namespaces.push_back(strings_.Intern(n));
    }
    std::sort(out.namespaces.begin(), out.namespaces.end());
    out.namespaces.erase(std::unique(out.namespaces.begin(), out.namespaces.end()), out.namespaces.end());
    out.slot = SlotFor(t.topology_key);
    return out;
  }

  // §2.2: the incoming pod's namespace selector becomes the names it selects now.
  Term Resolve(Term t) const {
    if (t.ns_selector.everything()) return t;
    for (const auto& [id, labels] : namespaces_) {
      if (t.ns_selector.Matches(labels)) t.namespaces.push_back(id);
    }
    std::sort(t.namespaces.begin(), t.namespaces.end());
    t.namespaces.erase(std::unique(t.namespaces.begin(), t.namespaces.end()), t.namespaces.end());
    t.ns_selector = Selector{};
    return t;
  }

  static std::vector<int32_t> DistinctSlots(const std::vector<Term>& terms) {
    std::vector<int32_t> out;
    for (const Term& t : terms) out.push_back(t.slot);
    std::sort(out.begin(), out.end());
    out.erase(std::unique(out.begin(), out.end()), out.end());
    return out;
  }

  int32_t Domain(int32_t slot, NodeIndex n) const {
    return slot < 0 ? -1 : domains_host_[static_cast<size_t>(slot) * n_ + n];
  }

  // A topology key's slot: its value ids renumbered into dense domains. Node labels do
  // not change, so a slot is built once; every class gets its counts for it.
  int32_t SlotFor(const std::string& key) {
    auto it = slot_of_.find(key);
    if (it != slot_of_.end()) return it->second;
    const std::vector<int32_t>* column = snapshot_->LabelColumn(key);
    if (!column) return slot_of_[key] = -1;
    const int32_t slot = static_cast<int32_t>(slot_domains_.size());
    std::unordered_map<int32_t, int32_t> dense;
    for (NodeIndex n = 0; n < n_; ++n) {
      int32_t v = (*column)[n];
      int32_t d = -1;
      if (v != engine::kNoId) d = dense.emplace(v, static_cast<int32_t>(dense.size())).first->second;
      domains_host_.push_back(d);
    }
    slot_domains_.push_back(static_cast<int32_t>(dense.size()));
    for (PodClass& c : classes_) {
      std::unordered_map<int32_t, int64_t> counts;
      for (const auto& [node, pods] : c.nodes) {
        int32_t d = Domain(slot, node);
        if (d >= 0) counts[d] += pods;
      }
      c.per_slot.push_back(std::move(counts));
    }
    return slot_of_[key] = slot;
  }

  void AddExistingPod(const Pod& pod, NodeIndex node) {
    const int32_t ns = strings_.Intern(pod.meta.namespace_);
    LabelIds labels = InternLabels(pod.meta.labels);
    // Terms first: they may add slots, which the class below then counts in.
    if (plugins::IpaHasPodAffinity(pod)) {
      plugins::IpaPodTerms parsed = plugins::ParseIpaPodTerms(pod, match_label_keys_);
      for (const PodAffinityTerm& t : parsed.required_affinity) AddTerm(t, ns, node, TermKind::kRequiredAffinity, 0);
      for (const PodAffinityTerm& t : parsed.required_anti_affinity) AddTerm(t, ns, node, TermKind::kRequiredAnti, 0);
      for (const auto& wt : parsed.preferred_affinity) AddTerm(wt.term, ns, node, TermKind::kPreferredAffinity, wt.weight);
      for (const auto& wt : parsed.preferred_anti_affinity) {
        AddTerm(wt.term, ns, node, TermKind::kPreferredAnti, wt.weight);
      }
    }
    std::string key;
    key.append(reinterpret_cast<const char*>(&ns), sizeof(ns));
    for (const auto& [k, v] : labels) {
      key.append(reinterpret_cast<const char*>(&k), sizeof(k));
      key.append(reinterpret_cast<const char*>(&v), sizeof(v));
    }
    auto [it, inserted] = class_of_.emplace(std::move(key), static_cast<int32_t>(classes_.size()));
    if (inserted) {
      PodClass c;
      c.ns = ns;
      c.labels = std::move(labels);
      c.per_slot.resize(slot_domains_.size());
      classes_.push_back(std::move(c));
    }
    PodClass& c = classes_[it->second];
    c.nodes[node] += 1;
    for (size_t slot = 0; slot < c.per_slot.size(); ++slot) {
      int32_t d = Domain(static_cast<int32_t>(slot), node);
      if (d >= 0) c.per_slot[slot][d] += 1;
    }
    // The cached term sets see the pod as upstream's AddPod would (§3, AddPod).
    for (MatchTable& t : tables_) {
      if (!t.Matches(c.ns, c.labels)) continue;
      for (size_t i = 0; i < t.slots.size(); ++i) {
        int32_t d = Domain(t.slots[i], node);
        if (d >= 0) t.counts[i][d] += 1;
      }
    }
  }

  // The table of an incoming term set, built from the classes on first use. References
  // stay valid until the next TrimTables (tables_ is a deque).
  const MatchTable& Table(const std::vector<Term>& terms) {
    std::string key;
    for (const Term& t : terms) {
      std::string k = t.Key();
      const int32_t size = static_cast<int32_t>(k.size());
      key.append(reinterpret_cast<const char*>(&size), sizeof(size));
      key += k;
    }
    auto [it, inserted] = table_of_.emplace(std::move(key), static_cast<int32_t>(tables_.size()));
    if (!inserted) return tables_[it->second];
    MatchTable t;
    t.terms = terms;
    t.slots = DistinctSlots(terms);
    t.slots.erase(std::remove(t.slots.begin(), t.slots.end(), -1), t.slots.end());
    t.counts.resize(t.slots.size());
    for (const PodClass& c : classes_) {
      if (!t.Matches(c.ns, c.labels)) continue;
      for (size_t i = 0; i < t.slots.size(); ++i) {
        for (const auto& [d, count] : c.per_slot[t.slots[i]]) t.counts[i][d] += count;
      }
    }
    tables_.push_back(std::move(t));
    return tables_.back();
  }

  void TrimTables() {
    if (tables_.size() <= kMaxMatchTables) return;
    tables_.clear();
    table_of_.clear();
  }

  void AddTerm(const PodAffinityTerm& t, int32_t ns, NodeIndex node, TermKind kind, int32_t weight) {
    Term term = Compile(t, ns);
    const int32_t d = Domain(term.slot, node);
    if (d < 0) return;  // the node lacks the key: the term never counts (§3.2, §5)
    auto [it, inserted] = term_of_.emplace(term.Key(), static_cast<int32_t>(terms_.size()));
    if (inserted) terms_.push_back(ExistingTerm{std::move(term), {}, false, false});
    const int32_t id = it->second;
    ExistingTerm& et = terms_[id];
    Cell& cell = et.cells[d];
    switch (kind) {
      case TermKind::kRequiredAnti:
        cell.required_anti += 1;
        if (!et.in_anti_list) anti_terms_.push_back(id);
        et.in_anti_list = true;
        return;
      case TermKind::kRequiredAffinity:
        cell.required_aff += 1;
        break;
      case TermKind::kPreferredAffinity:
        cell.preferred += 1;
        cell.preferred_weight += weight;
        break;
      case TermKind::kPreferredAnti:
        cell.preferred += 1;
        cell.preferred_weight -= weight;
        break;
    }
    if (!et.in_score_list) score_terms_.push_back(id);
    et.in_score_list = true;
  }

  void UploadDomains() { Upload(domains_host_, &domains_); }
  // Slots only grow, so a size change is the only way the device copy goes stale.
  void SyncDomains() {
    if (domains_.size() != domains_host_.size()) UploadDomains();
  }

  InterPodAffinityArgs args_;
  bool match_label_keys_;
  const Snapshot* snapshot_ = nullptr;
  int32_t n_ = 0;
  engine::Interner strings_;  // label keys, values and namespaces seen by this plugin

  // Topology-key slots.
  std::unordered_map<std::string, int32_t> slot_of_;
  std::vector<int32_t> slot_domains_;  // [slot]: number of domains
  std::vector<int32_t> domains_host_;  // [slot * n_ + node]: domain, -1 without the key
  vector<int32_t> domains_;

  // Namespace objects: (name id, labels), and labels by name id.
  std::vector<std::pair<int32_t, LabelIds>> namespaces_;
  std::unordered_map<int32_t, LabelIds> namespace_labels_;

  // Existing pods.
  std::vector<PodClass> classes_;
  std::unordered_map<std::string, int32_t> class_of_;
  std::deque<MatchTable> tables_;
  std::unordered_map<std::string, int32_t> table_of_;
  std::vector<ExistingTerm> terms_;
  std::unordered_map<std::string, int32_t> term_of_;
  std::vector<int32_t> anti_terms_;   // terms with required anti-affinity cells
  std::vector<int32_t> score_terms_;  // terms with required affinity or preferred cells

  // The current pod.
  IpaFilterParams filter_{};
  vector<IpaKeyTable> filter_keys_;
  vector<uint8_t> present_;
  bool score_ready_ = false;
  int32_t num_score_keys_ = 0;
  vector<IpaKeyTable> score_keys_;
  vector<int64_t> score_values_;
};

KPLACE_REGISTER_ENGINE_PLUGIN(InterPodAffinity, InterPodAffinity);

}  // namespace
}  // namespace kplace::KPLACE_BACKEND_NS
