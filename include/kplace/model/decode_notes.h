#pragma once
// What a decode filled in where the API server defaults a field, for callers that tell the
// user (kplace schedule does; the library only defaults).
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "kplace/model/decode.h"

namespace kplace {

struct DecodeNotes {
  /** Nodes whose status.allocatable was absent or null while status.capacity was set: their
   *  allocatable is their capacity, as SetDefaults_NodeStatus makes it. */
  std::vector<std::string> allocatable_from_capacity;
};

/** @brief DecodeFile, noting in `notes` what the decode defaulted. */
absl::Status DecodeFile(const std::string& path, ObjectSet* out, SkippedKinds* skipped, std::vector<std::string>* invalid,
                        DecodeNotes* notes);
/** @brief DecodeText, noting in `notes` what the decode defaulted. */
absl::Status DecodeText(std::string_view text, std::string_view file, ObjectSet* out, SkippedKinds* skipped,
                        std::vector<std::string>* invalid, DecodeNotes* notes);

}  // namespace kplace
