#include <limits>
#include <random>
#include <stdexcept>

#include <gtest/gtest.h>

#include "kplace/config/profile.h"
#include "kplace/engine/framework.h"
#include "kplace/plugins/node_resources_balanced_allocation.h"
#include "tests/testing/differential.h"
#include "tests/testing/single_plugin_calls.h"

namespace kplace {
namespace {

using testing::MakeNode;
using testing::MakePod;

const std::string kName = "NodeResourcesBalancedAllocation";
const std::vector<std::string> kBa = {kName};

// Raw scores on both sides, which must agree (no NormalizeScore).
std::vector<int64_t> Scores(const ObjectSet& cluster, const Pod& pod, const PluginArgs& args = {}) {
  auto e = testing::RunEngine(engine::Backend::kOmp, cluster, pod, kBa, args);
  auto r = testing::RunReference(cluster, pod, kBa, args);
  EXPECT_EQ(testing::Diff(e, r), "");
  EXPECT_EQ(e.raw[0], e.normalized[0]);
  return e.raw[0];
}

TEST(NodeResourcesBalancedAllocationTest, WorkedExampleScoresTheChangeInBalance) {
  // conformance/pipeline: B(with)/B(without) = 93/100, 93/100, 81/75 -> 71, 71, 78.
  ObjectSet c;
  for (const char* n : {"node1", "node2", "node3"}) {
    c.nodes.push_back(MakeNode(n, {{"cpu", "4000m"}, {"memory", "8000Mi"}, {"pods", "110"}}));
  }
  c.pods.push_back(MakePod("a1", {{"cpu", "500m"}, {"memory", "2000Mi"}}, "node1"));
  c.pods.push_back(MakePod("f1", {{"cpu", "1500m"}, {"memory", "2000Mi"}}, "node1"));
  c.pods.push_back(MakePod("f2", {{"cpu", "1000m"}, {"memory", "2000Mi"}}, "node2"));
  c.pods.push_back(MakePod("f3", {{"cpu", "3000m"}, {"memory", "2000Mi"}}, "node3"));
  EXPECT_EQ(Scores(c, MakePod("p", {{"cpu", "500m"}, {"memory", "2000Mi"}})), (std::vector<int64_t>{71, 71, 78}));
}

// The v1.37 upstream table (balanced_allocation_test.go after kubernetes#135573), DRA rows
// left out. Multi-container pods are folded into one container: raw requests just sum.
TEST(NodeResourcesBalancedAllocationTest, UpstreamTable) {
  const std::map<std::string, std::string> cpu_only = {{"cpu", "3000m"}, {"memory", "0"}};
  const std::map<std::string, std::string> memory_only = {{"cpu", "0"}, {"memory", "5000"}};
  const std::map<std::string, std::string> cpu_and_memory = {{"cpu", "3000m"}, {"memory", "5000"}};
  const std::map<std::string, std::string> with_gpu = {{"cpu", "3000m"}, {"memory", "5000"}, {"nvidia.com/gpu", "3"}};
  auto node = [](const char* name, const char* cpu, const char* mem, bool gpu = false) {
    std::map<std::string, std::string> alloc = {{"cpu", cpu}, {"memory", mem}};
    if (gpu) alloc["nvidia.com/gpu"] = "8";
    return MakeNode(name, alloc);
  };
  PluginArgs gpu_args;
  gpu_args.balanced_allocation.resources = {{"cpu", 1}, {"memory", 1}, {"nvidia.com/gpu", 1}};
  struct Row {
    const char* name;
    std::vector<Node> nodes;
    std::vector<Pod> pods;
    Pod pod;
    PluginArgs args;
    std::vector<int64_t> want;
  };
  const std::vector<Row> rows = {
      {"nothing scheduled, resources requested, differently sized nodes",
       {node("node1", "4000m", "10000"), node("node2", "6000m", "10000")}, {}, MakePod("p", cpu_and_memory), {},
       {68, 75}},
      {"resources requested, pods scheduled with resources",
       {node("node1", "10000m", "20000"), node("node2", "10000m", "20000")},
       {MakePod("a", cpu_only, "node1"), MakePod("b", cpu_and_memory, "node2")}, MakePod("p", cpu_and_memory), {},
       {73, 74}},
      {"resources requested, pods scheduled with resources, differently sized nodes",
       {node("node1", "10000m", "20000"), node("node2", "10000m", "50000")},
       {MakePod("a", cpu_only, "node1"), MakePod("b", cpu_and_memory, "node2")}, MakePod("p", cpu_and_memory), {},
       {73, 70}},
      {"nodes to reach min/max score", {node("node1", "3000m", "5000"), node("node2", "3000m", "5000")},
       {MakePod("a", cpu_only, "node1")}, MakePod("p", memory_only), {}, {100, 50}},
      {"requested resources at node capacity", {node("node1", "6000m", "10000"), node("node2", "6000m", "10000")},
       {MakePod("a", cpu_only, "node1"), MakePod("b", cpu_and_memory, "node2")}, MakePod("p", cpu_only), {},
       {62, 62}},
      {"include scalar resource", {node("node1", "3500m", "40000", true), node("node2", "3500m", "40000", true)},
       {MakePod("a", cpu_and_memory, "node2"), MakePod("b", with_gpu, "node1")},
       MakePod("p", {{"memory", "0"}, {"nvidia.com/gpu", "1"}}), gpu_args, {75, 76}},
      {"node without the scalar resource skips it",
       {node("node1", "3500m", "40000", true), node("node2", "3500m", "40000")}, {}, MakePod("p", cpu_and_memory),
       gpu_args, {56, 56}},
  };
  for (const Row& row : rows) {
    ObjectSet c;
    c.nodes = row.nodes;
    c.pods = row.pods;
    EXPECT_EQ(Scores(c, row.pod, row.args), row.want) << row.name;
  }
}

TEST(NodeResourcesBalancedAllocationTest, Formula) {
  ObjectSet c;
  c.nodes.push_back(MakeNode("n0", {{"cpu", "4"}, {"memory", "10000"}, {"pods", "32"}}));
  // with: 0.75 / 0.5 -> std 0.125 -> 87; without: 0 / 0 -> 100; 50 + (50 + 87 - 100) / 2 = 68.
  EXPECT_EQ(Scores(c, MakePod("p", {{"cpu", "3"}, {"memory", "5000"}})), (std::vector<int64_t>{68}));
  // A pod that restores balance scores above 75.
  c.pods.push_back(MakePod("e", {{"cpu", "2"}}, "n0"));
  EXPECT_EQ(Scores(c, MakePod("p", {{"memory", "5000"}})), (std::vector<int64_t>{87}));
  // Over-commitment clips the fraction at 1: with 1 / 1 -> 100, without 0.5 / 0 -> 75.
  EXPECT_EQ(Scores(c, MakePod("p", {{"cpu", "9"}, {"memory", "20000"}})), (std::vector<int64_t>{87}));

  // Three resources use the population standard deviation.
  ObjectSet g;
  g.nodes.push_back(MakeNode("n0", {{"cpu", "3500m"}, {"memory", "8000"}, {"example.com/gpu", "4"}, {"pods", "32"}}));
  PluginArgs args;
  args.balanced_allocation.resources = {{"cpu", 1}, {"memory", 1}, {"example.com/gpu", 1}};
  // with: 3000/3500, 1000/8000, 2/4 -> std 0.2989 -> 70; without: 0 / 0 / 0 -> 100 -> 60.
  EXPECT_EQ(Scores(g, MakePod("p", {{"cpu", "3"}, {"memory", "1000"}, {"example.com/gpu", "2"}}), args),
            (std::vector<int64_t>{60}));
  // A scalar the pod does not request is left out: cpu and memory only.
  EXPECT_EQ(Scores(g, MakePod("p", {{"cpu", "3"}, {"memory", "1000"}}), args), Scores(g, MakePod("p", {{"cpu", "3"}, {"memory", "1000"}})));
}

TEST(NodeResourcesBalancedAllocationTest, SkippedResourcesAndBestEffortPods) {
  ObjectSet c;
  c.nodes.push_back(MakeNode("n0", {{"pods", "32"}}));  // nothing allocatable: every resource skipped
  EXPECT_EQ(Scores(c, MakePod("p", {{"cpu", "1"}})), (std::vector<int64_t>{75}));
  auto both = [&](const Pod& pod, const PluginArgs& args = {}) {
    PluginStatus e = testing::EnginePreScore(kName, c, pod, args);
    EXPECT_EQ(e, testing::ReferencePreScore(kName, c, pod, args));
    return e;
  };
  EXPECT_TRUE(both(MakePod("p", {})).IsSkip());
  EXPECT_TRUE(both(MakePod("p", {{"example.com/gpu", "1"}})).IsSkip());  // not configured
  EXPECT_TRUE(both(MakePod("p", {{"memory", "1"}})).IsSuccess());
  Pod no_containers = MakePod("p", {});
  no_containers.containers.clear();
  EXPECT_TRUE(both(no_containers).IsSkip());
  PluginArgs gpu;
  gpu.balanced_allocation.resources = {{"example.com/gpu", 1}};
  EXPECT_TRUE(both(MakePod("p", {{"example.com/gpu", "1"}}), gpu).IsSuccess());
}

// The plugin alone on the omp backend, prepared over `snapshot`.
std::unique_ptr<engine::Framework> BalancedFramework(const engine::Snapshot& snapshot, const PluginArgs& args = {}) {
  Profile profile = SinglePluginsProfile(kBa);
  profile.args = args;
  std::string error;
  auto fw = engine::Framework::Create(engine::Backend::kOmp, profile, {}, &error);
  if (!fw) throw std::runtime_error(error);
  fw->Prepare(snapshot);
  return fw;
}

TEST(NodeResourcesBalancedAllocationTest, ColumnsFollowBindings) {
  ObjectSet c;
  c.nodes.push_back(MakeNode("n0", {{"cpu", "4"}, {"memory", "8Gi"}, {"example.com/gpu", "2"}, {"pods", "32"}}));
  c.nodes.push_back(MakeNode("n1", {{"cpu", "8"}, {"memory", "4Gi"}, {"pods", "32"}}));
  PluginArgs args;
  args.balanced_allocation.resources = {{"cpu", 1}, {"memory", 1}, {"example.com/gpu", 1}, {"vendor.io/fpga", 1}};
  engine::Snapshot snapshot(c, {});
  auto fw = BalancedFramework(snapshot, args);
  ObjectSet bound = c;
  const std::vector<Pod> binds = {MakePod("b0", {{"cpu", "1"}, {"memory", "1Gi"}, {"example.com/gpu", "1"}}),
                                  MakePod("b1", {{"cpu", "3"}, {"vendor.io/fpga", "1"}}),  // a scalar no node has
                                  MakePod("b2", {{"memory", "3Gi"}})};
  const Pod probe = MakePod("p", {{"cpu", "500m"}, {"memory", "1Gi"}, {"example.com/gpu", "1"}});
  for (size_t k = 0; k < binds.size(); ++k) {
    engine::NodeIndex target = static_cast<engine::NodeIndex>(k % 2);
    const Pod& recorded = snapshot.Bind(binds[k], target);
    fw->Bind(recorded, target);
    bound.pods.push_back(recorded);
    fw->PreFilter(probe);
    engine::ScoreResult got = fw->Score({0, 1});
    EXPECT_EQ(got.raw[0], Scores(bound, probe, args)) << "after bind " << k;
  }
}

// The default resources (cpu and memory) read each node's own balance from a column kept
// by binds: after every bind, a framework that bound them scores as one built afresh.
TEST(NodeResourcesBalancedAllocationTest, OwnBalanceFollowsBindings) {
  std::mt19937_64 rng(4242);
  auto pick = [&](std::vector<std::string> v) { return v[rng() % v.size()]; };
  ObjectSet c;
  for (int i = 0; i < 6; ++i) {
    c.nodes.push_back(MakeNode("n" + std::to_string(i), {{"cpu", pick({"2", "4", "16"})},
                                                         {"memory", pick({"4Gi", "16Gi", "128Gi"})},
                                                         {"pods", "110"}}));
  }
  engine::Snapshot snapshot(c, {});
  auto fw = BalancedFramework(snapshot);
  ObjectSet bound = c;
  for (int k = 0; k < 60; ++k) {
    const Pod pod = MakePod("b" + std::to_string(k), {{"cpu", pick({"100m", "1", "3"})}, {"memory", pick({"256Mi", "2Gi"})}});
    const engine::NodeIndex target = static_cast<engine::NodeIndex>(rng() % c.nodes.size());
    const Pod& recorded = snapshot.Bind(pod, target);
    fw->Bind(recorded, target);
    bound.pods.push_back(recorded);
    const Pod probe = MakePod("p", {{"cpu", pick({"200m", "2"})}, {"memory", pick({"512Mi", "8Gi"})}});
    fw->PreFilter(probe);
    engine::ScoreResult got = fw->Score({0, 1, 2, 3, 4, 5});
    ASSERT_EQ(got.raw[0], Scores(bound, probe)) << "after bind " << k;
  }
}

TEST(NodeResourcesBalancedAllocationTest, EngineMatchesReferenceOnRandomPairs) {
  std::mt19937_64 rng(7777);
  auto pick = [&](std::vector<std::string> v) { return v[rng() % v.size()]; };
  ObjectSet c;
  for (int i = 0; i < 80; ++i) {
    std::map<std::string, std::string> alloc = {{"cpu", pick({"0", "500m", "1", "3", "16"})},
                                                {"memory", pick({"0", "512Mi", "1Gi", "7Gi", "10000"})},
                                                {"pods", "110"}};
    if (rng() % 3 == 0) alloc["example.com/gpu"] = pick({"0", "1", "8"});
    if (rng() % 4 == 0) alloc["ephemeral-storage"] = pick({"1Gi", "10Gi"});
    c.nodes.push_back(MakeNode("n" + std::to_string(i), alloc));
    for (int k = rng() % 4; k > 0; --k) {
      std::map<std::string, std::string> req = {{"cpu", pick({"0", "100m", "1", "3"})}, {"memory", pick({"1Mi", "1Gi"})}};
      if (rng() % 3 == 0) req["example.com/gpu"] = "1";
      c.pods.push_back(MakePod("e" + std::to_string(i) + "-" + std::to_string(k), req, "n" + std::to_string(i)));
    }
  }
  for (int variant = 0; variant < 3; ++variant) {
    PluginArgs args;
    if (variant == 1) args.balanced_allocation.resources = {{"cpu", 1}, {"memory", 1}, {"example.com/gpu", 1}};
    if (variant == 2) {
      args.balanced_allocation.resources = {{"ephemeral-storage", 1}, {"cpu", 1}, {"example.com/gpu", 1}, {"memory", 1}};
    }
    for (int j = 0; j < 80; ++j) {
      std::map<std::string, std::string> req;
      if (rng() % 4) req["cpu"] = pick({"0", "1m", "100m", "1", "2500m"});
      if (rng() % 4) req["memory"] = pick({"0", "1", "100Mi", "2Gi"});
      if (rng() % 3 == 0) req["example.com/gpu"] = pick({"0", "1", "2"});
      if (rng() % 5 == 0) req["ephemeral-storage"] = pick({"1", "5Gi"});
      Pod pod = MakePod("p" + std::to_string(j), req);
      auto e = testing::RunEngine(engine::Backend::kOmp, c, pod, kBa, args);
      auto r = testing::RunReference(c, pod, kBa, args);
      ASSERT_EQ(testing::Diff(e, r), "") << "variant " << variant << " pod " << j;
      ASSERT_EQ(testing::EnginePreScore(kName, c, pod, args), testing::ReferencePreScore(kName, c, pod, args));
    }
  }
}

}  // namespace
}  // namespace kplace

// The cpu-and-memory fast paths of both resource scores give what the loop over resources
// gives (the same resources listed memory first take the loop), zero allocatable, empty
// nodes and saturating requests included.
namespace kplace {
namespace {

TEST(ResourceScoresTest, CpuMemoryFastPathsEqualTheGeneralLoop) {
  std::mt19937_64 rng(11);
  const int64_t kBig = std::numeric_limits<int64_t>::max() - 5;
  auto pick = [&](std::initializer_list<int64_t> values) { return *(values.begin() + rng() % values.size()); };
  for (int trial = 0; trial < 20000; ++trial) {
    const int64_t edge = plugins::kFitExactBelow;  // LeastAllocated's double quotients end there
    int64_t alloc_cpu = pick({0, 1, 1000, 4000, 3999, edge - 1, edge, kBig});
    int64_t alloc_mem = pick({0, 7, 1 << 30, 32LL << 30, edge - 1, edge, kBig});
    int64_t req_cpu = pick({0, 1, 500, 4000, 9000, edge - 2, kBig}), req_mem = pick({0, 3, 1 << 29, 40LL << 30, edge - 2, kBig});
    int64_t nz_cpu = req_cpu + pick({0, 100}), nz_mem = req_mem + pick({0, 200});
    int64_t zero = 0;
    plugins::FitNodeView v{1, &alloc_cpu, &alloc_mem, &zero, &zero, &req_cpu, &req_mem, &zero, &nz_cpu, &nz_mem, &zero,
                           nullptr, nullptr, nullptr, nullptr};
    plugins::FitScoreParams fast{};
    fast.strategy = plugins::FitStrategy::kLeastAllocated;
    fast.num_resources = 2;
    fast.use_non_zero = rng() % 2;
    fast.resources[0].kind = plugins::FitResourceKind::kCpu;
    fast.resources[0].pod_request = pick({0, 100, 2000, kBig});
    fast.resources[0].weight = pick({1, 3});
    fast.resources[1].kind = plugins::FitResourceKind::kMemory;
    fast.resources[1].pod_request = pick({0, 1 << 20, 8LL << 30, kBig});
    fast.resources[1].weight = pick({1, 2, 3});
    plugins::FitScoreParams loop = fast;
    std::swap(loop.resources[0], loop.resources[1]);
    ASSERT_TRUE(plugins::FitScoresCpuMemory(fast));
    ASSERT_FALSE(plugins::FitScoresCpuMemory(loop));
    ASSERT_EQ(plugins::FitScoreNode(v, fast, 0), plugins::FitScoreNode(v, loop, 0)) << "trial " << trial;
    // The small parameter blocks the kernels carry for these cases.
    ASSERT_TRUE(plugins::FitScoresLeastCpuMemory(fast));
    ASSERT_EQ(plugins::FitLeastAllocatedCpuMemory(v, plugins::FitLeastCpuMemoryOf(fast), 0),
              plugins::FitScoreNode(v, loop, 0))
        << "trial " << trial;
    fast.use_non_zero = loop.use_non_zero = false;
    ASSERT_EQ(plugins::BalancedScoreNode(v, plugins::BalancedParams{fast}, 0),
              plugins::BalancedScoreNode(v, plugins::BalancedParams{loop}, 0))
        << "trial " << trial;
    ASSERT_TRUE(plugins::BalancedScoresCpuMemory(plugins::BalancedParams{fast}));
    ASSERT_EQ(plugins::BalancedScoreCpuMemory(v, plugins::BalancedCpuMemoryOf(plugins::BalancedParams{fast}), 0),
              plugins::BalancedScoreNode(v, plugins::BalancedParams{loop}, 0))
        << "trial " << trial;
    // Filter without scalar requests: the basic checks are the whole verdict.
    plugins::FitFilterParams filter{};
    filter.cpu_milli = pick({0, 100, 2000, kBig});
    filter.mem_bytes = pick({0, 1 << 20, 8LL << 30, kBig});
    int64_t pods = pick({0, 109, 110}), alloc_pods = 110;
    plugins::FitNodeView counted = v;
    counted.pod_count = &pods;
    counted.alloc_pods = &alloc_pods;
    ASSERT_EQ(plugins::FitFilterBasic(counted, plugins::FitBasicRequests{filter.cpu_milli, filter.mem_bytes, 0}, 0),
              plugins::FitFilterNode(counted, filter, 0))
        << "trial " << trial;
    // The node's packed row (what the engine's columns keep beside them) reads the same.
    const plugins::FitNodeRow row{alloc_cpu, alloc_mem, req_cpu, req_mem, nz_cpu, nz_mem, alloc_pods, pods};
    plugins::FitNodeView packed = counted;
    packed.rows = &row;
    for (bool non_zero : {false, true}) {
      fast.use_non_zero = loop.use_non_zero = non_zero;
      ASSERT_EQ(plugins::FitScoreNode(packed, fast, 0), plugins::FitScoreNode(counted, loop, 0)) << "trial " << trial;
    }
    fast.use_non_zero = loop.use_non_zero = false;
    ASSERT_EQ(plugins::BalancedScoreNode(packed, plugins::BalancedParams{fast}, 0),
              plugins::BalancedScoreNode(counted, plugins::BalancedParams{loop}, 0))
        << "trial " << trial;
    ASSERT_EQ(plugins::FitFilterNode(packed, filter, 0), plugins::FitFilterNode(counted, filter, 0)) << "trial " << trial;
  }
}

}  // namespace
}  // namespace kplace
