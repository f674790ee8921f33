#include "kplace/plugins/inter_pod_affinity_common.h"

#include <cstdio>
#include <set>

#include "kplace/common/strings.h"
#include "kplace/model/validation.h"

namespace kplace::plugins {
namespace {

std::string Join(const std::vector<std::string>& parts, const std::string& sep) {
  std::string out;
  for (size_t i = 0; i < parts.size(); ++i) out += (i ? sep : "") + parts[i];
  return out;
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
