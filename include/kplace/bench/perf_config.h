#pragma once
// scheduler_perf's own test-case format (test/integration/scheduler_perf/*/performance-config.yaml),
// read unchanged: a list of test cases, each a `workloadTemplate` of ops and `workloads` that
// give the ops' `$param`s. Every (test case, workload) pair becomes one kplace Workload
// (kplace/bench/workload.h) with that workload as its only variant, so it runs through the
// same RunWorkload as the built-in workloads; DecodePerfConfigTestCase reads a test case as
// one Workload with its workloads as the variants (how the built-in workloads are read).
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
//                     defaultPodTemplatePath, else makeBasePod's pod-default), skipWaitToCompletion,
//                     templateParams
//   createPodGroups   PodGroup objects (scheduling.k8s.io) made with the cluster, before any
//                     pod (so before every createPods op): count | countParam, namespace
//                     (required), templatePath (a PodGroup; {{.Index}} 0..count-1),
//                     templateParams
//   waitForPodGroups  namespace, count | countParam: a no-op (upstream waits until the
//                     scheduler's informer sees that many PodGroups; kplace's are there before
//                     any pod); InvalidArgument when it waits for more than the ops before it made
//   createPodSets     an init group over the namespaces <namespacePrefix>-0..<count-1>
//   createAny         cluster objects made before any pod: templatePath (one object of a kind
//                     scheduling reads: Service, ReplicaSet, StatefulSet, ReplicationController,
//                     PersistentVolume(Claim), StorageClass, CSINode, CSIDriver,
//                     CSIStorageCapacity, PodDisruptionBudget, PriorityClass; no template
//                     variables), namespace (required for namespaced kinds), count | countParam;
//                     an object without metadata.name is named <generateName><i>
//   churn             mode, number, intervalMilliseconds, namespace, templatePaths
//   deletePods        namespace (an init group's), deletePodsPerSecond > 0, skipWaitToCompletion
//   barrier, sleep    accepted; kplace places each createPods op's pods before the next op
//                     and has no wall clock, so both are no-ops
//   startCollectingMetrics {name, namespaces}, stopCollectingMetrics
// templateParams: {name: value}, a value an integer, a string or "$param" (the workload's
// params; the variant carries their values, Variant::params): templates read {{.name}} and
// upstream's integer functions (DivideInt, MultiplyInt, AddInt, SubtractInt, Mod; workload.h).
// A template value that is one action alone and unquoted (`minCount: {{.podsPerGroup}}`) is
// quoted before the YAML is read, and gets its value's type back when substituted.
// Template paths, and the test case's schedulerConfigPath (a KubeSchedulerConfiguration file,
// the profile the workload runs), are relative to the config file's directory (upstream runs
// each config from its own directory). Workloads: name, params, labels, threshold (a number),
// featureGates (merged over the test case's). Any other op, field or value is
// InvalidArgument naming the file, the test case, the op index (as written) and the field.
//
// kplace's extensions, for what upstream's format cannot say (kplace's built-in workloads,
// bench/scheduler_perf/*/performance-config.yaml, use them; upstream's scheduler_perf would
// refuse them as unknown fields). A file without them decodes as upstream's.
//   test case  kplace: {description, default, throughput}
//                description  what `kplace bench --list` prints for the test case
//                default      the workload run when none is named (DecodePerfConfigTestCase;
//                             else the first)
//                throughput   pods/s that turn churn's and deletePods' wall-clock rates into
//                             measured-pod counts for workloads without a threshold (else the
//                             test case's largest threshold)
//   workload   kplace: {upstream: false}  a size kplace adds (Variant::upstream)
//   createNodes
//     kplaceObjectTemplatePaths   per-node object templates (e.g. a CSINode; {{.Name}} and
//                                 {{.Index}} are the node's), made with every node
//     kplaceLabelNodePrepareStrategies  [{labelKey, labelValues}]: more round-robin labels
//                                 than upstream's one labelNodePrepareStrategy
//   createPods (and createPodSets' createPodsOp)
//     kplaceObjectTemplatePaths   per-pod object templates (e.g. the bound PV and PVC upstream's
//                                 persistentVolume(Claim)TemplatePath make; {{.Index}} and
//                                 {{.Namespace}} are the pod's), made before the pods
//     kplaceHeterogeneous {seed}  every pod from a seeded generator (HeterogeneousMix)
//     kplaceSignatureBatchSize | kplaceSignatureBatchSizeParam  the measured op only:
//                                 kplace's model of upstream's signatureBatchSize
//                                 (PodGroup::signature_batch_size)
// Each is checked like upstream's fields: errors name file, test case, workload, op and field.
#include <functional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "absl/status/statusor.h"
#include "kplace/bench/workload.h"

namespace kplace::bench {

/** Reads a file a config names (template paths, schedulerConfigPath): from disk
 *  (ReadFileText), or from the copies built into the binary (the built-in workloads). */
using FileReader = std::function<absl::StatusOr<std::string>(const std::string& path)>;

/** @brief A file's text. NotFound when it cannot be read. */
absl::StatusOr<std::string> ReadFileText(const std::string& path);

/** True when `doc` is in scheduler_perf's format: a list of test cases. */
bool IsPerfConfig(const nlohmann::json& doc);

/** @brief Translates a parsed performance-config document (`file` names it in errors and
 *  anchors template paths) into one Workload per (test case, workload), in file order.
 *  Each Workload's `name` is the test case's, its one variant is the workload (counts,
 *  threshold, feature gates, labels), and `metrics_name` is the DataItem Name suffix.
 *  @return InvalidArgument naming file, test case, op index and field for anything kplace
 *  does not model or cannot read; NotFound for a template file that cannot be read. */
absl::StatusOr<std::vector<Workload>> DecodePerfConfig(const nlohmann::json& doc, const std::string& file,
                                                       const FileReader& read = ReadFileText);

/** @brief The test case `name` as one Workload whose variants are its workloads, in file order
 *  (how kplace reads its built-in workloads): kplace.default (else the first workload) is
 *  applied, `description` is kplace.description. The workloads must differ only in counts
 *  and in their own fields (threshold, labels, featureGates, kplace, signature batch size).
 *  @return NotFound when no test case has that name; InvalidArgument as DecodePerfConfig,
 *  or naming the workload that makes other objects. */
absl::StatusOr<Workload> DecodePerfConfigTestCase(const nlohmann::json& doc, const std::string& file,
                                                  const std::string& name, const FileReader& read = ReadFileText);

/** @brief Reads and translates a performance-config.yaml file (DecodePerfConfig).
 *  NotFound when it cannot be read. */
absl::StatusOr<std::vector<Workload>> LoadPerfConfig(const std::string& path);

/** scheduler_perf's label filter ("performance,-short"): every plain (or +) label must be
 *  in `labels`, no - label may be. An empty filter selects everything. */
bool LabelsSelected(const std::string& filter, const std::vector<std::string>& labels);

}  // namespace kplace::bench
