#include "kplace/serve/placement_state.h"

#include <gtest/gtest.h>

#include "kplace/common/strings.h"

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
  return StrCat(R"({"apiVersion":"scheduling.k8s.io/v1alpha2","kind":"PodGroup","metadata":{"name":")", name,
                R"(","namespace":"default"},"spec":{"schedulingPolicy":{"gang":{"minCount":)", min_count, "}}}}");
}

// Two nodes of 4 CPUs: a gang of three 3-CPU pods places at most two members.
TEST(PlacementStateTest, GangsAreAllOrNothing) {
  PlacementState s;
  ASSERT_TRUE(s.Reset(List({NodeJson("a", "4"), NodeJson("b", "4")}), "").ok());
  const uint64_t rev = s.revision();
  // The PodGroup form: minCount 3 cannot be met; nothing is kept, the reply names the member.
  auto fail = s.Schedule(List({PodGroupJson("train", 3), GroupMember("w0", "3", "train"), GroupMember("w1", "3", "train"),
                               GroupMember("w2", "3", "train"), PodJson("solo", "1")}),
                         false, std::nullopt);
  ASSERT_TRUE(fail.ok()) << fail.status();
  ASSERT_EQ(fail->gangs.size(), 1u);
  EXPECT_EQ(fail->gangs[0].name, "default/train");
  EXPECT_FALSE(fail->gangs[0].placed);
  EXPECT_EQ(fail->gangs[0].first_unplaced, "default/w2");
  EXPECT_NE(fail->gangs[0].reason.find("Insufficient cpu"), std::string::npos) << fail->gangs[0].reason;
  for (const cycle::Placement& p : fail->placements) {
    if (p.pod == "default/solo") {
      EXPECT_FALSE(p.node.empty());  // not in the gang: placed after it failed
    } else {
      EXPECT_TRUE(p.node.empty()) << p.pod;
      EXPECT_NE(p.message.find("gang default/train: 2 of 3 members placed, minCount 3"), std::string::npos) << p.message;
    }
  }
  EXPECT_EQ(s.revision(), rev + 1);
  // The request-field form: minCount 2 is met, the two placed members are kept.
  auto ok = s.Schedule(List({PodJson("x0", "3"), PodJson("x1", "3"), PodJson("x2", "3")}), false, std::nullopt,
                       {GangSpec{"pair", 2, {"default/x0", "default/x1", "default/x2"}}});
  ASSERT_TRUE(ok.ok()) << ok.status();
  ASSERT_EQ(ok->gangs.size(), 1u);
  EXPECT_TRUE(ok->gangs[0].placed);
  EXPECT_EQ(ok->gangs[0].placed_count, 2);  // one per node (solo's 1 CPU leaves 3)
  EXPECT_EQ(ok->gangs[0].first_unplaced, "default/x2");
  EXPECT_FALSE(ok->placements[0].node.empty());
  EXPECT_FALSE(ok->placements[1].node.empty());
  EXPECT_TRUE(ok->placements[2].node.empty());
  EXPECT_EQ(Names(s.Snapshot(), "Pod").size(), 3u);  // solo, x0, x1
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

}  // namespace
}  // namespace kplace::serve
