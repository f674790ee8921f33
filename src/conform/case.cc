#include "kplace/conform/case.h"

#include <algorithm>
#include <set>
#include <limits>

#include <nlohmann/json.hpp>

#include "kplace/common/status.h"
#include "kplace/common/strings.h"
#include "kplace/config/config.h"
#include "kplace/model/decode.h"
#include "kplace/model/input_file.h"

namespace kplace::conform {
namespace {

using json = nlohmann::json;

// `objects` keys and the Kubernetes kinds they hold.
struct ObjectKind {
  const char* key;
  const char* kind;
};
constexpr ObjectKind kWorkloadKinds[] = {
    {"services", "Service"},
    {"replicaSets", "ReplicaSet"},
    {"statefulSets", "StatefulSet"},
    {"replicationControllers", "ReplicationController"},
};
constexpr ObjectKind kStorageKinds[] = {
    {"persistentVolumes", "PersistentVolume"},
    {"persistentVolumeClaims", "PersistentVolumeClaim"},
    {"storageClasses", "StorageClass"},
    {"csiNodes", "CSINode"},
    {"csiDrivers", "CSIDriver"},
    {"csiStorageCapacities", "CSIStorageCapacity"},
    {"volumeAttachments", "VolumeAttachment"},
};

// Names the file and field path in every error, as decode.cc does for objects.
// An integer that fits int64 (nlohmann keeps values past int64 as unsigned, which
// get<int64_t> would wrap: 18446744073709551615 read as -1).
bool AsInt64(const json& v, int64_t* out) {
  if (!v.is_number_integer()) return false;
  if (v.is_number_unsigned() && v.get<uint64_t>() > static_cast<uint64_t>(std::numeric_limits<int64_t>::max())) {
    return false;
  }
  *out = v.get<int64_t>();
  return true;
}

class CaseReader {
 public:
  explicit CaseReader(std::string_view file) : file_(file) {}

  absl::Status Error(std::string_view path, std::string_view what) const {
    return absl::InvalidArgumentError(StrCat(file_, ": ", path, ": ", what));
  }

  const std::string& file() const { return file_; }

  // Absent and null are both "not set".
  static const json* Find(const json& j, const char* key) {
    if (!j.is_object()) return nullptr;
    auto it = j.find(key);
    return it == j.end() || it->is_null() ? nullptr : &*it;
  }

  absl::Status String(const json& j, const char* key, std::string_view path, std::string* out) const {
    const json* v = Find(j, key);
    if (!v) return absl::OkStatus();
    if (!v->is_string()) return Error(Join(path, key), StrCat("expected a string, got ", v->type_name()));
    *out = v->get<std::string>();
    return absl::OkStatus();
  }

  absl::Status Strings(const json& v, std::string_view path, std::vector<std::string>* out) const {
    if (v.is_null()) return absl::OkStatus();
    if (!v.is_array()) return Error(path, StrCat("expected a list of strings, got ", v.type_name()));
    for (size_t i = 0; i < v.size(); ++i) {
      if (!v[i].is_string()) {
        return Error(StrCat(path, "[", i, "]"), StrCat("expected a string, got ", v[i].type_name()));
      }
      out->push_back(v[i].get<std::string>());
    }
    return absl::OkStatus();
  }

  absl::Status Status(const json& v, std::string_view path, StatusExpectation* out) const {
    if (!v.is_object()) return Error(path, StrCat("expected an object, got ", v.type_name()));
    const json* code = Find(v, "code");
    if (!code) return Error(Join(path, "code"), "missing");
    if (!code->is_string() || !ParseCode(code->get<std::string>(), &out->code)) {
      return Error(Join(path, "code"), StrCat("unknown status code ", code->dump()));
    }
    if (const json* reasons = Find(v, "reasons")) {
      KPLACE_RETURN_IF_ERROR(Strings(*reasons, Join(path, "reasons"), &out->reasons));
    }
    return absl::OkStatus();
  }

  absl::Status Score(const json& v, std::string_view path, int64_t* out) const {
    if (!AsInt64(v, out)) return Error(path, StrCat("expected an integer score, got ", v.dump()));
    return absl::OkStatus();
  }

  absl::Status NodeScores(const json& v, std::string_view path, std::map<std::string, int64_t>* out) const {
    if (!v.is_object()) return Error(path, StrCat("expected a map of node to score, got ", v.type_name()));
    for (auto it = v.begin(); it != v.end(); ++it) {
      KPLACE_RETURN_IF_ERROR(Score(it.value(), Join(path, it.key()), &(*out)[it.key()]));
    }
    return absl::OkStatus();
  }

  static std::string Join(std::string_view path, std::string_view key) {
    return path.empty() ? std::string(key) : StrCat(path, ".", key);
  }

 private:
  std::string file_;
};

absl::Status DecodePlugins(const CaseReader& r, const json& doc, Case* c) {
  const json* plugins = CaseReader::Find(doc, "plugins");
  if (!plugins) return r.Error("plugins", "missing");
  if (plugins->is_string()) {
    if (plugins->get<std::string>() != "default") {
      return r.Error("plugins", StrCat("expected \"default\" or a list of plugin names, got ", plugins->dump()));
    }
    c->default_profile = true;
    return absl::OkStatus();
  }
  KPLACE_RETURN_IF_ERROR(r.Strings(*plugins, "plugins", &c->plugins));
  // Preemption helper cases (eligibility, status lists) run no plugin at all.
  if (c->plugins.empty() && !CaseReader::Find(doc, "entry")) return r.Error("plugins", "empty list");
  return absl::OkStatus();
}

absl::Status DecodeProfile(const CaseReader& r, const json& doc, Case* c) {
  const json* profile = CaseReader::Find(doc, "profile");
  if (!profile) return absl::OkStatus();
  if (!profile->is_object()) return r.Error("profile", StrCat("expected an object, got ", profile->type_name()));
  for (auto it = profile->begin(); it != profile->end(); ++it) {
    if (it.key() != "pluginConfig") return r.Error(StrCat("profile.", it.key()), "unsupported field");
  }
  const json* config = CaseReader::Find(*profile, "pluginConfig");
  if (!config) return absl::OkStatus();
  if (!config->is_array()) {
    return r.Error("profile.pluginConfig", StrCat("expected a list, got ", config->type_name()));
  }
  for (size_t i = 0; i < config->size(); ++i) {
    const json& entry = (*config)[i];
    std::string path = StrCat("profile.pluginConfig[", i, "]");
    std::string name;
    KPLACE_RETURN_IF_ERROR(r.String(entry, "name", path, &name));
    if (name.empty()) return r.Error(StrCat(path, ".name"), "missing");
    const json* args = CaseReader::Find(entry, "args");
    if (!args) continue;
    KPLACE_RETURN_IF_ERROR(DecodePluginArgs(name, *args, StrCat(r.file(), ": ", path, ".args"), &c->args));
  }
  return absl::OkStatus();
}

absl::Status DecodeGates(const CaseReader& r, const json& doc, Case* c) {
  const json* gates = CaseReader::Find(doc, "featureGates");
  if (!gates) return absl::OkStatus();
  if (!gates->is_object()) return r.Error("featureGates", StrCat("expected a map, got ", gates->type_name()));
  for (auto it = gates->begin(); it != gates->end(); ++it) {
    if (!it.value().is_boolean()) {
      return r.Error(StrCat("featureGates.", it.key()), StrCat("expected a boolean, got ", it.value().dump()));
    }
    c->gates.overrides[it.key()] = it.value().get<bool>();
  }
  return absl::OkStatus();
}

// Upstream's test tables often leave pods and services unnamed (nothing there reads the
// name); the object decoder requires one, so such objects get `fallback`.
json Named(const json& j, const std::string& fallback) {
  if (!j.is_object()) return j;
  const json* meta = CaseReader::Find(j, "metadata");
  const json* name = meta ? CaseReader::Find(*meta, "name") : nullptr;
  if (name && !(name->is_string() && name->get<std::string>().empty())) return j;
  json copy = j;
  copy["metadata"]["name"] = fallback;
  return copy;
}

// Upstream's test objects never pass through the API server, so a namespace written as
// "" stays "" there (and terms listing namespace "" match it); the object decoder
// defaults it to "default" as the API server would, so an explicit "" is put back.
void KeepEmptyNamespace(const json& j, ObjectMeta* meta) {
  const json* m = CaseReader::Find(j, "metadata");
  const json* ns = m ? CaseReader::Find(*m, "namespace") : nullptr;
  if (ns && ns->is_string() && ns->get<std::string>().empty()) meta->namespace_.clear();
}

absl::StatusOr<Pod> DecodeCasePod(const json& j, std::string_view where) {
  KPLACE_ASSIGN_OR_RETURN(Pod pod, DecodePod(j, where, /*strict=*/false));
  KeepEmptyNamespace(j, &pod.meta);
  return pod;
}

// Decodes doc[key] (a list) with `decode(item, where)`, appending to `out`. Unnamed
// items are named "unnamed-<key>-<index>" unless `named` is false.
template <typename T, typename Decode>
absl::Status DecodeList(const CaseReader& r, const json& doc, const char* key, std::string_view path,
                        Decode decode, std::vector<T>* out, bool named = true) {
  const json* list = CaseReader::Find(doc, key);
  if (!list) return absl::OkStatus();
  std::string p = CaseReader::Join(path, key);
  if (!list->is_array()) return r.Error(p, StrCat("expected a list, got ", list->type_name()));
  for (size_t i = 0; i < list->size(); ++i) {
    const json& item = (*list)[i];
    std::string where = StrCat(r.file(), ": ", p, "[", i, "]");
    KPLACE_ASSIGN_OR_RETURN(T decoded, named ? decode(Named(item, StrCat("unnamed-", key, "-", i)), where)
                                             : decode(item, where));
    out->push_back(std::move(decoded));
  }
  return absl::OkStatus();
}

absl::Status DecodeObjects(const CaseReader& r, const json& doc, Case* c);

absl::Status DecodeCluster(const CaseReader& r, const json& doc, Case* c) {
  // Nodes keep the names they have: expectations are keyed by them.
  auto lenient_node = [](const json& j, std::string_view where) { return DecodeNode(j, where, /*strict=*/false); };
  KPLACE_RETURN_IF_ERROR(DecodeList<Node>(r, doc, "nodes", "", lenient_node, &c->objects.nodes, /*named=*/false));
  KPLACE_RETURN_IF_ERROR(DecodeList<Pod>(r, doc, "pods", "", DecodeCasePod, &c->objects.pods));
  std::set<std::string> names;
  for (const Node& n : c->objects.nodes) {
    if (!names.insert(n.meta.name).second) return r.Error("nodes", StrCat("duplicate node \"", n.meta.name, "\""));
  }
  const json* pod = CaseReader::Find(doc, "pod");
  if (!pod) return r.Error("pod", "missing");
  KPLACE_ASSIGN_OR_RETURN(c->pod, DecodeCasePod(Named(*pod, "unnamed-incoming-pod"), StrCat(r.file(), ": pod")));
  return DecodeObjects(r, doc, c);
}

absl::Status DecodeObjects(const CaseReader& r, const json& doc, Case* c) {
  const json* objects = CaseReader::Find(doc, "objects");
  if (!objects) return absl::OkStatus();
  if (!objects->is_object()) return r.Error("objects", StrCat("expected an object, got ", objects->type_name()));
  for (auto it = objects->begin(); it != objects->end(); ++it) {
    const std::string& key = it.key();
    bool known = key == "namespaces" || key == "podDisruptionBudgets" || key == "priorityClasses";
    for (const ObjectKind& k : kWorkloadKinds) known = known || key == k.key;
    for (const ObjectKind& k : kStorageKinds) known = known || key == k.key;
    if (!known) return r.Error(StrCat("objects.", key), "unsupported object list");
  }
  // Lists decode in FORMAT.md's order, whatever order the file has them in.
  KPLACE_RETURN_IF_ERROR(
      DecodeList<Namespace>(r, *objects, "namespaces", "objects", DecodeNamespace, &c->objects.namespaces));
  for (const ObjectKind& k : kWorkloadKinds) {
    auto decode = [&](const json& j, std::string_view where) -> absl::StatusOr<Workload> {
      KPLACE_ASSIGN_OR_RETURN(Workload w, DecodeWorkload(j, k.kind, where));
      KeepEmptyNamespace(j, &w.meta);
      return w;
    };
    KPLACE_RETURN_IF_ERROR(DecodeList<Workload>(r, *objects, k.key, "objects", decode, &c->objects.workloads));
  }
  for (const ObjectKind& k : kStorageKinds) {
    auto decode = [&](const json& j, std::string_view where) { return DecodeGeneric(j, k.kind, where); };
    KPLACE_RETURN_IF_ERROR(DecodeList<GenericObject>(r, *objects, k.key, "objects", decode, &c->objects.storage));
  }
  KPLACE_RETURN_IF_ERROR(DecodeList<PodDisruptionBudget>(r, *objects, "podDisruptionBudgets", "objects",
                                                         DecodePodDisruptionBudget, &c->objects.pdbs));
  return DecodeList<PriorityClass>(r, *objects, "priorityClasses", "objects", DecodePriorityClass,
                                   &c->objects.priority_classes);
}

absl::Status CheckNodesKnown(const CaseReader& r, const Case& c, std::string_view path,
                             const std::vector<std::string>& nodes) {
  for (const std::string& n : nodes) {
    bool found = std::any_of(c.objects.nodes.begin(), c.objects.nodes.end(),
                             [&](const Node& node) { return node.meta.name == n; });
    if (!found) return r.Error(path, StrCat("node \"", n, "\" is not in nodes"));
  }
  return absl::OkStatus();
}

template <typename Map>
std::vector<std::string> Keys(const Map& m) {
  std::vector<std::string> out;
  for (const auto& [k, v] : m) out.push_back(k);
  return out;
}

constexpr const char* kEntries[] = {"PostFilter",          "DryRunPreemption",           "SelectCandidate",
                                    "SelectVictimsOnNode", "PodEligibleToPreemptOthers", "NodesForStatusCode",
                                    "PreEnqueue"};

absl::Status DecodeInt(const CaseReader& r, const json& v, std::string_view path, int64_t* out) {
  if (!AsInt64(v, out)) return r.Error(path, StrCat("expected an integer, got ", v.dump()));
  return absl::OkStatus();
}

absl::Status DecodeBool(const CaseReader& r, const json& v, std::string_view path, bool* out) {
  if (!v.is_boolean()) return r.Error(path, StrCat("expected a boolean, got ", v.dump()));
  *out = v.get<bool>();
  return absl::OkStatus();
}

absl::Status DecodeCode(const CaseReader& r, const json& v, std::string_view path, Code* out) {
  if (!v.is_string() || !ParseCode(v.get<std::string>(), out)) {
    return r.Error(path, StrCat("unknown status code ", v.dump()));
  }
  return absl::OkStatus();
}

absl::Status SortedNames(const CaseReader& r, const json& v, std::string_view path, std::vector<std::string>* out) {
  KPLACE_RETURN_IF_ERROR(r.Strings(v, path, out));
  std::sort(out->begin(), out->end());
  return absl::OkStatus();
}

// The inputs FORMAT.md's preemption section adds beside the cluster and the pod.
absl::Status DecodePreemption(const CaseReader& r, const json& doc, Case* c) {
  const json* entry = CaseReader::Find(doc, "entry");
  if (!entry) return absl::OkStatus();
  PreemptionInput& in = c->preemption.emplace();
  KPLACE_RETURN_IF_ERROR(r.String(doc, "entry", "", &in.entry));
  if (std::find(std::begin(kEntries), std::end(kEntries), in.entry) == std::end(kEntries)) {
    return r.Error("entry", StrCat("unknown entry ", entry->dump()));
  }
  if (const json* fs = CaseReader::Find(doc, "filterStatuses")) {
    if (!fs->is_object()) return r.Error("filterStatuses", StrCat("expected an object, got ", fs->type_name()));
    if (const json* nodes = CaseReader::Find(*fs, "nodes")) {
      if (!nodes->is_object()) return r.Error("filterStatuses.nodes", "expected a map of node to status");
      for (auto it = nodes->begin(); it != nodes->end(); ++it) {
        KPLACE_RETURN_IF_ERROR(r.Status(it.value(), StrCat("filterStatuses.nodes.", it.key()), &in.filter_statuses[it.key()]));
      }
    }
    if (const json* absent = CaseReader::Find(*fs, "absent")) {
      KPLACE_RETURN_IF_ERROR(r.Status(*absent, "filterStatuses.absent", &in.absent));
    }
  }
  if (const json* dry = CaseReader::Find(doc, "dryRun")) {
    if (!dry->is_object()) return r.Error("dryRun", StrCat("expected an object, got ", dry->type_name()));
    for (const char* key : {"offset", "parallelism"}) {
      const json* v = CaseReader::Find(*dry, key);
      if (!v) continue;
      int64_t n = 0;
      KPLACE_RETURN_IF_ERROR(DecodeInt(r, *v, StrCat("dryRun.", key), &n));
      if (n < 0 || n > INT32_MAX) return r.Error(StrCat("dryRun.", key), StrCat("out of range: ", n));
      (std::string_view(key) == "offset" ? in.offset : in.parallelism) = static_cast<int32_t>(n);
    }
  }
  KPLACE_RETURN_IF_ERROR(r.String(doc, "node", "", &in.node));
  if (!in.node.empty()) KPLACE_RETURN_IF_ERROR(CheckNodesKnown(r, *c, "node", {in.node}));
  if (const json* code = CaseReader::Find(doc, "statusCode")) {
    KPLACE_RETURN_IF_ERROR(DecodeCode(r, *code, "statusCode", &in.status_code));
  }
  if (const json* ext = CaseReader::Find(doc, "extenders")) {
    if (!ext->is_array()) return r.Error("extenders", StrCat("expected a list, got ", ext->type_name()));
    for (size_t i = 0; i < ext->size(); ++i) {
      const json& e = (*ext)[i];
      std::string path = StrCat("extenders[", i, "]");
      PreemptionExtender x;
      KPLACE_RETURN_IF_ERROR(r.String(e, "name", path, &x.name));
      KPLACE_RETURN_IF_ERROR(r.String(e, "preemption", path, &x.preemption));
      if (x.preemption != "keepAll" && x.preemption != "dropAll" && x.preemption != "keepNode1" &&
          x.preemption != "error") {
        return r.Error(StrCat(path, ".preemption"), StrCat("unknown behaviour \"", x.preemption, "\""));
      }
      if (const json* v = CaseReader::Find(e, "ignorable")) KPLACE_RETURN_IF_ERROR(DecodeBool(r, *v, StrCat(path, ".ignorable"), &x.ignorable));
      if (const json* v = CaseReader::Find(e, "interested")) KPLACE_RETURN_IF_ERROR(DecodeBool(r, *v, StrCat(path, ".interested"), &x.interested));
      in.extenders.push_back(std::move(x));
    }
  }
  if (const json* nom = CaseReader::Find(doc, "nominatedNodeStatus")) {
    KPLACE_RETURN_IF_ERROR(r.Status(*nom, "nominatedNodeStatus", &in.nominated_node_status.emplace()));
  }
  if (const json* check = CaseReader::Find(doc, "checkPod")) {
    KPLACE_ASSIGN_OR_RETURN(in.check_pod, DecodeCasePod(Named(*check, "unnamed-check-pod"), StrCat(r.file(), ": checkPod")));
  }
  KPLACE_RETURN_IF_ERROR(r.String(doc, "victimDeletion", "", &in.victim_deletion));
  return absl::OkStatus();
}

// expect.<key> of a preemption case; false when `key` is not one of them.
absl::StatusOr<bool> DecodePreemptionExpect(const CaseReader& r, const std::string& key, const json& v,
                                            const std::string& path, Case* c) {
  Expectations& e = c->expect;
  auto object = [&]() -> absl::Status {
    return v.is_object() ? absl::OkStatus() : r.Error(path, StrCat("expected an object, got ", v.type_name()));
  };
  if (key == "postFilter") {
    KPLACE_RETURN_IF_ERROR(object());
    PostFilterExpectation& pf = e.post_filter.emplace();
    if (const json* code = CaseReader::Find(v, "code")) KPLACE_RETURN_IF_ERROR(DecodeCode(r, *code, path + ".code", &pf.code.emplace()));
    if (const json* nom = CaseReader::Find(v, "nominatedNodeName")) {
      if (!nom->is_string()) return r.Error(path + ".nominatedNodeName", StrCat("expected a string or null, got ", nom->dump()));
      pf.has_result = true;
      pf.nominated_node_name = nom->get<std::string>();
    }
    if (const json* msg = CaseReader::Find(v, "message")) {
      if (!msg->is_string()) return r.Error(path + ".message", StrCat("expected a string, got ", msg->dump()));
      pf.message = msg->get<std::string>();
    }
    if (const json* victims = CaseReader::Find(v, "victims")) {
      KPLACE_RETURN_IF_ERROR(SortedNames(r, *victims, path + ".victims", &pf.victims.emplace()));
    }
  } else if (key == "candidates") {
    KPLACE_RETURN_IF_ERROR(object());
    auto& all = e.candidates.emplace();
    for (auto it = v.begin(); it != v.end(); ++it) {
      std::string cp = CaseReader::Join(path, it.key());
      if (!it.value().is_object()) return r.Error(cp, "expected an object");
      CandidateExpectation& ce = all[it.key()];
      if (const json* victims = CaseReader::Find(it.value(), "victims")) KPLACE_RETURN_IF_ERROR(SortedNames(r, *victims, cp + ".victims", &ce.victims));
      if (const json* n = CaseReader::Find(it.value(), "numPDBViolations")) KPLACE_RETURN_IF_ERROR(DecodeInt(r, *n, cp + ".numPDBViolations", &ce.num_pdb_violations));
    }
    KPLACE_RETURN_IF_ERROR(CheckNodesKnown(r, *c, path, Keys(all)));
  } else if (key == "filterCalls") {
    KPLACE_RETURN_IF_ERROR(DecodeInt(r, v, path, &e.filter_calls.emplace()));
  } else if (key == "victimsOnNode") {
    KPLACE_RETURN_IF_ERROR(object());
    VictimsOnNodeExpectation& vn = e.victims_on_node.emplace();
    KPLACE_RETURN_IF_ERROR(r.String(v, "node", path, &vn.node));
    if (const json* code = CaseReader::Find(v, "code")) KPLACE_RETURN_IF_ERROR(DecodeCode(r, *code, path + ".code", &vn.code));
    if (const json* victims = CaseReader::Find(v, "victims")) KPLACE_RETURN_IF_ERROR(SortedNames(r, *victims, path + ".victims", &vn.victims.emplace()));
    if (const json* n = CaseReader::Find(v, "numPDBViolations")) KPLACE_RETURN_IF_ERROR(DecodeInt(r, *n, path + ".numPDBViolations", &vn.num_pdb_violations.emplace()));
  } else if (key == "selectedNode") {
    KPLACE_RETURN_IF_ERROR(SortedNames(r, v, path, &e.selected_node.emplace()));
    KPLACE_RETURN_IF_ERROR(CheckNodesKnown(r, *c, path, *e.selected_node));
  } else if (key == "eligible") {
    KPLACE_RETURN_IF_ERROR(DecodeBool(r, v, path, &e.eligible.emplace()));
  } else if (key == "potentialNodes") {
    KPLACE_RETURN_IF_ERROR(SortedNames(r, v, path, &e.potential_nodes.emplace()));
  } else if (key == "preEnqueue") {
    KPLACE_RETURN_IF_ERROR(object());
    PreEnqueueExpectation& pe = e.pre_enqueue.emplace();
    const json* code = CaseReader::Find(v, "code");
    if (!code) return r.Error(path + ".code", "missing");
    KPLACE_RETURN_IF_ERROR(DecodeCode(r, *code, path + ".code", &pe.code));
    if (const json* msg = CaseReader::Find(v, "message")) {
      if (!msg->is_string()) return r.Error(path + ".message", StrCat("expected a string, got ", msg->dump()));
      pe.message = msg->get<std::string>();
    }
  } else {
    return false;
  }
  return true;
}

absl::Status DecodeExpect(const CaseReader& r, const json& doc, Case* c) {
  const json* expect = CaseReader::Find(doc, "expect");
  if (!expect) return r.Error("expect", "missing");
  if (!expect->is_object()) return r.Error("expect", StrCat("expected an object, got ", expect->type_name()));
  Expectations& e = c->expect;
  bool has_stage = false;
  for (auto it = expect->begin(); it != expect->end(); ++it) {
    const std::string& key = it.key();
    const json& v = it.value();
    std::string path = StrCat("expect.", key);
    if (v.is_null()) continue;
    if (key == "preFilter") {
      PreFilterExpectation pf;
      KPLACE_RETURN_IF_ERROR(r.Status(v, path, &pf.status));
      if (v.contains("nodeNames")) {
        pf.node_names_asserted = true;
        if (!v["nodeNames"].is_null()) {
          pf.node_names.emplace();
          KPLACE_RETURN_IF_ERROR(r.Strings(v["nodeNames"], StrCat(path, ".nodeNames"), &*pf.node_names));
          std::sort(pf.node_names->begin(), pf.node_names->end());
        }
      }
      e.pre_filter = std::move(pf);
    } else if (key == "filter") {
      if (!v.is_object()) return r.Error(path, StrCat("expected a map of node to status, got ", v.type_name()));
      for (auto n = v.begin(); n != v.end(); ++n) {
        KPLACE_RETURN_IF_ERROR(r.Status(n.value(), CaseReader::Join(path, n.key()), &e.filter[n.key()]));
      }
      KPLACE_RETURN_IF_ERROR(CheckNodesKnown(r, *c, path, Keys(e.filter)));
    } else if (key == "preScore") {
      e.pre_score.emplace();
      KPLACE_RETURN_IF_ERROR(r.Status(v, path, &*e.pre_score));
    } else if (key == "score") {
      KPLACE_RETURN_IF_ERROR(r.NodeScores(v, path, &e.score));
      KPLACE_RETURN_IF_ERROR(CheckNodesKnown(r, *c, path, Keys(e.score)));
    } else if (key == "scoreStage") {
      std::string stage = v.is_string() ? v.get<std::string>() : "";
      if (stage == "raw") {
        e.score_stage = ScoreStage::kRaw;
      } else if (stage == "normalized") {
        e.score_stage = ScoreStage::kNormalized;
      } else if (stage == "weighted") {
        e.score_stage = ScoreStage::kWeighted;
      } else {
        return r.Error(path, StrCat("expected raw, normalized or weighted, got ", v.dump()));
      }
      has_stage = true;
    } else if (key == "pluginScores") {
      if (!v.is_object()) return r.Error(path, StrCat("expected a map of plugin to scores, got ", v.type_name()));
      for (auto p = v.begin(); p != v.end(); ++p) {
        std::string pp = CaseReader::Join(path, p.key());
        KPLACE_RETURN_IF_ERROR(r.NodeScores(p.value(), pp, &e.plugin_scores[p.key()]));
        KPLACE_RETURN_IF_ERROR(CheckNodesKnown(r, *c, pp, Keys(e.plugin_scores[p.key()])));
      }
    } else if (key == "finalScore") {
      KPLACE_RETURN_IF_ERROR(r.NodeScores(v, path, &e.final_score));
      KPLACE_RETURN_IF_ERROR(CheckNodesKnown(r, *c, path, Keys(e.final_score)));
    } else if (key == "selected") {
      if (!v.is_string()) return r.Error(path, StrCat("expected a node name, got ", v.dump()));
      e.selected = v.get<std::string>();
      KPLACE_RETURN_IF_ERROR(CheckNodesKnown(r, *c, path, {*e.selected}));
    } else {
      KPLACE_ASSIGN_OR_RETURN(bool known, DecodePreemptionExpect(r, key, v, path, c));
      if (!known || !c->preemption) return r.Error(path, "unknown expectation");
    }
  }
  if (!e.score.empty() && !has_stage) return r.Error("expect.scoreStage", "missing (expect.score is given)");
  return absl::OkStatus();
}

// Upstream's batching tests' stand-in filter plugins: they pass every node; one does not
// implement pod signing, the other refuses every pod. Either way the profile signs nothing.
bool IsUnsignedTestPlugin(const json& entry) {
  const json* name = CaseReader::Find(entry, "name");
  return name && name->is_string() &&
         (name->get<std::string>() == "test:NoSignFilter" || name->get<std::string>() == "test:RefuseSignFilter");
}

// A KubeSchedulerProfile of a sequence case with the stand-in plugins taken out; sets
// `*unsigned_plugin` when it had one.
json WithoutTestPlugins(json profile, bool* unsigned_plugin) {
  *unsigned_plugin = false;
  if (!profile.is_object() || !profile.contains("plugins") || !profile["plugins"].is_object()) return profile;
  for (auto point = profile["plugins"].begin(); point != profile["plugins"].end(); ++point) {
    if (!point->is_object() || !point->contains("enabled") || !(*point)["enabled"].is_array()) continue;
    json kept = json::array();
    for (const json& entry : (*point)["enabled"]) {
      if (IsUnsignedTestPlugin(entry)) {
        *unsigned_plugin = true;
      } else {
        kept.push_back(entry);
      }
    }
    (*point)["enabled"] = std::move(kept);
  }
  return profile;
}

absl::Status DecodeSequence(const CaseReader& r, const json& doc, Case* c) {
  for (auto it = doc.begin(); it != doc.end(); ++it) {
    static const std::set<std::string> kKeys = {"name", "source", "note", "plugins", "profile", "additionalProfiles",
                                                "featureGates", "nodes", "existingPods", "pods", "objects",
                                                "batchAgeExceededBefore", "expect", "podGroups"};
    if (!kKeys.count(it.key())) return r.Error(it.key(), "unsupported field in a sequence case");
  }
  if (!c->default_profile) return r.Error("plugins", "a sequence case runs \"default\"");
  SequenceInput& q = c->sequence.emplace();

  json config = {{"apiVersion", "kubescheduler.config.k8s.io/v1"}, {"kind", "KubeSchedulerConfiguration"}};
  json profiles = json::array();
  const json* profile = CaseReader::Find(doc, "profile");
  profiles.push_back(profile ? *profile : json::object());
  // FORMAT.md: an absent schedulerName means default-scheduler (v1 defaulting per profile).
  if (profiles[0].is_object() && !profiles[0].contains("schedulerName")) profiles[0]["schedulerName"] = "default-scheduler";
  if (const json* more = CaseReader::Find(doc, "additionalProfiles")) {
    if (!more->is_array()) return r.Error("additionalProfiles", StrCat("expected a list, got ", more->type_name()));
    for (const json& p : *more) profiles.push_back(p);
  }
  for (json& p : profiles) {
    bool unsigned_plugin = false;
    p = WithoutTestPlugins(std::move(p), &unsigned_plugin);
    if (unsigned_plugin) {
      const json* name = CaseReader::Find(p, "schedulerName");
      q.unsigned_profiles.push_back(name && name->is_string() ? name->get<std::string>() : "default-scheduler");
    }
  }
  config["profiles"] = std::move(profiles);
  KPLACE_ASSIGN_OR_RETURN(q.config, DecodeSchedulerConfig(config, StrCat(r.file(), ": profile")));

  auto lenient_node = [](const json& j, std::string_view where) { return DecodeNode(j, where, /*strict=*/false); };
  KPLACE_RETURN_IF_ERROR(DecodeList<Node>(r, doc, "nodes", "", lenient_node, &c->objects.nodes, /*named=*/false));
  std::set<std::string> names;
  for (const Node& n : c->objects.nodes) {
    if (!names.insert(n.meta.name).second) return r.Error("nodes", StrCat("duplicate node \"", n.meta.name, "\""));
  }
  KPLACE_RETURN_IF_ERROR(DecodeList<Pod>(r, doc, "existingPods", "", DecodeCasePod, &c->objects.pods));
  KPLACE_RETURN_IF_ERROR(DecodeList<Pod>(r, doc, "pods", "", DecodeCasePod, &q.pods));
  if (q.pods.empty()) return r.Error("pods", "missing or empty");
  for (size_t i = 0; i < q.pods.size(); ++i) {
    if (!q.pods[i].node_name.empty()) return r.Error(StrCat("pods[", i, "].spec.nodeName"), "a sequence pod is pending");
  }
  KPLACE_RETURN_IF_ERROR(DecodeObjects(r, doc, c));
  q.queued = CaseReader::Find(doc, "podGroups") != nullptr;
  KPLACE_RETURN_IF_ERROR(DecodeList<PodGroup>(r, doc, "podGroups", "", DecodePodGroup, &c->objects.pod_groups));
  if (const json* ages = CaseReader::Find(doc, "batchAgeExceededBefore")) {
    if (!ages->is_array()) return r.Error("batchAgeExceededBefore", "expected a list of pod indices");
    for (size_t i = 0; i < ages->size(); ++i) {
      int64_t v = -1;
      if (!AsInt64((*ages)[i], &v) || v < 0 || static_cast<size_t>(v) >= q.pods.size()) {
        return r.Error(StrCat("batchAgeExceededBefore[", i, "]"), StrCat("expected an index into pods, got ", (*ages)[i].dump()));
      }
      q.batch_age_exceeded_before.push_back(static_cast<size_t>(v));
    }
  }

  const json* expect = CaseReader::Find(doc, "expect");
  if (!expect || !expect->is_object()) return r.Error("expect", "missing");
  for (auto it = expect->begin(); it != expect->end(); ++it) {
    if (it.key() != "placements" && it.key() != "hinted" && it.key() != "podGroups" && it.key() != "evicted") {
      return r.Error(StrCat("expect.", it.key()), "unknown expectation");
    }
  }
  const json* placements = CaseReader::Find(*expect, "placements");
  if (!placements || !placements->is_array() || placements->size() != q.pods.size()) {
    return r.Error("expect.placements", StrCat("expected one entry per pod (", q.pods.size(), ")"));
  }
  for (size_t i = 0; i < placements->size(); ++i) {
    const json& e = (*placements)[i];
    const std::string path = StrCat("expect.placements[", i, "]");
    PlacementExpectation want;
    KPLACE_RETURN_IF_ERROR(r.String(e, "pod", path, &want.pod));
    if (want.pod != q.pods[i].meta.name) {
      return r.Error(CaseReader::Join(path, "pod"), StrCat("expected \"", q.pods[i].meta.name, "\" (pods[", i, "])"));
    }
    if (!e.is_object() || !e.contains("node")) return r.Error(CaseReader::Join(path, "node"), "missing (null: not placed)");
    if (!e["node"].is_null()) {
      if (!e["node"].is_string()) return r.Error(CaseReader::Join(path, "node"), "expected a node name or null");
      want.node = e["node"].get<std::string>();
      KPLACE_RETURN_IF_ERROR(CheckNodesKnown(r, *c, CaseReader::Join(path, "node"), {*want.node}));
    }
    if (const json* m = CaseReader::Find(e, "message")) {
      if (!m->is_string()) return r.Error(CaseReader::Join(path, "message"), "expected a string");
      want.message = m->get<std::string>();
    }
    q.placements.push_back(std::move(want));
  }
  if (const json* groups = CaseReader::Find(*expect, "podGroups")) {
    if (!q.queued) return r.Error("expect.podGroups", "only a case with podGroups asserts them");
    if (!groups->is_array()) return r.Error("expect.podGroups", "expected a list");
    for (size_t i = 0; i < groups->size(); ++i) {
      const json& e = (*groups)[i];
      const std::string path = StrCat("expect.podGroups[", i, "]");
      PodGroupExpectation want;
      KPLACE_RETURN_IF_ERROR(r.String(e, "name", path, &want.name));
      const json* scheduled = CaseReader::Find(e, "scheduled");
      if (!scheduled || !scheduled->is_boolean()) return r.Error(CaseReader::Join(path, "scheduled"), "expected true or false");
      want.scheduled = scheduled->get<bool>();
      if (const json* m = CaseReader::Find(e, "message")) {
        if (!m->is_string()) return r.Error(CaseReader::Join(path, "message"), "expected a string");
        want.message = m->get<std::string>();
      }
      q.pod_groups.push_back(std::move(want));
    }
  }
  if (const json* evicted = CaseReader::Find(*expect, "evicted")) {
    if (!q.queued) return r.Error("expect.evicted", "only a case with podGroups asserts them");
    if (!evicted->is_array()) return r.Error("expect.evicted", "expected a list of existing pods' namespace/name");
    std::set<std::string> existing;
    for (const Pod& p : c->objects.pods) existing.insert(ObjectKey(p.meta));
    std::vector<std::string>& keys = q.evicted.emplace();
    for (size_t i = 0; i < evicted->size(); ++i) {
      const json& e = (*evicted)[i];
      const std::string path = StrCat("expect.evicted[", i, "]");
      if (!e.is_string()) return r.Error(path, "expected an existing pod's namespace/name");
      if (!existing.count(e.get<std::string>())) return r.Error(path, StrCat("no existing pod ", e.get<std::string>()));
      keys.push_back(e.get<std::string>());
    }
    std::sort(keys.begin(), keys.end());
  }
  if (const json* hinted = CaseReader::Find(*expect, "hinted")) {
    if (!hinted->is_array() || hinted->size() != q.pods.size()) {
      return r.Error("expect.hinted", StrCat("expected one entry per pod (", q.pods.size(), ")"));
    }
    for (size_t i = 0; i < hinted->size(); ++i) {
      const json& h = (*hinted)[i];
      if (h.is_null()) {
        q.hinted.emplace_back();
      } else if (h.is_boolean()) {
        q.hinted.emplace_back(h.get<bool>());
      } else {
        return r.Error(StrCat("expect.hinted[", i, "]"), "expected true, false or null");
      }
    }
  }
  return absl::OkStatus();
}

}  // namespace

const char* ScoreStageName(ScoreStage stage) {
  switch (stage) {
    case ScoreStage::kRaw:
      return "raw";
    case ScoreStage::kNormalized:
      return "normalized";
    case ScoreStage::kWeighted:
      return "weighted";
  }
  return "?";
}

absl::StatusOr<Case> DecodeCase(const json& doc, std::string_view file) {
  CaseReader r(file);
  if (!doc.is_object()) return absl::InvalidArgumentError(StrCat(file, ": expected a case object, got ", doc.type_name()));
  Case c;
  c.file = std::string(file);
  KPLACE_RETURN_IF_ERROR(r.String(doc, "name", "", &c.name));
  if (c.name.empty()) return r.Error("name", "missing");
  KPLACE_RETURN_IF_ERROR(r.String(doc, "source", "", &c.source));
  KPLACE_RETURN_IF_ERROR(DecodePlugins(r, doc, &c));
  const json* expect = CaseReader::Find(doc, "expect");
  if ((expect && CaseReader::Find(*expect, "placements")) || CaseReader::Find(doc, "existingPods")) {
    KPLACE_RETURN_IF_ERROR(DecodeGates(r, doc, &c));
    KPLACE_RETURN_IF_ERROR(DecodeSequence(r, doc, &c));
    return c;
  }
  KPLACE_RETURN_IF_ERROR(DecodeProfile(r, doc, &c));
  KPLACE_RETURN_IF_ERROR(DecodeGates(r, doc, &c));
  KPLACE_RETURN_IF_ERROR(DecodeCluster(r, doc, &c));
  KPLACE_RETURN_IF_ERROR(DecodePreemption(r, doc, &c));
  KPLACE_RETURN_IF_ERROR(DecodeExpect(r, doc, &c));
  return c;
}

absl::StatusOr<Case> DecodeCaseText(std::string_view text, std::string_view file) {
  // ParseDocuments refuses nesting past kMaxNestingDepth before parsing (the DOM's copy,
  // dump and destruction recurse: a deeply nested plugin args value overflowed the stack).
  KPLACE_ASSIGN_OR_RETURN(std::vector<json> docs, ParseDocuments(text, file));
  if (docs.size() != 1) return absl::InvalidArgumentError(StrCat(file, ": expected one JSON object, got ", docs.size(), " documents"));
  return DecodeCase(docs[0], file);
}

absl::StatusOr<Case> LoadCase(const std::string& path) {
  KPLACE_ASSIGN_OR_RETURN(const std::string text, ReadInputFile(path));
  return DecodeCaseText(text, path);
}

}  // namespace kplace::conform
