// `kplace gen`: a synthetic cluster as Kubernetes JSON, seeded and reproducible.
#include <cstdio>
#include <fstream>
#include <iostream>
#include <random>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "kplace/cli/commands.h"
#include "kplace/cli/flags.h"

namespace kplace::cli {
namespace {

using json = nlohmann::json;

struct Shape {
  const char* cpu;
  const char* memory;
  const char* pods;
};
constexpr Shape kShapes[] = {{"4", "32Gi", "110"}, {"8", "64Gi", "110"}, {"16", "128Gi", "250"}, {"32", "256Gi", "250"}};
constexpr const char* kImages[] = {"registry.k8s.io/pause:3.10", "nginx:1.27", "redis:7", "postgres:16",
                                   "python:3.12", "golang:1.23", "busybox:1.36", "envoyproxy/envoy:v1.31"};
constexpr const char* kApps[] = {"web", "api", "cache", "db", "batch", "ml"};

}  // namespace

int RunGen(int argc, char** argv) {
  Flags flags("gen",
              "Writes a synthetic cluster as a Kubernetes `kind: List` (Nodes, then bound Pods), seeded and\n"
              "reproducible: nodes spread round-robin over regions and zones (topology.kubernetes.io/region,\n"
              "topology.kubernetes.io/zone, kubernetes.io/hostname), a mix of allocatable shapes, optional\n"
              "GPUs, taints, images and existing pods. Feed it to `kplace schedule --cluster`.");
  int64_t& nodes = flags.Int("nodes", 5000, "number of nodes");
  int64_t& regions = flags.Int("regions", 1, "number of regions");
  int64_t& zones = flags.Int("zones", 3, "zones per region");
  int64_t& pods = flags.Int("existing-pods", 0, "bound pods to place on random nodes");
  int64_t& pending = flags.Int("pending-pods", 0, "also write this many pending pods to --pending-output");
  int64_t& taint_pct = flags.Int("taint-percent", 0, "percent of nodes tainted dedicated=gpu:NoSchedule");
  int64_t& gpu_pct = flags.Int("gpu-percent", 0, "percent of nodes with nvidia.com/gpu: 8");
  bool& uniform = flags.Bool("uniform", "every node 4 cpu / 32Gi / 110 pods (scheduler_perf's default node)");
  bool& images = flags.Bool("images", "give nodes random images from a small catalogue");
  int64_t& constraint_pct = flags.Int("constraint-percent", 0,
                                      "percent of pod groups with a scheduling constraint: zone or hostname spread, "
                                      "required or preferred pod (anti-)affinity, a node selector, a GPU toleration "
                                      "or request");
  int64_t& group_size = flags.Int("group-size", 1, "pods per group (replicas of one template, label group=g<k>)");
  int64_t& seed = flags.Int("seed", 1, "random seed");
  std::string& output = flags.String("output", "-", "output file (- for stdout)");
  std::string& pending_output = flags.String("pending-output", "pending.json", "file for --pending-pods");
  if (int rc = flags.Parse(argc, argv); rc >= 0) return rc;
  // Each bound names its flag; the caps keep a typo from asking for terabytes of JSON.
  struct Range {
    const char* flag;
    int64_t value, min, max;
  };
  const Range ranges[] = {{"nodes", nodes, 0, 1000000},
                          {"regions", regions, 1, 1000000},
                          {"zones", zones, 1, 1000000},
                          {"existing-pods", pods, 0, 10000000},
                          {"pending-pods", pending, 0, 10000000},
                          {"taint-percent", taint_pct, 0, 100},
                          {"gpu-percent", gpu_pct, 0, 100},
                          {"constraint-percent", constraint_pct, 0, 100},
                          {"group-size", group_size, 1, 10000000}};
  for (const Range& r : ranges) {
    if (r.value < r.min || r.value > r.max) {
      std::fprintf(stderr, "kplace gen: --%s: %lld is out of range (%lld to %lld)\n", r.flag,
                   static_cast<long long>(r.value), static_cast<long long>(r.min), static_cast<long long>(r.max));
      return 2;
    }
  }
  if (regions * zones > 1000000) {  // both at most 10^6: the product fits
    std::fprintf(stderr, "kplace gen: --regions times --zones: %lld zones is more than 1000000\n",
                 static_cast<long long>(regions * zones));
    return 2;
  }

  std::mt19937_64 rng(static_cast<uint64_t>(seed));
  auto pick = [&](size_t n) { return static_cast<size_t>(rng() % n); };
  json list = {{"apiVersion", "v1"}, {"kind", "List"}, {"items", json::array()}};
  json& items = list["items"];
  // What is left of each node for existing pods, so none is bound where the scheduler could
  // never have put it.
  struct Room {
    int64_t milli_cpu, mem_mi, pods, gpus;
    bool tainted;
    int64_t region;
  };
  std::vector<Room> room;
  room.reserve(static_cast<size_t>(nodes));
  for (int64_t i = 0; i < nodes; ++i) {
    std::string name = "node-" + std::to_string(i);
    int64_t zone_index = i % (regions * zones);
    std::string region = "region-" + std::to_string(zone_index / zones);
    std::string zone = region + "-zone-" + std::to_string(zone_index % zones);
    const Shape& s = uniform ? kShapes[0] : kShapes[pick(std::size(kShapes))];
    json alloc = {{"cpu", s.cpu}, {"memory", s.memory}, {"pods", s.pods}, {"ephemeral-storage", "100Gi"}};
    if (static_cast<int64_t>(pick(100)) < gpu_pct) alloc["nvidia.com/gpu"] = "8";
    json node = {{"apiVersion", "v1"},
                 {"kind", "Node"},
                 {"metadata",
                  {{"name", name},
                   {"labels",
                    {{"kubernetes.io/hostname", name},
                     {"kubernetes.io/os", "linux"},
                     {"topology.kubernetes.io/region", region},
                     {"topology.kubernetes.io/zone", zone}}}}},
                 {"spec", json::object()},
                 {"status", {{"allocatable", alloc}, {"capacity", alloc}}}};
    room.push_back({1000 * std::stoll(s.cpu), 1024 * std::stoll(s.memory), std::stoll(s.pods),
                    alloc.contains("nvidia.com/gpu") ? 8 : 0, false, zone_index / zones});
    if (static_cast<int64_t>(pick(100)) < taint_pct) {
      room.back().tainted = true;
      node["spec"]["taints"] = json::array({{{"key", "dedicated"}, {"value", "gpu"}, {"effect", "NoSchedule"}}});
    }
    if (images) {
      json imgs = json::array();
      for (size_t k = 0; k < std::size(kImages); ++k) {
        if (pick(3) == 0) imgs.push_back({{"names", {kImages[k]}}, {"sizeBytes", 50000000 + 10000000 * static_cast<int64_t>(k)}});
      }
      node["status"]["images"] = imgs;
    }
    items.push_back(node);
  }
  // A group's template: requests, an image, and with --constraint-percent one constraint
  // over the group's own label (so anti-affinity and spread see their replicas).
  auto make_template = [&](int64_t group) {
    const std::string label = "g" + std::to_string(group);
    json selector = {{"matchLabels", {{"group", label}}}};
    json spec = {{"containers",
                  json::array({{{"name", "main"},
                                {"image", kImages[pick(std::size(kImages))]},
                                {"resources",
                                 {{"requests",
                                   {{"cpu", std::to_string(100 * (1 + pick(10))) + "m"},
                                    {"memory", std::to_string(128 * (1 + pick(8))) + "Mi"}}}}}}})}};
    if (static_cast<int64_t>(pick(100)) < constraint_pct) {
      switch (pick(8)) {
        case 0:
          spec["topologySpreadConstraints"] = json::array({{{"maxSkew", 1 + pick(3)},
                                                            {"topologyKey", "topology.kubernetes.io/zone"},
                                                            {"whenUnsatisfiable", "DoNotSchedule"},
                                                            {"labelSelector", selector}}});
          break;
        case 1:
          spec["topologySpreadConstraints"] = json::array({{{"maxSkew", 1},
                                                            {"topologyKey", "kubernetes.io/hostname"},
                                                            {"whenUnsatisfiable", "ScheduleAnyway"},
                                                            {"labelSelector", selector}}});
          break;
        case 2:
          spec["affinity"]["podAntiAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"] =
              json::array({{{"labelSelector", selector}, {"topologyKey", "kubernetes.io/hostname"}}});
          break;
        case 3:
          spec["affinity"]["podAffinity"]["preferredDuringSchedulingIgnoredDuringExecution"] = json::array(
              {{{"weight", 1 + pick(100)},
                {"podAffinityTerm", {{"labelSelector", selector}, {"topologyKey", "topology.kubernetes.io/zone"}}}}});
          break;
        case 4:
          spec["affinity"]["podAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"] =
              json::array({{{"labelSelector", selector}, {"topologyKey", "topology.kubernetes.io/zone"}}});
          break;
        case 5:
          spec["nodeSelector"] = {{"topology.kubernetes.io/region", "region-" + std::to_string(pick(regions))}};
          break;
        case 6:
          spec["tolerations"] = json::array({{{"key", "dedicated"}, {"operator", "Equal"}, {"value", "gpu"},
                                              {"effect", "NoSchedule"}}});
          break;
        default:
          spec["containers"][0]["resources"]["requests"]["nvidia.com/gpu"] = std::to_string(1 + pick(4));
          spec["containers"][0]["resources"]["limits"]["nvidia.com/gpu"] =
              spec["containers"][0]["resources"]["requests"]["nvidia.com/gpu"];
          spec["tolerations"] = json::array({{{"key", "dedicated"}, {"operator", "Exists"}}});
          break;
      }
    }
    return json{{"apiVersion", "v1"},
                {"kind", "Pod"},
                {"metadata", {{"namespace", "default"}, {"labels", {{"app", kApps[pick(std::size(kApps))]}, {"group", label}}}}},
                {"spec", spec}};
  };
  // Pods in groups of --group-size replicas of one template.
  int64_t groups = 0;
  json group_template;
  auto make_pods = [&](const std::string& prefix, int64_t count, auto&& place) {
    json out = json::array();
    for (int64_t p = 0; p < count; ++p) {
      if (p % group_size == 0) group_template = make_template(groups++);
      json pod = group_template;
      pod["metadata"]["name"] = prefix + std::to_string(p);
      place(pod);
      out.push_back(std::move(pod));
    }
    return out;
  };
  // An existing pod goes to the first node from a random one on that has room for its
  // requests, tolerates its taint and matches its region selector; one that fits nowhere is
  // left out (and counted).
  int64_t unplaced = 0;
  auto bind = [&](json& pod) {
    const json& spec = pod["spec"];
    const json& req = spec["containers"][0]["resources"]["requests"];
    const int64_t cpu = std::stoll(req["cpu"].get<std::string>());  // "<n>m"
    const int64_t mem = std::stoll(req["memory"].get<std::string>());  // "<n>Mi"
    const int64_t gpus = req.contains("nvidia.com/gpu") ? std::stoll(req["nvidia.com/gpu"].get<std::string>()) : 0;
    const bool tolerates = spec.contains("tolerations");
    int64_t region = -1;
    if (spec.contains("nodeSelector")) region = std::stoll(spec["nodeSelector"].begin()->get<std::string>().substr(7));
    const int64_t start = static_cast<int64_t>(pick(static_cast<size_t>(nodes)));
    for (int64_t k = 0; k < nodes; ++k) {
      const int64_t i = (start + k) % nodes;
      Room& r = room[static_cast<size_t>(i)];
      if (r.milli_cpu < cpu || r.mem_mi < mem || r.pods < 1 || r.gpus < gpus || (r.tainted && !tolerates) ||
          (region >= 0 && r.region != region)) {
        continue;
      }
      r.milli_cpu -= cpu;
      r.mem_mi -= mem;
      r.pods -= 1;
      r.gpus -= gpus;
      pod["spec"]["nodeName"] = "node-" + std::to_string(i);
      return true;
    }
    ++unplaced;
    return false;
  };
  if (nodes > 0) {
    for (json& pod : make_pods("existing-", pods, [](json&) {})) {
      if (bind(pod)) items.push_back(std::move(pod));
    }
  } else {
    unplaced = pods;
  }
  if (unplaced > 0) {
    std::fprintf(stderr, "kplace gen: %lld of %lld existing pods fit on no node and were left out\n",
                 static_cast<long long>(unplaced), static_cast<long long>(pods));
  }
  auto write = [](const std::string& path, const json& doc) {
    if (path == "-") {
      std::cout << doc.dump(1) << "\n";
      return true;
    }
    std::ofstream out(path);
    out << doc.dump(1) << "\n";
    if (!out) {
      std::fprintf(stderr, "kplace gen: cannot write %s\n", path.c_str());
      return false;
    }
    return true;
  };
  if (!write(output, list)) return 1;
  if (pending > 0) {
    json pend = {{"apiVersion", "v1"}, {"kind", "List"}, {"items", json::array()}};
    pend["items"] = make_pods("pending-", pending, [](json&) {});
    if (!write(pending_output, pend)) return 1;
  }
  if (output != "-") {
    std::fprintf(stderr, "kplace gen: wrote %lld nodes and %lld pods to %s\n", static_cast<long long>(nodes),
                 static_cast<long long>(pods - unplaced), output.c_str());
  }
  return 0;
}

}  // namespace kplace::cli
