#include "kplace/serve/placement_state.h"

#include <random>

#include <gtest/gtest.h>

#include "kplace/common/strings.h"
#include "kplace/config/config.h"
#include "kplace/model/decode.h"

namespace kplace::serve {
namespace {

std::string NodeJson(const std::string& name, const std::string& cpu) {
  return StrCat(R"({"apiVersion":"v1","kind":"Node","metadata":{"name":")", name, R"(","labels":{"kubernetes.io/hostname":")", name,
                R"("}},"status":{"allocatable":{"cpu":")", cpu, R"(","memory":"8Gi","pods":"110"}}})");
}

std::string PodJson(const std::string& name, const std::string& cpu, const std::string& node = "") {
  return StrCat(R"({"apiVersion":"v1","kind":"Pod","metadata":{"name":")", name, R"(","namespace":"default"},"spec":{)",
                node.empty() ? "" : StrCat(R"("nodeName":")", node, R"(",)"),
                R"("containers":[{"name":"c","image":"pause","resources":{"requests":{"cpu":")", cpu, R"("}}}]}})");
}

std::string List(const std::vector<std::string>& items) {
  std::string out = R"({"apiVersion":"v1","kind":"List","items":[)";
  for (size_t i = 0; i < items.size(); ++i) out += (i ? "," : "") + items[i];
  return out + "]}";
}

std::vector<std::string> Names(const nlohmann::json& list, const std::string& kind) {
  std::vector<std::string> out;
  for (const auto& o : list["items"]) {
    if (o["kind"] == kind) out.push_back(o["metadata"]["name"].get<std::string>() + (o.contains("spec") && o["spec"].contains("nodeName") ? "@" + o["spec"]["nodeName"].get<std::string>() : ""));
  }
  return out;
}

TEST(PlacementStateTest, ResetScheduleApplySnapshot) {
  PlacementState s;
  EXPECT_TRUE(absl::IsFailedPrecondition(s.Apply({}, std::nullopt).status()));
  auto r = s.Reset(List({NodeJson("a", "4"), NodeJson("b", "2"), PodJson("old", "1", "a"), PodJson("waiting", "1")}), "");
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->nodes, 2);
  EXPECT_EQ(r->bound_pods, 1);
  EXPECT_EQ(r->pending_pods, 1);
  const uint64_t rev = r->revision;

  // A dry run decides as a commit does and leaves everything as it was.
  auto dry = s.Schedule(List({PodJson("p", "3")}), true, rev);
  ASSERT_TRUE(dry.ok()) << dry.status();
  EXPECT_EQ(dry->revision, rev);
  ASSERT_EQ(dry->placements.size(), 1u);
  EXPECT_EQ(dry->placements[0].node, "a");
  EXPECT_EQ(Names(s.Snapshot(), "Pod"), (std::vector<std::string>{"old@a", "waiting"}));
  auto done = s.Schedule(List({PodJson("p", "3")}), false, rev);
  ASSERT_TRUE(done.ok()) << done.status();
  EXPECT_EQ(done->placements[0].node, "a");
  EXPECT_EQ(done->revision, rev + 1);
  EXPECT_EQ(Names(s.Snapshot(), "Pod"), (std::vector<std::string>{"old@a", "p@a", "waiting"}));

  // All or none: the second event fails, the first is undone too.
  const std::string add_c = StrCat(R"({"type":"ADDED","object":)", NodeJson("c", "8"), "}");
  const std::string del_x = StrCat(R"({"type":"DELETED","object":)", NodeJson("x", "1"), "}");
  auto bad = s.Apply({add_c, del_x}, std::nullopt);
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(std::string(bad.status().message()).find("events[1]"), std::string::npos) << bad.status();
  EXPECT_EQ(s.revision(), rev + 1);
  EXPECT_EQ(Names(s.Snapshot(), "Node"), (std::vector<std::string>{"a", "b"}));
  EXPECT_TRUE(absl::IsFailedPrecondition(s.Apply({add_c}, rev).status()));
  auto ok = s.Apply({add_c, StrCat(R"({"type":"DELETED","object":)", PodJson("old", "1", "a"), "}")}, rev + 1);
  ASSERT_TRUE(ok.ok()) << ok.status();
  EXPECT_EQ(*ok, rev + 2);
  EXPECT_EQ(Names(s.Snapshot(), "Node"), (std::vector<std::string>{"a", "b", "c"}));
  EXPECT_EQ(Names(s.Snapshot(), "Pod"), (std::vector<std::string>{"p@a", "waiting"}));

  // A Snapshot is a cluster Reset reads back, to the same decisions.
  const std::string snapshot = s.Snapshot().dump();
  auto before = s.Schedule(List({PodJson("q", "2")}), true, std::nullopt);
  PlacementState again;
  ASSERT_TRUE(again.Reset(snapshot, "").ok());
  auto after = again.Schedule(List({PodJson("q", "2")}), true, std::nullopt);
  ASSERT_TRUE(before.ok() && after.ok());
  EXPECT_EQ(before->placements[0].node, after->placements[0].node);
  EXPECT_EQ(before->placements[0].score, after->placements[0].score);
}

std::string GroupMember(const std::string& name, const std::string& cpu, const std::string& group) {
  std::string pod = PodJson(name, cpu);
  return pod.replace(pod.find(R"("spec":{)"), 8, StrCat(R"("spec":{"schedulingGroup":{"podGroupName":")", group, R"("},)"));
}

std::string PodGroupJson(const std::string& name, int min_count) {
  return StrCat(R"({"apiVersion":"scheduling.k8s.io/v1beta1","kind":"PodGroup","metadata":{"name":")", name,
                R"(","namespace":"default"},"spec":{"schedulingPolicy":{"gang":{"minCount":)", min_count, "}}}}");
}

cycle::Options WithGenericWorkload() {
  cycle::Options o;
  o.gates.overrides["GenericWorkload"] = true;
  return o;
}

// Two nodes of 4 CPUs: a gang of three 3-CPU pods places at most two members. PodGroups are
// decided by the PodGroup cycle (GenericWorkload), as `kplace schedule` decides them.
TEST(PlacementStateTest, GangsAreAllOrNothing) {
  PlacementState s(WithGenericWorkload());
  ASSERT_TRUE(s.Reset(List({NodeJson("a", "4"), NodeJson("b", "4")}), "").ok());
  const uint64_t rev = s.revision();
  // minCount 3 cannot be met: nothing is bound, the reply names the member that found no node.
  auto fail = s.Schedule(List({PodGroupJson("train", 3), GroupMember("w0", "3", "train"), GroupMember("w1", "3", "train"),
                               GroupMember("w2", "3", "train"), PodJson("solo", "1")}),
                         false, std::nullopt);
  ASSERT_TRUE(fail.ok()) << fail.status();
  ASSERT_EQ(fail->gangs.size(), 1u);
  EXPECT_EQ(fail->gangs[0].name, "default/train");
  EXPECT_FALSE(fail->gangs[0].placed);
  EXPECT_EQ(fail->gangs[0].min_count, 3);
  EXPECT_EQ(fail->gangs[0].first_unplaced, "default/w0");
  EXPECT_EQ(fail->gangs[0].reason,
            "pod group is unschedulable, minCount (3) cannot be satisfied: 2 scheduled, 0 remaining, pod group preemption: "
            "No preemption victims found for incoming preemptor");
  for (const cycle::Placement& p : fail->placements) {
    if (p.pod == "default/solo") {
      EXPECT_FALSE(p.node.empty());  // not in the gang: placed after it failed
    } else {
      EXPECT_TRUE(p.node.empty()) << p.pod;
    }
  }
  EXPECT_EQ(fail->placements[2].message,
            "0/2 nodes are available: 2 Insufficient cpu. preemption: not eligible due to workload aware preemption enabled");
  EXPECT_EQ(s.revision(), rev + 1);
  EXPECT_EQ(Names(s.Snapshot(), "PodGroup"), (std::vector<std::string>{"train"}));  // it joined the cluster
  // minCount 2 is met: the two members that fit are kept, the third reports its own reason.
  auto ok = s.Schedule(List({PodGroupJson("pair", 2), GroupMember("x0", "3", "pair"), GroupMember("x1", "3", "pair"),
                             GroupMember("x2", "3", "pair")}),
                       false, std::nullopt);
  ASSERT_TRUE(ok.ok()) << ok.status();
  ASSERT_EQ(ok->gangs.size(), 1u);
  EXPECT_TRUE(ok->gangs[0].placed);
  EXPECT_EQ(ok->gangs[0].placed_count, 2);  // one per node (solo's 1 CPU leaves 3)
  EXPECT_EQ(ok->gangs[0].first_unplaced, "default/x2");
  EXPECT_FALSE(ok->placements[0].node.empty());
  EXPECT_FALSE(ok->placements[1].node.empty());
  EXPECT_TRUE(ok->placements[2].node.empty());
  EXPECT_EQ(Names(s.Snapshot(), "Pod").size(), 3u);  // solo, x0, x1
  // A member whose PodGroup exists nowhere waits at PreEnqueue, as upstream's does.
  auto held = s.Schedule(List({GroupMember("y0", "1", "missing")}), true, std::nullopt);
  ASSERT_TRUE(held.ok()) << held.status();
  EXPECT_TRUE(held->placements[0].gated);
  EXPECT_EQ(held->placements[0].message, "waiting for pods's pod group \"missing\" to appear in scheduling queue");
}

// An object's spec.priority set.
std::string WithPriority(std::string object, int priority) {
  return object.replace(object.find(R"("spec":{)"), 8, StrCat(R"("spec":{"priority":)", priority, ","));
}

// The service decides PodGroups as `kplace schedule` does (Scheduler::ScheduleAll on the same
// objects): random clusters with lower-priority pods running, and requests of gangs, basic
// groups and plain pods, some groups of a priority that preempts.
TEST(PlacementStateTest, PodGroupsDecideAsScheduleAllDoes) {
  std::mt19937_64 rng(7);
  auto pick = [&](int n) { return static_cast<int>(rng() % n); };
  int64_t group_victims = 0;
  for (int round = 0; round < 24; ++round) {
    std::vector<std::string> nodes, request;
    const int num_nodes = 3 + pick(6);
    for (int i = 0; i < num_nodes; ++i) nodes.push_back(NodeJson(StrCat("n", i), std::to_string(2 + pick(4))));
    for (int i = 0; i < num_nodes; ++i) {
      if (pick(4)) nodes.push_back(PodJson(StrCat("low", i), std::to_string(1 + pick(2)), StrCat("n", i)));
    }
    for (int g = 0; g < 1 + pick(3); ++g) {
      const int members = 1 + pick(5);
      const int priority = pick(2) * 10;
      std::string group = WithPriority(PodGroupJson(StrCat("g", g), 1 + pick(members + 1)), priority);
      if (pick(3) == 0) group.replace(group.find(R"({"gang":{"minCount":)"), std::string::npos, R"({"basic":{}}}})");
      request.push_back(group);
      for (int m = 0; m < members; ++m) {
        request.push_back(WithPriority(GroupMember(StrCat("g", g, "-", m), std::to_string(1 + pick(3)), StrCat("g", g)), priority));
      }
    }
    for (int k = 0; k < pick(4); ++k) request.push_back(PodJson(StrCat("plain", k), std::to_string(1 + pick(3))));
    std::shuffle(request.begin(), request.end(), rng);
    PlacementState service(WithGenericWorkload());
    ASSERT_TRUE(service.Reset(List(nodes), "").ok());
    auto got = service.Schedule(List(request), false, std::nullopt);
    ASSERT_TRUE(got.ok()) << got.status();
    // The same objects through the scheduler alone.
    ObjectSet cluster, pending;
    ASSERT_TRUE(DecodeDocument(nlohmann::json::parse(List(nodes)), "nodes", &cluster).ok());
    ASSERT_TRUE(DecodeDocument(nlohmann::json::parse(List(request)), "request", &pending).ok());
    cluster.pod_groups = pending.pod_groups;
    auto s = cycle::Scheduler::Create(cluster, DefaultSchedulerConfig(), WithGenericWorkload());
    ASSERT_TRUE(s.ok()) << s.status();
    std::vector<cycle::Placement> want = (*s)->ScheduleAll(pending.pods);
    ASSERT_EQ(got->placements.size(), want.size());
    auto victims = [](const cycle::Placement& p) {
      std::string out;
      if (p.preemption) {
        for (const std::string& v : p.preemption->victims) out += v + ",";
      }
      return out;
    };
    for (size_t k = 0; k < want.size(); ++k) {
      const cycle::Placement& a = got->placements[k];
      const cycle::Placement& b = want[k];
      EXPECT_EQ(StrCat(a.pod, " ", a.node, " ", a.message, " ", a.pod_group ? a.pod_group->message : "-", " ", victims(a)),
                StrCat(b.pod, " ", b.node, " ", b.message, " ", b.pod_group ? b.pod_group->message : "-", " ", victims(b)))
          << "round " << round;
      if (b.pod_group && b.preemption) group_victims += static_cast<int64_t>(b.preemption->victims.size());
    }
    // The pods the service still holds are the ones the scheduler alone kept.
    for (const Pod& p : cluster.pods) {
      const bool kept = (*s)->state().FindBoundPod(ObjectKey(p.meta)) != nullptr;
      const std::vector<std::string> held = Names(service.Snapshot(), "Pod");
      EXPECT_EQ(std::count(held.begin(), held.end(), StrCat(p.meta.name, "@", p.node_name)), kept ? 1 : 0)
          << p.meta.name << " round " << round;
    }
  }
  EXPECT_GT(group_victims, 3);  // groups did preempt
}

// Without GenericWorkload (v1.37's default) spec.schedulingGroup changes nothing, as upstream.
TEST(PlacementStateTest, PodGroupsNeedTheGate) {
  PlacementState s;
  ASSERT_TRUE(s.Reset(List({NodeJson("a", "4")}), "").ok());
  auto r = s.Schedule(List({PodGroupJson("g", 3), GroupMember("m0", "3", "g"), GroupMember("m1", "3", "g")}), true,
                      std::nullopt);
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_FALSE(r->placements[0].node.empty());
  EXPECT_TRUE(r->placements[1].node.empty());
  EXPECT_TRUE(r->gangs.empty());
}

// Writes that change nothing keep the revision, so other writers' expectations still hold.
TEST(PlacementStateTest, NoOpWritesKeepTheRevision) {
  PlacementState s;
  auto r = s.Reset(List({NodeJson("a", "4")}), "");
  ASSERT_TRUE(r.ok()) << r.status();
  const uint64_t rev = r->revision;
  auto none = s.Apply({}, rev);
  ASSERT_TRUE(none.ok()) << none.status();
  EXPECT_EQ(*none, rev);
  auto nowhere = s.Schedule(List({PodJson("huge", "64")}), false, rev);
  ASSERT_TRUE(nowhere.ok()) << nowhere.status();
  EXPECT_TRUE(nowhere->placements[0].node.empty());
  EXPECT_EQ(nowhere->revision, rev);
  EXPECT_TRUE(Names(s.Snapshot(), "Pod").empty());
  auto placed = s.Schedule(List({PodJson("small", "1")}), false, rev);
  ASSERT_TRUE(placed.ok()) << placed.status();
  EXPECT_EQ(placed->revision, rev + 1);
  auto again = s.Apply({StrCat(R"({"type":"ADDED","object":)", NodeJson("b", "2"), "}")}, rev + 1);
  ASSERT_TRUE(again.ok()) << again.status();
  EXPECT_EQ(*again, rev + 2);
}

// Each state is an instance of its own: a call naming another instance is refused before
// its revision is even compared, and changes nothing.
TEST(PlacementStateTest, ExpectedInstanceMustBeThisOne) {
  PlacementState before, after;
  EXPECT_EQ(before.instance().size(), 16u);
  EXPECT_NE(before.instance(), after.instance());
  ASSERT_TRUE(before.Reset(List({NodeJson("a", "4")}), "").ok());
  auto r = after.Reset(List({NodeJson("a", "4")}), "");
  ASSERT_TRUE(r.ok()) << r.status();
  const std::string add = StrCat(R"({"type":"ADDED","object":)", NodeJson("b", "2"), "}");
  auto stale = after.Apply({add}, Precondition(r->revision, before.instance()));
  EXPECT_TRUE(absl::IsFailedPrecondition(stale.status())) << stale.status();
  EXPECT_NE(std::string(stale.status().message()).find("Reset from your source of truth"), std::string::npos);
  EXPECT_TRUE(absl::IsFailedPrecondition(after.Schedule(List({PodJson("p", "1")}), false, Precondition(std::nullopt, before.instance())).status()));
  EXPECT_TRUE(absl::IsFailedPrecondition(after.Evaluate(List({PodJson("p", "1")}), Precondition(std::nullopt, before.instance())).status()));
  EXPECT_EQ(after.revision(), r->revision);
  EXPECT_EQ(Names(after.Snapshot(), "Node"), (std::vector<std::string>{"a"}));
  auto ok = after.Apply({add}, Precondition(r->revision, after.instance()));
  ASSERT_TRUE(ok.ok()) << ok.status();
  EXPECT_EQ(*ok, r->revision + 1);
}

// The service's own gang rule is gone: a request gang is refused, naming what replaces it.
TEST(PlacementStateTest, RequestGangsAreRefused) {
  PlacementState s(WithGenericWorkload());
  ASSERT_TRUE(s.Reset(List({NodeJson("a", "4")}), "").ok());
  const uint64_t rev = s.revision();
  auto r = s.Schedule(List({PodJson("g", "1"), PodJson("h", "1")}), false, std::nullopt,
                      {GangSpec{"pair", 2, {"default/g", "default/h"}}});
  ASSERT_TRUE(absl::IsInvalidArgument(r.status())) << r.status();
  EXPECT_NE(std::string(r.status().message()).find("spec.schedulingGroup.podGroupName"), std::string::npos) << r.status();
  EXPECT_EQ(s.revision(), rev);
  EXPECT_TRUE(Names(s.Snapshot(), "Pod").empty());
}

// Each pod of an Evaluate is decided against the same state: two pods that each fit alone
// both fit, though together they would not; nothing changes.
TEST(PlacementStateTest, EvaluateDecidesEachPodAlone) {
  PlacementState s;
  ASSERT_TRUE(s.Reset(List({NodeJson("a", "4")}), "").ok());
  const uint64_t rev = s.revision();
  auto r = s.Evaluate(List({PodJson("p", "3"), PodJson("q", "3"), PodJson("big", "5")}), rev);
  ASSERT_TRUE(r.ok()) << r.status();
  ASSERT_EQ(r->placements.size(), 3u);
  EXPECT_EQ(r->placements[0].node, "a");
  EXPECT_EQ(r->placements[1].node, "a");
  EXPECT_EQ(r->placements[2].node, "");
  EXPECT_EQ(r->placements[2].message, "0/1 nodes are available: 1 Insufficient cpu. preemption: 0/1 nodes are available: 1 Preemption is not helpful for scheduling.");
  EXPECT_EQ(s.revision(), rev);
  EXPECT_EQ(Names(s.Snapshot(), "Pod"), std::vector<std::string>{});
}

// ScaleUp on the service's state: a (4 CPU) fits one 3-CPU pod, the next two need a template
// node each; the state, revision and snapshot are as before, and bad templates are named.
TEST(PlacementStateTest, ScaleUpLeavesTheStateAsItWas) {
  PlacementState s;
  ASSERT_TRUE(s.Reset(List({NodeJson("a", "4"), PodJson("waiting", "1")}), "").ok());
  const uint64_t rev = s.revision();
  const std::string before = s.Snapshot().dump();
  const std::string pods = List({PodJson("p", "3"), PodJson("q", "3"), PodJson("r", "3")});
  auto r = s.ScaleUp(pods, NodeJson("pool", "4"), whatif::ScaleUpOptions{}, rev);
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->new_nodes, (std::map<std::string, int64_t>{{"pool", 2}}));
  ASSERT_EQ(r->pods.size(), 3u);
  EXPECT_EQ(r->pods[0].node, "a");
  EXPECT_EQ(r->pods[1].node, "pool-0");
  EXPECT_EQ(r->pods[2].node, "pool-1");
  EXPECT_EQ(s.revision(), rev);
  EXPECT_EQ(s.Snapshot().dump(), before);
  auto limited = s.ScaleUp(pods, List({NodeJson("pool", "4")}), whatif::ScaleUpOptions{0}, rev);
  ASSERT_TRUE(limited.ok()) << limited.status();
  EXPECT_EQ(limited->new_nodes.at("pool"), 0);
  EXPECT_EQ(limited->pods[2].message, "no new node: the scale-up's limit of 0 new nodes is reached");
  auto no_nodes = s.ScaleUp(pods, PodJson("x", "1"), whatif::ScaleUpOptions{}, rev);
  EXPECT_TRUE(absl::IsInvalidArgument(no_nodes.status()));
  EXPECT_NE(std::string(no_nodes.status().message()).find("node_templates"), std::string::npos) << no_nodes.status();
  auto twice = s.ScaleUp(pods, List({NodeJson("pool", "4"), NodeJson("pool", "8")}), whatif::ScaleUpOptions{}, rev);
  EXPECT_NE(std::string(twice.status().message()).find("templates[1]: Node pool is named twice"), std::string::npos)
      << twice.status();
  EXPECT_TRUE(absl::IsFailedPrecondition(s.ScaleUp(pods, NodeJson("pool", "4"), whatif::ScaleUpOptions{}, rev + 1).status()));
  EXPECT_EQ(s.Snapshot().dump(), before);
}

TEST(PlacementStateTest, BadRequestsNameTheObjectAndChangeNothing) {
  PlacementState s;
  ASSERT_TRUE(s.Reset(List({NodeJson("a", "4")}), "").ok());
  const uint64_t rev = s.revision();
  const std::string snapshot = s.Snapshot().dump();
  auto bound = s.Schedule(List({PodJson("x", "1", "a")}), false, std::nullopt);
  EXPECT_NE(std::string(bound.status().message()).find("spec.nodeName"), std::string::npos) << bound.status();
  auto not_pod = s.Schedule(List({NodeJson("n", "1")}), false, std::nullopt);
  EXPECT_NE(std::string(not_pod.status().message()).find("items[0]: kind"), std::string::npos) << not_pod.status();
  auto twice = s.Schedule(List({PodJson("x", "1"), PodJson("x", "1")}), false, std::nullopt);
  EXPECT_TRUE(absl::IsInvalidArgument(twice.status())) << twice.status();
  auto config = s.Reset(List({NodeJson("b", "4")}), "kind: KubeSchedulerConfiguration\nprofiles: [{schedulerName: x, plugins: {filter: {enabled: [{name: Nope}]}}}]");
  EXPECT_FALSE(config.ok());
  EXPECT_EQ(s.revision(), rev);
  EXPECT_EQ(s.Snapshot().dump(), snapshot);
}

// Everything a reply says of a placement, for comparing two runs.
std::string Describe(const absl::StatusOr<ScheduleResult>& r) {
  if (!r.ok()) return StrCat("error ", r.status().ToString());
  std::string out = StrCat("revision ", r->revision, "\n");
  for (const cycle::Placement& p : r->placements) {
    out += StrCat(p.pod, " node=", p.node, " code=", static_cast<int>(p.code), " feasible=", p.feasible, " score=", p.score,
                  " attempts=", p.attempts, " message=", p.message);
    if (p.preemption) {
      out += StrCat(" nominated=", p.preemption->nominated_node, " victims=");
      for (const std::string& v : p.preemption->victims) out += v + ",";
    }
    out += "\n";
  }
  for (const GangResult& g : r->gangs) {
    out += StrCat("gang ", g.name, " placed=", g.placed, " count=", g.placed_count, " first=", g.first_unplaced, " ",
                  g.reason, "\n");
  }
  for (const std::string& e : r->explanations) out += e + "\n";
  return out;
}

// A pod of one template, as a client sends replicas: only name (and uid) differ.
std::string Replica(const std::string& name, const std::string& cpu = "1", const std::string& extra_meta = "") {
  return StrCat(R"({"apiVersion":"v1","kind":"Pod","metadata":{"name":")", name, R"(","uid":"uid-)", name, R"(",)", extra_meta,
                R"("namespace":"default"},"spec":{"containers":[{"name":"c","image":"pause","resources":{"requests":{"cpu":")",
                cpu, R"("}}}]}})");
}

// Each request decoded by shape and the general way gives the same reply, the same errors
// and the same Snapshot afterwards.
TEST(PlacementStateTest, ShapeDecodeRepliesAsTheGeneralDecode) {
  PlacementState fast, general;
  general.set_shape_decode(false);
  const std::string cluster = List({NodeJson("a", "4"), NodeJson("b", "4"), NodeJson("c", "2"), PodJson("old", "1", "a")});
  ASSERT_TRUE(fast.Reset(cluster, "").ok());
  ASSERT_TRUE(general.Reset(cluster, "").ok());
  // Replicas that share a shape, and pods that differ from them in one field each (a
  // request, a label, a priority): those must not share the replicas' decode.
  std::vector<std::string> mixed;
  for (int i = 0; i < 6; ++i) mixed.push_back(Replica(StrCat("r", i)));
  mixed.push_back(Replica("big", "3"));
  mixed.push_back(Replica("labelled", "1", R"("labels":{"app":"x"},)"));
  std::string urgent = Replica("urgent");
  urgent.replace(urgent.find(R"("spec":{)"), 8, R"("spec":{"priority":100,)");
  mixed.push_back(urgent);
  mixed.push_back(Replica("r6"));
  const std::vector<std::pair<std::string, bool>> requests = {
      {List(mixed), true},
      {List(mixed), false},
      {List({Replica("s0", "2"), Replica("s1", "2"), Replica("s2", "2"), Replica("s3", "2")}), false},  // some do not fit
      {List({PodGroupJson("g", 2), GroupMember("m0", "1", "g"), GroupMember("m1", "1", "g"), Replica("t0")}), false},
      {"{\n  \"kind\": \"List\",\n  \"items\": [\n" + Replica("w0") + ",\n" + Replica("w1") + "\n  ]\n}\n", false},
      {Replica("single"), false},                                        // a Pod, not a List
      {"kind: Pod\nmetadata: {name: y0}\nspec: {containers: [{name: c}]}\n", false},  // YAML
      // Refused, the same way by both: bound, twice, not a pod, bad JSON, bad value, too deep.
      {List({Replica("e0"), PodJson("e1", "1", "a")}), false},
      {List({Replica("e2"), Replica("e3"), Replica("e2")}), false},
      {List({Replica("e4"), NodeJson("n", "1")}), false},
      {List({Replica("e5"), Replica("e6")}).substr(0, 120), false},
      {List({Replica("e7"), Replica("e8", "lots")}), false},
      {List({Replica("e9"), Replica("e10", "1", R"("labels":{"a":)" + std::string(300, '[') + std::string(300, ']') + "},")}), false},
      {List({Replica("e11"), GroupMember("e12", "1", "missing")}), false},
      // A replica whose name the API server refuses: a shared shape checks the name too.
      {List({Replica("e13"), Replica("E_14")}), false},
      // Replicas the API server stamped: they share a shape, each with its own creation time,
      // which sets their queue order; and one whose time does not parse.
      {List({Replica("t3", "1", R"("creationTimestamp":"2026-12-01T10:00:03Z",)"),
             Replica("t1", "1", R"("creationTimestamp":"2026-12-01T10:00:01Z",)"),
             Replica("t2", "1", R"("creationTimestamp":"2026-12-01T10:00:02Z",)")}), false},
      {List({Replica("t4", "1", R"("creationTimestamp":"2026-12-01T10:00:04Z",)"),
             Replica("t5", "1", R"("creationTimestamp":"soon",)")}), false},
  };
  for (const auto& [text, dry_run] : requests) {
    const std::string want = Describe(general.Schedule(text, dry_run, std::nullopt));
    EXPECT_EQ(Describe(fast.Schedule(text, dry_run, std::nullopt)), want) << text;
    EXPECT_EQ(fast.Snapshot().dump(), general.Snapshot().dump()) << text;
    EXPECT_EQ(fast.revision(), general.revision());
  }
  // The shared decodes did happen: of each `mixed` request's 10 pods the 7 replicas (r0-r6)
  // share one decode (6 shared), "big", "labelled" and "urgent" each take their own; the
  // other Lists share 3 (s1-s3), 1 (m1) and 1 (w1).
  EXPECT_EQ(fast.decode_counts().shared, 6 + 6 + 3 + 1 + 1 + 2);
  EXPECT_EQ(general.decode_counts().shared, 0);
  // Evaluate and explanations too (of pods not in the cluster: `mixed` was committed above).
  std::vector<std::string> probes;
  for (int i = 0; i < 6; ++i) probes.push_back(Replica(StrCat("v", i)));
  probes.push_back(Replica("vbig", "3"));
  const std::string evaluated = Describe(fast.Evaluate(List(probes), std::nullopt, true));
  EXPECT_EQ(evaluated, Describe(general.Evaluate(List(probes), std::nullopt, true)));
  EXPECT_EQ(evaluated.find("error"), std::string::npos) << evaluated;
  // A pod the cluster holds on a node is refused, not bound a second time (that lost the
  // first binding's pod while the engine still pointed at it).
  for (PlacementState* s : {&fast, &general}) {
    const std::string before = s->Snapshot().dump();
    auto again = s->Evaluate(List(mixed), std::nullopt);
    EXPECT_TRUE(absl::IsInvalidArgument(again.status())) << again.status();
    EXPECT_EQ(std::string(again.status().message()).rfind("pods: Pod default/r0 already exists, bound to node ", 0), 0u)
        << again.status();
    EXPECT_TRUE(absl::IsInvalidArgument(s->Schedule(List({Replica("r1")}), false, std::nullopt).status()));
    EXPECT_EQ(s->Snapshot().dump(), before);
  }

  // Real values, not only agreement: on a fresh cluster three replicas of one shape and a
  // pod that differs only in its request: the replicas fit, the 5-CPU pod fits no node.
  PlacementState fresh;
  ASSERT_TRUE(fresh.Reset(cluster, "").ok());
  auto r = fresh.Schedule(List({Replica("x0"), Replica("x1"), Replica("x2"), Replica("x3", "5")}), true, std::nullopt);
  ASSERT_TRUE(r.ok()) << r.status();
  ASSERT_EQ(r->placements.size(), 4u);
  for (int i = 0; i < 3; ++i) {
    EXPECT_EQ(r->placements[i].pod, StrCat("default/x", i));
    EXPECT_FALSE(r->placements[i].node.empty()) << i;
  }
  EXPECT_EQ(r->placements[3].node, "");
  EXPECT_EQ(r->placements[3].message,
            "0/3 nodes are available: 3 Insufficient cpu. preemption: 0/3 nodes are available: 3 Preemption is not helpful "
            "for scheduling.");
}

std::string Event(const std::string& type, const std::string& object) {
  return StrCat(R"({"type":")", type, R"(","object":)", object, "}");
}

std::string Status(const absl::StatusOr<uint64_t>& r) { return r.ok() ? StrCat("revision ", *r) : r.status().ToString(); }

TEST(PlacementStateTest, ShapeDecodeAppliesAsTheGeneralDecode) {
  PlacementState fast, general;
  general.set_shape_decode(false);
  const std::string cluster = List({NodeJson("a", "8"), NodeJson("b", "8")});
  ASSERT_TRUE(fast.Reset(cluster, "").ok());
  ASSERT_TRUE(general.Reset(cluster, "").ok());
  const auto bound = [](const std::string& name, const std::string& node, const std::string& cpu = "1") {
    std::string pod = Replica(name, cpu);
    return pod.replace(pod.find(R"("spec":{)"), 8, StrCat(R"("spec":{"nodeName":")", node, R"(",)"));
  };
  std::string pc = R"({"apiVersion":"scheduling.k8s.io/v1","kind":"PriorityClass","metadata":{"name":"high"},"value":1000})";
  std::string classed = Replica("classed");
  classed.replace(classed.find(R"("spec":{)"), 8, R"("spec":{"priorityClassName":"high",)");
  std::string classed2 = Replica("classed2");
  classed2.replace(classed2.find(R"("spec":{)"), 8, R"("spec":{"priorityClassName":"high",)");
  const std::vector<std::vector<std::string>> calls = {
      {Event("ADDED", bound("p0", "a")), Event("ADDED", bound("p1", "b")), Event("ADDED", bound("p2", "a", "2")),
       Event("ADDED", Replica("pending0")), Event("ADDED", Replica("pending1")), R"({"type":"BOOKMARK","object":{}})"},
      {Event("MODIFIED", bound("p0", "b")), Event("DELETED", bound("p1", "b")), Event("DELETED", Replica("pending0")),
       Event("ADDED", NodeJson("c", "4"))},
      // A pod whose class arrives in the same call, and one after the class is known.
      {Event("ADDED", classed), Event("ADDED", pc), Event("ADDED", classed2)},
      {Event("ADDED", pc), Event("ADDED", classed2)},
      // Refused midway: nothing of the call stays (a shape seen before the failure included).
      {Event("ADDED", bound("q0", "a")), Event("ADDED", bound("q1", "a")), Event("ADDED", bound("q0", "a"))},
      {Event("ADDED", bound("q2", "a")), Event("DELETED", bound("nope", "a"))},
      {Event("ADDED", bound("q3", "a")), Event("ADDED", bound("q4", "nowhere"))},
      {Event("ADDED", bound("q5", "a")), Event("ADDED", bound("q6", "a", "x"))},
      {Event("ADDED", bound("q7", "a")), R"({"type":"ADDED","object":)" + bound("q8", "a")},
      {Event("ADDED", bound("q9", "a")), Event("REPLACED", bound("q10", "a"))},
      {Event("ADDED", bound("q11", "a")), StrCat(R"({"type":"ADDED","object":)", bound("q12", "a"), R"(,"x":1})")},
      {Event("ADDED", bound("q13", "b")), Event("ADDED", bound("q14", "b"))},
      {Event("ADDED", bound("q15", "b")), Event("ADDED", bound("Q_16", "b"))},
      {Event("ADDED", Replica("c1", "1", R"("creationTimestamp":"2026-12-01T10:00:01Z",)")),
       Event("ADDED", Replica("c2", "1", R"("creationTimestamp":"2026-12-01T10:00:02Z",)"))},
  };
  for (const std::vector<std::string>& events : calls) {
    const std::vector<std::string_view> views(events.begin(), events.end());
    const std::string want = Status(general.Apply(views, std::nullopt));
    EXPECT_EQ(Status(fast.Apply(views, std::nullopt)), want) << events[0];
    EXPECT_EQ(fast.Snapshot().dump(), general.Snapshot().dump()) << events[0];
  }
  // Shared per call (a call's first pod of each shape decodes): p1 and pending1; p1's
  // deletion; q1 and q0's second add; "nope"; q4; q14. A truncated event, an unknown type
  // and an extra field take the general decode.
  EXPECT_EQ(fast.decode_counts().shared, 2 + 1 + 2 + 1 + 1 + 1 + 1);
  EXPECT_EQ(general.decode_counts().shared, 0);
  // Real values: the committed state has what the events said.
  const std::vector<std::string> pods = Names(fast.Snapshot(), "Pod");
  // (A pod bound to a node the cluster lacks is taken, as upstream's cache takes it; a
  // watch event's extra fields are ignored; "classed" came before its class, so its call
  // was refused whole.)
  EXPECT_EQ(pods, (std::vector<std::string>{"p2@a", "p0@b", "q3@a", "q4@nowhere", "q11@a", "q12@a", "q13@b", "q14@b",
                                            "c1", "c2", "classed2", "pending1"}));
  EXPECT_EQ(Describe(fast.Schedule(List({Replica("z", "6")}), true, std::nullopt)),
            Describe(general.Schedule(List({Replica("z", "6")}), true, std::nullopt)));
}

// A key given twice keeps its last value, as the API server reads it and as `kplace schedule`
// does (DecodeTest.DuplicateKeysKeepTheLastValue has the same pod), on both request decodes.
TEST(PlacementStateTest, DuplicateKeysKeepTheLastValue) {
  const std::string pod =
      R"({"kind": "Node", "kind": "Pod", "metadata": {"name": "first", "namespace": "default", "name": "last"},)"
      R"( "spec": {"nodeName": "x"}, "spec": {"nodeSelector": {"kubernetes.io/hostname": "a", "kubernetes.io/hostname": "b"},)"
      R"( "containers": [{"name": "c", "resources": {"requests": {"cpu": "9", "cpu": "1"}}}]}})";
  for (const bool shapes : {true, false}) {
    PlacementState s;
    s.set_shape_decode(shapes);
    ASSERT_TRUE(s.Reset(List({NodeJson("a", "4"), NodeJson("b", "4")}), "").ok());
    for (const std::string& text : {pod, List({pod, PodJson("other", "1")})}) {
      auto r = s.Schedule(text, true, std::nullopt);
      ASSERT_TRUE(r.ok()) << r.status();
      ASSERT_GE(r->placements.size(), 1u);
      EXPECT_EQ(r->placements[0].pod, "default/last") << text;
      EXPECT_EQ(r->placements[0].node, "b") << r->placements[0].message;
    }
  }
}

// Items without kind or apiVersion take their list's (a NodeList's items are v1 Nodes), as
// `kplace schedule` reads them (DecodeTest.ListItemsWithoutKindTakeTheListsKindAndVersion);
// a request's pod that names no kind is a Pod.
TEST(PlacementStateTest, ListItemsWithoutKindAreOfTheList) {
  // NodeJson and PodJson without their leading apiVersion and kind.
  const auto bare = [](const std::string& text) { return "{" + text.substr(text.find(R"("metadata")")); };
  ASSERT_EQ(bare(NodeJson("a", "4")).rfind(R"({"metadata":{"name":"a")", 0), 0u);
  for (const bool shapes : {true, false}) {
    PlacementState s;
    s.set_shape_decode(shapes);
    auto r = s.Reset(StrCat(R"({"kind":"NodeList","apiVersion":"v1","items":[)", bare(NodeJson("a", "4")), ",",
                            bare(NodeJson("b", "2")), "]}"),
                     "");
    ASSERT_TRUE(r.ok()) << r.status();
    EXPECT_EQ(r->nodes, 2);
    EXPECT_EQ(Names(s.Snapshot(), "Node"), (std::vector<std::string>{"a", "b"}));
    for (const auto& o : s.Snapshot()["items"]) EXPECT_EQ(o["apiVersion"], "v1") << o;
    const std::string pod = bare(PodJson("p", "3"));
    for (const std::string& text : {StrCat(R"({"kind":"PodList","apiVersion":"v1","items":[)", pod, "]}"), List({pod}), pod}) {
      auto placed = s.Schedule(text, false, std::nullopt);
      ASSERT_TRUE(placed.ok()) << placed.status() << " " << text;
      ASSERT_EQ(placed->placements.size(), 1u);
      EXPECT_EQ(placed->placements[0].pod, "default/p");
      EXPECT_EQ(placed->placements[0].node, "a");
      EXPECT_EQ(Names(s.Snapshot(), "Pod"), (std::vector<std::string>{"p@a"}));
      ASSERT_TRUE(s.Apply({StrCat(R"({"type":"DELETED","object":)", PodJson("p", "3", "a"), "}")}, std::nullopt).ok());
    }
    // A NodeList's items are Nodes, whatever the call: not pods to schedule.
    auto nodes = s.Evaluate(StrCat(R"({"kind":"NodeList","items":[)", bare(NodeJson("c", "1")), "]}"), std::nullopt);
    ASSERT_FALSE(nodes.ok());
    EXPECT_EQ(std::string(nodes.status().message()), "pods: items[0]: kind: expected a Pod or a PodGroup");
  }
}

}  // namespace
}  // namespace kplace::serve
