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

#include "absl/container/flat_hash_map.h"

#include "absl/status/statusor.h"
#include "kplace/config/config.h"
#include "kplace/cycle/scheduler.h"
#include "kplace/whatif/whatif.h"

namespace kplace::serve {

struct ResetResult {
  uint64_t revision = 0;
  int32_t nodes = 0, bound_pods = 0, pending_pods = 0;
};

/** A request-level gang (`Gang` of kplace.v1), refused since PodGroups replace it. */
struct GangSpec {
  std::string name;
  int32_t min_count = 0;
  std::vector<std::string> pods;
};

/** A PodGroup decided in the call: its PodGroupInitiallyScheduled outcome. */
struct GangResult {
  std::string name;  // namespace/name
  bool placed = false;
  int32_t placed_count = 0;  // members bound in this call
  int32_t min_count = 0;
  std::string first_unplaced;  // the first member in queue order that found no node
  std::string reason;          // its message, or why the gang could not start
};

struct ScheduleResult {
  uint64_t revision = 0;
  std::vector<cycle::Placement> placements;  // queue order
  std::vector<GangResult> gangs;             // in the order their first member came
  std::vector<std::string> explanations;     // per placement, when asked: `kplace explain`'s JSON
  bool stopped = false;  // stop_on_failure: a pod found no node and the pods after it were not tried
};

/** What a call expects of the state: the revision a reply gave (none: any), and the
 *  instance that gave it (empty: any). */
struct Precondition {
  Precondition() = default;
  Precondition(std::nullopt_t) {}  // NOLINT: "expects nothing" reads as std::nullopt
  Precondition(uint64_t r) : revision(r) {}  // NOLINT
  Precondition(std::optional<uint64_t> r, std::string i = "") : revision(r), instance(std::move(i)) {}  // NOLINT
  std::optional<uint64_t> revision;
  std::string instance;
};

class PlacementState {
 public:
  /** A new state gets a new instance id (random), so revisions of another process or
   *  of an earlier start are never taken for this one's. */
  explicit PlacementState(cycle::Options options = {});

  /** @brief The cluster becomes `objects` (a List or an object, JSON or YAML, or
   *  several YAML documents) under `config` (a KubeSchedulerConfiguration; empty: the default). On error
   *  (InvalidArgument naming the object and field) nothing changes. */
  absl::StatusOr<ResetResult> Reset(std::string_view objects, std::string_view config);
  /** @brief Applies watch events in order, all or none. FailedPrecondition when `expected`
   *  is not the current revision; InvalidArgument (naming the event and the field) when one
   *  is refused: then nothing is applied. Returns the new revision (the same one when no
   *  event changed anything: none, or only BOOKMARKs). */
  absl::StatusOr<uint64_t> Apply(const std::vector<std::string_view>& events, const Precondition& expected);
  /** @brief Schedules `pods` (pending pods as Reset reads objects) in queue order. A dry
   *  run decides as a commit would and leaves the state and revision as they were.
   *  PodGroups in `pods` (scheduling.k8s.io/v1beta1) join the cluster first; with the
   *  GenericWorkload gate their members (spec.schedulingGroup.podGroupName) are decided in
   *  PodGroup cycles, as kube-scheduler decides them (docs/podgroup.md), each group's
   *  outcome in the reply's `gangs`. A commit that binds no pod, preempts none and adds no
   *  PodGroup keeps the revision. Request `gangs` are refused (INVALID_ARGUMENT): they
   *  were the service's own rule, which PodGroups replace. `stop_on_failure`: the first pod
   *  the cycle tries and does not place ends the call; the pods after it in queue order
   *  are not tried and not in the reply (scheduler-library's SchedulePods StopOnFailure). */
  absl::StatusOr<ScheduleResult> Schedule(std::string_view pods, bool dry_run, const Precondition& expected,
                                          const std::vector<GangSpec>& gangs = {}, bool explain = false,
                                          bool stop_on_failure = false);
  /** @brief Each of `pods` decided alone against the current state (no binds between
   *  them, as if it were the only pending pod); the state does not change. */
  absl::StatusOr<ScheduleResult> Evaluate(std::string_view pods, const Precondition& expected, bool explain = false);

  /** What-ifs on the current state (kplace/whatif/whatif.h), undone afterwards: the
   *  state and revision do not change. `pod` is one pending Pod as Schedule reads pods. */
  absl::StatusOr<whatif::DrainResult> Drain(const std::vector<std::string>& nodes, const Precondition& expected);
  /** `part` of `parts`: that share of the candidates (whatif::Consolidate). */
  absl::StatusOr<std::vector<whatif::DrainResult>> Consolidate(const std::vector<std::string>& candidates,
                                                               const Precondition& expected, size_t part = 0,
                                                               size_t parts = 1);
  absl::StatusOr<whatif::ReplicasResult> Replicas(std::string_view pod, int64_t max, const Precondition& expected);
  /** With `reserve`, the pod is bound (assumed) to the first node that fits, the verdicts
   *  stop there as with `first_fit`, and the revision moves on when it found one: Cluster
   *  Autoscaler's check-and-reserve, meant for a fork. */
  absl::StatusOr<std::vector<cycle::NodeFit>> Fits(std::string_view pod, const std::vector<std::string>& nodes,
                                                   bool first_fit, const Precondition& expected, bool reserve = false);
  /** `pods`: pending pods as Evaluate reads them; `node_templates`: Nodes (a List or a
   *  Node, JSON or YAML), each name once. */
  absl::StatusOr<whatif::ScaleUpResult> ScaleUp(std::string_view pods, std::string_view node_templates,
                                                const whatif::ScaleUpOptions& options, const Precondition& expected);

  /** The objects now as one v1 List: nodes in node-tree order, then the other kinds as
   *  they came, then pods (bound ones with spec.nodeName), then pending pods. */
  nlohmann::json Snapshot() const;

  /** @brief Opens a fork: the writes that follow (Apply, Schedule commits, reservations)
   *  are undone together by RevertFork, objects, revision and scheduler state alike, or kept
   *  by CommitFork. Costs what the fork changes. One fork at a time; Reset is refused while
   *  one is open. */
  absl::Status BeginFork();
  absl::Status RevertFork();
  absl::Status CommitFork();
  bool forked() const { return fork_.has_value(); }

  uint64_t revision() const { return revision_; }
  /** A copy kept in step by replaying another state's writes (serve::StatePool) takes that
   *  state's revision after replaying its Reset. */
  void Renumber(uint64_t revision) { revision_ = revision; }
  const std::string& instance() const { return instance_; }
  bool ready() const { return scheduler_ != nullptr; }
  /** FailedPrecondition when a call naming `expected` may not go on: another instance, no
   *  cluster yet (Reset first), or the state moved past the expected revision. */
  absl::Status Check(const Precondition& expected) const;

  /** Whether requests and events decode each distinct pod shape once (src/serve/pod_shapes.h;
   *  on by default). Off, every object takes the general decode: the tests compare the two. */
  void set_shape_decode(bool on) { shape_decode_ = on; }
  /** Pods (of requests and of watch events) that shared an earlier pod's decode, and pods
   *  decoded on their own, since the state was made. */
  struct DecodeCounts {
    int64_t shared = 0, decoded = 0;
  };
  DecodeCounts decode_counts() const { return counts_; }

 private:
  using json = nlohmann::json;
  // An object's JSON as Snapshot writes it: parsed, or the text it came as (valid JSON,
  // parsed when Snapshot asks, which gives the value parsing it on arrival would have).
  struct KeptJson {
    json value;
    std::string text;                     // when not empty, the JSON is this text's
    std::optional<std::string> node_name;  // with `text`: its spec.nodeName is set to this
    json Get() const {
      if (text.empty()) return value;
      json j = json::parse(text);
      if (node_name) j["spec"]["nodeName"] = *node_name;
      return j;
    }
  };
  // A change to the JSON kept for Snapshot, undone when a later event of the call fails.
  struct MirrorUndo {
    std::string key;
    std::optional<KeptJson> before;
    bool pod = false;
    bool was_pending = false;
  };
  class EventDecoder;
  // The pending pods of a request, decoded with their priorities, each pod's JSON when
  // `keep_json`, and the request's PodGroups.
  struct RequestPods;
  class ExplainScope;
  // Each placement as `kplace explain` writes it (cycle::PlacementJson), into out->explanations.
  void Explain(const std::vector<Pod>& pods, ScheduleResult* out) const;
  absl::StatusOr<RequestPods> DecodeRequest(std::string_view text, bool keep_json) const;
  // The one pending pod of a what-if's request.
  absl::StatusOr<Pod> DecodeOnePod(std::string_view text) const;
  // DecodeRequest for a JSON List, each distinct pod shape decoded once; nullopt when the
  // text is not such a List or anything in it is refused (DecodeRequest then decodes it
  // the general way, which names the error).
  std::optional<RequestPods> DecodeRequestByShape(std::string_view text, bool keep_json) const;
  // One item of a request, decoded into out->decoded: a PodGroup or a pending pod.
  absl::Status AddRequestItem(const json& item, const std::string& where, RequestPods* out) const;
  // A request's pods checked against the cluster (none bound already) and their priorities admitted.
  absl::Status FinishRequest(RequestPods* out) const;
  absl::Status ApplyOne(std::string_view text, size_t k, EventDecoder* decoder, std::vector<MirrorUndo>* undo);
  void Rollback(std::vector<MirrorUndo>* undo);

  // What RevertFork restores besides the scheduler's own transaction.
  struct ForkUndo {
    uint64_t revision = 0;
    size_t order_size = 0;
    ObjectSet classes;
    std::vector<MirrorUndo> mirror;
  };
  std::optional<ForkUndo> fork_;

  cycle::Options options_;
  SchedulerConfig config_;
  std::unique_ptr<ObjectSet> cluster_;  // what the scheduler was created over
  std::unique_ptr<cycle::Scheduler> scheduler_;
  uint64_t revision_ = 0;
  std::string instance_;
  std::vector<std::string> order_;          // keys of non-pod objects, in arrival order
  using KeptMap = absl::flat_hash_map<std::string, KeptJson>;
  KeptMap objects_;  // non-pod objects by kind/namespace/name
  KeptMap pods_;     // every pod's JSON by namespace/name
  // In a fork, what `into` keeps for `key` now, for RevertFork (before a call changes it).
  void RememberForFork(const KeptMap& into, const std::string& key, bool pod);
  std::set<std::string> pending_;           // pods in the cluster without a node
  ObjectSet classes_;                       // PriorityClasses now, for pods that arrive
  bool shape_decode_ = true;
  mutable DecodeCounts counts_;
};

}  // namespace kplace::serve
