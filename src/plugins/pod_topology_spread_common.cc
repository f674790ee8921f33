#include "kplace/plugins/pod_topology_spread_common.h"

#include <algorithm>
#include <climits>

#include "kplace/common/strings.h"
#include "kplace/model/validation.h"

namespace kplace::spread {
namespace {

// Length-prefixed, so that no two different inputs give the same key.
void AppendField(std::string& out, const std::string& s) {
  out += std::to_string(s.size());
  out += ':';
  out += s;
}

bool IsDigit(char c) { return c >= '0' && c <= '9'; }

// Go's strconv.ParseInt(s, 10, 64): optional sign, at least one digit, in range.
bool ParseGoInt(const std::string& s, int64_t* out) {
  size_t i = 0;
  bool negative = false;
  if (i < s.size() && (s[i] == '+' || s[i] == '-')) negative = s[i++] == '-';
  if (i == s.size()) return false;
  // Accumulate as a negative number so that INT64_MIN fits.
  int64_t v = 0;
  for (; i < s.size(); ++i) {
    if (!IsDigit(s[i])) return false;
    int d = s[i] - '0';
    if (v < (INT64_MIN + d) / 10) return false;
    v = v * 10 - d;
  }
  if (!negative) {
    if (v == INT64_MIN) return false;
    v = -v;
  }
  *out = v;
  return true;
}

// The canonical decimal integers the comparison tolerations accept (small-plugins §1.3).
bool ParseCanonicalInt(const std::string& s, int64_t* out) {
  if (s.empty()) return false;
  size_t i = s[0] == '-' ? 1 : 0;
  if (i == s.size()) return false;
  if (s.substr(i) != "0" && !(s[i] >= '1' && s[i] <= '9')) return false;
  if (s == "-0") return false;
  return ParseGoInt(s, out);
}

std::string InvalidValue(const std::string& field, const std::string& value, const std::string& detail) {
  return StrCat(field, ": Invalid value: \"", value, "\": ", detail);
}

// labels.NewRequirement's checks for the pod-selector operators.
bool CheckRequirement(const SelectorRequirement& r, std::string* error) {
  if (!IsQualifiedName(r.key)) {
    *error = InvalidValue("key", r.key, "name part must consist of alphanumeric characters, '-', '_' or '.'");
    return false;
  }
  switch (r.op) {
    case SelectorOp::kIn:
    case SelectorOp::kNotIn:
      if (r.values.empty()) {
        *error = "values: Invalid value: []: for 'in', 'notin' operators, values set can't be empty";
        return false;
      }
      break;
    case SelectorOp::kExists:
    case SelectorOp::kDoesNotExist:
      if (!r.values.empty()) {
        *error = "values: Invalid value: values set must be empty for exists and does not exist";
        return false;
      }
      break;
  }
  for (const std::string& v : r.values) {
    if (!IsValidLabelValue(v)) {
      *error = InvalidValue("values[0]", v, "a valid label must be an empty string or consist of alphanumeric characters, "
                                            "'-', '_' or '.', and must start and end with an alphanumeric character");
      return false;
    }
  }
  return true;
}

bool MatchesRequirement(const SelectorRequirement& r, const Labels& labels) {
  auto it = labels.find(r.key);
  bool has = it != labels.end();
  switch (r.op) {
    case SelectorOp::kIn:
      return has && std::find(r.values.begin(), r.values.end(), it->second) != r.values.end();
    case SelectorOp::kNotIn:
      return !has || std::find(r.values.begin(), r.values.end(), it->second) == r.values.end();
    case SelectorOp::kExists:
      return has;
    case SelectorOp::kDoesNotExist:
      return !has;
  }
  return false;
}

std::string RequirementKey(const SelectorRequirement& r) {
  std::string out;
  AppendField(out, r.key);
  out += static_cast<char>('0' + static_cast<int>(r.op));
  std::vector<std::string> values = r.values;
  std::sort(values.begin(), values.end());
  values.erase(std::unique(values.begin(), values.end()), values.end());
  for (const std::string& v : values) AppendField(out, v);
  return out;
}

// --- node selector terms (small-plugins.md §1.4-§1.6) ---------------------------------

bool NodeRequirementParses(const NodeSelectorRequirement& r) {
  if (!IsQualifiedName(r.key)) return false;
  if (r.op == "In" || r.op == "NotIn") {
    if (r.values.empty()) return false;
  } else if (r.op == "Exists" || r.op == "DoesNotExist") {
    if (!r.values.empty()) return false;
  } else if (r.op == "Gt" || r.op == "Lt") {
    int64_t v;
    if (r.values.size() != 1 || !ParseGoInt(r.values[0], &v)) return false;
  } else {
    return false;
  }
  for (const std::string& v : r.values) {
    if (!IsValidLabelValue(v)) return false;
  }
  return true;
}

bool FieldRequirementParses(const NodeSelectorRequirement& r) {
  return (r.op == "In" || r.op == "NotIn") && r.values.size() == 1;
}

bool TermParses(const NodeSelectorTerm& t) {
  for (const auto& r : t.match_expressions) {
    if (!NodeRequirementParses(r)) return false;
  }
  for (const auto& r : t.match_fields) {
    if (!FieldRequirementParses(r)) return false;
  }
  return true;
}

bool NodeRequirementMatches(const NodeSelectorRequirement& r, const Labels& labels) {
  auto it = labels.find(r.key);
  bool has = it != labels.end();
  if (r.op == "In") return has && std::find(r.values.begin(), r.values.end(), it->second) != r.values.end();
  if (r.op == "NotIn") return !has || std::find(r.values.begin(), r.values.end(), it->second) == r.values.end();
  if (r.op == "Exists") return has;
  if (r.op == "DoesNotExist") return !has;
  if (!has) return false;
  int64_t have, want;
  if (!ParseGoInt(it->second, &have) || !ParseGoInt(r.values[0], &want)) return false;
  return r.op == "Gt" ? have > want : have < want;
}

bool TermMatches(const NodeSelectorTerm& t, const Node& node) {
  for (const auto& r : t.match_expressions) {
    if (!NodeRequirementMatches(r, node.meta.labels)) return false;
  }
  // The node's field set is {metadata.name} only when the name is non-empty; with an
  // empty name the field requirements are not checked.
  if (!node.meta.name.empty()) {
    for (const auto& r : t.match_fields) {
      std::string field = r.key == "metadata.name" ? node.meta.name : "";
      bool equal = field == r.values[0];
      if ((r.op == "In") != equal) return false;
    }
  }
  return true;
}

void AppendNodeRequirements(std::string& out, const std::vector<NodeSelectorRequirement>& reqs) {
  out += '[';
  for (const auto& r : reqs) {
    AppendField(out, r.key);
    AppendField(out, r.op);
    out += std::to_string(r.values.size());
    for (const std::string& v : r.values) AppendField(out, v);
  }
  out += ']';
}

// --- tolerations (small-plugins.md §1.3) ----------------------------------------------

bool Tolerates(const Toleration& t, const Taint& x, bool comparison_operators) {
  if (!t.effect.empty() && t.effect != x.effect) return false;
  if (!t.key.empty() && t.key != x.key) return false;
  if (t.op.empty() || t.op == "Equal") return t.value == x.value;
  if (t.op == "Exists") return true;
  if (t.op == "Lt" || t.op == "Gt") {
    if (!comparison_operators) return false;
    int64_t taint_value, toleration_value;
    if (!ParseCanonicalInt(x.value, &taint_value) || !ParseCanonicalInt(t.value, &toleration_value)) return false;
    return t.op == "Lt" ? taint_value < toleration_value : taint_value > toleration_value;
  }
  return false;
}

}  // namespace

bool PodSelector::Matches(const Labels& labels) const {
  if (nothing) return false;
  for (const SelectorRequirement& r : requirements) {
    if (!MatchesRequirement(r, labels)) return false;
  }
  return true;
}

std::string PodSelector::Key() const {
  if (nothing) return "N";
  std::vector<std::string> parts;
  parts.reserve(requirements.size());
  for (const SelectorRequirement& r : requirements) parts.push_back(RequirementKey(r));
  std::sort(parts.begin(), parts.end());
  parts.erase(std::unique(parts.begin(), parts.end()), parts.end());
  std::string out = "S";
  for (const std::string& p : parts) AppendField(out, p);
  return out;
}

bool ParsePodSelector(const std::optional<LabelSelector>& selector, PodSelector* out, std::string* error) {
  *out = PodSelector{};
  if (!selector) return true;
  out->nothing = false;
  for (const auto& [k, v] : selector->match_labels) {
    SelectorRequirement r{k, SelectorOp::kIn, {v}};
    if (!CheckRequirement(r, error)) return false;
    out->requirements.push_back(std::move(r));
  }
  for (const LabelSelectorRequirement& e : selector->match_expressions) {
    SelectorRequirement r{e.key, SelectorOp::kIn, e.values};
    if (e.op == "In") {
      r.op = SelectorOp::kIn;
    } else if (e.op == "NotIn") {
      r.op = SelectorOp::kNotIn;
    } else if (e.op == "Exists") {
      r.op = SelectorOp::kExists;
    } else if (e.op == "DoesNotExist") {
      r.op = SelectorOp::kDoesNotExist;
    } else {
      *error = StrCat("\"", e.op, "\" is not a valid label selector operator");
      return false;
    }
    if (!CheckRequirement(r, error)) return false;
    out->requirements.push_back(std::move(r));
  }
  return true;
}

PodSelector SelectorFromSet(const Labels& set) {
  PodSelector s = PodSelector::Everything();
  for (const auto& [k, v] : set) s.requirements.push_back(SelectorRequirement{k, SelectorOp::kIn, {v}});
  return s;
}

PodSelector MergeSetIntoSelector(const Labels& set, const PodSelector& s) {
  if (s.nothing) return s;
  PodSelector out = SelectorFromSet(set);
  out.requirements.insert(out.requirements.end(), s.requirements.begin(), s.requirements.end());
  return out;
}

PodSelector DefaultSelector(const Pod& pod, const ObjectSet& objects) {
  const std::string& ns = pod.meta.namespace_;
  Labels set;
  for (const Workload& w : objects.workloads) {
    // A Service with a null selector selects nothing, not everything.
    if (w.kind != "Service" || w.meta.namespace_ != ns || !w.selector) continue;
    if (!SelectorFromSet(w.selector->match_labels).Matches(pod.meta.labels)) continue;
    for (const auto& [k, v] : w.selector->match_labels) set[k] = v;
  }
  PodSelector selector = SelectorFromSet(set);
  const OwnerReference* owner = nullptr;
  for (const OwnerReference& o : pod.meta.owner_references) {
    if (o.controller) {
      owner = &o;
      break;
    }
  }
  if (!owner) return selector;
  std::string kind;
  if (owner->api_version == "v1" && owner->kind == "ReplicationController") {
    kind = owner->kind;
  } else if (owner->api_version == "apps/v1" && (owner->kind == "ReplicaSet" || owner->kind == "StatefulSet")) {
    kind = owner->kind;
  } else {
    return selector;
  }
  for (const Workload& w : objects.workloads) {
    if (w.kind != kind || w.meta.namespace_ != ns || w.meta.name != owner->name) continue;
    if (kind == "ReplicationController") {
      if (w.selector) {
        for (const auto& [k, v] : w.selector->match_labels) set[k] = v;
      }
      return SelectorFromSet(set);
    }
    PodSelector own;
    std::string error;
    // A null selector (Nothing) or one that does not parse contributes nothing.
    if (ParsePodSelector(w.selector, &own, &error) && !own.nothing) {
      selector.requirements.insert(selector.requirements.end(), own.requirements.begin(), own.requirements.end());
    }
    return selector;
  }
  return selector;
}

RequiredPlacement::RequiredPlacement(const Pod& pod) : node_selector_(pod.node_selector) {
  key_ = "s";
  for (const auto& [k, v] : node_selector_) {
    AppendField(key_, k);
    AppendField(key_, v);
  }
  if (pod.affinity && pod.affinity->node_affinity && pod.affinity->node_affinity->required) {
    has_affinity_ = true;
    key_ += "a";
    for (const NodeSelectorTerm& t : pod.affinity->node_affinity->required->terms) {
      // Empty terms never match; terms that do not parse never match either.
      if (t.match_expressions.empty() && t.match_fields.empty()) continue;
      if (!TermParses(t)) continue;
      terms_.push_back(t);
      key_ += 't';
      AppendNodeRequirements(key_, t.match_expressions);
      AppendNodeRequirements(key_, t.match_fields);
    }
  }
}

bool RequiredPlacement::Matches(const Node& node) const {
  for (const auto& [k, v] : node_selector_) {
    auto it = node.meta.labels.find(k);
    if (it == node.meta.labels.end() || it->second != v) return false;
  }
  if (!has_affinity_) return true;
  for (const NodeSelectorTerm& t : terms_) {
    if (TermMatches(t, node)) return true;
  }
  return false;
}

bool ToleratesHardTaints(const std::vector<Toleration>& tolerations, const Node& node, bool comparison_operators) {
  for (const Taint& x : node.taints) {
    if (x.effect != "NoSchedule" && x.effect != "NoExecute") continue;
    bool tolerated = false;
    for (const Toleration& t : tolerations) {
      if (Tolerates(t, x, comparison_operators)) {
        tolerated = true;
        break;
      }
    }
    if (!tolerated) return false;
  }
  return true;
}

std::string TolerationsKey(const std::vector<Toleration>& tolerations) {
  std::string out;
  for (const Toleration& t : tolerations) {
    AppendField(out, t.key);
    AppendField(out, t.op);
    AppendField(out, t.value);
    AppendField(out, t.effect);
  }
  return out;
}

}  // namespace kplace::spread
