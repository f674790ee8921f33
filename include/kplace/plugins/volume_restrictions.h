#pragma once
// VolumeRestrictions (volumes.md §5): the compiled pod and the per-node Filter both
// backends run. Disk conflicts are found on the host through an index of the restricted
// volumes bound pods mount (only pods with GCE PD, EBS, RBD or iSCSI volumes pay for it);
// the kernel gathers them from a sorted node list. Host-safe.
#include <cstdint>

#include "kplace/common/host_device.h"
#include "kplace/plugins/volume_device.h"

namespace kplace::plugins {

// Verdict codes (both Unschedulable).
constexpr uint32_t kVrDiskConflict = 1;
constexpr uint32_t kVrReadWriteOncePodConflict = 2;

struct VolumeRestrictionsParams {
  const int32_t* conflict_nodes;  // sorted nodes where a restricted volume conflicts
  int32_t num_conflict_nodes;
  bool rwop_conflict;  // a ReadWriteOncePod claim of the pod is in use: every node fails
};

KPLACE_HOST_DEVICE inline uint32_t VolumeRestrictionsFilterNode(const VolumeRestrictionsParams& p, int32_t i) {
  if (p.num_conflict_nodes > 0 && SortedFind(p.conflict_nodes, p.num_conflict_nodes, i) >= 0) return kVrDiskConflict;
  return p.rwop_conflict ? kVrReadWriteOncePodConflict : 0u;
}

}  // namespace kplace::plugins
