// Fuzz target for watch events (kplace/state/event.h): the bytes as one event line for
// ParseWatchEvent, then as a stream for WatchReader, each event it yields parsed and
// applied to an object set with its undo, a Status out, never a crash.
#include <cstddef>
#include <cstdint>
#include <sstream>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

#include "kplace/model/objects.h"
#include "kplace/state/event.h"

namespace {

// Stops a stream of many tiny events from turning one input into a long run.
constexpr int kMaxEvents = 64;

size_t CountObjects(const kplace::ObjectSet& o) {
  return o.nodes.size() + o.pods.size() + o.namespaces.size() + o.workloads.size() + o.storage.size() +
         o.configs.size() + o.pdbs.size() + o.priority_classes.size();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using kplace::state::ClusterEvent;
  std::string_view text(reinterpret_cast<const char*>(data), size);
  // One line, as a caller with its own framing (the service) hands it over.
  nlohmann::json object;
  auto line = kplace::state::ParseWatchEvent(text, "fuzz:1", &object);
  if (line.ok() && line->has_value()) {
    const ClusterEvent& e = **line;
    if (CountObjects(e.object) != 1 || e.kind.empty() || !object.is_object()) __builtin_trap();
    (void)e.Key();
  }

  // A stream, as `kplace schedule --events` reads one.
  std::istringstream in{std::string(text)};
  kplace::state::WatchReader reader(&in, "fuzz");
  kplace::ObjectSet objects;
  std::string event_text, where;
  for (int n = 0; n < kMaxEvents; ++n) {
    auto more = reader.Next(&event_text, &where);
    if (!more.ok() || !*more) break;
    auto parsed = kplace::state::ParseWatchEvent(event_text, where);
    if (!parsed.ok() || !parsed->has_value()) continue;
    const ClusterEvent& e = **parsed;
    if (CountObjects(e.object) != 1) __builtin_trap();
    (void)kplace::state::EventTypeName(e.type);
    // Pods are the scheduler's; everything else lands in the object set. An applied event's
    // undo must apply and leave as many objects as before (transactions rely on it), and
    // the event then applies again as it did the first time.
    const size_t before = CountObjects(objects);
    kplace::state::Undo undo;
    if (!kplace::state::ApplyToObjects(e, &objects, &undo).ok()) continue;
    if (!kplace::state::ApplyToObjects(undo.event, &objects, nullptr, undo.index).ok()) __builtin_trap();
    if (CountObjects(objects) != before) __builtin_trap();
    if (!kplace::state::ApplyToObjects(e, &objects).ok()) __builtin_trap();
  }
  return 0;
}
