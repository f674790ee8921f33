// Fuzz target for the object decoders: any bytes in, a Status out, never a crash.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include <nlohmann/json.hpp>

#include "kplace/config/config.h"
#include "kplace/model/decode.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view text(reinterpret_cast<const char*>(data), size);
  // DecodeText's own JSON path (simdjson, Lists split item by item) against the documents:
  // it may not accept what the slow path calls invalid JSON, nor decode something else.
  kplace::ObjectSet fast;
  const bool fast_ok = kplace::DecodeText(text, "fuzz.json", &fast).ok();
  auto docs = kplace::ParseDocuments(text, "fuzz.yaml");
  if (!docs.ok()) {
    if (fast_ok && docs.status().message().find("invalid JSON") != std::string_view::npos) __builtin_trap();
    return 0;
  }
  kplace::ObjectSet set;
  bool all_ok = true;
  for (const nlohmann::json& doc : *docs) {
    all_ok = kplace::DecodeDocument(doc, "fuzz.yaml", &set).ok() && all_ok;
    // value() throws when "kind" holds something other than a string (kind: null).
    auto kind = doc.is_object() ? doc.find("kind") : doc.end();
    if (doc.is_object() && kind != doc.end() && *kind == "KubeSchedulerConfiguration") {
      (void)kplace::DecodeSchedulerConfig(doc, "fuzz.yaml");
    }
  }
  if (fast_ok && all_ok && (fast.nodes.size() != set.nodes.size() || fast.pods.size() != set.pods.size())) {
    __builtin_trap();
  }
  return 0;
}
