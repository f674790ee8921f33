#include "kplace/model/input_file.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <thread>

#include "kplace/common/status.h"
#include "kplace/common/strings.h"

namespace kplace {
namespace {

// Closes the descriptor it was given when it goes.
class Fd {
 public:
  explicit Fd(int fd) : fd_(fd) {}
  ~Fd() {
    if (fd_ >= 0) ::close(fd_);
  }
  Fd(const Fd&) = delete;
  Fd& operator=(const Fd&) = delete;
  int get() const { return fd_; }

 private:
  int fd_;
};

std::string Bytes(int64_t n) {
  if (n % (int64_t{1} << 30) == 0) return StrCat(n >> 30, " GiB");
  if (n % (int64_t{1} << 20) == 0) return StrCat(n >> 20, " MiB");
  return StrCat(n, " bytes");
}

absl::Status TooLarge(const std::string& name, int64_t max_bytes) {
  return absl::ResourceExhaustedError(
      StrCat(name, ": larger than ", Bytes(max_bytes), ", the most kplace reads from one input"));
}

// Reads `fd` to its end after `*out` (what was read already), refusing more than `max_bytes`
// in all. The buffer grows by doubling up to max_bytes + 1 (one byte more says the input is
// larger), with kInputPadding bytes of capacity past the text.
absl::Status ReadAll(int fd, const std::string& name, int64_t max_bytes, int64_t size_hint, std::string* out) {
  const size_t limit = static_cast<size_t>(max_bytes) + 1;
  size_t used = out->size();
  if (used >= limit) return TooLarge(name, max_bytes);
  for (;;) {
    if (used == out->size()) {
      const size_t want = size_hint > 0 && used == 0 ? static_cast<size_t>(size_hint) + 1 : std::max<size_t>(2 * used, 1 << 16);
      const size_t size = std::min(want, limit);
      out->reserve(size + kInputPadding);
      out->resize(size);
    }
    const ssize_t n = ::read(fd, out->data() + used, out->size() - used);
    if (n < 0) {
      if (errno == EINTR) continue;
      return absl::InternalError(StrCat(name, ": cannot read: ", std::strerror(errno)));
    }
    if (n == 0) break;
    used += static_cast<size_t>(n);
    if (used >= limit) return TooLarge(name, max_bytes);
  }
  out->resize(used);
  return absl::OkStatus();
}

// The first bytes of a named pipe opened without blocking. Its reader sees the end (0) while
// no process has it open for writing, and EAGAIN once one has but has not written yet: the
// first waits, up to `timeout_ms`; the second, or any data, is a writer, which the caller
// then reads to its end.
absl::Status AwaitWriter(int fd, const std::string& name, int timeout_ms, std::string* out) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(timeout_ms);
  char buf[1 << 16];
  for (;;) {
    const ssize_t n = ::read(fd, buf, sizeof buf);
    if (n > 0) {
      out->assign(buf, static_cast<size_t>(n));
      return absl::OkStatus();
    }
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) return absl::OkStatus();
    if (n < 0 && errno != EINTR) return absl::InternalError(StrCat(name, ": cannot read: ", std::strerror(errno)));
    if (std::chrono::steady_clock::now() >= deadline) {
      return absl::DeadlineExceededError(
          StrCat(name, ": a named pipe that no process wrote to or held open for ",
                 timeout_ms % 1000 == 0 ? StrCat(timeout_ms / 1000, " s") : StrCat(timeout_ms, " ms")));
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
}

}  // namespace

absl::StatusOr<std::string> ReadInputFile(const std::string& path, const InputLimits& limits) {
  std::string out;
  if (path == "-") {
    KPLACE_RETURN_IF_ERROR(ReadAll(STDIN_FILENO, "stdin", limits.max_bytes, 0, &out));
    return out;
  }
  // Without O_NONBLOCK, opening a named pipe waits for a writer, forever if none comes.
  const Fd fd(::open(path.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC));
  if (fd.get() < 0) return absl::NotFoundError(StrCat(path, ": cannot open file (", std::strerror(errno), ")"));
  struct stat st;
  if (::fstat(fd.get(), &st) != 0) return absl::InternalError(StrCat(path, ": cannot stat: ", std::strerror(errno)));
  if (S_ISDIR(st.st_mode)) return absl::InvalidArgumentError(StrCat(path, ": is a directory, not a file"));
  if (S_ISREG(st.st_mode) && st.st_size > limits.max_bytes) return TooLarge(path, limits.max_bytes);
  if (S_ISFIFO(st.st_mode)) KPLACE_RETURN_IF_ERROR(AwaitWriter(fd.get(), path, limits.pipe_writer_timeout_ms, &out));
  const int flags = ::fcntl(fd.get(), F_GETFL);
  if (flags < 0 || ::fcntl(fd.get(), F_SETFL, flags & ~O_NONBLOCK) != 0) {
    return absl::InternalError(StrCat(path, ": cannot set blocking reads: ", std::strerror(errno)));
  }
  KPLACE_RETURN_IF_ERROR(ReadAll(fd.get(), path, limits.max_bytes, S_ISREG(st.st_mode) ? st.st_size : 0, &out));
  return out;
}

}  // namespace kplace
