#include "kplace/cycle/preemption.h"

#include <algorithm>
#include <limits>
#include <numeric>
#include <set>

#include "kplace/common/strings.h"
#include "kplace/cycle/node_order.h"
#include "kplace/model/decode.h"
#include "kplace/model/validation.h"
#include "kplace/plugins/volume_common.h"
#include "kplace/reference/plugin.h"

namespace kplace::cycle {
namespace {

constexpr int64_t kNow = std::numeric_limits<int64_t>::max();  // a missing start time: "now"
constexpr size_t kDryRunFirstBlock = 64;  // nodes handed to DryRunHost::Prefetch first

// A potential victim with what MoreImportantVictim compares (§7.1).
struct Ranked {
  const Pod* pod;
  int32_t listed;  // NodeInfo position: of two pods without a start time, the first built is older
  bool grouped;    // GenericWorkload on and the pod names a PodGroup: it ranks above a plain pod
};

int64_t StartTime(const Pod& pod) { return pod.start_time_ns.value_or(kNow); }

bool MoreImportant(const Ranked& a, const Ranked& b) {
  int32_t pa = PodPriority(*a.pod), pb = PodPriority(*b.pod);
  if (pa != pb) return pa > pb;
  if (a.grouped != b.grouped) return a.grouped;
  int64_t sa = StartTime(*a.pod), sb = StartTime(*b.pod);
  if (sa != sb) return sa < sb;
  if (sa == kNow) return a.listed < b.listed;
  return a.pod->meta.uid < b.pod->meta.uid;
}

bool SelectorValid(const LabelSelector& s) {
  for (const LabelSelectorRequirement& r : s.match_expressions) {
    bool with_values = r.op == "In" || r.op == "NotIn";
    bool without = r.op == "Exists" || r.op == "DoesNotExist";
    if (!with_values && !without) return false;
    if (with_values == r.values.empty()) return false;
  }
  return true;
}

// ClassifyPDB (§8): `pods` in importance order; budgets are fresh for each call.
void ClassifyPdb(const std::vector<Ranked>& pods, const std::vector<PodDisruptionBudget>& pdbs,
                 std::vector<Ranked>* violating, std::vector<Ranked>* non_violating) {
  std::vector<const Pod*> plain(pods.size());
  for (size_t k = 0; k < pods.size(); ++k) plain[k] = pods[k].pod;
  const std::vector<bool> violates = ViolatesPdb(plain, pdbs);
  for (size_t k = 0; k < pods.size(); ++k) (violates[k] ? violating : non_violating)->push_back(pods[k]);
}

// GetEarliestPodStartTime: the earliest start among the victims of the highest priority.
int64_t EarliestStartOfHighest(const std::vector<const Pod*>& victims) {
  int32_t top = PodPriority(*victims[0]);
  int64_t earliest = StartTime(*victims[0]);
  for (const Pod* p : victims) {
    int32_t prio = PodPriority(*p);
    if (prio == top) {
      earliest = std::min(earliest, StartTime(*p));
    } else if (prio > top) {
      top = prio;
      earliest = StartTime(*p);
    }
  }
  return earliest;
}

}  // namespace

std::vector<bool> ViolatesPdb(const std::vector<const Pod*>& pods, const std::vector<PodDisruptionBudget>& pdbs) {
  std::vector<int64_t> allowed(pdbs.size());
  for (size_t i = 0; i < pdbs.size(); ++i) allowed[i] = pdbs[i].disruptions_allowed;
  std::vector<bool> out(pods.size(), false);
  for (size_t k = 0; k < pods.size(); ++k) {
    const Pod& q = *pods[k];
    if (q.meta.labels.empty()) continue;
    for (size_t i = 0; i < pdbs.size() && !out[k]; ++i) {
      const PodDisruptionBudget& pdb = pdbs[i];
      if (pdb.meta.namespace_ != q.meta.namespace_ || !pdb.selector) continue;
      const LabelSelector& sel = *pdb.selector;
      if ((sel.match_labels.empty() && sel.match_expressions.empty()) || !SelectorValid(sel)) continue;
      if (!plugins::volume::LabelSelectorMatches(sel, q.meta.labels)) continue;
      if (std::binary_search(pdb.disrupted_pods.begin(), pdb.disrupted_pods.end(), q.meta.name)) continue;
      if (--allowed[i] < 0) out[k] = true;
    }
  }
  return out;
}

bool SamePod(const Pod& a, const Pod& b) {
  if (&a == &b) return true;
  if (!a.meta.uid.empty() && a.meta.uid == b.meta.uid) return true;
  return a.meta.name == b.meta.name && a.meta.namespace_ == b.meta.namespace_;
}

bool TerminatingByPreemption(const Pod& pod) {
  if (pod.meta.deletion_timestamp.empty()) return false;
  for (const PodCondition& c : pod.conditions) {
    if (c.type == "DisruptionTarget") return c.status == "True" && c.reason == "PreemptionByScheduler";
  }
  return false;
}

bool PodEligibleToPreemptOthers(const Pod& pod, const PluginStatus* nominated_status, const DryRunHost& host,
                                std::string* reason) {
  if (pod.preemption_policy == "Never") {
    *reason = "not eligible due to preemptionPolicy=Never.";
    return false;
  }
  if (pod.nominated_node_name.empty()) return true;
  // The nomination no longer helps: the pod may preempt elsewhere at once.
  if (nominated_status && nominated_status->code == Code::kUnschedulableAndUnresolvable) return true;
  int32_t node = host.IndexOf(pod.nominated_node_name);
  if (node < 0) return true;
  for (const Pod* p : host.PodsOn(node)) {
    if (PodPriority(*p) < PodPriority(pod) && TerminatingByPreemption(*p)) {
      *reason = "not eligible due to a terminating pod on the nominated node.";
      return false;
    }
  }
  return true;
}

std::vector<int32_t> NodesForStatusCode(const NodeToStatus& statuses, Code code, const DryRunHost& host,
                                        const std::vector<int32_t>* order) {
  std::vector<int32_t> out;
  const int32_t n = order ? static_cast<int32_t>(order->size()) : host.NumNodes();
  for (int32_t k = 0; k < n; ++k) {
    const int32_t i = order ? (*order)[k] : k;
    if (statuses.Get(i).code == code) out.push_back(i);
  }
  return out;
}

int32_t NumCandidates(int32_t potential, const DefaultPreemptionArgs& args) {
  int64_t n = static_cast<int64_t>(potential) * args.min_candidate_nodes_percentage / 100;
  n = std::max<int64_t>(n, args.min_candidate_nodes_absolute);
  return static_cast<int32_t>(std::min<int64_t>(n, potential));
}

namespace {
// SelectVictimsOnNode's lists, kept from one node to the next: the dry run calls it for
// hundreds of nodes in a row.
struct VictimLists {
  std::vector<Ranked> potential, violating, non_violating, victims;
  std::vector<const Pod*> removed;
};
}  // namespace

PluginStatus SelectVictimsOnNode(DryRunHost& host, const Pod& pod, int32_t node,
                                 const std::vector<PodDisruptionBudget>& pdbs, Candidate* out, bool generic_workload) {
  thread_local VictimLists lists;
  std::vector<Ranked>& potential = lists.potential;
  std::vector<const Pod*>& removed = lists.removed;
  potential.clear();
  removed.clear();
  const std::vector<const Pod*>& pods = host.PodsOn(node);
  const int32_t priority = PodPriority(pod);
  for (size_t i = 0; i < pods.size(); ++i) {
    if (PodPriority(*pods[i]) < priority) {
      potential.push_back({pods[i], static_cast<int32_t>(i), generic_workload && !pods[i]->scheduling_group.empty()});
      removed.push_back(pods[i]);
    }
  }
  if (potential.empty()) {
    return PluginStatus::Make(Code::kUnschedulableAndUnresolvable, "No preemption victims found for incoming pod");
  }
  PluginStatus st = host.Filter(pod, node, removed);
  if (!st.IsSuccess()) return st;

  std::sort(potential.begin(), potential.end(), MoreImportant);
  std::vector<Ranked>& violating = lists.violating;
  std::vector<Ranked>& non_violating = lists.non_violating;
  std::vector<Ranked>& victims = lists.victims;
  violating.clear();
  non_violating.clear();
  victims.clear();
  ClassifyPdb(potential, pdbs, &violating, &non_violating);
  // Put q back; it stays when the pod still fits.
  auto reprieve = [&](const Ranked& q) {
    removed.erase(std::find(removed.begin(), removed.end(), q.pod));
    if (host.Fits(pod, node, removed)) return true;
    removed.push_back(q.pod);
    victims.push_back(q);
    return false;
  };
  out->node = node;
  out->num_pdb_violations = 0;
  for (const Ranked& q : violating) out->num_pdb_violations += reprieve(q) ? 0 : 1;
  for (const Ranked& q : non_violating) reprieve(q);
  if (!violating.empty() && !non_violating.empty()) std::sort(victims.begin(), victims.end(), MoreImportant);
  out->victims.clear();
  out->victims.reserve(victims.size());
  for (const Ranked& v : victims) out->victims.push_back(v.pod);
  return PluginStatus::Success();
}

DryRunResult DryRunPreemption(DryRunHost& host, const Pod& pod, const std::vector<int32_t>& potential,
                              const std::vector<PodDisruptionBudget>& pdbs, int32_t offset, int32_t num_candidates,
                              bool generic_workload) {
  DryRunResult out;
  std::vector<Candidate> non_violating, violating;
  const size_t n = potential.size();
  // The nodes go to the host in blocks of the visit order, doubling: a host that prepares
  // them at once prepares at most about twice what is tried.
  std::vector<int32_t> block;
  for (size_t i = 0, start = 0; i < n; ++i) {
    if (i == start + block.size()) {
      start = i;
      block.clear();
      for (size_t k = i; k < std::min(n, i + std::max(kDryRunFirstBlock, i)); ++k) {
        block.push_back(potential[(static_cast<size_t>(offset) + k) % n]);
      }
      host.Prefetch(pod, block);
    }
    const int32_t node = block[i - start];
    Candidate c;
    PluginStatus st = SelectVictimsOnNode(host, pod, node, pdbs, &c, generic_workload);
    if (st.IsSuccess() && !c.victims.empty()) {
      std::vector<Candidate>& list = c.num_pdb_violations == 0 ? non_violating : violating;
      if (static_cast<int32_t>(list.size()) < num_candidates) list.push_back(std::move(c));
      if (!non_violating.empty() && non_violating.size() + violating.size() >= static_cast<size_t>(num_candidates)) break;
      continue;
    }
    if (st.refused) {  // the node's filters need what kplace does not model: no decision
      out.refusal = std::move(st);
      break;
    }
    if (st.IsSuccess()) {
      st = PluginStatus::Error(StrCat("expected at least one victim pod on node ", GoQuote(host.NodeAt(node).meta.name)));
    }
    if (st.code == Code::kError) out.errors.push_back(st.Message());
    out.statuses.Set(node, std::move(st));
  }
  out.candidates = std::move(non_violating);
  for (Candidate& c : violating) out.candidates.push_back(std::move(c));
  return out;
}

int64_t CandidateScore(const Candidate& c, int32_t criterion) {
  switch (criterion) {
    case 0:
      return -c.num_pdb_violations;
    case 1:
      return -static_cast<int64_t>(PodPriority(*c.victims[0]));
    case 2: {
      // 2^31 is added to every priority so that more victims of negative priority never win.
      int64_t sum = 0;
      for (const Pod* p : c.victims) sum += static_cast<int64_t>(PodPriority(*p)) + (int64_t{1} << 31);
      return -sum;
    }
    case 3:
      return -static_cast<int64_t>(c.victims.size());
    default:
      return EarliestStartOfHighest(c.victims);
  }
}

int32_t SelectCandidate(const std::vector<Candidate>& candidates, int32_t* decided_by) {
  if (decided_by) *decided_by = 0;
  if (candidates.empty()) return -1;
  std::vector<int32_t> left(candidates.size());
  std::iota(left.begin(), left.end(), 0);
  if (left.size() == 1) return 0;
  // Each criterion keeps the best candidates; the next one breaks what is still tied.
  for (int32_t c = 0; c < kNumCandidateCriteria; ++c) {
    std::vector<int32_t> best;
    int64_t max = std::numeric_limits<int64_t>::min();
    for (int32_t i : left) {
      int64_t s = CandidateScore(candidates[i], c);
      if (s > max) {
        max = s;
        best.clear();
      }
      if (s == max) best.push_back(i);
    }
    if (best.size() == 1) {
      if (decided_by) *decided_by = c;
      return best[0];
    }
    left = std::move(best);
  }
  if (decided_by) *decided_by = kNumCandidateCriteria;
  return left[0];
}

PluginStatus PreEnqueue(const Pod& pod, bool async_preemption, const std::set<std::string>& preempting) {
  if (!async_preemption || !preempting.count(pod.meta.uid)) return PluginStatus::Success();
  return PluginStatus::Make(Code::kUnschedulableAndUnresolvable, "waiting for the preemption for this pod to be finished");
}

std::string StatusesMessage(int32_t num_all_nodes, const NodeToStatus& statuses) {
  std::vector<int64_t> rows(statuses.statuses.size(), 0);  // rows per shared status
  for (int32_t s : statuses.of_row) {
    if (s >= 0) ++rows[s];
  }
  std::map<std::string, int64_t> reasons;
  for (size_t s = 0; s < rows.size(); ++s) {
    for (const std::string& r : statuses.statuses[s].reasons) reasons[r] += rows[s];
  }
  for (const PluginStatus& status : statuses.unplaced) {
    for (const std::string& r : status.reasons) ++reasons[r];
  }
  int64_t absent = num_all_nodes - statuses.size();
  if (absent > 0) {
    for (const std::string& r : statuses.absent.reasons) reasons[r] += absent;
  }
  return FitErrorMessage(num_all_nodes, "", reasons);
}

namespace {

// Preempt (§2) without the "preemption: " prefix.
PostFilterResult Preempt(DryRunHost& host, const Pod& pod, const NodeToStatus& statuses,
                         const std::vector<PodDisruptionBudget>& pdbs, const PostFilterOptions& options) {
  PostFilterResult out;
  std::string why;
  const int32_t nominated = pod.nominated_node_name.empty() ? -1 : host.IndexOf(pod.nominated_node_name);
  if (!PodEligibleToPreemptOthers(pod, &statuses.Get(nominated), host, &why)) {
    out.status = PluginStatus::Make(Code::kUnschedulable, why);
    return out;
  }
  // The snapshot's nodes: the order lists them when given (the host may hold rows of nodes
  // that left).
  const std::vector<int32_t>* order = options.node_order.empty() ? nullptr : &options.node_order;
  const int32_t num_all_nodes = order ? static_cast<int32_t>(order->size()) : host.NumNodes();
  if (num_all_nodes == 0) {
    out.status = PluginStatus::Error("no nodes available");
    return out;
  }
  std::vector<int32_t> potential = NodesForStatusCode(statuses, Code::kUnschedulable, host, order);
  DryRunResult dry;
  if (!potential.empty()) {
    int32_t n = static_cast<int32_t>(potential.size());
    int32_t offset = options.offset ? options.offset(n) : 0;
    dry = DryRunPreemption(host, pod, potential, pdbs, offset, NumCandidates(n, options.args), options.generic_workload);
    if (dry.refusal) {
      out.status = std::move(*dry.refusal);
      return out;
    }
    if (!dry.errors.empty() && dry.candidates.empty()) {
      std::string msg;
      for (size_t i = 0; i < dry.errors.size(); ++i) msg += (i ? ", " : "") + dry.errors[i];
      out.status = PluginStatus::Error(dry.errors.size() == 1 ? msg : StrCat("[", msg, "]"));
      return out;
    }
  }
  out.candidates = dry.candidates;
  out.dry_run_statuses = dry.statuses;
  if (dry.candidates.empty()) {
    NodeToStatus s = std::move(dry.statuses);
    s.absent = PluginStatus::Make(Code::kUnschedulableAndUnresolvable, "Preemption is not helpful for scheduling");
    out.has_result = true;  // clears the nomination
    out.status = PluginStatus::Make(Code::kUnschedulable, StatusesMessage(num_all_nodes, s));
    return out;
  }

  std::vector<Candidate> candidates = std::move(dry.candidates);
  if (!options.extenders.empty()) {
    std::map<std::string, Candidate> victims;
    for (const Candidate& c : candidates) victims[host.NodeAt(c.node).meta.name] = c;
    for (PreemptionExtender* ext : options.extenders) {
      if (!ext->IsInterested(pod)) continue;
      std::map<std::string, Candidate> next = victims;
      std::string error;
      if (!ext->ProcessPreemption(pod, &next, &error)) {
        if (ext->IsIgnorable()) continue;
        out.status = PluginStatus::Error(error);
        return out;
      }
      for (auto it = next.begin(); it != next.end();) {
        if (!it->second.victims.empty()) {
          ++it;
        } else if (ext->IsIgnorable()) {
          it = next.erase(it);
        } else {
          out.status = PluginStatus::Error(StrCat("expected at least one victim pod on node ", GoQuote(it->first)));
          return out;
        }
      }
      victims = std::move(next);
      if (victims.empty()) break;
    }
    // Upstream rebuilds the list in map order; the dry run's order is kept here.
    std::vector<Candidate> kept;
    for (const Candidate& c : candidates) {
      auto it = victims.find(host.NodeAt(c.node).meta.name);
      if (it != victims.end()) kept.push_back(it->second);
    }
    candidates = std::move(kept);
  }
  int32_t best = SelectCandidate(candidates, &out.decided_by);
  if (best < 0) {
    out.status = PluginStatus::Make(Code::kUnschedulable, "no candidate node for preemption");
    return out;
  }
  const Candidate& chosen = candidates[best];
  out.has_result = true;
  out.nominated_node = host.NodeAt(chosen.node).meta.name;
  out.victims = chosen.victims;
  out.status = PluginStatus::Make(Code::kSuccess, StrCat("found a potential placement for pod on node ", out.nominated_node,
                                                         ", preempting ", chosen.victims.size(), " victims"));
  return out;
}

}  // namespace

PostFilterResult PostFilter(DryRunHost& host, const Pod& pod, const NodeToStatus& statuses,
                            const std::vector<PodDisruptionBudget>& pdbs, const PostFilterOptions& options) {
  PostFilterResult out = Preempt(host, pod, statuses, pdbs, options);
  std::string msg = out.status.Message();
  if (!msg.empty()) out.status.reasons = {StrCat("preemption: ", msg)};
  return out;
}

// ---- the reference host -----------------------------------------------------------------

// Their PreFilter state is computed again whenever the dry run changes a node's pods.
bool PodDependentPreFilter(const std::string& name) {
  return name == "InterPodAffinity" || name == "PodTopologySpread" || name == "VolumeRestrictions";
}

namespace {
// Whether adding or removing `changed` can change that plugin's PreFilter state for `pod`:
// only pods its counts can see do (AddPod/RemovePod of any other pod leave it as it was).
// Selectors are checked without matchLabelKeys, which only narrow them.
bool StateSees(const std::string& name, const Pod& pod, const std::vector<const Pod*>& changed) {
  auto matches = [](const std::optional<LabelSelector>& sel, const Pod& q) {
    return sel && plugins::volume::LabelSelectorMatches(*sel, q.meta.labels);
  };
  for (const Pod* q : changed) {
    if (name == "InterPodAffinity") {
      // Existing pods' anti-affinity against the pod, and the pod's terms against them.
      if (q->affinity && q->affinity->pod_anti_affinity && !q->affinity->pod_anti_affinity->required.empty()) return true;
      if (!pod.affinity) continue;
      for (const auto* a : {&pod.affinity->pod_affinity, &pod.affinity->pod_anti_affinity}) {
        if (!*a) continue;
        for (const PodAffinityTerm& t : (*a)->required) {
          if (matches(t.label_selector, *q)) return true;
        }
      }
    } else if (name == "PodTopologySpread") {
      // Constraints defaulted from the profile select by the pod's owners: always recount.
      if (pod.topology_spread_constraints.empty()) return true;
      for (const TopologySpreadConstraint& c : pod.topology_spread_constraints) {
        if (c.when_unsatisfiable == "DoNotSchedule" && q->meta.namespace_ == pod.meta.namespace_ &&
            matches(c.label_selector, *q)) {
          return true;
        }
      }
    } else if (!q->volumes.empty()) {
      return true;
    }
  }
  return false;
}
}  // namespace

struct ReferenceDryRunHost::Impl {
  const reference::ClusterState& base;
  reference::ClusterState work;  // base, with one node's pods changed during a call
  std::vector<Named> pre_filter, filter;
  std::vector<const Pod*> nominated;
  std::string rejector;  // the last Filter's rejecting plugin
  std::map<std::string, int32_t> index;
  // PreFilter of the current pod on the unchanged cluster.
  const Pod* pod = nullptr;
  std::string key, uid;
  reference::CycleState cycle;
  std::set<std::string> skipped;
  PluginStatus pre_status;

  // The filter chain on `node` of the work state as it is now (RunFilterPlugins), where
  // `changed` are the pods that differ from the unchanged cluster.
  PluginStatus RunFilters(const Pod& p, int32_t node, const std::vector<const Pod*>& changed) {
    reference::CycleState state = cycle;
    std::set<std::string> skip = skipped;
    for (const Named& n : pre_filter) {
      // A plugin that skipped the pod at PreFilter stays skipped through the dry run.
      if (!PodDependentPreFilter(n.first) || skip.count(n.first) || !StateSees(n.first, p, changed)) continue;
      reference::NodeNameSet names;
      PluginStatus s = n.second->PreFilter(state, p, work, &names);
      if (s.IsSkip()) {
        skip.insert(n.first);
      } else if (!s.IsSuccess()) {
        return s.IsRejected() || s.refused ? s : PluginStatus::Error(StrCat("running PreFilter plugin \"", n.first, "\": ", s.Message()));
      }
    }
    for (const Named& n : filter) {
      if (skip.count(n.first)) continue;
      PluginStatus s = n.second->Filter(state, p, work.nodes[node], work);
      if (s.IsSuccess()) continue;
      if (!s.IsRejected() && !s.refused) return PluginStatus::Error(StrCat("running \"", n.first, "\" filter plugin: ", s.Message()));
      rejector = n.first;
      return s;
    }
    return PluginStatus::Success();
  }

  void PreFilterOnce(const Pod& p) {
    // The same object with the same identity: callers may reuse an address for another pod.
    if (pod == &p && key == ObjectKey(p.meta) && uid == p.meta.uid) return;
    pod = &p;
    key = ObjectKey(p.meta);
    uid = p.meta.uid;
    cycle = reference::CycleState();
    skipped.clear();
    pre_status = PluginStatus::Success();
    for (const Named& n : pre_filter) {
      reference::NodeNameSet names;
      PluginStatus s = n.second->PreFilter(cycle, p, base, &names);
      if (s.IsSkip()) {
        skipped.insert(n.first);
      } else if (!s.IsSuccess() && pre_status.IsSuccess() && !PodDependentPreFilter(n.first)) {
        pre_status = s.IsRejected() || s.refused ? s : PluginStatus::Error(StrCat("running PreFilter plugin \"", n.first, "\": ", s.Message()));
      }
    }
  }
};

ReferenceDryRunHost::ReferenceDryRunHost(const reference::ClusterState& state, std::vector<Named> pre_filter,
                                         std::vector<Named> filter, std::vector<const Pod*> nominated)
    : impl_(new Impl{state, state, std::move(pre_filter), std::move(filter), std::move(nominated), {}, {}, nullptr, {}, {}, {}, {}, {}}) {
  for (size_t i = 0; i < state.nodes.size(); ++i) impl_->index[state.nodes[i].node->meta.name] = static_cast<int32_t>(i);
}

ReferenceDryRunHost::~ReferenceDryRunHost() = default;

int32_t ReferenceDryRunHost::NumNodes() const { return static_cast<int32_t>(impl_->base.nodes.size()); }
const Node& ReferenceDryRunHost::NodeAt(int32_t node) const { return *impl_->base.nodes[node].node; }
int32_t ReferenceDryRunHost::IndexOf(const std::string& name) const {
  auto it = impl_->index.find(name);
  return it == impl_->index.end() ? -1 : it->second;
}
const std::vector<const Pod*>& ReferenceDryRunHost::PodsOn(int32_t node) const { return impl_->base.nodes[node].pods; }

PluginStatus ReferenceDryRunHost::Filter(const Pod& pod, int32_t node, const std::vector<const Pod*>& removed) {
  Impl& m = *impl_;
  m.PreFilterOnce(pod);
  std::vector<const Pod*> kept;
  for (const Pod* p : m.base.nodes[node].pods) {
    if (std::find(removed.begin(), removed.end(), p) == removed.end()) kept.push_back(p);
  }
  // Nominated pods that outrank or tie the pod count on their node in a first pass.
  std::vector<const Pod*> with_nominated = kept;
  const std::string& name = m.base.nodes[node].node->meta.name;
  for (const Pod* p : m.nominated) {
    if (p->nominated_node_name == name && NominatedCountsFor(*p, pod)) {
      with_nominated.push_back(p);
    }
  }
  PluginStatus status;
  m.rejector.clear();
  for (int pass = 0; pass < 2; ++pass) {
    if (pass == 1 && (with_nominated.size() == kept.size() || !status.IsSuccess())) break;
    m.work.nodes[node].pods = pass == 0 ? with_nominated : kept;
    std::vector<const Pod*> changed = removed;
    if (pass == 0) changed.insert(changed.end(), with_nominated.begin() + kept.size(), with_nominated.end());
    ++filter_calls_;
    status = m.pre_status.IsSuccess() ? m.RunFilters(pod, node, changed) : m.pre_status;
    if (!status.IsSuccess() && !status.IsRejected()) break;
  }
  m.work.nodes[node].pods = m.base.nodes[node].pods;
  if (status.IsSuccess()) m.rejector.clear();
  return status;
}

const std::string& ReferenceDryRunHost::last_rejector() const { return impl_->rejector; }

}  // namespace kplace::cycle
