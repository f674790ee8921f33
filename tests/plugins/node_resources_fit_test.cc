#include <random>
#include <tuple>

#include <gtest/gtest.h>

#include "kplace/common/int_math.h"
#include "kplace/model/requests.h"
#include "tests/testing/differential.h"

namespace kplace {
namespace {

using testing::MakeNode;
using testing::MakePod;
using testing::Q;

const std::vector<std::string> kFit = {"NodeResourcesFit"};

TEST(NodeResourcesFitTest, FilterReasonsAndCodes) {
  ObjectSet cluster;
  cluster.nodes.push_back(MakeNode("n0", {{"cpu", "2"}, {"memory", "4Gi"}, {"pods", "2"}}));
  cluster.nodes.push_back(MakeNode("n1", {{"cpu", "1"}, {"memory", "1Gi"}, {"pods", "10"}}));
  cluster.nodes.push_back(MakeNode("n2", {{"cpu", "4"}, {"memory", "8Gi"}, {"pods", "1"}, {"example.com/gpu", "1"}}));
  cluster.pods.push_back(MakePod("a", {{"cpu", "1500m"}}, "n0"));
  cluster.pods.push_back(MakePod("b", {{"cpu", "1"}}, "n2"));
  Pod pod = MakePod("p", {{"cpu", "1"}, {"memory", "2Gi"}, {"example.com/gpu", "2"}});
  for (auto backend_is_engine : {true, false}) {
    auto out = backend_is_engine ? testing::RunEngine(engine::Backend::kOmp, cluster, pod, kFit)
                                 : testing::RunReference(cluster, pod, kFit);
    ASSERT_EQ(out.filter.size(), 1u);
    // n0: 0.5 cpu free (Unschedulable); gpu absent so 2 > 0 alloc: unresolvable.
    EXPECT_EQ(out.filter[0][0].code, Code::kUnschedulableAndUnresolvable);
    EXPECT_EQ(out.filter[0][0].reasons,
              (std::vector<std::string>{"Insufficient cpu", "Insufficient example.com/gpu"}));
    // n1: memory 2Gi > 1Gi allocatable.
    EXPECT_EQ(out.filter[0][1].reasons,
              (std::vector<std::string>{"Insufficient memory", "Insufficient example.com/gpu"}));
    // n2: pods 1 already used; gpu 2 > 1.
    EXPECT_EQ(out.filter[0][2].reasons, (std::vector<std::string>{"Too many pods", "Insufficient example.com/gpu"}));
    EXPECT_EQ(out.filter[0][2].code, Code::kUnschedulableAndUnresolvable);
  }
}

// The amounts behind the reasons (upstream's InsufficientResource), in the reasons' order.
TEST(NodeResourcesFitTest, InsufficientResourcesGiveTheAmounts) {
  const Node n = MakeNode("n", {{"cpu", "2"}, {"memory", "4Gi"}, {"pods", "2"}, {"example.com/gpu", "1"}});
  const Pod a = MakePod("a", {{"cpu", "1500m"}, {"memory", "1Gi"}}, "n");
  const Pod b = MakePod("b", {{"cpu", "250m"}}, "n");
  const NodeResources r = ComputeNodeResources(n, {&a, &b}, false);
  const Resource want = Resource::From(PodRequests(MakePod("p", {{"cpu", "1"}, {"memory", "3Gi"}, {"example.com/gpu", "2"}}),
                                                   nullptr, false),
                                       false);
  const std::vector<InsufficientResource> got = InsufficientResources(want, r, nullptr);
  ASSERT_EQ(got.size(), 3u);
  // Two pods on a node of two: full; 1750m of 2 cpu used; 3Gi fits in 3Gi free; gpu 2 > 1.
  EXPECT_EQ(got[0].resource, "pods");
  EXPECT_EQ(std::tie(got[0].requested, got[0].used, got[0].capacity), std::make_tuple(1, 2, 2));
  EXPECT_EQ(got[1].resource, "cpu");
  EXPECT_EQ(std::tie(got[1].requested, got[1].used, got[1].capacity), std::make_tuple(1000, 1750, 2000));
  EXPECT_EQ(got[2].resource, "example.com/gpu");
  EXPECT_EQ(std::tie(got[2].requested, got[2].used, got[2].capacity), std::make_tuple(2, 0, 1));
  EXPECT_EQ(InsufficientReason(got[0]), "Too many pods");
  EXPECT_EQ(InsufficientReason(got[1]), "Insufficient cpu");
  // An ignored extended resource is not checked; a pod that requests nothing meets only the pod count.
  EXPECT_EQ(InsufficientResources(want, r, [](const std::string& name) { return name == "example.com/gpu"; }).size(), 2u);
  const std::vector<InsufficientResource> none = InsufficientResources(Resource{}, r, nullptr);
  ASSERT_EQ(none.size(), 1u);
  EXPECT_EQ(none[0].resource, "pods");
}

TEST(NodeResourcesFitTest, ZeroRequestFitsOvercommittedNode) {
  ObjectSet cluster;
  cluster.nodes.push_back(MakeNode("n0", {{"cpu", "1"}, {"memory", "1Gi"}, {"pods", "10"}}));
  cluster.pods.push_back(MakePod("hog", {{"cpu", "3"}}, "n0"));
  Pod pod = MakePod("p", {});
  auto e = testing::RunEngine(engine::Backend::kOmp, cluster, pod, kFit);
  EXPECT_TRUE(e.filter[0][0].IsSuccess());
  Pod one = MakePod("p", {{"cpu", "1m"}});
  auto f = testing::RunEngine(engine::Backend::kOmp, cluster, one, kFit);
  EXPECT_EQ(f.filter[0][0].code, Code::kUnschedulable);
}

TEST(NodeResourcesFitTest, LeastAndMostAllocatedScores) {
  // noderesources.md §7: cpu 3000/4000 and memory 5000/10000.
  ObjectSet cluster;
  cluster.nodes.push_back(MakeNode("n0", {{"cpu", "4"}, {"memory", "10000"}, {"pods", "32"}}));
  Pod pod = MakePod("p", {{"cpu", "3"}, {"memory", "5000"}});
  PluginArgs args;
  auto least = testing::RunEngine(engine::Backend::kOmp, cluster, pod, kFit, args);
  EXPECT_EQ(least.normalized[0][0], 37);
  args.node_resources_fit.strategy = "MostAllocated";
  auto most = testing::RunEngine(engine::Backend::kOmp, cluster, pod, kFit, args);
  EXPECT_EQ(most.normalized[0][0], 62);
  EXPECT_EQ(testing::RunReference(cluster, pod, kFit, args).normalized[0][0], 62);
}

TEST(NodeResourcesFitTest, RequestedToCapacityRatioRoundsHalfUp) {
  // §8: shape {(0,10),(100,0)}, cpu 75% -> 25, memory 50% -> 50, mean 37.5 -> 38.
  ObjectSet cluster;
  cluster.nodes.push_back(MakeNode("n0", {{"cpu", "4"}, {"memory", "10000"}, {"pods", "32"}}));
  Pod pod = MakePod("p", {{"cpu", "3"}, {"memory", "5000"}});
  PluginArgs args;
  args.node_resources_fit.strategy = "RequestedToCapacityRatio";
  args.node_resources_fit.shape = {{0, 10}, {100, 0}};
  EXPECT_EQ(testing::RunEngine(engine::Backend::kOmp, cluster, pod, kFit, args).normalized[0][0], 38);
  EXPECT_EQ(testing::RunReference(cluster, pod, kFit, args).normalized[0][0], 38);
}

TEST(NodeResourcesFitTest, InitContainersAndSidecars) {
  // §3: init {} and {1m,1} plus regular {3m,3}: scoring defaults give 100m via the init max.
  Pod pod = MakePod("p", {{"cpu", "3m"}, {"memory", "3"}});
  Container init_empty, init_small;
  init_small.requests["cpu"] = Q("1m");
  init_small.requests["memory"] = Q("1");
  pod.init_containers = {init_empty, init_small};
  Resource scored = Resource::From(PodRequests(pod, &NonZeroDefaults(), true), false);
  EXPECT_EQ(scored.milli_cpu, 100);
  EXPECT_EQ(scored.memory, 200 * 1024 * 1024);
  // A sidecar adds to the sum and to every later init container's candidate.
  Pod side = MakePod("s", {{"cpu", "1"}});
  Container sidecar;
  sidecar.restart_policy = "Always";
  sidecar.requests["cpu"] = Q("2");
  Container later;
  later.requests["cpu"] = Q("2500m");
  side.init_containers = {sidecar, later};
  EXPECT_EQ(Resource::From(PodRequests(side, nullptr, true), false).milli_cpu, 4500);
}

// Random nodes and pods, engine vs reference on every verdict and score.
TEST(NodeResourcesFitTest, EngineMatchesReferenceOnRandomPairs) {
  std::mt19937_64 rng(20261129);
  auto pick = [&](std::vector<std::string> v) { return v[rng() % v.size()]; };
  for (const char* strategy : {"LeastAllocated", "MostAllocated", "RequestedToCapacityRatio"}) {
    ObjectSet cluster;
    for (int i = 0; i < 100; ++i) {
      std::map<std::string, std::string> alloc = {{"cpu", pick({"0", "500m", "1", "2", "4", "16"})},
                                                  {"memory", pick({"0", "512Mi", "1Gi", "8Gi", "10000"})},
                                                  {"pods", pick({"0", "1", "3", "110"})}};
      if (rng() % 3 == 0) alloc["example.com/gpu"] = pick({"0", "1", "8"});
      if (rng() % 4 == 0) alloc["ephemeral-storage"] = pick({"1Gi", "10Gi"});
      if (rng() % 5 == 0) alloc.erase("pods");
      cluster.nodes.push_back(MakeNode("n" + std::to_string(i), alloc));
      for (int k = rng() % 4; k > 0; --k) {
        cluster.pods.push_back(MakePod("e" + std::to_string(i) + "-" + std::to_string(k),
                                       {{"cpu", pick({"100m", "1", "3"})}, {"memory", pick({"1Mi", "1Gi"})}},
                                       "n" + std::to_string(i)));
      }
    }
    PluginArgs args;
    args.node_resources_fit.strategy = strategy;
    args.node_resources_fit.resources = {{"cpu", 1 + static_cast<int64_t>(rng() % 3)}, {"memory", 1}, {"example.com/gpu", 2}};
    if (std::string(strategy) == "RequestedToCapacityRatio") args.node_resources_fit.shape = {{0, 0}, {30, 7}, {100, 3}};
    for (int j = 0; j < 100; ++j) {
      std::map<std::string, std::string> req;
      if (rng() % 4) req["cpu"] = pick({"0", "1m", "100m", "1", "2500m"});
      if (rng() % 4) req["memory"] = pick({"0", "1", "100Mi", "2Gi"});
      if (rng() % 3 == 0) req["example.com/gpu"] = pick({"0", "1", "2"});
      if (rng() % 5 == 0) req["ephemeral-storage"] = pick({"1", "5Gi"});
      Pod pod = MakePod("p" + std::to_string(j), req);
      auto e = testing::RunEngine(engine::Backend::kOmp, cluster, pod, kFit, args);
      auto r = testing::RunReference(cluster, pod, kFit, args);
      ASSERT_EQ(testing::Diff(e, r), "") << strategy << " pod " << j;
    }
  }
}

// NonNegativeDiv (LeastAllocated's quotients) equals integer division at every magnitude:
// quotients up to 101 with the remainder 0, y - 1 (where a double quotient rounds up first)
// or random, below, around and beyond 2^53.
TEST(NodeResourcesFitTest, NonNegativeDivEqualsIntegerDivision) {
  // Beyond the bound the double quotient rounds up to 2: (2^55 + 1) / (2^54 + 1) is 1.
  EXPECT_EQ(NonNegativeDiv((int64_t{1} << 55) + 1, (int64_t{1} << 54) + 1), 1);
  EXPECT_EQ(NonNegativeDiv(-7, 2), -3);
  std::mt19937_64 rng(53);
  for (int trial = 0; trial < 300000; ++trial) {
    const int64_t y = 1 + static_cast<int64_t>(rng() % (uint64_t{1} << (1 + rng() % 56)));
    const int64_t q = static_cast<int64_t>(rng() % 102);
    const int64_t r = trial % 3 == 0 ? 0 : trial % 3 == 1 ? y - 1 : static_cast<int64_t>(rng() % static_cast<uint64_t>(y));
    const int64_t x = q * y + r;
    ASSERT_EQ(NonNegativeDiv(x, y), x / y) << x << " / " << y;
  }
}

}  // namespace
}  // namespace kplace
