#pragma once
// Runs a workload on the engine and on the scalar reference in one process, checks that
// their placements are identical, and measures both the way scheduler_perf does
// (SchedulingThroughput sampled per window) plus per-pod latency and memory.
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "absl/status/statusor.h"
#include "kplace/bench/workload.h"
#include "kplace/cycle/scheduler.h"

namespace kplace::bench {

/** scheduler_perf's SchedulingThroughput: pods/s per sample window. */
struct Throughput {
  double average = 0, perc50 = 0, perc90 = 0, perc95 = 0, perc99 = 0;
  double window_seconds = 1;  // the sample window used
  int64_t samples = 0;        // samples recorded (0: the buckets hold the overall rate)
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
};

struct BenchResult {
  std::string workload, variant;
  int32_t nodes = 0;
  int64_t init_pods = 0, init_scheduled = 0;
  int64_t churn_events = 0;  // churn and pod-deletion events among the measured pods
  double init_seconds = 0;  // placing the init pods on the engine
  std::vector<std::string> missing_plugins;  // default plugins not built on both sides
  std::vector<Variant> thresholds;           // the workload's variants with an upstream threshold
  RunStats engine, reference;
  double speedup = 0;  // engine pods/s over reference pods/s (per-pod mean latency ratio)
  int64_t compared = 0;  // placements compared (the reference's prefix when capped)
  int64_t mismatches = 0;
  std::string first_mismatch;
  int32_t batch = 1;  // the engine's cycle::Options::batch
  /** BenchOptions::verify: the measured pods per pod and batched on the engine (not timed
   *  as the measured phase), compared on node, message and the final start index. */
  bool verified = false, verify_same = false;
  std::string verify_first_mismatch;
  double verify_per_pod_pods_per_second = 0, verify_batched_pods_per_second = 0;
};

struct BenchOptions {
  engine::Backend backend = engine::Backend::kOmp;
  bool run_reference = true;
  /** The engine's batched cycles (cycle::Options::batch): 1 schedules pod by pod. */
  int32_t batch = cycle::kDefaultBatch;
  /** Also schedule the measured pods per pod and batched and compare (cycle::CompareBatched). */
  bool verify = false;
  /** Stop the reference's measured phase after this many seconds (0: no cap); the engine's
   *  placements are then compared on the prefix the reference reached. */
  double reference_budget_seconds = 0;
  /** Throughput sample window; 0 picks scheduler_perf's 1 s when the phase lasts at least
   *  10 s, else the largest 1-2-5 step that gives at least 10 windows. */
  double window_seconds = 0;
  /** Called with (phase, done, total) about every 2 s; may be empty. */
  std::function<void(const std::string&, int64_t, int64_t)> progress;
};

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

/** @brief scheduler_perf's data-items document ({"version":"v1","dataItems":[...]}):
 *  SchedulingThroughput (pods/s), SchedulingDuration (s) and the per-pod attempt latency
 *  (ms) per side, labelled Metric, Name (<workload>/<variant>) and backend. */
nlohmann::json DataItems(const std::vector<BenchResult>& results);

/** Current and peak resident set size of this process, in bytes (0 when unknown). */
int64_t CurrentRssBytes();
/** Bytes in use from malloc (glibc mallinfo2: main arena plus mmapped blocks). */
int64_t HeapBytesInUse();
int64_t PeakRssBytes();
/** Resets the peak RSS to the current RSS where the kernel allows it; false otherwise. */
bool ResetPeakRss();

}  // namespace kplace::bench
