#include <memory>
#include <random>

#include <gtest/gtest.h>

#include "tests/testing/volume_builders.h"

namespace kplace {
namespace {

using testing::vol::Add;
using testing::vol::Both;
using testing::vol::ClaimVolume;
using testing::vol::ClassJson;
using testing::vol::DecodedPod;
using testing::vol::DiffOutcomes;
using testing::vol::EngineRunner;
using testing::vol::json;
using testing::vol::NodeJson;
using testing::vol::Outcome;
using testing::vol::PodJson;
using testing::vol::PvcJson;
using testing::vol::PvJson;

constexpr char kPlugin[] = "VolumeZone";
constexpr char kBetaZone[] = "failure-domain.beta.kubernetes.io/zone";
constexpr char kBetaRegion[] = "failure-domain.beta.kubernetes.io/region";
constexpr char kZone[] = "topology.kubernetes.io/zone";
constexpr char kRegion[] = "topology.kubernetes.io/region";
constexpr char kConflict[] = "node(s) had no available volume zone";

Outcome Check(const ObjectSet& cluster, const Pod& pod) {
  Both b(kPlugin, cluster);
  Outcome e = b.engine.Run(pod), r = b.reference.Run(pod);
  EXPECT_EQ(DiffOutcomes(e, r), "");
  return e;
}

// One PV per label set, bound to a claim of the same name.
void AddBoundClaim(ObjectSet* c, const std::string& name, const json& labels) {
  Add(c, PvJson("pv-" + name, "", "1Gi", nullptr, labels));
  Add(c, PvcJson(name, "", "1Gi", "pv-" + name, true));
}

Pod ClaimPod(const std::vector<std::string>& claims) {
  json volumes = json::array();
  for (const auto& claim : claims) volumes.push_back(ClaimVolume(claim));
  return DecodedPod(PodJson("p", volumes));
}

PluginStatus Uau(const std::string& reason) { return PluginStatus::Make(Code::kUnschedulableAndUnresolvable, reason); }

TEST(VolumeZoneTest, PodWithoutVolumesSkips) {
  ObjectSet c;
  Add(&c, NodeJson("n0", {{kZone, "a"}}));
  Outcome o = Check(c, DecodedPod(PodJson("p", json::array())));
  EXPECT_TRUE(o.pre_filter.IsSkip());
  EXPECT_TRUE(o.filter[0].IsSuccess());
}

TEST(VolumeZoneTest, ZoneAndRegionLabels) {
  ObjectSet c;
  Add(&c, NodeJson("beta-a", {{kBetaZone, "a"}, {kBetaRegion, "r1"}}));
  Add(&c, NodeJson("ga-a", {{kZone, "a"}, {kRegion, "r1"}}));
  Add(&c, NodeJson("ga-b", {{kZone, "b"}, {kRegion, "r1"}}));
  Add(&c, NodeJson("unlabeled", {{"other", "x"}}));
  Add(&c, NodeJson("region-only", {{kRegion, "r2"}}));
  AddBoundClaim(&c, "beta", {{kBetaZone, "a"}});
  AddBoundClaim(&c, "ga", {{kZone, "a"}});
  AddBoundClaim(&c, "multi", {{kZone, "b__ a "}});
  AddBoundClaim(&c, "bad", {{kZone, "a__"}});  // an empty part: label ignored
  AddBoundClaim(&c, "other-zone", {{kZone, "b"}});

  // A beta key on the PV falls back to the node's GA key.
  Outcome beta = Check(c, ClaimPod({"beta"}));
  EXPECT_TRUE(beta.pre_filter.IsSuccess());
  EXPECT_TRUE(beta.filter[0].IsSuccess());
  EXPECT_TRUE(beta.filter[1].IsSuccess());
  EXPECT_EQ(beta.filter[2], Uau(kConflict));
  EXPECT_TRUE(beta.filter[3].IsSuccess());  // no topology label at all
  EXPECT_EQ(beta.filter[4], Uau(kConflict));

  // A GA key never falls back to the beta key.
  Outcome ga = Check(c, ClaimPod({"ga"}));
  EXPECT_EQ(ga.filter[0], Uau(kConflict));
  EXPECT_TRUE(ga.filter[1].IsSuccess());

  Outcome multi = Check(c, ClaimPod({"multi"}));
  EXPECT_TRUE(multi.filter[1].IsSuccess());
  EXPECT_TRUE(multi.filter[2].IsSuccess());

  EXPECT_TRUE(Check(c, ClaimPod({"bad"})).pre_filter.IsSkip());

  // Two PVs constrain the same key: both must hold.
  Outcome both = Check(c, ClaimPod({"ga", "other-zone"}));
  EXPECT_EQ(both.filter[1], Uau(kConflict));
  EXPECT_EQ(both.filter[2], Uau(kConflict));
  EXPECT_TRUE(both.filter[3].IsSuccess());
}

TEST(VolumeZoneTest, UnboundClaims) {
  ObjectSet c;
  Add(&c, NodeJson("n0", {{kZone, "a"}}));
  Add(&c, ClassJson("wait", "WaitForFirstConsumer"));
  Add(&c, ClassJson("now", "Immediate"));
  Add(&c, ClassJson("unset", ""));
  Add(&c, PvcJson("wffc", "wait", "1Gi"));
  Add(&c, PvcJson("immediate", "now", "1Gi"));
  Add(&c, PvcJson("nomode", "unset", "1Gi"));
  Add(&c, PvcJson("noclass", "", "1Gi"));
  Add(&c, PvcJson("ghostclass", "ghost", "1Gi"));
  Add(&c, PvcJson("ghostpv", "", "1Gi", "missing", true));
  json annotated = PvcJson("annotated", "", "1Gi");
  annotated["metadata"]["annotations"] = {{"volume.beta.kubernetes.io/storage-class", "wait"}};
  Add(&c, annotated);

  EXPECT_TRUE(Check(c, ClaimPod({"wffc"})).pre_filter.IsSkip());
  EXPECT_TRUE(Check(c, ClaimPod({"annotated"})).pre_filter.IsSkip());
  const std::vector<std::pair<std::string, std::string>> failures = {
      {"immediate", "PersistentVolume had no name"},
      {"nomode", "VolumeBindingMode not set for StorageClass \"unset\""},
      {"noclass", "PersistentVolumeClaim had no pv name and storageClass name"},
      {"ghostclass", "storageclass.storage.k8s.io \"ghost\" not found"},
      {"ghostpv", "persistentvolume \"missing\" not found"},
      {"absent", "persistentvolumeclaim \"absent\" not found"},
      {"", "PersistentVolumeClaim had no name"},
  };
  for (const auto& [claim, reason] : failures) {
    Outcome o = Check(c, ClaimPod({claim}));
    EXPECT_EQ(o.pre_filter, Uau(reason)) << claim;
    EXPECT_EQ(o.filter[0], Uau(reason)) << claim;  // Filter recomputes without PreFilter state
  }
}

// ---- randomized ----------------------------------------------------------------------

TEST(VolumeZoneTest, EngineMatchesReferenceRandomized) {
  const std::vector<std::string> keys = {kBetaZone, kBetaRegion, kZone, kRegion};
  const std::vector<std::string> values = {"a", "b", "c", "a__b", " b __c", "a__", "zz"};
  for (uint64_t seed = 1; seed <= 40; ++seed) {
    std::mt19937_64 rng(seed);
    auto chance = [&](double p) { return std::uniform_real_distribution<double>(0, 1)(rng) < p; };
    auto pick = [&](const std::vector<std::string>& v) { return v[rng() % v.size()]; };
    ObjectSet c;
    int nodes = 1 + static_cast<int>(rng() % 40);
    for (int i = 0; i < nodes; ++i) {
      json labels = json::object();
      for (const auto& k : keys) {
        if (chance(0.35)) labels[k] = pick({"a", "b", "c"});
      }
      Add(&c, NodeJson("n" + std::to_string(i), labels));
    }
    Add(&c, ClassJson("wait", "WaitForFirstConsumer"));
    Add(&c, ClassJson("now", "Immediate"));
    for (int k = 0; k < 8; ++k) {
      json labels = json::object();
      for (const auto& key : keys) {
        if (chance(0.3)) labels[key] = pick(values);
      }
      std::string name = "c" + std::to_string(k);
      if (chance(0.8)) {
        Add(&c, PvJson("pv" + std::to_string(k), "", "1Gi", nullptr, labels));
        Add(&c, PvcJson(name, "", "1Gi", chance(0.95) ? "pv" + std::to_string(k) : "gone", true));
      } else {
        Add(&c, PvcJson(name, chance(0.8) ? "wait" : "now", "1Gi"));
      }
    }
    Both b(kPlugin, c);
    // With a device, the CUDA build of the kernel must agree too.
    std::unique_ptr<EngineRunner> cuda;
    if (engine::CudaAvailable()) cuda = std::make_unique<EngineRunner>(kPlugin, c, PluginArgs{}, FeatureGates{}, engine::Backend::kCuda);
    for (int p = 0; p < 20; ++p) {
      json volumes = json::array();
      for (int v = static_cast<int>(rng() % 4); v > 0; --v) {
        if (chance(0.8)) {
          volumes.push_back(ClaimVolume("c" + std::to_string(rng() % 9), "v" + std::to_string(v)));
        } else {
          volumes.push_back({{"name", "e" + std::to_string(v)}, {"emptyDir", json::object()}});
        }
      }
      Pod pod = DecodedPod(PodJson("p", volumes));
      Outcome e = b.engine.Run(pod);
      ASSERT_EQ(DiffOutcomes(e, b.reference.Run(pod)), "") << "seed " << seed << " pod " << p;
      if (cuda) ASSERT_EQ(DiffOutcomes(cuda->Run(pod), e), "") << "cuda, seed " << seed << " pod " << p;
    }
  }
}

}  // namespace
}  // namespace kplace
