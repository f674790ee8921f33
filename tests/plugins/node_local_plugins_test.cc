// Every node-local plugin at once, engine vs reference, on 100,000+ random node/pod pairs.
#include <random>

#include <gtest/gtest.h>

#include "tests/testing/differential.h"

namespace kplace {
namespace {

const std::vector<std::string> kNodeLocal = {"NodeUnschedulable", "NodeName",       "TaintToleration",
                                             "NodeAffinity",      "NodePorts",      "NodeResourcesFit",
                                             "NodeResourcesBalancedAllocation", "ImageLocality"};

TEST(NodeLocalPluginsTest, EngineMatchesReferenceOnRandomPairs) {
  std::mt19937_64 rng(1129);
  auto pick = [&](const std::vector<std::string>& v) { return v[rng() % v.size()]; };
  const std::vector<std::string> zones = {"a", "b", "c"}, images = {"nginx:1.27", "redis:7", "app:1", "busybox"};
  ObjectSet cluster;
  const int kNodes = 250;
  for (int i = 0; i < kNodes; ++i) {
    std::string name = "n" + std::to_string(i);
    Node n = testing::MakeNode(name, {{"cpu", pick({"1", "2", "4"})}, {"memory", pick({"1Gi", "4Gi", "8Gi"})}, {"pods", pick({"2", "110"})}},
                               {{"zone", pick(zones)}, {"gen", std::to_string(rng() % 6)}, {"kubernetes.io/hostname", name}});
    if (rng() % 4 == 0) n.meta.labels["disk"] = "ssd";
    if (rng() % 5 == 0) n.taints.push_back({"dedicated", pick({"gpu", "db"}), pick({"NoSchedule", "PreferNoSchedule", "NoExecute"})});
    if (rng() % 7 == 0) n.taints.push_back({"spot", "", "PreferNoSchedule"});
    n.unschedulable = rng() % 20 == 0;
    for (const std::string& img : images) {
      if (rng() % 3 == 0) n.images.push_back({{img}, static_cast<int64_t>(1 + rng() % 900) * 1000000});
    }
    cluster.nodes.push_back(n);
    for (int k = rng() % 3; k > 0; --k) {
      Pod p = testing::MakePod(name + "-e" + std::to_string(k), {{"cpu", pick({"100m", "500m"})}, {"memory", "256Mi"}}, name);
      if (rng() % 4 == 0) p.containers[0].ports.push_back({80, 8080, pick({"TCP", "UDP"}), ""});
      cluster.pods.push_back(p);
    }
  }
  const int kPods = 420;  // 250 nodes x 420 pods = 105,000 pairs
  for (int j = 0; j < kPods; ++j) {
    Pod pod = testing::MakePod("p" + std::to_string(j), {{"cpu", pick({"0", "100m", "1", "3"})}, {"memory", pick({"0", "512Mi", "2Gi"})}});
    pod.containers[0].image = pick(images);
    if (rng() % 3 == 0) pod.tolerations.push_back({"dedicated", pick({"Equal", "Exists"}), "gpu", pick({"", "NoSchedule"}), std::nullopt});
    if (rng() % 4 == 0) {
      pod.node_selector["zone"] = pick(zones);
      pod.node_selector_set = true;
    }
    if (rng() % 3 == 0) {
      Affinity a;
      a.node_affinity.emplace();
      NodeSelectorTerm term;
      term.match_expressions.push_back({"gen", pick({"Gt", "Lt", "In", "NotIn", "Exists"}), {std::to_string(rng() % 6)}});
      if (term.match_expressions[0].op == "Exists") term.match_expressions[0].values.clear();
      if (rng() % 2) {
        a.node_affinity->required.emplace();
        a.node_affinity->required->terms.push_back(term);
      }
      a.node_affinity->preferred.push_back({static_cast<int32_t>(1 + rng() % 50), term});
      a.node_affinity->preferred_set = true;
      pod.affinity = a;
    }
    if (rng() % 5 == 0) pod.containers[0].ports.push_back({80, 8080, "TCP", ""});
    if (rng() % 10 == 0) pod.node_name = "n" + std::to_string(rng() % kNodes);
    auto e = testing::RunEngine(engine::Backend::kOmp, cluster, pod, kNodeLocal);
    auto r = testing::RunReference(cluster, pod, kNodeLocal);
    ASSERT_EQ(testing::Diff(e, r), "") << "pod " << j;
  }
}

}  // namespace
}  // namespace kplace
