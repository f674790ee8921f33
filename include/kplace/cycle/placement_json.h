#pragma once
// A placement as JSON, as `kplace schedule`/`explain` write it and `kplace serve` returns
// it on request: the decision, DefaultPreemption's outcome, and with an explanation every
// visited node's filter verdict and scores, plus kube-scheduler-simulator's annotations.
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "kplace/config/profile.h"
#include "kplace/cycle/scheduler.h"

namespace kplace::cycle {

/** kube-scheduler-simulator's annotation key prefix. */
constexpr char kAnnotationPrefix[] = "kube-scheduler-simulator.sigs.k8s.io/";
/** The simulator's list of every attempt's annotations (its storereflector). */
constexpr char kResultHistoryKey[] = "kube-scheduler-simulator.sigs.k8s.io/result-history";

/** Go's json.Marshal of `j`: compact, `<`, `>`, `&`, U+2028 and U+2029 escaped, invalid
 *  UTF-8 replaced by U+FFFD. */
std::string GoMarshal(const nlohmann::json& j);

/** One attempt's annotations as the simulator's result store writes them, every key with a
 *  Go-encoded JSON value: prefilter-result-status and prescore-result (plugin -> "success"
 *  or message), prefilter-result (plugin -> node names), filter-result (node -> plugin ->
 *  "passed" or reason, up to the first rejecting plugin), postfilter-result (rejected node
 *  -> plugin -> "preemption victim" on the nominated node), score-result (node -> plugin ->
 *  raw score) and finalscore-result (normalized x weight), reserve-result, permit-result,
 *  permit-result-timeout, prebind-result, bind-result (plugin -> "success" once placed), and
 *  selected-node ("" unless placed). `p.explanation` must be set. */
nlohmann::json Annotations(const Placement& p, const Profile& profile);

/** result-history's value: `previous` (the pod's value, "[]" for none) with `attempts`
 *  appended, the oldest dropped while the list exceeds 256 KiB (the API server's annotation
 *  limit); nullopt when `previous` is no such list (the simulator then leaves it as is). */
std::optional<std::string> ResultHistory(const std::string& previous, const std::vector<nlohmann::json>& attempts);

/** What the simulator leaves on the pod: the last attempt's Annotations and result-history,
 *  `previous_history` (the pod's value, "[]" for none) extended by `attempts` (each
 *  attempt's Annotations; empty: the last alone). */
nlohmann::json PodAnnotations(const Placement& p, const Profile& profile, const std::string& previous_history,
                              const std::vector<nlohmann::json>& attempts);

/** The placement; with `explain` (and an explanation) also the nodes, PostFilter's
 *  candidates and PodAnnotations (the history of this run's `attempts`). */
nlohmann::json PlacementJson(const Placement& p, bool explain, const Profile& profile,
                             const std::vector<nlohmann::json>& attempts = {});

}  // namespace kplace::cycle
