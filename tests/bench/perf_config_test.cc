#include "kplace/bench/perf_config.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "kplace/bench/runner.h"
#include "kplace/cli/commands.h"
#include "kplace/common/strings.h"
#include "kplace/model/decode.h"

namespace kplace::bench {
namespace {

const std::string kDir = std::string(KPLACE_SOURCE_DIR) + "/tests/bench/testdata/scheduler_perf/";
const std::string kConfig = kDir + "misc/performance-config.yaml";

const Workload* Find(const std::vector<Workload>& all, const std::string& test_case, const std::string& workload) {
  for (const Workload& w : all) {
    if (w.name == test_case && w.variant == workload) return &w;
  }
  return nullptr;
}

TEST(PerfConfigTest, ReadsAnUpstreamExcerptUnchanged) {
  auto all = LoadPerfConfig(kConfig);
  ASSERT_TRUE(all.ok()) << all.status();
  ASSERT_EQ(all->size(), 7u);  // 3 + 2 + 2 workloads, in file order
  EXPECT_EQ((*all)[0].name, "SchedulingBasic");
  EXPECT_EQ((*all)[0].variant, "5Nodes");

  const Workload* basic = Find(*all, "SchedulingBasic", "5000Nodes_10000Pods");
  ASSERT_NE(basic, nullptr);
  EXPECT_EQ(basic->num_nodes, 5000);
  ASSERT_EQ(basic->init.size(), 1u);
  EXPECT_EQ(basic->init[0].count, 1000);
  EXPECT_EQ(basic->init[0].namespace_, "namespace-1");  // namespace-<op index>
  EXPECT_EQ(basic->measured.count, 10000);
  EXPECT_EQ(basic->measured.namespace_, "namespace-2");
  EXPECT_EQ(basic->metrics_name, "namespace-2");
  ASSERT_EQ(basic->variants.size(), 1u);
  EXPECT_EQ(basic->variants[0].threshold.value_or(0), 680);
  EXPECT_EQ(basic->variants[0].labels, std::vector<std::string>{"performance"});
  // defaultPodTemplatePath, relative to the config's directory.
  EXPECT_EQ(basic->measured.pod_template["spec"]["containers"][0]["resources"]["requests"]["cpu"], "100m");

  const Workload* small = Find(*all, "SchedulingBasic", "5Nodes");
  ASSERT_NE(small, nullptr);
  EXPECT_EQ(small->variants[0].feature_gates, (std::map<std::string, bool>{{"SchedulerAsyncAPICalls", false}}));
  EXPECT_EQ(small->variants[0].labels, (std::vector<std::string>{"integration-test", "short"}));

  const Workload* daemonset = Find(*all, "SchedulingDaemonset", "5Nodes");
  ASSERT_NE(daemonset, nullptr);
  ASSERT_EQ(daemonset->node_groups.size(), 2u);
  EXPECT_EQ(NodeGroupCounts(*daemonset), (std::vector<int32_t>{1, 5}));
  auto cluster = BuildCluster(*daemonset);
  ASSERT_TRUE(cluster.ok()) << cluster.status();
  ASSERT_EQ(cluster->nodes.size(), 6u);
  EXPECT_EQ(cluster->nodes[0].meta.name, "scheduler-perf-node");
  EXPECT_EQ(cluster->nodes[0].allocatable.at("pods").Value(), 90000);  // allocatable defaults to capacity
  EXPECT_EQ(cluster->nodes[1].allocatable.at("cpu").MilliValue(), 4000);

  const Workload* churn = Find(*all, "SchedulingWithMixedChurn", "10Nodes");
  ASSERT_NE(churn, nullptr);
  ASSERT_TRUE(churn->churn.has_value());
  EXPECT_TRUE(churn->churn->recreate);
  EXPECT_EQ(churn->churn->number, 1);
  EXPECT_EQ(churn->churn->interval_ms, 1000);
  EXPECT_EQ(churn->churn->namespace_, "namespace-1");
  ASSERT_EQ(churn->churn->templates.size(), 3u);
  EXPECT_EQ(churn->churn->templates[2]["kind"], "Service");
  EXPECT_EQ(churn->throughput, 710);  // the test case's threshold turns churn's rate into pod counts
}

// The upstream excerpt's SchedulingBasic and the built-in SchedulingBasic make the same
// cluster, the same pods and the same decisions.
TEST(PerfConfigTest, SchedulingBasicMatchesTheBuiltInWorkload) {
  auto all = LoadPerfConfig(kConfig);
  ASSERT_TRUE(all.ok()) << all.status();
  const Workload* from_config = Find(*all, "SchedulingBasic", "500Nodes");
  ASSERT_NE(from_config, nullptr);
  auto builtin = LoadWorkload("SchedulingBasic");
  ASSERT_TRUE(builtin.ok()) << builtin.status();
  ASSERT_TRUE(ApplyVariant(*builtin, "500Nodes").ok());
  EXPECT_EQ(from_config->num_nodes, builtin->num_nodes);
  EXPECT_EQ(from_config->init[0].count, builtin->init[0].count);
  EXPECT_EQ(from_config->measured.count, builtin->measured.count);
  EXPECT_EQ(from_config->metrics_name, builtin->metrics_name);

  auto a = BuildCluster(*from_config), b = BuildCluster(*builtin);
  ASSERT_TRUE(a.ok()) << a.status();
  ASSERT_TRUE(b.ok()) << b.status();
  ASSERT_EQ(a->nodes.size(), b->nodes.size());
  for (size_t i = 0; i < a->nodes.size(); ++i) {
    EXPECT_EQ(a->nodes[i].meta.name, b->nodes[i].meta.name);
    EXPECT_EQ(a->nodes[i].meta.labels, b->nodes[i].meta.labels);
    EXPECT_EQ(a->nodes[i].allocatable, b->nodes[i].allocatable);
  }
  auto pa = BuildPods(from_config->measured, "pod"), pb = BuildPods(builtin->measured, "pod");
  ASSERT_TRUE(pa.ok() && pb.ok());
  ASSERT_EQ(pa->size(), pb->size());
  for (size_t i = 0; i < pa->size(); ++i) {
    EXPECT_EQ((*pa)[i].meta.name, (*pb)[i].meta.name);
    EXPECT_EQ((*pa)[i].meta.namespace_, (*pb)[i].meta.namespace_);
    ASSERT_EQ((*pa)[i].containers.size(), 1u);
    EXPECT_EQ((*pa)[i].containers[0].requests, (*pb)[i].containers[0].requests);
    EXPECT_EQ((*pa)[i].containers[0].limits, (*pb)[i].containers[0].limits);
  }
}

// `kplace bench --config` end to end: every integration-test workload of the excerpt runs on
// engine and reference with identical placements, and its JSON names them as scheduler_perf.
TEST(PerfConfigTest, BenchRunsTheConfigEndToEnd) {
  const std::string json_path = ::testing::TempDir() + "kplace_perf_config_test.json";
  const std::string config = "--config=" + kConfig, out = "--json=" + json_path;
  const char* argv[] = {"bench", config.c_str(), "--label-filter=integration-test", out.c_str()};
  ASSERT_EQ(cli::RunBench(4, const_cast<char**>(argv)), 0);
  std::ifstream f(json_path);
  std::stringstream text;
  text << f.rdbuf();
  auto doc = nlohmann::json::parse(text.str());
  std::set<std::string> names;
  for (const auto& item : doc["dataItems"]) {
    if (item["labels"]["Metric"] == "SchedulingThroughput") names.insert(item["labels"]["Name"].get<std::string>());
  }
  EXPECT_EQ(names, (std::set<std::string>{"BenchmarkPerfScheduling/SchedulingBasic/5Nodes/namespace-2",
                                          "BenchmarkPerfScheduling/SchedulingDaemonset/5Nodes/namespace-2",
                                          "BenchmarkPerfScheduling/SchedulingWithMixedChurn/10Nodes/namespace-2"}));
  std::remove(json_path.c_str());

  // One of them through RunWorkload: every measured pod placed, the same on both sides.
  auto all = LoadPerfConfig(kConfig);
  ASSERT_TRUE(all.ok());
  const Workload* daemonset = Find(*all, "SchedulingDaemonset", "5Nodes");
  ASSERT_NE(daemonset, nullptr);
  auto r = RunWorkload(*daemonset, BenchOptions{});
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->engine.scheduled, 10);
  EXPECT_EQ(r->compared, 10);
  EXPECT_EQ(r->mismatches, 0);
  EXPECT_EQ(r->metrics_name, "namespace-2");
}

// A config whose one test case has `ops` spliced into upstream's SchedulingBasic shape.
std::string Config(const std::string& ops, const std::string& params = "initNodes: 5, measurePods: 10") {
  return StrCat("- name: Case\n  workloadTemplate:\n  - opcode: createNodes\n    countParam: $initNodes\n", ops,
                "  - opcode: createPods\n    countParam: $measurePods\n    collectMetrics: true\n",
                "  workloads:\n  - name: small\n    params: {", params, "}\n");
}

absl::Status Load(const std::string& text) {
  const std::string path = ::testing::TempDir() + "bad-config.yaml";
  {
    std::ofstream f(path);
    f << text;
  }
  auto w = LoadPerfConfig(path);
  std::remove(path.c_str());
  return w.status();
}

TEST(PerfConfigTest, ErrorsNameFileTestCaseOpAndField) {
  struct Case {
    std::string text, want;
  };
  const std::vector<Case> cases = {
      {Config("  - opcode: updateAny\n    templatePath: x.yaml\n"),
       "bad-config.yaml: test case Case, workload small: workloadTemplate[1].opcode: updateAny is not modelled by kplace"},
      {Config("  - opcode: fly\n"), "workloadTemplate[1].opcode: unknown opcode \"fly\""},
      {Config("  - opcode: createPods\n    count: 1\n    podTemplatePath: ../templates/none.yaml\n"),
       "workloadTemplate[1].podTemplatePath: "},
      {Config("  - opcode: createPods\n    count: 1\n    steadyState: true\n"),
       "workloadTemplate[1].steadyState: not modelled by kplace"},
      {Config("  - opcode: createNodes\n    count: 1\n    nodeAllocatableStrategy: {nodeAllocatable: {cpu: 1}}\n"),
       "workloadTemplate[1].nodeAllocatableStrategy: not modelled by kplace"},
      {Config("  - opcode: createPods\n    count: 1\n    colour: blue\n"), "workloadTemplate[1].colour: unknown field"},
      {Config("  - opcode: createPods\n    countParam: $initPods\n"),
       "workloadTemplate[1].countParam: parameter initPods is undefined"},
      {Config("", "initNodes: 5, measurePods: 10, typo: 3"), "params.typo: defined but unused"},
      {Config("  - opcode: createPods\n    count: 1\n    collectMetrics: true\n"),
       "workloadTemplate[2].collectMetrics: kplace measures one createPods op"},
      {Config("  - opcode: deletePods\n    namespace: nowhere\n    deletePodsPerSecond: 5\n"),
       "workloadTemplate[1].namespace: no earlier createPods op made pods in nowhere"},
      {"- name: Case\n  metricsCollectorConfig: {}\n  workloadTemplate: []\n  workloads: []\n",
       "test case Case: metricsCollectorConfig: not modelled by kplace"},
      {StrCat("- name: Case\n  schedulerConfigPath: nowhere.yaml\n", Config("").substr(std::string("- name: Case\n").size())),
       "workload small: schedulerConfigPath: "},
      {Config("  - opcode: createPods\n    count: 1\n    signatureBatchSizeParam: $initNodes\n"),
       "signatureBatchSizeParam: not modelled by kplace (got \"$initNodes\"); kplace's model of it is "
       "kplaceSignatureBatchSize"},
      {"- {name: A, workloadTemplate: [{opcode: createNodes, count: 1}], workloads: [{name: w}]}\n",
       "workloadTemplate: no op collects metrics"},
  };
  for (const Case& c : cases) {
    absl::Status s = Load(c.text);
    EXPECT_FALSE(s.ok()) << c.text;
    EXPECT_NE(std::string(s.message()).find(c.want), std::string::npos) << s.message() << "\nwant: " << c.want;
  }
}

// A directory of files for one test: a config and the templates it names.
std::string WriteFiles(const std::string& dir_name, const std::vector<std::pair<std::string, std::string>>& files) {
  const std::string dir = ::testing::TempDir() + dir_name + "/";
  for (const auto& [name, text] : files) {
    const std::string path = dir + name;
    std::system(StrCat("mkdir -p '", path.substr(0, path.rfind('/')), "'").c_str());
    std::ofstream f(path);
    f << text;
  }
  return dir;
}

const std::vector<std::pair<std::string, std::string>> kExtensionFiles = {
    {"templates/csinode.yaml",
     "apiVersion: storage.k8s.io/v1\nkind: CSINode\nmetadata: {name: \"{{.Name}}\"}\n"
     "spec: {drivers: [{name: ebs.csi.aws.com, nodeID: \"{{.Name}}\", allocatable: {count: 39}}]}\n"},
    {"templates/pvc.yaml",
     "apiVersion: v1\nkind: PersistentVolumeClaim\nmetadata: {name: \"pvc-{{.Index}}\", namespace: \"{{.Namespace}}\"}\n"
     "spec: {accessModes: [ReadOnlyMany], resources: {requests: {storage: 1Gi}}}\n"},
    {"templates/service.yaml",
     "apiVersion: v1\nkind: Service\nmetadata: {generateName: service-}\nspec: {selector: {app: x}}\n"},
    {"topic/scheduler-config.yaml",
     "apiVersion: kubescheduler.config.k8s.io/v1\nkind: KubeSchedulerConfiguration\nprofiles:\n"
     "- schedulerName: default-scheduler\n  pluginConfig:\n  - name: PodTopologySpread\n"
     "    args: {defaultingType: List, defaultConstraints: []}\n"},
    {"topic/performance-config.yaml",
     "- name: Case\n"
     "  schedulerConfigPath: scheduler-config.yaml\n"
     "  kplace: {description: a test case, default: big, throughput: 590}\n"
     "  workloadTemplate:\n"
     "  - opcode: createNodes\n    countParam: $nodes\n"
     "    labelNodePrepareStrategy: {labelKey: topology.kubernetes.io/zone, labelValues: [a, b]}\n"
     "    kplaceLabelNodePrepareStrategies: [{labelKey: disk, labelValues: [ssd, hdd, nvme]}]\n"
     "    kplaceObjectTemplatePaths: [../templates/csinode.yaml]\n"
     "  - opcode: createAny\n    namespace: service-ns\n    templatePath: ../templates/service.yaml\n"
     "  - opcode: createPods\n    countParam: $init\n    kplaceObjectTemplatePaths: [../templates/pvc.yaml]\n"
     "  - opcode: createPods\n    countParam: $measured\n    collectMetrics: true\n"
     "    kplaceSignatureBatchSizeParam: $batch\n"
     "  workloads:\n"
     "  - name: small\n    params: {nodes: 3, init: 2, measured: 4, batch: 2}\n"
     "  - name: big\n    threshold: 100\n    labels: [performance]\n    featureGates: {OpportunisticBatching: true}\n"
     "    params: {nodes: 6, init: 4, measured: 8, batch: 4}\n"
     "  - name: bigger\n    kplace: {upstream: false}\n    params: {nodes: 9, init: 6, measured: 12, batch: 1}\n"},
};

absl::StatusOr<Workload> LoadTestCase(const std::string& dir, const std::string& name) {
  const std::string path = dir + "topic/performance-config.yaml";
  auto text = ReadFileText(path);
  if (!text.ok()) return text.status();
  auto docs = ParseDocuments(*text, path);
  if (!docs.ok()) return docs.status();
  return DecodePerfConfigTestCase((*docs)[0], path, name);
}

// kplace's extensions decode into the Workload fields kplace's own format sets, and a test
// case reads as one workload whose variants are its workloads.
TEST(PerfConfigTest, KplaceExtensionsAndTestCasesAsOneWorkload) {
  const std::string dir = WriteFiles("kplace_extensions", kExtensionFiles);
  auto w = LoadTestCase(dir, "Case");
  ASSERT_TRUE(w.ok()) << w.status();
  EXPECT_EQ(w->name, "Case");
  EXPECT_EQ(w->description, "a test case");
  EXPECT_EQ(w->variant, "big");  // kplace.default
  EXPECT_EQ(w->num_nodes, 6);
  EXPECT_EQ(w->throughput, 590);
  ASSERT_EQ(w->variants.size(), 3u);
  EXPECT_EQ(w->variants[0].name, "small");
  EXPECT_EQ(w->variants[0].signature_batch_size, 2);
  EXPECT_TRUE(w->variants[0].upstream);
  EXPECT_EQ(w->variants[1].threshold.value_or(0), 100);
  EXPECT_EQ(w->variants[1].labels, std::vector<std::string>{"performance"});
  EXPECT_EQ(w->variants[1].feature_gates, (std::map<std::string, bool>{{"OpportunisticBatching", true}}));
  EXPECT_FALSE(w->variants[2].upstream);
  EXPECT_EQ(w->measured.signature_batch_size, 4);
  EXPECT_EQ(w->metrics_name, "namespace-3");
  ASSERT_TRUE(w->scheduler_config.has_value());
  EXPECT_EQ((*w->scheduler_config)["kind"], "KubeSchedulerConfiguration");
  ASSERT_EQ(w->objects.size(), 1u);
  EXPECT_EQ(w->objects[0]["metadata"]["name"], "service-0");  // generateName + index
  EXPECT_EQ(w->objects[0]["metadata"]["namespace"], "service-ns");
  ASSERT_EQ(w->node_groups.size(), 1u);
  EXPECT_EQ(w->node_groups[0].labels.size(), 2u);

  auto cluster = BuildCluster(*w);
  ASSERT_TRUE(cluster.ok()) << cluster.status();
  ASSERT_EQ(cluster->nodes.size(), 6u);
  EXPECT_EQ(cluster->nodes[4].meta.labels.at("topology.kubernetes.io/zone"), "a");
  EXPECT_EQ(cluster->nodes[4].meta.labels.at("disk"), "hdd");
  int csinodes = 0, claims = 0;
  for (const GenericObject& o : cluster->storage) {
    csinodes += o.kind == "CSINode";
    if (o.kind == "PersistentVolumeClaim") {
      EXPECT_EQ(o.meta.namespace_, "namespace-2");  // the per-pod template keeps {{.Namespace}}
      ++claims;
    }
  }
  EXPECT_EQ(csinodes, 6);
  EXPECT_EQ(claims, 4);
  EXPECT_EQ(cluster->workloads.size(), 1u);  // the Service

  // The same file read per workload, as `kplace bench --config` does.
  auto all = LoadPerfConfig(dir + "topic/performance-config.yaml");
  ASSERT_TRUE(all.ok()) << all.status();
  ASSERT_EQ(all->size(), 3u);
  EXPECT_EQ((*all)[2].variant, "bigger");
  EXPECT_FALSE((*all)[2].variants[0].upstream);
  EXPECT_EQ((*all)[2].measured.signature_batch_size, 1);
  EXPECT_EQ((*all)[0].description, "a test case");

  auto missing = LoadTestCase(dir, "Other");
  EXPECT_EQ(missing.status().code(), absl::StatusCode::kNotFound) << missing.status();
}

TEST(PerfConfigTest, MalformedExtensionsNameTheField) {
  struct Case {
    std::string from, to, want;  // a replacement in the config of kExtensionFiles, the error
  };
  const std::vector<Case> cases = {
      {"default: big,", "default: huge,", "test case Case: kplace.default: expected the name of one of the test case's workloads"},
      {"throughput: 590", "throughput: -1", "test case Case: kplace.throughput: expected a positive number"},
      {"kplace: {description", "kplace: {colour: red, description", "test case Case: kplace.colour: unknown field"},
      {"kplace: {upstream: false}", "kplace: {upstream: no}", "workload bigger: kplace.upstream: expected true or false"},
      {"kplace: {upstream: false}", "kplace: {upstream: false, size: 3}", "workload bigger: kplace.size: unknown field"},
      {"    kplaceObjectTemplatePaths: [../templates/pvc.yaml]\n",
       "    kplaceObjectTemplatePaths: [../templates/pvc.yaml]\n    kplaceSignatureBatchSize: 3\n",
       "workload small: workloadTemplate[2].kplaceSignatureBatchSize: kplace models a signature batch size on the measured"},
      {"    kplaceSignatureBatchSizeParam: $batch\n", "    kplaceHeterogeneous: {seed: -1}\n    kplaceSignatureBatchSizeParam: $batch\n",
       "workloadTemplate[3].kplaceHeterogeneous.seed: expected a non-negative integer"},
      {"kplaceObjectTemplatePaths: [../templates/csinode.yaml]", "kplaceObjectTemplatePaths: ../templates/csinode.yaml",
       "workloadTemplate[0].kplaceObjectTemplatePaths: expected a non-empty list of template paths"},
      {"kplaceObjectTemplatePaths: [../templates/csinode.yaml]", "kplaceObjectTemplatePaths: [../templates/none.yaml]",
       "workloadTemplate[0].kplaceObjectTemplatePaths[0]: "},
      {"labelKey: disk,", "labelKey: topology.kubernetes.io/zone,",
       "kplaceLabelNodePrepareStrategies[0].labelKey: topology.kubernetes.io/zone is labelled by another strategy"},
      {"    namespace: service-ns\n", "", "workloadTemplate[1].namespace: missing (Service is namespaced)"},
      {"kind: Service", "kind: Deployment", "workloadTemplate[1].templatePath: createAny of Deployment is not modelled by kplace"},
      {"schedulerConfigPath: scheduler-config.yaml", "schedulerConfigPath: none.yaml", "workload small: schedulerConfigPath: "},
      {"defaultingType: List", "defaultingType: Sideways", "schedulerConfig"},
  };
  for (const Case& c : cases) {
    std::vector<std::pair<std::string, std::string>> files = kExtensionFiles;
    bool replaced = false;
    for (auto& [name, text] : files) {
      const size_t at = text.find(c.from);
      if (at == std::string::npos) continue;
      text.replace(at, c.from.size(), c.to);
      replaced = true;
      break;
    }
    ASSERT_TRUE(replaced) << c.from;
    const std::string dir = WriteFiles("kplace_bad_extensions", files);
    auto w = LoadTestCase(dir, "Case");
    EXPECT_FALSE(w.ok()) << c.to;
    EXPECT_NE(std::string(w.status().message()).find(c.want), std::string::npos)
        << w.status().message() << "\nwant: " << c.want;
  }
}

// A createAny op must come before every createPods op, and a test case's workloads may only
// differ in counts when they are read as one workload.
TEST(PerfConfigTest, TestCaseWorkloadsMustBeSizesOfOneWorkload) {
  std::vector<std::pair<std::string, std::string>> files = kExtensionFiles;
  std::string& config = files.back().second;
  const std::string any = "  - opcode: createAny\n    namespace: service-ns\n    templatePath: ../templates/service.yaml\n";
  config.replace(config.find(any), any.size(),
                 "  - opcode: createAny\n    namespace: service-ns\n    templatePath: ../templates/service.yaml\n"
                 "    countParam: $nodes\n");
  auto w = LoadTestCase(WriteFiles("kplace_sizes", files), "Case");
  EXPECT_FALSE(w.ok());
  EXPECT_NE(std::string(w.status().message()).find("test case Case: workload big makes other objects than workload small"),
            std::string::npos) << w.status();

  files = kExtensionFiles;
  std::string& moved = files.back().second;
  moved.replace(moved.find(any), any.size(), "");
  moved.replace(moved.find("  workloads:"), 0, any);
  w = LoadTestCase(WriteFiles("kplace_any_late", files), "Case");
  EXPECT_FALSE(w.ok());
  EXPECT_NE(std::string(w.status().message()).find("workloadTemplate[3].opcode: kplace makes createAny's objects before any pod"),
            std::string::npos) << w.status();
}

// scheduler_perf's gang scheduling shape, as upstream writes it: createPodGroups from a template
// whose minCount is a bare {{.podsPerGroup}}, waitForPodGroups, and pods naming their gang with
// DivideInt; the workloads' params go to the variants, the ops stay one workload.
const std::vector<std::pair<std::string, std::string>> kGangFiles = {
    {"templates/podgroup.yaml",
     "apiVersion: scheduling.k8s.io/v1beta1\nkind: PodGroup\nmetadata:\n  name: gang-{{.Index}}\n"
     "spec:\n  schedulingPolicy:\n    gang:\n      minCount: {{.podsPerGroup}}\n"},
    {"templates/gang-pod.yaml",
     "apiVersion: v1\nkind: Pod\nmetadata:\n  name: member-{{.Index}}\nspec:\n  schedulingGroup:\n"
     "    podGroupName: gang-{{DivideInt .Index .podsPerGroup}}\n  containers:\n  - image: pause\n    name: pause\n"},
    {"service.yaml", "apiVersion: v1\nkind: Service\nmetadata: {name: s}\n"},
};

std::string GangConfig(const std::string& extra_ops = "", const std::string& pod_group_fields = "") {
  return StrCat("- name: Gangs\n  featureGates: {GenericWorkload: true}\n  workloadTemplate:\n"
                "  - opcode: createNodes\n    countParam: $initNodes\n"
                "  - opcode: createNamespaces\n    prefix: gang-ns\n    count: 1\n",
                extra_ops,
                "  - opcode: createPodGroups\n    countParam: $initPodGroups\n    namespace: gang-ns-0\n"
                "    templatePath: templates/podgroup.yaml\n    templateParams: {podsPerGroup: $podsPerGroup}\n",
                pod_group_fields,
                "  - opcode: waitForPodGroups\n    namespace: gang-ns-0\n    countParam: $initPodGroups\n"
                "  - opcode: createPods\n    countParam: $initPodGroups\n    countMultiplierParam: $podsPerGroup\n"
                "    namespace: gang-ns-0\n    podTemplatePath: templates/gang-pod.yaml\n    collectMetrics: true\n"
                "    templateParams: {podsPerGroup: $podsPerGroup}\n"
                "  workloads:\n"
                "  - name: 4Nodes_3Gangs\n    params: {initNodes: 4, initPodGroups: 3, podsPerGroup: 3}\n"
                "  - name: 4Nodes_2Gangs_5PerGroup\n    params: {initNodes: 4, initPodGroups: 2, podsPerGroup: 5}\n");
}

TEST(PerfConfigTest, GangSchedulingOpsAsUpstreamWritesThem) {
  const std::string dir = WriteFiles("gangs", kGangFiles);
  auto docs = ParseDocuments(GangConfig(), "performance-config.yaml");
  ASSERT_TRUE(docs.ok()) << docs.status();
  // Templates are read relative to the config's directory.
  auto w = DecodePerfConfigTestCase((*docs)[0], dir + "performance-config.yaml", "Gangs");
  ASSERT_TRUE(w.ok()) << w.status();
  ASSERT_EQ(w->variants.size(), 2u);
  EXPECT_EQ(w->variants[1].pod_groups, std::vector<int32_t>{2});
  EXPECT_EQ(w->variants[1].measured, 10);
  EXPECT_EQ(w->variants[1].params.at("podsPerGroup"), 5);
  EXPECT_TRUE(w->variants[1].feature_gates.at("GenericWorkload"));
  ASSERT_TRUE(ApplyVariant(*w, "4Nodes_2Gangs_5PerGroup").ok());
  auto cluster = BuildCluster(*w);
  ASSERT_TRUE(cluster.ok()) << cluster.status();
  ASSERT_EQ(cluster->pod_groups.size(), 2u);
  EXPECT_EQ(cluster->pod_groups[1].meta.name, "gang-1");
  EXPECT_EQ(cluster->pod_groups[1].meta.namespace_, "gang-ns-0");
  EXPECT_EQ(cluster->pod_groups[1].min_count, 5);
  auto pods = BuildPods(w->measured, "pod");
  ASSERT_TRUE(pods.ok()) << pods.status();
  ASSERT_EQ(pods->size(), 10u);
  EXPECT_EQ((*pods)[4].scheduling_group, "gang-0");
  EXPECT_EQ((*pods)[5].scheduling_group, "gang-1");
  // Both gangs fit: each placed whole, the same on the engine and the reference.
  auto r = RunWorkload(*w, BenchOptions{});
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->engine.scheduled, 10);
  EXPECT_EQ(r->mismatches, 0) << r->first_mismatch;
}

TEST(PerfConfigTest, GangSchedulingOpErrorsNameTheField) {
  const std::string dir = WriteFiles("gang-errors", kGangFiles);
  auto load = [&](const std::string& text) {
    auto docs = ParseDocuments(text, "c.yaml");
    EXPECT_TRUE(docs.ok()) << docs.status();
    auto all = DecodePerfConfig((*docs)[0], dir + "c.yaml");
    return all.status();
  };
  struct Case {
    std::string text, want;
  };
  const std::string at = "c.yaml: test case Gangs, workload 4Nodes_3Gangs: ";
  const std::vector<Case> cases = {
      {GangConfig("", "    colour: blue\n"), "workloadTemplate[2].colour: unknown field"},
      {GangConfig("  - opcode: createPods\n    count: 1\n"),
       "workloadTemplate[3].opcode: kplace makes PodGroups with the cluster, before any pod"},
      {GangConfig("  - opcode: createPodGroups\n    count: 1\n    templatePath: templates/podgroup.yaml\n"),
       "workloadTemplate[2].namespace: missing (PodGroups are namespaced)"},
      {GangConfig("  - opcode: createPodGroups\n    count: 1\n    namespace: x\n    templatePath: service.yaml\n"),
       "workloadTemplate[2].templatePath: expected a PodGroup (scheduling.k8s.io) object, got kind \"Service\""},
      {GangConfig("  - opcode: createPodGroups\n    count: 1\n    namespace: x\n    templatePath: templates/podgroup.yaml\n"
                  "    templateParams: {podsPerGroup: $nowhere}\n"),
       "workloadTemplate[2].templateParams.podsPerGroup: parameter nowhere is undefined in workload 4Nodes_3Gangs's params"},
      {GangConfig("  - opcode: createPodGroups\n    count: 1\n    namespace: x\n    templatePath: templates/podgroup.yaml\n"
                  "    templateParams: {podsPerGroup: [3]}\n"),
       "workloadTemplate[2].templateParams.podsPerGroup: expected an integer, a string or a $parameter, got [3]"},
      {GangConfig("  - opcode: waitForPodGroups\n    namespace: gang-ns-0\n    count: 1\n"),
       "workloadTemplate[2].count: waits for 1 PodGroups in gang-ns-0 but the ops before it make 0 (scheduler_perf "
       "would time out)"},
      // A template the PodGroup's params do not cover is refused at load, naming the field.
      {GangConfig("  - opcode: createPodGroups\n    count: 1\n    namespace: x\n    templatePath: templates/podgroup.yaml\n"),
       "podGroups[0].template.spec.schedulingPolicy.gang.minCount: unknown template variable {{.podsPerGroup}}"},
  };
  for (const Case& c : cases) {
    absl::Status s = load(c.text);
    EXPECT_FALSE(s.ok()) << c.text;
    EXPECT_NE(std::string(s.message()).find(c.want), std::string::npos) << s.message() << "\nwant: " << c.want;
  }
  EXPECT_TRUE(load(GangConfig()).ok()) << load(GangConfig());
}

TEST(PerfConfigTest, StartAndStopCollectingMetricsNameTheItems) {
  const std::string ops =
      "  - opcode: createPods\n    count: 3\n"
      "  - opcode: barrier\n"
      "  - opcode: startCollectingMetrics\n    name: steady\n    namespaces: [measured]\n"
      "  - opcode: createPods\n    countParam: $measurePods\n    namespace: measured\n"
      "  - opcode: stopCollectingMetrics\n";
  const std::string text = StrCat("- name: Case\n  workloadTemplate:\n  - opcode: createNodes\n    count: 4\n", ops,
                                  "  workloads:\n  - name: small\n    params: {measurePods: 6}\n");
  const std::string path = ::testing::TempDir() + "kplace_collect_config.yaml";
  {
    std::ofstream f(path);
    f << text;
  }
  auto all = LoadPerfConfig(path);
  std::remove(path.c_str());
  ASSERT_TRUE(all.ok()) << all.status();
  ASSERT_EQ(all->size(), 1u);
  const Workload& w = (*all)[0];
  EXPECT_EQ(w.init[0].namespace_, "namespace-1");
  EXPECT_EQ(w.measured.namespace_, "measured");
  EXPECT_EQ(w.measured.count, 6);
  EXPECT_EQ(w.metrics_name, "steady");
}

TEST(PerfConfigTest, LabelFilterAsUpstream) {
  EXPECT_TRUE(LabelsSelected("", {}));
  EXPECT_TRUE(LabelsSelected("performance", {"performance", "short"}));
  EXPECT_FALSE(LabelsSelected("performance", {"integration-test"}));
  EXPECT_TRUE(LabelsSelected("integration-test,-performance", {"integration-test", "short"}));
  EXPECT_FALSE(LabelsSelected("integration-test,-performance", {"integration-test", "performance"}));
  EXPECT_TRUE(LabelsSelected("+short", {"short"}));
}

// Prometheus' bucketQuantile over kube-scheduler's attempt buckets (1 ms, 2 ms, 4 ms, ...).
TEST(PerfConfigTest, HistogramQuantilesInterpolateInBuckets) {
  Histogram h = Histogram::Exponential(0.001, 2, 15);
  ASSERT_EQ(h.bounds.size(), 15u);
  EXPECT_DOUBLE_EQ(h.bounds[3], 0.008);
  EXPECT_TRUE(std::isnan(h.Quantile(0.5)));
  for (double s : {0.0005, 0.0005, 0.0015, 0.0030}) h.Observe(s);
  // Counts <= 1 ms: 2, <= 2 ms: 3, <= 4 ms: 4. Rank 0.5*4 = 2 lies in the first bucket, at its end.
  EXPECT_DOUBLE_EQ(h.Quantile(0.5), 0.001);
  // Rank 0.9*4 = 3.6 in (2 ms, 4 ms]: 2 ms + 2 ms * (3.6 - 3) / 1.
  EXPECT_NEAR(h.Quantile(0.9), 0.0032, 1e-12);
  EXPECT_NEAR(h.Average(), 0.001375, 1e-12);
  h.Observe(100);  // past the last bound: the highest finite bound
  EXPECT_DOUBLE_EQ(h.Quantile(0.99), h.bounds.back());
}

}  // namespace
}  // namespace kplace::bench
