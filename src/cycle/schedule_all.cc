// Scheduler::ScheduleAll: the queue's passes over pending pods in PrioritySort order, a
// PodGroup's members taken into one PodGroup cycle, retries after a preemption's victims
// are gone (docs/preemption.md, docs/podgroup.md).
#include <algorithm>
#include <functional>
#include <numeric>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

#include "cycle_scheduler.h"
#include "kplace/cycle/scheduler.h"

namespace kplace::cycle {

std::vector<size_t> QueueOrder(const std::vector<Pod>& pods) {
  std::vector<size_t> idx(pods.size());
  std::iota(idx.begin(), idx.end(), 0);
  std::stable_sort(idx.begin(), idx.end(), [&](size_t a, size_t b) {
    int32_t pa = pods[a].priority.value_or(0), pb = pods[b].priority.value_or(0);
    if (pa != pb) return pa > pb;
    return pods[a].meta.creation_unix < pods[b].meta.creation_unix;
  });
  return idx;
}

namespace {

// One of ScheduleAll's passes over its queue: the results so far and what the pass has seen.
struct QueuePass {
  const std::vector<Pod>& pending;
  const std::vector<size_t>& order;    // queue position -> index into `pending`
  const std::vector<int32_t>& group;   // queue position -> its PodGroup, -1 for none
  const std::function<bool(const Placement&)>& each;
  std::vector<Placement>& out;         // by queue position
  std::vector<int32_t>& attempts;      // by queue position
  std::vector<size_t> failed;          // positions to try again after a preemption
  bool preempted = false;
  bool stop = false;                   // `each` said so

  // The preemption an earlier attempt of position q made, taken before its slot is written again.
  std::optional<PreemptionOutcome> TakeEarlier(size_t q) {
    std::optional<PreemptionOutcome> e;
    if (out[q].preemption && !out[q].preemption->victims.empty()) e = std::move(out[q].preemption);
    return e;
  }
  // An attempt of position q: seen by `each`, counted, queued again when it failed. A retry
  // that did not preempt keeps the record of the preemption that led to it (`before`).
  void Account(size_t q, Placement& p, std::optional<PreemptionOutcome>&& before) {
    stop = each && !each(p);
    if (p.node.empty() && !p.gated && !p.other_scheduler) failed.push_back(q);
    const bool preempts = p.preemption && !p.preemption->victims.empty();
    preempted = preempted || preempts;
    if (!preempts && before) p.preemption = std::move(before);
    p.attempts = ++attempts[q];
  }
  // A pod's own cycle, its result moved to its slot.
  void Record(size_t q, Placement&& p) {
    Account(q, p, TakeEarlier(q));
    out[q] = std::move(p);
  }
};

// A PodGroup's members queued from queue[at] on, decided in one PodGroup cycle straight into
// their result slots. Scratch vectors are reused from group to group.
class PodGroupRun {
 public:
  void Schedule(Scheduler& s, QueuePass& pass, const std::vector<size_t>& queue, size_t at, const std::string& key,
                int64_t unbound) {
    const int32_t g = pass.group[queue[at]];
    members_.clear();
    pods_.clear();
    slots_.clear();
    earlier_.clear();
    for (size_t later = at; later < queue.size(); ++later) {
      const size_t m = queue[later];
      if (pass.group[m] != g) continue;
      members_.push_back(m);
      pods_.push_back(&pass.pending[pass.order[m]]);
      earlier_.push_back(pass.TakeEarlier(m));
      if (pass.attempts[m] > 0) pass.out[m] = Placement();  // a retry starts from an empty slot
      slots_.push_back(&pass.out[m]);
    }
    s.SchedulePodGroup(key, pods_, unbound, slots_);
    for (size_t k = 0; k < members_.size(); ++k) pass.Account(members_[k], pass.out[members_[k]], std::move(earlier_[k]));
  }

 private:
  std::vector<size_t> members_;
  std::vector<const Pod*> pods_;
  std::vector<Placement*> slots_;
  std::vector<std::optional<PreemptionOutcome>> earlier_;
};

}  // namespace

std::vector<Placement> Scheduler::ScheduleAll(const std::vector<Pod>& pending,
                                             const std::function<bool(const Placement&)>& each) {
  const std::vector<size_t> order = QueueOrder(pending);
  std::vector<Placement> out(order.size());
  for (size_t q = 0; q < order.size(); ++q) out[q].attempts = 0;
  for (size_t q = 0; q < order.size(); ++q) {
    const Pod& pod = pending[order[q]];
    if (!pod.nominated_node_name.empty() && pod.node_name.empty()) Nominate(pod);
  }
  std::vector<std::string> group_keys;  // namespace/name
  const std::vector<int32_t> group = PodGroupsInQueue(pending, order, options().gates, &group_keys);
  std::vector<size_t> queue(order.size());
  std::iota(queue.begin(), queue.end(), 0);
  std::vector<int32_t> attempts(order.size(), 0);
  PodGroupRun group_run;
  while (!queue.empty()) {
    QueuePass pass{pending, order, group, each, out, attempts};
    std::vector<bool> tried(group_keys.size());  // PodGroups whose cycle ran in this pass
    // Each group's pods this run has not bound: only the group's own cycle changes it.
    std::vector<int64_t> unbound(group_keys.size(), 0);
    for (size_t k = 0; k < order.size(); ++k) {
      if (group[k] >= 0 && out[k].node.empty()) ++unbound[group[k]];
    }
    for (size_t at = 0; at < queue.size() && !pass.stop; ++at) {
      const size_t q = queue[at];
      const int32_t g = group[q];
      if (g < 0) {
        pass.Record(q, Schedule(pending[order[q]]));
      } else if (!tried[g]) {  // the group's first pod in queue order brings every member after it
        tried[g] = true;
        group_run.Schedule(*this, pass, queue, at, group_keys[g], unbound[g]);
      }
    }
    if (!pass.preempted || pass.stop) break;
    // The victims' deletion completes; every pod that failed in the round is tried again.
    // A victim this run placed is marked; every pod it placed has its key in its result.
    const std::vector<std::string> gone = state().CompleteDeletions();
    std::unordered_map<std::string_view, size_t> slot;
    if (!gone.empty()) {
      for (size_t q = 0; q < out.size(); ++q) {
        if (!out[q].node.empty()) slot.emplace(out[q].pod, q);
      }
    }
    for (const std::string& key : gone) {
      auto it = slot.find(key);
      if (it != slot.end()) out[it->second].preempted = true;
    }
    queue = std::move(pass.failed);
  }
  return out;
}

}  // namespace kplace::cycle
