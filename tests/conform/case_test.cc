#include "kplace/conform/case.h"

#include <filesystem>
#include <fstream>
#include <string>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

namespace kplace::conform {
namespace {

using json = nlohmann::json;
namespace fs = std::filesystem;

json GoodCase() {
  return json::parse(R"({
    "name": "test/good case",
    "source": "pkg/scheduler/framework/plugins/x/x_test.go TestX",
    "plugins": ["NodeResourcesFit"],
    "profile": {"pluginConfig": [{"name": "NodeResourcesFit", "args": {}}]},
    "featureGates": {"PodLevelResources": false},
    "nodes": [
      {"metadata": {"name": "node1", "labels": {"zone": "a"}},
       "status": {"allocatable": {"cpu": "4", "memory": "10Gi", "pods": "32"}}},
      {"metadata": {"name": "node2"}, "spec": {"unschedulable": true}}
    ],
    "pods": [
      {"metadata": {"name": "p1", "namespace": "ns1"},
       "spec": {"nodeName": "node1", "containers": [{"name": "c", "resources": {"requests": {"cpu": "500m"}}}]}}
    ],
    "pod": {"metadata": {"name": "incoming"}, "spec": {"containers": [{"name": "c"}]}},
    "objects": {
      "namespaces": [{"metadata": {"name": "ns1", "labels": {"team": "x"}}}],
      "services": [{"metadata": {"name": "svc", "namespace": "ns1"}, "spec": {"selector": {"app": "a"}}}],
      "replicaSets": [{"metadata": {"name": "rs"}, "spec": {"selector": {"matchLabels": {"app": "a"}}}}],
      "persistentVolumeClaims": [{"metadata": {"name": "pvc", "namespace": "ns1"}, "spec": {}}],
      "storageClasses": [],
      "csiNodes": [{"metadata": {"name": "node1"}}]
    },
    "expect": {
      "preFilter": {"code": "Success", "reasons": [], "nodeNames": null},
      "filter": {"node2": {"code": "Unschedulable", "reasons": ["Insufficient cpu"]},
                 "node1": {"code": "Success"}},
      "preScore": {"code": "Skip"},
      "score": {"node1": 37, "node2": 0},
      "scoreStage": "raw"
    }
  })");
}

std::string WriteFile(const std::string& name, const std::string& text) {
  fs::path dir = fs::path(::testing::TempDir()) / "kplace_conform_case_test";
  fs::create_directories(dir);
  fs::path path = dir / name;
  std::ofstream(path) << text;
  return path.string();
}

TEST(ConformCaseTest, DecodesEveryPart) {
  absl::StatusOr<Case> c = DecodeCase(GoodCase(), "good.json");
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_EQ(c->file, "good.json");
  EXPECT_EQ(c->name, "test/good case");
  EXPECT_FALSE(c->default_profile);
  EXPECT_EQ(c->plugins, std::vector<std::string>{"NodeResourcesFit"});
  EXPECT_FALSE(c->gates.Enabled("PodLevelResources"));
  EXPECT_TRUE(c->gates.Enabled("SidecarContainers"));  // defaults stay

  ASSERT_EQ(c->objects.nodes.size(), 2u);
  EXPECT_EQ(c->objects.nodes[0].meta.labels.at("zone"), "a");
  EXPECT_TRUE(c->objects.nodes[1].unschedulable);
  ASSERT_EQ(c->objects.pods.size(), 1u);  // the incoming pod is kept apart
  EXPECT_EQ(c->objects.pods[0].node_name, "node1");
  EXPECT_EQ(c->pod.meta.name, "incoming");
  EXPECT_EQ(c->pod.meta.namespace_, "default");
  ASSERT_EQ(c->objects.namespaces.size(), 1u);
  ASSERT_EQ(c->objects.workloads.size(), 2u);
  EXPECT_EQ(c->objects.workloads[0].kind, "Service");  // in FORMAT.md's order
  EXPECT_EQ(c->objects.workloads[1].kind, "ReplicaSet");
  ASSERT_TRUE(c->objects.workloads[0].selector.has_value());
  EXPECT_EQ(c->objects.workloads[0].selector->match_labels.at("app"), "a");
  ASSERT_EQ(c->objects.storage.size(), 2u);
  EXPECT_EQ(c->objects.storage[0].kind, "PersistentVolumeClaim");
  EXPECT_EQ(c->objects.storage[1].kind, "CSINode");

  const Expectations& e = c->expect;
  ASSERT_TRUE(e.pre_filter.has_value());
  EXPECT_EQ(e.pre_filter->status.code, Code::kSuccess);
  EXPECT_TRUE(e.pre_filter->node_names_asserted);
  EXPECT_FALSE(e.pre_filter->node_names.has_value());
  ASSERT_EQ(e.filter.size(), 2u);
  EXPECT_EQ(e.filter.at("node2").code, Code::kUnschedulable);
  EXPECT_EQ(e.filter.at("node2").reasons, std::vector<std::string>{"Insufficient cpu"});
  EXPECT_TRUE(e.filter.at("node1").reasons.empty());
  ASSERT_TRUE(e.pre_score.has_value());
  EXPECT_EQ(e.pre_score->code, Code::kSkip);
  EXPECT_EQ(e.score.at("node1"), 37);
  EXPECT_EQ(e.score_stage, ScoreStage::kRaw);
  EXPECT_FALSE(e.HasCycle());
}

TEST(ConformCaseTest, DecodesPipelineExpectations) {
  json doc = GoodCase();
  doc["plugins"] = "default";
  doc["expect"] = json::parse(R"({
    "pluginScores": {"ImageLocality": {"node1": 100, "node2": 0}},
    "finalScore": {"node1": 602, "node2": 627},
    "selected": "node2",
    "preFilter": {"code": "Success", "nodeNames": ["node2", "node1"]}
  })");
  absl::StatusOr<Case> c = DecodeCase(doc, "pipe.json");
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_TRUE(c->default_profile);
  EXPECT_TRUE(c->expect.HasCycle());
  EXPECT_EQ(c->expect.plugin_scores.at("ImageLocality").at("node1"), 100);
  EXPECT_EQ(c->expect.final_score.at("node2"), 627);
  EXPECT_EQ(c->expect.selected, "node2");
  EXPECT_EQ(c->expect.pre_filter->node_names, (std::vector<std::string>{"node1", "node2"}));  // sorted
}

TEST(ConformCaseTest, NamesUnnamedObjects) {
  json doc = GoodCase();
  doc["pods"][0]["metadata"].erase("name");
  doc["pod"]["metadata"]["name"] = "";
  doc["objects"]["services"][0].erase("metadata");
  absl::StatusOr<Case> c = DecodeCase(doc, "unnamed.json");
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_EQ(c->objects.pods[0].meta.name, "unnamed-pods-0");
  EXPECT_EQ(c->objects.pods[0].meta.namespace_, "ns1");
  EXPECT_EQ(c->pod.meta.name, "unnamed-incoming-pod");
  EXPECT_EQ(c->objects.workloads[0].meta.name, "unnamed-services-0");
}

TEST(ConformCaseTest, KeepsAnExplicitEmptyNamespace) {
  json doc = GoodCase();
  doc["pods"][0]["metadata"]["namespace"] = "";
  doc["objects"]["services"][0]["metadata"]["namespace"] = "";
  absl::StatusOr<Case> c = DecodeCase(doc, "ns.json");
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_EQ(c->objects.pods[0].meta.namespace_, "");     // as upstream's test objects
  EXPECT_EQ(c->pod.meta.namespace_, "default");          // absent: defaulted
  EXPECT_EQ(c->objects.workloads[0].meta.namespace_, "");
}

TEST(ConformCaseTest, LoadsAFile) {
  std::string path = WriteFile("good.json", GoodCase().dump(1));
  absl::StatusOr<Case> c = LoadCase(path);
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_EQ(c->file, path);
  EXPECT_EQ(c->objects.nodes.size(), 2u);
}

TEST(ConformCaseTest, BadJsonNamesTheFile) {
  std::string path = WriteFile("broken.json", "{\"name\": \"x\", \"nodes\": [");
  absl::StatusOr<Case> c = LoadCase(path);
  ASSERT_FALSE(c.ok());
  EXPECT_EQ(c.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(std::string(c.status().message()).find(path), std::string::npos) << c.status();
  EXPECT_NE(std::string(c.status().message()).find("invalid JSON"), std::string::npos) << c.status();
}

TEST(ConformCaseTest, HostileNumbersAndNestingAreRefused) {
  // A score past int64 used to wrap to -1.
  auto c = DecodeCaseText(R"({"name":"n","plugins":["ImageLocality"],"nodes":[{"metadata":{"name":"n1"}}],"pod":{},)"
                          R"("expect":{"score":{"n1":18446744073709551615},"scoreStage":"raw"}})",
                          "huge.json");
  ASSERT_FALSE(c.ok());
  EXPECT_NE(c.status().message().find("expected an integer score, got 18446744073709551615"), std::string_view::npos)
      << c.status();
  // Plugin args nested 100,000 deep overflowed the stack.
  const std::string deep = R"({"name":"deep","plugins":["NodeName"],"profile":{"pluginConfig":[{"name":"NodeName","args":{"a":)" +
                           std::string(100000, '[') + std::string(100000, ']') + "}}]}}";
  c = DecodeCaseText(deep, "deep.json");
  ASSERT_FALSE(c.ok());
  EXPECT_NE(c.status().message().find("deep.json: JSON nested deeper than 256 levels"), std::string_view::npos) << c.status();
}

TEST(ConformCaseTest, MissingFileIsNotFound) {
  absl::StatusOr<Case> c = LoadCase("/nonexistent/kplace/case.json");
  ASSERT_FALSE(c.ok());
  EXPECT_EQ(c.status().code(), absl::StatusCode::kNotFound);
}

TEST(ConformCaseTest, BadQuantityNamesFileAndField) {
  json doc = GoodCase();
  doc["nodes"][1]["status"] = {{"allocatable", {{"memory", "12 GB"}}}};
  absl::StatusOr<Case> c = DecodeCase(doc, "cases/q.json");
  ASSERT_FALSE(c.ok());
  std::string msg(c.status().message());
  EXPECT_NE(msg.find("cases/q.json"), std::string::npos) << msg;
  EXPECT_NE(msg.find("nodes[1]"), std::string::npos) << msg;
  EXPECT_NE(msg.find("node2"), std::string::npos) << msg;
  EXPECT_NE(msg.find("status.allocatable.memory"), std::string::npos) << msg;
  EXPECT_NE(msg.find("12 GB"), std::string::npos) << msg;
}

TEST(ConformCaseTest, RejectsBadFieldsByName) {
  struct Bad {
    const char* what;
    std::function<void(json&)> edit;
    const char* field;
  };
  const Bad cases[] = {
      {"unknown code", [](json& d) { d["expect"]["preScore"]["code"] = "Fine"; }, "expect.preScore.code"},
      {"unknown node", [](json& d) { d["expect"]["filter"]["node9"] = {{"code", "Success"}}; }, "expect.filter"},
      {"score stage", [](json& d) { d["expect"]["scoreStage"] = "final"; }, "expect.scoreStage"},
      {"no stage", [](json& d) { d["expect"].erase("scoreStage"); }, "expect.scoreStage"},
      {"score type", [](json& d) { d["expect"]["score"]["node1"] = "high"; }, "expect.score.node1"},
      {"unknown expectation", [](json& d) { d["expect"]["postFilter"] = json::object(); }, "expect.postFilter"},
      {"plugins", [](json& d) { d["plugins"] = "all"; }, "plugins"},
      {"gate", [](json& d) { d["featureGates"]["X"] = "on"; }, "featureGates.X"},
      {"objects", [](json& d) { d["objects"]["deployments"] = json::array(); }, "objects.deployments"},
      {"no pod", [](json& d) { d.erase("pod"); }, "pod"},
      {"pod field", [](json& d) { d["pods"][0]["spec"]["containers"] = "c"; }, "pods[0]"},
      {"node name", [](json& d) { d["nodes"][0]["metadata"].erase("name"); }, "nodes[0]"},
      {"duplicate node", [](json& d) { d["nodes"][1]["metadata"]["name"] = "node1"; }, "nodes"},
  };
  for (const Bad& b : cases) {
    json doc = GoodCase();
    b.edit(doc);
    absl::StatusOr<Case> c = DecodeCase(doc, "bad.json");
    ASSERT_FALSE(c.ok()) << b.what;
    std::string msg(c.status().message());
    EXPECT_EQ(msg.rfind("bad.json: ", 0), 0u) << b.what << ": " << msg;
    EXPECT_NE(msg.find(b.field), std::string::npos) << b.what << ": " << msg;
  }
}

TEST(ConformCaseTest, DecodesPreemptionCases) {
  json doc = GoodCase();
  doc["entry"] = "PostFilter";
  doc["plugins"] = json::array();
  doc["filterStatuses"] = json::parse(R"({"nodes": {"node1": {"code": "Unschedulable", "reasons": ["Insufficient cpu"]}},
                                          "absent": {"code": "Unschedulable"}})");
  doc["dryRun"] = json::parse(R"({"offset": 4, "parallelism": null})");
  doc["extenders"] = json::parse(R"([{"name": "E", "preemption": "keepNode1", "ignorable": true, "interested": false}])");
  doc["objects"]["podDisruptionBudgets"] = json::parse(
      R"([{"metadata": {"name": "b", "namespace": "ns1"}, "spec": {"selector": {"matchLabels": {"a": "b"}}},
           "status": {"disruptionsAllowed": 1}}])");
  doc["expect"] = json::parse(R"({
    "postFilter": {"code": "Success", "nominatedNodeName": "node1", "message": "preemption: x", "victims": ["ns1/p2", "ns1/p1"]},
    "candidates": {"node1": {"victims": ["ns1/p1"], "numPDBViolations": 1}},
    "filterCalls": 3, "selectedNode": ["node2", "node1"], "eligible": false, "potentialNodes": ["node1"],
    "preEnqueue": {"code": "UnschedulableAndUnresolvable", "message": "waiting"}
  })");
  absl::StatusOr<Case> c = DecodeCase(doc, "pre.json");
  ASSERT_TRUE(c.ok()) << c.status();
  ASSERT_TRUE(c->preemption.has_value());
  const PreemptionInput& in = *c->preemption;
  EXPECT_EQ(in.entry, "PostFilter");
  EXPECT_EQ(in.filter_statuses.at("node1").reasons, std::vector<std::string>{"Insufficient cpu"});
  EXPECT_EQ(in.absent.code, Code::kUnschedulable);
  EXPECT_EQ(in.offset, 4);
  EXPECT_FALSE(in.parallelism.has_value());
  ASSERT_EQ(in.extenders.size(), 1u);
  EXPECT_TRUE(in.extenders[0].ignorable);
  EXPECT_FALSE(in.extenders[0].interested);
  ASSERT_EQ(c->objects.pdbs.size(), 1u);
  EXPECT_EQ(c->objects.pdbs[0].disruptions_allowed, 1);
  const Expectations& e = c->expect;
  ASSERT_TRUE(e.post_filter.has_value());
  EXPECT_EQ(e.post_filter->code, Code::kSuccess);
  EXPECT_TRUE(e.post_filter->has_result);
  EXPECT_EQ(e.post_filter->victims, (std::vector<std::string>{"ns1/p1", "ns1/p2"}));
  EXPECT_EQ(e.candidates->at("node1").num_pdb_violations, 1);
  EXPECT_EQ(e.filter_calls, 3);
  EXPECT_EQ(e.selected_node, (std::vector<std::string>{"node1", "node2"}));
  EXPECT_EQ(e.eligible, false);
  EXPECT_EQ(e.pre_enqueue->message, "waiting");

  json bad = doc;
  bad["entry"] = "Preempt";
  EXPECT_NE(std::string(DecodeCase(bad, "pre.json").status().message()).find("entry: unknown entry"), std::string::npos);
  bad = doc;
  bad["expect"]["candidates"] = json::parse(R"({"node9": {}})");
  EXPECT_NE(std::string(DecodeCase(bad, "pre.json").status().message()).find("node \"node9\" is not in nodes"),
            std::string::npos);
  bad = GoodCase();  // preemption expectations need an entry
  bad["expect"]["eligible"] = true;
  EXPECT_NE(std::string(DecodeCase(bad, "pre.json").status().message()).find("expect.eligible: unknown expectation"),
            std::string::npos);
}

json SequenceCase() {
  return json::parse(R"({
    "name": "batching/test", "source": "derived from batch.go", "plugins": "default",
    "profile": {"pluginConfig": [{"name": "PodTopologySpread", "args": {"defaultingType": "List", "defaultConstraints": []}}],
                "plugins": {"filter": {"enabled": [{"name": "test:NoSignFilter"}]}}},
    "additionalProfiles": [{"schedulerName": "other"}],
    "nodes": [{"metadata": {"name": "n1"}, "status": {"allocatable": {"cpu": "4", "memory": "4Gi", "pods": "10"}}}],
    "existingPods": [{"metadata": {"name": "waiting"}, "spec": {"containers": [{"name": "c"}]},
                      "status": {"nominatedNodeName": "n1"}}],
    "pods": [{"metadata": {"name": "a"}, "spec": {"containers": [{"name": "c"}]}},
             {"metadata": {"name": "b"}, "spec": {"schedulerName": "other", "containers": [{"name": "c"}]}}],
    "batchAgeExceededBefore": [1],
    "expect": {"placements": [{"pod": "a", "node": "n1"}, {"pod": "b", "node": null, "message": "0/1 nodes are available."}],
               "hinted": [false, null]}
  })");
}

TEST(ConformCaseTest, DecodesSequenceCases) {
  absl::StatusOr<Case> c = DecodeCase(SequenceCase(), "seq.json");
  ASSERT_TRUE(c.ok()) << c.status();
  ASSERT_TRUE(c->sequence.has_value());
  const SequenceInput& q = *c->sequence;
  ASSERT_EQ(q.config.profiles.size(), 2u);
  EXPECT_EQ(q.config.profiles[0].scheduler_name, "default-scheduler");  // absent: the default
  EXPECT_EQ(q.config.profiles[0].args.pod_topology_spread.defaulting_type, "List");
  EXPECT_EQ(q.unsigned_profiles, (std::vector<std::string>{"default-scheduler"}));  // the stand-in, taken out
  EXPECT_EQ(q.pods.size(), 2u);
  EXPECT_EQ(c->objects.pods.size(), 1u);
  EXPECT_EQ(q.batch_age_exceeded_before, (std::vector<size_t>{1}));
  EXPECT_EQ(q.placements[0].node, std::optional<std::string>("n1"));
  EXPECT_FALSE(q.placements[1].node.has_value());
  EXPECT_EQ(q.placements[1].message, std::optional<std::string>("0/1 nodes are available."));
  ASSERT_EQ(q.hinted.size(), 2u);
  EXPECT_EQ(q.hinted[0], std::optional<bool>(false));
  EXPECT_FALSE(q.hinted[1].has_value());

  auto error = [](json doc) { return std::string(DecodeCase(doc, "seq.json").status().message()); };
  json bad = SequenceCase();
  bad["expect"]["placements"].erase(1);
  EXPECT_NE(error(bad).find("expect.placements: expected one entry per pod (2)"), std::string::npos) << error(bad);
  bad = SequenceCase();
  bad["expect"]["placements"][1]["pod"] = "c";
  EXPECT_NE(error(bad).find("expect.placements[1].pod: expected \"b\""), std::string::npos) << error(bad);
  bad = SequenceCase();
  bad["batchAgeExceededBefore"] = {7};
  EXPECT_NE(error(bad).find("batchAgeExceededBefore[0]"), std::string::npos) << error(bad);
  bad = SequenceCase();
  bad["expect"]["placements"][0]["node"] = "nowhere";
  EXPECT_NE(error(bad).find("node \"nowhere\" is not in nodes"), std::string::npos) << error(bad);
}

// Every shipped case must at least decode; a failure here is a decoder gap (or a
// plugin-args decoder rejecting what upstream accepts), not a plugin bug.
TEST(ConformCaseTest, EverySharedCaseLoads) {
  fs::path root = fs::path(KPLACE_SHARED_DIR) / "conformance";
  if (!fs::is_directory(root)) GTEST_SKIP() << root << " not present";
  int loaded = 0;
  for (const auto& entry : fs::recursive_directory_iterator(root)) {
    if (entry.path().extension() != ".json") continue;
    absl::StatusOr<Case> c = LoadCase(entry.path().string());
    EXPECT_TRUE(c.ok()) << c.status();
    loaded += c.ok();
  }
  EXPECT_GT(loaded, 0);
}

}  // namespace
}  // namespace kplace::conform
