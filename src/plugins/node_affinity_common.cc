#include "kplace/plugins/node_affinity_common.h"

#include <algorithm>
#include <cstdio>
#include <set>

#include "kplace/model/validation.h"

namespace kplace::plugins::node_affinity {
namespace {

std::string Join(const std::vector<std::string>& v, const char* sep) {
  std::string out;
  for (size_t i = 0; i < v.size(); ++i) {
    if (i) out += sep;
    out += v[i];
  }
  return out;
}

std::string Invalid(const std::string& path, const std::string& shown, const std::string& detail) {
  return path + ": Invalid value: " + shown + ": " + detail;
}

}  // namespace

bool ParseGoInt64(std::string_view s, int64_t* out) {
  if (s.empty()) return false;
  bool neg = false;
  if (s[0] == '+' || s[0] == '-') {
    neg = s[0] == '-';
    s.remove_prefix(1);
  }
  if (s.empty()) return false;
  uint64_t v = 0;
  const uint64_t limit = neg ? (uint64_t{1} << 63) : (uint64_t{1} << 63) - 1;
  for (char c : s) {
    if (c < '0' || c > '9') return false;
    uint64_t d = static_cast<uint64_t>(c - '0');
    if (v > (limit - d) / 10) return false;
    v = v * 10 + d;
  }
  *out = neg ? static_cast<int64_t>(0 - v) : static_cast<int64_t>(v);
  return true;
}

std::vector<std::string> LabelRequirementErrors(const NodeSelectorRequirement& r, const std::string& path) {
  std::vector<std::string> errs;
  const std::string& op = r.op;
  if (op != "In" && op != "NotIn" && op != "Exists" && op != "DoesNotExist" && op != "Gt" && op != "Lt") {
    errs.push_back(path + ".operator: Unsupported value: " + GoQuote(op));
    return errs;
  }
  std::vector<std::string> key_errs = QualifiedNameErrors(r.key);
  if (!key_errs.empty()) errs.push_back(Invalid(path + ".key", GoQuote(r.key), Join(key_errs, "; ")));
  const std::string values_path = path + ".values";
  if (op == "In" || op == "NotIn") {
    if (r.values.empty()) {
      errs.push_back(Invalid(values_path, GoStringSlice(r.values), "for 'in', 'notin' operators, values set can't be empty"));
    }
  } else if (op == "Exists" || op == "DoesNotExist") {
    if (!r.values.empty()) {
      errs.push_back(Invalid(values_path, GoStringSlice(r.values), "values set must be empty for exists and does not exist"));
    }
  } else {
    if (r.values.size() != 1) {
      errs.push_back(Invalid(values_path, GoStringSlice(r.values), "for 'Gt', 'Lt' operators, exactly one value is required"));
    }
    for (size_t i = 0; i < r.values.size(); ++i) {
      int64_t unused;
      if (!ParseGoInt64(r.values[i], &unused)) {
        errs.push_back(Invalid(values_path + "[" + std::to_string(i) + "]", GoQuote(r.values[i]),
                               "for 'Gt', 'Lt' operators, the value must be an integer"));
      }
    }
  }
  for (size_t i = 0; i < r.values.size(); ++i) {
    std::vector<std::string> v = LabelValueErrors(r.values[i]);
    if (!v.empty()) {
      errs.push_back(Invalid(values_path + "[" + std::to_string(i) + "][" + r.key + "]", GoQuote(r.values[i]), Join(v, "; ")));
    }
  }
  return errs;
}

std::vector<std::string> FieldRequirementErrors(const NodeSelectorRequirement& r, const std::string& path) {
  if (r.op != "In" && r.op != "NotIn") {
    return {path + ".operator: Unsupported value: " + GoQuote(r.op) + ": supported values: \"In\", \"NotIn\""};
  }
  if (r.values.size() != 1) return {Invalid(path + ".values", GoStringSlice(r.values), "must have one element")};
  return {};
}

std::vector<std::string> NodeSelectorTermErrors(const NodeSelectorTerm& term, const std::string& path) {
  std::vector<std::string> errs;
  for (size_t i = 0; i < term.match_expressions.size(); ++i) {
    for (std::string& e : LabelRequirementErrors(term.match_expressions[i],
                                                 path + ".matchExpressions[" + std::to_string(i) + "]")) {
      errs.push_back(std::move(e));
    }
  }
  for (size_t i = 0; i < term.match_fields.size(); ++i) {
    for (std::string& e : FieldRequirementErrors(term.match_fields[i], path + ".matchFields[" + std::to_string(i) + "]")) {
      errs.push_back(std::move(e));
    }
  }
  return errs;
}

std::string AggregateErrors(const std::vector<std::string>& errors) {
  std::vector<std::string> unique;
  std::set<std::string> seen;
  for (const std::string& e : errors) {
    if (seen.insert(e).second) unique.push_back(e);
  }
  if (unique.empty()) return "";
  if (unique.size() == 1) return unique[0];
  return "[" + Join(unique, ", ") + "]";
}

namespace {

bool LabelRequirementMatches(const NodeSelectorRequirement& r, const Labels& labels) {
  auto it = labels.find(r.key);
  const bool has = it != labels.end();
  auto listed = [&] { return std::find(r.values.begin(), r.values.end(), it->second) != r.values.end(); };
  if (r.op == "In") return has && listed();
  if (r.op == "NotIn") return !has || !listed();
  if (r.op == "Exists") return has;
  if (r.op == "DoesNotExist") return !has;
  if (r.op == "Gt" || r.op == "Lt") {
    int64_t node_value, bound;
    if (!has || !ParseGoInt64(it->second, &node_value)) return false;
    if (r.values.size() != 1 || !ParseGoInt64(r.values[0], &bound)) return false;
    return r.op == "Gt" ? node_value > bound : node_value < bound;
  }
  return false;
}

// The node's field set holds metadata.name only; any other key reads as "".
bool FieldRequirementMatches(const NodeSelectorRequirement& r, const Node& node) {
  std::string field = r.key == "metadata.name" ? node.meta.name : "";
  return r.op == "In" ? field == r.values[0] : field != r.values[0];
}

}  // namespace

bool Parses(const NodeSelectorTerm& t) { return NodeSelectorTermErrors(t, "").empty(); }

bool TermMatches(const NodeSelectorTerm& t, const Node& node) {
  for (const auto& r : t.match_expressions) {
    if (!LabelRequirementMatches(r, node.meta.labels)) return false;
  }
  if (!t.match_fields.empty() && !node.meta.name.empty()) {
    for (const auto& r : t.match_fields) {
      if (!FieldRequirementMatches(r, node)) return false;
    }
  }
  return true;
}

bool SelectorMatches(const NodeSelector& s, const Node& node) {
  for (const NodeSelectorTerm& t : s.terms) {
    if (IsEmptyTerm(t) || !Parses(t)) continue;
    if (TermMatches(t, node)) return true;
  }
  return false;
}

}  // namespace kplace::plugins::node_affinity
