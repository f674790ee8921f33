// The PodGroup cycle (GenericWorkload): all or nothing, GangScheduling's PreEnqueue and
// PlacementFeasible, the members' and the group's messages, and engine vs reference on
// random clusters where groups, plain pods and preemption mix.
#include <memory>
#include <random>
#include <set>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "kplace/common/strings.h"
#include "kplace/config/config.h"
#include "kplace/cycle/scheduler.h"
#include "kplace/model/decode.h"
#include "tests/testing/model_json.h"
#include "tests/testing/pod_topology_spread_builders.h"

namespace kplace::cycle {
namespace {

using json = nlohmann::json;

Node MakeNode(const std::string& name, const std::string& cpu, const std::string& zone = "z0") {
  json j = {{"metadata", {{"name", name}, {"labels", {{"kubernetes.io/hostname", name}, {"topology.kubernetes.io/zone", zone}}}}},
            {"status", {{"allocatable", {{"cpu", cpu}, {"memory", "10Gi"}, {"pods", "110"}}}}}};
  return *DecodeNode(j, "test");
}

Pod MakePod(const std::string& name, const std::string& cpu, const std::string& group = "", int32_t priority = 0,
            const std::string& node = "") {
  json j = {{"metadata", {{"name", name}, {"namespace", "default"}, {"uid", name}, {"labels", {{"app", name}}}}},
            {"spec", {{"priority", priority},
                      {"containers", json::array({{{"name", "c"}, {"resources", {{"requests", {{"cpu", cpu}}}}}}})}}}};
  if (!group.empty()) j["spec"]["schedulingGroup"] = {{"podGroupName", group}};
  if (!node.empty()) j["spec"]["nodeName"] = node;
  return *DecodePod(j, "test");
}

PodGroup Gang(const std::string& name, std::optional<int32_t> min_count, int32_t priority = 0) {
  json policy = min_count ? json{{"gang", {{"minCount", *min_count}}}} : json{{"basic", json::object()}};
  json j = {{"apiVersion", "scheduling.k8s.io/v1beta1"},
            {"kind", "PodGroup"},
            {"metadata", {{"name", name}, {"namespace", "default"}}},
            {"spec", {{"schedulingPolicy", policy}, {"priority", priority}}}};
  return *DecodePodGroup(j, "test");
}

// One node of `cpu` CPUs and the gang "g" of minCount `min_count`.
ObjectSet OneNodeWithGang(const std::string& cpu, int32_t min_count) {
  ObjectSet c;
  c.nodes = {MakeNode("n1", cpu)};
  c.pod_groups = {Gang("g", min_count)};
  return c;
}

// What workload-aware preemption adds to a failed group's message when no pod ranks lower.
constexpr char kNoVictims[] = ", pod group preemption: No preemption victims found for incoming preemptor";
// A member that fits nowhere: DefaultPreemption's PostFilter leaves it to its group's.
constexpr char kMemberFitError[] =
    "0/1 nodes are available: 1 Insufficient cpu. preemption: not eligible due to workload aware preemption enabled";

std::unique_ptr<Scheduler> Make(const ObjectSet& c, bool reference = false, bool on = true, int32_t batch = 1) {
  Options o;
  o.reference = reference;
  o.batch = batch;
  o.gates.overrides["GenericWorkload"] = on;
  auto s = Scheduler::Create(c, DefaultSchedulerConfig(), o);
  EXPECT_TRUE(s.ok()) << s.status();
  return std::move(*s);
}

std::string Describe(const Placement& p) {
  std::string out = StrCat(p.pod, " -> ", p.node, " [", CodeName(p.code), "] ", p.message, p.gated ? " gated:" : "",
                           p.gating_plugin);
  if (p.pod_group) {
    out += StrCat(" group ", p.pod_group->pod_group, " ", p.pod_group->reason, ": ", p.pod_group->message);
  }
  if (p.preemption) out += StrCat(" nominated=", p.preemption->nominated_node, " victims=", p.preemption->victims.size());
  return out;
}

TEST(PodGroupTest, GangThatFitsIsBoundTogether) {
  ObjectSet c;
  c.nodes = {MakeNode("n1", "2"), MakeNode("n2", "2")};
  c.pod_groups = {Gang("g", 3)};
  for (bool reference : {false, true}) {
    auto s = Make(c, reference);
    std::vector<Placement> out = s->ScheduleAll({MakePod("a", "1", "g"), MakePod("b", "1", "g"), MakePod("c", "1", "g")});
    ASSERT_EQ(out.size(), 3u);
    for (const Placement& p : out) {
      EXPECT_FALSE(p.node.empty()) << Describe(p);
      ASSERT_TRUE(p.pod_group);
      EXPECT_TRUE(p.pod_group->scheduled);
      EXPECT_EQ(p.pod_group->reason, "Scheduled");
      EXPECT_EQ(p.pod_group->message, "");
    }
    EXPECT_NE(s->state().FindBoundPod("default/c"), nullptr);
  }
}

// Two of three fit: nothing is bound and the state is as before, byte for byte.
TEST(PodGroupTest, GangShortOfMinCountBindsNothing) {
  ObjectSet c = OneNodeWithGang("2", 3);
  for (bool reference : {false, true}) {
    auto s = Make(c, reference);
    const json before = testing::ToJson(s->state().Objects());
    std::vector<Placement> out = s->ScheduleAll({MakePod("a", "1", "g"), MakePod("b", "1", "g"), MakePod("c", "1", "g")});
    ASSERT_EQ(out.size(), 3u);
    const std::string group = StrCat("minCount (3) cannot be satisfied: 2 scheduled, 0 remaining", kNoVictims);
    EXPECT_EQ(out[0].message, "pod group is unschedulable, " + group) << Describe(out[0]);
    EXPECT_EQ(out[1].message, "pod group is unschedulable, " + group) << Describe(out[1]);
    EXPECT_EQ(out[2].message, kMemberFitError) << Describe(out[2]);
    for (const Placement& p : out) {
      EXPECT_TRUE(p.node.empty()) << Describe(p);
      EXPECT_EQ(p.code, Code::kUnschedulable);
      ASSERT_TRUE(p.pod_group);
      EXPECT_FALSE(p.pod_group->scheduled);
      EXPECT_EQ(p.pod_group->reason, "Unschedulable");
      EXPECT_EQ(p.pod_group->message, group);
    }
    EXPECT_EQ(testing::ToJson(s->state().Objects()), before);
  }
}

// The first member cannot fit and minCount then cannot be met: the rest are never tried and
// take the group's own status.
TEST(PodGroupTest, EarlyStopLeavesTheRestUntried) {
  ObjectSet c = OneNodeWithGang("2", 3);
  auto s = Make(c);
  std::vector<Placement> out = s->ScheduleAll({MakePod("a", "3", "g"), MakePod("b", "1", "g"), MakePod("c", "1", "g")});
  EXPECT_EQ(out[0].message, kMemberFitError);
  EXPECT_EQ(out[1].message, "minCount (3) cannot be satisfied: 0 scheduled, 2 remaining");
  EXPECT_EQ(out[2].message, "minCount (3) cannot be satisfied: 0 scheduled, 2 remaining");
  EXPECT_EQ(out[1].code, Code::kUnschedulable);
}

TEST(PodGroupTest, BoundMembersCountTowardMinCount) {
  ObjectSet c = OneNodeWithGang("2", 3);
  c.pods = {MakePod("a", "1", "g", 0, "n1")};
  auto s = Make(c);
  std::vector<Placement> out = s->ScheduleAll({MakePod("b", "1", "g"), MakePod("c", "2", "g")});
  // b fits (2 scheduled, 1 remaining: Wait); c does not (2 scheduled, 0 remaining: minCount unmet).
  EXPECT_EQ(out[0].message,
            StrCat("pod group is unschedulable, minCount (3) cannot be satisfied: 2 scheduled, 0 remaining", kNoVictims));
  EXPECT_TRUE(out[0].node.empty());
  // With room for c, the bound member completes the quorum.
  c.nodes = {MakeNode("n1", "4")};
  auto t = Make(c);
  out = t->ScheduleAll({MakePod("b", "1", "g"), MakePod("c", "2", "g")});
  EXPECT_EQ(out[0].node, "n1");
  EXPECT_EQ(out[1].node, "n1");
}

TEST(PodGroupTest, BasicGroupBindsWhatFits) {
  ObjectSet c;
  c.nodes = {MakeNode("n1", "2")};
  c.pod_groups = {Gang("g", std::nullopt)};
  auto s = Make(c);
  std::vector<Placement> out = s->ScheduleAll({MakePod("a", "1", "g"), MakePod("b", "1", "g"), MakePod("c", "1", "g")});
  EXPECT_EQ(out[0].node, "n1");
  EXPECT_EQ(out[1].node, "n1");
  EXPECT_EQ(out[2].message, kMemberFitError);
  EXPECT_TRUE(out[2].pod_group->scheduled);
  // None fits: the group fails with minCount 1's status.
  auto t = Make(c);
  out = t->ScheduleAll({MakePod("x", "3", "g")});
  EXPECT_EQ(out[0].message, kMemberFitError);
  EXPECT_EQ(out[0].pod_group->message, StrCat("minCount (1) cannot be satisfied: 0 scheduled, 0 remaining", kNoVictims));
}

TEST(PodGroupTest, PreEnqueueHoldsMissingGroupsAndShortGangs) {
  ObjectSet c = OneNodeWithGang("4", 3);
  auto s = Make(c);
  std::vector<Placement> out = s->ScheduleAll({MakePod("a", "1", "g"), MakePod("b", "1", "g"), MakePod("m", "1", "nope")});
  for (size_t k = 0; k < 2; ++k) {
    EXPECT_TRUE(out[k].gated) << Describe(out[k]);
    EXPECT_EQ(out[k].gating_plugin, "GangScheduling");
    EXPECT_EQ(out[k].message, "waiting for minCount pods from a gang to appear in scheduling queue");
    EXPECT_FALSE(out[k].pod_group);
  }
  EXPECT_TRUE(out[2].gated);
  EXPECT_EQ(out[2].message, "waiting for pods's pod group \"nope\" to appear in scheduling queue");
}

TEST(PodGroupTest, MembersMustShareTheGroupsPriority) {
  ObjectSet c;
  c.nodes = {MakeNode("n1", "4")};
  c.pod_groups = {Gang("g", 2, 5)};
  auto s = Make(c);
  std::vector<Placement> out = s->ScheduleAll({MakePod("a", "1", "g", 5), MakePod("b", "1", "g", 7)});
  // b (priority 7) comes first in the queue and is checked first.
  for (const Placement& p : out) {
    EXPECT_EQ(p.code, Code::kError) << Describe(p);
    EXPECT_EQ(p.message, "all pods in a single pod group should have the same priority as the pod group's priority, got 7 and 5");
    ASSERT_TRUE(p.pod_group);
    EXPECT_EQ(p.pod_group->reason, "SchedulerError");
  }
}

// What kplace does not model is refused, never ignored: PodGroup fields that change
// decisions, and the alpha gates of the PodGroup cycle.
TEST(PodGroupTest, UnmodelledFieldsAndGatesAreRefused) {
  for (const char* field : {"schedulingConstraints", "disruptionMode", "preemptionPolicy"}) {
    json j = {{"apiVersion", "scheduling.k8s.io/v1beta1"},
              {"kind", "PodGroup"},
              {"metadata", {{"name", "g"}, {"namespace", "default"}}},
              {"spec", {{"schedulingPolicy", {{"basic", json::object()}}}}}};
    j["spec"][field] = json::object();
    auto g = DecodePodGroup(j, "in.json");
    ASSERT_FALSE(g.ok()) << field;
    EXPECT_NE(std::string(g.status().message()).find(StrCat("in.json: PodGroup default/g: spec.", field, ": ")),
              std::string::npos)
        << g.status();
    EXPECT_NE(std::string(g.status().message()).find("is not modelled by kplace"), std::string::npos) << g.status();
  }
  const ObjectSet c = OneNodeWithGang("2", 1);
  for (const char* gate : {"TopologyAwareWorkloadScheduling", "CompositePodGroup", "PodGroupPreemptionPolicy"}) {
    Options o;
    o.gates.overrides["GenericWorkload"] = true;
    o.gates.overrides[gate] = true;
    auto s = Scheduler::Create(c, DefaultSchedulerConfig(), o);
    ASSERT_FALSE(s.ok()) << gate;
    EXPECT_EQ(s.status().code(), absl::StatusCode::kInvalidArgument);
    EXPECT_NE(std::string(s.status().message()).find(StrCat("feature gate ", gate, "=true is not modelled")), std::string::npos);
  }
}

TEST(PodGroupTest, GateOffSchedulesMembersAlone) {
  ObjectSet c = OneNodeWithGang("2", 3);
  auto s = Make(c, false, /*on=*/false);
  std::vector<Placement> out = s->ScheduleAll({MakePod("a", "1", "g"), MakePod("b", "1", "g"), MakePod("c", "1", "g")});
  EXPECT_EQ(out[0].node, "n1");
  EXPECT_EQ(out[1].node, "n1");
  EXPECT_TRUE(out[2].node.empty());
  EXPECT_FALSE(out[2].pod_group);
}

// One node of 4.5 CPUs holding l1 (priority 0), l2 (priority 5) and l3 (priority 0), 1 CPU
// each, and a gang of two 1.5-CPU members of priority 10: one fits, not both.
ObjectSet CrowdedNodeWithGang() {
  ObjectSet c;
  c.nodes = {MakeNode("n1", "4500m")};
  c.pods = {MakePod("l1", "1", "", 0, "n1"), MakePod("l2", "1", "", 5, "n1"), MakePod("l3", "1", "", 0, "n1")};
  c.pod_groups = {Gang("g", 2, 10)};
  return c;
}

std::vector<Pod> GangOfTwo() { return {MakePod("a", "1500m", "g", 10), MakePod("b", "1500m", "g", 10)}; }

// Workload-aware preemption: every lower-priority pod out, the group placed once, then the
// pods put back most important first while the members still fit: l2 goes back, l1 and l3
// are the victims. The group is nominated, waits for their deletion and is then bound.
TEST(PodGroupTest, GangPreemptsTheLeastImportantPods) {
  const ObjectSet c = CrowdedNodeWithGang();  // the scheduler reads it: it must outlive it
  for (bool reference : {false, true}) {
    auto s = Make(c, reference);
    std::vector<Placement> first;
    std::vector<Placement> out = s->ScheduleAll(GangOfTwo(), [&](const Placement& p) {
      if (first.size() < 2) first.push_back(p);  // the first cycle's members
      return true;
    });
    ASSERT_EQ(first.size(), 2u);
    const std::string group =
        "minCount (2) cannot be satisfied: 1 scheduled, 0 remaining, pod group preemption: found a placement for "
        "podgroup, preempting 2 victims";
    EXPECT_EQ(first[0].message, group) << Describe(first[0]);  // it fit: the group's status itself
    EXPECT_EQ(first[1].message, kMemberFitError) << Describe(first[1]);
    ASSERT_TRUE(first[0].pod_group);
    EXPECT_EQ(first[0].pod_group->message, group);
    EXPECT_EQ(first[0].pod_group->reason, "Unschedulable");
    EXPECT_EQ(first[0].pod_group->victims, (std::vector<std::string>{"default/l1", "default/l3"}));
    ASSERT_TRUE(first[0].preemption);
    EXPECT_EQ(first[0].preemption->nominated_node, "n1");
    EXPECT_EQ(first[0].preemption->victims, first[0].pod_group->victims);
    ASSERT_TRUE(first[1].preemption);
    EXPECT_EQ(first[1].preemption->nominated_node, "n1");
    EXPECT_TRUE(first[1].preemption->victims.empty());  // counted once, on the first member

    for (const Placement& p : out) {
      EXPECT_EQ(p.node, "n1") << Describe(p);
      EXPECT_EQ(p.attempts, 2);
      ASSERT_TRUE(p.pod_group);
      EXPECT_TRUE(p.pod_group->scheduled);
    }
    EXPECT_EQ(s->state().FindBoundPod("default/l1"), nullptr);
    EXPECT_EQ(s->state().FindBoundPod("default/l3"), nullptr);
    EXPECT_NE(s->state().FindBoundPod("default/l2"), nullptr);
  }
}

// Inside a transaction of the caller's (a dry run, a fork), the group's cycle and its
// preemption decide the same, and the caller's revert leaves the cluster as it was.
TEST(PodGroupTest, GangPreemptionInsideACallersTransaction) {
  const ObjectSet c = CrowdedNodeWithGang();
  for (bool reference : {false, true}) {
    auto plain = Make(c, reference);
    std::string want;
    for (const Placement& p : plain->ScheduleAll(GangOfTwo())) want += Describe(p) + "\n";
    auto s = Make(c, reference);
    const json before = testing::ToJson(s->state().Objects());
    ASSERT_TRUE(s->state().Begin().ok());
    std::string got;
    for (const Placement& p : s->ScheduleAll(GangOfTwo())) got += Describe(p) + "\n";
    EXPECT_EQ(got, want);
    EXPECT_NE(got.find("default/a -> n1"), std::string::npos) << got;
    ASSERT_TRUE(s->state().Revert().ok());
    EXPECT_EQ(testing::ToJson(s->state().Objects()), before);
  }
}

// A pod whose eviction would break a PodDisruptionBudget is put back before the others: l1
// stays, and l2 goes although it ranks higher.
TEST(PodGroupTest, GangPreemptionSparesPdbProtectedPodsFirst) {
  ObjectSet c = CrowdedNodeWithGang();
  json pdb = {{"metadata", {{"name", "keep-l1"}, {"namespace", "default"}}},
              {"spec", {{"selector", {{"matchLabels", {{"app", "l1"}}}}}}},
              {"status", {{"disruptionsAllowed", 0}}}};
  c.pdbs = {*DecodePodDisruptionBudget(pdb, "test")};
  for (bool reference : {false, true}) {
    auto s = Make(c, reference);
    std::vector<Placement> out = s->ScheduleAll(GangOfTwo());
    EXPECT_EQ(out[0].node, "n1") << Describe(out[0]);
    EXPECT_NE(s->state().FindBoundPod("default/l1"), nullptr);
    EXPECT_EQ(s->state().FindBoundPod("default/l2"), nullptr);
    EXPECT_EQ(s->state().FindBoundPod("default/l3"), nullptr);
  }
}

TEST(PodGroupTest, GangWithPreemptionPolicyNeverEvictsNothing) {
  std::vector<Pod> gang = GangOfTwo();
  for (Pod& p : gang) p.preemption_policy = "Never";
  const ObjectSet c = CrowdedNodeWithGang();
  auto s = Make(c);
  std::vector<Placement> out = s->ScheduleAll(gang);
  ASSERT_TRUE(out[0].pod_group) << Describe(out[0]);
  EXPECT_EQ(out[0].pod_group->message,
            "minCount (2) cannot be satisfied: 1 scheduled, 0 remaining, pod group preemption: not eligible due to "
            "preemptionPolicy=Never.");
  EXPECT_EQ(out[0].message, StrCat("pod group is unschedulable, ", out[0].pod_group->message));
  EXPECT_TRUE(out[0].pod_group->victims.empty());
  for (const char* key : {"default/l1", "default/l2", "default/l3"}) EXPECT_NE(s->state().FindBoundPod(key), nullptr);
}

// Without any lower-priority pod the group still does not fit: the second run's status is
// the preemption's answer, and nothing moves.
TEST(PodGroupTest, GangThatDoesNotFitEvenAloneEvictsNothing) {
  ObjectSet c = OneNodeWithGang("2", 3);
  c.pod_groups[0] = Gang("g", 3, 10);
  c.pods = {MakePod("l1", "1", "", 0, "n1")};
  for (bool reference : {false, true}) {
    auto s = Make(c, reference);
    std::vector<Placement> out =
        s->ScheduleAll({MakePod("a", "1", "g", 10), MakePod("b", "1", "g", 10), MakePod("c", "1", "g", 10)});
    EXPECT_EQ(out[0].pod_group->message,
              "minCount (3) cannot be satisfied: 1 scheduled, 1 remaining, pod group preemption: minCount (3) cannot be "
              "satisfied: 2 scheduled, 0 remaining");
    EXPECT_EQ(out[2].message, "minCount (3) cannot be satisfied: 1 scheduled, 1 remaining") << Describe(out[2]);
    EXPECT_NE(s->state().FindBoundPod("default/l1"), nullptr);
    EXPECT_EQ(out[0].attempts, 1);
  }
}

// A member taken through the single-pod cycle (Scheduler::Schedule) leaves preemption to its
// group's: DefaultPreemption's PostFilter refuses it.
TEST(PodGroupTest, MemberAloneDoesNotPreemptPodByPod) {
  const ObjectSet c = CrowdedNodeWithGang();
  for (bool reference : {false, true}) {
    auto s = Make(c, reference);
    Placement p = s->Schedule(MakePod("big", "3", "g", 10));
    EXPECT_EQ(p.message,
              "0/1 nodes are available: 1 Insufficient cpu. preemption: not eligible due to workload aware preemption "
              "enabled")
        << Describe(p);
    for (const char* key : {"default/l1", "default/l2", "default/l3"}) EXPECT_NE(s->state().FindBoundPod(key), nullptr);
  }
}

// Workload-aware preemption asks again only the members a put-back pod can reach from its
// node when nobody looks past their own node; asking every member (upstream's way) decides
// the same. Random clusters full of lower-priority pods, some with anti-affinity or volumes,
// groups some of whose members spread or avoid each other.
TEST(PodGroupTest, GroupPreemptionShortcutMatchesAskingEveryMember) {
  int64_t victims = 0;
  for (uint64_t seed = 1; seed <= 16; ++seed) {
    std::mt19937_64 rng(seed);
    auto pick = [&](int n) { return static_cast<int>(rng() % n); };
    ObjectSet c;
    const int32_t size = 6 + pick(20);
    for (int32_t i = 0; i < size; ++i) c.nodes.push_back(MakeNode(StrCat("n", i), std::to_string(2 + pick(3)), StrCat("z", i % 3)));
    for (int32_t i = 0; i < size; ++i) {
      for (int k = 0; k < 1 + pick(3); ++k) {
        Pod p = MakePod(StrCat("low", i, "-", k), "1", "", pick(3), StrCat("n", i));
        if (pick(5) == 0) {  // a running pod that keeps group members off its node
          PodAffinityTerm t;
          t.topology_key = "kubernetes.io/hostname";
          t.label_selector = testing::MatchLabels({{"app", "g"}});
          p.affinity.emplace().pod_anti_affinity.emplace().required.push_back(t);
        }
        c.pods.push_back(std::move(p));
      }
    }
    std::vector<Pod> pending;
    const int32_t ngroups = 1 + pick(3);
    for (int32_t g = 0; g < ngroups; ++g) {
      const int32_t members = 1 + pick(size / 2);
      c.pod_groups.push_back(Gang(StrCat("g", g), 1 + pick(members), 10));
      const bool spread = pick(3) == 0;
      for (int32_t m = 0; m < members; ++m) {
        Pod p = MakePod(StrCat("g", g, "-", m), std::to_string(1 + pick(2)), StrCat("g", g), 10);
        p.meta.labels["app"] = "g";
        if (spread) {
          p.topology_spread_constraints.push_back(
              testing::HardSpread(2, "topology.kubernetes.io/zone", testing::MatchLabels({{"app", "g"}})));
        }
        pending.push_back(std::move(p));
      }
    }
    std::vector<std::string> runs;
    for (bool all : {false, true}) {
      for (bool reference : {false, true}) {
        Options o;
        o.reference = reference;
        o.batch = 1;
        o.gates.overrides["GenericWorkload"] = true;
        o.group_preemption_asks_all = all;
        auto s = Scheduler::Create(c, DefaultSchedulerConfig(), o);
        ASSERT_TRUE(s.ok()) << s.status();
        std::string out;
        for (const Placement& p : (*s)->ScheduleAll(pending)) {
          out += Describe(p) + "\n";
          if (!all && !reference && p.preemption) victims += static_cast<int64_t>(p.preemption->victims.size());
        }
        runs.push_back(std::move(out));
      }
    }
    for (size_t k = 1; k < runs.size(); ++k) EXPECT_EQ(runs[k], runs[0]) << "seed " << seed << " run " << k;
  }
  EXPECT_GT(victims, 20) << "too few preemptions to compare";
}

// Engine (per pod and batched) and reference agree on random clusters where gangs, basic
// groups, plain pods and preempting pods share the queue; every failed group leaves no pod of
// it bound.
TEST(PodGroupTest, EngineMatchesReferenceRandomized) {
  int64_t groups_scheduled = 0, groups_failed = 0, preemptions = 0, group_preemptions = 0;
  for (int32_t size : {8, 30, 120}) {
    for (uint64_t seed = 1; seed <= 6; ++seed) {
      std::mt19937_64 rng(seed * 1000003 + size);
      auto pick = [&](int n) { return static_cast<int>(rng() % n); };
      ObjectSet c;
      for (int32_t i = 0; i < size; ++i) c.nodes.push_back(MakeNode(StrCat("n", i), std::to_string(2 + pick(4)), StrCat("z", i % 3)));
      for (int32_t i = 0; i < size; ++i) {
        if (pick(2)) c.pods.push_back(MakePod(StrCat("bound", i), std::to_string(1 + pick(2)), "", pick(3), StrCat("n", i)));
      }
      std::vector<Pod> pending;
      const int32_t ngroups = 2 + size / 10;
      for (int32_t g = 0; g < ngroups; ++g) {
        const int32_t members = 2 + pick(size / 2 + 2);
        const int32_t priority = pick(3) * 10;
        std::optional<int32_t> min_count;
        if (pick(4) != 0) min_count = 1 + pick(members + 1);  // sometimes more than there are: held
        c.pod_groups.push_back(Gang(StrCat("g", g), min_count, priority));
        for (int32_t m = 0; m < members; ++m) {
          Pod p = MakePod(StrCat("g", g, "-", m), std::to_string(1 + pick(3)), StrCat("g", g), priority);
          p.meta.labels["app"] = StrCat("g", g);
          if (pick(3) == 0) {  // spread members over zones: later members see earlier ones
            p.topology_spread_constraints.push_back(
                testing::HardSpread(1, "topology.kubernetes.io/zone", testing::MatchLabels({{"app", p.meta.labels["app"]}})));
          }
          pending.push_back(std::move(p));
        }
      }
      for (int32_t k = 0; k < size; ++k) pending.push_back(MakePod(StrCat("plain", k), std::to_string(1 + pick(3)), "", pick(4) * 10));
      std::shuffle(pending.begin(), pending.end(), rng);
      std::vector<std::vector<Placement>> runs;
      for (int side = 0; side < 3; ++side) {
        auto s = Make(c, side == 0, true, side == 2 ? kDefaultBatch : 1);
        runs.push_back(s->ScheduleAll(pending));
        // No pod of a failed group is bound.
        for (const Placement& p : runs.back()) {
          if (p.pod_group && !p.pod_group->scheduled) EXPECT_EQ(s->state().FindBoundPod(p.pod), nullptr) << Describe(p);
        }
      }
      const std::string what = StrCat(size, " nodes, seed ", seed);
      for (int side = 1; side < 3; ++side) {
        ASSERT_EQ(runs[side].size(), runs[0].size());
        for (size_t k = 0; k < runs[0].size(); ++k) {
          ASSERT_EQ(Describe(runs[side][k]), Describe(runs[0][k])) << what << (side == 1 ? " per pod" : " batched");
        }
      }
      std::set<std::string> seen;
      for (const Placement& p : runs[0]) {
        if (p.preemption && !p.preemption->victims.empty()) ++(p.pod_group ? group_preemptions : preemptions);
        if (p.pod_group && seen.insert(p.pod_group->pod_group).second) (p.pod_group->scheduled ? groups_scheduled : groups_failed)++;
      }
    }
  }
  EXPECT_GT(groups_scheduled, 10);
  EXPECT_GT(groups_failed, 10);
  EXPECT_GT(preemptions, 5);
  EXPECT_GT(group_preemptions, 5);
}

}  // namespace
}  // namespace kplace::cycle
