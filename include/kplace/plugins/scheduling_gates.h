#pragma once
// SchedulingGates: a pod with spec.schedulingGates waits at PreEnqueue until they are all
// removed; no cycle runs for it.
#include <string>

#include "kplace/framework/host_plugin.h"

namespace kplace::plugins::scheduling_gates {

constexpr char kName[] = "SchedulingGates";

class SchedulingGates final : public HostPlugin {
 public:
  const std::string& name() const override { return name_; }
  /** UnschedulableAndUnresolvable "waiting for scheduling gates: [a b]" while the pod has
   *  gates, else Success. */
  PluginStatus PreEnqueue(const Pod& pod, const ObjectSet& objects) override;

 private:
  const std::string name_ = kName;
};

}  // namespace kplace::plugins::scheduling_gates
