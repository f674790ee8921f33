// Fuzz target for the KubeSchedulerConfiguration decoder alone (kplace/config/config.h):
// YAML or JSON bytes in, every document decoded as a configuration and every pluginConfig
// entry's args decoded on their own, a Status out, never a crash.
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

#include "kplace/config/config.h"
#include "kplace/model/decode.h"

namespace {

using json = nlohmann::json;

// Each pluginConfig entry's args through DecodePluginArgs onto the defaults, so the
// fuzzer reaches the argument decoders even when the rest of the document is invalid.
// Returns false when an entry that names a plugin is refused.
bool DecodeEveryPluginConfig(const json& doc) {
  bool all_ok = true;
  auto profiles = doc.find("profiles");
  if (profiles == doc.end() || !profiles->is_array()) return true;
  for (const json& profile : *profiles) {
    if (!profile.is_object()) continue;
    auto configs = profile.find("pluginConfig");
    if (configs == profile.end() || !configs->is_array()) continue;
    for (const json& entry : *configs) {
      if (!entry.is_object()) continue;
      auto name = entry.find("name");
      if (name == entry.end() || !name->is_string()) continue;
      auto args = entry.find("args");
      kplace::PluginArgs out;
      all_ok = kplace::DecodePluginArgs(name->get<std::string>(), args == entry.end() ? json() : *args,
                                        "fuzz.yaml: pluginConfig.args", &out)
                   .ok() &&
               all_ok;
    }
  }
  return all_ok;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view text(reinterpret_cast<const char*>(data), size);
  auto docs = kplace::ParseDocuments(text, "fuzz.yaml");
  if (!docs.ok()) return 0;
  for (const json& doc : *docs) {
    if (!doc.is_object()) continue;
    // Any document, whatever its kind: the decoder checks apiVersion and kind itself.
    auto config = kplace::DecodeSchedulerConfig(doc, "fuzz.yaml");
    const bool args_ok = DecodeEveryPluginConfig(doc);
    if (!config.ok()) continue;
    // What a decoded configuration promises the scheduler: a profile at least, each
    // profile's args accepted alone as they were in order, and settings in range.
    if (config->profiles.empty() || config->parallelism <= 0 || config->percentage_of_nodes_to_score < 0 ||
        config->percentage_of_nodes_to_score > 100 || !args_ok) {
      __builtin_trap();
    }
    for (const kplace::Profile& profile : config->profiles) {
      if (profile.scheduler_name.empty()) __builtin_trap();
      const auto& percentage = profile.percentage_of_nodes_to_score;
      if (percentage && (*percentage < 0 || *percentage > 100)) __builtin_trap();
      const kplace::DefaultPreemptionArgs& dp = profile.args.default_preemption;
      if (dp.min_candidate_nodes_percentage < 0 || dp.min_candidate_nodes_percentage > 100 ||
          dp.min_candidate_nodes_absolute < 0) {
        __builtin_trap();
      }
    }
  }
  return 0;
}
