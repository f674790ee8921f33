// Fuzz target for the conformance-case loader (kplace/conform/case.h): a case file's bytes
// in, through LoadCase itself (read, parse, DecodeCase), a Status out, never a crash.
#include <sys/mman.h>
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <string>

#include "kplace/conform/case.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  // LoadCase takes a path: the input goes into one in-memory file, rewritten each time, so
  // the loader's own reading and parsing run as `kplace conform` runs them.
  static const int fd = memfd_create("fuzz-case.json", 0);
  static const std::string path = "/proc/self/fd/" + std::to_string(fd);
  if (fd < 0 || ftruncate(fd, 0) != 0) __builtin_trap();
  for (size_t done = 0; done < size;) {
    ssize_t n = pwrite(fd, data + done, size - done, static_cast<off_t>(done));
    if (n <= 0) __builtin_trap();
    done += static_cast<size_t>(n);
  }
  auto c = kplace::conform::LoadCase(path);
  if (!c.ok()) return 0;
  // What the runner relies on in a decoded case.
  if (c->name.empty() || c->file != path) __builtin_trap();
  if (!c->default_profile && c->plugins.empty() && !c->preemption) __builtin_trap();
  if (c->preemption && c->preemption->entry.empty()) __builtin_trap();
  return 0;
}
