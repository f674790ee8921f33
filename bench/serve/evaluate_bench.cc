// PlacementState::Evaluate (kplace serve's "which of these can start now?") on 5,000 nodes
// over 10 zones with 10,000 bound pods: distinct pods (no two share requests), each decided
// alone, on the engine (omp) and on the scalar reference. Items = pods evaluated; the
// issue's figure is the ratio of the two per-pod times.
#include <benchmark/benchmark.h>

#include <string>
#include <vector>

#include "kplace/common/strings.h"
#include "kplace/serve/placement_state.h"

namespace kplace::serve {
namespace {

std::string Cluster(int nodes) {
  std::string out = R"({"apiVersion":"v1","kind":"List","items":[)";
  for (int i = 0; i < nodes; ++i) {
    out += StrCat(i ? "," : "", R"({"apiVersion":"v1","kind":"Node","metadata":{"name":"node-)", i,
                  R"(","labels":{"kubernetes.io/hostname":"node-)", i, R"(","topology.kubernetes.io/zone":"zone-)", i % 10,
                  R"("}},"status":{"allocatable":{"cpu":"8","memory":"32Gi","pods":"110"}}})");
  }
  for (int i = 0; i < 2 * nodes; ++i) {
    out += StrCat(R"(,{"apiVersion":"v1","kind":"Pod","metadata":{"name":"bound-)", i, R"(","namespace":"bench","labels":{"app":"a)",
                  i % 7, R"("}},"spec":{"nodeName":"node-)", i % nodes,
                  R"(","containers":[{"name":"c","image":"pause","resources":{"requests":{"cpu":"500m","memory":"1Gi"}}}]}})");
  }
  return out + "]}";
}

// Distinct requests (each fits some node) and every fifth pod with a zone selector: no two
// pods share a signature.
std::string Pods(int n) {
  std::string out = R"({"apiVersion":"v1","kind":"List","items":[)";
  for (int k = 0; k < n; ++k) {
    out += StrCat(k ? "," : "", R"({"apiVersion":"v1","kind":"Pod","metadata":{"name":"q-)", k,
                  R"(","namespace":"bench"},"spec":{)",
                  k % 5 == 0 ? StrCat(R"("nodeSelector":{"topology.kubernetes.io/zone":"zone-)", k % 10, R"("},)") : "",
                  R"("containers":[{"name":"c","image":"pause","resources":{"requests":{"cpu":")", 100 + k % 3000,
                  R"(m","memory":")", 64 + k, R"(Mi"}}}]}})");
  }
  return out + "]}";
}

void BM_Evaluate(benchmark::State& state) {
  cycle::Options options;
  options.reference = state.range(0) == 1;
  const int pods = static_cast<int>(state.range(1));
  static const std::string cluster = Cluster(5000);
  const std::string request = Pods(pods);
  PlacementState s(options);
  if (!s.Reset(cluster, "").ok()) return state.SkipWithError("Reset failed");
  for (auto _ : state) {
    auto r = s.Evaluate(request, std::nullopt);
    if (!r.ok() || static_cast<int>(r->placements.size()) != pods) return state.SkipWithError("Evaluate failed");
    benchmark::DoNotOptimize(r->placements.data());
  }
  state.SetItemsProcessed(static_cast<int64_t>(pods) * state.iterations());
  state.SetLabel(options.reference ? "reference" : "engine");
}
// {reference?, pods}: the reference takes seconds per thousand pods, so it evaluates fewer.
BENCHMARK(BM_Evaluate)->Args({0, 10000})->Args({1, 1000})->Iterations(1)->Unit(benchmark::kMillisecond)->UseRealTime();

// PlacementState::Apply (kplace serve's Apply) of `events` watch events: bound pods ADDED on
// the 5,000-node cluster, in one call (all or nothing). Items = events applied.
void BM_Apply(benchmark::State& state) {
  const int n = static_cast<int>(state.range(0));
  static const std::string cluster = Cluster(5000);
  std::vector<std::string> events;
  for (int k = 0; k < n; ++k) {
    events.push_back(StrCat(R"({"type":"ADDED","object":{"apiVersion":"v1","kind":"Pod","metadata":{"name":"ev-)", k,
                            R"(","namespace":"bench","labels":{"app":"e)", k % 5, R"("}},"spec":{"nodeName":"node-)",
                            k % 5000, R"(","containers":[{"name":"c","image":"pause","resources":{"requests":{"cpu":"10m","memory":"16Mi"}}}]}}})"));
  }
  for (auto _ : state) {
    state.PauseTiming();
    PlacementState s{cycle::Options{}};
    if (!s.Reset(cluster, "").ok()) return state.SkipWithError("Reset failed");
    state.ResumeTiming();
    if (!s.Apply(events, std::nullopt).ok()) return state.SkipWithError("Apply failed");
  }
  state.SetItemsProcessed(static_cast<int64_t>(n) * state.iterations());
}
BENCHMARK(BM_Apply)->Arg(20000)->Iterations(3)->Unit(benchmark::kMillisecond)->UseRealTime();

}  // namespace
}  // namespace kplace::serve
