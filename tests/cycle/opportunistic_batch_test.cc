#include "kplace/cycle/opportunistic_batch.h"

#include <gtest/gtest.h>

#include <random>
#include <string>
#include <vector>

#include "kplace/common/strings.h"
#include "kplace/config/config.h"
#include "kplace/cycle/node_order.h"
#include "kplace/cycle/scheduler.h"
#include "tests/testing/differential.h"

namespace kplace::cycle {
namespace {

using testing::MakeNode;
using testing::MakePod;

std::vector<ScoredNode> Totals(const std::vector<int64_t>& totals) {
  std::vector<ScoredNode> out;
  for (size_t k = 0; k < totals.size(); ++k) out.push_back(ScoredNode{static_cast<int32_t>(k), totals[k], {}});
  return out;
}

TEST(ScoreHeapTest, EqualTotalsPopAsGosHeap) {
  // Go: Init leaves [a b c d]; Pop swaps the root with the last, sifts nothing down (ties
  // never move) and returns the old root: a, then d (now the root), then c, then b.
  ScoreHeap h;
  h.Init(Totals({5, 5, 5, 5}));
  std::vector<int32_t> order;
  while (!h.empty()) order.push_back(h.Pop().node);
  EXPECT_EQ(order, (std::vector<int32_t>{0, 3, 2, 1}));
}

TEST(ScoreHeapTest, PopsInTotalOrderAndFirstAsSelectHostHeap) {
  std::mt19937_64 rng(7);
  for (int trial = 0; trial < 2000; ++trial) {
    std::vector<int64_t> totals(1 + rng() % 40);
    for (int64_t& t : totals) t = static_cast<int64_t>(rng() % 6);
    ScoreHeap h;
    h.Init(Totals(totals));
    ASSERT_EQ(static_cast<size_t>(h.Pop().node), SelectHostHeap(totals)) << "trial " << trial;
    int64_t last = *std::max_element(totals.begin(), totals.end());
    while (!h.empty()) {
      const ScoredNode s = h.Pop();
      ASSERT_LE(s.total, last);
      last = s.total;
    }
  }
}

// The default profile's plugins, PodTopologySpread without default constraints (as
// upstream's batching tests configure it), scoring by NodeResourcesFit only.
SchedulerConfig SigningConfig(bool fit_score_only) {
  Profile p = DefaultProfile();
  p.args.pod_topology_spread.defaulting_type = "List";
  p.args.pod_topology_spread.default_constraints.clear();
  if (fit_score_only) p.score = {{"NodeResourcesFit", 1}};
  SchedulerConfig config;
  config.profiles.push_back(p);
  return config;
}

Pod HostPortPod(const std::string& name) {
  Pod p = MakePod(name, {{"cpu", "1"}, {"memory", "1Gi"}});
  p.containers[0].ports.push_back(ContainerPort{80, 80, "TCP", ""});
  return p;
}

// Schedules make(0..count-1) one after another: where each landed and whether it took a hint.
struct Sequence {
  std::vector<std::string> nodes;
  std::vector<bool> hinted;
  int32_t next_start = 0;
  int64_t hinted_pods = 0;
};
template <typename Make>
Sequence RunPods(const ObjectSet& cluster, const SchedulerConfig& config, const Options& o, int count, Make make) {
  Sequence out;
  auto s = Scheduler::Create(cluster, config, o);
  EXPECT_TRUE(s.ok()) << s.status();
  if (!s.ok()) return out;
  for (int k = 0; k < count; ++k) {
    const Placement p = (*s)->Schedule(make(StrCat("p", k)));
    out.nodes.push_back(p.node);
    out.hinted.push_back(p.hinted);
  }
  out.next_start = (*s)->next_start_index();
  out.hinted_pods = (*s)->hinted_pods();
  return out;
}

std::vector<Options> BothSides(bool batching = true) {
  Options engine, reference;
  reference.reference = true;
  for (Options* o : {&engine, &reference}) o->gates.overrides["OpportunisticBatching"] = batching;
  return {engine, reference};
}

TEST(OpportunisticBatchTest, DefaultProfileNeverSigns) {
  FeatureGates gates;
  EXPECT_FALSE(ProfileSignsPods(DefaultProfile(), gates));  // System spreading defaults refuse every pod
  EXPECT_TRUE(ProfileSignsPods(SigningConfig(false).profiles[0], gates));
  gates.overrides["DRAExtendedResource"] = true;  // the resource plugins refuse then
  EXPECT_FALSE(ProfileSignsPods(SigningConfig(false).profiles[0], gates));
}

TEST(OpportunisticBatchTest, SignaturesTakeWhatPluginsReadAndRefuseSpreadAndAffinity) {
  const Profile profile = SigningConfig(false).profiles[0];
  const FeatureGates gates;
  Pod a = HostPortPod("a"), b = HostPortPod("b");
  b.meta.namespace_ = "other";  // nothing signs the namespace
  b.priority = 1000;
  ASSERT_TRUE(BatchSignature(a, profile, gates));
  EXPECT_EQ(BatchSignature(a, profile, gates), BatchSignature(b, profile, gates));
  b.containers[0].ports[0].host_ip = "10.0.0.1";  // host ports sign by number only
  EXPECT_EQ(BatchSignature(a, profile, gates), BatchSignature(b, profile, gates));
  b.meta.labels["app"] = "x";  // InterPodAffinity signs labels
  EXPECT_NE(BatchSignature(a, profile, gates), BatchSignature(b, profile, gates));
  Pod spread = a;
  spread.topology_spread_constraints.push_back(TopologySpreadConstraint{});
  EXPECT_FALSE(BatchSignature(spread, profile, gates));
  Pod affinity = a;
  affinity.affinity.emplace().pod_anti_affinity.emplace();  // set at all, even empty
  EXPECT_FALSE(BatchSignature(affinity, profile, gates));
  // Tolerations sign as a set.
  Pod t1 = a, t2 = a;
  t1.tolerations = {Toleration{"k1", "Equal", "v", "NoSchedule", {}}, Toleration{"k2", "Exists", "", "", {}}};
  t2.tolerations = {t1.tolerations[1], t1.tolerations[0]};
  EXPECT_EQ(BatchSignature(t1, profile, gates), BatchSignature(t2, profile, gates));
  // Matches decides Sign(pod) == signature without building it.
  const PodSigner signer(profile, gates);
  EXPECT_TRUE(signer.Matches(t2, *signer.Sign(t1)));
  EXPECT_TRUE(signer.Matches(a, *signer.Sign(HostPortPod("c"))));
  EXPECT_FALSE(signer.Matches(b, *signer.Sign(a)));   // labels differ
  EXPECT_FALSE(signer.Matches(t1, *signer.Sign(a)));  // tolerations differ
  EXPECT_FALSE(signer.Matches(spread, *signer.Sign(a)));  // unsignable
}

// 200 equal nodes, one host-port pod per node: numFeasibleNodesToFind is 100, so the first
// pod ranks nodes 0..99 (all 75) and the start index moves to 100. Then each pod finds the
// last node full and takes the heap's head: Go's heap of equal totals pops n0, n99, n98, ...
// and the start index stays. Without batching each pod scans from the moved start index.
TEST(OpportunisticBatchTest, HintsComeFromTheFirstPodsWindowInHeapOrder) {
  ObjectSet cluster;
  for (int i = 0; i < 200; ++i) {
    cluster.nodes.push_back(MakeNode(StrCat("n", i), {{"cpu", "4"}, {"memory", "4Gi"}, {"pods", "110"}}));
  }
  for (bool batching : {true, false}) {
    for (const Options& o : BothSides(batching)) {
      const auto [nodes, hinted, next_start, hinted_pods] = RunPods(cluster, SigningConfig(true), o, 4, HostPortPod);
      const std::string side = StrCat("reference=", o.reference, " batching=", batching);
      if (batching) {
        EXPECT_EQ(nodes, (std::vector<std::string>{"n0", "n99", "n98", "n97"})) << side;
        EXPECT_EQ(hinted, (std::vector<bool>{false, true, true, true})) << side;
        EXPECT_EQ(next_start, 100) << side;
        EXPECT_EQ(hinted_pods, 3) << side;
      } else {
        // Each scan takes the first of its 100 ties from the start index: 0; 100 (and the scan
        // passes n0, taken, to stop at n1: start 1); 1 (passing n100: start 102); 102.
        EXPECT_EQ(nodes, (std::vector<std::string>{"n0", "n100", "n1", "n102"})) << side;
        EXPECT_EQ(hinted, (std::vector<bool>(4, false))) << side;
      }
    }
  }
}

// Node a (10 cpu) and b (2 cpu), 10Gi each, pods of 1 cpu and 1Gi: LeastAllocated gives a 90
// and b 70 for the first pod. Each next pod finds the last node still feasible, so it is
// scored again and competes with the cached entries: a 80 > b 70 (a again); then a 70 ties
// with b's cached 70, and the rebuilt heap [b, a] pops b where a fresh cycle (scan order
// a, b) would pop a; then b rescored 40 < a 70.
TEST(OpportunisticBatchTest, StillFeasibleLastNodeIsRescoredAndCompetes) {
  ObjectSet cluster;
  cluster.nodes.push_back(MakeNode("a", {{"cpu", "10"}, {"memory", "10Gi"}, {"pods", "110"}}));
  cluster.nodes.push_back(MakeNode("b", {{"cpu", "2"}, {"memory", "10Gi"}, {"pods", "110"}}));
  for (bool batching : {true, false}) {
    for (const Options& o : BothSides(batching)) {
      const Sequence run = RunPods(cluster, SigningConfig(true), o, 4, [](const std::string& name) {
        return MakePod(name, {{"cpu", "1"}, {"memory", "1Gi"}});
      });
      const std::vector<std::string>& nodes = run.nodes;
      const std::vector<bool>& hinted = run.hinted;
      const std::string side = StrCat("reference=", o.reference, " batching=", batching);
      if (batching) {
        EXPECT_EQ(nodes, (std::vector<std::string>{"a", "a", "b", "a"})) << side;
        EXPECT_EQ(hinted, (std::vector<bool>{false, true, true, true})) << side;
      } else {
        // Fresh cycles: a 90, a 80, then a 70 = b 70 and a is first in scan order, then b 70 > a 60.
        EXPECT_EQ(nodes, (std::vector<std::string>{"a", "a", "a", "b"})) << side;
      }
    }
  }
}

TEST(OpportunisticBatchTest, ChainBreaksOnFailureOtherProfileAndAge) {
  ObjectSet cluster;
  for (int i = 0; i < 8; ++i) {
    cluster.nodes.push_back(MakeNode(StrCat("n", i), {{"cpu", "4"}, {"memory", "4Gi"}, {"pods", "110"}}));
  }
  SchedulerConfig config = SigningConfig(true);
  Profile other = config.profiles[0];
  other.scheduler_name = "other";
  config.profiles.push_back(other);
  for (const Options& o : BothSides()) {
    auto s = Scheduler::Create(cluster, config, o);
    ASSERT_TRUE(s.ok()) << s.status();
    EXPECT_FALSE((*s)->Schedule(HostPortPod("p0")).hinted);
    Pod big = HostPortPod("big");
    big.containers[0].requests["cpu"] = testing::Q("100");  // fits nowhere: the cycle fails
    EXPECT_TRUE((*s)->Schedule(big).node.empty());
    EXPECT_FALSE((*s)->Schedule(HostPortPod("p1")).hinted) << "after a failed cycle";
    EXPECT_TRUE((*s)->Schedule(HostPortPod("p2")).hinted);
    Pod elsewhere = HostPortPod("q");
    elsewhere.scheduler_name = "other";
    elsewhere.containers[0].ports[0].host_port = 81;
    EXPECT_FALSE((*s)->Schedule(elsewhere).hinted);
    EXPECT_FALSE((*s)->Schedule(HostPortPod("p3")).hinted) << "another profile's cycle in between";
    (*s)->ExpireBatchState();
    EXPECT_FALSE((*s)->Schedule(HostPortPod("p4")).hinted) << "too old";
    EXPECT_TRUE((*s)->Schedule(HostPortPod("p5")).hinted) << "p4 ranked again";
  }
}

TEST(OpportunisticBatchTest, RevertRestoresTheBatchState) {
  ObjectSet cluster;
  for (int i = 0; i < 6; ++i) {
    cluster.nodes.push_back(MakeNode(StrCat("n", i), {{"cpu", "4"}, {"memory", "4Gi"}, {"pods", "110"}}));
  }
  for (const Options& o : BothSides()) {
    auto s = Scheduler::Create(cluster, SigningConfig(true), o);
    ASSERT_TRUE(s.ok());
    (*s)->Schedule(HostPortPod("p0"));
    ASSERT_TRUE((*s)->state().Begin().ok());
    const Placement tried = (*s)->Schedule(HostPortPod("p1"));
    (*s)->Schedule(HostPortPod("p2"));
    ASSERT_TRUE((*s)->state().Revert().ok());
    const Placement again = (*s)->Schedule(HostPortPod("p1"));
    EXPECT_EQ(again.node, tried.node);
    EXPECT_TRUE(again.hinted);
  }
}

// Randomized: signing and default profiles interleaved, pods from a few shapes so that
// signatures repeat; engine and reference agree on every placement, hint and message.
TEST(OpportunisticBatchTest, EngineMatchesReferenceRandomized) {
  std::mt19937_64 rng(2026);
  for (int trial = 0; trial < 12; ++trial) {
    ObjectSet cluster;
    const int nodes = 20 + static_cast<int>(rng() % 280);
    for (int i = 0; i < nodes; ++i) {
      Node n = MakeNode(StrCat("n", i), {{"cpu", std::to_string(2 + rng() % 6)}, {"memory", "8Gi"}, {"pods", "20"}},
                        {{"topology.kubernetes.io/zone", StrCat("z", rng() % 3)}, {"disk", rng() % 2 ? "ssd" : "hdd"}});
      if (rng() % 5 == 0) n.taints.push_back(Taint{"dedicated", "x", "PreferNoSchedule"});
      cluster.nodes.push_back(n);
    }
    SchedulerConfig config = SigningConfig(false);
    config.profiles.push_back(DefaultProfile());
    config.profiles.back().scheduler_name = "plain";
    std::vector<Pod> pods;
    for (int k = 0; k < 150; ++k) {
      const int shape = static_cast<int>(rng() % 5);
      Pod p = MakePod(StrCat("p", k), {{"cpu", shape == 3 ? "2" : "500m"}, {"memory", "512Mi"}});
      if (shape == 0 || shape == 4) p.containers[0].ports.push_back(ContainerPort{8080, 8080, "TCP", ""});
      if (shape == 1) {
        NodeAffinity& na = p.affinity.emplace().node_affinity.emplace();
        NodeSelectorTerm t;
        t.match_expressions.push_back(NodeSelectorRequirement{"disk", "In", {"ssd"}});
        na.preferred.push_back(PreferredSchedulingTerm{5, t});
      }
      if (shape == 2) p.tolerations.push_back(Toleration{"dedicated", "Exists", "", "PreferNoSchedule", {}});
      if (shape == 4) p.scheduler_name = "plain";
      const int run = 1 + static_cast<int>(rng() % 6);
      for (int r = 0; r < run && static_cast<int>(pods.size()) < 150; ++r) {
        Pod copy = p;
        copy.meta.name = StrCat("p", pods.size());
        pods.push_back(copy);
      }
    }
    std::vector<std::vector<Placement>> sides;
    std::vector<int32_t> starts;
    for (const Options& o : BothSides()) {
      auto s = Scheduler::Create(cluster, config, o);
      ASSERT_TRUE(s.ok()) << s.status();
      std::vector<Placement> out;
      for (const Pod& p : pods) out.push_back((*s)->Schedule(p));
      sides.push_back(std::move(out));
      starts.push_back((*s)->next_start_index());
    }
    int64_t hinted = 0;
    for (size_t k = 0; k < pods.size(); ++k) {
      const Placement &e = sides[0][k], &r = sides[1][k];
      ASSERT_EQ(e.node, r.node) << "trial " << trial << " pod " << k;
      ASSERT_EQ(e.hinted, r.hinted) << "trial " << trial << " pod " << k;
      ASSERT_EQ(e.message, r.message) << "trial " << trial << " pod " << k;
      ASSERT_EQ(e.score, r.score) << "trial " << trial << " pod " << k;
      hinted += e.hinted;
    }
    EXPECT_EQ(starts[0], starts[1]) << "trial " << trial;
    EXPECT_GT(hinted, 0) << "trial " << trial;
  }
}

}  // namespace
}  // namespace kplace::cycle
