#pragma once
// NodeResourcesBalancedAllocation: the per-node Score both backends run, over
// NodeResourcesFit's resource columns. v1.37 scores the change in balance:
// 50 + (50 + B(with pod) - B(without pod)) / 2 (noderesources.md §9, spec README). Host-safe.
#include <cmath>
#include <cstdint>
#include <limits>

#include "kplace/common/host_device.h"
#include "kplace/framework/types.h"
#include "kplace/plugins/node_resources_fit.h"

namespace kplace::plugins {

/** The configured resources with the pod's raw requests; use_non_zero is false. */
struct BalancedParams {
  FitScoreParams fit;
};

/** B(x) of §9.2 over `n` fractions already clipped to 1: trunc((1 - std) * 100). */
KPLACE_HOST_DEVICE inline int64_t BalancedScoreOf(const double* f, int32_t n) {
  double std_dev = 0;
  if (n == 2) {
    std_dev = fabs((f[0] - f[1]) / 2);
  } else if (n > 2) {
    double total = 0;
    for (int32_t k = 0; k < n; ++k) total += f[k];
    double mean = total / static_cast<double>(n);
    double sum = 0;
    for (int32_t k = 0; k < n; ++k) sum = sum + (f[k] - mean) * (f[k] - mean);
    std_dev = sqrt(sum / static_cast<double>(n));
  }
  return static_cast<int64_t>((1 - std_dev) * static_cast<double>(kMaxNodeScore));
}

KPLACE_HOST_DEVICE inline double BalancedFraction(int64_t q, int64_t a) {
  double f = static_cast<double>(q) / static_cast<double>(a);
  return f > 1 ? 1 : f;
}

/** B of the node's own requests over cpu and memory (allocatable > 0): the balance
 *  without the pod, which does not depend on the pod. */
KPLACE_HOST_DEVICE inline int64_t BalancedOwnCpuMemory(int64_t req_cpu, int64_t a_cpu, int64_t req_mem, int64_t a_mem) {
  const double own[2] = {BalancedFraction(req_cpu, a_cpu), BalancedFraction(req_mem, a_mem)};
  return BalancedScoreOf(own, 2);
}

/** The pod's raw cpu and memory requests: what the score over cpu then memory reads, small
 *  enough for a kernel functor to carry by value (BalancedParams is ~1.5 KB). */
struct BalancedCpuMemory {
  int64_t cpu_request, mem_request;
};

KPLACE_HOST_DEVICE inline BalancedCpuMemory BalancedCpuMemoryOf(const BalancedParams& p) {
  return BalancedCpuMemory{p.fit.resources[0].pod_request, p.fit.resources[1].pod_request};
}

/** Whether BalancedScoreNode takes BalancedScoreCpuMemory for `p`. */
KPLACE_HOST_DEVICE inline bool BalancedScoresCpuMemory(const BalancedParams& p) {
  return !p.fit.use_non_zero && FitScoresCpuMemory(p.fit);
}

/** §9 over cpu and memory (the default resources), without the loop over resources:
 *  B of two fractions is 100 * (1 - |f0 - f1| / 2), truncated. A resource with no
 *  allocatable drops out; B of one fraction or none is 100 on both sides, so the score is
 *  then 75. */
KPLACE_HOST_DEVICE inline int64_t BalancedScoreCpuMemory(const FitNodeView& v, const BalancedCpuMemory& p, int32_t i) {
  const FitNodeRow row = FitRowAt(v, i);
  const int64_t a_cpu = row.alloc_cpu_milli, a_mem = row.alloc_mem_bytes;
  const int64_t half = kMaxNodeScore / 2;
  if (a_cpu == 0 || a_mem == 0) return half + half / 2;
  const int64_t r_cpu = p.cpu_request, r_mem = p.mem_request;
  const int64_t req_cpu = row.req_cpu_milli, req_mem = row.req_mem_bytes;
  const int64_t q_cpu = SaturatingAdd(req_cpu, r_cpu), q_mem = SaturatingAdd(req_mem, r_mem);
  const double with_pod[2] = {BalancedFraction(q_cpu, a_cpu), BalancedFraction(q_mem, a_mem)};
  // Without the pod the node holds its own requests unless a sum saturated.
  constexpr int64_t kMax = std::numeric_limits<int64_t>::max();
  const bool own = v.own_balance != nullptr && r_cpu >= 0 && r_mem >= 0 && req_cpu <= kMax - r_cpu && req_mem <= kMax - r_mem;
  int64_t without;
  if (own) {
    without = v.own_balance[i];
  } else {
    const double without_pod[2] = {BalancedFraction(q_cpu - r_cpu, a_cpu), BalancedFraction(q_mem - r_mem, a_mem)};
    without = BalancedScoreOf(without_pod, 2);
  }
  return half + (half + BalancedScoreOf(with_pod, 2) - without) / 2;
}

/** Any resources: the loop over resources. */
KPLACE_HOST_DEVICE inline int64_t BalancedScoreNodeGeneral(const FitNodeView& v, const BalancedParams& p, int32_t i) {
  double with_pod[kMaxScoringResources], without_pod[kMaxScoringResources];
  int32_t n = 0;
  for (int32_t k = 0; k < p.fit.num_resources; ++k) {
    const FitScoreResource& r = p.fit.resources[k];
    int64_t a, q;
    FitAllocatedAndRequested(v, p.fit, r, i, &a, &q);
    if (a == 0) continue;
    with_pod[n] = BalancedFraction(q, a);
    without_pod[n] = BalancedFraction(q - r.pod_request, a);
    ++n;
  }
  const int64_t half = kMaxNodeScore / 2;
  return half + (half + BalancedScoreOf(with_pod, n) - BalancedScoreOf(without_pod, n)) / 2;
}

KPLACE_HOST_DEVICE inline int64_t BalancedScoreNode(const FitNodeView& v, const BalancedParams& p, int32_t i) {
  if (BalancedScoresCpuMemory(p)) {
    return BalancedScoreCpuMemory(v, BalancedCpuMemoryOf(p), i);
  }
  return BalancedScoreNodeGeneral(v, p, i);
}

}  // namespace kplace::plugins
