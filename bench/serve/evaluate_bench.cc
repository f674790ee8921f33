// PlacementState::Evaluate (kplace serve's "which of these can start now?") on 5,000 nodes
// over 10 zones with 10,000 bound pods: distinct pods (no two share requests), each decided
// alone, on the engine (omp) and on the scalar reference. Items = pods evaluated; the
// issue's figure is the ratio of the two per-pod times.
#include <benchmark/benchmark.h>
#include <grpcpp/grpcpp.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <memory>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "kplace/common/strings.h"
#include "kplace/cycle/scheduler.h"
#include "kplace/model/decode.h"
#include "kplace/serve/placement_state.h"
#include "kplace/serve/server.h"
#include "kplace/state/event.h"
#include "kplace/v1/placement.grpc.pb.h"

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

// `kplace gen --nodes 5000 --uniform --existing-pods 1000`'s shape: 4 CPU / 32Gi / 110 pods
// over three zones, 1,000 bound pods (SchedulingBasic's cluster).
std::string UniformCluster(int nodes, int existing) {
  std::string out = R"({"apiVersion":"v1","kind":"List","items":[)";
  for (int i = 0; i < nodes; ++i) {
    out += StrCat(i ? "," : "", R"({"apiVersion":"v1","kind":"Node","metadata":{"name":"node-)", i,
                  R"(","labels":{"kubernetes.io/hostname":"node-)", i, R"(","topology.kubernetes.io/zone":"zone-)", i % 3,
                  R"("}},"status":{"allocatable":{"cpu":"4","memory":"32Gi","pods":"110"}}})");
  }
  for (int i = 0; i < existing; ++i) {
    out += StrCat(R"(,{"apiVersion":"v1","kind":"Pod","metadata":{"name":"existing-)", i, R"(","namespace":"default"},)",
                  R"("spec":{"nodeName":"node-)", (i * 7919) % nodes,
                  R"(","containers":[{"name":"c","image":"pause","resources":{"requests":{"cpu":"100m","memory":"500Mi"}}}]}})");
  }
  return out + "]}";
}

// SchedulingBasic's pods (100m CPU / 500Mi), as a client writes a Schedule request.
std::string BasicPods(int n, const std::string& prefix) {
  std::string out = R"({"apiVersion":"v1","kind":"List","items":[)";
  for (int k = 0; k < n; ++k) {
    out += StrCat(k ? "," : "", R"({"apiVersion":"v1","kind":"Pod","metadata":{"name":")", prefix, k,
                  R"(","namespace":"default"},"spec":{"containers":[{"name":"c","image":"pause",)",
                  R"("resources":{"requests":{"cpu":"100m","memory":"500Mi"}}}]}})");
  }
  return out + "]}";
}

// PlacementState::Schedule (kplace serve's Schedule without the transport) of 1,000
// identical pods, DRY_RUN: the request's decode, the cycle and the revert. Items = pods.
void BM_ScheduleDryRun(benchmark::State& state) {
  const int pods = static_cast<int>(state.range(0));
  static const std::string cluster = UniformCluster(5000, 1000);
  const std::string request = BasicPods(pods, "p-");
  PlacementState s{cycle::Options{}};
  if (!s.Reset(cluster, "").ok()) return state.SkipWithError("Reset failed");
  for (auto _ : state) {
    auto r = s.Schedule(request, /*dry_run=*/true, std::nullopt);
    if (!r.ok() || static_cast<int>(r->placements.size()) != pods) return state.SkipWithError("Schedule failed");
    benchmark::DoNotOptimize(r->placements.data());
  }
  state.SetItemsProcessed(static_cast<int64_t>(pods) * state.iterations());
}
BENCHMARK(BM_ScheduleDryRun)->Arg(1000)->Unit(benchmark::kMillisecond)->UseRealTime();

// The same pods decoded once, straight to the scheduler inside a reverted transaction: the
// cycle alone, what BM_ScheduleDryRun adds the request's decode to.
void BM_ScheduleCycleOnly(benchmark::State& state) {
  const int pods = static_cast<int>(state.range(0));
  static const std::string cluster_text = UniformCluster(5000, 1000);
  ObjectSet cluster, request;
  if (!DecodeText(cluster_text, "cluster", &cluster).ok()) return state.SkipWithError("decode failed");
  if (!DecodeText(BasicPods(pods, "p-"), "pods", &request).ok()) return state.SkipWithError("decode failed");
  auto scheduler = cycle::Scheduler::Create(cluster, DefaultSchedulerConfig(), cycle::Options{});
  if (!scheduler.ok()) return state.SkipWithError("Create failed");
  for (auto _ : state) {
    if (!(*scheduler)->state().Begin().ok()) return state.SkipWithError("Begin failed");
    std::vector<cycle::Placement> r = (*scheduler)->ScheduleAll(request.pods);
    benchmark::DoNotOptimize(r.data());
    if (!(*scheduler)->state().Revert().ok()) return state.SkipWithError("Revert failed");
  }
  state.SetItemsProcessed(static_cast<int64_t>(pods) * state.iterations());
}
BENCHMARK(BM_ScheduleCycleOnly)->Arg(1000)->Unit(benchmark::kMillisecond)->UseRealTime();

// A bound pod's ADDED event, the k-th of BM_Apply's.
std::string ApplyEvent(int k) {
  return StrCat(R"({"type":"ADDED","object":{"apiVersion":"v1","kind":"Pod","metadata":{"name":"ev-)", k,
                R"(","namespace":"bench","labels":{"app":"e)", k % 5, R"("}},"spec":{"nodeName":"node-)", k % 5000,
                R"(","containers":[{"name":"c","image":"pause","resources":{"requests":{"cpu":"10m","memory":"16Mi"}}}]}}})");
}

// PlacementState::Apply (kplace serve's Apply) of `events` watch events: bound pods ADDED on
// the 5,000-node cluster, in one call (all or nothing). Items = events applied.
void BM_Apply(benchmark::State& state) {
  const int n = static_cast<int>(state.range(0));
  static const std::string cluster = Cluster(5000);
  std::vector<std::string> events;
  for (int k = 0; k < n; ++k) events.push_back(ApplyEvent(k));
  const std::vector<std::string_view> views(events.begin(), events.end());
  std::unique_ptr<PlacementState> s;  // each iteration's state is dropped with the clock stopped
  for (auto _ : state) {
    state.PauseTiming();
    s = std::make_unique<PlacementState>(cycle::Options{});
    if (!s->Reset(cluster, "").ok()) return state.SkipWithError("Reset failed");
    state.ResumeTiming();
    if (!s->Apply(views, std::nullopt).ok()) return state.SkipWithError("Apply failed");
  }
  state.SetItemsProcessed(static_cast<int64_t>(n) * state.iterations());
}
BENCHMARK(BM_Apply)->Arg(20000)->Iterations(3)->Unit(benchmark::kMillisecond)->UseRealTime();

// The scheduler's share of BM_Apply: the same events decoded before the clock starts and
// handed to Scheduler::Apply one by one inside a transaction. BM_Apply minus this is what
// the service adds (the events' decode, the all-or-none bookkeeping, Snapshot's copy).
void BM_ApplySchedulerOnly(benchmark::State& state) {
  const int n = static_cast<int>(state.range(0));
  static const std::string cluster_text = Cluster(5000);
  ObjectSet cluster;
  if (!DecodeText(cluster_text, "cluster", &cluster).ok()) return state.SkipWithError("decode failed");
  std::vector<state::ClusterEvent> events;
  for (int k = 0; k < n; ++k) {
    auto e = state::ParseWatchEvent(ApplyEvent(k), "bench");
    if (!e.ok() || !*e) return state.SkipWithError("event failed");
    events.push_back(std::move(**e));
  }
  std::unique_ptr<cycle::Scheduler> scheduler;  // dropped with the clock stopped, as BM_Apply's state
  std::vector<state::ClusterEvent> batch;
  for (auto _ : state) {
    state.PauseTiming();
    scheduler.reset();
    auto created = cycle::Scheduler::Create(cluster, DefaultSchedulerConfig(), cycle::Options{});
    if (!created.ok()) return state.SkipWithError("Create failed");
    scheduler = std::move(*created);
    batch = events;
    state.ResumeTiming();
    if (!scheduler->state().Begin().ok()) return state.SkipWithError("Begin failed");
    for (state::ClusterEvent& e : batch) {
      if (!scheduler->state().Apply(std::move(e)).ok()) return state.SkipWithError("Apply failed");
    }
    if (!scheduler->state().Commit().ok()) return state.SkipWithError("Commit failed");
  }
  state.SetItemsProcessed(static_cast<int64_t>(n) * state.iterations());
}
BENCHMARK(BM_ApplySchedulerOnly)->Arg(20000)->Iterations(3)->Unit(benchmark::kMillisecond)->UseRealTime();

// A `kplace serve` on loopback with `replicas`, Reset to UniformCluster(nodes, existing),
// and a client of it; `error` says what failed.
struct Serving {
  Serving(int nodes, int existing, int32_t replicas) {
    ServerOptions o;
    o.listen = "127.0.0.1:0";
    o.replicas = replicas;
    server = LocalServer::Start(o);
    if (!server.ok()) {
      error = "cannot start the server";
      return;
    }
    target = StrCat("127.0.0.1:", (*server)->port());
    stub = v1::Placement::NewStub(grpc::CreateChannel(target, grpc::InsecureChannelCredentials()));
    grpc::ClientContext ctx;
    v1::ResetRequest req;
    req.set_objects(UniformCluster(nodes, existing));
    v1::ResetResponse resp;
    if (!stub->Reset(&ctx, req, &resp).ok()) error = "Reset failed";
  }
  absl::StatusOr<std::unique_ptr<LocalServer>> server;
  std::string target;
  std::unique_ptr<v1::Placement::Stub> stub;
  const char* error = nullptr;
};

// Fits (CanSchedulePod) of one SchedulingBasic pod over every node, through a `kplace serve`
// on loopback: what a Cluster Autoscaler-style client pays per question, transport
// included. Counters: the latency percentiles of the calls, in microseconds.
void BM_ServiceFits(benchmark::State& state) {
  Serving serving(static_cast<int>(state.range(0)), 1000, ServerOptions().replicas);
  if (serving.error) return state.SkipWithError(serving.error);
  auto& stub = serving.stub;
  v1::FitsRequest ask;
  ask.set_pod(R"({"apiVersion":"v1","kind":"Pod","metadata":{"name":"q","namespace":"default"},"spec":{"containers":)"
              R"([{"name":"c","image":"pause","resources":{"requests":{"cpu":"100m","memory":"500Mi"}}}]}})");
  std::vector<double> micros;
  for (auto _ : state) {
    const auto start = std::chrono::steady_clock::now();
    grpc::ClientContext ctx;
    v1::FitsResponse resp;
    if (!stub->Fits(&ctx, ask, &resp).ok() || resp.fits_size() != state.range(0)) return state.SkipWithError("Fits failed");
    micros.push_back(std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - start).count());
  }
  std::sort(micros.begin(), micros.end());
  auto at = [&](double q) { return micros[std::min(micros.size() - 1, static_cast<size_t>(q * micros.size()))]; };
  state.counters["p50_us"] = at(0.50);
  state.counters["p99_us"] = at(0.99);
  state.SetItemsProcessed(state.iterations());
}
BENCHMARK(BM_ServiceFits)->Arg(5000)->Iterations(1000)->Unit(benchmark::kMicrosecond)->UseRealTime();

// Concurrent what-if clients: range(1) clients, each on its own channel, ask "how many of
// this pod fit, up to 100?" (Replicas: server-side work, a small reply) on range(0) nodes,
// 20 calls each per iteration, against a server with range(2) replicas. Calls per second
// over all clients: 8 clients against 1 (the same replicas) for how reads scale; replicas
// 0 (one state, calls in turn) against 2.
void BM_ServiceWhatIfClients(benchmark::State& state) {
  const int nodes = static_cast<int>(state.range(0)), clients = static_cast<int>(state.range(1));
  const int32_t replicas = static_cast<int32_t>(state.range(2));
  Serving serving(nodes, 1000, replicas);
  if (serving.error) return state.SkipWithError(serving.error);
  std::vector<std::unique_ptr<v1::Placement::Stub>> stubs;
  for (int k = 0; k < clients; ++k) {
    grpc::ChannelArguments args;
    args.SetInt("kplace.bench.client", k);  // a channel (connection) of its own
    stubs.push_back(
        v1::Placement::NewStub(grpc::CreateCustomChannel(serving.target, grpc::InsecureChannelCredentials(), args)));
  }
  v1::ReplicasRequest ask;
  ask.set_pod(R"({"apiVersion":"v1","kind":"Pod","metadata":{"name":"q","namespace":"default"},"spec":{"containers":)"
              R"([{"name":"c","image":"pause","resources":{"requests":{"cpu":"100m","memory":"500Mi"}}}]}})");
  ask.set_max(100);
  constexpr int kCalls = 20;
  std::atomic<bool> failed{false};
  // Untimed: the replicas replay the Reset in the background; each client's first call.
  for (int k = 0; k < 2 * std::max(clients, replicas); ++k) {
    grpc::ClientContext ctx;
    v1::ReplicasResponse resp;
    if (!stubs[k % clients]->Replicas(&ctx, ask, &resp).ok()) return state.SkipWithError("Replicas failed");
  }
  std::this_thread::sleep_for(std::chrono::milliseconds(500));
  for (auto _ : state) {
    std::vector<std::thread> threads;
    for (int k = 0; k < clients; ++k) {
      threads.emplace_back([&, k] {
        for (int c = 0; c < kCalls; ++c) {
          grpc::ClientContext ctx;
          v1::ReplicasResponse resp;
          if (!stubs[k]->Replicas(&ctx, ask, &resp).ok() || resp.replicas() != 100) failed = true;
        }
      });
    }
    for (std::thread& t : threads) t.join();
    if (failed) return state.SkipWithError("Replicas failed");
  }
  state.SetItemsProcessed(state.iterations() * clients * kCalls);
}
// Consolidate of every node through the service: range(0) nodes with 10 pods each
// (UniformCluster), a server with range(1) replicas, which share the candidates (0: the
// one state does them all). Items = candidates.
void BM_ServiceConsolidate(benchmark::State& state) {
  const int nodes = static_cast<int>(state.range(0));
  Serving serving(nodes, 10 * nodes, static_cast<int32_t>(state.range(1)));
  if (serving.error) return state.SkipWithError(serving.error);
  auto& stub = serving.stub;
  std::this_thread::sleep_for(std::chrono::milliseconds(1000));  // the replicas replay the Reset
  for (auto _ : state) {
    grpc::ClientContext ctx;
    v1::ConsolidateResponse resp;
    if (!stub->Consolidate(&ctx, v1::ConsolidateRequest(), &resp).ok() || resp.candidates_size() != nodes) {
      return state.SkipWithError("Consolidate failed");
    }
  }
  state.SetItemsProcessed(static_cast<int64_t>(nodes) * state.iterations());
}
BENCHMARK(BM_ServiceConsolidate)->Args({1000, 0})->Args({1000, 2})->Iterations(2)->Unit(benchmark::kMillisecond)->UseRealTime();

BENCHMARK(BM_ServiceWhatIfClients)
    ->Args({5000, 1, 2})
    ->Args({5000, 8, 2})
    ->Args({5000, 8, 0})
    ->Iterations(3)
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();

}  // namespace
}  // namespace kplace::serve
