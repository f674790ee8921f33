// End-to-end scenarios through `kplace schedule` / `kplace explain`, as a user runs them.
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <fstream>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "kplace/cli/cli.h"
#include "tests/testing/temp_dir.h"

namespace kplace {
namespace {

using json = nlohmann::json;
namespace fs = std::filesystem;

class ScheduleCliTest : public testing::TempDirTest {
 protected:
  ScheduleCliTest() : TempDirTest("kplace-cli-") {}

  std::string Write(const std::string& name, const json& doc) {
    std::string path = (dir_ / name).string();
    std::ofstream(path) << doc.dump(1);
    return path;
  }

  // Runs kplace with `args`; returns the exit status and parses --output-file into *out.
  int Run(std::vector<std::string> args, json* out) {
    std::string out_path = (dir_ / "out.json").string();
    args.insert(args.begin(), "kplace");
    args.push_back("--output-file");
    args.push_back(out_path);
    std::vector<char*> argv;
    for (std::string& a : args) argv.push_back(a.data());
    int rc = cli::Main(static_cast<int>(argv.size()), argv.data());
    if (rc == 0) *out = json::parse(std::ifstream(out_path));
    return rc;
  }

  static json List(const json& items) { return {{"apiVersion", "v1"}, {"kind", "List"}, {"items", items}}; }
  static json Node(const std::string& name, const json& labels = json::object(), const json& taints = json::array()) {
    json l = labels;
    l["kubernetes.io/hostname"] = name;
    return {{"kind", "Node"},
            {"metadata", {{"name", name}, {"labels", l}}},
            {"spec", {{"taints", taints}}},
            {"status", {{"allocatable", {{"cpu", "4"}, {"memory", "8Gi"}, {"pods", "110"}}}}}};
  }
  static json Pod(const std::string& name, const std::string& cpu, const json& extra_spec = json::object()) {
    json spec = {{"containers", json::array({{{"name", "c"}, {"image", "app:1"}, {"resources", {{"requests", {{"cpu", cpu}, {"memory", "256Mi"}}}}}}})}};
    spec.update(extra_spec);
    return {{"kind", "Pod"}, {"metadata", {{"name", name}, {"namespace", "default"}, {"labels", {{"app", "web"}}}}}, {"spec", spec}};
  }
};

// The worked examples of shared/conformance/pipeline, as cluster + pending-pod files.
TEST_F(ScheduleCliTest, WorkedExamplesThroughExplain) {
  for (const char* file : {"001-worked-example-explicit-spread.json", "002-worked-example-default-spread.json"}) {
    fs::path path = fs::path(KPLACE_SHARED_DIR) / "conformance" / "pipeline" / file;
    if (!fs::exists(path)) GTEST_SKIP() << "no " << path;
    json c = json::parse(std::ifstream(path));
    json items = json::array();
    for (json n : c["nodes"]) items.push_back((n["kind"] = "Node", n));
    for (json p : c["pods"]) items.push_back((p["kind"] = "Pod", p));
    const std::map<std::string, std::string> kinds = {{"services", "Service"}, {"replicaSets", "ReplicaSet"},
                                                      {"statefulSets", "StatefulSet"}, {"namespaces", "Namespace"},
                                                      {"replicationControllers", "ReplicationController"}};
    for (const auto& [key, kind] : kinds) {
      if (!c["objects"].contains(key)) continue;
      for (json o : c["objects"][key]) items.push_back((o["kind"] = kind, o));
    }
    json pod = c["pod"];
    pod["kind"] = "Pod";
    std::string cluster = Write("cluster.json", List(items));
    std::string pods = Write("pods.json", List(json::array({pod})));
    for (bool reference : {false, true}) {
      json out;
      std::vector<std::string> args = {"explain", "--cluster", cluster, "--pods", pods};
      if (reference) args.push_back("--reference");
      ASSERT_EQ(Run(args, &out), 0) << file;
      const json& placement = out["placements"][0];
      EXPECT_EQ(placement["node"], c["expect"]["selected"]) << file;
      for (const json& n : placement["nodes"]) {
        std::string node = n["node"];
        EXPECT_EQ(n["finalScore"], c["expect"]["finalScore"][node]) << file << " " << node;
        for (auto& [plugin, scores] : c["expect"]["pluginScores"].items()) {
          EXPECT_EQ(n["scores"][plugin]["normalized"], scores[node]) << file << " " << plugin << " " << node;
        }
      }
    }
  }
}

// `kplace whatif` on a small cluster, checked by hand: a (4 CPU) holds web-0 (3), b (4)
// holds web-1 (2), c (2) is empty.
TEST_F(ScheduleCliTest, WhatIfDrainConsolidateAndReplicas) {
  json web0 = Pod("web-0", "3"), web1 = Pod("web-1", "2");
  web0["spec"]["nodeName"] = "a";
  web1["spec"]["nodeName"] = "b";
  json pdb = {{"apiVersion", "policy/v1"}, {"kind", "PodDisruptionBudget"},
              {"metadata", {{"name", "web"}, {"namespace", "default"}}},
              {"spec", {{"selector", {{"matchLabels", {{"app", "web"}}}}}}}, {"status", {{"disruptionsAllowed", 1}}}};
  json c = Node("c");
  c["status"]["allocatable"]["cpu"] = "2";
  const std::string cluster = Write("cluster.json", List({Node("a"), Node("b"), c, web0, web1, pdb}));
  json out;
  // Draining b: web-1 (2 CPU) fits on c (a has 1 left); the budget allows one.
  ASSERT_EQ(Run({"whatif", "drain", "--cluster", cluster, "--node", "b", "--output", "json"}, &out), 0);
  EXPECT_EQ(out["nodes"], json::array({"b"}));
  EXPECT_EQ(out["drainable"], true);
  ASSERT_EQ(out["pods"].size(), 1u);
  EXPECT_EQ(out["pods"][0]["pod"], "default/web-1");
  EXPECT_EQ(out["pods"][0]["node"], "c");
  EXPECT_EQ(out["pods"][0]["status"], "Scheduled");
  EXPECT_EQ(out["pdbViolations"], json::array());
  // Draining a and b: web-0 (3) fits nowhere, and two pods break a budget of one.
  ASSERT_EQ(Run({"whatif", "drain", "--cluster", cluster, "--node", "a,b", "--output", "json"}, &out), 0);
  EXPECT_EQ(out["drainable"], false);
  ASSERT_EQ(out["pods"].size(), 2u);
  EXPECT_EQ(out["pods"][0]["pod"], "default/web-0");
  EXPECT_EQ(out["pods"][0]["node"], nullptr);
  EXPECT_NE(out["pods"][0]["message"].get<std::string>().find("0/1 nodes are available: 1 Insufficient cpu."), std::string::npos)
      << out.dump();
  EXPECT_EQ(out["pods"][1]["node"], "c");
  EXPECT_EQ(out["pdbViolations"], json::parse(R"([{"pdb": "default/web", "evicted": 2, "disruptionsAllowed": 1}])"));
  // Each node on its own: a's web-0 (3) has nowhere to go; b's web-1 goes to c; c is empty.
  ASSERT_EQ(Run({"whatif", "consolidate", "--cluster", cluster, "--output", "json"}, &out), 0);
  std::map<std::string, bool> removable;
  for (const json& cand : out["candidates"]) removable[cand["node"]] = cand["removable"];
  EXPECT_EQ(removable, (std::map<std::string, bool>{{"a", false}, {"b", true}, {"c", true}}));
  // 1-CPU copies: 1 on a, 2 on b, 2 on c; the sixth finds no node.
  const std::string one = Write("one.json", Pod("one", "1"));
  ASSERT_EQ(Run({"whatif", "replicas", "--cluster", cluster, "--pod", one, "--output", "json"}, &out), 0);
  EXPECT_EQ(out["replicas"], 5);
  EXPECT_EQ(out["perNode"], json::parse(R"({"a": 1, "b": 2, "c": 2})"));
  EXPECT_EQ(out["stoppedBy"]["pod"], "default/one-whatif-5");
  EXPECT_EQ(out["stoppedBy"]["node"], nullptr);
  ASSERT_EQ(Run({"whatif", "replicas", "--cluster", cluster, "--pod", one, "--max", "2", "--output", "json"}, &out), 0);
  EXPECT_EQ(out["replicas"], 2);
  EXPECT_EQ(out["stoppedBy"], nullptr);
  // Fits: a 1-CPU pod fits every node; a 3-CPU one none, each rejected by NodeResourcesFit.
  ASSERT_EQ(Run({"whatif", "fits", "--cluster", cluster, "--pod", one, "--output", "json"}, &out), 0);
  EXPECT_EQ(out["fits"], json::array({"a", "b", "c"})) << out.dump();
  EXPECT_EQ(out["rejected"], json::array());
  const std::string three = Write("three.json", Pod("three", "3"));
  ASSERT_EQ(Run({"whatif", "fits", "--cluster", cluster, "--pod", three, "--output", "json"}, &out), 0);
  EXPECT_EQ(out["fits"], json::array());
  ASSERT_EQ(out["rejected"].size(), 3u);
  EXPECT_EQ(out["rejected"][0], json::parse(R"({"node": "a", "plugin": "NodeResourcesFit", "code": "Unschedulable", "reason": "Insufficient cpu"})"));
  ASSERT_EQ(Run({"whatif", "fits", "--cluster", cluster, "--pod", one, "--nodes", "c,a", "--first-fit", "--output", "json"}, &out), 0);
  EXPECT_EQ(out["node"], "c");
  ASSERT_EQ(Run({"whatif", "fits", "--cluster", cluster, "--pod", three, "--first-fit", "--output", "json"}, &out), 0);
  EXPECT_EQ(out["node"], nullptr);
  // Mistakes: an unknown node or question, a missing flag.
  EXPECT_EQ(Run({"whatif", "drain", "--cluster", cluster, "--node", "nope"}, &out), 1);
  EXPECT_EQ(Run({"whatif", "drain", "--cluster", cluster}, &out), 2);
  EXPECT_EQ(Run({"whatif", "shrink", "--cluster", cluster}, &out), 2);
  EXPECT_EQ(Run({"whatif", "replicas", "--cluster", cluster, "--pod", cluster}, &out), 1);
}

// `kplace whatif scale-up`, checked by hand: a (4 CPU) holds web-0 (3); three pending 3-CPU
// pods of one ReplicaSet: one on b, then a new 4-CPU template node each for the other two;
// a 6-CPU pod fits no template. The JSON contract: newNodes and pending placements.
TEST_F(ScheduleCliTest, WhatIfScaleUp) {
  json web0 = Pod("web-0", "3");
  web0["spec"]["nodeName"] = "a";
  const std::string cluster = Write("cluster.json", List({Node("a"), Node("b"), web0}));
  json pending = json::array();
  for (int k = 1; k <= 3; ++k) {
    json p = Pod("web-" + std::to_string(k), "3");
    p["metadata"]["ownerReferences"] = json::array(
        {{{"apiVersion", "apps/v1"}, {"kind", "ReplicaSet"}, {"name", "web"}, {"uid", "u-web"}, {"controller", true}}});
    pending.push_back(p);
  }
  pending.push_back(Pod("huge", "6"));
  const std::string pods = Write("pods.json", List(pending));
  json tmpl = Node("pool");
  tmpl["metadata"]["labels"].erase("kubernetes.io/hostname");  // each new node gets its own
  const std::string pool = Write("pool.json", tmpl);
  json out;
  ASSERT_EQ(Run({"whatif", "scale-up", "--cluster", cluster, "--pods", pods, "--node-template", pool, "--output", "json"}, &out), 0);
  EXPECT_EQ(out["newNodes"], json::parse(R"({"pool": 2})"));
  ASSERT_EQ(out["pending"].size(), 4u) << out.dump();
  EXPECT_EQ(out["pending"][0]["pod"], "default/huge");
  EXPECT_EQ(out["pending"][0]["node"], nullptr);
  EXPECT_EQ(out["pending"][0]["status"], "Unschedulable");
  EXPECT_EQ(out["pending"][0]["message"], "0/1 nodes are available: 1 Insufficient cpu.");
  EXPECT_EQ(out["pending"][1]["node"], "b");
  EXPECT_EQ(out["pending"][1]["status"], "Scheduled");
  EXPECT_EQ(out["pending"][2]["node"], "pool-0");
  EXPECT_EQ(out["pending"][3]["node"], "pool-1");
  ASSERT_EQ(Run({"whatif", "scale-up", "--cluster", cluster, "--pods", pods, "--node-template", pool, "--max-nodes", "1",
                 "--output", "json"}, &out), 0);
  EXPECT_EQ(out["newNodes"], json::parse(R"({"pool": 1})"));
  EXPECT_EQ(out["pending"][3]["message"], "no new node: the scale-up's limit of 1 new nodes is reached");
  // Mistakes, named by file, object and field: a bound pod among the pending, pods as a
  // template, a template named twice, missing flags.
  const std::string bound = Write("bound.json", List({web0}));
  EXPECT_EQ(Run({"whatif", "scale-up", "--cluster", cluster, "--pods", bound, "--node-template", pool}, &out), 1);
  EXPECT_EQ(Run({"whatif", "scale-up", "--cluster", cluster, "--pods", pods, "--node-template", pods}, &out), 1);
  EXPECT_EQ(Run({"whatif", "scale-up", "--cluster", cluster, "--pods", pods, "--node-template", pool, "--node-template", pool}, &out), 1);
  EXPECT_EQ(Run({"whatif", "scale-up", "--cluster", cluster, "--pods", pods}, &out), 2);
  EXPECT_EQ(Run({"whatif", "scale-up", "--cluster", cluster, "--pods", pods, "--node-template", pool, "--max-nodes", "-1"}, &out), 2);
}

TEST_F(ScheduleCliTest, GpuTaintTakesOnlyToleratingPods) {
  json nodes = json::array({Node("cpu-1"), Node("gpu-1", json::object(),
                                                 json::array({{{"key", "hardware"}, {"value", "gpu"}, {"effect", "NoSchedule"}}}))});
  json tolerating = Pod("trainer", "3", {{"tolerations", json::array({{{"key", "hardware"}, {"operator", "Equal"}, {"value", "gpu"}, {"effect", "NoSchedule"}}})}});
  json pods = json::array({Pod("web-0", "3"), Pod("web-1", "3"), tolerating});
  json out;
  ASSERT_EQ(Run({"schedule", "--cluster", Write("c.json", List(nodes)), "--pods", Write("p.json", List(pods))}, &out), 0);
  std::map<std::string, json> by_pod;
  for (const json& p : out["placements"]) by_pod[p["pod"]] = p;
  EXPECT_EQ(by_pod["default/web-0"]["node"], "cpu-1");
  EXPECT_TRUE(by_pod["default/web-1"]["node"].is_null());
  EXPECT_EQ(by_pod["default/web-1"]["message"],
            "0/2 nodes are available: 1 Insufficient cpu, 1 node(s) had untolerated taint(s). preemption: 0/2 nodes "
            "are available: 1 No preemption victims found for incoming pod, 1 Preemption is not helpful for scheduling.");
  EXPECT_EQ(by_pod["default/trainer"]["node"], "gpu-1");
}

// A profile without spreading defaults signs pods: 3-CPU pods on 4-CPU nodes fill one node
// each, and every pod after the first takes the first pod's ranking (reported "hinted").
// --batch-age 1 lets a ranking serve one cycle only; the gate off gives plain cycles.
TEST_F(ScheduleCliTest, OpportunisticBatchingHintsShowAndCanBeLimited) {
  json nodes = json::array();
  for (int i = 0; i < 4; ++i) nodes.push_back(Node("n" + std::to_string(i)));
  json pods = json::array();
  for (int i = 0; i < 4; ++i) pods.push_back(Pod("p" + std::to_string(i), "3"));
  json config = {{"apiVersion", "kubescheduler.config.k8s.io/v1"},
                 {"kind", "KubeSchedulerConfiguration"},
                 {"profiles", json::array({{{"schedulerName", "default-scheduler"},
                                            {"pluginConfig", json::array({{{"name", "PodTopologySpread"},
                                                                           {"args", {{"defaultingType", "List"},
                                                                                     {"defaultConstraints", json::array()}}}}})}}})}};
  const std::vector<std::string> base = {"schedule", "--cluster", Write("c.json", List(nodes)), "--pods",
                                         Write("p.json", List(pods)), "--config", Write("config.json", config)};
  auto hinted = [&](std::vector<std::string> extra) {
    std::vector<std::string> args = base;
    args.insert(args.end(), extra.begin(), extra.end());
    json out;
    EXPECT_EQ(Run(args, &out), 0);
    std::vector<bool> h;
    for (const json& p : out["placements"]) h.push_back(p.value("hinted", false) && !p["node"].is_null());
    return h;
  };
  EXPECT_EQ(hinted({}), (std::vector<bool>{false, true, true, true}));
  EXPECT_EQ(hinted({"--reference"}), (std::vector<bool>{false, true, true, true}));
  EXPECT_EQ(hinted({"--batch-age", "1"}), (std::vector<bool>{false, true, false, true}));
  EXPECT_EQ(hinted({"--feature-gates", "OpportunisticBatching=false"}), (std::vector<bool>(4, false)));
  json out;
  EXPECT_EQ(Run({"schedule", "--batch-age", "-1", "--cluster", base[2]}, &out), 2);
}

TEST_F(ScheduleCliTest, TooBigPodStaysPendingWithAggregatedReason) {
  json nodes = json::array({Node("a"), Node("b"), Node("c")});
  json out;
  ASSERT_EQ(Run({"schedule", "--cluster", Write("c.json", List(nodes)), "--pods", Write("p.json", List(json::array({Pod("huge", "64")})))}, &out), 0);
  EXPECT_TRUE(out["placements"][0]["node"].is_null());
  // More cpu than any node has: unresolvable, so no node is worth a dry run.
  EXPECT_EQ(out["placements"][0]["message"],
            "0/3 nodes are available: 3 Insufficient cpu. preemption: 0/3 nodes are available: 3 Preemption is not "
            "helpful for scheduling.");
  EXPECT_EQ(out["summary"]["unschedulable"], 1);
}

TEST_F(ScheduleCliTest, ZoneSpreadLandsTwoPerZoneAndReportCountsSurvivors) {
  json nodes = json::array();
  for (int z = 0; z < 3; ++z) {
    for (int k = 0; k < 2; ++k) {
      nodes.push_back(Node("z" + std::to_string(z) + "-n" + std::to_string(k),
                           {{"topology.kubernetes.io/zone", "zone-" + std::to_string(z)}, {"topology.kubernetes.io/region", "r1"}}));
    }
  }
  json spread = {{"topologySpreadConstraints",
                  json::array({{{"maxSkew", 1}, {"topologyKey", "topology.kubernetes.io/zone"}, {"whenUnsatisfiable", "DoNotSchedule"},
                                {"labelSelector", {{"matchLabels", {{"app", "web"}}}}}}})}};
  json pods = json::array();
  for (int i = 0; i < 6; ++i) {
    json p = Pod("web-" + std::to_string(i), "100m", spread);
    p["metadata"]["ownerReferences"] = json::array({{{"apiVersion", "apps/v1"}, {"kind", "ReplicaSet"}, {"name", "web"}, {"uid", "u"}, {"controller", true}}});
    pods.push_back(p);
  }
  for (bool reference : {false, true}) {
    json out;
    std::vector<std::string> args = {"schedule", "--report", "--cluster", Write("c.json", List(nodes)), "--pods", Write("p.json", List(pods))};
    if (reference) args.push_back("--reference");
    ASSERT_EQ(Run(args, &out), 0);
    std::map<std::string, int> per_zone;
    for (const json& p : out["placements"]) ++per_zone[p["node"].get<std::string>().substr(0, 2)];
    EXPECT_EQ(per_zone, (std::map<std::string, int>{{"z0", 2}, {"z1", 2}, {"z2", 2}}));
    ASSERT_EQ(out["report"].size(), 1u);
    EXPECT_EQ(out["report"][0]["replicas"], 6);
    EXPECT_EQ(out["report"][0]["survivingWorstZoneLoss"], 4);
    EXPECT_EQ(out["report"][0]["survivingWorstNodeLoss"], 5);
    EXPECT_EQ(out["report"][0]["survivingWorstRegionLoss"], 0);
  }
}

// Without zone or region labels there is no zone to lose: the report says null, not 0.
// Completed pods and static (mirror) pods are no replicas.
TEST_F(ScheduleCliTest, ReportLeavesAbsentDomainsAndNonReplicasOut) {
  json owner = json::array({{{"apiVersion", "apps/v1"}, {"kind", "ReplicaSet"}, {"name", "web"}, {"uid", "u"}, {"controller", true}}});
  json cluster = json::array({Node("a"), Node("b")});
  for (int i = 0; i < 2; ++i) {
    json p = Pod("bound-" + std::to_string(i), "100m", {{"nodeName", i ? "b" : "a"}});
    p["metadata"]["ownerReferences"] = owner;
    cluster.push_back(p);
  }
  json done = Pod("done", "100m", {{"nodeName", "a"}});
  done["metadata"]["ownerReferences"] = owner;
  done["status"] = {{"phase", "Succeeded"}};
  cluster.push_back(done);
  json mirror = Pod("mirror", "100m", {{"nodeName", "a"}});
  mirror["metadata"]["ownerReferences"] = json::array({{{"apiVersion", "v1"}, {"kind", "Node"}, {"name", "a"}, {"uid", "n"}, {"controller", true}}});
  cluster.push_back(mirror);
  json out;
  ASSERT_EQ(Run({"schedule", "--report", "--cluster", Write("c.json", List(cluster))}, &out), 0);
  ASSERT_EQ(out["report"].size(), 1u) << out["report"].dump();
  EXPECT_EQ(out["report"][0]["workload"], "default/ReplicaSet/web");
  EXPECT_EQ(out["report"][0]["replicas"], 2);
  EXPECT_EQ(out["report"][0]["survivingWorstNodeLoss"], 1);
  EXPECT_TRUE(out["report"][0]["survivingWorstZoneLoss"].is_null());
  EXPECT_TRUE(out["report"][0]["survivingWorstRegionLoss"].is_null());
}

TEST_F(ScheduleCliTest, BadInputNamesTheFieldAndFails) {
  json bad = Pod("web-1", "12x");
  json out;
  std::string pods = Write("pods.yaml", List(json::array({bad})));
  EXPECT_EQ(Run({"schedule", "--cluster", Write("c.json", List(json::array({Node("a")}))), "--pods", pods}, &out), 1);
  EXPECT_EQ(Run({"schedule", "--bogus"}, &out), 2);
  EXPECT_EQ(Run({"schedule"}, &out), 2);
}

TEST_F(ScheduleCliTest, OutputPodsSetsNodeName) {
  json out;
  ASSERT_EQ(Run({"schedule", "--output", "pods", "--cluster", Write("c.json", List(json::array({Node("a")}))), "--pods",
                 Write("p.json", List(json::array({Pod("web-0", "1")})))},
                &out),
            0);
  EXPECT_EQ(out["kind"], "List");
  EXPECT_EQ(out["items"][0]["spec"]["nodeName"], "a");
  EXPECT_EQ(out["items"][0]["metadata"]["name"], "web-0");
}

TEST_F(ScheduleCliTest, ExplainNamesTheVolumeReasonPerNode) {
  // Class "local" has one PV, on node a. db-0's claim takes it; db-1's claim then finds no
  // PV anywhere; logs-0's claim is bound to a PV whose node affinity admits only b.
  auto affinity = [](const std::string& node) {
    return json{{"required", {{"nodeSelectorTerms", json::array({{{"matchExpressions", json::array({{{"key", "kubernetes.io/hostname"}, {"operator", "In"}, {"values", {node}}}})}}})}}}};
  };
  auto pv = [&](const std::string& name, const std::string& node) {
    return json{{"kind", "PersistentVolume"},
                {"metadata", {{"name", name}}},
                {"spec", {{"storageClassName", "local"}, {"accessModes", {"ReadWriteOnce"}}, {"capacity", {{"storage", "10Gi"}}}, {"nodeAffinity", affinity(node)}}},
                {"status", {{"phase", "Available"}}}};
  };
  auto pvc = [](const std::string& name, const std::string& volume) {
    json c = {{"kind", "PersistentVolumeClaim"},
              {"metadata", {{"name", name}, {"namespace", "default"}}},
              {"spec", {{"storageClassName", "local"}, {"accessModes", {"ReadWriteOnce"}}, {"resources", {{"requests", {{"storage", "5Gi"}}}}}}}};
    if (!volume.empty()) {
      c["spec"]["volumeName"] = volume;
      c["metadata"]["annotations"] = {{"pv.kubernetes.io/bind-completed", "yes"}};
    }
    return c;
  };
  json bound = pv("pv-b", "b");
  bound["spec"]["claimRef"] = {{"namespace", "default"}, {"name", "logs-0"}};
  bound["status"]["phase"] = "Bound";
  json items = json::array({Node("a"), Node("b"), Node("c"), pv("pv-a", "a"), bound, pvc("data-0", ""), pvc("data-1", ""),
                            pvc("logs-0", "pv-b")});
  items.push_back({{"kind", "StorageClass"}, {"metadata", {{"name", "local"}}}, {"provisioner", "kubernetes.io/no-provisioner"},
                   {"volumeBindingMode", "WaitForFirstConsumer"}});
  auto claim_pod = [](const std::string& name, const std::string& claim) {
    return Pod(name, "100m", {{"volumes", json::array({{{"name", "data"}, {"persistentVolumeClaim", {{"claimName", claim}}}}})}});
  };
  json pods = json::array({claim_pod("db-0", "data-0"), claim_pod("db-1", "data-1"), claim_pod("logs-0", "logs-0")});
  const std::string no_pv = "node(s) didn't find available persistent volumes to bind";
  const std::string conflict = "node(s) didn't match PersistentVolume's node affinity";
  for (bool reference : {false, true}) {
    json out;
    std::vector<std::string> args = {"explain", "--cluster", Write("c.json", List(items)), "--pods", Write("p.json", List(pods))};
    if (reference) args.push_back("--reference");
    ASSERT_EQ(Run(args, &out), 0);
    // Per placement: node -> "passed" or the VolumeBinding reasons.
    std::vector<std::map<std::string, json>> verdicts;
    for (const json& p : out["placements"]) {
      std::map<std::string, json> v;
      for (const json& n : p["nodes"]) {
        if (n["filter"] == "passed") {
          v[n["node"]] = "passed";
          continue;
        }
        EXPECT_EQ(n["filter"]["plugin"], "VolumeBinding") << n;
        EXPECT_EQ(n["filter"]["code"], "UnschedulableAndUnresolvable") << n;
        v[n["node"]] = n["filter"]["reasons"];
      }
      verdicts.push_back(v);
    }
    ASSERT_EQ(verdicts.size(), 3u);
    EXPECT_EQ(out["placements"][0]["node"], "a");
    EXPECT_EQ(verdicts[0], (std::map<std::string, json>{{"a", "passed"}, {"b", {no_pv}}, {"c", {no_pv}}}));
    EXPECT_TRUE(out["placements"][1]["node"].is_null());
    EXPECT_EQ(out["placements"][1]["message"], "0/3 nodes are available: 3 " + no_pv +
                                                   ". preemption: 0/3 nodes are available: 3 Preemption is not helpful for scheduling.");
    EXPECT_EQ(verdicts[1], (std::map<std::string, json>{{"a", {no_pv}}, {"b", {no_pv}}, {"c", {no_pv}}}));
    EXPECT_EQ(out["placements"][2]["node"], "b");
    EXPECT_EQ(verdicts[2], (std::map<std::string, json>{{"a", {conflict}}, {"b", "passed"}, {"c", {conflict}}}));
  }
}

// The real scheduler's messages in the k3s support bundle are the oracle.
TEST_F(ScheduleCliTest, K3sPendingPodsGetTheRealSchedulersMessage) {
  fs::path dir = fs::path(KPLACE_SHARED_DIR) / "realworld";
  if (!fs::exists(dir / "k3s-v1.33-pods-default.json")) GTEST_SKIP() << "no k3s dump";
  std::map<std::string, std::string> real;
  json pods = json::parse(std::ifstream(dir / "k3s-v1.33-pods-default.json"));
  for (const json& p : pods["items"]) {
    for (const json& c : p["status"].value("conditions", json::array())) {
      if (c["type"] == "PodScheduled" && c["status"] == "False") {
        real[p["metadata"]["namespace"].get<std::string>() + "/" + p["metadata"]["name"].get<std::string>()] = c["message"];
      }
    }
  }
  ASSERT_EQ(real.size(), 2u);
  for (const char* engine : {"--backend=omp", "--reference"}) {
    json out;
    ASSERT_EQ(Run({"schedule", "--cluster", (dir / "k3s-v1.33-nodes.json").string(), "--cluster",
                   (dir / "k3s-v1.33-pods-default.json").string(), "--cluster",
                   (dir / "k3s-v1.33-pods-kube-system.json").string(), engine},
                  &out),
              0);
    ASSERT_EQ(out["placements"].size(), 2u) << engine;
    for (const json& p : out["placements"]) EXPECT_EQ(p["message"], real.at(p["pod"])) << engine;
  }
}

// A high-priority pod preempts on the node whose victims matter least, its victims leave,
// and it is placed there when tried again; a PDB steers the choice.
TEST_F(ScheduleCliTest, PreemptionNominatesEvictsAndPlacesOnRetry) {
  auto victim = [&](const std::string& name, const std::string& node, int priority, const std::string& app) {
    json p = Pod(name, "3", {{"nodeName", node}, {"priority", priority}});
    p["metadata"]["labels"] = {{"app", app}};
    return p;
  };
  json cluster = List(json::array(
      {Node("a"), Node("b"), victim("low-a", "a", 1, "guarded"), victim("low-b", "b", 5, "free"),
       {{"kind", "PodDisruptionBudget"},
        {"metadata", {{"name", "guard"}, {"namespace", "default"}}},
        {"spec", {{"selector", {{"matchLabels", {{"app", "guarded"}}}}}}},
        {"status", {{"disruptionsAllowed", 0}}}},
       {{"kind", "PriorityClass"}, {"metadata", {{"name", "urgent"}}}, {"value", 1000}}}));
  json urgent = Pod("urgent", "2", {{"priorityClassName", "urgent"}});
  json filler = Pod("filler", "1", {{"priority", 0}});
  for (const char* engine : {"--backend=omp", "--reference"}) {
    json out;
    ASSERT_EQ(Run({"schedule", "--cluster", Write("c.json", cluster), "--pods", Write("p.json", List(json::array({urgent, filler}))),
                   engine},
                  &out),
              0);
    std::map<std::string, json> by_pod;
    for (const json& p : out["placements"]) by_pod[p["pod"]] = p;
    const json& u = by_pod["default/urgent"];
    // low-a is protected by a PDB with no disruptions left: b's victim is preempted instead.
    EXPECT_EQ(u["nominatedNode"], "b") << engine;
    EXPECT_EQ(u["victims"], json::array({"default/low-b"})) << engine;
    EXPECT_EQ(u["node"], "b") << engine;
    EXPECT_EQ(u["attempts"], 2) << engine;
    // The filler fits beside low-a on a; b's freed room goes to the preemptor first.
    EXPECT_EQ(by_pod["default/filler"]["node"], "a") << engine;
    EXPECT_EQ(out["summary"]["scheduled"], 2) << engine;
  }
  // explain says what the dry run found and why b won.
  json out;
  ASSERT_EQ(Run({"explain", "--cluster", Write("c.json", cluster), "--pods", Write("p.json", List(json::array({urgent, filler})))},
                &out),
            0);
  const json& pf = out["placements"][0]["postFilter"];
  EXPECT_EQ(pf["chosen"], "b");
  EXPECT_EQ(pf["decidedBy"], "fewest PDB violations");
  ASSERT_EQ(pf["candidates"].size(), 2u);
  std::map<std::string, json> cands;
  for (const json& c : pf["candidates"]) cands[c["node"]] = c;
  EXPECT_EQ(cands["a"]["pdbViolations"], 1);
  EXPECT_EQ(cands["a"]["victims"], json::array({"default/low-a"}));
  EXPECT_EQ(cands["b"]["criteria"]["lowest highest victim priority"], 5);
  EXPECT_EQ(cands["b"]["criteria"]["lowest victim priority sum"], 5 + (int64_t{1} << 31));
  EXPECT_EQ(cands["b"]["criteria"]["latest start of the highest-priority victims"], "now");
}

TEST_F(ScheduleCliTest, UnknownPriorityClassNamesPodAndClass) {
  json out;
  EXPECT_EQ(Run({"schedule", "--cluster", Write("c.json", List(json::array({Node("a")}))), "--pods",
                 Write("p.json", List(json::array({Pod("p", "1", {{"priorityClassName", "gold"}})})))},
                &out),
            1);
}

// A dump as `kubectl get all,pdb,pc,hpa,crd,resourceslices -A -o json` gives it: kinds
// scheduling does not read are skipped; gated pods, pods of other schedulers and pods whose
// ResourceClaim is missing are never placed, each reported as what it is; a pod whose claim
// is allocated goes where the allocation's node selector says.
TEST_F(ScheduleCliTest, RealDumpKindsGatesOtherSchedulersAndClaims) {
  json gated = Pod("gated", "1", {{"schedulingGates", json::array({{{"name", "example.com/quota"}}})}});
  json other = Pod("other", "1", {{"schedulerName", "volcano"}});
  json claim = Pod("claim", "1", {{"resourceClaims", json::array({{{"name", "gpu"}, {"resourceClaimName", "gpu-0"}}})}});
  json allocated = Pod("allocated", "1", {{"resourceClaims", json::array({{{"name", "gpu"}, {"resourceClaimName", "gpu-1"}}})}});
  json plain = Pod("plain", "1");
  json gpu1 = {{"apiVersion", "resource.k8s.io/v1"},
               {"kind", "ResourceClaim"},
               {"metadata", {{"name", "gpu-1"}, {"namespace", "default"}}},
               {"spec", {{"devices", {{"requests", json::array({{{"name", "gpu"}, {"exactly", {{"deviceClassName", "gpu"}}}}})}}}}},
               {"status", {{"allocation", {{"nodeSelector", {{"nodeSelectorTerms", json::array({{{"matchFields",
                   json::array({{{"key", "metadata.name"}, {"operator", "In"}, {"values", {"b"}}}})}}})}}}}}}}};
  json dump = List(json::array(
      {Node("a"), Node("b"), gated, other, claim, allocated, plain, gpu1,
       {{"kind", "HorizontalPodAutoscaler"}, {"metadata", {{"name", "h"}, {"namespace", "default"}}}},
       {{"kind", "CustomResourceDefinition"}, {"metadata", {{"name", "widgets.example.com"}}}},
       {{"kind", "ResourceSlice"}, {"metadata", {{"name", "a-gpu"}}}, {"spec", {{"driver", "gpu"}, {"nodeName", "a"}}}},
       {{"kind", "PodDisruptionBudget"}, {"metadata", {{"name", "b"}, {"namespace", "default"}}}, {"status", {{"disruptionsAllowed", 1}}}},
       {{"kind", "PriorityClass"}, {"metadata", {{"name", "high"}}}, {"value", 100}}}));
  for (const char* engine : {"--backend=omp", "--reference"}) {
    json out;
    ASSERT_EQ(Run({"schedule", "--cluster", Write("dump.json", dump), engine}, &out), 0) << engine;
    std::map<std::string, json> by_pod;
    for (const json& p : out["placements"]) by_pod[p["pod"]] = p;
    EXPECT_EQ(by_pod["default/gated"]["status"], "SchedulingGated");
    EXPECT_EQ(by_pod["default/gated"]["message"], "waiting for scheduling gates: [example.com/quota]");
    EXPECT_EQ(by_pod["default/other"]["status"], "OtherScheduler");
    // DynamicResources' PreEnqueue: no cycle, no condition; the pod waits for its claim.
    EXPECT_EQ(by_pod["default/claim"]["status"], "Gated") << engine;
    EXPECT_EQ(by_pod["default/claim"]["gatingPlugin"], "DynamicResources");
    EXPECT_EQ(by_pod["default/claim"]["message"], "could not find ResourceClaim \"default/gpu-0\"");
    EXPECT_EQ(by_pod["default/allocated"]["node"], "b") << engine;
    EXPECT_FALSE(by_pod["default/plain"]["node"].is_null());
    EXPECT_EQ(out["summary"]["scheduled"], 2);
    EXPECT_EQ(out["summary"]["schedulingGated"], 2);
    EXPECT_EQ(out["summary"]["otherScheduler"], 1);
    EXPECT_EQ(out["summary"]["unschedulable"], 0);
  }
  // --output pods: a pod DynamicResources holds back keeps its status as it was.
  json out;
  ASSERT_EQ(Run({"schedule", "--cluster", Write("dump.json", dump), "--output", "pods"}, &out), 0);
  for (const json& p : out["items"]) {
    if (p["metadata"]["name"] == "claim") EXPECT_FALSE(p.contains("status") && p["status"].contains("conditions")) << p;
  }
}

// The shape of `kubectl get all,pdb,pc,pv,pvc,sc,csinode,resourceclaims,resourceslices,
// deviceclasses -A -o json` (and `kubectl get nodes -o json`), with every resource.k8s.io
// kind: it loads, and each pod with claims gets upstream's outcome on both sides.
TEST_F(ScheduleCliTest, KubectlDumpWithResourceClaimsLoadsAndDecides) {
  const fs::path data = fs::path(KPLACE_SOURCE_DIR) / "tests" / "cli" / "testdata";
  for (const char* engine : {"--backend=omp", "--reference"}) {
    json out;
    ASSERT_EQ(Run({"schedule", "--cluster", (data / "kubectl-get-nodes-dra.json").string(), "--cluster",
                   (data / "kubectl-get-all-dra.json").string(), engine},
                  &out),
              0)
        << engine;
    std::map<std::string, json> by_pod;
    for (const json& p : out["placements"]) by_pod[p["pod"]] = p;
    ASSERT_EQ(by_pod.size(), 8u) << out.dump(1);
    // A generated claim, allocated on node-a for this pod; a shared claim on node-b that a
    // running pod holds (sharing is unlimited).
    EXPECT_EQ(by_pod["ml/trainer-0"]["node"], "node-a") << engine;
    EXPECT_EQ(by_pod["ml/inference-1"]["node"], "node-b") << engine;
    EXPECT_EQ(by_pod["ml/waits-0"]["status"], "Gated");
    EXPECT_EQ(by_pod["ml/waits-0"]["message"], "Pod ml/waits-0: ResourceClaim not created yet");
    EXPECT_EQ(by_pod["ml/missing-0"]["message"], "could not find ResourceClaim \"ml/gone\"");
    // Allocating needs the allocator and the ResourceSlices: refused out loud.
    EXPECT_EQ(by_pod["ml/fresh-0"]["status"], "Error");
    EXPECT_EQ(by_pod["ml/fresh-0"]["message"], "kplace: allocating ResourceClaim ml/fresh-gpu is not supported");
    EXPECT_EQ(by_pod["ml/gated-0"]["status"], "SchedulingGated");
    EXPECT_EQ(by_pod["ml/other-0"]["status"], "OtherScheduler");
    EXPECT_FALSE(by_pod["ml/web-0"]["node"].is_null());
  }
}

// explain --output pods: the pending pods back, placed ones with spec.nodeName, every one
// with its PodScheduled condition and the simulator's annotations (valgrind once reported a
// use-after-free here: the annotations were read from a destroyed temporary).
TEST_F(ScheduleCliTest, ExplainOutputPodsCarriesConditionsAndAnnotations) {
  json out;
  ASSERT_EQ(Run({"explain", "--cluster", Write("c.json", List(json::array({Node("a")}))), "--pods",
                 Write("p.json", List(json::array({Pod("fits", "1"), Pod("huge", "64")}))), "--output", "pods"},
                &out),
            0);
  ASSERT_EQ(out["items"].size(), 2u);
  std::map<std::string, json> by_name;
  for (const json& p : out["items"]) by_name[p["metadata"]["name"]] = p;
  const json& fits = by_name["fits"];
  EXPECT_EQ(fits["spec"]["nodeName"], "a");
  EXPECT_EQ(fits["status"]["conditions"], json::parse(R"([{"type": "PodScheduled", "status": "True"}])"));
  EXPECT_FALSE(fits["metadata"]["annotations"].empty());
  const json& huge = by_name["huge"];
  EXPECT_FALSE(huge["spec"].contains("nodeName"));
  ASSERT_EQ(huge["status"]["conditions"].size(), 1u);
  EXPECT_EQ(huge["status"]["conditions"][0]["reason"], "Unschedulable");
  EXPECT_EQ(huge["status"]["conditions"][0]["message"],
            "0/1 nodes are available: 1 Insufficient cpu. preemption: 0/1 nodes are available: 1 Preemption is not "
            "helpful for scheduling.");
}

// 20-digit counts used to saturate silently (--pods became -1 measured pods).
TEST_F(ScheduleCliTest, IntegerFlagsOutOfRangeAreRefused) {
  json out;
  EXPECT_EQ(Run({"gen", "--nodes", "99999999999999999999"}, &out), 2);
  EXPECT_EQ(Run({"bench", "--pods", "99999999999999999999"}, &out), 2);
  EXPECT_EQ(Run({"schedule", "--batch", "-99999999999999999999"}, &out), 2);
}

// Inputs that used to be accepted silently: a node or pod given twice, an empty file, a
// directory in place of a file.
TEST_F(ScheduleCliTest, DuplicatesEmptyFilesAndDirectoriesAreRefused) {
  json out;
  std::string nodes = Write("n.json", List(json::array({Node("a")})));
  std::string again = Write("n2.json", List(json::array({Node("a")})));
  EXPECT_EQ(Run({"schedule", "--cluster", nodes, "--cluster", again}, &out), 1);
  std::string pods = Write("p.json", List(json::array({Pod("p", "1")})));
  std::string same = Write("p2.json", List(json::array({Pod("p", "1")})));
  EXPECT_EQ(Run({"schedule", "--cluster", nodes, "--pods", pods, "--pods", same}, &out), 1);
  std::string bound = Write("b.json", List(json::array({Pod("p", "1", {{"nodeName", "a"}})})));
  EXPECT_EQ(Run({"schedule", "--cluster", nodes, "--cluster", bound, "--pods", pods}, &out), 1);
  // Every kind, named with both files; the same name in another namespace or kind is no duplicate.
  json pvc = {{"apiVersion", "v1"}, {"kind", "PersistentVolumeClaim"}, {"metadata", {{"name", "data"}, {"namespace", "default"}}}};
  json pvc_elsewhere = pvc;
  pvc_elsewhere["metadata"]["namespace"] = "other";
  json pc = {{"apiVersion", "scheduling.k8s.io/v1"}, {"kind", "PriorityClass"}, {"metadata", {{"name", "data"}}}, {"value", 5}};
  std::string storage = Write("s.json", List(json::array({pvc, pvc_elsewhere, pc})));
  ASSERT_EQ(Run({"schedule", "--cluster", nodes, "--cluster", storage, "--pods", pods}, &out), 0);
  std::string storage_again = Write("s2.json", List(json::array({pvc})));
  ::testing::internal::CaptureStderr();
  EXPECT_EQ(Run({"schedule", "--cluster", nodes, "--cluster", storage, "--cluster", storage_again, "--pods", pods}, &out), 1);
  EXPECT_NE(::testing::internal::GetCapturedStderr().find("PersistentVolumeClaim default/data is given twice: in " + storage +
                                                           " and in " + storage_again),
            std::string::npos);
  std::string class_again = Write("c2.json", List(json::array({pc})));
  EXPECT_EQ(Run({"schedule", "--cluster", nodes, "--cluster", storage, "--pods", pods, "--pods", class_again}, &out), 1);
  std::string empty = (dir_ / "empty.json").string();
  std::ofstream(empty) << "  \n";
  EXPECT_EQ(Run({"schedule", "--cluster", empty}, &out), 1);
  EXPECT_EQ(Run({"schedule", "--cluster", dir_.string()}, &out), 1);
  // A pod bound to a node the snapshot lacks is ignored (with a warning), as the cache would.
  std::string elsewhere = Write("e.json", List(json::array({Pod("q", "4", {{"nodeName", "gone"}})})));
  ASSERT_EQ(Run({"schedule", "--cluster", nodes, "--cluster", elsewhere, "--pods", pods}, &out), 0);
  EXPECT_EQ(out["placements"][0]["node"], "a");
}

// --skip-invalid leaves out (and lists) the objects the API server would refuse; the rest
// is scheduled. Without it the first one stops the run.
TEST_F(ScheduleCliTest, SkipInvalidLeavesOutRefusedObjects) {
  json out;
  json bad_node = Node("bad");
  bad_node["status"]["allocatable"]["cpu"] = "-4";
  json bad_pod = Pod("bad-pod", "1");
  bad_pod["spec"]["priority"] = "high";
  std::string nodes = Write("n.json", List(json::array({Node("a"), bad_node})));
  std::string pods = Write("p.json", List(json::array({Pod("p", "1"), bad_pod})));
  EXPECT_EQ(Run({"schedule", "--cluster", nodes, "--pods", pods}, &out), 1);
  ASSERT_EQ(Run({"schedule", "--cluster", nodes, "--pods", pods, "--skip-invalid"}, &out), 0);
  ASSERT_EQ(out["placements"].size(), 1u);
  EXPECT_EQ(out["placements"][0]["pod"], "default/p");
  EXPECT_EQ(out["placements"][0]["node"], "a");
  EXPECT_EQ(out["summary"]["nodes"], 1);
}

// A --pods file holds pending pods and what they use: a Node there (which the run used to
// drop without a word) is refused naming file, object and field, or with --skip-invalid
// listed and left out.
TEST_F(ScheduleCliTest, ClusterKindsInPodsAreRefused) {
  json out;
  std::string nodes = Write("n.json", List(json::array({Node("a")})));
  std::string pods = Write("p.json", List(json::array({Pod("p", "1"), Node("b")})));
  ::testing::internal::CaptureStderr();
  EXPECT_EQ(Run({"schedule", "--cluster", nodes, "--pods", pods}, &out), 1);
  std::string err = ::testing::internal::GetCapturedStderr();
  const std::string want = pods + ": Node b: kind: a Node does not belong in --pods (pending pods and the "
                                  "PodDisruptionBudgets, PriorityClasses and resource.k8s.io objects they use); give it with --cluster";
  EXPECT_EQ(err, "kplace schedule: " + want + "\n");
  ::testing::internal::CaptureStderr();
  ASSERT_EQ(Run({"schedule", "--cluster", nodes, "--pods", pods, "--skip-invalid"}, &out), 0);
  err = ::testing::internal::GetCapturedStderr();
  EXPECT_NE(err.find("--skip-invalid: left out 1 invalid object(s):\n  " + want + "\n"), std::string::npos) << err;
  ASSERT_EQ(out["placements"].size(), 1u);
  EXPECT_EQ(out["placements"][0]["node"], "a");
  EXPECT_EQ(out["summary"]["nodes"], 1);
}

// A node status without allocatable has its capacity's, as the API server defaults it; the
// CLI says which nodes those are.
TEST_F(ScheduleCliTest, AllocatableDefaultsToCapacityWithAWarning) {
  json out;
  json bare = Node("b");
  bare["status"] = {{"capacity", {{"cpu", "8"}, {"memory", "8Gi"}, {"pods", "110"}}}};
  std::string nodes = Write("n.json", List(json::array({Node("a"), bare})));
  std::string pods = Write("p.json", List(json::array({Pod("p", "6")})));
  ::testing::internal::CaptureStderr();
  ASSERT_EQ(Run({"schedule", "--cluster", nodes, "--pods", pods}, &out), 0);
  const std::string err = ::testing::internal::GetCapturedStderr();
  EXPECT_EQ(err, "kplace schedule: Node b: status.allocatable missing; using status.capacity\n");
  EXPECT_EQ(out["placements"][0]["node"], "b");
}

// `-` is stdin, read once: pending pods from it, or watch events, which --verify replays
// twice from the one reading.
TEST_F(ScheduleCliTest, DashReadsStdinOnce) {
  const std::string nodes = Write("n.json", List(json::array({Node("a")})));
  json out;
  ASSERT_EQ(testing::WithStdin(List(json::array({Pod("p", "1")})).dump(), [&] {
              return Run({"schedule", "--cluster", nodes, "--pods", "-"}, &out);
            }), 0);
  EXPECT_EQ(out["placements"][0]["pod"], "default/p");
  EXPECT_EQ(out["placements"][0]["node"], "a");
  const std::string events = json{{"type", "ADDED"}, {"object", Pod("q", "1")}}.dump() + "\n";
  ASSERT_EQ(testing::WithStdin(events, [&] { return Run({"schedule", "--cluster", nodes, "--events", "-", "--verify"}, &out); }), 0);
  ASSERT_EQ(out["placements"].size(), 1u);
  EXPECT_EQ(out["placements"][0]["pod"], "default/q");
  EXPECT_EQ(out["placements"][0]["node"], "a");
  ::testing::internal::CaptureStderr();
  EXPECT_EQ(testing::WithStdin(List(json::array({Pod("p", "1")})).dump(), [&] {
              return Run({"schedule", "--cluster", nodes, "--pods", "-", "--events", "-"}, &out);
            }), 1);
  EXPECT_NE(::testing::internal::GetCapturedStderr().find("--events -: stdin is already read by --cluster or --pods"),
            std::string::npos);
}

TEST_F(ScheduleCliTest, FeatureGatesAreValidated) {
  json out;
  std::string nodes = Write("n.json", List(json::array({Node("a")})));
  std::string pods = Write("p.json", List(json::array({Pod("p", "1")})));
  EXPECT_EQ(Run({"schedule", "--cluster", nodes, "--pods", pods, "--feature-gates", "SchedulerAsyncPreemption=false"}, &out), 0);
  EXPECT_EQ(out["placements"][0]["node"], "a");
  EXPECT_EQ(Run({"schedule", "--cluster", nodes, "--feature-gates", "NoSuchGate=true"}, &out), 2);
  EXPECT_EQ(Run({"schedule", "--cluster", nodes, "--feature-gates", "ImageVolume=maybe"}, &out), 2);
}


// A recorded history replayed with --events: pods are placed as they arrive, a pod that
// fit nowhere is tried again after a deletion frees a node, an ungated pod is placed once
// its gate is lifted, and a bad event stops the replay naming its line.
TEST_F(ScheduleCliTest, EventsReplayRetriesWaitingPods) {
  auto line = [](const std::string& type, const json& object) { return json{{"type", type}, {"object", object}}.dump(); };
  json gated = Pod("p5", "4", {{"schedulingGates", json::array({{{"name", "quota"}}})}});
  json bound_p1 = Pod("p1", "4", {{"nodeName", "a"}});
  std::string events = (dir_ / "events.jsonl").string();
  std::ofstream(events) << line("ADDED", Pod("p2", "4")) << "\n"
                        << line("ADDED", Pod("p3", "4")) << "\n"
                        << line("ADDED", gated) << "\n"
                        << line("DELETED", bound_p1) << "\n"
                        << line("ADDED", Node("c")) << "\n"
                        << line("MODIFIED", Pod("p5", "4")) << "\n"
                        << line("ADDED", Pod("p4", "4")) << "\n";
  const std::string cluster = Write("c.json", List(json::array({Node("a"), Node("b")})));
  const std::string pods = Write("p.json", List(json::array({Pod("p1", "4")})));
  for (const char* engine : {"--backend=omp", "--reference", "--batch=1", "--verify"}) {
    json out;
    ASSERT_EQ(Run({"schedule", "--cluster", cluster, "--pods", pods, "--events", events, engine}, &out), 0) << engine;
    std::map<std::string, json> by_pod;
    for (const json& p : out["placements"]) by_pod[p["pod"]] = p;
    ASSERT_EQ(by_pod.size(), 5u) << out.dump(1);
    EXPECT_EQ(by_pod["default/p1"]["node"], "a") << engine;
    EXPECT_EQ(by_pod["default/p2"]["node"], "b") << engine;
    EXPECT_EQ(by_pod["default/p3"]["node"], "a") << engine << ": placed when p1 left";
    EXPECT_EQ(by_pod["default/p3"]["attempts"], 2) << engine;
    EXPECT_EQ(by_pod["default/p5"]["node"], "c") << engine << ": placed once ungated";
    EXPECT_TRUE(by_pod["default/p4"]["node"].is_null()) << engine;
    EXPECT_EQ(by_pod["default/p4"]["message"].get<std::string>().substr(0, 52),
              "0/3 nodes are available: 3 Insufficient cpu. preempt")
        << engine;
    EXPECT_EQ(out["summary"]["nodes"], 3);
  }
  std::string bad = (dir_ / "bad.jsonl").string();
  std::ofstream(bad) << line("ADDED", Pod("p2", "4")) << "\n" << line("DELETED", Pod("nobody", "1", {{"nodeName", "a"}})) << "\n";
  json out;
  ::testing::internal::CaptureStderr();
  EXPECT_EQ(Run({"schedule", "--cluster", cluster, "--events", bad}, &out), 1);
  const std::string err = ::testing::internal::GetCapturedStderr();
  EXPECT_NE(err.find("bad.jsonl:2: Pod default/nobody not found (DELETED) (nothing after this event was applied)"),
            std::string::npos)
      << err;
}


// `kubectl get --watch --output-watch-events` opens with an ADDED for every object that
// exists: identical ones change nothing, a changed one is an update.
TEST_F(ScheduleCliTest, EventsThatOpenWithAddedForExistingObjects) {
  auto line = [](const std::string& type, const json& object) { return json{{"type", type}, {"object", object}}.dump(); };
  json p1 = Pod("p1", "4", {{"nodeName", "a"}});
  const std::string cluster = Write("c.json", List(json::array({Node("a"), Node("b"), p1})));
  const std::string pods = Write("p.json", List(json::array({Pod("p2", "4")})));
  auto replay = [&](const std::vector<std::string>& lines) {
    std::string events = (dir_ / "events.jsonl").string();
    std::ofstream f(events);
    for (const std::string& l : lines) f << l << "\n";
    f.close();
    json out;
    EXPECT_EQ(Run({"schedule", "--cluster", cluster, "--pods", pods, "--events", events}, &out), 0);
    std::map<std::string, json> by_pod;
    for (const json& p : out["placements"]) by_pod[p["pod"].get<std::string>()] = p["node"];
    return by_pod;
  };
  const std::string p3 = line("ADDED", Pod("p3", "4"));
  const auto plain = replay({p3});
  EXPECT_EQ(plain.at("default/p2"), "b");
  EXPECT_TRUE(plain.at("default/p3").is_null());
  // The same history, opened as a watch opens it (p2 is still pending in the recording).
  EXPECT_EQ(replay({line("ADDED", Node("a")), line("ADDED", Node("b")), line("ADDED", p1), line("ADDED", Pod("p2", "4")), p3}),
            plain);
  // b's opening ADDED says it has 8 CPUs now: an update, so p3 fits beside p2.
  json bigger = Node("b");
  bigger["status"]["allocatable"]["cpu"] = "8";
  const auto updated = replay({line("ADDED", Node("a")), line("ADDED", bigger), line("ADDED", p1), p3});
  EXPECT_EQ(updated.at("default/p2"), "b");
  EXPECT_EQ(updated.at("default/p3"), "b");
  // --timeline: each applied event, the revision after it, the pods decided so far.
  {
    std::string events = (dir_ / "timeline.jsonl").string();
    std::ofstream(events) << line("ADDED", Node("a")) << "\n" << p3 << "\n";
    json out;
    ASSERT_EQ(Run({"schedule", "--cluster", cluster, "--pods", pods, "--events", events, "--timeline"}, &out), 0);
    ASSERT_EQ(out["timeline"].size(), 2u) << out.dump(1);
    EXPECT_EQ(out["timeline"][0], json::parse(R"({"event": ")" + events + R"(:1", "type": "MODIFIED", "kind": "Node",
                                                   "object": "a", "revision": 1, "podsDecided": 1})"));
    EXPECT_EQ(out["timeline"][1]["type"], "ADDED");
    EXPECT_EQ(out["timeline"][1]["object"], "default/p3");
    EXPECT_EQ(out["timeline"][1]["revision"], 1);  // a pending pod changes no cluster object
    EXPECT_EQ(Run({"schedule", "--cluster", cluster, "--timeline"}, &out), 2);
  }
  // A pod placed, deleted, then ADDED again under its name is a new pod: placed again.
  json placed_p2 = Pod("p2", "4", {{"nodeName", "b"}});
  const auto again = replay({line("ADDED", Node("a")), line("DELETED", placed_p2), line("ADDED", Pod("p2", "4"))});
  EXPECT_EQ(again.at("default/p2"), "b");
}

TEST(CliTest, VersionNamesTheUpstreamReleaseAndBackends) {
  for (const char* flag : {"--version", "version"}) {
    std::vector<std::string> args = {"kplace", flag};
    std::vector<char*> argv;
    for (std::string& a : args) argv.push_back(a.data());
    ::testing::internal::CaptureStdout();
    EXPECT_EQ(cli::Main(static_cast<int>(argv.size()), argv.data()), 0);
    const std::string out = ::testing::internal::GetCapturedStdout();
    EXPECT_EQ(out.rfind("kplace ", 0), 0u) << out;
    EXPECT_NE(out.find("kube-scheduler v1.37 default plugins; backends: omp"), std::string::npos) << out;
  }
}

}  // namespace
}  // namespace kplace
