#include "kplace/engine/snapshot.h"

#include <gtest/gtest.h>

#include "tests/testing/differential.h"

namespace kplace::engine {
namespace {

using testing::MakeNode;
using testing::MakePod;

TEST(SnapshotTest, InternerIdsAreDenseAndStable) {
  Interner in;
  EXPECT_EQ(in.Intern("zone-a"), 0);
  EXPECT_EQ(in.Intern("zone-b"), 1);
  EXPECT_EQ(in.Intern("zone-a"), 0);
  EXPECT_EQ(in.Find("zone-b"), 1);
  EXPECT_EQ(in.Find("zone-c"), kNoId);
  EXPECT_EQ(in.Name(1), "zone-b");
  EXPECT_EQ(in.size(), 2);
}

TEST(SnapshotTest, LabelColumnsHoldValueIdsPerNode) {
  ObjectSet objects;
  objects.nodes.push_back(MakeNode("n0", {{"cpu", "1"}}, {{"zone", "a"}, {"disk", "ssd"}}));
  objects.nodes.push_back(MakeNode("n1", {{"cpu", "1"}}, {{"zone", "b"}}));
  objects.nodes.push_back(MakeNode("n2", {{"cpu", "1"}}, {{"zone", "a"}}));
  objects.pods.push_back(MakePod("bound", {}, "n2"));
  objects.pods.push_back(MakePod("elsewhere", {}, "missing-node"));
  Pod done = MakePod("done", {}, "n0");
  done.phase = "Succeeded";
  objects.pods.push_back(done);
  Snapshot s(objects, {});
  ASSERT_EQ(s.num_nodes(), 3);
  const std::vector<int32_t>* zone = s.LabelColumn("zone");
  ASSERT_NE(zone, nullptr);
  EXPECT_EQ((*zone)[0], (*zone)[2]);
  EXPECT_NE((*zone)[0], (*zone)[1]);
  EXPECT_EQ(s.strings().Name((*zone)[1]), "b");
  const std::vector<int32_t>* disk = s.LabelColumn("disk");
  ASSERT_NE(disk, nullptr);
  EXPECT_EQ((*disk)[1], kNoId);
  EXPECT_EQ(s.LabelColumn("gpu"), nullptr);
  EXPECT_EQ(s.FindNode("n1"), 1);
  EXPECT_EQ(s.FindNode("nope"), kNoId);
  // Terminal pods and pods on unknown nodes are not bound anywhere.
  EXPECT_TRUE(s.pods_on(0).empty());
  EXPECT_EQ(s.pods_on(2).size(), 1u);
}

TEST(SnapshotTest, BindKeepsACopyOnTheNode) {
  ObjectSet objects;
  objects.nodes.push_back(MakeNode("n0", {{"cpu", "1"}}));
  Snapshot s(objects, {});
  Pod p = MakePod("p", {{"cpu", "100m"}});
  const Pod& bound = s.Bind(p, 0);
  EXPECT_EQ(bound.node_name, "n0");
  EXPECT_TRUE(p.node_name.empty());
  ASSERT_EQ(s.pods_on(0).size(), 1u);
  EXPECT_EQ(s.pods_on(0)[0], &bound);
}

}  // namespace
}  // namespace kplace::engine
