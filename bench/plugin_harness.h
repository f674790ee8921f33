#pragma once
// One plugin's per-pod work, on the engine (kernels on a backend) and on the scalar
// reference, for the plugin benchmarks: PreFilter, Filter on every node, PreScore over
// the feasible nodes, Score and NormalizeScore, without the cycle around them.
#include <benchmark/benchmark.h>

#include <memory>
#include <string>
#include <vector>

#include "kplace/bench/sweep.h"
#include "kplace/config/config.h"
#include "kplace/engine/framework.h"
#include "kplace/engine/plugin.h"
#include "kplace/engine/snapshot.h"
#include "kplace/reference/plugin.h"

namespace kplace::bench {

inline PluginArgs DefaultArgs() { return DefaultSchedulerConfig().profiles[0].args; }

class EnginePluginHarness {
 public:
  /** False with `*error` when the plugin is not built for `backend`. */
  bool Init(const ObjectSet& cluster, const std::string& name, engine::Backend backend, std::string* error) {
    snapshot_ = std::make_unique<engine::Snapshot>(cluster, gates_);
    plugin_ = engine::MakePlugin(backend, name, DefaultArgs(), gates_, error);
    if (!plugin_) return false;
    plugin_->Prepare(*snapshot_);
    const int32_t n = snapshot_->num_nodes();
    codes_.assign(n, 0);
    scores_.assign(n, 0);
    return true;
  }

  /** One pod's PreFilter..NormalizeScore; returns the number of feasible nodes. */
  int32_t RunPod(const Pod& pod) {
    const unsigned points = plugin_->ExtensionPoints();
    const int32_t n = snapshot_->num_nodes();
    plugin_->StartPod(pod, *snapshot_);
    if (points & kPreFilterPoint) {
      std::vector<engine::NodeIndex> allowed;
      bool restricts = false;
      plugin_->PreFilter(pod, *snapshot_, &allowed, &restricts);
    }
    feasible_.clear();
    if (points & kFilterPoint) {
      plugin_->Filter(n, codes_.data());
      for (int32_t i = 0; i < n; ++i) {
        if (codes_[i] == 0) feasible_.push_back(i);
      }
    } else {
      for (int32_t i = 0; i < n; ++i) feasible_.push_back(i);
    }
    if (points & kScorePoint) {
      bool skip = false;
      if (points & kPreScorePoint) skip = plugin_->PreScore(pod, *snapshot_, feasible_).IsSkip();
      if (!skip) {
        const int32_t count = static_cast<int32_t>(feasible_.size());
        plugin_->Score(feasible_.data(), count, scores_.data());
        if (points & kNormalizeScorePoint) plugin_->NormalizeScore(count, scores_.data());
      }
    }
    return static_cast<int32_t>(feasible_.size());
  }

  engine::Snapshot& snapshot() { return *snapshot_; }
  engine::Plugin& plugin() { return *plugin_; }

 private:
  FeatureGates gates_;
  std::unique_ptr<engine::Snapshot> snapshot_;
  std::unique_ptr<engine::Plugin> plugin_;
  std::vector<engine::VerdictCode> codes_;
  std::vector<int64_t> scores_;
  std::vector<engine::NodeIndex> feasible_;
};

class ReferencePluginHarness {
 public:
  bool Init(const ObjectSet& cluster, const std::string& name, std::string* error) {
    state_ = reference::MakeClusterState(cluster, gates_);
    auto p = reference::MakePlugin(name, DefaultArgs(), gates_);
    if (!p.ok()) {
      *error = std::string(p.status().message());
      return false;
    }
    plugin_ = std::move(*p);
    return true;
  }

  int32_t RunPod(const Pod& pod) {
    const unsigned points = plugin_->ExtensionPoints();
    reference::CycleState cycle;
    bool skip_filter = false;
    if (points & kPreFilterPoint) {
      reference::NodeNameSet names;
      skip_filter = plugin_->PreFilter(cycle, pod, state_, &names).IsSkip();
    }
    feasible_.clear();
    for (const reference::NodeInfo& node : state_.nodes) {
      if ((points & kFilterPoint) && !skip_filter && !plugin_->Filter(cycle, pod, node, state_).IsSuccess()) continue;
      feasible_.push_back(&node);
    }
    if (points & kScorePoint) {
      bool skip = false;
      if (points & kPreScorePoint) skip = plugin_->PreScore(cycle, pod, feasible_, state_).IsSkip();
      if (!skip) {
        scores_.assign(feasible_.size(), 0);
        for (size_t k = 0; k < feasible_.size(); ++k) plugin_->Score(cycle, pod, *feasible_[k], state_, &scores_[k]);
        if (points & kNormalizeScorePoint) plugin_->NormalizeScore(cycle, pod, scores_);
      }
    }
    return static_cast<int32_t>(feasible_.size());
  }

 private:
  FeatureGates gates_;
  reference::ClusterState state_;
  std::unique_ptr<reference::Plugin> plugin_;
  std::vector<const reference::NodeInfo*> feasible_;
  std::vector<int64_t> scores_;
};

/** One plugin's PreFilter, Filter, PreScore, Score and NormalizeScore for one pod per
 *  iteration, on a `--sweep affinity`-shaped cluster of 5,000 nodes with state.range(0)
 *  existing pods: side 0 omp, 1 cuda (skipped without a device), 2 the reference. */
inline void RunSweepPodBenchmark(benchmark::State& state, const char* plugin, SweepKind kind, int side) {
  constexpr int32_t kNodes = 5000;
  const int64_t existing = state.range(0);
  auto cluster = SweepCluster(kind, kNodes, existing);
  auto pods = SweepPods(kind, 1, existing);
  if (!cluster.ok() || !pods.ok()) {
    state.SkipWithError("cannot build the cluster");
    return;
  }
  const Pod& pod = (*pods)[0];
  std::string error;
  int32_t feasible = 0;
  if (side == 2) {
    ReferencePluginHarness h;
    if (!h.Init(*cluster, plugin, &error)) {
      state.SkipWithError(error.c_str());
      return;
    }
    for (auto _ : state) benchmark::DoNotOptimize(feasible = h.RunPod(pod));
  } else {
    engine::Backend backend = side == 1 ? engine::Backend::kCuda : engine::Backend::kOmp;
    if (backend == engine::Backend::kCuda && !engine::CudaAvailable()) {
      state.SkipWithError("no CUDA device");
      return;
    }
    EnginePluginHarness h;
    if (!h.Init(*cluster, plugin, backend, &error)) {
      state.SkipWithError(error.c_str());
      return;
    }
    for (auto _ : state) benchmark::DoNotOptimize(feasible = h.RunPod(pod));
  }
  state.SetItemsProcessed(state.iterations() * kNodes);  // pods x nodes
  state.counters["existing"] = static_cast<double>(existing);
  state.counters["feasible"] = feasible;
}

}  // namespace kplace::bench
