#include "kplace/bench/progress.h"

#include <sys/ioctl.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>

namespace kplace::bench {

ProgressLine::ProgressLine(std::FILE* out) : out_(out), start_(std::chrono::steady_clock::now()) {
  const char* mode = std::getenv("KPLACE_PROGRESS");
  tty_ = out_ && isatty(fileno(out_)) && !(mode && std::strcmp(mode, "plain") == 0);
}

std::string ProgressLine::Bar(int64_t done, int64_t total, int width) {
  width = std::max(width, 1);
  const double frac = total > 0 ? std::clamp(static_cast<double>(done) / static_cast<double>(total), 0.0, 1.0) : 0.0;
  const int full = static_cast<int>(frac * width);
  std::string bar = "[" + std::string(full, '=');
  if (full < width) bar += '>' + std::string(width - full - 1, ' ');
  return bar + "]";
}

void ProgressLine::Update(const std::string& label, int64_t done, int64_t total, const char* unit) {
  if (!out_) return;
  if (!tty_) {
    std::fprintf(out_, "  %s: %lld/%lld %s\n", label.c_str(), static_cast<long long>(done),
                 static_cast<long long>(total), unit);
    return;
  }
  if (label != label_) {  // a new phase restarts the clock
    label_ = label;
    start_ = std::chrono::steady_clock::now();
  }
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
  struct winsize ws {};
  int columns = ioctl(fileno(out_), TIOCGWINSZ, &ws) == 0 && ws.ws_col > 0 ? ws.ws_col : 80;
  char tail[96];
  std::snprintf(tail, sizeof tail, " %3d%% %lld/%lld %s %.1f s",
                total > 0 ? static_cast<int>(100 * std::min(done, total) / total) : 0, static_cast<long long>(done),
                static_cast<long long>(total), unit, seconds);
  std::string head = label.substr(0, std::max<size_t>(10, columns / 3)) + " ";
  const int width = std::clamp(columns - 1 - static_cast<int>(head.size() + std::strlen(tail)) - 2, 10, 60);
  // \r and erase-to-end-of-line: one line, redrawn in place.
  std::fprintf(out_, "\r%s%s%s\033[K", head.c_str(), Bar(done, total, width).c_str(), tail);
  std::fflush(out_);
  drawn_ = true;
}

void ProgressLine::Clear() {
  if (!tty_ || !drawn_ || !out_) return;
  std::fprintf(out_, "\r\033[K");
  std::fflush(out_);
  drawn_ = false;
}

}  // namespace kplace::bench
