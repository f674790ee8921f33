#pragma once
// KubeSchedulerConfiguration v1: decoding, defaulting, plugin-set merging, validation.
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "absl/status/statusor.h"
#include "kplace/config/profile.h"

namespace kplace {

struct SchedulerConfig {
  std::vector<Profile> profiles;
  int32_t percentage_of_nodes_to_score = 0;  // 0 = adaptive
  int32_t parallelism = 16;
};

/** @brief One profile, "default-scheduler", with the v1.37 defaults. */
SchedulerConfig DefaultSchedulerConfig();

/** @brief Decodes a KubeSchedulerConfiguration (kubescheduler.config.k8s.io/v1) document:
 *  merges each profile's plugins with the defaults, expands multiPoint, applies
 *  pluginConfig args with their defaults, and validates.
 *  @return InvalidArgument naming `file` and the field path for bad input. */
absl::StatusOr<SchedulerConfig> DecodeSchedulerConfig(const nlohmann::json& doc, std::string_view file);

/** @brief Reads and decodes a configuration file (YAML or JSON). */
absl::StatusOr<SchedulerConfig> LoadSchedulerConfig(const std::string& path);

/** @brief Applies one pluginConfig entry's `args` for `plugin` onto `out`, field by field,
 *  with v1 defaulting and the plugin's argument validation. `where` prefixes errors. */
absl::Status DecodePluginArgs(const std::string& plugin, const nlohmann::json& args,
                              std::string_view where, PluginArgs* out);

}  // namespace kplace
