// InterPodAffinity per pod on 5,000 nodes as existing pods carrying affinity terms grow
// (0 to 100,000): kernels (omp, and cuda when built and a device is present) against the
// scalar reference. One iteration = one pod's PreFilter, Filter on every node, PreScore,
// Score and NormalizeScore on the feasible nodes. The same pod (a replica of an existing
// group) repeats, so the engine's per-term-set match table is built on the first
// iteration and reused: the steady state of a deployment's replicas. `kplace bench
// --sweep affinity` measures the other case, a fresh term set per pod, through the cycle.
#include <benchmark/benchmark.h>

#include "bench/plugin_harness.h"
#include "kplace/bench/sweep.h"
#include "kplace/engine/framework.h"

namespace kplace::bench {
namespace {

void BM_InterPodAffinityPerPodOmp(benchmark::State& state, SweepKind kind) {
  RunSweepPodBenchmark(state, "InterPodAffinity", kind, 0);
}
#ifdef KPLACE_HAVE_CUDA
void BM_InterPodAffinityPerPodCuda(benchmark::State& state, SweepKind kind) {
  RunSweepPodBenchmark(state, "InterPodAffinity", kind, 1);
}
#endif
void BM_InterPodAffinityPerPodReference(benchmark::State& state, SweepKind kind) {
  RunSweepPodBenchmark(state, "InterPodAffinity", kind, 2);
}

#define KPLACE_IPA_BENCH(fn) \
  BENCHMARK_CAPTURE(fn, RequiredAffinity, SweepKind::kRequiredAffinity) \
      ->Arg(0)->Arg(1000)->Arg(10000)->Arg(100000)->Unit(benchmark::kMillisecond)->UseRealTime(); \
  BENCHMARK_CAPTURE(fn, RequiredAntiAffinity, SweepKind::kRequiredAntiAffinity) \
      ->Arg(0)->Arg(1000)->Arg(10000)->Arg(100000)->Unit(benchmark::kMillisecond)->UseRealTime(); \
  BENCHMARK_CAPTURE(fn, PreferredAffinity, SweepKind::kPreferredAffinity) \
      ->Arg(0)->Arg(1000)->Arg(10000)->Arg(100000)->Unit(benchmark::kMillisecond)->UseRealTime(); \
  BENCHMARK_CAPTURE(fn, PreferredAntiAffinity, SweepKind::kPreferredAntiAffinity) \
      ->Arg(0)->Arg(1000)->Arg(10000)->Arg(100000)->Unit(benchmark::kMillisecond)->UseRealTime()

KPLACE_IPA_BENCH(BM_InterPodAffinityPerPodOmp);
#ifdef KPLACE_HAVE_CUDA
KPLACE_IPA_BENCH(BM_InterPodAffinityPerPodCuda);
#endif
KPLACE_IPA_BENCH(BM_InterPodAffinityPerPodReference);

}  // namespace
}  // namespace kplace::bench
