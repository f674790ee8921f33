#pragma once
// The scheduling queue over a live scheduler: pending pods arrive, cluster events change
// the cluster between cycles, and pods that did not fit wait until an event could let
// them fit (docs/live-state.md). Host-safe.
#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "absl/status/status.h"
#include "kplace/cycle/queueing_hints.h"
#include "kplace/cycle/scheduler.h"
#include "kplace/state/event.h"

namespace kplace::cycle {

/** What the queue did, for a progress line or a summary. */
struct QueueStats {
  int64_t events = 0;  // cluster events applied
  int64_t flushes = 0;  // times the active queue was scheduled
  int64_t requeued = 0;  // pods moved back to the active queue by an event
};

class SchedulingQueue {
 public:
  /** `each` (may be empty) sees every attempt as ScheduleAll's does; when it returns false
   *  the flush stops there and the pods not tried stay queued. */
  explicit SchedulingQueue(Scheduler* scheduler, std::function<bool(const Placement&)> each = {})
      : scheduler_(scheduler), each_(std::move(each)) {}

  /** A pending pod joins the active queue (priority order is ScheduleAll's). */
  absl::Status Add(const Pod& pod, const std::string& where = "");
  /**
   * @brief One watch event. Pending pods' events change the queue: an added pod joins it,
   * an updated one replaces its queued or waiting copy and is tried again (a scheduling
   * gate removed, say), a deleted one leaves. Every other event first lets the active
   * queue be scheduled (the pods arrived before the change), then reaches the scheduler
   * (ClusterState::Apply) and moves the pods waiting as unschedulable that upstream's queueing
   * hints would retry back to the active queue: those of which a rejecting plugin says the
   * change may let them fit (IsPodWorthRequeuing). Gated pods stay: only their own update
   * can remove a gate. A waiting pod's own update retries it only when its hints say so;
   * otherwise the new copy waits. A pending pod without a nomination that is deleted just
   * leaves (no flush first).
   * @return the scheduler's error (nothing applied), or AlreadyExists for a pending pod
   * added twice.
   */
  absl::Status Apply(const state::ClusterEvent& event);
  /** Schedules the active queue (Scheduler::ScheduleAll); pods that fit nowhere wait.
   *  Returns false when `each` stopped it. */
  bool Flush();

  /** Each pod's last attempt, in the order the pods arrived; attempts summed over flushes. */
  std::vector<Placement> Results() const;
  /** Pods with a result so far (Results().size(), without the copy). */
  size_t decided() const { return results_.size(); }
  /** Pods waiting as unschedulable (or gated) now. */
  size_t waiting() const { return unschedulable_.size() + gated_.size(); }
  const QueueStats& stats() const { return stats_; }

 private:
  void Requeue(const HintEvent& event);
  void PendingPodAdded(const Pod& pod);
  bool WorthRequeuing(const Pod& pod, const std::vector<std::string>& plugins, const HintEvent& event) const;
  /** The event as hints see it, with the object it changes as it was before (`*old`). */
  HintEvent Before(const state::ClusterEvent& event, Node* old_node, Pod* old_pod) const;
  void Forget(const std::string& key);
  bool Pending(const std::string& key) const;

  Scheduler* scheduler_;
  std::function<bool(const Placement&)> each_;
  std::vector<Pod> active_;                     // arrival order; ScheduleAll sorts
  absl::flat_hash_set<std::string> active_keys_;  // hashed: looked up for every pod added
  struct Waiting {
    Pod pod;
    std::vector<std::string> plugins;  // Placement::unschedulable_plugins of its last attempt
  };
  std::map<std::string, Waiting> unschedulable_;  // tried, did not fit, by key
  std::map<std::string, Pod> gated_;            // held by scheduling gates, by key
  absl::flat_hash_map<std::string, size_t> slot_;  // key -> index in results_
  // (unschedulable_ and gated_ stay ordered: a requeue's order is the queue's tie-break.)
  std::vector<Placement> results_;
  QueueStats stats_;
};

}  // namespace kplace::cycle
