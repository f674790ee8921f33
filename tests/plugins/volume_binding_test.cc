#include <map>
#include <random>
#include <set>
#include <stdexcept>

#include <gtest/gtest.h>

#include "kplace/cycle/scheduler.h"
#include "tests/testing/differential.h"
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
using testing::vol::InTerm;
using testing::vol::json;
using testing::vol::NodeJson;
using testing::vol::Outcome;
using testing::vol::PodJson;
using testing::vol::PvcJson;
using testing::vol::PvJson;

constexpr char kPlugin[] = "VolumeBinding";
constexpr char kHost[] = "kubernetes.io/hostname";
constexpr char kZone[] = "topology.kubernetes.io/zone";
constexpr char kAffinity[] = "node(s) didn't match PersistentVolume's node affinity";
constexpr char kUnbound[] = "node(s) didn't find available persistent volumes to bind";
constexpr char kSpace[] = "node(s) did not have enough free storage";
constexpr char kMissing[] = "node(s) unavailable due to one or more pvc(s) bound to non-existent pv(s)";

PluginStatus Uau(std::vector<std::string> reasons) { return {Code::kUnschedulableAndUnresolvable, std::move(reasons)}; }

Pod ClaimPod(const std::vector<std::string>& claims, const std::string& name = "p") {
  json volumes = json::array();
  for (const auto& c : claims) volumes.push_back(ClaimVolume(c, "v-" + c));
  return DecodedPod(PodJson(name, volumes, "", "default", "pod-uid"));
}

Outcome Check(const ObjectSet& cluster, const Pod& pod, const PluginArgs& args = {}, const FeatureGates& gates = {}) {
  Both b(kPlugin, cluster, args, gates);
  Outcome e = b.engine.Run(pod), r = b.reference.Run(pod);
  EXPECT_EQ(DiffOutcomes(e, r), "");
  return e;
}

json Capacity(const std::string& name, const std::string& class_name, const json& topology, const std::string& capacity,
              const std::string& max_size = "") {
  json c = {{"kind", "CSIStorageCapacity"}, {"metadata", {{"name", name}, {"namespace", "kube-system"}}},
            {"storageClassName", class_name}};
  if (!topology.is_null()) c["nodeTopology"] = topology;
  if (!capacity.empty()) c["capacity"] = capacity;
  if (!max_size.empty()) c["maximumVolumeSize"] = max_size;
  return c;
}

json CapacityDriver(const std::string& name) {
  return {{"kind", "CSIDriver"}, {"metadata", {{"name", name}}}, {"spec", {{"storageCapacity", true}}}};
}

// Nodes n0..n2 in zones a, a, b; local PVs on n0 (10Gi, 20Gi) and n1 (50Gi) of class
// "local" (WaitForFirstConsumer, no provisioner); class "fast" provisions through a
// CSI driver that opts into capacity checks.
ObjectSet Cluster() {
  ObjectSet c;
  Add(&c, NodeJson("n0", {{kHost, "n0"}, {kZone, "a"}}));
  Add(&c, NodeJson("n1", {{kHost, "n1"}, {kZone, "a"}}));
  Add(&c, NodeJson("n2", {{kHost, "n2"}, {kZone, "b"}}));
  Add(&c, ClassJson("local", "WaitForFirstConsumer", "kubernetes.io/no-provisioner"));
  Add(&c, ClassJson("fast", "WaitForFirstConsumer", "fast.csi",
                    json::array({{{"matchLabelExpressions", json::array({{{"key", kZone}, {"values", {"a", "b"}}}})}}})));
  Add(&c, ClassJson("zonal", "WaitForFirstConsumer", "zonal.csi",
                    json::array({{{"matchLabelExpressions", json::array({{{"key", kZone}, {"values", {"b"}}}})}}})));
  Add(&c, ClassJson("now", "Immediate", "fast.csi"));
  Add(&c, CapacityDriver("fast.csi"));
  Add(&c, PvJson("local-n0-small", "local", "10Gi", json::array({InTerm(kHost, {"n0"})})));
  Add(&c, PvJson("local-n0-big", "local", "20Gi", json::array({InTerm(kHost, {"n0"})})));
  Add(&c, PvJson("local-n1", "local", "50Gi", json::array({InTerm(kHost, {"n1"})})));
  Add(&c, PvJson("zonal-a", "", "5Gi", json::array({InTerm(kZone, {"a"})})));
  Add(&c, PvcJson("bound-a", "", "5Gi", "zonal-a", true));
  Add(&c, PvcJson("bound-gone", "", "5Gi", "no-such-pv", true));
  Add(&c, PvcJson("w8", "local", "8Gi"));
  Add(&c, PvcJson("w15", "local", "15Gi"));
  Add(&c, PvcJson("w40", "local", "40Gi"));
  Add(&c, PvcJson("w100", "local", "100Gi"));
  Add(&c, PvcJson("fast30", "fast", "30Gi"));
  Add(&c, PvcJson("fast-noreq", "fast", ""));
  Add(&c, PvcJson("zonal1", "zonal", "1Gi"));
  Add(&c, PvcJson("imm", "now", "1Gi"));
  Add(&c, Capacity("cap-a", "fast", {{"matchLabels", {{kZone, "a"}}}}, "100Gi"));
  Add(&c, Capacity("cap-b", "fast", {{"matchLabels", {{kZone, "b"}}}}, "20Gi"));
  return c;
}

TEST(VolumeBindingTest, PodWithoutClaims) {
  ObjectSet c = Cluster();
  Outcome o = Check(c, DecodedPod(PodJson("p", json::array({{{"name", "cm"}, {"configMap", {{"name", "x"}}}}}))));
  EXPECT_TRUE(o.pre_filter.IsSkip());
  EXPECT_TRUE(o.filter[0].IsSuccess());
  EXPECT_TRUE(o.pre_score.IsSuccess());  // StorageCapacityScoring is on at v1.37
  EXPECT_EQ(o.raw, (std::vector<int64_t>{0, 0, 0}));
  FeatureGates off;
  off.overrides["StorageCapacityScoring"] = false;
  EXPECT_TRUE(Check(c, DecodedPod(PodJson("p", json::array())), {}, off).pre_score.IsSkip());
}

TEST(VolumeBindingTest, BoundClaims) {
  ObjectSet c = Cluster();
  Outcome a = Check(c, ClaimPod({"bound-a"}));
  EXPECT_TRUE(a.pre_filter.IsSuccess());
  EXPECT_TRUE(a.filter[0].IsSuccess());
  EXPECT_EQ(a.filter[2], Uau({kAffinity}));
  Outcome gone = Check(c, ClaimPod({"bound-gone", "bound-a"}));
  EXPECT_EQ(gone.filter[2], Uau({kMissing}));
  // Reasons keep their fixed order whatever the claims' order.
  Outcome both = Check(c, ClaimPod({"bound-a", "w100"}));
  EXPECT_EQ(both.filter[2], Uau({kAffinity, kUnbound}));
}

TEST(VolumeBindingTest, PvAffinityIsMatchedAgainstANamelessNode) {
  // CheckNodeAffinity builds a node with the labels only: matchFields are not checked
  // (nodeaffinity skips them for a node without a name), so a matchFields-only term
  // admits every node, while an empty term list admits none.
  ObjectSet c;
  Add(&c, NodeJson("n0", {{kHost, "n0"}}));
  Add(&c, NodeJson("n1", {{kHost, "n1"}}));
  json fields = json::array({{{"matchFields", json::array({{{"key", "metadata.name"}, {"operator", "In"}, {"values", {"n0"}}}})}}});
  Add(&c, PvJson("by-name", "", "1Gi", fields));
  Add(&c, PvJson("no-terms", "", "1Gi", json::array()));
  Add(&c, PvcJson("a", "", "1Gi", "by-name", true));
  Add(&c, PvcJson("b", "", "1Gi", "no-terms", true));
  Outcome a = Check(c, ClaimPod({"a"}));
  EXPECT_TRUE(a.filter[0].IsSuccess());
  EXPECT_TRUE(a.filter[1].IsSuccess());
  Outcome b = Check(c, ClaimPod({"b"}));
  EXPECT_EQ(b.filter[0], Uau({kAffinity}));
  EXPECT_EQ(b.filter[1], Uau({kAffinity}));
}

TEST(VolumeBindingTest, MalformedStorageIsAnErrorForPodsWithClaims) {
  ObjectSet c = Cluster();
  json bad = PvJson("bad", "local", "");
  bad["spec"]["capacity"] = {{"storage", "lots"}};
  Add(&c, bad);
  const PluginStatus error = PluginStatus::Error("PersistentVolume bad: spec.capacity.storage: invalid quantity \"lots\"");
  EXPECT_EQ(Check(c, ClaimPod({"w8"})).pre_filter, error);
  EXPECT_TRUE(Check(c, DecodedPod(PodJson("p", json::array()))).pre_filter.IsSkip());
  for (const char* plugin : {"VolumeRestrictions", "VolumeZone", "NodeVolumeLimits"}) {
    Both b(plugin, c);
    Pod empty_dir = DecodedPod(PodJson("p", json::array({{{"name", "e"}, {"emptyDir", json::object()}}})));
    Outcome e = b.engine.Run(empty_dir);
    EXPECT_EQ(DiffOutcomes(e, b.reference.Run(empty_dir)), "") << plugin;
    EXPECT_TRUE(e.filter[0].IsSuccess()) << plugin;
    Pod claim = ClaimPod({"w8"});
    Outcome f = b.engine.Run(claim);
    EXPECT_EQ(DiffOutcomes(f, b.reference.Run(claim)), "") << plugin;
    EXPECT_TRUE(f.pre_filter == error || f.filter[0] == error) << plugin;
  }
}

TEST(VolumeBindingTest, PreFilterClassifiesClaims) {
  ObjectSet c = Cluster();
  Add(&c, ClassJson("unset", ""));
  Add(&c, PvcJson("nomode", "unset", "1Gi"));
  Add(&c, PvcJson("prebound", "local", "1Gi", "local-n1"));
  json lost = PvcJson("lost", "local", "1Gi", "gone-pv");
  lost["status"] = {{"phase", "Lost"}};
  Add(&c, lost);
  json deleting = PvcJson("deleting", "local", "1Gi");
  deleting["metadata"]["deletionTimestamp"] = "2024-01-01T00:00:00Z";
  Add(&c, deleting);
  const Code uau = Code::kUnschedulableAndUnresolvable;
  EXPECT_EQ(Check(c, ClaimPod({"imm"})).pre_filter, PluginStatus::Make(uau, "pod has unbound immediate PersistentVolumeClaims"));
  EXPECT_EQ(Check(c, ClaimPod({"prebound"})).pre_filter, PluginStatus::Make(uau, "pod has unbound immediate PersistentVolumeClaims"));
  EXPECT_EQ(Check(c, ClaimPod({"nomode"})).pre_filter, PluginStatus::Error("VolumeBindingMode not set for StorageClass \"unset\""));
  EXPECT_EQ(Check(c, ClaimPod({"w8", "nope"})).pre_filter, PluginStatus::Make(uau, "persistentvolumeclaim \"nope\" not found"));
  EXPECT_EQ(Check(c, ClaimPod({"lost"})).pre_filter,
            PluginStatus::Make(uau, "persistentvolumeclaim \"lost\" bound to non-existent persistentvolume \"gone-pv\""));
  EXPECT_EQ(Check(c, ClaimPod({"deleting"})).pre_filter, PluginStatus::Make(uau, "persistentvolumeclaim \"deleting\" is being deleted"));
  Outcome eph = Check(c, DecodedPod(PodJson("p", json::array({EphemeralVolume("data")}), "", "default", "pod-uid")));
  EXPECT_EQ(eph.pre_filter,
            PluginStatus::Make(uau, "waiting for ephemeral volume controller to create the persistentvolumeclaim \"p-data\""));
  // Filter without PreFilter state is an error, as upstream's.
  EXPECT_EQ(Check(c, ClaimPod({"imm"})).filter[0], PluginStatus::Error("not found"));
  json owned = PvcJson("p-data", "local", "8Gi");
  owned["metadata"]["ownerReferences"] = {{{"kind", "Pod"}, {"name", "p"}, {"uid", "pod-uid"}, {"controller", true}}};
  Add(&c, owned);
  EXPECT_TRUE(Check(c, DecodedPod(PodJson("p", json::array({EphemeralVolume("data")}), "", "default", "pod-uid")))
                  .pre_filter.IsSuccess());
}

TEST(VolumeBindingTest, StaticBindingPicksSmallestFit) {
  ObjectSet c = Cluster();
  Outcome one = Check(c, ClaimPod({"w8"}));
  EXPECT_TRUE(one.filter[0].IsSuccess());
  EXPECT_TRUE(one.filter[1].IsSuccess());
  EXPECT_EQ(one.filter[2], Uau({kUnbound}));
  // 8Gi on the 10Gi PV: 80% used, default shape [(0,10),(100,0)] gives 20; on 50Gi: 84.
  EXPECT_EQ(one.raw, (std::vector<int64_t>{20, 84, 0}));
  // Claims are matched smallest first; each PV once.
  Outcome two = Check(c, ClaimPod({"w15", "w8"}));
  EXPECT_TRUE(two.filter[0].IsSuccess());
  EXPECT_EQ(two.filter[1], Uau({kUnbound}));
  EXPECT_EQ(two.raw[0], 24);  // one class: 23Gi requested of 30Gi, 76% -> 24
}

TEST(VolumeBindingTest, ProvisioningTopologyAndCapacity) {
  ObjectSet c = Cluster();
  Outcome fast = Check(c, ClaimPod({"fast30"}));
  EXPECT_TRUE(fast.filter[0].IsSuccess());
  EXPECT_EQ(fast.filter[2], Uau({kSpace}));  // 20Gi pool in zone b
  EXPECT_EQ(fast.raw, (std::vector<int64_t>{70, 70, 0}));
  Outcome noreq = Check(c, ClaimPod({"fast-noreq"}));
  EXPECT_TRUE(noreq.filter[2].IsSuccess());
  EXPECT_EQ(noreq.raw, (std::vector<int64_t>{0, 0, 0}));  // no capacity object: nothing to score
  Outcome zonal = Check(c, ClaimPod({"zonal1"}));
  EXPECT_EQ(zonal.filter[0], Uau({kUnbound}));
  EXPECT_TRUE(zonal.filter[2].IsSuccess());
  // A claim no PV fits but that provisions leaves the node feasible.
  Outcome mixed = Check(c, ClaimPod({"w40", "fast30"}));
  EXPECT_EQ(mixed.filter[0], Uau({kUnbound}));
  EXPECT_TRUE(mixed.filter[1].IsSuccess());
}

TEST(VolumeBindingTest, SelectedNodePinsTheClaim) {
  ObjectSet c = Cluster();
  json pinned = PvcJson("pinned", "fast", "1Gi");
  pinned["metadata"]["annotations"] = {{"volume.kubernetes.io/selected-node", "n2"}};
  Add(&c, pinned);
  Outcome o = Check(c, ClaimPod({"pinned"}));
  EXPECT_EQ(o.filter[0], Uau({kUnbound}));
  EXPECT_TRUE(o.filter[2].IsSuccess());
}

TEST(VolumeBindingTest, BoundInTreeVolumeMigratesPerNode) {
  ObjectSet c;
  Add(&c, NodeJson("migrated", {{"topology.gke.io/zone", "us-a"}}));
  Add(&c, NodeJson("legacy", {{kZone, "us-a"}}));
  Add(&c, NodeJson("plain", {{kZone, "us-a"}}));
  Add(&c, CsiNodeJson("migrated", {{"pd.csi.storage.gke.io", -1}}, "kubernetes.io/gce-pd"));
  Add(&c, CsiNodeJson("legacy", {{"pd.csi.storage.gke.io", -1}}, "kubernetes.io/aws-ebs"));
  json pv = PvJson("gce", "", "1Gi", json::array({InTerm(kZone, {"us-a"})}));
  pv["spec"]["gcePersistentDisk"] = {{"pdName", "disk"}};
  Add(&c, pv);
  Add(&c, PvcJson("claim", "", "1Gi", "gce", true));
  Outcome o = Check(c, ClaimPod({"claim"}));
  EXPECT_TRUE(o.filter[0].IsSuccess());  // the zone key became topology.gke.io/zone
  EXPECT_TRUE(o.filter[1].IsSuccess());
  EXPECT_TRUE(o.filter[2].IsSuccess());
  // A regional PD whose zones do not parse fails translation on migrated nodes.
  json regional = PvJson("regional", "", "1Gi", nullptr, {{kZone, "bad__zones"}});
  regional["spec"]["gcePersistentDisk"] = {{"pdName", "disk2"}};
  Add(&c, regional);
  Add(&c, PvcJson("claim2", "", "1Gi", "regional", true));
  Outcome r = Check(c, ClaimPod({"claim2"}));
  EXPECT_EQ(r.filter[0].code, Code::kError);
  EXPECT_TRUE(r.filter[1].IsSuccess());
}

TEST(VolumeBindingTest, CustomShapeAndGateOff) {
  ObjectSet c = Cluster();
  PluginArgs args;
  args.volume_binding.shape = {{0, 0}, {50, 3}, {100, 5}};
  // 8Gi of 10Gi: 80 -> 30 + 20*30/50 = 42; 8Gi of 50Gi: 16 -> 0 + 30*16/50 = 9.
  EXPECT_EQ(Check(c, ClaimPod({"w8"}), args).raw, (std::vector<int64_t>{42, 9, 0}));
  FeatureGates off;
  off.overrides["StorageCapacityScoring"] = false;
  Outcome o = Check(c, ClaimPod({"w8"}), {}, off);
  EXPECT_TRUE(o.pre_score.IsSkip());
  EXPECT_TRUE(o.filter[0].IsSuccess());
}

// ---- Reserve: what a bound pod leaves for the next (§2.6) --------------------------------

// "<pod>: <claim> -> <pv or provision> on <node>" per assumption.
std::vector<std::string> Log(const std::vector<plugins::volume::AssumedVolume>& assumed) {
  std::vector<std::string> out;
  for (const auto& a : assumed) {
    out.push_back(a.pod + ": " + a.claim + " -> " + (a.volume.empty() ? "provision" : a.volume) + " on " + a.node);
  }
  return out;
}

// Both sides agree on `pod` with what earlier binds left; returns the engine's outcome.
Outcome Next(Both& b, const Pod& pod) {
  Outcome e = b.engine.Run(pod);
  EXPECT_EQ(DiffOutcomes(e, b.reference.Run(pod)), "") << pod.meta.name;
  return e;
}

// Next, then binds the pod to `node` on both sides; both assume the same.
Outcome NextAndBind(Both& b, const Pod& pod, int32_t node) {
  Outcome e = Next(b, pod);
  EXPECT_TRUE(e.filter.at(node).IsSuccess()) << pod.meta.name << " on node " << node;
  b.Bind(pod, node);
  EXPECT_EQ(Log(b.engine.assumed()), Log(b.reference.assumed()));
  return e;
}

TEST(VolumeBindingTest, ReserveTakesTheStaticPvFromOtherClaims) {
  ObjectSet c;
  Add(&c, NodeJson("n0", {{kHost, "n0"}}));
  Add(&c, NodeJson("n1", {{kHost, "n1"}}));
  Add(&c, ClassJson("local", "WaitForFirstConsumer", "kubernetes.io/no-provisioner"));
  Add(&c, PvJson("pv", "local", "10Gi", json::array({InTerm(kHost, {"n0"})})));
  Add(&c, PvcJson("a", "local", "5Gi"));
  Add(&c, PvcJson("b", "local", "5Gi"));
  Both b(kPlugin, c);
  Outcome first = NextAndBind(b, ClaimPod({"a"}, "p"), 0);
  EXPECT_EQ(first.filter[1], Uau({kUnbound}));
  EXPECT_EQ(Log(b.engine.assumed()), (std::vector<std::string>{"default/p: default/a -> pv on n0"}));
  // The PV's claimRef now names claim a: b finds nothing anywhere.
  Outcome other = Next(b, ClaimPod({"b"}, "q"));
  EXPECT_EQ(other.filter[0], Uau({kUnbound}));
  EXPECT_EQ(other.filter[1], Uau({kUnbound}));
  // Claim a finds its PV pre-bound and scores it: 5Gi of 10Gi -> 50.
  Outcome same = NextAndBind(b, ClaimPod({"a"}, "r"), 0);
  EXPECT_EQ(same.raw, (std::vector<int64_t>{50, 0}));
  EXPECT_EQ(Log(b.engine.assumed()).back(), "default/r: default/a -> pv on n0");
  EXPECT_EQ(Log(b.engine.assumed()).size(), 2u);
}

TEST(VolumeBindingTest, ReserveBindsClaimsInMatchingOrder) {
  // On n0 the smaller claim takes the 10Gi PV and the larger the 20Gi one; afterwards a
  // 40Gi claim is left only the 50Gi PV on n1, and w8 keeps its PV on n0.
  ObjectSet c = Cluster();  // the engine's snapshot points into it
  Both b(kPlugin, c);
  NextAndBind(b, ClaimPod({"w15", "w8"}, "p"), 0);
  EXPECT_EQ(Log(b.engine.assumed()), (std::vector<std::string>{"default/p: default/w8 -> local-n0-small on n0",
                                                               "default/p: default/w15 -> local-n0-big on n0"}));
  Outcome big = Next(b, ClaimPod({"w40", "w8"}, "q"));
  EXPECT_EQ(big.filter[0], Uau({kUnbound}));
  EXPECT_EQ(big.filter[1], Uau({kUnbound}));  // w8's PV is on n0
  Outcome alone = Next(b, ClaimPod({"w40"}, "r"));
  EXPECT_TRUE(alone.filter[1].IsSuccess());
}

TEST(VolumeBindingTest, ProvisionedClaimIsPinnedToTheFirstPodsNode) {
  ObjectSet c = Cluster();
  Add(&c, PvcJson("fast90", "fast", "90Gi"));
  Both b(kPlugin, c);
  Outcome first = NextAndBind(b, ClaimPod({"fast30"}, "p"), 1);
  EXPECT_TRUE(first.filter[0].IsSuccess());
  EXPECT_EQ(first.filter[2], Uau({kSpace}));
  EXPECT_EQ(Log(b.engine.assumed()), (std::vector<std::string>{"default/p: default/fast30 -> provision on n1"}));
  // selected-node = n1: any other node stops at the pin, before capacity is looked at.
  Outcome second = Next(b, ClaimPod({"fast30"}, "q"));
  EXPECT_EQ(second.filter[0], Uau({kUnbound}));
  EXPECT_TRUE(second.filter[1].IsSuccess());
  EXPECT_EQ(second.filter[2], Uau({kUnbound}));
  EXPECT_EQ(second.raw, (std::vector<int64_t>{0, 70, 0}));  // still scored on the capacity object
  // The scheduler does not decrement CSIStorageCapacity: 90Gi still fits zone a's 100Gi.
  Outcome more = Next(b, ClaimPod({"fast90"}, "r"));
  EXPECT_TRUE(more.filter[0].IsSuccess());
  EXPECT_TRUE(more.filter[1].IsSuccess());
}

TEST(VolumeBindingTest, PreBoundByReserveTheClaimProvisionsWhereItsPvIsNot) {
  // FindMatchingVolume returns no match at all where a PV pre-bound to the claim does not
  // fit the node, so the claim goes to provisioning there, which class "fast" allows in
  // zone a. Once provisioned for n1, the claim is pinned to n1, its PV on n0 or not.
  ObjectSet c;
  Add(&c, NodeJson("n0", {{kHost, "n0"}, {kZone, "a"}}));
  Add(&c, NodeJson("n1", {{kHost, "n1"}, {kZone, "a"}}));
  Add(&c, NodeJson("n2", {{kHost, "n2"}, {kZone, "b"}}));
  Add(&c, ClassJson("fast", "WaitForFirstConsumer", "fast.csi",
                    json::array({{{"matchLabelExpressions", json::array({{{"key", kZone}, {"values", {"a"}}}})}}})));
  Add(&c, PvJson("fast-n0", "fast", "10Gi", json::array({InTerm(kHost, {"n0"})})));
  Add(&c, PvcJson("f", "fast", "5Gi"));
  Add(&c, PvcJson("g", "fast", "5Gi"));
  Both b(kPlugin, c);
  Outcome first = NextAndBind(b, ClaimPod({"f"}, "p"), 0);
  EXPECT_EQ(first.raw, (std::vector<int64_t>{50, 0, 0}));  // static on n0, provisioning (unscored) on n1
  EXPECT_EQ(first.filter[2], Uau({kUnbound}));
  Outcome second = NextAndBind(b, ClaimPod({"f"}, "q"), 1);
  EXPECT_TRUE(second.filter[0].IsSuccess());
  EXPECT_EQ(second.raw, (std::vector<int64_t>{50, 0, 0}));
  // g cannot take f's PV: it provisions in zone a, n0 included.
  Outcome other = Next(b, ClaimPod({"g"}, "r"));
  EXPECT_EQ(other.raw, (std::vector<int64_t>{0, 0, 0}));
  EXPECT_TRUE(other.filter[0].IsSuccess());
  Outcome pinned = Next(b, ClaimPod({"f"}, "s"));
  EXPECT_EQ(pinned.filter[0], Uau({kUnbound}));
  EXPECT_TRUE(pinned.filter[1].IsSuccess());
  EXPECT_EQ(Log(b.engine.assumed()),
            (std::vector<std::string>{"default/p: default/f -> fast-n0 on n0", "default/q: default/f -> provision on n1"}));
}

struct Gen {
  std::mt19937_64 rng;
  explicit Gen(uint64_t seed) : rng(seed) {}
  int Int(int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(rng); }
  bool Chance(double p) { return std::uniform_real_distribution<double>(0, 1)(rng) < p; }
  std::string Size() {
    static const std::vector<std::string> sizes = {"1Gi", "5Gi", "10Gi", "10G", "20Gi", "50Gi", "100Gi", "0"};
    return sizes[Int(0, static_cast<int>(sizes.size()) - 1)];
  }
  std::string Zone() { return std::string(1, static_cast<char>('a' + Int(0, 2))); }

  json Terms(int nodes) {
    json terms = json::array();
    int kind = Int(0, 5);
    if (kind == 0) return nullptr;
    if (kind == 1) return terms;  // required with no terms: matches nothing
    for (int t = Int(1, 2); t > 0; --t) {
      if (Chance(0.5)) {
        terms.push_back(InTerm(kHost, {"n" + std::to_string(Int(0, nodes - 1))}));
      } else if (Chance(0.8)) {
        terms.push_back(InTerm(kZone, {Zone()}));
      } else {
        terms.push_back({{"matchFields", json::array({{{"key", "metadata.name"}, {"operator", "In"}, {"values", {"n0"}}}})}});
      }
    }
    return terms;
  }

  ObjectSet Cluster(int nodes) {
    ObjectSet c;
    for (int i = 0; i < nodes; ++i) {
      std::string n = "n" + std::to_string(i);
      json labels = {{kHost, n}};
      if (Chance(0.9)) labels[kZone] = Zone();
      if (Chance(0.3)) labels["topology.gke.io/zone"] = Zone();
      Add(&c, NodeJson(n, labels));
      if (Chance(0.4)) Add(&c, CsiNodeJson(n, {{"pd.csi.storage.gke.io", -1}}, Chance(0.6) ? "kubernetes.io/gce-pd" : "x"));
    }
    json zones_b = json::array({{{"matchLabelExpressions", json::array({{{"key", kZone}, {"values", {"b", "c"}}}})}}});
    Add(&c, ClassJson("local", "WaitForFirstConsumer", "kubernetes.io/no-provisioner"));
    Add(&c, ClassJson("csi", "WaitForFirstConsumer", "csi.cap", Chance(0.5) ? zones_b : json(nullptr)));
    Add(&c, ClassJson("plain", "WaitForFirstConsumer", "csi.plain"));
    Add(&c, ClassJson("now", "Immediate", "csi.plain"));
    if (Chance(0.8)) {
      Add(&c, {{"kind", "CSIDriver"}, {"metadata", {{"name", "csi.cap"}}}, {"spec", {{"storageCapacity", Chance(0.8)}}}});
    }
    for (int k = Int(0, 5); k > 0; --k) {
      json topology = Chance(0.15) ? json(nullptr) : Chance(0.2) ? json::object() : json({{"matchLabels", {{kZone, Zone()}}}});
      Add(&c, Capacity("cap" + std::to_string(k), Chance(0.8) ? "csi" : "plain", topology, Chance(0.1) ? "" : Size(),
                       Chance(0.3) ? Size() : ""));
    }
    static const std::vector<std::string> classes = {"local", "csi", "plain", "now", "", "ghost"};
    for (int k = 0; k < 10; ++k) {
      std::string s = std::to_string(k);
      json pv = PvJson("pv" + s, classes[Int(0, 2)], Chance(0.05) ? "" : Size(), Terms(nodes),
                       Chance(0.2) ? json({{kZone, Zone() + (Chance(0.3) ? "__" + Zone() : "")}}) : json::object());
      if (Chance(0.15)) pv["status"]["phase"] = "Bound";
      if (Chance(0.2)) pv["spec"]["claimRef"] = {{"namespace", "default"}, {"name", "c" + std::to_string(Int(0, 11))}};
      if (Chance(0.1)) pv["spec"]["volumeMode"] = "Block";
      if (Chance(0.2)) pv["spec"]["gcePersistentDisk"] = {{"pdName", "d" + s}};
      if (Chance(0.2)) pv["spec"]["accessModes"] = {"ReadOnlyMany"};
      Add(&c, pv);
    }
    for (int k = 0; k < 12; ++k) {
      std::string s = std::to_string(k);
      bool bound = Chance(0.3);
      json pvc = PvcJson("c" + s, classes[Int(0, 5)], Chance(0.1) ? "" : Size(),
                         bound || Chance(0.1) ? "pv" + std::to_string(Int(0, 11)) : "", bound);
      if (Chance(0.1)) pvc["metadata"]["annotations"]["volume.kubernetes.io/selected-node"] = "n" + std::to_string(Int(0, nodes));
      if (Chance(0.1)) pvc["spec"]["selector"] = {{"matchLabels", {{kZone, Zone()}}}};
      Add(&c, pvc);
    }
    return c;
  }
};

// Random claim volumes c0..c12 (c12 does not exist), sometimes an emptyDir.
Pod RandomPod(Gen& g, const std::string& name) {
  json volumes = json::array();
  for (int v = g.Int(0, 3); v > 0; --v) {
    volumes.push_back(g.Chance(0.9) ? ClaimVolume("c" + std::to_string(g.Int(0, 12)), "v" + std::to_string(v))
                                    : json({{"name", "e"}, {"emptyDir", json::object()}}));
  }
  return DecodedPod(PodJson(name, volumes));
}

// A node the pod passes, chosen at random; -1 when none.
int32_t PickPassing(Gen& g, const Outcome& o) {
  std::vector<int32_t> passing;
  for (size_t i = 0; i < o.filter.size(); ++i) {
    if (o.filter[i].IsSuccess()) passing.push_back(static_cast<int32_t>(i));
  }
  return passing.empty() ? -1 : passing[g.Int(0, static_cast<int>(passing.size()) - 1)];
}

TEST(VolumeBindingTest, EngineMatchesReferenceRandomized) {
  std::map<std::string, int> seen;
  for (uint64_t seed = 1; seed <= 60; ++seed) {
    Gen g(seed);
    int nodes = 1 + g.Int(0, seed % 5 == 0 ? 40 : 6);
    ObjectSet c = g.Cluster(nodes);
    PluginArgs args;
    if (g.Chance(0.3)) args.volume_binding.shape = {{0, 0}, {g.Int(1, 99), g.Int(0, 10)}, {100, 10}};
    FeatureGates gates;
    if (g.Chance(0.2)) gates.overrides["StorageCapacityScoring"] = false;
    Both b(kPlugin, c, args, gates);
    for (int p = 0; p < 15; ++p) {
      Pod pod = RandomPod(g, "p");
      Outcome e = b.engine.Run(pod);
      ASSERT_EQ(DiffOutcomes(e, b.reference.Run(pod)), "") << "seed " << seed << " pod " << p;
      ++seen[std::string("prefilter ") + CodeName(e.pre_filter.code)];
      for (const PluginStatus& f : e.filter) {
        for (const std::string& reason : f.reasons) ++seen[reason];
        if (f.IsSuccess()) ++seen["pass"];
      }
      for (int64_t score : e.raw) seen["score>0"] += score > 0;
    }
  }
  // The generator reaches every outcome.
  for (const char* what : {"prefilter Success", "prefilter Skip", "prefilter UnschedulableAndUnresolvable", "pass",
                           "score>0", kAffinity, kUnbound, kSpace, kMissing}) {
    EXPECT_GT(seen[what], 0) << what;
  }
}

TEST(VolumeBindingTest, ReserveSequencesMatchReferenceRandomized) {
  int64_t binds = 0, statics = 0, provisions = 0;
  for (uint64_t seed = 1; seed <= 40; ++seed) {
    Gen g(seed);
    ObjectSet c = g.Cluster(1 + g.Int(0, 8));
    Both b(kPlugin, c);
    for (int p = 0; p < 20; ++p) {
      Pod pod = RandomPod(g, "p" + std::to_string(p));
      Outcome e = b.engine.Run(pod);
      ASSERT_EQ(DiffOutcomes(e, b.reference.Run(pod)), "") << "seed " << seed << " pod " << p;
      int32_t node = PickPassing(g, e);
      if (node < 0) continue;
      b.Bind(pod, node);
      ++binds;
      ASSERT_EQ(Log(b.engine.assumed()), Log(b.reference.assumed())) << "seed " << seed << " pod " << p;
    }
    for (const auto& a : b.engine.assumed()) ++(a.volume.empty() ? provisions : statics);
  }
  EXPECT_GT(binds, 200);
  EXPECT_GT(statics, 20);
  EXPECT_GT(provisions, 20);
}

// Across binds: the verdicts, scores and what Reserve assumes, on the device as on omp.
TEST(VolumeBindingTest, CudaMatchesOmpAcrossBinds) {
  if (!engine::CudaAvailable()) GTEST_SKIP() << "no CUDA device";
  for (uint64_t seed = 1; seed <= 20; ++seed) {
    Gen g(seed);
    ObjectSet c = g.Cluster(1 + g.Int(0, 60));
    EngineRunner omp(kPlugin, c), cuda(kPlugin, c, {}, {}, engine::Backend::kCuda);
    for (int p = 0; p < 15; ++p) {
      Pod pod = RandomPod(g, "p" + std::to_string(p));
      Outcome o = omp.Run(pod);
      ASSERT_EQ(DiffOutcomes(cuda.Run(pod), o), "") << "seed " << seed << " pod " << p;
      int32_t node = PickPassing(g, o);
      if (node < 0) continue;
      omp.Bind(pod, node);
      cuda.Bind(pod, node);
      ASSERT_EQ(Log(cuda.assumed()), Log(omp.assumed())) << "seed " << seed << " pod " << p;
    }
  }
}

// ---- whole scheduling cycles: Reserve pod after pod ------------------------------------------

// "placed on <node>" or the message, then feasible count and score.
std::string Describe(const cycle::Placement& p) {
  return p.pod + " " + (p.node.empty() ? std::string(CodeName(p.code)) + " " + p.message : "on " + p.node) +
         " feasible=" + std::to_string(p.feasible) + " score=" + std::to_string(p.score);
}

struct CycleRun {
  std::vector<std::string> placements;
  std::vector<std::string> assumed;
};

// The engine per pod, the engine batched (the default) and the reference.
std::vector<std::pair<std::string, cycle::Options>> CycleSides() {
  cycle::Options per_pod, batched, reference;
  per_pod.batch = 1;
  reference.reference = true;
  return {{"engine per pod", per_pod}, {"engine batched", batched}, {"reference", reference}};
}

CycleRun RunCycles(const ObjectSet& cluster, const std::vector<Pod>& pods, const cycle::Options& options) {
  auto s = cycle::Scheduler::Create(cluster, DefaultSchedulerConfig(), options);
  if (!s.ok()) throw std::runtime_error(std::string(s.status().message()));
  CycleRun run;
  for (const cycle::Placement& p : (*s)->ScheduleAll(pods)) run.placements.push_back(Describe(p));
  run.assumed = Log((*s)->state().AssumedVolumes());
  return run;
}

Node RoomyNode(const std::string& name, const std::string& zone) {
  return testing::MakeNode(name, {{"cpu", "4"}, {"memory", "8Gi"}, {"pods", "110"}}, {{kHost, name}, {kZone, zone}});
}

TEST(VolumeBindingTest, CyclesRememberWhatEarlierPodsReserved) {
  // The default profile over n0, n1 (zone a) and n2 (zone b). Class "local" has one PV
  // (10Gi, on n0) and no provisioner; class "fast" provisions in zone a.
  ObjectSet c;
  for (const auto& [name, zone] : {std::pair<std::string, std::string>{"n0", "a"}, {"n1", "a"}, {"n2", "b"}}) {
    c.nodes.push_back(RoomyNode(name, zone));
  }
  Add(&c, ClassJson("local", "WaitForFirstConsumer", "kubernetes.io/no-provisioner"));
  Add(&c, ClassJson("fast", "WaitForFirstConsumer", "fast.csi",
                    json::array({{{"matchLabelExpressions", json::array({{{"key", kZone}, {"values", {"a"}}}})}}})));
  Add(&c, PvJson("pv-n0", "local", "10Gi", json::array({InTerm(kHost, {"n0"})})));
  Add(&c, PvcJson("a", "local", "5Gi"));
  Add(&c, PvcJson("b", "local", "5Gi"));
  Add(&c, PvcJson("shared", "fast", "1Gi"));
  // p takes the only PV; q's claim then finds none anywhere; r uses p's claim and goes
  // where its PV is; s provisions "shared" on a zone-a node and t, sharing it, follows.
  std::vector<Pod> pods = {ClaimPod({"a"}, "p"), ClaimPod({"b"}, "q"), ClaimPod({"a"}, "r"), ClaimPod({"shared"}, "s"),
                           ClaimPod({"shared"}, "t")};
  std::vector<CycleRun> runs;
  for (const auto& [side, options] : CycleSides()) {
    auto s = cycle::Scheduler::Create(c, DefaultSchedulerConfig(), options);
    ASSERT_TRUE(s.ok()) << s.status();
    std::vector<cycle::Placement> out = (*s)->ScheduleAll(pods);
    EXPECT_EQ(out[0].node, "n0") << side;
    EXPECT_EQ(out[1].node, "") << side;
    EXPECT_EQ(out[1].code, Code::kUnschedulable) << side;
    EXPECT_EQ(out[1].message,
              "0/3 nodes are available: 3 node(s) didn't find available persistent volumes to bind. preemption: 0/3 "
              "nodes are available: 3 Preemption is not helpful for scheduling.")
        << side;
    EXPECT_EQ(out[2].node, "n0") << side;
    ASSERT_TRUE(out[3].node == "n0" || out[3].node == "n1") << side << ": " << out[3].node;
    EXPECT_EQ(out[4].node, out[3].node) << side;
    EXPECT_EQ(out[4].feasible, 1) << side;
    EXPECT_EQ(Log((*s)->state().AssumedVolumes()),
              (std::vector<std::string>{"default/p: default/a -> pv-n0 on n0", "default/r: default/a -> pv-n0 on n0",
                                        "default/s: default/shared -> provision on " + out[3].node,
                                        "default/t: default/shared -> provision on " + out[3].node}))
        << side;
    runs.push_back(RunCycles(c, pods, options));
  }
  EXPECT_EQ(runs[0].placements, runs[2].placements);
  EXPECT_EQ(runs[1].placements, runs[2].placements);
}

// Clusters of 50-500 nodes in three zones; WaitForFirstConsumer classes: "local" (static
// PVs only), "zonal" (provisions in one or two zones), "cap" (provisions where a
// CSIStorageCapacity of the zone fits); scarce static PVs with host or zone affinity, some
// already bound or pre-bound; claims shared by several pods.
ObjectSet StorageRun(std::mt19937_64& rng, int32_t nodes, int32_t claims) {
  auto pick = [&](int n) { return static_cast<int>(rng() % static_cast<uint64_t>(n)); };
  auto zone = [&]() { return "z" + std::to_string(pick(3)); };
  static const std::vector<std::string> sizes = {"1Gi", "5Gi", "10Gi", "20Gi", "50Gi"};
  ObjectSet c;
  for (int32_t i = 0; i < nodes; ++i) c.nodes.push_back(RoomyNode("n" + std::to_string(i), zone()));
  Add(&c, ClassJson("local", "WaitForFirstConsumer", "kubernetes.io/no-provisioner"));
  json zones = json::array({zone()});
  if (pick(2)) zones.push_back(zone());
  Add(&c, ClassJson("zonal", "WaitForFirstConsumer", "zonal.csi",
                    json::array({{{"matchLabelExpressions", json::array({{{"key", kZone}, {"values", zones}}})}}})));
  Add(&c, ClassJson("cap", "WaitForFirstConsumer", "cap.csi"));
  Add(&c, ClassJson("now", "Immediate", "cap.csi"));
  Add(&c, {{"kind", "CSIDriver"}, {"metadata", {{"name", "cap.csi"}}}, {"spec", {{"storageCapacity", true}}}});
  for (int z = 0; z < 3; ++z) {
    Add(&c, {{"kind", "CSIStorageCapacity"},
             {"metadata", {{"name", "cap-z" + std::to_string(z)}, {"namespace", "kube-system"}}},
             {"storageClassName", "cap"},
             {"nodeTopology", {{"matchLabels", {{kZone, "z" + std::to_string(z)}}}}},
             {"capacity", sizes[pick(3)]}});  // at most 10Gi: 20Gi claims never fit
  }
  for (int32_t k = 0; k < nodes / 3; ++k) {
    json terms = json::array({pick(5) ? InTerm(kHost, {"n" + std::to_string(pick(nodes))}) : InTerm(kZone, {zone()})});
    json pv = PvJson("pv" + std::to_string(k), pick(4) ? "local" : "zonal", sizes[pick(5)], terms);
    if (pick(10) == 0) pv["status"]["phase"] = "Bound";
    if (pick(20) == 0) pv["spec"]["claimRef"] = {{"namespace", "default"}, {"name", "c" + std::to_string(pick(claims))}};
    Add(&c, pv);
  }
  static const std::vector<std::string> classes = {"local", "local", "local", "zonal", "cap", "cap", "now"};
  for (int32_t k = 0; k < claims; ++k) Add(&c, PvcJson("c" + std::to_string(k), classes[pick(7)], sizes[pick(4)]));
  return c;
}

TEST(VolumeBindingTest, CyclesMatchReferenceRandomized) {
  std::map<std::string, int64_t> seen;
  for (uint64_t seed = 1; seed <= 6; ++seed) {
    std::mt19937_64 rng(seed);
    const int32_t nodes = seed == 1 ? 500 : 50 + static_cast<int32_t>(rng() % 451);
    const int32_t claims = 30;
    ObjectSet c = StorageRun(rng, nodes, claims);
    std::vector<Pod> pods;
    for (int p = 0; p < 60; ++p) {
      std::vector<std::string> use;
      for (int v = 1 + static_cast<int>(rng() % 2); v > 0; --v) use.push_back("c" + std::to_string(rng() % claims));
      if (use.size() == 2 && use[0] == use[1]) use.pop_back();
      pods.push_back(ClaimPod(use, "p" + std::to_string(p)));
    }
    std::vector<CycleRun> runs;
    for (const auto& [side, options] : CycleSides()) runs.push_back(RunCycles(c, pods, options));
    for (size_t k = 0; k < pods.size(); ++k) {
      ASSERT_EQ(runs[0].placements[k], runs[2].placements[k]) << "seed " << seed << " pod " << k << " per pod";
      ASSERT_EQ(runs[1].placements[k], runs[2].placements[k]) << "seed " << seed << " pod " << k << " batched";
    }
    ASSERT_EQ(runs[0].assumed, runs[2].assumed) << "seed " << seed;
    ASSERT_EQ(runs[1].assumed, runs[2].assumed) << "seed " << seed;
    for (const std::string& p : runs[2].placements) {
      if (p.find(" on n") != std::string::npos) ++seen["placed"];
      if (p.find("persistent volumes to bind") != std::string::npos) ++seen["no volume"];
      if (p.find("enough free storage") != std::string::npos) ++seen["no space"];
      if (p.find("unbound immediate") != std::string::npos) ++seen["immediate"];
    }
    std::set<std::string> claimed;
    for (const std::string& a : runs[2].assumed) {
      ++seen[a.find("-> provision") != std::string::npos ? "provision" : "static"];
      std::string claim = a.substr(a.find(": ") + 2, a.find(" -> ") - a.find(": ") - 2);
      if (!claimed.insert(claim).second) ++seen["claim reused"];
    }
  }
  // The runs reach every kind of outcome.
  for (const char* what : {"placed", "no volume", "no space", "immediate", "provision", "static", "claim reused"}) {
    EXPECT_GT(seen[what], 0) << what;
  }
}

}  // namespace
}  // namespace kplace
