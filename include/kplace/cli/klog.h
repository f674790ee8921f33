#pragma once
// kube-scheduler's -v=10 score lines in klog's text format, for `kplace explain --klog`.
#include <chrono>
#include <cstdint>
#include <string>
#include <vector>

#include "kplace/cycle/scheduler.h"

namespace kplace::cli {

/** Where upstream logs a line: the source file's base name and line. */
struct KlogSite {
  const char* file;
  int line;
};

/** prioritizeNodes' two V(10) calls in pkg/scheduler/schedule_one.go (kubernetes/kubernetes
 *  at 003b4460edb52bc9a9fe6cf54294e5b3e4681610). */
constexpr KlogSite kPluginScoredSite{"schedule_one.go", 830};
constexpr KlogSite kFinalScoreSite{"schedule_one.go", 898};

/** klog's header, "Lmmdd hh:mm:ss.uuuuuu ttttttt file:line] ", in local time with the
 *  thread id right-aligned in seven columns (klog writes its pid there). */
std::string KlogHeader(char severity, std::chrono::system_clock::time_point when, int64_t tid, const KlogSite& site);

/** One cycle's prioritizeNodes lines, each with its header and a newline: "Plugin scored node
 *  for pod" per scored node and plugin (the weighted score; PreScore-skipped plugins have
 *  none), then "Calculated node's final score for pod" per node. None when nothing was
 *  scored (one feasible node, or none). */
std::vector<std::string> KlogScoreLines(const cycle::Placement& p, std::chrono::system_clock::time_point when,
                                        int64_t tid);

}  // namespace kplace::cli
