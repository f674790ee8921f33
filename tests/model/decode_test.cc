#include "kplace/model/decode.h"
#include "kplace/model/decode_notes.h"

#include "kplace/common/strings.h"

#include <filesystem>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

namespace kplace {
namespace {

using json = nlohmann::json;

absl::Status DecodeText(const std::string& text, ObjectSet* out, const std::string& file = "pods.yaml") {
  auto docs = ParseDocuments(text, file);
  if (!docs.ok()) return docs.status();
  for (const json& d : *docs) {
    absl::Status s = DecodeDocument(d, file, out);
    if (!s.ok()) return s;
  }
  return absl::OkStatus();
}

TEST(DecodeTest, PodFieldsThatSchedulingReads) {
  const char* yaml = R"(
apiVersion: v1
kind: Pod
metadata:
  name: web-1
  namespace: shop
  labels: {app: web}
  creationTimestamp: "2024-01-02T03:04:05Z"
  ownerReferences: [{apiVersion: apps/v1, kind: ReplicaSet, name: web-abc, uid: u1, controller: true}]
spec:
  schedulerName: batch
  priority: 7
  nodeSelector: {disk: ssd}
  overhead: {cpu: 10m}
  resources: {requests: {cpu: "1"}}
  initContainers:
    - name: sidecar
      restartPolicy: Always
      image: envoy
      resources: {requests: {cpu: 250m, memory: 64Mi}}
  containers:
    - name: main
      image: nginx:1.27
      ports: [{containerPort: 80, hostPort: 8080, protocol: UDP, hostIP: 10.0.0.1}]
      resources:
        requests: {cpu: 1.5, memory: 1Gi, nvidia.com/gpu: 1}
        limits: {memory: 2Gi}
  tolerations: [{key: dedicated, operator: Equal, value: gpu, effect: NoSchedule, tolerationSeconds: 30}]
  affinity:
    nodeAffinity:
      requiredDuringSchedulingIgnoredDuringExecution:
        nodeSelectorTerms: [{matchExpressions: [{key: zone, operator: In, values: [a, b]}], matchFields: [{key: metadata.name, operator: In, values: [n1]}]}]
      preferredDuringSchedulingIgnoredDuringExecution: [{weight: 5, preference: {matchExpressions: [{key: gen, operator: Gt, values: ["3"]}]}}]
    podAntiAffinity:
      preferredDuringSchedulingIgnoredDuringExecution:
        - weight: 10
          podAffinityTerm:
            labelSelector: {matchLabels: {app: web}}
            topologyKey: kubernetes.io/hostname
            namespaceSelector: {}
            matchLabelKeys: [pod-template-hash]
  topologySpreadConstraints:
    - {maxSkew: 2, topologyKey: zone, whenUnsatisfiable: DoNotSchedule, labelSelector: {matchLabels: {app: web}}, minDomains: 3, nodeAffinityPolicy: Ignore, nodeTaintsPolicy: Honor, matchLabelKeys: [v]}
  volumes:
    - {name: data, persistentVolumeClaim: {claimName: data-web-1}}
    - {name: tmp, emptyDir: {}}
)";
  ObjectSet set;
  ASSERT_TRUE(DecodeText(yaml, &set).ok());
  ASSERT_EQ(set.pods.size(), 1u);
  const Pod& p = set.pods[0];
  EXPECT_EQ(ObjectKey(p.meta), "shop/web-1");
  EXPECT_EQ(p.meta.creation_unix, 1704164645);
  EXPECT_TRUE(p.meta.owner_references[0].controller);
  EXPECT_EQ(p.scheduler_name, "batch");
  EXPECT_EQ(*p.priority, 7);
  EXPECT_EQ(p.node_selector.at("disk"), "ssd");
  EXPECT_EQ(p.overhead.at("cpu").MilliValue(), 10);
  EXPECT_EQ(p.pod_requests->at("cpu").MilliValue(), 1000);
  EXPECT_EQ(*p.init_containers[0].restart_policy, "Always");
  EXPECT_EQ(p.containers[0].requests.at("cpu").MilliValue(), 1500);
  EXPECT_EQ(p.containers[0].requests.at("nvidia.com/gpu").Value(), 1);
  EXPECT_EQ(p.containers[0].limits.at("memory").Value(), 2LL << 30);
  EXPECT_EQ(p.containers[0].ports[0].host_port, 8080);
  EXPECT_EQ(p.containers[0].ports[0].protocol, "UDP");
  EXPECT_EQ(p.containers[0].ports[0].host_ip, "10.0.0.1");
  EXPECT_EQ(*p.tolerations[0].toleration_seconds, 30);
  const NodeAffinity& na = *p.affinity->node_affinity;
  EXPECT_EQ(na.required->terms[0].match_expressions[0].values, (std::vector<std::string>{"a", "b"}));
  EXPECT_EQ(na.required->terms[0].match_fields[0].key, "metadata.name");
  EXPECT_EQ(na.preferred[0].weight, 5);
  EXPECT_EQ(na.preferred[0].preference.match_expressions[0].values[0], "3");
  const WeightedPodAffinityTerm& w = p.affinity->pod_anti_affinity->preferred[0];
  EXPECT_EQ(w.weight, 10);
  EXPECT_TRUE(w.term.namespace_selector.has_value());
  EXPECT_TRUE(w.term.namespace_selector->match_labels.empty());
  EXPECT_EQ(w.term.match_label_keys[0], "pod-template-hash");
  const TopologySpreadConstraint& c = p.topology_spread_constraints[0];
  EXPECT_EQ(c.max_skew, 2);
  EXPECT_EQ(*c.min_domains, 3);
  EXPECT_EQ(*c.node_affinity_policy, "Ignore");
  EXPECT_EQ(p.volumes[0].claim_name, "data-web-1");
  EXPECT_EQ(p.volumes[1].source, "emptyDir");
}

TEST(DecodeTest, NodeListMultiDocumentAndWorkloads) {
  const char* yaml = R"(
apiVersion: v1
kind: List
items:
  - kind: Node
    metadata: {name: n1, labels: {topology.kubernetes.io/zone: z1}}
    spec: {unschedulable: true, taints: [{key: k, value: v, effect: NoExecute}]}
    status:
      allocatable: {cpu: 3920m, memory: 15Gi, pods: "110", hugepages-2Mi: "0"}
      images: [{names: ["nginx@sha256:abc", "nginx:1.27"], sizeBytes: 12345}]
---
apiVersion: v1
kind: Service
metadata: {name: web, namespace: shop}
spec: {selector: {app: web}}
---
apiVersion: apps/v1
kind: ReplicaSet
metadata: {name: web-abc, namespace: shop}
spec: {selector: {matchExpressions: [{key: app, operator: In, values: [web]}]}}
---
kind: Namespace
metadata: {name: shop, labels: {team: a}}
---
kind: PersistentVolumeClaim
metadata: {name: data}
spec: {storageClassName: fast}
)";
  ObjectSet set;
  ASSERT_TRUE(DecodeText(yaml, &set).ok());
  ASSERT_EQ(set.nodes.size(), 1u);
  EXPECT_TRUE(set.nodes[0].unschedulable);
  EXPECT_EQ(set.nodes[0].taints[0].effect, "NoExecute");
  EXPECT_EQ(set.nodes[0].allocatable.at("cpu").MilliValue(), 3920);
  EXPECT_EQ(set.nodes[0].images[0].size_bytes, 12345);
  ASSERT_EQ(set.workloads.size(), 2u);
  EXPECT_EQ(set.workloads[0].selector->match_labels.at("app"), "web");
  EXPECT_EQ(set.workloads[1].selector->match_expressions[0].op, "In");
  EXPECT_EQ(set.namespaces[0].meta.labels.at("team"), "a");
  ASSERT_EQ(set.storage.size(), 1u);
  EXPECT_EQ(set.storage[0].meta.namespace_, "default");
}

TEST(DecodeTest, BadInputNamesFileObjectAndField) {
  struct Case {
    const char* text;
    const char* error;
  };
  const Case cases[] = {
      {"kind: Pod\nmetadata: {name: web-1}\nspec: {containers: [{name: c, resources: {requests: {cpu: 12x}}}]}",
       "pods.yaml: Pod default/web-1: spec.containers[0].resources.requests.cpu: invalid quantity \"12x\""},
      {"kind: Pod\nmetadata: {name: p, namespace: ns}\nspec: {priority: high}",
       "pods.yaml: Pod ns/p: spec.priority: expected an integer, got \"high\""},
      {"kind: Node\nmetadata: {name: n}\nspec: {taints: {key: a}}", "pods.yaml: Node n: spec.taints: expected a list, got object"},
      {"kind: Pod\nmetadata: {labels: {a: b}}", "pods.yaml: Pod default/<unnamed>: metadata.name: missing"},
      {"kind: Widget\nmetadata: {name: w}", "pods.yaml: Widget w: kind: unsupported kind \"Widget\""},
      {"metadata: {name: w}", "pods.yaml: object w: kind: missing"},
      {"kind: Pod\nmetadata: {name: p, creationTimestamp: yesterday}", "pods.yaml: Pod default/p: metadata.creationTimestamp: invalid time \"yesterday\""},
      {"kind: Pod\nmetadata: {name: p}\nspec: {containers: [{ports: [{hostPort: 70000}]}]}",
       "pods.yaml: Pod default/p: spec.containers[0].ports[0].hostPort: out of range: 70000"},
      {"{\"kind\": \"Pod\", ", "pods.yaml: invalid JSON"},
      {"kind: Pod\n  metadata: [", "pods.yaml: invalid YAML at line"},
  };
  for (const Case& c : cases) {
    ObjectSet set;
    absl::Status s = DecodeText(c.text, &set);
    EXPECT_FALSE(s.ok()) << c.text;
    EXPECT_NE(std::string(s.message()).find(c.error), std::string::npos) << "got: " << s.message();
  }
}

TEST(DecodeTest, UnreadableFileIsNotFound) {
  ObjectSet set;
  absl::Status s = DecodeFile("/nonexistent/nodes.json", &set);
  EXPECT_EQ(s.code(), absl::StatusCode::kNotFound);
  EXPECT_NE(std::string(s.message()).find("/nonexistent/nodes.json"), std::string::npos);
}

// Every real `kubectl` dump under shared/realworld must be ingested, none silently dropped.
TEST(DecodeTest, IngestsEveryRealWorldDump) {
  std::filesystem::path dir = std::filesystem::path(KPLACE_SHARED_DIR) / "realworld";
  if (!std::filesystem::exists(dir)) GTEST_SKIP() << "no " << dir;
  int files = 0;
  for (const auto& entry : std::filesystem::directory_iterator(dir)) {
    std::string ext = entry.path().extension();
    if (ext != ".json" && ext != ".yaml") continue;
    ObjectSet set;
    absl::Status s = DecodeFile(entry.path(), &set);  // no unknown kind either
    EXPECT_TRUE(s.ok()) << s;
    EXPECT_GT(set.nodes.size() + set.pods.size(), 0u) << entry.path();
    ++files;
  }
  EXPECT_GE(files, 20);
}

TEST(DecodeTest, UnknownKindsAreCountedWhenAsked) {
  const char* yaml = R"(
kind: List
items:
  - {kind: HorizontalPodAutoscaler, metadata: {name: h1, namespace: a}}
  - {kind: HorizontalPodAutoscaler, metadata: {name: h2, namespace: a}}
  - {kind: CustomResourceDefinition, metadata: {name: widgets.example.com}}
  - {kind: Deployment, metadata: {name: d}}
  - kind: Pod
    metadata: {name: p}
    spec:
      containers: [{name: c}]
      schedulingGates: [{name: example.com/quota}, {name: example.com/gang}]
      resourceClaims: [{name: gpu, resourceClaimName: gpu-claim}, {name: t, resourceClaimTemplateName: tmpl}]
)";
  auto docs = ParseDocuments(yaml, "dump.yaml");
  ASSERT_TRUE(docs.ok());
  ObjectSet set;
  SkippedKinds skipped;
  ASSERT_TRUE(DecodeDocument((*docs)[0], "dump.yaml", &set, &skipped).ok());
  EXPECT_EQ(SkippedLine(skipped),
            "skipped: 1 CustomResourceDefinition, 1 Deployment, 2 HorizontalPodAutoscaler (not used by scheduling)");
  ASSERT_EQ(set.pods.size(), 1u);
  EXPECT_EQ(set.pods[0].scheduling_gates, (std::vector<std::string>{"example.com/quota", "example.com/gang"}));
  ASSERT_EQ(set.pods[0].resource_claims.size(), 2u);
  EXPECT_EQ(set.pods[0].resource_claims[0].resource_claim_name, "gpu-claim");
  EXPECT_EQ(set.pods[0].resource_claims[1].resource_claim_template_name, "tmpl");
  EXPECT_EQ(SkippedLine({}), "");
  // Without a counter an unknown kind is still an error (bench workloads, conformance cases).
  ObjectSet strict;
  EXPECT_FALSE(DecodeDocument((*docs)[0], "dump.yaml", &strict).ok());
}

TEST(DecodeTest, PreemptionFieldsPdbsAndPriorityClasses) {
  const char* yaml = R"(
apiVersion: v1
kind: Pod
metadata: {name: victim, namespace: jobs, uid: u-1, deletionTimestamp: "2024-01-02T03:04:05Z"}
spec: {nodeName: n1, priority: -5, preemptionPolicy: Never, containers: [{name: c}]}
status:
  nominatedNodeName: n2
  startTime: "2024-01-02T03:04:05.5Z"
  conditions: [{type: DisruptionTarget, status: "True", reason: PreemptionByScheduler}]
---
apiVersion: policy/v1
kind: PodDisruptionBudget
metadata: {name: pdb, namespace: jobs}
spec: {selector: {matchLabels: {app: a}}}
status: {disruptionsAllowed: 2, disruptedPods: {z: "2024-01-02T03:04:05Z", b: "2024-01-02T03:04:05Z"}}
---
apiVersion: scheduling.k8s.io/v1
kind: PriorityClass
metadata: {name: high}
value: 1000
globalDefault: true
preemptionPolicy: Never
)";
  ObjectSet set;
  ASSERT_TRUE(DecodeText(yaml, &set).ok());
  ASSERT_EQ(set.pods.size(), 1u);
  const Pod& p = set.pods[0];
  EXPECT_EQ(p.priority, -5);
  EXPECT_EQ(p.preemption_policy, "Never");
  EXPECT_EQ(p.nominated_node_name, "n2");
  ASSERT_TRUE(p.start_time_ns.has_value());
  EXPECT_EQ(*p.start_time_ns, int64_t{1704164645} * 1000000000 + 500000000);
  ASSERT_EQ(p.conditions.size(), 1u);
  EXPECT_EQ(p.conditions[0].reason, "PreemptionByScheduler");
  ASSERT_EQ(set.pdbs.size(), 1u);
  EXPECT_EQ(set.pdbs[0].meta.namespace_, "jobs");
  EXPECT_EQ(set.pdbs[0].disruptions_allowed, 2);
  EXPECT_EQ(set.pdbs[0].disrupted_pods, (std::vector<std::string>{"b", "z"}));
  ASSERT_TRUE(set.pdbs[0].selector.has_value());
  EXPECT_EQ(set.pdbs[0].selector->match_labels.at("app"), "a");
  ASSERT_EQ(set.priority_classes.size(), 1u);
  EXPECT_EQ(set.priority_classes[0].value, 1000);
  EXPECT_TRUE(set.priority_classes[0].global_default);
}

TEST(DecodeTest, BadPreemptionFieldsNameTheField) {
  struct Bad {
    const char* yaml;
    const char* want;
  };
  const Bad cases[] = {
      {"kind: Pod\nmetadata: {name: p}\nspec: {preemptionPolicy: Sometimes, containers: [{name: c}]}",
       "pods.yaml: Pod default/p: spec.preemptionPolicy: Unsupported value: \"Sometimes\""},
      {"kind: Pod\nmetadata: {name: p}\nspec: {containers: [{name: c}]}\nstatus: {startTime: yesterday}",
       "pods.yaml: Pod default/p: status.startTime: invalid time \"yesterday\""},
      {"kind: PodDisruptionBudget\nmetadata: {name: b}\nstatus: {disruptionsAllowed: -1}",
       "pods.yaml: PodDisruptionBudget default/b: status.disruptionsAllowed: must be greater than or equal to 0"},
      {"kind: PriorityClass\nmetadata: {name: c}", "pods.yaml: PriorityClass c: value: Required value"},
      {"kind: PriorityClass\nmetadata: {name: c}\nvalue: 99999999999",
       "pods.yaml: PriorityClass c: value: integer out of range"},
  };
  for (const Bad& b : cases) {
    ObjectSet set;
    absl::Status s = DecodeText(b.yaml, &set);
    ASSERT_FALSE(s.ok()) << b.yaml;
    EXPECT_EQ(std::string(s.message()).rfind(b.want, 0), 0u) << s.message();
  }
}

// resource.k8s.io kinds: what DynamicResources reads, the same from v1, v1beta2 and v1beta1.
TEST(DecodeTest, ResourceKindsAcrossVersions) {
  const char* yaml = R"(
apiVersion: resource.k8s.io/v1
kind: ResourceClaim
metadata: {name: gpu, namespace: ml, uid: c1, ownerReferences: [{apiVersion: v1, kind: Pod, name: p, uid: u1, controller: true}]}
spec:
  devices:
    requests:
      - {name: one, exactly: {deviceClassName: gpu.example.com, count: 1}}
      - name: any
        firstAvailable: [{name: big, deviceClassName: big.example.com}, {name: small, deviceClassName: small.example.com}]
status:
  allocation:
    nodeSelector: {nodeSelectorTerms: [{matchFields: [{key: metadata.name, operator: In, values: [n1]}]}]}
  reservedFor: [{resource: pods, name: p, uid: u1}]
---
apiVersion: resource.k8s.io/v1beta1
kind: ResourceClaim
metadata: {name: old}
spec: {devices: {requests: [{name: r, deviceClassName: gpu.example.com}]}}
status: {allocation: {devices: {results: []}}}
---
apiVersion: resource.k8s.io/v1beta2
kind: ResourceClaimTemplate
metadata: {name: tmpl, namespace: ml}
spec: {spec: {devices: {requests: [{name: r, exactly: {deviceClassName: gpu.example.com}}]}}}
---
apiVersion: resource.k8s.io/v1
kind: DeviceClass
metadata: {name: gpu.example.com}
spec: {extendedResourceName: example.com/gpu, selectors: [{cel: {expression: "true"}}]}
---
apiVersion: resource.k8s.io/v1
kind: ResourceSlice
metadata: {name: n1-gpu}
spec: {driver: gpu.example.com, pool: {name: n1, generation: 1, resourceSliceCount: 1}, nodeName: n1,
       devices: [{name: gpu-0}, {name: gpu-1}]}
---
kind: Pod
metadata: {name: p, namespace: ml}
spec: {containers: [{name: c}], resourceClaims: [{name: g, resourceClaimTemplateName: tmpl}, {name: h, resourceClaimTemplateName: tmpl}]}
status: {resourceClaimStatuses: [{name: g, resourceClaimName: p-g-x7k2q}, {name: h}]}
)";
  ObjectSet set;
  absl::Status s = DecodeText(yaml, &set);
  ASSERT_TRUE(s.ok()) << s;
  ASSERT_EQ(set.resource_claims.size(), 2u);
  const ResourceClaim& c = set.resource_claims[0];
  EXPECT_EQ(ObjectKey(c.meta), "ml/gpu");
  ASSERT_EQ(c.requests.size(), 2u);
  EXPECT_TRUE(c.requests[0].exactly);
  EXPECT_EQ(c.requests[0].device_class_name, "gpu.example.com");
  ASSERT_EQ(c.requests[1].first_available.size(), 2u);
  EXPECT_EQ(c.requests[1].first_available[1].device_class_name, "small.example.com");
  EXPECT_TRUE(c.allocated);
  ASSERT_TRUE(c.allocation_node_selector.has_value());
  EXPECT_EQ(c.allocation_node_selector->terms[0].match_fields[0].values, std::vector<std::string>{"n1"});
  ASSERT_EQ(c.reserved_for.size(), 1u);
  EXPECT_EQ(c.reserved_for[0].uid, "u1");
  // v1beta1 names the class on the request itself; an allocation without a selector is any node.
  const ResourceClaim& old = set.resource_claims[1];
  EXPECT_EQ(ObjectKey(old.meta), "default/old");
  EXPECT_TRUE(old.requests[0].exactly);
  EXPECT_EQ(old.requests[0].device_class_name, "gpu.example.com");
  EXPECT_TRUE(old.allocated);
  EXPECT_FALSE(old.allocation_node_selector.has_value());
  ASSERT_EQ(set.resource_claim_templates.size(), 1u);
  EXPECT_EQ(set.resource_claim_templates[0].requests[0].device_class_name, "gpu.example.com");
  ASSERT_EQ(set.device_classes.size(), 1u);
  EXPECT_EQ(set.device_classes[0].extended_resource_name, "example.com/gpu");
  ASSERT_EQ(set.resource_slices.size(), 1u);
  EXPECT_EQ(set.resource_slices[0].node_name, "n1");
  EXPECT_EQ(set.resource_slices[0].pool, "n1");
  EXPECT_EQ(set.resource_slices[0].devices, 2);
  ASSERT_EQ(set.pods.size(), 1u);
  const auto& statuses = set.pods[0].resource_claim_statuses;
  ASSERT_EQ(statuses.size(), 2u);
  EXPECT_EQ(statuses[0].resource_claim_name, std::optional<std::string>("p-g-x7k2q"));
  EXPECT_FALSE(statuses[1].resource_claim_name.has_value());  // no claim was needed
}

TEST(DecodeTest, BadResourceFieldsNameTheField) {
  struct Bad {
    const char* yaml;
    const char* want;
  };
  std::string many = "kind: ResourceClaim\nmetadata: {name: c}\nstatus:\n  allocation: {}\n  reservedFor:\n";
  for (int i = 0; i <= 256; ++i) many += StrCat("    - {resource: pods, name: p", i, ", uid: u", i, "}\n");
  const Bad cases[] = {
      {"apiVersion: resource.k8s.io/v1alpha3\nkind: ResourceClaim\nmetadata: {name: c}",
       "pods.yaml: ResourceClaim default/c: apiVersion: unsupported version \"resource.k8s.io/v1alpha3\": kplace reads "
       "resource.k8s.io/v1, v1beta2 and v1beta1"},
      {"kind: ResourceClaim\nmetadata: {name: c}\nspec: {devices: {requests: [{name: r}]}}",
       "pods.yaml: ResourceClaim default/c: spec.devices.requests[0]: Invalid value: exactly one of exactly or "
       "firstAvailable must be set"},
      {"kind: ResourceClaim\nmetadata: {name: c}\nspec: {devices: {requests: [{name: r, exactly: {}}]}}",
       "pods.yaml: ResourceClaim default/c: spec.devices.requests[0].exactly.deviceClassName: Required value"},
      {"kind: ResourceClaim\nmetadata: {name: c}\nstatus: {allocation: {nodeSelector: {nodeSelectorTerms: []}}}",
       "pods.yaml: ResourceClaim default/c: status.allocation.nodeSelector.nodeSelectorTerms: Required value: must "
       "have at least one node selector term"},
      {"kind: ResourceClaim\nmetadata: {name: c}\nstatus: {allocation: {nodeSelector: {nodeSelectorTerms: "
       "[{matchExpressions: [{key: k, operator: Near}]}]}}}",
       "pods.yaml: ResourceClaim default/c: status.allocation.nodeSelector.nodeSelectorTerms[0].matchExpressions[0]."
       "operator: Invalid value: \"Near\": not a valid selector operator"},
      {"kind: ResourceClaim\nmetadata: {name: c}\nstatus: {reservedFor: [{resource: pods, name: p}]}",
       "pods.yaml: ResourceClaim default/c: status.reservedFor[0].uid: Required value"},
      {many.c_str(), "pods.yaml: ResourceClaim default/c: status.reservedFor: Too many: 257: must have at most 256 items"},
      {"kind: DeviceClass\nmetadata: {name: Bad_Name}",
       "pods.yaml: DeviceClass Bad_Name: metadata.name: Invalid value: \"Bad_Name\""},
      {"kind: ResourceSlice\nmetadata: {name: s}\nspec: {devices: []}", "pods.yaml: ResourceSlice s: spec.driver: Required value"},
      {"kind: Pod\nmetadata: {name: p}\nspec: {resourceClaims: [{name: g}]}",
       "pods.yaml: Pod default/p: spec.resourceClaims[0]: Invalid value: must specify one of: `resourceClaimName`, "
       "`resourceClaimTemplateName`"},
      {"kind: Pod\nmetadata: {name: p}\nspec: {containers: [{name: c}]}\nstatus: {resourceClaimStatuses: [{name: g, resourceClaimName: 7}]}",
       "pods.yaml: Pod default/p: status.resourceClaimStatuses[0].resourceClaimName: expected a string, got number"},
  };
  for (const Bad& b : cases) {
    ObjectSet set;
    absl::Status s = DecodeText(b.yaml, &set);
    ASSERT_FALSE(s.ok()) << b.yaml;
    EXPECT_EQ(std::string(s.message()).rfind(b.want, 0), 0u) << s.message();
  }
}

TEST(DecodeTest, ResolvePrioritiesAsAdmissionDoes) {
  ObjectSet cluster;
  PriorityClass high, low;
  high.meta.name = "high";
  high.value = 1000;
  high.preemption_policy = "Never";
  low.meta.name = "low";
  low.value = -10;
  low.global_default = true;
  cluster.priority_classes = {high, low};
  std::vector<Pod> pods(5);
  for (size_t i = 0; i < pods.size(); ++i) pods[i].meta = {StrCat("p", i), "default"};
  pods[0].priority_class_name = "high";
  pods[1].priority = 7;  // spec.priority wins
  pods[1].priority_class_name = "high";
  pods[3].priority_class_name = "system-node-critical";
  pods[4].priority_class_name = "system-cluster-critical";
  ASSERT_TRUE(ResolvePriorities(cluster, &pods, "pods.json").ok());
  EXPECT_EQ(pods[0].priority, 1000);
  EXPECT_EQ(pods[0].preemption_policy, "Never");
  EXPECT_EQ(pods[1].priority, 7);
  EXPECT_EQ(pods[2].priority, -10);  // the global default
  EXPECT_EQ(pods[2].preemption_policy, "");
  EXPECT_EQ(pods[3].priority, 2000001000);
  EXPECT_EQ(pods[4].priority, 2000000000);

  std::vector<Pod> unknown(1);
  unknown[0].meta = {"q", "ns"};
  unknown[0].priority_class_name = "missing";
  absl::Status s = ResolvePriorities(cluster, &unknown, "pods.json");
  EXPECT_EQ(s.message(), "pods.json: Pod ns/q: spec.priorityClassName: no PriorityClass with name missing was found");

  cluster.priority_classes.clear();
  std::vector<Pod> plain(1);
  ASSERT_TRUE(ResolvePriorities(cluster, &plain, "pods.json").ok());
  EXPECT_FALSE(plain[0].priority.has_value());  // no class at all: priority 0
}

// Inputs that used to hang, exhaust memory or overflow the stack get an error naming the
// file and, where there is one, the line.
TEST(DecodeTest, HostileTextIsRefusedQuickly) {
  std::string bomb = "a: &a [x, x, x, x, x, x, x, x, x]\n";
  std::string prev = "a";
  for (char c = 'b'; c <= 'j'; ++c) {
    std::string name(1, c);
    bomb += name + ": &" + name + " [";
    for (int k = 0; k < 9; ++k) bomb += (k ? ", *" : "*") + prev;
    bomb += "]\n";
    prev = name;
  }
  struct Bad {
    std::string text, want;
  };
  const Bad cases[] = {
      {",", "f.yaml: invalid YAML at line 1: the parser cannot advance"},
      {"kind: Pod\n,\n", "f.yaml: invalid YAML"},
      {bomb, "f.yaml: invalid YAML at line 7: aliases expand to too many nodes"},
      {"a: 1\nb: 2\na: 3\n", "f.yaml: invalid YAML at line 3: duplicate key \"a\""},
      {"a: *nowhere\n", "f.yaml: invalid YAML"},
      {"{\"a\": " + std::string(100000, '[') + std::string(100000, ']') + "}",
       "f.yaml: JSON nested deeper than 256 levels at line 1"},
      {"a: " + std::string(100000, '[') + std::string(100000, ']'), "f.yaml: YAML nested deeper than 256 levels at line 1"},
  };
  for (const Bad& b : cases) {
    auto docs = ParseDocuments(b.text, "f.yaml");
    ASSERT_FALSE(docs.ok()) << b.text.substr(0, 40);
    EXPECT_EQ(std::string(docs.status().message()).rfind(b.want, 0), 0u) << docs.status();
  }
  // Brackets inside strings do not count; 256 levels still parse.
  EXPECT_TRUE(ParseDocuments("a: \"" + std::string(1000, '[') + "\"", "f.yaml").ok());
  EXPECT_TRUE(ParseDocuments(std::string(256, '[') + std::string(256, ']'), "f.json").ok());
  // Anchors and aliases of ordinary size still expand.
  auto docs = ParseDocuments("a: &t {x: 1}\nb: *t\n", "f.yaml");
  ASSERT_TRUE(docs.ok()) << docs.status();
  EXPECT_EQ((*docs)[0]["b"]["x"], 1);
}

TEST(DecodeTest, OutOfRangeNumbersAreErrors) {
  const char* cases[] = {
      R"({"kind": "Pod", "metadata": {"name": "p"}, "spec": {"priority": 18446744073709551615}})",
      R"({"kind": "Pod", "metadata": {"name": "p"}, "spec": {"priority": 1e+30}})",
      R"({"kind": "Pod", "metadata": {"name": "p"}, "spec": {"priority": 2.5}})",
  };
  for (const char* text : cases) {
    ObjectSet set;
    absl::Status s = DecodeText(text, &set, "p.json");
    ASSERT_FALSE(s.ok()) << text;
    EXPECT_EQ(std::string(s.message()).rfind("p.json: Pod default/p: spec.priority: ", 0), 0u) << s;
  }
}

// The API server's value rules, with its wording after the field path.
TEST(DecodeTest, ValuesTheApiServerRejects) {
  struct Bad {
    std::string spec, want;
  };
  const std::string pod = R"({"kind": "Pod", "metadata": {"name": "p"}, "spec": )";
  const Bad cases[] = {
      {R"({"containers": [{"name": "c", "resources": {"requests": {"cpu": "-1"}}}]})",
       "spec.containers[0].resources.requests.cpu: Invalid value: \"-1\": must be greater than or equal to 0"},
      {R"({"tolerations": [{"key": "k", "operator": "Maybe"}]})",
       "spec.tolerations[0].operator: Unsupported value: \"Maybe\": supported values: \"Equal\", \"Exists\", \"Gt\", \"Lt\""},
      {R"({"tolerations": [{"key": "k", "effect": "Whenever"}]})",
       "spec.tolerations[0].effect: Unsupported value: \"Whenever\": supported values: \"NoExecute\", \"NoSchedule\", \"PreferNoSchedule\""},
      {R"({"tolerations": [{"key": "k", "operator": "Exists", "value": "v"}]})",
       "spec.tolerations[0].operator: Invalid value: \"Exists\": value must be empty when `operator` is 'Exists'"},
      {R"({"tolerations": [{"operator": "Equal", "value": "v"}]})", "spec.tolerations[0].operator: Invalid value: \"Equal\": operator must be Exists"},
      {R"({"topologySpreadConstraints": [{"maxSkew": 0, "topologyKey": "z", "whenUnsatisfiable": "DoNotSchedule"}]})",
       "spec.topologySpreadConstraints[0].maxSkew: Invalid value: 0: must be greater than zero"},
      {R"({"topologySpreadConstraints": [{"maxSkew": 1, "topologyKey": "z", "whenUnsatisfiable": "Sometimes"}]})",
       "spec.topologySpreadConstraints[0].whenUnsatisfiable: Unsupported value: \"Sometimes\""},
      {R"({"topologySpreadConstraints": [{"maxSkew": 1, "topologyKey": "z", "whenUnsatisfiable": "ScheduleAnyway", "minDomains": 2}]})",
       "spec.topologySpreadConstraints[0].minDomains: Invalid value: 2: can only use minDomains if whenUnsatisfiable=DoNotSchedule"},
      {R"({"topologySpreadConstraints": [{"maxSkew": 4294967295, "topologyKey": "z", "whenUnsatisfiable": "DoNotSchedule"}]})",
       "spec.topologySpreadConstraints[0].maxSkew: integer out of range"},
      {R"({"affinity": {"nodeAffinity": {"preferredDuringSchedulingIgnoredDuringExecution": [{"weight": -5, "preference": {}}]}}})",
       "spec.affinity.nodeAffinity.preferredDuringSchedulingIgnoredDuringExecution[0].weight: Invalid value: -5: must be in the range 1-100"},
      // ValidateLabelSelector and ValidateNodeSelector.
      {R"({"topologySpreadConstraints": [{"maxSkew": 1, "topologyKey": "z", "whenUnsatisfiable": "DoNotSchedule", "labelSelector": {"matchExpressions": [{"key": "app", "operator": "Near", "values": ["a"]}]}}]})",
       "spec.topologySpreadConstraints[0].labelSelector.matchExpressions[0].operator: Invalid value: \"Near\": not a valid selector operator"},
      {R"({"affinity": {"podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [{"topologyKey": "z", "labelSelector": {"matchExpressions": [{"key": "app", "operator": "In"}]}}]}}})",
       "spec.affinity.podAntiAffinity.requiredDuringSchedulingIgnoredDuringExecution[0].labelSelector.matchExpressions[0].values: Required value: must be specified when `operator` is 'In' or 'NotIn'"},
      {R"({"affinity": {"podAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [{"topologyKey": "z", "labelSelector": {"matchExpressions": [{"key": "app", "operator": "Exists", "values": ["a"]}]}}]}}})",
       "spec.affinity.podAffinity.requiredDuringSchedulingIgnoredDuringExecution[0].labelSelector.matchExpressions[0].values: Forbidden: may not be specified when `operator` is 'Exists' or 'DoesNotExist'"},
      {R"({"affinity": {"podAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [{"topologyKey": "z", "labelSelector": {"matchLabels": {"app": "-x"}}}]}}})",
       "spec.affinity.podAffinity.requiredDuringSchedulingIgnoredDuringExecution[0].labelSelector.matchLabels: Invalid value: \"-x\": a valid label must be"},
      {R"({"affinity": {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [{"matchExpressions": [{"key": "cores", "operator": "Gt", "values": ["1", "2"]}]}]}}}})",
       "spec.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms[0].matchExpressions[0].values: Required value: must be specified single value when `operator` is 'Lt' or 'Gt'"},
      {R"({"affinity": {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [{"matchExpressions": [{"key": "a/b/c", "operator": "Exists"}]}]}}}})",
       "spec.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms[0].matchExpressions[0].key: Invalid value: \"a/b/c\": a qualified name must consist of"},
      {R"({"affinity": {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [{"matchFields": [{"key": "metadata.labels", "operator": "In", "values": ["n"]}]}]}}}})",
       "spec.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms[0].matchFields[0].key: Invalid value: \"metadata.labels\": not a valid field selector key"},
      {R"({"affinity": {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [{"matchFields": [{"key": "metadata.name", "operator": "In", "values": ["a", "b"]}]}]}}}})",
       "spec.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms[0].matchFields[0].values: Required value: must be only one value when `operator` is 'In' or 'NotIn' for node field selector"},
  };
  for (const Bad& b : cases) {
    ObjectSet set;
    absl::Status st = DecodeText(pod + b.spec + "}", &set, "p.json");
    ASSERT_FALSE(st.ok()) << b.spec;
    EXPECT_EQ(std::string(st.message()).rfind("p.json: Pod default/p: " + b.want, 0), 0u) << st;
  }
  const Bad nodes[] = {
      {R"({"taints": [{"key": "k", "effect": "Sometimes"}]})", "spec.taints[0].effect: Unsupported value: \"Sometimes\""},
      {R"({"taints": [{"effect": "NoSchedule"}]})", "spec.taints[0].key: Required value"},
  };
  for (const Bad& b : nodes) {
    ObjectSet set;
    absl::Status st = DecodeText(R"({"kind": "Node", "metadata": {"name": "n"}, "spec": )" + b.spec + "}", &set, "n.json");
    ASSERT_FALSE(st.ok()) << b.spec;
    EXPECT_EQ(std::string(st.message()).rfind("n.json: Node n: " + b.want, 0), 0u) << st;
  }
  ObjectSet set;
  absl::Status st = DecodeText(R"({"kind": "Node", "metadata": {"name": "n"}, "status": {"allocatable": {"cpu": "-4"}}})", &set, "n.json");
  EXPECT_EQ(std::string(st.message()).rfind("n.json: Node n: status.allocatable.cpu: Invalid value: \"-4\"", 0), 0u) << st;
  st = DecodeText(R"({"kind": "Node", "metadata": {"name": "n", "labels": {"zone": ")" + std::string(70, 'z') + R"("}}})", &set, "n.json");
  EXPECT_EQ(std::string(st.message()).rfind("n.json: Node n: metadata.labels: Invalid value: \"zzz", 0), 0u) << st;
  EXPECT_NE(std::string(st.message()).find("must be no more than 63 characters"), std::string::npos) << st;
  st = DecodeText(R"({"kind": "Node", "metadata": {"name": "n", "labels": {"-bad": "x"}}})", &set, "n.json");
  EXPECT_EQ(std::string(st.message()).rfind("n.json: Node n: metadata.labels: Invalid value: \"-bad\": ", 0), 0u) << st;
  // ValidateObjectMeta: names are DNS subdomains, namespaces DNS labels.
  st = DecodeText(R"({"kind": "Node", "metadata": {"name": "Node_1"}})", &set, "n.json");
  EXPECT_EQ(std::string(st.message()),
            "n.json: Node Node_1: metadata.name: Invalid value: \"Node_1\": a lowercase RFC 1123 subdomain must consist "
            "of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character "
            "(e.g. 'example.com', regex used for validation is "
            "'[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')");
  st = DecodeText(R"({"kind": "Node", "metadata": {"name": ")" + std::string(254, 'n') + R"("}})", &set, "n.json");
  EXPECT_NE(std::string(st.message()).find("metadata.name: Invalid value: \"nnn"), std::string::npos) << st;
  EXPECT_NE(std::string(st.message()).find(": must be no more than 253 characters"), std::string::npos) << st;
  st = DecodeText(R"({"kind": "Pod", "metadata": {"name": "p", "namespace": "team.a"}})", &set, "p.json");
  EXPECT_EQ(std::string(st.message()),
            "p.json: Pod team.a/p: metadata.namespace: Invalid value: \"team.a\": a lowercase RFC 1123 label must "
            "consist of lower case alphanumeric characters or '-', and must start and end with an alphanumeric "
            "character (e.g. 'my-name',  or '123-abc', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?')");
  st = DecodeText(R"({"kind": "Pod", "metadata": {"name": "web-0.x", "namespace": "team-a"}, "spec": {"containers": [{"name": "c"}]}})", &set, "p.json");
  EXPECT_TRUE(st.ok()) << st;
  // An unterminated YAML quote: yaml-cpp folds the next lines into the name, which the name
  // rule then refuses (it used to become the pod's name).
  st = DecodeText("apiVersion: v1\nkind: Pod\nmetadata:\n  name: \"p\nspec: {containers: [{name: c, image: x}]}\n", &set, "q.yaml");
  EXPECT_FALSE(st.ok());
  EXPECT_NE(std::string(st.message()).find(": metadata.name: Invalid value: \"p spec: {containers"), std::string::npos) << st;
  // Invalid UTF-8 in JSON: file, object, field, line and column (it used to reach the output
  // writer, or give nlohmann's message with the raw byte in it).
  st = kplace::DecodeText("{\"kind\": \"List\", \"items\": [\n{\"kind\": \"Node\", \"metadata\": {\"name\": \"a\"}},\n"
                  "{\"kind\": \"Pod\", \"metadata\": {\"name\": \"p\"}, \"spec\": {\"containers\": "
                  "[{\"name\": \"c\", \"image\": \"img\xff\"}]}}]}",
                  "u.json", &set);
  EXPECT_EQ(std::string(st.message()),
            "u.json: Pod default/p: spec.containers[0].image: invalid UTF-8 at line 3, column 95");
  st = kplace::DecodeText("{\"kind\": \"Node\", \"metadata\": {\"name\": \"n\xc0\xaf\"}}", "n.json", &set);
  EXPECT_EQ(std::string(st.message()), "n.json: Node n\xef\xbf\xbd\xef\xbf\xbd: metadata.name: invalid UTF-8 at line 1, column 41");
  // Documents parsed whole (configurations, cases, events) name the place too.
  EXPECT_EQ(std::string(ParseDocuments("{\"a\":\n \"\xff\"}", "c.json").status().message()),
            "c.json: invalid UTF-8 at line 2, column 3");
  auto bad_utf8 = ParseDocuments("kind: Pod\nmetadata: {name: \"p\xff\"}\n", "u.yaml");
  EXPECT_EQ(std::string(bad_utf8.status().message()), "u.yaml: invalid YAML at line 2: invalid UTF-8 in a scalar");
  // Upstream's test tables bypass the API server: the same values decode when not strict.
  auto lenient = DecodePod(json::parse(pod + R"({"tolerations": [{"operator": "Equal", "value": "v"}]}})"), "t", false);
  EXPECT_TRUE(lenient.ok()) << lenient.status();
}

// Go's encoding/json (and so the API server) keeps the last value of a key given twice; every
// JSON path does the same: simdjson on a whole object and on a split List, nlohmann's parser.
TEST(DecodeTest, DuplicateKeysKeepTheLastValue) {
  const std::string pod =
      R"({"kind": "Node", "kind": "Pod", "metadata": {"name": "first", "namespace": "default", "name": "last",)"
      R"( "labels": {"app": "a", "app": "b"}}, "spec": {"nodeName": "x"},)"
      R"( "spec": {"priority": 1, "nodeSelector": {"zone": "z1", "zone": "z2"}, "priority": 7,)"
      R"( "containers": [{"name": "c", "resources": {"requests": {"cpu": "1", "cpu": "3"}}}]}})";
  const auto check = [](const ObjectSet& set, const std::string& path) {
    ASSERT_EQ(set.pods.size(), 1u) << path;
    const Pod& p = set.pods[0];
    EXPECT_EQ(p.meta.name, "last") << path;
    EXPECT_EQ(p.meta.labels, (std::map<std::string, std::string>{{"app", "b"}})) << path;
    EXPECT_EQ(p.node_name, "") << path;
    ASSERT_TRUE(p.priority.has_value()) << path;
    EXPECT_EQ(*p.priority, 7) << path;
    EXPECT_EQ(p.node_selector, (std::map<std::string, std::string>{{"zone", "z2"}})) << path;
    ASSERT_EQ(p.containers.size(), 1u) << path;
    EXPECT_EQ(p.containers[0].requests.at("cpu").MilliValue(), 3000) << path;
  };
  for (const std::string& text : {pod, R"({"kind": "List", "items": [)" + pod + "]}",
                                  R"({"kind": "PodList", "items": [{"kind": "Node"}], "items": [)" + pod + "]}"}) {
    ObjectSet simd;
    absl::Status st = ::kplace::DecodeText(text, "dup.json", &simd);
    ASSERT_TRUE(st.ok()) << st;
    check(simd, "simdjson: " + text);
    ObjectSet nl;
    st = DecodeText(text, &nl, "dup.json");
    ASSERT_TRUE(st.ok()) << st;
    check(nl, "nlohmann: " + text);
  }
  // A list's kind given twice: the last says what its kind-less items are.
  ObjectSet set;
  ASSERT_TRUE(::kplace::DecodeText(R"({"kind": "PodList", "kind": "NodeList", "items": [{"metadata": {"name": "n1"}}]})",
                                   "dup.json", &set).ok());
  EXPECT_EQ(set.nodes.size(), 1u);
  EXPECT_EQ(set.pods.size(), 0u);
}

// Items of a typed list that name no kind or apiVersion are of the list's: the kind of a
// `*List` minus `List`, the list's apiVersion (which decides a resource.k8s.io object's shape).
TEST(DecodeTest, ListItemsWithoutKindTakeTheListsKindAndVersion) {
  const std::string claims =
      R"({"kind": "ResourceClaimList", "apiVersion": "resource.k8s.io/v1beta1", "items": [{"metadata": {"name": "c", "namespace": "ml"},)"
      R"( "spec": {"devices": {"requests": [{"name": "gpu", "deviceClassName": "gpu.example.com"}]}}}]})";
  const std::string nodes = R"({"kind": "NodeList", "apiVersion": "v1", "items": [{"metadata": {"name": "n1"}}, {"kind": null, "metadata": {"name": "n2"}}]})";
  const std::string pods = R"({"kind": "PodList", "items": [{"metadata": {"name": "p"}, "spec": {"containers": [{"name": "c"}]}}]})";
  for (const bool simd : {true, false}) {
    ObjectSet set;
    for (const std::string& text : {claims, nodes, pods}) {
      absl::Status st = simd ? ::kplace::DecodeText(text, "list.json", &set) : DecodeText(text, &set, "list.json");
      ASSERT_TRUE(st.ok()) << st << " " << text;
    }
    ASSERT_EQ(set.resource_claims.size(), 1u);
    ASSERT_EQ(set.resource_claims[0].requests.size(), 1u);
    EXPECT_TRUE(set.resource_claims[0].requests[0].exactly);
    EXPECT_EQ(set.resource_claims[0].requests[0].device_class_name, "gpu.example.com");
    ASSERT_EQ(set.nodes.size(), 2u);
    EXPECT_EQ(set.nodes[1].meta.name, "n2");
    ASSERT_EQ(set.pods.size(), 1u);
    EXPECT_EQ(ObjectKey(set.pods[0].meta), "default/p");
  }
  // A `List`'s items name their own kind; an item of another kind keeps its own version.
  ObjectSet set;
  absl::Status st = ::kplace::DecodeText(R"({"kind": "List", "apiVersion": "v1", "items": [{"metadata": {"name": "n1"}}]})", "l.json", &set);
  EXPECT_EQ(std::string(st.message()), "l.json: object n1: kind: missing") << st;
  json item = {{"metadata", {{"name", "n"}}}};
  ImplyListItemType("NodeList", "v1", &item);
  EXPECT_EQ(item, json({{"kind", "Node"}, {"apiVersion", "v1"}, {"metadata", {{"name", "n"}}}}));
  json other = {{"kind", "ResourceClaim"}};
  ImplyListItemType("PodList", "v1", &other);
  EXPECT_EQ(other, json({{"kind", "ResourceClaim"}}));
  json untyped = json::object();
  ImplyListItemType("List", "v1", &untyped);
  EXPECT_EQ(untyped, json::object());
  EXPECT_EQ(ListItemKind("PodList"), std::optional<std::string>("Pod"));
  EXPECT_EQ(ListItemKind("List"), std::optional<std::string>(""));
  EXPECT_EQ(ListItemKind("Pod"), std::nullopt);
}

// What the API server's validation refuses beyond the fields above: a pod needs a container,
// container names are one name space across containers and initContainers, nodeSelector is
// labels, pods and extended resources are whole numbers, and a file of `null` holds no object.
TEST(DecodeTest, PodsNeedContainersAndWholeCounts) {
  struct Bad {
    std::string text, want;
  };
  const std::string pod = R"({"kind": "Pod", "metadata": {"name": "p"}, "spec": )";
  const Bad cases[] = {
      {pod + R"({"containers": []}})", "p.json: Pod default/p: spec.containers: Required value"},
      {pod + "null}", "p.json: Pod default/p: spec.containers: Required value"},
      {R"({"kind": "Pod", "metadata": {"name": "p"}})", "p.json: Pod default/p: spec.containers: Required value"},
      {pod + R"({"containers": [{"name": "c"}, {"name": "d"}, {"name": "c"}]}})",
       "p.json: Pod default/p: spec.containers[2].name: Duplicate value: \"c\""},
      {pod + R"({"containers": [{"name": "c"}], "initContainers": [{"name": "i"}, {"name": "c"}]}})",
       "p.json: Pod default/p: spec.initContainers[1].name: Duplicate value: \"c\""},
      {pod + R"({"containers": [{"name": "c"}], "nodeSelector": {"a/b/c": "x"}}})",
       "p.json: Pod default/p: spec.nodeSelector: Invalid value: \"a/b/c\": a qualified name must consist of"},
      {pod + R"({"containers": [{"name": "c"}], "nodeSelector": {"": "x"}}})",
       "p.json: Pod default/p: spec.nodeSelector: Invalid value: \"\": name part must be non-empty"},
      {pod + R"({"containers": [{"name": "c"}], "nodeSelector": {"zone": ")" + std::string(64, 'z') + R"("}}})",
       "p.json: Pod default/p: spec.nodeSelector: Invalid value: \"" + std::string(64, 'z') + "\": must be no more than 63 characters"},
      {pod + R"({"containers": [{"name": "c"}], "nodeSelector": {"zone": "a b"}}})",
       "p.json: Pod default/p: spec.nodeSelector: Invalid value: \"a b\": a valid label must be"},
      {pod + R"({"containers": [{"name": "c", "resources": {"requests": {"example.com/gpu": "0.5"}}}]}})",
       "p.json: Pod default/p: spec.containers[0].resources.requests.example.com/gpu: Invalid value: \"500m\": must be an integer"},
      {R"({"kind": "Node", "metadata": {"name": "n"}, "status": {"allocatable": {"pods": "1.5"}}})",
       "p.json: Node n: status.allocatable.pods: Invalid value: \"1500m\": must be an integer"},
      {R"({"kind": "Node", "metadata": {"name": "n"}, "status": {"capacity": {"cpu": "1.5", "pods": 2.5}}})",
       "p.json: Node n: status.capacity.pods: Invalid value: \"2500m\": must be an integer"},
      {"null", "p.json: expected a Kubernetes object, got null"},
      {"---\nnull\n---\n", "p.json: expected a Kubernetes object, got null"},
  };
  for (const Bad& b : cases) {
    ObjectSet set;
    absl::Status st = ::kplace::DecodeText(b.text, "p.json", &set);
    ASSERT_FALSE(st.ok()) << b.text;
    EXPECT_EQ(std::string(st.message()).rfind(b.want, 0), 0u) << st << "\n" << b.text;
  }
  // What the same rules let through: a fractional cpu, whole extended resources, an empty
  // nodeSelector value, containers named apart, an empty document between objects.
  ObjectSet set;
  absl::Status st = ::kplace::DecodeText(
      "---\n---\n" + pod + R"({"nodeSelector": {"example.com/zone": ""}, "initContainers": [{"name": "i"}],)"
      R"( "containers": [{"name": "c", "resources": {"requests": {"cpu": "1.5", "example.com/gpu": "2"}}}]}})",
      "p.yaml", &set);
  ASSERT_TRUE(st.ok()) << st;
  ASSERT_EQ(set.pods.size(), 1u);
  // Upstream's test tables never passed the API server: lenient decodes keep their pods.
  EXPECT_TRUE(DecodePod(json::parse(R"({"metadata": {"name": "p"}})"), "case", /*strict=*/false).ok());
}

// SetDefaults_NodeStatus: allocatable absent or null, with capacity set, is the capacity;
// DecodeNotes names those nodes for the CLI's warning. An empty allocatable stays empty.
TEST(DecodeTest, AllocatableDefaultsToCapacity) {
  const std::string nodes =
      R"({"kind": "List", "items": [)"
      R"({"kind": "Node", "metadata": {"name": "absent"}, "status": {"capacity": {"cpu": "4", "pods": "10"}}},)"
      R"({"kind": "Node", "metadata": {"name": "null"}, "status": {"allocatable": null, "capacity": {"cpu": "2"}}},)"
      R"({"kind": "Node", "metadata": {"name": "empty"}, "status": {"allocatable": {}, "capacity": {"cpu": "2"}}},)"
      R"({"kind": "Node", "metadata": {"name": "set"}, "status": {"allocatable": {"cpu": "1"}, "capacity": {"cpu": "2"}}}]})";
  // Split item by item, and whole (a top-level key with an escape is not split).
  for (const std::string& text : {nodes, R"({"note\u0021": "", )" + nodes.substr(1)}) {
    ObjectSet set;
    DecodeNotes notes;
    absl::Status st = ::kplace::DecodeText(text, "n.json", &set, nullptr, nullptr, &notes);
    ASSERT_TRUE(st.ok()) << st;
    ASSERT_EQ(set.nodes.size(), 4u);
    EXPECT_EQ(set.nodes[0].allocatable.at("pods").Value(), 10);
    EXPECT_EQ(set.nodes[1].allocatable.at("cpu").Value(), 2);
    EXPECT_TRUE(set.nodes[2].allocatable.empty());
    EXPECT_EQ(set.nodes[3].allocatable.at("cpu").Value(), 1);
    EXPECT_EQ(notes.allocatable_from_capacity, (std::vector<std::string>{"absent", "null"}));
  }
  ObjectSet set;
  DecodeNotes notes;
  ASSERT_TRUE(::kplace::DecodeText("kind: Node\nmetadata: {name: y}\nstatus: {capacity: {cpu: 3}}\n", "n.yaml", &set,
                                   nullptr, nullptr, &notes).ok());
  EXPECT_EQ(set.nodes[0].allocatable.at("cpu").Value(), 3);
  EXPECT_EQ(notes.allocatable_from_capacity, (std::vector<std::string>{"y"}));
}

}  // namespace
}  // namespace kplace
