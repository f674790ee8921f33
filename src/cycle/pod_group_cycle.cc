// The PodGroup scheduling cycle (GenericWorkload, v1.37): GangScheduling's PreEnqueue, the
// group's validation, its members filtered and scored one after another on one view of
// the cluster, GangScheduling's PlacementFeasible after each, and all or nothing at the
// end (docs/podgroup.md).
#include <cstdio>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "cycle_scheduler.h"
#include "kplace/common/status.h"
#include "kplace/common/strings.h"
#include "kplace/model/decode.h"
#include "kplace/model/validation.h"

namespace kplace::cycle {

namespace {

constexpr char kGangScheduling[] = "GangScheduling";
const char* PreemptionPolicyName(const Pod& pod) {
  return pod.preemption_policy.empty() ? "PreemptLowerPriority" : pod.preemption_policy.c_str();
}

// validatePodGroup: one profile, the group's priority and one preemption policy for every
// member, queued (members[m] for m in `queued`) and bound. "" when the group is valid.
// Queued members compare the profile each was found in (profile names are unique), bound
// ones their names.
std::string Invalid(int32_t group_priority, const std::vector<const Pod*>& members, const std::vector<size_t>& queued,
                    const std::vector<size_t>& profile_of, const std::vector<const Pod*>& bound) {
  const Pod& first = *members[queued.front()];
  const size_t first_profile = profile_of[queued.front()];
  const std::string& scheduler = first.scheduler_name;
  const char* policy = PreemptionPolicyName(first);
  auto check = [&](const Pod& pod, bool same_scheduler) -> std::string {
    if (!same_scheduler) {
      return StrCat("all pods in a single pod group should have the same .spec.schedulerName set, got: ",
                    GoQuote(pod.scheduler_name), " and ", GoQuote(scheduler));
    }
    const int32_t priority = pod.priority.value_or(0);
    if (priority != group_priority) {
      return StrCat("all pods in a single pod group should have the same priority as the pod group's priority, got ",
                    priority, " and ", group_priority);
    }
    // Unset and PreemptLowerPriority are one policy; equal strings need no name.
    if (pod.preemption_policy != first.preemption_policy && std::string_view(PreemptionPolicyName(pod)) != policy) {
      return StrCat("all pods in a single pod group should have the same preemption policy, got ",
                    PreemptionPolicyName(pod), " and ", policy);
    }
    return "";
  };
  for (size_t m : queued) {
    if (std::string e = check(*members[m], profile_of[m] == first_profile); !e.empty()) return e;
  }
  for (const Pod* p : bound) {
    if (std::string e = check(*p, p->scheduler_name == scheduler); !e.empty()) return e;
  }
  return "";
}

// A result that names its pod and holds nothing else yet, built where the cycle takes it
// (a whole Placement moved per member showed in BM_PodGroupCycle's instruction count).
Placement KeyOnly(std::string key) {
  Placement p;
  p.pod = std::move(key);
  return p;
}

}  // namespace

int32_t PodGroupPriority(const PodGroup& group, const ObjectSet& objects) {
  if (group.priority) return *group.priority;
  if (group.priority_class_name.empty()) {
    const PriorityClass* d = GlobalDefaultClass(objects.priority_classes);
    return d ? d->value : 0;
  }
  for (const PriorityClass& c : objects.priority_classes) {
    if (c.meta.name == group.priority_class_name) return c.value;
  }
  return 0;
}

std::vector<int32_t> PodGroupsInQueue(const std::vector<Pod>& pending, const std::vector<size_t>& order,
                                      const FeatureGates& gates, std::vector<std::string>* keys) {
  std::vector<int32_t> group(order.size(), -1);
  if (!gates.Enabled("GenericWorkload")) return group;
  using Key = std::pair<std::string_view, std::string_view>;  // namespace, PodGroup
  std::map<Key, int32_t> ids;
  Key last;
  int32_t last_id = -1;
  for (size_t q = 0; q < order.size(); ++q) {
    const Pod& pod = pending[order[q]];
    if (pod.scheduling_group.empty()) continue;
    const Key key(pod.meta.namespace_, pod.scheduling_group);
    if (last_id < 0 || key != last) {  // a group's members mostly come together
      auto [it, fresh] = ids.emplace(key, static_cast<int32_t>(keys->size()));
      if (fresh) keys->push_back(StrCat(pod.meta.namespace_, "/", pod.scheduling_group));
      last = key;
      last_id = it->second;
    }
    group[q] = last_id;
  }
  return group;
}

void CycleScheduler::SchedulePodGroup(const std::string& group, const std::vector<const Pod*>& members,
                                      int64_t pending_members, const std::vector<Placement*>& out) {
  const PodGroup* pg = state_.FindPodGroup(group);
  const std::vector<const Pod*> bound = state_.PodGroupMembers(group);
  // PreEnqueue: the profile's plugins, then GangScheduling's (appended to the profile).
  std::vector<size_t> queued;
  queued.reserve(members.size());
  std::vector<size_t> profile_of(members.size());
  for (size_t m = 0; m < members.size(); ++m) {
    const Pod& pod = *members[m];
    Placement& p = *out[m];
    p.pod = ObjectKey(pod.meta);
    const size_t ev_index = ProfileOf(pod);
    if (ev_index == evaluators_.size() || state_.FindBoundPod(p.pod)) {
      p = Schedule(pod);  // another scheduler's, or already bound: as Schedule says
      continue;
    }
    if (!PreEnqueue(pod, ev_index, &p)) continue;
    profile_of[m] = ev_index;
    std::string held;
    if (!pg) {
      held = StrCat("waiting for pods's pod group ", GoQuote(pod.scheduling_group), " to appear in scheduling queue");
    } else if (pg->min_count && pending_members + static_cast<int64_t>(bound.size()) < *pg->min_count) {
      held = "waiting for minCount pods from a gang to appear in scheduling queue";
    }
    if (!held.empty()) {
      p.gated = true;
      p.gating_plugin = kGangScheduling;
      p.code = Code::kUnschedulableAndUnresolvable;
      p.message = std::move(held);
      continue;
    }
    queued.push_back(m);
  }
  if (queued.empty()) return;

  const GroupMembers g{members, queued, profile_of, pg->min_count.value_or(1), static_cast<int64_t>(bound.size())};
  const int32_t priority = PodGroupPriority(*pg, objects());
  if (std::string e = Invalid(priority, members, queued, profile_of, bound); !e.empty()) {
    for (size_t m : queued) {
      out[m]->code = Code::kError;
      out[m]->message = e;
    }
    FinishPodGroup(group, {Code::kError, false, e}, g, {}, out);
    return;
  }

  GroupStatus status;
  size_t evaluated = 0;
  // The members' binds are tentative until the group succeeds.
  if (const absl::Status begun = state_.Begin(); !begun.ok()) {
    status = {Code::kError, false, std::string(begun.message())};
  } else {
    status = RunPodGroup(g, out, &evaluated);
    const absl::Status ended = status.code == Code::kSuccess ? state_.Commit() : RevertKeepingCycle();
    if (!ended.ok()) status = {Code::kError, false, std::string(ended.message())};
  }
  // Members the run did not reach keep its status as it was before preemption spoke.
  const GroupStatus unreached = status;
  GroupPreemption preemption;
  const size_t ev_index = profile_of[queued.front()];
  bool waiting = false;  // on the victims of the group's preemption
  if (status.code == Code::kUnschedulable && host_[ev_index].preempts()) {
    preemption = PreemptForPodGroup(g, priority);
    const std::string said = preemption.message.empty() ? "" : StrCat("pod group preemption: ", preemption.message);
    if (preemption.code == Code::kError) {
      status = {Code::kError, false, said};
    } else {
      status.Append(said);
      waiting = preemption.code == Code::kSuccess;
    }
  }
  // Members the run did not reach take the group's status; members that fit in a group
  // that failed are rejected with its message; members that did not fit keep their own.
  for (size_t k = 0; k < queued.size(); ++k) {
    Placement& p = *out[queued[k]];
    if (status.code == Code::kError) {
      if (p.code != Code::kError) {
        p.code = Code::kError;
        p.message = status.Message();
      }
      p.node.clear();
      continue;
    }
    if (k >= evaluated) {
      p.code = unreached.code;
      p.message = unreached.Message();
      continue;
    }
    if (status.code != Code::kSuccess && !p.node.empty()) {
      p.node.clear();
      p.code = Code::kUnschedulable;
      // Waiting, the member is failed with the group's status itself; else with a new one
      // whose reason is the group's message.
      p.message = waiting ? status.Message() : GroupStatus{Code::kUnschedulable, true, status.Message()}.Message();
      p.score = 0;
    }
  }
  if (waiting) {
    std::vector<const Pod*> victims;
    for (const std::string& key : preemption.victims) {
      if (const Pod* v = state_.FindBoundPod(key)) victims.push_back(v);
    }
    state_.MarkTerminating(victims, dry_[ev_index]->profile().scheduler_name);
  }
  FinishPodGroup(group, status, g, waiting ? std::move(preemption) : GroupPreemption{}, out);
}

void CycleScheduler::FinishPodGroup(const std::string& group, const GroupStatus& status, const GroupMembers& g,
                                    GroupPreemption&& preemption, const std::vector<Placement*>& out) {
  auto outcome = std::make_shared<PodGroupOutcome>();
  outcome->pod_group = group;
  outcome->scheduled = status.code == Code::kSuccess;
  outcome->reason = status.code == Code::kSuccess ? "Scheduled" : status.code == Code::kError ? "SchedulerError" : "Unschedulable";
  outcome->message = status.Message();
  outcome->victims = std::move(preemption.victims);
  // Members not bound lose their nomination (clearNominatedNode); those the preemption placed
  // are nominated there (ModeOverride, "" clears). The first of them carries the victims
  // too, so that a count over the members' preemptions counts them once.
  for (size_t m : g.queued) {
    Placement& p = *out[m];
    p.pod_group = outcome;
    if (p.node.empty()) state_.ClearNomination(p.pod);
  }
  bool victims_told = false;
  for (const auto& [m, node] : preemption.nominations) {
    Pod pod = *g.pods[m];
    pod.nominated_node_name = node;
    state_.Nominate(pod);
    if (node.empty()) continue;
    PreemptionOutcome& po = out[m]->preemption.emplace();
    po.nominated_node = node;
    if (!victims_told) po.victims = outcome->victims;
    victims_told = true;
  }
}

GroupStatus CycleScheduler::RunPodGroup(const GroupMembers& g, const std::vector<Placement*>& out, size_t* evaluated) {
  Feasibility progress{g.min_count, g.bound, static_cast<int64_t>(g.queued.size())};
  GroupStatus status = progress.Status();
  *evaluated = 0;
  if (status.code == Code::kUnschedulable) {  // before the first member
    status.wrapped = true;
    return status;
  }
  bool any_scheduled = false;
  for (size_t m : g.queued) {
    Placement& p = *out[m];  // its key alone so far: the cycle's result takes its place
    p = ScheduleAdmitted(*g.pods[m], *evaluators_[g.profile_of[m]], g.profile_of[m], KeyOnly(std::move(p.pod)));
    ++*evaluated;
    const bool fits = !p.node.empty();
    if (p.code == Code::kError) {
      status = {Code::kError, false, StrCat("failed to schedule other pod from a pod group: ", p.message)};
      break;
    }
    --progress.remaining;
    if (fits) ++progress.scheduled;
    status.code = progress.Check();
    if (status.code == Code::kUnschedulable) break;
    any_scheduled = any_scheduled || fits;
  }
  if (status.code == Code::kError) return status;
  status = progress.Status();
  if (status.code == Code::kWait) {
    status.code = Code::kUnschedulable;
    status.wrapped = true;
  }
  if (status.code == Code::kSuccess && !any_scheduled) status = {Code::kUnschedulable, true, ""};
  return status;
}

absl::Status CycleScheduler::RevertKeepingCycle() {
  const int32_t next_start = next_start_;
  const std::mt19937_64 rng = rng_;
  const int64_t cycle = cycle_;
  absl::Status s = state_.Revert();
  next_start_ = next_start;
  rng_ = rng;
  cycle_ = cycle;
  return s;
}

}  // namespace kplace::cycle
