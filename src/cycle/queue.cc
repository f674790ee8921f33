#include "kplace/cycle/queue.h"

#include <algorithm>
#include <iterator>
#include <utility>

#include "kplace/common/strings.h"
#include "kplace/model/decode.h"

namespace kplace::cycle {
namespace {

// Whether an event of `kind` reaches the queue at all: no default plugin registers for the
// kinds below (EventsToRegister), so upstream's queue moves no pod on them, not even one
// without rejecting plugins.
bool RetriesPods(const std::string& kind) {
  static const char* kUnregistered[] = {"Service", "ReplicaSet", "StatefulSet", "ReplicationController",
                                        "PodDisruptionBudget", "PriorityClass", "ResourceClaimTemplate"};
  return std::none_of(std::begin(kUnregistered), std::end(kUnregistered), [&](const char* k) { return kind == k; });
}

}  // namespace

absl::Status SchedulingQueue::Add(const Pod& pod, const std::string& where) {
  std::string key = ObjectKey(pod.meta);
  if (Pending(key)) return absl::AlreadyExistsError(StrCat(where, where.empty() ? "" : ": ", "Pod ", key, " is already pending"));
  active_.push_back(pod);
  active_keys_.insert(std::move(key));
  PendingPodAdded(pod);
  return absl::OkStatus();
}

// An unscheduled pod's add reaches only GangScheduling's hint: a member may complete its
// gang, whose waiting pods then join it in the active queue.
void SchedulingQueue::PendingPodAdded(const Pod& pod) {
  if (pod.scheduling_group.empty() || !scheduler_->options().gates.Enabled("GenericWorkload")) return;
  HintEvent added;
  added.type = state::EventType::kAdded;
  added.kind = "Pod";
  added.new_pod = &pod;
  Requeue(added);
}

bool SchedulingQueue::Pending(const std::string& key) const {
  return active_keys_.count(key) || unschedulable_.count(key) || gated_.count(key);
}

void SchedulingQueue::Forget(const std::string& key) {
  if (active_keys_.erase(key)) {
    active_.erase(std::remove_if(active_.begin(), active_.end(), [&](const Pod& p) { return ObjectKey(p.meta) == key; }),
                  active_.end());
  }
  unschedulable_.erase(key);
  gated_.erase(key);
}

absl::Status SchedulingQueue::Apply(const state::ClusterEvent& event) {
  const bool pod_event = event.kind == "Pod";
  const std::string key = pod_event ? ObjectKey(event.object.pods[0].meta) : "";
  const bool pending_here = pod_event && Pending(key);
  if (pod_event) {
    const Pod& pod = event.object.pods[0];
    if (pod.node_name.empty() && event.type != state::EventType::kDeleted) {
      if (event.type == state::EventType::kAdded && pending_here) {
        return absl::AlreadyExistsError(StrCat(event.where, ": Pod ", key, " is already pending"));
      }
      if (!pending_here && slot_.count(key) && !results_[slot_.at(key)].node.empty() &&
          (event.type == state::EventType::kModified || scheduler_->state().FindBoundPod(key))) {
        // A pod this queue placed, seen again without its node (MODIFIED, or a relist's
        // ADDED while it is still bound): the recording predates the binding. The placement
        // stands. (An ADDED after its deletion is a new pod of that name.)
        return absl::OkStatus();
      }
      auto waiting = unschedulable_.find(key);
      if (waiting != unschedulable_.end() && event.type == state::EventType::kModified) {
        HintEvent self;
        self.type = event.type;
        self.kind = event.kind;
        self.old_pod = &waiting->second.pod;
        self.new_pod = &pod;
        if (!WorthRequeuing(pod, waiting->second.plugins, self)) {
          waiting->second.pod = pod;  // waits on, as it is now
          return scheduler_->state().Apply(event);
        }
      }
      Forget(key);
      active_.push_back(pod);
      active_keys_.insert(key);
      if (event.type == state::EventType::kAdded) PendingPodAdded(pod);  // `pod` is the event's: Requeue may move active_
      return scheduler_->state().Apply(event);  // its nomination, if any
    }
    if (event.type == state::EventType::kDeleted && pod.node_name.empty() && pending_here && !scheduler_->Nomination(key)) {
      // Without a nomination a pending pod is nothing other pods see: it just leaves.
      Forget(key);
      ++stats_.events;
      return absl::OkStatus();
    }
  }
  // A cluster change (a bound pod, a pending pod bound elsewhere or deleted, any other
  // object): the pods that arrived before it are scheduled first, then the cluster sees it,
  // then the hints, asked with the object as it was, pick the waiting pods to retry.
  Flush();
  Node old_node;
  Pod old_pod;
  const HintEvent hint = Before(event, &old_node, &old_pod);
  absl::Status s = scheduler_->state().Apply(event);
  if (!s.ok()) return s;
  if (pending_here) Forget(key);
  if (RetriesPods(event.kind)) Requeue(hint);
  ++stats_.events;
  return absl::OkStatus();
}

HintEvent SchedulingQueue::Before(const state::ClusterEvent& event, Node* old_node, Pod* old_pod) const {
  HintEvent h;
  h.type = event.type;
  h.kind = event.kind;
  if (unschedulable_.empty()) return h;  // nobody to ask
  if (event.kind == "Node") {
    const Node& n = event.object.nodes[0];
    if (const Node* was = scheduler_->state().FindNode(n.meta.name)) {
      *old_node = *was;
      h.old_node = old_node;
    }
    if (event.type != state::EventType::kDeleted) h.new_node = &n;
  } else if (event.kind == "Pod") {
    const Pod& p = event.object.pods[0];
    if (const Pod* was = scheduler_->state().FindBoundPod(ObjectKey(p.meta))) {
      *old_pod = *was;
      h.old_pod = old_pod;
    } else if (event.type == state::EventType::kDeleted) {
      h.old_pod = &p;  // a pending pod leaving (with its nomination, if any)
    }
    if (event.type != state::EventType::kDeleted) h.new_pod = &p;
  }
  return h;
}

bool SchedulingQueue::WorthRequeuing(const Pod& pod, const std::vector<std::string>& plugins,
                                     const HintEvent& event) const {
  for (const Profile& p : scheduler_->config().profiles) {
    if (p.scheduler_name == pod.scheduler_name) {
      return IsPodWorthRequeuing(pod, plugins, event, p, scheduler_->options().gates);
    }
  }
  return true;
}

void SchedulingQueue::Requeue(const HintEvent& event) {
  for (auto it = unschedulable_.begin(); it != unschedulable_.end();) {
    if (!WorthRequeuing(it->second.pod, it->second.plugins, event)) {
      ++it;
      continue;
    }
    active_.push_back(std::move(it->second.pod));
    active_keys_.insert(it->first);
    ++stats_.requeued;
    it = unschedulable_.erase(it);
  }
}

bool SchedulingQueue::Flush() {
  if (active_.empty()) return true;
  ++stats_.flushes;
  std::vector<Pod> batch = std::move(active_);
  active_.clear();
  active_keys_.clear();
  std::vector<size_t> order = QueueOrder(batch);
  bool stopped = false;
  std::vector<Placement> placed = scheduler_->ScheduleAll(batch, [&](const Placement& p) {
    stopped = each_ && !each_(p);
    return !stopped;
  });
  for (size_t q = 0; q < placed.size(); ++q) {
    Placement& p = placed[q];
    const Pod& pod = batch[order[q]];
    if (p.attempts == 0) {  // not tried before `each` stopped the flush
      active_.push_back(pod);
      active_keys_.insert(p.pod);
      continue;
    }
    const auto [it, fresh] = slot_.emplace(p.pod, results_.size());
    const size_t at = it->second;
    if (fresh) {
      results_.push_back(std::move(p));
    } else {
      p.attempts += results_[at].attempts;
      results_[at] = std::move(p);
    }
    const Placement& r = results_[at];  // r.pod is the pod's key
    if (r.gated && r.gating_plugin == "SchedulingGates") {
      gated_[r.pod] = pod;
    } else if (r.node.empty() && !r.other_scheduler) {
      // Another PreEnqueue plugin's pod waits for the events that plugin registers, as an
      // unschedulable pod waits for its rejectors'.
      unschedulable_[r.pod] = Waiting{pod, r.gated ? std::vector<std::string>{r.gating_plugin} : r.unschedulable_plugins};
    }
  }
  return !stopped;
}

std::vector<Placement> SchedulingQueue::Results() const { return results_; }

}  // namespace kplace::cycle
