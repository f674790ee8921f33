#pragma once
// A scheduling profile after defaulting and merging: the plugins per extension point
// in run order, score weights and plugin arguments. Host-safe.
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "kplace/config/plugin_args.h"

namespace kplace {

struct WeightedPlugin {
  std::string name;
  int64_t weight = 1;
};

struct Profile {
  std::string scheduler_name = "default-scheduler";
  std::vector<std::string> pre_enqueue, pre_filter, filter, post_filter, pre_score;
  std::vector<WeightedPlugin> score;
  PluginArgs args;
  std::optional<int32_t> percentage_of_nodes_to_score;

  /** Every plugin named at any point, in first-seen order (PreFilter, Filter, PreScore, Score). */
  std::vector<std::string> AllPlugins() const;
};

/** The v1.37 default profile. */
Profile DefaultProfile();

/** A profile running only `plugins` at every point each implements, weight 1 —
 *  how the conformance cases exercise single plugins. */
Profile SinglePluginsProfile(const std::vector<std::string>& plugins);

/** Which extension points an in-tree plugin implements (ExtensionPoint bits; 0 = unknown). */
unsigned PluginExtensionPoints(const std::string& name);

/** Extension points of a KubeSchedulerConfiguration v1 `plugins` block (upstream names), as
 *  bits. A superset of ExtensionPoint's scheduling-cycle points, used to validate and expand
 *  configurations. */
enum ConfigPoint : unsigned {
  kPreEnqueueConfigPoint = 1u << 0,
  kQueueSortConfigPoint = 1u << 1,
  kPreFilterConfigPoint = 1u << 2,
  kFilterConfigPoint = 1u << 3,
  kPostFilterConfigPoint = 1u << 4,
  kPreScoreConfigPoint = 1u << 5,
  kScoreConfigPoint = 1u << 6,
  kReserveConfigPoint = 1u << 7,
  kPermitConfigPoint = 1u << 8,
  kPreBindConfigPoint = 1u << 9,
  kBindConfigPoint = 1u << 10,
  kPostBindConfigPoint = 1u << 11,
};

/** Every configuration point a plugin registered in v1.37 implements (ConfigPoint bits);
 *  0 when no plugin of that name is registered. Covers the default plugins plus
 *  SchedulingGates, PrioritySort, DefaultPreemption, DefaultBinder and NodeDeclaredFeatures. */
unsigned PluginConfigPoints(const std::string& name);

/** False for registered plugins that a configuration may name but kplace never runs,
 *  because nothing they read is modelled (NodeDeclaredFeatures: declared node features).
 *  For the pods kplace models they are no-ops, so profiles leave them out. */
bool PluginIsModelled(const std::string& name);

/** True for the in-tree volume limits plugins removed in v1.31 (AzureDiskLimits,
 *  CinderLimits, EBSLimits, GCEPDLimits), which v1 validation rejects. */
bool PluginIsRemoved(const std::string& name);

/** The v1.37 default MultiPoint list in order (cycle-and-config.md §4.1), with the
 *  default weights; weight 0 means unset (1 where the plugin scores). */
std::vector<WeightedPlugin> DefaultMultiPointPlugins();

}  // namespace kplace
