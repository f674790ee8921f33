#include <random>

#include <gtest/gtest.h>

#include "kplace/config/config.h"
#include "kplace/cycle/scheduler.h"
#include "kplace/state/event.h"
#include "tests/testing/volume_builders.h"

namespace kplace {
namespace {

using testing::vol::Add;
using testing::vol::Both;
using testing::vol::ClaimVolume;
using testing::vol::ClassJson;
using testing::vol::CsiNodeJson;
using testing::vol::DecodedPod;
using testing::vol::DiffOutcomes;
using testing::vol::EngineRunner;
using testing::vol::EphemeralVolume;
using testing::vol::json;
using testing::vol::NodeJson;
using testing::vol::Outcome;
using testing::vol::PodJson;
using testing::vol::PvcJson;
using testing::vol::PvJson;

constexpr char kPlugin[] = "NodeVolumeLimits";
constexpr char kExceed[] = "node(s) exceed max volume count";
constexpr char kEbs[] = "ebs.csi.aws.com";

json CsiPv(const std::string& name, const std::string& driver, const std::string& handle) {
  json pv = PvJson(name, "", "1Gi");
  pv["spec"]["csi"] = {{"driver", driver}, {"volumeHandle", handle}};
  return pv;
}

json EbsPv(const std::string& name, const std::string& id) {
  json pv = PvJson(name, "", "1Gi");
  pv["spec"]["awsElasticBlockStore"] = {{"volumeID", id}};
  return pv;
}

json Attachment(const std::string& name, const std::string& node, const std::string& attacher, const std::string& pv) {
  return {{"kind", "VolumeAttachment"},
          {"metadata", {{"name", name}}},
          {"spec", {{"attacher", attacher}, {"nodeName", node}, {"source", {{"persistentVolumeName", pv}}}}}};
}

json Driver(const std::string& name, bool prevent) {
  return {{"kind", "CSIDriver"}, {"metadata", {{"name", name}}}, {"spec", {{"preventPodSchedulingIfMissing", prevent}}}};
}

Pod ClaimPod(const std::string& name, const std::vector<std::string>& claims, const std::string& node = "") {
  json volumes = json::array();
  for (const auto& c : claims) volumes.push_back(ClaimVolume(c, "v-" + c));
  return DecodedPod(PodJson(name, volumes, node));
}

Outcome Check(const ObjectSet& cluster, const Pod& pod, const FeatureGates& gates = {}) {
  Both b(kPlugin, cluster, {}, gates);
  Outcome e = b.engine.Run(pod), r = b.reference.Run(pod);
  EXPECT_EQ(DiffOutcomes(e, r), "");
  return e;
}

// Three nodes: "limited" (csi.example: 2 volumes, EBS: 1), "unlimited" (CSINode without
// counts), "bare" (no CSINode). Claims c0..c4 are bound to CSI PVs of csi.example.
ObjectSet Cluster() {
  ObjectSet c;
  for (const char* n : {"limited", "unlimited", "bare"}) Add(&c, NodeJson(n));
  Add(&c, CsiNodeJson("limited", {{"csi.example", 2}, {kEbs, 1}}));
  Add(&c, CsiNodeJson("unlimited", {{"csi.example", -1}}));
  for (int k = 0; k < 5; ++k) {
    std::string s = std::to_string(k);
    Add(&c, CsiPv("pv" + s, "csi.example", "h" + s));
    Add(&c, PvcJson("c" + s, "", "1Gi", "pv" + s, true));
  }
  return c;
}

TEST(NodeVolumeLimitsTest, PodsWithoutCountedVolumesSkip) {
  ObjectSet c = Cluster();
  Outcome none = Check(c, DecodedPod(PodJson("p", json::array())));
  EXPECT_TRUE(none.pre_filter.IsSkip());
  EXPECT_TRUE(none.filter[0].IsSuccess());
  Outcome cm = Check(c, DecodedPod(PodJson("p", json::array({{{"name", "cm"}, {"configMap", {{"name", "x"}}}}}))));
  EXPECT_TRUE(cm.pre_filter.IsSkip());
  EXPECT_TRUE(cm.filter[0].IsSuccess());
}

TEST(NodeVolumeLimitsTest, CountsDistinctVolumesPerDriver) {
  ObjectSet c = Cluster();
  c.pods.push_back(ClaimPod("a", {"c0"}, "limited"));
  c.pods.push_back(ClaimPod("b", {"c1", "c0"}, "limited"));
  c.pods.push_back(ClaimPod("x", {"c2", "c3", "c4"}, "unlimited"));
  // Two distinct volumes attached, limit 2: a third does not fit, a shared one does.
  Outcome more = Check(c, ClaimPod("p", {"c2"}));
  EXPECT_TRUE(more.pre_filter.IsSuccess());
  EXPECT_EQ(more.filter[0], PluginStatus::Make(Code::kUnschedulable, kExceed));
  EXPECT_TRUE(more.filter[1].IsSuccess());
  EXPECT_TRUE(more.filter[2].IsSuccess());
  EXPECT_TRUE(Check(c, ClaimPod("p", {"c1", "c0"})).filter[0].IsSuccess());
  EXPECT_EQ(Check(c, ClaimPod("p", {"c1", "c2"})).filter[0], PluginStatus::Make(Code::kUnschedulable, kExceed));
  // Over the limit already: a pod adding no new volume of the driver is not checked.
  c.pods.push_back(ClaimPod("over", {"c4"}, "limited"));
  EXPECT_TRUE(Check(c, ClaimPod("p", {"c0"})).filter[0].IsSuccess());
}

TEST(NodeVolumeLimitsTest, UnboundClaimsCountByProvisioner) {
  ObjectSet c = Cluster();
  Add(&c, ClassJson("csi", "WaitForFirstConsumer", "csi.example"));
  Add(&c, ClassJson("ebs", "WaitForFirstConsumer", "kubernetes.io/aws-ebs"));
  Add(&c, ClassJson("none", "WaitForFirstConsumer", ""));
  for (const char* name : {"u1", "u2"}) Add(&c, PvcJson(name, "csi", "1Gi"));
  Add(&c, PvcJson("e1", "ebs", "1Gi"));
  Add(&c, PvcJson("e2", "ebs", "1Gi"));
  Add(&c, PvcJson("n1", "none", "1Gi"));
  Add(&c, PvcJson("ghost", "missing-class", "1Gi"));
  c.pods.push_back(ClaimPod("a", {"u1", "c0"}, "limited"));
  // The same unbound claim counts once; a new one is a third volume.
  EXPECT_TRUE(Check(c, ClaimPod("p", {"u1"})).filter[0].IsSuccess());
  EXPECT_EQ(Check(c, ClaimPod("p", {"u2"})).filter[0], PluginStatus::Make(Code::kUnschedulable, kExceed));
  // In-tree provisioners count under their CSI driver where the node has a CSINode.
  EXPECT_TRUE(Check(c, ClaimPod("p", {"e1"})).filter[0].IsSuccess());
  Outcome two = Check(c, ClaimPod("p", {"e1", "e2"}));
  EXPECT_EQ(two.filter[0], PluginStatus::Make(Code::kUnschedulable, kExceed));
  EXPECT_TRUE(two.filter[2].IsSuccess());
  // An empty provisioner or a missing class is not counted.
  EXPECT_TRUE(Check(c, ClaimPod("p", {"n1", "ghost", "c0"})).filter[0].IsSuccess());
}

TEST(NodeVolumeLimitsTest, InTreeAndInlineVolumesMigrate) {
  ObjectSet c = Cluster();
  Add(&c, EbsPv("ebs-a", "aws://us-east-1a/vol-a"));
  Add(&c, PvcJson("ea", "", "1Gi", "ebs-a", true));
  c.pods.push_back(DecodedPod(PodJson("inline", json::array({{{"name", "x"}, {"awsElasticBlockStore", {{"volumeID", "vol-a"}}}}}), "limited")));
  // The PV's translated handle equals the inline volume's: one volume, fits the limit of 1.
  EXPECT_TRUE(Check(c, ClaimPod("p", {"ea"})).filter[0].IsSuccess());
  Outcome other = Check(c, DecodedPod(PodJson("p", json::array({{{"name", "y"}, {"awsElasticBlockStore", {{"volumeID", "vol-b"}}}}}))));
  EXPECT_TRUE(other.pre_filter.IsSuccess());
  EXPECT_EQ(other.filter[0], PluginStatus::Make(Code::kUnschedulable, kExceed));
  Outcome bad = Check(c, DecodedPod(PodJson("p", json::array({{{"name", "y"}, {"awsElasticBlockStore", {{"volumeID", "aws://zone/nope"}}}}}))));
  EXPECT_EQ(bad.filter[0].code, Code::kError);
  EXPECT_EQ(bad.filter[0].reasons.at(0),
            "converting volume(y) from inline to csi: failed to translate Kubernetes ID to EBS Volume ID Invalid format "
            "for AWS volume (aws://zone/nope)");
  EXPECT_TRUE(bad.filter[2].IsSuccess());  // no CSINode: migration off, nothing counted
}

TEST(NodeVolumeLimitsTest, VolumeAttachmentsCount) {
  ObjectSet c = Cluster();
  Add(&c, Attachment("va0", "limited", "csi.example", "pv0"));
  Add(&c, Attachment("va1", "limited", "csi.example", "pv1"));
  Add(&c, Attachment("va2", "unlimited", "csi.example", "pv2"));
  EXPECT_EQ(Check(c, ClaimPod("p", {"c2"})).filter[0], PluginStatus::Make(Code::kUnschedulable, kExceed));
  // Attachments are not de-duplicated against the pod's own volumes.
  EXPECT_EQ(Check(c, ClaimPod("p", {"c0"})).filter[0], PluginStatus::Make(Code::kUnschedulable, kExceed));
  // A volume a pod on the node uses counts once.
  c.pods.push_back(ClaimPod("a", {"c0"}, "limited"));
  EXPECT_TRUE(Check(c, ClaimPod("p", {"c0"})).filter[0].IsSuccess());
}

TEST(NodeVolumeLimitsTest, DriverMustBeInstalledWhenItSaysSo) {
  ObjectSet c = Cluster();
  Add(&c, Driver("csi.example", true));
  Outcome o = Check(c, ClaimPod("p", {"c0"}));
  EXPECT_TRUE(o.filter[0].IsSuccess());
  EXPECT_TRUE(o.filter[1].IsSuccess());
  EXPECT_EQ(o.filter[2], PluginStatus::Make(Code::kUnschedulable, "csi.example CSI driver is not installed on the node"));
  FeatureGates off;
  off.overrides["VolumeLimitScaling"] = false;
  EXPECT_TRUE(Check(c, ClaimPod("p", {"c0"}), off).filter[2].IsSuccess());
}

TEST(NodeVolumeLimitsTest, LookupErrors) {
  ObjectSet c = Cluster();
  Outcome missing = Check(c, ClaimPod("p", {"nope"}));
  EXPECT_TRUE(missing.pre_filter.IsSuccess());
  EXPECT_EQ(missing.filter[2], PluginStatus::Make(Code::kUnschedulableAndUnresolvable,
                                                  "looking up PVC default/nope: persistentvolumeclaim \"nope\" not found"));
  Add(&c, PvcJson("p-eph", "", "1Gi", "pv0", true));  // not owned by the pod
  Outcome eph = Check(c, DecodedPod(PodJson("p", json::array({EphemeralVolume("eph")}))));
  EXPECT_EQ(eph.filter[0], PluginStatus::Error("PVC default/p-eph was not created for pod default/p (pod is not owner)"));
  // A bound pod whose volumes fail makes the node an Error, where limits are checked.
  c.pods.push_back(DecodedPod(PodJson("p", json::array({EphemeralVolume("eph")}), "limited")));
  Outcome node = Check(c, ClaimPod("q", {"c1"}));
  EXPECT_EQ(node.filter[0].code, Code::kError);
  // An existing pod's missing claim is simply not counted.
  ObjectSet d = Cluster();
  d.pods.push_back(ClaimPod("old", {"gone", "c0"}, "limited"));
  EXPECT_TRUE(Check(d, ClaimPod("q", {"c1"})).filter[0].IsSuccess());
}

// ---- randomized: engine vs reference across binds -------------------------------------

struct Gen {
  std::mt19937_64 rng;
  explicit Gen(uint64_t seed) : rng(seed) {}
  int Int(int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(rng); }
  bool Chance(double p) { return std::uniform_real_distribution<double>(0, 1)(rng) < p; }

  ObjectSet Cluster(int nodes) {
    ObjectSet c;
    const std::vector<std::string> drivers = {"d1", "d2", kEbs, "pd.csi.storage.gke.io"};
    for (int i = 0; i < nodes; ++i) {
      std::string n = "n" + std::to_string(i);
      Add(&c, NodeJson(n));
      if (Chance(0.15)) continue;  // no CSINode
      std::vector<std::pair<std::string, int>> list;
      for (const auto& d : drivers) {
        if (Chance(0.7)) list.emplace_back(d, Chance(0.8) ? Int(0, 4) : -1);
      }
      Add(&c, CsiNodeJson(n, list));
    }
    for (const auto& d : {"d1", "d2"}) {
      if (Chance(0.5)) Add(&c, Driver(d, Chance(0.5)));
      Add(&c, ClassJson(std::string("sc-") + d, "WaitForFirstConsumer", d));
    }
    Add(&c, ClassJson("sc-ebs", "WaitForFirstConsumer", "kubernetes.io/aws-ebs"));
    Add(&c, ClassJson("sc-file", "WaitForFirstConsumer", "kubernetes.io/azure-file"));
    for (int k = 0; k < 12; ++k) {
      std::string s = std::to_string(k);
      int kind = Int(0, 4);
      if (kind == 0) {
        Add(&c, CsiPv("pv" + s, Chance(0.5) ? "d1" : "d2", "h" + std::to_string(Int(0, 8))));
      } else if (kind == 1) {
        Add(&c, EbsPv("pv" + s, Chance(0.2) ? "aws://z/bad/x" : "vol-" + std::to_string(Int(0, 6))));
      } else if (kind == 2) {
        json pv = PvJson("pv" + s, "", "1Gi", nullptr, {{"topology.kubernetes.io/zone", Chance(0.5) ? "a" : "a__b"}});
        pv["spec"]["gcePersistentDisk"] = {{"pdName", "pd" + std::to_string(Int(0, 3))}};
        Add(&c, pv);
      } else if (kind == 3) {
        json pv = PvJson("pv" + s, "", "1Gi");
        pv["spec"]["hostPath"] = {{"path", "/x"}};
        Add(&c, pv);
      }
      static const std::vector<std::string> classes = {"sc-d1", "sc-d2", "sc-ebs", "sc-file", "", "nope"};
      Add(&c, PvcJson("c" + s, classes[Int(0, 5)], "1Gi", kind == 4 || Chance(0.2) ? "" : "pv" + s, true));
      if (Chance(0.3)) {
        Add(&c, Attachment("va" + s, "n" + std::to_string(Int(0, nodes - 1)), Chance(0.9) ? "d1" : "", "pv" + s));
      }
    }
    return c;
  }

  Pod RandomPod(const std::string& name) {
    json volumes = json::array();
    for (int v = Int(0, 3); v > 0; --v) {
      std::string n = "v" + std::to_string(v);
      switch (Int(0, 5)) {
        case 0: case 1: volumes.push_back(ClaimVolume("c" + std::to_string(Int(0, 12)), n)); break;
        case 2: volumes.push_back({{"name", n}, {"awsElasticBlockStore", {{"volumeID", "vol-" + std::to_string(Int(0, 6))}}}}); break;
        case 3: volumes.push_back({{"name", n}, {"gcePersistentDisk", {{"pdName", "pd" + std::to_string(Int(0, 3))}}}}); break;
        case 4: volumes.push_back(EphemeralVolume(n)); break;
        default: volumes.push_back({{"name", n}, {"emptyDir", json::object()}});
      }
    }
    return DecodedPod(PodJson(name, volumes, "", "default", "uid-" + name));
  }
};

void RunSequence(uint64_t seed, int nodes, int existing, int incoming) {
  Gen g(seed);
  ObjectSet c = g.Cluster(nodes);
  // Some ephemeral claims exist, owned by the pod they are named after (or not).
  for (int k = 0; k < existing + incoming; ++k) {
    for (const char* prefix : {"e", "in"}) {
      std::string pod = prefix + std::to_string(k);
      for (int v = 1; v <= 3; ++v) {
        if (!g.Chance(0.5)) continue;
        json claim = PvcJson(pod + "-v" + std::to_string(v), g.Chance(0.5) ? "sc-d1" : "sc-ebs", "1Gi");
        std::string uid = g.Chance(0.9) ? "uid-" + pod : "someone";
        claim["metadata"]["ownerReferences"] = {{{"kind", "Pod"}, {"name", pod}, {"uid", uid}, {"controller", true}}};
        Add(&c, claim);
      }
    }
  }
  for (int k = 0; k < existing; ++k) {
    Pod p = g.RandomPod("e" + std::to_string(k));
    p.node_name = "n" + std::to_string(g.Int(0, nodes - 1));
    c.pods.push_back(p);
  }
  FeatureGates gates;
  if (g.Chance(0.3)) gates.overrides["VolumeLimitScaling"] = false;
  Both b(kPlugin, c, {}, gates);
  ObjectSet bound = c;
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
    bound.pods.push_back(pod);
    bound.pods.back().node_name = "n" + std::to_string(node);
  }
  // The incrementally updated engine agrees with one built over the bound cluster.
  EngineRunner fresh(kPlugin, bound, {}, gates);
  for (int k = 0; k < 10; ++k) {
    Pod pod = g.RandomPod("probe" + std::to_string(k));
    ASSERT_EQ(DiffOutcomes(b.engine.Run(pod), fresh.Run(pod)), "") << "seed " << seed << " probe " << k;
  }
}

TEST(NodeVolumeLimitsTest, EngineMatchesReferenceRandomized) {
  for (uint64_t seed = 1; seed <= 20; ++seed) RunSequence(seed, 1 + static_cast<int>(seed % 6), 10, 20);
  RunSequence(77, 40, 80, 30);
}

// A node deleted inside a transaction and brought back by its revert (a drain what-if)
// takes its row back in place: every node's verdict is then a fresh scheduler's, through
// the cycle's own Filter (the default profile runs NodeVolumeLimits), and so is the verdict
// with the node gone.
TEST(NodeVolumeLimitsTest, NodeDeletedAndRevertedDecidesAsAFreshState) {
  int64_t limited = 0;
  for (uint64_t seed = 1; seed <= 12; ++seed) {
    Gen g(seed);
    const int nodes = 2 + g.Int(0, 12);
    ObjectSet c = g.Cluster(nodes);
    for (Node& n : c.nodes) {  // room for pods: only volumes limit them
      ObjectSet room;
      Add(&room, {{"kind", "Node"},
                  {"metadata", {{"name", n.meta.name}}},
                  {"status", {{"allocatable", {{"pods", "110"}, {"cpu", "64"}, {"memory", "256Gi"}}}}}});
      n.allocatable = room.nodes[0].allocatable;
    }
    for (int k = 0; k < 3 * nodes; ++k) {
      Pod p = g.RandomPod("e" + std::to_string(k));
      p.node_name = "n" + std::to_string(g.Int(0, nodes - 1));
      c.pods.push_back(p);
    }
    auto s = cycle::Scheduler::Create(c, DefaultSchedulerConfig(), cycle::Options{});
    ASSERT_TRUE(s.ok()) << s.status();
    auto verdicts = [&](cycle::Scheduler& sched, const Pod& pod) {
      auto fits = sched.Filter(pod, {}, false);
      EXPECT_TRUE(fits.ok()) << fits.status();
      std::string out;
      for (const cycle::NodeFit& f : *fits) {
        out += f.node + ": " + f.plugin + " " + f.status.Message() + "\n";
        limited += f.plugin == kPlugin;
      }
      return out;
    };
    for (int round = 0; round < 3; ++round) {
      const std::string gone = "n" + std::to_string(g.Int(0, nodes - 1));
      ASSERT_TRUE((*s)->state().Begin().ok());
      ASSERT_TRUE((*s)->state().Apply(state::NodeEvent(state::EventType::kDeleted, c.nodes[std::stoi(gone.substr(1))])).ok());
      ObjectSet without = c;
      without.nodes.erase(without.nodes.begin() + std::stoi(gone.substr(1)));
      std::vector<Pod> kept;
      for (const Pod& p : without.pods) {
        if (p.node_name != gone) kept.push_back(p);
      }
      without.pods = kept;
      auto fresh_without = cycle::Scheduler::Create(without, DefaultSchedulerConfig(), cycle::Options{});
      ASSERT_TRUE(fresh_without.ok());
      const Pod probe = g.RandomPod("probe" + std::to_string(round));
      std::string a = verdicts(**s, probe), b = verdicts(**fresh_without, probe);
      ASSERT_EQ(a, b) << "seed " << seed << " without " << gone;
      ASSERT_TRUE((*s)->state().Revert().ok());
      auto fresh = cycle::Scheduler::Create(c, DefaultSchedulerConfig(), cycle::Options{});
      ASSERT_TRUE(fresh.ok());
      for (int k = 0; k < 4; ++k) {
        const Pod pod = g.RandomPod("probe" + std::to_string(round) + "-" + std::to_string(k));
        a = verdicts(**s, pod);
        b = verdicts(**fresh, pod);
        ASSERT_EQ(a, b) << "seed " << seed << " after " << gone << " came back";
      }
    }
  }
  EXPECT_GT(limited, 20);
}

TEST(NodeVolumeLimitsTest, CudaMatchesOmpAcrossBinds) {
  if (!engine::CudaAvailable()) GTEST_SKIP() << "no CUDA device";
  for (uint64_t seed = 1; seed <= 10; ++seed) {
    Gen g(seed);
    const int nodes = 1 + g.Int(0, 40);
    ObjectSet c = g.Cluster(nodes);
    EngineRunner omp(kPlugin, c), cuda(kPlugin, c, {}, {}, engine::Backend::kCuda);
    for (int k = 0; k < 30; ++k) {
      Pod pod = g.RandomPod("in" + std::to_string(k));
      ASSERT_EQ(DiffOutcomes(cuda.Run(pod), omp.Run(pod)), "") << "seed " << seed << " pod " << k;
      int32_t node = g.Int(0, nodes - 1);
      omp.Bind(pod, node);
      cuda.Bind(pod, node);
    }
  }
}

}  // namespace
}  // namespace kplace
