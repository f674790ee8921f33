#pragma once
// NodeUnschedulable: rejects nodes with spec.unschedulable unless the pod tolerates the
// node.kubernetes.io/unschedulable:NoSchedule taint (small-plugins.md §6). Host-safe.
#include <cstdint>

#include "kplace/common/host_device.h"

namespace kplace::plugins {

constexpr uint32_t kNodeUnschedulable = 1;

struct NodeUnschedulableView {
  const uint8_t* unschedulable;
};

/** Decided on the host once per pod: the taint is synthetic and the same on every node. */
struct NodeUnschedulableParams {
  bool tolerates;
};

KPLACE_HOST_DEVICE inline uint32_t NodeUnschedulableFilterNode(const NodeUnschedulableView& v,
                                                               const NodeUnschedulableParams& p, int32_t i) {
  return v.unschedulable[i] && !p.tolerates ? kNodeUnschedulable : 0;
}

}  // namespace kplace::plugins
