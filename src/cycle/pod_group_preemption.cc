// Workload-aware preemption: DefaultPreemption's PodGroupPostFilter, which runs when a
// PodGroup cycle leaves its group Unschedulable (GenericWorkload, v1.37; docs/podgroup.md).
// The whole cluster is one domain: every lower-priority pod is removed, the group algorithm
// runs once on what is left, and the removed pods are put back one at a time, most
// important first, while every member the run placed still passes Filter where it was
// placed. The pods that could not go back are the victims.
#include <algorithm>
#include <iterator>
#include <limits>
#include <string>
#include <utility>
#include <vector>

#include "cycle_scheduler.h"
#include "kplace/common/strings.h"
#include "kplace/model/decode.h"
#include "kplace/state/event.h"

namespace kplace::cycle {

namespace {

// A preemption unit. Each is one pod: PodGroup's disruptionMode (a whole group evicted as
// one unit) is not modelled.
struct Unit {
  Pod pod;  // a copy: the cluster changes while units are tried
  std::string key;
  int32_t priority;  // its PodGroup's, when it has one, else its own
  bool in_group;     // names a PodGroup: ranks above a plain pod of its priority
  int64_t start;     // status.startTime; none: after every pod that has one
};

// MoreImportantVictim: higher priority, a PodGroup's pod before a plain one, the earlier
// start, the smaller UID; kplace's inputs may lack UIDs, so the earlier listed last.
bool MoreImportant(const Unit& a, const Unit& b) {
  if (a.priority != b.priority) return a.priority > b.priority;
  if (a.in_group != b.in_group) return a.in_group;
  if (a.start != b.start) return a.start < b.start;
  return a.pod.meta.uid < b.pod.meta.uid;
}

// Whether a member's Filter verdict can depend on pods on other nodes than its own: through
// its required inter-pod (anti-)affinity, a hard spread constraint (its own or the profile's
// defaults), or its volumes and claims. Conservative: any volume counts.
bool SeesOtherNodes(const Pod& pod, const PodTopologySpreadArgs& spread) {
  if (pod.affinity && ((pod.affinity->pod_affinity && !pod.affinity->pod_affinity->required.empty()) ||
                       (pod.affinity->pod_anti_affinity && !pod.affinity->pod_anti_affinity->required.empty()))) {
    return true;
  }
  const auto hard = [](const TopologySpreadConstraint& c) { return c.when_unsatisfiable != "ScheduleAnyway"; };
  if (std::any_of(pod.topology_spread_constraints.begin(), pod.topology_spread_constraints.end(), hard)) return true;
  if (pod.topology_spread_constraints.empty() &&
      std::any_of(spread.default_constraints.begin(), spread.default_constraints.end(), hard)) {
    return true;
  }
  return !pod.volumes.empty() || !pod.resource_claims.empty();
}

// Whether a pod put back can change verdicts on other nodes than its own: through its
// required anti-affinity, its volumes or its claims.
bool ReachesOtherNodes(const Pod& pod) {
  if (pod.affinity && pod.affinity->pod_anti_affinity && !pod.affinity->pod_anti_affinity->required.empty()) return true;
  return !pod.volumes.empty() || !pod.resource_claims.empty();
}

}  // namespace

CycleScheduler::GroupPreemption CycleScheduler::PreemptForPodGroup(const GroupMembers& g, int32_t priority) {
  GroupPreemption r;
  // validatePodGroup made every member's policy the same.
  if (g.pods[g.queued.front()]->preemption_policy == "Never") {
    r.message = "not eligible due to preemptionPolicy=Never.";
    return r;
  }
  auto priority_of = [&](const Pod& pod) {
    if (!pod.scheduling_group.empty()) {
      if (const PodGroup* pg = state_.FindPodGroup(StrCat(pod.meta.namespace_, "/", pod.scheduling_group))) {
        return PodGroupPriority(*pg, objects());
      }
    }
    return PodPriority(pod);
  };

  // A lower-priority pod still terminating for an earlier preemption on a member's
  // nominated node: that preemption is under way, and the nominations stand.
  for (size_t m : g.queued) {
    const Pod* nominated = state_.Nomination(ObjectKey(g.pods[m]->meta));
    const NodeIndex row = nominated ? state_.Row(nominated->nominated_node_name) : engine::kNoId;
    if (row == engine::kNoId) continue;
    for (const Pod* q : state_.PodsOn({row})) {
      if (priority_of(*q) < priority && TerminatingByPreemption(*q)) {
        r.code = Code::kSuccess;
        r.message = "ongoing preemption on nominated nodes";
        for (size_t k : g.queued) {
          const Pod* n = state_.Nomination(ObjectKey(g.pods[k]->meta));
          r.nominations.emplace_back(k, n ? n->nominated_node_name : "");
        }
        return r;
      }
    }
  }

  std::vector<Unit> units;
  for (const Pod* q : state_.PodsOn(state_.order())) {
    const int32_t p = priority_of(*q);
    if (p >= priority) continue;
    units.push_back(Unit{*q, ObjectKey(q->meta), p, !q->scheduling_group.empty(),
                         q->start_time_ns.value_or(std::numeric_limits<int64_t>::max())});
  }
  if (units.empty()) {
    r.code = Code::kUnschedulableAndUnresolvable;
    r.message = "No preemption victims found for incoming preemptor";
    return r;
  }
  std::stable_sort(units.begin(), units.end(), MoreImportant);
  // The units that would break a PodDisruptionBudget are put back first.
  {
    std::vector<const Pod*> ranked(units.size());
    for (size_t u = 0; u < units.size(); ++u) ranked[u] = &units[u].pod;
    const std::vector<bool> violates = ViolatesPdb(ranked, objects().pdbs);
    std::vector<Unit> first, rest;
    for (size_t u = 0; u < units.size(); ++u) (violates[u] ? first : rest).push_back(std::move(units[u]));
    units = std::move(first);
    units.insert(units.end(), std::make_move_iterator(rest.begin()), std::make_move_iterator(rest.end()));
  }

  // Transactions this function opened and has not closed: an error closes them, so the
  // cluster is as it was.
  int32_t open = 0;
  auto begin = [&]() -> absl::Status {
    KPLACE_RETURN_IF_ERROR(state_.Begin());
    ++open;
    return absl::OkStatus();
  };
  auto revert = [&]() -> absl::Status {
    --open;
    return state_.Revert();
  };
  auto fail = [&](const absl::Status& s) {
    while (open > 0) (void)revert();
    r.code = Code::kError;
    r.message = std::string(s.message());
    return r;
  };
  auto remove_all = [&]() -> absl::Status {
    KPLACE_RETURN_IF_ERROR(begin());
    for (const Unit& u : units) KPLACE_RETURN_IF_ERROR(state_.Apply(state::PodEvent(state::EventType::kDeleted, u.pod)));
    return absl::OkStatus();
  };

  // The group algorithm once, on the cluster without any of them. Its cycles move the start
  // index on, as upstream's do.
  std::vector<Placement> run(g.pods.size());
  std::vector<Placement*> slots(g.pods.size(), nullptr);
  for (size_t m : g.queued) {
    run[m].pod = ObjectKey(g.pods[m]->meta);
    slots[m] = &run[m];
  }
  if (absl::Status s = remove_all(); !s.ok()) return fail(s);
  size_t evaluated = 0;
  const GroupStatus rerun = RunPodGroup(g, slots, &evaluated);
  --open;
  if (absl::Status s = RevertKeepingCycle(); !s.ok()) return fail(s);
  if (rerun.code != Code::kSuccess) {
    r.code = rerun.code;
    r.message = rerun.Message();
    return r;
  }
  std::vector<std::pair<size_t, std::string>> placed;  // in the order the run placed them
  for (size_t m : g.queued) {
    if (!run[m].node.empty()) placed.emplace_back(m, run[m].node);
  }

  // Each unit back in turn: it stays when every placed member still passes Filter on its
  // node with the members before it placed. When neither the members nor the unit look past
  // their own node, only the members placed on the unit's node can change their verdict:
  // the others are not asked again (nor bound, which no asked member's node sees). A member
  // that holds a nomination counts on its nominated node for the members after it: one
  // that does takes the whole check.
  const PodTopologySpreadArgs& spread = dry_[g.profile_of[g.queued.front()]]->profile().args.pod_topology_spread;
  const bool members_local =
      !options_.group_preemption_asks_all && std::none_of(placed.begin(), placed.end(), [&](const auto& a) {
        const Pod& m = *g.pods[a.first];
        return SeesOtherNodes(m, spread) || state_.Nomination(ObjectKey(m.meta));
      });
  // One transaction for the whole pass (a caller's may be open around it, and they nest one
  // level deep): a pod that does not go back, and each member tried, leave again by events.
  if (absl::Status s = remove_all(); !s.ok()) return fail(s);
  std::vector<size_t> asked;  // indices into `placed`
  std::vector<std::string> tried;  // members bound for this unit's check
  std::vector<Pod> nominations;    // their nominations, as the scheduler records them
  for (const Unit& u : units) {
    if (absl::Status s = state_.Apply(state::PodEvent(state::EventType::kAdded, u.pod)); !s.ok()) return fail(s);
    asked.clear();
    for (size_t k = 0; k < placed.size(); ++k) {
      if (!members_local || ReachesOtherNodes(u.pod) || placed[k].second == u.pod.node_name) asked.push_back(k);
    }
    bool fits = true;
    tried.clear();
    nominations.clear();
    for (size_t a = 0; a < asked.size() && fits; ++a) {
      const size_t k = asked[a];
      const Pod& member = *g.pods[placed[k].first];
      absl::StatusOr<std::string> fit = WalkFilter(member, {placed[k].second}, true, nullptr);
      fits = fit.ok() && !fit->empty();
      if (!fits) break;
      std::string key = ObjectKey(member.meta);
      if (const Pod* n = state_.Nomination(key)) nominations.push_back(*n);
      Bind(member, state_.Row(placed[k].second));
      // Upstream adds the member to its snapshot only: the scheduler's record of its
      // nomination stays (and counts for the members after it), which the bind ended.
      if (!nominations.empty() && ObjectKey(nominations.back().meta) == key) state_.Nominate(nominations.back());
      tried.push_back(std::move(key));
    }
    for (auto it = tried.rbegin(); it != tried.rend(); ++it) {
      const Pod* bound = state_.FindBoundPod(*it);
      if (!bound) return fail(absl::InternalError(StrCat("member ", *it, " was not bound")));
      if (absl::Status s = state_.Apply(state::PodEvent(state::EventType::kDeleted, *bound)); !s.ok()) return fail(s);
    }
    for (const Pod& n : nominations) state_.Nominate(n);  // the removal ended them too
    if (!fits) {
      if (absl::Status s = state_.Apply(state::PodEvent(state::EventType::kDeleted, u.pod)); !s.ok()) return fail(s);
      r.victims.push_back(u.key);
    }
  }
  if (absl::Status s = revert(); !s.ok()) return fail(s);
  r.code = Code::kSuccess;
  r.message = StrCat("found a placement for podgroup, preempting ", r.victims.size(), " victims");
  r.nominations = std::move(placed);
  return r;
}

}  // namespace kplace::cycle
