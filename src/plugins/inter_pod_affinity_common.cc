#include "kplace/plugins/inter_pod_affinity_common.h"

#include <cstdio>
#include <set>

#include "kplace/common/strings.h"

namespace kplace::plugins {
namespace {

// apimachinery's validation messages (util/validation), needed verbatim because PreFilter
// reports them.
constexpr char kQualifiedNameFmt[] = "([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]";
constexpr char kQualifiedNameErrMsg[] =
    "must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric "
    "character";
constexpr char kLabelValueFmt[] = "(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?";
constexpr char kLabelValueErrMsg[] =
    "a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', and must "
    "start and end with an alphanumeric character";
constexpr char kDns1123SubdomainFmt[] = "[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*";
constexpr char kDns1123SubdomainErrMsg[] =
    "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must "
    "start and end with an alphanumeric character";

std::string RegexError(const std::string& msg, const std::string& fmt, const std::vector<std::string>& examples) {
  if (examples.empty()) return msg + " (regex used for validation is '" + fmt + "')";
  std::string out = msg + " (e.g. ";
  for (size_t i = 0; i < examples.size(); ++i) {
    if (i > 0) out += " or ";
    out += "'" + examples[i] + "', ";
  }
  return out + "regex used for validation is '" + fmt + "')";
}

std::string MaxLenError(int n) { return StrCat("must be no more than ", n, " characters"); }

bool IsAlnum(char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9'); }
bool IsLowerAlnum(char c) { return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9'); }

// ^([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]$
bool MatchesQualifiedName(const std::string& s) {
  if (s.empty() || !IsAlnum(s.front()) || !IsAlnum(s.back())) return false;
  for (char c : s) {
    if (!IsAlnum(c) && c != '-' && c != '_' && c != '.') return false;
  }
  return true;
}

// The subdomain regex has no per-label length limit; only the 253 total applies.
bool MatchesDns1123Subdomain(const std::string& s) {
  size_t start = 0;
  while (true) {
    size_t dot = s.find('.', start);
    std::string label = s.substr(start, dot == std::string::npos ? std::string::npos : dot - start);
    if (label.empty() || !IsLowerAlnum(label.front()) || !IsLowerAlnum(label.back())) return false;
    for (char c : label) {
      if (!IsLowerAlnum(c) && c != '-') return false;
    }
    if (dot == std::string::npos) return true;
    start = dot + 1;
  }
}

std::vector<std::string> Dns1123SubdomainErrors(const std::string& s) {
  std::vector<std::string> errs;
  if (s.size() > 253) errs.push_back(MaxLenError(253));
  if (!MatchesDns1123Subdomain(s)) errs.push_back(RegexError(kDns1123SubdomainErrMsg, kDns1123SubdomainFmt, {"example.com"}));
  return errs;
}

std::vector<std::string> QualifiedNameErrors(const std::string& value) {
  std::vector<std::string> errs;
  std::vector<std::string> parts;
  size_t start = 0;
  while (true) {
    size_t slash = value.find('/', start);
    parts.push_back(value.substr(start, slash == std::string::npos ? std::string::npos : slash - start));
    if (slash == std::string::npos) break;
    start = slash + 1;
  }
  std::string name;
  if (parts.size() == 1) {
    name = parts[0];
  } else if (parts.size() == 2) {
    const std::string& prefix = parts[0];
    name = parts[1];
    if (prefix.empty()) {
      errs.push_back("prefix part must be non-empty");
    } else {
      for (const std::string& m : Dns1123SubdomainErrors(prefix)) errs.push_back("prefix part " + m);
    }
  } else {
    errs.push_back("a qualified name " + RegexError(kQualifiedNameErrMsg, kQualifiedNameFmt, {"MyName", "my.name", "123-abc"}) +
                   " with an optional DNS subdomain prefix and '/' (e.g. 'example.com/MyName')");
    return errs;
  }
  if (name.empty()) {
    errs.push_back("name part must be non-empty");
  } else if (name.size() > 63) {
    errs.push_back("name part " + MaxLenError(63));
  }
  if (!MatchesQualifiedName(name)) {
    errs.push_back("name part " + RegexError(kQualifiedNameErrMsg, kQualifiedNameFmt, {"MyName", "my.name", "123-abc"}));
  }
  return errs;
}

std::vector<std::string> LabelValueErrors(const std::string& value) {
  std::vector<std::string> errs;
  if (value.size() > 63) errs.push_back(MaxLenError(63));
  if (!value.empty() && !MatchesQualifiedName(value)) {
    errs.push_back(RegexError(kLabelValueErrMsg, kLabelValueFmt, {"MyValue", "my_value", "12345"}));
  }
  return errs;
}

std::string Join(const std::vector<std::string>& parts, const std::string& sep) {
  std::string out;
  for (size_t i = 0; i < parts.size(); ++i) out += (i ? sep : "") + parts[i];
  return out;
}

// Go's strconv.Quote for the ASCII range; other bytes pass through (label text is UTF-8).
std::string GoQuote(const std::string& s) {
  std::string out = "\"";
  for (unsigned char c : s) {
    switch (c) {
      case '"': out += "\\\""; break;
      case '\\': out += "\\\\"; break;
      case '\a': out += "\\a"; break;
      case '\b': out += "\\b"; break;
      case '\f': out += "\\f"; break;
      case '\n': out += "\\n"; break;
      case '\r': out += "\\r"; break;
      case '\t': out += "\\t"; break;
      case '\v': out += "\\v"; break;
      default:
        if (c < 0x20 || c == 0x7f) {
          char buf[8];
          std::snprintf(buf, sizeof(buf), "\\x%02x", c);
          out += buf;
        } else {
          out += static_cast<char>(c);
        }
    }
  }
  return out + "\"";
}

// fmt's %#v of the []string labels.NewRequirement received (nil when no values).
std::string GoStringSlice(const std::vector<std::string>& values) {
  if (values.empty()) return "[]string(nil)";
  std::string out = "[]string{";
  for (size_t i = 0; i < values.size(); ++i) out += (i ? ", " : "") + GoQuote(values[i]);
  return out + "}";
}

// labels.NewRequirement's field errors, aggregated as field.ErrorList.ToAggregate does.
std::string RequirementError(const std::string& key, const std::string& op, const std::vector<std::string>& values) {
  std::vector<std::string> errs;
  std::vector<std::string> key_errs = QualifiedNameErrors(key);
  if (!key_errs.empty()) errs.push_back("key: Invalid value: " + GoQuote(key) + ": " + Join(key_errs, "; "));
  if (op == "In" || op == "NotIn") {
    if (values.empty()) {
      errs.push_back("values: Invalid value: " + GoStringSlice(values) + ": for 'in', 'notin' operators, values set can't be empty");
    }
  } else if (op == "=") {
    if (values.size() != 1) {
      errs.push_back("values: Invalid value: " + GoStringSlice(values) + ": exact-match compatibility requires one single value");
    }
  } else if (op == "Exists" || op == "DoesNotExist") {
    if (!values.empty()) {
      errs.push_back("values: Invalid value: " + GoStringSlice(values) + ": values set must be empty for exists and does not exist");
    }
  }
  for (size_t i = 0; i < values.size(); ++i) {
    std::vector<std::string> v_errs = LabelValueErrors(values[i]);
    if (!v_errs.empty()) {
      errs.push_back(StrCat("values[", i, "][", key, "]: Invalid value: ", GoQuote(values[i]), ": ", Join(v_errs, "; ")));
    }
  }
  return IpaAggregateErrors(errs);
}

PodAffinityTerm RewriteLabelKeys(const PodAffinityTerm& in, const Labels& labels) {
  PodAffinityTerm t = in;
  if (!t.label_selector) return t;
  for (const std::string& k : t.match_label_keys) {
    auto it = labels.find(k);
    if (it != labels.end()) t.label_selector->match_expressions.push_back({k, "In", {it->second}});
  }
  for (const std::string& k : t.mismatch_label_keys) {
    auto it = labels.find(k);
    if (it != labels.end()) t.label_selector->match_expressions.push_back({k, "NotIn", {it->second}});
  }
  return t;
}

std::string TermError(const PodAffinityTerm& t) {
  if (t.label_selector) {
    std::string e = IpaLabelSelectorError(*t.label_selector);
    if (!e.empty()) return e;
  }
  if (t.namespace_selector) return IpaLabelSelectorError(*t.namespace_selector);
  return "";
}

const PodAffinityTerm& TermOf(const PodAffinityTerm& t) { return t; }
const PodAffinityTerm& TermOf(const WeightedPodAffinityTerm& t) { return t.term; }
PodAffinityTerm* MutableTermOf(PodAffinityTerm& t) { return &t; }
PodAffinityTerm* MutableTermOf(WeightedPodAffinityTerm& t) { return &t.term; }

// Rewrites and checks one list; the first bad term empties it and names the error.
template <typename T>
void ParseList(const std::vector<T>& in, const Pod& pod, bool match_label_keys, const char* name,
               std::vector<T>* out, std::vector<std::string>* errors) {
  out->clear();
  for (const T& term : in) {
    T copy = term;
    if (match_label_keys) *MutableTermOf(copy) = RewriteLabelKeys(TermOf(term), pod.meta.labels);
    std::string e = TermError(TermOf(copy));
    if (!e.empty()) {
      out->clear();
      errors->push_back(StrCat(name, ": ", e));
      return;
    }
    out->push_back(std::move(copy));
  }
}

}  // namespace

std::string IpaAggregateErrors(const std::vector<std::string>& errors) {
  if (errors.empty()) return "";
  if (errors.size() == 1) return errors[0];
  std::set<std::string> seen;
  std::string out;
  for (const std::string& e : errors) {
    if (!seen.insert(e).second) continue;
    if (seen.size() > 1) out += ", ";
    out += e;
  }
  return seen.size() == 1 ? out : "[" + out + "]";
}

std::string IpaLabelSelectorError(const LabelSelector& selector) {
  // matchLabels first (sorted here; Go's map order is random), then matchExpressions.
  for (const auto& [k, v] : selector.match_labels) {
    std::string e = RequirementError(k, "=", {v});
    if (!e.empty()) return e;
  }
  for (const LabelSelectorRequirement& r : selector.match_expressions) {
    if (r.op != "In" && r.op != "NotIn" && r.op != "Exists" && r.op != "DoesNotExist") {
      return GoQuote(r.op) + " is not a valid label selector operator";
    }
    std::string e = RequirementError(r.key, r.op, r.values);
    if (!e.empty()) return e;
  }
  return "";
}

IpaPodTerms ParseIpaPodTerms(const Pod& pod, bool match_label_keys) {
  IpaPodTerms out;
  if (!pod.affinity) return out;
  std::vector<std::string> errors;
  const std::optional<PodAffinity>& aff = pod.affinity->pod_affinity;
  const std::optional<PodAffinity>& anti = pod.affinity->pod_anti_affinity;
  if (aff) ParseList(aff->required, pod, match_label_keys, "requiredAffinityTerms", &out.required_affinity, &errors);
  if (anti) {
    ParseList(anti->required, pod, match_label_keys, "requiredAntiAffinityTerms", &out.required_anti_affinity, &errors);
  }
  if (aff) ParseList(aff->preferred, pod, match_label_keys, "preferredAffinityTerms", &out.preferred_affinity, &errors);
  if (anti) {
    ParseList(anti->preferred, pod, match_label_keys, "preferredAntiAffinityTerms", &out.preferred_anti_affinity,
              &errors);
  }
  out.error = IpaAggregateErrors(errors);
  return out;
}

bool IpaHasPodAffinity(const Pod& pod) {
  return pod.affinity && (pod.affinity->pod_affinity || pod.affinity->pod_anti_affinity);
}

bool IpaHasPreferredPodAffinity(const Pod& pod) {
  if (!pod.affinity) return false;
  const Affinity& a = *pod.affinity;
  return (a.pod_affinity && !a.pod_affinity->preferred.empty()) ||
         (a.pod_anti_affinity && !a.pod_anti_affinity->preferred.empty());
}

}  // namespace kplace::plugins
