#pragma once
// Runs a workload on the engine and on the scalar reference in one process, checks that
// their placements are identical, and measures both.
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "kplace/bench/workload.h"
#include "kplace/cycle/scheduler.h"

namespace kplace::bench {

struct RunStats {
  std::string side;  // "engine (omp)", "reference"
  int64_t pods = 0, scheduled = 0;
  double seconds = 0;
  double pods_per_second = 0;
  double p50_us = 0, p90_us = 0, p99_us = 0;
};

struct BenchResult {
  std::string workload;
  int32_t nodes = 0;
  std::vector<std::string> missing_plugins;  // default plugins not built on both sides
  RunStats engine, reference;
  double speedup = 0;  // engine pods/s over reference pods/s
  int64_t mismatches = 0;
  std::string first_mismatch;
};

struct BenchOptions {
  engine::Backend backend = engine::Backend::kOmp;
  bool run_reference = true;
  /** Called with (phase, done, total) now and then; may be empty. */
  std::function<void(const std::string&, int64_t, int64_t)> progress;
};

/** @brief Builds the workload's cluster, places its init pods, then schedules the measured
 *  pods on the engine and on the reference from the same starting state. */
absl::StatusOr<BenchResult> RunWorkload(const Workload& w, const BenchOptions& options);

}  // namespace kplace::bench
