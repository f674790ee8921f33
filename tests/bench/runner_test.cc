#include "kplace/bench/runner.h"

#include <gtest/gtest.h>

#include <string>
#include <utility>
#include <vector>

#include "kplace/bench/workload.h"
#include "kplace/common/strings.h"
#include "kplace/config/config.h"
#include "kplace/cycle/scheduler.h"

namespace kplace::bench {
namespace {

// A workload at a size that runs in a test: 50 nodes, 20 init pods per group, 20 measured
// pods, and churn and deletions at a rate that puts them among the 20 pods.
Workload Tiny(const std::string& name) {
  auto w = LoadWorkload(name);
  EXPECT_TRUE(w.ok()) << w.status();
  if (!w.ok()) return Workload{};
  if (w->num_nodes > 1) w->num_nodes = 50;
  for (PodGroup& g : w->init) g.count = 20;
  w->measured.count = 20;
  w->throughput = 5;
  for (NamespaceSet& s : w->namespace_sets) s.count = 1;
  for (PodGroup& g : w->init) g.namespace_count = 1;
  NameVariant(*w);
  return *w;
}

TEST(RunnerTest, VerifyReplaysTheMeasuredPhaseWithItsEvents) {
  for (const std::string name :
       {"SchedulingWithMixedChurn", "Unschedulable", "SchedulingDeletedPodsWithFinalizers", "SchedulingWhileGated"}) {
    for (int32_t batch : {1, cycle::kDefaultBatch}) {
      SCOPED_TRACE(StrCat(name, ", batch ", batch));
      Workload w = Tiny(name);
      ASSERT_TRUE(w.churn || w.delete_pods);
      BenchOptions options;
      options.run_reference = false;
      options.verify = true;
      options.batch = batch;
      auto r = RunWorkload(w, options);
      ASSERT_TRUE(r.ok()) << r.status();
      EXPECT_TRUE(r->verified);
      EXPECT_TRUE(r->verify_same) << r->verify_first_mismatch;
      EXPECT_EQ(r->verify_mismatches, 0);
      // Every event of the measured phase was replayed on the compared runs, and every pod
      // the queue decided was compared: the measured ones and those the events brought.
      EXPECT_GT(r->churn_events, 0);
      EXPECT_EQ(r->verify_events, r->churn_events);
      EXPECT_GE(r->verify_placements, r->engine.pods);
      if (w.churn) {
        EXPECT_GT(r->verify_placements, r->engine.pods);
      }
    }
  }
}

// The measured run of `phase` on the engine, as RunWorkload's measured run makes it.
std::vector<cycle::Placement> MeasuredRun(const ObjectSet& cluster, const SchedulerConfig& config,
                                          const cycle::Options& options, const std::vector<Pod>& pods,
                                          const Phase& phase) {
  auto scheduler = cycle::Scheduler::Create(cluster, config, options);
  EXPECT_TRUE(scheduler.ok()) << scheduler.status();
  if (!scheduler.ok()) return {};
  auto run = RunPhase(**scheduler, pods, phase);
  EXPECT_TRUE(run.ok()) << run.status();
  if (!run.ok()) return {};
  EXPECT_EQ(run->events, static_cast<int64_t>(phase.events.size()));
  EXPECT_FALSE(run->stopped);
  return std::move(run->placements);
}

TEST(RunnerTest, VerifyFailsWhenItsEventsDifferFromTheMeasuredOnes) {
  Workload w = Tiny("SchedulingWithMixedChurn");
  ASSERT_TRUE(w.churn);
  auto cluster = BuildCluster(w);
  ASSERT_TRUE(cluster.ok()) << cluster.status();
  auto pods = BuildPods(w.measured, "pod", 0);
  ASSERT_TRUE(pods.ok()) << pods.status();
  // Two churn ticks among the 20 pods: a node with no room, a 9-CPU pod and a Service made
  // after 5 pods, deleted after 10.
  Phase phase;
  for (int64_t tick : {1, 2}) {
    auto events = ChurnEvents(*w.churn, tick);
    ASSERT_TRUE(events.ok()) << events.status();
    for (state::ClusterEvent& e : *events) phase.events.emplace_back(5 * tick, std::move(e));
  }
  const SchedulerConfig config = DefaultSchedulerConfig();
  for (int32_t batch : {1, cycle::kDefaultBatch}) {
    SCOPED_TRACE(StrCat("batch ", batch));
    cycle::Options options;
    options.batch = batch;
    const std::vector<cycle::Placement> measured = MeasuredRun(*cluster, config, options, *pods, phase);
    ASSERT_GT(measured.size(), pods->size());  // the churn pods were decided too

    auto same = VerifyPhase(*cluster, config, options, *pods, phase, &measured);
    ASSERT_TRUE(same.ok()) << same.status();
    EXPECT_TRUE(same->same()) << same->first_mismatch;
    EXPECT_EQ(same->events, static_cast<int64_t>(phase.events.size()));
    EXPECT_EQ(same->placements, static_cast<int64_t>(measured.size()));

    // Without the events, or with them all before the first pod, the replays agree with
    // each other but not with what was measured; the report names the first pod and both
    // decisions.
    Phase none, moved = phase;
    for (auto& [at, e] : moved.events) at = 0;
    for (const Phase* other : {&none, &moved}) {
      auto differ = VerifyPhase(*cluster, config, options, *pods, *other, &measured);
      ASSERT_TRUE(differ.ok()) << differ.status();
      EXPECT_FALSE(differ->same());
      EXPECT_GT(differ->mismatches, 0);
      EXPECT_NE(differ->first_mismatch.find("measured run pod "), std::string::npos) << differ->first_mismatch;
      EXPECT_NE(differ->first_mismatch.find(batch > 1 ? "batched replay pod " : "per-pod replay pod "),
                std::string::npos)
          << differ->first_mismatch;
    }
  }
}

}  // namespace
}  // namespace kplace::bench
