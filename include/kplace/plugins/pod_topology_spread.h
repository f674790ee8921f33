#pragma once
// PodTopologySpread on the engine: per-constraint views of domain-count tables and the
// per-node Filter and Score functions both backends run (podtopologyspread.md §5, §7,
// §8). A node reads its domain through a dense domain-id column and gathers the
// domain's count, so per-node work is O(constraints). Host-safe.
#include <cmath>
#include <cstdint>

#include "kplace/common/host_device.h"
#include "kplace/framework/types.h"

namespace kplace::plugins {

// Verdict codes (one constraint decides, so these are values, not bits).
constexpr uint32_t kSpreadMissingLabel = 1;  // UnschedulableAndUnresolvable
constexpr uint32_t kSpreadSkew = 2;          // Unschedulable
constexpr uint32_t kSpreadError = 3;         // PreFilter failed; Filter has no state

/** One hard constraint (§5), compiled for the incoming pod. */
struct SpreadFilterConstraint {
  const int32_t* domain;  // per node: dense domain id, -1 when the node lacks the key
  const int64_t* counts;  // per domain: matching pods on eligible nodes
  int64_t max_skew;
  int64_t self_match;  // 1 when the selector matches the incoming pod
  int64_t min_match;   // the effective global minimum m_i
};

struct SpreadFilterParams {
  int32_t num_constraints;
  const SpreadFilterConstraint* constraints;  // backend memory
  uint32_t all_nodes_code;  // non-zero: every node gets this code (PreFilter error)
};

KPLACE_HOST_DEVICE inline uint32_t SpreadFilterNode(const SpreadFilterParams& p, int32_t n) {
  if (p.all_nodes_code != 0) return p.all_nodes_code;
  for (int32_t i = 0; i < p.num_constraints; ++i) {
    const SpreadFilterConstraint& c = p.constraints[i];
    int32_t d = c.domain[n];
    if (d < 0) return kSpreadMissingLabel;
    if (c.counts[d] + c.self_match - c.min_match > c.max_skew) return kSpreadSkew;
  }
  return 0;
}

/** One soft constraint (§7). `counts` is per node for kubernetes.io/hostname (the
 *  node's own matching pods), per domain otherwise. */
struct SpreadScoreConstraint {
  const int32_t* domain;  // per node: dense domain id, -1 when the node lacks the key
  const int64_t* counts;
  int32_t per_node;
  double weight;     // ln(size + 2), computed on the host
  double skew_term;  // maxSkew - 1
};

struct SpreadScoreParams {
  int32_t num_constraints;
  int32_t require_all;  // a node lacking any key is ignored (raw 0, normalized 0)
  const SpreadScoreConstraint* constraints;
};

KPLACE_HOST_DEVICE inline bool SpreadIgnoredNode(const SpreadScoreParams& p, int32_t n) {
  if (!p.require_all) return false;
  for (int32_t i = 0; i < p.num_constraints; ++i) {
    if (p.constraints[i].domain[n] < 0) return true;
  }
  return false;
}

KPLACE_HOST_DEVICE inline int64_t SpreadScoreNode(const SpreadScoreParams& p, int32_t n) {
  if (SpreadIgnoredNode(p, n)) return 0;
  double score = 0;
  for (int32_t i = 0; i < p.num_constraints; ++i) {
    const SpreadScoreConstraint& c = p.constraints[i];
    int32_t d = c.domain[n];
    if (d < 0) continue;  // key absent: no term at all, not even maxSkew - 1
    int64_t cnt = c.per_node ? c.counts[n] : c.counts[d];
    score += static_cast<double>(cnt) * c.weight + c.skew_term;
  }
  return static_cast<int64_t>(round(score));  // Go math.Round: half away from zero
}

/** §8: min/max over nodes that are not ignored. */
KPLACE_HOST_DEVICE inline int64_t SpreadNormalize(int64_t raw, bool ignored, int64_t max_raw, int64_t min_raw) {
  if (ignored) return 0;
  if (max_raw == 0) return kMaxNodeScore;
  return kMaxNodeScore * (max_raw + min_raw - raw) / max_raw;
}

}  // namespace kplace::plugins
