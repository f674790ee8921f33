#include "kplace/bench/workload.h"

#include <gtest/gtest.h>

#include <cstdio>
#include <fstream>
#include <sstream>

#include "kplace/bench/runner.h"
#include "kplace/bench/sweep.h"
#include "kplace/cli/commands.h"
#include "kplace/model/decode.h"

namespace kplace::bench {
namespace {

const std::vector<std::string> kUpstreamWorkloads = {
    "SchedulingBasic",           "SchedulingPodAntiAffinity", "SchedulingPodAffinity",
    "SchedulingPreferredPodAffinity", "SchedulingPreferredPodAntiAffinity", "SchedulingNodeAffinity",
    "TopologySpreading",         "PreferredTopologySpreading", "MixedSchedulingBasePod"};

TEST(WorkloadTest, EveryUpstreamWorkloadIsBuiltIn) {
  std::vector<std::string> names = BuiltinWorkloads();
  for (const std::string& n : kUpstreamWorkloads) {
    EXPECT_NE(std::find(names.begin(), names.end(), n), names.end()) << n;
  }
}

TEST(WorkloadTest, EveryBuiltInDecodesWithUpstreamSizes) {
  for (const std::string& n : BuiltinWorkloads()) {
    SCOPED_TRACE(n);
    auto w = LoadWorkload(n);
    ASSERT_TRUE(w.ok()) << w.status();
    EXPECT_EQ(w->name, n);
    EXPECT_EQ(w->variant, "5000Nodes");  // the default file size
    EXPECT_EQ(w->num_nodes, 5000);
    EXPECT_GT(w->measured.count, 0);
    for (const char* v : {"500Nodes", "5000Nodes", "15000Nodes"}) EXPECT_NE(w->FindVariant(v), nullptr) << v;
    bool has_threshold = false;
    for (const Variant& v : w->variants) has_threshold |= v.threshold.has_value();
    EXPECT_TRUE(has_threshold) << "every workload here has an upstream CI floor";
    // --nodes 500 picks the 500Nodes variant.
    Workload small = *w;
    EXPECT_TRUE(SelectNodes(small, 500));
    EXPECT_EQ(small.variant, "500Nodes");
    EXPECT_EQ(small.num_nodes, 500);
  }
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

// Every built-in workload, tiny: engine and reference placements must be identical.
TEST(WorkloadTest, TinyRunsAreIdenticalOnEngineAndReference) {
  for (const std::string& n : BuiltinWorkloads()) {
    SCOPED_TRACE(n);
    auto w = LoadWorkload(n);
    ASSERT_TRUE(w.ok());
    w->num_nodes = 50;
    for (PodGroup& g : w->init) g.count = 20;
    w->measured.count = 20;
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
  int throughput = 0;
  for (const auto& item : doc["dataItems"]) {
    ASSERT_TRUE(item.contains("data") && item.contains("unit") && item.contains("labels"));
    const auto& labels = item["labels"];
    EXPECT_EQ(labels["Name"], "SchedulingPodAffinity/50Nodes_20Init_20Pods");
    EXPECT_TRUE(labels["backend"] == "omp" || labels["backend"] == "cuda" || labels["backend"] == "reference");
    if (labels["Metric"] != "SchedulingThroughput") continue;
    ++throughput;
    EXPECT_EQ(item["unit"], "pods/s");
    for (const char* k : {"Average", "Perc50", "Perc90", "Perc95", "Perc99"}) {
      ASSERT_TRUE(item["data"].contains(k)) << k;
      EXPECT_GT(item["data"][k].get<double>(), 0) << k;
    }
  }
  EXPECT_EQ(throughput, 2);  // engine and reference
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

}  // namespace
}  // namespace kplace::bench
