#pragma once
// InterPodAffinity on the engine: per-node Filter and Score as gathers of per-domain
// values (interpodaffinity.md §4-§6). Every topology key the plugin has seen gets a slot:
// a column of dense domain ids per node (-1 where the node lacks the key). PreFilter and
// PreScore reduce the per-domain counts on the host into small per-domain tables; the
// kernels look a node's domain up in each table. Host-safe.
#include <cstdint>

#include "kplace/common/host_device.h"
#include "kplace/framework/types.h"

namespace kplace::plugins {

// Verdict codes, in Filter's check order.
constexpr uint32_t kIpaAffinityNotMatch = 1;       // UnschedulableAndUnresolvable
constexpr uint32_t kIpaAntiAffinityNotMatch = 2;   // Unschedulable
constexpr uint32_t kIpaExistingAntiAffinity = 3;   // Unschedulable
constexpr uint32_t kIpaNoPreFilterState = 4;       // Error: PreFilter did not succeed

/** A topology key used by this pod: its slot (-1 when no node has the key) and where its
 *  per-domain table starts. */
struct IpaKeyTable {
  int32_t slot;
  int32_t offset;
};

/** The pod's Filter parameters. `keys` lists the affinity keys, then the anti-affinity
 *  keys, then the keys of existing pods' anti-affinity that the pod matched. */
struct IpaFilterParams {
  int32_t num_nodes;
  const int32_t* domains;  // [slot * num_nodes + node]
  const uint8_t* present;  // per-domain "count > 0", tables concatenated
  const IpaKeyTable* keys;
  int32_t num_affinity, num_anti, num_existing;
  bool first_of_group;  // A is empty and the pod matches all its own affinity terms
  bool no_state;
};

KPLACE_HOST_DEVICE inline int32_t IpaDomain(const int32_t* domains, int32_t num_nodes, int32_t slot, int32_t n) {
  return slot < 0 ? -1 : domains[static_cast<int64_t>(slot) * num_nodes + n];
}

KPLACE_HOST_DEVICE inline uint32_t IpaFilterNode(const IpaFilterParams& p, int32_t n) {
  if (p.no_state) return kIpaNoPreFilterState;
  int32_t k = 0;
  if (p.num_affinity > 0) {
    bool all_present = true;
    for (; k < p.num_affinity; ++k) {
      int32_t d = IpaDomain(p.domains, p.num_nodes, p.keys[k].slot, n);
      if (d < 0) return kIpaAffinityNotMatch;  // every term's key must be on the node
      if (!p.present[p.keys[k].offset + d]) all_present = false;
    }
    if (!all_present && !p.first_of_group) return kIpaAffinityNotMatch;
  }
  for (int32_t end = k + p.num_anti; k < end; ++k) {
    int32_t d = IpaDomain(p.domains, p.num_nodes, p.keys[k].slot, n);
    if (d >= 0 && p.present[p.keys[k].offset + d]) return kIpaAntiAffinityNotMatch;
  }
  for (int32_t end = k + p.num_existing; k < end; ++k) {
    int32_t d = IpaDomain(p.domains, p.num_nodes, p.keys[k].slot, n);
    if (d >= 0 && p.present[p.keys[k].offset + d]) return kIpaExistingAntiAffinity;
  }
  return 0;
}

/** The pod's Score parameters: one per-domain score table per key of T. */
struct IpaScoreParams {
  int32_t num_nodes;
  const int32_t* domains;
  const int64_t* values;
  const IpaKeyTable* keys;
  int32_t num_keys;
};

KPLACE_HOST_DEVICE inline int64_t IpaScoreNode(const IpaScoreParams& p, int32_t n) {
  int64_t score = 0;
  for (int32_t k = 0; k < p.num_keys; ++k) {
    int32_t d = IpaDomain(p.domains, p.num_nodes, p.keys[k].slot, n);
    if (d >= 0) score += p.values[p.keys[k].offset + d];
  }
  return score;
}

/** Min-max normalization in float64 as upstream: divide, then multiply, then truncate. */
KPLACE_HOST_DEVICE inline int64_t IpaNormalize(int64_t score, int64_t min, int64_t diff) {
  if (diff <= 0) return 0;
  double f = static_cast<double>(kMaxNodeScore) * (static_cast<double>(score - min) / static_cast<double>(diff));
  return static_cast<int64_t>(f);
}

}  // namespace kplace::plugins
