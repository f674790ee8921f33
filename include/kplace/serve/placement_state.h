#pragma once
// The state behind `kplace serve` (docs/serve.md), free of any transport: a live scheduler
// over the cluster the last Reset gave, the objects' JSON as the clients sent them (for
// Snapshot), and a revision that every write moves on. Calls are serialized by the caller.
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "absl/status/statusor.h"
#include "kplace/config/config.h"
#include "kplace/cycle/scheduler.h"

namespace kplace::serve {

struct ResetResult {
  uint64_t revision = 0;
  int32_t nodes = 0, bound_pods = 0, pending_pods = 0;
};

/** Pods placed all or nothing: at least `min_count` of `pods` (namespace/name) or none. */
struct GangSpec {
  std::string name;
  int32_t min_count = 0;
  std::vector<std::string> pods;
};

struct GangResult {
  std::string name;  // namespace/name for a PodGroup, else the request's name
  bool placed = false;
  int32_t placed_count = 0;  // members placed (kept only when `placed`)
  int32_t min_count = 0;
  std::string first_unplaced;  // the first member in queue order that found no node
  std::string reason;          // its message, or why the gang could not start
};

struct ScheduleResult {
  uint64_t revision = 0;
  std::vector<cycle::Placement> placements;  // queue order
  std::vector<GangResult> gangs;             // in the order their first member came
  std::vector<std::string> explanations;     // per placement, when asked: `kplace explain`'s JSON
};

class PlacementState {
 public:
  explicit PlacementState(cycle::Options options = {}) : options_(options) {}

  /** @brief The cluster becomes `objects` (a List or an object, JSON or YAML, or
   *  several YAML documents) under `config` (a KubeSchedulerConfiguration; empty: the default). On error
   *  (InvalidArgument naming the object and field) nothing changes. */
  absl::StatusOr<ResetResult> Reset(std::string_view objects, std::string_view config);
  /** @brief Applies watch events in order, all or none. FailedPrecondition when `expected`
   *  is not the current revision; InvalidArgument (naming the event and the field) when one
   *  is refused: then nothing is applied. Returns the new revision. */
  absl::StatusOr<uint64_t> Apply(const std::vector<std::string>& events, std::optional<uint64_t> expected);
  /** @brief Schedules `pods` (pending pods as Reset reads objects) in queue order. A dry
   *  run decides as a commit would and leaves the state and revision as they were.
   *  Gangs (`gangs`, and PodGroups in `pods` whose schedulingPolicy is gang, named by their
   *  members' spec.schedulingGroup.podGroupName) are placed at their first member's turn:
   *  their members in queue order, each with the normal cycle; at least minCount placed
   *  are kept together, else none is (the members report the gang's failure). */
  absl::StatusOr<ScheduleResult> Schedule(std::string_view pods, bool dry_run, std::optional<uint64_t> expected,
                                          const std::vector<GangSpec>& gangs = {}, bool explain = false);
  /** @brief Each of `pods` decided alone against the current state (no binds between
   *  them, as if it were the only pending pod); the state does not change. */
  absl::StatusOr<ScheduleResult> Evaluate(std::string_view pods, std::optional<uint64_t> expected, bool explain = false);

  /** The objects now as one v1 List: nodes in node-tree order, then the other kinds as
   *  they came, then pods (bound ones with spec.nodeName), then pending pods. */
  nlohmann::json Snapshot() const;

  uint64_t revision() const { return revision_; }
  bool ready() const { return scheduler_ != nullptr; }

 private:
  using json = nlohmann::json;
  // A change to the JSON kept for Snapshot, undone when a later event of the call fails.
  struct MirrorUndo {
    std::string key;
    std::optional<json> before;
    bool pod = false;
    bool was_pending = false;
  };
  absl::Status Check(std::optional<uint64_t> expected) const;
  // The pending pods of a request, decoded with their priorities, each pod's JSON when
  // `keep_json`, and the request's PodGroups with the members that name them.
  struct RequestPods;
  class ExplainScope;
  // Each placement as `kplace explain` writes it (cycle::PlacementJson), into out->explanations.
  void Explain(const std::vector<Pod>& pods, ScheduleResult* out) const;
  absl::StatusOr<RequestPods> DecodeRequest(std::string_view text, bool keep_json) const;
  // Places `members` (indices into `pods`, queue order) of `gang` all or nothing, into `placed`.
  absl::StatusOr<GangResult> PlaceGang(const GangSpec& gang, const std::vector<Pod>& pods,
                                       const std::vector<size_t>& members, std::vector<cycle::Placement>* placed);
  absl::Status ApplyOne(const std::string& text, const std::string& where, std::vector<MirrorUndo>* undo);
  void Rollback(std::vector<MirrorUndo>* undo);

  cycle::Options options_;
  SchedulerConfig config_;
  std::unique_ptr<ObjectSet> cluster_;  // what the scheduler was created over
  std::unique_ptr<cycle::Scheduler> scheduler_;
  uint64_t revision_ = 0;
  std::vector<std::string> order_;          // keys of non-pod objects, in arrival order
  std::map<std::string, json> objects_;     // non-pod objects by kind/namespace/name
  std::map<std::string, json> pods_;        // every pod's JSON by namespace/name
  std::set<std::string> pending_;           // pods in the cluster without a node
  ObjectSet classes_;                       // PriorityClasses now, for pods that arrive
};

}  // namespace kplace::serve
