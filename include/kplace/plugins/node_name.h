#pragma once
// NodeName: a pod with spec.nodeName fits only the node of that name (small-plugins.md
// §7). Names are compared as interned ids. Host-safe.
#include <cstdint>

#include "kplace/common/host_device.h"

namespace kplace::plugins {

constexpr uint32_t kNodeNameMismatch = 1;

struct NodeNameView {
  const int32_t* name_id;
};

struct NodeNameParams {
  bool any;         // the pod names no node
  int32_t want_id;  // kNoId (-1) when no node has the wanted name: matches nothing
};

KPLACE_HOST_DEVICE inline uint32_t NodeNameFilterNode(const NodeNameView& v, const NodeNameParams& p, int32_t i) {
  return p.any || v.name_id[i] == p.want_id ? 0 : kNodeNameMismatch;
}

}  // namespace kplace::plugins
