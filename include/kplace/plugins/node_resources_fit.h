#pragma once
// NodeResourcesFit: the node-side columns, the compiled pod, and the per-node Filter and
// Score functions that both backends run (noderesources.md §5-§8). Host-safe.
#include <cmath>
#include <cstdint>

#include "kplace/common/host_device.h"
#include "kplace/common/int_math.h"
#include "kplace/framework/types.h"

namespace kplace::plugins {

constexpr int kMaxFitScalars = 16;         // scalar resources one pod may request
constexpr int kMaxScoringResources = 8;    // scoringStrategy.resources entries
constexpr int kMaxShapePoints = 101;       // utilization 0..100, strictly increasing

// Verdict bits.
constexpr uint32_t kFitTooManyPods = 1u << 0;
constexpr uint32_t kFitCpu = 1u << 1;
constexpr uint32_t kFitMemory = 1u << 2;
constexpr uint32_t kFitEphemeral = 1u << 3;
constexpr int kFitScalarShift = 4;  // bit 4 + i: the pod's i-th scalar request
constexpr uint32_t kFitUnresolvable = 1u << 31;

/** A node's cpu, memory and pod-count columns side by side in one cache line: the window
 *  visits nodes in zone round-robin order, far apart in the columns, so reading them
 *  column by column costs a cache miss per column per node, and from the row one. */
struct alignas(64) FitNodeRow {
  int64_t alloc_cpu_milli, alloc_mem_bytes, req_cpu_milli, req_mem_bytes, nonzero_cpu_milli, nonzero_mem_bytes,
      alloc_pods, pod_count;
};

/** Node columns (backend pointers). Scalar resources are sparse: node i's entries are
 *  [scalar_offsets[i], scalar_offsets[i + 1]), sorted by slot, with allocatable and
 *  requested amounts; a slot a node has no entry for is 0 there. */
struct FitNodeView {
  int32_t num_nodes;
  const int64_t* alloc_cpu_milli;
  const int64_t* alloc_mem_bytes;
  const int64_t* alloc_ephemeral_bytes;
  const int64_t* alloc_pods;
  const int64_t* req_cpu_milli;
  const int64_t* req_mem_bytes;
  const int64_t* req_ephemeral_bytes;
  const int64_t* nonzero_cpu_milli;
  const int64_t* nonzero_mem_bytes;
  const int64_t* pod_count;
  const int32_t* scalar_offsets;
  const int32_t* scalar_slot;
  const int64_t* alloc_scalar;
  const int64_t* req_scalar;
  // BalancedAllocation's balance of the node's own cpu and memory requests (both
  // allocatable > 0; BalancedOwnCpuMemory), kept per node; null: computed per pod.
  const int64_t* own_balance = nullptr;
  // The same nodes' FitNodeRow (equal to the columns), or null: the columns are read.
  const FitNodeRow* rows = nullptr;
};

/** Node i's FitNodeRow, from the rows when the view has them. */
KPLACE_HOST_DEVICE inline FitNodeRow FitRowAt(const FitNodeView& v, int32_t i) {
  if (v.rows != nullptr) return v.rows[i];
  return FitNodeRow{v.alloc_cpu_milli[i], v.alloc_mem_bytes[i],   v.req_cpu_milli[i], v.req_mem_bytes[i],
                    v.nonzero_cpu_milli[i], v.nonzero_mem_bytes[i], v.alloc_pods[i],    v.pod_count[i]};
}

/** Node i's allocatable and requested amounts of scalar `slot` (0, 0 when it has none). */
KPLACE_HOST_DEVICE inline void FitScalar(const FitNodeView& v, int32_t slot, int32_t i, int64_t* alloc, int64_t* used) {
  *alloc = 0;
  *used = 0;
  if (slot < 0) return;
  for (int32_t k = v.scalar_offsets[i]; k < v.scalar_offsets[i + 1]; ++k) {
    if (v.scalar_slot[k] == slot) {
      *alloc = v.alloc_scalar[k];
      *used = v.req_scalar[k];
      return;
    }
  }
}

/** The pod's Filter request F (§3.1). A scalar slot of -1: no node advertises it. */
struct FitFilterParams {
  int64_t cpu_milli, mem_bytes, ephemeral_bytes;
  int32_t num_scalars;
  bool has_scalars;  // any scalar key, even 0: defeats the empty-request shortcut
  int32_t scalar_slot[kMaxFitScalars];
  int64_t scalar_value[kMaxFitScalars];
  bool scalar_checked[kMaxFitScalars];  // false when 0 or ignored
};

enum class FitResourceKind : int32_t { kNone, kCpu, kMemory, kEphemeral, kScalar };
enum class FitStrategy : int32_t { kLeastAllocated, kMostAllocated, kRequestedToCapacityRatio };

/** One scoring resource: where (a, q) come from, the pod's p and the weight (§6). */
struct FitScoreResource {
  FitResourceKind kind;
  int32_t scalar_slot;  // kScalar: column slot, -1 when no node has it
  int64_t pod_request;
  int64_t weight;
};

struct FitScoreParams {
  FitStrategy strategy;
  int32_t num_resources;
  FitScoreResource resources[kMaxScoringResources];
  bool use_non_zero;  // NodeResourcesFit strategies; BalancedAllocation uses raw requests
  int32_t num_points;
  int32_t shape_utilization[kMaxShapePoints];
  int64_t shape_score[kMaxShapePoints];  // already scaled by 10
};

/** The pod's cpu, memory and ephemeral-storage requests alone: FitFilterParams of a pod
 *  without scalar requests, small enough for a kernel functor to carry by value (the full
 *  block is copied with each functor copy, several per Thrust call). */
struct FitBasicRequests {
  int64_t cpu_milli, mem_bytes, ephemeral_bytes;
};

/** Filter's pod-count, cpu, memory and ephemeral-storage checks (§5): the whole verdict
 *  of a pod without scalar requests. */
KPLACE_HOST_DEVICE inline uint32_t FitFilterBasic(const FitNodeView& v, const FitBasicRequests& p, int32_t i) {
  const FitNodeRow r = FitRowAt(v, i);
  uint32_t out = 0;
  if (r.pod_count + 1 > r.alloc_pods) out |= kFitTooManyPods;
  auto check = [&](int64_t want, int64_t alloc, int64_t used, uint32_t bit) {
    if (want > 0 && want > alloc - used) {
      out |= bit;
      if (want > alloc) out |= kFitUnresolvable;
    }
  };
  check(p.cpu_milli, r.alloc_cpu_milli, r.req_cpu_milli, kFitCpu);
  check(p.mem_bytes, r.alloc_mem_bytes, r.req_mem_bytes, kFitMemory);
  // Ephemeral storage is outside the row: its columns are read only when the pod asks.
  if (p.ephemeral_bytes > 0) check(p.ephemeral_bytes, v.alloc_ephemeral_bytes[i], v.req_ephemeral_bytes[i], kFitEphemeral);
  return out;
}

KPLACE_HOST_DEVICE inline uint32_t FitFilterNode(const FitNodeView& v, const FitFilterParams& p, int32_t i) {
  uint32_t out = FitFilterBasic(v, FitBasicRequests{p.cpu_milli, p.mem_bytes, p.ephemeral_bytes}, i);
  for (int32_t s = 0; s < p.num_scalars; ++s) {
    if (!p.scalar_checked[s]) continue;
    int64_t alloc = 0, used = 0;
    FitScalar(v, p.scalar_slot[s], i, &alloc, &used);
    if (p.scalar_value[s] > alloc - used) {
      out |= 1u << (kFitScalarShift + s);
      if (p.scalar_value[s] > alloc) out |= kFitUnresolvable;
    }
  }
  return out;
}

/** (a, q) of scoring resource r on node i; a == 0 means the resource is skipped. */
KPLACE_HOST_DEVICE inline void FitAllocatedAndRequested(const FitNodeView& v, const FitScoreParams& p,
                                                        const FitScoreResource& r, int32_t i,
                                                        int64_t* a, int64_t* q) {
  *a = 0;
  *q = 0;
  switch (r.kind) {
    case FitResourceKind::kCpu:
      *a = v.alloc_cpu_milli[i];
      *q = SaturatingAdd(p.use_non_zero ? v.nonzero_cpu_milli[i] : v.req_cpu_milli[i], r.pod_request);
      break;
    case FitResourceKind::kMemory:
      *a = v.alloc_mem_bytes[i];
      *q = SaturatingAdd(p.use_non_zero ? v.nonzero_mem_bytes[i] : v.req_mem_bytes[i], r.pod_request);
      break;
    case FitResourceKind::kEphemeral:
      *a = v.alloc_ephemeral_bytes[i];
      *q = SaturatingAdd(v.req_ephemeral_bytes[i], r.pod_request);
      break;
    case FitResourceKind::kScalar:
      if (r.pod_request == 0 || r.scalar_slot < 0) return;
      FitScalar(v, r.scalar_slot, i, a, q);
      *q = SaturatingAdd(*q, r.pod_request);
      break;
    case FitResourceKind::kNone:
      return;
  }
  if (*a == 0) *q = 0;
}

/** The broken-linear shape function with Go's truncating division. */
KPLACE_HOST_DEVICE inline int64_t FitShapeScore(const FitScoreParams& p, int64_t utilization) {
  if (utilization <= p.shape_utilization[0]) return p.shape_score[0];
  for (int32_t j = 1; j < p.num_points; ++j) {
    if (utilization <= p.shape_utilization[j]) {
      int64_t du = p.shape_utilization[j] - p.shape_utilization[j - 1];
      return p.shape_score[j - 1] +
             (p.shape_score[j] - p.shape_score[j - 1]) * (utilization - p.shape_utilization[j - 1]) / du;
    }
  }
  return p.shape_score[p.num_points - 1];
}

/** True for the default scoring resources, cpu then memory: the scores below then take the
 *  two columns directly (the same arithmetic as the loop over resources). */
KPLACE_HOST_DEVICE inline bool FitScoresCpuMemory(const FitScoreParams& p) {
  return p.num_resources == 2 && p.resources[0].kind == FitResourceKind::kCpu &&
         p.resources[1].kind == FitResourceKind::kMemory;
}

/** LeastAllocated's term of one resource: allocatable `a` (0: skipped), requested `q`. */
KPLACE_HOST_DEVICE inline void FitLeastAllocatedTerm(int64_t a, int64_t q, int64_t weight, int64_t* numerator,
                                                     int64_t* weights) {
  if (a == 0) return;
  *numerator += (q > a ? 0 : NonNegativeDiv(GoMul(a - q, kMaxNodeScore), a)) * weight;
  *weights += weight;
}

/** Any strategy over any resources: the loop over resources. */
KPLACE_HOST_DEVICE inline int64_t FitScoreNodeGeneral(const FitNodeView& v, const FitScoreParams& p, int32_t i) {
  int64_t numerator = 0, weights = 0;
  for (int32_t k = 0; k < p.num_resources; ++k) {
    const FitScoreResource& r = p.resources[k];
    int64_t a, q;
    FitAllocatedAndRequested(v, p, r, i, &a, &q);
    if (a == 0) continue;
    switch (p.strategy) {
      case FitStrategy::kLeastAllocated:
        FitLeastAllocatedTerm(a, q, r.weight, &numerator, &weights);
        break;
      case FitStrategy::kMostAllocated:
        numerator += (GoMul(q < a ? q : a, kMaxNodeScore) / a) * r.weight;
        weights += r.weight;
        break;
      case FitStrategy::kRequestedToCapacityRatio: {
        int64_t utilization = q > a ? kMaxNodeScore : GoMul(q, kMaxNodeScore) / a;
        int64_t s = FitShapeScore(p, utilization);
        if (s > 0) {  // zero-score resources drop out with their weight
          numerator += s * r.weight;
          weights += r.weight;
        }
        break;
      }
    }
  }
  if (weights == 0) return 0;
  if (p.strategy == FitStrategy::kRequestedToCapacityRatio) {
    double x = static_cast<double>(numerator) / static_cast<double>(weights);
    return static_cast<int64_t>(round(x));  // Go math.Round: half away from zero
  }
  return numerator / weights;
}

/** LeastAllocated's score of a resource with 0 <= q and 0 < a < kFitExactBelow: then
 *  x = (a - q) * 100 and x + a stay below 2^53, where NonNegativeDiv's double quotient is
 *  exact, without its checks. */
constexpr int64_t kFitExactBelow = (int64_t{1} << 53) / (kMaxNodeScore + 1);
KPLACE_HOST_DEVICE inline int64_t FitLeastAllocatedExact(int64_t a, int64_t q) {
  if (q > a) return 0;
  return static_cast<int64_t>(static_cast<double>((a - q) * kMaxNodeScore) / static_cast<double>(a));
}

/** LeastAllocated over cpu then memory (FitScoresCpuMemory): the pod's requests and the
 *  weights alone, small enough for a kernel functor to carry by value (FitScoreParams
 *  holds the shape points of RequestedToCapacityRatio, ~1.2 KB). */
struct FitLeastCpuMemory {
  int64_t cpu_request, mem_request, cpu_weight, mem_weight;
  bool use_non_zero;
};

KPLACE_HOST_DEVICE inline FitLeastCpuMemory FitLeastCpuMemoryOf(const FitScoreParams& p) {
  return FitLeastCpuMemory{p.resources[0].pod_request, p.resources[1].pod_request, p.resources[0].weight,
                           p.resources[1].weight, p.use_non_zero};
}

KPLACE_HOST_DEVICE inline int64_t FitLeastAllocatedCpuMemory(const FitNodeView& v, const FitLeastCpuMemory& p, int32_t i) {
  const FitNodeRow r = FitRowAt(v, i);
  const int64_t a_cpu = r.alloc_cpu_milli, a_mem = r.alloc_mem_bytes;
  const int64_t q_cpu = SaturatingAdd(p.use_non_zero ? r.nonzero_cpu_milli : r.req_cpu_milli, p.cpu_request);
  const int64_t q_mem = SaturatingAdd(p.use_non_zero ? r.nonzero_mem_bytes : r.req_mem_bytes, p.mem_request);
  // Both resources counted, real sizes: one range check for both quotients, and equal
  // weights w make the total w * (s_cpu + s_mem) / 2w.
  if (a_cpu > 0 && a_mem > 0 && a_cpu < kFitExactBelow && a_mem < kFitExactBelow && q_cpu >= 0 && q_mem >= 0 &&
      p.cpu_weight == p.mem_weight && p.cpu_weight > 0) {
    return (FitLeastAllocatedExact(a_cpu, q_cpu) + FitLeastAllocatedExact(a_mem, q_mem)) / 2;
  }
  int64_t numerator = 0, weights = 0;
  FitLeastAllocatedTerm(a_cpu, q_cpu, p.cpu_weight, &numerator, &weights);
  FitLeastAllocatedTerm(a_mem, q_mem, p.mem_weight, &numerator, &weights);
  return weights == 0 ? 0 : NonNegativeDiv(numerator, weights);
}

/** Whether FitScoreNode takes FitLeastAllocatedCpuMemory for `p`. */
KPLACE_HOST_DEVICE inline bool FitScoresLeastCpuMemory(const FitScoreParams& p) {
  return p.strategy == FitStrategy::kLeastAllocated && FitScoresCpuMemory(p);
}

KPLACE_HOST_DEVICE inline int64_t FitScoreNode(const FitNodeView& v, const FitScoreParams& p, int32_t i) {
  if (FitScoresLeastCpuMemory(p)) return FitLeastAllocatedCpuMemory(v, FitLeastCpuMemoryOf(p), i);
  return FitScoreNodeGeneral(v, p, i);
}

}  // namespace kplace::plugins
