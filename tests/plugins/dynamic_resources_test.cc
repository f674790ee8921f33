#include <random>

#include <gtest/gtest.h>

#include "kplace/common/strings.h"
#include "kplace/plugins/dynamic_resources_common.h"
#include "tests/testing/differential.h"
#include "tests/testing/single_plugin_calls.h"
#include "tests/testing/taint_builders.h"

namespace kplace {
namespace {

using testing::MakeNode;
using testing::MakePod;

const std::vector<std::string> kDra = {"DynamicResources"};
constexpr Code kUau = Code::kUnschedulableAndUnresolvable;

ResourceClaim Claim(const std::string& name, const std::string& class_name = "gpu.example.com") {
  ResourceClaim c;
  c.meta.name = name;
  c.meta.namespace_ = "default";
  c.meta.uid = "uid-" + name;
  DeviceRequest r;
  r.name = "r";
  r.exactly = true;
  r.device_class_name = class_name;
  c.requests.push_back(r);
  return c;
}

// Allocated, on the nodes `selector` picks (none: any node).
ResourceClaim Allocated(const std::string& name, std::optional<NodeSelector> selector) {
  ResourceClaim c = Claim(name);
  c.allocated = true;
  c.allocation_node_selector = std::move(selector);
  return c;
}

NodeSelector OnNode(const std::string& node) {
  NodeSelectorTerm t;
  t.match_fields.push_back({"metadata.name", "In", {node}});
  return NodeSelector{{t}};
}

NodeSelector WithLabel(const std::string& key, const std::vector<std::string>& values) {
  NodeSelectorTerm t;
  t.match_expressions.push_back({key, "In", values});
  return NodeSelector{{t}};
}

DeviceClass Class(const std::string& name, const std::string& extended = "") {
  DeviceClass c;
  c.meta.name = name;
  c.extended_resource_name = extended;
  return c;
}

Pod WithClaims(std::vector<PodResourceClaim> claims) {
  Pod p = MakePod("p", {});
  p.meta.uid = "pod-uid";
  p.resource_claims = std::move(claims);
  return p;
}

ObjectSet TwoNodes() {
  ObjectSet cluster;
  cluster.nodes.push_back(MakeNode("n1", {}, {{"zone", "a"}}));
  cluster.nodes.push_back(MakeNode("n2", {}, {{"zone", "b"}}));
  cluster.device_classes.push_back(Class("gpu.example.com"));
  return cluster;
}

// PreFilter on both sides, which must agree.
PluginStatus PreFilterBoth(const ObjectSet& cluster, const Pod& pod, const FeatureGates& gates = {}) {
  const testing::PreFilterOutcome e = testing::EnginePreFilter("DynamicResources", cluster, pod, {}, gates);
  const testing::PreFilterOutcome r = testing::ReferencePreFilter("DynamicResources", cluster, pod, {}, gates);
  EXPECT_EQ(e.status, r.status) << e.status.Message() << " vs " << r.status.Message();
  EXPECT_FALSE(e.nodes.has_value());  // DynamicResources never narrows PreFilter's nodes
  return r.status;
}

// Claim resolution (PreEnqueue, then PreFilter): upstream's codes and texts.
TEST(DynamicResourcesTest, PreFilterResolvesClaims) {
  struct Case {
    std::string name;
    std::function<void(ObjectSet*, Pod*)> setup;
    Code code;
    std::string reason;  // "" for Success and Skip
  };
  const std::vector<Case> cases = {
      {"no claims: Skip", [](ObjectSet*, Pod*) {}, Code::kSkip, ""},
      {"claim by name missing",
       [](ObjectSet*, Pod* p) { p->resource_claims = {{"g", "gpu", ""}}; }, kUau,
       "could not find ResourceClaim \"default/gpu\""},
      {"template claim not generated yet",
       [](ObjectSet*, Pod* p) { p->resource_claims = {{"g", "", "tmpl"}}; }, kUau,
       "Pod default/p: ResourceClaim not created yet"},
      {"template claim that needs no claim",
       [](ObjectSet*, Pod* p) {
         p->resource_claims = {{"g", "", "tmpl"}};
         p->resource_claim_statuses = {{"g", std::nullopt}};
       },
       Code::kSkip, ""},
      {"claim being deleted",
       [](ObjectSet* o, Pod* p) {
         o->resource_claims.push_back(Allocated("gpu", std::nullopt));
         o->resource_claims.back().meta.deletion_timestamp = "2026-01-01T00:00:00Z";
         p->resource_claims = {{"g", "gpu", ""}};
       },
       kUau, "resourceclaim \"gpu\" is being deleted"},
      {"generated claim of another pod",
       [](ObjectSet* o, Pod* p) {
         ResourceClaim c = Allocated("p-g-abcde", std::nullopt);
         c.meta.owner_references.push_back({"v1", "Pod", "other", "other-uid", true});
         o->resource_claims.push_back(c);
         p->resource_claims = {{"g", "", "tmpl"}};
         p->resource_claim_statuses = {{"g", std::string("p-g-abcde")}};
       },
       kUau, "ResourceClaim default/p-g-abcde was not created for Pod default/p (Pod is not owner)"},
      {"generated claim of this pod",
       [](ObjectSet* o, Pod* p) {
         ResourceClaim c = Allocated("p-g-abcde", std::nullopt);
         c.meta.owner_references.push_back({"v1", "Pod", "p", "pod-uid", true});
         o->resource_claims.push_back(c);
         p->resource_claims = {{"g", "", "tmpl"}};
         p->resource_claim_statuses = {{"g", std::string("p-g-abcde")}};
       },
       Code::kSuccess, ""},
      {"claim to allocate whose class is missing",
       [](ObjectSet* o, Pod* p) {
         o->resource_claims.push_back(Claim("gpu", "tpu.example.com"));
         p->resource_claims = {{"g", "gpu", ""}};
       },
       kUau, "request r: device class tpu.example.com does not exist"},
      {"claim to allocate with a missing subrequest class",
       [](ObjectSet* o, Pod* p) {
         ResourceClaim c = Claim("gpu");
         c.requests[0].exactly = false;
         c.requests[0].first_available = {{"big", "gpu.example.com"}, {"small", "small.example.com"}};
         o->resource_claims.push_back(c);
         p->resource_claims = {{"g", "gpu", ""}};
       },
       kUau, "request r/small: device class small.example.com does not exist"},
      {"claim to allocate: PreFilter passes, Filter refuses",
       [](ObjectSet* o, Pod* p) {
         o->resource_claims.push_back(Claim("gpu"));
         p->resource_claims = {{"g", "gpu", ""}};
       },
       Code::kSuccess, ""},
  };
  for (const Case& c : cases) {
    ObjectSet cluster = TwoNodes();
    Pod pod = WithClaims({});
    c.setup(&cluster, &pod);
    const PluginStatus s = PreFilterBoth(cluster, pod);
    EXPECT_EQ(s.code, c.code) << c.name << ": " << s.Message();
    EXPECT_EQ(s.Message(), c.reason) << c.name;
    // PreEnqueue runs the same resolution and fails it the same way.
    plugins::dra::ResourceIndex index;
    const plugins::dra::PodClaims found = plugins::dra::ResolveClaims(pod, cluster, &index);
    if (c.code == kUau && c.reason.find("device class") == std::string::npos) {
      EXPECT_EQ(found.status, s) << c.name;
    } else {
      EXPECT_TRUE(found.status.IsSuccess()) << c.name;
    }
  }
}

TEST(DynamicResourcesTest, PrioritizedListGateAndDraExtendedResources) {
  ObjectSet cluster = TwoNodes();
  ResourceClaim c = Claim("gpu");
  c.requests[0].exactly = false;
  c.requests[0].first_available = {{"big", "gpu.example.com"}};
  cluster.resource_claims.push_back(c);
  FeatureGates off;
  off.overrides["DRAPrioritizedList"] = false;
  const PluginStatus s = PreFilterBoth(cluster, WithClaims({{"g", "gpu", ""}}), off);
  EXPECT_EQ(s.code, kUau);
  EXPECT_EQ(s.Message(), "resource claim default/gpu, request r: has subrequests, but the DRAPrioritizedList feature is disabled");

  // Under DRAExtendedResource an extended resource a DeviceClass backs is allocated from
  // ResourceSlices: refused, naming the pod and the resource. Off (the default), untouched.
  cluster.device_classes.push_back(Class("fpga.example.com", "example.com/fpga"));
  Pod pod = MakePod("p", {{"example.com/fpga", "1"}});
  FeatureGates on;
  on.overrides["DRAExtendedResource"] = true;
  const PluginStatus refused = PreFilterBoth(cluster, pod, on);
  EXPECT_TRUE(refused.refused);
  EXPECT_EQ(refused.Message(),
            "kplace: allocating extended resource example.com/fpga of pod default/p through DeviceClass fpga.example.com "
            "is not supported");
  Pod implicit = MakePod("p", {{"deviceclass.resource.kubernetes.io/gpu.example.com", "1"}});
  EXPECT_TRUE(PreFilterBoth(cluster, implicit, on).refused);
  EXPECT_EQ(PreFilterBoth(cluster, pod).code, Code::kSkip);
  EXPECT_EQ(PreFilterBoth(cluster, MakePod("p", {{"example.com/other", "1"}}), on).code, Code::kSkip);
}

// Filter: allocated claims keep the pod on their nodes; a claim to allocate is refused on
// every node Filter reaches.
TEST(DynamicResourcesTest, FilterTable) {
  struct Case {
    std::string name;
    std::vector<ResourceClaim> claims;
    std::vector<bool> fits;  // n1, n2
    bool refused = false;
  };
  const std::vector<Case> cases = {
      {"allocated on n1 by name", {Allocated("a", OnNode("n1"))}, {true, false}},
      {"allocated on zone b", {Allocated("a", WithLabel("zone", {"b"}))}, {false, true}},
      {"allocated anywhere (no node selector)", {Allocated("a", std::nullopt)}, {true, true}},
      {"two claims on different nodes", {Allocated("a", OnNode("n1")), Allocated("b", OnNode("n2"))}, {false, false}},
      {"allocated on n1 and one to allocate", {Allocated("a", OnNode("n1")), Claim("b")}, {false, false}, true},
  };
  for (const Case& c : cases) {
    ObjectSet cluster = TwoNodes();
    cluster.resource_claims = c.claims;
    std::vector<PodResourceClaim> refs;
    for (const ResourceClaim& rc : c.claims) refs.push_back({rc.meta.name, rc.meta.name, ""});
    const Pod pod = WithClaims(refs);
    auto r = testing::RunReference(cluster, pod, kDra);
    for (engine::Backend b : testing::TestBackends()) {
      auto e = testing::RunEngine(b, cluster, pod, kDra);
      EXPECT_EQ(testing::Diff(e, r), "") << c.name << " on " << engine::BackendName(b);
    }
    for (size_t i = 0; i < c.fits.size(); ++i) {
      const PluginStatus& s = r.filter[0][i];
      if (c.refused) {
        EXPECT_TRUE(s.refused) << c.name;
        EXPECT_EQ(s.Message(), "kplace: allocating ResourceClaim default/b is not supported") << c.name;
      } else if (c.fits[i]) {
        EXPECT_TRUE(s.IsSuccess()) << c.name << " node " << i;
      } else {
        EXPECT_EQ(s, PluginStatus::Make(kUau, "resourceclaim not available on the node")) << c.name << " node " << i;
      }
    }
    // Score is 0 everywhere (no allocation to weigh), before and after normalizing.
    EXPECT_EQ(r.raw[0], std::vector<int64_t>(2, 0)) << c.name;
    EXPECT_EQ(r.normalized[0], std::vector<int64_t>(2, 0)) << c.name;
  }
}

// PreBind: the pod joins reservedFor of each claim not reserved for it yet; a full list
// fails the binding upstream, which kplace refuses.
TEST(DynamicResourcesTest, PreBindReservesClaims) {
  ObjectSet cluster = TwoNodes();
  cluster.resource_claims = {Allocated("a", std::nullopt), Allocated("b", std::nullopt)};
  cluster.resource_claims[1].reserved_for.push_back({"", "pods", "p", "pod-uid"});
  const Pod pod = WithClaims({{"a", "a", ""}, {"b", "b", ""}});
  plugins::dra::ResourceIndex index;
  const plugins::dra::PreFilterPlan plan = plugins::dra::PreFilter(pod, cluster, {}, &index);
  ASSERT_TRUE(plan.status.IsSuccess());
  PluginStatus refusal;
  std::vector<ResourceClaim> written = plugins::dra::ReserveClaims(pod, plan, &refusal);
  EXPECT_FALSE(refusal.refused);
  ASSERT_EQ(written.size(), 1u);  // b already lists the pod
  EXPECT_EQ(written[0].meta.name, "a");
  ASSERT_EQ(written[0].reserved_for.size(), 1u);
  EXPECT_EQ(written[0].reserved_for[0].resource, "pods");
  EXPECT_EQ(written[0].reserved_for[0].name, "p");
  EXPECT_EQ(written[0].reserved_for[0].uid, "pod-uid");

  for (size_t i = 0; i < kResourceClaimReservedForMaxSize; ++i) {
    cluster.resource_claims[0].reserved_for.push_back({"", "pods", StrCat("q", i), StrCat("q", i)});
  }
  const plugins::dra::PreFilterPlan full = plugins::dra::PreFilter(pod, cluster, {}, &index);
  ASSERT_TRUE(full.status.IsSuccess());  // CanBeReserved: no limit at PreFilter
  EXPECT_TRUE(plugins::dra::ReserveClaims(pod, full, &refusal).empty());
  EXPECT_TRUE(refusal.refused);
  EXPECT_EQ(refusal.Message().rfind("kplace: reserving ResourceClaim default/a for pod default/p is not supported", 0), 0u)
      << refusal.Message();
}

// PostFilter: what it says, and which claim it deallocates.
TEST(DynamicResourcesTest, PostFilterDeallocatesAClaimOnlyThisPodHolds) {
  ObjectSet cluster = TwoNodes();
  cluster.resource_claims = {Allocated("shared", OnNode("n1")), Allocated("mine", OnNode("n1"))};
  cluster.resource_claims[0].reserved_for = {{"", "pods", "other", "other-uid"}};
  cluster.resource_claims[1].reserved_for = {{"", "pods", "p", "pod-uid"}};
  const Pod pod = WithClaims({{"s", "shared", ""}, {"m", "mine", ""}});
  plugins::dra::ResourceIndex index;
  const plugins::dra::PreFilterPlan plan = plugins::dra::PreFilter(pod, cluster, {}, &index);
  std::vector<int32_t> unavailable;
  EXPECT_EQ(plugins::dra::Filter(plan, cluster.nodes[1], &unavailable).Message(), "resourceclaim not available on the node");
  EXPECT_EQ(unavailable, (std::vector<int32_t>{0, 1}));

  plugins::dra::PostFilterOutcome out = plugins::dra::PostFilter(pod, true, plan, unavailable);
  EXPECT_EQ(out.status, PluginStatus::Make(Code::kUnschedulable, "deallocation of ResourceClaim completed"));
  ASSERT_TRUE(out.deallocated.has_value());
  EXPECT_EQ(out.deallocated->meta.name, "mine");
  EXPECT_FALSE(out.deallocated->allocated);
  EXPECT_TRUE(out.deallocated->reserved_for.empty());

  out = plugins::dra::PostFilter(pod, true, plan, {0});  // held by another pod
  EXPECT_EQ(out.status, PluginStatus::Make(Code::kUnschedulable, "still not schedulable"));
  EXPECT_FALSE(out.deallocated.has_value());
  out = plugins::dra::PostFilter(pod, true, plugins::dra::PreFilterPlan{}, {});
  EXPECT_EQ(out.status, PluginStatus::Make(Code::kUnschedulable, "no new claims to deallocate"));
  // Its PreFilter never ran (an earlier one ended PreFilter): the cycle state is missing.
  out = plugins::dra::PostFilter(pod, false, plugins::dra::PreFilterPlan{}, {});
  EXPECT_EQ(out.status, PluginStatus::Error("not found"));
}

// The engine's compiled selectors against the reference's string matching.
TEST(DynamicResourcesTest, EngineMatchesReferenceOnRandomClaims) {
  std::mt19937_64 rng(20260719);
  const std::vector<std::string> zones = {"a", "b", "c"};
  for (int size : {0, 1, 31, 32, 33, 1000}) {
    ObjectSet cluster;
    cluster.device_classes.push_back(Class("gpu.example.com"));
    for (int i = 0; i < size; ++i) {
      Labels labels = {{"zone", zones[rng() % zones.size()]}};
      if (rng() % 2) labels["gpu"] = std::to_string(rng() % 4);
      cluster.nodes.push_back(MakeNode(StrCat("n", i), {}, labels));
    }
    for (int j = 0; j < 12; ++j) {
      cluster.resource_claims.clear();
      std::vector<PodResourceClaim> refs;
      const int claims = static_cast<int>(rng() % 3);
      for (int k = 0; k < claims; ++k) {
        std::optional<NodeSelector> selector;
        switch (rng() % 4) {
          case 0:
            selector = OnNode(StrCat("n", rng() % (size + 2)));
            break;
          case 1:
            selector = WithLabel("zone", {zones[rng() % zones.size()], zones[rng() % zones.size()]});
            break;
          case 2: {
            NodeSelectorTerm t;
            t.match_expressions.push_back({"gpu", rng() % 2 ? "Gt" : "DoesNotExist", {}});
            if (t.match_expressions[0].op == "Gt") t.match_expressions[0].values = {"1"};
            selector = NodeSelector{{t, OnNode(StrCat("n", rng() % (size + 1))).terms[0]}};
            break;
          }
          default:
            break;
        }
        const std::string name = StrCat("c", k);
        cluster.resource_claims.push_back(rng() % 8 ? Allocated(name, selector) : Claim(name));
        refs.push_back({name, name, ""});
      }
      const Pod pod = WithClaims(refs);
      auto r = testing::RunReference(cluster, pod, kDra);
      for (engine::Backend b : testing::TestBackends()) {
        auto e = testing::RunEngine(b, cluster, pod, kDra);
        ASSERT_EQ(testing::Diff(e, r), "") << engine::BackendName(b) << " size " << size << " pod " << j;
      }
    }
  }
}

}  // namespace
}  // namespace kplace
