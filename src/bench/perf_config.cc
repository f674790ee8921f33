#include "kplace/bench/perf_config.h"

#include <algorithm>
#include <cstdio>
#include <map>
#include <set>

#include "absl/strings/str_split.h"
#include "kplace/common/status.h"
#include "kplace/common/strings.h"
#include "kplace/model/decode.h"

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

// Ops upstream has that kplace does not run (DRA, createAny, profiling, ...).
const std::set<std::string>& UnmodelledOpcodes() {
  static const std::set<std::string> s = {"createAny", "updateAny", "allocResourceClaims", "createResourceClaims",
                                          "createResourceDriver", "createPodGroups", "waitForPodGroups",
                                          "startCollectingProfile", "stopCollectingProfile"};
  return s;
}

std::string Dir(const std::string& path) {
  size_t slash = path.rfind('/');
  return slash == std::string::npos ? "" : path.substr(0, slash + 1);
}

absl::StatusOr<std::string> ReadText(const std::string& path) {
  FILE* f = std::fopen(path.c_str(), "rb");
  if (!f) return absl::NotFoundError(StrCat(path, ": cannot be read"));
  std::string text;
  char buf[65536];
  size_t n;
  while ((n = std::fread(buf, 1, sizeof buf, f)) > 0) text.append(buf, n);
  std::fclose(f);
  return text;
}

// One test case's workload being translated: where errors point, and the params.
class Translator {
 public:
  Translator(const std::string& file, const json& tc, const std::string& tc_name, const json& workload,
             const std::string& workload_name)
      : file_(file), tc_(tc), tc_name_(tc_name), w_(workload), w_name_(workload_name) {}

  absl::StatusOr<Workload> Run();

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
  absl::StatusOr<int64_t> CountOf(const json& o, int64_t op, const std::string& prefix, bool required);
  absl::StatusOr<json> Template(int64_t op, const std::string& field, const json& path);
  absl::StatusOr<std::string> String(const json& o, int64_t op, const std::string& field) const;
  absl::Status Unmodelled(const json& o, int64_t op, const std::string& prefix,
                          std::initializer_list<const char*> fields) const;
  absl::StatusOr<json> PodGroup(const json& o, int64_t op, const std::string& prefix, int64_t unrolled,
                                int64_t* count);

  const std::string& file_;
  const json& tc_;
  const std::string& tc_name_;
  const json& w_;
  const std::string& w_name_;
  std::set<std::string> used_;  // params referenced
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

// count, or countParam (which wins, as upstream's patchParams).
absl::StatusOr<int64_t> Translator::CountOf(const json& o, int64_t op, const std::string& prefix, bool required) {
  if (o.contains("countParam")) return Param(op, prefix + "countParam", o["countParam"]);
  if (o.contains("count")) {
    const json& c = o["count"];
    if (!c.is_number_integer() || c.get<int64_t>() < 0 || c.get<int64_t>() > 10000000) {
      return Bad(op, prefix + "count", StrCat("expected a count between 0 and 10000000, got ", c.dump()));
    }
    return c.get<int64_t>();
  }
  if (required) return Bad(op, prefix + "count", "missing (give count or countParam)");
  return 0;
}

absl::StatusOr<std::string> Translator::String(const json& o, int64_t op, const std::string& field) const {
  const std::string key = field.substr(field.rfind('.') == std::string::npos ? 0 : field.rfind('.') + 1);
  if (!o[key].is_string() || o[key].get<std::string>().empty()) return Bad(op, field, "expected a non-empty string");
  return o[key].get<std::string>();
}

// A template file, relative to the config's directory, holding one object.
absl::StatusOr<json> Translator::Template(int64_t op, const std::string& field, const json& path) {
  if (!path.is_string() || path.get<std::string>().empty()) return Bad(op, field, "expected a file path");
  std::string p = path.get<std::string>();
  if (p[0] != '/') p = Dir(file_) + p;
  auto text = ReadText(p);
  if (!text.ok()) return Bad(op, field, StrCat(p, " cannot be read"));
  auto docs = ParseDocuments(*text, p);
  if (!docs.ok()) return Bad(op, field, std::string(docs.status().message()));
  if (docs->size() != 1 || !(*docs)[0].is_object()) return Bad(op, field, StrCat(p, ": expected one object"));
  json t = std::move((*docs)[0]);
  if (t.contains("metadata") && t["metadata"].is_object() && t["metadata"].contains("namespace")) {
    t["metadata"].erase("namespace");  // the op's namespace wins, as upstream creates it there
  }
  return t;
}

// createPods (or createPodSets' createPodsOp) as a kplace pod group.
absl::StatusOr<json> Translator::PodGroup(const json& o, int64_t op, const std::string& prefix, int64_t unrolled,
                                          int64_t* count) {
  KPLACE_RETURN_IF_ERROR(Known(o, op, prefix,
                               {"opcode", "count", "countParam", "countMultiplierParam", "steadyState",
                                "steadyStateParam", "duration", "durationParam", "collectMetrics", "namespace",
                                "podTemplatePath", "skipWaitToCompletion", "persistentVolumeTemplatePath",
                                "persistentVolumeClaimTemplatePath", "templateParams", "signatureBatchSize",
                                "signatureBatchSizeParam"}));
  KPLACE_RETURN_IF_ERROR(Unmodelled(o, op, prefix,
                                    {"steadyState", "steadyStateParam", "duration", "durationParam",
                                     "persistentVolumeTemplatePath", "persistentVolumeClaimTemplatePath",
                                     "templateParams", "signatureBatchSize", "signatureBatchSizeParam"}));
  KPLACE_ASSIGN_OR_RETURN(*count, CountOf(o, op, prefix, true));
  if (o.contains("countMultiplierParam")) {
    KPLACE_ASSIGN_OR_RETURN(int64_t m, Param(op, prefix + "countMultiplierParam", o["countMultiplierParam"]));
    *count *= m;
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
  return g;
}

absl::StatusOr<Workload> Translator::Run() {
  KPLACE_RETURN_IF_ERROR(Known(w_, -1, "", {"name", "params", "labels", "threshold", "thresholdMetricSelector",
                                            "featureGates"}));
  if (w_.contains("thresholdMetricSelector")) {
    const json& s = w_["thresholdMetricSelector"];
    if (!s.is_object() || s.value("name", "") != "SchedulingThroughput" || s.value("dataBucket", "") != "Average" ||
        s.value("expectLower", false) || (s.contains("labels") && !s["labels"].empty())) {
      return Bad(-1, "thresholdMetricSelector", "kplace compares thresholds with SchedulingThroughput Average only");
    }
  }
  const json& ops = tc_["workloadTemplate"];
  json nodes = json::array(), sets = json::array(), init = json::array(), namespaces = json::array();
  json measured, churn, delete_pods;
  std::vector<int64_t> node_counts, init_counts, set_counts;
  std::vector<std::string> init_namespaces;  // per init group ("" for a namespace set)
  std::set<std::string> set_prefixes, plain_namespaces;
  int64_t measured_count = 0;
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
      KPLACE_RETURN_IF_ERROR(Known(o, op, "", {"opcode", "count", "countParam", "nodeTemplatePath",
                                               "nodeAllocatableStrategy", "labelNodePrepareStrategy",
                                               "uniqueNodeLabelStrategy", "templateParams"}));
      KPLACE_RETURN_IF_ERROR(Unmodelled(o, op, "", {"nodeAllocatableStrategy", "templateParams"}));
      KPLACE_ASSIGN_OR_RETURN(int64_t n, CountOf(o, op, "", true));
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
        const json& s = o["labelNodePrepareStrategy"];
        const std::string f = "labelNodePrepareStrategy.";
        if (!s.is_object()) return Bad(op, "labelNodePrepareStrategy", "expected {labelKey, labelValues}");
        KPLACE_RETURN_IF_ERROR(Known(s, op, f, {"labelKey", "labelValues"}));
        if (!s.contains("labelKey")) return Bad(op, f + "labelKey", "missing");
        KPLACE_ASSIGN_OR_RETURN(std::string key, String(s, op, f + "labelKey"));
        if (!s.contains("labelValues") || !s["labelValues"].is_array() || s["labelValues"].empty()) {
          return Bad(op, f + "labelValues", "expected a non-empty list of values");
        }
        g["labels"] = {{key, s["labelValues"]}};
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
      nodes.push_back(std::move(g));
      node_counts.push_back(n);
    } else if (code == "createNamespaces") {
      KPLACE_RETURN_IF_ERROR(Known(o, op, "", {"opcode", "prefix", "count", "countParam", "namespaceTemplatePath"}));
      if (!o.contains("prefix")) return Bad(op, "prefix", "missing");
      KPLACE_ASSIGN_OR_RETURN(std::string prefix, String(o, op, "prefix"));
      KPLACE_ASSIGN_OR_RETURN(int64_t n, CountOf(o, op, "", true));
      json s = {{"prefix", prefix}};
      if (o.contains("namespaceTemplatePath")) {
        KPLACE_ASSIGN_OR_RETURN(s["template"], Template(op, "namespaceTemplatePath", o["namespaceTemplatePath"]));
      }
      if (!set_prefixes.insert(prefix).second) return Bad(op, "prefix", StrCat("namespaces ", prefix, "-* made twice"));
      sets.push_back(std::move(s));
      set_counts.push_back(n);
    } else if (code == "createPods") {
      int64_t n = 0;
      KPLACE_ASSIGN_OR_RETURN(json g, PodGroup(o, op, "", unrolled, &n));
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
      } else {
        if (!measured.is_null() && !collecting) {
          return Bad(op, "opcode", "kplace runs no createPods op after the measured one");
        }
        init.push_back(std::move(g));
        init_counts.push_back(n);
        init_namespaces.push_back(ns);
      }
      add_namespace(ns);
    } else if (code == "createPodSets") {
      KPLACE_RETURN_IF_ERROR(Known(o, op, "", {"opcode", "count", "countParam", "namespacePrefix", "createPodsOp"}));
      KPLACE_ASSIGN_OR_RETURN(int64_t sets_n, CountOf(o, op, "", true));
      if (!o.contains("namespacePrefix")) return Bad(op, "namespacePrefix", "missing");
      KPLACE_ASSIGN_OR_RETURN(std::string prefix, String(o, op, "namespacePrefix"));
      if (!o.contains("createPodsOp") || !o["createPodsOp"].is_object()) return Bad(op, "createPodsOp", "expected a createPods op");
      const json& inner = o["createPodsOp"];
      if (inner.value("opcode", "createPods") != "createPods") return Bad(op, "createPodsOp.opcode", "expected createPods");
      if (inner.value("collectMetrics", false)) return Bad(op, "createPodsOp.collectMetrics", "not modelled by kplace");
      if (inner.contains("namespace")) return Bad(op, "createPodsOp.namespace", "set by namespacePrefix");
      if (!measured.is_null()) return Bad(op, "opcode", "kplace runs no createPods op after the measured one");
      int64_t n = 0;
      KPLACE_ASSIGN_OR_RETURN(json g, PodGroup(inner, op, "createPodsOp.", unrolled, &n));
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
  if (w_.contains("params") && w_["params"].is_object()) {
    for (auto it = w_["params"].begin(); it != w_["params"].end(); ++it) {
      if (!used_.count(it.key())) {
        return Bad(-1, StrCat("params.", it.key()), "defined but unused (scheduler_perf refuses it too)");
      }
    }
  }
  // The kplace workload document: one variant, this workload's counts.
  json doc = {{"name", tc_name_}, {"description", StrCat(tc_name_, "/", w_name_, " from ", file_)}, {"nodes", nodes},
              {"measured", measured}};
  if (!init.empty()) doc["init"] = init;
  if (!sets.empty()) doc["namespaceSets"] = sets;
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
  json variant = {{"name", w_name_}, {"nodes", node_counts}, {"measured", measured_count}};
  if (!init.empty()) variant["init"] = init_counts;
  if (!sets.empty()) variant["namespaces"] = set_counts;
  if (w_.contains("threshold")) {
    if (!w_["threshold"].is_number()) {
      return Bad(-1, "threshold", "kplace takes one number (thresholds per topic are not modelled)");
    }
    variant["threshold"] = w_["threshold"];
  }
  // Churn and deletion rates are wall-clock rates: turned into measured-pod counts at the
  // workload's threshold, else at the largest threshold of the test case.
  double throughput = 0;
  for (const json& other : tc_["workloads"]) {
    if (other.is_object() && other.contains("threshold") && other["threshold"].is_number()) {
      throughput = std::max(throughput, other["threshold"].get<double>());
    }
  }
  if (throughput > 0) doc["throughput"] = throughput;
  doc["variants"] = json::array({variant});
  const std::string where = StrCat(file_, ": test case ", tc_name_, ", workload ", w_name_, " (as kplace's workload)");
  KPLACE_ASSIGN_OR_RETURN(Workload w, DecodeWorkloadSpec(doc, where));
  if (!metrics_name.empty()) w.metrics_name = metrics_name;
  Variant& v = w.variants[0];
  for (const json* gates : {&tc_, &w_}) {
    if (!gates->contains("featureGates")) continue;
    const json& g = (*gates)["featureGates"];
    const std::string field = gates == &tc_ ? "featureGates (test case)" : "featureGates";
    if (!g.is_object()) return Bad(-1, field, "expected a map of gate to true or false");
    for (auto it = g.begin(); it != g.end(); ++it) {
      if (!it.value().is_boolean()) return Bad(-1, StrCat(field, ".", it.key()), "expected true or false");
      v.feature_gates[it.key()] = it.value().get<bool>();
    }
  }
  for (const json* labels : {&tc_, &w_}) {
    if (!labels->contains("labels")) continue;
    if (!(*labels)["labels"].is_array()) return Bad(-1, "labels", "expected a list of strings");
    for (const json& l : (*labels)["labels"]) {
      if (!l.is_string()) return Bad(-1, "labels", "expected a list of strings");
      v.labels.push_back(l.get<std::string>());
    }
  }
  return w;
}

}  // namespace

bool IsPerfConfig(const json& doc) { return doc.is_array(); }

absl::StatusOr<std::vector<Workload>> DecodePerfConfig(const json& doc, const std::string& file) {
  if (!doc.is_array()) return absl::InvalidArgumentError(StrCat(file, ": expected a list of test cases"));
  if (doc.empty()) return absl::InvalidArgumentError(StrCat(file, ": no test cases defined"));
  std::vector<Workload> out;
  std::set<std::string> names;
  for (size_t t = 0; t < doc.size(); ++t) {
    const json& tc = doc[t];
    const std::string at = StrCat(file, ": [", t, "]");
    if (!tc.is_object()) return absl::InvalidArgumentError(StrCat(at, ": expected a test case object"));
    for (auto it = tc.begin(); it != tc.end(); ++it) {
      static const std::set<std::string> known = {"name", "featureGates", "workloadTemplate", "workloads",
                                                  "defaultPodTemplatePath", "labels", "metricsCollectorConfig",
                                                  "schedulerConfigPath", "defaultThresholdMetricSelector"};
      if (!known.count(it.key())) return absl::InvalidArgumentError(StrCat(at, ".", it.key(), ": unknown field"));
    }
    if (!tc.contains("name") || !tc["name"].is_string()) return absl::InvalidArgumentError(StrCat(at, ".name: expected a string"));
    const std::string name = tc["name"].get<std::string>();
    const std::string tc_at = StrCat(file, ": test case ", name);
    if (!names.insert(name).second) return absl::InvalidArgumentError(StrCat(tc_at, ": name is not unique"));
    for (const char* f : {"schedulerConfigPath", "metricsCollectorConfig", "defaultThresholdMetricSelector"}) {
      if (tc.contains(f)) {
        return absl::InvalidArgumentError(StrCat(tc_at, ": ", f, ": not modelled by kplace (its default profile and "
                                                 "collectors, SchedulingThroughput Average thresholds)"));
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
      const std::string wname = w["name"].get<std::string>();
      if (!workload_names.insert(wname).second) {
        return absl::InvalidArgumentError(StrCat(tc_at, ": workload name ", wname, " is not unique"));
      }
      KPLACE_ASSIGN_OR_RETURN(Workload one, Translator(file, tc, name, w, wname).Run());
      out.push_back(std::move(one));
    }
  }
  return out;
}

absl::StatusOr<std::vector<Workload>> LoadPerfConfig(const std::string& path) {
  KPLACE_ASSIGN_OR_RETURN(std::string text, ReadText(path));
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
