#pragma once
// Reading a user's input file whole, bounded: every file the CLI reads (snapshots, pods,
// watch events, configurations, conformance cases, workloads, TLS and token files) comes
// through ReadInputFile, so no input can make kplace read forever or without bound.
#include <cstddef>
#include <cstdint>
#include <string>

#include "absl/status/statusor.h"

namespace kplace {

/** The most bytes kplace reads from one input file or stdin: 2 GiB (a snapshot of 100,000
 *  nodes and their pods is a few hundred MB). */
constexpr int64_t kMaxInputBytes = int64_t{2} << 30;
/** How long a named pipe may stay without a writer before reading it gives up. */
constexpr int kPipeWriterTimeoutMs = 30000;
/** Bytes of capacity ReadInputFile leaves past the text's end (simdjson reads up to 64 bytes
 *  past it; DecodeFile parses the text in place). */
constexpr size_t kInputPadding = 64;

/** Limits of one read; the defaults are what the CLI uses. */
struct InputLimits {
  int64_t max_bytes = kMaxInputBytes;
  int pipe_writer_timeout_ms = kPipeWriterTimeoutMs;
};

/** @brief Reads all of `path` into a string with kInputPadding bytes of capacity past its
 *  end. `-` is stdin, read to its end (as any filter does: no timeout). A regular file is
 *  refused by its size before reading; anything else (a pipe, /dev/zero, a terminal) is read
 *  in chunks and refused once it passes `max_bytes`, so memory stays within the limit. A
 *  named pipe (or /dev/fd/N) that no process writes to is refused after
 *  `pipe_writer_timeout_ms`; once a writer has it open, reading waits for its end.
 *  @return NotFound when `path` cannot be opened; InvalidArgument for a directory;
 *  ResourceExhausted past `max_bytes`; DeadlineExceeded for a pipe without a writer;
 *  Internal for a read error. Each message starts with `path`. */
absl::StatusOr<std::string> ReadInputFile(const std::string& path, const InputLimits& limits = {});

}  // namespace kplace
