#pragma once
// The pieces of kube-scheduler's cycle that do not depend on plugins: the part of the scan
// order a PreFilter allows, numFeasibleNodesToFind, host selection and the FitError text
// (cycle-and-config.md §1.4, §1.5, §1.8, §2, §3.8). Host-safe.
#include <cstdint>
#include <map>
#include <random>
#include <string>
#include <vector>

#include "kplace/model/objects.h"

namespace kplace::cycle {

/** The entries of `order` (node indices in scan order) that are in `allowed` (sorted node
 *  indices: a PreFilter's subset), in scan order. */
std::vector<int32_t> RestrictedOrder(const std::vector<int32_t>& order, const std::vector<int32_t>& allowed);

/** How many feasible nodes the filter pass looks for among `num_candidates`;
 *  `percentage` 0 is adaptive. */
int32_t NumFeasibleNodesToFind(int32_t percentage, int32_t num_candidates);

/** Upstream >= 1.35: the Go container/heap pop over (total, randomizer = 0) in feasible
 *  order. Returns the index of the chosen node in `totals`. */
size_t SelectHostHeap(const std::vector<int64_t>& totals);
/** The same, given the largest of `totals` (non-empty). */
size_t SelectHostHeap(const std::vector<int64_t>& totals, int64_t max_total);

/** Upstream <= 1.34: uniform choice among the maxima, seeded for reproducibility. */
size_t SelectHostRandom(const std::vector<int64_t>& totals, std::mt19937_64& rng);

/** FitError.Error(): "0/N nodes are available: <counted reasons or prefilter message>." */
std::string FitErrorMessage(int32_t num_all_nodes, const std::string& pre_filter_message,
                            const std::map<std::string, int64_t>& reason_counts);

}  // namespace kplace::cycle
