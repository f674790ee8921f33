#include "kplace/framework/types.h"

namespace kplace {
namespace {

struct CodeEntry { Code code; const char* name; };
constexpr CodeEntry kCodes[] = {
    {Code::kSuccess, "Success"},
    {Code::kError, "Error"},
    {Code::kUnschedulable, "Unschedulable"},
    {Code::kUnschedulableAndUnresolvable, "UnschedulableAndUnresolvable"},
    {Code::kWait, "Wait"},
    {Code::kSkip, "Skip"},
    {Code::kPending, "Pending"},
};

// v1.37 defaults of the gates that change plugin behaviour (spec tables).
const std::map<std::string, bool>& DefaultGates() {
  static const auto* gates = new std::map<std::string, bool>{
      {"SidecarContainers", true},
      {"PodLevelResources", true},
      {"InPlacePodVerticalScaling", true},
      {"DRAExtendedResource", false},
      {"DRAPrioritizedList", true},  // beta since v1.34: claims may list alternatives (firstAvailable)
      {"TaintTolerationComparisonOperators", false},
      {"MatchLabelKeysInPodAffinity", true},
      {"MatchLabelKeysInPodTopologySpread", true},
      {"NodeInclusionPolicyInPodTopologySpread", true},
      {"StorageCapacityScoring", true},
      {"VolumeLimitScaling", true},  // beta, on at v1.37 (volumes.md §6)
      {"VolumeCapacityPriority", false},
      {"ImageVolume", true},
      {"SchedulerAsyncPreemption", true},
      {"OpportunisticBatching", true},
      // Workload-aware scheduling: the PodGroup cycle and GangScheduling (beta, off at v1.37;
      // docs/podgroup.md). Its topology-aware, composite and preemption-policy parts are alpha.
      {"GenericWorkload", false},
      {"TopologyAwareWorkloadScheduling", false},
      {"CompositePodGroup", false},
      {"PodGroupPreemptionPolicy", false},
  };
  return *gates;
}

}  // namespace

const char* CodeName(Code code) {
  for (const CodeEntry& e : kCodes) {
    if (e.code == code) return e.name;
  }
  return "Unknown";
}

bool ParseCode(const std::string& name, Code* out) {
  for (const CodeEntry& e : kCodes) {
    if (name == e.name) { *out = e.code; return true; }
  }
  return false;
}

std::string PluginStatus::Message() const {
  std::string out;
  for (size_t i = 0; i < reasons.size(); ++i) {
    if (i) out += ", ";
    out += reasons[i];
  }
  return out;
}

const std::map<std::string, bool>& KnownFeatureGates() { return DefaultGates(); }

bool FeatureGates::Enabled(const std::string& gate) const {
  auto it = overrides.find(gate);
  if (it != overrides.end()) return it->second;
  auto d = DefaultGates().find(gate);
  return d != DefaultGates().end() && d->second;
}

}  // namespace kplace
