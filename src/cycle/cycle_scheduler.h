#pragma once
// The scheduling cycle over a live cluster (kplace/state/cluster_state.h): one evaluator
// per profile, the per-pod cycle (scheduler.cc), batched runs, OpportunisticBatching's
// hints, and PostFilter (post_filter.cc). The cluster tells it of every change it must
// follow in its plugins' state.
#include <cstdint>
#include <memory>
#include <optional>
#include <random>
#include <string>
#include <utility>
#include <vector>

#if defined(_OPENMP)
#include <omp.h>
#endif

#include "evaluator.h"
#include "pod_group_status.h"
#include "kplace/cycle/batch.h"
#include "kplace/cycle/host_plugins.h"
#include "kplace/cycle/opportunistic_batch.h"
#include "kplace/cycle/preemption.h"
#include "kplace/cycle/scheduler.h"
#include "kplace/state/cluster_state.h"

namespace kplace::cycle {

// The per-pod cycle runs a parallel region per plugin and per step over the whole
// cluster, each of little work: on omp their wake-ups cost more than the work saves
// (measured on 2 cores at 5,000 and 50,000 nodes: 3-11x faster on one thread;
// docs/benchmarks.md), so it runs on the calling thread. Batched runs keep their threads.
class OnOneThread {
 public:
  explicit OnOneThread(bool on) : on_(on) {
#if defined(_OPENMP)
    if (on_) {
      was_ = omp_get_max_threads();
      omp_set_num_threads(1);
    }
#endif
  }
  ~OnOneThread() {
#if defined(_OPENMP)
    if (on_) omp_set_num_threads(was_);
#endif
  }
  OnOneThread(const OnOneThread&) = delete;
  OnOneThread& operator=(const OnOneThread&) = delete;

 private:
  bool on_;
  int was_ = 1;
};

// pod_group_cycle.cc: with GenericWorkload, the PodGroup of each of `pending` in queue
// `order` (an index into `*keys`, namespace/name), -1 for a pod on its own.
std::vector<int32_t> PodGroupsInQueue(const std::vector<Pod>& pending, const std::vector<size_t>& order,
                                      const FeatureGates& gates, std::vector<std::string>* keys);

class CycleScheduler final : public Scheduler, private state::ClusterState::Listener {
 public:
  CycleScheduler(const ObjectSet& cluster, const SchedulerConfig& config, const Options& options);
  absl::Status Init();

  Placement Schedule(const Pod& pod) override;
  void SchedulePodGroup(const std::string& group, const std::vector<const Pod*>& members, int64_t pending_members,
                        const std::vector<Placement*>& out) override;
  absl::StatusOr<std::vector<NodeFit>> Filter(const Pod& pod, const std::vector<std::string>& nodes, bool first_fit) override;
  absl::StatusOr<std::optional<std::string>> FirstFit(const Pod& pod, const std::vector<std::string>& nodes) override;
  // Filter's walk: PreFilter, then each node in turn, every verdict into *out; with `out`
  // null, no verdict built. The first node that fits, when `first_fit` stopped there ("": none).
  absl::StatusOr<std::string> WalkFilter(const Pod& pod, const std::vector<std::string>& nodes, bool first_fit,
                                         std::vector<NodeFit>* out);
  absl::Status Assume(const Pod& pod, const std::string& node) override;
  state::ClusterState& state() override { return state_; }
  const state::ClusterState& state() const override { return state_; }
  const SchedulerConfig& config() const override { return config_; }
  const Options& options() const override { return options_; }
  void SetExplain(bool on) override;
  int32_t next_start_index() const override { return next_start_; }
  BatchStats batch_stats() const override;
  void ExpireBatchState() override { expire_batch_ = true; }
  int64_t hinted_pods() const override;

 private:
  // What a transaction saves of the cycle's own state.
  struct Savepoint {
    int32_t next_start = 0;
    std::mt19937_64 rng, preempt_rng;
    std::vector<OpportunisticBatch> opp;
    int64_t cycle = 0;
  };

  // state::ClusterState::Listener
  void Rebuilding() override;
  absl::Status Rebuilt() override;
  void RowsRenumbered(const std::function<int32_t(int32_t)>& row) override;
  void PodAdded(const Pod& pod, NodeIndex i, bool assumed) override;
  void PodRemoved(const Pod& pod, NodeIndex i) override;
  void NodeAdded(NodeIndex i) override;
  void NodeChanged(NodeIndex i, const Node& old) override;
  void ObjectsChanged(bool namespaces) override;
  void Begun() override;
  void Committed() override;
  void Reverting() override;

  const ObjectSet& objects() const { return state_.objects(); }
  EngineEvaluator& engine_evaluator(size_t e) { return static_cast<EngineEvaluator&>(*evaluators_[e]); }
  void RestartBatch(size_t e);
  void RestartAllBatches();  // and the selective scans: nodes or the order changed

  // scheduler.cc: the cycle.
  // Schedule for a pod of profile `ev_index` that PreEnqueue let through (`out` names it).
  Placement ScheduleAdmitted(const Pod& pod, Evaluator& ev, size_t ev_index, Placement out);
  Placement ScheduleOne(const Pod& pod, Evaluator& ev, size_t ev_index, Placement out);
  Placement ScheduleBatched(const Pod& pod, BatchCycle& batch, const Profile& profile, Placement out);
  NodeIndex BatchHint(const Pod& pod, Evaluator& ev, size_t ev_index, OpportunisticBatch& batch);
  std::vector<bool> NominatedFor(const Pod& pod) const;
  std::unique_ptr<ReferenceDryRunHost> MakeHost(size_t ev_index);
  // filter.cc: Filter on named nodes, and the per-node status the scan shares with it.
  // Node i's status for `pod`: with the nominated pods that count there (`nominated_on`)
  // through the reference's dry-run host (made once, into *host), else the evaluator's.
  // The evaluator of the profile that schedules `pod`, a pod the cluster does not hold bound.
  absl::StatusOr<size_t> PendingProfile(const Pod& pod) const;
  // The evaluator of the profile named by `pod`'s schedulerName; evaluators_.size() when none.
  size_t ProfileOf(const Pod& pod) const;
  PluginStatus NodeStatus(const Pod& pod, Evaluator* ev, size_t ev_index, const std::vector<bool>& nominated_on,
                          std::unique_ptr<ReferenceDryRunHost>* host, NodeIndex i, std::string* plugin);
  void Bind(const Pod& pod, NodeIndex host);
  void Explain(Explanation& ex, const std::vector<NodeIndex>& feasible, const Evaluator::ScoreOutcome& s);
  void ExplainShortfalls(const Pod& pod, Explanation* ex) const;

  // pod_group_cycle.cc: the PodGroup cycle (docs/podgroup.md). A group's members as a cycle
  // takes them: pods[m] for m in `queued`, each of evaluator profile_of[m].
  struct GroupMembers {
    const std::vector<const Pod*>& pods;
    const std::vector<size_t>& queued;
    const std::vector<size_t>& profile_of;
    int64_t min_count;
    int64_t bound;  // members bound before the cycle
  };
  // One run of the group algorithm inside an open transaction: PlacementFeasible, then each
  // queued member's cycle into *out[m], the members placed so far assumed. *evaluated: the
  // members it reached.
  GroupStatus RunPodGroup(const GroupMembers& g, const std::vector<Placement*>& out, size_t* evaluated);
  // Revert the innermost transaction but keep what the cycles moved on (the start index,
  // the counters, random draws), as upstream's do.
  absl::Status RevertKeepingCycle();

  // pod_group_preemption.cc: DefaultPreemption's PodGroupPostFilter (workload-aware
  // preemption) for a group the run left Unschedulable. Decides; actuates nothing.
  struct GroupPreemption {
    Code code = Code::kUnschedulable;
    std::string message;                                      // without "pod group preemption: "
    std::vector<std::string> victims;                         // keys, in the order chosen
    std::vector<std::pair<size_t, std::string>> nominations;  // member (index into pods), node
  };
  GroupPreemption PreemptForPodGroup(const GroupMembers& g, int32_t priority);
  // pod_group_cycle.cc: the group's condition into every queued member's result, and the
  // members' nominations (the preemption's, when it found room).
  void FinishPodGroup(const std::string& group, const GroupStatus& status, const GroupMembers& g,
                      GroupPreemption&& preemption, const std::vector<Placement*>& out);

  // post_filter.cc: PreEnqueue, PreBind and PostFilter, through the host plugins.
  bool PreEnqueue(const Pod& pod, size_t ev_index, Placement* out);
  bool PreBind(const Pod& pod, size_t ev_index, ObjectSet* writes, Placement* out);
  void Write(ObjectSet writes, Placement* out);
  Placement TimedPostFilter(const Pod& pod, Evaluator* ev, size_t ev_index, const NodeToStatus& statuses,
                            std::vector<HostPlugin::PostFilterInput> inputs, Placement out);
  Placement PostFilter(const Pod& pod, Evaluator* ev, size_t ev_index, const NodeToStatus& statuses,
                       const std::vector<HostPlugin::PostFilterInput>& inputs, Placement out);
  void ExplainPostFilter(const PostFilterResult& r, PreemptionOutcome* po) const;

  SchedulerConfig config_;
  Options options_;
  state::ClusterState state_;
  std::mt19937_64 rng_;
  std::mt19937_64 preempt_rng_;  // the dry run's start offset (upstream: rand.Int31n)
  int32_t next_start_ = 0;
  std::vector<std::unique_ptr<Evaluator>> evaluators_;
  std::vector<std::unique_ptr<ReferenceEvaluator>> dry_;  // per profile: the dry run's plugins
  std::vector<std::unique_ptr<BatchCycle>> batches_;      // per evaluator, when batched
  // Per engine evaluator: the per-pod scan over the nodes a pod's node affinity names.
  std::vector<std::unique_ptr<SelectiveScan>> selective_;
  BatchStats retired_stats_;                              // of runs replaced by RestartBatch
  std::vector<HostPlugins> host_;  // per profile: its plugins' steps on the host
  std::vector<Savepoint> savepoints_;  // open transactions, outermost first
  // OpportunisticBatching, per profile: whether it signs pods, and its batch state.
  std::vector<bool> signs_;
  std::vector<PodSigner> signers_;
  std::vector<OpportunisticBatch> opp_;
  int64_t cycle_ = 0;          // scheduling cycles so far, every profile's
  bool expire_batch_ = false;  // ExpireBatchState, for the next cycle
  int64_t expired_cycle_ = -1;
};

}  // namespace kplace::cycle
