#pragma once
// `kplace bench --through serve` (src/cli/bench_serve.cc).
#include <cstdint>

#include "kplace/bench/runner.h"
#include "kplace/bench/workload.h"

namespace kplace::cli {

/** @brief Schedules `w`'s measured pods in process and through a `kplace serve` started in
 *  this process on loopback (COMMIT requests of `request_pods`), from the same state, and
 *  prints both rates and whether every placement agrees. 0 when they agree, 1 otherwise or
 *  on an error (printed). */
int RunThroughServe(const bench::Workload& w, const bench::BenchOptions& options, int64_t request_pods);

}  // namespace kplace::cli
