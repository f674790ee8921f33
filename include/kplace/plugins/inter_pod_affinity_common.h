#pragma once
// InterPodAffinity host helpers shared by the engine plugin and the reference: how a
// pod's affinity terms reach the scheduler (admission's matchLabelKeys rewrite) and
// upstream's parse errors, word for word (interpodaffinity.md §2.4, §2.5). Matching
// itself is written separately on each side. Host-only: no Abseil, no CUDA.
#include <atomic>
#include <cstdint>
#include <string>
#include <vector>

#include "kplace/model/objects.h"

namespace kplace::plugins {

/** The four term lists of a pod, in upstream's order and naming. */
enum IpaTermList : int { kIpaRequiredAffinity, kIpaRequiredAntiAffinity, kIpaPreferredAffinity,
                         kIpaPreferredAntiAffinity, kIpaNumTermLists };

/** A pod's affinity terms as the scheduler parses them. */
struct IpaPodTerms {
  std::vector<PodAffinityTerm> required_affinity, required_anti_affinity;
  std::vector<WeightedPodAffinityTerm> preferred_affinity, preferred_anti_affinity;
  /** Upstream's aggregated parse error ("requiredAffinityTerms: ..."), "" when every list
   *  parses. A list that failed is left empty: existing pods lose the whole list. */
  std::string error;
};

/**
 * @brief Parses `pod`'s pod (anti-)affinity term lists. With `match_label_keys`
 * (MatchLabelKeysInPodAffinity) each term first gets kube-apiserver's rewrite:
 * `key In [v]` per matchLabelKeys key the pod has, `key NotIn [v]` per
 * mismatchLabelKeys key; nothing when labelSelector is nil. Re-applying the rewrite to a
 * pod that came from an API server only repeats requirements, which changes nothing.
 */
IpaPodTerms ParseIpaPodTerms(const Pod& pod, bool match_label_keys);

/** True when the pod's spec has podAffinity or podAntiAffinity (upstream's PodsWithAffinity). */
bool IpaHasPodAffinity(const Pod& pod);
/** True when the pod has non-empty preferred affinity or anti-affinity lists (PreScore's hasPref). */
bool IpaHasPreferredPodAffinity(const Pod& pod);

/** metav1.LabelSelectorAsSelector's error for `selector`, "" when it parses. */
std::string IpaLabelSelectorError(const LabelSelector& selector);

/** Go's utilerrors.NewAggregate(errs).Error(): bare when one, "[a, b]" (deduplicated) otherwise. */
std::string IpaAggregateErrors(const std::vector<std::string>& errors);

/** Test hooks of the engine plugin's incremental PreFilter and PreScore (consecutive pods
 *  that compile the same replay the binds since instead of rebuilding), shared by every
 *  plugin instance on both backends. */
struct IpaIncrementalDebug {
  /** After every replay also rebuild in full and compare; a difference is counted in
   *  `mismatches` and returned as an Error naming the pod. KPLACE_IPA_SELF_CHECK=1 in the
   *  environment does the same for plugins created while it is set. */
  std::atomic<bool> self_check{false};
  /** Calls by path. */
  std::atomic<int64_t> prefilter_incremental{0}, prefilter_rebuilt{0};
  std::atomic<int64_t> prescore_incremental{0}, prescore_rebuilt{0};
  std::atomic<int64_t> mismatches{0};
};

inline IpaIncrementalDebug& IpaIncrementalDebugState() {
  static IpaIncrementalDebug state;
  return state;
}

}  // namespace kplace::plugins
