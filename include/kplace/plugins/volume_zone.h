#pragma once
// VolumeZone (volumes.md §3): node columns of the four topology labels, the pod's PV
// zone records compiled to allowed value ids per key, and the per-node Filter both
// backends run. Host-safe.
#include <cstdint>

#include "kplace/common/host_device.h"
#include "kplace/plugins/volume_device.h"

namespace kplace::plugins {

constexpr int kVzNumKeys = 4;  // beta zone, beta region, GA zone, GA region

// Verdict codes (UnschedulableAndUnresolvable).
constexpr uint32_t kVzConflict = 1;
constexpr uint32_t kVzPreFilterFailed = 2;  // Filter recomputes PreFilter's failure

struct VolumeZoneNodeView {
  const int32_t* value[kVzNumKeys];  // label value id per node, -1 when absent
  const uint8_t* has_any;            // the node has one of the four keys
};

/** Records merged per key: the node's value must lie in the intersection of the key's
 *  value sets, read from the key or, for a beta key, the GA key (`fallback`). */
struct VolumeZoneParams {
  bool no_volumes;
  bool failed;
  int32_t num_records;
  int32_t key[kVzNumKeys];
  int32_t fallback[kVzNumKeys];  // -1: none
  int32_t offset[kVzNumKeys], count[kVzNumKeys];
  const int32_t* allowed;  // sorted value ids, per record at offset
};

KPLACE_HOST_DEVICE inline uint32_t VolumeZoneFilterNode(const VolumeZoneNodeView& v, const VolumeZoneParams& p,
                                                        int32_t i) {
  if (p.no_volumes) return 0;
  if (p.failed) return kVzPreFilterFailed;
  if (!v.has_any[i]) return 0;  // single-zone clusters
  for (int32_t r = 0; r < p.num_records; ++r) {
    int32_t value = v.value[p.key[r]][i];
    if (value < 0 && p.fallback[r] >= 0) value = v.value[p.fallback[r]][i];
    if (value < 0 || SortedFind(p.allowed + p.offset[r], p.count[r], value) < 0) return kVzConflict;
  }
  return 0;
}

}  // namespace kplace::plugins
