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
  std::vector<std::string> pre_filter, filter, post_filter, pre_score;
  std::vector<WeightedPlugin> score;
  PluginArgs args;
  std::optional<int32_t> percentage_of_nodes_to_score;

  /** Every plugin named at any point, in first-seen order (PreFilter, Filter, PreScore, Score). */
  std::vector<std::string> AllPlugins() const;
};

/** The v1.37 default profile (no DRA claims matter to it). */
Profile DefaultProfile();

/** A profile running only `plugins` at every point each implements, weight 1 —
 *  how the conformance cases exercise single plugins. */
Profile SinglePluginsProfile(const std::vector<std::string>& plugins);

/** Which extension points an in-tree plugin implements (ExtensionPoint bits; 0 = unknown). */
unsigned PluginExtensionPoints(const std::string& name);

}  // namespace kplace
