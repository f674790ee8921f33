#include <random>

#include <gtest/gtest.h>

#include "tests/testing/differential.h"
#include "tests/testing/taint_builders.h"

namespace kplace {
namespace {

using testing::MakeNode;
using testing::MakePod;

const std::vector<std::string> kNodeName = {"NodeName"};
constexpr char kMismatch[] = "node(s) didn't match the requested node name";

TEST(NodeNameTest, FilterTable) {
  ObjectSet cluster;
  cluster.nodes.push_back(MakeNode("foo", {}, {{"kubernetes.io/hostname", "bar"}}));
  cluster.nodes.push_back(MakeNode("bar", {}));
  cluster.nodes.push_back(MakeNode("Foo", {}));
  struct Case {
    std::string node_name;
    std::vector<bool> fits;
  };
  const std::vector<Case> cases = {
      {"", {true, true, true}},           // no host specified
      {"foo", {true, false, false}},      // host matches; names are case-sensitive
      {"bar", {false, true, false}},      // a label value equal to the name does not count
      {"baz", {false, false, false}},     // no node has that name
      {"x-not-interned", {false, false, false}},
  };
  for (const Case& c : cases) {
    Pod pod = MakePod("p", {});
    pod.node_name = c.node_name;
    auto e = testing::RunEngine(engine::Backend::kOmp, cluster, pod, kNodeName);
    auto r = testing::RunReference(cluster, pod, kNodeName);
    for (const auto* out : {&e, &r}) {
      for (size_t i = 0; i < c.fits.size(); ++i) {
        const PluginStatus& s = out->filter[0][i];
        if (c.fits[i]) {
          EXPECT_TRUE(s.IsSuccess()) << c.node_name << " node " << i;
        } else {
          EXPECT_EQ(s.code, Code::kUnschedulableAndUnresolvable) << c.node_name << " node " << i;
          EXPECT_EQ(s.reasons, std::vector<std::string>{kMismatch});
        }
      }
    }
  }
}

TEST(NodeNameTest, EngineMatchesReferenceOnRandomPairs) {
  std::mt19937_64 rng(20261132);
  for (int size : {0, 1, 31, 32, 33, 1000}) {
    ObjectSet cluster;
    for (int i = 0; i < size; ++i) cluster.nodes.push_back(MakeNode("n" + std::to_string(i), {}));
    for (int j = 0; j < 20; ++j) {
      Pod pod = MakePod("p", {});
      if (rng() % 4) pod.node_name = "n" + std::to_string(rng() % (size + 3));
      auto r = testing::RunReference(cluster, pod, kNodeName);
      for (engine::Backend b : testing::TestBackends()) {
        auto e = testing::RunEngine(b, cluster, pod, kNodeName);
        ASSERT_EQ(testing::Diff(e, r), "") << engine::BackendName(b) << " size " << size << " pod " << j;
      }
    }
  }
}

}  // namespace
}  // namespace kplace
