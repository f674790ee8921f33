#pragma once
// NodePorts: the host ports used on each node and the conflict rule of small-plugins.md
// §5 (0.0.0.0 is a wildcard on either side; protocols never conflict with each other).
// Host-safe.
#include <cstdint>

#include "kplace/common/host_device.h"

namespace kplace::plugins {

constexpr uint32_t kPortsConflict = 1;
constexpr uint32_t kPortsNoState = 2;  // Filter without a PreFilter state: an Error

constexpr int32_t kWildcardIpId = 0;  // "0.0.0.0" is interned first

/** A sanitized (hostIP, protocol, hostPort): empty IP is 0.0.0.0, empty protocol TCP. */
struct HostPortEntry {
  int32_t ip_id;
  int32_t proto_id;
  int32_t port;
};

/** Node i's used ports are entries [offsets[i], offsets[i] + counts[i]); the slot range
 *  up to offsets[i + 1] is spare room for binds. */
struct NodePortsView {
  const int32_t* offsets;
  const int32_t* counts;
  const HostPortEntry* entries;
};

struct NodePortsParams {
  const HostPortEntry* wanted;
  int32_t count;
  bool has_state;
};

KPLACE_HOST_DEVICE inline bool HostPortsConflict(const HostPortEntry& want, const HostPortEntry& used) {
  if (want.port != used.port || want.proto_id != used.proto_id) return false;
  return want.ip_id == kWildcardIpId || used.ip_id == kWildcardIpId || want.ip_id == used.ip_id;
}

KPLACE_HOST_DEVICE inline uint32_t NodePortsFilterNode(const NodePortsView& v, const NodePortsParams& p, int32_t i) {
  if (!p.has_state) return kPortsNoState;
  const int32_t begin = v.offsets[i], end = v.offsets[i] + v.counts[i];
  for (int32_t w = 0; w < p.count; ++w) {
    for (int32_t k = begin; k < end; ++k) {
      if (HostPortsConflict(p.wanted[w], v.entries[k])) return kPortsConflict;
    }
  }
  return 0;
}

}  // namespace kplace::plugins
