#include "kplace/conform/runner.h"

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <memory>
#include <string>
#include <vector>

#include <unistd.h>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "kplace/cli/commands.h"
#include "kplace/engine/plugin.h"
#include "kplace/reference/plugin.h"

namespace kplace::conform {
namespace {

using json = nlohmann::json;
namespace fs = std::filesystem;

// ---- a made-up reference plugin, to drive the runner end to end ------------------

// Node "nodeK" (K a digit): Filter rejects odd K; Score is 10*K plus its pod count.
// The pod's labels steer PreFilter ("skip", "only": a node name) and PreScore ("broken").
class RejectOddNodes final : public reference::Plugin {
 public:
  const char* Name() const override { return "TestOnlyRejectOddNodes"; }
  unsigned ExtensionPoints() const override {
    return kPreFilterPoint | kFilterPoint | kPreScorePoint | kScorePoint | kNormalizeScorePoint;
  }
  PluginStatus PreFilter(reference::CycleState&, const Pod& pod, const reference::ClusterState&,
                         reference::NodeNameSet* nodes) override {
    if (pod.meta.labels.count("skip")) return PluginStatus::Skip();
    auto only = pod.meta.labels.find("only");
    if (only != pod.meta.labels.end()) *nodes = std::set<std::string>{only->second};
    return PluginStatus::Success();
  }
  PluginStatus Filter(reference::CycleState&, const Pod&, const reference::NodeInfo& info,
                      const reference::ClusterState&) override {
    if (Digit(info) % 2 == 1) return PluginStatus::Make(Code::kUnschedulable, "node(s) are odd");
    return PluginStatus::Success();
  }
  PluginStatus PreScore(reference::CycleState&, const Pod& pod, const std::vector<const reference::NodeInfo*>&,
                        const reference::ClusterState&) override {
    if (pod.meta.labels.count("broken")) return PluginStatus::Error("broken pod");
    return PluginStatus::Success();
  }
  PluginStatus Score(reference::CycleState&, const Pod&, const reference::NodeInfo& info,
                     const reference::ClusterState&, int64_t* score) override {
    *score = 10 * Digit(info) + static_cast<int64_t>(info.pods.size());
    return PluginStatus::Success();
  }
  PluginStatus NormalizeScore(reference::CycleState&, const Pod&, std::vector<int64_t>& scores) override {
    reference::DefaultNormalizeScore(scores, /*reverse=*/false);
    return PluginStatus::Success();
  }

 private:
  static int64_t Digit(const reference::NodeInfo& info) { return info.node->meta.name.back() - '0'; }
};

const bool kRegistered [[maybe_unused]] = reference::RegisterPlugin(
    "TestOnlyRejectOddNodes",
    [](const PluginArgs&, const FeatureGates&) -> absl::StatusOr<std::unique_ptr<reference::Plugin>> {
      return std::make_unique<RejectOddNodes>();
    });

json NodeJson(const std::string& name) {
  return {{"metadata", {{"name", name}}}, {"status", {{"allocatable", {{"pods", "10"}}}}}};
}

// Four nodes, one pod bound to node2; every expectation matches the fake plugin.
json FakeCase() {
  json doc;
  doc["name"] = "fake/all phases";
  doc["source"] = "tests/conform/runner_test.cc";
  doc["plugins"] = {"TestOnlyRejectOddNodes"};
  doc["nodes"] = {NodeJson("node1"), NodeJson("node2"), NodeJson("node3"), NodeJson("node4")};
  doc["pods"] = {{{"metadata", {{"name", "bound"}}}, {"spec", {{"nodeName", "node2"}}}}};
  doc["pod"] = {{"metadata", {{"name", "incoming"}, {"labels", json::object()}}}};
  doc["expect"] = json::parse(R"({
    "preFilter": {"code": "Success", "reasons": [], "nodeNames": null},
    "filter": {"node1": {"code": "Unschedulable", "reasons": ["node(s) are odd"]},
               "node2": {"code": "Success", "reasons": []},
               "node3": {"code": "Unschedulable"},
               "node4": {"code": "Success"}},
    "preScore": {"code": "Success"},
    "score": {"node1": 10, "node2": 21, "node3": 30, "node4": 40},
    "scoreStage": "raw"
  })");
  return doc;
}

Case MustDecode(const json& doc) {
  absl::StatusOr<Case> c = DecodeCase(doc, "fake.json");
  EXPECT_TRUE(c.ok()) << c.status();
  return c.ok() ? std::move(*c) : Case{};
}

CaseResult RunOnReference(const json& doc) {
  Case c = MustDecode(doc);
  RunOptions options;
  options.reference = true;
  return RunCase(c, options);
}

std::string Diffs(const CaseResult& r) { return r.Summary(/*all_diffs=*/true); }

// ---- end to end on the reference -------------------------------------------------

TEST(ConformRunnerTest, FakePluginPassesEveryPhase) {
  CaseResult r = RunOnReference(FakeCase());
  EXPECT_EQ(r.outcome, Outcome::kPass) << Diffs(r);
  EXPECT_EQ(r.Summary(), "ok");
}

TEST(ConformRunnerTest, NormalizesOverTheListedNodesOnly) {
  json doc = FakeCase();
  // Scored over node1 and node2 only: max 21, so node1 = 100*10/21 = 47.
  doc["expect"]["score"] = {{"node1", 47}, {"node2", 100}};
  doc["expect"]["scoreStage"] = "normalized";
  CaseResult r = RunOnReference(doc);
  EXPECT_EQ(r.outcome, Outcome::kPass) << Diffs(r);

  doc["expect"]["scoreStage"] = "weighted";  // single plugin, weight 1
  r = RunOnReference(doc);
  EXPECT_EQ(r.outcome, Outcome::kPass) << Diffs(r);
}

TEST(ConformRunnerTest, FiltersEveryNodeAfterPreFilterSkip) {
  json doc = FakeCase();
  doc["pod"]["metadata"]["labels"]["skip"] = "yes";
  doc["expect"]["preFilter"] = {{"code", "Skip"}};
  CaseResult r = RunOnReference(doc);
  EXPECT_EQ(r.outcome, Outcome::kPass) << Diffs(r);
}

TEST(ConformRunnerTest, ComparesPreFilterNodeNames) {
  json doc = FakeCase();
  doc["pod"]["metadata"]["labels"]["only"] = "node2";
  CaseResult r = RunOnReference(doc);  // expects null: all nodes
  ASSERT_EQ(r.outcome, Outcome::kFail);
  EXPECT_EQ(Diffs(r), "preFilter nodeNames: expected all nodes, got [\"node2\"]");

  doc["expect"]["preFilter"]["nodeNames"] = {"node2"};
  r = RunOnReference(doc);
  EXPECT_EQ(r.outcome, Outcome::kPass) << Diffs(r);
}

TEST(ConformRunnerTest, ReportsEachMismatch) {
  json doc = FakeCase();
  doc["expect"]["filter"]["node2"] = {{"code", "UnschedulableAndUnresolvable"}, {"reasons", {"nope"}}};
  doc["expect"]["filter"]["node1"]["reasons"] = {"node(s) are even"};
  doc["expect"]["score"]["node4"] = 41;
  CaseResult r = RunOnReference(doc);
  ASSERT_EQ(r.outcome, Outcome::kFail);
  ASSERT_EQ(r.diffs.size(), 3u) << Diffs(r);
  EXPECT_EQ(r.diffs[0], "filter node1 reasons: expected [\"node(s) are even\"], got [\"node(s) are odd\"]");
  EXPECT_EQ(r.diffs[1], "filter node2: expected UnschedulableAndUnresolvable[\"nope\"], got Success");
  EXPECT_EQ(r.diffs[2], "score[raw] node4: expected 41, got 40");
  EXPECT_EQ(r.Summary(), r.diffs[0] + " (+2 more)");
}

TEST(ConformRunnerTest, PreScoreErrorLeavesNoScores) {
  json doc = FakeCase();
  doc["pod"]["metadata"]["labels"]["broken"] = "yes";
  doc["expect"]["score"] = {{"node4", 40}};
  CaseResult r = RunOnReference(doc);
  ASSERT_EQ(r.outcome, Outcome::kFail);
  ASSERT_EQ(r.diffs.size(), 2u) << Diffs(r);
  EXPECT_EQ(r.diffs[0], "preScore: expected Success, got Error[\"broken pod\"]");
  EXPECT_EQ(r.diffs[1],
            "score[raw] node4: expected 40, got no score "
            "(PreScore TestOnlyRejectOddNodes returned Error[\"broken pod\"])");

  doc["expect"].erase("score");
  doc["expect"].erase("scoreStage");
  doc["expect"]["preScore"] = {{"code", "Error"}, {"reasons", {"broken pod"}}};
  r = RunOnReference(doc);
  EXPECT_EQ(r.outcome, Outcome::kPass) << Diffs(r);
}

TEST(ConformRunnerTest, UnregisteredPluginIsSkipped) {
  json doc = FakeCase();
  doc["plugins"] = {"TestOnlyNoSuchPlugin"};
  CaseResult r = RunOnReference(doc);
  EXPECT_EQ(r.outcome, Outcome::kSkipped);
  EXPECT_EQ(r.Summary(), "skipped: plugin TestOnlyNoSuchPlugin is not registered on the reference");

  // The engine knows only in-tree plugins; the fake one is skipped there too.
  Case c = MustDecode(FakeCase());
  r = RunCase(c, RunOptions{});
  EXPECT_EQ(r.outcome, Outcome::kSkipped) << r.Summary();
}

// A profile of the fake plugin alone, weight 2, for whole cycles.
Profile FakeProfile() {
  Profile p;
  p.pre_filter = p.filter = p.pre_score = {"TestOnlyRejectOddNodes"};
  p.score = {{"TestOnlyRejectOddNodes", 2}};
  return p;
}

TEST(ConformRunnerTest, CycleScoresFeasibleNodesAndSelects) {
  Case c = MustDecode(FakeCase());
  absl::StatusOr<Observed> got = ObserveReferenceCycle(c, FakeProfile());
  ASSERT_TRUE(got.ok()) << got.status();
  EXPECT_EQ(got->cycle_error, "");
  // node2 and node4 pass Filter; raw 21 and 40 normalize over them to 52 and 100.
  const std::map<std::string, int64_t> normalized{{"node2", 52}, {"node4", 100}};
  const std::map<std::string, int64_t> total{{"node2", 104}, {"node4", 200}};
  EXPECT_EQ(got->plugin_scores.at("TestOnlyRejectOddNodes"), normalized);
  EXPECT_EQ(got->final_score, total);
  EXPECT_EQ(got->selected, "node4");
}

TEST(ConformRunnerTest, CycleFollowsFrameworkSemantics) {
  json doc = FakeCase();
  doc["pod"]["metadata"]["labels"]["only"] = "node2";  // PreFilter narrows to node2
  absl::StatusOr<Observed> got = ObserveReferenceCycle(MustDecode(doc), FakeProfile());
  ASSERT_TRUE(got.ok()) << got.status();
  EXPECT_EQ(got->selected, "node2");
  EXPECT_EQ(got->final_score.size(), 1u);

  doc = FakeCase();
  doc["pod"]["metadata"]["labels"]["skip"] = "yes";  // PreFilter Skip: Filter is skipped
  got = ObserveReferenceCycle(MustDecode(doc), FakeProfile());
  ASSERT_TRUE(got.ok()) << got.status();
  EXPECT_EQ(got->final_score.size(), 4u);
  EXPECT_EQ(got->selected, "node4");

  doc = FakeCase();
  doc["pod"]["metadata"]["labels"]["only"] = "node1";  // the only candidate is odd
  got = ObserveReferenceCycle(MustDecode(doc), FakeProfile());
  ASSERT_TRUE(got.ok()) << got.status();
  EXPECT_EQ(got->selected, "");
  EXPECT_EQ(got->cycle_error, "no node passed Filter");

  doc = FakeCase();
  doc["pod"]["metadata"]["labels"]["broken"] = "yes";
  got = ObserveReferenceCycle(MustDecode(doc), FakeProfile());
  ASSERT_TRUE(got.ok()) << got.status();
  EXPECT_EQ(got->cycle_error, "PreScore TestOnlyRejectOddNodes returned Error[\"broken pod\"]");
}

// The engine path (PreFilterEach, FilterEach + Verdict, Score at each stage) reports
// what the reference reports, on a real plugin when both have it.
TEST(ConformRunnerTest, EngineObservesWhatTheReferenceDoes) {
  const std::vector<std::string> ref = reference::RegisteredPlugins();
  const std::vector<std::string> omp = engine::RegisteredPlugins(engine::Backend::kOmp);
  const std::string plugin = "NodeResourcesFit";
  if (!std::binary_search(ref.begin(), ref.end(), plugin) || !std::binary_search(omp.begin(), omp.end(), plugin)) {
    GTEST_SKIP() << plugin << " is not registered on both";
  }
  json doc;
  doc["name"] = "fit/engine vs reference";
  doc["plugins"] = {plugin};
  doc["nodes"] = json::array();
  for (int i = 0; i < 3; ++i) {
    json n = NodeJson("node" + std::to_string(i));
    n["status"]["allocatable"] = {{"cpu", std::to_string(i + 1)}, {"memory", "4Gi"}, {"pods", "10"}};
    doc["nodes"].push_back(n);
  }
  json requests = {{"cpu", "1500m"}, {"memory", "1Gi"}};
  doc["pods"] = {{{"metadata", {{"name", "bound"}}},
                  {"spec", {{"nodeName", "node2"}, {"containers", {{{"name", "c"}, {"resources", {{"requests", requests}}}}}}}}}};
  doc["pod"] = {{"metadata", {{"name", "incoming"}}},
                {"spec", {{"containers", {{{"name", "c"}, {"resources", {{"requests", requests}}}}}}}}};
  doc["expect"] = json::parse(R"({"preFilter": {"code": "Success"}, "filter": {"node0": {"code": "Success"}},
                                  "preScore": {"code": "Success"}, "score": {"node1": 0, "node2": 0}})");
  for (const char* stage : {"raw", "normalized", "weighted"}) {
    doc["expect"]["scoreStage"] = stage;
    Case c = MustDecode(doc);
    absl::StatusOr<Observed> want = ObserveReference(c);
    absl::StatusOr<Observed> got = ObserveEngine(c, engine::Backend::kOmp);
    ASSERT_TRUE(want.ok()) << want.status();
    ASSERT_TRUE(got.ok()) << got.status();
    EXPECT_EQ(got->pre_filter, want->pre_filter) << stage;
    EXPECT_EQ(got->pre_filter_restricts, want->pre_filter_restricts);
    EXPECT_EQ(got->filter, want->filter) << stage;
    EXPECT_TRUE(got->filter.at("node0").IsRejected());  // 1 cpu < 1500m
    EXPECT_EQ(got->pre_score, want->pre_score) << stage;
    EXPECT_EQ(got->score, want->score) << stage;
    EXPECT_EQ(got->score.size(), 2u) << stage;  // only the listed nodes are scored
    EXPECT_EQ(got->score_error, want->score_error) << stage;
  }
}

// ---- Compare on its own ------------------------------------------------------------

TEST(ConformCompareTest, CodeMismatch) {
  Case c = MustDecode(FakeCase());
  Observed got;
  got.pre_filter = PluginStatus::Make(Code::kUnschedulableAndUnresolvable, "pod affinity terms conflict");
  got.filter["node1"] = PluginStatus::Make(Code::kUnschedulable, "node(s) are odd");
  got.filter["node2"] = PluginStatus::Success();
  got.filter["node3"] = PluginStatus::Make(Code::kUnschedulable, "anything");  // reasons not asserted
  got.filter["node4"] = PluginStatus::Success();
  got.score = {{"node1", 10}, {"node2", 21}, {"node3", 30}, {"node4", 40}};
  CaseResult r = Compare(c, got);
  ASSERT_EQ(r.outcome, Outcome::kFail);
  EXPECT_EQ(Diffs(r), "preFilter: expected Success, got UnschedulableAndUnresolvable[\"pod affinity terms conflict\"]");
}

TEST(ConformCompareTest, MissingVerdictAndScore) {
  Case c = MustDecode(FakeCase());
  Observed got;
  got.filter["node1"] = PluginStatus::Make(Code::kUnschedulable, "node(s) are odd");
  got.score_error = "Score of X on node1 returned Error";
  CaseResult r = Compare(c, got);
  ASSERT_EQ(r.outcome, Outcome::kFail);
  ASSERT_EQ(r.diffs.size(), 7u) << Diffs(r);
  EXPECT_EQ(r.diffs[0], "filter node2: expected Success, got no verdict");
  EXPECT_EQ(r.diffs[3], "score[raw] node1: expected 10, got no score (Score of X on node1 returned Error)");
}

TEST(ConformCompareTest, NodeResourcesFitReasonsAreAMultiset) {
  json doc = FakeCase();
  doc["expect"] = json::parse(
      R"({"filter": {"node1": {"code": "Unschedulable", "reasons": ["Insufficient cpu", "Insufficient example.com/a", "Insufficient example.com/b"]}}})");
  Observed got;
  got.filter["node1"] = {Code::kUnschedulable, {"Insufficient cpu", "Insufficient example.com/b", "Insufficient example.com/a"}};

  doc["plugins"] = {"NodeResourcesFit"};
  EXPECT_EQ(Compare(MustDecode(doc), got).outcome, Outcome::kPass);

  doc["plugins"] = {"TaintToleration"};  // elsewhere the order is upstream's
  CaseResult r = Compare(MustDecode(doc), got);
  ASSERT_EQ(r.outcome, Outcome::kFail);
  EXPECT_EQ(Diffs(r),
            "filter node1 reasons: expected [\"Insufficient cpu\", \"Insufficient example.com/a\", "
            "\"Insufficient example.com/b\"], got [\"Insufficient cpu\", \"Insufficient example.com/b\", "
            "\"Insufficient example.com/a\"]");

  got.filter["node1"].reasons.pop_back();  // a missing reason is never equal
  doc["plugins"] = {"NodeResourcesFit"};
  EXPECT_EQ(Compare(MustDecode(doc), got).outcome, Outcome::kFail);
}

TEST(ConformCompareTest, PipelineScoresAndSelection) {
  json doc = FakeCase();
  doc["plugins"] = "default";
  doc["expect"] = json::parse(R"({
    "pluginScores": {"ImageLocality": {"node1": 100, "node2": 0}},
    "finalScore": {"node1": 602, "node2": 627},
    "selected": "node2"
  })");
  Case c = MustDecode(doc);
  Observed got;
  got.plugin_scores["ImageLocality"] = {{"node1", 100}, {"node2", 0}};
  got.final_score = {{"node1", 602}, {"node2", 627}};
  got.selected = "node2";
  EXPECT_EQ(Compare(c, got).outcome, Outcome::kPass);

  got.final_score["node1"] = 700;
  got.selected = "node1";
  got.plugin_scores.erase("ImageLocality");
  CaseResult r = Compare(c, got);
  ASSERT_EQ(r.outcome, Outcome::kFail);
  ASSERT_EQ(r.diffs.size(), 3u) << Diffs(r);
  EXPECT_EQ(r.diffs[0], "pluginScores ImageLocality: expected scores, got none (not a Score plugin of the profile)");
  EXPECT_EQ(r.diffs[1], "finalScore node1: expected 602, got 700");
  EXPECT_EQ(r.diffs[2], "selected: expected node2, got node1");

  Observed none;
  none.cycle_error = "no node passed Filter";
  r = Compare(c, none);
  EXPECT_EQ(r.diffs.back(), "selected: expected node2, got none (no node passed Filter)");
}

// ---- the command line ---------------------------------------------------------------

class ConformCliTest : public ::testing::Test {
 protected:
  void SetUp() override {
    // Unique per process and test: ctest runs tests in parallel processes.
    dir_ = fs::path(::testing::TempDir()) /
           ("kplace_conform_cli_test-" + std::to_string(::getpid()) + "-" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir_);
    fs::create_directories(dir_ / "fake" / "deeper");
  }
  void TearDown() override { fs::remove_all(dir_); }

  std::string Write(const std::string& rel, const std::string& text) {
    fs::path p = dir_ / rel;
    std::ofstream(p) << text;
    return p.string();
  }

  // Runs `kplace conform ARGS...`, returning the exit status; stdout goes to `out`.
  int Run(std::vector<std::string> args, std::string* out) {
    args.insert(args.begin(), "conform");
    std::vector<char*> argv;
    for (std::string& a : args) argv.push_back(a.data());
    ::testing::internal::CaptureStdout();
    ::testing::internal::CaptureStderr();
    int rc = kplace::cli::RunConform(static_cast<int>(argv.size()), argv.data());
    *out = ::testing::internal::GetCapturedStdout();
    ::testing::internal::GetCapturedStderr();
    return rc;
  }

  fs::path dir_;
};

TEST_F(ConformCliTest, CountsPassFailSkipAndWaivers) {
  json good = FakeCase();
  json bad = FakeCase();
  bad["name"] = "fake/bad score";
  bad["expect"]["score"]["node4"] = 1;
  json missing = FakeCase();
  missing["name"] = "fake/missing plugin";
  missing["plugins"] = {"TestOnlyNoSuchPlugin"};
  Write("fake/a-good.json", good.dump());
  std::string bad_path = Write("fake/deeper/b-bad.json", bad.dump());
  std::string missing_path = Write("fake/c-missing.json", missing.dump());
  Write("fake/README.md", "not a case");
  std::string broken_path = Write("fake/d-broken.json", "{");

  std::string out;
  EXPECT_EQ(Run({dir_.string() + "/fake", "--reference"}, &out), 1);
  EXPECT_NE(out.find("FAIL " + bad_path + ": fake/bad score: score[raw] node4: expected 1, got 40\n"),
            std::string::npos) << out;
  EXPECT_NE(out.find("FAIL " + missing_path +
                     ": fake/missing plugin: skipped: plugin TestOnlyNoSuchPlugin is not registered on the reference\n"),
            std::string::npos) << out;
  EXPECT_NE(out.find("FAIL " + broken_path + ": d-broken: cannot load: "), std::string::npos) << out;
  EXPECT_EQ(out.substr(out.rfind('\n', out.size() - 2) + 1), "1 passed, 3 failed, 0 skipped\n") << out;

  // Waivers name a file by its path tail or a case by its name.
  std::string waivers = Write("waivers.txt",
                              "# header\n\nfake/deeper/b-bad.json # evidence: test\n"
                              "  fake/missing plugin   # evidence: test\nd-broken.json\n");
  EXPECT_EQ(Run({dir_.string() + "/fake", "--reference", "--waivers", waivers}, &out), 0);
  EXPECT_NE(out.find("WAIVED " + bad_path + ": fake/bad score: "), std::string::npos) << out;
  EXPECT_EQ(out.substr(out.rfind('\n', out.size() - 2) + 1), "1 passed, 0 failed, 3 skipped\n") << out;

  // A single file, verbose.
  EXPECT_EQ(Run({dir_.string() + "/fake/a-good.json", "--reference", "--verbose"}, &out), 0);
  EXPECT_EQ(out, "PASS " + dir_.string() + "/fake/a-good.json: fake/all phases\n1 passed, 0 failed, 0 skipped\n");
}

TEST_F(ConformCliTest, BadFlagsExitTwo) {
  std::string out;
  EXPECT_EQ(Run({dir_.string(), "--backend=tpu"}, &out), 2);
  EXPECT_EQ(Run({dir_.string(), "--frobnicate"}, &out), 2);
  EXPECT_EQ(Run({}, &out), 2);
  EXPECT_EQ(Run({dir_.string() + "/nonexistent"}, &out), 2);
  EXPECT_EQ(Run({dir_.string(), "--waivers"}, &out), 2);
  EXPECT_EQ(Run({dir_.string(), "--waivers", dir_.string() + "/none.txt"}, &out), 2);
  EXPECT_EQ(Run({"--help"}, &out), 0);
  EXPECT_NE(out.find("usage: kplace conform"), std::string::npos) << out;
}

}  // namespace
}  // namespace kplace::conform

namespace kplace::conform {
namespace {

// The own batching cases discriminate: each passes with OpportunisticBatching as upstream
// has it, and the ones whose pods take hints fail with the gate off.
TEST(ConformRunnerTest, BatchingSequenceCasesNeedTheHints) {
  const std::string dir = std::string(KPLACE_SOURCE_DIR) + "/tests/conformance/batching/";
  absl::StatusOr<Case> c = LoadCase(dir + "011-derived-host-port-ties-go-heap-order.json");
  ASSERT_TRUE(c.ok()) << c.status();
  for (bool reference : {false, true}) {
    RunOptions run;
    run.reference = reference;
    EXPECT_EQ(RunCase(*c, run).outcome, Outcome::kPass) << RunCase(*c, run).Summary(true);
    Case off = *c;
    off.gates.overrides["OpportunisticBatching"] = false;
    EXPECT_EQ(RunCase(off, run).outcome, Outcome::kFail);
  }
}

}  // namespace
}  // namespace kplace::conform
