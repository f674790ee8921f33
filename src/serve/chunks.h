#pragma once
// Streamed replies (SnapshotStream, EvaluateStream): a reply cut into messages no larger
// than the client asked for, so that no client has to raise gRPC's 4 MiB receive limit,
// whatever the cluster's size or an explanation's length.
#include <cstddef>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "absl/status/statusor.h"
#include "kplace/v1/placement.pb.h"

namespace kplace::serve {

inline constexpr int32_t kDefaultChunkBytes = 1 << 20;
inline constexpr int32_t kMinChunkBytes = 4096;

/** @brief The largest message of a stream: `requested` bytes (0: kDefaultChunkBytes),
 *  refused (InvalidArgument naming `field`) below kMinChunkBytes or above `max` (the
 *  server's message limit). */
absl::StatusOr<size_t> ChunkBytes(std::string_view field, int32_t requested, int32_t max);

/** How many bytes of `text`, at most `max_bytes`, end on a UTF-8 character boundary
 *  (proto3 strings must stay valid UTF-8 piece by piece). */
size_t Utf8Prefix(std::string_view text, size_t max_bytes);

/** Hands a stream's messages on one behind, so that the last one can say it is last.
 *  `write` returns false when the client has gone: nothing more is written. */
template <typename Chunk>
class LastMarked {
 public:
  explicit LastMarked(std::function<bool(const Chunk&)> write) : write_(std::move(write)) {}
  /** Queues `chunk`; writes the one before it. False once the client has gone. */
  bool Push(Chunk chunk) {
    if (pending_ && !(ok_ = ok_ && write_(*pending_))) return false;
    pending_ = std::move(chunk);
    return true;
  }
  /** Writes the last chunk marked last; false when the client has gone. */
  bool Finish() {
    if (!pending_) return ok_;
    pending_->set_last(true);
    ok_ = ok_ && write_(*pending_);
    pending_.reset();
    return ok_;
  }

 private:
  std::function<bool(const Chunk&)> write_;
  std::optional<Chunk> pending_;
  bool ok_ = true;
};

/** @brief Cuts a v1 List (Snapshot's) into Lists of at most `max_bytes` of message each,
 *  items in order (an item larger than that goes alone), and pushes them as chunks of
 *  `revision` and `instance`; at least one chunk, the last marked. False when the client
 *  has gone. */
bool StreamList(const nlohmann::json& list, uint64_t revision, const std::string& instance, size_t max_bytes,
                LastMarked<v1::SnapshotChunk>& out);

/** @brief Packs `results` in order into chunks of at most `max_bytes` each, whole results
 *  together; a result whose explanation alone is too large carries what fits and the rest
 *  follows in `explanation_continued` chunks. At least one chunk, the last marked. False
 *  when the client has gone. */
bool StreamResults(std::vector<v1::PodPlacement> results, uint64_t revision, const std::string& instance,
                   size_t max_bytes, LastMarked<v1::EvaluateChunk>& out);

}  // namespace kplace::serve
