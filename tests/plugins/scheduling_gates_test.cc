#include "kplace/plugins/scheduling_gates.h"

#include <gtest/gtest.h>

namespace kplace::plugins::scheduling_gates {
namespace {

TEST(SchedulingGatesTest, GatedPodWaitsWithEveryGateNamed) {
  SchedulingGates plugin;
  Pod pod;
  EXPECT_TRUE(plugin.PreEnqueue(pod, {}).IsSuccess());
  pod.scheduling_gates = {"example.com/a", "example.com/b"};
  const PluginStatus s = plugin.PreEnqueue(pod, {});
  EXPECT_EQ(s.code, Code::kUnschedulableAndUnresolvable);
  EXPECT_EQ(s.Message(), "waiting for scheduling gates: [example.com/a example.com/b]");
  EXPECT_EQ(plugin.name(), "SchedulingGates");
}

}  // namespace
}  // namespace kplace::plugins::scheduling_gates
