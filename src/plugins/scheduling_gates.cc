#include "kplace/plugins/scheduling_gates.h"

namespace kplace::plugins::scheduling_gates {

PluginStatus SchedulingGates::PreEnqueue(const Pod& pod, const ObjectSet& /*objects*/) {
  if (pod.scheduling_gates.empty()) return PluginStatus::Success();
  std::string message = "waiting for scheduling gates: [";
  for (size_t g = 0; g < pod.scheduling_gates.size(); ++g) message += (g ? " " : "") + pod.scheduling_gates[g];
  return PluginStatus::Make(Code::kUnschedulableAndUnresolvable, message + "]");
}

}  // namespace kplace::plugins::scheduling_gates
