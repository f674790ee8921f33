#include <random>

#include <gtest/gtest.h>

#include "tests/testing/volume_builders.h"

namespace kplace {
namespace {

using testing::vol::Add;
using testing::vol::Both;
using testing::vol::ClaimVolume;
using testing::vol::DecodedPod;
using testing::vol::DiffOutcomes;
using testing::vol::EngineRunner;
using testing::vol::json;
using testing::vol::NodeJson;
using testing::vol::Outcome;
using testing::vol::PodJson;
using testing::vol::PvcJson;

constexpr char kPlugin[] = "VolumeRestrictions";
constexpr char kDisk[] = "node(s) had no available disk";
constexpr char kRwop[] =
    "node(s) unavailable due to PersistentVolumeClaim with ReadWriteOncePod access mode already in-use by another pod";

json Gce(const std::string& pd, bool ro = false) {
  return {{"name", "g-" + pd}, {"gcePersistentDisk", {{"pdName", pd}, {"readOnly", ro}}}};
}
json Aws(const std::string& id, bool ro = false) {
  return {{"name", "a-" + id}, {"awsElasticBlockStore", {{"volumeID", id}, {"readOnly", ro}}}};
}
json Rbd(const std::vector<std::string>& monitors, const std::string& pool, const std::string& image, bool ro = false) {
  return {{"name", "r-" + image}, {"rbd", {{"monitors", monitors}, {"pool", pool}, {"image", image}, {"readOnly", ro}}}};
}
json Iscsi(const std::string& iqn, bool ro = false) {
  return {{"name", "i-" + iqn}, {"iscsi", {{"targetPortal", "127.0.0.1:3260"}, {"iqn", iqn}, {"lun", 0}, {"readOnly", ro}}}};
}

json RwopClaim(const std::string& name) {
  json c = PvcJson(name, "", "1Gi");
  c["spec"]["accessModes"] = {"ReadWriteOncePod"};
  return c;
}

// Both sides must agree, and the engine's verdicts are returned.
Outcome Check(const ObjectSet& cluster, const Pod& pod) {
  Both b(kPlugin, cluster);
  Outcome e = b.engine.Run(pod), r = b.reference.Run(pod);
  EXPECT_EQ(DiffOutcomes(e, r), "");
  return e;
}

ObjectSet TwoNodes() {
  ObjectSet c;
  Add(&c, NodeJson("n0"));
  Add(&c, NodeJson("n1"));
  return c;
}

TEST(VolumeRestrictionsTest, PodWithoutVolumesSkips) {
  ObjectSet c = TwoNodes();
  Add(&c, PodJson("old", json::array({Gce("pd")}), "n0"));
  Outcome o = Check(c, DecodedPod(PodJson("p", json::array())));
  EXPECT_TRUE(o.pre_filter.IsSkip());
  EXPECT_TRUE(o.filter[0].IsSuccess());
  Outcome cm = Check(c, DecodedPod(PodJson("p", json::array({{{"name", "cm"}, {"configMap", {{"name", "x"}}}}}))));
  EXPECT_TRUE(cm.pre_filter.IsSkip());
}

TEST(VolumeRestrictionsTest, DiskConflicts) {
  struct Case {
    json existing, incoming;
    bool conflict;
  };
  const std::vector<Case> cases = {
      {Gce("pd"), Gce("pd"), true},
      {Gce("pd", true), Gce("pd", true), false},
      {Gce("pd", false), Gce("pd", true), true},
      {Gce("pd"), Gce("other"), false},
      {Aws("vol-1", true), Aws("vol-1", true), true},  // EBS ignores readOnly
      {Aws("vol-1"), Aws("vol-2"), false},
      {Rbd({"a", "b"}, "foo", "bar"), Rbd({"b", "c"}, "foo", "bar"), true},
      {Rbd({"a", "b"}, "foo", "bar"), Rbd({"c", "d"}, "foo", "bar"), false},
      {Rbd({"a"}, "foo", "bar"), Rbd({"a"}, "foo", "baz"), false},
      {Rbd({"a"}, "foo", "bar", true), Rbd({"a"}, "foo", "bar", true), false},
      {Iscsi("iqn.1"), Iscsi("iqn.1"), true},
      {Iscsi("iqn.1", true), Iscsi("iqn.1", true), false},
      {Iscsi("iqn.1"), Iscsi("iqn.2"), false},
      {Gce("x"), Aws("x"), false},  // different kinds never meet
  };
  for (size_t k = 0; k < cases.size(); ++k) {
    ObjectSet c = TwoNodes();
    Add(&c, PodJson("old", json::array({cases[k].existing}), "n0"));
    Outcome o = Check(c, DecodedPod(PodJson("p", json::array({cases[k].incoming}))));
    EXPECT_TRUE(o.pre_filter.IsSuccess()) << k;
    if (cases[k].conflict) {
      EXPECT_EQ(o.filter[0], PluginStatus::Make(Code::kUnschedulable, kDisk)) << k;
    } else {
      EXPECT_TRUE(o.filter[0].IsSuccess()) << k;
    }
    EXPECT_TRUE(o.filter[1].IsSuccess()) << k;
  }
}

TEST(VolumeRestrictionsTest, ReadWriteOncePodInUseRejectsEveryNode) {
  ObjectSet c = TwoNodes();
  Add(&c, RwopClaim("shared"));
  Add(&c, PvcJson("plain", "", "1Gi"));
  Add(&c, PodJson("user", json::array({ClaimVolume("shared")}), "n1"));
  Outcome o = Check(c, DecodedPod(PodJson("p", json::array({ClaimVolume("shared")}))));
  EXPECT_TRUE(o.pre_filter.IsSuccess());
  EXPECT_EQ(o.filter[0], PluginStatus::Make(Code::kUnschedulable, kRwop));
  EXPECT_EQ(o.filter[1], PluginStatus::Make(Code::kUnschedulable, kRwop));
  // A claim without ReadWriteOncePod, or one nobody uses, needs no check.
  EXPECT_TRUE(Check(c, DecodedPod(PodJson("p", json::array({ClaimVolume("plain")})))).pre_filter.IsSkip());
  Add(&c, RwopClaim("free"));
  EXPECT_TRUE(Check(c, DecodedPod(PodJson("p", json::array({ClaimVolume("free")})))).pre_filter.IsSkip());
  // Same name in another namespace is another claim.
  json other = RwopClaim("shared");
  other["metadata"]["namespace"] = "other";
  Add(&c, other);
  EXPECT_TRUE(Check(c, DecodedPod(PodJson("p", json::array({ClaimVolume("shared")}), "", "other"))).pre_filter.IsSkip());
}

TEST(VolumeRestrictionsTest, MissingClaimIsUnresolvable) {
  ObjectSet c = TwoNodes();
  Outcome o = Check(c, DecodedPod(PodJson("p", json::array({ClaimVolume("nope")}))));
  EXPECT_EQ(o.pre_filter, PluginStatus::Make(Code::kUnschedulableAndUnresolvable, "persistentvolumeclaim \"nope\" not found"));
}

TEST(VolumeRestrictionsTest, BindsUpdateConflicts) {
  ObjectSet c = TwoNodes();
  Add(&c, RwopClaim("solo"));
  Both b(kPlugin, c);
  Pod first = DecodedPod(PodJson("a", json::array({ClaimVolume("solo"), Gce("pd")})));
  Outcome before = b.engine.Run(first);
  EXPECT_EQ(DiffOutcomes(before, b.reference.Run(first)), "");
  EXPECT_TRUE(before.filter[0].IsSuccess());
  b.Bind(first, 0);
  Pod second = DecodedPod(PodJson("b", json::array({Gce("pd")})));
  Outcome after = b.engine.Run(second);
  EXPECT_EQ(DiffOutcomes(after, b.reference.Run(second)), "");
  EXPECT_EQ(after.filter[0], PluginStatus::Make(Code::kUnschedulable, kDisk));
  EXPECT_TRUE(after.filter[1].IsSuccess());
  Pod third = DecodedPod(PodJson("c", json::array({ClaimVolume("solo")})));
  Outcome rwop = b.engine.Run(third);
  EXPECT_EQ(DiffOutcomes(rwop, b.reference.Run(third)), "");
  EXPECT_EQ(rwop.filter[1], PluginStatus::Make(Code::kUnschedulable, kRwop));
}

// ---- randomized: engine vs reference across binds -------------------------------------

struct Gen {
  std::mt19937_64 rng;
  explicit Gen(uint64_t seed) : rng(seed) {}
  int Int(int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(rng); }
  bool Chance(double p) { return std::uniform_real_distribution<double>(0, 1)(rng) < p; }

  json Volume() {
    std::string id = std::to_string(Int(0, 4));
    bool ro = Chance(0.4);
    switch (Int(0, 6)) {
      case 0: return Gce("pd" + id, ro);
      case 1: return Aws("vol-" + id, ro);
      case 2: {
        std::vector<std::string> mons;
        for (int m = Int(1, 2); m > 0; --m) mons.push_back("m" + std::to_string(Int(0, 3)));
        return Rbd(mons, Chance(0.8) ? "pool" : "other", "img" + id, ro);
      }
      case 3: return Iscsi("iqn." + id, ro);
      case 4: return ClaimVolume("c" + std::to_string(Int(0, 6)));  // c6 is missing
      case 5: return {{"name", "cm"}, {"configMap", {{"name", "x"}}}};
      default: return {{"name", "e"}, {"emptyDir", json::object()}};
    }
  }

  Pod RandomPod(const std::string& name) {
    json volumes = json::array();
    for (int v = Int(0, 3); v > 0; --v) volumes.push_back(Volume());
    return DecodedPod(PodJson(name, volumes, "", Chance(0.9) ? "default" : "other"));
  }
};

void RunSequence(uint64_t seed, int nodes, int existing, int incoming) {
  Gen g(seed);
  ObjectSet c;
  for (int i = 0; i < nodes; ++i) Add(&c, NodeJson("n" + std::to_string(i)));
  for (int k = 0; k < 6; ++k) {
    for (const char* ns : {"default", "other"}) {
      json claim = g.Chance(0.5) ? RwopClaim("c" + std::to_string(k)) : PvcJson("c" + std::to_string(k), "", "1Gi");
      claim["metadata"]["namespace"] = ns;
      Add(&c, claim);
    }
  }
  for (int k = 0; k < existing; ++k) {
    Pod p = g.RandomPod("e" + std::to_string(k));
    p.node_name = "n" + std::to_string(g.Int(0, nodes - 1));
    c.pods.push_back(p);
  }
  Both b(kPlugin, c);
  for (int k = 0; k < incoming; ++k) {
    Pod pod = g.RandomPod("in" + std::to_string(k));
    Outcome e = b.engine.Run(pod);
    ASSERT_EQ(DiffOutcomes(e, b.reference.Run(pod)), "") << "seed " << seed << " pod " << k;
    std::vector<int32_t> ok;
    for (int32_t i = 0; i < nodes; ++i) {
      if (e.filter[i].IsSuccess()) ok.push_back(i);
    }
    int32_t node = ok.empty() || g.Chance(0.2) ? g.Int(0, nodes - 1) : ok[g.Int(0, static_cast<int>(ok.size()) - 1)];
    b.Bind(pod, node);
  }
}

TEST(VolumeRestrictionsTest, EngineMatchesReferenceRandomized) {
  for (uint64_t seed = 1; seed <= 20; ++seed) RunSequence(seed, 1 + static_cast<int>(seed % 7), 8, 25);
  RunSequence(99, 33, 60, 40);
}

TEST(VolumeRestrictionsTest, CudaMatchesOmpAcrossBinds) {
  if (!engine::CudaAvailable()) GTEST_SKIP() << "no CUDA device";
  Gen g(5);
  ObjectSet c;
  for (int i = 0; i < 50; ++i) Add(&c, NodeJson("n" + std::to_string(i)));
  for (int k = 0; k < 6; ++k) Add(&c, RwopClaim("c" + std::to_string(k)));
  EngineRunner omp(kPlugin, c), cuda(kPlugin, c, {}, {}, engine::Backend::kCuda);
  for (int k = 0; k < 60; ++k) {
    Pod pod = g.RandomPod("in" + std::to_string(k));
    ASSERT_EQ(DiffOutcomes(cuda.Run(pod), omp.Run(pod)), "") << "pod " << k;
    int32_t node = g.Int(0, 49);
    omp.Bind(pod, node);
    cuda.Bind(pod, node);
  }
}

}  // namespace
}  // namespace kplace
