#pragma once
// Typed plugin arguments (KubeSchedulerConfiguration v1 pluginConfig), defaults applied.
// Host-safe: shared by the reference, the engine and the config decoder.
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "kplace/model/objects.h"

namespace kplace {

struct ResourceSpec {
  std::string name;
  int64_t weight = 1;
};

struct UtilizationShapePoint {
  int32_t utilization = 0;  // 0..100
  int32_t score = 0;        // 0..10
};

struct NodeResourcesFitArgs {
  std::vector<std::string> ignored_resources;
  std::vector<std::string> ignored_resource_groups;
  std::string strategy = "LeastAllocated";  // LeastAllocated | MostAllocated | RequestedToCapacityRatio
  std::vector<ResourceSpec> resources{{"cpu", 1}, {"memory", 1}};
  std::vector<UtilizationShapePoint> shape;  // RequestedToCapacityRatio only
};

struct NodeResourcesBalancedAllocationArgs {
  std::vector<ResourceSpec> resources{{"cpu", 1}, {"memory", 1}};
};

struct NodeAffinityArgs {
  std::optional<NodeAffinity> added_affinity;
};

struct InterPodAffinityArgs {
  int32_t hard_pod_affinity_weight = 1;
  bool ignore_preferred_terms_of_existing_pods = false;
};

struct PodTopologySpreadArgs {
  std::string defaulting_type = "System";  // System | List
  std::vector<TopologySpreadConstraint> default_constraints;
};

struct VolumeBindingArgs {
  int64_t bind_timeout_seconds = 600;
  std::vector<UtilizationShapePoint> shape{{0, 10}, {100, 0}};
};

struct DefaultPreemptionArgs {
  int32_t min_candidate_nodes_percentage = 10;  // [0, 100]
  int32_t min_candidate_nodes_absolute = 100;   // >= 0; not both 0
};

/** Every plugin's arguments for one profile; each plugin reads its own member. */
struct PluginArgs {
  NodeResourcesFitArgs node_resources_fit;
  NodeResourcesBalancedAllocationArgs balanced_allocation;
  NodeAffinityArgs node_affinity;
  InterPodAffinityArgs inter_pod_affinity;
  PodTopologySpreadArgs pod_topology_spread;
  VolumeBindingArgs volume_binding;
  DefaultPreemptionArgs default_preemption;
};

}  // namespace kplace
