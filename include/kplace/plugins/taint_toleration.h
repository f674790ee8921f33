#pragma once
// TaintToleration: per-node Filter over NoSchedule/NoExecute taints and the raw Score
// counting intolerable PreferNoSchedule taints (small-plugins.md §3). Host-safe.
#include <cstdint>

#include "kplace/common/host_device.h"
#include "kplace/plugins/taint_common.h"

namespace kplace::plugins {

constexpr uint32_t kTaintUntolerated = 1;

/** The compiled tolerations of one phase: Filter keeps those with an empty, NoSchedule or
 *  NoExecute effect; Score those with an empty or PreferNoSchedule effect. */
struct TaintTolerationParams {
  const CompiledToleration* tolerations;
  int32_t count;
};

KPLACE_HOST_DEVICE inline uint32_t TaintTolerationFilterNode(const TaintNodeView& v, const TaintTolerationParams& p,
                                                             int32_t i) {
  for (int32_t k = v.offsets[i]; k < v.offsets[i + 1]; ++k) {
    int8_t e = v.effect[k];
    if (e != kEffectNoSchedule && e != kEffectNoExecute) continue;
    if (!AnyCompiledTolerates(p.tolerations, p.count, v, k)) return kTaintUntolerated;
  }
  return 0;
}

KPLACE_HOST_DEVICE inline int64_t TaintTolerationScoreNode(const TaintNodeView& v, const TaintTolerationParams& p,
                                                           int32_t i) {
  int64_t count = 0;
  for (int32_t k = v.offsets[i]; k < v.offsets[i + 1]; ++k) {
    if (v.effect[k] != kEffectPreferNoSchedule) continue;
    if (!AnyCompiledTolerates(p.tolerations, p.count, v, k)) ++count;
  }
  return count;
}

}  // namespace kplace::plugins
