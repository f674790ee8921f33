// The live cluster on its own, as a what-if user holds it: events, lookups, the node tree
// and transactions, with a listener that records what the cluster tells it.
#include "kplace/state/cluster_state.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "kplace/common/strings.h"
#include "tests/testing/differential.h"

namespace kplace::state {
namespace {

using testing::MakeNode;
using testing::MakePod;

// Records each call, one line per call.
class Recorder final : public ClusterState::Listener {
 public:
  absl::Status Rebuilt() override {
    calls.push_back("Rebuilt");
    return absl::OkStatus();
  }
  void PodAdded(const Pod& pod, NodeIndex i, bool assumed) override {
    calls.push_back(StrCat(assumed ? "Assumed " : "Added ", pod.meta.name, "@", i));
  }
  void PodRemoved(const Pod& pod, NodeIndex i) override { calls.push_back(StrCat("Removed ", pod.meta.name, "@", i)); }
  void NodeAdded(NodeIndex i) override { calls.push_back(StrCat("NodeAdded ", i)); }
  void NodeChanged(NodeIndex i, const Node& old) override {
    calls.push_back(StrCat("NodeChanged ", i, " was ", old.meta.name));
  }
  void ObjectsChanged(bool namespaces) override { calls.push_back(namespaces ? "Namespaces" : "Objects"); }
  void Begun() override { calls.push_back("Begun"); }
  void Committed() override { calls.push_back("Committed"); }
  void Reverting() override { calls.push_back("Reverting"); }
  std::vector<std::string> calls;
};

Node ZonedNode(const std::string& name, const std::string& zone) {
  return MakeNode(name, {{"cpu", "4"}, {"memory", "8Gi"}, {"pods", "10"}}, {{"topology.kubernetes.io/zone", zone}});
}

std::vector<std::string> PodNames(const ObjectSet& o) {
  std::vector<std::string> out;
  for (const Pod& p : o.pods) out.push_back(p.meta.name + "@" + p.node_name);
  return out;
}

ObjectSet SmallCluster() {
  ObjectSet c;
  c.nodes = {ZonedNode("a1", "a"), ZonedNode("b1", "b"), ZonedNode("a2", "a")};
  c.pods = {MakePod("p0", {{"cpu", "1"}}, "a2"), MakePod("pending", {{"cpu", "1"}}, "")};
  return c;
}

class ClusterStateTest : public ::testing::TestWithParam<bool> {};  // on the reference?

TEST_P(ClusterStateTest, EventsLookupsAndTheNodeTree) {
  const ObjectSet cluster = SmallCluster();
  ClusterState state(cluster, FeatureGates{}, GetParam());
  Recorder r;
  ASSERT_TRUE(state.Attach(&r).ok());
  EXPECT_EQ(r.calls, (std::vector<std::string>{"Rebuilt"}));
  EXPECT_EQ(state.NodeOrder(), (std::vector<std::string>{"a1", "b1", "a2"}));
  ASSERT_NE(state.FindBoundPod("default/p0"), nullptr);
  EXPECT_EQ(state.FindBoundPod("default/pending"), nullptr);  // pending pods are the queue's
  EXPECT_EQ(state.Row("a2"), 2);
  EXPECT_EQ(state.Row("nope"), engine::kNoId);

  // A bound pod arrives; the scheduler places another (AssumePod).
  ASSERT_TRUE(state.Apply(PodEvent(EventType::kAdded, MakePod("p1", {{"cpu", "1"}}, "b1"))).ok());
  state.AssumePod(MakePod("p2", {{"cpu", "1"}}, ""), state.Row("a1"));
  EXPECT_EQ(PodNames(state.Objects()), (std::vector<std::string>{"p0@a2", "p1@b1", "p2@a1"}));
  if (!GetParam()) {  // the engine's columns changed: the listener heard of both
    EXPECT_EQ(r.calls, (std::vector<std::string>{"Rebuilt", "Added p1@1", "Assumed p2@0"}));
  }
  EXPECT_TRUE(absl::IsAlreadyExists(state.Apply(PodEvent(EventType::kAdded, MakePod("p1", {}, "b1")))));
  EXPECT_TRUE(absl::IsNotFound(state.Apply(PodEvent(EventType::kDeleted, MakePod("gone", {}, "b1")))));

  // A pending pod's event records its nomination only.
  Pod nominated = MakePod("pending", {{"cpu", "1"}}, "");
  nominated.nominated_node_name = "b1";
  ASSERT_TRUE(state.Apply(PodEvent(EventType::kModified, nominated)).ok());
  ASSERT_NE(state.Nomination("default/pending"), nullptr);
  EXPECT_EQ(state.Nomination("default/pending")->nominated_node_name, "b1");
  EXPECT_EQ(state.FindBoundPod("default/pending"), nullptr);
}

TEST_P(ClusterStateTest, RevertUndoesEveryStepAndTellsTheListenerFirst) {
  const ObjectSet cluster = SmallCluster();
  ClusterState state(cluster, FeatureGates{}, GetParam());
  Recorder r;
  ASSERT_TRUE(state.Attach(&r).ok());
  ASSERT_TRUE(state.Apply(NodeEvent(EventType::kModified, ZonedNode("b1", "b"))).ok());  // live objects from here
  const ObjectSet before = state.Objects();
  const std::vector<std::string> order = state.NodeOrder();
  EXPECT_TRUE(absl::IsFailedPrecondition(state.Commit()));
  EXPECT_TRUE(absl::IsFailedPrecondition(state.Revert()));

  ASSERT_TRUE(state.Begin().ok());
  ASSERT_TRUE(state.Apply(NodeEvent(EventType::kAdded, ZonedNode("c1", "c"))).ok());
  ASSERT_TRUE(state.Apply(PodEvent(EventType::kAdded, MakePod("p1", {{"cpu", "1"}}, "c1"))).ok());
  ASSERT_TRUE(state.Apply(PodEvent(EventType::kDeleted, MakePod("p0", {{"cpu", "1"}}, "a2"))).ok());
  state.AssumePod(MakePod("p2", {{"cpu", "1"}}, ""), state.Row("b1"));
  EXPECT_EQ(state.NodeOrder(), (std::vector<std::string>{"a1", "b1", "c1", "a2"}));
  EXPECT_EQ(PodNames(state.Objects()), (std::vector<std::string>{"p1@c1", "p2@b1"}));
  r.calls.clear();
  ASSERT_TRUE(state.Revert().ok());
  ASSERT_FALSE(r.calls.empty());
  EXPECT_EQ(r.calls.front(), "Reverting");
  EXPECT_EQ(state.NodeOrder(), order);
  EXPECT_EQ(PodNames(state.Objects()), PodNames(before));
  EXPECT_EQ(state.FindNode("c1"), nullptr);

  // Nested one level; Commit keeps the inner step for the outer Revert.
  ASSERT_TRUE(state.Begin().ok());
  ASSERT_TRUE(state.Begin().ok());
  EXPECT_TRUE(absl::IsFailedPrecondition(state.Begin()));
  ASSERT_TRUE(state.Apply(PodEvent(EventType::kAdded, MakePod("p3", {{"cpu", "1"}}, "a1"))).ok());
  ASSERT_TRUE(state.Commit().ok());
  ASSERT_NE(state.FindBoundPod("default/p3"), nullptr);
  ASSERT_TRUE(state.Revert().ok());
  EXPECT_EQ(state.FindBoundPod("default/p3"), nullptr);
  EXPECT_EQ(PodNames(state.Objects()), PodNames(before));
}

// Victims of a preemption stay, terminating, until their deletion completes.
TEST_P(ClusterStateTest, TerminatingPodsLeaveWhenTheirDeletionCompletes) {
  const ObjectSet cluster = SmallCluster();
  ClusterState state(cluster, FeatureGates{}, GetParam());
  Recorder r;
  ASSERT_TRUE(state.Attach(&r).ok());
  const Pod* victim = state.FindBoundPod("default/p0");
  ASSERT_NE(victim, nullptr);
  state.MarkTerminating({victim}, "default-scheduler");
  const Pod* marked = state.FindBoundPod("default/p0");
  ASSERT_NE(marked, nullptr);
  EXPECT_FALSE(marked->meta.deletion_timestamp.empty());
  ASSERT_FALSE(marked->conditions.empty());
  EXPECT_EQ(marked->conditions[0].type, "DisruptionTarget");
  EXPECT_EQ(state.CompleteDeletions(), (std::vector<std::string>{"default/p0"}));
  EXPECT_EQ(state.FindBoundPod("default/p0"), nullptr);
  EXPECT_TRUE(state.CompleteDeletions().empty());
}

INSTANTIATE_TEST_SUITE_P(Sides, ClusterStateTest, ::testing::Values(false, true),
                         [](const ::testing::TestParamInfo<bool>& i) { return i.param ? "Reference" : "Engine"; });

}  // namespace
}  // namespace kplace::state
