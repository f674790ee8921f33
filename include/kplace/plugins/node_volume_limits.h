#pragma once
// NodeVolumeLimits, the CSILimits implementation (volumes.md §4): per-driver node
// columns (CSINode limit, driver installed, distinct attached volumes counted from bound
// pods and VolumeAttachments, kept exact on bind), the pod's counted volumes compiled
// per driver, and the per-node Filter both backends run. Host-safe.
#include <cstdint>

#include "kplace/common/host_device.h"
#include "kplace/plugins/volume_device.h"

namespace kplace::plugins {

constexpr int kNvlMaxDrivers = 8;  // distinct CSI drivers one pod's volumes use

// Verdict codes: a kind in the high byte, an index in the low 24 bits.
constexpr uint32_t kNvlExceed = 1u << 24;        // Unschedulable
constexpr uint32_t kNvlNotInstalled = 2u << 24;  // Unschedulable; index: variant * kNvlMaxDrivers + driver
constexpr uint32_t kNvlPodError = 3u << 24;      // the pod's own lookup failed; index: variant
constexpr uint32_t kNvlNodeError = 4u << 24;     // a bound pod's volumes failed; index: message
constexpr uint32_t kNvlIndexMask = (1u << 24) - 1;

/** Node columns; per-driver columns are [slot * num_nodes + node]. */
struct NvlNodeView {
  int32_t num_nodes;
  const uint8_t* has_csinode;
  const uint8_t* has_limits;  // the CSINode has a driver with allocatable.count
  const int32_t* error;       // first bound pod's counting error (message index), -1 none
  const int32_t* limit;       // allocatable.count, -1 when the driver has none
  const uint8_t* installed;   // the CSINode lists the driver
  const int32_t* count;       // distinct attached volumes of the driver
};

/** The pod's counted volumes for one kind of node: migration of in-tree volumes is on
 *  exactly where the node has a CSINode, so there are two variants. */
struct NvlVariant {
  bool error;
  int32_t num_drivers;
  int32_t slot[kNvlMaxDrivers];       // driver column, -1 when no CSINode lists it
  int32_t new_count[kNvlMaxDrivers];  // distinct new volumes of the driver
  bool prevent[kNvlMaxDrivers];       // VolumeLimitScaling: the CSIDriver must be installed
};

struct NvlParams {
  bool no_volumes;
  NvlVariant variant[2];  // [0]: node has a CSINode, [1]: it has none
  // Nodes where some of the pod's new volumes are already attached (sorted), and per
  // such node how many of each driver's new volumes are: [k * kNvlMaxDrivers + d].
  const int32_t* dedup_nodes;
  int32_t num_dedup;
  const int32_t* dedup_counts;
};

KPLACE_HOST_DEVICE inline uint32_t NodeVolumeLimitsFilterNode(const NvlNodeView& v, const NvlParams& p, int32_t i) {
  if (p.no_volumes) return 0;
  const bool has = v.has_csinode[i] != 0;
  const NvlVariant& pod = p.variant[has ? 0 : 1];
  if (pod.error) return kNvlPodError | (has ? 0u : 1u);
  if (pod.num_drivers == 0) return 0;
  const int64_t n = v.num_nodes;
  for (int32_t d = 0; d < pod.num_drivers; ++d) {
    if (!pod.prevent[d]) continue;
    bool installed = has && pod.slot[d] >= 0 && v.installed[pod.slot[d] * n + i];
    if (!installed) return kNvlNotInstalled | static_cast<uint32_t>((has ? 0 : kNvlMaxDrivers) + d);
  }
  if (!v.has_limits[i]) return 0;
  if (v.error[i] >= 0) return kNvlNodeError | static_cast<uint32_t>(v.error[i]);
  int32_t k = p.num_dedup > 0 ? SortedFind(p.dedup_nodes, p.num_dedup, i) : -1;
  for (int32_t d = 0; d < pod.num_drivers; ++d) {
    if (pod.slot[d] < 0) continue;
    int64_t at = pod.slot[d] * n + i;
    int32_t limit = v.limit[at];
    if (limit < 0) continue;
    int32_t fresh = pod.new_count[d] - (k >= 0 ? p.dedup_counts[k * kNvlMaxDrivers + d] : 0);
    // A driver whose new volumes are all attached already is not checked at all.
    if (fresh > 0 && v.count[at] + fresh > limit) return kNvlExceed;
  }
  return 0;
}

}  // namespace kplace::plugins
