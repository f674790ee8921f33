#include "kplace/engine/snapshot.h"

#include <gtest/gtest.h>

#include <limits>

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

// RequestsOf keeps a record per attached pod object: replicas share one, and a pod whose
// content changes between an unbind and its next attach (an update event) is read again.
TEST(SnapshotTest, RequestsOfIsKeptPerPodObjectAndReadAgainAfterAChange) {
  ObjectSet objects;
  objects.nodes.push_back(MakeNode("n0", {{"cpu", "4"}}));
  objects.nodes.push_back(MakeNode("n1", {{"cpu", "4"}}));
  Snapshot s(objects, {});
  Pod a = MakePod("a", {{"cpu", "100m"}});
  Pod b = MakePod("b", {{"cpu", "100m"}});
  a.node_name = b.node_name = "n0";
  s.Attach(a, 0, 0);
  s.Attach(b, 0, 1);
  const NodeResources& ra = s.RequestsOf(a, 0);
  EXPECT_EQ(ra.requested.milli_cpu, 100);
  EXPECT_EQ(ra.non_zero_memory, 200 * 1024 * 1024);  // the scoring default
  EXPECT_EQ(ra.pod_count, 1);
  EXPECT_EQ(&s.RequestsOf(b, 0), &ra);  // the same requests: one record

  // Taken off: its record is still what the plugins undo, until the next attach.
  EXPECT_EQ(s.Unbind(&a, 0), 0u);
  EXPECT_EQ(s.RequestsOf(a, 0).requested.milli_cpu, 100);
  // Changed in place (the same address) and attached again: read again, not reused.
  a.containers[0].requests["cpu"] = *Quantity::Parse("300m");
  s.Attach(a, 1, 0);
  EXPECT_EQ(s.RequestsOf(a, 1).requested.milli_cpu, 300);
  EXPECT_EQ(s.RequestsOf(b, 0).requested.milli_cpu, 100);

  // A pod the snapshot does not hold is read on every call.
  Pod other = MakePod("other", {{"cpu", "1"}});
  EXPECT_EQ(s.RequestsOf(other, 0).requested.milli_cpu, 1000);
  other.containers[0].requests["cpu"] = *Quantity::Parse("2");
  EXPECT_EQ(s.RequestsOf(other, 0).requested.milli_cpu, 2000);
}


// The resource columns build a node's sums from RequestsAt: equal to ComputeNodeResources,
// saturated sums and extended resources included.
TEST(SnapshotTest, SummedRequestsAtEqualComputeNodeResources) {
  ObjectSet objects;
  objects.nodes.push_back(MakeNode("n0", {{"cpu", "4"}, {"memory", "8Gi"}, {"example.com/gpu", "4"}}));
  objects.pods.push_back(MakePod("a", {{"cpu", "100m"}, {"example.com/gpu", "1"}}, "n0"));
  objects.pods.push_back(MakePod("b", {{"cpu", "100m"}, {"example.com/gpu", "1"}}, "n0"));
  objects.pods.push_back(MakePod("c", {}, "n0"));  // no requests: the scoring defaults
  objects.pods.push_back(MakePod("huge", {{"memory", "8Ei"}}, "n0"));
  objects.pods.push_back(MakePod("huge2", {{"memory", "8Ei"}}, "n0"));  // the sum saturates
  Snapshot s(objects, {});
  ASSERT_EQ(s.pods_on(0).size(), 5u);
  NodeResources summed;
  for (size_t k = 0; k < s.pods_on(0).size(); ++k) summed.Add(s.RequestsAt(0, k));
  const NodeResources want = ComputeNodeResources(s.node(0), s.pods_on(0), true);
  EXPECT_EQ(summed.requested.milli_cpu, want.requested.milli_cpu);
  EXPECT_EQ(summed.requested.milli_cpu, 200);
  EXPECT_EQ(summed.requested.memory, want.requested.memory);
  EXPECT_EQ(summed.requested.memory, std::numeric_limits<int64_t>::max());
  EXPECT_EQ(summed.requested.scalars, want.requested.scalars);
  EXPECT_EQ(summed.requested.scalars.at("example.com/gpu"), 2);
  EXPECT_EQ(summed.non_zero_milli_cpu, want.non_zero_milli_cpu);
  EXPECT_EQ(summed.non_zero_milli_cpu, 200 + 100 + 100 + 100);  // c, huge and huge2 get 100m
  EXPECT_EQ(summed.non_zero_memory, want.non_zero_memory);
  EXPECT_EQ(summed.pod_count, 5);
  // Equal pods share one record.
  EXPECT_EQ(&s.RequestsAt(0, 0), &s.RequestsAt(0, 1));
  EXPECT_EQ(&s.RequestsOf(*s.pods_on(0)[1], 0), &s.RequestsAt(0, 1));
}

}  // namespace
}  // namespace kplace::engine
