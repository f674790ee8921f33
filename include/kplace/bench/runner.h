#pragma once
// Runs a workload on the engine and on the scalar reference in one process, checks that
// their placements are identical, and measures both the way scheduler_perf does
// (SchedulingThroughput sampled per window) plus per-pod latency and memory.
#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "absl/status/statusor.h"
#include "kplace/bench/workload.h"
#include "kplace/cycle/scheduler.h"
#include "kplace/state/event.h"

namespace kplace::bench {

/** scheduler_perf's SchedulingThroughput: pods/s per sample window. */
struct Throughput {
  double average = 0, perc50 = 0, perc90 = 0, perc95 = 0, perc99 = 0;
  double window_seconds = 1;  // the sample window used
  int64_t samples = 0;        // samples recorded (0: the buckets hold the overall rate)
};

/** A Prometheus histogram as kube-scheduler's metrics keep one: counts per bucket (upper
 *  bounds in seconds, then +Inf), a sum and a count. */
struct Histogram {
  std::vector<double> bounds;     // upper bounds, ascending (the +Inf bucket is implied)
  std::vector<int64_t> counts;    // observations in (bounds[i-1], bounds[i]]; counts.back(): past the last
  double sum = 0;
  int64_t count = 0;
  /** component-base's metrics.ExponentialBuckets(start, factor, n). */
  static Histogram Exponential(double start, double factor, int n);
  void Observe(double seconds);
  /** Prometheus' bucketQuantile, as component-base's testutil Histogram.Quantile: linear
   *  interpolation inside the bucket that holds rank q * count; the highest finite bound
   *  when it falls in +Inf; NaN when empty. */
  double Quantile(double q) const;
  double Average() const { return count ? sum / count : 0; }
};

struct RunStats {
  std::string side;     // "engine (omp)", "reference"
  std::string backend;  // JSON label: "omp", "cuda" or "reference"
  int64_t pods = 0;       // pods attempted (a prefix of the measured pods when capped)
  int64_t scheduled = 0;  // of those, placed on a node
  bool capped = false;    // stopped at the time budget before the last measured pod
  double seconds = 0;        // the measured phase, wall time
  double cpu_seconds = 0;    // the measured phase, CPU time of the process (all threads)
  double setup_seconds = 0;  // Scheduler::Create over the cluster with init pods bound
  double pods_per_second = 0;  // pods / seconds
  Throughput throughput;
  double mean_us = 0, p50_us = 0, p90_us = 0, p95_us = 0, p99_us = 0;  // per-pod latency
  int64_t peak_rss_bytes = 0;  // process peak RSS during setup + measured phase (getrusage)
  bool peak_rss_reset = false;  // the peak was reset before this side ran (/proc/self/clear_refs)
  int64_t state_bytes = 0;   // heap growth across Scheduler::Create (host; omp columns live here)
  int64_t growth_bytes = 0;  // heap growth across the measured phase
  int64_t device_bytes = -1;    // device memory growth across Create (cuda); -1 when not measured
  cycle::BatchStats batch;      // the measured phase's batched runs (engine)
  /** scheduler_scheduling_attempt_duration_seconds by result (scheduled, unschedulable,
   *  error): each cycle of the measured phase, kube-scheduler's buckets (1 ms x 2^0..14). */
  std::map<std::string, Histogram> attempt_seconds;
  /** scheduler_pod_scheduling_sli_duration_seconds: each scheduled measured pod, from the
   *  phase's start (upstream creates the measured pods at once) to its placing cycle's end;
   *  buckets 10 ms x 2^0..19. */
  Histogram sli_seconds = Histogram::Exponential(0.01, 2, 20);
  /** scheduler_framework_extension_point_duration_seconds by extension point (cycle::
   *  kTimedPointNames): each cycle of a measured pod, upstream's buckets (0.1 ms x 2^0..11).
   *  Reserve times kplace's bind into its state; the binding cycle is not modelled. */
  std::map<std::string, Histogram> extension_point_seconds;
};

struct BenchResult {
  std::string workload, variant;
  int32_t nodes = 0;
  int64_t init_pods = 0, init_scheduled = 0;
  int64_t churn_events = 0;  // churn and pod-deletion events among the measured pods
  double init_seconds = 0;  // placing the init pods on the engine
  std::vector<std::string> missing_plugins;  // default plugins not built on both sides
  std::vector<Variant> thresholds;           // the workload's variants with an upstream threshold
  std::string metrics_name;                  // Workload::metrics_name (the DataItems' Name suffix)
  /** The variant's feature gates RunWorkload applied, and those kplace does not model
   *  (none changes a placement kplace decides, e.g. SchedulerAsyncAPICalls). */
  std::map<std::string, bool> applied_gates;
  std::vector<std::string> ignored_gates;
  RunStats engine, reference;
  double speedup = 0;  // engine pods/s over reference pods/s (per-pod mean latency ratio)
  int64_t compared = 0;  // placements compared (the reference's prefix when capped)
  int64_t mismatches = 0;
  /** Of `compared`, pods a capped reference stopped between two attempts (a preemption's
   *  retry pass not reached): their last attempts are not the same cycle, so not compared. */
  int64_t between_attempts = 0;
  std::string first_mismatch;
  int32_t batch = 1;  // the engine's cycle::Options::batch
  /** BenchOptions::verify: the measured phase (its pods, the carried pods and its events,
   *  RunPhase) replayed per pod and batched on the engine (not timed as the measured phase);
   *  VerifyPhase compares every placement of the two, and of the measured engine run. */
  bool verified = false, verify_same = false;
  int64_t verify_placements = 0;  // placements compared per run (measured, carried and churn pods)
  int64_t verify_events = 0;      // phase events each verification run replayed (== churn_events)
  int64_t verify_mismatches = 0;
  std::string verify_first_mismatch;
  double verify_per_pod_pods_per_second = 0, verify_batched_pods_per_second = 0;
};

struct BenchOptions {
  engine::Backend backend = engine::Backend::kOmp;
  /** Feature gates for every side (--feature-gates); v1.37's defaults otherwise. */
  FeatureGates gates;
  bool run_reference = true;
  /** The engine's batched cycles (cycle::Options::batch): 1 schedules pod by pod. */
  int32_t batch = cycle::kDefaultBatch;
  /** Also replay the measured phase per pod and batched and compare (VerifyPhase). */
  bool verify = false;
  /** Stop the reference's measured phase after this many seconds (0: no cap); the engine's
   *  placements are then compared on the prefix the reference reached. */
  double reference_budget_seconds = 0;
  /** Throughput sample window; 0 picks scheduler_perf's 1 s when the phase lasts at least
   *  10 s, else the largest 1-2-5 step that gives at least 10 windows. */
  double window_seconds = 0;
  /** Called with (phase, done, total) about every progress_interval_seconds; may be empty. */
  std::function<void(const std::string&, int64_t, int64_t)> progress;
  double progress_interval_seconds = 2;
};

/** What a measured phase holds besides its pods: pods the init phase left pending (queued
 *  first, as they wait in upstream's queue), and cluster events, each to come once that many
 *  of the phase's pods have been queued (churn, pod deletions), in that order. */
struct Phase {
  std::vector<Pod> carried;
  std::vector<std::pair<int64_t, state::ClusterEvent>> events;
};

/** What every measured run of a workload starts from: the first steps of RunWorkload. */
struct PreparedPhase {
  SchedulerConfig config;                     // the default profile, of the plugins both sides build
  std::vector<std::string> missing_plugins;   // default plugins left out of `config`
  cycle::Options engine_options;              // backend, batch and the feature gates below
  std::map<std::string, bool> applied_gates;  // as BenchResult's
  std::vector<std::string> ignored_gates;
  ObjectSet cluster;  // BuildCluster, with the init pods the engine placed bound
  std::vector<std::vector<Pod>> init;  // per init group; node_name set where placed
  int64_t init_pods = 0, init_scheduled = 0;
  double init_seconds = 0;
  Phase phase;  // init pods left pending, and the churn and deletion events
  std::vector<Pod> measured;
  int64_t measured_first_creation = 0;  // BuildPods' first_creation of the measured pods
};

/** @brief BuildCluster, the init pods placed by the engine group by group (as upstream's
 *  createPods ops), the measured pods and the phase's events. */
absl::StatusOr<PreparedPhase> PreparePhase(const Workload& w, const BenchOptions& options);

/** A phase as RunPhase drove it. */
struct PhaseRun {
  std::vector<cycle::Placement> placements;  // every pod's last attempt, in arrival order (SchedulingQueue::Results)
  int64_t events = 0;     // the phase's events applied
  bool stopped = false;   // `each` stopped it
};

/** @brief Drives `phase` on `scheduler` through one cycle::SchedulingQueue: the carried pods,
 *  then `pods` in queue order (cycle::QueueOrder) with each event applied where the phase puts
 *  it, then a flush. `each` (may be empty) sees every attempt; when it returns false the
 *  phase stops there (no further pod, event or flush). The measured runs and `--verify`'s
 *  runs all come through here, so they replay the same queue model.
 *  @return the queue's error (AlreadyExists for a pod queued twice) or the scheduler's. */
absl::StatusOr<PhaseRun> RunPhase(cycle::Scheduler& scheduler, const std::vector<Pod>& pods, const Phase& phase,
                                  const std::function<bool(const cycle::Placement&)>& each = {});

/** `--verify` of one phase. */
struct PhaseVerification {
  int64_t placements = 0;  // placements compared per run
  int64_t events = 0;      // phase events each run replayed
  int64_t mismatches = 0;  // placements that differ, per pod vs batched and measured vs its twin
  std::string first_mismatch;  // the first differing pod and both decisions ("" when none)
  double per_pod_seconds = 0, batched_seconds = 0;
  bool same() const { return mismatches == 0 && first_mismatch.empty(); }
};

/** @brief Replays `phase` with `pods` from `cluster` twice through RunPhase, per pod
 *  (batch 1) and batched (cycle::CompareBatched), and compares every placement of the two
 *  on node, code, message, attempts, score, feasible count and victims, and the final start
 *  index. When `measured` is given (RunPhase's placements of the measured run with
 *  `options`), it is compared the same way with the run of the same batch: the events and
 *  pods verified are the ones measured.
 *  @return InvalidArgument or Internal when a scheduler cannot be built, RunPhase's errors. */
absl::StatusOr<PhaseVerification> VerifyPhase(const ObjectSet& cluster, const SchedulerConfig& config,
                                              const cycle::Options& options, const std::vector<Pod>& pods,
                                              const Phase& phase, const std::vector<cycle::Placement>* measured);

/** @brief Builds the workload's cluster, places its init pods group by group on the engine,
 *  then schedules the measured pods on the engine and on the reference from that same
 *  state. InvalidArgument on a bad template or profile. */
absl::StatusOr<BenchResult> RunWorkload(const Workload& w, const BenchOptions& options);

/** @brief scheduler_perf's throughputCollector over per-pod completion times (seconds from
 *  the phase start, scheduled pods only, ascending), ticking every `window` until `end`:
 *  the first tick that sees a pod sets the baseline, windows without a new pod merge into
 *  the next, PercX = sorted[ceil(n*X/100)-1]. */
Throughput ComputeThroughput(const std::vector<double>& done_seconds, double end, double window);
/** The window ComputeThroughput gets when BenchOptions::window_seconds is 0. */
double AutoWindow(double phase_seconds);

/** @brief scheduler_perf's data-items document ({"version":"v1","dataItems":[...]}), as its
 *  dataItems2JSONFile writes it: per side, SchedulingThroughput (pods/s) and the histogram
 *  metrics (Perc50/90/95/99 and Average in ms, unit "ms") scheduler_scheduling_attempt_
 *  duration_seconds per `result` and scheduler_pod_scheduling_sli_duration_seconds, each
 *  only when it has samples, plus kplace's SchedulingDuration (s). Labels: Metric, Name
 *  ("BenchmarkPerfScheduling/<test case>/<workload>/<namespace>", as scheduler_perf names
 *  them), backend, and every label some item has and another lacks set to "not applicable"
 *  on the other (extension_point, result). kplace's cycle does not time its extension
 *  points, so scheduler_framework_extension_point_duration_seconds has no items. */
nlohmann::json DataItems(const std::vector<BenchResult>& results);

/** Current and peak resident set size of this process, in bytes (0 when unknown). */
int64_t CurrentRssBytes();
/** Bytes in use from malloc (glibc mallinfo2: main arena plus mmapped blocks). */
int64_t HeapBytesInUse();
int64_t PeakRssBytes();
/** Resets the peak RSS to the current RSS where the kernel allows it; false otherwise. */
bool ResetPeakRss();

}  // namespace kplace::bench
