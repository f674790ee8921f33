// Fuzz target for the object decoders: any bytes in, a Status out, never a crash.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include <nlohmann/json.hpp>

#include "kplace/config/config.h"
#include "kplace/model/decode.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view text(reinterpret_cast<const char*>(data), size);
  auto docs = kplace::ParseDocuments(text, "fuzz.yaml");
  if (!docs.ok()) return 0;
  kplace::ObjectSet set;
  for (const nlohmann::json& doc : *docs) {
    (void)kplace::DecodeDocument(doc, "fuzz.yaml", &set);
    // value() throws when "kind" holds something other than a string (kind: null).
    auto kind = doc.is_object() ? doc.find("kind") : doc.end();
    if (doc.is_object() && kind != doc.end() && *kind == "KubeSchedulerConfiguration") {
      (void)kplace::DecodeSchedulerConfig(doc, "fuzz.yaml");
    }
  }
  return 0;
}
