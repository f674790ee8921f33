#pragma once
// DynamicResources' Filter on either backend (kplace/plugins/dynamic_resources_common.h has
// the host side): each allocated claim's node selector, compiled into NodeAffinity's
// requirement program, must match the node; a claim that still needs allocation makes
// every node Filter reaches a refusal, since only upstream's allocator could answer there.
// Host-safe.
#include <cstdint>

#include "kplace/common/host_device.h"
#include "kplace/plugins/node_affinity.h"

namespace kplace::plugins {

// Verdict codes.
constexpr uint32_t kDraNotAvailable = 1;  // an allocation's node selector does not match
constexpr uint32_t kDraAllocate = 2;      // a claim needs allocation: kplace refuses

/** One allocated claim's node selector: its parsable, non-empty terms, ORed. */
struct DraSelector {
  int32_t term_begin, term_count;  // into DraParams::program.terms
};

/** The pod's claims as Filter needs them (selectors ANDed). */
struct DraParams {
  NaProgram program;
  const DraSelector* selectors;
  int32_t num_selectors;
  bool allocate;
};

KPLACE_HOST_DEVICE inline uint32_t DynamicResourcesFilterNode(const NaNodeView& v, const DraParams& p, int32_t i) {
  // Upstream's allocator runs on the node whatever the allocated claims say.
  if (p.allocate) return kDraAllocate;
  for (int32_t k = 0; k < p.num_selectors; ++k) {
    if (!NaAnyTermMatches(v, p.program, p.selectors[k].term_begin, p.selectors[k].term_count, i)) return kDraNotAvailable;
  }
  return 0;
}

}  // namespace kplace::plugins
