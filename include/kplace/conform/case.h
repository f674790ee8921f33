#pragma once
// A conformance case (shared/conformance/FORMAT.md): a cluster, one incoming pod, the
// plugins under test and what upstream asserted about them.
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "absl/status/statusor.h"
#include "kplace/config/config.h"
#include "kplace/config/plugin_args.h"
#include "kplace/framework/types.h"
#include "kplace/model/objects.h"

namespace kplace::conform {

/** An asserted status. Empty `reasons` means the reasons were not asserted. */
struct StatusExpectation {
  Code code = Code::kSuccess;
  std::vector<std::string> reasons;
};

struct PreFilterExpectation {
  StatusExpectation status;
  /** True when `nodeNames` was given; then `node_names` nullopt means "all nodes". */
  bool node_names_asserted = false;
  std::optional<std::vector<std::string>> node_names;  // sorted
};

/** When expected scores were taken (FORMAT.md `scoreStage`). */
enum class ScoreStage : uint8_t { kRaw, kNormalized, kWeighted };
const char* ScoreStageName(ScoreStage stage);

// ---- DefaultPreemption cases (FORMAT.md, "Preemption cases") ----

/** A preemption-capable extender stand-in: what it does with the candidate map. */
struct PreemptionExtender {
  std::string name;
  std::string preemption;  // keepAll, dropAll, keepNode1, error
  bool ignorable = false;
  bool interested = true;
};

/** The inputs of a preemption case besides the cluster and the pod. */
struct PreemptionInput {
  /** PostFilter, DryRunPreemption, SelectCandidate, SelectVictimsOnNode,
   *  PodEligibleToPreemptOthers, NodesForStatusCode or PreEnqueue. */
  std::string entry;
  /** filterStatuses: explicit per-node statuses and the status of every other node. */
  std::map<std::string, StatusExpectation> filter_statuses;
  StatusExpectation absent{Code::kUnschedulableAndUnresolvable, {}};
  /** dryRun: a fixed offset (nullopt: the candidate set does not depend on it). */
  std::optional<int32_t> offset;
  std::optional<int32_t> parallelism;
  std::string node;                           // SelectVictimsOnNode
  Code status_code = Code::kUnschedulable;    // NodesForStatusCode
  std::vector<PreemptionExtender> extenders;
  std::optional<StatusExpectation> nominated_node_status;  // nullopt: no status (Success)
  std::optional<Pod> check_pod;                             // PreEnqueue
  std::string victim_deletion;                              // PreEnqueue: "pending"
};

struct PostFilterExpectation {
  std::optional<Code> code;      // absent: only "not an Error" was asserted
  bool has_result = false;       // nominatedNodeName was a string (possibly "": clear it)
  std::string nominated_node_name;
  std::optional<std::string> message;
  std::optional<std::vector<std::string>> victims;  // sorted namespace/name
};

struct CandidateExpectation {
  std::vector<std::string> victims;  // sorted namespace/name
  int64_t num_pdb_violations = 0;
};

struct VictimsOnNodeExpectation {
  std::string node;
  Code code = Code::kSuccess;
  std::optional<std::vector<std::string>> victims;  // sorted; only when Success
  std::optional<int64_t> num_pdb_violations;
};

struct PreEnqueueExpectation {
  Code code = Code::kSuccess;
  std::optional<std::string> message;
};

// ---- Sequence cases (FORMAT.md, "Sequence cases"): pods scheduled one after another ----

/** Where one pod of the sequence must end up. */
struct PlacementExpectation {
  std::string pod;                     // its name
  std::optional<std::string> node;     // nullopt: not placed
  std::optional<std::string> message;  // the PodScheduled=False text, when asserted
};

/** A PodGroup's PodGroupInitiallyScheduled condition at the end of a queued case. */
struct PodGroupExpectation {
  std::string name;  // namespace/name
  bool scheduled = false;  // True; false: False or never written
  std::optional<std::string> message;
};

/** The inputs and expectations of a sequence case besides the cluster. */
struct SequenceInput {
  /** A case with `podGroups` (tests/conformance/podgroup/README.md): every pod is queued
   *  before the run and the queue schedules them (PrioritySort; a PodGroup as one entity),
   *  not one cycle per pod in list order. */
  bool queued = false;
  std::vector<PodGroupExpectation> pod_groups;  // empty: not asserted
  /** Existing pods (namespace/name) preemption removed by the end of a queued case, sorted;
   *  nullopt: not asserted. */
  std::optional<std::vector<std::string>> evicted;
  SchedulerConfig config;                       // `profile` and `additionalProfiles`, merged and defaulted
  std::vector<std::string> unsigned_profiles;   // profiles with a test plugin that does not sign
  std::vector<Pod> pods;                        // the sequence, in order
  std::vector<size_t> batch_age_exceeded_before;  // indices into pods
  std::vector<PlacementExpectation> placements;   // one per pod
  std::vector<std::optional<bool>> hinted;        // empty: not asserted
};

/** What the upstream test asserted; absent parts were not asserted. */
struct Expectations {
  std::optional<PreFilterExpectation> pre_filter;
  std::map<std::string, StatusExpectation> filter;  // node -> status
  std::optional<StatusExpectation> pre_score;
  std::map<std::string, int64_t> score;             // node -> score at `score_stage`
  ScoreStage score_stage = ScoreStage::kNormalized;
  // Whole-cycle (pipeline) cases.
  std::map<std::string, std::map<std::string, int64_t>> plugin_scores;  // plugin -> node -> normalized
  std::map<std::string, int64_t> final_score;                           // node -> weighted total
  std::optional<std::string> selected;

  // Preemption cases.
  std::optional<PostFilterExpectation> post_filter;
  std::optional<std::map<std::string, CandidateExpectation>> candidates;
  std::optional<int64_t> filter_calls;
  std::optional<VictimsOnNodeExpectation> victims_on_node;
  std::optional<std::vector<std::string>> selected_node;  // any one of them passes
  std::optional<bool> eligible;
  std::optional<std::vector<std::string>> potential_nodes;  // sorted
  std::optional<PreEnqueueExpectation> pre_enqueue;

  bool HasCycle() const { return !plugin_scores.empty() || !final_score.empty() || selected.has_value(); }
};

/** One decoded case. `objects` holds nodes, bound pods and the other objects; the
 *  incoming pod is kept apart in `pod`. Not copyable cheaply; keep it in place while
 *  a run holds pointers into `objects`. */
struct Case {
  std::string file;  // as given to LoadCase
  std::string name;
  std::string source;
  bool default_profile = false;       // "plugins": "default"
  std::vector<std::string> plugins;   // the plugins under test, when not default
  PluginArgs args;                    // defaults with profile.pluginConfig applied
  FeatureGates gates;
  ObjectSet objects;
  Pod pod;
  Expectations expect;
  std::optional<PreemptionInput> preemption;  // set for cases with an `entry`
  std::optional<SequenceInput> sequence;      // set for sequence cases (`expect.placements`)
};

/** @brief Decodes a case document. `file` names it in errors.
 *  @return InvalidArgument naming `file` and the field path for bad input (including
 *  plugin arguments rejected by DecodePluginArgs). */
absl::StatusOr<Case> DecodeCase(const nlohmann::json& doc, std::string_view file);

/** @brief Parses (nesting past kMaxNestingDepth refused) and decodes a case file's text. */
absl::StatusOr<Case> DecodeCaseText(std::string_view text, std::string_view file);

/** @brief Reads and decodes a case file.
 *  @return NotFound when the file cannot be read; InvalidArgument naming the file for
 *  bad JSON or bad fields. */
absl::StatusOr<Case> LoadCase(const std::string& path);

}  // namespace kplace::conform
