#pragma once
// Runs a conformance case on the scalar reference or on an engine backend and compares
// what the plugins returned with what upstream asserted.
//
// Single-plugin cases call each asserted phase on its own, as upstream's plugin tests
// do: PreFilter then Filter on every node (even after PreFilter rejected or skipped),
// and PreScore + Score (+ NormalizeScore) over the nodes the case lists scores for.
// Pipeline cases ("plugins": "default") run one whole cycle with the default profile.
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "kplace/config/profile.h"
#include "kplace/conform/case.h"
#include "kplace/engine/plugin.h"
#include "kplace/framework/types.h"

namespace kplace::conform {

enum class Outcome : uint8_t { kPass, kFail, kSkipped };

struct CaseResult {
  Outcome outcome = Outcome::kPass;
  /** One entry per mismatch, each "what: expected X, got Y". */
  std::vector<std::string> diffs;
  /** Why the case could not run (kSkipped), or the error that stopped it (kFail). */
  std::string why;

  /** One line: the skip reason or error, or the first diff ("(+N more)") or all diffs. */
  std::string Summary(bool all_diffs = false) const;
};

/** What the plugins under test returned, whichever implementation ran. For several
 *  plugins, a phase reports the first plugin (in run order) whose status is not Success. */
struct Observed {
  PluginStatus pre_filter;
  bool pre_filter_restricts = false;
  std::vector<std::string> pre_filter_nodes;  // sorted, when restricted
  std::map<std::string, PluginStatus> filter;  // node -> first non-Success in Filter order
  PluginStatus pre_score;
  /** Node -> score at the case's score stage, summed over the score plugins (weighted
   *  only at the `weighted` stage). */
  std::map<std::string, int64_t> score;
  std::string score_error;  // why there are no scores (PreScore/Score/NormalizeScore failed)

  // Whole cycle (pipeline cases).
  std::map<std::string, std::map<std::string, int64_t>> plugin_scores;  // normalized, unweighted
  std::map<std::string, int64_t> final_score;
  std::string selected;     // empty when no node was chosen
  std::string cycle_error;  // why no node was chosen
};

/** @brief Compares observations with the case's expectations: codes exactly, reasons
 *  as exact strings in order when asserted (NodeResourcesFit's Filter reasons as a
 *  multiset: upstream lists extended resources in Go map order), scores per node,
 *  PreFilter node names, and a pipeline case's plugin scores, totals and choice. */
CaseResult Compare(const Case& c, const Observed& got);

struct RunOptions {
  bool reference = false;  // the scalar reference instead of the engine
  engine::Backend backend = engine::Backend::kOmp;
};

/** @brief Runs the case's plugins on the reference.
 *  @return Unavailable when a plugin is not registered there; InvalidArgument when a
 *  plugin rejects its arguments. */
absl::StatusOr<Observed> ObserveReference(const Case& c);

/** @brief Runs the case's plugins on an engine backend.
 *  @return Unavailable when a plugin is not built for `backend` (or the backend has no
 *  device); InvalidArgument when the framework cannot be created. */
absl::StatusOr<Observed> ObserveEngine(const Case& c, engine::Backend backend);

/** @brief One scheduling cycle of `profile` (its plugin arguments replaced by the case's)
 *  on the reference, as pipeline cases run with DefaultProfile(): PreFilter, Filter,
 *  PreScore, Score with framework semantics; fills plugin_scores, final_score and
 *  selected, or cycle_error. Errors as ObserveReference. */
absl::StatusOr<Observed> ObserveReferenceCycle(const Case& c, const Profile& profile);

/** @brief The same cycle on an engine backend. Errors as ObserveEngine. */
absl::StatusOr<Observed> ObserveEngineCycle(const Case& c, engine::Backend backend, const Profile& profile);

/** @brief Runs a preemption case's entry point (FORMAT.md, "Preemption cases") and compares.
 *  The dry run's filter chain runs on the reference for both implementations until the
 *  engine can take pods off a node. Unavailable when a plugin is not registered. */
absl::StatusOr<CaseResult> RunPreemptionCase(const Case& c);

/** @brief Runs a sequence case (FORMAT.md, "Sequence cases") on the whole scheduler and
 *  compares each pod's node, message and whether it took a hint. */
absl::StatusOr<CaseResult> RunSequenceCase(const Case& c, const RunOptions& options);

/** @brief Observes and compares. Unavailable plugins give kSkipped; every other error
 *  (including exceptions from the engine) gives kFail with `why`. Never throws. */
CaseResult RunCase(const Case& c, const RunOptions& options);

}  // namespace kplace::conform
