#include "src/serve/chunks.h"

#include <algorithm>

#include "absl/status/status.h"
#include "kplace/common/strings.h"

namespace kplace::serve {
namespace {

// A length-delimited field's tag and length prefix at most: one byte of tag, five of varint.
constexpr size_t kFieldOverhead = 6;

// A chunk's own fields (revision, instance, index, last) and its payload's prefix.
size_t HeaderBytes(const std::string& instance) { return 32 + instance.size(); }

}  // namespace

absl::StatusOr<size_t> ChunkBytes(std::string_view field, int32_t requested, int32_t max) {
  if (requested == 0) return std::min(kDefaultChunkBytes, max);
  if (requested < kMinChunkBytes || requested > max) {
    return absl::InvalidArgumentError(
        StrCat(field, ": ", requested, " is out of range (0 for 1 MiB, or ", kMinChunkBytes, " to ", max, " bytes)"));
  }
  return static_cast<size_t>(requested);
}

size_t Utf8Prefix(std::string_view text, size_t max_bytes) {
  size_t cut = std::min(text.size(), max_bytes);
  // Back off over continuation bytes (10xxxxxx) to the start of the character they belong to.
  while (cut > 0 && cut < text.size() && (static_cast<unsigned char>(text[cut]) & 0xC0) == 0x80) --cut;
  return cut;
}

bool StreamList(const nlohmann::json& list, uint64_t revision, const std::string& instance, size_t max_bytes,
                LastMarked<v1::SnapshotChunk>& out) {
  // The same text Snapshot's dump gives: the List's keys in nlohmann's (sorted) order.
  static constexpr std::string_view kOpen = R"({"apiVersion":"v1","items":[)";
  static constexpr std::string_view kClose = R"(],"kind":"List"})";
  const size_t room = max_bytes - std::min(max_bytes, HeaderBytes(instance) + kOpen.size() + kClose.size());
  int32_t index = 0;
  std::string objects(kOpen);
  size_t items = 0;
  auto push = [&] {
    objects.append(kClose);
    v1::SnapshotChunk c;
    c.set_revision(revision);
    c.set_instance(instance);
    c.set_index(index++);
    c.set_objects(std::move(objects));
    objects.assign(kOpen);
    items = 0;
    return out.Push(std::move(c));
  };
  const auto it = list.find("items");
  if (it != list.end()) {
    for (const nlohmann::json& item : *it) {
      const std::string text = item.dump();
      const size_t grown = objects.size() - kOpen.size() + (items > 0) + text.size();
      if (items > 0 && grown > room && !push()) return false;
      if (items > 0) objects.push_back(',');
      objects.append(text);
      ++items;
    }
  }
  if ((items > 0 || index == 0) && !push()) return false;
  return out.Finish();
}

bool StreamResults(std::vector<v1::PodPlacement> results, uint64_t revision, const std::string& instance,
                   size_t max_bytes, LastMarked<v1::EvaluateChunk>& out) {
  const size_t room = max_bytes - std::min(max_bytes, HeaderBytes(instance));
  v1::EvaluateChunk chunk;
  size_t used = 0;
  bool pushed = false;
  auto fresh = [&] {
    chunk.Clear();
    chunk.set_revision(revision);
    chunk.set_instance(instance);
    used = 0;
  };
  auto push = [&] {
    const bool ok = out.Push(std::move(chunk));
    pushed = true;
    fresh();
    return ok;
  };
  fresh();
  for (v1::PodPlacement& r : results) {
    const size_t size = r.ByteSizeLong() + kFieldOverhead;
    if (used > 0 && used + size > room && !push()) return false;
    if (size <= room) {
      used += size;
      *chunk.add_results() = std::move(r);
      continue;
    }
    // Alone and still too large: the explanation is cut where the room ends.
    std::string explanation = std::move(*r.mutable_explanation());
    r.clear_explanation();
    const size_t rest = room - std::min(room, r.ByteSizeLong() + 2 * kFieldOverhead);
    size_t at = Utf8Prefix(explanation, rest);
    r.set_explanation(explanation.substr(0, at));
    *chunk.add_results() = std::move(r);
    if (!push()) return false;
    while (at < explanation.size()) {
      const size_t n = Utf8Prefix(std::string_view(explanation).substr(at), std::max<size_t>(room - kFieldOverhead, 4));
      chunk.set_explanation_continued(explanation.substr(at, n));
      at += n;
      if (!push()) return false;
    }
  }
  if ((chunk.results_size() > 0 || !pushed) && !push()) return false;
  return out.Finish();
}

}  // namespace kplace::serve
