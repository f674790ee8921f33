#pragma once
// The host-side scheduling cycle: queue order, profiles, zone round-robin node order with
// a moving start index, numFeasibleNodesToFind, scoring, tie-breaking and binding, on the
// engine (a backend) or on the scalar reference.
#include <array>
#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "kplace/config/config.h"
#include "kplace/engine/plugin.h"
#include "kplace/framework/types.h"
#include "kplace/model/objects.h"
#include "kplace/model/requests.h"
#include "kplace/state/cluster_state.h"

namespace kplace::cycle {

enum class TieBreak { kHeap, kRandom };

/** Options::batch by default: the most consecutive pods that share one batched run. */
constexpr int32_t kDefaultBatch = 10000;

/** The extension points a cycle times (Options::time_extension_points), as kube-scheduler's
 *  scheduler_framework_extension_point_duration_seconds names them. Reserve is the bind
 *  into the scheduler's state (upstream: assume, then the Reserve plugins); the binding
 *  cycle (Permit, PreBind, Bind: API calls) is not modelled. */
enum TimedPoint : uint8_t { kTimedPreFilter, kTimedFilter, kTimedPostFilter, kTimedPreScore, kTimedScore, kTimedReserve,
                            kNumTimedPoints };
inline constexpr const char* kTimedPointNames[kNumTimedPoints] = {"PreFilter", "Filter", "PostFilter",
                                                                   "PreScore",  "Score",  "Reserve"};

/** Seconds spent per extension point in one cycle; `ran` has bit p when point p ran. */
struct PointTimes {
  std::array<double, kNumTimedPoints> seconds{};
  uint8_t ran = 0;
  void Add(TimedPoint p, double s) {
    seconds[p] += s;
    ran |= static_cast<uint8_t>(1u << p);
  }
  bool Ran(TimedPoint p) const { return (ran >> p) & 1u; }
};

struct Options {
  bool reference = false;  // the scalar reference instead of the engine
  engine::Backend backend = engine::Backend::kOmp;
  TieBreak tie_break = TieBreak::kHeap;
  uint64_t seed = 1;
  FeatureGates gates;
  bool explain = false;  // keep per-plugin verdicts and scores of every cycle
  /** Batched cycles (kplace/cycle/batch.h): up to this many consecutive pods with one
   *  scheduling signature reuse what node-local plugins computed for the pods before them.
   *  1 (or less) schedules each pod on its own: the per-pod path. Decisions are the same
   *  either way. The reference and `explain` always run per pod. */
  int32_t batch = kDefaultBatch;
  /** The node index the first cycle starts its scan at (upstream's nextStartNodeIndex), for
   *  a scheduler that continues another's run. */
  int32_t start_index = 0;
  /** OpportunisticBatching's batch age, in scheduling cycles: a profile's ranking serves
   *  hints for at most this many cycles after the one that stored it (upstream: 500 ms of
   *  wall time, which a run without a clock cannot have). 0: never too old. */
  int64_t batch_max_age = 0;
  /** Profiles (by schedulerName) holding a plugin that does not sign pods, so that
   *  OpportunisticBatching never batches for them (conformance stand-ins). */
  std::vector<std::string> unsigned_profiles;
  /** Time each cycle's extension points into Placement::times (`kplace bench`'s histogram).
   *  The batched path times PreScore within Score (its ScoreRun does both). */
  bool time_extension_points = false;
  /** Workload-aware preemption asks every placed member again after each pod it puts back,
   *  as upstream does, instead of only the members a node-local check can reach. Decisions
   *  are the same either way (a test compares them); this is the slow path. */
  bool group_preemption_asks_all = false;
};

/** How a batched scheduler's pods went (Scheduler::batch_stats). */
struct BatchStats {
  int64_t runs = 0;        // batched runs started
  int64_t pods = 0;        // pods decided in runs
  int64_t local_only = 0;  // of those, pods of runs only node-local plugins decide
};

/** Per-node details of one cycle, for `kplace explain`. */
struct NodeExplanation {
  std::string node;
  std::string filter_plugin;  // first rejecting plugin, "" when feasible or not visited
  PluginStatus filter;        // its status
  std::vector<InsufficientResource> insufficient;  // the amounts behind its resource reasons
  bool visited = false;
  bool scored = false;
  std::vector<int64_t> raw, normalized, weighted;  // per score plugin of the profile
  int64_t total = 0;
};

/** One node's Filter verdict for a pod (Scheduler::Filter). */
struct NodeFit {
  std::string node;
  PluginStatus status;  // Success when the pod fits
  std::string plugin;   // the plugin that rejected it (at PreFilter or Filter); "" when it fits
};

struct Explanation {
  std::vector<std::string> score_plugins;
  std::vector<int64_t> weights;
  std::vector<bool> score_skipped;
  std::vector<NodeExplanation> nodes;  // in scan order as visited
};

/** What DefaultPreemption did for a pod that fit nowhere. */
struct PreemptionOutcome {
  std::string nominated_node;        // "" when no candidate was found
  std::vector<std::string> victims;  // namespace/name of the pods preempted, most important first
  struct Candidate {
    std::string node;
    std::vector<std::string> victims;
    int64_t pdb_violations = 0;
    std::vector<int64_t> scores;  // per criterion of kCandidateCriteria (preemption.h), higher wins
  };
  // The dry run's details, kept only under Options::explain (building them for every
  // preemption cost more than the dry run's own victim checks):
  std::vector<Candidate> candidates;            // the dry run's, in the order found
  std::string decided_by;                       // the criterion that chose among several
  std::map<std::string, std::string> rejected;  // nodes tried that are no candidate -> why
};

/** What a PodGroup cycle decided for its group: the PodGroupInitiallyScheduled condition it
 *  writes (docs/podgroup.md). */
struct PodGroupOutcome {
  std::string pod_group;  // namespace/name
  bool scheduled = false;  // the condition is True
  std::string reason;      // Scheduled, Unschedulable or SchedulerError
  std::string message;
  /** Workload-aware preemption's victims for the group (namespace/name, in the order chosen).
   *  Each member it placed holds its nomination in Placement::preemption, the first of them
   *  the victims too. */
  std::vector<std::string> victims;
};

struct Placement {
  std::string pod;   // namespace/name
  std::string node;  // "" when not placed
  Code code = Code::kSuccess;
  std::string message;  // FitError text or the error
  std::string post_filter_message;  // the PostFilter plugins' part of `message`, "" when none ran
  int32_t feasible = 0;  // feasible nodes found
  int64_t score = 0;     // total score of the chosen node (0 when not scored)
  std::shared_ptr<Explanation> explanation;  // when Options::explain
  /** When DefaultPreemption ran for this pod (in ScheduleAll: the attempt that preempted). */
  std::optional<PreemptionOutcome> preemption;
  int32_t attempts = 1;    // cycles ScheduleAll ran for the pod
  bool preempted = false;  // ScheduleAll placed it, then a later pod preempted it
  /** Not for this scheduler (no profile has its schedulerName): left alone, as upstream's
   *  scheduler never sees such pods; neither placed nor unschedulable. */
  bool other_scheduler = false;
  /** Held back at PreEnqueue; no cycle ran. `gating_plugin` says by which plugin:
   *  SchedulingGates (spec.schedulingGates) or DynamicResources (a claim it cannot find or
   *  use yet; upstream writes no condition then, the pod just waits). */
  bool gated = false;
  std::string gating_plugin;
  /** Placed on the node OpportunisticBatching hinted, without a filter pass or scores. */
  bool hinted = false;
  /** With Options::time_extension_points: this cycle's seconds per extension point. */
  PointTimes times;
  /** After a failed cycle, the plugins that rejected the pod at PreFilter or on some node
   *  (upstream's UnschedulablePlugins and PendingPlugins), sorted: the plugins whose
   *  queueing hints decide which cluster events retry it. */
  std::vector<std::string> unschedulable_plugins;
  /** Decided in its PodGroup's cycle (GenericWorkload): the group's outcome, shared by the
   *  members tried together. Null for a pod scheduled on its own or held at PreEnqueue. */
  std::shared_ptr<const PodGroupOutcome> pod_group;
};

/** Adds the seconds from its creation to its end to `times` at `point` (when `times`). */
class PointTimer {
 public:
  PointTimer(PointTimes* times, TimedPoint point) : times_(times), point_(point) {
    if (times_) start_ = std::chrono::steady_clock::now();
  }
  ~PointTimer() {
    if (times_) times_->Add(point_, std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count());
  }
  PointTimer(const PointTimer&) = delete;
  PointTimer& operator=(const PointTimer&) = delete;

 private:
  PointTimes* times_;
  TimedPoint point_;
  std::chrono::steady_clock::time_point start_;
};

class Scheduler {
 public:
  /** @brief Builds the scheduler over `cluster` (nodes, bound pods, namespaces, workloads).
   *  The ObjectSet must outlive the scheduler.
   *  @return InvalidArgument when a profile's plugin is unknown or not built. */
  static absl::StatusOr<std::unique_ptr<Scheduler>> Create(const ObjectSet& cluster, const SchedulerConfig& config,
                                                           const Options& options);
  virtual ~Scheduler() = default;

  /** One scheduling cycle; a placed pod is bound before this returns. */
  virtual Placement Schedule(const Pod& pod) = 0;
  /** Schedules `pending` in PrioritySort order (priority, then creation time, then input
   *  order); results come back in that order, one per pod, each its last attempt's. With
   *  GenericWorkload, the first pod of a PodGroup reached takes every pending member with it
   *  into one SchedulePodGroup cycle (upstream's queue holds the group as one entity).
   *  Nominations in the pods' status.nominatedNodeName are honoured. Preemption: a pod's
   *  victims terminate while the rest of the queue is tried (they still hold their
   *  resources; the preemptor's nomination counts on its node for pods of no higher
   *  priority); then their deletion completes and every pod that failed in that pass is
   *  tried again, in queue order, until a pass preempts nothing (docs/preemption.md).
   *  `each` sees every attempt as it is made; when it returns false, scheduling stops there
   *  and pods not tried yet keep attempts == 0. */
  std::vector<Placement> ScheduleAll(const std::vector<Pod>& pending,
                                     const std::function<bool(const Placement&)>& each = {});
  /** @brief One PodGroup scheduling cycle (GenericWorkload): `members` (pending pods of the
   *  PodGroup with key `group`, in queue order) are filtered and scored one after another on
   *  one view of the cluster, each seeing the ones placed before it, and GangScheduling's
   *  minCount decides all or nothing: on success the members that fit are bound, otherwise
   *  none is. `pending_members`: the group's pods pending anywhere (PreEnqueue counts them
   *  with the bound ones against minCount). Member m's result is written to *out[m], which
   *  holds no earlier result (ScheduleAll passes its own slots: no copy per member). */
  virtual void SchedulePodGroup(const std::string& group, const std::vector<const Pod*>& members,
                                int64_t pending_members, const std::vector<Placement*>& out) = 0;
  /** @brief PreFilter, then Filter on each of `nodes` (names, in the order given; empty:
   *  every node in scan order) as a
   *  scheduling cycle filters them, pending pods nominated there counted
   *  (RunFilterPluginsWithNominatedPods). With `first_fit`, stops after the first node that
   *  fits (Cluster Autoscaler's predicate check). A node PreFilter rules out gets its
   *  status. Nothing changes: no bind, the start index stays.
   *  @return InvalidArgument for an unknown node, a pod no profile schedules, or a pod the
   *  cluster holds bound already. */
  virtual absl::StatusOr<std::vector<NodeFit>> Filter(const Pod& pod, const std::vector<std::string>& nodes,
                                                      bool first_fit) = 0;
  /** @brief Filter with `first_fit`, answering only the node that fits (nullopt: none),
   *  without building the verdicts of the nodes it passes: Cluster Autoscaler's predicate
   *  check, as whatif::FirstFit and ScaleUp ask it. Errors as Filter's. */
  virtual absl::StatusOr<std::optional<std::string>> FirstFit(const Pod& pod, const std::vector<std::string>& nodes) = 0;
  /** @brief Binds `pod` to `node` as a cycle that chose that node does (the Reserve plugins,
   *  then the pod joins the node; its nomination ends), without a cycle: for what-ifs that
   *  choose nodes themselves (whatif::ScaleUp). The start index stays.
   *  @return InvalidArgument for an unknown node, a pod no profile schedules, or a pod the
   *  cluster holds bound already. */
  virtual absl::Status Assume(const Pod& pod, const std::string& node) = 0;
  /** Records `pod` as pending with the nomination in its status.nominatedNodeName (none:
   *  clears it). Schedule uses a pod's recorded nomination in place of its own status. */
  void Nominate(const Pod& pod) { state().Nominate(pod); }
  /** The recorded nomination of the pod with key namespace/name; null when none. */
  const Pod* Nomination(const std::string& key) const { return state().Nomination(key); }
  /** The live cluster the scheduler decides on: objects, events, transactions, lookups.
   *  Changes made through it (Apply, Begin/Commit/Revert) reach the scheduler's plugins;
   *  a transaction also saves and restores the scheduler's own state (start index,
   *  random state, OpportunisticBatching). */
  virtual state::ClusterState& state() = 0;
  virtual const state::ClusterState& state() const = 0;
  /** The configuration and options the scheduler was created with. */
  virtual const SchedulerConfig& config() const = 0;
  virtual const Options& options() const = 0;
  /** Keeps (or stops keeping) every cycle's per-node explanation from now on
   *  (Options::explain); explained pods go through the per-pod cycle. */
  virtual void SetExplain(bool on) = 0;
  virtual int32_t next_start_index() const = 0;
  /** Zeros when not batched. */
  virtual BatchStats batch_stats() const = 0;
  /** Makes every profile's OpportunisticBatching state too old for the next cycle's hint
   *  (a sequence conformance case's batchAgeExceededBefore). */
  virtual void ExpireBatchState() = 0;
  /** Pods placed on an OpportunisticBatching hint so far, over all profiles. */
  virtual int64_t hinted_pods() const = 0;
};

/** PrioritySort order of `pods`: indices sorted by priority desc, creation asc, input order. */
std::vector<size_t> QueueOrder(const std::vector<Pod>& pods);

}  // namespace kplace::cycle
