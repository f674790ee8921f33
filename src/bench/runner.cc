#include "kplace/bench/runner.h"

#include <algorithm>
#include <chrono>

#include "kplace/common/status.h"
#include "kplace/common/strings.h"
#include "kplace/config/config.h"
#include "kplace/engine/plugin.h"
#include "kplace/reference/plugin.h"

namespace kplace::bench {
namespace {

using Clock = std::chrono::steady_clock;

double Percentile(std::vector<double> v, double q) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  size_t i = static_cast<size_t>(q * (v.size() - 1) + 0.5);
  return v[std::min(i, v.size() - 1)];
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

absl::StatusOr<std::vector<cycle::Placement>> Measure(const ObjectSet& cluster, const SchedulerConfig& config,
                                                      const cycle::Options& options, const std::vector<Pod>& pods,
                                                      const BenchOptions& bench, RunStats* stats) {
  KPLACE_ASSIGN_OR_RETURN(auto scheduler, cycle::Scheduler::Create(cluster, config, options));
  std::vector<cycle::Placement> out;
  out.reserve(pods.size());
  std::vector<double> latencies;
  latencies.reserve(pods.size());
  std::vector<size_t> order = cycle::QueueOrder(pods);
  auto start = Clock::now();
  auto last_report = start;
  for (size_t k = 0; k < order.size(); ++k) {
    auto t0 = Clock::now();
    out.push_back(scheduler->Schedule(pods[order[k]]));
    auto t1 = Clock::now();
    latencies.push_back(std::chrono::duration<double, std::micro>(t1 - t0).count());
    if (!out.back().node.empty()) ++stats->scheduled;
    if (bench.progress && t1 - last_report > std::chrono::seconds(2)) {
      bench.progress(stats->side, static_cast<int64_t>(k + 1), static_cast<int64_t>(order.size()));
      last_report = t1;
    }
  }
  stats->seconds = std::chrono::duration<double>(Clock::now() - start).count();
  stats->pods = static_cast<int64_t>(pods.size());
  stats->pods_per_second = stats->seconds > 0 ? stats->pods / stats->seconds : 0;
  stats->p50_us = Percentile(latencies, 0.50);
  stats->p90_us = Percentile(latencies, 0.90);
  stats->p99_us = Percentile(latencies, 0.99);
  return out;
}

}  // namespace

absl::StatusOr<BenchResult> RunWorkload(const Workload& w, const BenchOptions& options) {
  BenchResult result;
  result.workload = w.name;
  result.nodes = w.num_nodes;
  SchedulerConfig config = BuiltDefaultConfig(options.backend, &result.missing_plugins);
  KPLACE_ASSIGN_OR_RETURN(ObjectSet cluster, BuildCluster(w));

  // Init pods are placed by the engine once; both measured runs start from that state.
  cycle::Options engine_options;
  engine_options.backend = options.backend;
  {
    std::vector<Pod> init;
    for (size_t g = 0; g < w.init.size(); ++g) {
      KPLACE_ASSIGN_OR_RETURN(std::vector<Pod> pods, BuildPods(w.init[g], StrCat("init", g)));
      init.insert(init.end(), pods.begin(), pods.end());
    }
    if (!init.empty()) {
      RunStats init_stats;
      init_stats.side = "init pods";
      KPLACE_ASSIGN_OR_RETURN(auto placed, Measure(cluster, config, engine_options, init, options, &init_stats));
      std::vector<size_t> order = cycle::QueueOrder(init);
      for (size_t k = 0; k < order.size(); ++k) {
        if (placed[k].node.empty()) continue;
        Pod p = init[order[k]];
        p.node_name = placed[k].node;
        cluster.pods.push_back(std::move(p));
      }
    }
  }
  KPLACE_ASSIGN_OR_RETURN(std::vector<Pod> measured, BuildPods(w.measured, "pod"));

  result.engine.side = StrCat("engine (", engine::BackendName(options.backend), ")");
  KPLACE_ASSIGN_OR_RETURN(auto engine_placements,
                          Measure(cluster, config, engine_options, measured, options, &result.engine));
  if (options.run_reference) {
    cycle::Options ref_options;
    ref_options.reference = true;
    result.reference.side = "reference";
    KPLACE_ASSIGN_OR_RETURN(auto ref_placements, Measure(cluster, config, ref_options, measured, options, &result.reference));
    for (size_t k = 0; k < engine_placements.size(); ++k) {
      const auto& e = engine_placements[k];
      const auto& r = ref_placements[k];
      if (e.node != r.node || e.message != r.message) {
        if (result.mismatches++ == 0) {
          result.first_mismatch = StrCat("pod ", e.pod, ": engine \"", e.node.empty() ? e.message : e.node,
                                         "\" vs reference \"", r.node.empty() ? r.message : r.node, "\"");
        }
      }
    }
    if (result.reference.pods_per_second > 0) {
      result.speedup = result.engine.pods_per_second / result.reference.pods_per_second;
    }
  }
  return result;
}

}  // namespace kplace::bench
