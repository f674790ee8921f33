// PodTopologySpread per pod on 5,000 nodes as existing pods of the spread groups (each
// carrying the same constraint) grow from 0 to 100,000: kernels (omp, and cuda when built
// and a device is present) against the scalar reference. One iteration = one pod's
// PreFilter, Filter on every node, PreScore, Score and NormalizeScore on the feasible
// nodes; the same pod repeats (a replica of an existing group).
#include <benchmark/benchmark.h>

#include "bench/plugin_harness.h"
#include "kplace/bench/sweep.h"
#include "kplace/engine/framework.h"

namespace kplace::bench {
namespace {

void BM_PodTopologySpreadPerPodOmp(benchmark::State& state, SweepKind kind) {
  RunSweepPodBenchmark(state, "PodTopologySpread", kind, 0);
}
#ifdef KPLACE_HAVE_CUDA
void BM_PodTopologySpreadPerPodCuda(benchmark::State& state, SweepKind kind) {
  RunSweepPodBenchmark(state, "PodTopologySpread", kind, 1);
}
#endif
void BM_PodTopologySpreadPerPodReference(benchmark::State& state, SweepKind kind) {
  RunSweepPodBenchmark(state, "PodTopologySpread", kind, 2);
}

#define KPLACE_PTS_BENCH(fn) \
  BENCHMARK_CAPTURE(fn, RequiredSpreadZone, SweepKind::kRequiredSpread) \
      ->Arg(0)->Arg(1000)->Arg(10000)->Arg(100000)->Unit(benchmark::kMillisecond)->UseRealTime(); \
  BENCHMARK_CAPTURE(fn, PreferredSpreadHostname, SweepKind::kPreferredSpread) \
      ->Arg(0)->Arg(1000)->Arg(10000)->Arg(100000)->Unit(benchmark::kMillisecond)->UseRealTime()

KPLACE_PTS_BENCH(BM_PodTopologySpreadPerPodOmp);
#ifdef KPLACE_HAVE_CUDA
KPLACE_PTS_BENCH(BM_PodTopologySpreadPerPodCuda);
#endif
KPLACE_PTS_BENCH(BM_PodTopologySpreadPerPodReference);

}  // namespace
}  // namespace kplace::bench
