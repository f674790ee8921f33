// pluginConfig args: v1 decoding (strict), field-by-field defaulting and the per-plugin
// argument validation of kube-scheduler (cycle-and-config.md §4.4–4.5, noderesources.md §10).
#include <cctype>
#include <cmath>
#include <cstdlib>
#include <set>
#include <utility>

#include "kplace/common/status.h"
#include "kplace/common/strings.h"
#include "kplace/config/config.h"
#include "src/config/field_reader.h"

namespace kplace {
namespace {

using config_internal::CheckFields;
using config_internal::ExpectObject;
using config_internal::FieldPath;
using config_internal::GetArray;
using config_internal::GetBool;
using config_internal::GetInt;
using config_internal::GetString;
using config_internal::GetStringList;
using config_internal::Has;
using config_internal::Quote;
using json = nlohmann::json;

constexpr char kConfigApiVersion[] = "kubescheduler.config.k8s.io/v1";

// ---- Kubernetes name rules (apimachinery validation) --------------------------------------

bool IsAlnum(char c) { return std::isalnum(static_cast<unsigned char>(c)) != 0; }

// ([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9], 1..63 characters.
bool IsNamePart(std::string_view s) {
  if (s.empty() || s.size() > 63 || !IsAlnum(s.front()) || !IsAlnum(s.back())) return false;
  for (char c : s) {
    if (!IsAlnum(c) && c != '-' && c != '_' && c != '.') return false;
  }
  return true;
}

// Lower-case RFC 1123 labels joined by dots, at most 253 characters.
bool IsDnsSubdomain(std::string_view s) {
  if (s.empty() || s.size() > 253) return false;
  size_t start = 0;
  while (true) {
    size_t dot = s.find('.', start);
    std::string_view label = s.substr(start, dot == std::string_view::npos ? std::string_view::npos : dot - start);
    if (label.empty()) return false;
    auto lower_alnum = [](char c) { return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9'); };
    if (!lower_alnum(label.front()) || !lower_alnum(label.back())) return false;
    for (char c : label) {
      if (!lower_alnum(c) && c != '-') return false;
    }
    if (dot == std::string_view::npos) return true;
    start = dot + 1;
  }
}

// A label key: an optional DNS-subdomain prefix and '/', then a name part.
bool IsQualifiedName(std::string_view s) {
  size_t slash = s.find('/');
  if (slash == std::string_view::npos) return IsNamePart(s);
  if (s.find('/', slash + 1) != std::string_view::npos) return false;
  return IsDnsSubdomain(s.substr(0, slash)) && IsNamePart(s.substr(slash + 1));
}

bool IsLabelValue(std::string_view s) { return s.empty() || IsNamePart(s); }

constexpr char kQualifiedNameRule[] =
    "must be a qualified name (an optional DNS subdomain prefix and '/', then 1-63 characters of "
    "[A-Za-z0-9-_.] starting and ending with an alphanumeric character)";

absl::Status CheckQualifiedName(std::string_view s, const FieldPath& p) {
  if (IsQualifiedName(s)) return absl::OkStatus();
  return p.Error(StrCat(kQualifiedNameRule, ", got ", Quote(s)));
}

// Go's strconv.ParseInt(v, 10, 64): an optional sign, then decimal digits, within int64.
bool ParsesAsInt64(std::string_view s) {
  size_t i = (!s.empty() && (s[0] == '+' || s[0] == '-')) ? 1 : 0;
  if (i == s.size()) return false;
  bool negative = s[0] == '-';
  uint64_t limit = negative ? 9223372036854775808ull : 9223372036854775807ull, value = 0;
  for (; i < s.size(); ++i) {
    if (s[i] < '0' || s[i] > '9') return false;
    uint64_t digit = static_cast<uint64_t>(s[i] - '0');
    if (value > (limit - digit) / 10) return false;
    value = value * 10 + digit;
  }
  return true;
}

// Go's time.ParseDuration, to seconds: "300ms", "1m30s", "-1.5h", "0".
bool ParseGoDuration(std::string_view s, double* seconds) {
  if (s.empty()) return false;
  size_t i = 0;
  double sign = 1;
  if (s[0] == '+' || s[0] == '-') {
    sign = s[0] == '-' ? -1 : 1;
    i = 1;
  }
  if (s.substr(i) == "0") {
    *seconds = 0;
    return true;
  }
  if (i == s.size()) return false;
  double total = 0;
  while (i < s.size()) {
    size_t num_start = i;
    while (i < s.size() && ((s[i] >= '0' && s[i] <= '9') || s[i] == '.')) ++i;
    std::string number(s.substr(num_start, i - num_start));
    if (number.empty() || number == "." || number.find('.') != number.rfind('.')) return false;
    size_t unit_start = i;
    while (i < s.size() && !((s[i] >= '0' && s[i] <= '9') || s[i] == '.')) ++i;
    std::string_view unit = s.substr(unit_start, i - unit_start);
    double scale = 0;
    if (unit == "ns") scale = 1e-9;
    else if (unit == "us" || unit == "\xC2\xB5s" || unit == "\xCE\xBCs") scale = 1e-6;
    else if (unit == "ms") scale = 1e-3;
    else if (unit == "s") scale = 1;
    else if (unit == "m") scale = 60;
    else if (unit == "h") scale = 3600;
    else return false;
    total += std::strtod(number.c_str(), nullptr) * scale;  // strtod: no exceptions on overflow
  }
  // Go durations are int64 nanoseconds, about 292 years.
  if (!std::isfinite(total) || total > 9.2e9) return false;
  *seconds = sign * total;
  return true;
}

// ---- shared pieces ------------------------------------------------------------------------

// Args may carry their own apiVersion/kind (`kind: NodeResourcesFitArgs`); they must match.
absl::Status CheckTypeMeta(const json& args, const std::string& plugin, const FieldPath& p) {
  std::string api_version, kind;
  KPLACE_RETURN_IF_ERROR(GetString(args, "apiVersion", p, &api_version));
  KPLACE_RETURN_IF_ERROR(GetString(args, "kind", p, &kind));
  if (Has(args, "apiVersion") && api_version != kConfigApiVersion) {
    return p.Key("apiVersion").Error(StrCat("must be ", Quote(kConfigApiVersion), ", got ", Quote(api_version)));
  }
  std::string want = StrCat(plugin, "Args");
  if (Has(args, "kind") && kind != want) {
    return p.Key("kind").Error(StrCat("must be ", Quote(want), " for plugin ", Quote(plugin), ", got ", Quote(kind)));
  }
  return absl::OkStatus();
}

// [{name, weight}] with weight 0 (or unset) defaulted to 1.
absl::Status DecodeResourceSpecs(const json& obj, const char* key, const FieldPath& p,
                                 std::vector<ResourceSpec>* out) {
  const json* arr = nullptr;
  KPLACE_RETURN_IF_ERROR(GetArray(obj, key, p, &arr));
  if (!arr) return absl::OkStatus();
  for (size_t i = 0; i < arr->size(); ++i) {
    const json& e = (*arr)[i];
    FieldPath ep = p.Key(key).Index(i);
    KPLACE_RETURN_IF_ERROR(ExpectObject(e, ep));
    KPLACE_RETURN_IF_ERROR(CheckFields(e, ep, {"name", "weight"}));
    ResourceSpec spec;
    spec.weight = 0;
    KPLACE_RETURN_IF_ERROR(GetString(e, "name", ep, &spec.name));
    KPLACE_RETURN_IF_ERROR(GetInt(e, "weight", ep, &spec.weight));
    if (spec.weight == 0) spec.weight = 1;
    out->push_back(std::move(spec));
  }
  return absl::OkStatus();
}

// A broken-line shape: utilization in [0,100] strictly increasing, score in [0,10], at least
// one point (NodeResourcesFit's RequestedToCapacityRatio and VolumeBinding share the rules).
absl::Status DecodeShape(const json& obj, const char* key, const FieldPath& p,
                         std::vector<UtilizationShapePoint>* out) {
  const json* arr = nullptr;
  KPLACE_RETURN_IF_ERROR(GetArray(obj, key, p, &arr));
  if (!arr) return absl::OkStatus();
  for (size_t i = 0; i < arr->size(); ++i) {
    const json& e = (*arr)[i];
    FieldPath ep = p.Key(key).Index(i);
    KPLACE_RETURN_IF_ERROR(ExpectObject(e, ep));
    KPLACE_RETURN_IF_ERROR(CheckFields(e, ep, {"utilization", "score"}));
    UtilizationShapePoint point;
    KPLACE_RETURN_IF_ERROR(GetInt(e, "utilization", ep, &point.utilization));
    KPLACE_RETURN_IF_ERROR(GetInt(e, "score", ep, &point.score));
    out->push_back(point);
  }
  return absl::OkStatus();
}

absl::Status ValidateShape(const std::vector<UtilizationShapePoint>& shape, const FieldPath& p) {
  if (shape.empty()) return p.Error("at least one point must be specified");
  for (size_t i = 0; i < shape.size(); ++i) {
    FieldPath ep = p.Index(i);
    if (shape[i].utilization < 0 || shape[i].utilization > 100) {
      return ep.Key("utilization").Error(StrCat("must be in [0, 100], got ", shape[i].utilization));
    }
    if (shape[i].score < 0 || shape[i].score > 10) {
      return ep.Key("score").Error(StrCat("must be in [0, 10], got ", shape[i].score));
    }
    if (i > 0 && shape[i - 1].utilization >= shape[i].utilization) {
      return ep.Key("utilization").Error(StrCat("utilization values must be strictly increasing, got ",
                                                shape[i].utilization, " after ", shape[i - 1].utilization));
    }
  }
  return absl::OkStatus();
}

// ---- NodeResourcesFit ---------------------------------------------------------------------

absl::Status DecodeFitArgs(const json& args, const FieldPath& p, NodeResourcesFitArgs* out) {
  KPLACE_RETURN_IF_ERROR(CheckFields(args, p, {"apiVersion", "kind", "ignoredResources", "ignoredResourceGroups",
                                               "scoringStrategy"}));
  NodeResourcesFitArgs a;
  KPLACE_RETURN_IF_ERROR(GetStringList(args, "ignoredResources", p, &a.ignored_resources));
  KPLACE_RETURN_IF_ERROR(GetStringList(args, "ignoredResourceGroups", p, &a.ignored_resource_groups));
  for (size_t i = 0; i < a.ignored_resources.size(); ++i) {
    KPLACE_RETURN_IF_ERROR(CheckQualifiedName(a.ignored_resources[i], p.Key("ignoredResources").Index(i)));
  }
  for (size_t i = 0; i < a.ignored_resource_groups.size(); ++i) {
    const std::string& group = a.ignored_resource_groups[i];
    FieldPath gp = p.Key("ignoredResourceGroups").Index(i);
    if (group.find('/') != std::string::npos) {
      return gp.Error(StrCat("resource group name must not contain '/', got ", Quote(group)));
    }
    KPLACE_RETURN_IF_ERROR(CheckQualifiedName(group, gp));
  }

  if (Has(args, "scoringStrategy")) {
    const json& ss = args.at("scoringStrategy");
    FieldPath sp = p.Key("scoringStrategy");
    KPLACE_RETURN_IF_ERROR(ExpectObject(ss, sp));
    KPLACE_RETURN_IF_ERROR(CheckFields(ss, sp, {"type", "resources", "requestedToCapacityRatio"}));
    // A given strategy keeps its (possibly empty) type; only the resources are defaulted.
    a.strategy.clear();
    KPLACE_RETURN_IF_ERROR(GetString(ss, "type", sp, &a.strategy));
    a.resources.clear();
    KPLACE_RETURN_IF_ERROR(DecodeResourceSpecs(ss, "resources", sp, &a.resources));
    if (a.resources.empty()) a.resources = {{"cpu", 1}, {"memory", 1}};
    bool has_rtcr = Has(ss, "requestedToCapacityRatio");
    FieldPath rp = sp.Key("requestedToCapacityRatio");
    if (has_rtcr) {
      const json& rtcr = ss.at("requestedToCapacityRatio");
      KPLACE_RETURN_IF_ERROR(ExpectObject(rtcr, rp));
      KPLACE_RETURN_IF_ERROR(CheckFields(rtcr, rp, {"shape"}));
      KPLACE_RETURN_IF_ERROR(DecodeShape(rtcr, "shape", rp, &a.shape));
    }

    if (a.strategy != "LeastAllocated" && a.strategy != "MostAllocated" && a.strategy != "RequestedToCapacityRatio") {
      return sp.Key("type").Error(
          StrCat("must be one of LeastAllocated, MostAllocated, RequestedToCapacityRatio, got ", Quote(a.strategy)));
    }
    for (size_t i = 0; i < a.resources.size(); ++i) {
      int64_t w = a.resources[i].weight;
      if (w <= 0 || w > 100) {
        return sp.Key("resources").Index(i).Key("weight").Error(StrCat("must be in (0, 100], got ", w));
      }
    }
    if (a.strategy == "RequestedToCapacityRatio") {
      if (!has_rtcr) return rp.Error("required when type is RequestedToCapacityRatio");
      KPLACE_RETURN_IF_ERROR(ValidateShape(a.shape, rp.Key("shape")));
    } else if (has_rtcr) {
      return rp.Error(StrCat("must not be set when type is ", Quote(a.strategy),
                             " (only with RequestedToCapacityRatio)"));
    }
  }
  *out = std::move(a);
  return absl::OkStatus();
}

// ---- NodeResourcesBalancedAllocation ----------------------------------------------------

absl::Status DecodeBalancedArgs(const json& args, const FieldPath& p, NodeResourcesBalancedAllocationArgs* out) {
  KPLACE_RETURN_IF_ERROR(CheckFields(args, p, {"apiVersion", "kind", "resources"}));
  NodeResourcesBalancedAllocationArgs a;
  a.resources.clear();
  KPLACE_RETURN_IF_ERROR(DecodeResourceSpecs(args, "resources", p, &a.resources));
  if (a.resources.empty()) a.resources = {{"cpu", 1}, {"memory", 1}};
  std::set<std::string> seen;
  for (size_t i = 0; i < a.resources.size(); ++i) {
    FieldPath ep = p.Key("resources").Index(i);
    if (!seen.insert(a.resources[i].name).second) {
      return ep.Key("name").Error(StrCat("duplicate resource name ", Quote(a.resources[i].name)));
    }
    if (a.resources[i].weight != 1) {
      return ep.Key("weight").Error(StrCat("must be 1, got ", a.resources[i].weight));
    }
  }
  *out = std::move(a);
  return absl::OkStatus();
}

// ---- NodeAffinity -----------------------------------------------------------------------

// Decodes and strictly parses one NodeSelectorTerm, as plugin construction does for
// addedAffinity (small-plugins.md §1.4–1.6): any bad requirement rejects the config.
absl::Status DecodeNodeSelectorTerm(const json& j, const FieldPath& p, NodeSelectorTerm* term) {
  KPLACE_RETURN_IF_ERROR(ExpectObject(j, p));
  KPLACE_RETURN_IF_ERROR(CheckFields(j, p, {"matchExpressions", "matchFields"}));
  for (const char* key : {"matchExpressions", "matchFields"}) {
    bool fields = std::string_view(key) == "matchFields";
    const json* arr = nullptr;
    KPLACE_RETURN_IF_ERROR(GetArray(j, key, p, &arr));
    if (!arr) continue;
    for (size_t i = 0; i < arr->size(); ++i) {
      const json& e = (*arr)[i];
      FieldPath ep = p.Key(key).Index(i);
      KPLACE_RETURN_IF_ERROR(ExpectObject(e, ep));
      KPLACE_RETURN_IF_ERROR(CheckFields(e, ep, {"key", "operator", "values"}));
      NodeSelectorRequirement req;
      KPLACE_RETURN_IF_ERROR(GetString(e, "key", ep, &req.key));
      KPLACE_RETURN_IF_ERROR(GetString(e, "operator", ep, &req.op));
      KPLACE_RETURN_IF_ERROR(GetStringList(e, "values", ep, &req.values));
      (fields ? term->match_fields : term->match_expressions).push_back(std::move(req));
    }
  }
  return absl::OkStatus();
}

absl::Status ValidateNodeSelectorTerm(const NodeSelectorTerm& term, const FieldPath& p) {
  for (size_t i = 0; i < term.match_expressions.size(); ++i) {
    const NodeSelectorRequirement& r = term.match_expressions[i];
    FieldPath ep = p.Key("matchExpressions").Index(i);
    KPLACE_RETURN_IF_ERROR(CheckQualifiedName(r.key, ep.Key("key")));
    if (r.op == "In" || r.op == "NotIn") {
      if (r.values.empty()) return ep.Key("values").Error(StrCat("must be non-empty for operator ", r.op));
    } else if (r.op == "Exists" || r.op == "DoesNotExist") {
      if (!r.values.empty()) {
        return ep.Key("values").Error(StrCat("must be empty for operator ", r.op, ", got ", r.values.size(), " values"));
      }
    } else if (r.op == "Gt" || r.op == "Lt") {
      if (r.values.size() != 1) {
        return ep.Key("values").Error(StrCat("must have exactly one value for operator ", r.op, ", got ", r.values.size()));
      }
      if (!ParsesAsInt64(r.values[0])) {
        return ep.Key("values").Index(0).Error(StrCat("must be an integer for operator ", r.op, ", got ", Quote(r.values[0])));
      }
    } else {
      return ep.Key("operator").Error(
          StrCat("must be one of In, NotIn, Exists, DoesNotExist, Gt, Lt, got ", Quote(r.op)));
    }
    for (size_t v = 0; v < r.values.size(); ++v) {
      if (!IsLabelValue(r.values[v])) {
        return ep.Key("values").Index(v).Error(
            StrCat("must be a valid label value (at most 63 characters of [A-Za-z0-9-_.] starting and ending "
                   "with an alphanumeric character), got ",
                   Quote(r.values[v])));
      }
    }
  }
  for (size_t i = 0; i < term.match_fields.size(); ++i) {
    const NodeSelectorRequirement& r = term.match_fields[i];
    FieldPath ep = p.Key("matchFields").Index(i);
    if (r.op != "In" && r.op != "NotIn") {
      return ep.Key("operator").Error(StrCat("must be In or NotIn for matchFields, got ", Quote(r.op)));
    }
    if (r.values.size() != 1) {
      return ep.Key("values").Error(StrCat("must have exactly one value for matchFields, got ", r.values.size()));
    }
  }
  return absl::OkStatus();
}

absl::Status DecodeNodeAffinityArgs(const json& args, const FieldPath& p, NodeAffinityArgs* out) {
  KPLACE_RETURN_IF_ERROR(CheckFields(args, p, {"apiVersion", "kind", "addedAffinity"}));
  NodeAffinityArgs a;
  if (Has(args, "addedAffinity")) {
    const json& aa = args.at("addedAffinity");
    FieldPath ap = p.Key("addedAffinity");
    KPLACE_RETURN_IF_ERROR(ExpectObject(aa, ap));
    KPLACE_RETURN_IF_ERROR(CheckFields(aa, ap,
                                       {"requiredDuringSchedulingIgnoredDuringExecution",
                                        "preferredDuringSchedulingIgnoredDuringExecution"}));
    NodeAffinity affinity;
    const char* kRequired = "requiredDuringSchedulingIgnoredDuringExecution";
    if (Has(aa, kRequired)) {
      const json& req = aa.at(kRequired);
      FieldPath rp = ap.Key(kRequired);
      KPLACE_RETURN_IF_ERROR(ExpectObject(req, rp));
      KPLACE_RETURN_IF_ERROR(CheckFields(req, rp, {"nodeSelectorTerms"}));
      affinity.required.emplace();
      const json* terms = nullptr;
      KPLACE_RETURN_IF_ERROR(GetArray(req, "nodeSelectorTerms", rp, &terms));
      for (size_t i = 0; terms && i < terms->size(); ++i) {
        FieldPath tp = rp.Key("nodeSelectorTerms").Index(i);
        NodeSelectorTerm term;
        KPLACE_RETURN_IF_ERROR(DecodeNodeSelectorTerm((*terms)[i], tp, &term));
        // Empty terms are dropped by the matcher, so they are not parsed either.
        if (!term.match_expressions.empty() || !term.match_fields.empty()) {
          KPLACE_RETURN_IF_ERROR(ValidateNodeSelectorTerm(term, tp));
        }
        affinity.required->terms.push_back(std::move(term));
      }
    }
    const json* preferred = nullptr;
    const char* kPreferred = "preferredDuringSchedulingIgnoredDuringExecution";
    KPLACE_RETURN_IF_ERROR(GetArray(aa, kPreferred, ap, &preferred));
    for (size_t i = 0; preferred && i < preferred->size(); ++i) {
      const json& e = (*preferred)[i];
      FieldPath ep = ap.Key(kPreferred).Index(i);
      KPLACE_RETURN_IF_ERROR(ExpectObject(e, ep));
      KPLACE_RETURN_IF_ERROR(CheckFields(e, ep, {"weight", "preference"}));
      PreferredSchedulingTerm term;
      KPLACE_RETURN_IF_ERROR(GetInt(e, "weight", ep, &term.weight));
      if (Has(e, "preference")) {
        KPLACE_RETURN_IF_ERROR(DecodeNodeSelectorTerm(e.at("preference"), ep.Key("preference"), &term.preference));
      }
      // Zero-weight and empty terms are skipped unparsed by the plugin.
      bool empty = term.preference.match_expressions.empty() && term.preference.match_fields.empty();
      if (term.weight != 0 && !empty) {
        KPLACE_RETURN_IF_ERROR(ValidateNodeSelectorTerm(term.preference, ep.Key("preference")));
      }
      affinity.preferred.push_back(std::move(term));
    }
    a.added_affinity = std::move(affinity);
  }
  *out = std::move(a);
  return absl::OkStatus();
}

// ---- InterPodAffinity -------------------------------------------------------------------

absl::Status DecodeInterPodAffinityArgs(const json& args, const FieldPath& p, InterPodAffinityArgs* out) {
  KPLACE_RETURN_IF_ERROR(
      CheckFields(args, p, {"apiVersion", "kind", "hardPodAffinityWeight", "ignorePreferredTermsOfExistingPods"}));
  InterPodAffinityArgs a;  // hardPodAffinityWeight defaults to 1 only when unset; 0 stays 0
  KPLACE_RETURN_IF_ERROR(GetInt(args, "hardPodAffinityWeight", p, &a.hard_pod_affinity_weight));
  KPLACE_RETURN_IF_ERROR(GetBool(args, "ignorePreferredTermsOfExistingPods", p, &a.ignore_preferred_terms_of_existing_pods));
  if (a.hard_pod_affinity_weight < 0 || a.hard_pod_affinity_weight > 100) {
    return p.Key("hardPodAffinityWeight").Error(StrCat("must be in [0, 100], got ", a.hard_pod_affinity_weight));
  }
  *out = a;
  return absl::OkStatus();
}

// ---- PodTopologySpread ------------------------------------------------------------------

absl::Status DecodeDefaultConstraint(const json& c, const FieldPath& p, TopologySpreadConstraint* t) {
  KPLACE_RETURN_IF_ERROR(ExpectObject(c, p));
  KPLACE_RETURN_IF_ERROR(CheckFields(c, p, {"maxSkew", "topologyKey", "whenUnsatisfiable", "labelSelector",
                                            "minDomains", "nodeAffinityPolicy", "nodeTaintsPolicy",
                                            "matchLabelKeys"}));
  KPLACE_RETURN_IF_ERROR(GetInt(c, "maxSkew", p, &t->max_skew));
  KPLACE_RETURN_IF_ERROR(GetString(c, "topologyKey", p, &t->topology_key));
  KPLACE_RETURN_IF_ERROR(GetString(c, "whenUnsatisfiable", p, &t->when_unsatisfiable));
  // The plugin derives each pod's selector itself, so defaults may not carry one.
  if (Has(c, "labelSelector")) {
    return p.Key("labelSelector").Error("must not be set: default constraints take their selector from each pod");
  }
  bool has_min_domains = false;
  int32_t min_domains = 0;
  KPLACE_RETURN_IF_ERROR(GetInt(c, "minDomains", p, &min_domains, &has_min_domains));
  if (has_min_domains) t->min_domains = min_domains;
  for (const char* key : {"nodeAffinityPolicy", "nodeTaintsPolicy"}) {
    if (!Has(c, key)) continue;
    std::string v;
    KPLACE_RETURN_IF_ERROR(GetString(c, key, p, &v));
    if (v != "Honor" && v != "Ignore") return p.Key(key).Error(StrCat("must be Honor or Ignore, got ", Quote(v)));
    (std::string_view(key) == "nodeAffinityPolicy" ? t->node_affinity_policy : t->node_taints_policy) = v;
  }
  return GetStringList(c, "matchLabelKeys", p, &t->match_label_keys);
}

absl::Status DecodePodTopologySpreadArgs(const json& args, const FieldPath& p, PodTopologySpreadArgs* out) {
  KPLACE_RETURN_IF_ERROR(CheckFields(args, p, {"apiVersion", "kind", "defaultConstraints", "defaultingType"}));
  PodTopologySpreadArgs a;
  a.defaulting_type.clear();
  KPLACE_RETURN_IF_ERROR(GetString(args, "defaultingType", p, &a.defaulting_type));
  if (a.defaulting_type.empty()) a.defaulting_type = "System";
  const json* arr = nullptr;
  KPLACE_RETURN_IF_ERROR(GetArray(args, "defaultConstraints", p, &arr));
  for (size_t i = 0; arr && i < arr->size(); ++i) {
    TopologySpreadConstraint t;
    KPLACE_RETURN_IF_ERROR(DecodeDefaultConstraint((*arr)[i], p.Key("defaultConstraints").Index(i), &t));
    a.default_constraints.push_back(std::move(t));
  }

  if (a.defaulting_type != "System" && a.defaulting_type != "List") {
    return p.Key("defaultingType").Error(StrCat("must be System or List, got ", Quote(a.defaulting_type)));
  }
  if (a.defaulting_type == "System" && !a.default_constraints.empty()) {
    return p.Key("defaultConstraints").Error(
        StrCat("must be empty when defaultingType is \"System\", got ", a.default_constraints.size(), " constraints"));
  }
  for (size_t i = 0; i < a.default_constraints.size(); ++i) {
    const TopologySpreadConstraint& c = a.default_constraints[i];
    FieldPath cp = p.Key("defaultConstraints").Index(i);
    if (c.max_skew <= 0) return cp.Key("maxSkew").Error(StrCat("must be greater than 0, got ", c.max_skew));
    if (c.topology_key.empty()) return cp.Key("topologyKey").Error("required, got \"\"");
    KPLACE_RETURN_IF_ERROR(CheckQualifiedName(c.topology_key, cp.Key("topologyKey")));
    if (c.when_unsatisfiable != "DoNotSchedule" && c.when_unsatisfiable != "ScheduleAnyway") {
      return cp.Key("whenUnsatisfiable").Error(
          StrCat("must be DoNotSchedule or ScheduleAnyway, got ", Quote(c.when_unsatisfiable)));
    }
    for (size_t j = 0; j < i; ++j) {
      const TopologySpreadConstraint& prev = a.default_constraints[j];
      if (prev.topology_key == c.topology_key && prev.when_unsatisfiable == c.when_unsatisfiable) {
        return cp.Error(StrCat("duplicate {topologyKey, whenUnsatisfiable} ", Quote(c.topology_key), ", ",
                               Quote(c.when_unsatisfiable), " (first at index ", j, ")"));
      }
    }
  }
  *out = std::move(a);
  return absl::OkStatus();
}

// ---- VolumeBinding ------------------------------------------------------------------------

absl::Status DecodeVolumeBindingArgs(const json& args, const FieldPath& p, VolumeBindingArgs* out) {
  KPLACE_RETURN_IF_ERROR(CheckFields(args, p, {"apiVersion", "kind", "bindTimeoutSeconds", "shape"}));
  VolumeBindingArgs a;
  KPLACE_RETURN_IF_ERROR(GetInt(args, "bindTimeoutSeconds", p, &a.bind_timeout_seconds));
  if (a.bind_timeout_seconds < 0) {
    return p.Key("bindTimeoutSeconds").Error(StrCat("must not be negative, got ", a.bind_timeout_seconds));
  }
  std::vector<UtilizationShapePoint> shape;
  KPLACE_RETURN_IF_ERROR(DecodeShape(args, "shape", p, &shape));
  // StorageCapacityScoring is on at v1.37: an empty shape takes the default, a given one is checked.
  if (!shape.empty()) {
    KPLACE_RETURN_IF_ERROR(ValidateShape(shape, p.Key("shape")));
    a.shape = std::move(shape);
  }
  *out = std::move(a);
  return absl::OkStatus();
}

// ---- DefaultPreemption (kept), then plugins whose args kplace checks but does not keep ----

absl::Status DecodeDefaultPreemptionArgs(const json& args, const FieldPath& p, DefaultPreemptionArgs* out) {
  KPLACE_RETURN_IF_ERROR(
      CheckFields(args, p, {"apiVersion", "kind", "minCandidateNodesPercentage", "minCandidateNodesAbsolute"}));
  int32_t percentage = 10, absolute = 100;
  KPLACE_RETURN_IF_ERROR(GetInt(args, "minCandidateNodesPercentage", p, &percentage));
  KPLACE_RETURN_IF_ERROR(GetInt(args, "minCandidateNodesAbsolute", p, &absolute));
  if (percentage < 0 || percentage > 100) {
    return p.Key("minCandidateNodesPercentage").Error(StrCat("must be in [0, 100], got ", percentage));
  }
  if (absolute < 0) return p.Key("minCandidateNodesAbsolute").Error(StrCat("must not be negative, got ", absolute));
  if (percentage == 0 && absolute == 0) {
    return p.Error("minCandidateNodesPercentage and minCandidateNodesAbsolute must not both be 0");
  }
  out->min_candidate_nodes_percentage = percentage;
  out->min_candidate_nodes_absolute = absolute;
  return absl::OkStatus();
}

absl::Status CheckDynamicResourcesArgs(const json& args, const FieldPath& p) {
  KPLACE_RETURN_IF_ERROR(CheckFields(args, p, {"apiVersion", "kind", "filterTimeout", "bindingTimeout"}));
  for (const char* key : {"filterTimeout", "bindingTimeout"}) {
    if (!Has(args, key)) continue;
    std::string text;
    KPLACE_RETURN_IF_ERROR(GetString(args, key, p, &text));
    double seconds = 0;
    if (!ParseGoDuration(text, &seconds)) {
      return p.Key(key).Error(StrCat("must be a duration such as \"10s\", got ", Quote(text)));
    }
    bool binding = std::string_view(key) == "bindingTimeout";
    if (binding && seconds < 1) return p.Key(key).Error(StrCat("must be at least 1s, got ", Quote(text)));
    if (!binding && seconds < 0) return p.Key(key).Error(StrCat("must not be negative, got ", Quote(text)));
  }
  return absl::OkStatus();
}

}  // namespace

absl::Status DecodePluginArgs(const std::string& plugin, const nlohmann::json& args, std::string_view where,
                              PluginArgs* out) {
  FieldPath p{std::string(where)};
  if (PluginIsRemoved(plugin)) {
    return p.Error(StrCat("plugin ", Quote(plugin), " was removed in v1.31 and is invalid in ", kConfigApiVersion));
  }
  if (PluginConfigPoints(plugin) == 0) return p.Error(StrCat("unknown plugin ", Quote(plugin)));
  // Absent or null args mean the defaults.
  const json empty = json::object();
  const json& a = args.is_null() ? empty : args;
  KPLACE_RETURN_IF_ERROR(ExpectObject(a, p));

  if (plugin == "NodeResourcesFit" || plugin == "NodeResourcesBalancedAllocation" || plugin == "NodeAffinity" ||
      plugin == "InterPodAffinity" || plugin == "PodTopologySpread" || plugin == "VolumeBinding" ||
      plugin == "DefaultPreemption" || plugin == "DynamicResources") {
    KPLACE_RETURN_IF_ERROR(CheckTypeMeta(a, plugin, p));
  }
  // Decode into a copy so that a rejected entry leaves *out untouched.
  PluginArgs result = *out;
  if (plugin == "NodeResourcesFit") {
    KPLACE_RETURN_IF_ERROR(DecodeFitArgs(a, p, &result.node_resources_fit));
  } else if (plugin == "NodeResourcesBalancedAllocation") {
    KPLACE_RETURN_IF_ERROR(DecodeBalancedArgs(a, p, &result.balanced_allocation));
  } else if (plugin == "NodeAffinity") {
    KPLACE_RETURN_IF_ERROR(DecodeNodeAffinityArgs(a, p, &result.node_affinity));
  } else if (plugin == "InterPodAffinity") {
    KPLACE_RETURN_IF_ERROR(DecodeInterPodAffinityArgs(a, p, &result.inter_pod_affinity));
  } else if (plugin == "PodTopologySpread") {
    KPLACE_RETURN_IF_ERROR(DecodePodTopologySpreadArgs(a, p, &result.pod_topology_spread));
  } else if (plugin == "VolumeBinding") {
    KPLACE_RETURN_IF_ERROR(DecodeVolumeBindingArgs(a, p, &result.volume_binding));
  } else if (plugin == "DefaultPreemption") {
    KPLACE_RETURN_IF_ERROR(DecodeDefaultPreemptionArgs(a, p, &result.default_preemption));
  } else if (plugin == "DynamicResources") {
    KPLACE_RETURN_IF_ERROR(CheckDynamicResourcesArgs(a, p));
  } else if (!a.empty()) {
    return p.Error(StrCat("plugin ", Quote(plugin), " takes no arguments, got ", a.dump()));
  }
  *out = std::move(result);
  return absl::OkStatus();
}

}  // namespace kplace
