#pragma once
// Benchmark workloads in the shape of scheduler_perf's: a node template replicated N times
// (label values assigned round-robin, as labelNodePrepareStrategy does), init pod groups
// placed first (group after group, as upstream's createPods ops), then the measured pods.
// Sizes come as named variants ("500Nodes", "5000Nodes", "5000Nodes_5000Pods", ...).
#include <cstdint>
#include <map>
#include <optional>
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

/** One size of a workload, as upstream's `workloads:` entries. */
struct Variant {
  std::string name;          // "5000Nodes"
  int32_t nodes = 0;
  std::vector<int32_t> init;  // per init group
  int32_t measured = 0;
  std::optional<double> threshold;  // upstream's CI floor (SchedulingThroughput Average, pods/s)
  bool upstream = true;             // false: a size kplace adds (e.g. 15000Nodes)
};

struct Workload {
  std::string name, description;
  int32_t num_nodes = 0;
  /** Node label key -> values, assigned round-robin over nodes (node i gets values[i % n]). */
  std::vector<std::pair<std::string, std::vector<std::string>>> node_labels;
  nlohmann::json node_template;            // a Node object without a name
  std::vector<nlohmann::json> namespaces;  // Namespace objects
  std::vector<PodGroup> init;
  PodGroup measured;
  std::vector<Variant> variants;
  std::string variant;  // the applied variant's name, or a name derived from the counts

  /** The variant that `variant` names, if any. */
  const Variant* FindVariant(const std::string& name) const;
};

/** @brief Decodes a workload document; `file` names it in errors. The default variant
 *  (`default:`, else the first) is applied. InvalidArgument on a malformed document. */
absl::StatusOr<Workload> DecodeWorkloadSpec(const nlohmann::json& doc, std::string_view file);
/** @brief A workload by built-in name (bench/workloads/<name>.yaml, embedded) or file path.
 *  NotFound when neither; InvalidArgument when malformed. */
absl::StatusOr<Workload> LoadWorkload(const std::string& name_or_path);
/** Names of the built-in workloads, sorted. */
std::vector<std::string> BuiltinWorkloads();

/** @brief Applies a size variant by name. NotFound when the workload has none by that name. */
absl::Status ApplyVariant(Workload& w, const std::string& name);
/** @brief Applies the variant with `nodes` nodes ("<nodes>Nodes" first, then any with that
 *  node count); returns false and changes only the node count when none has it (call
 *  NameVariant after). */
bool SelectNodes(Workload& w, int32_t nodes);
/** Sets `variant` from the counts: the name of a variant with exactly these counts, else
 *  "<nodes>Nodes_<init>Init_<measured>Pods". Call after overriding counts. */
void NameVariant(Workload& w);

/** @brief The cluster's nodes and namespaces, decoded through the ordinary decoder. */
absl::StatusOr<ObjectSet> BuildCluster(const Workload& w);
/** @brief `group.count` pods named <prefix>-<i>, decoded once and stamped; creation times
 *  are `first_creation + i`. */
absl::StatusOr<std::vector<Pod>> BuildPods(const PodGroup& group, const std::string& prefix,
                                           int64_t first_creation = 0);

}  // namespace kplace::bench
