// `kplace schedule` and `kplace explain`: a real snapshot plus pending pods in, placements out.
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <deque>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <limits>
#include <map>
#include <set>
#include <unordered_set>

#include <nlohmann/json.hpp>
#include <yaml-cpp/yaml.h>

#include "kplace/bench/progress.h"
#include "kplace/cli/commands.h"
#include "kplace/cli/explain_table.h"
#include "kplace/cli/flags.h"
#include "kplace/cli/klog.h"
#include "kplace/common/status.h"
#include "kplace/common/strings.h"
#include "kplace/config/config.h"
#include "kplace/cycle/batch.h"
#include "kplace/cycle/node_order.h"
#include "kplace/cycle/placement_json.h"
#include "kplace/cycle/preemption.h"
#include "kplace/cycle/queue.h"
#include "kplace/cycle/scheduler.h"
#include "kplace/model/decode.h"
#include "kplace/model/decode_notes.h"
#include "kplace/model/input_file.h"
#include "kplace/reference/plugin.h"
#include "kplace/state/event.h"

namespace kplace::cli {
namespace {

using json = nlohmann::json;
using cycle::PlacementJson;

void EmitYaml(YAML::Emitter& out, const json& j) {
  if (j.is_object()) {
    out << YAML::BeginMap;
    for (auto it = j.begin(); it != j.end(); ++it) {
      out << YAML::Key << it.key() << YAML::Value;
      EmitYaml(out, it.value());
    }
    out << YAML::EndMap;
  } else if (j.is_array()) {
    out << YAML::BeginSeq;
    for (const json& e : j) EmitYaml(out, e);
    out << YAML::EndSeq;
  } else if (j.is_string()) {
    out << YAML::DoubleQuoted << j.get<std::string>();
  } else if (j.is_null()) {
    out << YAML::Null;
  } else {
    out << j.dump();
  }
}

std::string ToYaml(const json& j) {
  YAML::Emitter out;
  EmitYaml(out, j);
  return std::string(out.c_str()) + "\n";
}

// The PodScheduled condition the scheduler leaves on the pod (replacing any earlier one).
void SetPodScheduled(const cycle::Placement& p, json* pod) {
  // A PreEnqueue plugin other than SchedulingGates leaves the pod's status as it was.
  if (p.gated && p.gating_plugin != "SchedulingGates") return;
  json cond = {{"type", "PodScheduled"}};
  if (!p.node.empty()) {
    cond["status"] = "True";
  } else if (p.gated) {
    cond.update({{"status", "False"}, {"reason", "SchedulingGated"},
                 {"message", "Scheduling is blocked due to non-empty scheduling gates"}});
  } else {
    cond.update({{"status", "False"}, {"reason", p.code == Code::kError ? "SchedulerError" : "Unschedulable"},
                 {"message", p.message}});
  }
  json& status = (*pod)["status"];
  json conditions = json::array();
  if (status.is_object() && status.contains("conditions") && status["conditions"].is_array()) {
    for (const json& c : status["conditions"]) {
      if (!(c.is_object() && c.value("type", "") == "PodScheduled")) conditions.push_back(c);
    }
  }
  conditions.push_back(cond);
  status["conditions"] = conditions;
}

// The simulator's annotations on the pod: the last attempt's results and result-history
// extended by this run's attempts (`attempts`; empty: the last alone).
void SetAnnotations(const cycle::Placement& p, const Profile& profile, const std::vector<json>& attempts, json* pod) {
  json& on_pod = (*pod)["metadata"]["annotations"];
  std::string previous = "[]";
  if (on_pod.is_object() && on_pod.contains(cycle::kResultHistoryKey) && on_pod[cycle::kResultHistoryKey].is_string()) {
    previous = on_pod[cycle::kResultHistoryKey].get<std::string>();
  }
  // Kept in a variable: items() of a temporary would outlive it (a use-after-free once).
  const json annotations = cycle::PodAnnotations(p, profile, previous, attempts);
  for (const auto& [key, value] : annotations.items()) on_pod[key] = value;
}

// kube-scheduler's -v=10 score lines for one cycle, headed as klog heads them.
void PrintKlog(const cycle::Placement& p, FILE* out) {
  static const int64_t pid = ::getpid();
  for (const std::string& line : KlogScoreLines(p, std::chrono::system_clock::now(), pid)) {
    std::fputs(line.c_str(), out);
  }
}

std::string OwnerOf(const Pod& p) {
  for (const OwnerReference& o : p.meta.owner_references) {
    if (o.controller) return p.meta.namespace_ + "/" + o.kind + "/" + o.name;
  }
  return "";
}

// Replicas per workload that survive the loss of the worst node, zone and region. A pod on a
// node without a zone (region) label is in no zone and survives any zone's loss; a workload
// with no pod in any zone gets null: there is no zone to lose. Completed pods and static
// (mirror) pods, whose controller is their Node, are no replicas.
json SurvivalReport(const ObjectSet& cluster, const std::vector<std::pair<const Pod*, std::string>>& placed) {
  std::map<std::string, const Node*> nodes;
  for (const Node& n : cluster.nodes) nodes[n.meta.name] = &n;
  struct Counts {
    int64_t total = 0;
    std::map<std::string, int64_t> node, zone, region;
  };
  std::map<std::string, Counts> by_owner;
  auto add = [&](const Pod& p, const std::string& node) {
    if (p.phase == "Succeeded" || p.phase == "Failed") return;
    for (const OwnerReference& o : p.meta.owner_references) {
      if (o.controller && o.kind == "Node") return;
    }
    std::string owner = OwnerOf(p);
    auto it = nodes.find(node);
    if (owner.empty() || it == nodes.end()) return;
    Counts& c = by_owner[owner];
    const Labels& l = it->second->meta.labels;
    auto label = [&](const char* key) { auto f = l.find(key); return f == l.end() ? std::string() : f->second; };
    ++c.total;
    ++c.node[node];
    if (std::string zone = label("topology.kubernetes.io/zone"); !zone.empty()) ++c.zone[zone];
    if (std::string region = label("topology.kubernetes.io/region"); !region.empty()) ++c.region[region];
  };
  for (const Pod& p : cluster.pods) {
    if (!p.node_name.empty()) add(p, p.node_name);
  }
  for (const auto& [pod, node] : placed) add(*pod, node);
  json out = json::array();
  auto surviving = [](int64_t total, const std::map<std::string, int64_t>& domains) {
    if (domains.empty()) return json(nullptr);
    int64_t w = 0;
    for (const auto& [k, v] : domains) w = std::max(w, v);
    return json(total - w);
  };
  for (const auto& [owner, c] : by_owner) {
    out.push_back({{"workload", owner},
                   {"replicas", c.total},
                   {"survivingWorstNodeLoss", surviving(c.total, c.node)},
                   {"survivingWorstZoneLoss", surviving(c.total, c.zone)},
                   {"survivingWorstRegionLoss", surviving(c.total, c.region)}});
  }
  return out;
}

// The default profile names plugins a build may not have yet; leave those out loudly.
void DropUnbuiltDefaults(SchedulerConfig* config, const cycle::Options& options, const char* who) {
  std::vector<std::string> built = options.reference ? reference::RegisteredPlugins()
                                                     : engine::RegisteredPlugins(options.backend);
  std::set<std::string> missing;
  auto keep = [&](const std::string& n) {
    bool ok = std::find(built.begin(), built.end(), n) != built.end();
    if (!ok) missing.insert(n);
    return ok;
  };
  for (Profile& p : config->profiles) {
    for (auto* v : {&p.pre_filter, &p.filter, &p.pre_score}) {
      v->erase(std::remove_if(v->begin(), v->end(), [&](const std::string& n) { return !keep(n); }), v->end());
    }
    p.score.erase(std::remove_if(p.score.begin(), p.score.end(), [&](const WeightedPlugin& w) { return !keep(w.name); }),
                  p.score.end());
  }
  if (missing.empty()) return;
  std::string names;
  for (const std::string& n : missing) names += (names.empty() ? "" : ", ") + n;
  std::fprintf(stderr, "%s: warning: default plugins not built in this kplace, left out: %s\n", who, names.c_str());
}

// Replays `*text` (`file`'s, one watch event per line) through a scheduling queue over
// `scheduler`, after the pending pods of the snapshot. Stops at the first bad event.
absl::Status ReplayEvents(const std::string& file, std::string* text_in, const ObjectSet& cluster,
                          const std::vector<Pod>& pending, cycle::Scheduler* scheduler, const char* who,
                          std::vector<cycle::Placement>* placements, std::deque<Pod>* pods,
                          json* timeline = nullptr) {
  // The text read once (stdin cannot be read again for --verify's second run), streamed to
  // the watch reader in place.
  struct ViewBuf : std::streambuf {
    explicit ViewBuf(std::string* s) { setg(s->data(), s->data(), s->data() + s->size()); }
  } buf(text_in);
  std::istream in(&buf);
  cycle::SchedulingQueue queue(scheduler);
  for (const Pod& p : pending) {
    pods->push_back(p);
    KPLACE_RETURN_IF_ERROR(queue.Add(p));
  }
  ObjectSet classes;  // PriorityClasses as the events leave them, for pods that arrive
  classes.priority_classes = cluster.priority_classes;
  absl::Status status;
  state::WatchReader reader(&in, file);
  std::string text, where;
  int64_t events = 0, relisted = 0;
  while (true) {
    auto more = reader.Next(&text, &where);
    if (!more.ok()) {
      status = more.status();
      break;
    }
    if (!*more) break;
    auto parsed = state::ParseWatchEvent(text, where);
    if (!parsed.ok()) {
      status = parsed.status();
      break;
    }
    if (!parsed->has_value()) continue;  // BOOKMARK
    state::ClusterEvent& e = **parsed;
    if (e.kind == "Pod") {
      status = ResolvePriorities(classes, &e.object.pods, where);
      if (!status.ok()) break;
      pods->push_back(e.object.pods[0]);
    } else if (e.kind == "PriorityClass") {
      status = state::ApplyToObjects(e, &classes);
      if (!status.ok()) break;
    }
    status = queue.Apply(e);
    if (absl::IsAlreadyExists(status) && e.type == state::EventType::kAdded) {
      // `kubectl get --watch` opens with an ADDED for every object that exists, and a
      // relist after a reconnect sends them again: an informer delivers those as updates,
      // so does the replay (nothing was applied by the refused ADDED).
      e.type = state::EventType::kModified;
      ++relisted;
      status = queue.Apply(e);
    }
    if (!status.ok()) break;
    if (timeline) {
      // The cluster's revision counts the events that changed it; pods decided so far
      // include those scheduled before this event reached the cluster.
      timeline->push_back({{"event", where}, {"type", state::EventTypeName(e.type)}, {"kind", e.kind},
                           {"object", e.Key()}, {"revision", queue.stats().events}, {"podsDecided", queue.decided()}});
    }
    if (++events % 100000 == 0) std::fprintf(stderr, "%s: %lld events applied\n", who, static_cast<long long>(events));
  }
  queue.Flush();
  *placements = queue.Results();
  std::fprintf(stderr,
               "%s: --events: %lld events applied (%lld changed the cluster; %lld ADDED of an existing object, taken as "
               "MODIFIED), %zu pods decided, %zu waiting\n",
               who, static_cast<long long>(events), static_cast<long long>(queue.stats().events),
               static_cast<long long>(relisted), placements->size(), queue.waiting());
  if (!status.ok()) return absl::InvalidArgumentError(StrCat(status.message(), " (nothing after this event was applied)"));
  return absl::OkStatus();
}

// Nodes named one by one in a warning; the rest are counted.
constexpr size_t kMaxNamedNodes = 10;

// A --pods file holds pending pods and what they use (PodDisruptionBudgets, PriorityClasses,
// resource.k8s.io objects). Nodes, namespaces, workloads and storage objects belong to the
// cluster: one in `file` is an error, or with `invalid` (--skip-invalid) listed there and
// left out, instead of being dropped without a word.
absl::Status LeaveOutClusterKinds(const std::string& file, ObjectSet* set, std::vector<std::string>* invalid) {
  std::vector<std::string> found;
  const auto refuse = [&](const std::string& kind, const ObjectMeta& meta) {
    found.push_back(StrCat(file, ": ", kind, " ", meta.name.empty() ? "<unnamed>" : ObjectKey(meta), ": kind: a ", kind,
                           " does not belong in --pods (pending pods and the PodDisruptionBudgets, PriorityClasses and "
                           "resource.k8s.io objects they use); give it with --cluster"));
  };
  for (const Node& n : set->nodes) refuse("Node", n.meta);
  for (const Namespace& n : set->namespaces) refuse("Namespace", n.meta);
  for (const Workload& w : set->workloads) refuse(w.kind, w.meta);
  for (const GenericObject& g : set->storage) refuse(g.kind, g.meta);
  if (found.empty()) return absl::OkStatus();
  if (!invalid) return absl::InvalidArgumentError(found[0]);
  invalid->insert(invalid->end(), found.begin(), found.end());
  set->nodes.clear();
  set->namespaces.clear();
  set->workloads.clear();
  set->storage.clear();
  return absl::OkStatus();
}

int Schedule(int argc, char** argv, bool explain_command) {
  const char* who = explain_command ? "kplace explain" : "kplace schedule";
  Flags flags(explain_command ? "explain" : "schedule",
              explain_command
                  ? "Schedules like `kplace schedule` and explains each decision: per node, each plugin's filter\n"
                    "verdict, raw, normalized and weighted score and the final score, as a table (on a terminal),\n"
                    "JSON/YAML, kube-scheduler-simulator annotations (--output pods; also in the JSON), and\n"
                    "kube-scheduler -v=10 score lines (--klog)."
                  : "Reads a cluster snapshot (`kubectl get -o json|yaml` of nodes, pods, namespaces, services,\n"
                    "workloads, storage objects) and pending pods, schedules the pending pods in queue order with the\n"
                    "default profile or --config, and writes each placement (pod -> node, or the unschedulable message).");
  auto& cluster_files = flags.List("cluster", "cluster snapshot file (JSON or YAML; - for stdin). Every input file is read whole, "
                                              "at most 2 GiB; a named pipe no process writes to is refused after 30 s");
  auto& pod_files = flags.List("pods", "pending pods file (- for stdin): pods and the PodDisruptionBudgets, "
                                       "PriorityClasses and resource.k8s.io objects they use; pods without spec.nodeName in "
                                       "--cluster are pending too");
  std::string& config_file = flags.String("config", "", "KubeSchedulerConfiguration file (default: the v1.37 default profile)");
  std::string& output = flags.String(
      "output", explain_command ? "" : "json",
      explain_command ? "table, json, yaml, or pods (the pending pods with spec.nodeName, PodScheduled and the "
                        "simulator's annotations); table when stdout is a terminal, json otherwise"
                      : "json, yaml, pods (the pending pods with spec.nodeName set), or table (with --explain)");
  int64_t& top = flags.Int("top", 10, "--output table: how many scored nodes to list per pod, best first");
  bool& timeline_flag = flags.Bool("timeline", "with --events: add each applied event (file:line, type, kind, object), the "
                                               "cluster's revision after it and the pods decided so far to the JSON or YAML output");
  bool& wide = flags.Bool("wide", "--output table: every score plugin's raw, normalized and weighted score, also plugins that "
                                  "gave every listed node 0 (left out by default), however wide the table");
  int64_t& width = flags.Int("width", -1,
                             "--output table: the line width to fit (a wider score table shows weighted scores only, under "
                             "the plugins' initials); default: the terminal's width on a terminal, else $COLUMNS, else no limit; 0: no limit");
  std::string& out_file = flags.String("output-file", "-", "where to write (- for stdout)");
  std::string& backend = flags.String("backend", "auto", "engine backend: auto, omp or cuda");
  bool& use_reference = flags.Bool("reference", "use the scalar reference instead of the engine");
  std::string& tie_break = flags.String("tie-break", "heap", "heap (upstream >= 1.35) or random (<= 1.34, seeded)");
  int64_t& seed = flags.Int("seed", 1, "seed for --tie-break=random and for preemption's dry-run start offset");
  bool& explain_flag = flags.Bool("explain", "include per-node, per-plugin verdicts and scores");
  bool& klog =
      flags.Bool("klog", "also print kube-scheduler's -v=10 score lines, klog header included, to stderr (with --explain)");
  bool& skip_invalid = flags.Bool("skip-invalid", "leave out objects that fail validation (each listed on stderr) instead of stopping");
  bool& report = flags.Bool("report", "add per-workload replicas surviving the worst node, zone and region loss");
  int64_t& batch = flags.Int("batch", cycle::kDefaultBatch,
                             "engine: up to N consecutive identical pods share one batched run (1 = per pod; same decisions)");
  bool& verify = flags.Bool("verify", "engine: schedule per pod and batched, and fail on any difference");
  int64_t& batch_age = flags.Int("batch-age", 0,
                                 "OpportunisticBatching: a profile's ranking hints for at most N cycles after the one that "
                                 "stored it (upstream: 500 ms); 0 = no limit");
  std::string& events_file = flags.String("events", "",
                                          "watch events to replay (`kubectl get --watch -o json` lines: ADDED, MODIFIED, DELETED of "
                                          "nodes, pods, ...); pending pods are scheduled as they arrive, before the next change; an ADDED of "
                                          "an existing object (a watch's opening list) is an update");
  std::string& feature_gates = flags.String("feature-gates", "", "kube-scheduler feature gates to change from v1.37's defaults, e.g. SchedulerAsyncPreemption=false,DRAExtendedResource=true");
  if (int rc = flags.Parse(argc, argv); rc >= 0) return rc;
  bool explain = explain_command || explain_flag;
  const bool to_terminal = out_file == "-" && ::isatty(STDOUT_FILENO);
  if (output.empty()) output = to_terminal ? "table" : "json";
  if (timeline_flag && (events_file.empty() || output == "pods" || output == "table")) {
    std::fprintf(stderr, "%s: --timeline needs --events and --output json or yaml\n", who);
    return 2;
  }
  if (!events_file.empty() && (output == "pods" || report)) {
    std::fprintf(stderr, "%s: --events: --output=pods and --report are not available with it yet\n", who);
    return 2;
  }
  if (cluster_files.empty()) {
    std::fprintf(stderr, "%s: --cluster is required (see --help)\n", who);
    return 2;
  }
  if (output != "json" && output != "yaml" && output != "pods" && output != "table") {
    std::fprintf(stderr, "%s: --output must be table, json, yaml or pods, got \"%s\"\n", who, output.c_str());
    return 2;
  }
  if (output == "table" && (!explain || report)) {
    std::fprintf(stderr, "%s: --output table explains each decision: it needs --explain (or kplace explain), not --report\n",
                 who);
    return 2;
  }
  if (top < 1) {
    std::fprintf(stderr, "%s: --top must be at least 1, got %lld\n", who, static_cast<long long>(top));
    return 2;
  }
  cycle::Options options;
  options.reference = use_reference;
  options.explain = explain;
  options.seed = static_cast<uint64_t>(seed);
  if (tie_break == "random") {
    options.tie_break = cycle::TieBreak::kRandom;
  } else if (tie_break != "heap") {
    std::fprintf(stderr, "%s: --tie-break must be heap or random\n", who);
    return 2;
  }
  if (!use_reference && !ParseBackend(backend, &options.backend)) return 2;
  if (batch < 1 || batch > INT32_MAX) {
    std::fprintf(stderr, "%s: --batch must be at least 1, got %lld\n", who, static_cast<long long>(batch));
    return 2;
  }
  options.batch = static_cast<int32_t>(batch);
  if (batch_age < 0) {
    std::fprintf(stderr, "%s: --batch-age must be 0 or more, got %lld\n", who, static_cast<long long>(batch_age));
    return 2;
  }
  options.batch_max_age = batch_age;
  if (!ParseFeatureGates(explain_command ? "explain" : "schedule", feature_gates, &options.gates)) return 2;
  if (verify && use_reference) {
    std::fprintf(stderr, "%s: --verify compares the engine's paths; it does not apply to --reference\n", who);
    return 2;
  }

  ObjectSet cluster;
  SkippedKinds skipped;
  std::vector<std::string> invalid;  // --skip-invalid: what was left out, and why
  // Where each object came from: one given twice (same kind, namespace and name) is an
  // error naming both files, whichever kind it is.
  std::map<std::string, std::string> seen_in;
  std::set<std::string> node_names;
  struct Counts {
    size_t nodes, pods, namespaces, workloads, storage, pdbs, classes, groups, claims, templates, device_classes, slices;
  };
  auto counts = [](const ObjectSet& o) {
    return Counts{o.nodes.size(), o.pods.size(), o.namespaces.size(), o.workloads.size(), o.storage.size(),
                  o.pdbs.size(), o.priority_classes.size(), o.pod_groups.size(), o.resource_claims.size(),
                  o.resource_claim_templates.size(), o.device_classes.size(), o.resource_slices.size()};
  };
  // Notes the objects `o` gained since `from`, all read from `file`.
  auto note_new = [&](const ObjectSet& o, const Counts& from, const std::string& file) {
    auto note = [&](const std::string& kind, const ObjectMeta& meta, bool namespaced) {
      const std::string key = namespaced ? ObjectKey(meta) : meta.name;
      auto [it, fresh] = seen_in.emplace(kind + " " + key, file);
      if (fresh) return true;
      std::fprintf(stderr, "%s: %s %s is given twice: in %s and in %s\n", who, kind.c_str(), key.c_str(),
                   it->second.c_str(), file.c_str());
      return false;
    };
    for (size_t i = from.nodes; i < o.nodes.size(); ++i) {
      if (!note("Node", o.nodes[i].meta, false)) return false;
      node_names.insert(o.nodes[i].meta.name);
    }
    for (size_t i = from.pods; i < o.pods.size(); ++i) {
      if (!note("Pod", o.pods[i].meta, true)) return false;
    }
    for (size_t i = from.namespaces; i < o.namespaces.size(); ++i) {
      if (!note("Namespace", o.namespaces[i].meta, false)) return false;
    }
    for (size_t i = from.workloads; i < o.workloads.size(); ++i) {
      if (!note(o.workloads[i].kind, o.workloads[i].meta, true)) return false;
    }
    for (size_t i = from.storage; i < o.storage.size(); ++i) {
      const GenericObject& g = o.storage[i];
      if (!note(g.kind, g.meta, !g.meta.namespace_.empty())) return false;
    }
    for (size_t i = from.pdbs; i < o.pdbs.size(); ++i) {
      if (!note("PodDisruptionBudget", o.pdbs[i].meta, true)) return false;
    }
    for (size_t i = from.classes; i < o.priority_classes.size(); ++i) {
      if (!note("PriorityClass", o.priority_classes[i].meta, false)) return false;
    }
    for (size_t i = from.groups; i < o.pod_groups.size(); ++i) {
      if (!note("PodGroup", o.pod_groups[i].meta, true)) return false;
    }
    for (size_t i = from.claims; i < o.resource_claims.size(); ++i) {
      if (!note("ResourceClaim", o.resource_claims[i].meta, true)) return false;
    }
    for (size_t i = from.templates; i < o.resource_claim_templates.size(); ++i) {
      if (!note("ResourceClaimTemplate", o.resource_claim_templates[i].meta, true)) return false;
    }
    for (size_t i = from.device_classes; i < o.device_classes.size(); ++i) {
      if (!note("DeviceClass", o.device_classes[i].meta, false)) return false;
    }
    for (size_t i = from.slices; i < o.resource_slices.size(); ++i) {
      if (!note("ResourceSlice", o.resource_slices[i].meta, false)) return false;
    }
    return true;
  };
  // `-` is stdin, which can be read once; its text stays for --output pods.
  std::string stdin_text;
  bool stdin_read = false;
  DecodeNotes notes;
  auto decode_file = [&](const std::string& f, ObjectSet* set) -> absl::Status {
    if (f != "-") return DecodeFile(f, set, &skipped, skip_invalid ? &invalid : nullptr, &notes);
    if (stdin_read) return absl::InvalidArgumentError("-: stdin is given as a file twice");
    stdin_read = true;
    KPLACE_ASSIGN_OR_RETURN(stdin_text, ReadInputFile("-"));
    return DecodeText(stdin_text, "stdin", set, &skipped, skip_invalid ? &invalid : nullptr, &notes);
  };
  for (const std::string& f : cluster_files) {
    const Counts before = counts(cluster);
    absl::Status s = decode_file(f, &cluster);
    if (!s.ok()) {
      std::fprintf(stderr, "%s: %s\n", who, std::string(s.message()).c_str());
      return 1;
    }
    if (!note_new(cluster, before, f)) return 1;
  }
  // The API server copies capacity into a node status without allocatable, and so does the
  // decode; a snapshot like that is usually hand-written or trimmed, so say so.
  const std::vector<std::string>& defaulted = notes.allocatable_from_capacity;
  for (size_t i = 0; i < defaulted.size() && i < kMaxNamedNodes; ++i) {
    std::fprintf(stderr, "%s: Node %s: status.allocatable missing; using status.capacity\n", who, defaulted[i].c_str());
  }
  if (defaulted.size() > kMaxNamedNodes) {
    std::fprintf(stderr, "%s: %zu more Nodes without status.allocatable; using their status.capacity\n", who,
                 defaulted.size() - kMaxNamedNodes);
  }
  // Pending pods: every pod without a node, from --pods and from the cluster files; the
  // raw JSON is kept for --output=pods.
  std::vector<Pod> pending;
  std::vector<json> pending_json;
  for (const std::string& f : pod_files) {
    ObjectSet set;
    absl::Status s = decode_file(f, &set);
    if (s.ok()) s = LeaveOutClusterKinds(f, &set, skip_invalid ? &invalid : nullptr);
    if (!s.ok()) {
      std::fprintf(stderr, "%s: %s\n", who, std::string(s.message()).c_str());
      return 1;
    }
    if (!note_new(set, Counts{}, f)) return 1;
    for (Pod& p : set.pods) {
      if (p.node_name.empty()) pending.push_back(std::move(p));
      else cluster.pods.push_back(std::move(p));
    }
    for (PodDisruptionBudget& b : set.pdbs) cluster.pdbs.push_back(std::move(b));
    for (PriorityClass& c : set.priority_classes) cluster.priority_classes.push_back(std::move(c));
    for (PodGroup& g : set.pod_groups) cluster.pod_groups.push_back(std::move(g));
    // The claims a pending pod uses may come with it.
    for (ResourceClaim& c : set.resource_claims) cluster.resource_claims.push_back(std::move(c));
    for (ResourceClaimTemplate& t : set.resource_claim_templates) cluster.resource_claim_templates.push_back(std::move(t));
    for (DeviceClass& c : set.device_classes) cluster.device_classes.push_back(std::move(c));
    for (ResourceSlice& sl : set.resource_slices) cluster.resource_slices.push_back(std::move(sl));
  }
  std::string events_text;  // --events, read once
  if (!events_file.empty()) {
    absl::StatusOr<std::string> text = events_file == "-" && stdin_read
                                           ? absl::InvalidArgumentError("--events -: stdin is already read by --cluster or --pods")
                                           : ReadInputFile(events_file);
    if (!text.ok()) {
      std::fprintf(stderr, "%s: %s\n", who, std::string(text.status().message()).c_str());
      return 1;
    }
    events_text = std::move(*text);
  }
  {
    std::vector<Pod> bound;
    for (Pod& p : cluster.pods) {
      if (!p.node_name.empty() && !node_names.count(p.node_name) && p.phase != "Succeeded" && p.phase != "Failed") {
        // The scheduler's cache counts a pod on its node only when it knows the node.
        std::fprintf(stderr, "%s: warning: Pod %s is bound to node %s, which is not in the snapshot; ignored\n", who,
                     ObjectKey(p.meta).c_str(), p.node_name.c_str());
      }
      if (!p.node_name.empty() || p.phase == "Succeeded" || p.phase == "Failed") bound.push_back(std::move(p));
      else pending.push_back(std::move(p));
    }
    cluster.pods = std::move(bound);
  }
  if (!skipped.empty()) std::fprintf(stderr, "%s: %s\n", who, SkippedLine(skipped).c_str());
  if (!invalid.empty()) {
    std::fprintf(stderr, "%s: --skip-invalid: left out %zu invalid object(s):\n", who, invalid.size());
    for (const std::string& m : invalid) std::fprintf(stderr, "  %s\n", m.c_str());
  }
  for (std::vector<Pod>* pods : {&cluster.pods, &pending}) {
    absl::Status s = ResolvePriorities(cluster, pods, who);
    if (!s.ok()) {
      std::fprintf(stderr, "%s\n", std::string(s.message()).c_str());
      return 1;
    }
  }
  if (output == "pods") {
    std::vector<std::string> all_files = pod_files;
    all_files.insert(all_files.end(), cluster_files.begin(), cluster_files.end());
    std::map<std::string, json> by_key;
    std::function<void(const json&)> collect = [&](const json& d) {
      if (!d.is_object()) return;
      if (d.contains("items") && d["items"].is_array()) {
        for (const json& item : d["items"]) collect(item);
        return;
      }
      if (d.value("kind", "") != "Pod" && !(d.contains("spec") && d["spec"].contains("containers"))) return;
      auto pod = DecodePod(d, "");
      if (pod.ok()) by_key[ObjectKey(pod->meta)] = d;
    };
    for (const std::string& f : all_files) {
      auto text = f == "-" ? absl::StatusOr<std::string>(stdin_text) : ReadInputFile(f);
      auto docs = text.ok() ? ParseDocuments(*text, f) : text.status();
      if (docs.ok()) for (const json& d : *docs) collect(d);
    }
    for (const Pod& p : pending) pending_json.push_back(by_key[ObjectKey(p.meta)]);
  }

  SchedulerConfig config = DefaultSchedulerConfig();
  if (!config_file.empty()) {
    auto c = LoadSchedulerConfig(config_file);
    if (!c.ok()) {
      std::fprintf(stderr, "%s: %s\n", who, std::string(c.status().message()).c_str());
      return 1;
    }
    config = *c;
  } else {
    DropUnbuiltDefaults(&config, options, who);
  }
  std::vector<size_t> order = cycle::QueueOrder(pending);
  std::vector<cycle::Placement> placements;
  if (verify) {
    auto c = events_file.empty()
                 ? cycle::CompareBatched(cluster, config, options, pending)
                 : cycle::CompareBatched(cluster, config, options,
                                         [&](cycle::Scheduler& s) -> absl::StatusOr<std::vector<cycle::Placement>> {
                                           std::vector<cycle::Placement> out;
                                           std::deque<Pod> pods;
                                           KPLACE_RETURN_IF_ERROR(
                                               ReplayEvents(events_file, &events_text, cluster, pending, &s, who, &out, &pods));
                                           return out;
                                         });
    if (!c.ok()) {
      std::fprintf(stderr, "%s: %s\n", who, std::string(c.status().message()).c_str());
      return 1;
    }
    if (!c->same()) {
      std::fprintf(stderr, "%s: --verify: batched and per-pod scheduling differ: %lld of %lld placements; %s\n", who,
                   static_cast<long long>(c->mismatches), static_cast<long long>(c->pods), c->first_mismatch.c_str());
      return 1;
    }
    std::fprintf(stderr, "%s: --verify: %lld placements and the final start index (%d) identical per pod and batched\n", who,
                 static_cast<long long>(c->pods), c->batched_next_start);
    if (!explain && events_file.empty()) placements = std::move(options.batch > 1 ? c->batched : c->per_pod);
  }
  // The pod each placement is for, in placement order.
  std::vector<const Pod*> pod_of;
  for (size_t q : order) pod_of.push_back(&pending[q]);
  std::deque<Pod> event_pods;
  json timeline = json::array();  // --timeline
  int rc = 0;
  size_t num_nodes = cluster.nodes.size();
  if (!events_file.empty()) {
    auto scheduler = cycle::Scheduler::Create(cluster, config, options);
    if (!scheduler.ok()) {
      std::fprintf(stderr, "%s: %s\n", who, std::string(scheduler.status().message()).c_str());
      return 1;
    }
    absl::Status replayed = ReplayEvents(events_file, &events_text, cluster, pending, scheduler->get(), who, &placements,
                                         &event_pods, timeline_flag ? &timeline : nullptr);
    if (!replayed.ok()) {
      std::fprintf(stderr, "%s: %s\n", who, std::string(replayed.message()).c_str());
      rc = 1;  // what was decided before the bad event is still written
    }
    std::map<std::string, const Pod*> by_key;
    for (const Pod& p : event_pods) by_key[ObjectKey(p.meta)] = &p;
    pod_of.clear();
    for (const cycle::Placement& p : placements) pod_of.push_back(by_key.at(p.pod));
    order.resize(placements.size());
    num_nodes = (*scheduler)->state().NodeOrder().size();
  }
  std::map<std::string, const Profile*> profile_of;  // schedulerName -> its profile
  for (const Profile& p : config.profiles) profile_of[p.scheduler_name] = &p;
  static const Profile kNoProfile;  // pods for another scheduler run no plugin
  auto profile_for = [&](const std::string& scheduler_name) -> const Profile& {
    auto it = profile_of.find(scheduler_name);
    return it == profile_of.end() ? kNoProfile : *it->second;
  };
  // Every attempt's annotations per pod key, for the simulator's result-history.
  std::map<std::string, std::vector<json>> attempt_annotations;
  if (placements.size() != order.size()) {
    placements.clear();
    auto scheduler = cycle::Scheduler::Create(cluster, config, options);
    if (!scheduler.ok()) {
      std::fprintf(stderr, "%s: %s\n", who, std::string(scheduler.status().message()).c_str());
      return 1;
    }
    std::map<std::string, std::string> scheduler_of;  // pending pod key -> its schedulerName
    for (const Pod& p : pending) scheduler_of[ObjectKey(p.meta)] = p.scheduler_name;
    // Progress on stderr: a bar on a terminal, else a line every 2 s (a run that ends sooner
    // prints none). Pods count once they have had their first cycle.
    bench::ProgressLine progress;
    std::unordered_set<std::string> tried;
    auto last = std::chrono::steady_clock::now();
    placements = (*scheduler)->ScheduleAll(pending, [&](const cycle::Placement& p) {
      if (klog) {
        progress.Clear();
        PrintKlog(p, stderr);
      }
      if (p.explanation && !p.gated && !p.other_scheduler) {
        attempt_annotations[p.pod].push_back(cycle::Annotations(p, profile_for(scheduler_of[p.pod])));
      }
      tried.insert(p.pod);
      const auto now = std::chrono::steady_clock::now();
      if (std::chrono::duration<double>(now - last).count() >= progress.interval_seconds()) {
        progress.Update(who, static_cast<int64_t>(tried.size()), static_cast<int64_t>(order.size()));
        last = now;
      }
      return true;
    });
    progress.Clear();
  }
  auto attempts_of = [&](const cycle::Placement& p) {
    auto it = attempt_annotations.find(p.pod);
    return it == attempt_annotations.end() ? std::vector<json>{} : it->second;
  };

  int64_t scheduled = 0, gated = 0, other = 0;
  std::vector<std::pair<const Pod*, std::string>> placed;
  for (size_t k = 0; k < order.size(); ++k) {
    gated += placements[k].gated;
    other += placements[k].other_scheduler;
    if (!placements[k].node.empty()) {
      ++scheduled;
      placed.push_back({pod_of[k], placements[k].node});
    }
  }
  const int64_t unschedulable = static_cast<int64_t>(order.size()) - scheduled - gated - other;
  std::string text;
  if (output == "table") {
    TableOptions table;
    table.top = top;
    table.wide = wide;
    table.width = static_cast<int32_t>(width >= 0 ? width : to_terminal ? TerminalColumns() : ColumnsFromEnvironment());
    table.color = to_terminal && std::getenv("NO_COLOR") == nullptr;
    table.tie_break = options.tie_break;
    table.num_nodes = static_cast<int32_t>(num_nodes);
    for (size_t k = 0; k < order.size(); ++k) {
      const Profile& profile = profile_for(pod_of[k]->scheduler_name);
      const int32_t percentage = profile.percentage_of_nodes_to_score.value_or(config.percentage_of_nodes_to_score);
      // As the cycle: a profile without Score plugins stops at the first feasible node.
      const int32_t to_find = profile.score.empty() ? 1 : cycle::NumFeasibleNodesToFind(percentage, table.num_nodes);
      text += ExplainTable(placements[k], to_find, table) + "\n";
    }
    text += Flow(StrCat(order.size(), order.size() == 1 ? " pod: " : " pods: "),
                 {StrCat(scheduled, " scheduled"), StrCat(unschedulable, " unschedulable"),
                  StrCat(gated, " scheduling gated"),
                  StrCat(other, " for another scheduler; ", num_nodes, num_nodes == 1 ? " node" : " nodes")},
                 ",", table.width, 2);
  } else {
    json doc;
    if (output == "pods") {
      doc = {{"apiVersion", "v1"}, {"kind", "List"}, {"items", json::array()}};
      for (size_t k = 0; k < order.size(); ++k) {
        const cycle::Placement& p = placements[k];
        json pod = pending_json[order[k]];
        if (!p.node.empty()) pod["spec"]["nodeName"] = p.node;
        if (p.node.empty() && p.preemption && !p.preemption->nominated_node.empty()) {
          pod["status"]["nominatedNodeName"] = p.preemption->nominated_node;
        }
        if (!p.other_scheduler) SetPodScheduled(p, &pod);
        if (explain && p.explanation && !p.gated) {
          SetAnnotations(p, profile_for(pod_of[k]->scheduler_name), attempts_of(p), &pod);
        }
        doc["items"].push_back(pod);
      }
    } else {
      json list = json::array();
      for (size_t k = 0; k < order.size(); ++k) {
        const cycle::Placement& p = placements[k];
        list.push_back(PlacementJson(p, explain, profile_for(pod_of[k]->scheduler_name), attempts_of(p)));
      }
      doc = {{"placements", list},
             {"summary", {{"pods", order.size()}, {"scheduled", scheduled}, {"unschedulable", unschedulable},
                          {"schedulingGated", gated}, {"otherScheduler", other},
                          {"nodes", num_nodes}, {"engine", use_reference ? "reference" : engine::BackendName(options.backend)}}}};
      if (report) doc["report"] = SurvivalReport(cluster, placed);
      if (timeline_flag) doc["timeline"] = std::move(timeline);
    }
    // Text that is not UTF-8 becomes U+FFFD rather than end the run with an exception.
    text = output == "yaml" ? ToYaml(doc) : doc.dump(2, ' ', false, json::error_handler_t::replace) + "\n";
  }
  if (out_file == "-") {
    std::fwrite(text.data(), 1, text.size(), stdout);
  } else {
    std::ofstream out(out_file);
    out << text;
    if (!out) {
      std::fprintf(stderr, "%s: cannot write %s\n", who, out_file.c_str());
      return 1;
    }
  }
  return rc;
}

}  // namespace

int RunSchedule(int argc, char** argv) { return Schedule(argc, argv, false); }
int RunExplain(int argc, char** argv) { return Schedule(argc, argv, true); }

}  // namespace kplace::cli
