// `kplace whatif`: drain, consolidate, replicas, fits and scale-up on a cluster snapshot
// (docs/whatif.md).
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"

#include "kplace/bench/progress.h"
#include "kplace/cli/commands.h"
#include "kplace/cli/flags.h"
#include "kplace/common/strings.h"
#include "kplace/config/config.h"
#include "kplace/cycle/placement_json.h"
#include "kplace/model/decode.h"
#include "kplace/whatif/whatif.h"

namespace kplace::cli {
namespace {

using json = nlohmann::json;

constexpr char kUsage[] =
    "usage: kplace whatif <question> [flags]   (kplace whatif <question> --help)\n\n"
    "Answers a what-if on a cluster snapshot with the scheduler's own cycle, in a transaction that\n"
    "is undone: each answer is what `kplace schedule` decides on the equivalent cluster.\n\n"
    "questions:\n"
    "  drain        delete nodes and re-place the pods the drain evicts: is it drainable, where do they go\n"
    "  consolidate  the drain of each candidate node on its own: which nodes can go\n"
    "  replicas     how many copies of a pod fit, and on which nodes\n"
    "  fits         the nodes a pod passes Filter on, every other node's reason; or the first that fits\n"
    "  scale-up     how many new nodes of each template pending pods need, and where each pod goes\n";

// What every question shares: the cluster, the configuration and the engine.
struct Common {
  std::vector<std::string>* cluster_files;
  std::string* config_file;
  std::string* output;
  std::string* out_file;
  std::string* backend;
  bool* reference;
  std::string* feature_gates;

  explicit Common(Flags& flags)
      : cluster_files(&flags.List("cluster", "cluster snapshot file (JSON or YAML; repeatable); pods without a node are left out")),
        config_file(&flags.String("config", "", "KubeSchedulerConfiguration file (default: the v1.37 default profile)")),
        output(&flags.String("output", "", "json or table (default: table on a terminal, json otherwise)")),
        out_file(&flags.String("output-file", "-", "where to write (- for stdout)")),
        backend(&flags.String("backend", "auto", "engine backend: auto, omp or cuda")),
        reference(&flags.Bool("reference", "use the scalar reference instead of the engine")),
        feature_gates(&flags.String("feature-gates", "", "kube-scheduler feature gates to change from v1.37's defaults")) {}
};

// What a question runs on. Not movable: the scheduler holds the cluster.
struct Loaded {
  bool table = false;  // write a table, not JSON
  ObjectSet cluster;
  SchedulerConfig config;
  cycle::Options options;
  std::optional<Pod> pod;                       // --pod, for the questions that take one
  std::unique_ptr<cycle::Scheduler> scheduler;  // over `cluster`
};

std::optional<Pod> LoadPod(const std::string& file, const ObjectSet& cluster, const char* who);
std::optional<bool> AsTable(const Common& c, const char* who);

// The snapshot's nodes and bound pods, the scheduler's configuration, `pod_file`'s pod
// when given, and the scheduler; null after saying why on stderr, with *rc the exit status
// (2 for a bad flag, 1 for bad input).
std::unique_ptr<Loaded> Load(const Common& c, const char* who, const std::string* pod_file, int* rc) {
  *rc = 2;
  if (c.cluster_files->empty()) {
    std::fprintf(stderr, "%s: --cluster is required (see --help)\n", who);
    return nullptr;
  }
  if (pod_file && pod_file->empty()) {
    std::fprintf(stderr, "%s: --pod is required (see --help)\n", who);
    return nullptr;
  }
  auto out_ptr = std::make_unique<Loaded>();
  Loaded& out = *out_ptr;
  const std::optional<bool> table = AsTable(c, who);
  if (!table) return nullptr;
  out.table = *table;
  out.options.reference = *c.reference;
  if (!*c.reference && !ParseBackend(*c.backend, &out.options.backend)) return nullptr;
  if (!ParseFeatureGates("whatif", *c.feature_gates, &out.options.gates)) return nullptr;
  *rc = 1;
  SkippedKinds skipped;
  for (const std::string& f : *c.cluster_files) {
    if (absl::Status s = DecodeFile(f, &out.cluster, &skipped); !s.ok()) {
      std::fprintf(stderr, "%s: %s\n", who, std::string(s.message()).c_str());
      return nullptr;
    }
  }
  if (!skipped.empty()) std::fprintf(stderr, "%s: %s\n", who, SkippedLine(skipped).c_str());
  std::vector<Pod> bound;
  int64_t pending = 0;
  for (Pod& p : out.cluster.pods) {
    if (p.node_name.empty() && p.phase != "Succeeded" && p.phase != "Failed") {
      ++pending;
    } else {
      bound.push_back(std::move(p));
    }
  }
  out.cluster.pods = std::move(bound);
  if (pending > 0) {
    std::fprintf(stderr, "%s: %lld pending pod(s) in the snapshot left out (`kplace schedule` places them)\n", who,
                 static_cast<long long>(pending));
  }
  if (absl::Status s = ResolvePriorities(out.cluster, &out.cluster.pods, who); !s.ok()) {
    std::fprintf(stderr, "%s\n", std::string(s.message()).c_str());
    return nullptr;
  }
  out.config = DefaultSchedulerConfig();
  if (!c.config_file->empty()) {
    auto config = LoadSchedulerConfig(*c.config_file);
    if (!config.ok()) {
      std::fprintf(stderr, "%s: %s\n", who, std::string(config.status().message()).c_str());
      return nullptr;
    }
    out.config = *config;
  }
  if (pod_file) {
    out.pod = LoadPod(*pod_file, out.cluster, who);
    if (!out.pod) return nullptr;
  }
  auto scheduler = cycle::Scheduler::Create(out.cluster, out.config, out.options);
  if (!scheduler.ok()) {
    std::fprintf(stderr, "%s: %s\n", who, std::string(scheduler.status().message()).c_str());
    return nullptr;
  }
  out.scheduler = std::move(*scheduler);
  return out_ptr;
}

// The one pod of --pod, its priority resolved against the cluster's PriorityClasses;
// nullopt after saying why on stderr.
std::optional<Pod> LoadPod(const std::string& file, const ObjectSet& cluster, const char* who) {
  ObjectSet set;
  if (absl::Status s = DecodeFile(file, &set); !s.ok()) {
    std::fprintf(stderr, "%s: %s\n", who, std::string(s.message()).c_str());
    return std::nullopt;
  }
  if (set.pods.size() != 1 || !set.nodes.empty()) {
    std::fprintf(stderr, "%s: --pod %s: expected exactly one Pod and no other object, got %zu pod(s)\n", who, file.c_str(),
                 set.pods.size());
    return std::nullopt;
  }
  if (absl::Status s = ResolvePriorities(cluster, &set.pods, file); !s.ok()) {
    std::fprintf(stderr, "%s: %s\n", who, std::string(s.message()).c_str());
    return std::nullopt;
  }
  return std::move(set.pods[0]);
}

// Node names from a repeatable flag whose values may also be comma-separated.
std::vector<std::string> NodeNames(const std::vector<std::string>& flag) {
  std::vector<std::string> out;
  for (const std::string& v : flag) {
    for (const std::string& part : std::vector<std::string>(absl::StrSplit(v, ',', absl::SkipEmpty()))) out.push_back(part);
  }
  return out;
}

const Profile& ProfileOf(const SchedulerConfig& config, const std::string& scheduler_name) {
  static const Profile kNone;  // a pod for another scheduler runs no plugin
  for (const Profile& p : config.profiles) {
    if (p.scheduler_name == scheduler_name) return p;
  }
  return kNone;
}

json DrainJson(const whatif::DrainResult& r, const SchedulerConfig& config, const std::vector<std::string>& scheduler_of) {
  json pods = json::array();
  for (size_t k = 0; k < r.pods.size(); ++k) {
    pods.push_back(cycle::PlacementJson(r.pods[k], false, ProfileOf(config, scheduler_of[k])));
  }
  json pdbs = json::array();
  for (const whatif::PdbViolation& v : r.pdb_violations) {
    pdbs.push_back({{"pdb", v.pdb}, {"evicted", v.evicted}, {"disruptionsAllowed", v.allowed}});
  }
  return {{"nodes", r.nodes}, {"drainable", r.drainable}, {"pods", pods}, {"pdbViolations", pdbs}};
}

// Each bound pod's schedulerName by key: a drain's pods report under their own profile.
std::map<std::string, std::string> SchedulerNames(const ObjectSet& cluster) {
  std::map<std::string, std::string> out;
  for (const Pod& p : cluster.pods) out[ObjectKey(p.meta)] = p.scheduler_name;
  return out;
}

std::vector<std::string> SchedulersOf(const whatif::DrainResult& r, const std::map<std::string, std::string>& names) {
  std::vector<std::string> out;
  for (const cycle::Placement& p : r.pods) out.push_back(names.at(p.pod));
  return out;
}

std::string DrainLines(const whatif::DrainResult& r) {
  std::string text;
  for (const cycle::Placement& p : r.pods) {
    text += StrCat("  ", p.pod, " -> ", p.node.empty() ? StrCat("(none) ", p.message) : p.node, "\n");
  }
  for (const whatif::PdbViolation& v : r.pdb_violations) {
    text += StrCat("  PodDisruptionBudget ", v.pdb, ": ", v.evicted, " evicted, ", v.allowed, " disruption(s) allowed\n");
  }
  return text;
}

int Write(const std::string& text, const std::string& out_file, const char* who) {
  if (out_file == "-") {
    std::fwrite(text.data(), 1, text.size(), stdout);
    return 0;
  }
  std::ofstream out(out_file);
  out << text;
  if (!out) {
    std::fprintf(stderr, "%s: cannot write %s\n", who, out_file.c_str());
    return 1;
  }
  return 0;
}

// json or table, the default by where the output goes; nullopt after an error.
std::optional<bool> AsTable(const Common& c, const char* who) {
  if (c.output->empty()) return *c.out_file == "-" && ::isatty(STDOUT_FILENO);
  if (*c.output == "table") return true;
  if (*c.output == "json") return false;
  std::fprintf(stderr, "%s: --output must be json or table, got \"%s\"\n", who, c.output->c_str());
  return std::nullopt;
}

int Drain(int argc, char** argv, bool consolidate) {
  const char* who = consolidate ? "kplace whatif consolidate" : "kplace whatif drain";
  Flags flags(consolidate ? "whatif consolidate" : "whatif drain",
              consolidate ? "For each candidate node on its own, the drain question on the otherwise unchanged cluster:\n"
                            "which nodes can go (every evicted pod placed elsewhere without preemption, no\n"
                            "PodDisruptionBudget violated) and where their pods would land."
                          : "Deletes the nodes with their pods and schedules the pods a drain evicts (not DaemonSet pods,\n"
                            "mirror pods, completed or terminating ones) in queue order through the full cycle: per pod\n"
                            "the node or the scheduler's message, the PodDisruptionBudgets the eviction violates, and\n"
                            "whether the drain is clean.");
  Common common(flags);
  std::vector<std::string>& nodes = consolidate ? flags.List("candidates", "candidate node (repeatable, or comma-separated; default: every node)")
                                                : flags.List("node", "node to drain (repeatable, or comma-separated)");
  int64_t* jobs = consolidate ? &flags.Int("jobs", 1,
                                           "share the candidates among N copies of the cluster on threads of their own "
                                           "(each copy costs the cluster's memory; the answer is the same)")
                               : nullptr;
  if (int rc = flags.Parse(argc, argv); rc >= 0) return rc;
  if (jobs && (*jobs < 1 || *jobs > 64)) {
    std::fprintf(stderr, "%s: --jobs must be 1 to 64\n", who);
    return 2;
  }
  const std::vector<std::string> names = NodeNames(nodes);
  if (!consolidate && names.empty()) {
    std::fprintf(stderr, "%s: --node is required (see --help)\n", who);
    return 2;
  }
  int rc = 0;
  std::unique_ptr<Loaded> in = Load(common, who, nullptr, &rc);
  if (!in) return rc;
  cycle::Scheduler* scheduler = in->scheduler.get();
  std::vector<whatif::DrainResult> results;
  if (consolidate) {
    // Progress on stderr (a bar on a terminal, else a line every 2 s): thousands of
    // candidates take minutes.
    bench::ProgressLine progress;
    auto last = std::chrono::steady_clock::now();
    // The copies are built as the first was, from the same objects: the same state.
    std::vector<std::unique_ptr<cycle::Scheduler>> copies;
    std::vector<cycle::Scheduler*> states = {scheduler};
    for (int64_t k = 1; k < *jobs; ++k) {
      auto copy = cycle::Scheduler::Create(in->cluster, in->config, in->options);
      if (!copy.ok()) {
        std::fprintf(stderr, "%s: %s\n", who, std::string(copy.status().message()).c_str());
        return 1;
      }
      copies.push_back(std::move(*copy));
      states.push_back(copies.back().get());
    }
    auto r = whatif::Consolidate(states, names, [&](size_t done, size_t total) {
      const auto now = std::chrono::steady_clock::now();
      if (std::chrono::duration<double>(now - last).count() < progress.interval_seconds()) return;
      progress.Update(who, static_cast<int64_t>(done), static_cast<int64_t>(total), "candidates");
      last = now;
    });
    progress.Clear();
    if (!r.ok()) {
      std::fprintf(stderr, "%s: --candidates: %s\n", who, std::string(r.status().message()).c_str());
      return 1;
    }
    results = std::move(*r);
  } else {
    auto r = whatif::Drain(scheduler, names);
    if (!r.ok()) {
      std::fprintf(stderr, "%s: --node: %s\n", who, std::string(r.status().message()).c_str());
      return 1;
    }
    results.push_back(std::move(*r));
  }
  std::string text;
  if (in->table) {
    int64_t removable = 0;
    for (const whatif::DrainResult& r : results) {
      removable += r.drainable;
      text += StrCat(absl::StrJoin(r.nodes, ", "), r.drainable ? ": drainable" : ": not drainable", " (", r.pods.size(),
                     r.pods.size() == 1 ? " pod evicted)\n" : " pods evicted)\n", DrainLines(r));
    }
    if (consolidate) text += StrCat(removable, " of ", results.size(), " candidate node(s) can go\n");
  } else if (consolidate) {
    const std::map<std::string, std::string> names = SchedulerNames(in->cluster);
    json candidates = json::array();
    for (const whatif::DrainResult& r : results) {
      json one = DrainJson(r, in->config, SchedulersOf(r, names));
      candidates.push_back({{"node", r.nodes[0]}, {"removable", r.drainable}, {"pods", one["pods"]},
                            {"pdbViolations", one["pdbViolations"]}});
    }
    text = json{{"candidates", candidates}}.dump(2, ' ', false, json::error_handler_t::replace) + "\n";
  } else {
    text = DrainJson(results[0], in->config, SchedulersOf(results[0], SchedulerNames(in->cluster)))
               .dump(2, ' ', false, json::error_handler_t::replace) + "\n";
  }
  return Write(text, *common.out_file, who);
}

int Replicas(int argc, char** argv) {
  const char* who = "kplace whatif replicas";
  Flags flags("whatif replicas",
              "How many copies of a pod fit (scheduler-library's SchedulePodsByTemplate): copies scheduled one\n"
              "after another through the full cycle, without preemption, until one finds no node or --max\n"
              "are placed. Writes the count, the copies per node, and the first copy's message that did not fit.");
  Common common(flags);
  std::string& pod_file = flags.String("pod", "", "the pod to copy (a Pod, JSON or YAML; spec.nodeName unset)");
  int64_t& max = flags.Int("max", 1000, "stop after this many copies");
  if (int rc = flags.Parse(argc, argv); rc >= 0) return rc;
  if (max < 1) {
    std::fprintf(stderr, "%s: --max must be at least 1, got %lld\n", who, static_cast<long long>(max));
    return 2;
  }
  int rc = 0;
  std::unique_ptr<Loaded> in = Load(common, who, &pod_file, &rc);
  if (!in) return rc;
  auto r = whatif::Replicas(in->scheduler.get(), *in->pod, max);
  if (!r.ok()) {
    std::fprintf(stderr, "%s: --pod %s: %s\n", who, pod_file.c_str(), std::string(r.status().message()).c_str());
    return 1;
  }
  std::string text;
  if (in->table) {
    text = StrCat(r->replicas, r->replicas == 1 ? " copy fits" : " copies fit",
                  r->stopped_by ? StrCat("; the next: ", r->stopped_by->message) : StrCat(" (--max ", max, ")"), "\n");
    for (const auto& [node, n] : r->per_node) text += StrCat("  ", node, ": ", n, "\n");
  } else {
    json doc = {{"replicas", r->replicas}, {"perNode", r->per_node}, {"stoppedBy", nullptr}};
    if (r->stopped_by) {
      doc["stoppedBy"] = cycle::PlacementJson(*r->stopped_by, false, ProfileOf(in->config, in->pod->scheduler_name));
    }
    text = doc.dump(2, ' ', false, json::error_handler_t::replace) + "\n";
  }
  return Write(text, *common.out_file, who);
}

int Fits(int argc, char** argv) {
  const char* who = "kplace whatif fits";
  Flags flags("whatif fits",
              "The nodes a pod passes PreFilter and Filter on (scheduler-library's CanSchedulePod), with every\n"
              "other node's plugin and reason; --first-fit: the first node of --nodes' order (default: the\n"
              "scheduler's scan order) that fits (Cluster Autoscaler's predicate check). Nothing is bound.");
  Common common(flags);
  std::string& pod_file = flags.String("pod", "", "the pod (a Pod, JSON or YAML; spec.nodeName unset)");
  std::vector<std::string>& node_flags = flags.List("nodes", "candidate nodes, in order (repeatable, or comma-separated; default: every node in scan order)");
  bool& first_fit = flags.Bool("first-fit", "stop at the first node that fits and write it alone");
  if (int rc = flags.Parse(argc, argv); rc >= 0) return rc;
  const std::vector<std::string> nodes = NodeNames(node_flags);
  int rc = 0;
  std::unique_ptr<Loaded> in = Load(common, who, &pod_file, &rc);
  if (!in) return rc;
  std::string text;
  if (first_fit) {
    auto r = whatif::FirstFit(in->scheduler.get(), *in->pod, nodes);
    if (!r.ok()) {
      std::fprintf(stderr, "%s: %s\n", who, std::string(r.status().message()).c_str());
      return 1;
    }
    text = in->table ? StrCat(r->value_or("(no node fits)"), "\n")
                  : json{{"node", *r ? json(**r) : json(nullptr)}}.dump(2) + "\n";
    return Write(text, *common.out_file, who);
  }
  auto r = whatif::CanSchedulePod(in->scheduler.get(), *in->pod, nodes);
  if (!r.ok()) {
    std::fprintf(stderr, "%s: %s\n", who, std::string(r.status().message()).c_str());
    return 1;
  }
  json fits = json::array(), rejected = json::array();
  std::map<std::string, int64_t> reasons;
  for (const cycle::NodeFit& f : *r) {
    if (f.status.IsSuccess()) {
      fits.push_back(f.node);
      continue;
    }
    rejected.push_back({{"node", f.node}, {"plugin", f.plugin}, {"code", CodeName(f.status.code)}, {"reason", f.status.Message()}});
    ++reasons[StrCat(f.plugin, ": ", f.status.Message())];
  }
  if (in->table) {
    // A terminal line, not a wall of names: the first 20, then how many more.
    text = StrCat("fits on ", fits.size(), " of ", r->size(), " node(s)", fits.empty() ? "" : ": ");
    for (size_t k = 0; k < fits.size() && k < 20; ++k) text += StrCat(k ? ", " : "", fits[k].get<std::string>());
    if (fits.size() > 20) text += StrCat(" and ", fits.size() - 20, " more (--output json lists them)");
    text += "\n";
    for (const auto& [reason, n] : reasons) text += StrCat("  ", n, " node(s): ", reason, "\n");
  } else {
    text = json{{"fits", fits}, {"rejected", rejected}}.dump(2, ' ', false, json::error_handler_t::replace) + "\n";
  }
  return Write(text, *common.out_file, who);
}

// `file` of `flag` decoded into *set; false after saying why on stderr.
bool DecodeFlagFile(const std::string& file, const char* flag, const char* who, ObjectSet* set) {
  if (absl::Status s = DecodeFile(file, set); !s.ok()) {
    std::fprintf(stderr, "%s: %s %s\n", who, flag, std::string(s.message()).c_str());
    return false;
  }
  return true;
}

// The pending pods of --pods: each file's pods, none bound and none given twice, their
// priorities resolved; nullopt after saying why (file, pod, field) on stderr.
std::optional<std::vector<Pod>> LoadPending(const std::vector<std::string>& files, const ObjectSet& cluster, const char* who) {
  std::vector<Pod> out;
  std::map<std::string, std::string> seen;  // key -> file
  for (const std::string& f : files) {
    ObjectSet set;
    if (!DecodeFlagFile(f, "--pods", who, &set)) return std::nullopt;
    if (!set.nodes.empty()) {
      std::fprintf(stderr, "%s: --pods %s: Node %s: pending pods only (templates go in --node-template)\n", who, f.c_str(),
                   set.nodes[0].meta.name.c_str());
      return std::nullopt;
    }
    for (const Pod& p : set.pods) {
      const std::string key = ObjectKey(p.meta);
      if (!p.node_name.empty()) {
        std::fprintf(stderr, "%s: --pods %s: Pod %s: spec.nodeName is set (%s): a pending pod has none\n", who, f.c_str(),
                     key.c_str(), p.node_name.c_str());
        return std::nullopt;
      }
      if (auto [it, fresh] = seen.emplace(key, f); !fresh) {
        std::fprintf(stderr, "%s: --pods %s: Pod %s is given twice (also in %s)\n", who, f.c_str(), key.c_str(),
                     it->second.c_str());
        return std::nullopt;
      }
    }
    if (absl::Status s = ResolvePriorities(cluster, &set.pods, f); !s.ok()) {
      std::fprintf(stderr, "%s: --pods %s\n", who, std::string(s.message()).c_str());
      return std::nullopt;
    }
    for (Pod& p : set.pods) out.push_back(std::move(p));
  }
  return out;
}

// The Nodes of --node-template, in the order given, each name once; nullopt after saying
// why on stderr.
std::optional<std::vector<Node>> LoadTemplates(const std::vector<std::string>& files, const char* who) {
  std::vector<Node> out;
  std::map<std::string, std::string> seen;  // name -> file
  for (const std::string& f : files) {
    ObjectSet set;
    if (!DecodeFlagFile(f, "--node-template", who, &set)) return std::nullopt;
    if (set.nodes.empty() || !set.pods.empty()) {
      std::fprintf(stderr, "%s: --node-template %s: expected Nodes only, got %zu Node(s) and %zu Pod(s)\n", who, f.c_str(),
                   set.nodes.size(), set.pods.size());
      return std::nullopt;
    }
    for (Node& n : set.nodes) {
      if (auto [it, fresh] = seen.emplace(n.meta.name, f); !fresh) {
        std::fprintf(stderr, "%s: --node-template %s: Node %s: metadata.name is taken by a template in %s\n", who, f.c_str(),
                     n.meta.name.c_str(), it->second.c_str());
        return std::nullopt;
      }
      out.push_back(std::move(n));
    }
  }
  return out;
}

int ScaleUp(int argc, char** argv) {
  const char* who = "kplace whatif scale-up";
  Flags flags("whatif scale-up",
              "How many new nodes of each template the pending pods need (Cluster Autoscaler's binpacking\n"
              "estimator, with the scheduler's own PreFilter and Filter): pods grouped by controller and\n"
              "spec, largest group first; each pod on the first node it fits (existing or added), else a\n"
              "new node of the first template whose empty node it fits. Writes the new nodes per template\n"
              "and each pending pod's node or why it stays pending (docs/whatif.md).");
  Common common(flags);
  std::vector<std::string>& pod_files = flags.List("pods", "pending pods (JSON or YAML)");
  std::vector<std::string>& template_files = flags.List("node-template", "node templates: a Node or a List of them, tried in the order given");
  int64_t& max_nodes = flags.Int("max-nodes", 1000, "add at most this many new nodes over all templates");
  if (int rc = flags.Parse(argc, argv); rc >= 0) return rc;
  if (pod_files.empty() || template_files.empty()) {
    std::fprintf(stderr, "%s: --pods and --node-template are required (see --help)\n", who);
    return 2;
  }
  if (max_nodes < 0) {
    std::fprintf(stderr, "%s: --max-nodes must not be negative, got %lld\n", who, static_cast<long long>(max_nodes));
    return 2;
  }
  int rc = 0;
  std::unique_ptr<Loaded> in = Load(common, who, nullptr, &rc);
  if (!in) return rc;
  const std::optional<std::vector<Pod>> pending = LoadPending(pod_files, in->cluster, who);
  if (!pending) return 1;
  const std::optional<std::vector<Node>> templates = LoadTemplates(template_files, who);
  if (!templates) return 1;
  auto r = whatif::ScaleUp(in->scheduler.get(), *pending, *templates, whatif::ScaleUpOptions{max_nodes});
  if (!r.ok()) {
    std::fprintf(stderr, "%s: %s\n", who, std::string(r.status().message()).c_str());
    return 1;
  }
  std::string text;
  if (in->table) {
    std::set<std::string> added;
    for (const Node& n : r->nodes) added.insert(n.meta.name);
    int64_t on_new = 0, left = 0;
    std::map<std::string, int64_t> reasons;
    for (const cycle::Placement& p : r->pods) {
      if (p.node.empty()) {
        ++left;
        ++reasons[p.message];
      }
      on_new += added.count(p.node);
    }
    size_t width = 8;  // "TEMPLATE"
    for (const Node& t : *templates) width = std::max(width, t.meta.name.size());
    text = StrCat("TEMPLATE", std::string(width - 8 + 2, ' '), "NEW NODES\n");
    for (const Node& t : *templates) {
      text += StrCat(t.meta.name, std::string(width - t.meta.name.size() + 2, ' '), r->new_nodes.at(t.meta.name), "\n");
    }
    text += StrCat(static_cast<int64_t>(r->pods.size()) - left - on_new, " pod(s) on existing nodes, ", on_new,
                   " on new nodes, ", left, " pending\n");
    for (const auto& [reason, n] : reasons) text += StrCat("  ", n, " pod(s): ", reason, "\n");
  } else {
    std::map<std::string, std::string> scheduler_of;
    for (const Pod& p : *pending) scheduler_of[ObjectKey(p.meta)] = p.scheduler_name;
    json pods = json::array();
    for (const cycle::Placement& p : r->pods) pods.push_back(cycle::PlacementJson(p, false, ProfileOf(in->config, scheduler_of.at(p.pod))));
    text = json{{"newNodes", r->new_nodes}, {"pending", pods}}.dump(2, ' ', false, json::error_handler_t::replace) + "\n";
  }
  return Write(text, *common.out_file, who);
}

}  // namespace

int RunWhatIf(int argc, char** argv) {
  const std::string question = argc > 1 ? argv[1] : "";
  if (question == "drain") return Drain(argc - 1, argv + 1, false);
  if (question == "consolidate") return Drain(argc - 1, argv + 1, true);
  if (question == "replicas") return Replicas(argc - 1, argv + 1);
  if (question == "fits") return Fits(argc - 1, argv + 1);
  if (question == "scale-up") return ScaleUp(argc - 1, argv + 1);
  const bool help = question == "--help" || question == "-h" || question == "help";
  if (question.empty()) {
    std::fputs("kplace whatif: a question is required\n\n", stderr);
  } else if (!help) {
    std::fprintf(stderr, "kplace whatif: unknown question \"%s\"\n\n", question.c_str());
  }
  std::fputs(kUsage, help ? stdout : stderr);
  return help ? 0 : 2;
}

}  // namespace kplace::cli
