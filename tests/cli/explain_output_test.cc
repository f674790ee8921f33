// `kplace explain`'s outputs for a person and for tools: the table, klog's -v=10 score lines,
// kube-scheduler-simulator's annotations and the PodScheduled condition on --output pods.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstring>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <regex>
#include <set>
#include <sstream>
#include <tuple>

#include "kplace/cli/cli.h"
#include "kplace/cli/explain_table.h"
#include "kplace/cli/klog.h"
#include "kplace/cycle/placement_json.h"

namespace kplace {
namespace {

using json = nlohmann::json;
namespace fs = std::filesystem;

constexpr char kPrefix[] = "kube-scheduler-simulator.sigs.k8s.io/";

// Four nodes for a 2-CPU pod: a and b fit alike (a tie), c is too small, d is tainted.
json SmallCluster() {
  json items = json::array();
  for (const auto& [name, cpu, tainted] :
       {std::tuple{"a", "4", false}, {"b", "4", false}, {"c", "1", false}, {"d", "4", true}}) {
    json node = {{"kind", "Node"},
                 {"metadata", {{"name", name}, {"labels", {{"kubernetes.io/hostname", name}}}}},
                 {"status", {{"allocatable", {{"cpu", cpu}, {"memory", "8Gi"}, {"pods", "110"}}}}}};
    if (tainted) node["spec"]["taints"] = json::array({{{"key", "gpu"}, {"value", "x"}, {"effect", "NoSchedule"}}});
    items.push_back(node);
  }
  return {{"apiVersion", "v1"}, {"kind", "List"}, {"items", items}};
}

json PendingPod(const std::string& name, const std::string& cpu, const json& spec_extra = json::object()) {
  json spec = {{"containers", json::array({{{"name", "c"}, {"resources", {{"requests", {{"cpu", cpu}}}}}}})}};
  spec.update(spec_extra);
  return {{"kind", "Pod"}, {"metadata", {{"name", name}, {"namespace", "default"}}}, {"spec", spec}};
}

class ExplainOutputTest : public ::testing::Test {
 protected:
  ExplainOutputTest() { fs::create_directories(dir_); }
  ~ExplainOutputTest() override { fs::remove_all(dir_); }

  std::string File(const std::string& name, const json& doc) {
    const std::string path = (dir_ / name).string();
    std::ofstream(path) << doc.dump();
    return path;
  }

  // `kplace explain` on `cluster` and `pods` plus `flags`; the output file's text in *out,
  // stderr in *err.
  int Explain(const json& cluster, const json& pods, std::vector<std::string> flags, std::string* out,
              std::string* err = nullptr) {
    const std::string out_path = (dir_ / "out").string();
    std::vector<std::string> args = {"kplace", "explain", "--output-file", out_path, "--cluster",
                                     File("cluster.json", cluster)};
    args.push_back("--pods");
    args.push_back(File("pods.json", {{"kind", "List"}, {"items", pods}}));
    args.insert(args.end(), flags.begin(), flags.end());
    std::vector<char*> argv;
    for (std::string& a : args) argv.push_back(a.data());
    ::testing::internal::CaptureStderr();
    const int rc = cli::Main(static_cast<int>(argv.size()), argv.data());
    const std::string captured = ::testing::internal::GetCapturedStderr();
    if (err) *err = captured;
    std::ifstream in(out_path);
    std::stringstream text;
    text << in.rdbuf();
    *out = text.str();
    return rc;
  }

  // A folder per test, removed after it.
  const fs::path dir_ = fs::temp_directory_path() / ("kplace-explain-" + std::to_string(::getpid()) + "-" +
                                                     ::testing::UnitTest::GetInstance()->current_test_info()->name());
};

std::vector<std::string> Lines(const std::string& text) {
  std::vector<std::string> lines;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) lines.push_back(line);
  return lines;
}

const std::string* LineWith(const std::vector<std::string>& lines, const std::string& needle) {
  for (const std::string& l : lines) {
    if (l.find(needle) != std::string::npos) return &l;
  }
  return nullptr;
}

TEST_F(ExplainOutputTest, TableListsScoresTieAndFilterSummary) {
  std::string text;
  ASSERT_EQ(Explain(SmallCluster(), json::array({PendingPod("web-0", "2"), PendingPod("huge", "64")}),
                    {"--output", "table", "--width", "0"}, &text),
            0);
  EXPECT_EQ(text.find('\x1b'), std::string::npos) << "no colour in a file";
  const std::vector<std::string> lines = Lines(text);
  ASSERT_GE(lines.size(), 8u) << text;
  EXPECT_EQ(lines[0], "default/web-0 -> a");
  EXPECT_NE(lines[1].find("tied with 1 other node; the tie-break heap"), std::string::npos) << lines[1];
  // Header: each shown plugin with its weight over raw/norm/wtd, then the total.
  const std::string& names = lines[2];
  const std::string& kinds = lines[3];
  for (const char* h : {"RANK", "NODE", "TaintToleration x3", "NodeResourcesFit x1", "TOTAL"}) {
    EXPECT_NE(names.find(h), std::string::npos) << h << " in " << names;
  }
  EXPECT_NE(kinds.find("raw  norm"), std::string::npos) << kinds;
  // Rows, in the profile's score order (TaintToleration raw 0, normalized 100, weighted
  // 300, NodeResourcesFit 73, VolumeBinding 0, DynamicResources 0, BalancedAllocation 62,
  // ImageLocality 0): a and b tie at 435.
  // VolumeBinding, DynamicResources and ImageLocality gave both 0: named under the table.
  const std::string scores = R"( +0 +100 +300 +73 +73 +73 +62 +62 +62 +435  )";
  const std::regex row_a("^ +1  a" + scores + "<- chosen by the tie-break$");
  const std::regex row_b("^ +2  b" + scores + "tie$");
  EXPECT_TRUE(std::regex_match(lines[4], row_a)) << lines[4];
  EXPECT_TRUE(std::regex_match(lines[5], row_b)) << lines[5];
  // Columns line up: totals end where TOTAL ends, TaintToleration's weighted scores where
  // its "wtd" does.
  const size_t total_end = names.find("TOTAL") + 5;
  EXPECT_EQ(lines[4].find("435") + 3, total_end);
  EXPECT_EQ(lines[5].find("435") + 3, total_end);
  EXPECT_EQ(lines[4].find("300") + 3, kinds.find("wtd") + 3);
  EXPECT_NE(LineWith(lines, "  0 on every listed node (--wide shows them): VolumeBinding, DynamicResources, ImageLocality"),
            nullptr)
      << text;
  for (const char* h : {"VolumeBinding", "ImageLocality"}) EXPECT_EQ(names.find(h), std::string::npos) << h;
  const std::string* skipped = LineWith(lines, "no score (PreScore skipped)");
  ASSERT_NE(skipped, nullptr);
  EXPECT_NE(skipped->find("NodeAffinity"), std::string::npos);
  // Filter summary: how many nodes each plugin rejected, and why.
  EXPECT_NE(LineWith(lines, "  filters: 4 nodes visited, 2 feasible, 2 rejected"), nullptr) << text;
  // With the amounts: the pod's request and the most any rejected node has free.
  EXPECT_NE(LineWith(lines, "    NodeResourcesFit  1 node  Insufficient cpu (1; requests 2, at most 1 free on c)"), nullptr) << text;
  EXPECT_NE(LineWith(lines, "    TaintToleration   1 node  node(s) had untolerated taint(s) (1)"), nullptr) << text;
  // The unplaced pod: upstream's message and a summary over all four nodes.
  EXPECT_NE(LineWith(lines, "default/huge: unschedulable"), nullptr) << text;
  EXPECT_NE(LineWith(lines, "  0/4 nodes are available: 1 node(s) had untolerated taint(s), 3 Insufficient cpu."),
            nullptr);
  // web-0 took 2 of a's 4 cpus: b has the most free.
  EXPECT_NE(LineWith(lines, "    NodeResourcesFit  3 nodes  Insufficient cpu (3; requests 64, at most 4 free on b)"), nullptr)
      << text;
  EXPECT_EQ(lines.back(), "2 pods: 1 scheduled, 1 unschedulable, 0 scheduling gated, 0 for another scheduler; 4 nodes");
}

TEST_F(ExplainOutputTest, TableTopAndRandomTieBreak) {
  std::string text;
  ASSERT_EQ(Explain(SmallCluster(), json::array({PendingPod("web-0", "2")}),
                    {"--output=table", "--top", "1", "--tie-break", "random"}, &text),
            0);
  const std::vector<std::string> lines = Lines(text);
  EXPECT_NE(lines[1].find("the tie-break random (upstream <= 1.34"), std::string::npos) << lines[1];
  EXPECT_EQ(LineWith(lines, "  tie"), nullptr);  // the other tied node is past --top 1
  EXPECT_NE(LineWith(lines, "  ... 1 more scored node (--top)"), nullptr) << text;
  EXPECT_EQ(Explain(SmallCluster(), json::array(), {"--output", "table", "--top", "0"}, &text), 2);
}

TEST_F(ExplainOutputTest, WideTableShowsEveryScorePlugin) {
  std::string text;
  ASSERT_EQ(Explain(SmallCluster(), json::array({PendingPod("web-0", "2")}), {"--output", "table", "--wide"}, &text), 0);
  const std::vector<std::string> lines = Lines(text);
  for (const char* h : {"VolumeBinding x1", "DynamicResources x1", "ImageLocality x1"}) {
    EXPECT_NE(lines[2].find(h), std::string::npos) << h << " in " << lines[2];
  }
  const std::regex row_a(R"(^ +1  a +0 +100 +300 +73 +73 +73 +0 +0 +0 +0 +0 +0 +62 +62 +62 +0 +0 +0 +435  <- chosen by the tie-break$)");
  EXPECT_TRUE(std::regex_match(lines[4], row_a)) << lines[4];
  EXPECT_EQ(LineWith(lines, "0 on every listed node"), nullptr) << text;
}

// On 80 columns the score table keeps the weighted scores under the plugins' initials, and
// the lists under it wrap.
TEST_F(ExplainOutputTest, TableFitsTheWidthGiven) {
  std::string text;
  ASSERT_EQ(Explain(SmallCluster(), json::array({PendingPod("web-0", "2")}), {"--output", "table", "--width", "80"}, &text), 0);
  const std::vector<std::string> lines = Lines(text);
  for (const std::string& l : lines) EXPECT_LE(l.size(), 80u) << l;
  // The "why" line wraps under itself; the table follows it.
  EXPECT_EQ(lines[1], "  why: final score 435, tied with 1 other node; the tie-break heap (upstream >=");
  EXPECT_EQ(lines[2], "    1.35: the first best in Go's container/heap order) chose it");
  EXPECT_TRUE(std::regex_match(lines[3], std::regex("^  RANK  NODE +TT +NRF +NRBA +TOTAL$"))) << lines[3];
  EXPECT_TRUE(std::regex_match(lines[4], std::regex("^ +1  a +300 +73 +62 +435  <- chosen by the tie-break$"))) << lines[4];
  EXPECT_TRUE(std::regex_match(lines[5], std::regex("^ +2  b +300 +73 +62 +435  tie$"))) << lines[5];
  EXPECT_NE(text.find("  weighted scores (--wide: raw and normalized too): TT TaintToleration x3,\n"
                      "    NRF NodeResourcesFit x1, NRBA NodeResourcesBalancedAllocation x1\n"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("  0 on every listed node (--wide shows them): VolumeBinding, DynamicResources,\n    ImageLocality\n"),
            std::string::npos)
      << text;
  // A filter row's reasons wrap under their own column.
  EXPECT_NE(text.find("    NodeResourcesFit  1 node  Insufficient cpu (1; requests 2, at most 1 free on\n"
                      "                              c)\n"),
            std::string::npos)
      << text;
  EXPECT_EQ(lines.back(), "  0 for another scheduler; 4 nodes");
  // --wide keeps every column however narrow the width.
  ASSERT_EQ(Explain(SmallCluster(), json::array({PendingPod("web-0", "2")}), {"--output", "table", "--width", "80", "--wide"},
                    &text),
            0);
  EXPECT_NE(Lines(text)[3].find("TaintToleration x3"), std::string::npos) << text;
}

// Each node a resource rejects carries upstream's InsufficientResource amounts, on the engine
// and on the reference alike.
TEST_F(ExplainOutputTest, JsonGivesTheAmountsBehindResourceReasons) {
  for (const bool reference : {false, true}) {
    std::string text;
    std::vector<std::string> flags = {"--output", "json"};
    if (reference) flags.push_back("--reference");
    ASSERT_EQ(Explain(SmallCluster(), json::array({PendingPod("web-0", "2")}), flags, &text), 0);
    const json doc = json::parse(text);
    const json& placement = doc.is_array() ? doc[0] : doc["placements"][0];
    int found = 0;
    for (const json& n : placement["nodes"]) {
      if (n["node"] == "c") {
        ++found;
        EXPECT_EQ(n["filter"]["insufficient"],
                  json::parse(R"([{"resource":"cpu","requested":2000,"used":0,"capacity":1000}])"))
            << n.dump();
      } else if (n["filter"].is_object()) {
        EXPECT_FALSE(n["filter"].contains("insufficient")) << n.dump();  // d: a taint, no amounts
      }
    }
    EXPECT_EQ(found, 1) << text;
  }
}

// 150 nodes: upstream stops the scan once numFeasibleNodesToFind (100 here) fit.
TEST_F(ExplainOutputTest, TableCountsNodesLeftOutByNumFeasibleNodesToFind) {
  json cluster = SmallCluster();
  json& items = cluster["items"];
  items.clear();
  for (int i = 0; i < 150; ++i) {
    const std::string name = "n" + std::to_string(i);
    items.push_back({{"kind", "Node"},
                     {"metadata", {{"name", name}, {"labels", {{"kubernetes.io/hostname", name}}}}},
                     {"status", {{"allocatable", {{"cpu", "4"}, {"memory", "8Gi"}, {"pods", "110"}}}}}});
  }
  std::string text;
  ASSERT_EQ(Explain(cluster, json::array({PendingPod("web-0", "1")}), {"--output", "table", "--top", "3"}, &text), 0);
  const std::vector<std::string> lines = Lines(text);
  EXPECT_NE(LineWith(lines, "  filters: 100 nodes visited, 100 feasible, 0 rejected"), nullptr) << text;
  EXPECT_NE(LineWith(lines, "  not visited: 50 nodes: the scan stopped at numFeasibleNodesToFind = 100 feasible nodes"),
            nullptr)
      << text;
  EXPECT_NE(LineWith(lines, "  ... 97 more scored nodes (--top)"), nullptr) << text;
}

// Colour is added around cells, never into their widths: without the codes the text is the
// plain table.
TEST(ExplainTableTest, ColourKeepsColumns) {
  cycle::Placement p;
  p.pod = "default/x";
  p.node = "a";
  p.feasible = 2;
  auto ex = std::make_shared<cycle::Explanation>();
  ex->score_plugins = {"P"};
  ex->weights = {2};
  ex->score_skipped = {false};
  for (const auto& [name, score] : {std::pair{"a", 50}, {"b", 7}}) {
    cycle::NodeExplanation n;
    n.node = name;
    n.visited = n.scored = true;
    n.raw = {score};
    n.normalized = {score};
    n.weighted = {2 * score};
    n.total = 2 * score;
    ex->nodes.push_back(n);
  }
  p.explanation = ex;
  cli::TableOptions options;
  options.num_nodes = 2;
  const std::string plain = cli::ExplainTable(p, 2, options);
  EXPECT_EQ(plain,
            "default/x -> a\n"
            "  why: highest final score, 100, next 14 on b\n"
            "  RANK  NODE  P x2            TOTAL\n"
            "              raw  norm  wtd\n"
            "     1  a      50    50  100    100  <- chosen\n"
            "     2  b       7     7   14     14\n"
            "  filters: 2 nodes visited, 2 feasible, 0 rejected\n");
  options.color = true;
  const std::string colored = cli::ExplainTable(p, 2, options);
  EXPECT_NE(colored.find("\x1b[32ma\x1b[0m"), std::string::npos) << colored;
  EXPECT_EQ(std::regex_replace(colored, std::regex("\x1b\\[[0-9]+m"), ""), plain);
}

TEST(KlogTest, HeaderIsKlogs) {
  std::tm tm{};
  tm.tm_year = 2026 - 1900;
  tm.tm_mon = 11;
  tm.tm_mday = 1;
  tm.tm_hour = 12;
  tm.tm_isdst = -1;
  const auto when = std::chrono::system_clock::from_time_t(std::mktime(&tm)) + std::chrono::microseconds(123);
  EXPECT_EQ(cli::KlogHeader('I', when, 4242, cli::kPluginScoredSite),
            "I1201 12:00:00.000123    4242 schedule_one.go:830] ");
  // klog keeps the last seven digits of the id, and blanks for 0.
  EXPECT_EQ(cli::KlogHeader('E', when, 123456789, {"x.go", 7}), "E1201 12:00:00.000123 3456789 x.go:7] ");
  EXPECT_EQ(cli::KlogHeader('I', when, 0, {"x.go", 7}), "I1201 12:00:00.000123         x.go:7] ");
}

TEST_F(ExplainOutputTest, KlogLinesCarryTheRealHeaderAndText) {
  std::string text, err;
  ASSERT_EQ(Explain(SmallCluster(), json::array({PendingPod("web-0", "2")}), {"--klog"}, &text, &err), 0);
  const std::string pid = std::to_string(::getpid());
  // Severity, MMDD, HH:MM:SS.micros, then the process id right-aligned in seven columns.
  const std::string header = R"(I\d{4} \d{2}:\d{2}:\d{2}\.\d{6} )" + std::string(7 - pid.size(), ' ') + pid;
  const std::regex plugin_line(
      header +
      R"( schedule_one\.go:830\] "Plugin scored node for pod" pod="default/web-0" plugin="TaintToleration" node="b" score=300)");
  const std::regex final_line(
      header +
      R"( schedule_one\.go:898\] "Calculated node's final score for pod" pod="default/web-0" node="a" score=435)");
  int plugin_lines = 0, final_lines = 0, matched_plugin = 0, matched_final = 0;
  for (const std::string& line : Lines(err)) {
    plugin_lines += line.find("\"Plugin scored node for pod\"") != std::string::npos;
    final_lines += line.find("\"Calculated node's final score for pod\"") != std::string::npos;
    matched_plugin += std::regex_match(line, plugin_line);
    matched_final += std::regex_match(line, final_line);
  }
  // Two scored nodes, six plugins that scored (three skipped at PreScore; DynamicResources
  // has no PreScore and scores 0).
  EXPECT_EQ(plugin_lines, 12) << err;
  EXPECT_EQ(final_lines, 2) << err;
  EXPECT_EQ(matched_plugin, 1) << err;
  EXPECT_EQ(matched_final, 1) << err;
}

json Annotation(const json& pod, const std::string& key) {
  return json::parse(pod["metadata"]["annotations"][kPrefix + key].get<std::string>());
}

TEST_F(ExplainOutputTest, OutputPodsCarriesEverySimulatorKeyAndPodScheduled) {
  std::string text;
  ASSERT_EQ(Explain(SmallCluster(), json::array({PendingPod("web-0", "2"), PendingPod("huge", "64")}),
                    {"--output", "pods"}, &text),
            0);
  const json out = json::parse(text);
  ASSERT_EQ(out["items"].size(), 2u);
  const json& fits = out["items"][0];
  const json& huge = out["items"][1];
  ASSERT_EQ(fits["metadata"]["name"], "web-0");
  std::set<std::string> keys;
  for (const auto& [key, value] : fits["metadata"]["annotations"].items())
    keys.insert(key.substr(std::strlen(kPrefix)));
  EXPECT_EQ(keys, (std::set<std::string>{"prefilter-result-status", "prefilter-result", "filter-result",
                                         "postfilter-result", "prescore-result", "score-result", "finalscore-result",
                                         "reserve-result", "permit-result", "permit-result-timeout", "prebind-result",
                                         "bind-result", "selected-node", "result-history"}));
  EXPECT_EQ(fits["metadata"]["annotations"][std::string(kPrefix) + "selected-node"], "a");
  EXPECT_EQ(Annotation(fits, "prefilter-result-status")["NodeResourcesFit"], "success");
  EXPECT_EQ(Annotation(fits, "prefilter-result"), json::object());
  // node -> plugin -> verdict, up to the first plugin that rejects.
  const json filter = Annotation(fits, "filter-result");
  EXPECT_EQ(filter["a"]["NodeResourcesFit"], "passed");
  EXPECT_EQ(filter["c"]["NodeResourcesFit"], "Insufficient cpu");
  EXPECT_EQ(filter["d"], json::parse(R"j({"NodeName": "passed", "NodeUnschedulable": "passed",
                                          "TaintToleration": "node(s) had untolerated taint(s)"})j"));
  EXPECT_EQ(Annotation(fits, "score-result")["a"]["TaintToleration"], "0");
  EXPECT_EQ(Annotation(fits, "finalscore-result")["a"]["TaintToleration"], "300");
  EXPECT_FALSE(Annotation(fits, "score-result")["a"].contains("NodeAffinity"));  // skipped at PreScore
  EXPECT_EQ(Annotation(fits, "prescore-result")["TaintToleration"], "success");
  EXPECT_EQ(Annotation(fits, "prescore-result")["NodeAffinity"], "");  // Skip has no message
  EXPECT_EQ(Annotation(fits, "postfilter-result"), json::object());
  EXPECT_EQ(Annotation(fits, "reserve-result"), json::parse(R"({"DynamicResources": "success", "VolumeBinding": "success"})"));
  EXPECT_EQ(Annotation(fits, "prebind-result"), json::parse(R"({"DynamicResources": "success", "VolumeBinding": "success"})"));
  EXPECT_EQ(Annotation(fits, "bind-result"), json::parse(R"({"DefaultBinder": "success"})"));
  EXPECT_EQ(Annotation(fits, "permit-result"), json::object());
  EXPECT_EQ(Annotation(fits, "permit-result-timeout"), json::object());
  // result-history: one attempt, holding every other annotation as written.
  const json history = Annotation(fits, "result-history");
  ASSERT_EQ(history.size(), 1u);
  json others = fits["metadata"]["annotations"];
  others.erase(std::string(kPrefix) + "result-history");
  EXPECT_EQ(history[0], others);
  EXPECT_EQ(fits["status"]["conditions"], json::parse(R"([{"type": "PodScheduled", "status": "True"}])"));

  ASSERT_EQ(huge["metadata"]["name"], "huge");
  EXPECT_EQ(huge["metadata"]["annotations"][std::string(kPrefix) + "selected-node"], "");
  EXPECT_EQ(Annotation(huge, "postfilter-result"), json::parse(R"({"a": {}, "b": {}, "c": {}, "d": {}})"));
  EXPECT_EQ(Annotation(huge, "bind-result"), json::object());
  EXPECT_EQ(Annotation(huge, "reserve-result"), json::object());
  EXPECT_EQ(Annotation(huge, "score-result"), json::object());
  EXPECT_EQ(huge["status"]["conditions"],
            json::parse(R"([{"type": "PodScheduled", "status": "False", "reason": "Unschedulable",
                             "message": "0/4 nodes are available: 1 node(s) had untolerated taint(s), 3 Insufficient cpu. preemption: 0/4 nodes are available: 4 Preemption is not helpful for scheduling."}])"));
}

// The preemptor's first attempt nominates a (the victim's node); the second takes a as the
// nominated node. result-history keeps both after the pod's earlier entry.
TEST_F(ExplainOutputTest, PreemptionAttemptsAreEachInResultHistory) {
  json cluster = SmallCluster();
  json victim = PendingPod("low", "3", {{"nodeName", "a"}, {"priority", 1}});
  cluster["items"] = json::array({cluster["items"][0], victim});
  json urgent = PendingPod("urgent", "2", {{"priority", 1000}});
  urgent["metadata"]["annotations"][std::string(kPrefix) + "result-history"] = R"([{"earlier": "run"}])";
  std::string text;
  ASSERT_EQ(Explain(cluster, json::array({urgent}), {"--output", "pods"}, &text), 0);
  const json pod = json::parse(text)["items"][0];
  EXPECT_EQ(pod["spec"]["nodeName"], "a");
  const json history = Annotation(pod, "result-history");
  ASSERT_EQ(history.size(), 3u) << history.dump(1);
  EXPECT_EQ(history[0], json::parse(R"({"earlier": "run"})"));
  EXPECT_EQ(json::parse(history[1][std::string(kPrefix) + "postfilter-result"].get<std::string>()),
            json::parse(R"({"a": {"DefaultPreemption": "preemption victim"}})"));
  EXPECT_EQ(history[1][std::string(kPrefix) + "selected-node"], "");
  EXPECT_EQ(history[2][std::string(kPrefix) + "selected-node"], "a");
  // Only the nominated node was filtered on the second attempt.
  const json filter = json::parse(history[2][std::string(kPrefix) + "filter-result"].get<std::string>());
  EXPECT_EQ(filter.size(), 1u);
  EXPECT_EQ(filter["a"]["NodeResourcesFit"], "passed");

  ASSERT_EQ(Explain(cluster, json::array({urgent}), {"--output", "table"}, &text), 0);
  EXPECT_NE(text.find("why: the nominated node passed every filter"), std::string::npos) << text;
  EXPECT_NE(text.find("attempts: 2"), std::string::npos) << text;
}

TEST_F(ExplainOutputTest, ErrorsNameExplain) {
  std::string text, err;
  EXPECT_EQ(Explain(SmallCluster(), json::array(), {"--output", "xml"}, &text, &err), 2);
  EXPECT_EQ(err.rfind("kplace explain: --output must be table, json, yaml or pods", 0), 0u) << err;
  EXPECT_EQ(Explain(SmallCluster(), json::array({PendingPod("bad", "lots")}), {}, &text, &err), 1);
  EXPECT_EQ(err.rfind("kplace explain: ", 0), 0u) << err;
  EXPECT_EQ(err.find("kplace schedule"), std::string::npos) << err;
}

TEST(PlacementJsonTest, GoMarshalEscapesAsGo) {
  EXPECT_EQ(cycle::GoMarshal(json{{"b", "x<y&z>"}, {"a", "\xe2\x80\xa8"}}),
            R"({"a":"\u2028","b":"x\u003cy\u0026z\u003e"})");
}

TEST(PlacementJsonTest, ResultHistoryDropsTheOldestPastTheLimit) {
  const json big = {{"k", std::string(100 * 1024, 'x')}};
  auto history = cycle::ResultHistory("[]", {json{{"k", "first"}}, big, big, big});
  ASSERT_TRUE(history.has_value());
  const json list = json::parse(*history);
  ASSERT_EQ(list.size(), 2u);
  EXPECT_EQ(list[0], big);
  EXPECT_FALSE(cycle::ResultHistory("not json", {big}).has_value());
  EXPECT_FALSE(cycle::ResultHistory(R"(["a"])", {big}).has_value());
}

}  // namespace
}  // namespace kplace
