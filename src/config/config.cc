// Placeholder until the configuration decoder lands: defaults only.
#include "kplace/config/config.h"

#include <nlohmann/json.hpp>

namespace kplace {

SchedulerConfig DefaultSchedulerConfig() {
  SchedulerConfig c;
  c.profiles.push_back(DefaultProfile());
  return c;
}

absl::StatusOr<SchedulerConfig> DecodeSchedulerConfig(const nlohmann::json&, std::string_view) {
  return absl::UnimplementedError("KubeSchedulerConfiguration decoding is not built yet");
}

absl::StatusOr<SchedulerConfig> LoadSchedulerConfig(const std::string&) {
  return absl::UnimplementedError("KubeSchedulerConfiguration decoding is not built yet");
}

absl::Status DecodePluginArgs(const std::string&, const nlohmann::json&, std::string_view, PluginArgs*) {
  return absl::OkStatus();
}

}  // namespace kplace
