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
//
// Replicas: PreFilter and PreScore keep the last pod's dense tables (E, A, N; the score
// table) with its `present` bytes and score values, on the host and the backend. OnBind
// records what each bound pod added (its node, its label class, the existing-term cells
// it counted in). The next pod that compiles the same (namespace, labels, resolved terms)
// replays only those binds (§3 AddPod with m = +1; §5's rows for one more pod): cells at
// the bound node's domains, the bytes or values that changed, and running totals for the
// Skip decision and the first-of-group exception. Anything that would change the layout
// (a table that did not exist, a Skip that flips) rebuilds in full, which stays the
// definition; IpaIncrementalDebug's self-check compares the two after every replay.
#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <deque>
#include <limits>
#include <map>
#include <string>
#include <type_traits>
#include <unordered_map>
#include <utility>
#include <vector>

#include "kernels/backend.cuh"
#include "kplace/common/strings.h"
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
  std::vector<int32_t> tables;  // the match tables that count this class
  // Found again from a pod's own strings, without interning them (most pods are replicas).
  std::string ns_name;
  Labels raw_labels;
  int32_t next_same_hash = -1;
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
  const std::unordered_map<int32_t, int64_t>* For(int32_t slot) const {
    for (size_t i = 0; i < slots.size(); ++i) {
      if (slots[i] == slot) return &counts[i];
    }
    return nullptr;
  }
};

// Cached term sets are dropped wholesale past this many (each costs a match per bind).
constexpr size_t kMaxMatchTables = 4096;

/** One (key, value) label of interned ids as one hash key. */
uint64_t LabelKey(int32_t key, int32_t value) {
  return (static_cast<uint64_t>(static_cast<uint32_t>(key)) << 32) | static_cast<uint32_t>(value);
}

/** The first `In` requirement of a selector that can match something: every pod it matches
 *  carries one of its values. Null when there is none. */
const Requirement* RequiredLabel(const Selector& s) {
  if (s.nothing) return nullptr;
  for (const Requirement& r : s.reqs) {
    if (r.op == Op::kIn) return &r;
  }
  return nullptr;
}

/** f(value) for each distinct value of a requirement (its values are sorted). */
template <typename F>
void ForEachValue(const Requirement& r, F f) {
  for (size_t i = 0; i < r.values.size(); ++i) {
    if (i == 0 || r.values[i] != r.values[i - 1]) f(r.values[i]);
  }
}

/** Existing terms (ids) by a label their selector requires: each value of its first `In`
 *  requirement (a pod carries one value of a key, so it reaches a term at most once). Terms
 *  without one are every pod's candidates; a nil selector matches nothing and is left out.
 *  An incoming pod is then matched against the terms its labels reach, not every distinct
 *  existing term: the cost of a pod is its labels, not the cluster's term count. */
class TermIndex {
 public:
  void Add(int32_t id, const Selector& s) {
    if (s.nothing) return;
    if (const Requirement* r = RequiredLabel(s)) {
      ForEachValue(*r, [&](int32_t v) { by_label_[LabelKey(r->key, v)].push_back(id); });
    } else {
      unanchored_.push_back(id);
    }
  }
  /** f(id) for every term `labels` can match (a superset: the caller still matches). */
  template <typename F>
  void ForEachCandidate(const LabelIds& labels, F f) const {
    for (int32_t id : unanchored_) f(id);
    if (by_label_.empty()) return;
    for (const auto& [key, value] : labels) {
      auto it = by_label_.find(LabelKey(key, value));
      if (it == by_label_.end()) continue;
      for (int32_t id : it->second) f(id);
    }
  }
  void Clear() {
    by_label_.clear();
    unanchored_.clear();
  }

 private:
  std::unordered_map<uint64_t, std::vector<int32_t>> by_label_;
  std::vector<int32_t> unanchored_;
};

enum class TermKind { kRequiredAffinity, kRequiredAnti, kPreferredAffinity, kPreferredAnti };

/** Per-domain host tables of one pod, by slot (ordered: deterministic key lists). */
using SlotTables = std::map<int32_t, std::vector<int64_t>>;

/** One of PreFilter's per-domain count tables (E, A or N) in one slot, and where its
 *  `present` bytes start. */
struct SlotCounts {
  int32_t slot;
  int32_t offset;
  std::vector<int64_t> counts;  // [domain]; empty for slot -1
};

/** What a PreFilter or PreScore computed for one compiled pod, kept for its replicas. */
struct KeptState {
  bool valid = false;
  std::string key;      // Incoming::key of the pod
  int64_t applied = 0;  // binds up to this sequence number are counted in
};

struct FilterState : KeptState {
  bool skip = false;
  bool self_match = false;  // the pod matches all its own affinity terms
  std::vector<SlotCounts> affinity, anti, existing;  // A, N, E in key order
  int64_t affinity_total = 0, existing_total = 0;
  std::vector<IpaKeyTable> keys;
  std::vector<uint8_t> present;
};

struct ScoreState : KeptState {
  bool fired = false;  // some row made an entry
  std::vector<IpaKeyTable> keys;
  std::vector<int64_t> values;
  // Every index of `values` a row or a replay wrote (repeats allowed): the others are 0, so
  // the buffer is zeroed again for the next build at the cost of its entries, not its length.
  std::vector<int32_t> written;
};

/** A bound pod as replays see it: its node, its label class and the existing-term cells
 *  it counted in (those whose key its node has). */
struct BoundPod {
  struct Added {
    int32_t term;
    TermKind kind;
    int32_t weight;
  };
  NodeIndex node;
  int32_t cls;
  std::vector<Added> terms;
};

// Field-by-field equality of the model's affinity types (they have no operator==).
bool Same(const LabelSelector& a, const LabelSelector& b);
bool Same(const PodAffinityTerm& a, const PodAffinityTerm& b);
bool Same(const WeightedPodAffinityTerm& a, const WeightedPodAffinityTerm& b);
bool Same(const PodAffinity& a, const PodAffinity& b);

bool Same(const LabelSelectorRequirement& a, const LabelSelectorRequirement& b) {
  return a.key == b.key && a.op == b.op && a.values == b.values;
}
bool Same(const LabelSelector& a, const LabelSelector& b) {
  if (a.match_labels != b.match_labels || a.match_expressions.size() != b.match_expressions.size()) return false;
  for (size_t i = 0; i < a.match_expressions.size(); ++i) {
    if (!Same(a.match_expressions[i], b.match_expressions[i])) return false;
  }
  return true;
}
template <typename T>
bool Same(const std::optional<T>& a, const std::optional<T>& b) {
  return a.has_value() == b.has_value() && (!a || Same(*a, *b));
}
bool Same(const PodAffinityTerm& a, const PodAffinityTerm& b) {
  return Same(a.label_selector, b.label_selector) && a.namespaces == b.namespaces &&
         Same(a.namespace_selector, b.namespace_selector) && a.topology_key == b.topology_key &&
         a.match_label_keys == b.match_label_keys && a.mismatch_label_keys == b.mismatch_label_keys;
}
bool Same(const WeightedPodAffinityTerm& a, const WeightedPodAffinityTerm& b) {
  return a.weight == b.weight && Same(a.term, b.term);
}
template <typename T>
bool Same(const std::vector<T>& a, const std::vector<T>& b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i) {
    if (!Same(a[i], b[i])) return false;
  }
  return true;
}
bool Same(const PodAffinity& a, const PodAffinity& b) { return Same(a.required, b.required) && Same(a.preferred, b.preferred); }

/** An existing pod's terms as AddExistingPod counts them: compiled, with their kind and
 *  weight, and their existing-term id once some pod counted them (-1 before). */
struct CompiledExistingTerm {
  Term term;
  TermKind kind;
  int32_t weight;
  int32_t id = -1;
};

/** The last existing pod with terms, and its terms compiled: most bound pods are replicas,
 *  so a bind compares the pod's affinity with it instead of parsing and compiling again.
 *  `labels` are compared only when a term reads them (matchLabelKeys). Valid until
 *  Prepare (slots and existing-term ids start again there). */
struct LastExistingTerms {
  bool valid = false;
  std::string ns;
  std::optional<PodAffinity> affinity, anti;
  bool reads_labels = false;
  Labels labels;
  std::vector<CompiledExistingTerm> terms;
};

/** The incoming pod as PreFilter (required terms) or PreScore (preferred terms) compiles
 *  it. Pods with equal keys compile to the same terms; name and uid play no part. */
struct Incoming {
  int32_t ns = 0;
  LabelIds labels;
  std::vector<Term> affinity, anti;                 // required, resolved
  std::vector<std::pair<Term, int64_t>> preferred;  // resolved, weight signed (- for anti)
  std::string key;
};

// Binds kept for replay; past this many the kept states are dropped.
constexpr size_t kMaxReplayedBinds = 4096;

void PutInt(std::string* out, int64_t v) { out->append(reinterpret_cast<const char*>(&v), sizeof(v)); }

/** Appends the terms' keys, each length-prefixed, after their count. */
void PutTerms(std::string* out, const std::vector<Term>& terms) {
  PutInt(out, static_cast<int64_t>(terms.size()));
  for (const Term& t : terms) {
    std::string k = t.Key();
    PutInt(out, static_cast<int64_t>(k.size()));
    *out += k;
  }
}

SlotCounts* FindSlot(std::vector<SlotCounts>* tables, int32_t slot) {
  for (SlotCounts& t : *tables) {
    if (t.slot == slot) return &t;
  }
  return nullptr;
}

/** Writes host[i] to the backend copy `dev` (same size) at each index in `changed`. */
template <typename T>
void UploadChanged(const std::vector<T>& host, const std::vector<int32_t>& changed, vector<T>* dev) {
#if defined(KPLACE_BACKEND_OMP)
  T* p = Ptr(*dev);
  for (int32_t i : changed) p[i] = host[i];
#else
  // One copy per element: a few per bind; past that one upload of the whole table.
  if (changed.size() > 16) {
    Upload(host, dev);
    return;
  }
  for (int32_t i : changed) (*dev)[i] = host[i];
#endif
}

/** The first difference between two lists of per-slot tables, "" when equal. */
std::string DiffSlotCounts(const char* what, const std::vector<SlotCounts>& a, const std::vector<SlotCounts>& b) {
  if (a.size() != b.size()) {
    return StrCat(what, ": ", a.size(), " tables vs ", b.size());
  }
  for (size_t i = 0; i < a.size(); ++i) {
    if (a[i].slot != b[i].slot || a[i].offset != b[i].offset || a[i].counts.size() != b[i].counts.size()) {
      return StrCat(what, " table ", i, ": slot ", a[i].slot, " at ", a[i].offset, " vs slot ", b[i].slot, " at ",
                    b[i].offset);
    }
    for (size_t d = 0; d < a[i].counts.size(); ++d) {
      if (a[i].counts[d] != b[i].counts[d]) {
        return StrCat(what, " of slot ", a[i].slot, " domain ", d, ": ", a[i].counts[d], " vs ", b[i].counts[d]);
      }
    }
  }
  return "";
}

template <typename T>
std::string DiffValues(const char* what, const std::vector<T>& a, const std::vector<T>& b) {
  if (a.size() != b.size()) return StrCat(what, ": ", a.size(), " entries vs ", b.size());
  for (size_t i = 0; i < a.size(); ++i) {
    if (a[i] != b[i]) {
      return StrCat(what, "[", i, "]: ", static_cast<int64_t>(a[i]), " vs ", static_cast<int64_t>(b[i]));
    }
  }
  return "";
}

std::string DiffKeys(const std::vector<IpaKeyTable>& a, const std::vector<IpaKeyTable>& b) {
  if (a.size() != b.size()) return StrCat("keys: ", a.size(), " vs ", b.size());
  for (size_t i = 0; i < a.size(); ++i) {
    if (a[i].slot != b[i].slot || a[i].offset != b[i].offset) {
      return StrCat("key ", i, ": slot ", a[i].slot, " at ", a[i].offset, " vs slot ", b[i].slot, " at ", b[i].offset);
    }
  }
  return "";
}

/** The first difference between a replayed PreFilter state `a` and the full rebuild `b`. */
std::string DiffStates(const FilterState& a, const FilterState& b) {
  if (a.skip != b.skip) return StrCat("skip: ", a.skip, " vs ", b.skip);
  if (a.self_match != b.self_match) return StrCat("self match: ", a.self_match, " vs ", b.self_match);
  if (a.affinity_total != b.affinity_total) return StrCat("A total: ", a.affinity_total, " vs ", b.affinity_total);
  if (a.existing_total != b.existing_total) return StrCat("E total: ", a.existing_total, " vs ", b.existing_total);
  std::string d = DiffSlotCounts("A", a.affinity, b.affinity);
  if (d.empty()) d = DiffSlotCounts("N", a.anti, b.anti);
  if (d.empty()) d = DiffSlotCounts("E", a.existing, b.existing);
  if (d.empty()) d = DiffKeys(a.keys, b.keys);
  if (d.empty()) d = DiffValues("present", a.present, b.present);
  return d;
}

std::string DiffStates(const ScoreState& a, const ScoreState& b) {
  if (a.fired != b.fired) return StrCat("fired: ", a.fired, " vs ", b.fired);
  std::string d = DiffKeys(a.keys, b.keys);
  if (d.empty()) d = DiffValues("score", a.values, b.values);
  return d;
}

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
    stride_ = n_;
    strings_ = engine::Interner();
    slot_of_.clear();
    slot_domains_.clear();
    slot_key_.clear();
    slot_dense_.clear();
    domains_host_.clear();
    classes_.clear();
    classes_by_label_.clear();
    class_by_hash_.clear();
    counted_.clear();
    tables_.clear();
    table_of_.clear();
    terms_.clear();
    term_of_.clear();
    last_existing_ = LastExistingTerms{};
    anti_terms_.Clear();
    score_terms_.Clear();
    ReadNamespaces(s);
    for (NodeIndex i = 0; i < n_; ++i) {
      for (const Pod* p : s.pods_on(i)) counted_[p] = AddExistingPod(*p, i);
    }
    UploadDomains();
    filter_ = IpaFilterParams{};
    filter_.no_state = true;
    score_ready_ = false;
    filter_state_ = FilterState{};
    score_state_ = ScoreState{};
    binds_.clear();
    binds_begin_ = 0;
  }

  PluginStatus PreFilter(const Pod& pod, const Snapshot&, std::vector<NodeIndex>*, bool*) override {
    TrimTables();
    filter_ = IpaFilterParams{};
    filter_.no_state = true;
    plugins::IpaPodTerms parsed = plugins::ParseIpaPodTerms(pod, match_label_keys_);
    if (!parsed.error.empty()) {
      return PluginStatus::Make(Code::kUnschedulableAndUnresolvable, "parsing pod: " + parsed.error);
    }
    const Incoming x = CompileIncoming(pod, parsed, /*for_score=*/false);
    plugins::IpaIncrementalDebug& debug = plugins::IpaIncrementalDebugState();
    PluginStatus kept =
        Refresh(pod, x, "PreFilter", &filter_state_, &debug.prefilter_incremental, &debug.prefilter_rebuilt);
    if (!kept.IsSuccess()) return kept;
    filter_.no_state = false;
    if (filter_state_.skip) {
      // Skip: the framework runs no Filter; a direct Filter call passes every node.
      filter_.num_affinity = filter_.num_anti = filter_.num_existing = 0;
      return PluginStatus::Skip();
    }
    filter_.num_affinity = static_cast<int32_t>(filter_state_.affinity.size());
    filter_.num_anti = static_cast<int32_t>(filter_state_.anti.size());
    filter_.num_existing = static_cast<int32_t>(filter_state_.existing.size());
    filter_.first_of_group = filter_state_.affinity_total == 0 && filter_state_.self_match;
    SyncDomains();
    return PluginStatus::Success();
  }

  void Filter(int32_t n, VerdictCode* codes) override { ForEachNode(n, codes, IpaFilterFn{FilterParams()}); }
  bool FilterNodes(const NodeIndex* nodes, int32_t count, VerdictCode* codes) override {
    ForListedNodes(nodes, count, codes, IpaFilterFn{FilterParams()});
    return true;
  }

  // A skip holds while no bound copy brings terms of its own.
  bool SkipHoldsForRun(const Pod& pod) const override {
    auto none = [](const std::optional<PodAffinity>& a) { return !a || (a->required.empty() && a->preferred.empty()); };
    return !pod.affinity || (none(pod.affinity->pod_affinity) && none(pod.affinity->pod_anti_affinity));
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
    const Incoming x = CompileIncoming(pod, parsed, /*for_score=*/true);
    plugins::IpaIncrementalDebug& debug = plugins::IpaIncrementalDebugState();
    PluginStatus kept =
        Refresh(pod, x, "PreScore", &score_state_, &debug.prescore_incremental, &debug.prescore_rebuilt);
    if (!kept.IsSuccess()) return kept;
    if (!score_state_.fired) return PluginStatus::Skip();
    num_score_keys_ = static_cast<int32_t>(score_state_.keys.size());
    score_ready_ = true;
    SyncDomains();
    return PluginStatus::Success();
  }

  void Score(const NodeIndex* nodes, int32_t count, int64_t* scores) override {
    IpaScoreParams p{stride_, Ptr(domains_), Ptr(score_values_), Ptr(score_keys_), score_ready_ ? num_score_keys_ : 0};
    ForListedNodes(nodes, count, scores, IpaScoreFn{p});
  }

  void NormalizeScore(int32_t count, int64_t* scores) override {
    if (!score_ready_ || count <= 0) return;
    const int64_t mn = ReduceNodes(count, ScoreAtFn{scores}, std::numeric_limits<int64_t>::max(), thrust::minimum<int64_t>());
    const int64_t mx = ReduceNodes(count, ScoreAtFn{scores}, std::numeric_limits<int64_t>::min(), thrust::maximum<int64_t>());
    WithPolicy(count, [&](auto p) { thrust::transform(p, scores, scores + count, scores, IpaNormalizeFn{mn, mx - mn}); });
  }

  // Domains come from node labels: a change to a key this plugin has a slot for moves the
  // node's domains, and its pods with them; a key looked for and not found that the node
  // now has would make a slot (built again then). Other label changes do not matter.
  bool OnNodeUpdate(NodeIndex node, const Node& old, const Snapshot& s) override {
    const Labels& now = s.node(node).meta.labels;
    auto changed = [&](const std::string& key) {
      auto a = old.meta.labels.find(key);
      auto b = now.find(key);
      if ((a == old.meta.labels.end()) != (b == now.end())) return true;
      return a != old.meta.labels.end() && a->second != b->second;
    };
    bool moved = false;
    for (const auto& [key, slot] : slot_of_) {
      if (!changed(key)) continue;
      if (slot < 0) return false;
      moved = true;
    }
    if (!moved) return true;
    // The node's pods are counted out of the old domains as their binds counted them in,
    // and in again over the new ones (§3 RemovePod, then AddPod): their classes' domain
    // counts, the match tables and their existing terms' cells move (a term whose key the
    // node lost no longer counts, one whose key it gained now does). The kept states
    // replay binds only, so they go.
    const std::vector<const Pod*>& on = s.pods_on(node);
    for (const Pod* p : on) {
      if (!counted_.count(p)) return false;  // not seen bound: start again
    }
    for (const Pod* p : on) RemoveExistingPod(counted_.at(p));
    UploadDomainChanges(PlaceNode(node, s));
    for (const Pod* p : on) counted_[p] = AddExistingPod(*p, node);
    ForgetKept();
    return true;
  }

  // Writes node's domain in every slot (-1 where it lacks the key; a value no node had
  // before gets the next domain). Returns the positions written.
  std::vector<int32_t> PlaceNode(NodeIndex node, const Snapshot& s) {
    std::vector<int32_t> changed;
    for (size_t slot = 0; slot < slot_domains_.size(); ++slot) {
      const std::vector<int32_t>* column = s.LabelColumn(slot_key_[slot]);
      const int32_t v = column ? (*column)[node] : engine::kNoId;
      const size_t at = slot * static_cast<size_t>(stride_) + node;
      int32_t domain = -1;
      if (v != engine::kNoId) {
        auto [it, fresh] = slot_dense_[slot].emplace(v, slot_domains_[slot]);
        if (fresh) ++slot_domains_[slot];
        domain = it->second;
      }
      if (domains_host_[at] == domain) continue;
      domains_host_[at] = domain;
      changed.push_back(static_cast<int32_t>(at));
    }
    return changed;
  }

  // A node that joins (no pods) is laid out in every slot, in its domain or a new one. A
  // key looked for and not found that it has would make a slot: built again then.
  bool OnNodeAdd(NodeIndex node, const Snapshot& s) override {
    for (const auto& [key, slot] : slot_of_) {
      if (slot < 0 && s.node(node).meta.labels.count(key)) return false;
    }
    n_ = s.num_nodes();
    const bool relayout = n_ > stride_;
    if (relayout) {  // rows twice as long: the next joins write in place
      const int32_t old = stride_;
      stride_ = 2 * n_;
      std::vector<int32_t> out(slot_domains_.size() * static_cast<size_t>(stride_), -1);
      for (size_t slot = 0; slot < slot_domains_.size(); ++slot) {
        std::copy(domains_host_.begin() + static_cast<std::ptrdiff_t>(slot * old),
                  domains_host_.begin() + static_cast<std::ptrdiff_t>(slot * old + (n_ - 1)),
                  out.begin() + static_cast<std::ptrdiff_t>(slot * stride_));
      }
      domains_host_ = std::move(out);
    }
    std::vector<int32_t> changed = PlaceNode(node, s);
    if (relayout) {
      UploadDomains();
    } else {
      UploadDomainChanges(changed);
    }
    KeepAcrossJoin();
    return true;
  }

  // Existing terms match namespace labels when a pod is checked, and an incoming pod's
  // selector is resolved at its PreFilter: reading the labels again is all, but the kept
  // states were computed with the old ones.
  bool OnNamespacesChange(const Snapshot& s) override {
    ReadNamespaces(s);
    ForgetKept();
    return true;
  }

  // Counted out as its bind counted it in; the kept states replay binds only, so they go.
  // A pod this plugin did not see bound (not the snapshot's copy) makes it start again.
  bool OnUnbind(const Pod& pod, NodeIndex, const Snapshot&) override {
    auto it = counted_.find(&pod);
    if (it == counted_.end()) return false;
    ForgetKept();
    RemoveExistingPod(it->second);
    counted_.erase(it);
    return true;
  }

  void OnBind(const Pod& pod, NodeIndex node, const Snapshot& s) override {
    BoundPod b = AddExistingPod(pod, node);
    // Remembered only for the snapshot's own copy: another address may be reused.
    const auto& on = s.pods_on(node);
    for (size_t k = on.size(); k-- > 0;) {
      if (on[k] != &pod) continue;
      counted_[&pod] = b;
      break;
    }
    if (filter_state_.valid || score_state_.valid) {
      binds_.push_back(std::move(b));
      if (binds_.size() > kMaxReplayedBinds) ForgetKept();
    }
    SyncDomains();
  }

 private:
  IpaFilterParams FilterParams() {
    IpaFilterParams p = filter_;
    p.num_nodes = stride_;
    p.domains = Ptr(domains_);
    p.present = Ptr(present_);
    p.keys = Ptr(filter_keys_);
    return p;
  }

  InterPodAffinity(const InterPodAffinityArgs& args, const FeatureGates& gates)
      : args_(args), match_label_keys_(gates.Enabled("MatchLabelKeysInPodAffinity")) {
    const char* check = std::getenv("KPLACE_IPA_SELF_CHECK");
    self_check_env_ = check && std::string(check) == "1";
  }

  bool SelfCheck() const { return self_check_env_ || plugins::IpaIncrementalDebugState().self_check; }

  Incoming CompileIncoming(const Pod& pod, const plugins::IpaPodTerms& parsed, bool for_score) {
    Incoming x;
    x.ns = strings_.Intern(pod.meta.namespace_);
    x.labels = InternLabels(pod.meta.labels);
    PutInt(&x.key, x.ns);
    PutInt(&x.key, static_cast<int64_t>(x.labels.size()));
    for (const auto& [k, v] : x.labels) PutInt(&x.key, (static_cast<int64_t>(k) << 32) | static_cast<uint32_t>(v));
    if (!for_score) {
      for (const PodAffinityTerm& t : parsed.required_affinity) x.affinity.push_back(Resolve(Compile(t, x.ns)));
      for (const PodAffinityTerm& t : parsed.required_anti_affinity) x.anti.push_back(Resolve(Compile(t, x.ns)));
      PutTerms(&x.key, x.affinity);
      PutTerms(&x.key, x.anti);
      return x;
    }
    for (const WeightedPodAffinityTerm& wt : parsed.preferred_affinity) {
      x.preferred.emplace_back(Resolve(Compile(wt.term, x.ns)), wt.weight);
    }
    for (const WeightedPodAffinityTerm& wt : parsed.preferred_anti_affinity) {
      x.preferred.emplace_back(Resolve(Compile(wt.term, x.ns)), -static_cast<int64_t>(wt.weight));
    }
    std::vector<Term> terms;
    for (const auto& [t, w] : x.preferred) {
      PutInt(&x.key, w);
      terms.push_back(t);
    }
    PutTerms(&x.key, terms);
    return x;
  }

  std::vector<int64_t>& Dense(SlotTables* tables, int32_t slot) const {
    auto it = tables->find(slot);
    if (it == tables->end()) it = tables->emplace(slot, std::vector<int64_t>(slot_domains_[slot], 0)).first;
    return it->second;
  }

  // PreFilter in full (§3): E, A and N from the existing terms and the match tables.
  FilterState BuildFilter(const Incoming& x) {
    FilterState s;
    const LabelIds& ns_labels = NamespaceLabels(x.ns);
    // E: existing pods' required anti-affinity terms that match the pod (§3.2).
    SlotTables existing;
    anti_terms_.ForEachCandidate(x.labels, [&](int32_t id) {
      const ExistingTerm& et = terms_[id];
      if (!et.term.Matches(x.ns, x.labels, ns_labels)) return;
      std::vector<int64_t>& table = Dense(&existing, et.term.slot);
      for (const auto& [d, cell] : et.cells) table[d] += cell.required_anti;
    });
    // A: pods matching every affinity term, counted in each term's domains (§3.3). Every
    // key gets its table, all zero when A is empty.
    if (!x.affinity.empty()) {
      const MatchTable& a = Table(x.affinity);
      for (int32_t slot : DistinctSlots(x.affinity)) {
        SlotCounts c{slot, 0, {}};
        if (slot >= 0) c.counts.assign(slot_domains_[slot], 0);
        if (const std::unordered_map<int32_t, int64_t>* counts = a.For(slot)) {
          for (const auto& [d, count] : *counts) {
            c.counts[d] += count;
            s.affinity_total += count;
          }
        }
        s.affinity.push_back(std::move(c));
      }
    }
    // N: pods matching each anti-affinity term (§3.3).
    SlotTables anti;
    for (const Term& t : x.anti) {
      if (t.slot < 0) continue;
      const std::unordered_map<int32_t, int64_t>* counts = Table({t}).For(t.slot);
      if (!counts || counts->empty()) continue;
      std::vector<int64_t>& table = Dense(&anti, t.slot);
      for (const auto& [d, count] : *counts) table[d] += count;
    }
    for (auto& [slot, table] : anti) s.anti.push_back(SlotCounts{slot, 0, std::move(table)});
    for (auto& [slot, table] : existing) {
      for (int64_t v : table) s.existing_total += v;
      s.existing.push_back(SlotCounts{slot, 0, std::move(table)});
    }
    s.skip = s.existing_total == 0 && x.affinity.empty() && x.anti.empty();
    s.self_match = !x.affinity.empty();
    for (const Term& t : x.affinity) s.self_match = s.self_match && t.Matches(x.ns, x.labels, {});
    if (!s.skip) LayOut(&s);
    return s;
  }

  // Room for a table of n domains in `present`: the next power of two, so that domains
  // that joins open fit in place and a layout is redone only when a table doubles.
  static size_t Room(size_t n) {
    if (n == 0) return 0;
    size_t room = 1;
    while (room < n) room *= 2;
    return room;
  }

  // The tables one after another (A, N, E) in `present`, each in its Room (zeros past its
  // domains), each key with its offset.
  static void LayOut(FilterState* s) {
    s->keys.clear();
    s->present.clear();
    for (std::vector<SlotCounts>* group : {&s->affinity, &s->anti, &s->existing}) {
      for (SlotCounts& c : *group) {
        c.offset = static_cast<int32_t>(s->present.size());
        s->keys.push_back(IpaKeyTable{c.slot, c.offset});
        for (int64_t v : c.counts) s->present.push_back(v > 0 ? 1 : 0);
        s->present.resize(static_cast<size_t>(c.offset) + Room(c.counts.size()), 0);
      }
    }
  }

  // A node joined with no pods: every count stays, and a domain it opened counts 0. The
  // filter state kept for replicas takes those zeros into its tables (their bytes in
  // `present` are zeros of the tables' room already) instead of being rebuilt at the next
  // replica: a scale-up joins a node per replica. The score state goes.
  void KeepAcrossJoin() {
    FilterState& s = filter_state_;
    if (!s.valid) return ForgetKept();
    score_state_.valid = false;
    bool outgrown = false;
    for (std::vector<SlotCounts>* group : {&s.affinity, &s.anti, &s.existing}) {
      for (SlotCounts& c : *group) {
        const size_t n = c.slot < 0 ? 0 : static_cast<size_t>(slot_domains_[c.slot]);
        if (c.counts.size() >= n) continue;
        outgrown = outgrown || Room(n) != Room(c.counts.size());
        c.counts.resize(n, 0);
      }
    }
    if (!outgrown || s.skip) return;
    LayOut(&s);
    UploadAll(s);
  }

  // Counts the binds since `s` was computed into it, as the full rebuild would see them
  // (§3 AddPod, m = +1), noting the `present` bytes that changed. False when a bind needs
  // a table `s` lacks or flips Skip: the caller rebuilds (`s` is then partly updated).
  bool Replay(const Incoming& x, FilterState* s, std::vector<int32_t>* changed) {
    const LabelIds& ns_labels = NamespaceLabels(x.ns);
    auto bump = [&](SlotCounts* c, int32_t d) {
      if (c->counts[d]++ == 0 && !s->skip) {
        s->present[c->offset + d] = 1;
        changed->push_back(c->offset + d);
      }
    };
    for (size_t i = static_cast<size_t>(s->applied - binds_begin_); i < binds_.size(); ++i) {
      const BoundPod& b = binds_[i];
      for (const BoundPod::Added& added : b.terms) {
        if (added.kind != TermKind::kRequiredAnti) continue;
        const Term& t = terms_[added.term].term;
        if (!t.Matches(x.ns, x.labels, ns_labels)) continue;
        SlotCounts* c = FindSlot(&s->existing, t.slot);
        if (!c) return false;
        bump(c, Domain(t.slot, b.node));
        ++s->existing_total;
      }
      const PodClass& cls = classes_[b.cls];
      bool all = !x.affinity.empty();
      for (const Term& t : x.affinity) all = all && t.Matches(cls.ns, cls.labels, {});
      for (SlotCounts& c : s->affinity) {
        const int32_t d = Domain(c.slot, b.node);
        if (!all || d < 0) continue;
        bump(&c, d);
        ++s->affinity_total;
      }
      for (const Term& t : x.anti) {
        const int32_t d = Domain(t.slot, b.node);
        if (d < 0 || !t.Matches(cls.ns, cls.labels, {})) continue;
        SlotCounts* c = FindSlot(&s->anti, t.slot);
        if (!c) return false;
        bump(c, d);
      }
    }
    if (s->skip != (s->existing_total == 0 && x.affinity.empty() && x.anti.empty())) return false;
    s->applied = BindsEnd();
    return true;
  }

  // The score rows of `x` (§5): add(slot, domain, value) per entry, rows 1-2 from the
  // match tables, rows 3-5 from the existing terms. A slot gets a table as soon as a row
  // enters it, whatever the value.
  template <typename Add>
  void ScoreRows(const Incoming& x, Add add) {
    for (const auto& [t, weight] : x.preferred) {
      if (t.slot < 0) continue;
      const std::unordered_map<int32_t, int64_t>* counts = Table({t}).For(t.slot);
      if (!counts) continue;
      for (const auto& [d, count] : *counts) add(t.slot, d, weight * count);
    }
    const int64_t hard = args_.hard_pod_affinity_weight;
    const LabelIds& ns_labels = NamespaceLabels(x.ns);
    score_terms_.ForEachCandidate(x.labels, [&](int32_t id) {
      const ExistingTerm& et = terms_[id];
      if (!et.term.Matches(x.ns, x.labels, ns_labels)) return;
      for (const auto& [d, cell] : et.cells) {
        const bool fires = (hard > 0 && cell.required_aff > 0) || cell.preferred > 0;
        if (fires) add(et.term.slot, d, (hard > 0 ? hard * cell.required_aff : 0) + cell.preferred_weight);
      }
    });
  }

  // PreScore in full (§5): the slots the rows enter, in slot order, each a dense table of
  // its domains in one buffer (the last kept state's, reused and zeroed where it was
  // written: at a hostname key a table is as long as the cluster, and a distinct pod builds
  // one per cycle).
  ScoreState BuildScore(const Incoming& x) {
    std::vector<int32_t>& fired = fired_slots_;
    fired.clear();
    ScoreRows(x, [&](int32_t slot, int32_t, int64_t) {
      if (std::find(fired.begin(), fired.end(), slot) == fired.end()) fired.push_back(slot);
    });
    std::sort(fired.begin(), fired.end());
    ScoreState s;
    s.fired = !fired.empty();
    s.values = std::move(spare_values_);
    spare_values_.clear();
    for (int32_t i : spare_written_) {
      if (static_cast<size_t>(i) < s.values.size()) s.values[i] = 0;
    }
    spare_written_.clear();
    size_t total = 0;
    for (int32_t slot : fired) {
      s.keys.push_back(IpaKeyTable{slot, static_cast<int32_t>(total)});
      total += static_cast<size_t>(slot_domains_[slot]);
    }
    s.values.resize(total);  // all zeros: new entries are, the kept ones were zeroed above
    ScoreRows(x, [&](int32_t slot, int32_t d, int64_t value) {
      for (const IpaKeyTable& k : s.keys) {
        if (k.slot != slot) continue;
        s.values[k.offset + d] += value;
        s.written.push_back(k.offset + d);
      }
    });
    return s;
  }

  // Adds the binds since `s` was computed, row by row (§5), noting the values that
  // changed. A cell's value is linear in its counts (a cell that does not fire has no
  // required affinity counted with H > 0 and no preferred weight), so a bind adds H or
  // +-w. False when a bind needs a table `s` lacks: the caller rebuilds.
  bool Replay(const Incoming& x, ScoreState* s, std::vector<int32_t>* changed) {
    auto add = [&](int32_t slot, int32_t d, int64_t delta) {
      for (const IpaKeyTable& k : s->keys) {
        if (k.slot != slot) continue;
        s->values[k.offset + d] += delta;
        s->written.push_back(k.offset + d);
        changed->push_back(k.offset + d);
        return true;
      }
      return false;
    };
    const int64_t hard = args_.hard_pod_affinity_weight;
    const LabelIds& ns_labels = NamespaceLabels(x.ns);
    for (size_t i = static_cast<size_t>(s->applied - binds_begin_); i < binds_.size(); ++i) {
      const BoundPod& b = binds_[i];
      const PodClass& cls = classes_[b.cls];
      for (const auto& [t, weight] : x.preferred) {
        const int32_t d = Domain(t.slot, b.node);
        if (d < 0 || !t.Matches(cls.ns, cls.labels, {})) continue;
        if (!add(t.slot, d, weight)) return false;
      }
      for (const BoundPod::Added& added : b.terms) {
        int64_t delta = 0;
        switch (added.kind) {
          case TermKind::kRequiredAnti:
            continue;
          case TermKind::kRequiredAffinity:
            if (hard <= 0) continue;
            delta = hard;
            break;
          case TermKind::kPreferredAffinity:
            delta = added.weight;
            break;
          case TermKind::kPreferredAnti:
            delta = -static_cast<int64_t>(added.weight);
            break;
        }
        const Term& t = terms_[added.term].term;
        if (!t.Matches(x.ns, x.labels, ns_labels)) continue;
        if (!add(t.slot, Domain(t.slot, b.node), delta)) return false;
      }
    }
    s->applied = BindsEnd();
    return true;
  }

  // Makes `s` the kept state of a pod compiled to `key`, on the backend too.
  template <typename State>
  void Keep(State s, const std::string& key, State* kept) {
    if constexpr (std::is_same_v<State, ScoreState>) {  // BuildScore's next buffer
      spare_values_.swap(kept->values);
      spare_written_.swap(kept->written);
    }
    *kept = std::move(s);
    kept->valid = true;
    kept->key = key;
    kept->applied = BindsEnd();
    UploadAll(*kept);
  }
  void UploadAll(const FilterState& s) {
    if (s.skip) return;
    Upload(s.keys, &filter_keys_);
    Upload(s.present, &present_);
  }
  void UploadAll(const ScoreState& s) {
    if (!s.fired) return;
    Upload(s.keys, &score_keys_);
    // The backend copy differs from `s` only where either was written (a hostname table is
    // as long as the cluster; a distinct pod's rows touch a few of its domains).
    if (score_values_.size() == s.values.size()) {
      std::vector<int32_t>& changed = score_changed_;
      changed.assign(backend_written_.begin(), backend_written_.end());
      changed.insert(changed.end(), s.written.begin(), s.written.end());
      UploadChanged(s.values, changed, &score_values_);
    } else {
      Upload(s.values, &score_values_);
    }
    backend_written_ = s.written;
  }
  void UploadChanges(const FilterState& s, const std::vector<int32_t>& changed) {
    if (!s.skip) UploadChanged(s.present, changed, &present_);
  }
  void UploadChanges(const ScoreState& s, const std::vector<int32_t>& changed) {
    if (!s.fired) return;
    UploadChanged(s.values, changed, &score_values_);
    backend_written_.insert(backend_written_.end(), changed.begin(), changed.end());
  }

  // Brings `*kept` (host and backend) up to date for `x`: replays the binds since it was
  // computed when that was for a pod compiled the same, else rebuilds. With the
  // self-check a replay is also rebuilt and compared; a difference is an Error.
  template <typename State>
  PluginStatus Refresh(const Pod& pod, const Incoming& x, const char* point, State* kept,
                       std::atomic<int64_t>* incremental, std::atomic<int64_t>* rebuilt) {
    auto build = [&] {
      if constexpr (std::is_same_v<State, FilterState>) {
        return BuildFilter(x);
      } else {
        return BuildScore(x);
      }
    };
    std::vector<int32_t> changed;
    if (!kept->valid || kept->key != x.key || !Replay(x, kept, &changed)) {
      ++*rebuilt;
      Keep(build(), x.key, kept);
      TrimBinds();
      return PluginStatus::Success();
    }
    ++*incremental;
    if (SelfCheck()) {
      State full = build();
      const std::string diff = DiffStates(*kept, full);
      if (!diff.empty()) {
        ++plugins::IpaIncrementalDebugState().mismatches;
        Keep(std::move(full), x.key, kept);
        return PluginStatus::Error(StrCat("InterPodAffinity: incremental ", point, " of pod ", pod.meta.namespace_, "/",
                                          pod.meta.name, " differs from the full rebuild: ", diff));
      }
    }
    UploadChanges(*kept, changed);
    TrimBinds();
    return PluginStatus::Success();
  }

  int64_t BindsEnd() const { return binds_begin_ + static_cast<int64_t>(binds_.size()); }

  // Drops the binds every kept state has counted.
  void TrimBinds() {
    int64_t keep = BindsEnd();
    if (filter_state_.valid) keep = std::min(keep, filter_state_.applied);
    if (score_state_.valid) keep = std::min(keep, score_state_.applied);
    for (; binds_begin_ < keep; ++binds_begin_) binds_.pop_front();
  }

  void ForgetKept() {
    filter_state_.valid = score_state_.valid = false;
    binds_begin_ = BindsEnd();
    binds_.clear();
  }

  void ReadNamespaces(const Snapshot& s) {
    namespaces_.clear();
    namespace_labels_.clear();
    for (const Namespace& ns : s.objects().namespaces) {
      int32_t id = strings_.Intern(ns.meta.name);
      LabelIds labels = InternLabels(ns.meta.labels);
      namespaces_.emplace_back(id, labels);
      namespace_labels_[id] = std::move(labels);
    }
  }

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
    return slot < 0 ? -1 : domains_host_[static_cast<size_t>(slot) * stride_ + n];
  }

  // A topology key's slot: its value ids renumbered into dense domains, built once (node
  // updates and joins write their nodes' domains in place); every class gets its counts
  // for it.
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
    domains_host_.resize(domains_host_.size() + static_cast<size_t>(stride_ - n_), -1);  // room for nodes that join
    slot_domains_.push_back(static_cast<int32_t>(dense.size()));
    slot_key_.push_back(key);
    slot_dense_.push_back(std::move(dense));
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

  // Counts `pod` on `node` in; returns what a replay needs to count it in too, and what
  // counts it out again (RemoveExistingPod).
  BoundPod AddExistingPod(const Pod& pod, NodeIndex node) {
    BoundPod bound{node, -1, {}};
    // Terms first: they may add slots, which the class below then counts in.
    if (plugins::IpaHasPodAffinity(pod)) {
      // A term counts only where the node has its key (§3.2, §5).
      for (CompiledExistingTerm& t : ExistingTermsOf(pod)) {
        const int32_t d = Domain(t.term.slot, node);
        if (d < 0) continue;
        if (t.id < 0) t.id = TermId(t.term);
        CountTerm(t.id, d, t.kind, t.weight, +1);
        bound.terms.push_back(BoundPod::Added{t.id, t.kind, t.weight});
      }
    }
    bound.cls = ClassOf(pod);
    CountClass(bound.cls, node, +1);
    return bound;
  }

  // The class of pods with `pod`'s namespace and labels, made on first sight.
  int32_t ClassOf(const Pod& pod) {
    std::hash<std::string_view> hash;
    size_t h = hash(pod.meta.namespace_);
    for (const auto& [k, v] : pod.meta.labels) h = (h * 1000003) ^ hash(k) ^ (hash(v) << 1);
    // Found first, made only when new: emplace would allocate a node on every bind.
    auto head = class_by_hash_.find(h);
    if (head != class_by_hash_.end()) {
      for (int32_t c = head->second; c >= 0; c = classes_[c].next_same_hash) {
        if (classes_[c].ns_name == pod.meta.namespace_ && classes_[c].raw_labels == pod.meta.labels) return c;
      }
    } else {
      head = class_by_hash_.emplace(h, -1).first;
    }
    PodClass c;
    c.ns = strings_.Intern(pod.meta.namespace_);
    c.labels = InternLabels(pod.meta.labels);
    c.per_slot.resize(slot_domains_.size());
    c.ns_name = pod.meta.namespace_;
    c.raw_labels = pod.meta.labels;
    c.next_same_hash = head->second;
    head->second = static_cast<int32_t>(classes_.size());
    for (size_t t = 0; t < tables_.size(); ++t) {
      if (tables_[t].Matches(c.ns, c.labels)) c.tables.push_back(static_cast<int32_t>(t));
    }
    for (const auto& [k, v] : c.labels) classes_by_label_[LabelKey(k, v)].push_back(static_cast<int32_t>(classes_.size()));
    classes_.push_back(std::move(c));
    return head->second;
  }

  // Counts a pod out as `b` says it was counted in (upstream's RemovePod, §3).
  void RemoveExistingPod(const BoundPod& b) {
    CountClass(b.cls, b.node, -1);
    for (const BoundPod::Added& a : b.terms) CountTerm(a.term, Domain(terms_[a.term].term.slot, b.node), a.kind, a.weight, -1);
  }

  // One pod of class `cls` more (+1) or fewer (-1) on `node`, in the class and in the
  // cached term sets (they see the pod as upstream's AddPod and RemovePod would).
  void CountClass(int32_t cls, NodeIndex node, int64_t delta) {
    PodClass& c = classes_[cls];
    c.nodes[node] += delta;
    for (size_t slot = 0; slot < c.per_slot.size(); ++slot) {
      int32_t d = Domain(static_cast<int32_t>(slot), node);
      if (d >= 0) c.per_slot[slot][d] += delta;
    }
    for (int32_t k : c.tables) {
      MatchTable& t = tables_[k];
      for (size_t i = 0; i < t.slots.size(); ++i) {
        int32_t d = Domain(t.slots[i], node);
        if (d >= 0) t.counts[i][d] += delta;
      }
    }
  }

  // The table of an incoming term set, built from the classes on first use. References
  // stay valid until the next TrimTables (tables_ is a deque).
  const MatchTable& Table(const std::vector<Term>& terms) {
    std::string key;
    PutTerms(&key, terms);
    auto [it, inserted] = table_of_.emplace(std::move(key), static_cast<int32_t>(tables_.size()));
    if (!inserted) return tables_[it->second];
    MatchTable t;
    t.terms = terms;
    t.slots = DistinctSlots(terms);
    t.slots.erase(std::remove(t.slots.begin(), t.slots.end(), -1), t.slots.end());
    t.counts.resize(t.slots.size());
    auto count = [&](PodClass& c) {
      if (!t.Matches(c.ns, c.labels)) return;
      c.tables.push_back(static_cast<int32_t>(tables_.size()));
      for (size_t i = 0; i < t.slots.size(); ++i) {
        for (const auto& [d, n] : c.per_slot[t.slots[i]]) t.counts[i][d] += n;
      }
    };
    // Only the classes that carry a label the first term requires can match all terms.
    if (const Requirement* r = terms.empty() ? nullptr : RequiredLabel(terms[0].selector)) {
      ForEachValue(*r, [&](int32_t v) {
        auto it = classes_by_label_.find(LabelKey(r->key, v));
        if (it == classes_by_label_.end()) return;
        for (int32_t c : it->second) count(classes_[c]);
      });
    } else {
      for (PodClass& c : classes_) count(c);
    }
    tables_.push_back(std::move(t));
    return tables_.back();
  }

  void TrimTables() {
    if (tables_.size() <= kMaxMatchTables) return;
    tables_.clear();
    for (PodClass& c : classes_) c.tables.clear();
    table_of_.clear();
    ForgetKept();  // not needed for exactness; a rebuild after a reset is the simple rule
  }

  // `pod`'s terms compiled, in the order upstream's AddPod visits them: the last pod's when
  // its affinity (and, for matchLabelKeys, its labels) and namespace are the same.
  std::vector<CompiledExistingTerm>& ExistingTermsOf(const Pod& pod) {
    LastExistingTerms& last = last_existing_;
    const std::optional<PodAffinity>& aff = pod.affinity->pod_affinity;
    const std::optional<PodAffinity>& anti = pod.affinity->pod_anti_affinity;
    if (last.valid && last.ns == pod.meta.namespace_ && Same(last.affinity, aff) && Same(last.anti, anti) &&
        (!last.reads_labels || last.labels == pod.meta.labels)) {
      return last.terms;
    }
    last = LastExistingTerms{};
    last.ns = pod.meta.namespace_;
    last.affinity = aff;
    last.anti = anti;
    auto reads = [](const PodAffinityTerm& t) { return !t.match_label_keys.empty() || !t.mismatch_label_keys.empty(); };
    for (const std::optional<PodAffinity>* a : {&aff, &anti}) {
      if (!*a) continue;
      for (const PodAffinityTerm& t : (*a)->required) last.reads_labels |= reads(t);
      for (const WeightedPodAffinityTerm& t : (*a)->preferred) last.reads_labels |= reads(t.term);
    }
    last.reads_labels &= match_label_keys_;
    if (last.reads_labels) last.labels = pod.meta.labels;
    const int32_t ns = strings_.Intern(pod.meta.namespace_);
    plugins::IpaPodTerms parsed = plugins::ParseIpaPodTerms(pod, match_label_keys_);
    auto add = [&](const PodAffinityTerm& t, TermKind kind, int32_t weight) {
      last.terms.push_back(CompiledExistingTerm{Compile(t, ns), kind, weight});
    };
    for (const PodAffinityTerm& t : parsed.required_affinity) add(t, TermKind::kRequiredAffinity, 0);
    for (const PodAffinityTerm& t : parsed.required_anti_affinity) add(t, TermKind::kRequiredAnti, 0);
    for (const auto& wt : parsed.preferred_affinity) add(wt.term, TermKind::kPreferredAffinity, wt.weight);
    for (const auto& wt : parsed.preferred_anti_affinity) add(wt.term, TermKind::kPreferredAnti, wt.weight);
    last.valid = true;
    return last.terms;
  }

  // The existing-term id of `term`, made on first sight.
  int32_t TermId(const Term& term) {
    std::string key = term.Key();
    auto it = term_of_.find(key);
    if (it == term_of_.end()) {
      it = term_of_.emplace(std::move(key), static_cast<int32_t>(terms_.size())).first;
      terms_.push_back(ExistingTerm{term, {}, false, false});
    }
    return it->second;
  }

  // One pod more (+1) or fewer (-1) with existing term `id` of `kind` in domain d.
  void CountTerm(int32_t id, int32_t d, TermKind kind, int32_t weight, int64_t delta) {
    ExistingTerm& et = terms_[id];
    Cell& cell = et.cells[d];
    switch (kind) {
      case TermKind::kRequiredAnti:
        cell.required_anti += delta;
        if (!et.in_anti_list) anti_terms_.Add(id, et.term.selector);
        et.in_anti_list = true;
        return;
      case TermKind::kRequiredAffinity:
        cell.required_aff += delta;
        break;
      case TermKind::kPreferredAffinity:
        cell.preferred += delta;
        cell.preferred_weight += delta * weight;
        break;
      case TermKind::kPreferredAnti:
        cell.preferred += delta;
        cell.preferred_weight -= delta * weight;
        break;
    }
    if (!et.in_score_list) score_terms_.Add(id, et.term.selector);
    et.in_score_list = true;
  }

  void UploadDomains() { Upload(domains_host_, &domains_); }
  // Writes the positions of domains_host_ in `changed` to the backend copy, or all of it
  // when a slot made since (a PreScore that skipped before syncing) left the copy short.
  void UploadDomainChanges(const std::vector<int32_t>& changed) {
    if (domains_.size() != domains_host_.size()) return UploadDomains();
    UploadChanged(domains_host_, changed, &domains_);
  }
  // Slots only grow, so a size change is the only way the device copy goes stale.
  void SyncDomains() {
    if (domains_.size() != domains_host_.size()) UploadDomains();
  }

  InterPodAffinityArgs args_;
  bool match_label_keys_;
  bool self_check_env_ = false;  // KPLACE_IPA_SELF_CHECK=1
  const Snapshot* snapshot_ = nullptr;
  int32_t n_ = 0;
  engine::Interner strings_;  // label keys, values and namespaces seen by this plugin

  // Topology-key slots.
  std::unordered_map<std::string, int32_t> slot_of_;
  std::vector<int32_t> slot_domains_;  // [slot]: number of domains
  std::vector<std::string> slot_key_;  // [slot]: its topology key
  std::vector<std::unordered_map<int32_t, int32_t>> slot_dense_;  // [slot]: label value id -> domain
  int32_t stride_ = 0;  // row length of domains_host_ (>= n_): nodes that join take the spare room
  std::vector<int32_t> domains_host_;  // [slot * stride_ + node]: domain, -1 without the key
  vector<int32_t> domains_;

  // Namespace objects: (name id, labels), and labels by name id.
  std::vector<std::pair<int32_t, LabelIds>> namespaces_;
  std::unordered_map<int32_t, LabelIds> namespace_labels_;

  // Existing pods.
  std::vector<PodClass> classes_;
  std::unordered_map<size_t, int32_t> class_by_hash_;  // hash of namespace and labels -> first class
  std::unordered_map<uint64_t, std::vector<int32_t>> classes_by_label_;  // LabelKey -> classes carrying it
  std::deque<MatchTable> tables_;
  std::unordered_map<std::string, int32_t> table_of_;
  std::vector<ExistingTerm> terms_;
  std::unordered_map<std::string, int32_t> term_of_;
  LastExistingTerms last_existing_;
  std::unordered_map<const Pod*, BoundPod> counted_;  // what each bound pod added, by its address
  TermIndex anti_terms_;   // terms with required anti-affinity cells
  TermIndex score_terms_;  // terms with required affinity or preferred cells

  // The current pod.
  IpaFilterParams filter_{};
  vector<IpaKeyTable> filter_keys_;
  vector<uint8_t> present_;
  bool score_ready_ = false;
  int32_t num_score_keys_ = 0;
  vector<IpaKeyTable> score_keys_;
  vector<int64_t> score_values_;
  // Every index of score_values_ an upload wrote since its last full one: the others are 0.
  std::vector<int32_t> backend_written_, score_changed_;

  // The last compiled pods' tables (their backend copies are filter_keys_, present_,
  // score_keys_, score_values_) and the binds since the older of them.
  FilterState filter_state_;
  ScoreState score_state_;
  // BuildScore's next buffer, zero but where spare_written_ says (moved out: empty).
  std::vector<int64_t> spare_values_;
  std::vector<int32_t> spare_written_;
  std::vector<int32_t> fired_slots_;
  std::deque<BoundPod> binds_;
  int64_t binds_begin_ = 0;  // sequence number of binds_.front()
};

KPLACE_REGISTER_ENGINE_PLUGIN(InterPodAffinity, InterPodAffinity);

}  // namespace
}  // namespace kplace::KPLACE_BACKEND_NS
