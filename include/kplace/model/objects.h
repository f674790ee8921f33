#pragma once
// Host-side Kubernetes objects: the fields that scheduling reads, decoded exactly.
#include <cstddef>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "kplace/model/quantity.h"

namespace kplace {

using Labels = std::map<std::string, std::string>;
/** Resource name -> quantity, as in a ResourceList. */
using ResourceList = std::map<std::string, Quantity>;

struct OwnerReference {
  std::string api_version, kind, name, uid;
  bool controller = false;
};

struct ObjectMeta {
  std::string name, namespace_, uid;
  Labels labels;
  std::map<std::string, std::string> annotations;
  std::string creation_timestamp;  // RFC 3339 text as given
  int64_t creation_unix = 0;       // seconds since epoch, 0 when absent
  std::string deletion_timestamp;  // RFC 3339 text; non-empty marks a terminating object
  std::vector<OwnerReference> owner_references;
};

struct LabelSelectorRequirement {
  std::string key, op;  // op: In, NotIn, Exists, DoesNotExist
  std::vector<std::string> values;
};

/** A metav1.LabelSelector. An empty (non-null) selector matches everything. */
struct LabelSelector {
  Labels match_labels;
  std::vector<LabelSelectorRequirement> match_expressions;
};

struct NodeSelectorRequirement {
  std::string key, op;  // In, NotIn, Exists, DoesNotExist, Gt, Lt
  std::vector<std::string> values;
};

struct NodeSelectorTerm {
  std::vector<NodeSelectorRequirement> match_expressions;
  std::vector<NodeSelectorRequirement> match_fields;
};

struct NodeSelector {
  std::vector<NodeSelectorTerm> terms;
};

struct PreferredSchedulingTerm {
  int32_t weight = 0;
  NodeSelectorTerm preference;
};

struct NodeAffinity {
  std::optional<NodeSelector> required;
  std::vector<PreferredSchedulingTerm> preferred;
  bool preferred_set = false;  // the list was given, even empty (NodeAffinity PreScore)
};

struct PodAffinityTerm {
  std::optional<LabelSelector> label_selector;
  std::vector<std::string> namespaces;
  std::optional<LabelSelector> namespace_selector;
  std::string topology_key;
  std::vector<std::string> match_label_keys;
  std::vector<std::string> mismatch_label_keys;
};

struct WeightedPodAffinityTerm {
  int32_t weight = 0;
  PodAffinityTerm term;
};

struct PodAffinity {
  std::vector<PodAffinityTerm> required;
  std::vector<WeightedPodAffinityTerm> preferred;
};

struct Affinity {
  std::optional<NodeAffinity> node_affinity;
  std::optional<PodAffinity> pod_affinity;
  std::optional<PodAffinity> pod_anti_affinity;
};

struct Toleration {
  std::string key, op, value, effect;  // op: "" (Equal), Equal, Exists
  std::optional<int64_t> toleration_seconds;
};

struct TopologySpreadConstraint {
  int32_t max_skew = 0;
  std::string topology_key;
  std::string when_unsatisfiable;  // DoNotSchedule, ScheduleAnyway
  std::optional<LabelSelector> label_selector;
  std::optional<int32_t> min_domains;
  std::optional<std::string> node_affinity_policy;  // Honor, Ignore
  std::optional<std::string> node_taints_policy;    // Honor, Ignore
  std::vector<std::string> match_label_keys;
};

struct ContainerPort {
  int32_t container_port = 0;
  int32_t host_port = 0;
  std::string protocol = "TCP";
  std::string host_ip;
};

struct Container {
  std::string name, image;
  ResourceList requests, limits;
  std::optional<std::string> restart_policy;  // "Always" marks a sidecar init container
  std::vector<ContainerPort> ports;
};

/** A pod volume: the source kind and the fields scheduling plugins read. */
struct Volume {
  std::string name;
  std::string source;  // persistentVolumeClaim, ephemeral, hostPath, image, gcePersistentDisk, ...
  std::string claim_name;  // persistentVolumeClaim.claimName
  bool read_only = false;
  std::string image_reference;  // image.reference
  std::string disk_id;          // gce pdName / aws volumeID / azure diskName / rbd, iscsi ids
  std::string source_json;      // the whole source object as JSON, for plugins that need more
};

/** A pod status condition (only what scheduling reads). */
struct PodCondition {
  std::string type, status, reason, message;
};

/** spec.resourceClaims[]: a claim by name or from a template. */
struct PodResourceClaim {
  std::string name, resource_claim_name, resource_claim_template_name;
};

/** status.resourceClaimStatuses[]: the claim generated from a template for pod claim
 *  `name`; no resource_claim_name means none was needed. */
struct PodResourceClaimStatus {
  std::string name;
  std::optional<std::string> resource_claim_name;
};

struct Pod {
  ObjectMeta meta;
  std::string node_name;
  std::string scheduler_name = "default-scheduler";
  std::optional<int32_t> priority;
  std::string priority_class_name;
  std::string preemption_policy;  // spec.preemptionPolicy: "" (PreemptLowerPriority) or Never
  std::vector<Container> containers, init_containers;
  ResourceList overhead;
  std::optional<ResourceList> pod_requests, pod_limits;  // spec.resources
  std::map<std::string, std::string> node_selector;
  bool node_selector_set = false;  // spec.nodeSelector was given, even {} (NodeAffinity PreFilter)
  std::optional<Affinity> affinity;
  std::vector<Toleration> tolerations;
  std::vector<TopologySpreadConstraint> topology_spread_constraints;
  std::vector<Volume> volumes;
  std::vector<std::string> scheduling_gates;        // spec.schedulingGates[].name
  std::vector<PodResourceClaim> resource_claims;    // spec.resourceClaims
  std::vector<PodResourceClaimStatus> resource_claim_statuses;  // status.resourceClaimStatuses
  std::string phase;  // status.phase
  std::string nominated_node_name;        // status.nominatedNodeName
  std::optional<int64_t> start_time_ns;  // status.startTime, nanoseconds since the epoch
  std::vector<PodCondition> conditions;   // status.conditions
  std::string scheduling_group;  // spec.schedulingGroup.podGroupName: its PodGroup in its namespace, "" when none
};

struct Taint {
  std::string key, value, effect;
  bool operator==(const Taint& o) const { return key == o.key && value == o.value && effect == o.effect; }
};

struct ContainerImage {
  std::vector<std::string> names;
  int64_t size_bytes = 0;
  bool operator==(const ContainerImage& o) const { return names == o.names && size_bytes == o.size_bytes; }
};

struct Node {
  ObjectMeta meta;
  bool unschedulable = false;
  std::vector<Taint> taints;
  ResourceList allocatable, capacity;
  std::vector<ContainerImage> images;
};

/** Objects kept as JSON text for plugins that arrive later (storage, workloads). */
struct GenericObject {
  std::string kind;
  ObjectMeta meta;
  std::string json;
};

struct Namespace { ObjectMeta meta; };

/** A Service, ReplicaSet, StatefulSet or ReplicationController: what selects pods. */
struct Workload {
  std::string kind;
  ObjectMeta meta;
  // Services and ReplicationControllers carry a plain map; apps/v1 kinds a LabelSelector.
  std::optional<LabelSelector> selector;
};

/** A policy/v1 PodDisruptionBudget: what preemption reads of it. */
struct PodDisruptionBudget {
  ObjectMeta meta;
  std::optional<LabelSelector> selector;  // spec.selector; null matches nothing
  int32_t disruptions_allowed = 0;        // status.disruptionsAllowed
  std::vector<std::string> disrupted_pods;  // keys of status.disruptedPods, sorted
};

/** A scheduling.k8s.io/v1 PriorityClass. */
struct PriorityClass {
  ObjectMeta meta;
  int32_t value = 0;
  bool global_default = false;
  std::string preemption_policy;  // "" (PreemptLowerPriority) or Never
};

/** A scheduling.k8s.io/v1beta1 PodGroup: what the PodGroup cycle reads of it. */
struct PodGroup {
  ObjectMeta meta;
  /** spec.schedulingPolicy.gang.minCount; absent: the basic policy (no count required). */
  std::optional<int32_t> min_count;
  std::optional<int32_t> priority;  // spec.priority; absent: admission's, from priorityClassName
  std::string priority_class_name;
};

// ---- resource.k8s.io (v1; v1beta2 and v1beta1 read into the same shapes) ----

/** A subrequest of spec.devices.requests[].firstAvailable. */
struct DeviceSubRequest {
  std::string name, device_class_name;
};

/** spec.devices.requests[] of a ResourceClaim or ResourceClaimTemplate: what
 *  DynamicResources checks before it allocates (the selectors and counts are the
 *  allocator's, which kplace does not run). */
struct DeviceRequest {
  std::string name;
  bool exactly = false;             // exactly is set (v1beta1: deviceClassName on the request)
  std::string device_class_name;    // exactly.deviceClassName
  std::vector<DeviceSubRequest> first_available;
};

/** status.reservedFor[] of a ResourceClaim. */
struct ResourceClaimConsumerReference {
  std::string api_group, resource, name, uid;
};

/** ResourceClaimReservedForMaxSize: the API server admits at most this many consumers. */
constexpr size_t kResourceClaimReservedForMaxSize = 256;

struct ResourceClaim {
  ObjectMeta meta;
  std::vector<DeviceRequest> requests;                     // spec.devices.requests
  bool allocated = false;                                  // status.allocation is set
  std::optional<NodeSelector> allocation_node_selector;    // status.allocation.nodeSelector
  std::vector<ResourceClaimConsumerReference> reserved_for;  // status.reservedFor
};

/** Kept for completeness of a dump: the scheduler never reads templates (the claim
 *  controller creates claims from them). */
struct ResourceClaimTemplate {
  ObjectMeta meta;
  std::vector<DeviceRequest> requests;  // spec.spec.devices.requests
};

struct DeviceClass {
  ObjectMeta meta;
  std::string extended_resource_name;  // spec.extendedResourceName ("" when unset)
};

/** Decoded but unused: only the allocator reads slices, and kplace refuses to allocate. */
struct ResourceSlice {
  ObjectMeta meta;
  std::string driver, pool, node_name;  // spec.driver, spec.pool.name, spec.nodeName
  bool all_nodes = false;               // spec.allNodes
  std::optional<NodeSelector> node_selector;  // spec.nodeSelector
  int64_t devices = 0;                  // len(spec.devices)
};

/** Everything decoded from a set of files, in input order. */
struct ObjectSet {
  std::vector<Node> nodes;
  std::vector<Pod> pods;
  std::vector<Namespace> namespaces;
  std::vector<Workload> workloads;
  std::vector<GenericObject> storage;  // PV, PVC, StorageClass, CSINode, CSIDriver, ...
  std::vector<GenericObject> configs;  // KubeSchedulerConfiguration documents
  std::vector<PodDisruptionBudget> pdbs;
  std::vector<PriorityClass> priority_classes;
  std::vector<PodGroup> pod_groups;
  std::vector<ResourceClaim> resource_claims;
  std::vector<ResourceClaimTemplate> resource_claim_templates;
  std::vector<DeviceClass> device_classes;
  std::vector<ResourceSlice> resource_slices;
};

}  // namespace kplace
