#pragma once
// The scan over only the nodes a pod's nodeSelector or required node affinity names
// (#35), shared by the batched cycle (BatchCycle) and the per-pod cycle
// (CycleScheduler::ScheduleOne).
//
// A scan visits candidates from the start index until K + 1 are feasible. Visiting only a
// superset of the nodes NodeAffinity's Filter passes, in the same order, meets the same
// feasible nodes and stops at the same one, so the start index advances by the same
// count (the stopping node's distance from the start in the full order), when every
// skipped node is one the full scan would have rejected, never one where it would have
// met an error: NodeAffinity rejects it, and the Filter plugins before NodeAffinity
// (NodeUnschedulable, NodeName, TaintToleration) never err. Rejections are counted for the
// visited nodes only, so a scan that finds no feasible node is repeated over every
// candidate for the FitError's counts (and PostFilter's statuses).
#include <cstdint>
#include <string>
#include <unordered_map>
#include <vector>

#include "kplace/engine/framework.h"
#include "kplace/model/objects.h"

namespace kplace::cycle {

class SelectiveScan {
 public:
  /** `filter_plugins`: the profile's Filter plugins in run order. `order`: the visit (zone
   *  round-robin) order of `snapshot`'s indices. Both outlive this; the owner makes a new
   *  one when nodes or the order change. A null `snapshot` never selects. */
  SelectiveScan(const std::vector<std::string>& filter_plugins, const engine::Snapshot* snapshot,
                const std::vector<int32_t>* order);

  /** Whether a pod with PreFilter result `pre` may scan selectively: NodeAffinity's Filter
   *  runs for it and its candidates are the whole order. */
  bool Applies(const engine::PreFilterResult& pre) const {
    return affinity_filter_ >= 0 && !pre.restricted && !pre.skip_filter[affinity_filter_];
  }
  /** @brief Selects `pod`'s nodes visited from candidate `pos` of the order: false when the
   *  pod names no such set or the set is too large for a scan over it to pay. Else nodes()
   *  holds them in visit order. */
  bool Select(const Pod& pod, int32_t pos);
  /** The selected nodes (snapshot indices) in visit order: the order from `pos` on, then
   *  from its start, with the nodes NodeAffinity rejects left out. */
  const std::vector<engine::NodeIndex>& nodes() const { return nodes_; }
  /** The start index's advance when the scan stops at nodes()[v]: how many candidates of
   *  the full order come before it from `pos`. */
  int32_t Processed(int32_t v) const {
    const int32_t m = static_cast<int32_t>(order_->size());
    return (at_[v] - pos_ + m) % m;
  }

 private:
  /** Positions in the order (ascending) of a superset of the nodes NodeAffinity's Filter
   *  passes for `pod`: the nodes carrying one of its nodeSelector pairs, or one of the values
   *  of an `In` requirement of every required term. Null when the pod names no such set, or
   *  the set is too large; may point at selected_. */
  const std::vector<int32_t>* AffinityCandidates(const Pod& pod);
  /** Positions in the order of the nodes whose label `key` is `value` (empty when none). */
  const std::vector<int32_t>& LabelPositions(const std::string& key, const std::string& value);

  const engine::Snapshot* snapshot_;
  const std::vector<int32_t>* order_;
  // NodeAffinity's Filter index; -1 (never select) when a plugin before it in Filter order
  // might err, or NodeAffinity is not there.
  int32_t affinity_filter_ = -1;
  // Per label key (indexed on first use: one pass over the order) and value, the positions.
  std::unordered_map<std::string, std::unordered_map<std::string, std::vector<int32_t>>> label_positions_;
  std::vector<int32_t> selected_, merged_;
  int32_t pos_ = 0;
  std::vector<engine::NodeIndex> nodes_;
  std::vector<int32_t> at_;  // per selected node, its position in the order
};

}  // namespace kplace::cycle
