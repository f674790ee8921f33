#pragma once
// Batched scheduling that decides exactly as scheduling one pod at a time does
// (DESIGN.md "Batching without changing decisions"; cycle-and-config.md §1).
//
// Consecutive pods of one profile with the same scheduling signature (the same pod apart
// from name, uid and creation time) compile to the same plugin parameters. Binding pod k
// to node h changes node h's own state and the cluster-wide state of plugins that are not
// node-local (PodTopologySpread, InterPodAffinity, the volume plugins). So within such a
// run node-local plugins (engine::Plugin::NodeLocal) compile the pod once, and their
// verdict and raw score per node are kept, computed on a node's first visit and again only
// after a bind to it; the other plugins run per pod on the nodes the scan visits. What is
// left per pod is the window scan from the start index, normalization over the feasible
// window, the weighted sum and the selection. The per-pod path (Options::batch = 1) stays
// the definition: tests and `--verify` compare the two on every placement, message, score
// and the final start index. docs/batching.md has the argument in full.
#include <cstdint>
#include <functional>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "kplace/config/config.h"
#include "kplace/cycle/scheduler.h"
#include "kplace/cycle/selective_scan.h"
#include "kplace/engine/framework.h"
#include "kplace/model/objects.h"

namespace kplace::cycle {

/**
 * @brief The scheduling signature of `pod`: every field a plugin or the cycle reads,
 * encoded byte-exactly, except metadata.name, metadata.uid and the creation timestamp.
 * Pods with equal signatures in one profile compile to the same plugin parameters.
 */
std::string SchedulingSignature(const Pod& pod);
/** SchedulingSignature(pod) == signature, decided without building the encoding. */
bool HasSchedulingSignature(const Pod& pod, const std::string& signature);

/**
 * The batched cycle of one profile on an engine framework: the per-pod cycle's steps
 * (PreFilter, candidate list, scan from the start index for the first K feasible nodes,
 * FitError text, scores, selection) over Framework::FilterRun / ScoreRun, which keep what
 * node-local plugins computed for earlier pods of the run.
 */
class BatchCycle {
 public:
  struct Decision {
    Code code = Code::kSuccess;
    std::string message;        // FitError text or the error, when not placed
    engine::NodeIndex host = -1;  // snapshot index of the chosen node, -1 when not placed
    int32_t feasible = 0;
    int64_t score = 0;
    std::vector<std::string> unschedulable_plugins;  // as Placement's
  };

  /** `order` is the scan (zone round-robin) order of snapshot indices and must outlive
   *  this; at most `max_batch` consecutive pods share one run. With `snapshot` (the one the
   *  framework was prepared on, outliving this), a pod whose nodeSelector or required node
   *  affinity names few nodes scans only those (SelectiveScan). The owner makes a new cycle
   *  when nodes or the visit order change. */
  BatchCycle(engine::Framework* framework, const std::vector<int32_t>* order, int32_t max_batch,
             const engine::Snapshot* snapshot = nullptr);

  /** @brief One cycle for `pod`: the decision the per-pod cycle makes from the same state,
   *  advancing `*next_start` exactly as it does. A pod whose scheduling signature differs
   *  from the run's starts a new run. Does not bind: the caller records the pod on `host`
   *  through Framework::Bind of every profile, which is how each run learns which node
   *  changed. With `times`, each extension point's seconds are added there (PreScore within
   *  Score). */
  Decision Schedule(const Pod& pod, int32_t percentage, TieBreak tie_break, std::mt19937_64* rng,
                    int32_t* next_start, PointTimes* times = nullptr);
  /** A pod this cycle did not schedule (another profile's) was bound: a local-only run
   *  (Framework::LocalOnlyRun) is asked again at its next pod. */
  void NoteOtherBind() {
    recheck_local_only_ = recheck_local_only_ || local_only_;
    local_only_ = false;
  }
  /** Adds this cycle's runs and pods to `*stats`. */
  void AddStats(BatchStats* stats) const {
    stats->runs += stats_.runs;
    stats->pods += stats_.pods;
    stats->local_only += stats_.local_only;
  }

 private:
  /** The scan from candidate `pos` over FilterRun's verdicts, fetched in chunks of the visit
   *  order so that plugins that are not node-local run on the visited nodes only (the first
   *  chunk is exactly enough when every node fits). */
  void ScanChunks(const engine::PreFilterResult& pre, const std::vector<int32_t>& cand, int32_t pos, int32_t k,
                  engine::Scan* scan);
  /** ScanChunks over the selected candidates only (SelectiveScan), `m` in all: the same
   *  feasible nodes, stop and start index advance. False when it found no feasible node
   *  (and no error): the caller scans in full for the FitError's counts. */
  bool ScanSelected(const engine::PreFilterResult& pre, int32_t m, int32_t k, engine::Scan* scan);

  engine::Framework* fw_;
  const std::vector<int32_t>* order_;
  int32_t max_batch_;
  std::string signature_;
  Pod run_first_;  // the run's first pod, which node-local plugins compile for the run
  int32_t run_pods_ = 0;
  bool local_only_ = false;  // Framework::LocalOnlyRun for the current run
  bool recheck_local_only_ = false;
  BatchStats stats_;
  // The PreFilter restriction of the run's last pod and its candidates in scan order.
  bool restricted_valid_ = false;
  std::vector<engine::NodeIndex> allowed_, restricted_;
  std::vector<engine::NodeIndex> chunk_;
  engine::FilterResult verdict_chunk_;
  SelectiveScan selective_;
  engine::Scan scan_;
  engine::ScoreResult scores_;
};

/** Per-pod and batched placements of the same pods, compared. */
struct BatchComparison {
  int64_t pods = 0;
  int64_t mismatches = 0;
  std::string first_mismatch;  // "" when none
  int32_t per_pod_next_start = 0, batched_next_start = 0;
  double per_pod_seconds = 0, batched_seconds = 0;
  std::vector<Placement> per_pod, batched;  // in queue order
  BatchStats stats;                         // of the batched side
  bool same() const { return mismatches == 0 && per_pod_next_start == batched_next_start; }
};

/**
 * @brief Schedules `pending` (Scheduler::ScheduleAll, preemptors' later attempts included)
 * from the same `cluster` twice, per pod (batch 1) and batched (`options.batch`, or
 * kDefaultBatch when that is 1), and compares every placement's node, code, message, score,
 * feasible count, attempts and victims, and the final next start index.
 * @return InvalidArgument or Internal when a scheduler cannot be built.
 */
absl::StatusOr<BatchComparison> CompareBatched(const ObjectSet& cluster, const SchedulerConfig& config,
                                               Options options, const std::vector<Pod>& pending);
/** The same for any run: `run` schedules on a fresh scheduler (per pod, then batched) and
 *  returns its placements in a fixed order (an event replay, say). */
absl::StatusOr<BatchComparison> CompareBatched(
    const ObjectSet& cluster, const SchedulerConfig& config, Options options,
    const std::function<absl::StatusOr<std::vector<Placement>>(Scheduler&)>& run);

}  // namespace kplace::cycle
