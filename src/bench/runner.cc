#include "kplace/bench/runner.h"

#include <malloc.h>
#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <ctime>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <numeric>
#include <set>
#include <unordered_map>

#include "kplace/common/status.h"
#include "kplace/common/strings.h"
#include "kplace/config/config.h"
#include "kplace/cycle/batch.h"
#include "kplace/cycle/queue.h"
#include "kplace/engine/plugin.h"
#include "kplace/framework/types.h"
#include "kplace/model/decode.h"
#include "kplace/reference/plugin.h"

#ifdef KPLACE_HAVE_CUDA
#include <cuda_runtime_api.h>
#endif

namespace kplace::bench {
namespace {

using Clock = std::chrono::steady_clock;

double Seconds(Clock::duration d) { return std::chrono::duration<double>(d).count(); }

// scheduler_perf's percentile: sorted[ceil(n*X/100) - 1].
double Perc(const std::vector<double>& sorted, int x) {
  if (sorted.empty()) return 0;
  size_t n = sorted.size();
  size_t i = static_cast<size_t>(std::ceil(static_cast<double>(n * x) / 100.0));
  return sorted[std::min(n, std::max<size_t>(i, 1)) - 1];
}

// Device memory in use (cuda), -1 when not measurable.
int64_t DeviceBytesInUse(engine::Backend backend) {
#ifdef KPLACE_HAVE_CUDA
  if (backend == engine::Backend::kCuda) {
    size_t free_bytes = 0, total_bytes = 0;
    if (cudaMemGetInfo(&free_bytes, &total_bytes) == cudaSuccess) return static_cast<int64_t>(total_bytes - free_bytes);
  }
#else
  (void)backend;
#endif
  return -1;
}

// The default profile, less plugins not yet built on both sides (reported, never hidden).
SchedulerConfig BuiltDefaultConfig(engine::Backend backend, std::vector<std::string>* missing) {
  SchedulerConfig config = DefaultSchedulerConfig();
  std::vector<std::string> engine_built = engine::RegisteredPlugins(backend);
  std::vector<std::string> reference_built = reference::RegisteredPlugins();
  auto built = [&](const std::string& n) {
    bool ok = std::count(engine_built.begin(), engine_built.end(), n) &&
              std::count(reference_built.begin(), reference_built.end(), n);
    if (!ok && std::find(missing->begin(), missing->end(), n) == missing->end()) missing->push_back(n);
    return ok;
  };
  for (Profile& p : config.profiles) {
    auto keep = [&](std::vector<std::string>& v) { v.erase(std::remove_if(v.begin(), v.end(), [&](const std::string& n) { return !built(n); }), v.end()); };
    keep(p.pre_filter);
    keep(p.filter);
    keep(p.pre_score);
    p.score.erase(std::remove_if(p.score.begin(), p.score.end(), [&](const WeightedPlugin& w) { return !built(w.name); }),
                  p.score.end());
  }
  return config;
}

struct Measured {
  PhaseRun run;                     // every pod the queue decided: measured, carried, churned
  std::vector<size_t> measured;     // the measured pods' indices in run.placements, in the order first tried
  std::vector<double> end_seconds;  // per measured pod: its last attempt, from the phase start
  const cycle::Placement& placement(size_t k) const { return run.placements[measured[k]]; }
};

// CPU time of every thread of the process: on a shared machine wall time also counts the
// time other processes held the cores.
double ProcessCpuSeconds() {
  timespec t{};
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t);
  return static_cast<double>(t.tv_sec) + 1e-9 * static_cast<double>(t.tv_nsec);
}

// Creates a scheduler over `cluster` and runs the phase (RunPhase) with the measured
// `pods`; stops after `budget` seconds when positive.
absl::StatusOr<Measured> Measure(const ObjectSet& cluster, const SchedulerConfig& config, const cycle::Options& options,
                                 const std::vector<Pod>& pods, const Phase& phase, double budget, double window,
                                 engine::Backend backend, const BenchOptions& bench, RunStats* stats) {
  stats->peak_rss_reset = ResetPeakRss();
  int64_t heap0 = HeapBytesInUse();
  int64_t dev0 = DeviceBytesInUse(backend);
  auto setup = Clock::now();
  cycle::Options timed = options;
  timed.time_extension_points = true;  // scheduler_framework_extension_point_duration_seconds
  KPLACE_ASSIGN_OR_RETURN(auto scheduler, cycle::Scheduler::Create(cluster, config, timed));
  // A churned cluster is live from the start, as a running scheduler's is: its first node
  // event is applied in place, not paid for by a copy of the cluster inside the measured phase.
  if (std::any_of(phase.events.begin(), phase.events.end(),
                  [](const auto& e) { return e.second.kind != "Pod"; })) {
    KPLACE_RETURN_IF_ERROR(scheduler->state().GoLive());
  }
  stats->setup_seconds = Seconds(Clock::now() - setup);
  int64_t heap1 = HeapBytesInUse();
  stats->state_bytes = heap1 - heap0;
  if (dev0 >= 0) stats->device_bytes = DeviceBytesInUse(backend) - dev0;

  std::unordered_map<std::string, double> last_end;  // measured pod -> its last attempt
  last_end.reserve(pods.size());
  for (const Pod& p : pods) last_end.emplace(ObjectKey(p.meta), -1);
  std::vector<double> latencies, done;
  latencies.reserve(pods.size());
  const int64_t total = static_cast<int64_t>(pods.size());
  const double cpu0 = ProcessCpuSeconds();
  auto start = Clock::now();
  auto last_report = start;
  auto t0 = start;
  int64_t tried = 0;  // measured pods attempted at least once
  // One cycle per call; a preemptor's later attempts (after its victims are gone) count as
  // cycles too, and a measured pod counts as scheduled when one of them places it.
  auto each = [&](const cycle::Placement& p) {
    auto t1 = Clock::now();
    latencies.push_back(std::chrono::duration<double, std::micro>(t1 - t0).count());
    double at = Seconds(t1 - start);
    auto it = last_end.find(p.pod);
    if (it != last_end.end()) {
      tried += it->second < 0;
      it->second = at;
      if (!p.node.empty()) {
        ++stats->scheduled;
        done.push_back(at);
        stats->sli_seconds.Observe(at);
      }
      // kube-scheduler's result label: a placed pod, an internal error, else unschedulable.
      const char* result = !p.node.empty() ? "scheduled" : p.code == Code::kError ? "error" : "unschedulable";
      auto [h, fresh] = stats->attempt_seconds.try_emplace(result);
      if (fresh) h->second = Histogram::Exponential(0.001, 2, 15);
      h->second.Observe(Seconds(t1 - t0));
      for (int k = 0; k < cycle::kNumTimedPoints; ++k) {
        const auto point = static_cast<cycle::TimedPoint>(k);
        if (!p.times.Ran(point)) continue;
        auto [e, first] = stats->extension_point_seconds.try_emplace(cycle::kTimedPointNames[k]);
        if (first) e->second = Histogram::Exponential(0.0001, 2, 12);
        e->second.Observe(p.times.seconds[k]);
      }
    }
    if (bench.progress && Seconds(t1 - last_report) > bench.progress_interval_seconds) {
      bench.progress(stats->side, std::min(tried, total), total);
      last_report = t1;
    }
    t0 = Clock::now();
    if (budget > 0 && at > budget && tried < total) {
      stats->capped = true;
      return false;
    }
    return true;
  };
  Measured out;
  KPLACE_ASSIGN_OR_RETURN(out.run, RunPhase(*scheduler, pods, phase, each));
  for (size_t j = 0; j < out.run.placements.size(); ++j) {
    auto it = last_end.find(out.run.placements[j].pod);
    if (it == last_end.end()) continue;  // churned or carried
    // A PodGroup cycle decides its members together; a budget that stops the run while its
    // results are reported leaves the rest of them unreported: not in the measured prefix.
    if (it->second < 0) continue;
    out.measured.push_back(j);
    out.end_seconds.push_back(it->second);
  }
  stats->seconds = Seconds(Clock::now() - start);
  stats->batch = scheduler->batch_stats();
  stats->cpu_seconds = ProcessCpuSeconds() - cpu0;
  stats->growth_bytes = HeapBytesInUse() - heap1;
  stats->peak_rss_bytes = PeakRssBytes();
  stats->pods = static_cast<int64_t>(out.measured.size());
  stats->pods_per_second = stats->seconds > 0 ? stats->pods / stats->seconds : 0;
  stats->throughput = ComputeThroughput(done, stats->seconds, window > 0 ? window : AutoWindow(stats->seconds));
  if (stats->throughput.samples == 0 && stats->seconds > 0) {
    // Too short for even one window: every bucket holds the overall rate.
    double r = stats->scheduled / stats->seconds;
    stats->throughput.average = stats->throughput.perc50 = stats->throughput.perc90 = r;
    stats->throughput.perc95 = stats->throughput.perc99 = r;
  }
  std::sort(latencies.begin(), latencies.end());
  stats->mean_us = latencies.empty() ? 0 : std::accumulate(latencies.begin(), latencies.end(), 0.0) / latencies.size();
  stats->p50_us = Perc(latencies, 50);
  stats->p90_us = Perc(latencies, 90);
  stats->p95_us = Perc(latencies, 95);
  stats->p99_us = Perc(latencies, 99);
  return out;
}

std::vector<std::string> Victims(const cycle::Placement& p) {
  return p.preemption ? p.preemption->victims : std::vector<std::string>{};
}

// Everything a decision is compared on (CompareBatched's fields).
bool SameDecision(const cycle::Placement& a, const cycle::Placement& b) {
  return a.pod == b.pod && a.node == b.node && a.code == b.code && a.message == b.message && a.attempts == b.attempts &&
         a.score == b.score && a.feasible == b.feasible && Victims(a) == Victims(b);
}

std::string Decision(const cycle::Placement& p) {
  std::string out = StrCat("pod ", p.pod, ": ", p.node.empty() ? StrCat("\"", p.message, "\"") : StrCat("node ", p.node),
                           " (", CodeName(p.code), ", attempts ", p.attempts, ", score ", p.score, ", ", p.feasible,
                           " feasible");
  if (!Victims(p).empty()) out += StrCat(", ", Victims(p).size(), " victims");
  return out + ")";
}

// Compares two runs' placements in order; the first difference goes to `*first` unless
// one is there already. Returns the placements that differ (a missing one counts).
int64_t Compare(const char* a_name, const std::vector<cycle::Placement>& a, const char* b_name,
                const std::vector<cycle::Placement>& b, std::string* first) {
  int64_t differ = 0;
  for (size_t j = 0; j < std::max(a.size(), b.size()); ++j) {
    if (j < a.size() && j < b.size() && SameDecision(a[j], b[j])) continue;
    ++differ;
    if (!first->empty()) continue;
    *first = StrCat("#", j + 1, " in arrival order: ", a_name, " ", j < a.size() ? Decision(a[j]) : "(no such pod)",
                    "; ", b_name, " ", j < b.size() ? Decision(b[j]) : "(no such pod)");
  }
  return differ;
}

// Puts the workload's churn ticks and pod deletions among the measured pods: upstream runs
// them on wall-clock timers while its measured pods schedule at about the throughput its CI
// expects, so an event at time T comes after the measured pods that arrive before T at that
// throughput (docs/benchmarks.md, "Churn and deletions").
absl::Status PlaceEvents(const Workload& w, const std::vector<std::vector<Pod>>& init_pods, int64_t measured, Phase* phase) {
  if (!w.churn && !w.delete_pods) return absl::OkStatus();
  const Variant* v = w.FindVariant(w.variant);
  const double throughput = v && v->threshold ? *v->threshold : w.throughput;
  if (!(throughput > 0)) {
    return absl::InvalidArgumentError(StrCat("workload ", w.name, ": churn and deletePods need a throughput (or the variant's threshold) to set their rate"));
  }
  // The measured pods that arrive before time t.
  auto before = [&](double t) { return static_cast<int64_t>(std::ceil(t * throughput - 1e-9)); };
  if (w.churn) {
    for (int64_t tick = 1;; ++tick) {
      const int64_t at = before(static_cast<double>(tick) * w.churn->interval_ms / 1000.0);
      if (at >= measured) break;
      KPLACE_ASSIGN_OR_RETURN(std::vector<state::ClusterEvent> events, ChurnEvents(*w.churn, tick));
      for (state::ClusterEvent& e : events) phase->events.emplace_back(at, std::move(e));
    }
  }
  if (w.delete_pods) {
    const PodGroup& group = w.init[w.delete_pods->group];
    const nlohmann::json meta = group.pod_template.contains("metadata") ? group.pod_template["metadata"] : nlohmann::json::object();
    const bool finalizers = meta.contains("finalizers") && meta["finalizers"].is_array() && !meta["finalizers"].empty();
    const std::vector<Pod>& pods = init_pods[w.delete_pods->group];
    for (size_t d = 0; d < pods.size(); ++d) {
      const int64_t at = before(static_cast<double>(d + 1) / w.delete_pods->per_second);
      if (at >= measured) break;
      Pod p = pods[d];
      state::EventType type = state::EventType::kDeleted;
      if (finalizers) {  // the API server keeps it, marked
        p.meta.deletion_timestamp = "1970-01-01T00:00:00Z";
        type = state::EventType::kModified;
      }
      phase->events.emplace_back(at, state::PodEvent(type, p));
    }
  }
  std::stable_sort(phase->events.begin(), phase->events.end(),
                   [](const auto& a, const auto& b) { return a.first < b.first; });
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<PhaseRun> RunPhase(cycle::Scheduler& scheduler, const std::vector<Pod>& pods, const Phase& phase,
                                  const std::function<bool(const cycle::Placement&)>& each) {
  PhaseRun out;
  cycle::SchedulingQueue queue(&scheduler, [&](const cycle::Placement& p) {
    out.stopped = out.stopped || (each && !each(p));
    return !out.stopped;
  });
  for (const Pod& p : phase.carried) KPLACE_RETURN_IF_ERROR(queue.Add(p));
  std::vector<size_t> order = cycle::QueueOrder(pods);
  size_t next_event = 0;
  for (size_t k = 0; k <= order.size() && !out.stopped; ++k) {
    // After the last pod, every event left (one placed past the phase's pods).
    for (; next_event < phase.events.size() && !out.stopped &&
           (phase.events[next_event].first <= static_cast<int64_t>(k) || k == order.size());
         ++next_event) {
      KPLACE_RETURN_IF_ERROR(queue.Apply(phase.events[next_event].second));
      ++out.events;
    }
    if (k < order.size()) KPLACE_RETURN_IF_ERROR(queue.Add(pods[order[k]]));
  }
  if (!out.stopped) queue.Flush();
  out.placements = queue.Results();
  return out;
}

absl::StatusOr<PhaseVerification> VerifyPhase(const ObjectSet& cluster, const SchedulerConfig& config,
                                              const cycle::Options& options, const std::vector<Pod>& pods,
                                              const Phase& phase, const std::vector<cycle::Placement>* measured) {
  PhaseVerification out;
  KPLACE_ASSIGN_OR_RETURN(
      cycle::BatchComparison c,
      cycle::CompareBatched(cluster, config, options, [&](cycle::Scheduler& s) -> absl::StatusOr<std::vector<cycle::Placement>> {
        KPLACE_ASSIGN_OR_RETURN(PhaseRun run, RunPhase(s, pods, phase));
        out.events = run.events;  // every event of the phase, on each side (RunPhase is not stopped)
        return std::move(run.placements);
      }));
  out.placements = c.pods;
  out.per_pod_seconds = c.per_pod_seconds;
  out.batched_seconds = c.batched_seconds;
  out.mismatches = Compare("per-pod", c.per_pod, "batched", c.batched, &out.first_mismatch);
  if (out.first_mismatch.empty() && !c.same()) out.first_mismatch = c.first_mismatch;  // the final start index
  if (measured) {
    // The measured run had `options`' batch: CompareBatched's batched side, or its per-pod
    // side for batch 1.
    const bool batched = options.batch > 1;
    out.mismatches += Compare("measured run", *measured, batched ? "batched replay" : "per-pod replay",
                              batched ? c.batched : c.per_pod, &out.first_mismatch);
  }
  return out;
}

int64_t CurrentRssBytes() {
  FILE* f = std::fopen("/proc/self/statm", "r");
  if (!f) return 0;
  long long size = 0, resident = 0;
  int n = std::fscanf(f, "%lld %lld", &size, &resident);
  std::fclose(f);
  return n == 2 ? static_cast<int64_t>(resident) * sysconf(_SC_PAGESIZE) : 0;
}

int64_t HeapBytesInUse() {
  // glibc: bytes handed out by malloc (main arena) plus mmapped blocks (all large
  // allocations, e.g. node columns); RSS would miss memory reused from earlier frees.
  struct mallinfo2 mi = mallinfo2();
  return static_cast<int64_t>(mi.uordblks + mi.hblkhd);
}

int64_t PeakRssBytes() {
  struct rusage ru {};
  if (getrusage(RUSAGE_SELF, &ru) != 0) return 0;
  return static_cast<int64_t>(ru.ru_maxrss) * 1024;  // Linux reports KiB
}

bool ResetPeakRss() {
  // Linux >= 4.0: writing 5 to clear_refs resets the peak RSS (VmHWM, ru_maxrss) to the
  // current RSS.
  FILE* f = std::fopen("/proc/self/clear_refs", "w");
  if (!f) return false;
  bool ok = std::fputs("5", f) >= 0;
  ok = std::fclose(f) == 0 && ok;
  return ok;
}

double AutoWindow(double phase_seconds) {
  if (phase_seconds >= 10) return 1.0;
  // 0.5 s, 0.2 s, 0.1 s, 50 ms, ... down to 10 us.
  static const double kSteps[] = {0.5, 0.2, 0.1, 0.05, 0.02, 0.01, 0.005, 0.002, 0.001,
                                  0.0005, 0.0002, 0.0001, 0.00005, 0.00002, 0.00001};
  for (double w : kSteps) {
    if (phase_seconds / w >= 10) return w;
  }
  return kSteps[sizeof(kSteps) / sizeof(kSteps[0]) - 1];
}

Throughput ComputeThroughput(const std::vector<double>& done_seconds, double end, double window) {
  Throughput out;
  out.window_seconds = window;
  if (window <= 0) return out;
  std::vector<double> samples;
  bool started = false;
  int64_t last_count = 0, skipped = 0;
  double last_time = 0;
  size_t seen = 0;
  // Ticks at k * window while the phase runs; the partial window at the end is not sampled.
  for (int64_t k = 1;; ++k) {
    double now = static_cast<double>(k) * window;
    if (now > end) break;
    while (seen < done_seconds.size() && done_seconds[seen] <= now) ++seen;
    int64_t scheduled = static_cast<int64_t>(seen);
    if (scheduled == 0) continue;
    if (!started) {  // the first tick that sees a pod is the baseline, not a sample
      started = true;
      last_count = scheduled;
      last_time = now;
      continue;
    }
    int64_t fresh = scheduled - last_count;
    if (fresh == 0) {
      ++skipped;
      continue;
    }
    double rate = static_cast<double>(fresh) / (now - last_time);
    for (int64_t i = 0; i <= skipped; ++i) samples.push_back(rate);
    last_count = scheduled;
    last_time = now;
    skipped = 0;
  }
  out.samples = static_cast<int64_t>(samples.size());
  if (samples.empty()) return out;
  std::sort(samples.begin(), samples.end());
  out.average = std::accumulate(samples.begin(), samples.end(), 0.0) / samples.size();
  out.perc50 = Perc(samples, 50);
  out.perc90 = Perc(samples, 90);
  out.perc95 = Perc(samples, 95);
  out.perc99 = Perc(samples, 99);
  return out;
}

absl::StatusOr<PreparedPhase> PreparePhase(const Workload& w, const BenchOptions& options) {
  PreparedPhase out;
  if (w.scheduler_config) {
    KPLACE_ASSIGN_OR_RETURN(out.config, DecodeSchedulerConfig(*w.scheduler_config, StrCat(w.name, ": schedulerConfig")));
  } else {
    out.config = BuiltDefaultConfig(options.backend, &out.missing_plugins);
  }
  KPLACE_ASSIGN_OR_RETURN(out.cluster, BuildCluster(w));

  // Init pods are placed by the engine, group after group as upstream's createPods ops
  // (each op waits for its pods); every measured run starts from that state. Creation
  // times keep increasing across groups so queue order is op order.
  cycle::Options& engine_options = out.engine_options;
  engine_options.backend = options.backend;
  engine_options.batch = options.batch;
  // The variant's featureGates (scheduler_perf's), then --feature-gates over them.
  FeatureGates& gates = out.engine_options.gates;
  if (const Variant* v = w.FindVariant(w.variant)) {
    for (const auto& [gate, on] : v->feature_gates) {
      if (KnownFeatureGates().count(gate)) {
        gates.overrides[gate] = on;
        out.applied_gates[gate] = on;
      } else {
        out.ignored_gates.push_back(gate);
      }
    }
  }
  for (const auto& [gate, on] : options.gates.overrides) gates.overrides[gate] = on;
  int64_t creation = 0;
  out.init.resize(w.init.size());  // per group, bound where placed
  auto start = Clock::now();
  for (size_t g = 0; g < w.init.size(); ++g) {
    KPLACE_ASSIGN_OR_RETURN(out.init[g], BuildPods(w.init[g], StrCat("init", g), creation));
    creation += w.init[g].count;
    if (out.init[g].empty()) continue;
    RunStats init_stats;
    init_stats.side = w.init.size() > 1 ? StrCat("init pods (group ", g + 1, "/", w.init.size(), ")") : "init pods";
    KPLACE_ASSIGN_OR_RETURN(Measured placed, Measure(out.cluster, out.config, engine_options, out.init[g], Phase{}, 0, 1.0,
                                                     options.backend, options, &init_stats));
    std::unordered_map<std::string, const std::string*> node_of;
    for (const cycle::Placement& p : placed.run.placements) node_of[p.pod] = &p.node;
    for (Pod& p : out.init[g]) {
      ++out.init_pods;
      auto it = node_of.find(ObjectKey(p.meta));
      if (it == node_of.end() || it->second->empty()) {
        out.phase.carried.push_back(p);  // still pending when the measured pods come
        continue;
      }
      ++out.init_scheduled;
      p.node_name = *it->second;
      out.cluster.pods.push_back(p);
    }
  }
  out.init_seconds = Seconds(Clock::now() - start);
  out.measured_first_creation = creation;
  KPLACE_ASSIGN_OR_RETURN(out.measured, BuildPods(w.measured, "pod", creation));
  KPLACE_RETURN_IF_ERROR(PlaceEvents(w, out.init, static_cast<int64_t>(out.measured.size()), &out.phase));
  return out;
}

absl::StatusOr<BenchResult> RunWorkload(const Workload& w, const BenchOptions& options) {
  BenchResult result;
  result.workload = w.name;
  result.variant = w.variant;
  result.nodes = w.num_nodes;
  for (const Variant& v : w.variants) {
    if (v.threshold) result.thresholds.push_back(v);
  }
  result.metrics_name = w.metrics_name;
  result.batch = options.batch;
  KPLACE_ASSIGN_OR_RETURN(PreparedPhase prep, PreparePhase(w, options));
  result.missing_plugins = prep.missing_plugins;
  result.applied_gates = prep.applied_gates;
  result.ignored_gates = prep.ignored_gates;
  result.init_pods = prep.init_pods;
  result.init_scheduled = prep.init_scheduled;
  result.init_seconds = prep.init_seconds;
  const ObjectSet& cluster = prep.cluster;
  const SchedulerConfig& config = prep.config;
  const cycle::Options& engine_options = prep.engine_options;
  const FeatureGates& gates = engine_options.gates;
  const std::vector<Pod>& measured = prep.measured;
  const Phase& phase = prep.phase;
  result.churn_events = static_cast<int64_t>(phase.events.size());

  result.engine.side = StrCat("engine (", engine::BackendName(options.backend), ")");
  result.engine.backend = engine::BackendName(options.backend);
  KPLACE_ASSIGN_OR_RETURN(Measured engine_run, Measure(cluster, config, engine_options, measured, phase, 0,
                                                       options.window_seconds, options.backend, options, &result.engine));
  if (options.verify) {
    KPLACE_ASSIGN_OR_RETURN(PhaseVerification v,
                            VerifyPhase(cluster, config, engine_options, measured, phase, &engine_run.run.placements));
    result.verified = true;
    result.verify_same = v.same();
    result.verify_placements = v.placements;
    result.verify_events = v.events;
    result.verify_mismatches = v.mismatches;
    result.verify_first_mismatch = v.first_mismatch;
    // Measured pods over the phase's time, as the measured run's pods/s.
    const double pods = static_cast<double>(measured.size());
    if (v.per_pod_seconds > 0) result.verify_per_pod_pods_per_second = pods / v.per_pod_seconds;
    if (v.batched_seconds > 0) result.verify_batched_pods_per_second = pods / v.batched_seconds;
  }
  if (options.run_reference) {
    cycle::Options ref_options;
    ref_options.reference = true;
    ref_options.gates = gates;
    result.reference.side = "reference";
    result.reference.backend = "reference";
    KPLACE_ASSIGN_OR_RETURN(Measured ref_run,
                            Measure(cluster, config, ref_options, measured, phase, options.reference_budget_seconds,
                                    options.window_seconds, options.backend, options, &result.reference));
    result.reference.device_bytes = -1;
    result.compared = static_cast<int64_t>(ref_run.measured.size());
    for (size_t k = 0; k < ref_run.measured.size(); ++k) {
      const auto& e = engine_run.placement(k);
      const auto& r = ref_run.placement(k);
      if (result.reference.capped && e.attempts != r.attempts) {
        ++result.between_attempts;
        continue;
      }
      if (e.node != r.node || e.message != r.message) {
        if (result.mismatches++ == 0) {
          result.first_mismatch = StrCat("pod ", e.pod, " (#", k + 1, " in queue order): engine \"",
                                         e.node.empty() ? e.message : e.node, "\" vs reference \"",
                                         r.node.empty() ? r.message : r.node, "\"");
        }
      }
    }
    // The ratio over the same pods: the engine's time for the prefix the reference ran.
    if (result.compared > 0) {
      double engine_prefix = engine_run.end_seconds[result.compared - 1];
      double ref_prefix = ref_run.end_seconds[result.compared - 1];
      if (engine_prefix > 0) result.speedup = ref_prefix / engine_prefix;
    }
  }
  return result;
}

Histogram Histogram::Exponential(double start, double factor, int n) {
  Histogram h;
  for (int i = 0; i < n; ++i) h.bounds.push_back(start * std::pow(factor, i));
  h.counts.assign(h.bounds.size() + 1, 0);
  return h;
}

void Histogram::Observe(double seconds) {
  if (counts.size() != bounds.size() + 1) counts.assign(bounds.size() + 1, 0);
  // The first bound >= seconds (le buckets); past the last, +Inf. Inside the timed loop: one
  // binary search, no cumulative update.
  ++counts[std::lower_bound(bounds.begin(), bounds.end(), seconds) - bounds.begin()];
  sum += seconds;
  ++count;
}

double Histogram::Quantile(double q) const {
  if (count == 0 || counts.size() != bounds.size() + 1) return std::nan("");
  if (q < 0) return -INFINITY;
  if (q > 1) return INFINITY;
  std::vector<double> cumulative(counts.size());
  std::partial_sum(counts.begin(), counts.end(), cumulative.begin());
  const double rank = q * cumulative.back();
  // The first bucket whose cumulative count reaches the rank (+Inf is the last).
  size_t b = 0;
  while (b < bounds.size() && cumulative[b] < rank) ++b;
  if (b == bounds.size()) return bounds.empty() ? std::nan("") : bounds.back();
  if (b == 0 && bounds[0] <= 0) return bounds[0];
  double start = 0, in_bucket = cumulative[b], r = rank;
  if (b > 0) {
    start = bounds[b - 1];
    in_bucket -= cumulative[b - 1];
    r -= cumulative[b - 1];
  }
  return start + (bounds[b] - start) * (r / in_bucket);
}

nlohmann::json DataItems(const std::vector<BenchResult>& results) {
  using json = nlohmann::json;
  json items = json::array();
  // collectHistogramVec: the quantiles and mean in ms.
  auto histogram = [&](const Histogram& h, const std::string& metric, json labels) {
    if (h.count == 0) return;  // upstream drops a histogram without samples
    labels["Metric"] = metric;
    items.push_back({{"data",
                      {{"Perc50", h.Quantile(0.50) * 1000},
                       {"Perc90", h.Quantile(0.90) * 1000},
                       {"Perc95", h.Quantile(0.95) * 1000},
                       {"Perc99", h.Quantile(0.99) * 1000},
                       {"Average", h.Average() * 1000}}},
                     {"unit", "ms"},
                     {"labels", labels}});
  };
  for (const BenchResult& r : results) {
    for (const RunStats* s : {&r.engine, &r.reference}) {
      if (s->backend.empty()) continue;
      // scheduler_perf: the test's name (BenchmarkPerfScheduling/<test case>/<workload>) and
      // the measured op's namespace.
      json labels = {{"Name", StrCat("BenchmarkPerfScheduling/", r.workload, "/", r.variant, "/", r.metrics_name)},
                     {"backend", s->backend}};
      json t = labels;
      t["Metric"] = "SchedulingThroughput";
      items.push_back({{"data",
                        {{"Average", s->throughput.average},
                         {"Perc50", s->throughput.perc50},
                         {"Perc90", s->throughput.perc90},
                         {"Perc95", s->throughput.perc95},
                         {"Perc99", s->throughput.perc99}}},
                       {"unit", "pods/s"},
                       {"labels", t}});
      json d = labels;
      d["Metric"] = "SchedulingDuration";
      items.push_back({{"data", {{"Duration", s->seconds}}}, {"unit", "s"}, {"labels", d}});
      for (const char* result : {"scheduled", "unschedulable", "error"}) {
        auto it = s->attempt_seconds.find(result);
        if (it == s->attempt_seconds.end()) continue;
        json a = labels;
        a["result"] = result;
        histogram(it->second, "scheduler_scheduling_attempt_duration_seconds", a);
      }
      histogram(s->sli_seconds, "scheduler_pod_scheduling_sli_duration_seconds", labels);
      for (const char* point : cycle::kTimedPointNames) {
        auto it = s->extension_point_seconds.find(point);
        if (it == s->extension_point_seconds.end()) continue;
        json e = labels;
        e["extension_point"] = point;
        histogram(it->second, "scheduler_framework_extension_point_duration_seconds", e);
      }
    }
  }
  // dataItems2JSONFile: a label any item has is "not applicable" on the items without it.
  // Upstream's default collectors label every item with these once any histogram is kept.
  std::set<std::string> keys = {"extension_point", "result"};
  for (const json& item : items) {
    for (auto it = item["labels"].begin(); it != item["labels"].end(); ++it) keys.insert(it.key());
  }
  for (json& item : items) {
    for (const std::string& k : keys) {
      if (!item["labels"].contains(k)) item["labels"][k] = "not applicable";
    }
  }
  return json{{"version", "v1"}, {"dataItems", items}};
}

}  // namespace kplace::bench
