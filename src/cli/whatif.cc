// `kplace whatif`: drain, consolidate and replicas on a cluster snapshot (docs/whatif.md).
#include <unistd.h>

#include <cstdio>
#include <fstream>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"

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
    "  replicas     how many copies of a pod fit, and on which nodes\n";

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

struct Loaded {
  ObjectSet cluster;
  SchedulerConfig config;
  cycle::Options options;
};

// The snapshot's nodes and bound pods, and the scheduler's configuration; nullopt after
// saying why on stderr.
std::optional<Loaded> Load(const Common& c, const char* who) {
  if (c.cluster_files->empty()) {
    std::fprintf(stderr, "%s: --cluster is required (see --help)\n", who);
    return std::nullopt;
  }
  Loaded out;
  out.options.reference = *c.reference;
  if (!*c.reference && !ParseBackend(*c.backend, &out.options.backend)) return std::nullopt;
  if (!ParseFeatureGates("whatif", *c.feature_gates, &out.options.gates)) return std::nullopt;
  SkippedKinds skipped;
  for (const std::string& f : *c.cluster_files) {
    if (absl::Status s = DecodeFile(f, &out.cluster, &skipped); !s.ok()) {
      std::fprintf(stderr, "%s: %s\n", who, std::string(s.message()).c_str());
      return std::nullopt;
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
    return std::nullopt;
  }
  out.config = DefaultSchedulerConfig();
  if (!c.config_file->empty()) {
    auto config = LoadSchedulerConfig(*c.config_file);
    if (!config.ok()) {
      std::fprintf(stderr, "%s: %s\n", who, std::string(config.status().message()).c_str());
      return std::nullopt;
    }
    out.config = *config;
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
  if (int rc = flags.Parse(argc, argv); rc >= 0) return rc;
  std::vector<std::string> names;
  for (const std::string& n : nodes) {
    for (const std::string& part : std::vector<std::string>(absl::StrSplit(n, ',', absl::SkipEmpty()))) names.push_back(part);
  }
  if (!consolidate && names.empty()) {
    std::fprintf(stderr, "%s: --node is required (see --help)\n", who);
    return 2;
  }
  const std::optional<bool> table = AsTable(common, who);
  if (!table) return 2;
  std::optional<Loaded> in = Load(common, who);
  if (!in) return 1;
  auto scheduler = cycle::Scheduler::Create(in->cluster, in->config, in->options);
  if (!scheduler.ok()) {
    std::fprintf(stderr, "%s: %s\n", who, std::string(scheduler.status().message()).c_str());
    return 1;
  }
  std::vector<whatif::DrainResult> results;
  if (consolidate) {
    auto r = whatif::Consolidate(scheduler->get(), names);
    if (!r.ok()) {
      std::fprintf(stderr, "%s: --candidates: %s\n", who, std::string(r.status().message()).c_str());
      return 1;
    }
    results = std::move(*r);
  } else {
    auto r = whatif::Drain(scheduler->get(), names);
    if (!r.ok()) {
      std::fprintf(stderr, "%s: --node: %s\n", who, std::string(r.status().message()).c_str());
      return 1;
    }
    results.push_back(std::move(*r));
  }
  std::string text;
  if (*table) {
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
  if (pod_file.empty()) {
    std::fprintf(stderr, "%s: --pod is required (see --help)\n", who);
    return 2;
  }
  if (max < 1) {
    std::fprintf(stderr, "%s: --max must be at least 1, got %lld\n", who, static_cast<long long>(max));
    return 2;
  }
  const std::optional<bool> table = AsTable(common, who);
  if (!table) return 2;
  std::optional<Loaded> in = Load(common, who);
  if (!in) return 1;
  ObjectSet set;
  if (absl::Status s = DecodeFile(pod_file, &set); !s.ok()) {
    std::fprintf(stderr, "%s: %s\n", who, std::string(s.message()).c_str());
    return 1;
  }
  if (set.pods.size() != 1 || !set.nodes.empty()) {
    std::fprintf(stderr, "%s: --pod %s: expected exactly one Pod and no other object, got %zu pod(s)\n", who, pod_file.c_str(),
                 set.pods.size());
    return 1;
  }
  if (absl::Status s = ResolvePriorities(in->cluster, &set.pods, pod_file); !s.ok()) {
    std::fprintf(stderr, "%s: %s\n", who, std::string(s.message()).c_str());
    return 1;
  }
  auto scheduler = cycle::Scheduler::Create(in->cluster, in->config, in->options);
  if (!scheduler.ok()) {
    std::fprintf(stderr, "%s: %s\n", who, std::string(scheduler.status().message()).c_str());
    return 1;
  }
  auto r = whatif::Replicas(scheduler->get(), set.pods[0], max);
  if (!r.ok()) {
    std::fprintf(stderr, "%s: --pod %s: %s\n", who, pod_file.c_str(), std::string(r.status().message()).c_str());
    return 1;
  }
  std::string text;
  if (*table) {
    text = StrCat(r->replicas, r->replicas == 1 ? " copy fits" : " copies fit",
                  r->stopped_by ? StrCat("; the next: ", r->stopped_by->message) : StrCat(" (--max ", max, ")"), "\n");
    for (const auto& [node, n] : r->per_node) text += StrCat("  ", node, ": ", n, "\n");
  } else {
    json doc = {{"replicas", r->replicas}, {"perNode", r->per_node}, {"stoppedBy", nullptr}};
    if (r->stopped_by) {
      doc["stoppedBy"] = cycle::PlacementJson(*r->stopped_by, false, ProfileOf(in->config, set.pods[0].scheduler_name));
    }
    text = doc.dump(2, ' ', false, json::error_handler_t::replace) + "\n";
  }
  return Write(text, *common.out_file, who);
}

}  // namespace

int RunWhatIf(int argc, char** argv) {
  const std::string question = argc > 1 ? argv[1] : "";
  if (question == "drain") return Drain(argc - 1, argv + 1, false);
  if (question == "consolidate") return Drain(argc - 1, argv + 1, true);
  if (question == "replicas") return Replicas(argc - 1, argv + 1);
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
