#include "kplace/bench/workload.h"

#include <gtest/gtest.h>

#include <cstdio>
#include <fstream>
#include <map>
#include <set>
#include <sstream>
#include <tuple>

#include "kplace/bench/runner.h"
#include "kplace/bench/sweep.h"
#include "kplace/cli/commands.h"
#include "kplace/common/status.h"
#include "kplace/common/strings.h"
#include "kplace/config/config.h"
#include "kplace/cycle/batch.h"
#include "kplace/cycle/opportunistic_batch.h"
#include "kplace/cycle/scheduler.h"
#include "kplace/model/decode.h"
#include "kplace/model/storage.h"

namespace kplace::bench {
namespace {

const std::vector<std::string> kUpstreamWorkloads = {
    "SchedulingBasic",
    "SchedulingPodAntiAffinity",
    "SchedulingPodMatchingAntiAffinity",
    "SchedulingPodAffinity",
    "SchedulingPreferredPodAffinity",
    "SchedulingPreferredPodAntiAffinity",
    "SchedulingNodeAffinity",
    "MixedSchedulingBasePod",
    "SchedulingRequiredPodAntiAffinityWithNSSelector",
    "SchedulingPreferredAntiAffinityWithNSSelector",
    "SchedulingRequiredPodAffinityWithNSSelector",
    "SchedulingPreferredAffinityWithNSSelector",
    "TopologySpreading",
    "PreferredTopologySpreading",
    "DefaultTopologySpreading",
    "SchedulingWithNodeInclusionPolicy",
    "SchedulingWithExtendedResource",
    "SchedulingDaemonset",
    "SchedulingCSIPVs",
    "SchedulingInTreePVs",
    "SchedulingMigratedInTreePVs",
    "SchedulingSecrets",
    "SchedulingWithMixedChurn",
    "Unschedulable",
    "SchedulingDeletedPodsWithFinalizers",
    "SchedulingWhileGated",
    "HostPortConflict",
    "ResourceSaturation",
    "GangScheduling"};

// Nodes beyond the size a variant is named for: SchedulingDaemonset adds its named node.
int32_t ExtraNodes(const std::string& workload) { return workload == "SchedulingDaemonset" ? 1 : 0; }

// A workload of kplace's own: every variant is marked upstream: false.
bool IsKplaceOwn(const Workload& w) {
  return std::none_of(w.variants.begin(), w.variants.end(), [](const Variant& v) { return v.upstream; });
}

TEST(WorkloadTest, EveryUpstreamWorkloadIsBuiltIn) {
  std::vector<std::string> names = BuiltinWorkloads();
  for (const std::string& n : kUpstreamWorkloads) {
    EXPECT_NE(std::find(names.begin(), names.end(), n), names.end()) << n;
  }
}

TEST(WorkloadTest, EveryBuiltInDecodesWithUpstreamSizes) {
  for (const std::string& n : BuiltinWorkloads()) {
    SCOPED_TRACE(n);
    if (n == "PreemptionBasic") continue;  // upstream runs it at 500 nodes only, without a floor: below
    if (n == "HostPortConflict" || n == "ResourceSaturation") continue;  // batching/: 20000 nodes, no floors; below
    if (n == "GangScheduling") continue;  // podgroup/: sizes named by gangs, no floors; below
    auto w = LoadWorkload(n);
    ASSERT_TRUE(w.ok()) << w.status();
    EXPECT_EQ(w->name, n);
    if (IsKplaceOwn(*w)) continue;  // no upstream sizes or floors: tested on their own below
    if (n == "SchedulingWhileGated") {  // upstream's one node, at every size
      EXPECT_EQ(w->num_nodes, 1);
      continue;
    }
    // The default file size: 5000 nodes (named 5000Nodes where upstream's names say Nodes).
    const bool named_by_nodes = w->FindVariant("5000Nodes") != nullptr;
    if (named_by_nodes) EXPECT_EQ(w->variant, "5000Nodes");
    EXPECT_EQ(w->num_nodes, 5000 + ExtraNodes(n));
    EXPECT_GT(w->measured.count, 0);
    bool has_threshold = false;
    for (const Variant& v : w->variants) has_threshold |= v.threshold.has_value();
    EXPECT_TRUE(has_threshold) << "every workload here has an upstream CI floor";
    // --nodes 500 / 15000 pick a variant of that size ("<N>Nodes" where there is one).
    for (int32_t nodes : {500, 15000}) {
      if (nodes == 15000 && n == "SchedulingWithExtendedResource") continue;  // see its file
      Workload sized = *w;
      EXPECT_TRUE(SelectNodes(sized, nodes)) << nodes;
      if (named_by_nodes) EXPECT_EQ(sized.variant, StrCat(nodes, "Nodes"));
      EXPECT_EQ(sized.num_nodes, nodes + ExtraNodes(n));
    }
  }
}

// scheduler_perf's batching/ workloads: upstream's sizes, signature batch sizes and gates, and
// a scheduler configuration under which pods sign (no spreading defaults).
TEST(WorkloadTest, BatchingWorkloadsAsUpstream) {
  for (const std::string n : {"HostPortConflict", "ResourceSaturation"}) {
    SCOPED_TRACE(n);
    auto w = LoadWorkload(n);
    ASSERT_TRUE(w.ok()) << w.status();
    ASSERT_TRUE(w->scheduler_config.has_value());
    auto config = DecodeSchedulerConfig(*w->scheduler_config, n);
    ASSERT_TRUE(config.ok()) << config.status();
    EXPECT_TRUE(cycle::ProfileSignsPods(config->profiles.at(0), FeatureGates{}));
    std::vector<std::string> names;
    for (const Variant& v : w->variants) {
      names.push_back(v.name);
      EXPECT_EQ(v.feature_gates.at("OpportunisticBatching"), v.name.find("Disabled") == std::string::npos) << v.name;
    }
    EXPECT_EQ(names, (std::vector<std::string>{"10Nodes_10Pods_10BatchSize", "20000Nodes_20000Pods_10BatchSize",
                                               "20000Nodes_20000Pods_100BatchSize", "20000Nodes_20000Pods_1000BatchSize",
                                               "20000Nodes_20000Pods_5000BatchSize", "20000Nodes_20000Pods_20000BatchSize",
                                               "20000Nodes_20000Pods_OpportunisticBatchingDisabled"}));
    ASSERT_TRUE(ApplyVariant(*w, "20000Nodes_20000Pods_100BatchSize").ok());
    EXPECT_EQ(w->num_nodes, 20000);
    EXPECT_EQ(w->measured.signature_batch_size, 100);
    // Runs of 100 pods share one signature (a toleration no node needs), the next run another.
    w->measured.count = 250;
    auto pods = BuildPods(w->measured, "pod", 0);
    ASSERT_TRUE(pods.ok());
    const Profile& profile = config->profiles[0];
    auto sig = [&](int k) { return cycle::BatchSignature((*pods)[k], profile, FeatureGates{}); };
    ASSERT_TRUE(sig(0).has_value());
    EXPECT_EQ(sig(0), sig(99));
    EXPECT_NE(sig(99), sig(100));
    EXPECT_EQ(sig(100), sig(199));
    EXPECT_NE(sig(199), sig(200));
  }
}

TEST(WorkloadTest, PreemptionBasicAsUpstream) {
  auto w = LoadWorkload("PreemptionBasic");
  ASSERT_TRUE(w.ok()) << w.status();
  EXPECT_EQ(w->variant, "500Nodes");
  EXPECT_EQ(w->num_nodes, 500);
  ASSERT_EQ(w->init.size(), 1u);
  EXPECT_EQ(w->init[0].count, 2000);
  EXPECT_EQ(w->measured.count, 500);
  EXPECT_EQ(w->measured.pod_template["spec"]["priority"], 10);
  ASSERT_TRUE(ApplyVariant(*w, "5000Nodes").ok());
  EXPECT_EQ(w->init[0].count, 20000);
  EXPECT_EQ(w->measured.count, 5000);
}

TEST(WorkloadTest, ShapesMatchSchedulerPerf) {
  auto affinity = LoadWorkload("SchedulingPodAffinity");
  ASSERT_TRUE(affinity.ok());
  EXPECT_EQ(affinity->init[0].count, 5000);
  EXPECT_EQ(affinity->measured.count, 1000);
  EXPECT_EQ(affinity->init[0].namespace_, "sched-0");
  EXPECT_EQ(affinity->measured.namespace_, "sched-1");
  ASSERT_TRUE(ApplyVariant(*affinity, "5000Nodes_5000Pods").ok());
  EXPECT_EQ(affinity->measured.count, 5000);
  EXPECT_EQ(*affinity->FindVariant("5000Nodes_5000Pods")->threshold, 35);

  auto mixed = LoadWorkload("MixedSchedulingBasePod");
  ASSERT_TRUE(mixed.ok());
  ASSERT_EQ(mixed->init.size(), 5u);
  for (const PodGroup& g : mixed->init) EXPECT_EQ(g.count, 2000);

  // Zones: all zone1, or moon-1..3 round-robin.
  auto c = BuildCluster(*affinity);
  ASSERT_TRUE(c.ok());
  EXPECT_EQ(c->nodes.size(), 5000u);
  EXPECT_EQ(c->nodes[4999].meta.labels.at("topology.kubernetes.io/zone"), "zone1");
  EXPECT_EQ(c->nodes[7].meta.labels.at("kubernetes.io/hostname"), "node-7");
  auto spread = LoadWorkload("TopologySpreading");
  ASSERT_TRUE(spread.ok());
  spread->num_nodes = 6;
  auto s = BuildCluster(*spread);
  ASSERT_TRUE(s.ok());
  EXPECT_EQ(s->nodes[0].meta.labels.at("topology.kubernetes.io/zone"), "moon-1");
  EXPECT_EQ(s->nodes[4].meta.labels.at("topology.kubernetes.io/zone"), "moon-2");
  auto basic = LoadWorkload("SchedulingBasic");
  ASSERT_TRUE(basic.ok());
  auto b = BuildCluster(*basic);
  ASSERT_TRUE(b.ok());
  EXPECT_EQ(b->nodes[0].meta.labels.count("topology.kubernetes.io/zone"), 0u);
}

TEST(WorkloadTest, BuildPodsStampsNamesAndCreationOrder) {
  auto w = LoadWorkload("SchedulingPodAntiAffinity");
  ASSERT_TRUE(w.ok());
  w->measured.count = 3;
  auto pods = BuildPods(w->measured, "pod", 100);
  ASSERT_TRUE(pods.ok());
  ASSERT_EQ(pods->size(), 3u);
  EXPECT_EQ((*pods)[2].meta.name, "pod-2");
  EXPECT_EQ((*pods)[2].meta.namespace_, "sched-1");
  EXPECT_EQ((*pods)[2].meta.creation_unix, 102);
  EXPECT_EQ((*pods)[0].meta.labels.at("color"), "green");
  ASSERT_TRUE((*pods)[0].affinity && (*pods)[0].affinity->pod_anti_affinity);
}

TEST(WorkloadTest, BadDocumentsNameTheField) {
  auto parse = [](const std::string& yaml) {
    auto docs = ParseDocuments(yaml, "w.yaml");
    EXPECT_TRUE(docs.ok());
    return DecodeWorkloadSpec((*docs)[0], "w.yaml");
  };
  auto no_measured = parse("name: x\nnodes: {count: 1}\n");
  EXPECT_EQ(no_measured.status().message(), "w.yaml: measured: missing");
  auto bad_variant = parse(
      "name: x\nnodes: {}\ninit: [{template: {}}]\nmeasured: {template: {}}\n"
      "variants: [{name: a, nodes: 1, init: [1, 2], measured: 1}]\n");
  EXPECT_EQ(bad_variant.status().message(),
            "w.yaml: variants[0].init: expected 1 counts (one per init group), got 2");
  auto bad_default = parse(
      "name: x\nnodes: {}\nmeasured: {template: {}}\ndefault: b\nvariants: [{name: a, nodes: 1, measured: 1}]\n");
  EXPECT_FALSE(bad_default.ok());
  auto bad_labels = parse("name: x\nnodes: {count: 1, labels: {zone: []}}\nmeasured: {count: 1, template: {}}\n");
  EXPECT_EQ(bad_labels.status().message(), "w.yaml: nodes.labels.zone: expected at least one value");
}

TEST(WorkloadTest, BadExtensionsNameTheField) {
  auto parse = [](const std::string& yaml) {
    auto docs = ParseDocuments(yaml, "w.yaml");
    EXPECT_TRUE(docs.ok()) << docs.status();
    return DecodeWorkloadSpec((*docs)[0], "w.yaml");
  };
  const std::string pod = "measured: {count: 1, template: {spec: {containers: [{name: c}]}}}\n";
  EXPECT_EQ(parse("name: x\nnodes: {count: 1}\n" + pod + "extra: 1\n").status().message(),
            "w.yaml: extra: unknown field");
  EXPECT_EQ(parse("name: x\nnodes: [{count: 1, tmpl: {}}]\n" + pod).status().message(),
            "w.yaml: nodes[0].tmpl: unknown field");
  // Template variables are checked where they are used.
  EXPECT_EQ(parse("name: x\nnodes: {count: 1, template: {metadata: {labels: {a: '{{.Namespace}}'}}}}\n" + pod)
                .status()
                .message(),
            "w.yaml: nodes.template.metadata.labels.a: unknown template variable {{.Namespace}} (this template "
            "may use {{.Index}} and {{.Name}})");
  EXPECT_EQ(parse("name: x\nnodes: {count: 1}\nmeasured: {count: 1, template: {}, objects: [{kind: PersistentVolume, "
                  "metadata: {name: 'v-{{.Idx}}'}}]}\n")
                .status()
                .message(),
            "w.yaml: measured.objects[0].metadata.name: unknown template variable {{.Idx}} (this template may use "
            "{{.Index}} and {{.Namespace}})");
  // Node groups take a list of counts; namespace sets must exist.
  auto groups = parse(
      "name: x\nnodes: [{template: {}}, {template: {}}]\nmeasured: {template: {}}\n"
      "variants: [{name: a, nodes: 5, measured: 1}]\n");
  EXPECT_EQ(groups.status().message(), "w.yaml: variants[0].nodes: expected a list of 2 counts (one per node group)");
  auto no_set = parse("name: x\nnodes: {count: 1}\nmeasured: {count: 1, namespacePrefix: ns, template: {}}\n");
  EXPECT_EQ(no_set.status().message(), "w.yaml: measured.namespacePrefix: no namespaceSets entry has prefix \"ns\"");
  // Objects and templates are decoded at load: errors name the field and the object.
  auto bad_object = parse("name: x\nnodes: {count: 1}\n" + pod + "objects: [{kind: Gadget, metadata: {name: g}}]\n");
  ASSERT_FALSE(bad_object.ok());
  EXPECT_NE(bad_object.status().message().find("w.yaml: objects[0]"), std::string::npos) << bad_object.status();
  EXPECT_NE(bad_object.status().message().find("unsupported kind \"Gadget\""), std::string::npos) << bad_object.status();
  auto bad_quantity = parse("name: x\nnodes: {count: 1, template: {status: {capacity: {cpu: lots}}}}\n" + pod);
  ASSERT_FALSE(bad_quantity.ok());
  EXPECT_NE(bad_quantity.status().message().find("w.yaml: nodes.template"), std::string::npos) << bad_quantity.status();
  EXPECT_NE(bad_quantity.status().message().find("status.capacity.cpu"), std::string::npos) << bad_quantity.status();
  // A named node template with several nodes needs {{.Index}}.
  auto named = parse("name: x\nnodes: {count: 2, template: {metadata: {name: n}}}\n" + pod);
  ASSERT_TRUE(named.ok()) << named.status();
  EXPECT_EQ(BuildCluster(*named).status().message(),
            "workload x node group 0: node name \"n\" repeats (a named template with more than one node needs "
            "{{.Index}})");
}

// scheduler_perf's podgroup/gangscheduling: upstream's sizes (no CI floors) under
// GenericWorkload, one gang PodGroup per gang (minCount podsPerGroup), pod k in gang
// k / podsPerGroup.
TEST(WorkloadTest, GangSchedulingAsUpstream) {
  auto w = LoadWorkload("GangScheduling");
  ASSERT_TRUE(w.ok()) << w.status();
  EXPECT_EQ(w->variant, "5000Nodes_1000Gangs_3000Pods");
  const std::map<std::string, std::tuple<int32_t, int32_t, int32_t>> sizes = {  // nodes, gangs, pods per gang
      {"10Nodes_3Gangs", {10, 3, 3}},
      {"100Nodes_10Gangs", {100, 10, 3}},
      {"5000Nodes_1000Gangs_3000Pods", {5000, 1000, 3}},
      {"5000Nodes_2000Gangs_6000Pods", {5000, 2000, 3}},
      {"5000Nodes_3000Gangs_9000Pods", {5000, 3000, 3}},
      {"5000Nodes_3Gangs_3000Pods_1000PerGroup", {5000, 3, 1000}},
      {"5000Nodes_6Gangs_6000Pods_1000PerGroup", {5000, 6, 1000}},
      {"5000Nodes_9Gangs_9000Pods_1000PerGroup", {5000, 9, 1000}},
      {"5000Nodes_10Gangs_50000Pods_5000PerGroup", {5000, 10, 5000}}};
  EXPECT_EQ(w->variants.size(), sizes.size());
  for (const auto& [name, size] : sizes) {
    SCOPED_TRACE(name);
    const auto [nodes, gangs, per] = size;
    const Variant* v = w->FindVariant(name);
    ASSERT_NE(v, nullptr);
    EXPECT_EQ(v->nodes, nodes);
    EXPECT_EQ(v->pod_groups, std::vector<int32_t>{gangs});
    EXPECT_EQ(v->measured, gangs * per);
    EXPECT_EQ(v->params.at("podsPerGroup"), per);
    EXPECT_TRUE(v->feature_gates.at("GenericWorkload"));
    EXPECT_FALSE(v->threshold.has_value());
  }
  Workload big = *w;
  ASSERT_TRUE(ApplyVariant(big, "5000Nodes_3Gangs_3000Pods_1000PerGroup").ok());
  big.num_nodes = 10;
  auto cluster = BuildCluster(big);
  ASSERT_TRUE(cluster.ok()) << cluster.status();
  ASSERT_EQ(cluster->pod_groups.size(), 3u);
  for (int i = 0; i < 3; ++i) {
    EXPECT_EQ(cluster->pod_groups[i].meta.name, StrCat("gang-", i));
    EXPECT_EQ(cluster->pod_groups[i].meta.namespace_, "gang-ns-0");
    EXPECT_EQ(cluster->pod_groups[i].min_count, 1000);
  }
  auto pods = BuildPods(big.measured, "pod");
  ASSERT_TRUE(pods.ok()) << pods.status();
  ASSERT_EQ(pods->size(), 3000u);
  EXPECT_EQ((*pods)[0].meta.namespace_, "gang-ns-0");
  EXPECT_EQ((*pods)[0].scheduling_group, "gang-0");
  EXPECT_EQ((*pods)[999].scheduling_group, "gang-0");
  EXPECT_EQ((*pods)[1000].scheduling_group, "gang-1");
  EXPECT_EQ((*pods)[2999].scheduling_group, "gang-2");
}

// The smallest size end to end: every gang placed in its PodGroup cycle, the engine's
// placements the reference's; and the PodGroups decide: gangs one member short of minCount
// are placed on neither side.
TEST(WorkloadTest, GangSchedulingRunsIdenticallyOnEngineAndReference) {
  auto w = LoadWorkload("GangScheduling");
  ASSERT_TRUE(w.ok()) << w.status();
  ASSERT_TRUE(ApplyVariant(*w, "10Nodes_3Gangs").ok());
  BenchOptions options;
  options.verify = true;
  auto r = RunWorkload(*w, options);
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_TRUE(r->applied_gates.at("GenericWorkload"));
  EXPECT_EQ(r->engine.pods, 9);
  EXPECT_EQ(r->engine.scheduled, 9);
  EXPECT_EQ(r->reference.scheduled, 9);
  EXPECT_EQ(r->compared, 9);
  EXPECT_EQ(r->mismatches, 0) << r->first_mismatch;
  EXPECT_TRUE(r->verify_same) << r->verify_first_mismatch;

  // A reference budget that ends mid-group compares the members it reported: a prefix, with a
  // ratio over the same pods.
  BenchOptions capped;
  capped.reference_budget_seconds = 1e-9;
  auto prefix = RunWorkload(*w, capped);
  ASSERT_TRUE(prefix.ok()) << prefix.status();
  EXPECT_TRUE(prefix->reference.capped);
  EXPECT_EQ(prefix->compared, prefix->reference.pods);
  EXPECT_EQ(prefix->compared, prefix->reference.scheduled);
  EXPECT_LT(prefix->compared, 9);
  EXPECT_GT(prefix->speedup, 0);
  EXPECT_EQ(prefix->mismatches, 0) << prefix->first_mismatch;

  Workload short_gangs = *w;
  short_gangs.pod_groups[0].params["podsPerGroup"] = 4;  // minCount 4, 3 pods per gang
  auto held = RunWorkload(short_gangs, options);
  ASSERT_TRUE(held.ok()) << held.status();
  EXPECT_EQ(held->engine.scheduled, 0);
  EXPECT_EQ(held->reference.scheduled, 0);
  EXPECT_EQ(held->mismatches, 0) << held->first_mismatch;
  EXPECT_TRUE(held->verify_same) << held->verify_first_mismatch;
}

// templateParams and upstream's integer template functions, and their errors.
TEST(WorkloadTest, TemplateParamsAndFunctions) {
  auto parse = [](const std::string& yaml) {
    auto docs = ParseDocuments(yaml, "w.yaml");
    EXPECT_TRUE(docs.ok()) << docs.status();
    return DecodeWorkloadSpec((*docs)[0], "w.yaml");
  };
  auto doc = [](const std::string& labels, const std::string& params = "{per: $per, word: blue, two: 2}",
                const std::string& variant_params = "{per: 3}") {
    return StrCat("name: x\nnodes: {count: 1}\nmeasured:\n  namespace: ns\n  templateParams: ", params,
                  "\n  template:\n    metadata: {labels: ", labels, "}\n",
                  "    spec: {containers: [{name: c}], priority: '{{.two}}'}\n",
                  "variants: [{name: a, nodes: 1, measured: 7, params: ", variant_params, "}]\n");
  };
  auto w = parse(doc(
      "{gang: 'g-{{DivideInt .Index .per}}', mod: 'm{{Mod .Index 3}}', sum: 's{{AddInt .Index .two 1}}', "
      "product: 'p{{MultiplyInt .Index .per}}', diff: 'd{{SubtractInt .Index .two}}', word: '{{.word}}', "
      "spaced: 'x{{ DivideInt  .Index  .per }}'}"));
  ASSERT_TRUE(w.ok()) << w.status();
  auto pods = BuildPods(w->measured, "pod");
  ASSERT_TRUE(pods.ok()) << pods.status();
  ASSERT_EQ(pods->size(), 7u);
  const Pod& p = (*pods)[5];
  EXPECT_EQ(p.meta.labels, (std::map<std::string, std::string>{{"gang", "g-1"}, {"mod", "m2"}, {"sum", "s8"},
                                                               {"product", "p15"}, {"diff", "d3"}, {"word", "blue"},
                                                               {"spaced", "x1"}}));
  EXPECT_EQ(p.priority, 2);  // a value that is only a parameter keeps its type

  struct Case {
    std::string yaml, want;
  };
  const std::vector<Case> cases = {
      {doc("{a: 'x{{Frob .Index}}'}"),
       "w.yaml: measured.template.metadata.labels.a: {{Frob .Index}}: unknown template function Frob "
       "(kplace has DivideInt, MultiplyInt, AddInt, SubtractInt, Mod)"},
      {doc("{a: 'x{{DivideInt .Index}}'}"),
       "w.yaml: measured.template.metadata.labels.a: {{DivideInt .Index}}: DivideInt takes 2 operands, got 1"},
      {doc("{a: 'x{{DivideInt .Index 0}}'}"),
       "w.yaml: measured.template.metadata.labels.a: {{DivideInt .Index 0}}: DivideInt by zero"},
      {doc("{a: 'x{{DivideInt .Index .per}}'}", "{per: $per, word: blue, two: 2}", "{per: 0}"),
       "w.yaml: variants: workload x measured.template: DivideInt by zero (.per is 0)"},
      {doc("{a: 'x{{DivideInt .Index .word}}'}"),
       "w.yaml: variants: workload x measured.template: DivideInt: .word is \"blue\", not a number"},
      {doc("{a: 'x{{.nope}}'}"),
       "w.yaml: measured.template.metadata.labels.a: unknown template variable {{.nope}} (this template may use "
       "{{.Index}} and {{.Namespace}}, and its templateParams .per, .two, .word)"},
      {doc("{a: x}", "{per: $per, word: blue, two: 2}", "{other: 3}"),
       "w.yaml: variants: workload x measured.templateParams.per: $per is not among the variant's params"},
      {doc("{a: x}", "{per: [1], word: blue, two: 2}"),
       "w.yaml: measured.templateParams.per: expected an integer or a string, got [1]"},
      {doc("{a: x}", "{Index: 1, word: blue, two: 2}"),
       "w.yaml: measured.templateParams.Index: expected a name of letters, digits and _ other than Index, Name, Namespace"},
      {"name: x\nnodes: {count: 1}\nmeasured: {count: 1, template: {}}\n"
       "podGroups: [{count: 1, template: {kind: PodGroup, metadata: {name: g}}}]\n",
       "w.yaml: podGroups[0].namespace: expected a namespace name (PodGroups are namespaced)"},
      {"name: x\nnodes: {count: 1}\nmeasured: {count: 1, template: {}}\n"
       "podGroups: [{count: 1, namespace: ns, template: {kind: Pod, metadata: {name: g}}}]\n",
       "w.yaml: podGroups[0].template.kind: expected PodGroup, got \"Pod\""},
  };
  for (const Case& c : cases) {
    auto bad = parse(c.yaml);
    EXPECT_FALSE(bad.ok()) << c.yaml;
    EXPECT_EQ(std::string(bad.status().message()), c.want) << c.yaml;
  }
}

TEST(WorkloadTest, NodeGroupsScaleWithTheNodeCount) {
  auto w = LoadWorkload("SchedulingWithNodeInclusionPolicy");
  ASSERT_TRUE(w.ok()) << w.status();
  EXPECT_EQ(NodeGroupCounts(*w), (std::vector<int32_t>{4000, 1000}));
  w->num_nodes = 50;  // --nodes 50: no such variant, the groups keep their proportions
  EXPECT_EQ(NodeGroupCounts(*w), (std::vector<int32_t>{40, 10}));
  w->num_nodes = 7;
  EXPECT_EQ(NodeGroupCounts(*w), (std::vector<int32_t>{6, 1}));
  auto d = LoadWorkload("SchedulingDaemonset");
  ASSERT_TRUE(d.ok());
  d->num_nodes = 50;  // the named node stays
  EXPECT_EQ(NodeGroupCounts(*d), (std::vector<int32_t>{1, 49}));
}

// Every built-in workload, tiny: engine and reference placements must be identical.
TEST(WorkloadTest, TinyRunsAreIdenticalOnEngineAndReference) {
  for (const std::string& n : BuiltinWorkloads()) {
    SCOPED_TRACE(n);
    auto w = LoadWorkload(n);
    ASSERT_TRUE(w.ok());
    if (w->num_nodes > 1) w->num_nodes = 50;
    for (PodGroup& g : w->init) g.count = 20;
    w->measured.count = 20;
    // Churn and deletions at a rate that puts them among 20 pods (the variant's own
    // threshold goes with its name).
    const bool events = w->churn || w->delete_pods;
    w->throughput = 5;
    // One namespace per namespace set, so each init group holds 20 pods.
    for (NamespaceSet& s : w->namespace_sets) s.count = 1;
    for (PodGroup& g : w->init) g.namespace_count = 1;
    NameVariant(*w);
    BenchOptions options;
    auto r = RunWorkload(*w, options);
    ASSERT_TRUE(r.ok()) << r.status();
    EXPECT_EQ(r->engine.pods, 20);
    EXPECT_EQ(r->compared, 20);
    EXPECT_EQ(r->mismatches, 0) << r->first_mismatch;
    EXPECT_GT(r->engine.scheduled, 0);
    EXPECT_EQ(r->engine.scheduled, r->reference.scheduled);
    EXPECT_EQ(r->init_pods, 20 * static_cast<int64_t>(w->init.size()));
    EXPECT_EQ(r->churn_events > 0, events);
  }
}

TEST(WorkloadTest, ThroughputFollowsSchedulerPerfCollector) {
  // Ticks at 1, 2, 3, 4 s. Tick 1 sees 2 pods: the baseline. Tick 2: +3 -> 3/s. Tick 3:
  // nothing new (merged). Tick 4: +4 over 2 s -> 2/s, recorded twice. The tail after 4 s
  // is not sampled.
  std::vector<double> done = {0.5, 0.9, 1.2, 1.5, 1.9, 3.1, 3.2, 3.3, 3.4, 4.5};
  Throughput t = ComputeThroughput(done, 4.6, 1.0);
  EXPECT_EQ(t.samples, 3);
  EXPECT_DOUBLE_EQ(t.average, (3.0 + 2.0 + 2.0) / 3);
  EXPECT_DOUBLE_EQ(t.perc50, 2.0);  // sorted {2, 2, 3}: ceil(1.5) - 1 = 1
  EXPECT_DOUBLE_EQ(t.perc90, 3.0);
  EXPECT_DOUBLE_EQ(t.perc99, 3.0);
  EXPECT_EQ(ComputeThroughput(done, 0.9, 1.0).samples, 0);
  EXPECT_EQ(AutoWindow(30), 1.0);
  EXPECT_EQ(AutoWindow(10), 1.0);
  EXPECT_EQ(AutoWindow(5), 0.5);
  EXPECT_EQ(AutoWindow(0.11), 0.01);
}

TEST(WorkloadTest, JsonHasSchedulerPerfShape) {
  std::string path = ::testing::TempDir() + "kplace_bench_test.json";
  std::string arg_json = "--json=" + path;
  const char* argv[] = {"bench", "--workload=SchedulingPodAffinity", "--nodes=50", "--pods=20", "--init-pods=20",
                        arg_json.c_str()};
  ASSERT_EQ(cli::RunBench(6, const_cast<char**>(argv)), 0);
  std::ifstream f(path);
  std::stringstream text;
  text << f.rdbuf();
  auto doc = nlohmann::json::parse(text.str());
  EXPECT_EQ(doc["version"], "v1");
  ASSERT_TRUE(doc["dataItems"].is_array());
  int throughput = 0, attempts = 0, sli = 0;
  std::map<std::string, std::set<std::string>> points;  // backend -> extension points reported
  for (const auto& item : doc["dataItems"]) {
    ASSERT_TRUE(item.contains("data") && item.contains("unit") && item.contains("labels"));
    const auto& labels = item["labels"];
    // scheduler_perf's Name: the test (test case/workload) and the measured op's namespace.
    EXPECT_EQ(labels["Name"], "BenchmarkPerfScheduling/SchedulingPodAffinity/50Nodes_20Init_20Pods/sched-1");
    EXPECT_TRUE(labels["backend"] == "omp" || labels["backend"] == "cuda" || labels["backend"] == "reference");
    // Every item carries the same label keys; the ones that do not apply say so.
    for (const char* k : {"Metric", "Name", "backend", "extension_point", "result"}) EXPECT_TRUE(labels.contains(k)) << k;
    EXPECT_EQ(labels.size(), 5u) << labels.dump();
    if (labels["Metric"] == "scheduler_framework_extension_point_duration_seconds") {
      points[labels["backend"]].insert(labels["extension_point"].get<std::string>());
      EXPECT_EQ(labels["result"], "not applicable");
      EXPECT_EQ(item["unit"], "ms");
      EXPECT_GT(item["data"]["Average"].get<double>(), 0);
      continue;
    }
    EXPECT_EQ(labels["extension_point"], "not applicable");
    if (labels["Metric"] == "scheduler_scheduling_attempt_duration_seconds" ||
        labels["Metric"] == "scheduler_pod_scheduling_sli_duration_seconds") {
      const bool attempt = labels["Metric"] == "scheduler_scheduling_attempt_duration_seconds";
      (attempt ? attempts : sli) += 1;
      EXPECT_EQ(labels["result"], attempt ? "scheduled" : "not applicable");
      EXPECT_EQ(item["unit"], "ms");
      ASSERT_EQ(item["data"].size(), 5u) << item.dump();
      for (const char* k : {"Average", "Perc50", "Perc90", "Perc95", "Perc99"}) {
        ASSERT_TRUE(item["data"].contains(k)) << k;
        EXPECT_GT(item["data"][k].get<double>(), 0) << k;
      }
      // Bucket interpolation keeps the quantiles in order.
      EXPECT_LE(item["data"]["Perc50"].get<double>(), item["data"]["Perc90"].get<double>());
      EXPECT_LE(item["data"]["Perc95"].get<double>(), item["data"]["Perc99"].get<double>());
      continue;
    }
    if (labels["Metric"] != "SchedulingThroughput") continue;
    EXPECT_EQ(labels["result"], "not applicable");
    ++throughput;
    EXPECT_EQ(item["unit"], "pods/s");
    for (const char* k : {"Average", "Perc50", "Perc90", "Perc95", "Perc99"}) {
      ASSERT_TRUE(item["data"].contains(k)) << k;
      EXPECT_GT(item["data"][k].get<double>(), 0) << k;
    }
  }
  EXPECT_EQ(throughput, 2);  // engine and reference
  EXPECT_EQ(attempts, 2);    // every attempt placed its pod: result "scheduled" only
  EXPECT_EQ(sli, 2);
  // Every cycle ran PreFilter, Filter, Score and Reserve; the reference (per pod) reports
  // PreScore on its own, the batched engine within Score; nothing failed, so no PostFilter.
  const std::set<std::string> batched = {"PreFilter", "Filter", "Score", "Reserve"};
  std::set<std::string> per_pod = batched;
  per_pod.insert("PreScore");
  EXPECT_EQ(points["reference"], per_pod);
  EXPECT_TRUE(points["omp"] == batched || points["omp"] == per_pod) << points["omp"].size();
  std::remove(path.c_str());
}

TEST(WorkloadTest, SweepClusterAndTinySweepAgree) {
  auto c = SweepCluster(SweepKind::kRequiredAntiAffinity, 20, 100);
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_EQ(c->pods.size(), 100u);
  EXPECT_EQ(c->pods[15].meta.labels.at("app"), "g1");
  EXPECT_EQ(c->pods[15].node_name, "node-15");
  SweepOptions o;
  o.nodes = {30};
  o.existing = {0, 60};
  o.pods = 5;
  auto points = RunAffinitySweep(o);
  ASSERT_TRUE(points.ok()) << points.status();
  EXPECT_EQ(points->size(), 2u * 5u * 2u);  // existing x kinds x sides
  std::string csv = SweepCsv(*points);
  EXPECT_EQ(csv.substr(0, csv.find('\n')), "kind,side,nodes,existing,pods,mean_ms,p50_ms,first_ms,max_ms,setup_s,note");
}

// ---- the workloads added with node groups, namespace sets, objects and templates ----------

// RunWorkload on tiny sizes: engine and reference must agree on every measured pod.
BenchResult RunSmall(const Workload& w) {
  BenchResult out;
  auto r = RunWorkload(w, BenchOptions());
  EXPECT_TRUE(r.ok()) << r.status();
  if (!r.ok()) return out;
  EXPECT_EQ(r->compared, w.measured.TotalPods());
  EXPECT_EQ(r->mismatches, 0) << r->first_mismatch;
  EXPECT_EQ(r->engine.scheduled, r->reference.scheduled);
  return *r;
}

// The placements behind RunWorkload's counts: init groups placed in order, then the
// measured pods, on one side (RunWorkload reports counts only).
struct Placed {
  ObjectSet cluster;  // init pods bound
  std::vector<cycle::Placement> measured;  // queue order
};

absl::StatusOr<Placed> Place(const Workload& w, bool reference, bool explain = false) {
  Placed out;
  KPLACE_ASSIGN_OR_RETURN(out.cluster, BuildCluster(w));
  cycle::Options options;
  options.reference = reference;
  options.explain = explain;
  const SchedulerConfig config = DefaultSchedulerConfig();
  int64_t creation = 0;
  for (size_t g = 0; g < w.init.size(); ++g) {
    KPLACE_ASSIGN_OR_RETURN(std::vector<Pod> pods, BuildPods(w.init[g], StrCat("init", g), creation));
    creation += static_cast<int64_t>(pods.size());
    KPLACE_ASSIGN_OR_RETURN(auto scheduler, cycle::Scheduler::Create(out.cluster, config, options));
    std::vector<cycle::Placement> placed = scheduler->ScheduleAll(pods);
    std::vector<size_t> order = cycle::QueueOrder(pods);
    scheduler.reset();
    for (size_t k = 0; k < order.size(); ++k) {
      if (placed[k].node.empty()) continue;
      Pod p = pods[order[k]];
      p.node_name = placed[k].node;
      out.cluster.pods.push_back(std::move(p));
    }
  }
  KPLACE_ASSIGN_OR_RETURN(std::vector<Pod> measured, BuildPods(w.measured, "pod", creation));
  KPLACE_ASSIGN_OR_RETURN(auto scheduler, cycle::Scheduler::Create(out.cluster, config, options));
  out.measured = scheduler->ScheduleAll(measured);
  return out;
}

std::set<std::string> NodesWithPods(const ObjectSet& cluster) {
  std::set<std::string> out;
  for (const Pod& p : cluster.pods) out.insert(p.node_name);
  return out;
}

// The named plugin's raw score per node of one explained cycle.
std::map<std::string, int64_t> RawScores(const cycle::Placement& p, const std::string& plugin) {
  std::map<std::string, int64_t> out;
  if (!p.explanation) return out;
  const auto& names = p.explanation->score_plugins;
  size_t i = std::find(names.begin(), names.end(), plugin) - names.begin();
  if (i == names.size() || p.explanation->score_skipped[i]) return out;
  for (const cycle::NodeExplanation& n : p.explanation->nodes) {
    if (n.scored) out[n.node] = n.raw[i];
  }
  return out;
}

// A NSSelector workload at test size: `nodes` nodes, `namespaces` x `per_namespace` init
// pods, `measured` measured pods.
Workload SmallNsWorkload(const std::string& name, int32_t nodes, int32_t namespaces, int32_t per_namespace,
                         int32_t measured) {
  auto w = LoadWorkload(name);
  EXPECT_TRUE(w.ok()) << w.status();
  ApplyVariant(*w, "500Nodes").IgnoreError();  // sizes the namespace set
  w->num_nodes = nodes;
  w->namespace_sets[0].count = namespaces;
  w->init[0].namespace_count = namespaces;
  w->init[0].count = per_namespace;
  w->measured.count = measured;
  NameVariant(*w);
  return *w;
}

// The same workload with no namespace labelled: the namespaceSelector matches nothing.
Workload WithoutNamespaceLabels(Workload w) {
  for (NamespaceSet& set : w.namespace_sets) set.namespace_template["metadata"].erase("labels");
  for (auto& ns : w.namespaces) ns["metadata"].erase("labels");
  return w;
}

TEST(WorkloadTest, PodMatchingAntiAffinityHasUpstreamShape) {
  auto matching = LoadWorkload("SchedulingPodMatchingAntiAffinity");
  ASSERT_TRUE(matching.ok()) << matching.status();
  EXPECT_EQ(matching->init[0].count, 1000);
  ASSERT_TRUE(matching->init[0].pod_template["spec"].contains("affinity"));
  EXPECT_FALSE(matching->measured.pod_template["spec"].contains("affinity"));  // only the label
  EXPECT_EQ(matching->measured.pod_template["metadata"]["labels"]["color"], "green");
  EXPECT_EQ(*matching->FindVariant("5000Nodes_5000Pods")->threshold, 595);
  EXPECT_EQ(*matching->FindVariant("5000Nodes_5000Pods_QueueingHintsEnabled")->threshold, 543);
  EXPECT_FALSE(matching->FindVariant("5000Nodes")->upstream);
}

TEST(WorkloadTest, NsSelectorWorkloadsHaveUpstreamShapes) {
  // 100 labelled init namespaces x 40 or 50 pods, a labelled measured namespace.
  for (const auto& [name, per_ns, threshold_variant, threshold] :
       std::vector<std::tuple<std::string, int32_t, std::string, double>>{
           {"SchedulingRequiredPodAntiAffinityWithNSSelector", 40, "5000Nodes_2000Pods", 24},
           {"SchedulingPreferredAntiAffinityWithNSSelector", 40, "5000Nodes_2000Pods", 55},
           {"SchedulingRequiredPodAffinityWithNSSelector", 50, "5000Nodes_2000Pods", 35},
           {"SchedulingPreferredAffinityWithNSSelector", 50, "5000Nodes_5000Pods", 90}}) {
    SCOPED_TRACE(name);
    auto w = LoadWorkload(name);
    ASSERT_TRUE(w.ok()) << w.status();
    // Upstream's two createNamespaces ops: init-ns-*, and measure-ns-0 alone.
    ASSERT_EQ(w->namespace_sets.size(), 2u);
    EXPECT_EQ(w->namespace_sets[0].prefix, "init-ns");
    EXPECT_EQ(w->namespace_sets[0].count, 100);
    EXPECT_EQ(w->namespace_sets[1].prefix, "measure-ns");
    EXPECT_EQ(w->namespace_sets[1].count, 1);
    EXPECT_EQ(w->init[0].count, per_ns);
    EXPECT_EQ(w->init[0].TotalPods(), 100 * per_ns);
    EXPECT_EQ(w->init[0].Namespaces()[99], "init-ns-99");
    EXPECT_EQ(w->measured.namespace_, "measure-ns-0");
    EXPECT_EQ(w->measured.count, 1000);
    EXPECT_EQ(*w->FindVariant(threshold_variant)->threshold, threshold);
    auto c = BuildCluster(*w);
    ASSERT_TRUE(c.ok()) << c.status();
    ASSERT_EQ(c->namespaces.size(), 101u);
    for (const Namespace& ns : c->namespaces) EXPECT_EQ(ns.meta.labels.at("team"), "devops") << ns.meta.name;
    auto pods = BuildPods(w->init[0], "init0");
    ASSERT_TRUE(pods.ok());
    ASSERT_EQ(pods->size(), 100u * per_ns);
    EXPECT_EQ((*pods)[per_ns].meta.namespace_, "init-ns-1");  // namespaces in order
    EXPECT_EQ((*pods)[per_ns].meta.creation_unix, per_ns);
    ASSERT_TRUE(ApplyVariant(*w, "500Nodes").ok());
    EXPECT_EQ(w->init[0].TotalPods(), 10 * 4);
  }
  auto required = LoadWorkload("SchedulingRequiredPodAntiAffinityWithNSSelector");
  ASSERT_TRUE(required.ok());
  EXPECT_EQ(required->FindVariant("5000Nodes_2000Pods")->nodes, 6000);  // upstream's size, sic
}

TEST(WorkloadTest, NodeGroupAndObjectWorkloadsHaveUpstreamShapes) {
  auto dts = LoadWorkload("DefaultTopologySpreading");
  ASSERT_TRUE(dts.ok()) << dts.status();
  EXPECT_EQ(dts->measured.namespace_, "service-ns");
  EXPECT_EQ(*dts->FindVariant("5000Nodes_50000Pods")->threshold, 160);
  dts->num_nodes = 6;
  auto dc = BuildCluster(*dts);
  ASSERT_TRUE(dc.ok()) << dc.status();
  ASSERT_EQ(dc->workloads.size(), 1u);
  EXPECT_EQ(dc->workloads[0].kind, "Service");
  EXPECT_EQ(dc->workloads[0].meta.namespace_, "service-ns");
  EXPECT_EQ(dc->workloads[0].selector->match_labels.at("app"), "scheduler-perf");

  auto inclusion = LoadWorkload("SchedulingWithNodeInclusionPolicy");
  ASSERT_TRUE(inclusion.ok()) << inclusion.status();
  EXPECT_EQ(*inclusion->FindVariant("5000Nodes")->threshold, 270);
  auto ic = BuildCluster(*inclusion);
  ASSERT_TRUE(ic.ok()) << ic.status();
  ASSERT_EQ(ic->nodes.size(), 5000u);
  EXPECT_TRUE(ic->nodes[3999].taints.empty());
  ASSERT_EQ(ic->nodes[4000].taints.size(), 1u);
  EXPECT_EQ(ic->nodes[4000].meta.name, "node-4000");
  EXPECT_EQ(ic->nodes[4999].taints[0].key, "foo");

  auto extended = LoadWorkload("SchedulingWithExtendedResource");
  ASSERT_TRUE(extended.ok()) << extended.status();
  EXPECT_EQ(*extended->FindVariant("5000pods_5000nodes")->threshold, 180);
  ASSERT_TRUE(ApplyVariant(*extended, "500pods_500nodes").ok());
  auto ec = BuildCluster(*extended);
  ASSERT_TRUE(ec.ok()) << ec.status();
  ASSERT_EQ(ec->nodes.size(), 500u);
  EXPECT_EQ(ec->nodes[7].allocatable.at("foo.com/bar-7").Value(), 1);
  EXPECT_EQ(ec->nodes[7].allocatable.count("foo.com/bar-8"), 0u);
  EXPECT_EQ(ec->nodes[7].meta.labels.at("node-with-extended-resource"), "true");
  auto ep = BuildPods(extended->measured, "pod");
  ASSERT_TRUE(ep.ok()) << ep.status();
  EXPECT_EQ((*ep)[7].containers[0].requests.at("foo.com/bar-7").Value(), 1);
  EXPECT_EQ((*ep)[7].meta.name, "pod-7");

  auto daemonset = LoadWorkload("SchedulingDaemonset");
  ASSERT_TRUE(daemonset.ok()) << daemonset.status();
  EXPECT_EQ(daemonset->FindVariant("15000Nodes")->node_groups, (std::vector<int32_t>{1, 15000}));
  EXPECT_EQ(*daemonset->FindVariant("15000Nodes")->threshold, 1100);
  auto ds = BuildCluster(*daemonset);
  ASSERT_TRUE(ds.ok()) << ds.status();
  ASSERT_EQ(ds->nodes.size(), 5001u);
  EXPECT_EQ(ds->nodes[0].meta.name, "scheduler-perf-node");
  EXPECT_EQ(ds->nodes[0].allocatable.at("pods").Value(), 90000);
  EXPECT_EQ(ds->nodes[1].meta.name, "node-1");
}

TEST(WorkloadTest, VolumeWorkloadsHaveBoundClaimsPerPod) {
  // Per pod a PV and a PVC bound to each other; CSINodes where upstream has them.
  for (const auto& [name, csi_nodes, threshold_variant, threshold] :
       std::vector<std::tuple<std::string, size_t, std::string, double>>{
           {"SchedulingCSIPVs", 500, "5000Nodes_5000Pods", 100},
           {"SchedulingMigratedInTreePVs", 500, "5000Nodes_5000Pods", 100},
           {"SchedulingInTreePVs", 0, "5000Nodes_2000Pods", 290}}) {
    SCOPED_TRACE(name);
    auto w = LoadWorkload(name);
    ASSERT_TRUE(w.ok()) << w.status();
    EXPECT_EQ(*w->FindVariant(threshold_variant)->threshold, threshold);
    ASSERT_TRUE(ApplyVariant(*w, "500Nodes").ok());  // 500 init, 1000 measured
    auto c = BuildCluster(*w);
    ASSERT_TRUE(c.ok()) << c.status();
    StorageObjects storage;
    std::string error;
    ASSERT_TRUE(DecodeStorageObjects(c->storage, &storage, &error)) << error;
    EXPECT_EQ(storage.pvs.size(), 1500u);
    EXPECT_EQ(storage.pvcs.size(), 1500u);
    EXPECT_EQ(storage.csi_nodes.size(), csi_nodes);
    for (const auto& [ns, i] : std::vector<std::pair<std::string, int>>{{"namespace-1", 499}, {"namespace-2", 7}}) {
      const PersistentVolumeClaim* pvc = storage.FindPvc(ns, StrCat("pvc-", i));
      ASSERT_NE(pvc, nullptr);
      EXPECT_EQ(pvc->volume_name, StrCat(ns, "-vol-", i));
      EXPECT_EQ(pvc->phase, "Bound");
      const PersistentVolume* pv = storage.FindPv(pvc->volume_name);
      ASSERT_NE(pv, nullptr);
      ASSERT_TRUE(pv->claim_ref.has_value());
      EXPECT_EQ(pv->claim_ref->namespace_, ns);
      EXPECT_EQ(pv->claim_ref->name, StrCat("pvc-", i));
      EXPECT_EQ(pv->phase, "Bound");
      if (name == "SchedulingCSIPVs") {
        EXPECT_EQ(pv->source.csi_driver, "ebs.csi.aws.com");
        EXPECT_EQ(pv->source.csi_volume_handle, pvc->volume_name);
      } else {
        EXPECT_EQ(pv->source.kind, "awsElasticBlockStore");
        EXPECT_EQ(pv->source.volume_id, StrCat("vol-", i));
      }
    }
    if (csi_nodes > 0) {
      const CSINode* n = storage.FindCsiNode("node-17");
      ASSERT_NE(n, nullptr);
      ASSERT_EQ(n->drivers.size(), 1u);
      EXPECT_EQ(n->drivers[0].name, "ebs.csi.aws.com");
      EXPECT_EQ(n->drivers[0].allocatable_count, 39);
    }
    auto pods = BuildPods(w->measured, "pod");
    ASSERT_TRUE(pods.ok()) << pods.status();
    ASSERT_EQ((*pods)[7].volumes.size(), 1u);
    EXPECT_EQ((*pods)[7].volumes[0].name, "vol");
  }
  auto secrets = LoadWorkload("SchedulingSecrets");
  ASSERT_TRUE(secrets.ok()) << secrets.status();
  EXPECT_EQ(*secrets->FindVariant("5000Nodes_10000Pods")->threshold, 790);
  secrets->measured.count = 1;
  auto pods = BuildPods(secrets->measured, "pod");
  ASSERT_TRUE(pods.ok()) << pods.status();
  ASSERT_EQ((*pods)[0].volumes.size(), 1u);
  EXPECT_EQ((*pods)[0].volumes[0].source, "secret");
}

TEST(WorkloadTest, PodMatchingAntiAffinityKeepsOffInitNodes) {
  auto w = LoadWorkload("SchedulingPodMatchingAntiAffinity");
  ASSERT_TRUE(w.ok());
  w->num_nodes = 10;
  w->init[0].count = 6;        // one per node: they repel each other
  w->measured.count = 4 * 40 + 5;  // the 4 free nodes hold 40 pods of 100m each
  NameVariant(*w);
  BenchResult r = RunSmall(*w);
  EXPECT_EQ(r.init_scheduled, 6);
  EXPECT_EQ(r.engine.scheduled, 160);
  auto placed = Place(*w, /*reference=*/false);
  ASSERT_TRUE(placed.ok()) << placed.status();
  std::set<std::string> init_nodes = NodesWithPods(placed->cluster);
  EXPECT_EQ(init_nodes.size(), 6u);
  for (const cycle::Placement& p : placed->measured) EXPECT_EQ(init_nodes.count(p.node), 0u) << p.pod << " " << p.node;
}

TEST(WorkloadTest, RequiredAntiAffinityWithNSSelectorGivesEachPodANode) {
  Workload w = SmallNsWorkload("SchedulingRequiredPodAntiAffinityWithNSSelector", 30, 5, 4, 15);
  BenchResult r = RunSmall(w);
  EXPECT_EQ(r.init_scheduled, 20);
  EXPECT_EQ(r.engine.scheduled, 10);  // 30 nodes, one pod each
  auto placed = Place(w, /*reference=*/false);
  ASSERT_TRUE(placed.ok()) << placed.status();
  std::set<std::string> used = NodesWithPods(placed->cluster);
  for (const cycle::Placement& p : placed->measured) {
    if (!p.node.empty()) EXPECT_TRUE(used.insert(p.node).second) << p.node;
  }
  EXPECT_EQ(used.size(), 30u);
  // Unlabelled namespaces: the selector matches nothing, pods share nodes freely.
  EXPECT_EQ(RunSmall(WithoutNamespaceLabels(w)).engine.scheduled, 15);
}

TEST(WorkloadTest, RequiredAffinityWithNSSelectorNeedsTheLabelledNamespaces) {
  Workload w = SmallNsWorkload("SchedulingRequiredPodAffinityWithNSSelector", 20, 3, 4, 10);
  BenchResult r = RunSmall(w);
  EXPECT_EQ(r.init_scheduled, 12);
  EXPECT_EQ(r.engine.scheduled, 10);
  // Without labels no namespace, not even the pod's own, is selected: the first pod cannot
  // satisfy its own term, and nothing schedules.
  BenchResult none = RunSmall(WithoutNamespaceLabels(w));
  EXPECT_EQ(none.init_scheduled, 0);
  EXPECT_EQ(none.engine.scheduled, 0);
}

TEST(WorkloadTest, PreferredTermsWithNSSelectorScoreTheInitPodsNodes) {
  // Preferred anti-affinity scores a node down, preferred affinity up, by 1 for each init
  // pod there that the measured pod's term matches and 1 for each whose term matches the
  // measured pod (same labels and terms on both sides).
  for (const auto& [name, sign] : std::vector<std::pair<std::string, int64_t>>{
           {"SchedulingPreferredAntiAffinityWithNSSelector", -1}, {"SchedulingPreferredAffinityWithNSSelector", 1}}) {
    Workload w = SmallNsWorkload(name, 30, 5, 4, 10);
    EXPECT_EQ(RunSmall(w).engine.scheduled, 10) << name;
    for (bool labelled : {true, false}) {
      SCOPED_TRACE(StrCat(name, labelled ? ", labelled namespaces" : ", no namespace labels"));
      auto placed = Place(labelled ? w : WithoutNamespaceLabels(w), /*reference=*/false, /*explain=*/true);
      ASSERT_TRUE(placed.ok()) << placed.status();
      std::map<std::string, int64_t> init_pods;
      for (const Pod& p : placed->cluster.pods) ++init_pods[p.node_name];
      EXPECT_LT(init_pods.size(), 30u);  // some nodes hold no init pod
      std::map<std::string, int64_t> raw = RawScores(placed->measured[0], "InterPodAffinity");
      // No namespace selected: no term matches anywhere and PreScore skips the plugin.
      ASSERT_EQ(raw.size(), labelled ? 30u : 0u);
      for (const auto& [node, score] : raw) EXPECT_EQ(score, sign * 2 * init_pods[node]) << node;
    }
  }
}

TEST(WorkloadTest, DefaultTopologySpreadingScoresThroughTheService) {
  auto w = LoadWorkload("DefaultTopologySpreading");
  ASSERT_TRUE(w.ok());
  w->num_nodes = 30;
  w->init[0].count = 30;
  w->measured.count = 30;
  NameVariant(*w);
  BenchResult r = RunSmall(*w);
  EXPECT_EQ(r.engine.scheduled, 30);
  // With the Service the system default constraints apply and PodTopologySpread scores;
  // without it the pod has no constraints and the plugin skips.
  Workload no_service = *w;
  no_service.objects.clear();
  for (bool service : {true, false}) {
    SCOPED_TRACE(service ? "with the Service" : "without the Service");
    auto placed = Place(service ? *w : no_service, /*reference=*/false, /*explain=*/true);
    ASSERT_TRUE(placed.ok()) << placed.status();
    EXPECT_EQ(RawScores(placed->measured[5], "PodTopologySpread").size(), service ? 30u : 0u);
  }
}

TEST(WorkloadTest, NodeInclusionPolicyHonorsTaints) {
  auto w = LoadWorkload("SchedulingWithNodeInclusionPolicy");
  ASSERT_TRUE(w.ok());
  w->node_groups[0].count = 8;
  w->node_groups[1].count = 4;  // node-8 .. node-11 tainted
  w->num_nodes = 12;
  w->measured.count = 16;  // two rounds over the 8 normal nodes
  NameVariant(*w);
  // Tainted nodes stay out of the skew, so a second round is within maxSkew 1.
  EXPECT_EQ(RunSmall(*w).engine.scheduled, 16);
  auto placed = Place(*w, /*reference=*/false);
  ASSERT_TRUE(placed.ok()) << placed.status();
  std::map<std::string, int> per_node;
  for (const cycle::Placement& p : placed->measured) ++per_node[p.node];
  EXPECT_EQ(per_node.size(), 8u);
  for (const auto& [node, n] : per_node) {
    EXPECT_EQ(n, 2) << node;
    EXPECT_LT(std::stoi(node.substr(5)), 8) << node;
  }
  // Ignoring taints, the empty tainted nodes hold the minimum at 0: one round only.
  w->measured.pod_template["spec"]["topologySpreadConstraints"][0]["nodeTaintsPolicy"] = "Ignore";
  EXPECT_EQ(RunSmall(*w).engine.scheduled, 8);
}

TEST(WorkloadTest, ExtendedResourcePodsFitOneNodeEach) {
  auto w = LoadWorkload("SchedulingWithExtendedResource");
  ASSERT_TRUE(w.ok());
  w->node_groups[1].count = 20;
  w->num_nodes = 20;
  w->measured.count = 25;  // pods 20..24 ask for resources no node has
  NameVariant(*w);
  EXPECT_EQ(RunSmall(*w).engine.scheduled, 20);
  auto placed = Place(*w, /*reference=*/false);
  ASSERT_TRUE(placed.ok()) << placed.status();
  ASSERT_EQ(placed->measured.size(), 25u);
  for (int i = 0; i < 25; ++i) {
    EXPECT_EQ(placed->measured[i].pod, StrCat("test/pod-", i));
    EXPECT_EQ(placed->measured[i].node, i < 20 ? StrCat("node-", i) : "") << i;
  }
}

TEST(WorkloadTest, DaemonsetPodsAllGoToTheNamedNode) {
  auto w = LoadWorkload("SchedulingDaemonset");
  ASSERT_TRUE(w.ok());
  w->num_nodes = 31;  // the named node and 30 more
  w->measured.count = 50;
  NameVariant(*w);
  EXPECT_EQ(NodeGroupCounts(*w), (std::vector<int32_t>{1, 30}));
  EXPECT_EQ(RunSmall(*w).engine.scheduled, 50);
  auto placed = Place(*w, /*reference=*/true);
  ASSERT_TRUE(placed.ok()) << placed.status();
  for (const cycle::Placement& p : placed->measured) EXPECT_EQ(p.node, "scheduler-perf-node") << p.pod;
}

TEST(WorkloadTest, VolumeLimitsCountThePodsVolumes) {
  // Two nodes, 80 pods with one volume each. CPU holds 40 pods per node; a CSINode allows
  // 39 ebs.csi.aws.com volumes, counted for CSI and migrated in-tree PVs but not for
  // in-tree PVs on nodes without a CSINode. (No init pods: upstream's EBS volume IDs
  // vol-<i> repeat across the init and measured namespaces, and a node holding both pods
  // i counts that volume once.)
  for (const auto& [name, scheduled] :
       std::vector<std::pair<std::string, int64_t>>{
           {"SchedulingCSIPVs", 78}, {"SchedulingMigratedInTreePVs", 78}, {"SchedulingInTreePVs", 80}}) {
    SCOPED_TRACE(name);
    auto w = LoadWorkload(name);
    ASSERT_TRUE(w.ok());
    w->num_nodes = 2;
    w->init[0].count = 0;
    w->measured.count = 80;
    NameVariant(*w);
    BenchResult r = RunSmall(*w);
    EXPECT_EQ(r.engine.scheduled, scheduled);
    if (scheduled == 80) continue;
    auto placed = Place(*w, /*reference=*/true);
    ASSERT_TRUE(placed.ok()) << placed.status();
    const cycle::Placement& last = placed->measured.back();
    EXPECT_EQ(last.node, "");
    EXPECT_NE(last.message.find("exceed max volume count"), std::string::npos) << last.message;
  }
}

// ---- SchedulingHeterogeneous (kplace's own; heterogeneous pod groups) --------------------

// What a measured pod asks of the scheduler, feature by feature.
struct PodFeatures {
  bool node_constraint = false, tolerations = false, anti_affinity = false, spread = false, host_port = false;
};

PodFeatures FeaturesOf(const Pod& p) {
  PodFeatures f;
  f.node_constraint = !p.node_selector.empty() ||
                      (p.affinity && p.affinity->node_affinity && p.affinity->node_affinity->required);
  f.tolerations = !p.tolerations.empty();
  f.anti_affinity = p.affinity && p.affinity->pod_anti_affinity && !p.affinity->pod_anti_affinity->preferred.empty();
  f.spread = !p.topology_spread_constraints.empty();
  for (const Container& c : p.containers) {
    for (const ContainerPort& port : c.ports) f.host_port |= port.host_port != 0;
  }
  return f;
}

std::pair<int64_t, int64_t> RequestsOf(const Pod& p) {
  return {p.containers.at(0).requests.at("cpu").MilliValue(), p.containers.at(0).requests.at("memory").Value()};
}

TEST(WorkloadTest, HeterogeneousLoadsWithItsSizes) {
  auto w = LoadWorkload("SchedulingHeterogeneous");
  ASSERT_TRUE(w.ok()) << w.status();
  EXPECT_TRUE(IsKplaceOwn(*w));
  EXPECT_EQ(w->variant, "5000Nodes");
  EXPECT_EQ(w->num_nodes, 5000);
  EXPECT_EQ(NodeGroupCounts(*w), (std::vector<int32_t>{2000, 1500, 1000, 500}));
  ASSERT_EQ(w->init.size(), 4u);
  int64_t init = 0;
  for (const PodGroup& g : w->init) {
    EXPECT_FALSE(g.heterogeneous);  // init shapes are fixed per group: they batch
    init += g.TotalPods();
  }
  EXPECT_EQ(init, 5000);
  EXPECT_EQ(w->measured.count, 2000);
  ASSERT_TRUE(w->measured.heterogeneous);
  EXPECT_EQ(w->measured.heterogeneous->seed, 13u);
  // The mix's choices come from the node groups: 10 zones; the labels of the groups without
  // a NoSchedule taint (not pool=batch); both taints.
  const HeterogeneousMix& mix = *w->measured.heterogeneous;
  ASSERT_EQ(mix.zones.size(), 10u);
  EXPECT_EQ(mix.zones.front(), "zone-0");
  EXPECT_EQ(mix.zones.back(), "zone-9");
  using Label = std::pair<std::string, std::string>;
  const std::set<Label> labels(mix.node_labels.begin(), mix.node_labels.end());
  EXPECT_EQ(labels, (std::set<Label>{{"disktype", "hdd"},
                                     {"disktype", "nvme"},
                                     {"disktype", "ssd"},
                                     {"node.kubernetes.io/instance-type", "highmem-16"},
                                     {"node.kubernetes.io/instance-type", "standard-4"},
                                     {"node.kubernetes.io/instance-type", "standard-8"}}));
  ASSERT_EQ(mix.taints.size(), 2u);
  EXPECT_EQ(mix.taints[0], (Taint{"workload", "highmem", "PreferNoSchedule"}));
  EXPECT_EQ(mix.taints[1], (Taint{"dedicated", "batch", "NoSchedule"}));

  auto cluster = BuildCluster(*w);
  ASSERT_TRUE(cluster.ok()) << cluster.status();
  ASSERT_EQ(cluster->nodes.size(), 5000u);
  std::map<std::string, int> per_zone;
  for (const Node& n : cluster->nodes) ++per_zone[n.meta.labels.at("topology.kubernetes.io/zone")];
  EXPECT_EQ(per_zone.size(), 10u);
  for (const auto& [zone, count] : per_zone) EXPECT_EQ(count, 500) << zone;
  EXPECT_EQ(cluster->nodes[4999].taints.size(), 1u);  // the batch pool comes last

  for (const auto& [name, nodes] : std::vector<std::pair<std::string, int32_t>>{{"50000Nodes", 50000},
                                                                               {"100000Nodes", 100000}}) {
    Workload sized = *w;
    ASSERT_TRUE(SelectNodes(sized, nodes)) << name;
    EXPECT_EQ(sized.variant, name);
    int64_t sized_init = 0;
    for (const PodGroup& g : sized.init) sized_init += g.TotalPods();
    EXPECT_EQ(sized_init, nodes);
    EXPECT_EQ(sized.measured.count, 2000);
  }
}

TEST(WorkloadTest, HeterogeneousPodsEachHaveTheirOwnSignature) {
  auto w = LoadWorkload("SchedulingHeterogeneous");
  ASSERT_TRUE(w.ok()) << w.status();
  auto pods = BuildPods(w->measured, "pod");
  ASSERT_TRUE(pods.ok()) << pods.status();
  ASSERT_EQ(pods->size(), 2000u);
  std::set<std::pair<int64_t, int64_t>> requests;
  std::set<std::string> signatures;
  int node_constraint = 0, tolerations = 0, anti_affinity = 0, spread = 0, host_port = 0, do_not_schedule = 0;
  for (size_t k = 0; k < pods->size(); ++k) {
    const Pod& p = (*pods)[k];
    SCOPED_TRACE(p.meta.name);
    EXPECT_EQ(p.meta.namespace_, "hetero");
    const auto [cpu, mem] = RequestsOf(p);
    EXPECT_GE(cpu, 100);
    EXPECT_LE(cpu, 2000);
    EXPECT_GE(mem, int64_t{128} << 20);
    EXPECT_LE(mem, int64_t{4} << 30);
    requests.insert({cpu, mem});
    signatures.insert(cycle::SchedulingSignature(p));
    if (k > 0) {  // no two consecutive pods can share a batched run
      EXPECT_NE(cycle::SchedulingSignature(p), cycle::SchedulingSignature((*pods)[k - 1]));
      EXPECT_NE(RequestsOf(p), RequestsOf((*pods)[k - 1]));
    }
    const PodFeatures f = FeaturesOf(p);
    node_constraint += f.node_constraint;
    tolerations += f.tolerations;
    anti_affinity += f.anti_affinity;
    spread += f.spread;
    host_port += f.host_port;
    if (f.spread) do_not_schedule += p.topology_spread_constraints[0].when_unsatisfiable == "DoNotSchedule";
  }
  RecordProperty("node_constraint", node_constraint);
  RecordProperty("tolerations", tolerations);
  RecordProperty("anti_affinity", anti_affinity);
  RecordProperty("spread", spread);
  RecordProperty("spread_do_not_schedule", do_not_schedule);
  RecordProperty("host_port", host_port);
  // Fewer pods than request pairs: every pod's requests (hence signature) are its own.
  EXPECT_EQ(requests.size(), 2000u);
  EXPECT_EQ(signatures.size(), 2000u);
  // The shares, out of 2,000 (a binomial's standard deviation is about 1% at 30%).
  EXPECT_NEAR(node_constraint, 600, 100);
  EXPECT_NEAR(tolerations, 400, 80);
  EXPECT_NEAR(anti_affinity, 200, 60);
  EXPECT_NEAR(spread, 400, 80);
  EXPECT_NEAR(host_port, 100, 40);
  EXPECT_GT(do_not_schedule, spread / 4);
  EXPECT_LT(do_not_schedule, spread * 3 / 4);
}

TEST(WorkloadTest, HeterogeneousConstraintsSelectNodesThatExist) {
  auto w = LoadWorkload("SchedulingHeterogeneous");
  ASSERT_TRUE(w.ok()) << w.status();
  auto cluster = BuildCluster(*w);
  ASSERT_TRUE(cluster.ok()) << cluster.status();
  auto pods = BuildPods(w->measured, "pod");
  ASSERT_TRUE(pods.ok()) << pods.status();
  std::map<std::string, std::set<std::string>> values;  // label key -> values on untainted nodes
  for (const Node& n : cluster->nodes) {
    bool hard = false;
    for (const Taint& t : n.taints) hard |= t.effect == "NoSchedule";
    if (hard) continue;
    for (const auto& [key, value] : n.meta.labels) values[key].insert(value);
  }
  std::set<std::string> selector_kinds;
  for (const Pod& p : *pods) {
    SCOPED_TRACE(p.meta.name);
    for (const auto& [key, value] : p.node_selector) {
      EXPECT_TRUE(values[key].count(value)) << key << "=" << value;
      selector_kinds.insert("selector " + key);
    }
    if (p.affinity && p.affinity->node_affinity && p.affinity->node_affinity->required) {
      for (const NodeSelectorTerm& t : p.affinity->node_affinity->required->terms) {
        for (const NodeSelectorRequirement& r : t.match_expressions) {
          for (const std::string& v : r.values) EXPECT_TRUE(values[r.key].count(v)) << r.key << "=" << v;
          selector_kinds.insert("affinity " + r.key + " " + r.op);
        }
      }
    }
    for (const Toleration& t : p.tolerations) {
      EXPECT_TRUE(t.key == "dedicated" || t.key == "workload") << t.key;
      EXPECT_TRUE(t.op == "Exists" ? t.value.empty() : t.op == "Equal" && !t.value.empty()) << t.op;
    }
  }
  // Every kind of node constraint occurs.
  EXPECT_EQ(selector_kinds, (std::set<std::string>{"selector topology.kubernetes.io/zone", "selector disktype",
                                                   "selector node.kubernetes.io/instance-type",
                                                   "affinity topology.kubernetes.io/zone In",
                                                   "affinity topology.kubernetes.io/zone NotIn", "affinity disktype In",
                                                   "affinity node.kubernetes.io/instance-type In"}));
}

TEST(WorkloadTest, HeterogeneousGenerationIsDeterministic) {
  auto w = LoadWorkload("SchedulingHeterogeneous");
  ASSERT_TRUE(w.ok()) << w.status();
  auto signatures = [](const PodGroup& g) {
    auto pods = BuildPods(g, "pod");
    EXPECT_TRUE(pods.ok()) << pods.status();
    std::vector<std::string> out;
    for (const Pod& p : *pods) out.push_back(cycle::SchedulingSignature(p));
    return out;
  };
  const std::vector<std::string> first = signatures(w->measured);
  EXPECT_EQ(signatures(w->measured), first);  // the same seed, the same pods
  // Pod k depends on the seed and k only: a shorter group is a prefix.
  PodGroup shorter = w->measured;
  shorter.count = 100;
  EXPECT_EQ(signatures(shorter), std::vector<std::string>(first.begin(), first.begin() + 100));
  // Another seed, other pods.
  PodGroup other = w->measured;
  other.heterogeneous->seed = 14;
  const std::vector<std::string> reseeded = signatures(other);
  int same = 0;
  for (size_t k = 0; k < first.size(); ++k) same += first[k] == reseeded[k];
  EXPECT_LT(same, 20);
  // Past the request pairs, the order repeats but neighbours still differ.
  PodGroup longer = w->measured;
  longer.count = kHeterogeneousPairs + 10;
  auto pods = BuildPods(longer, "pod");
  ASSERT_TRUE(pods.ok()) << pods.status();
  for (size_t k = 1; k < pods->size(); ++k) ASSERT_NE(RequestsOf((*pods)[k]), RequestsOf((*pods)[k - 1])) << k;
  EXPECT_EQ(RequestsOf((*pods)[kHeterogeneousPairs]), RequestsOf((*pods)[0]));
}

TEST(WorkloadTest, HeterogeneousGroupsAreChecked) {
  auto parse = [](const std::string& yaml) {
    auto docs = ParseDocuments(yaml, "w.yaml");
    EXPECT_TRUE(docs.ok()) << docs.status();
    return DecodeWorkloadSpec((*docs)[0], "w.yaml");
  };
  const std::string head = "name: x\nnodes: {count: 3, zones: [a, b]}\n";
  const std::string containers = "template: {spec: {containers: [{name: c, image: i}]}}";
  EXPECT_EQ(parse(head + "measured: {count: 1, heterogeneous: {seed: -1}, " + containers + "}\n").status().message(),
            "w.yaml: measured.heterogeneous.seed: expected a non-negative integer");
  EXPECT_EQ(parse(head + "measured: {count: 1, heterogeneous: {seed: 1, mix: 2}, " + containers + "}\n")
                .status()
                .message(),
            "w.yaml: measured.heterogeneous.mix: unknown field");
  EXPECT_EQ(parse(head + "measured: {count: 1, heterogeneous: {seed: 1}, template: {}}\n").status().message(),
            "w.yaml: measured.heterogeneous: needs a template with a container (spec.containers[0] gets the "
            "requests)");
  // A minimal group: zones from the one node group, no node labels or taints to use.
  auto ok = parse(head + "measured: {count: 50, heterogeneous: {seed: 7}, " + containers + "}\n");
  ASSERT_TRUE(ok.ok()) << ok.status();
  EXPECT_EQ(ok->measured.heterogeneous->zones, (std::vector<std::string>{"a", "b"}));
  EXPECT_TRUE(ok->measured.heterogeneous->node_labels.empty());
  EXPECT_TRUE(ok->measured.heterogeneous->taints.empty());
  auto pods = BuildPods(ok->measured, "p");
  ASSERT_TRUE(pods.ok()) << pods.status();
  for (const Pod& p : *pods) {
    EXPECT_TRUE(p.tolerations.empty());
    for (const auto& [key, value] : p.node_selector) EXPECT_EQ(key, "topology.kubernetes.io/zone");
  }
}

}  // namespace
}  // namespace kplace::bench
