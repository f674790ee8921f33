#include "kplace/cycle/queue.h"

#include <algorithm>
#include <utility>

#include "kplace/common/strings.h"
#include "kplace/model/decode.h"

namespace kplace::cycle {

absl::Status SchedulingQueue::Add(const Pod& pod, const std::string& where) {
  const std::string key = ObjectKey(pod.meta);
  const bool queued = std::any_of(active_.begin(), active_.end(), [&](const Pod& p) { return ObjectKey(p.meta) == key; });
  if (queued || unschedulable_.count(key)) {
    return absl::AlreadyExistsError(StrCat(where, where.empty() ? "" : ": ", "Pod ", key, " is already pending"));
  }
  active_.push_back(pod);
  return absl::OkStatus();
}

void SchedulingQueue::Forget(const std::string& key) {
  active_.erase(std::remove_if(active_.begin(), active_.end(), [&](const Pod& p) { return ObjectKey(p.meta) == key; }),
                active_.end());
  unschedulable_.erase(key);
}

absl::Status SchedulingQueue::Apply(const state::ClusterEvent& event) {
  if (event.kind == "Pod") {
    const Pod& pod = event.object.pods[0];
    const std::string key = ObjectKey(pod.meta);
    const bool pending_here = unschedulable_.count(key) ||
                              std::any_of(active_.begin(), active_.end(), [&](const Pod& p) { return ObjectKey(p.meta) == key; });
    if (pod.node_name.empty() && event.type != state::EventType::kDeleted) {
      if (event.type == state::EventType::kAdded && pending_here) {
        return absl::AlreadyExistsError(StrCat(event.where, ": Pod ", key, " is already pending"));
      }
      if (!pending_here && event.type == state::EventType::kModified && slot_.count(key) &&
          !results_[slot_.at(key)].node.empty()) {
        // A pod this queue placed, seen again without its node: the recording predates the
        // binding. The placement stands.
        return absl::OkStatus();
      }
      Forget(key);
      active_.push_back(pod);
      return scheduler_->Apply(event);  // its nomination, if any
    }
    // A pending pod bound elsewhere or deleted leaves the queue; the cluster sees the change.
    Flush();
    absl::Status s = scheduler_->Apply(event);
    if (!s.ok()) return s;
    if (pending_here) Forget(key);
  } else {
    Flush();
    absl::Status s = scheduler_->Apply(event);
    if (!s.ok()) return s;
  }
  ++stats_.events;
  Requeue();
  return absl::OkStatus();
}

void SchedulingQueue::Requeue() {
  for (auto& [key, pod] : unschedulable_) {
    active_.push_back(std::move(pod));
    ++stats_.requeued;
  }
  unschedulable_.clear();
}

void SchedulingQueue::Flush() {
  if (active_.empty()) return;
  ++stats_.flushes;
  std::vector<Pod> batch = std::move(active_);
  active_.clear();
  std::vector<size_t> order = QueueOrder(batch);
  std::vector<Placement> placed = scheduler_->ScheduleAll(batch);
  for (size_t q = 0; q < placed.size(); ++q) {
    Placement& p = placed[q];
    const Pod& pod = batch[order[q]];
    auto [it, fresh] = slot_.emplace(p.pod, results_.size());
    if (fresh) {
      results_.push_back(std::move(p));
    } else {
      p.attempts += results_[it->second].attempts;
      results_[it->second] = std::move(p);
    }
    const Placement& r = results_[slot_.at(ObjectKey(pod.meta))];
    if (r.node.empty() && !r.other_scheduler) unschedulable_[ObjectKey(pod.meta)] = pod;
  }
}

std::vector<Placement> SchedulingQueue::Results() const { return results_; }

}  // namespace kplace::cycle
