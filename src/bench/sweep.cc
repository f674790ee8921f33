#include "kplace/bench/sweep.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <map>
#include <numeric>

#include <nlohmann/json.hpp>

#include "absl/strings/str_split.h"
#include "kplace/common/status.h"
#include "kplace/common/strings.h"
#include "kplace/config/config.h"
#include "kplace/cycle/scheduler.h"
#include "kplace/model/decode.h"
#include "kplace/reference/plugin.h"

namespace kplace::bench {
namespace {

using json = nlohmann::json;
using Clock = std::chrono::steady_clock;

constexpr int32_t kZones = 10;

json Selector(const std::string& group) { return {{"matchLabels", {{"app", group}}}}; }

// The pod spec of `kind` for group "g0"; SetGroup restamps the group.
json PodTemplate(SweepKind kind, bool with_requests) {
  json pod = {{"metadata", {{"name", "template"}, {"namespace", "sweep"}, {"labels", {{"app", "g0"}}}}},
              {"spec", {{"containers", json::array({{{"name", "pause"}, {"image", "registry.k8s.io/pause:3.10.1"}}})}}}};
  if (with_requests) {
    pod["spec"]["containers"][0]["resources"] = {{"requests", {{"cpu", "100m"}, {"memory", "500Mi"}}},
                                                 {"limits", {{"cpu", "100m"}, {"memory", "500Mi"}}}};
  }
  json term = {{"labelSelector", Selector("g0")}};
  json& spec = pod["spec"];
  switch (kind) {
    case SweepKind::kNone:
      break;
    case SweepKind::kRequiredAffinity:
      term["topologyKey"] = "topology.kubernetes.io/zone";
      spec["affinity"]["podAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"] = json::array({term});
      break;
    case SweepKind::kRequiredAntiAffinity:
      term["topologyKey"] = "kubernetes.io/hostname";
      spec["affinity"]["podAntiAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"] = json::array({term});
      break;
    case SweepKind::kPreferredAffinity:
      term["topologyKey"] = "kubernetes.io/hostname";
      spec["affinity"]["podAffinity"]["preferredDuringSchedulingIgnoredDuringExecution"] =
          json::array({{{"weight", 1}, {"podAffinityTerm", term}}});
      break;
    case SweepKind::kPreferredAntiAffinity:
      term["topologyKey"] = "kubernetes.io/hostname";
      spec["affinity"]["podAntiAffinity"]["preferredDuringSchedulingIgnoredDuringExecution"] =
          json::array({{{"weight", 1}, {"podAffinityTerm", term}}});
      break;
    case SweepKind::kRequiredSpread:
      spec["topologySpreadConstraints"] = json::array({{{"maxSkew", 5},
                                                        {"topologyKey", "topology.kubernetes.io/zone"},
                                                        {"whenUnsatisfiable", "DoNotSchedule"},
                                                        {"labelSelector", Selector("g0")}}});
      break;
    case SweepKind::kPreferredSpread:
      spec["topologySpreadConstraints"] = json::array({{{"maxSkew", 5},
                                                        {"topologyKey", "kubernetes.io/hostname"},
                                                        {"whenUnsatisfiable", "ScheduleAnyway"},
                                                        {"labelSelector", Selector("g0")}}});
      break;
  }
  return pod;
}

void SetGroup(Pod& p, const std::string& group) {
  p.meta.labels["app"] = group;
  auto stamp = [&](std::optional<LabelSelector>& s) {
    if (s) s->match_labels["app"] = group;
  };
  if (p.affinity) {
    for (std::optional<PodAffinity>* a : {&p.affinity->pod_affinity, &p.affinity->pod_anti_affinity}) {
      if (!*a) continue;
      for (PodAffinityTerm& t : (*a)->required) stamp(t.label_selector);
      for (WeightedPodAffinityTerm& t : (*a)->preferred) stamp(t.term.label_selector);
    }
  }
  for (TopologySpreadConstraint& c : p.topology_spread_constraints) stamp(c.label_selector);
}

double Ms(Clock::duration d) { return std::chrono::duration<double, std::milli>(d).count(); }

struct SideRun {
  std::vector<cycle::Placement> placements;
  std::vector<double> ms;
  double setup_s = 0;
  bool capped = false;
};

absl::StatusOr<SideRun> RunSide(const ObjectSet& cluster, const SchedulerConfig& config, const cycle::Options& options,
                                const std::vector<Pod>& pods, double budget_s) {
  SideRun out;
  auto t0 = Clock::now();
  KPLACE_ASSIGN_OR_RETURN(auto scheduler, cycle::Scheduler::Create(cluster, config, options));
  out.setup_s = Ms(Clock::now() - t0) / 1000;
  auto start = Clock::now();
  for (size_t k = 0; k < pods.size(); ++k) {
    auto a = Clock::now();
    out.placements.push_back(scheduler->Schedule(pods[k]));
    auto b = Clock::now();
    out.ms.push_back(Ms(b - a));
    if (Ms(b - start) / 1000 > budget_s && k + 1 < pods.size()) {
      out.capped = true;
      break;
    }
  }
  return out;
}

SweepPoint Summarize(const std::string& kind, const std::string& side, int32_t nodes, int64_t existing,
                     const SideRun& run, int32_t wanted) {
  SweepPoint p;
  p.kind = kind;
  p.side = side;
  p.nodes = nodes;
  p.existing = existing;
  p.pods = static_cast<int32_t>(run.ms.size());
  p.setup_s = run.setup_s;
  if (!run.ms.empty()) {
    std::vector<double> v = run.ms;
    p.first_ms = v.front();
    p.mean_ms = std::accumulate(v.begin(), v.end(), 0.0) / v.size();
    std::sort(v.begin(), v.end());
    p.p50_ms = v[(v.size() + 1) / 2 - 1];
    p.max_ms = v.back();
  }
  if (run.capped) p.note = StrCat("budget: ", p.pods, " of ", wanted, " pods");
  return p;
}

}  // namespace

const char* SweepKindName(SweepKind k) {
  switch (k) {
    case SweepKind::kNone: return "none";
    case SweepKind::kRequiredAffinity: return "required-affinity";
    case SweepKind::kRequiredAntiAffinity: return "required-anti-affinity";
    case SweepKind::kPreferredAffinity: return "preferred-affinity";
    case SweepKind::kPreferredAntiAffinity: return "preferred-anti-affinity";
    case SweepKind::kRequiredSpread: return "required-spread";
    case SweepKind::kPreferredSpread: return "preferred-spread";
  }
  return "?";
}

std::vector<SweepKind> AffinitySweepKinds() {
  return {SweepKind::kNone, SweepKind::kRequiredAffinity, SweepKind::kRequiredAntiAffinity,
          SweepKind::kPreferredAffinity, SweepKind::kPreferredAntiAffinity};
}

std::vector<SweepKind> AllSweepKinds() {
  return {SweepKind::kNone,          SweepKind::kRequiredAffinity,       SweepKind::kRequiredAntiAffinity,
          SweepKind::kPreferredAffinity, SweepKind::kPreferredAntiAffinity, SweepKind::kRequiredSpread,
          SweepKind::kPreferredSpread};
}

absl::StatusOr<std::vector<SweepKind>> ParseSweepKinds(const std::string& list) {
  std::vector<SweepKind> out;
  for (const std::string& item : std::vector<std::string>(absl::StrSplit(list, ','))) {
    if (item == "all") {
      out = AllSweepKinds();
      continue;
    }
    bool found = false;
    for (SweepKind k : AllSweepKinds()) {
      const std::string name = SweepKindName(k);
      // required-anti-affinity also answers to required-anti.
      const std::string short_name = name.size() > 9 && name.compare(name.size() - 9, 9, "-affinity") == 0 &&
                                             name.find("anti") != std::string::npos
                                         ? name.substr(0, name.size() - 9)
                                         : name;
      if (item == name || item == short_name) {
        if (std::find(out.begin(), out.end(), k) == out.end()) out.push_back(k);
        found = true;
      }
    }
    if (!found) {
      std::string known;
      for (SweepKind k : AllSweepKinds()) known += StrCat(known.empty() ? "" : ", ", SweepKindName(k));
      return absl::InvalidArgumentError(StrCat("--kinds: unknown kind \"", item, "\" (known: ", known,
                                               "; required-anti and preferred-anti for short; all)"));
    }
  }
  if (out.empty()) return absl::InvalidArgumentError("--kinds: expected at least one kind");
  return out;
}

absl::StatusOr<ObjectSet> SweepCluster(SweepKind kind, int32_t nodes, int64_t existing) {
  ObjectSet out;
  json node = {{"metadata", {{"name", "template"}, {"labels", {{"kubernetes.io/hostname", "template"},
                                                              {"topology.kubernetes.io/zone", "zone-0"}}}}},
               {"status", {{"allocatable", {{"cpu", "1000"}, {"memory", "4Ti"}, {"pods", "4000"}}},
                           {"capacity", {{"cpu", "1000"}, {"memory", "4Ti"}, {"pods", "4000"}}}}}};
  KPLACE_ASSIGN_OR_RETURN(Node base, DecodeNode(node, "sweep node template"));
  out.nodes.reserve(nodes);
  for (int32_t i = 0; i < nodes; ++i) {
    Node n = base;
    n.meta.name = StrCat("node-", i);
    n.meta.labels["kubernetes.io/hostname"] = n.meta.name;
    n.meta.labels["topology.kubernetes.io/zone"] = StrCat("zone-", i % kZones);
    out.nodes.push_back(std::move(n));
  }
  KPLACE_ASSIGN_OR_RETURN(Namespace ns, DecodeNamespace(json{{"metadata", {{"name", "sweep"}}}}, "sweep namespace"));
  out.namespaces.push_back(std::move(ns));
  if (existing > 0 && nodes == 0) return absl::InvalidArgumentError("sweep: existing pods need at least one node");
  KPLACE_ASSIGN_OR_RETURN(Pod pod, DecodePod(PodTemplate(kind, false), "sweep pod template"));
  out.pods.reserve(existing);
  for (int64_t i = 0; i < existing; ++i) {
    Pod p = pod;
    p.meta.name = StrCat("existing-", i);
    p.meta.uid = StrCat("existing-uid-", i);
    p.meta.creation_unix = i;
    SetGroup(p, StrCat("g", i / kSweepReplicas));
    p.node_name = out.nodes[i % nodes].meta.name;
    out.pods.push_back(std::move(p));
  }
  return out;
}

absl::StatusOr<std::vector<Pod>> SweepPods(SweepKind kind, int32_t count, int64_t existing) {
  KPLACE_ASSIGN_OR_RETURN(Pod pod, DecodePod(PodTemplate(kind, true), "sweep pod template"));
  const int64_t groups = existing / kSweepReplicas;
  std::vector<Pod> out;
  for (int32_t j = 0; j < count; ++j) {
    Pod p = pod;
    p.meta.name = StrCat("pending-", j);
    p.meta.uid = StrCat("pending-uid-", j);
    p.meta.creation_unix = existing + j;
    int64_t g = groups > 0 ? (static_cast<int64_t>(j) * 7919) % groups : groups + j / kSweepReplicas;
    SetGroup(p, StrCat("g", g));
    out.push_back(std::move(p));
  }
  return out;
}

absl::StatusOr<std::vector<SweepPoint>> RunAffinitySweep(const SweepOptions& options) {
  SchedulerConfig config = DefaultSchedulerConfig();
  // Only plugins built on both sides take part (as kplace bench does).
  std::vector<std::string> eb = engine::RegisteredPlugins(options.backend), rb = reference::RegisteredPlugins();
  auto built = [&](const std::string& n) {
    return std::count(eb.begin(), eb.end(), n) && std::count(rb.begin(), rb.end(), n);
  };
  for (Profile& p : config.profiles) {
    for (auto* v : {&p.pre_filter, &p.filter, &p.pre_score}) {
      v->erase(std::remove_if(v->begin(), v->end(), [&](const std::string& n) { return !built(n); }), v->end());
    }
    p.score.erase(std::remove_if(p.score.begin(), p.score.end(), [&](const WeightedPlugin& w) { return !built(w.name); }),
                  p.score.end());
  }
  std::vector<SweepPoint> out;
  // Reference per-pod cost seen so far per kind, to skip points that cannot fit the budget.
  std::map<std::string, std::vector<SweepPoint>> seen;
  std::vector<int32_t> node_counts = options.nodes;
  std::vector<int64_t> existing_counts = options.existing;
  std::sort(node_counts.begin(), node_counts.end());
  std::sort(existing_counts.begin(), existing_counts.end());
  const int64_t grid = static_cast<int64_t>(node_counts.size() * existing_counts.size() * options.kinds.size());
  int64_t points = 0;
  for (int32_t nodes : node_counts) {
    for (int64_t existing : existing_counts) {
      for (SweepKind kind : options.kinds) {
        if (options.progress) options.progress(points++, grid);
        const std::string name = SweepKindName(kind);
        KPLACE_ASSIGN_OR_RETURN(ObjectSet cluster, SweepCluster(kind, nodes, existing));
        KPLACE_ASSIGN_OR_RETURN(std::vector<Pod> pods, SweepPods(kind, options.pods, existing));
        cycle::Options eo;
        eo.backend = options.backend;
        KPLACE_ASSIGN_OR_RETURN(SideRun engine_run, RunSide(cluster, config, eo, pods, options.engine_budget_s));
        SweepPoint ep = Summarize(name, engine::BackendName(options.backend), nodes, existing, engine_run, options.pods);
        out.push_back(ep);
        if (options.on_point) options.on_point(ep);
        if (!options.run_reference) continue;
        // Skip when a point of this kind with no more nodes and no more existing pods
        // already cost more per pod than this point's whole budget.
        const SweepPoint* worse = nullptr;
        for (const SweepPoint& s : seen[name]) {
          if (s.nodes <= nodes && s.existing <= existing && s.mean_ms / 1000 > options.reference_budget_s) worse = &s;
        }
        if (worse) {
          SweepPoint rp;
          rp.kind = name;
          rp.side = "reference";
          rp.nodes = nodes;
          rp.existing = existing;
          rp.note = StrCat("skipped: ", worse->nodes, " nodes / ", worse->existing, " existing already took ",
                           static_cast<int64_t>(worse->mean_ms), " ms per pod, over the ", options.reference_budget_s,
                           " s budget");
          out.push_back(rp);
          if (options.on_point) options.on_point(rp);
          continue;
        }
        cycle::Options ro;
        ro.reference = true;
        KPLACE_ASSIGN_OR_RETURN(SideRun ref_run, RunSide(cluster, config, ro, pods, options.reference_budget_s));
        for (size_t k = 0; k < ref_run.placements.size() && k < engine_run.placements.size(); ++k) {
          const auto& e = engine_run.placements[k];
          const auto& r = ref_run.placements[k];
          if (e.node != r.node || e.message != r.message) {
            return absl::InternalError(StrCat("sweep ", name, " at ", nodes, " nodes / ", existing, " existing: pod ",
                                              e.pod, ": engine \"", e.node.empty() ? e.message : e.node,
                                              "\" vs reference \"", r.node.empty() ? r.message : r.node, "\""));
          }
        }
        SweepPoint rp = Summarize(name, "reference", nodes, existing, ref_run, options.pods);
        seen[name].push_back(rp);
        out.push_back(rp);
        if (options.on_point) options.on_point(rp);
      }
    }
  }
  if (options.progress) options.progress(grid, grid);
  return out;
}

std::string SweepCsv(const std::vector<SweepPoint>& points) {
  std::string out = "kind,side,nodes,existing,pods,mean_ms,p50_ms,first_ms,max_ms,setup_s,note\n";
  char buf[256];
  for (const SweepPoint& p : points) {
    std::snprintf(buf, sizeof buf, "%s,%s,%d,%lld,%d,%.4f,%.4f,%.4f,%.4f,%.3f,", p.kind.c_str(), p.side.c_str(), p.nodes,
                  static_cast<long long>(p.existing), p.pods, p.mean_ms, p.p50_ms, p.first_ms, p.max_ms, p.setup_s);
    out += buf;
    std::string note = p.note;
    std::replace(note.begin(), note.end(), ',', ';');
    out += note + "\n";
  }
  return out;
}

}  // namespace kplace::bench
