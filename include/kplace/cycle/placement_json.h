#pragma once
// A placement as JSON, as `kplace schedule`/`explain` write it and `kplace serve` returns
// it on request: the decision, DefaultPreemption's outcome, and with an explanation every
// visited node's filter verdict and scores, plus kube-scheduler-simulator's annotations.
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "kplace/cycle/scheduler.h"

namespace kplace::cycle {

/** kube-scheduler-simulator's annotation key prefix. */
constexpr char kAnnotationPrefix[] = "kube-scheduler-simulator.sigs.k8s.io/";

/** The simulator's per-pod annotations (filter-result, score-result, finalscore-result,
 *  selected-node) from `p.explanation` (which must be set); `filter_plugins` are the
 *  profile's Filter plugins in order. */
nlohmann::json Annotations(const Placement& p, const std::vector<std::string>& filter_plugins);

/** The placement; with `explain` (and an explanation) also the nodes, PostFilter's
 *  candidates and the annotations. */
nlohmann::json PlacementJson(const Placement& p, bool explain, const std::vector<std::string>& filter_plugins);

}  // namespace kplace::cycle
