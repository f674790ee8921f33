#pragma once
// A progress report for long runs (kplace bench, the sweeps): on a terminal one line that
// redraws itself, "label [=========>          ] 45% 450/1000 pods 3.2 s"; elsewhere (a pipe,
// a log, CI) a plain line per report, as kplace always printed.
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <string>

namespace kplace::bench {

class ProgressLine {
 public:
  /** Draws on `out`; a bar when `out` is a terminal (isatty) and KPLACE_PROGRESS is not
   *  "plain", else plain lines. */
  explicit ProgressLine(std::FILE* out = stderr);
  ~ProgressLine() { Clear(); }
  ProgressLine(const ProgressLine&) = delete;
  ProgressLine& operator=(const ProgressLine&) = delete;

  bool tty() const { return tty_; }
  /** Seconds between the reports a caller should make: 0.1 for a bar, 2 for plain lines. */
  double interval_seconds() const { return tty_ ? 0.1 : 2.0; }
  /** Reports `done` of `total` `unit` for `label`: the bar redrawn, or one plain line
   *  ("  label: done/total unit"). */
  void Update(const std::string& label, int64_t done, int64_t total, const char* unit = "pods");
  /** Erases the bar (call before printing anything else to the same terminal); no-op when
   *  plain or nothing is drawn. */
  void Clear();

  /** The bar itself, `width` cells between brackets: "[====>     ]". */
  static std::string Bar(int64_t done, int64_t total, int width);

 private:
  std::FILE* out_;
  bool tty_ = false;
  bool drawn_ = false;
  std::string label_;
  std::chrono::steady_clock::time_point start_;
};

}  // namespace kplace::bench
