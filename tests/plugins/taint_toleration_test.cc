#include <random>

#include <gtest/gtest.h>

#include "kplace/plugins/taint_common.h"
#include "kplace/reference/tolerations.h"
#include "tests/testing/differential.h"
#include "tests/testing/taint_builders.h"

namespace kplace {
namespace {

using testing::MakeTaint;
using testing::MakeTaintedNode;
using testing::MakeToleration;
using testing::MakeTolerantPod;

const std::vector<std::string> kTaint = {"TaintToleration"};
constexpr char kUntolerated[] = "node(s) had untolerated taint(s)";

FeatureGates Comparison(bool on) {
  FeatureGates g;
  g.overrides["TaintTolerationComparisonOperators"] = on;
  return g;
}

/** Engine (omp) and reference outcomes of the same single-node-or-more case. */
std::vector<testing::PhaseOutcome> Both(const ObjectSet& cluster, const Pod& pod, const FeatureGates& gates = {}) {
  return {testing::RunEngine(engine::Backend::kOmp, cluster, pod, kTaint, {}, gates),
          testing::RunReference(cluster, pod, kTaint, {}, gates)};
}

struct FilterCase {
  const char* name;
  std::vector<Taint> taints;
  std::vector<Toleration> tolerations;
  bool gate;
  bool fits;
};

TEST(TaintTolerationTest, FilterTable) {
  const std::vector<FilterCase> cases = {
      {"dedicated node tolerated", {MakeTaint("dedicated", "user1", "NoSchedule")},
       {MakeToleration("dedicated", "", "user1", "NoSchedule")}, false, true},
      {"no toleration", {MakeTaint("dedicated", "user1", "NoSchedule")}, {}, false, false},
      {"value mismatch", {MakeTaint("dedicated", "user1", "NoSchedule")},
       {MakeToleration("dedicated", "Equal", "user2", "NoSchedule")}, false, false},
      {"all of several tolerated",
       {MakeTaint("dedicated", "user2", "NoSchedule"), MakeTaint("foo", "bar", "NoSchedule")},
       {MakeToleration("dedicated", "Equal", "user2", "NoSchedule"), MakeToleration("foo", "Exists", "", "NoSchedule")},
       false, true},
      {"second of two untolerated",
       {MakeTaint("dedicated", "user2", "NoSchedule"), MakeTaint("foo", "bar", "NoExecute")},
       {MakeToleration("dedicated", "Equal", "user2", "NoSchedule")}, false, false},
      {"PreferNoSchedule is ignored", {MakeTaint("dedicated", "user1", "PreferNoSchedule")}, {}, false, true},
      {"unknown effect is ignored", {MakeTaint("dedicated", "user1", "Sometimes")}, {}, false, true},
      {"PreferNoSchedule toleration does not tolerate NoSchedule", {MakeTaint("foo", "bar", "NoSchedule")},
       {MakeToleration("foo", "Equal", "bar", "PreferNoSchedule")}, false, false},
      {"empty effect tolerates every effect", {MakeTaint("foo", "bar", "NoExecute")},
       {MakeToleration("foo", "Equal", "bar", "")}, false, true},
      {"empty key Exists tolerates all", {MakeTaint("foo", "bar", "NoSchedule"), MakeTaint("a", "", "NoExecute")},
       {MakeToleration("", "Exists", "", "")}, false, true},
      {"empty key Equal matches empty values only", {MakeTaint("foo", "", "NoSchedule")},
       {MakeToleration("", "", "", "NoSchedule")}, false, true},
      {"empty key Equal, value differs", {MakeTaint("foo", "bar", "NoSchedule")},
       {MakeToleration("", "", "", "NoSchedule")}, false, false},
      {"taint without value, Exists", {MakeTaint("foo", "", "NoSchedule")},
       {MakeToleration("foo", "Exists", "", "NoSchedule")}, false, true},
      {"different effects", {MakeTaint("foo", "bar", "NoExecute")}, {MakeToleration("foo", "Equal", "bar", "NoSchedule")},
       false, false},
      {"unknown operator", {MakeTaint("foo", "bar", "NoSchedule")}, {MakeToleration("foo", "In", "bar", "NoSchedule")},
       false, false},
      {"Gt above threshold", {MakeTaint("sla", "950", "NoSchedule")}, {MakeToleration("sla", "Gt", "750", "NoSchedule")},
       true, true},
      {"Gt below threshold", {MakeTaint("sla", "800", "NoSchedule")}, {MakeToleration("sla", "Gt", "950", "NoSchedule")},
       true, false},
      {"Gt equal", {MakeTaint("sla", "100", "NoSchedule")}, {MakeToleration("sla", "Gt", "100", "NoSchedule")}, true,
       false},
      {"Gt gate off", {MakeTaint("sla", "950", "NoSchedule")}, {MakeToleration("sla", "Gt", "750", "NoSchedule")},
       false, false},
      {"Lt below threshold", {MakeTaint("sla", "800", "NoSchedule")}, {MakeToleration("sla", "Lt", "950", "NoSchedule")},
       true, true},
      {"Lt gate off, Equal still honoured", {MakeTaint("dedicated", "user1", "NoSchedule")},
       {MakeToleration("dedicated", "Equal", "user1", "NoSchedule"), MakeToleration("sla", "Gt", "750", "NoSchedule")},
       false, true},
      {"Gt non-numeric taint", {MakeTaint("sla", "high", "NoSchedule")}, {MakeToleration("sla", "Gt", "950", "NoSchedule")},
       true, false},
      {"Gt leading-zero taint", {MakeTaint("sla", "0200", "NoSchedule")}, {MakeToleration("sla", "Gt", "100", "NoSchedule")},
       true, false},
      {"Gt plus-sign toleration", {MakeTaint("sla", "200", "NoSchedule")}, {MakeToleration("sla", "Gt", "+100", "NoSchedule")},
       true, false},
      {"Gt empty toleration value", {MakeTaint("sla", "100", "NoSchedule")}, {MakeToleration("sla", "Gt", "", "NoSchedule")},
       true, false},
      {"Gt max int64 taint", {MakeTaint("sla", "9223372036854775807", "NoSchedule")},
       {MakeToleration("sla", "Gt", "9223372036854775806", "NoSchedule")}, true, true},
      {"Gt overflowing taint", {MakeTaint("sla", "9223372036854775808", "NoSchedule")},
       {MakeToleration("sla", "Gt", "0", "NoSchedule")}, true, false},
      {"Lt min int64 taint", {MakeTaint("sla", "-9223372036854775808", "NoSchedule")},
       {MakeToleration("sla", "Lt", "0", "NoSchedule")}, true, true},
      {"Lt negative zero toleration", {MakeTaint("sla", "-1", "NoSchedule")}, {MakeToleration("sla", "Lt", "-0", "NoSchedule")},
       true, false},
      {"Lt both zero", {MakeTaint("sla", "0", "NoSchedule")}, {MakeToleration("sla", "Lt", "0", "NoSchedule")}, true, false},
      {"Gt negative numbers", {MakeTaint("sla", "-50", "NoSchedule")}, {MakeToleration("sla", "Gt", "-100", "NoSchedule")},
       true, true},
  };
  for (const FilterCase& c : cases) {
    ObjectSet cluster;
    cluster.nodes.push_back(MakeTaintedNode("nodeA", c.taints));
    Pod pod = MakeTolerantPod("p", c.tolerations);
    for (const auto& out : Both(cluster, pod, Comparison(c.gate))) {
      ASSERT_EQ(out.filter.size(), 1u);
      const PluginStatus& s = out.filter[0][0];
      if (c.fits) {
        EXPECT_TRUE(s.IsSuccess()) << c.name << ": " << s.Message();
      } else {
        EXPECT_EQ(s.code, Code::kUnschedulableAndUnresolvable) << c.name;
        EXPECT_EQ(s.reasons, std::vector<std::string>{kUntolerated}) << c.name;
      }
    }
  }
}

TEST(TaintTolerationTest, ScoreCountsIntolerablePreferNoSchedule) {
  // seed/003: counts 1, 0, 2 normalize (reversed) to 50, 100, 0.
  ObjectSet cluster;
  cluster.nodes.push_back(MakeTaintedNode("node1", {MakeTaint("dedicated", "batch", "PreferNoSchedule")}));
  cluster.nodes.push_back(MakeTaintedNode("node2", {}));
  cluster.nodes.push_back(MakeTaintedNode(
      "node3", {MakeTaint("dedicated", "batch", "PreferNoSchedule"), MakeTaint("special", "true", "PreferNoSchedule"),
                MakeTaint("hard", "x", "NoSchedule")}));
  Pod pod = MakeTolerantPod("p", {});
  for (const auto& out : Both(cluster, pod)) {
    EXPECT_EQ(out.raw[0], (std::vector<int64_t>{1, 0, 2}));
    EXPECT_EQ(out.normalized[0], (std::vector<int64_t>{50, 100, 0}));
  }
  // A NoSchedule-effect toleration does not cancel a PreferNoSchedule taint; an empty
  // effect does.
  Pod no_schedule = MakeTolerantPod("q", {MakeToleration("dedicated", "Exists", "", "NoSchedule")});
  Pod any_effect = MakeTolerantPod("r", {MakeToleration("dedicated", "Exists", "", "")});
  for (const auto& out : Both(cluster, no_schedule)) EXPECT_EQ(out.raw[0], (std::vector<int64_t>{1, 0, 2}));
  for (const auto& out : Both(cluster, any_effect)) {
    EXPECT_EQ(out.raw[0], (std::vector<int64_t>{0, 0, 1}));
    EXPECT_EQ(out.normalized[0], (std::vector<int64_t>{100, 100, 0}));
  }
}

TEST(TaintTolerationTest, AllZeroCountsScoreMax) {
  ObjectSet cluster;
  cluster.nodes.push_back(MakeTaintedNode("a", {MakeTaint("k", "v", "NoSchedule")}));
  cluster.nodes.push_back(MakeTaintedNode("b", {}));
  for (const auto& out : Both(cluster, MakeTolerantPod("p", {}))) {
    EXPECT_EQ(out.normalized[0], (std::vector<int64_t>{100, 100}));
  }
}

TEST(TaintTolerationTest, ComparisonOperatorsInScore) {
  // tainttoleration/006 and /007.
  ObjectSet cluster;
  cluster.nodes.push_back(MakeTaintedNode("nodeA", {MakeTaint("node.kubernetes.io/sla", "800", "PreferNoSchedule")}));
  cluster.nodes.push_back(MakeTaintedNode("nodeB", {MakeTaint("node.kubernetes.io/sla", "999", "PreferNoSchedule")}));
  Pod gt = MakeTolerantPod("p", {MakeToleration("node.kubernetes.io/sla", "Gt", "950", "PreferNoSchedule")});
  for (const auto& out : Both(cluster, gt, Comparison(true))) {
    EXPECT_EQ(out.normalized[0], (std::vector<int64_t>{0, 100}));
  }
  for (const auto& out : Both(cluster, gt, Comparison(false))) {
    EXPECT_EQ(out.normalized[0], (std::vector<int64_t>{0, 0}));
  }
  Pod lt = MakeTolerantPod("q", {MakeToleration("node.kubernetes.io/sla", "Lt", "900", "PreferNoSchedule")});
  for (const auto& out : Both(cluster, lt, Comparison(true))) {
    EXPECT_EQ(out.normalized[0], (std::vector<int64_t>{100, 0}));
  }
}

TEST(TaintTolerationTest, CanonicalIntegers) {
  struct Row {
    std::string text;
    bool ok;
    int64_t value;
  };
  const std::vector<Row> rows = {
      {"0", true, 0},
      {"7", true, 7},
      {"-7", true, -7},
      {"100", true, 100},
      {"9223372036854775807", true, INT64_MAX},
      {"-9223372036854775808", true, INT64_MIN},
      {"9223372036854775808", false, 0},
      {"-9223372036854775809", false, 0},
      {"99999999999999999999", false, 0},
      {"", false, 0},
      {"-", false, 0},
      {"-0", false, 0},
      {"00", false, 0},
      {"0100", false, 0},
      {"+5", false, 0},
      {" 200 ", false, 0},
      {"100.5", false, 0},
      {"1e3", false, 0},
      {"--1", false, 0},
      {"abc", false, 0},
  };
  for (const Row& r : rows) {
    int64_t engine_value = 0, reference_value = 0;
    EXPECT_EQ(plugins::ParseCanonicalInt64(r.text, &engine_value), r.ok) << r.text;
    EXPECT_EQ(reference::ParseDecimalInteger(r.text, &reference_value), r.ok) << r.text;
    if (r.ok) {
      EXPECT_EQ(engine_value, r.value) << r.text;
      EXPECT_EQ(reference_value, r.value) << r.text;
    }
  }
}

// Random taints and tolerations from small pools, engine vs reference, both gate states.
TEST(TaintTolerationTest, EngineMatchesReferenceOnRandomPairs) {
  std::mt19937_64 rng(20261130);
  auto pick = [&](const std::vector<std::string>& v) { return v[rng() % v.size()]; };
  const std::vector<std::string> keys = {"dedicated", "sla", "gpu", "", "zone"};
  const std::vector<std::string> values = {"", "a", "b", "0", "7", "-3", "100", "0100", "+5", "950",
                                           "9223372036854775807", "-9223372036854775808", "x1"};
  const std::vector<std::string> taint_effects = {"NoSchedule", "PreferNoSchedule", "NoExecute", "Odd"};
  const std::vector<std::string> toleration_effects = {"", "NoSchedule", "PreferNoSchedule", "NoExecute", "Odd"};
  const std::vector<std::string> ops = {"", "Equal", "Exists", "Lt", "Gt", "In"};
  for (int size : {0, 1, 31, 32, 33, 1000}) {
    ObjectSet cluster;
    for (int i = 0; i < size; ++i) {
      std::vector<Taint> taints;
      for (int k = rng() % 4; k > 0; --k) {
        taints.push_back(MakeTaint(pick({"dedicated", "sla", "gpu", "zone"}), pick(values), pick(taint_effects)));
      }
      cluster.nodes.push_back(MakeTaintedNode("n" + std::to_string(i), taints));
    }
    for (int j = 0; j < 40; ++j) {
      std::vector<Toleration> tolerations;
      for (int k = rng() % 4; k > 0; --k) {
        tolerations.push_back(MakeToleration(pick(keys), pick(ops), pick(values), pick(toleration_effects)));
      }
      tolerations.push_back(MakeToleration("never-seen", "Equal", "never-seen", ""));
      Pod pod = MakeTolerantPod("p" + std::to_string(j), tolerations);
      FeatureGates gates = Comparison(j % 2 == 0);
      auto r = testing::RunReference(cluster, pod, kTaint, {}, gates);
      for (engine::Backend b : testing::TestBackends()) {
        auto e = testing::RunEngine(b, cluster, pod, kTaint, {}, gates);
        ASSERT_EQ(testing::Diff(e, r), "") << engine::BackendName(b) << " size " << size << " pod " << j;
      }
    }
  }
}

}  // namespace
}  // namespace kplace
