// `kplace gen`: flags refused by name, and existing pods bound only where they fit.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <map>
#include <string>
#include <vector>

#include "kplace/cli/cli.h"
#include "kplace/model/decode.h"
#include "kplace/model/requests.h"

namespace kplace {
namespace {

namespace fs = std::filesystem;

int Gen(std::vector<std::string> args, std::string* err) {
  args.insert(args.begin(), {"kplace", "gen"});
  std::vector<char*> argv;
  for (std::string& a : args) argv.push_back(a.data());
  ::testing::internal::CaptureStderr();
  int rc = cli::Main(static_cast<int>(argv.size()), argv.data());
  *err = ::testing::internal::GetCapturedStderr();
  return rc;
}

TEST(GenTest, EachBadFlagIsNamed) {
  std::string err;
  EXPECT_EQ(Gen({"--nodes", "-1"}, &err), 2);
  EXPECT_EQ(err, "kplace gen: --nodes: -1 is out of range (0 to 1000000)\n");
  EXPECT_EQ(Gen({"--taint-percent", "101"}, &err), 2);
  EXPECT_EQ(err, "kplace gen: --taint-percent: 101 is out of range (0 to 100)\n");
  EXPECT_EQ(Gen({"--group-size", "0"}, &err), 2);
  EXPECT_EQ(err, "kplace gen: --group-size: 0 is out of range (1 to 10000000)\n");
  // regions x zones used to overflow (undefined) before a node was written.
  EXPECT_EQ(Gen({"--regions", "1000000", "--zones", "1000000"}, &err), 2);
  EXPECT_EQ(err, "kplace gen: --regions times --zones: 1000000000000 zones is more than 1000000\n");
}

// GPU pods used to land on nodes without GPUs, and any node could be filled past its allocatable.
TEST(GenTest, ExistingPodsFitTheirNodes) {
  const fs::path out = fs::temp_directory_path() / ("kplace-gen-" + std::to_string(::getpid()) + ".json");
  std::string err;
  ASSERT_EQ(Gen({"--nodes", "30", "--existing-pods", "3000", "--gpu-percent", "30", "--taint-percent", "30",
                 "--constraint-percent", "100", "--regions", "2", "--seed", "7", "--output", out.string()},
                &err),
            0)
      << err;
  ObjectSet set;
  ASSERT_TRUE(DecodeFile(out.string(), &set).ok());
  fs::remove(out);
  ASSERT_EQ(set.nodes.size(), 30u);
  // 30 nodes hold far fewer than 3000 pods: the rest is left out, and said so.
  EXPECT_GT(set.pods.size(), 300u);
  EXPECT_LT(set.pods.size(), 3000u);
  const std::string left = std::to_string(3000 - set.pods.size()) + " of 3000 existing pods fit on no node";
  EXPECT_NE(err.find(left), std::string::npos) << err;
  std::map<std::string, const Node*> nodes;
  for (const Node& n : set.nodes) nodes[n.meta.name] = &n;
  std::map<std::string, Resource> used;
  bool gpu_pod = false;
  for (const Pod& p : set.pods) {
    ASSERT_TRUE(nodes.count(p.node_name)) << p.node_name;
    const Node& n = *nodes[p.node_name];
    Resource r = Resource::From(PodRequests(p, nullptr, false), false);
    r.allowed_pods = 1;
    used[p.node_name].Add(r);
    if (!n.taints.empty()) EXPECT_FALSE(p.tolerations.empty()) << p.meta.name << " on tainted " << p.node_name;
    if (p.node_selector.count("topology.kubernetes.io/region")) {
      EXPECT_EQ(p.node_selector.at("topology.kubernetes.io/region"), n.meta.labels.at("topology.kubernetes.io/region"));
    }
    gpu_pod = gpu_pod || r.Get("nvidia.com/gpu") > 0;
  }
  EXPECT_TRUE(gpu_pod);
  for (const auto& [node, u] : used) {
    const Resource a = Resource::From(nodes[node]->allocatable, true);
    EXPECT_LE(u.milli_cpu, a.milli_cpu) << node;
    EXPECT_LE(u.memory, a.memory) << node;
    EXPECT_LE(u.Get("nvidia.com/gpu"), a.Get("nvidia.com/gpu")) << node;
    EXPECT_LE(u.allowed_pods, a.allowed_pods) << node;
  }
}

}  // namespace
}  // namespace kplace
