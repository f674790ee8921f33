#include "kplace/cycle/scheduler.h"

#include <gtest/gtest.h>

#include <limits>
#include <set>

#include "kplace/common/strings.h"
#include "kplace/config/config.h"
#include "tests/testing/differential.h"

namespace kplace::cycle {
namespace {

using testing::MakeNode;
using testing::MakePod;

SchedulerConfig FitOnly(const std::string& strategy) {
  SchedulerConfig config;
  Profile p = SinglePluginsProfile({"NodeResourcesFit"});
  p.args.node_resources_fit.strategy = strategy;
  config.profiles.push_back(p);
  return config;
}

std::vector<Options> BothSides() {
  Options engine, reference;
  reference.reference = true;
  return {engine, reference};
}

TEST(SchedulerTest, LeastAllocatedSpreadsAndMostAllocatedPacks) {
  ObjectSet cluster;
  for (const char* n : {"node-a", "node-b", "node-c"}) {
    cluster.nodes.push_back(MakeNode(n, {{"cpu", "4"}, {"memory", "8Gi"}, {"pods", "110"}}));
  }
  std::vector<Pod> pods;
  for (int i = 0; i < 3; ++i) pods.push_back(MakePod("p" + std::to_string(i), {{"cpu", "1"}, {"memory", "1Gi"}}));
  for (const Options& o : BothSides()) {
    auto least = Scheduler::Create(cluster, FitOnly("LeastAllocated"), o);
    ASSERT_TRUE(least.ok()) << least.status();
    std::set<std::string> nodes;
    for (const Placement& p : (*least)->ScheduleAll(pods)) nodes.insert(p.node);
    EXPECT_EQ(nodes.size(), 3u) << "reference=" << o.reference;

    auto most = Scheduler::Create(cluster, FitOnly("MostAllocated"), o);
    ASSERT_TRUE(most.ok());
    nodes.clear();
    for (const Placement& p : (*most)->ScheduleAll(pods)) nodes.insert(p.node);
    EXPECT_EQ(nodes.size(), 1u) << "reference=" << o.reference;
  }
}

TEST(SchedulerTest, TooBigPodGetsAggregatedMessage) {
  ObjectSet cluster;
  for (int i = 0; i < 5; ++i) {
    cluster.nodes.push_back(MakeNode("n" + std::to_string(i), {{"cpu", i < 3 ? "2" : "8"}, {"memory", "1Gi"}, {"pods", "110"}}));
  }
  for (const Options& o : BothSides()) {
    auto s = Scheduler::Create(cluster, FitOnly("LeastAllocated"), o);
    ASSERT_TRUE(s.ok());
    Placement p = (*s)->Schedule(MakePod("big", {{"cpu", "4"}, {"memory", "2Gi"}}));
    EXPECT_EQ(p.node, "");
    EXPECT_EQ(p.message, "0/5 nodes are available: 3 Insufficient cpu, 5 Insufficient memory.");
  }
}

// What the queue's hints read: every plugin that rejected the pod somewhere, on every
// path (per pod, batched, reference), as upstream's diagnosis records them.
TEST(SchedulerTest, FailedCycleNamesItsRejectingPlugins) {
  ObjectSet cluster;
  for (int i = 0; i < 6; ++i) {
    Node n = MakeNode("n" + std::to_string(i), {{"cpu", i < 2 ? "1" : "8"}, {"memory", "8Gi"}, {"pods", "110"}});
    n.meta.labels["disk"] = i < 4 ? "ssd" : "hdd";
    if (i >= 2 && i < 4) n.taints.push_back(Taint{"gpu", "", "NoSchedule"});
    cluster.nodes.push_back(n);
  }
  Pod ssd = MakePod("ssd", {{"cpu", "2"}});
  ssd.node_selector["disk"] = "ssd";
  SchedulerConfig without_post_filter = DefaultSchedulerConfig();  // failed pods stay in the batched run
  without_post_filter.profiles[0].post_filter.clear();
  for (const SchedulerConfig& config : {DefaultSchedulerConfig(), without_post_filter}) {
    for (Options o : BothSides()) {
      for (int32_t batch : {1, 8}) {
        o.batch = batch;
        auto s = Scheduler::Create(cluster, config, o);
        ASSERT_TRUE(s.ok());
        std::vector<Placement> out = (*s)->ScheduleAll({ssd, ssd});
        for (const Placement& p : out) {
          EXPECT_EQ(p.node, "");
          EXPECT_EQ(p.unschedulable_plugins,
                    (std::vector<std::string>{"NodeAffinity", "NodeResourcesFit", "TaintToleration"}))
              << p.message << " reference=" << o.reference << " batch=" << batch;
        }
        Placement fits = (*s)->Schedule(MakePod("small", {{"cpu", "1"}}));
        EXPECT_FALSE(fits.node.empty());
        EXPECT_TRUE(fits.unschedulable_plugins.empty());
      }
    }
  }
}

TEST(SchedulerTest, StartIndexRotatesToTheDroppedFeasibleNode) {
  // 200 nodes, K = 100: the 101st feasible node is where the next pod's scan starts.
  ObjectSet cluster;
  for (int i = 0; i < 200; ++i) {
    cluster.nodes.push_back(MakeNode("n" + std::to_string(i), {{"cpu", i < 10 ? "0" : "4"}, {"memory", "8Gi"}, {"pods", "110"}}));
  }
  for (const Options& o : BothSides()) {
    auto s = Scheduler::Create(cluster, FitOnly("LeastAllocated"), o);
    ASSERT_TRUE(s.ok());
    Placement p = (*s)->Schedule(MakePod("p", {{"cpu", "1"}}));
    EXPECT_EQ(p.feasible, 100);
    EXPECT_EQ((*s)->next_start_index(), 110);
  }
}

// Upstream's scheduler never sees pods of other schedulers: left alone, not unschedulable.
TEST(SchedulerTest, UnknownSchedulerNameIsLeftAlone) {
  ObjectSet cluster;
  cluster.nodes.push_back(MakeNode("n0", {{"cpu", "4"}, {"memory", "8Gi"}, {"pods", "110"}}));
  auto s = Scheduler::Create(cluster, FitOnly("LeastAllocated"), Options{});
  ASSERT_TRUE(s.ok());
  Pod pod = MakePod("p", {});
  pod.scheduler_name = "batch";
  Placement p = (*s)->Schedule(pod);
  EXPECT_EQ(p.node, "");
  EXPECT_TRUE(p.other_scheduler);
  EXPECT_FALSE(p.gated);
  EXPECT_EQ(p.code, Code::kSkip);
  EXPECT_EQ(p.message, "left alone: no profile has schedulerName \"batch\"");
  EXPECT_EQ((*s)->next_start_index(), 0);
}

TEST(SchedulerTest, GatedPodsNeverPlacedAndClaimsAreDynamicResourcesBusiness) {
  ObjectSet cluster;
  cluster.nodes.push_back(MakeNode("n0", {{"cpu", "4"}, {"memory", "8Gi"}, {"pods", "110"}}));
  for (bool reference : {false, true}) {
    Options o;
    o.reference = reference;
    // Without DynamicResources in the profile nothing reads a pod's claims.
    auto s = Scheduler::Create(cluster, FitOnly("LeastAllocated"), o);
    ASSERT_TRUE(s.ok());
    std::vector<Pod> pods(3);
    for (int i = 0; i < 3; ++i) pods[i] = MakePod("p" + std::to_string(i), {{"cpu", "1"}});
    pods[0].scheduling_gates = {"example.com/quota", "example.com/gang"};
    pods[1].resource_claims = {{"gpu", "gpu-claim", ""}};
    std::vector<Placement> out = (*s)->ScheduleAll(pods);
    ASSERT_EQ(out.size(), 3u);
    EXPECT_TRUE(out[0].gated);
    EXPECT_EQ(out[0].gating_plugin, "SchedulingGates");
    EXPECT_EQ(out[0].node, "");
    EXPECT_EQ(out[0].code, Code::kUnschedulableAndUnresolvable);
    EXPECT_EQ(out[0].message, "waiting for scheduling gates: [example.com/quota example.com/gang]");
    EXPECT_EQ(out[1].node, "n0");
    EXPECT_EQ(out[2].node, "n0");
    EXPECT_EQ((*s)->next_start_index(), 0);
    // Without its gates the pod schedules.
    pods[0].scheduling_gates.clear();
    EXPECT_EQ((*s)->Schedule(pods[0]).node, "n0");

    // The default profile's DynamicResources holds the pod back at PreEnqueue: its claim
    // does not exist. No cycle runs, so the start index stays.
    auto d = Scheduler::Create(cluster, DefaultSchedulerConfig(), o);
    ASSERT_TRUE(d.ok());
    Placement p = (*d)->Schedule(pods[1]);
    EXPECT_TRUE(p.gated);
    EXPECT_EQ(p.gating_plugin, "DynamicResources");
    EXPECT_EQ(p.node, "");
    EXPECT_EQ(p.code, Code::kUnschedulableAndUnresolvable);
    EXPECT_EQ(p.message, "could not find ResourceClaim \"default/gpu-claim\"");
  }
}

TEST(SchedulerTest, QueueOrderIsPriorityThenCreationThenInput) {
  std::vector<Pod> pods(4);
  pods[0].priority = 1;
  pods[0].meta.creation_unix = 5;
  pods[1].priority = 10;
  pods[2].priority = 1;
  pods[2].meta.creation_unix = 2;
  pods[3].priority = 1;
  pods[3].meta.creation_unix = 2;
  EXPECT_EQ(QueueOrder(pods), (std::vector<size_t>{1, 2, 3, 0}));
}

// Scheduling a pod the scheduler already holds on a node is an error, on both sides; binding it
// again replaced the stored pod while the engine's snapshot still pointed at it.
TEST(SchedulerTest, APodAlreadyBoundIsNotBoundAgain) {
  ObjectSet cluster;
  cluster.nodes.push_back(MakeNode("a", {{"cpu", "4"}, {"pods", "110"}}));
  cluster.nodes.push_back(MakeNode("b", {{"cpu", "4"}, {"pods", "110"}}));
  for (Options o : BothSides()) {
    auto s = Scheduler::Create(cluster, FitOnly("MostAllocated"), o);
    ASSERT_TRUE(s.ok()) << s.status();
    const Pod p = MakePod("p", {{"cpu", "1"}});
    const Placement first = (*s)->Schedule(p);
    ASSERT_EQ(first.code, Code::kSuccess);
    const Placement again = (*s)->Schedule(p);
    EXPECT_EQ(again.code, Code::kError);
    EXPECT_EQ(again.node, "");
    EXPECT_EQ(again.message, "Pod default/p is already bound to node " + first.node);
    // The first binding stands and still counts: the next pod packs beside it.
    ASSERT_NE((*s)->state().FindBoundPod("default/p"), nullptr);
    EXPECT_EQ((*s)->state().FindBoundPod("default/p")->node_name, first.node);
    EXPECT_EQ((*s)->state().Objects().pods.size(), 1u);
    EXPECT_EQ((*s)->Schedule(MakePod("q", {{"cpu", "1"}})).node, first.node) << o.reference;
  }
}

// Image sizes at int64's edge (the kubelet reports any int64): a size that converts past int64
// after the spread scaling, sums that wrap, and a pod with enough images that the score's
// product wraps, all as Go computes them, on the engine and the reference alike.
TEST(SchedulerTest, HugeImageSizesScoreAsGoComputesThem) {
  constexpr int64_t kMax = std::numeric_limits<int64_t>::max();
  ObjectSet cluster;
  for (const char* name : {"a", "b", "c"}) cluster.nodes.push_back(MakeNode(name, {{"cpu", "4"}, {"pods", "110"}}));
  // img0 on every node (spread 1): on a its size converts to 2^63, out of int64's range.
  cluster.nodes[0].images.push_back({{"img0:v1"}, kMax});
  cluster.nodes[1].images.push_back({{"img0:v1"}, int64_t{1} << 62});
  cluster.nodes[2].images.push_back({{"img0:v1"}, 0});
  for (int k = 1; k < 100; ++k) cluster.nodes[0].images.push_back({{"img" + std::to_string(k) + ":v1"}, kMax / 2});
  SchedulerConfig config;
  config.profiles.push_back(SinglePluginsProfile({"ImageLocality"}));
  Pod one = MakePod("one", {{"cpu", "1"}});
  one.containers[0].image = "img0:v1";
  Pod many = MakePod("many", {{"cpu", "1"}});
  many.containers[0].image = "img0:v1";
  for (int k = 1; k < 100; ++k) {
    many.containers.push_back(many.containers[0]);
    many.containers.back().name = "c" + std::to_string(k);
    many.containers.back().image = "img" + std::to_string(k) + ":v1";
  }
  std::vector<Placement> runs[2];
  for (int side = 0; side < 2; ++side) {
    Options o;
    o.reference = side == 1;
    auto s = Scheduler::Create(cluster, config, o);
    ASSERT_TRUE(s.ok()) << s.status();
    runs[side] = {(*s)->Schedule(one), (*s)->Schedule(many)};
  }
  for (int side = 0; side < 2; ++side) {
    // a's sum is int64's minimum (clamped to the floor, 0 points); b's 2^62 is clamped to the
    // ceiling: 100 points.
    EXPECT_EQ(runs[side][0].node, "b") << side;
    EXPECT_EQ(runs[side][0].score, 100) << side;
  }
  for (size_t k = 0; k < 2; ++k) {
    EXPECT_EQ(runs[0][k].node, runs[1][k].node) << k;
    EXPECT_EQ(runs[0][k].score, runs[1][k].score) << k;
  }
}

}  // namespace
}  // namespace kplace::cycle

namespace kplace::cycle {
namespace {

TEST(SchedulerTest, ScalarColumnsStayExactWhenBindsBringNewScalars) {
  // NodeResourcesFit keeps scalar resources sparse per node. An ignored extended resource
  // passes Filter on nodes without it, so binding such pods adds scalars those nodes had no
  // entry for; the GPU scoring that follows must see every node's exact amounts.
  ObjectSet cluster;
  for (int i = 0; i < 6; ++i) {
    std::map<std::string, std::string> alloc = {{"cpu", "8"}, {"memory", "16Gi"}, {"pods", "110"}};
    if (i % 2 == 0) alloc["example.com/gpu"] = std::to_string(2 + i);
    cluster.nodes.push_back(MakeNode("n" + std::to_string(i), alloc));
  }
  SchedulerConfig config = FitOnly("MostAllocated");
  config.profiles[0].args.node_resources_fit.ignored_resources = {"example.com/ignored"};
  config.profiles[0].args.node_resources_fit.resources = {{"cpu", 1}, {"example.com/gpu", 3}, {"example.com/ignored", 1}};
  std::vector<Pod> pods;
  for (int i = 0; i < 8; ++i) pods.push_back(MakePod("ign" + std::to_string(i), {{"cpu", "500m"}, {"example.com/ignored", "3"}}));
  for (int i = 0; i < 8; ++i) pods.push_back(MakePod("gpu" + std::to_string(i), {{"cpu", "1"}, {"example.com/gpu", "1"}}));
  std::vector<std::vector<std::string>> nodes;
  std::vector<std::vector<int64_t>> scores;
  for (Options o : BothSides()) {
    for (int32_t batch : {1, 1024}) {
      if (o.reference && batch > 1) continue;
      o.batch = batch;
      auto s = Scheduler::Create(cluster, config, o);
      ASSERT_TRUE(s.ok()) << s.status();
      nodes.emplace_back();
      scores.emplace_back();
      for (const Pod& p : pods) {
        Placement pl = (*s)->Schedule(p);
        nodes.back().push_back(pl.node.empty() ? pl.message : pl.node);
        scores.back().push_back(pl.score);
      }
    }
  }
  ASSERT_EQ(nodes.size(), 3u);
  for (size_t k = 1; k < nodes.size(); ++k) {
    EXPECT_EQ(nodes[k], nodes[0]) << "side " << k;
    EXPECT_EQ(scores[k], scores[0]) << "side " << k;
  }
  // The ignored pods landed on nodes with and without the resource; every GPU pod on a GPU node.
  std::set<std::string> ignored_on(nodes[0].begin(), nodes[0].begin() + 8);
  for (int i = 8; i < 16; ++i) {
    const std::string& n = nodes[0][i];
    ASSERT_EQ(n.rfind('n', 0), 0u) << n;
    EXPECT_EQ((n.back() - '0') % 2, 0) << n;
  }
  EXPECT_FALSE(ignored_on.empty());
}

// Quantities at int64's edge: request sums saturate (two 5e18-milli containers used to wrap
// negative and fit anywhere), and a node with a huge allocatable scores the same on the engine
// and the reference (Go's wrapping products, no undefined behaviour).
TEST(SchedulerTest, HugeQuantitiesNeitherWrapNorDiverge) {
  ObjectSet cluster;
  cluster.nodes.push_back(MakeNode("small", {{"cpu", "4"}, {"memory", "8Gi"}, {"pods", "110"}}));
  cluster.nodes.push_back(MakeNode("huge", {{"cpu", "99999999999999999999Ei"}, {"memory", "1e400"}, {"pods", "110"}}));
  std::vector<Placement> runs[2];
  for (int side = 0; side < 2; ++side) {
    Options o;
    o.reference = side == 1;
    auto s = Scheduler::Create(cluster, FitOnly("LeastAllocated"), o);
    ASSERT_TRUE(s.ok()) << s.status();
    Pod twice = MakePod("twice", {{"cpu", "5000000000000000"}});
    twice.containers.push_back(twice.containers[0]);
    Pod plain = MakePod("plain", {{"cpu", "1"}});
    runs[side] = (*s)->ScheduleAll({twice, plain});
  }
  for (int side = 0; side < 2; ++side) {
    ASSERT_EQ(runs[side].size(), 2u);
    // The saturated sum fits only where allocatable is at int64's limit too.
    EXPECT_EQ(runs[side][0].node, "huge") << side;
  }
  for (size_t k = 0; k < 2; ++k) {
    EXPECT_EQ(runs[0][k].node, runs[1][k].node) << k;
    EXPECT_EQ(runs[0][k].score, runs[1][k].score) << k;
    EXPECT_EQ(runs[0][k].message, runs[1][k].message) << k;
  }
}

// ---- DynamicResources in the default profile ----

ResourceClaim AllocatedOn(const std::string& name, const std::string& node) {
  ResourceClaim c;
  c.meta.name = name;
  c.meta.namespace_ = "default";
  c.requests.push_back(DeviceRequest{"gpu", true, "gpu.example.com", {}});
  c.allocated = true;
  NodeSelectorTerm t;
  t.match_fields.push_back({"metadata.name", "In", {node}});
  c.allocation_node_selector = NodeSelector{{t}};
  return c;
}

Pod ClaimPod(const std::string& name, const std::string& cpu, const std::string& claim) {
  Pod p = MakePod(name, {{"cpu", cpu}});
  p.meta.uid = "uid-" + name;
  p.resource_claims = {{"gpu", claim, ""}};
  return p;
}

// PreBind writes the pod into the claim's status.reservedFor, and later cycles (and a
// revert) see that: once the list is full the next pod's binding would fail, refused.
TEST(SchedulerTest, DynamicResourcesReservesClaimsForLaterCycles) {
  ObjectSet cluster;
  for (const char* n : {"n1", "n2"}) cluster.nodes.push_back(MakeNode(n, {{"cpu", "4"}, {"pods", "110"}}));
  cluster.resource_claims.push_back(AllocatedOn("shared", "n2"));
  for (size_t i = 0; i + 1 < kResourceClaimReservedForMaxSize; ++i) {
    cluster.resource_claims[0].reserved_for.push_back({"", "pods", StrCat("q", i), StrCat("uid-q", i)});
  }
  for (const Options& o : BothSides()) {
    auto s = Scheduler::Create(cluster, DefaultSchedulerConfig(), o);
    ASSERT_TRUE(s.ok()) << s.status();
    ASSERT_TRUE((*s)->state().Begin().ok());
    EXPECT_EQ((*s)->Schedule(ClaimPod("p1", "1", "shared")).node, "n2");
    ObjectSet now = (*s)->state().Objects();
    ASSERT_EQ(now.resource_claims.size(), 1u);
    ASSERT_EQ(now.resource_claims[0].reserved_for.size(), kResourceClaimReservedForMaxSize);
    EXPECT_EQ(now.resource_claims[0].reserved_for.back().uid, "uid-p1");
    Placement p2 = (*s)->Schedule(ClaimPod("p2", "1", "shared"));
    EXPECT_EQ(p2.node, "");
    EXPECT_EQ(p2.code, Code::kError);
    EXPECT_EQ(p2.message.rfind("kplace: reserving ResourceClaim default/shared for pod default/p2 is not supported", 0), 0u)
        << p2.message;
    ASSERT_TRUE((*s)->state().Revert().ok());
    EXPECT_EQ((*s)->state().Objects().resource_claims[0].reserved_for.size(), kResourceClaimReservedForMaxSize - 1);
    EXPECT_EQ((*s)->state().FindBoundPod("default/p1"), nullptr);
  }
}

}  // namespace
}  // namespace kplace::cycle
