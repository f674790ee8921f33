#pragma once
// Cluster changes as a scheduler sees them: Kubernetes watch events (ADDED, MODIFIED,
// DELETED) of one decoded object each, read from `kubectl get --watch -o json` lines, and
// applied to an object set the way the scheduler's cache applies them. Host-safe.
#include <cstddef>
#include <cstdint>
#include <istream>
#include <optional>
#include <string>
#include <string_view>
#include <utility>

#include <nlohmann/json_fwd.hpp>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "kplace/model/objects.h"

namespace kplace::state {

enum class EventType : uint8_t { kAdded, kModified, kDeleted };
/** "ADDED", "MODIFIED" or "DELETED". */
const char* EventTypeName(EventType t);

/** One change: `object` holds exactly one decoded object (its kind in `kind`). */
struct ClusterEvent {
  EventType type = EventType::kAdded;
  std::string kind;  // Node, Pod, Namespace, Service, PersistentVolume, ...
  ObjectSet object;
  std::string where;  // "file:line", for messages

  /** namespace/name of the object ("name" when cluster-scoped). */
  std::string Key() const;
};

/** An event of `type` for the single object in `object` (which must hold exactly one). */
absl::StatusOr<ClusterEvent> MakeEvent(EventType type, ObjectSet object, std::string where = "");
/** The event of `type` for a copy of `pod`. */
ClusterEvent PodEvent(EventType type, const Pod& pod);
/** The event of `type` for a copy of `node`. */
ClusterEvent NodeEvent(EventType type, const Node& node);

/** @brief Parses one watch line, `{"type":"ADDED|MODIFIED|DELETED","object":{...}}`.
 *  Returns nullopt for a BOOKMARK (it carries no change). Errors name `where` and the field:
 *  a malformed line, an unknown type, an ERROR event, an object that does not decode, a
 *  kind the scheduler does not read, or a List. */
absl::StatusOr<std::optional<ClusterEvent>> ParseWatchEvent(std::string_view line, const std::string& where);
/** The same, also handing over the event's object as parsed (`*object`, unless a BOOKMARK):
 *  for a caller that keeps the JSON, without parsing it again. */
absl::StatusOr<std::optional<ClusterEvent>> ParseWatchEvent(std::string_view line, const std::string& where,
                                                            nlohmann::json* object);

/** Reads watch events from a stream: one JSON object per line, or pretty-printed objects
 *  one after another (`kubectl get --watch --output-watch-events -o json`). */
class WatchReader {
 public:
  WatchReader(std::istream* in, std::string file) : in_(in), file_(std::move(file)) {}
  /** The next event's text in `*text` and "file:line" of its first line in `*where`;
   *  false at the end. An object left open at the end is an error. */
  absl::StatusOr<bool> Next(std::string* text, std::string* where);

 private:
  std::istream* in_;
  std::string file_;
  int64_t line_ = 0;
};

/** Where an object sat in its list before an event changed it: what undoes the event. */
struct Undo {
  ClusterEvent event;  // the event that restores the object (its old version, or a delete)
  size_t index = 0;    // the list position to put it back at
};

/** @brief Applies an event of any kind but Pod to `objects`, as the scheduler cache does:
 *  ADDED appends (AlreadyExists when the key is there), MODIFIED replaces in place,
 *  DELETED erases (NotFound when absent), keeping the order of the others. Nodes are kept
 *  grouped by zone in node-tree order: an added node goes after the last of its zone (new
 *  zones last) and one whose zone changes moves there, as upstream's node tree moves it.
 *  `at`: the position to insert at (an undo). `undo`, when given, gets the inverse. */
absl::Status ApplyToObjects(const ClusterEvent& event, ObjectSet* objects, Undo* undo = nullptr,
                            std::optional<size_t> at = std::nullopt);

}  // namespace kplace::state
