#include "kplace/bench/perf_config.h"

#include <algorithm>
#include <map>
#include <set>

#include "absl/strings/str_split.h"
#include "kplace/common/status.h"
#include "kplace/common/strings.h"
#include "kplace/model/decode.h"
#include "kplace/model/input_file.h"

namespace kplace::bench {
namespace {

using json = nlohmann::json;

// Upstream's makeBaseNode (scheduler_perf util.go) and makeBasePod (testutils.MakePodSpec):
// what createNodes and createPods use without a template path.
const json& BaseNode() {
  static const json n = json::parse(R"({"status": {"capacity": {"pods": "110", "cpu": "4", "memory": "32Gi"}}})");
  return n;
}
const json& BasePod() {
  static const json p = json::parse(R"({"metadata": {"generateName": "pod-"}, "spec": {"containers": [{
      "name": "pause", "image": "registry.k8s.io/pause:3.10.1", "ports": [{"containerPort": 80}],
      "resources": {"requests": {"cpu": "100m", "memory": "500Mi"},
                    "limits": {"cpu": "100m", "memory": "500Mi"}}}]}})");
  return p;
}

// Ops upstream has that kplace does not run (DRA, profiling, ...).
const std::set<std::string>& UnmodelledOpcodes() {
  static const std::set<std::string> s = {"updateAny", "allocResourceClaims", "createResourceClaims",
                                          "createResourceDriver",
                                          "startCollectingProfile", "stopCollectingProfile"};
  return s;
}

// The kinds createAny may make, and whether each is namespaced: the objects scheduling reads
// besides nodes and pods (createNodes and createPods make those). DRA's kinds are left out
// with the rest of DRA.
const std::map<std::string, bool>& CreateAnyKinds() {
  static const std::map<std::string, bool> k = {
      {"Service", true},          {"ReplicaSet", true},          {"StatefulSet", true},
      {"ReplicationController", true}, {"PersistentVolumeClaim", true}, {"CSIStorageCapacity", true},
      {"PodDisruptionBudget", true}, {"PersistentVolume", false},  {"StorageClass", false},
      {"CSINode", false},         {"CSIDriver", false},          {"PriorityClass", false}};
  return k;
}

// Go templates run on a template's text before YAML reads it; kplace reads the YAML first.
// A value that is one action and nothing else, unquoted (`minCount: {{.podsPerGroup}}`),
// would read as a YAML flow mapping: it is quoted here, and substitution gives a parameter
// or function value its type back (kplace/bench/workload.h).
std::string QuoteBareActions(const std::string& text) {
  std::string out;
  for (size_t start = 0; start <= text.size();) {
    size_t stop = text.find('\n', start);
    if (stop == std::string::npos) stop = text.size();
    const std::string_view line = std::string_view(text).substr(start, stop - start);
    if (start > 0) out += '\n';
    start = stop + 1;
    const size_t end = line.find_last_not_of(" \t\r");
    const size_t open = end == std::string_view::npos || end < 3 ? std::string_view::npos : line.rfind("{{", end);
    const bool closes = open != std::string_view::npos && line.compare(end - 1, 2, "}}") == 0 &&
                        line.find("}}", open) == end - 1 && line.substr(open, end + 1 - open).find('"') == std::string_view::npos;
    const size_t before = closes && open > 0 ? line.find_last_not_of(" \t", open - 1) : std::string_view::npos;
    const bool value = before != std::string_view::npos && before + 1 < open &&
                       (line[before] == ':' || (line[before] == '-' && line.find_first_not_of(" \t") == before));
    if (!value) {
      out.append(line.data(), line.size());
      continue;
    }
    out += StrCat(line.substr(0, open), "\"", line.substr(open, end + 1 - open), "\"", line.substr(end + 1));
  }
  return out;
}

std::string Dir(const std::string& path) {
  size_t slash = path.rfind('/');
  return slash == std::string::npos ? "" : path.substr(0, slash + 1);
}

// One (test case, workload) pair in kplace's workload document form (kplace/bench/workload.h),
// before it is decoded: what the test case's ops make, and this workload's variant.
struct Translated {
  json doc;      // every field but name, description, default and variants
  json variant;  // counts, threshold, featureGates, signatureBatchSize, upstream
  std::vector<std::string> labels;
  std::string metrics_name;
};

// One test case's workload being translated: where errors point, and the params.
class Translator {
 public:
  Translator(const std::string& file, const json& tc, const std::string& tc_name, const json& workload,
             const std::string& workload_name, const FileReader& read)
      : file_(file), tc_(tc), tc_name_(tc_name), w_(workload), w_name_(workload_name), read_(read) {}

  absl::StatusOr<Translated> Run();

 private:
  // "FILE: test case T, workload W: workloadTemplate[i].field: what"
  absl::Status Bad(int64_t op, const std::string& field, const std::string& what) const {
    std::string where = op >= 0 ? StrCat("workloadTemplate[", op, "]") : std::string();
    if (!field.empty()) where += (where.empty() ? "" : ".") + field;
    return absl::InvalidArgumentError(
        StrCat(file_, ": test case ", tc_name_, ", workload ", w_name_, ": ", where, ": ", what));
  }
  absl::Status Known(const json& j, int64_t op, const std::string& prefix, std::initializer_list<const char*> known) const;
  absl::StatusOr<int64_t> Param(int64_t op, const std::string& field, const json& ref);
  absl::StatusOr<int64_t> CountOf(const json& o, int64_t op, const std::string& prefix, const std::string& key,
                                  bool required);
  absl::StatusOr<json> Template(int64_t op, const std::string& field, const json& path, bool keep_namespace = false);
  absl::StatusOr<json> Templates(int64_t op, const std::string& field, const json& paths);
  absl::StatusOr<std::string> String(const json& o, int64_t op, const std::string& field) const;
  absl::StatusOr<json> ParamsField(const json& o, int64_t op, const std::string& prefix);
  absl::Status Unmodelled(const json& o, int64_t op, const std::string& prefix,
                          std::initializer_list<const char*> fields) const;
  absl::StatusOr<std::pair<std::string, json>> LabelStrategy(const json& s, int64_t op, const std::string& field) const;
  absl::StatusOr<json> NodeGroup(const json& o, int64_t op);
  absl::StatusOr<json> PodGroup(const json& o, int64_t op, const std::string& prefix, int64_t unrolled,
                                int64_t* count, int64_t* signature_batch);
  absl::StatusOr<std::vector<json>> CreateAny(const json& o, int64_t op, std::string* ns);
  absl::Status WorkloadFields(json* variant, std::vector<std::string>* labels) const;

  const std::string& file_;
  const json& tc_;
  const std::string& tc_name_;
  const json& w_;
  const std::string& w_name_;
  const FileReader& read_;
  std::set<std::string> used_;  // params referenced
  json template_values_ = json::object();  // params templateParams reference, for the variant
};

absl::Status Translator::Known(const json& j, int64_t op, const std::string& prefix,
                               std::initializer_list<const char*> known) const {
  for (auto it = j.begin(); it != j.end(); ++it) {
    if (std::none_of(known.begin(), known.end(), [&](const char* k) { return it.key() == k; })) {
      return Bad(op, prefix + it.key(), "unknown field (scheduler_perf would refuse it too)");
    }
  }
  return absl::OkStatus();
}

// Fields upstream has that kplace does not model: an error when present and not empty/false.
absl::Status Translator::Unmodelled(const json& o, int64_t op, const std::string& prefix,
                                    std::initializer_list<const char*> fields) const {
  for (const char* f : fields) {
    if (!o.contains(f)) continue;
    const json& v = o[f];
    if (v.is_null() || (v.is_boolean() && !v.get<bool>()) || (v.is_object() && v.empty()) ||
        (v.is_array() && v.empty()) || (v.is_string() && v.get<std::string>().empty()) ||
        (v.is_number() && v.get<double>() == 0)) {
      continue;
    }
    return Bad(op, prefix + f, StrCat("not modelled by kplace (got ", v.dump(), ")"));
  }
  return absl::OkStatus();
}

absl::StatusOr<int64_t> Translator::Param(int64_t op, const std::string& field, const json& ref) {
  if (!ref.is_string() || ref.get<std::string>().size() < 2 || ref.get<std::string>()[0] != '$') {
    return Bad(op, field, StrCat("expected a $parameter reference, got ", ref.dump()));
  }
  const std::string key = ref.get<std::string>().substr(1);
  used_.insert(key);
  const json params = w_.contains("params") ? w_["params"] : json::object();
  if (!params.is_object() || !params.contains(key)) {
    return Bad(op, field, StrCat("parameter ", key, " is undefined in workload ", w_name_, "'s params"));
  }
  const json& v = params[key];
  if (!v.is_number() || v.get<double>() < 0 || v.get<double>() > 10000000) {
    return Bad(op, field, StrCat("parameter ", key, " is ", v.dump(), ", expected a count between 0 and 10000000"));
  }
  return static_cast<int64_t>(v.get<double>());  // upstream: int(float64)
}

// `key`, or `key`Param (which wins, as upstream's patchParams).
absl::StatusOr<int64_t> Translator::CountOf(const json& o, int64_t op, const std::string& prefix,
                                            const std::string& key, bool required) {
  const std::string param = key + "Param";
  if (o.contains(param)) return Param(op, prefix + param, o[param]);
  if (o.contains(key)) {
    const json& c = o[key];
    if (!c.is_number_integer() || c.get<int64_t>() < 0 || c.get<int64_t>() > 10000000) {
      return Bad(op, prefix + key, StrCat("expected a count between 0 and 10000000, got ", c.dump()));
    }
    return c.get<int64_t>();
  }
  if (required) return Bad(op, prefix + key, StrCat("missing (give ", key, " or ", param, ")"));
  return 0;
}

absl::StatusOr<std::string> Translator::String(const json& o, int64_t op, const std::string& field) const {
  const std::string key = field.substr(field.rfind('.') == std::string::npos ? 0 : field.rfind('.') + 1);
  if (!o[key].is_string() || o[key].get<std::string>().empty()) return Bad(op, field, "expected a non-empty string");
  return o[key].get<std::string>();
}

// A template file, relative to the config's directory, holding one object. A pod or node
// template loses its metadata.namespace (the op's namespace wins, as upstream creates it
// there); per-pod object templates keep theirs ({{.Namespace}}).
absl::StatusOr<json> Translator::Template(int64_t op, const std::string& field, const json& path, bool keep_namespace) {
  if (!path.is_string() || path.get<std::string>().empty()) return Bad(op, field, "expected a file path");
  std::string p = path.get<std::string>();
  if (p[0] != '/') p = Dir(file_) + p;
  auto text = read_(p);
  if (!text.ok()) return Bad(op, field, StrCat(p, " cannot be read"));
  auto docs = ParseDocuments(QuoteBareActions(*text), p);
  if (!docs.ok()) return Bad(op, field, std::string(docs.status().message()));
  if (docs->size() != 1 || !(*docs)[0].is_object()) return Bad(op, field, StrCat(p, ": expected one object"));
  json t = std::move((*docs)[0]);
  if (!keep_namespace && t.contains("metadata") && t["metadata"].is_object() && t["metadata"].contains("namespace")) {
    t["metadata"].erase("namespace");
  }
  return t;
}

// An op's templateParams, as written: each value an integer, a string, or a "$param" whose
// value (an integer or a string) goes to the variant's params.
absl::StatusOr<json> Translator::ParamsField(const json& o, int64_t op, const std::string& prefix) {
  json out = json::object();
  if (!o.contains("templateParams")) return out;
  const std::string field = prefix + "templateParams";
  const json& p = o["templateParams"];
  if (!p.is_object()) return Bad(op, field, "expected a map of name to value");
  auto value_ok = [](const json& v) {
    return v.is_string() || (v.is_number() && v.get<double>() == static_cast<double>(static_cast<int64_t>(v.get<double>())));
  };
  for (auto it = p.begin(); it != p.end(); ++it) {
    const std::string f = StrCat(field, ".", it.key());
    const json& v = it.value();
    if (v.is_string() && v.get<std::string>().rfind('$', 0) == 0) {
      const std::string key = v.get<std::string>().substr(1);
      used_.insert(key);
      const json params = w_.contains("params") ? w_["params"] : json::object();
      if (!params.is_object() || !params.contains(key)) {
        return Bad(op, f, StrCat("parameter ", key, " is undefined in workload ", w_name_, "'s params"));
      }
      if (!value_ok(params[key])) {
        return Bad(op, f, StrCat("parameter ", key, " is ", params[key].dump(),
                                 ", expected an integer or a string (the template values kplace models)"));
      }
      template_values_[key] = params[key].is_string() ? params[key] : json(static_cast<int64_t>(params[key].get<double>()));
    } else if (!value_ok(v)) {
      return Bad(op, f, StrCat("expected an integer, a string or a $parameter, got ", v.dump()));
    }
    out[it.key()] = v;
  }
  return out;
}

// kplaceObjectTemplatePaths: a list of template files, each kept whole.
absl::StatusOr<json> Translator::Templates(int64_t op, const std::string& field, const json& paths) {
  if (!paths.is_array() || paths.empty()) return Bad(op, field, "expected a non-empty list of template paths");
  json out = json::array();
  for (size_t i = 0; i < paths.size(); ++i) {
    KPLACE_ASSIGN_OR_RETURN(json t, Template(op, StrCat(field, "[", i, "]"), paths[i], true));
    out.push_back(std::move(t));
  }
  return out;
}

// labelNodePrepareStrategy (or one of kplaceLabelNodePrepareStrategies): {labelKey, labelValues}.
absl::StatusOr<std::pair<std::string, json>> Translator::LabelStrategy(const json& s, int64_t op,
                                                                       const std::string& field) const {
  if (!s.is_object()) return Bad(op, field, "expected {labelKey, labelValues}");
  KPLACE_RETURN_IF_ERROR(Known(s, op, field + ".", {"labelKey", "labelValues"}));
  if (!s.contains("labelKey")) return Bad(op, field + ".labelKey", "missing");
  KPLACE_ASSIGN_OR_RETURN(std::string key, String(s, op, field + ".labelKey"));
  if (!s.contains("labelValues") || !s["labelValues"].is_array() || s["labelValues"].empty()) {
    return Bad(op, field + ".labelValues", "expected a non-empty list of values");
  }
  return std::make_pair(key, s["labelValues"]);
}

// createNodes as a kplace node group.
absl::StatusOr<json> Translator::NodeGroup(const json& o, int64_t op) {
  KPLACE_RETURN_IF_ERROR(Known(o, op, "", {"opcode", "count", "countParam", "nodeTemplatePath",
                                           "nodeAllocatableStrategy", "labelNodePrepareStrategy",
                                           "uniqueNodeLabelStrategy", "templateParams", "kplaceObjectTemplatePaths",
                                           "kplaceLabelNodePrepareStrategies"}));
  KPLACE_RETURN_IF_ERROR(Unmodelled(o, op, "", {"nodeAllocatableStrategy", "templateParams"}));
  json g = json::object();
  if (o.contains("nodeTemplatePath")) {
    KPLACE_ASSIGN_OR_RETURN(g["template"], Template(op, "nodeTemplatePath", o["nodeTemplatePath"]));
  } else {
    g["template"] = BaseNode();
  }
  if (o.contains("labelNodePrepareStrategy") && o.contains("uniqueNodeLabelStrategy")) {
    return Bad(op, "uniqueNodeLabelStrategy", "at most one node strategy (labelNodePrepareStrategy given too)");
  }
  if (o.contains("labelNodePrepareStrategy")) {
    KPLACE_ASSIGN_OR_RETURN(auto kv, LabelStrategy(o["labelNodePrepareStrategy"], op, "labelNodePrepareStrategy"));
    g["labels"][kv.first] = kv.second;
  }
  if (o.contains("kplaceLabelNodePrepareStrategies")) {
    // Upstream takes one strategy per op; kplace's own workloads label by more than one key.
    const json& list = o["kplaceLabelNodePrepareStrategies"];
    if (!list.is_array() || list.empty()) {
      return Bad(op, "kplaceLabelNodePrepareStrategies", "expected a non-empty list of {labelKey, labelValues}");
    }
    for (size_t i = 0; i < list.size(); ++i) {
      const std::string f = StrCat("kplaceLabelNodePrepareStrategies[", i, "]");
      KPLACE_ASSIGN_OR_RETURN(auto kv, LabelStrategy(list[i], op, f));
      if (g.contains("labels") && g["labels"].contains(kv.first)) {
        return Bad(op, f + ".labelKey", StrCat(kv.first, " is labelled by another strategy of this op"));
      }
      g["labels"][kv.first] = kv.second;
    }
  }
  if (o.contains("uniqueNodeLabelStrategy")) {
    const json& s = o["uniqueNodeLabelStrategy"];
    const std::string f = "uniqueNodeLabelStrategy.";
    if (!s.is_object()) return Bad(op, "uniqueNodeLabelStrategy", "expected {labelKey}");
    KPLACE_RETURN_IF_ERROR(Known(s, op, f, {"labelKey"}));
    if (!s.contains("labelKey")) return Bad(op, f + "labelKey", "missing");
    KPLACE_ASSIGN_OR_RETURN(std::string key, String(s, op, f + "labelKey"));
    // Upstream gives each node a fresh UUID; any per-node distinct value decides the same.
    g["template"]["metadata"]["labels"][key] = "{{.Name}}";
  }
  if (o.contains("kplaceObjectTemplatePaths")) {
    KPLACE_ASSIGN_OR_RETURN(g["objects"], Templates(op, "kplaceObjectTemplatePaths", o["kplaceObjectTemplatePaths"]));
  }
  return g;
}

// createPods (or createPodSets' createPodsOp) as a kplace pod group. `signature_batch`: the
// op's kplaceSignatureBatchSize, -1 when it has none.
absl::StatusOr<json> Translator::PodGroup(const json& o, int64_t op, const std::string& prefix, int64_t unrolled,
                                          int64_t* count, int64_t* signature_batch) {
  KPLACE_RETURN_IF_ERROR(Known(o, op, prefix,
                               {"opcode", "count", "countParam", "countMultiplierParam", "steadyState",
                                "steadyStateParam", "duration", "durationParam", "collectMetrics", "namespace",
                                "podTemplatePath", "skipWaitToCompletion", "persistentVolumeTemplatePath",
                                "persistentVolumeClaimTemplatePath", "templateParams", "signatureBatchSize",
                                "signatureBatchSizeParam", "kplaceObjectTemplatePaths", "kplaceHeterogeneous",
                                "kplaceSignatureBatchSize", "kplaceSignatureBatchSizeParam"}));
  KPLACE_RETURN_IF_ERROR(Unmodelled(o, op, prefix,
                                    {"steadyState", "steadyStateParam", "duration", "durationParam",
                                     "persistentVolumeTemplatePath", "persistentVolumeClaimTemplatePath"}));
  if (absl::Status s = Unmodelled(o, op, prefix, {"signatureBatchSize", "signatureBatchSizeParam"}); !s.ok()) {
    return absl::InvalidArgumentError(
        StrCat(s.message(), "; kplace's model of it is kplaceSignatureBatchSize or kplaceSignatureBatchSizeParam"));
  }
  KPLACE_ASSIGN_OR_RETURN(*count, CountOf(o, op, prefix, "count", true));
  if (o.contains("countMultiplierParam")) {
    KPLACE_ASSIGN_OR_RETURN(int64_t m, Param(op, prefix + "countMultiplierParam", o["countMultiplierParam"]));
    *count *= m;
  }
  *signature_batch = -1;
  if (o.contains("kplaceSignatureBatchSize") || o.contains("kplaceSignatureBatchSizeParam")) {
    KPLACE_ASSIGN_OR_RETURN(*signature_batch, CountOf(o, op, prefix, "kplaceSignatureBatchSize", true));
  }
  json g = json::object();
  if (o.contains("namespace")) {
    KPLACE_ASSIGN_OR_RETURN(g["namespace"], String(o, op, prefix + "namespace"));
  } else {
    g["namespace"] = StrCat("namespace-", unrolled);
  }
  if (o.contains("podTemplatePath")) {
    KPLACE_ASSIGN_OR_RETURN(g["template"], Template(op, prefix + "podTemplatePath", o["podTemplatePath"]));
  } else if (tc_.contains("defaultPodTemplatePath")) {
    KPLACE_ASSIGN_OR_RETURN(g["template"], Template(-1, "defaultPodTemplatePath", tc_["defaultPodTemplatePath"]));
  } else {
    g["template"] = BasePod();
  }
  for (const char* b : {"collectMetrics", "skipWaitToCompletion"}) {
    if (o.contains(b) && !o[b].is_boolean()) return Bad(op, prefix + b, "expected true or false");
  }
  KPLACE_ASSIGN_OR_RETURN(json params, ParamsField(o, op, prefix));
  if (!params.empty()) g["templateParams"] = std::move(params);
  if (o.contains("kplaceObjectTemplatePaths")) {
    KPLACE_ASSIGN_OR_RETURN(g["objects"], Templates(op, prefix + "kplaceObjectTemplatePaths",
                                                    o["kplaceObjectTemplatePaths"]));
  }
  if (o.contains("kplaceHeterogeneous")) {
    const json& h = o["kplaceHeterogeneous"];
    const std::string f = prefix + "kplaceHeterogeneous";
    if (!h.is_object()) return Bad(op, f, "expected {seed}");
    KPLACE_RETURN_IF_ERROR(Known(h, op, f + ".", {"seed"}));
    if (!h.contains("seed") || !h["seed"].is_number_integer() || h["seed"].get<int64_t>() < 0) {
      return Bad(op, f + ".seed", "expected a non-negative integer");
    }
    g["heterogeneous"] = h;
  }
  return g;
}

// createAny as cluster objects: `count` copies of the template, named by metadata.name or
// by generateName plus the copy's index (the API server's random suffix, made
// deterministic); `ns` gets the op's namespace.
absl::StatusOr<std::vector<json>> Translator::CreateAny(const json& o, int64_t op, std::string* ns) {
  KPLACE_RETURN_IF_ERROR(Known(o, op, "", {"opcode", "namespace", "templatePath", "count", "countParam"}));
  if (!o.contains("templatePath")) return Bad(op, "templatePath", "missing");
  KPLACE_ASSIGN_OR_RETURN(json t, Template(op, "templatePath", o["templatePath"]));
  if (t.dump().find("{{") != std::string::npos) {
    return Bad(op, "templatePath", "template variables in createAny templates are not modelled by kplace");
  }
  const std::string kind = t.contains("kind") && t["kind"].is_string() ? t["kind"].get<std::string>() : "";
  auto k = CreateAnyKinds().find(kind);
  if (k == CreateAnyKinds().end()) {
    std::string kinds;
    for (const auto& [name, namespaced] : CreateAnyKinds()) kinds += (kinds.empty() ? "" : ", ") + name;
    return Bad(op, "templatePath", StrCat("createAny of ", kind.empty() ? "an object without a kind" : kind,
                                          " is not modelled by kplace (it makes ", kinds, ")"));
  }
  int64_t n = 1;
  if (o.contains("count") || o.contains("countParam")) {
    KPLACE_ASSIGN_OR_RETURN(n, CountOf(o, op, "", "count", true));
  }
  ns->clear();
  if (o.contains("namespace")) {
    KPLACE_ASSIGN_OR_RETURN(*ns, String(o, op, "namespace"));
  }
  if (k->second && ns->empty()) return Bad(op, "namespace", StrCat("missing (", kind, " is namespaced)"));
  if (!k->second && !ns->empty()) return Bad(op, "namespace", StrCat(kind, " is cluster-scoped: leave it out"));
  const json meta = t.contains("metadata") && t["metadata"].is_object() ? t["metadata"] : json::object();
  const bool named = meta.contains("name") && meta["name"].is_string();
  if (!named && !(meta.contains("generateName") && meta["generateName"].is_string())) {
    return Bad(op, "templatePath", "the object needs metadata.name or metadata.generateName");
  }
  if (named && n > 1) return Bad(op, "count", StrCat(n, " objects would share metadata.name ", meta["name"].dump()));
  std::vector<json> out;
  for (int64_t i = 0; i < n; ++i) {
    json obj = t;
    if (!named) {
      obj["metadata"]["name"] = StrCat(meta["generateName"].get<std::string>(), i);
      obj["metadata"].erase("generateName");
    }
    if (!ns->empty()) obj["metadata"]["namespace"] = *ns;
    out.push_back(std::move(obj));
  }
  return out;
}

// The workload entry's own fields: threshold, featureGates (the test case's, then the
// workload's), labels, and kplace.upstream.
absl::Status Translator::WorkloadFields(json* variant, std::vector<std::string>* labels) const {
  if (w_.contains("threshold")) {
    if (!w_["threshold"].is_number()) {
      return Bad(-1, "threshold", "kplace takes one number (thresholds per topic are not modelled)");
    }
    (*variant)["threshold"] = w_["threshold"];
  }
  for (const json* gates : {&tc_, &w_}) {
    if (!gates->contains("featureGates")) continue;
    const json& g = (*gates)["featureGates"];
    const std::string field = gates == &tc_ ? "featureGates (test case)" : "featureGates";
    if (!g.is_object()) return Bad(-1, field, "expected a map of gate to true or false");
    for (auto it = g.begin(); it != g.end(); ++it) {
      if (!it.value().is_boolean()) return Bad(-1, StrCat(field, ".", it.key()), "expected true or false");
      (*variant)["featureGates"][it.key()] = it.value();
    }
  }
  for (const json* l : {&tc_, &w_}) {
    if (!l->contains("labels")) continue;
    if (!(*l)["labels"].is_array()) return Bad(-1, "labels", "expected a list of strings");
    for (const json& label : (*l)["labels"]) {
      if (!label.is_string()) return Bad(-1, "labels", "expected a list of strings");
      labels->push_back(label.get<std::string>());
    }
  }
  if (w_.contains("kplace")) {
    const json& k = w_["kplace"];
    if (!k.is_object()) return Bad(-1, "kplace", "expected a map {upstream}");
    KPLACE_RETURN_IF_ERROR(Known(k, -1, "kplace.", {"upstream"}));
    if (k.contains("upstream")) {
      if (!k["upstream"].is_boolean()) return Bad(-1, "kplace.upstream", "expected true or false");
      (*variant)["upstream"] = k["upstream"];
    }
  }
  return absl::OkStatus();
}

absl::StatusOr<Translated> Translator::Run() {
  KPLACE_RETURN_IF_ERROR(Known(w_, -1, "", {"name", "params", "labels", "threshold", "thresholdMetricSelector",
                                            "featureGates", "kplace"}));
  if (w_.contains("thresholdMetricSelector")) {
    const json& s = w_["thresholdMetricSelector"];
    if (!s.is_object() || s.value("name", "") != "SchedulingThroughput" || s.value("dataBucket", "") != "Average" ||
        s.value("expectLower", false) || (s.contains("labels") && !s["labels"].empty())) {
      return Bad(-1, "thresholdMetricSelector", "kplace compares thresholds with SchedulingThroughput Average only");
    }
  }
  const json& ops = tc_["workloadTemplate"];
  json nodes = json::array(), sets = json::array(), init = json::array(), namespaces = json::array();
  json objects = json::array(), pod_groups = json::array();
  std::vector<int64_t> pod_group_counts;
  std::map<std::string, int64_t> pod_groups_in;  // PodGroups made per namespace
  json measured, churn, delete_pods;
  std::vector<int64_t> node_counts, init_counts, set_counts;
  std::vector<std::string> init_namespaces;  // per init group ("" for a namespace set)
  std::set<std::string> set_prefixes, plain_namespaces;
  int64_t measured_count = 0, signature_batch = -1;
  int64_t unrolled = 0;           // upstream's op index after createPodSets unrolls
  bool collecting = false;        // between startCollectingMetrics and stopCollectingMetrics
  int64_t collect_op = -1;        // that start op
  std::vector<std::string> collect_namespaces;
  std::string metrics_name;
  auto add_namespace = [&](const std::string& ns) {
    if (plain_namespaces.insert(ns).second) namespaces.push_back({{"metadata", {{"name", ns}}}});
  };
  for (size_t i = 0; i < ops.size(); ++i) {
    const int64_t op = static_cast<int64_t>(i);
    const json& o = ops[i];
    if (!o.is_object() || !o.contains("opcode") || !o["opcode"].is_string()) {
      return Bad(op, "opcode", "expected an op with an opcode");
    }
    const std::string code = o["opcode"].get<std::string>();
    int64_t advance = 1;
    if (code == "createNodes") {
      KPLACE_ASSIGN_OR_RETURN(int64_t n, CountOf(o, op, "", "count", true));
      KPLACE_ASSIGN_OR_RETURN(json g, NodeGroup(o, op));
      nodes.push_back(std::move(g));
      node_counts.push_back(n);
    } else if (code == "createNamespaces") {
      KPLACE_RETURN_IF_ERROR(Known(o, op, "", {"opcode", "prefix", "count", "countParam", "namespaceTemplatePath"}));
      if (!o.contains("prefix")) return Bad(op, "prefix", "missing");
      KPLACE_ASSIGN_OR_RETURN(std::string prefix, String(o, op, "prefix"));
      KPLACE_ASSIGN_OR_RETURN(int64_t n, CountOf(o, op, "", "count", true));
      json s = {{"prefix", prefix}};
      if (o.contains("namespaceTemplatePath")) {
        KPLACE_ASSIGN_OR_RETURN(s["template"], Template(op, "namespaceTemplatePath", o["namespaceTemplatePath"]));
      }
      if (!set_prefixes.insert(prefix).second) return Bad(op, "prefix", StrCat("namespaces ", prefix, "-* made twice"));
      sets.push_back(std::move(s));
      set_counts.push_back(n);
    } else if (code == "createPods") {
      int64_t n = 0, batch = -1;
      KPLACE_ASSIGN_OR_RETURN(json g, PodGroup(o, op, "", unrolled, &n, &batch));
      const bool metrics = o.value("collectMetrics", false);
      if (metrics && o.value("skipWaitToCompletion", false)) {
        return Bad(op, "skipWaitToCompletion", "collectMetrics and skipWaitToCompletion cannot both be true");
      }
      const std::string ns = g["namespace"].get<std::string>();
      if (metrics || collecting) {
        if (!measured.is_null()) {
          return Bad(op, metrics ? "collectMetrics" : "opcode",
                     "kplace measures one createPods op per workload; an earlier op is measured already");
        }
        if (metrics && collecting) return Bad(op, "collectMetrics", "metrics collection is overlapping (inside startCollectingMetrics)");
        if (collecting && std::find(collect_namespaces.begin(), collect_namespaces.end(), ns) == collect_namespaces.end()) {
          return Bad(op, "namespace", StrCat(ns, " is not among startCollectingMetrics' (workloadTemplate[", collect_op,
                                             "]) namespaces"));
        }
        if (metrics) metrics_name = ns;
        measured = std::move(g);
        measured_count = n;
        signature_batch = batch;
      } else {
        if (!measured.is_null() && !collecting) {
          return Bad(op, "opcode", "kplace runs no createPods op after the measured one");
        }
        if (batch >= 0) {
          return Bad(op, "kplaceSignatureBatchSize", "kplace models a signature batch size on the measured createPods op only");
        }
        init.push_back(std::move(g));
        init_counts.push_back(n);
        init_namespaces.push_back(ns);
      }
      add_namespace(ns);
    } else if (code == "createPodSets") {
      KPLACE_RETURN_IF_ERROR(Known(o, op, "", {"opcode", "count", "countParam", "namespacePrefix", "createPodsOp"}));
      KPLACE_ASSIGN_OR_RETURN(int64_t sets_n, CountOf(o, op, "", "count", true));
      if (!o.contains("namespacePrefix")) return Bad(op, "namespacePrefix", "missing");
      KPLACE_ASSIGN_OR_RETURN(std::string prefix, String(o, op, "namespacePrefix"));
      if (!o.contains("createPodsOp") || !o["createPodsOp"].is_object()) return Bad(op, "createPodsOp", "expected a createPods op");
      const json& inner = o["createPodsOp"];
      if (inner.value("opcode", "createPods") != "createPods") return Bad(op, "createPodsOp.opcode", "expected createPods");
      if (inner.value("collectMetrics", false)) return Bad(op, "createPodsOp.collectMetrics", "not modelled by kplace");
      if (inner.contains("namespace")) return Bad(op, "createPodsOp.namespace", "set by namespacePrefix");
      if (!measured.is_null()) return Bad(op, "opcode", "kplace runs no createPods op after the measured one");
      int64_t n = 0, batch = -1;
      KPLACE_ASSIGN_OR_RETURN(json g, PodGroup(inner, op, "createPodsOp.", unrolled, &n, &batch));
      if (batch >= 0) {
        return Bad(op, "createPodsOp.kplaceSignatureBatchSize",
                   "kplace models a signature batch size on the measured createPods op only");
      }
      g.erase("namespace");
      g["namespacePrefix"] = prefix;
      if (!set_prefixes.count(prefix)) {
        // Upstream makes each namespace as its first pod op needs it: plain namespaces.
        set_prefixes.insert(prefix);
        sets.push_back({{"prefix", prefix}});
        set_counts.push_back(sets_n);
      } else {
        size_t s = 0;
        while (sets[s]["prefix"] != prefix) ++s;
        if (set_counts[s] < sets_n) {
          return Bad(op, "count", StrCat(sets_n, " pod sets over ", set_counts[s], " namespaces ", prefix, "-*"));
        }
        if (set_counts[s] > sets_n) {
          return Bad(op, "count", StrCat("kplace runs a pod set in every namespace ", prefix, "-* (", set_counts[s],
                                         "), not in the first ", sets_n));
        }
      }
      init.push_back(std::move(g));
      init_counts.push_back(n);
      init_namespaces.push_back("");
      advance = sets_n;  // upstream unrolls one createPods op per namespace
    } else if (code == "createAny") {
      if (!init.empty() || !measured.is_null()) {
        return Bad(op, "opcode", "kplace makes createAny's objects before any pod is placed: put the op before every createPods op");
      }
      std::string ns;
      KPLACE_ASSIGN_OR_RETURN(std::vector<json> made, CreateAny(o, op, &ns));
      for (json& m : made) objects.push_back(std::move(m));
      if (!ns.empty()) add_namespace(ns);
    } else if (code == "createPodGroups") {
      KPLACE_RETURN_IF_ERROR(Known(o, op, "", {"opcode", "count", "countParam", "namespace", "templatePath", "templateParams"}));
      if (!init.empty() || !measured.is_null()) {
        return Bad(op, "opcode", "kplace makes PodGroups with the cluster, before any pod: put the op before every createPods op");
      }
      KPLACE_ASSIGN_OR_RETURN(int64_t n, CountOf(o, op, "", "count", true));
      if (!o.contains("namespace")) return Bad(op, "namespace", "missing (PodGroups are namespaced)");
      KPLACE_ASSIGN_OR_RETURN(std::string ns, String(o, op, "namespace"));
      if (!o.contains("templatePath")) return Bad(op, "templatePath", "missing");
      KPLACE_ASSIGN_OR_RETURN(json t, Template(op, "templatePath", o["templatePath"]));
      if (t.value("kind", "") != "PodGroup") {
        return Bad(op, "templatePath", StrCat("expected a PodGroup (scheduling.k8s.io) object, got kind ",
                                              t.value("kind", json()).dump()));
      }
      json g = {{"namespace", ns}, {"template", std::move(t)}};
      KPLACE_ASSIGN_OR_RETURN(json params, ParamsField(o, op, ""));
      if (!params.empty()) g["templateParams"] = std::move(params);
      pod_groups.push_back(std::move(g));
      pod_group_counts.push_back(n);
      pod_groups_in[ns] += n;
      add_namespace(ns);
    } else if (code == "waitForPodGroups") {
      // Upstream waits until the scheduler's informer sees `count` PodGroups in the
      // namespace; kplace's PodGroups are in the cluster before any pod, so nothing waits.
      KPLACE_RETURN_IF_ERROR(Known(o, op, "", {"opcode", "namespace", "count", "countParam"}));
      KPLACE_ASSIGN_OR_RETURN(int64_t n, CountOf(o, op, "", "count", true));
      if (!o.contains("namespace")) return Bad(op, "namespace", "missing");
      KPLACE_ASSIGN_OR_RETURN(std::string ns, String(o, op, "namespace"));
      if (n > pod_groups_in[ns]) {
        return Bad(op, o.contains("countParam") ? "countParam" : "count",
                   StrCat("waits for ", n, " PodGroups in ", ns, " but the ops before it make ", pod_groups_in[ns],
                          " (scheduler_perf would time out)"));
      }
    } else if (code == "churn") {
      KPLACE_RETURN_IF_ERROR(Known(o, op, "", {"opcode", "mode", "number", "intervalMilliseconds", "namespace",
                                               "templatePaths"}));
      if (!churn.is_null()) return Bad(op, "opcode", "kplace runs one churn op per workload");
      if (!measured.is_null()) return Bad(op, "opcode", "kplace runs churn while the measured pods schedule: put it before them");
      churn = json::object();
      for (const char* f : {"mode", "number", "intervalMilliseconds"}) {
        if (o.contains(f)) churn[f] = o[f];
      }
      churn["namespace"] = StrCat("namespace-", unrolled);
      if (o.contains("namespace")) {
        KPLACE_ASSIGN_OR_RETURN(churn["namespace"], String(o, op, "namespace"));
      }
      if (!o.contains("templatePaths") || !o["templatePaths"].is_array() || o["templatePaths"].empty()) {
        return Bad(op, "templatePaths", "expected at least one template path");
      }
      churn["templates"] = json::array();
      for (size_t t = 0; t < o["templatePaths"].size(); ++t) {
        KPLACE_ASSIGN_OR_RETURN(json obj, Template(op, StrCat("templatePaths[", t, "]"), o["templatePaths"][t]));
        churn["templates"].push_back(std::move(obj));
      }
      add_namespace(churn["namespace"].get<std::string>());
    } else if (code == "deletePods") {
      KPLACE_RETURN_IF_ERROR(Known(o, op, "", {"opcode", "namespace", "labelSelector", "skipWaitToCompletion",
                                               "deletePodsPerSecond"}));
      KPLACE_RETURN_IF_ERROR(Unmodelled(o, op, "", {"labelSelector"}));
      if (!delete_pods.is_null()) return Bad(op, "opcode", "kplace runs one deletePods op per workload");
      if (!measured.is_null()) return Bad(op, "opcode", "kplace deletes pods while the measured pods schedule: put it before them");
      if (!o.contains("namespace")) return Bad(op, "namespace", "missing");
      KPLACE_ASSIGN_OR_RETURN(std::string ns, String(o, op, "namespace"));
      auto at = std::find(init_namespaces.begin(), init_namespaces.end(), ns);
      if (at == init_namespaces.end()) return Bad(op, "namespace", StrCat("no earlier createPods op made pods in ", ns));
      if (!o.contains("deletePodsPerSecond") || !o["deletePodsPerSecond"].is_number_integer() ||
          o["deletePodsPerSecond"].get<int64_t>() <= 0) {
        return Bad(op, "deletePodsPerSecond", "kplace models a positive rate only (0, all at once, is not modelled)");
      }
      delete_pods = {{"group", at - init_namespaces.begin()}, {"perSecond", o["deletePodsPerSecond"]}};
    } else if (code == "barrier") {
      KPLACE_RETURN_IF_ERROR(Known(o, op, "", {"opcode", "namespaces", "labelSelector", "stageRequirement"}));
      KPLACE_RETURN_IF_ERROR(Unmodelled(o, op, "", {"labelSelector"}));
      const std::string stage = o.value("stageRequirement", "Scheduled");
      if (stage != "Scheduled" && stage != "Attempted") return Bad(op, "stageRequirement", "expected Scheduled or Attempted");
    } else if (code == "sleep") {
      KPLACE_RETURN_IF_ERROR(Known(o, op, "", {"opcode", "duration", "durationParam"}));
    } else if (code == "startCollectingMetrics") {
      KPLACE_RETURN_IF_ERROR(Known(o, op, "", {"opcode", "name", "namespaces", "labelSelector"}));
      KPLACE_RETURN_IF_ERROR(Unmodelled(o, op, "", {"labelSelector"}));
      if (collecting || !measured.is_null()) return Bad(op, "opcode", "metrics collection is overlapping or repeated");
      if (!o.contains("namespaces") || !o["namespaces"].is_array() || o["namespaces"].empty()) {
        return Bad(op, "namespaces", "namespaces cannot be empty");
      }
      for (const json& n : o["namespaces"]) {
        if (!n.is_string()) return Bad(op, "namespaces", "expected a list of namespace names");
        collect_namespaces.push_back(n.get<std::string>());
      }
      metrics_name = o.contains("name") && o["name"].is_string() ? o["name"].get<std::string>() : "";
      collecting = true;
      collect_op = op;
    } else if (code == "stopCollectingMetrics") {
      KPLACE_RETURN_IF_ERROR(Known(o, op, "", {"opcode"}));
      if (!collecting) return Bad(op, "opcode", "missing startCollectingMetrics operation before stopping");
      if (measured.is_null()) return Bad(op, "opcode", "no createPods op between startCollectingMetrics and here");
      collecting = false;
    } else if (UnmodelledOpcodes().count(code)) {
      return Bad(op, "opcode", StrCat(code, " is not modelled by kplace"));
    } else {
      return Bad(op, "opcode", StrCat("unknown opcode \"", code, "\""));
    }
    unrolled += advance;
  }
  if (collecting) return Bad(-1, "workloadTemplate", "startCollectingMetrics without stopCollectingMetrics");
  if (measured.is_null()) return Bad(-1, "workloadTemplate", "no op collects metrics (a createPods with collectMetrics: true)");
  if (nodes.empty()) return Bad(-1, "workloadTemplate", "no createNodes op (kplace needs nodes)");
  Translated out;
  out.metrics_name = metrics_name;
  json& doc = out.doc;
  doc = {{"nodes", nodes}, {"measured", measured}};
  if (tc_.contains("schedulerConfigPath")) {
    KPLACE_ASSIGN_OR_RETURN(doc["schedulerConfig"], Template(-1, "schedulerConfigPath", tc_["schedulerConfigPath"]));
  }
  if (!init.empty()) doc["init"] = init;
  if (!sets.empty()) doc["namespaceSets"] = sets;
  if (!objects.empty()) doc["objects"] = objects;
  if (!pod_groups.empty()) doc["podGroups"] = pod_groups;
  // Plain namespaces the ops made, unless a namespace set makes them.
  json plain = json::array();
  for (const json& ns : namespaces) {
    const std::string n = ns["metadata"]["name"].get<std::string>();
    bool in_set = false;
    for (size_t s = 0; s < sets.size(); ++s) {
      const std::string p = sets[s]["prefix"].get<std::string>() + "-";
      if (n.rfind(p, 0) == 0) {
        const std::string rest = n.substr(p.size());
        in_set = !rest.empty() && std::all_of(rest.begin(), rest.end(), ::isdigit) && std::stoll(rest) < set_counts[s];
      }
    }
    if (!in_set) plain.push_back(ns);
  }
  if (!plain.empty()) doc["namespaces"] = plain;
  if (!churn.is_null()) doc["churn"] = churn;
  if (!delete_pods.is_null()) doc["deletePods"] = delete_pods;
  // Churn and deletion rates are wall-clock rates: turned into measured-pod counts at the
  // workload's threshold, else at the test case's kplace.throughput, else at its largest
  // threshold.
  double throughput = 0;
  if (tc_.contains("kplace") && tc_["kplace"].contains("throughput")) {
    throughput = tc_["kplace"]["throughput"].get<double>();  // checked with the test case
  } else {
    for (const json& other : tc_["workloads"]) {
      if (other.is_object() && other.contains("threshold") && other["threshold"].is_number()) {
        throughput = std::max(throughput, other["threshold"].get<double>());
      }
    }
  }
  if (throughput > 0) doc["throughput"] = throughput;
  if (w_.contains("params") && w_["params"].is_object()) {
    for (auto it = w_["params"].begin(); it != w_["params"].end(); ++it) {
      if (!used_.count(it.key())) {
        return Bad(-1, StrCat("params.", it.key()), "defined but unused (scheduler_perf refuses it too)");
      }
    }
  }
  out.variant = {{"name", w_name_}, {"nodes", node_counts}, {"measured", measured_count}};
  if (!init.empty()) out.variant["init"] = init_counts;
  if (!sets.empty()) out.variant["namespaces"] = set_counts;
  if (!pod_groups.empty()) out.variant["podGroups"] = pod_group_counts;
  if (!template_values_.empty()) out.variant["params"] = template_values_;
  if (signature_batch >= 0) out.variant["signatureBatchSize"] = signature_batch;
  KPLACE_RETURN_IF_ERROR(WorkloadFields(&out.variant, &out.labels));
  return out;
}

// The test case's own fields, checked: its name (unique in `names`), workloadTemplate,
// workloads and kplace map. "FILE: test case T" prefixes what it returns.
absl::StatusOr<std::string> CheckTestCase(const json& tc, size_t t, const std::string& file,
                                          std::set<std::string>* names) {
  const std::string at = StrCat(file, ": [", t, "]");
  if (!tc.is_object()) return absl::InvalidArgumentError(StrCat(at, ": expected a test case object"));
  for (auto it = tc.begin(); it != tc.end(); ++it) {
    static const std::set<std::string> known = {"name", "featureGates", "workloadTemplate", "workloads",
                                                "defaultPodTemplatePath", "labels", "metricsCollectorConfig",
                                                "schedulerConfigPath", "defaultThresholdMetricSelector", "kplace"};
    if (!known.count(it.key())) return absl::InvalidArgumentError(StrCat(at, ".", it.key(), ": unknown field"));
  }
  if (!tc.contains("name") || !tc["name"].is_string()) return absl::InvalidArgumentError(StrCat(at, ".name: expected a string"));
  const std::string name = tc["name"].get<std::string>();
  const std::string tc_at = StrCat(file, ": test case ", name);
  if (!names->insert(name).second) return absl::InvalidArgumentError(StrCat(tc_at, ": name is not unique"));
  for (const char* f : {"metricsCollectorConfig", "defaultThresholdMetricSelector"}) {
    if (tc.contains(f)) {
      return absl::InvalidArgumentError(StrCat(tc_at, ": ", f, ": not modelled by kplace (its collectors, "
                                               "SchedulingThroughput Average thresholds)"));
    }
  }
  if (!tc.contains("workloadTemplate") || !tc["workloadTemplate"].is_array() || tc["workloadTemplate"].empty()) {
    return absl::InvalidArgumentError(StrCat(tc_at, ": workloadTemplate: no ops defined"));
  }
  if (!tc.contains("workloads") || !tc["workloads"].is_array() || tc["workloads"].empty()) {
    return absl::InvalidArgumentError(StrCat(tc_at, ": workloads: no workloads defined"));
  }
  std::set<std::string> workload_names;
  for (size_t i = 0; i < tc["workloads"].size(); ++i) {
    const json& w = tc["workloads"][i];
    if (!w.is_object() || !w.contains("name") || !w["name"].is_string() || w["name"].get<std::string>().empty()) {
      return absl::InvalidArgumentError(StrCat(tc_at, ": workloads[", i, "].name: expected a non-empty string"));
    }
    if (!workload_names.insert(w["name"].get<std::string>()).second) {
      return absl::InvalidArgumentError(StrCat(tc_at, ": workload name ", w["name"].get<std::string>(), " is not unique"));
    }
  }
  if (tc.contains("kplace")) {
    const json& k = tc["kplace"];
    auto bad = [&](const std::string& field, const std::string& what) {
      return absl::InvalidArgumentError(StrCat(tc_at, ": kplace", field, ": ", what));
    };
    if (!k.is_object()) return bad("", "expected a map {description, default, throughput}");
    for (auto it = k.begin(); it != k.end(); ++it) {
      if (it.key() != "description" && it.key() != "default" && it.key() != "throughput") {
        return bad(StrCat(".", it.key()), "unknown field (kplace's test case extensions: description, default, throughput)");
      }
    }
    if (k.contains("description") && (!k["description"].is_string() || k["description"].get<std::string>().empty())) {
      return bad(".description", "expected a non-empty string");
    }
    if (k.contains("default") && (!k["default"].is_string() || !workload_names.count(k["default"].get<std::string>()))) {
      return bad(".default", StrCat("expected the name of one of the test case's workloads, got ", k["default"].dump()));
    }
    if (k.contains("throughput") && (!k["throughput"].is_number() || !(k["throughput"].get<double>() > 0) ||
                                     k["throughput"].get<double>() > 1e9)) {
      return bad(".throughput", StrCat("expected a positive number of pods/s, got ", k["throughput"].dump()));
    }
  }
  return name;
}

// Decodes the kplace document of a test case's translated workloads (one, or all as
// variants); `where` names it in errors.
absl::StatusOr<Workload> Decode(const json& tc, const std::string& name, const std::string& file,
                                const std::vector<Translated>& parts, const std::string& where,
                                const std::string& description) {
  json doc = parts[0].doc;
  doc["name"] = name;
  doc["description"] = tc.contains("kplace") && tc["kplace"].contains("description")
                           ? tc["kplace"]["description"].get<std::string>()
                           : StrCat(description, " from ", file);
  doc["variants"] = json::array();
  for (const Translated& p : parts) doc["variants"].push_back(p.variant);
  if (parts.size() > 1 && tc.contains("kplace") && tc["kplace"].contains("default")) doc["default"] = tc["kplace"]["default"];
  KPLACE_ASSIGN_OR_RETURN(Workload w, DecodeWorkloadSpec(doc, where));
  if (!parts[0].metrics_name.empty()) w.metrics_name = parts[0].metrics_name;
  for (size_t i = 0; i < parts.size(); ++i) w.variants[i].labels = parts[i].labels;
  return w;
}

}  // namespace

absl::StatusOr<std::string> ReadFileText(const std::string& path) { return ReadInputFile(path); }

bool IsPerfConfig(const json& doc) { return doc.is_array(); }

absl::StatusOr<std::vector<Workload>> DecodePerfConfig(const json& doc, const std::string& file, const FileReader& read) {
  if (!doc.is_array()) return absl::InvalidArgumentError(StrCat(file, ": expected a list of test cases"));
  if (doc.empty()) return absl::InvalidArgumentError(StrCat(file, ": no test cases defined"));
  std::vector<Workload> out;
  std::set<std::string> names;
  for (size_t t = 0; t < doc.size(); ++t) {
    const json& tc = doc[t];
    KPLACE_ASSIGN_OR_RETURN(std::string name, CheckTestCase(tc, t, file, &names));
    for (const json& w : tc["workloads"]) {
      const std::string wname = w["name"].get<std::string>();
      KPLACE_ASSIGN_OR_RETURN(Translated one, Translator(file, tc, name, w, wname, read).Run());
      KPLACE_ASSIGN_OR_RETURN(
          Workload decoded, Decode(tc, name, file, {one},
                                   StrCat(file, ": test case ", name, ", workload ", wname, " (as kplace's workload)"),
                                   StrCat(name, "/", wname)));
      out.push_back(std::move(decoded));
    }
  }
  return out;
}

absl::StatusOr<Workload> DecodePerfConfigTestCase(const json& doc, const std::string& file, const std::string& name,
                                                  const FileReader& read) {
  if (!doc.is_array()) return absl::InvalidArgumentError(StrCat(file, ": expected a list of test cases"));
  std::set<std::string> names;
  for (size_t t = 0; t < doc.size(); ++t) {
    const json& tc = doc[t];
    KPLACE_ASSIGN_OR_RETURN(std::string tc_name, CheckTestCase(tc, t, file, &names));
    if (tc_name != name) continue;
    std::vector<Translated> parts;
    for (const json& w : tc["workloads"]) {
      const std::string wname = w["name"].get<std::string>();
      KPLACE_ASSIGN_OR_RETURN(Translated one, Translator(file, tc, name, w, wname, read).Run());
      // The workloads are sizes of one workload: only counts and their own fields may differ.
      if (!parts.empty() && (one.doc != parts[0].doc || one.metrics_name != parts[0].metrics_name)) {
        return absl::InvalidArgumentError(
            StrCat(file, ": test case ", name, ": workload ", wname, " makes other objects than workload ",
                   parts[0].variant["name"].get<std::string>(),
                   ", not only other counts (kplace reads a test case's workloads as sizes of one workload)"));
      }
      parts.push_back(std::move(one));
    }
    return Decode(tc, name, file, parts, StrCat(file, ": test case ", name, " (as kplace's workload)"), name);
  }
  return absl::NotFoundError(StrCat(file, ": no test case named ", name));
}

absl::StatusOr<std::vector<Workload>> LoadPerfConfig(const std::string& path) {
  KPLACE_ASSIGN_OR_RETURN(std::string text, ReadFileText(path));
  KPLACE_ASSIGN_OR_RETURN(std::vector<json> docs, ParseDocuments(text, path));
  if (docs.size() != 1) return absl::InvalidArgumentError(StrCat(path, ": expected one YAML document (a list of test cases)"));
  return DecodePerfConfig(docs[0], path);
}

bool LabelsSelected(const std::string& filter, const std::vector<std::string>& labels) {
  for (std::string item : std::vector<std::string>(absl::StrSplit(filter, ',', absl::SkipEmpty()))) {
    bool want = item[0] != '-';
    if (item[0] == '-' || item[0] == '+') item = item.substr(1);
    bool has = std::find(labels.begin(), labels.end(), item) != labels.end();
    if (has != want) return false;
  }
  return true;
}

}  // namespace kplace::bench
