#pragma once
// Builders for PodTopologySpread tests: labelled nodes, labelled pods, constraints and
// the workloads that feed the default selector.
#include <optional>
#include <string>
#include <vector>

#include "kplace/model/objects.h"
#include "tests/testing/differential.h"

namespace kplace::testing {

/** A node with `pods: 32` (as upstream's spread tests) and the given labels. */
inline Node SpreadNode(const std::string& name, const Labels& labels) {
  return MakeNode(name, {{"pods", "32"}, {"cpu", "64"}, {"memory", "256Gi"}}, labels);
}

/** A pod without containers' requests, in `ns`, bound to `node` when not empty. */
inline Pod SpreadPod(const std::string& name, const Labels& labels, const std::string& node = "",
                     const std::string& ns = "default") {
  Pod p;
  p.meta.name = name;
  p.meta.namespace_ = ns;
  p.meta.labels = labels;
  p.node_name = node;
  return p;
}

inline LabelSelector MatchLabels(const Labels& labels) {
  LabelSelector s;
  s.match_labels = labels;
  return s;
}

inline LabelSelector MatchExpression(const std::string& key, const std::string& op,
                                     const std::vector<std::string>& values = {}) {
  LabelSelector s;
  s.match_expressions.push_back(LabelSelectorRequirement{key, op, values});
  return s;
}

inline TopologySpreadConstraint Spread(int32_t max_skew, const std::string& key, const std::string& when,
                                       std::optional<LabelSelector> selector) {
  TopologySpreadConstraint c;
  c.max_skew = max_skew;
  c.topology_key = key;
  c.when_unsatisfiable = when;
  c.label_selector = std::move(selector);
  return c;
}

inline TopologySpreadConstraint HardSpread(int32_t max_skew, const std::string& key,
                                           std::optional<LabelSelector> selector) {
  return Spread(max_skew, key, "DoNotSchedule", std::move(selector));
}

inline TopologySpreadConstraint SoftSpread(int32_t max_skew, const std::string& key,
                                           std::optional<LabelSelector> selector) {
  return Spread(max_skew, key, "ScheduleAnyway", std::move(selector));
}

inline Workload MakeService(const std::string& name, const Labels& selector, const std::string& ns = "default") {
  Workload w;
  w.kind = "Service";
  w.meta.name = name;
  w.meta.namespace_ = ns;
  w.selector = MatchLabels(selector);
  return w;
}

inline Workload MakeReplicaSet(const std::string& name, std::optional<LabelSelector> selector,
                               const std::string& ns = "default") {
  Workload w;
  w.kind = "ReplicaSet";
  w.meta.name = name;
  w.meta.namespace_ = ns;
  w.selector = std::move(selector);
  return w;
}

inline OwnerReference ControllerRef(const std::string& api_version, const std::string& kind,
                                    const std::string& name) {
  OwnerReference o;
  o.api_version = api_version;
  o.kind = kind;
  o.name = name;
  o.controller = true;
  return o;
}

}  // namespace kplace::testing
