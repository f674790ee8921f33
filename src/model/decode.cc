#include "kplace/model/decode.h"

#include <algorithm>
#include <cmath>
#include <initializer_list>
#include <limits>
#include <optional>
#include <functional>
#include <set>

#include <nlohmann/json.hpp>
#include <simdjson.h>

#include "kplace/common/strings.h"
#include "absl/time/time.h"
#include "kplace/common/status.h"
#include "kplace/model/input_file.h"
#include "kplace/model/requests.h"
#include "kplace/model/validation.h"
#include "src/model/json_split.h"
#include "src/model/json_view.h"

namespace kplace {
namespace {

using json = nlohmann::json;

// Walks one object, tracking the field path so that errors name it exactly.
class Reader {
 public:
  explicit Reader(std::string prefix, bool strict = true) : prefix_(std::move(prefix)), strict_(strict) {}

  /** Whether the API server's value rules apply (objects from upstream's test tables never
   *  passed through it). */
  bool strict() const { return strict_; }

  absl::Status Error(std::string_view path, std::string_view what) const {
    return absl::InvalidArgumentError(StrCat(prefix_, ": ", path, ": ", what));
  }

  // Type checks: absent and null are both "not set".
  static bool Has(JsonView j, const char* key) {
    return !j[key].is_null();
  }

  absl::Status String(JsonView j, const char* key, std::string_view path, std::string* out) const {
    const JsonView v = j[key];
    if (v.is_null()) return absl::OkStatus();
    if (!v.is_string()) return Error(Join(path, key), StrCat("expected a string, got ", v.type_name()));
    *out = std::string(v.str());
    return absl::OkStatus();
  }

  absl::Status Bool(JsonView j, const char* key, std::string_view path, bool* out) const {
    const JsonView v = j[key];
    if (v.is_null()) return absl::OkStatus();
    if (!v.is_boolean()) return Error(Join(path, key), StrCat("expected a boolean, got ", v.type_name()));
    *out = v.boolean();
    return absl::OkStatus();
  }

  template <typename Int>
  absl::Status Integer(JsonView j, const char* key, std::string_view path, Int* out) const {
    const JsonView v = j[key];
    if (v.is_null()) return absl::OkStatus();
    // A float converts only when it is a whole number inside int64's range (the cast of
    // anything else is undefined).
    const bool whole_float = v.is_number_float() && std::abs(v.number()) < 9.2e18 &&
                             v.number() == static_cast<double>(static_cast<int64_t>(v.number()));
    if (!v.is_number_integer() && !whole_float) {
      return Error(Join(path, key), StrCat("expected an integer, got ", v.dump()));
    }
    if (v.is_number_unsigned() && v.uint64() > static_cast<uint64_t>(std::numeric_limits<int64_t>::max())) {
      return Error(Join(path, key), StrCat("integer out of range: ", v.dump()));
    }
    int64_t value = v.is_number_integer() ? v.int64() : static_cast<int64_t>(v.number());
    if (value < std::numeric_limits<Int>::min() || value > std::numeric_limits<Int>::max()) {
      return Error(Join(path, key), StrCat("integer out of range: ", value));
    }
    *out = static_cast<Int>(value);
    return absl::OkStatus();
  }

  absl::Status StringList(JsonView j, const char* key, std::string_view path,
                          std::vector<std::string>* out) const {
    return Array(j, key, path, [&](JsonView e, const std::string& p) -> absl::Status {
      if (!e.is_string()) return Error(p, StrCat("expected a string, got ", e.type_name()));
      out->emplace_back(e.str());
      return absl::OkStatus();
    });
  }

  absl::Status StringMap(JsonView j, const char* key, std::string_view path,
                         std::map<std::string, std::string>* out) const {
    const JsonView v = j[key];
    if (v.is_null()) return absl::OkStatus();
    std::string p = Join(path, key);
    if (!v.is_object()) return Error(p, StrCat("expected a map, got ", v.type_name()));
    return v.ForEachField([&](std::string_view key, JsonView value) -> absl::Status {
      if (value.is_string()) {
        (*out)[std::string(key)] = std::string(value.str());
      } else if (value.is_null()) {
        (*out)[std::string(key)] = "";
      } else {
        return Error(StrCat(p, ".", key), StrCat("expected a string, got ", value.type_name()));
      }
      return absl::OkStatus();
    });
  }

  absl::Status Resources(JsonView j, const char* key, std::string_view path, ResourceList* out) const {
    const JsonView v = j[key];
    if (v.is_null()) return absl::OkStatus();
    std::string p = Join(path, key);
    if (!v.is_object()) return Error(p, StrCat("expected a map of quantities, got ", v.type_name()));
    return v.ForEachField([&](std::string_view key, JsonView value) -> absl::Status {
      std::string text;
      if (value.is_string()) {
        text = std::string(value.str());
      } else if (value.is_number()) {
        text = value.dump();  // YAML/JSON numbers are accepted by the API server too
      } else {
        return Error(StrCat(p, ".", key), StrCat("expected a quantity, got ", value.type_name()));
      }
      auto q = Quantity::Parse(text);
      if (!q) return Error(StrCat(p, ".", key), StrCat("invalid quantity \"", text, "\""));
      if (strict_ && q->nanos() < 0) {
        return Error(StrCat(p, ".", key), StrCat("Invalid value: \"", text, "\": must be greater than or equal to 0"));
      }
      // ValidateResourceQuantityValue: pods and extended resources count whole things.
      if (strict_ && (key == "pods" || IsExtendedResourceName(key)) && q->nanos() % 1000000000 != 0) {
        return Error(StrCat(p, ".", key), StrCat("Invalid value: \"", q->ToString(), "\": must be an integer"));
      }
      (*out)[std::string(key)] = *q;
      return absl::OkStatus();
    });
  }

  // Calls fn(element, element_path) for each element of the array at key.
  absl::Status Array(JsonView j, const char* key, std::string_view path,
                     const std::function<absl::Status(JsonView, const std::string&)>& fn) const {
    const JsonView v = j[key];
    if (v.is_null()) return absl::OkStatus();
    std::string p = Join(path, key);
    if (!v.is_array()) return Error(p, StrCat("expected a list, got ", v.type_name()));
    return v.ForEachElement([&](size_t i, JsonView e) { return fn(e, StrCat(p, "[", i, "]")); });
  }

  // Calls fn(object, object_path) when key holds an object.
  absl::Status Object(JsonView j, const char* key, std::string_view path,
                      const std::function<absl::Status(JsonView, const std::string&)>& fn) const {
    const JsonView v = j[key];
    if (v.is_null()) return absl::OkStatus();
    std::string p = Join(path, key);
    if (!v.is_object()) return Error(p, StrCat("expected an object, got ", v.type_name()));
    return fn(v, p);
  }

  static std::string Join(std::string_view path, std::string_view key) {
    return path.empty() ? std::string(key) : StrCat(path, ".", key);
  }

 private:
  std::string prefix_;
  bool strict_;
};

std::string KindAndKey(std::string_view kind, JsonView j) {
  std::string name = "<unnamed>", ns;
  if (j.is_object() && j.contains("metadata") && j["metadata"].is_object()) {
    JsonView m = j["metadata"];
    if (m["name"].is_string()) name = std::string(m["name"].str());
    if (m["namespace"].is_string()) ns = std::string(m["namespace"].str());
  }
  bool namespaced = kind == "Pod" || kind == "Service" || kind == "ReplicaSet" || kind == "StatefulSet" ||
                    kind == "ReplicationController" || kind == "PersistentVolumeClaim" || kind == "CSIStorageCapacity" ||
                    kind == "PodDisruptionBudget" || kind == "ResourceClaim" || kind == "ResourceClaimTemplate" ||
                    kind == "PodGroup" || kind == "Workload";
  if (ns.empty() && namespaced) ns = "default";  // as the API server would default it
  return StrCat(kind, " ", ns.empty() ? "" : StrCat(ns, "/"), name);
}

std::string Prefix(std::string_view where, std::string_view kind, JsonView j) {
  return where.empty() ? KindAndKey(kind, j) : StrCat(where, ": ", KindAndKey(kind, j));
}

// An RFC 3339 time at j[key]: its text, and nanoseconds since the epoch when set.
absl::Status Timestamp(const Reader& r, JsonView j, const char* key, std::string_view path, std::string* text,
                       std::optional<int64_t>* ns) {
  KPLACE_RETURN_IF_ERROR(r.String(j, key, path, text));
  if (text->empty()) return absl::OkStatus();
  absl::Time t;
  std::string err;
  if (!absl::ParseTime(absl::RFC3339_full, *text, &t, &err)) {
    return r.Error(Reader::Join(path, key), StrCat("invalid time \"", *text, "\""));
  }
  *ns = absl::ToUnixNanos(t);
  return absl::OkStatus();
}

// ValidateLabels: qualified-name keys, label values; the first error of the first bad label.
absl::Status ValidateLabels(const Reader& r, std::string_view path, const std::map<std::string, std::string>& labels) {
  for (const auto& [key, value] : labels) {
    std::vector<std::string> errs = QualifiedNameErrors(key);
    if (!errs.empty()) return r.Error(path, StrCat("Invalid value: ", GoQuote(key), ": ", errs[0]));
    errs = LabelValueErrors(value);
    if (!errs.empty()) {
      std::string shown = value.size() > 64 ? value.substr(0, 64) + "..." : value;
      return r.Error(path, StrCat("Invalid value: ", GoQuote(shown), ": ", errs[0]));
    }
  }
  return absl::OkStatus();
}

// ValidateLabelSelectorRequirement and ValidateNodeSelectorRequirement (`node`: Gt and Lt too):
// the operator, the values it takes, and a qualified-name key.
absl::Status ValidateRequirement(const Reader& r, const std::string& ep, const std::string& key, const std::string& op,
                                 size_t num_values, bool node) {
  if (!r.strict()) return absl::OkStatus();
  if (op == "In" || op == "NotIn") {
    if (num_values == 0) {
      return r.Error(Reader::Join(ep, "values"), "Required value: must be specified when `operator` is 'In' or 'NotIn'");
    }
  } else if (op == "Exists" || op == "DoesNotExist") {
    if (num_values > 0) {
      return r.Error(Reader::Join(ep, "values"),
                     "Forbidden: may not be specified when `operator` is 'Exists' or 'DoesNotExist'");
    }
  } else if (node && (op == "Gt" || op == "Lt")) {
    if (num_values != 1) {
      return r.Error(Reader::Join(ep, "values"),
                     "Required value: must be specified single value when `operator` is 'Lt' or 'Gt'");
    }
  } else {
    return r.Error(Reader::Join(ep, "operator"), StrCat("Invalid value: ", GoQuote(op), ": not a valid selector operator"));
  }
  std::vector<std::string> errs = QualifiedNameErrors(key);
  if (!errs.empty()) return r.Error(Reader::Join(ep, "key"), StrCat("Invalid value: ", GoQuote(key), ": ", errs[0]));
  return absl::OkStatus();
}

// ValidateNodeFieldSelectorRequirement: metadata.name with In or NotIn and exactly one value.
absl::Status ValidateFieldRequirement(const Reader& r, const std::string& ep, const NodeSelectorRequirement& req) {
  if (!r.strict()) return absl::OkStatus();
  if (req.op != "In" && req.op != "NotIn") {
    return r.Error(Reader::Join(ep, "operator"), StrCat("Invalid value: ", GoQuote(req.op), ": not a valid selector operator"));
  }
  if (req.values.size() != 1) {
    return r.Error(Reader::Join(ep, "values"),
                   "Required value: must be only one value when `operator` is 'In' or 'NotIn' for node field selector");
  }
  if (req.key != "metadata.name") {
    return r.Error(Reader::Join(ep, "key"), StrCat("Invalid value: ", GoQuote(req.key), ": not a valid field selector key"));
  }
  std::vector<std::string> errs = Dns1123SubdomainErrors(req.values[0]);  // ValidateNodeName
  if (!errs.empty()) {
    return r.Error(StrCat(Reader::Join(ep, "values"), "[0]"), StrCat("Invalid value: ", GoQuote(req.values[0]), ": ", errs[0]));
  }
  return absl::OkStatus();
}

// `labels`: apply ValidateLabels (pods and nodes, whose labels every selector reads).
absl::Status DecodeMeta(const Reader& r, JsonView j, ObjectMeta* meta, bool namespaced, bool labels = false) {
  if (!j.is_object()) return r.Error("", StrCat("expected an object, got ", j.type_name()));
  KPLACE_RETURN_IF_ERROR(r.Object(j, "metadata", "", [&](JsonView m, const std::string& p) -> absl::Status {
    KPLACE_RETURN_IF_ERROR(r.String(m, "name", p, &meta->name));
    KPLACE_RETURN_IF_ERROR(r.String(m, "namespace", p, &meta->namespace_));
    KPLACE_RETURN_IF_ERROR(r.String(m, "uid", p, &meta->uid));
    KPLACE_RETURN_IF_ERROR(r.StringMap(m, "labels", p, &meta->labels));
    KPLACE_RETURN_IF_ERROR(r.StringMap(m, "annotations", p, &meta->annotations));
    std::optional<int64_t> created_ns;
    KPLACE_RETURN_IF_ERROR(Timestamp(r, m, "creationTimestamp", p, &meta->creation_timestamp, &created_ns));
    if (created_ns) meta->creation_unix = absl::ToUnixSeconds(absl::FromUnixNanos(*created_ns));
    KPLACE_RETURN_IF_ERROR(r.String(m, "deletionTimestamp", p, &meta->deletion_timestamp));
    return r.Array(m, "ownerReferences", p, [&](JsonView o, const std::string& op) -> absl::Status {
      OwnerReference ref;
      KPLACE_RETURN_IF_ERROR(r.String(o, "apiVersion", op, &ref.api_version));
      KPLACE_RETURN_IF_ERROR(r.String(o, "kind", op, &ref.kind));
      KPLACE_RETURN_IF_ERROR(r.String(o, "name", op, &ref.name));
      KPLACE_RETURN_IF_ERROR(r.String(o, "uid", op, &ref.uid));
      KPLACE_RETURN_IF_ERROR(r.Bool(o, "controller", op, &ref.controller));
      meta->owner_references.push_back(std::move(ref));
      return absl::OkStatus();
    });
  }));
  if (meta->name.empty()) return r.Error("metadata.name", "missing");
  if (namespaced && meta->namespace_.empty()) meta->namespace_ = "default";
  if (labels && r.strict()) {
    // ValidateObjectMeta: pod and node names are DNS subdomains (ValidatePodName, ValidateNodeName),
    // namespaces DNS labels; they key every event, PDB, and victim a user names back.
    std::vector<std::string> errs = Dns1123SubdomainErrors(meta->name);
    if (!errs.empty()) return r.Error("metadata.name", StrCat("Invalid value: ", GoQuote(meta->name), ": ", errs[0]));
    if (namespaced) {
      errs = Dns1123LabelErrors(meta->namespace_);
      if (!errs.empty()) {
        return r.Error("metadata.namespace", StrCat("Invalid value: ", GoQuote(meta->namespace_), ": ", errs[0]));
      }
    }
    KPLACE_RETURN_IF_ERROR(ValidateLabels(r, "metadata.labels", meta->labels));
  }
  return absl::OkStatus();
}

absl::Status DecodeSelector(const Reader& r, JsonView j, const std::string& p, LabelSelector* s) {
  if (!j.is_object()) return r.Error(p, StrCat("expected an object, got ", j.type_name()));
  KPLACE_RETURN_IF_ERROR(r.StringMap(j, "matchLabels", p, &s->match_labels));
  if (r.strict()) KPLACE_RETURN_IF_ERROR(ValidateLabels(r, Reader::Join(p, "matchLabels"), s->match_labels));
  return r.Array(j, "matchExpressions", p, [&](JsonView e, const std::string& ep) -> absl::Status {
    LabelSelectorRequirement req;
    KPLACE_RETURN_IF_ERROR(r.String(e, "key", ep, &req.key));
    KPLACE_RETURN_IF_ERROR(r.String(e, "operator", ep, &req.op));
    KPLACE_RETURN_IF_ERROR(r.StringList(e, "values", ep, &req.values));
    KPLACE_RETURN_IF_ERROR(ValidateRequirement(r, ep, req.key, req.op, req.values.size(), /*node=*/false));
    s->match_expressions.push_back(std::move(req));
    return absl::OkStatus();
  });
}

absl::Status OptionalSelector(const Reader& r, JsonView j, const char* key, const std::string& p,
                              std::optional<LabelSelector>* out) {
  return r.Object(j, key, p, [&](JsonView s, const std::string& sp) {
    out->emplace();
    return DecodeSelector(r, s, sp, &**out);
  });
}

// field.NotSupported: `value` must be one of `allowed` ("" passes when `empty_ok`).
absl::Status OneOf(const Reader& r, std::string_view path, const std::string& value,
                   std::initializer_list<const char*> allowed, bool empty_ok) {
  if (!r.strict() || (empty_ok && value.empty())) return absl::OkStatus();
  std::string list;
  for (const char* a : allowed) {
    if (value == a) return absl::OkStatus();
    list += StrCat(list.empty() ? "" : ", ", "\"", a, "\"");
  }
  if (value.empty()) return r.Error(path, "Required value");
  return r.Error(path, StrCat("Unsupported value: \"", value, "\": supported values: ", list));
}

// A preferred term's weight: the API server admits 1-100.
absl::Status Weight(const Reader& r, JsonView j, std::string_view path, int32_t* out) {
  KPLACE_RETURN_IF_ERROR(r.Integer(j, "weight", path, out));
  if (r.strict() && (*out < 1 || *out > 100)) return r.Error(Reader::Join(path, "weight"), StrCat("Invalid value: ", *out, ": must be in the range 1-100"));
  return absl::OkStatus();
}

absl::Status DecodeNodeSelectorRequirements(const Reader& r, JsonView j, const char* key,
                                            const std::string& p,
                                            std::vector<NodeSelectorRequirement>* out) {
  return r.Array(j, key, p, [&](JsonView e, const std::string& ep) -> absl::Status {
    NodeSelectorRequirement req;
    KPLACE_RETURN_IF_ERROR(r.String(e, "key", ep, &req.key));
    KPLACE_RETURN_IF_ERROR(r.String(e, "operator", ep, &req.op));
    KPLACE_RETURN_IF_ERROR(r.StringList(e, "values", ep, &req.values));
    if (std::string_view(key) == "matchFields") {
      KPLACE_RETURN_IF_ERROR(ValidateFieldRequirement(r, ep, req));
    } else {
      KPLACE_RETURN_IF_ERROR(ValidateRequirement(r, ep, req.key, req.op, req.values.size(), /*node=*/true));
    }
    out->push_back(std::move(req));
    return absl::OkStatus();
  });
}

absl::Status DecodeNodeSelectorTerm(const Reader& r, JsonView j, const std::string& p, NodeSelectorTerm* t) {
  if (!j.is_object()) return r.Error(p, StrCat("expected an object, got ", j.type_name()));
  KPLACE_RETURN_IF_ERROR(DecodeNodeSelectorRequirements(r, j, "matchExpressions", p, &t->match_expressions));
  return DecodeNodeSelectorRequirements(r, j, "matchFields", p, &t->match_fields);
}

absl::Status DecodePodAffinityTerm(const Reader& r, JsonView j, const std::string& p, PodAffinityTerm* t) {
  if (!j.is_object()) return r.Error(p, StrCat("expected an object, got ", j.type_name()));
  KPLACE_RETURN_IF_ERROR(OptionalSelector(r, j, "labelSelector", p, &t->label_selector));
  KPLACE_RETURN_IF_ERROR(r.StringList(j, "namespaces", p, &t->namespaces));
  KPLACE_RETURN_IF_ERROR(OptionalSelector(r, j, "namespaceSelector", p, &t->namespace_selector));
  KPLACE_RETURN_IF_ERROR(r.String(j, "topologyKey", p, &t->topology_key));
  KPLACE_RETURN_IF_ERROR(r.StringList(j, "matchLabelKeys", p, &t->match_label_keys));
  return r.StringList(j, "mismatchLabelKeys", p, &t->mismatch_label_keys);
}

absl::Status DecodePodAffinity(const Reader& r, JsonView j, const std::string& p, PodAffinity* a) {
  KPLACE_RETURN_IF_ERROR(r.Array(j, "requiredDuringSchedulingIgnoredDuringExecution", p,
                                 [&](JsonView e, const std::string& ep) {
                                   a->required.emplace_back();
                                   return DecodePodAffinityTerm(r, e, ep, &a->required.back());
                                 }));
  return r.Array(j, "preferredDuringSchedulingIgnoredDuringExecution", p,
                 [&](JsonView e, const std::string& ep) -> absl::Status {
                   WeightedPodAffinityTerm w;
                   KPLACE_RETURN_IF_ERROR(Weight(r, e, ep, &w.weight));
                   KPLACE_RETURN_IF_ERROR(r.Object(e, "podAffinityTerm", ep, [&](JsonView t, const std::string& tp) {
                     return DecodePodAffinityTerm(r, t, tp, &w.term);
                   }));
                   a->preferred.push_back(std::move(w));
                   return absl::OkStatus();
                 });
}

absl::Status DecodeAffinity(const Reader& r, JsonView j, const std::string& p, Affinity* a) {
  KPLACE_RETURN_IF_ERROR(r.Object(j, "nodeAffinity", p, [&](JsonView na, const std::string& np) -> absl::Status {
    a->node_affinity.emplace();
    NodeAffinity& n = *a->node_affinity;
    KPLACE_RETURN_IF_ERROR(r.Object(na, "requiredDuringSchedulingIgnoredDuringExecution", np,
                                    [&](JsonView req, const std::string& rp) {
                                      n.required.emplace();
                                      return r.Array(req, "nodeSelectorTerms", rp, [&](JsonView t, const std::string& tp) {
                                        n.required->terms.emplace_back();
                                        return DecodeNodeSelectorTerm(r, t, tp, &n.required->terms.back());
                                      });
                                    }));
    n.preferred_set = Reader::Has(na, "preferredDuringSchedulingIgnoredDuringExecution");
    return r.Array(na, "preferredDuringSchedulingIgnoredDuringExecution", np,
                   [&](JsonView e, const std::string& ep) -> absl::Status {
                     PreferredSchedulingTerm term;
                     KPLACE_RETURN_IF_ERROR(Weight(r, e, ep, &term.weight));
                     KPLACE_RETURN_IF_ERROR(r.Object(e, "preference", ep, [&](JsonView t, const std::string& tp) {
                       return DecodeNodeSelectorTerm(r, t, tp, &term.preference);
                     }));
                     n.preferred.push_back(std::move(term));
                     return absl::OkStatus();
                   });
  }));
  KPLACE_RETURN_IF_ERROR(r.Object(j, "podAffinity", p, [&](JsonView pa, const std::string& pp) {
    a->pod_affinity.emplace();
    return DecodePodAffinity(r, pa, pp, &*a->pod_affinity);
  }));
  return r.Object(j, "podAntiAffinity", p, [&](JsonView pa, const std::string& pp) {
    a->pod_anti_affinity.emplace();
    return DecodePodAffinity(r, pa, pp, &*a->pod_anti_affinity);
  });
}

absl::Status DecodeContainer(const Reader& r, JsonView j, const std::string& p, Container* c) {
  if (!j.is_object()) return r.Error(p, StrCat("expected an object, got ", j.type_name()));
  KPLACE_RETURN_IF_ERROR(r.String(j, "name", p, &c->name));
  KPLACE_RETURN_IF_ERROR(r.String(j, "image", p, &c->image));
  if (Reader::Has(j, "restartPolicy")) {
    std::string policy;
    KPLACE_RETURN_IF_ERROR(r.String(j, "restartPolicy", p, &policy));
    c->restart_policy = policy;
  }
  KPLACE_RETURN_IF_ERROR(r.Object(j, "resources", p, [&](JsonView res, const std::string& rp) -> absl::Status {
    KPLACE_RETURN_IF_ERROR(r.Resources(res, "requests", rp, &c->requests));
    return r.Resources(res, "limits", rp, &c->limits);
  }));
  return r.Array(j, "ports", p, [&](JsonView e, const std::string& ep) -> absl::Status {
    ContainerPort port;
    KPLACE_RETURN_IF_ERROR(r.Integer(e, "containerPort", ep, &port.container_port));
    KPLACE_RETURN_IF_ERROR(r.Integer(e, "hostPort", ep, &port.host_port));
    KPLACE_RETURN_IF_ERROR(r.String(e, "protocol", ep, &port.protocol));
    KPLACE_RETURN_IF_ERROR(r.String(e, "hostIP", ep, &port.host_ip));
    if (port.protocol.empty()) port.protocol = "TCP";
    if (port.host_port < 0 || port.host_port > 65535) return r.Error(Reader::Join(ep, "hostPort"), StrCat("out of range: ", port.host_port));
    c->ports.push_back(std::move(port));
    return absl::OkStatus();
  });
}

// Fields of the volume sources whose identity the disk-conflict checks use.
void DecodeVolumeSource(const std::string& source, JsonView s, Volume* v) {
  auto str = [&](const char* key) {
    return s[key].is_string() ? std::string(s[key].str()) : std::string();
  };
  if (s["readOnly"].is_boolean()) v->read_only = s["readOnly"].boolean();
  if (source == "persistentVolumeClaim") v->claim_name = str("claimName");
  if (source == "image") v->image_reference = str("reference");
  if (source == "gcePersistentDisk") v->disk_id = str("pdName");
  if (source == "awsElasticBlockStore") v->disk_id = str("volumeID");
  if (source == "azureDisk") v->disk_id = str("diskName");
  if (source == "rbd") {
    std::string pool = str("pool"), image = str("image");
    v->disk_id = StrCat(pool.empty() ? "rbd" : pool, "/", image);
  }
  if (source == "iscsi") v->disk_id = StrCat(str("iqn"), "/", s.contains("lun") ? s["lun"].dump() : "0");
  // Storage plugins read more of these sources (rbd monitors, iscsi iqn, CSI handles).
  if (source == "iscsi" || source == "rbd" || source == "azureDisk" || source == "cinder" ||
      source == "portworxVolume") {
    v->source_json = s.dump();
  }
}

// spec.preemptionPolicy of a Pod or a PriorityClass's preemptionPolicy: the API server
// admits only these two values.
absl::Status PreemptionPolicy(const Reader& r, JsonView j, std::string_view path, std::string* out) {
  KPLACE_RETURN_IF_ERROR(r.String(j, "preemptionPolicy", path, out));
  if (out->empty() || *out == "PreemptLowerPriority" || *out == "Never") return absl::OkStatus();
  return r.Error(Reader::Join(path, "preemptionPolicy"),
                 StrCat("Unsupported value: \"", *out, "\": supported values: \"Never\", \"PreemptLowerPriority\""));
}

absl::Status DecodePodStatus(const Reader& r, JsonView st, const std::string& p, Pod* pod) {
  KPLACE_RETURN_IF_ERROR(r.String(st, "phase", p, &pod->phase));
  KPLACE_RETURN_IF_ERROR(r.String(st, "nominatedNodeName", p, &pod->nominated_node_name));
  std::string start;
  KPLACE_RETURN_IF_ERROR(Timestamp(r, st, "startTime", p, &start, &pod->start_time_ns));
  KPLACE_RETURN_IF_ERROR(r.Array(st, "resourceClaimStatuses", p, [&](JsonView c, const std::string& cp) -> absl::Status {
    PodResourceClaimStatus status;
    KPLACE_RETURN_IF_ERROR(r.String(c, "name", cp, &status.name));
    if (Reader::Has(c, "resourceClaimName")) {
      std::string name;
      KPLACE_RETURN_IF_ERROR(r.String(c, "resourceClaimName", cp, &name));
      status.resource_claim_name = std::move(name);
    }
    pod->resource_claim_statuses.push_back(std::move(status));
    return absl::OkStatus();
  }));
  return r.Array(st, "conditions", p, [&](JsonView c, const std::string& cp) -> absl::Status {
    PodCondition cond;
    KPLACE_RETURN_IF_ERROR(r.String(c, "type", cp, &cond.type));
    KPLACE_RETURN_IF_ERROR(r.String(c, "status", cp, &cond.status));
    KPLACE_RETURN_IF_ERROR(r.String(c, "reason", cp, &cond.reason));
    KPLACE_RETURN_IF_ERROR(r.String(c, "message", cp, &cond.message));
    pod->conditions.push_back(std::move(cond));
    return absl::OkStatus();
  });
}

// validateContainers and validateInitContainers: at least one container (spec null or
// absent has none), and one name space for both lists, containers first.
absl::Status ValidateContainerNames(const Reader& r, const Pod& pod) {
  if (pod.containers.empty()) return r.Error("spec.containers", "Required value");
  std::set<std::string_view> names;
  for (const auto& [list, path] : {std::pair{&pod.containers, "spec.containers"}, std::pair{&pod.init_containers, "spec.initContainers"}}) {
    for (size_t i = 0; i < list->size(); ++i) {
      const std::string& name = (*list)[i].name;
      if (!names.insert(name).second) return r.Error(StrCat(path, "[", i, "].name"), StrCat("Duplicate value: ", GoQuote(name)));
    }
  }
  return absl::OkStatus();
}

absl::Status DecodePodSpec(const Reader& r, JsonView spec, const std::string& p, Pod* pod) {
  KPLACE_RETURN_IF_ERROR(r.String(spec, "nodeName", p, &pod->node_name));
  KPLACE_RETURN_IF_ERROR(r.String(spec, "schedulerName", p, &pod->scheduler_name));
  if (pod->scheduler_name.empty()) pod->scheduler_name = "default-scheduler";
  if (Reader::Has(spec, "priority")) {
    int32_t prio = 0;
    KPLACE_RETURN_IF_ERROR(r.Integer(spec, "priority", p, &prio));
    pod->priority = prio;
  }
  KPLACE_RETURN_IF_ERROR(r.String(spec, "priorityClassName", p, &pod->priority_class_name));
  KPLACE_RETURN_IF_ERROR(PreemptionPolicy(r, spec, p, &pod->preemption_policy));
  KPLACE_RETURN_IF_ERROR(r.Array(spec, "containers", p, [&](JsonView c, const std::string& cp) {
    pod->containers.emplace_back();
    return DecodeContainer(r, c, cp, &pod->containers.back());
  }));
  KPLACE_RETURN_IF_ERROR(r.Array(spec, "initContainers", p, [&](JsonView c, const std::string& cp) {
    pod->init_containers.emplace_back();
    return DecodeContainer(r, c, cp, &pod->init_containers.back());
  }));
  KPLACE_RETURN_IF_ERROR(r.Resources(spec, "overhead", p, &pod->overhead));
  KPLACE_RETURN_IF_ERROR(r.Object(spec, "resources", p, [&](JsonView res, const std::string& rp) -> absl::Status {
    if (Reader::Has(res, "requests")) {
      pod->pod_requests.emplace();
      KPLACE_RETURN_IF_ERROR(r.Resources(res, "requests", rp, &*pod->pod_requests));
    }
    if (Reader::Has(res, "limits")) {
      pod->pod_limits.emplace();
      KPLACE_RETURN_IF_ERROR(r.Resources(res, "limits", rp, &*pod->pod_limits));
    }
    return absl::OkStatus();
  }));
  KPLACE_RETURN_IF_ERROR(r.StringMap(spec, "nodeSelector", p, &pod->node_selector));
  pod->node_selector_set = Reader::Has(spec, "nodeSelector");
  if (r.strict()) KPLACE_RETURN_IF_ERROR(ValidateLabels(r, Reader::Join(p, "nodeSelector"), pod->node_selector));
  KPLACE_RETURN_IF_ERROR(r.Object(spec, "affinity", p, [&](JsonView a, const std::string& ap) {
    pod->affinity.emplace();
    return DecodeAffinity(r, a, ap, &*pod->affinity);
  }));
  KPLACE_RETURN_IF_ERROR(r.Array(spec, "tolerations", p, [&](JsonView t, const std::string& tp) -> absl::Status {
    Toleration tol;
    KPLACE_RETURN_IF_ERROR(r.String(t, "key", tp, &tol.key));
    KPLACE_RETURN_IF_ERROR(r.String(t, "operator", tp, &tol.op));
    KPLACE_RETURN_IF_ERROR(r.String(t, "value", tp, &tol.value));
    KPLACE_RETURN_IF_ERROR(r.String(t, "effect", tp, &tol.effect));
    // Gt and Lt: TaintTolerationComparisonOperators (the plugin decides what they mean).
    KPLACE_RETURN_IF_ERROR(OneOf(r, Reader::Join(tp, "operator"), tol.op, {"Equal", "Exists", "Gt", "Lt"}, true));
    KPLACE_RETURN_IF_ERROR(OneOf(r, Reader::Join(tp, "effect"), tol.effect, {"NoExecute", "NoSchedule", "PreferNoSchedule"}, true));
    if (r.strict() && tol.op == "Exists" && !tol.value.empty()) {
      return r.Error(Reader::Join(tp, "operator"), "Invalid value: \"Exists\": value must be empty when `operator` is 'Exists'");
    }
    if (r.strict() && tol.key.empty() && tol.op != "Exists") {
      return r.Error(Reader::Join(tp, "operator"),
                     StrCat("Invalid value: \"", tol.op, "\": operator must be Exists when `key` is empty, which means "
                            "\"match all values and all keys\""));
    }
    if (Reader::Has(t, "tolerationSeconds")) {
      int64_t s = 0;
      KPLACE_RETURN_IF_ERROR(r.Integer(t, "tolerationSeconds", tp, &s));
      tol.toleration_seconds = s;
    }
    pod->tolerations.push_back(std::move(tol));
    return absl::OkStatus();
  }));
  KPLACE_RETURN_IF_ERROR(r.Array(spec, "topologySpreadConstraints", p, [&](JsonView c, const std::string& cp) -> absl::Status {
    TopologySpreadConstraint t;
    KPLACE_RETURN_IF_ERROR(r.Integer(c, "maxSkew", cp, &t.max_skew));
    KPLACE_RETURN_IF_ERROR(r.String(c, "topologyKey", cp, &t.topology_key));
    KPLACE_RETURN_IF_ERROR(r.String(c, "whenUnsatisfiable", cp, &t.when_unsatisfiable));
    KPLACE_RETURN_IF_ERROR(OptionalSelector(r, c, "labelSelector", cp, &t.label_selector));
    if (Reader::Has(c, "minDomains")) {
      int32_t m = 0;
      KPLACE_RETURN_IF_ERROR(r.Integer(c, "minDomains", cp, &m));
      t.min_domains = m;
    }
    for (const char* key : {"nodeAffinityPolicy", "nodeTaintsPolicy"}) {
      if (!Reader::Has(c, key)) continue;
      std::string v;
      KPLACE_RETURN_IF_ERROR(r.String(c, key, cp, &v));
      (std::string_view(key) == "nodeAffinityPolicy" ? t.node_affinity_policy : t.node_taints_policy) = v;
    }
    KPLACE_RETURN_IF_ERROR(r.StringList(c, "matchLabelKeys", cp, &t.match_label_keys));
    if (!r.strict()) {
      // upstream's test tables: taken as written
    } else if (t.max_skew <= 0) {
      return  r.Error(Reader::Join(cp, "maxSkew"), StrCat("Invalid value: ", t.max_skew, ": must be greater than zero"));
    } else if (t.topology_key.empty()) {
      return r.Error(Reader::Join(cp, "topologyKey"), "Required value: can not be empty");
    }
    KPLACE_RETURN_IF_ERROR(OneOf(r, Reader::Join(cp, "whenUnsatisfiable"), t.when_unsatisfiable,
                                 {"DoNotSchedule", "ScheduleAnyway"}, false));
    if (t.min_domains && r.strict()) {
      if (*t.min_domains <= 0) {
        return r.Error(Reader::Join(cp, "minDomains"), StrCat("Invalid value: ", *t.min_domains, ": must be greater than zero"));
      }
      if (t.when_unsatisfiable != "DoNotSchedule") {
        return r.Error(Reader::Join(cp, "minDomains"),
                       StrCat("Invalid value: ", *t.min_domains, ": can only use minDomains if whenUnsatisfiable=DoNotSchedule"));
      }
    }
    if (t.node_affinity_policy) KPLACE_RETURN_IF_ERROR(OneOf(r, Reader::Join(cp, "nodeAffinityPolicy"), *t.node_affinity_policy, {"Honor", "Ignore"}, false));
    if (t.node_taints_policy) KPLACE_RETURN_IF_ERROR(OneOf(r, Reader::Join(cp, "nodeTaintsPolicy"), *t.node_taints_policy, {"Honor", "Ignore"}, false));
    pod->topology_spread_constraints.push_back(std::move(t));
    return absl::OkStatus();
  }));
  KPLACE_RETURN_IF_ERROR(r.Array(spec, "schedulingGates", p, [&](JsonView g, const std::string& gp) -> absl::Status {
    std::string name;
    KPLACE_RETURN_IF_ERROR(r.String(g, "name", gp, &name));
    if (name.empty()) return r.Error(Reader::Join(gp, "name"), "Required value");
    pod->scheduling_gates.push_back(std::move(name));
    return absl::OkStatus();
  }));
  KPLACE_RETURN_IF_ERROR(r.Object(spec, "schedulingGroup", p, [&](JsonView g, const std::string& gp) -> absl::Status {
    KPLACE_RETURN_IF_ERROR(r.String(g, "podGroupName", gp, &pod->scheduling_group));
    if (!r.strict()) return absl::OkStatus();
    const std::string at = Reader::Join(gp, "podGroupName");
    if (pod->scheduling_group.empty()) return r.Error(at, "Required value");
    std::vector<std::string> errs = Dns1123SubdomainErrors(pod->scheduling_group);
    if (!errs.empty()) return r.Error(at, StrCat("Invalid value: ", GoQuote(pod->scheduling_group), ": ", errs[0]));
    return absl::OkStatus();
  }));
  KPLACE_RETURN_IF_ERROR(r.Array(spec, "resourceClaims", p, [&](JsonView c, const std::string& cp) -> absl::Status {
    PodResourceClaim claim;
    KPLACE_RETURN_IF_ERROR(r.String(c, "name", cp, &claim.name));
    KPLACE_RETURN_IF_ERROR(r.String(c, "resourceClaimName", cp, &claim.resource_claim_name));
    KPLACE_RETURN_IF_ERROR(r.String(c, "resourceClaimTemplateName", cp, &claim.resource_claim_template_name));
    if (claim.name.empty()) return r.Error(Reader::Join(cp, "name"), "Required value");
    // ValidatePodResourceClaim: one source, exactly (the plugin's ErrAPIUnsupported otherwise).
    const bool by_name = !claim.resource_claim_name.empty(), by_template = !claim.resource_claim_template_name.empty();
    if (r.strict() && by_name == by_template) {
      return r.Error(cp, by_name ? "Invalid value: at most one of `resourceClaimName` or `resourceClaimTemplateName` may be specified"
                                 : "Invalid value: must specify one of: `resourceClaimName`, `resourceClaimTemplateName`");
    }
    pod->resource_claims.push_back(std::move(claim));
    return absl::OkStatus();
  }));
  return r.Array(spec, "volumes", p, [&](JsonView v, const std::string& vp) -> absl::Status {
    if (!v.is_object()) return r.Error(vp, StrCat("expected an object, got ", v.type_name()));
    Volume vol;
    KPLACE_RETURN_IF_ERROR(r.String(v, "name", vp, &vol.name));
    KPLACE_RETURN_IF_ERROR(v.ForEachField([&](std::string_view key, JsonView source) {
      if (key == "name") return absl::OkStatus();
      vol.source = std::string(key);
      DecodeVolumeSource(vol.source, source, &vol);
      return absl::OkStatus();
    }));
    pod->volumes.push_back(std::move(vol));
    return absl::OkStatus();
  });
}

bool IsStorageKind(std::string_view kind) {
  return kind == "PersistentVolume" || kind == "PersistentVolumeClaim" || kind == "StorageClass" ||
         kind == "CSINode" || kind == "CSIDriver" || kind == "CSIStorageCapacity" ||
         kind == "VolumeAttachment";
}

bool IsWorkloadKind(std::string_view kind) {
  return kind == "Service" || kind == "ReplicaSet" || kind == "StatefulSet" ||
         kind == "ReplicationController";
}

// Kinds that `kubectl get` may put beside nodes and pods that scheduling never reads.
bool IsIgnoredKind(std::string_view kind) {
  return kind == "Event" || kind == "ConfigMap" || kind == "Secret" || kind == "Deployment" ||
         kind == "DaemonSet" || kind == "Job" || kind == "CronJob" || kind == "ServiceAccount" ||
         kind == "Endpoints" || kind == "EndpointSlice" || kind == "Lease";
}

}  // namespace

std::string SkippedLine(const SkippedKinds& skipped) {
  std::string out;
  for (const auto& [kind, count] : skipped) out += StrCat(out.empty() ? "" : ", ", count, " ", kind);
  return out.empty() ? out : StrCat("skipped: ", out, " (not used by scheduling)");
}

std::string ObjectKey(const ObjectMeta& meta) {
  if (meta.namespace_.empty()) return meta.name;
  // One allocation: every pod event builds its key.
  std::string out;
  out.reserve(meta.namespace_.size() + 1 + meta.name.size());
  out.append(meta.namespace_).append(1, '/').append(meta.name);
  return out;
}

absl::StatusOr<Node> DecodeNode(JsonView j, std::string_view where, bool strict) {
  Reader r(Prefix(where, "Node", j), strict);
  Node node;
  KPLACE_RETURN_IF_ERROR(DecodeMeta(r, j, &node.meta, /*namespaced=*/false, /*labels=*/true));
  KPLACE_RETURN_IF_ERROR(r.Object(j, "spec", "", [&](JsonView spec, const std::string& p) -> absl::Status {
    KPLACE_RETURN_IF_ERROR(r.Bool(spec, "unschedulable", p, &node.unschedulable));
    return r.Array(spec, "taints", p, [&](JsonView t, const std::string& tp) -> absl::Status {
      Taint taint;
      KPLACE_RETURN_IF_ERROR(r.String(t, "key", tp, &taint.key));
      KPLACE_RETURN_IF_ERROR(r.String(t, "value", tp, &taint.value));
      KPLACE_RETURN_IF_ERROR(r.String(t, "effect", tp, &taint.effect));
      if (r.strict() && taint.key.empty()) return r.Error(Reader::Join(tp, "key"), "Required value");
      KPLACE_RETURN_IF_ERROR(OneOf(r, Reader::Join(tp, "effect"), taint.effect, {"NoExecute", "NoSchedule", "PreferNoSchedule"}, false));
      node.taints.push_back(std::move(taint));
      return absl::OkStatus();
    });
  }));
  KPLACE_RETURN_IF_ERROR(r.Object(j, "status", "", [&](JsonView st, const std::string& p) -> absl::Status {
    KPLACE_RETURN_IF_ERROR(r.Resources(st, "allocatable", p, &node.allocatable));
    KPLACE_RETURN_IF_ERROR(r.Resources(st, "capacity", p, &node.capacity));
    // The API server's defaulting (SetDefaults_NodeStatus): no allocatable (absent or null)
    // means capacity.
    if (!Reader::Has(st, "allocatable")) node.allocatable = node.capacity;
    return r.Array(st, "images", p, [&](JsonView im, const std::string& ip) -> absl::Status {
      ContainerImage image;
      KPLACE_RETURN_IF_ERROR(r.StringList(im, "names", ip, &image.names));
      KPLACE_RETURN_IF_ERROR(r.Integer(im, "sizeBytes", ip, &image.size_bytes));
      node.images.push_back(std::move(image));
      return absl::OkStatus();
    });
  }));
  return node;
}

absl::StatusOr<Pod> DecodePod(JsonView j, std::string_view where, bool strict) {
  Reader r(Prefix(where, "Pod", j), strict);
  Pod pod;
  KPLACE_RETURN_IF_ERROR(DecodeMeta(r, j, &pod.meta, /*namespaced=*/true, /*labels=*/true));
  KPLACE_RETURN_IF_ERROR(r.Object(j, "spec", "", [&](JsonView spec, const std::string& p) {
    return DecodePodSpec(r, spec, p, &pod);
  }));
  if (r.strict()) KPLACE_RETURN_IF_ERROR(ValidateContainerNames(r, pod));
  KPLACE_RETURN_IF_ERROR(r.Object(j, "status", "", [&](JsonView st, const std::string& p) {
    return DecodePodStatus(r, st, p, &pod);
  }));
  return pod;
}

absl::StatusOr<PodDisruptionBudget> DecodePodDisruptionBudget(JsonView j, std::string_view where) {
  Reader r(Prefix(where, "PodDisruptionBudget", j));
  PodDisruptionBudget pdb;
  KPLACE_RETURN_IF_ERROR(DecodeMeta(r, j, &pdb.meta, /*namespaced=*/true));
  KPLACE_RETURN_IF_ERROR(r.Object(j, "spec", "", [&](JsonView spec, const std::string& p) {
    return OptionalSelector(r, spec, "selector", p, &pdb.selector);
  }));
  KPLACE_RETURN_IF_ERROR(r.Object(j, "status", "", [&](JsonView st, const std::string& p) -> absl::Status {
    KPLACE_RETURN_IF_ERROR(r.Integer(st, "disruptionsAllowed", p, &pdb.disruptions_allowed));
    if (pdb.disruptions_allowed < 0) {
      return r.Error(Reader::Join(p, "disruptionsAllowed"), "must be greater than or equal to 0");
    }
    return r.Object(st, "disruptedPods", p, [&](JsonView d, const std::string&) -> absl::Status {
      KPLACE_RETURN_IF_ERROR(d.ForEachField([&](std::string_view key, JsonView) {
        pdb.disrupted_pods.emplace_back(key);
        return absl::OkStatus();
      }));
      std::sort(pdb.disrupted_pods.begin(), pdb.disrupted_pods.end());
      // A key given twice is one map entry, as Go decodes it.
      pdb.disrupted_pods.erase(std::unique(pdb.disrupted_pods.begin(), pdb.disrupted_pods.end()), pdb.disrupted_pods.end());
      return absl::OkStatus();
    });
  }));
  return pdb;
}

absl::StatusOr<PriorityClass> DecodePriorityClass(JsonView j, std::string_view where) {
  Reader r(Prefix(where, "PriorityClass", j));
  PriorityClass pc;
  KPLACE_RETURN_IF_ERROR(DecodeMeta(r, j, &pc.meta, /*namespaced=*/false));
  if (!Reader::Has(j, "value")) return r.Error("value", "Required value");
  KPLACE_RETURN_IF_ERROR(r.Integer(j, "value", "", &pc.value));
  KPLACE_RETURN_IF_ERROR(r.Bool(j, "globalDefault", "", &pc.global_default));
  KPLACE_RETURN_IF_ERROR(PreemptionPolicy(r, j, "", &pc.preemption_policy));
  return pc;
}

// scheduling.k8s.io's workload kinds: v1.37 serves them as v1beta1 only (v1alpha2, 1.36's,
// is gone; v1alpha3 carries CompositePodGroup, not modelled).
absl::Status SchedulingApiVersion(const Reader& r, JsonView j, std::string_view default_version) {
  std::string version(default_version);
  KPLACE_RETURN_IF_ERROR(r.String(j, "apiVersion", "", &version));
  if (version.empty() || version == "scheduling.k8s.io/v1beta1") return absl::OkStatus();
  return r.Error("apiVersion", StrCat("unsupported version ", GoQuote(version),
                                      ": kube-scheduler v1.37 reads this kind as scheduling.k8s.io/v1beta1"));
}

absl::StatusOr<PodGroup> DecodePodGroup(JsonView j, std::string_view where, std::string_view default_version) {
  Reader r(Prefix(where, "PodGroup", j));
  KPLACE_RETURN_IF_ERROR(SchedulingApiVersion(r, j, default_version));
  PodGroup g;
  KPLACE_RETURN_IF_ERROR(DecodeMeta(r, j, &g.meta, /*namespaced=*/true));
  if (!Reader::Has(j, "spec")) return r.Error("spec.schedulingPolicy", "Required value");
  KPLACE_RETURN_IF_ERROR(r.Object(j, "spec", "", [&](JsonView spec, const std::string& p) -> absl::Status {
    if (Reader::Has(spec, "priority")) {
      int32_t priority = 0;
      KPLACE_RETURN_IF_ERROR(r.Integer(spec, "priority", p, &priority));
      g.priority = priority;
    }
    KPLACE_RETURN_IF_ERROR(r.String(spec, "priorityClassName", p, &g.priority_class_name));
    // Fields that change decisions in ways kplace does not model are refused, never ignored.
    for (const auto& [field, what] : {std::pair<const char*, const char*>{"schedulingConstraints",
                                                                          "topology-aware placement (TopologyAwareWorkloadScheduling, alpha)"},
                                      {"disruptionMode", "a group preempted as one unit"},
                                      {"preemptionPolicy", "a group's own preemption policy (PodGroupPreemptionPolicy, alpha)"}}) {
      if (Reader::Has(spec, field)) return r.Error(Reader::Join(p, field), StrCat(what, " is not modelled by kplace"));
    }
    const std::string pp = Reader::Join(p, "schedulingPolicy");
    if (!Reader::Has(spec, "schedulingPolicy")) return r.Error(pp, "Required value");
    return r.Object(spec, "schedulingPolicy", p, [&](JsonView policy, const std::string&) -> absl::Status {
      const bool basic = Reader::Has(policy, "basic"), gang = Reader::Has(policy, "gang");
      if (basic == gang) {
        return r.Error(pp, basic ? "Invalid value: exactly one of `basic`, `gang` may be specified"
                                 : "Required value: exactly one of `basic`, `gang` is required");
      }
      if (basic) return absl::OkStatus();
      return r.Object(policy, "gang", pp, [&](JsonView gj, const std::string& gp) -> absl::Status {
        int32_t min = 0;
        KPLACE_RETURN_IF_ERROR(r.Integer(gj, "minCount", gp, &min));
        if (min < 1) return r.Error(Reader::Join(gp, "minCount"), StrCat("Invalid value: ", min, ": must be greater than zero"));
        g.min_count = min;
        return absl::OkStatus();
      });
    });
  }));
  return g;
}

namespace {

// resource.k8s.io versions whose fields DynamicResources reads are the same (v1beta1 puts
// exactly's deviceClassName on the request itself); `*v1beta1` says which shape to read.
// `default_version`: the version of an object that names none (the items of a typed list).
absl::Status ResourceApiVersion(const Reader& r, JsonView j, std::string_view default_version, bool* v1beta1) {
  std::string version;
  KPLACE_RETURN_IF_ERROR(r.String(j, "apiVersion", "", &version));
  if (!j["apiVersion"].is_string()) version = std::string(default_version);
  *v1beta1 = version == "resource.k8s.io/v1beta1";
  if (version.empty() || version == "resource.k8s.io/v1" || version == "resource.k8s.io/v1beta2" || *v1beta1) {
    return absl::OkStatus();
  }
  return r.Error("apiVersion", StrCat("unsupported version ", GoQuote(version),
                                      ": kplace reads resource.k8s.io/v1, v1beta2 and v1beta1"));
}

// The metadata and the version of a resource.k8s.io object.
absl::Status ResourceMeta(const Reader& r, JsonView j, std::string_view default_version, ObjectMeta* meta, bool namespaced,
                          bool* v1beta1) {
  KPLACE_RETURN_IF_ERROR(DecodeMeta(r, j, meta, namespaced, /*labels=*/true));
  return ResourceApiVersion(r, j, default_version, v1beta1);
}

absl::Status RequiredString(const Reader& r, JsonView j, const char* key, std::string_view path, std::string* out) {
  KPLACE_RETURN_IF_ERROR(r.String(j, key, path, out));
  if (r.strict() && out->empty()) return r.Error(Reader::Join(path, key), "Required value");
  return absl::OkStatus();
}

// spec.devices.requests (of a claim, or of a template's claim spec) at `devices`.
absl::Status DecodeDeviceRequests(const Reader& r, JsonView devices, const std::string& p, bool v1beta1,
                                  std::vector<DeviceRequest>* out) {
  return r.Array(devices, "requests", p, [&](JsonView q, const std::string& qp) -> absl::Status {
    if (!q.is_object()) return r.Error(qp, StrCat("expected an object, got ", q.type_name()));
    DeviceRequest req;
    KPLACE_RETURN_IF_ERROR(RequiredString(r, q, "name", qp, &req.name));
    if (v1beta1) {
      req.exactly = Reader::Has(q, "deviceClassName");
      KPLACE_RETURN_IF_ERROR(r.String(q, "deviceClassName", qp, &req.device_class_name));
    } else {
      KPLACE_RETURN_IF_ERROR(r.Object(q, "exactly", qp, [&](JsonView e, const std::string& ep) {
        req.exactly = true;
        return RequiredString(r, e, "deviceClassName", ep, &req.device_class_name);
      }));
    }
    KPLACE_RETURN_IF_ERROR(r.Array(q, "firstAvailable", qp, [&](JsonView f, const std::string& fp) -> absl::Status {
      if (!f.is_object()) return r.Error(fp, StrCat("expected an object, got ", f.type_name()));
      DeviceSubRequest sub;
      KPLACE_RETURN_IF_ERROR(RequiredString(r, f, "name", fp, &sub.name));
      KPLACE_RETURN_IF_ERROR(RequiredString(r, f, "deviceClassName", fp, &sub.device_class_name));
      req.first_available.push_back(std::move(sub));
      return absl::OkStatus();
    }));
    if (r.strict() && req.exactly == !req.first_available.empty()) {
      return r.Error(qp, v1beta1 ? "Invalid value: exactly one of deviceClassName or firstAvailable must be set"
                                 : "Invalid value: exactly one of exactly or firstAvailable must be set");
    }
    out->push_back(std::move(req));
    return absl::OkStatus();
  });
}

// A NodeSelector object at j[key] (ValidateNodeSelector: at least one term).
absl::Status OptionalNodeSelector(const Reader& r, JsonView j, const char* key, const std::string& p,
                                  std::optional<NodeSelector>* out) {
  return r.Object(j, key, p, [&](JsonView s, const std::string& sp) -> absl::Status {
    NodeSelector selector;
    KPLACE_RETURN_IF_ERROR(r.Array(s, "nodeSelectorTerms", sp, [&](JsonView t, const std::string& tp) {
      selector.terms.emplace_back();
      return DecodeNodeSelectorTerm(r, t, tp, &selector.terms.back());
    }));
    if (r.strict() && selector.terms.empty()) {
      return r.Error(Reader::Join(sp, "nodeSelectorTerms"), "Required value: must have at least one node selector term");
    }
    *out = std::move(selector);
    return absl::OkStatus();
  });
}

}  // namespace

absl::StatusOr<ResourceClaim> DecodeResourceClaim(JsonView j, std::string_view where, std::string_view default_version) {
  Reader r(Prefix(where, "ResourceClaim", j));
  ResourceClaim claim;
  bool v1beta1 = false;
  KPLACE_RETURN_IF_ERROR(ResourceMeta(r, j, default_version, &claim.meta, /*namespaced=*/true, &v1beta1));
  KPLACE_RETURN_IF_ERROR(r.Object(j, "spec", "", [&](JsonView spec, const std::string& p) {
    return r.Object(spec, "devices", p, [&](JsonView d, const std::string& dp) {
      return DecodeDeviceRequests(r, d, dp, v1beta1, &claim.requests);
    });
  }));
  KPLACE_RETURN_IF_ERROR(r.Object(j, "status", "", [&](JsonView st, const std::string& p) -> absl::Status {
    KPLACE_RETURN_IF_ERROR(r.Object(st, "allocation", p, [&](JsonView a, const std::string& ap) {
      claim.allocated = true;
      return OptionalNodeSelector(r, a, "nodeSelector", ap, &claim.allocation_node_selector);
    }));
    KPLACE_RETURN_IF_ERROR(r.Array(st, "reservedFor", p, [&](JsonView c, const std::string& cp) -> absl::Status {
      if (!c.is_object()) return r.Error(cp, StrCat("expected an object, got ", c.type_name()));
      ResourceClaimConsumerReference ref;
      KPLACE_RETURN_IF_ERROR(r.String(c, "apiGroup", cp, &ref.api_group));
      KPLACE_RETURN_IF_ERROR(RequiredString(r, c, "resource", cp, &ref.resource));
      KPLACE_RETURN_IF_ERROR(RequiredString(r, c, "name", cp, &ref.name));
      KPLACE_RETURN_IF_ERROR(RequiredString(r, c, "uid", cp, &ref.uid));
      claim.reserved_for.push_back(std::move(ref));
      return absl::OkStatus();
    }));
    if (claim.reserved_for.size() > kResourceClaimReservedForMaxSize) {
      return r.Error(Reader::Join(p, "reservedFor"), StrCat("Too many: ", claim.reserved_for.size(), ": must have at most ",
                                                            kResourceClaimReservedForMaxSize, " items"));
    }
    return absl::OkStatus();
  }));
  return claim;
}

absl::StatusOr<ResourceClaimTemplate> DecodeResourceClaimTemplate(JsonView j, std::string_view where, std::string_view default_version) {
  Reader r(Prefix(where, "ResourceClaimTemplate", j));
  ResourceClaimTemplate t;
  bool v1beta1 = false;
  KPLACE_RETURN_IF_ERROR(ResourceMeta(r, j, default_version, &t.meta, /*namespaced=*/true, &v1beta1));
  KPLACE_RETURN_IF_ERROR(r.Object(j, "spec", "", [&](JsonView spec, const std::string& p) {
    return r.Object(spec, "spec", p, [&](JsonView claim, const std::string& cp) {
      return r.Object(claim, "devices", cp, [&](JsonView d, const std::string& dp) {
        return DecodeDeviceRequests(r, d, dp, v1beta1, &t.requests);
      });
    });
  }));
  return t;
}

absl::StatusOr<DeviceClass> DecodeDeviceClass(JsonView j, std::string_view where, std::string_view default_version) {
  Reader r(Prefix(where, "DeviceClass", j));
  DeviceClass c;
  bool v1beta1 = false;
  KPLACE_RETURN_IF_ERROR(ResourceMeta(r, j, default_version, &c.meta, /*namespaced=*/false, &v1beta1));
  KPLACE_RETURN_IF_ERROR(r.Object(j, "spec", "", [&](JsonView spec, const std::string& p) {
    return r.String(spec, "extendedResourceName", p, &c.extended_resource_name);
  }));
  return c;
}

absl::StatusOr<ResourceSlice> DecodeResourceSlice(JsonView j, std::string_view where, std::string_view default_version) {
  Reader r(Prefix(where, "ResourceSlice", j));
  ResourceSlice slice;
  bool v1beta1 = false;
  KPLACE_RETURN_IF_ERROR(ResourceMeta(r, j, default_version, &slice.meta, /*namespaced=*/false, &v1beta1));
  KPLACE_RETURN_IF_ERROR(r.Object(j, "spec", "", [&](JsonView spec, const std::string& p) -> absl::Status {
    KPLACE_RETURN_IF_ERROR(RequiredString(r, spec, "driver", p, &slice.driver));
    KPLACE_RETURN_IF_ERROR(r.Object(spec, "pool", p, [&](JsonView pool, const std::string& pp) {
      return r.String(pool, "name", pp, &slice.pool);
    }));
    KPLACE_RETURN_IF_ERROR(r.String(spec, "nodeName", p, &slice.node_name));
    KPLACE_RETURN_IF_ERROR(r.Bool(spec, "allNodes", p, &slice.all_nodes));
    KPLACE_RETURN_IF_ERROR(OptionalNodeSelector(r, spec, "nodeSelector", p, &slice.node_selector));
    return r.Array(spec, "devices", p, [&](JsonView, const std::string&) {
      ++slice.devices;
      return absl::OkStatus();
    });
  }));
  return slice;
}

const PriorityClass* GlobalDefaultClass(const std::vector<PriorityClass>& classes) {
  const PriorityClass* out = nullptr;
  for (const PriorityClass& pc : classes) {
    // Upstream admission takes the default with the lowest value when several claim it.
    if (pc.global_default && (!out || pc.value < out->value)) out = &pc;
  }
  return out;
}

absl::Status ResolvePriorities(const ObjectSet& cluster, std::vector<Pod>* pods, std::string_view where) {
  const PriorityClass* global_default = GlobalDefaultClass(cluster.priority_classes);
  std::map<std::string, const PriorityClass*> classes;
  for (const PriorityClass& pc : cluster.priority_classes) classes[pc.meta.name] = &pc;
  for (Pod& pod : *pods) {
    const PriorityClass* pc = nullptr;
    if (!pod.priority_class_name.empty()) {
      auto it = classes.find(pod.priority_class_name);
      if (it != classes.end()) {
        pc = it->second;
      } else if (pod.priority_class_name == "system-node-critical" ||
                 pod.priority_class_name == "system-cluster-critical") {
        // Built into the API server; not listed by every dump.
      } else if (!pod.priority) {
        return absl::InvalidArgumentError(StrCat(where, ": Pod ", ObjectKey(pod.meta),
                                                 ": spec.priorityClassName: no PriorityClass with name ",
                                                 pod.priority_class_name, " was found"));
      }
    } else {
      pc = global_default;
    }
    if (!pod.priority) {
      if (pc) {
        pod.priority = pc->value;
      } else if (pod.priority_class_name == "system-node-critical") {
        pod.priority = 2000001000;
      } else if (pod.priority_class_name == "system-cluster-critical") {
        pod.priority = 2000000000;
      }
    }
    if (pod.preemption_policy.empty() && pc) pod.preemption_policy = pc->preemption_policy;
  }
  return absl::OkStatus();
}

absl::StatusOr<Namespace> DecodeNamespace(JsonView j, std::string_view where) {
  Reader r(Prefix(where, "Namespace", j));
  Namespace ns;
  KPLACE_RETURN_IF_ERROR(DecodeMeta(r, j, &ns.meta, /*namespaced=*/false));
  return ns;
}

absl::StatusOr<Workload> DecodeWorkload(JsonView j, std::string_view kind, std::string_view where) {
  Reader r(Prefix(where, kind, j));
  Workload w;
  w.kind = std::string(kind);
  KPLACE_RETURN_IF_ERROR(DecodeMeta(r, j, &w.meta, /*namespaced=*/true));
  KPLACE_RETURN_IF_ERROR(r.Object(j, "spec", "", [&](JsonView spec, const std::string& p) -> absl::Status {
    if (kind == "Service" || kind == "ReplicationController") {
      if (!Reader::Has(spec, "selector")) return absl::OkStatus();
      LabelSelector s;
      KPLACE_RETURN_IF_ERROR(r.StringMap(spec, "selector", p, &s.match_labels));
      w.selector = std::move(s);
      return absl::OkStatus();
    }
    return OptionalSelector(r, spec, "selector", p, &w.selector);
  }));
  return w;
}

absl::StatusOr<GenericObject> DecodeGeneric(JsonView j, std::string_view kind, std::string_view where) {
  Reader r(Prefix(where, kind, j));
  GenericObject o;
  o.kind = std::string(kind);
  bool namespaced = kind == "PersistentVolumeClaim" || kind == "CSIStorageCapacity";
  KPLACE_RETURN_IF_ERROR(DecodeMeta(r, j, &o.meta, namespaced));
  o.json = j.dump();
  return o;
}

std::optional<std::string> ListItemKind(std::string_view kind) {
  if (kind == "List") return std::string();
  if (kind.size() > 4 && kind.substr(kind.size() - 4) == "List") return std::string(kind.substr(0, kind.size() - 4));
  return std::nullopt;
}

void ImplyListItemType(std::string_view list_kind, std::string_view list_api_version, nlohmann::json* item) {
  const std::optional<std::string> kind = ListItemKind(list_kind);
  if (!kind || kind->empty() || !item->is_object()) return;
  if (!item->contains("kind") || !(*item)["kind"].is_string()) (*item)["kind"] = *kind;
  if ((*item)["kind"] != *kind) return;  // another kind: the list's version is not its
  if ((!item->contains("apiVersion") || !(*item)["apiVersion"].is_string()) && !list_api_version.empty()) {
    (*item)["apiVersion"] = list_api_version;
  }
}

namespace {
absl::Status DecodeOne(JsonView doc, const std::string& kind, std::string_view default_version, std::string_view file,
                       ObjectSet* out, SkippedKinds* skipped, DecodeNotes* notes);
absl::StatusOr<JsonView> View(const json& j);
}  // namespace

absl::Status DecodeDocument(JsonView doc, std::string_view file, ObjectSet* out, SkippedKinds* skipped,
                            std::vector<std::string>* invalid, std::string_view default_kind,
                            std::string_view default_version, DecodeNotes* notes) {
  if (doc.is_null()) return absl::OkStatus();  // an empty YAML document
  if (!doc.is_object()) {
    return absl::InvalidArgumentError(StrCat(file, ": expected a Kubernetes object, got ", doc.type_name()));
  }
  std::string kind = doc["kind"].is_string() ? std::string(doc["kind"].str()) : std::string(default_kind);
  if (std::optional<std::string> item_kind = ListItemKind(kind)) {
    if (!doc["items"].is_array()) {
      return absl::InvalidArgumentError(StrCat(file, ": ", kind, ": items: expected a list"));
    }
    // Items that name no kind or apiVersion are of the list's (ImplyListItemType).
    const std::string version = doc["apiVersion"].is_string() ? std::string(doc["apiVersion"].str()) : std::string(default_version);
    return doc["items"].ForEachElement([&](size_t, JsonView item) {
      return DecodeDocument(item, file, out, skipped, invalid, *item_kind, version, notes);
    });
  }
  // The list's version is its items' only when they are of its kind (ImplyListItemType).
  absl::Status s = DecodeOne(doc, kind, kind == default_kind ? default_version : "", file, out, skipped, notes);
  if (!s.ok() && invalid && absl::IsInvalidArgument(s)) {
    invalid->push_back(std::string(s.message()));
    return absl::OkStatus();
  }
  return s;
}

namespace {
// One object (not a List) of `kind`.
absl::Status DecodeOne(JsonView doc, const std::string& kind, std::string_view default_version, std::string_view file,
                       ObjectSet* out, SkippedKinds* skipped, DecodeNotes* notes) {
  if (kind == "Node") {
    KPLACE_ASSIGN_OR_RETURN(Node n, DecodeNode(doc, file));
    const JsonView status = doc["status"];
    if (notes && !Reader::Has(status, "allocatable") && Reader::Has(status, "capacity")) {
      notes->allocatable_from_capacity.push_back(n.meta.name);
    }
    out->nodes.push_back(std::move(n));
  } else if (kind == "Pod") {
    KPLACE_ASSIGN_OR_RETURN(Pod p, DecodePod(doc, file));
    out->pods.push_back(std::move(p));
  } else if (kind == "Namespace") {
    KPLACE_ASSIGN_OR_RETURN(Namespace n, DecodeNamespace(doc, file));
    out->namespaces.push_back(std::move(n));
  } else if (IsWorkloadKind(kind)) {
    KPLACE_ASSIGN_OR_RETURN(Workload w, DecodeWorkload(doc, kind, file));
    out->workloads.push_back(std::move(w));
  } else if (IsStorageKind(kind)) {
    KPLACE_ASSIGN_OR_RETURN(GenericObject o, DecodeGeneric(doc, kind, file));
    out->storage.push_back(std::move(o));
  } else if (kind == "PodDisruptionBudget") {
    KPLACE_ASSIGN_OR_RETURN(PodDisruptionBudget pdb, DecodePodDisruptionBudget(doc, file));
    out->pdbs.push_back(std::move(pdb));
  } else if (kind == "PriorityClass") {
    KPLACE_ASSIGN_OR_RETURN(PriorityClass pc, DecodePriorityClass(doc, file));
    out->priority_classes.push_back(std::move(pc));
  } else if (kind == "PodGroup") {
    KPLACE_ASSIGN_OR_RETURN(PodGroup g, DecodePodGroup(doc, file, default_version));
    out->pod_groups.push_back(std::move(g));
  } else if (kind == "Workload") {
    // scheduling.k8s.io's Workload only templates PodGroups: no decision reads it.
    KPLACE_RETURN_IF_ERROR(SchedulingApiVersion(Reader(Prefix(file, "Workload", doc)), doc, default_version));
  } else if (kind == "ResourceClaim") {
    KPLACE_ASSIGN_OR_RETURN(ResourceClaim c, DecodeResourceClaim(doc, file, default_version));
    out->resource_claims.push_back(std::move(c));
  } else if (kind == "ResourceClaimTemplate") {
    KPLACE_ASSIGN_OR_RETURN(ResourceClaimTemplate t, DecodeResourceClaimTemplate(doc, file, default_version));
    out->resource_claim_templates.push_back(std::move(t));
  } else if (kind == "DeviceClass") {
    KPLACE_ASSIGN_OR_RETURN(DeviceClass c, DecodeDeviceClass(doc, file, default_version));
    out->device_classes.push_back(std::move(c));
  } else if (kind == "ResourceSlice") {
    KPLACE_ASSIGN_OR_RETURN(ResourceSlice sl, DecodeResourceSlice(doc, file, default_version));
    out->resource_slices.push_back(std::move(sl));
  } else if (kind == "KubeSchedulerConfiguration") {
    GenericObject o;
    o.kind = kind;
    o.json = doc.dump();
    out->configs.push_back(std::move(o));
  } else if (IsIgnoredKind(kind)) {
    if (skipped) ++(*skipped)[kind];
  } else if (kind.empty()) {
    return absl::InvalidArgumentError(StrCat(file, ": ", KindAndKey("object", doc), ": kind: missing"));
  } else if (skipped) {
    ++(*skipped)[kind];  // a dump's HorizontalPodAutoscalers, CRDs, custom resources, ...
  } else {
    return absl::InvalidArgumentError(
        StrCat(file, ": ", KindAndKey(kind, doc), ": kind: unsupported kind \"", kind, "\""));
  }
  return absl::OkStatus();
}
}  // namespace

namespace {
// The path to the first string (key or value) under `e` that holds U+FFFD, "" when none.
bool FindReplacement(simdjson::dom::element e, const std::string& path, std::string* out) {
  static constexpr std::string_view kReplacement = "\xEF\xBF\xBD";
  if (e.is_string()) {
    if (e.get_string().value_unsafe().find(kReplacement) == std::string_view::npos) return false;
    *out = path;
    return true;
  }
  if (e.is_array()) {
    size_t i = 0;
    const simdjson::dom::array array = e.get_array().value_unsafe();  // a copy: the result is a temporary
    for (simdjson::dom::element v : array) {
      if (FindReplacement(v, StrCat(path, "[", i++, "]"), out)) return true;
    }
  } else if (e.is_object()) {
    const simdjson::dom::object object = e.get_object().value_unsafe();
    for (auto field : object) {
      const std::string p = Reader::Join(path, field.key);
      if (field.key.find(kReplacement) != std::string_view::npos) {
        *out = p;
        return true;
      }
      if (FindReplacement(field.value, p, out)) return true;
    }
  }
  return false;
}

// Invalid UTF-8 in `part` (an item of `text`, or all of it), named by file, line and column,
// and, when the part parses with the bad bytes replaced, by object and field.
absl::Status Utf8Error(std::string_view text, std::string_view part, std::string_view file) {
  const size_t at = InvalidUtf8At(part);
  if (at == std::string_view::npos) return absl::InvalidArgumentError(StrCat(file, ": invalid JSON: invalid UTF-8"));
  const std::string where = InvalidUtf8Where(text, static_cast<size_t>(part.data() - text.data()) + at);
  std::string fixed;
  fixed.reserve(part.size() + 16);
  for (std::string_view rest = part;;) {
    const size_t bad = InvalidUtf8At(rest);
    if (bad == std::string_view::npos) {
      fixed.append(rest);
      break;
    }
    fixed.append(rest.substr(0, bad)).append("\xEF\xBF\xBD");
    rest.remove_prefix(bad + 1);
  }
  simdjson::dom::parser parser;
  simdjson::dom::element e;
  std::string field;
  if (parser.parse(fixed).get(e) || !e.is_object()) return absl::InvalidArgumentError(StrCat(file, ": ", where));
  const JsonView v(e);
  const std::string kind = v["kind"].is_string() ? std::string(v["kind"].str()) : "object";
  if (!FindReplacement(e, "", &field)) return absl::InvalidArgumentError(StrCat(file, ": ", KindAndKey(kind, v), ": ", where));
  return absl::InvalidArgumentError(StrCat(file, ": ", KindAndKey(kind, v), ": ", field, ": ", where));
}

// Items of a List split by SplitTopLevel, each parsed alone.
absl::Status DecodeItems(std::string_view text, const std::string_view* items, size_t count,
                         const std::string& list_kind, const std::string& list_version, bool padded, std::string_view file,
                         ObjectSet* out, SkippedKinds* skipped, std::vector<std::string>* invalid, DecodeNotes* notes) {
  const std::string item_kind = ListItemKind(list_kind).value_or("");
  simdjson::dom::parser parser;
  size_t largest = 0;
  for (size_t i = 0; i < count; ++i) largest = std::max(largest, items[i].size());
  if (parser.allocate(largest, kMaxNestingDepth)) return absl::ResourceExhaustedError(StrCat(file, ": out of memory"));
  for (size_t i = 0; i < count; ++i) {
    simdjson::dom::element e;
    const simdjson::error_code err = parser.parse(items[i].data(), items[i].size(), !padded).get(e);
    if (!err) {
      KPLACE_RETURN_IF_ERROR(DecodeDocument(JsonView(e), file, out, skipped, invalid, item_kind, list_version, notes));
      continue;
    }
    // Numbers past uint64 go through nlohmann, which reads them as doubles (the decoders then
    // name the field); for anything else the whole text's parser names the line.
    json j = err == simdjson::NUMBER_OUT_OF_RANGE || err == simdjson::NUMBER_ERROR
                 ? json::parse(items[i], nullptr, /*allow_exceptions=*/false)
                 : json(json::value_t::discarded);
    if (err == simdjson::UTF8_ERROR) return Utf8Error(text, items[i], file);
    if (j.is_discarded()) {
      absl::StatusOr<std::vector<json>> whole = ParseDocuments(text, file);
      return whole.ok() ? absl::InvalidArgumentError(StrCat(file, ": invalid JSON: ", simdjson::error_message(err)))
                        : whole.status();
    }
    ImplyListItemType(list_kind, list_version, &j);
    KPLACE_ASSIGN_OR_RETURN(const JsonView v, View(j));
    KPLACE_RETURN_IF_ERROR(DecodeDocument(v, file, out, skipped, invalid, "", "", notes));
  }
  return absl::OkStatus();
}

// A List split by SplitTopLevel. nullopt: a field other than the items does not parse, or
// this is not a List; nothing was decoded, the caller parses the whole text.
std::optional<absl::Status> DecodeSplitList(std::string_view text, const TopLevelSpans& spans, bool padded,
                                            std::string_view file, ObjectSet* out, SkippedKinds* skipped,
                                            std::vector<std::string>* invalid, DecodeNotes* notes) {
  std::string kind, version;
  {
    simdjson::dom::parser parser;
    for (const auto& [key, value] : spans.fields) {
      simdjson::dom::element e;
      if (parser.parse(value.data(), value.size(), !padded).get(e)) return std::nullopt;
      // A key given twice: the last one counts.
      if (key == "kind") kind = e.is_string() ? std::string(e.get_string().value_unsafe()) : "";
      if (key == "apiVersion") version = e.is_string() ? std::string(e.get_string().value_unsafe()) : "";
    }
  }
  if (!ListItemKind(kind)) return std::nullopt;
  // Room for every item as a pod and as a node: pages never written are never resident, and
  // no vector of 100,000 pods is copied while it grows. (Decoding parts of the list on two
  // threads was measured no faster on this 2-core machine and took 30% more memory.)
  out->pods.reserve(out->pods.size() + spans.items.size());
  out->nodes.reserve(out->nodes.size() + spans.items.size());
  return DecodeItems(text, spans.items.data(), spans.items.size(), kind, version, padded, file, out, skipped, invalid, notes);
}

// `padded`: `text` may be read simdjson::SIMDJSON_PADDING bytes past its end (saves a copy).
absl::Status DecodeText(std::string_view text, bool padded, std::string_view file, ObjectSet* out,
                        SkippedKinds* skipped, std::vector<std::string>* invalid, DecodeNotes* notes) {
  const size_t first = text.find_first_not_of(" \t\r\n");
  if (first == std::string_view::npos) {
    return absl::InvalidArgumentError(StrCat(file, ": empty file: no Kubernetes objects"));
  }
  if (text[first] == '{' || text[first] == '[') {
    // JSON goes straight to simdjson. What it refuses takes the slow path below, whose parser
    // names the line (simdjson does not) and reads numbers past uint64 as doubles, as the
    // decoders always saw them.
    TopLevelSpans spans;
    if (SplitTopLevel(text, &spans) && spans.has_items) {
      std::optional<absl::Status> s = DecodeSplitList(text, spans, padded, file, out, skipped, invalid, notes);
      if (s) return *s;
    }
    simdjson::dom::parser parser;
    simdjson::dom::element root;
    if (!parser.allocate(text.size(), kMaxNestingDepth)) {
      const simdjson::error_code err = parser.parse(text.data(), text.size(), !padded).get(root);
      if (!err) return DecodeDocument(JsonView(root), file, out, skipped, invalid, "", "", notes);
      if (err == simdjson::UTF8_ERROR) return Utf8Error(text, text, file);
    }
  }
  KPLACE_ASSIGN_OR_RETURN(std::vector<json> docs, ParseDocuments(text, file));
  // Empty YAML documents between others are nothing; a file of nothing else (`null`, `---`)
  // is no object, which kubectl and the API server refuse.
  if (std::all_of(docs.begin(), docs.end(), [](const json& d) { return d.is_null(); })) {
    return absl::InvalidArgumentError(StrCat(file, ": expected a Kubernetes object, got null"));
  }
  for (const json& doc : docs) {
    KPLACE_ASSIGN_OR_RETURN(const JsonView v, View(doc));
    KPLACE_RETURN_IF_ERROR(DecodeDocument(v, file, out, skipped, invalid, "", "", notes));
  }
  return absl::OkStatus();
}
}  // namespace

absl::Status DecodeText(std::string_view text, std::string_view file, ObjectSet* out, SkippedKinds* skipped,
                        std::vector<std::string>* invalid) {
  return DecodeText(text, /*padded=*/false, file, out, skipped, invalid, nullptr);
}

absl::Status DecodeText(std::string_view text, std::string_view file, ObjectSet* out, SkippedKinds* skipped,
                        std::vector<std::string>* invalid, DecodeNotes* notes) {
  return DecodeText(text, /*padded=*/false, file, out, skipped, invalid, notes);
}

absl::Status DecodeFile(const std::string& path, ObjectSet* out, SkippedKinds* skipped, std::vector<std::string>* invalid,
                        DecodeNotes* notes) {
  static_assert(simdjson::SIMDJSON_PADDING <= kInputPadding, "DecodeText reads the padding ReadInputFile leaves");
  KPLACE_ASSIGN_OR_RETURN(const std::string text, ReadInputFile(path));
  return DecodeText(text, /*padded=*/true, path == "-" ? "stdin" : path, out, skipped, invalid, notes);
}

absl::Status DecodeFile(const std::string& path, ObjectSet* out, SkippedKinds* skipped,
                        std::vector<std::string>* invalid) {
  return DecodeFile(path, out, skipped, invalid, nullptr);
}

// nlohmann values (conformance tables, bench templates, tests) reach the decoders as text
// parsed by simdjson; the parser is reused per thread, its views live until its next parse.
namespace {
absl::StatusOr<JsonView> View(const json& j) {
  thread_local simdjson::dom::parser parser;
  const std::string text = j.dump(-1, ' ', false, json::error_handler_t::replace);
  simdjson::dom::element e;
  if (auto err = parser.parse(text).get(e)) {
    return absl::InternalError(StrCat("re-reading a JSON value: ", simdjson::error_message(err)));
  }
  return JsonView(e);
}
}  // namespace

absl::Status DecodeDocument(const json& doc, std::string_view file, ObjectSet* out, SkippedKinds* skipped,
                            std::vector<std::string>* invalid) {
  KPLACE_ASSIGN_OR_RETURN(JsonView v, View(doc));
  return DecodeDocument(v, file, out, skipped, invalid);
}
absl::StatusOr<Node> DecodeNode(const json& j, std::string_view where, bool strict) {
  KPLACE_ASSIGN_OR_RETURN(JsonView v, View(j));
  return DecodeNode(v, where, strict);
}
absl::StatusOr<Pod> DecodePod(const json& j, std::string_view where, bool strict) {
  KPLACE_ASSIGN_OR_RETURN(JsonView v, View(j));
  return DecodePod(v, where, strict);
}
absl::StatusOr<Workload> DecodeWorkload(const json& j, std::string_view kind, std::string_view where) {
  KPLACE_ASSIGN_OR_RETURN(JsonView v, View(j));
  return DecodeWorkload(v, kind, where);
}
absl::StatusOr<Namespace> DecodeNamespace(const json& j, std::string_view where) {
  KPLACE_ASSIGN_OR_RETURN(JsonView v, View(j));
  return DecodeNamespace(v, where);
}
absl::StatusOr<GenericObject> DecodeGeneric(const json& j, std::string_view kind, std::string_view where) {
  KPLACE_ASSIGN_OR_RETURN(JsonView v, View(j));
  return DecodeGeneric(v, kind, where);
}
absl::StatusOr<PodDisruptionBudget> DecodePodDisruptionBudget(const json& j, std::string_view where) {
  KPLACE_ASSIGN_OR_RETURN(JsonView v, View(j));
  return DecodePodDisruptionBudget(v, where);
}
absl::StatusOr<PodGroup> DecodePodGroup(const json& j, std::string_view where) {
  KPLACE_ASSIGN_OR_RETURN(JsonView v, View(j));
  return DecodePodGroup(v, where, "");
}
absl::StatusOr<PriorityClass> DecodePriorityClass(const json& j, std::string_view where) {
  KPLACE_ASSIGN_OR_RETURN(JsonView v, View(j));
  return DecodePriorityClass(v, where);
}
absl::StatusOr<ResourceClaim> DecodeResourceClaim(const json& j, std::string_view where) {
  KPLACE_ASSIGN_OR_RETURN(JsonView v, View(j));
  return DecodeResourceClaim(v, where);
}

}  // namespace kplace
