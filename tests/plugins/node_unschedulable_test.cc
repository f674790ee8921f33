#include <random>

#include <gtest/gtest.h>

#include "tests/testing/differential.h"
#include "tests/testing/taint_builders.h"

namespace kplace {
namespace {

using testing::MakeTaint;
using testing::MakeTaintedNode;
using testing::MakeToleration;
using testing::MakeTolerantPod;

const std::vector<std::string> kUnschedulable = {"NodeUnschedulable"};
constexpr char kKey[] = "node.kubernetes.io/unschedulable";

TEST(NodeUnschedulableTest, FilterTable) {
  struct Case {
    const char* name;
    bool unschedulable;
    std::vector<Toleration> tolerations;
    bool gate;
    bool fits;
  };
  const std::vector<Case> cases = {
      {"schedulable node", false, {}, false, true},
      {"unschedulable node", true, {}, false, false},
      {"key and NoSchedule (Equal with empty value)", true, {MakeToleration(kKey, "", "", "NoSchedule")}, false, true},
      {"Exists on every key", true, {MakeToleration("", "Exists", "", "")}, false, true},
      {"key Exists", true, {MakeToleration(kKey, "Exists", "", "")}, false, true},
      {"NoExecute effect", true, {MakeToleration(kKey, "Exists", "", "NoExecute")}, false, false},
      {"value does not match the empty taint value", true, {MakeToleration(kKey, "Equal", "x", "NoSchedule")}, false,
       false},
      {"other key", true, {MakeToleration("other", "Exists", "", "NoSchedule")}, false, false},
      {"Gt never matches the empty value", true, {MakeToleration(kKey, "Gt", "0", "NoSchedule")}, true, false},
      {"Lt never matches the empty value", true, {MakeToleration(kKey, "Lt", "10", "")}, true, false},
      {"node taints are not consulted", false, {}, false, true},
  };
  for (const Case& c : cases) {
    ObjectSet cluster;
    cluster.nodes.push_back(MakeTaintedNode("n", {MakeTaint("hard", "x", "NoSchedule")}, c.unschedulable));
    Pod pod = MakeTolerantPod("p", c.tolerations);
    FeatureGates gates;
    gates.overrides["TaintTolerationComparisonOperators"] = c.gate;
    auto e = testing::RunEngine(engine::Backend::kOmp, cluster, pod, kUnschedulable, {}, gates);
    auto r = testing::RunReference(cluster, pod, kUnschedulable, {}, gates);
    for (const auto* out : {&e, &r}) {
      const PluginStatus& s = out->filter[0][0];
      if (c.fits) {
        EXPECT_TRUE(s.IsSuccess()) << c.name;
      } else {
        EXPECT_EQ(s.code, Code::kUnschedulableAndUnresolvable) << c.name;
        EXPECT_EQ(s.reasons, std::vector<std::string>{"node(s) were unschedulable"}) << c.name;
      }
    }
  }
}

TEST(NodeUnschedulableTest, EngineMatchesReferenceOnRandomPairs) {
  std::mt19937_64 rng(20261131);
  auto pick = [&](const std::vector<std::string>& v) { return v[rng() % v.size()]; };
  for (int size : {0, 1, 31, 32, 33, 1000}) {
    ObjectSet cluster;
    for (int i = 0; i < size; ++i) cluster.nodes.push_back(MakeTaintedNode("n" + std::to_string(i), {}, rng() % 2));
    for (int j = 0; j < 40; ++j) {
      std::vector<Toleration> tolerations;
      for (int k = rng() % 3; k > 0; --k) {
        tolerations.push_back(MakeToleration(pick({kKey, "", "other"}), pick({"", "Equal", "Exists", "Gt", "Lt"}),
                                             pick({"", "x", "0"}), pick({"", "NoSchedule", "NoExecute", "PreferNoSchedule"})));
      }
      Pod pod = MakeTolerantPod("p" + std::to_string(j), tolerations);
      FeatureGates gates;
      gates.overrides["TaintTolerationComparisonOperators"] = j % 2;
      auto r = testing::RunReference(cluster, pod, kUnschedulable, {}, gates);
      for (engine::Backend b : testing::TestBackends()) {
        auto e = testing::RunEngine(b, cluster, pod, kUnschedulable, {}, gates);
        ASSERT_EQ(testing::Diff(e, r), "") << engine::BackendName(b) << " size " << size << " pod " << j;
      }
    }
  }
}

}  // namespace
}  // namespace kplace
