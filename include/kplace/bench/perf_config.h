#pragma once
// scheduler_perf's own test-case format (test/integration/scheduler_perf/*/performance-config.yaml),
// read unchanged: a list of test cases, each a `workloadTemplate` of ops and `workloads` that
// give the ops' `$param`s. Every (test case, workload) pair becomes one kplace Workload
// (kplace/bench/workload.h) with that workload as its only variant, so it runs through the
// same RunWorkload as the built-in workloads.
//
// The ops kplace models, and how:
//   createNodes       a node group: count | countParam, nodeTemplatePath (else upstream's
//                     makeBaseNode: 4 CPU, 32Gi, 110 pods), labelNodePrepareStrategy
//                     {labelKey, labelValues} (round-robin), uniqueNodeLabelStrategy {labelKey}
//   createNamespaces  a namespace set: prefix, count | countParam, namespaceTemplatePath
//   createPods        an init group, or the measured group when collectMetrics is true (or
//                     when it is the one createPods between startCollectingMetrics and
//                     stopCollectingMetrics): count | countParam (times countMultiplierParam),
//                     namespace (else namespace-<op index>, counted over the unrolled ops as
//                     upstream does), podTemplatePath (else the test case's
//                     defaultPodTemplatePath, else makeBasePod's pod-default), skipWaitToCompletion
//   createPodSets     an init group over the namespaces <namespacePrefix>-0..<count-1>
//   churn             mode, number, intervalMilliseconds, namespace, templatePaths
//   deletePods        namespace (an init group's), deletePodsPerSecond > 0, skipWaitToCompletion
//   barrier, sleep    accepted; kplace places each createPods op's pods before the next op
//                     and has no wall clock, so both are no-ops
//   startCollectingMetrics {name, namespaces}, stopCollectingMetrics
// Template paths are relative to the config file's directory (upstream runs each config from
// its own directory). Workloads: name, params, labels, threshold (a number), featureGates
// (merged over the test case's). Any other op, field or value is InvalidArgument naming the
// file, the test case, the op index (as written) and the field.
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "absl/status/statusor.h"
#include "kplace/bench/workload.h"

namespace kplace::bench {

/** True when `doc` is in scheduler_perf's format: a list of test cases. */
bool IsPerfConfig(const nlohmann::json& doc);

/** @brief Translates a parsed performance-config document (`file` names it in errors and
 *  anchors template paths) into one Workload per (test case, workload), in file order.
 *  Each Workload's `name` is the test case's, its one variant is the workload (counts,
 *  threshold, feature gates, labels), and `metrics_name` is the DataItem Name suffix.
 *  @return InvalidArgument naming file, test case, op index and field for anything kplace
 *  does not model or cannot read; NotFound for a template file that cannot be read. */
absl::StatusOr<std::vector<Workload>> DecodePerfConfig(const nlohmann::json& doc, const std::string& file);

/** @brief Reads and translates a performance-config.yaml file (DecodePerfConfig).
 *  NotFound when it cannot be read. */
absl::StatusOr<std::vector<Workload>> LoadPerfConfig(const std::string& path);

/** scheduler_perf's label filter ("performance,-short"): every plain (or +) label must be
 *  in `labels`, no - label may be. An empty filter selects everything. */
bool LabelsSelected(const std::string& filter, const std::vector<std::string>& labels);

}  // namespace kplace::bench
