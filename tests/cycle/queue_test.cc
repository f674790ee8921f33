#include "kplace/cycle/queue.h"

#include <gtest/gtest.h>

#include "kplace/common/strings.h"
#include "kplace/config/config.h"
#include "kplace/model/decode.h"
#include "tests/testing/differential.h"

namespace kplace::cycle {
namespace {

using state::EventType;
using state::NodeEvent;
using state::PodEvent;
using testing::MakeNode;
using testing::MakePod;

// One node with room for 1 CPU, and a scheduler over it.
class SchedulingQueueTest : public ::testing::Test {
 protected:
  void SetUp() override {
    cluster_.nodes.push_back(MakeNode("small", {{"cpu", "1"}, {"pods", "10"}}, {{"kubernetes.io/hostname", "small"}}));
    auto s = Scheduler::Create(cluster_, DefaultSchedulerConfig(), Options{});
    ASSERT_TRUE(s.ok()) << s.status();
    scheduler_ = std::move(*s);
  }
  ObjectSet cluster_;
  std::unique_ptr<Scheduler> scheduler_;
};

state::ClusterEvent Service(EventType type) {
  auto e = state::ParseWatchEvent(StrCat(R"({"type":")", type == EventType::kAdded ? "ADDED" : "DELETED",
                                         R"(","object":{"kind":"Service","apiVersion":"v1","metadata":{"name":"s","namespace":"default"},"spec":{"selector":{"app":"x"}}}})"),
                                  "test");
  return std::move(**e);
}

// A pod that fits nowhere waits; a node that joins retries it; a Service retries nothing
// (no default plugin registers for Services).
TEST_F(SchedulingQueueTest, EventsRetryWaitingPodsAsUpstreamRegisters) {
  SchedulingQueue queue(scheduler_.get());
  ASSERT_TRUE(queue.Add(MakePod("big", {{"cpu", "2"}})).ok());
  queue.Flush();
  EXPECT_EQ(queue.waiting(), 1u);
  ASSERT_TRUE(queue.Apply(Service(EventType::kAdded)).ok());
  EXPECT_EQ(queue.stats().requeued, 0);
  queue.Flush();
  EXPECT_EQ(queue.Results()[0].attempts, 1);
  ASSERT_TRUE(queue.Apply(NodeEvent(EventType::kAdded, MakeNode("large", {{"cpu", "4"}, {"pods", "10"}}))).ok());
  EXPECT_EQ(queue.stats().requeued, 1);
  queue.Flush();
  ASSERT_EQ(queue.Results().size(), 1u);
  EXPECT_EQ(queue.Results()[0].node, "large");
  EXPECT_EQ(queue.Results()[0].attempts, 2);
  EXPECT_EQ(queue.waiting(), 0u);
}

// GangScheduling's hints (GenericWorkload): members that arrive one by one wait at PreEnqueue
// until the gang has minCount pods, then go through one PodGroup cycle together; pods whose
// PodGroup arrives after them are retried by its ADDED.
TEST(SchedulingQueueGangTest, GangsWaitForTheirMembersAndTheirPodGroup) {
  ObjectSet cluster;
  cluster.nodes.push_back(MakeNode("n", {{"cpu", "4"}, {"pods", "10"}}, {{"kubernetes.io/hostname", "n"}}));
  Options o;
  o.gates.overrides["GenericWorkload"] = true;
  auto s = Scheduler::Create(cluster, DefaultSchedulerConfig(), o);
  ASSERT_TRUE(s.ok()) << s.status();
  SchedulingQueue queue(s->get());
  auto group = [](const std::string& name, int min_count) {
    auto e = state::ParseWatchEvent(
        StrCat(R"({"type":"ADDED","object":{"apiVersion":"scheduling.k8s.io/v1beta1","kind":"PodGroup","metadata":{"name":")",
               name, R"(","namespace":"default"},"spec":{"schedulingPolicy":{"gang":{"minCount":)", min_count, "}}}}}"),
        "test");
    EXPECT_TRUE(e.ok()) << e.status();
    return std::move(**e);
  };
  auto member = [](const std::string& name, const std::string& g) {
    Pod p = MakePod(name, {{"cpu", "1"}});
    p.scheduling_group = g;
    return p;
  };
  ASSERT_TRUE(queue.Apply(group("train", 3)).ok());
  for (const char* name : {"t0", "t1"}) {
    ASSERT_TRUE(queue.Apply(PodEvent(EventType::kAdded, member(name, "train"))).ok());
    queue.Flush();
  }
  EXPECT_EQ(queue.waiting(), 2u);  // held at PreEnqueue: 2 pods of a gang of 3
  for (const Placement& p : queue.Results()) EXPECT_EQ(p.gating_plugin, "GangScheduling") << p.message;
  ASSERT_TRUE(queue.Apply(PodEvent(EventType::kAdded, member("t2", "train"))).ok());
  queue.Flush();
  EXPECT_EQ(queue.waiting(), 0u);
  for (const Placement& p : queue.Results()) {
    EXPECT_EQ(p.node, "n") << p.pod << ": " << p.message;
    ASSERT_TRUE(p.pod_group);
    EXPECT_TRUE(p.pod_group->scheduled);
  }
  // Members before their PodGroup: held, then retried when it arrives.
  ASSERT_TRUE(queue.Apply(PodEvent(EventType::kAdded, member("late", "later"))).ok());
  queue.Flush();
  EXPECT_EQ(queue.waiting(), 1u);
  EXPECT_EQ(queue.Results().back().message, "waiting for pods's pod group \"later\" to appear in scheduling queue");
  ASSERT_TRUE(queue.Apply(group("later", 1)).ok());
  queue.Flush();
  EXPECT_EQ(queue.waiting(), 0u);
  EXPECT_EQ(queue.Results().back().node, "n");
}

// Only events the rejecting plugin's hint can call helpful retry a pod: for a pod too big
// for every node (NodeResourcesFit), not a label change, not a node too small for it
// either, but a bound pod's delete; the attempts show which ones were tried.
TEST_F(SchedulingQueueTest, HintsOfTheRejectingPluginsDecideWhatRetries) {
  SchedulingQueue queue(scheduler_.get());
  ASSERT_TRUE(queue.Add(MakePod("filler", {{"cpu", "600m"}})).ok());
  queue.Flush();
  ASSERT_EQ(queue.Results()[0].node, "small");
  ASSERT_TRUE(queue.Add(MakePod("half", {{"cpu", "600m"}})).ok());
  queue.Flush();
  ASSERT_EQ(queue.Results()[1].unschedulable_plugins, std::vector<std::string>{"NodeResourcesFit"});
  Node relabelled = cluster_.nodes[0];
  relabelled.meta.labels["team"] = "a";
  ASSERT_TRUE(queue.Apply(NodeEvent(EventType::kModified, relabelled)).ok());
  ASSERT_TRUE(queue.Apply(NodeEvent(EventType::kAdded, MakeNode("tiny", {{"cpu", "500m"}, {"pods", "10"}}))).ok());
  EXPECT_EQ(queue.stats().requeued, 0);
  Pod filler = MakePod("filler", {{"cpu", "600m"}});
  filler.node_name = "small";
  ASSERT_TRUE(queue.Apply(PodEvent(EventType::kDeleted, filler)).ok());
  EXPECT_EQ(queue.stats().requeued, 1);
  queue.Flush();
  EXPECT_EQ(queue.Results()[1].node, "small");
  EXPECT_EQ(queue.Results()[1].attempts, 2);
}

// A gated pod waits through cluster events; its own update lifting the gate schedules it.
TEST_F(SchedulingQueueTest, GatedPodsWaitForTheirOwnUpdate) {
  SchedulingQueue queue(scheduler_.get());
  Pod gated = MakePod("gated", {{"cpu", "100m"}});
  gated.scheduling_gates = {"example.com/hold"};
  ASSERT_TRUE(queue.Add(gated).ok());
  queue.Flush();
  ASSERT_TRUE(queue.Results()[0].gated);
  ASSERT_TRUE(queue.Apply(NodeEvent(EventType::kAdded, MakeNode("other", {{"cpu", "4"}, {"pods", "10"}}))).ok());
  EXPECT_EQ(queue.stats().requeued, 0);
  EXPECT_EQ(queue.waiting(), 1u);
  Pod lifted = gated;
  lifted.scheduling_gates.clear();
  ASSERT_TRUE(queue.Apply(PodEvent(EventType::kModified, lifted)).ok());
  queue.Flush();
  EXPECT_FALSE(queue.Results()[0].node.empty());
  EXPECT_EQ(queue.waiting(), 0u);
}

// A pending pod without a nomination that is deleted leaves without a flush: the pods
// queued before it are scheduled later, together.
TEST_F(SchedulingQueueTest, DeletedPendingPodJustLeaves) {
  SchedulingQueue queue(scheduler_.get());
  ASSERT_TRUE(queue.Add(MakePod("a", {{"cpu", "100m"}})).ok());
  ASSERT_TRUE(queue.Add(MakePod("b", {{"cpu", "100m"}})).ok());
  ASSERT_TRUE(queue.Apply(PodEvent(EventType::kDeleted, MakePod("b", {{"cpu", "100m"}}))).ok());
  EXPECT_EQ(queue.stats().flushes, 0);
  queue.Flush();
  ASSERT_EQ(queue.Results().size(), 1u);
  EXPECT_EQ(queue.Results()[0].pod, "default/a");
}

// `each` stops a flush; the pods not tried stay queued and the next flush takes them.
TEST_F(SchedulingQueueTest, StoppedFlushKeepsUntriedPods) {
  int seen = 0;
  bool stop = true;
  SchedulingQueue queue(scheduler_.get(), [&](const Placement&) {
    ++seen;
    return !stop;
  });
  for (const char* name : {"a", "b", "c"}) ASSERT_TRUE(queue.Add(MakePod(name, {{"cpu", "100m"}})).ok());
  EXPECT_FALSE(queue.Flush());
  EXPECT_EQ(queue.Results().size(), 1u);
  stop = false;
  EXPECT_TRUE(queue.Flush());
  EXPECT_EQ(seen, 3);
  ASSERT_EQ(queue.Results().size(), 3u);
  for (const Placement& p : queue.Results()) EXPECT_EQ(p.node, "small");
}

}  // namespace
}  // namespace kplace::cycle
