#pragma once
// Benchmark workloads in the shape of scheduler_perf's: a node template replicated N times
// (zone labels round-robin), init pods scheduled first, then the measured pods.
#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "absl/status/statusor.h"
#include "kplace/model/objects.h"

namespace kplace::bench {

struct PodGroup {
  int32_t count = 0;
  std::string namespace_ = "default";
  nlohmann::json pod_template;  // a Pod object without a name
};

struct Workload {
  std::string name, description;
  int32_t num_nodes = 0;
  std::vector<std::string> zones;  // topology.kubernetes.io/zone values, assigned round-robin
  nlohmann::json node_template;    // a Node object without a name
  std::vector<nlohmann::json> namespaces;  // Namespace objects
  std::vector<PodGroup> init;
  PodGroup measured;
};

/** @brief Decodes a workload document; `file` names it in errors. */
absl::StatusOr<Workload> DecodeWorkloadSpec(const nlohmann::json& doc, std::string_view file);
/** @brief A workload by built-in name (bench/workloads/<name>.yaml, embedded) or file path. */
absl::StatusOr<Workload> LoadWorkload(const std::string& name_or_path);
/** Names of the built-in workloads. */
std::vector<std::string> BuiltinWorkloads();

/** @brief The cluster's nodes and namespaces, decoded through the ordinary decoder. */
absl::StatusOr<ObjectSet> BuildCluster(const Workload& w);
/** @brief `group.count` pods named <prefix>-<i>, decoded; creation times increase with i. */
absl::StatusOr<std::vector<Pod>> BuildPods(const PodGroup& group, const std::string& prefix);

}  // namespace kplace::bench
