// Fuzz target for the service's requests (kplace/serve/placement_state.h), transport aside:
// the input is up to five parts, separated by lines of "%%": a cluster for Reset, a
// KubeSchedulerConfiguration for it, watch events for Apply (one per line), and pods for
// Schedule and for Evaluate. Besides "a Status out, never a crash", what every client relies
// on must hold: a refused call changes nothing, a dry run decides as the commit that follows
// it and leaves the state as it was, Evaluate changes nothing, and a Snapshot is a cluster
// Reset accepts.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <string_view>
#include <vector>

#include "kplace/serve/placement_state.h"

namespace {

// Keeps one input from turning into a long run (each event and pod costs a cycle's work).
constexpr size_t kMaxEvents = 64;
constexpr size_t kMaxParts = 5;

std::vector<std::string_view> Split(std::string_view text, std::string_view sep, size_t max_parts) {
  std::vector<std::string_view> parts;
  while (parts.size() + 1 < max_parts) {
    size_t at = text.find(sep);
    if (at == std::string_view::npos) break;
    parts.push_back(text.substr(0, at));
    text.remove_prefix(at + sep.size());
  }
  parts.push_back(text);
  return parts;
}

std::string Placements(const kplace::serve::ScheduleResult& r) {
  std::string out;
  for (const auto& p : r.placements) {
    out += p.pod + "@" + p.node + "/" + std::to_string(static_cast<int>(p.code)) + "/" + std::to_string(p.feasible) +
           "/" + std::to_string(p.score) + ":" + p.message + "\n";
  }
  return out;
}

void Require(bool ok) {
  if (!ok) __builtin_trap();
}

}  // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  // One engine thread: parallel regions only add scheduling noise to each input's run.
  setenv("OMP_NUM_THREADS", "1", 1);
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using kplace::serve::PlacementState;
  std::string_view text(reinterpret_cast<const char*>(data), size);
  std::vector<std::string_view> parts = Split(text, "\n%%\n", kMaxParts);
  parts.resize(kMaxParts);

  PlacementState state;
  auto reset = state.Reset(parts[0], parts[1]);
  if (!reset.ok()) {
    Require(!state.ready() && state.revision() == 0);
    return 0;
  }
  Require(state.ready() && state.revision() == reset->revision);

  std::vector<std::string_view> events = Split(parts[2], "\n", kMaxEvents);
  if (events.size() == kMaxEvents) events.pop_back();  // the unsplit rest
  while (!events.empty() && events.back().empty()) events.pop_back();
  if (!events.empty()) {
    const std::string before = state.Snapshot().dump();
    const uint64_t revision = state.revision();
    auto applied = state.Apply(events, std::nullopt);
    if (applied.ok()) {
      Require(*applied == revision + 1 && state.revision() == *applied);
    } else {
      Require(state.revision() == revision && state.Snapshot().dump() == before);
    }
  }

  if (!parts[3].empty()) {
    const std::string before = state.Snapshot().dump();
    const uint64_t revision = state.revision();
    auto dry = state.Schedule(parts[3], /*dry_run=*/true, std::nullopt);
    Require(state.revision() == revision && state.Snapshot().dump() == before);
    auto commit = state.Schedule(parts[3], /*dry_run=*/false, revision);
    Require(dry.ok() == commit.ok());
    if (commit.ok()) {
      Require(Placements(*dry) == Placements(*commit));
    } else {
      Require(state.revision() == revision && state.Snapshot().dump() == before);
    }
  }

  if (!parts[4].empty()) {
    const std::string before = state.Snapshot().dump();
    const uint64_t revision = state.revision();
    (void)state.Evaluate(parts[4], std::nullopt);
    Require(state.revision() == revision && state.Snapshot().dump() == before);
  }

  // Snapshot's List goes back into Reset (under the same configuration).
  PlacementState again;
  auto back = again.Reset(state.Snapshot().dump(), parts[1]);
  Require(back.ok());
  return 0;
}
