// Per-stage micro-benchmarks of the engine's plugins on omp: BM_<Plugin><Stage> for
// Filter (every node), Score (every node: an upper bound, the cycle scores only the
// feasible window), NormalizeScore, BindUpdate (OnBind after a pod is bound), and the
// cycle's host selection (BM_CycleSelectHost), and one whole batched cycle per pod
// (BM_CycleBatchedPod, SchedulingBasic). 5,000 and 50,000 nodes over 10 zones, two
// existing pods per node, one incoming pod that gives every plugin work: requests, a host
// port, a toleration, required and preferred node affinity, required anti-affinity and
// preferred affinity, a hard and a soft spread constraint, and an image.
// Items processed = nodes per iteration (pods for BM_CycleBatchedPod).
#include <benchmark/benchmark.h>

#include <map>
#include <memory>
#include <random>

#include <nlohmann/json.hpp>

#include "bench/plugin_harness.h"
#include "kplace/bench/workload.h"
#include "kplace/common/strings.h"
#include "kplace/config/config.h"
#include "kplace/cycle/node_order.h"
#include "kplace/cycle/scheduler.h"
#include "kplace/model/decode.h"
#include "kplace/state/event.h"
#include "kplace/whatif/whatif.h"

namespace kplace::bench {
namespace {

using json = nlohmann::json;

json IncomingPod() {
  return json::parse(R"({
    "metadata": {"name": "incoming", "namespace": "bench", "labels": {"app": "web", "tier": "front"}},
    "spec": {
      "containers": [{"name": "app", "image": "registry.k8s.io/app:v1",
                      "resources": {"requests": {"cpu": "100m", "memory": "500Mi"}},
                      "ports": [{"containerPort": 8080, "hostPort": 8080}]}],
      "tolerations": [{"key": "dedicated", "operator": "Equal", "value": "infra", "effect": "NoSchedule"}],
      "affinity": {
        "nodeAffinity": {
          "requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [{"matchExpressions": [
            {"key": "topology.kubernetes.io/zone", "operator": "In",
             "values": ["zone-0", "zone-1", "zone-2", "zone-3", "zone-4", "zone-5", "zone-6", "zone-7"]}]}]},
          "preferredDuringSchedulingIgnoredDuringExecution": [{"weight": 10, "preference": {"matchExpressions": [
            {"key": "topology.kubernetes.io/zone", "operator": "In", "values": ["zone-1"]}]}}]},
        "podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [
          {"labelSelector": {"matchLabels": {"app": "web"}}, "topologyKey": "kubernetes.io/hostname"}]},
        "podAffinity": {"preferredDuringSchedulingIgnoredDuringExecution": [
          {"weight": 5, "podAffinityTerm": {"labelSelector": {"matchLabels": {"tier": "cache"}},
                                            "topologyKey": "topology.kubernetes.io/zone"}}]}},
      "topologySpreadConstraints": [
        {"maxSkew": 5, "topologyKey": "topology.kubernetes.io/zone", "whenUnsatisfiable": "DoNotSchedule",
         "labelSelector": {"matchLabels": {"app": "web"}}},
        {"maxSkew": 1, "topologyKey": "kubernetes.io/hostname", "whenUnsatisfiable": "ScheduleAnyway",
         "labelSelector": {"matchLabels": {"app": "web"}}}]}})");
}

/** The cluster and one snapshot per node count, built once: 50,000 nodes take seconds. */
struct Fixture {
  ObjectSet cluster;
  Pod incoming;
};

Fixture* GetFixture(int32_t nodes) {
  static std::map<int32_t, std::unique_ptr<Fixture>> cache;
  auto& f = cache[nodes];
  if (f) return f.get();
  f = std::make_unique<Fixture>();
  json node = {{"metadata", {{"name", "t"}}},
               {"status", {{"allocatable", {{"cpu", "4"}, {"memory", "32Gi"}, {"pods", "110"}}},
                           {"capacity", {{"cpu", "4"}, {"memory", "32Gi"}, {"pods", "110"}}}}}};
  Node base = *DecodeNode(node, "bench node");
  for (int32_t i = 0; i < nodes; ++i) {
    Node n = base;
    n.meta.name = StrCat("node-", i);
    n.meta.labels["kubernetes.io/hostname"] = n.meta.name;
    n.meta.labels["topology.kubernetes.io/zone"] = StrCat("zone-", i % 10);
    if (i % 20 == 0) n.taints.push_back(Taint{"dedicated", "infra", "NoSchedule"});
    if (i % 10 == 3) n.taints.push_back(Taint{"spot", "", "PreferNoSchedule"});
    if (i % 5 == 0) n.images.push_back(ContainerImage{{"registry.k8s.io/app:v1"}, 500 * 1000 * 1000});
    f->cluster.nodes.push_back(std::move(n));
  }
  // Two existing pods per node: a web replica on every 4th node, others cache or batch pods;
  // every 8th carries required anti-affinity against web (the existing-term path).
  json pod = {{"metadata", {{"name", "t"}, {"namespace", "bench"}}},
              {"spec", {{"containers", json::array({{{"name", "c"}, {"image", "registry.k8s.io/other:v1"},
                                                     {"resources", {{"requests", {{"cpu", "200m"}, {"memory", "1Gi"}}}}}}})}}}};
  Pod plain = *DecodePod(pod, "bench pod");
  pod["spec"]["affinity"]["podAntiAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"] =
      json::array({{{"labelSelector", {{"matchLabels", {{"app", "web"}}}}}, {"topologyKey", "kubernetes.io/hostname"}}});
  Pod anti = *DecodePod(pod, "bench pod");
  for (int64_t i = 0; i < 2 * static_cast<int64_t>(nodes); ++i) {
    Pod p = i % 8 == 7 ? anti : plain;
    p.meta.name = StrCat("existing-", i);
    p.meta.uid = StrCat("existing-uid-", i);
    p.meta.creation_unix = i;
    p.meta.labels["app"] = i % 4 == 0 ? "web" : "batch";
    p.meta.labels["tier"] = i % 3 == 0 ? "cache" : "back";
    p.node_name = f->cluster.nodes[i % nodes].meta.name;
    f->cluster.pods.push_back(std::move(p));
  }
  f->incoming = *DecodePod(IncomingPod(), "bench incoming pod");
  return f.get();
}

enum Stage { kFilter, kScore, kNormalize, kBindUpdate };

void RunStage(benchmark::State& state, const char* plugin, Stage stage) {
  const int32_t nodes = static_cast<int32_t>(state.range(0));
  Fixture* f = GetFixture(nodes);
  FeatureGates gates;
  engine::Snapshot snapshot(f->cluster, gates);
  std::string error;
  auto p = engine::MakePlugin(engine::Backend::kOmp, plugin, DefaultArgs(), gates, &error);
  if (!p) {
    state.SkipWithError(error.c_str());
    return;
  }
  p->Prepare(snapshot);
  const unsigned points = p->ExtensionPoints();
  const Pod& pod = f->incoming;
  p->StartPod(pod, snapshot);
  if (points & kPreFilterPoint) {
    std::vector<engine::NodeIndex> allowed;
    bool restricts = false;
    p->PreFilter(pod, snapshot, &allowed, &restricts);
  }
  std::vector<engine::NodeIndex> all(nodes);
  for (int32_t i = 0; i < nodes; ++i) all[i] = i;
  std::vector<engine::VerdictCode> codes(nodes);
  std::vector<int64_t> raw(nodes), scratch(nodes);
  switch (stage) {
    case kFilter:
      if (!(points & kFilterPoint)) return state.SkipWithError("no Filter point");
      for (auto _ : state) {
        p->Filter(nodes, codes.data());
        benchmark::DoNotOptimize(codes.data());
      }
      break;
    case kScore:
    case kNormalize:
      if (!(points & kScorePoint)) return state.SkipWithError("no Score point");
      if (stage == kNormalize && !(points & kNormalizeScorePoint)) return state.SkipWithError("no NormalizeScore point");
      if ((points & kPreScorePoint) && p->PreScore(pod, snapshot, all).IsSkip()) {
        return state.SkipWithError("PreScore skipped");
      }
      p->Score(all.data(), nodes, raw.data());
      for (auto _ : state) {
        if (stage == kScore) {
          p->Score(all.data(), nodes, raw.data());
          benchmark::DoNotOptimize(raw.data());
        } else {
          state.PauseTiming();
          scratch = raw;
          state.ResumeTiming();
          p->NormalizeScore(nodes, scratch.data());
          benchmark::DoNotOptimize(scratch.data());
        }
      }
      break;
    case kBindUpdate: {
      int64_t k = 0;
      for (auto _ : state) {
        state.PauseTiming();
        Pod b = pod;
        b.meta.name = StrCat("bound-", k);
        b.meta.uid = StrCat("bound-uid-", k);
        engine::NodeIndex node = static_cast<engine::NodeIndex>((k * 7919) % nodes);
        ++k;
        const Pod& copy = snapshot.Bind(b, node);
        state.ResumeTiming();
        p->OnBind(copy, node, snapshot);
      }
      break;
    }
  }
  state.SetItemsProcessed(state.iterations() * nodes);
}

void BM_CycleSelectHost(benchmark::State& state) {
  // The feasible window the cycle scores: 10% of 5,000 nodes, 5% of 50,000 (adaptive).
  const int32_t nodes = static_cast<int32_t>(state.range(0));
  const int32_t window = cycle::NumFeasibleNodesToFind(0, nodes);
  std::mt19937_64 rng(1);
  std::vector<int64_t> totals(window);
  for (int64_t& t : totals) t = static_cast<int64_t>(rng() % 700);
  for (auto _ : state) benchmark::DoNotOptimize(cycle::SelectHostHeap(totals));
  state.SetItemsProcessed(state.iterations() * window);
  state.counters["window"] = window;
}
BENCHMARK(BM_CycleSelectHost)->Arg(5000)->Arg(50000)->UseRealTime();

// SchedulingBasic on `nodes` nodes (engine, omp) and `count` of its measured pods; null
// (the benchmark skipped) when either cannot be built. The cluster lives in *cluster.
std::unique_ptr<cycle::Scheduler> SchedulingBasic(benchmark::State& state, int32_t nodes, int32_t count,
                                                  std::unique_ptr<ObjectSet>* cluster, std::vector<Pod>* pods,
                                                  bool reference = false) {
  auto w = LoadWorkload("SchedulingBasic");
  if (!w.ok()) {
    state.SkipWithError(std::string(w.status().message()).c_str());
    return nullptr;
  }
  SelectNodes(*w, nodes);
  auto built = BuildCluster(*w);
  PodGroup group = w->measured;
  group.count = count;
  auto measured = BuildPods(group, "pod");
  if (!built.ok() || !measured.ok()) {
    state.SkipWithError("cannot build the workload");
    return nullptr;
  }
  *cluster = std::make_unique<ObjectSet>(std::move(*built));
  *pods = std::move(*measured);
  cycle::Options options;
  options.backend = engine::Backend::kOmp;
  options.reference = reference;
  auto s = cycle::Scheduler::Create(**cluster, DefaultSchedulerConfig(), options);
  if (!s.ok()) {
    state.SkipWithError(std::string(s.status().message()).c_str());
    return nullptr;
  }
  return std::move(*s);
}

void BM_CycleBatchedPod(benchmark::State& state) {
  // One whole batched cycle per iteration on omp: the window scan from the start index,
  // the scores of the feasible window, selection and the bind, for SchedulingBasic's pod
  // (a run of replicas) on its node template. Iterations are capped so nodes never fill.
  std::unique_ptr<ObjectSet> cluster;
  std::vector<Pod> pod_list;
  auto scheduler = SchedulingBasic(state, static_cast<int32_t>(state.range(0)), 20000, &cluster, &pod_list);
  if (!scheduler) return;
  const std::vector<Pod>* pods = &pod_list;
  size_t next = 0;
  for (auto _ : state) benchmark::DoNotOptimize(scheduler->Schedule((*pods)[next++ % pods->size()]));
  state.SetItemsProcessed(state.iterations());
  state.counters["nodes"] = static_cast<double>(state.range(0));
}
BENCHMARK(BM_CycleBatchedPod)->Arg(5000)->Arg(50000)->Iterations(20000)->Unit(benchmark::kMicrosecond)->UseRealTime();

// Live-state events on a scheduler over the fixture (the engine on omp, the default
// profile) after one incoming pod compiled its spread and affinity tables: each iteration
// is two events, so items = events.
std::unique_ptr<cycle::Scheduler> EventScheduler(benchmark::State& state, Fixture* f) {
  cycle::Options options;
  options.backend = engine::Backend::kOmp;
  auto s = cycle::Scheduler::Create(f->cluster, DefaultSchedulerConfig(), options);
  if (!s.ok()) {
    state.SkipWithError(std::string(s.status().message()).c_str());
    return nullptr;
  }
  benchmark::DoNotOptimize((*s)->Schedule(f->incoming));
  return std::move(*s);
}

void BM_EventPodDeleteAdd(benchmark::State& state) {
  // A bound pod deleted, then added again, cycling over the existing pods.
  Fixture* f = GetFixture(static_cast<int32_t>(state.range(0)));
  auto s = EventScheduler(state, f);
  if (!s) return;
  std::vector<state::ClusterEvent> del, add;
  for (size_t k = 0; k < 1000; ++k) {
    const Pod& p = f->cluster.pods[(k * 7919) % f->cluster.pods.size()];
    del.push_back(state::PodEvent(state::EventType::kDeleted, p));
    add.push_back(state::PodEvent(state::EventType::kAdded, p));
  }
  // Events are handed over (moved in), as a watch stream hands decoded objects over; their
  // copies are made with the clock stopped, a batch at a time.
  std::vector<state::ClusterEvent> batch;
  for (auto _ : state) {
    state.PauseTiming();
    batch.clear();
    for (size_t k = 0; k < del.size(); ++k) {
      batch.push_back(del[k]);
      batch.push_back(add[k]);
    }
    state.ResumeTiming();
    for (state::ClusterEvent& e : batch) {
      if (!s->state().Apply(std::move(e)).ok()) return state.SkipWithError("event refused");
    }
  }
  state.SetItemsProcessed(static_cast<int64_t>(2 * del.size()) * state.iterations());
}
BENCHMARK(BM_EventPodDeleteAdd)->Arg(5000)->Unit(benchmark::kMicrosecond)->UseRealTime();

// Each iteration applies `there`, then `back` (a node's change and its undoing): 2 events.
void NodeThereAndBack(benchmark::State& state, cycle::Scheduler* s, const Node& there, const Node& back) {
  const state::ClusterEvent to = state::NodeEvent(state::EventType::kModified, there);
  const state::ClusterEvent from = state::NodeEvent(state::EventType::kModified, back);
  for (auto _ : state) {
    if (!s->state().Apply(to).ok() || !s->state().Apply(from).ok()) return state.SkipWithError("event refused");
  }
  state.SetItemsProcessed(2 * state.iterations());
}

void BM_EventNodeLabelTaintUpdate(benchmark::State& state) {
  // A node gets a label and a taint, then loses them (its zone stays).
  Fixture* f = GetFixture(static_cast<int32_t>(state.range(0)));
  auto s = EventScheduler(state, f);
  if (!s) return;
  Node changed = f->cluster.nodes[17];
  changed.meta.labels["pool"] = "blue";
  changed.taints.push_back(Taint{"spot", "", "PreferNoSchedule"});
  NodeThereAndBack(state, s.get(), changed, f->cluster.nodes[17]);
}
BENCHMARK(BM_EventNodeLabelTaintUpdate)->Arg(5000)->Unit(benchmark::kMicrosecond)->UseRealTime();

void BM_EventNodeZoneChange(benchmark::State& state) {
  // A node with two pods (required anti-affinity both) moves to another zone and back: the
  // node tree moves it, and its pods' spread and affinity domains move with it (the first
  // change builds once, untimed).
  Fixture* f = GetFixture(static_cast<int32_t>(state.range(0)));
  auto s = EventScheduler(state, f);
  if (!s) return;
  if (!s->state().Apply(state::NodeEvent(state::EventType::kModified, f->cluster.nodes[0])).ok()) return state.SkipWithError("update");
  Node moved = f->cluster.nodes[7];  // zone-7
  moved.meta.labels["topology.kubernetes.io/zone"] = "zone-3";
  NodeThereAndBack(state, s.get(), moved, f->cluster.nodes[7]);
}
BENCHMARK(BM_EventNodeZoneChange)->Arg(5000)->Unit(benchmark::kMicrosecond)->UseRealTime();

void BM_EventNodeAdd(benchmark::State& state) {
  // Nodes join one after another (a new name each; the first change builds once, untimed).
  Fixture* f = GetFixture(static_cast<int32_t>(state.range(0)));
  auto s = EventScheduler(state, f);
  if (!s) return;
  if (!s->state().Apply(state::NodeEvent(state::EventType::kModified, f->cluster.nodes[0])).ok()) return state.SkipWithError("update");
  Node extra = f->cluster.nodes[3];
  int64_t k = 0;
  for (auto _ : state) {
    state.PauseTiming();
    extra.meta.name = StrCat("joined-", k++);
    extra.meta.labels["kubernetes.io/hostname"] = extra.meta.name;
    const state::ClusterEvent add = state::NodeEvent(state::EventType::kAdded, extra);
    state.ResumeTiming();
    if (!s->state().Apply(add).ok()) return state.SkipWithError("event refused");
  }
  state.SetItemsProcessed(state.iterations());
}
BENCHMARK(BM_EventNodeAdd)->Arg(5000)->Iterations(2000)->Unit(benchmark::kMicrosecond)->UseRealTime();

void BM_EventNodeAddDelete(benchmark::State& state) {
  Fixture* f = GetFixture(static_cast<int32_t>(state.range(0)));
  auto s = EventScheduler(state, f);
  if (!s) return;
  Node extra = f->cluster.nodes[3];
  extra.meta.name = "node-extra";
  extra.meta.labels["kubernetes.io/hostname"] = extra.meta.name;
  const state::ClusterEvent add = state::NodeEvent(state::EventType::kAdded, extra);
  const state::ClusterEvent del = state::NodeEvent(state::EventType::kDeleted, extra);
  for (auto _ : state) {
    if (!s->state().Apply(add).ok() || !s->state().Apply(del).ok()) return state.SkipWithError("event refused");
  }
  state.SetItemsProcessed(2 * state.iterations());
}
BENCHMARK(BM_EventNodeAddDelete)->Arg(5000)->Unit(benchmark::kMicrosecond)->UseRealTime();

void BM_TransactionScheduleRevert(benchmark::State& state) {
  // "Would these 1,000 pods fit?": Begin, 1,000 SchedulingBasic pods, Revert, against the
  // same 1,000 pods scheduled without a transaction (range(1) = 0) on a scheduler kept small
  // enough that they always fit.
  std::unique_ptr<ObjectSet> cluster;
  std::vector<Pod> pod_list;
  auto scheduler = SchedulingBasic(state, static_cast<int32_t>(state.range(0)), 1000, &cluster, &pod_list);
  if (!scheduler) return;
  cycle::Scheduler* s = scheduler.get();
  const std::vector<Pod>* pods = &pod_list;
  const bool revert = state.range(1) != 0;
  for (auto _ : state) {
    if (revert && !s->state().Begin().ok()) return state.SkipWithError("Begin");
    for (const Pod& p : *pods) benchmark::DoNotOptimize(s->Schedule(p));
    if (revert && !s->state().Revert().ok()) return state.SkipWithError("Revert");
    if (!revert) {  // the same pods leave again, untimed
      state.PauseTiming();
      for (const Pod& p : *pods) {
        Pod gone = p;
        gone.node_name = "bound";
        if (!s->state().Apply(state::PodEvent(state::EventType::kDeleted, gone)).ok()) return state.SkipWithError("delete");
      }
      state.ResumeTiming();
    }
  }
  state.SetItemsProcessed(static_cast<int64_t>(pods->size()) * state.iterations());
}
BENCHMARK(BM_TransactionScheduleRevert)->Args({5000, 0})->Args({5000, 1})->Unit(benchmark::kMillisecond)->UseRealTime();

// A gang of 512 SchedulingBasic pods (a PodGroup, minCount 512, GenericWorkload) decided in
// one PodGroup cycle, against the same pods without a group (range(1) = 0): {nodes, grouped}.
// Each iteration schedules them inside a transaction and reverts it. Items = pods.
// SchedulingBasic's cluster at `nodes` nodes and `count` of its measured pods, named
// "member-<i>"; false, with the benchmark skipped, when the workload does not build.
bool BasicClusterAndMembers(benchmark::State& state, int32_t nodes, int32_t count, std::unique_ptr<ObjectSet>* cluster,
                            std::vector<Pod>* pods) {
  auto w = LoadWorkload("SchedulingBasic");
  if (!w.ok()) {
    state.SkipWithError(std::string(w.status().message()).c_str());
    return false;
  }
  SelectNodes(*w, nodes);
  auto built = BuildCluster(*w);
  PodGroup measured = w->measured;
  measured.count = count;
  auto members = BuildPods(measured, "member");
  if (!built.ok() || !members.ok()) {
    state.SkipWithError("cannot build the workload");
    return false;
  }
  *cluster = std::make_unique<ObjectSet>(std::move(*built));
  *pods = std::move(*members);
  return true;
}

void BM_PodGroupCycle(benchmark::State& state) {
  constexpr int32_t kMembers = 512;
  const bool grouped = state.range(1) != 0;
  std::unique_ptr<ObjectSet> cluster;
  std::vector<Pod> member_list;
  if (!BasicClusterAndMembers(state, static_cast<int32_t>(state.range(0)), kMembers, &cluster, &member_list)) return;
  std::vector<Pod>* pods = &member_list;
  if (grouped) {
    kplace::PodGroup gang;
    gang.meta.name = "gang";
    gang.meta.namespace_ = (*pods)[0].meta.namespace_;
    gang.min_count = kMembers;
    gang.priority = (*pods)[0].priority.value_or(0);
    cluster->pod_groups.push_back(gang);
    for (Pod& p : *pods) p.scheduling_group = "gang";
  }
  cycle::Options options;
  options.backend = engine::Backend::kOmp;
  options.gates.overrides["GenericWorkload"] = true;
  auto s = cycle::Scheduler::Create(*cluster, DefaultSchedulerConfig(), options);
  if (!s.ok()) return state.SkipWithError(std::string(s.status().message()).c_str());
  for (auto _ : state) {
    if (!(*s)->state().Begin().ok()) return state.SkipWithError("Begin");
    std::vector<cycle::Placement> out = (*s)->ScheduleAll(*pods);
    if (out.empty() || out.back().node.empty()) return state.SkipWithError("a member did not fit");
    if (!(*s)->state().Revert().ok()) return state.SkipWithError("Revert");
  }
  state.SetItemsProcessed(static_cast<int64_t>(kMembers) * state.iterations());
  state.SetLabel(grouped ? "PodGroup cycle" : "no group");
}
BENCHMARK(BM_PodGroupCycle)->Args({5000, 1})->Args({5000, 0})->Unit(benchmark::kMillisecond)->UseRealTime();

// Workload-aware preemption: every node of SchedulingBasic's cluster full of four 1-CPU pods
// of priority 0, and a gang of 128 1-CPU pods of priority 100 (minCount 128). Each iteration,
// inside a transaction then reverted: the group's cycle fails, preempts (one pod put back at
// a time, 4 per node), and its retry binds it. {nodes, ask every member again (upstream's
// way) instead of only those a put-back pod can reach}. Items = members.
void BM_PodGroupPreemption(benchmark::State& state) {
  constexpr int32_t kMembers = 128;
  std::unique_ptr<ObjectSet> cluster;
  std::vector<Pod> member_list;
  if (!BasicClusterAndMembers(state, static_cast<int32_t>(state.range(0)), kMembers, &cluster, &member_list)) return;
  std::vector<Pod>* pods = &member_list;
  Pod low = (*pods)[0];
  low.containers[0].requests["cpu"] = *Quantity::Parse("1");
  low.priority = 0;
  for (const Node& n : std::vector<Node>(cluster->nodes)) {
    for (int k = 0; k < 4; ++k) {
      Pod p = low;
      p.meta.name = StrCat("low-", n.meta.name, "-", k);
      p.meta.uid = p.meta.name;
      p.node_name = n.meta.name;
      cluster->pods.push_back(std::move(p));
    }
  }
  kplace::PodGroup gang;
  gang.meta.name = "gang";
  gang.meta.namespace_ = low.meta.namespace_;
  gang.min_count = kMembers;
  gang.priority = 100;
  cluster->pod_groups.push_back(gang);
  for (Pod& p : *pods) {
    p.scheduling_group = "gang";
    p.priority = 100;
    p.containers[0].requests["cpu"] = *Quantity::Parse("1");
  }
  cycle::Options options;
  options.backend = engine::Backend::kOmp;
  options.gates.overrides["GenericWorkload"] = true;
  options.group_preemption_asks_all = state.range(1) != 0;
  auto s = cycle::Scheduler::Create(*cluster, DefaultSchedulerConfig(), options);
  if (!s.ok()) return state.SkipWithError(std::string(s.status().message()).c_str());
  for (auto _ : state) {
    if (!(*s)->state().Begin().ok()) return state.SkipWithError("Begin");
    std::vector<cycle::Placement> out = (*s)->ScheduleAll(*pods);
    if (out.empty() || out.back().node.empty()) return state.SkipWithError("the gang was not bound after preempting");
    if (!(*s)->state().Revert().ok()) return state.SkipWithError("Revert");
  }
  state.SetItemsProcessed(static_cast<int64_t>(kMembers) * state.iterations());
  state.SetLabel(state.range(1) != 0 ? "every member asked" : "members a put-back pod can reach");
}
BENCHMARK(BM_PodGroupPreemption)->Args({1000, 0})->Args({1000, 1})->Args({5000, 0})->Unit(benchmark::kMillisecond)->UseRealTime();

// "How many replicas of this fit?" (whatif::Replicas, scheduler-library's
// SchedulePodsByTemplate) on SchedulingBasic's cluster: {nodes, copies, reference?}; copies
// of its pod through the whole cycle (batched on the engine: they share a signature), then
// undone. Items = copies placed.
void BM_WhatIfReplicas(benchmark::State& state) {
  std::unique_ptr<ObjectSet> cluster;
  std::vector<Pod> pod_list;
  auto scheduler =
      SchedulingBasic(state, static_cast<int32_t>(state.range(0)), 1, &cluster, &pod_list, state.range(2) != 0);
  if (!scheduler) return;
  int64_t placed = 0;
  for (auto _ : state) {
    auto r = whatif::Replicas(scheduler.get(), pod_list[0], state.range(1));
    if (!r.ok() || r->replicas != state.range(1)) return state.SkipWithError("Replicas did not place every copy");
    placed += r->replicas;
  }
  state.SetItemsProcessed(placed);
  state.SetLabel(state.range(2) ? "reference" : "engine");
}
BENCHMARK(BM_WhatIfReplicas)
    ->Args({5000, 10000, 0})
    ->Args({100000, 10000, 0})
    ->Args({5000, 1000, 1})
    ->Iterations(3)
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();

// The objects of a List's `items` into *into; false when they do not decode.
bool DecodeItems(const std::string& items, ObjectSet* into) {
  return DecodeText(StrCat(R"({"apiVersion":"v1","kind":"List","items":[)", items, "]}"), "bench", into).ok();
}

// A scheduler (omp, or the reference) over `cluster`, which it reads; null after telling
// `state` why.
std::unique_ptr<cycle::Scheduler> OverCluster(benchmark::State& state, const ObjectSet& cluster, bool reference = false) {
  cycle::Options options;
  options.backend = engine::Backend::kOmp;
  options.reference = reference;
  auto s = cycle::Scheduler::Create(cluster, DefaultSchedulerConfig(), options);
  if (!s.ok()) {
    state.SkipWithError(std::string(s.status().message()).c_str());
    return nullptr;
  }
  return std::move(*s);
}

// Issue #36's consolidation shape: range(0) nodes in 10 zones, 10 bound pods each in groups
// of 10 (label group=g<k>; every 10th group spread over zones with maxSkew 1, every 10th
// but one required anti-affine per hostname, both as `kplace gen --constraint-percent`
// writes them), a group's pods on 10 consecutive nodes. Items = candidates drained (the
// first range(1) nodes in scan order), engine or reference (range(2)).
void BM_WhatIfConsolidate(benchmark::State& state) {
  const int32_t nodes = static_cast<int32_t>(state.range(0));
  std::string items;
  for (int32_t n = 0; n < nodes; ++n) {
    items += StrCat(n ? "," : "", R"({"apiVersion":"v1","kind":"Node","metadata":{"name":"node-)", n,
                    R"(","labels":{"kubernetes.io/hostname":"node-)", n, R"(","topology.kubernetes.io/zone":"zone-)", n % 10,
                    R"("}},"status":{"allocatable":{"cpu":"32","memory":"128Gi","pods":"110"}}})");
  }
  for (int32_t i = 0; i < 10 * nodes; ++i) {
    const int32_t g = i / 10;
    std::string constraint;
    if (g % 10 == 3) {
      constraint = StrCat(R"("topologySpreadConstraints":[{"maxSkew":1,"topologyKey":"topology.kubernetes.io/zone",)",
                          R"("whenUnsatisfiable":"DoNotSchedule","labelSelector":{"matchLabels":{"group":"g)", g, R"("}}}],)");
    } else if (g % 10 == 7) {
      constraint = StrCat(R"("affinity":{"podAntiAffinity":{"requiredDuringSchedulingIgnoredDuringExecution":[{)",
                          R"("topologyKey":"kubernetes.io/hostname","labelSelector":{"matchLabels":{"group":"g)", g,
                          R"("}}}]}},)");
    }
    items += StrCat(R"(,{"apiVersion":"v1","kind":"Pod","metadata":{"name":"p)", i, R"(","namespace":"default",)",
                    R"("labels":{"group":"g)", g, R"("},"ownerReferences":[{"apiVersion":"apps/v1","kind":"ReplicaSet",)",
                    R"("name":"rs)", g, R"(","uid":"u)", g, R"(","controller":true}]},"spec":{)", constraint,
                    R"("nodeName":"node-)", (g * 10 + i % 10) % nodes,
                    R"(","containers":[{"name":"c","image":"pause","resources":{"requests":{"cpu":"500m","memory":"1Gi"}}}]}})");
  }
  ObjectSet cluster;
  if (!DecodeItems(items, &cluster)) return state.SkipWithError("cannot decode the cluster");
  const bool reference = state.range(2) != 0;
  auto s = OverCluster(state, cluster, reference);
  if (!s) return;
  std::vector<std::string> candidates = s->state().NodeOrder();
  candidates.resize(static_cast<size_t>(state.range(1)));
  int64_t drained = 0;
  for (auto _ : state) {
    auto r = whatif::Consolidate(s.get(), candidates);
    if (!r.ok()) return state.SkipWithError(std::string(r.status().message()).c_str());
    drained += static_cast<int64_t>(r->size());
  }
  state.SetItemsProcessed(drained);
  state.SetLabel(reference ? "reference" : "engine");
}
BENCHMARK(BM_WhatIfConsolidate)
    ->Args({5000, 200, 0})
    ->Args({5000, 5, 1})
    ->Iterations(1)
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();

// Cluster Autoscaler's RunOnce benchmark shapes (cluster-autoscaler/core/bench): nodes of
// 10 CPU / 10000Mi. ScaleUp: range(0) x 50 pending pods of 200m / 200Mi, no controller (each
// its own group), no node yet: the plan needs range(0) new nodes. Items = pods planned.
void BM_WhatIfScaleUpRunOnce(benchmark::State& state) {
  const int32_t nodes = static_cast<int32_t>(state.range(0));
  ObjectSet cluster, pending, templates;
  std::string pods;
  for (int32_t i = 0; i < 50 * nodes; ++i) {
    pods += StrCat(i ? "," : "", R"({"apiVersion":"v1","kind":"Pod","metadata":{"name":"pod-)", i,
                   R"(","namespace":"default"},"spec":{"containers":[{"name":"c","resources":{"requests":{"cpu":"200m","memory":"200Mi"}}}]}})");
  }
  if (!DecodeItems("", &cluster) || !DecodeItems(pods, &pending) ||
      !DecodeItems(R"({"apiVersion":"v1","kind":"Node","metadata":{"name":"ng1","labels":{}},"status":{"allocatable":{"cpu":"10","memory":"10000Mi","pods":"110"}}})",
              &templates)) {
    return state.SkipWithError("cannot decode the objects");
  }
  auto s = OverCluster(state, cluster);
  if (!s) return;
  whatif::ScaleUpOptions limit;
  limit.max_nodes = 10000;
  for (auto _ : state) {
    auto r = whatif::ScaleUp(s.get(), pending.pods, templates.nodes, limit);
    if (!r.ok() || r->new_nodes.at("ng1") != nodes) return state.SkipWithError("the plan is not one node per 50 pods");
  }
  state.SetItemsProcessed(static_cast<int64_t>(pending.pods.size()) * state.iterations());
}
BENCHMARK(BM_WhatIfScaleUpRunOnce)->Arg(200)->Arg(1000)->Iterations(1)->Unit(benchmark::kMillisecond)->UseRealTime();

// ScaleDown: range(0) nodes, 40 pods of 100m / 100Mi on each (40% used). Consolidation of
// every node on its own (each can go: Cluster Autoscaler's 60%, removing them one after
// another, is its own sequential plan). Items = candidates.
void BM_WhatIfScaleDownRunOnce(benchmark::State& state) {
  const int32_t nodes = static_cast<int32_t>(state.range(0));
  std::string items;
  for (int32_t n = 0; n < nodes; ++n) {
    items += StrCat(n ? "," : "", R"({"apiVersion":"v1","kind":"Node","metadata":{"name":"ng1-node-)", n,
                    R"("},"status":{"allocatable":{"cpu":"10","memory":"10000Mi","pods":"110"}}})");
  }
  for (int32_t i = 0; i < 40 * nodes; ++i) {
    items += StrCat(R"(,{"apiVersion":"v1","kind":"Pod","metadata":{"name":"pod-)", i,
                    R"(","namespace":"default","annotations":{"cluster-autoscaler.kubernetes.io/safe-to-evict":"true"}},)",
                    R"("spec":{"nodeName":"ng1-node-)", i % nodes,
                    R"(","containers":[{"name":"c","resources":{"requests":{"cpu":"100m","memory":"100Mi"}}}]}})");
  }
  ObjectSet cluster;
  if (!DecodeItems(items, &cluster)) return state.SkipWithError("cannot decode the cluster");
  auto s = OverCluster(state, cluster);
  if (!s) return;
  for (auto _ : state) {
    auto r = whatif::Consolidate(s.get(), {});
    if (!r.ok() || static_cast<int32_t>(r->size()) != nodes) return state.SkipWithError("Consolidate");
    for (const whatif::DrainResult& d : *r) {
      if (!d.drainable) return state.SkipWithError("a node could not go");
    }
  }
  state.SetItemsProcessed(static_cast<int64_t>(nodes) * state.iterations());
}
BENCHMARK(BM_WhatIfScaleDownRunOnce)->Arg(400)->Arg(2000)->Iterations(1)->Unit(benchmark::kMillisecond)->UseRealTime();

// "Which nodes would this pod pass Filter on?" (whatif::CanSchedulePod) over every node of
// SchedulingBasic's cluster: the library call the service's Fits stands on. Items = calls.
void BM_WhatIfCanSchedulePod(benchmark::State& state) {
  std::unique_ptr<ObjectSet> cluster;
  std::vector<Pod> pod_list;
  auto scheduler = SchedulingBasic(state, static_cast<int32_t>(state.range(0)), 1, &cluster, &pod_list);
  if (!scheduler) return;
  for (auto _ : state) {
    auto r = whatif::CanSchedulePod(scheduler.get(), pod_list[0], {}, false);
    if (!r.ok() || static_cast<int64_t>(r->size()) != state.range(0)) return state.SkipWithError("CanSchedulePod");
  }
  state.SetItemsProcessed(state.iterations());
}
BENCHMARK(BM_WhatIfCanSchedulePod)->Arg(5000)->Unit(benchmark::kMicrosecond)->UseRealTime();

#define KPLACE_STAGE(plugin, stage, tag)                                                                   \
  void BM_##plugin##tag(benchmark::State& state) { RunStage(state, #plugin, stage); }                      \
  BENCHMARK(BM_##plugin##tag)->Arg(5000)->Arg(50000)->Unit(benchmark::kMicrosecond)->UseRealTime()

KPLACE_STAGE(NodeResourcesFit, kFilter, Filter);
KPLACE_STAGE(NodeResourcesFit, kScore, Score);
KPLACE_STAGE(NodeResourcesBalancedAllocation, kScore, Score);
KPLACE_STAGE(TaintToleration, kFilter, Filter);
KPLACE_STAGE(TaintToleration, kScore, Score);
KPLACE_STAGE(TaintToleration, kNormalize, Normalize);
KPLACE_STAGE(NodeAffinity, kFilter, Filter);
KPLACE_STAGE(NodeAffinity, kScore, Score);
KPLACE_STAGE(NodeAffinity, kNormalize, Normalize);
KPLACE_STAGE(PodTopologySpread, kFilter, Filter);
KPLACE_STAGE(PodTopologySpread, kScore, Score);
KPLACE_STAGE(PodTopologySpread, kNormalize, Normalize);
KPLACE_STAGE(InterPodAffinity, kFilter, Filter);
KPLACE_STAGE(InterPodAffinity, kScore, Score);
KPLACE_STAGE(InterPodAffinity, kNormalize, Normalize);
KPLACE_STAGE(ImageLocality, kScore, Score);
KPLACE_STAGE(NodeUnschedulable, kFilter, Filter);
KPLACE_STAGE(NodePorts, kFilter, Filter);
// Bind updates bind pods into a snapshot of their own, one per benchmark.
KPLACE_STAGE(NodeResourcesFit, kBindUpdate, BindUpdate);
KPLACE_STAGE(NodeResourcesBalancedAllocation, kBindUpdate, BindUpdate);
KPLACE_STAGE(NodePorts, kBindUpdate, BindUpdate);
KPLACE_STAGE(PodTopologySpread, kBindUpdate, BindUpdate);
KPLACE_STAGE(InterPodAffinity, kBindUpdate, BindUpdate);

}  // namespace
}  // namespace kplace::bench
