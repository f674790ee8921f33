#include <random>

#include <gtest/gtest.h>

#include "tests/testing/differential.h"

namespace kplace {
namespace {

using testing::MakeNode;
using testing::MakePod;

const std::vector<std::string> kIl = {"ImageLocality"};
constexpr int64_t kMB = 1024 * 1024;

Node NodeWithImages(Node n, std::vector<ContainerImage> images) {
  n.images = std::move(images);
  return n;
}

Pod PodWithImages(const std::vector<std::string>& init, const std::vector<std::string>& containers,
               const std::vector<std::string>& volumes = {}) {
  Pod p = MakePod("p", {});
  p.containers.clear();
  for (const auto& i : init) p.init_containers.push_back(Container{"i", i, {}, {}, std::nullopt, {}});
  for (const auto& c : containers) p.containers.push_back(Container{"c", c, {}, {}, std::nullopt, {}});
  for (const auto& v : volumes) {
    Volume vol;
    vol.name = "v";
    vol.source = "image";
    vol.image_reference = v;
    p.volumes.push_back(vol);
  }
  return p;
}

// Raw scores on both sides, which must agree.
std::vector<int64_t> Scores(const ObjectSet& cluster, const Pod& pod) {
  auto e = testing::RunEngine(engine::Backend::kOmp, cluster, pod, kIl);
  auto r = testing::RunReference(cluster, pod, kIl);
  EXPECT_EQ(testing::Diff(e, r), "");
  EXPECT_EQ(e.raw[0], e.normalized[0]);  // no NormalizeScore
  return e.raw[0];
}

// The upstream table's two nodes (image_locality_test.go).
ObjectSet UpstreamNodes() {
  ObjectSet c;
  c.nodes.push_back(NodeWithImages(MakeNode("node1", {}), {{{"gcr.io/40:latest", "gcr.io/40:v1", "gcr.io/40:v1"}, 40 * kMB},
                                                       {{"gcr.io/300:latest", "gcr.io/300:v1"}, 300 * kMB},
                                                       {{"gcr.io/2000:latest"}, 2000 * kMB}}));
  c.nodes.push_back(NodeWithImages(MakeNode("node2", {}), {{{"gcr.io/250:latest"}, 250 * kMB},
                                                       {{"gcr.io/10:latest", "gcr.io/10:v1"}, 10 * kMB}}));
  return c;
}

TEST(ImageLocalityTest, UpstreamTable) {
  ObjectSet c = UpstreamNodes();
  // 250 MiB on 1 of 2 nodes, two containers: S = 125 MiB -> floor(100 * 102 / 1977) = 5.
  EXPECT_EQ(Scores(c, PodWithImages({}, {"gcr.io/40", "gcr.io/250"})), (std::vector<int64_t>{0, 5}));
  EXPECT_EQ(Scores(c, PodWithImages({}, {"gcr.io/40", "gcr.io/300"})), (std::vector<int64_t>{7, 0}));
  EXPECT_EQ(Scores(c, PodWithImages({"gcr.io/300"}, {"gcr.io/30"})), (std::vector<int64_t>{6, 0}));
  ObjectSet big;
  big.nodes.push_back(NodeWithImages(MakeNode("node1", {}), {{{"gcr.io/4000:latest"}, 4000 * kMB}, {{"gcr.io/30:latest"}, 30 * kMB}}));
  big.nodes.push_back(UpstreamNodes().nodes[1]);
  EXPECT_EQ(Scores(big, PodWithImages({}, {"gcr.io/10", "gcr.io/4000"})), (std::vector<int64_t>{100, 0}));
  // A third, image-less node dilutes the spread: 4000 MiB * 1/3 -> 66.
  big.nodes.push_back(MakeNode("node3", {}));
  EXPECT_EQ(Scores(big, PodWithImages({}, {"gcr.io/10", "gcr.io/4000"})), (std::vector<int64_t>{66, 0, 0}));
}

TEST(ImageLocalityTest, NamesAndCounting) {
  ObjectSet c;
  c.nodes.push_back(NodeWithImages(MakeNode("n1", {}), {{{"docker.io/library/nginx:latest", "nginx:1.25"}, 500 * kMB},
                                                    {{"repo@sha256:abc"}, 300 * kMB},
                                                    {{"gcr.io:5000/root:latest"}, 200 * kMB}}));
  // Only ":latest" is appended; no registry canonicalisation.
  EXPECT_EQ(Scores(c, PodWithImages({}, {"nginx"})), (std::vector<int64_t>{0}));
  EXPECT_EQ(Scores(c, PodWithImages({}, {"nginx:1.25"})), (std::vector<int64_t>{48}));
  EXPECT_EQ(Scores(c, PodWithImages({}, {"repo@sha256:abc"})), (std::vector<int64_t>{28}));
  EXPECT_EQ(Scores(c, PodWithImages({}, {"gcr.io:5000/root"})), (std::vector<int64_t>{18}));
  // Duplicates count twice, in the sum and in the threshold.
  // 1000 MiB of 2000: floor(100 * 977 / 1977) = 49.
  EXPECT_EQ(Scores(c, PodWithImages({}, {"nginx:1.25", "nginx:1.25"})), (std::vector<int64_t>{49}));
  // 500 MiB of 2000: floor(100 * 477 / 1977) = 24.
  EXPECT_EQ(Scores(c, PodWithImages({}, {"nginx:1.25", "absent"})), (std::vector<int64_t>{24}));
  // v1.37: image volumes count in the sum and in the threshold's image count.
  EXPECT_EQ(Scores(c, PodWithImages({}, {"absent"}, {"nginx:1.25"})), (std::vector<int64_t>{24}));
  EXPECT_EQ(Scores(c, PodWithImages({}, {}, {"nginx:1.25"})), (std::vector<int64_t>{48}));
  // No images at all: 0, no division by zero.
  EXPECT_EQ(Scores(c, PodWithImages({}, {})), (std::vector<int64_t>{0}));
}

TEST(ImageLocalityTest, SpreadIsADoubleProductTruncated) {
  // The spread is one double division, the contribution one double multiply, truncated.
  ObjectSet c;
  for (int i = 0; i < 3; ++i) c.nodes.push_back(MakeNode("n" + std::to_string(i), {}));
  c.nodes[0].images = {{{"a:latest"}, 3 * 400 * kMB + 2}};
  EXPECT_EQ(Scores(c, PodWithImages({}, {"a"})), (std::vector<int64_t>{38, 0, 0}));
}

TEST(ImageLocalityTest, EngineMatchesReferenceOnRandomPairs) {
  std::mt19937_64 rng(424242);
  const std::vector<std::string> names = {"a", "b:v1", "c", "d:v2", "reg.io:5000/e", "f@sha256:00"};
  const std::vector<std::string> on_nodes = {"a:latest", "b:v1", "c:latest", "d:v2", "reg.io:5000/e:latest",
                                             "f@sha256:00"};
  ObjectSet c;
  for (int i = 0; i < 40; ++i) {
    Node n = MakeNode("n" + std::to_string(i), {});
    for (const std::string& name : on_nodes) {
      if (rng() % 3 == 0) n.images.push_back({{name}, static_cast<int64_t>(rng() % 3000) * kMB + static_cast<int64_t>(rng() % 7)});
    }
    c.nodes.push_back(n);
  }
  for (int j = 0; j < 100; ++j) {
    std::vector<std::string> init, containers, volumes;
    for (int k = rng() % 2; k > 0; --k) init.push_back(names[rng() % names.size()]);
    for (int k = rng() % 4; k > 0; --k) containers.push_back(names[rng() % names.size()]);
    for (int k = rng() % 2; k > 0; --k) volumes.push_back(names[rng() % names.size()]);
    Pod pod = PodWithImages(init, containers, volumes);
    auto e = testing::RunEngine(engine::Backend::kOmp, c, pod, kIl);
    auto r = testing::RunReference(c, pod, kIl);
    ASSERT_EQ(testing::Diff(e, r), "") << "pod " << j;
  }
}

}  // namespace
}  // namespace kplace
