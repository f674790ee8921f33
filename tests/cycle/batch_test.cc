#include "kplace/cycle/batch.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <optional>
#include <fstream>
#include <random>
#include <set>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "kplace/cli/cli.h"
#include "kplace/cli/commands.h"
#include "kplace/common/strings.h"
#include "kplace/config/config.h"
#include "kplace/engine/plugin.h"
#include "kplace/reference/plugin.h"
#include "kplace/common/status.h"
#include "kplace/state/cluster_state.h"
#include "kplace/state/event.h"
#include "tests/testing/differential.h"
#include "tests/testing/inter_pod_affinity_builders.h"
#include "tests/testing/pod_topology_spread_builders.h"
#include "tests/testing/taint_builders.h"

namespace kplace::cycle {
namespace {

using testing::MakeHostPort;
using testing::MakeNode;
using testing::MakePod;
using testing::MakeTaint;
using testing::MakeToleration;
using testing::Q;

constexpr char kZone[] = "topology.kubernetes.io/zone";
constexpr char kRegion[] = "topology.kubernetes.io/region";
constexpr char kHostname[] = "kubernetes.io/hostname";

// Sets an environment variable for the life of the object (read when schedulers are built).
class ScopedEnv {
 public:
  ScopedEnv(const char* name, const char* value) : name_(name) {
    const char* old = std::getenv(name);
    if (old != nullptr) old_ = old;
    setenv(name, value, 1);
  }
  ~ScopedEnv() {
    if (old_) {
      setenv(name_, old_->c_str(), 1);
    } else {
      unsetenv(name_);
    }
  }

 private:
  const char* name_;
  std::optional<std::string> old_;
};

bool Soak() {
  const char* v = std::getenv("KPLACE_SOAK");
  return v != nullptr && std::string(v) == "1";
}

// The default profile, less plugins not built on both the engine and the reference.
Profile BuiltDefaultProfile(engine::Backend backend) {
  Profile p = DefaultProfile();
  std::vector<std::string> engine_built = engine::RegisteredPlugins(backend);
  std::vector<std::string> reference_built = reference::RegisteredPlugins();
  auto missing = [&](const std::string& n) {
    return !std::count(engine_built.begin(), engine_built.end(), n) ||
           !std::count(reference_built.begin(), reference_built.end(), n);
  };
  for (auto* v : {&p.pre_filter, &p.filter, &p.pre_score}) v->erase(std::remove_if(v->begin(), v->end(), missing), v->end());
  p.score.erase(std::remove_if(p.score.begin(), p.score.end(), [&](const WeightedPlugin& w) { return missing(w.name); }),
                p.score.end());
  return p;
}

// The default profile and a second one that packs (MostAllocated, its own weights and
// percentage), so pods of two profiles interleave.
SchedulerConfig TwoProfiles(engine::Backend backend, int32_t percentage) {
  SchedulerConfig config;
  config.percentage_of_nodes_to_score = percentage;
  Profile a = BuiltDefaultProfile(backend);
  Profile b = a;
  b.scheduler_name = "packing-scheduler";
  b.args.node_resources_fit.strategy = "MostAllocated";
  for (WeightedPlugin& w : b.score) w.weight = w.weight == 1 ? 3 : 1;
  b.percentage_of_nodes_to_score = 100;
  config.profiles = {a, b};
  return config;
}

struct Scenario {
  ObjectSet cluster;
  std::vector<Pod> pending;  // queue order = input order
};

// What a random scenario holds besides its size. The defaults are the original mix, so
// tests that keep them draw the same scenarios as before.
struct Mix {
  // The inter-pod terms of bound pods. Only required anti-affinity of a bound pod makes
  // InterPodAffinity filter a pod that has no terms of its own; the scoring terms
  // (required affinity, preferred affinity and anti-affinity) still make it score.
  enum class Bound { kRequiredAnti, kScoringTerms, kNoTerms } bound = Bound::kRequiredAnti;
  // Percentage of pod templates drawn with node-local features only (resources, taints and
  // tolerations, node selector, node affinity, host ports, nodeName): no spread
  // constraints, no pod (anti-)affinity, no volumes, so every plugin that is not
  // node-local skips them unless a Service selects them (below) or a bound pod's terms do.
  int node_local_percent = 0;
  // The other templates may mount a read-write GCE disk (VolumeRestrictions).
  bool volumes = false;
  // A Service selecting app=g1: such pods get the system default spread constraints
  // although they declare none.
  bool services = false;
};

// Most templates node-local, the others with every kind of cluster-wide feature, and no
// bound pod with inter-pod terms.
Mix NodeLocalMix(int node_local_percent) {
  Mix mix;
  mix.bound = Mix::Bound::kNoTerms;
  mix.node_local_percent = node_local_percent;
  mix.volumes = true;
  mix.services = true;
  return mix;
}

// A read-write GCE persistent disk, which fits one pod per node.
Volume GceDisk(const std::string& disk) {
  Volume v;
  v.name = "data";
  v.source = "gcePersistentDisk";
  v.disk_id = disk;
  v.source_json = StrCat(R"({"pdName":")", disk, R"("})");
  return v;
}

// A cluster with zones, tiers, taints, a few unschedulable nodes, images, an extended
// resource, and bound pods with labels, host ports and (per `mix`) inter-pod terms.
ObjectSet RandomCluster(std::mt19937_64& rng, int32_t num_nodes, const Mix& mix) {
  auto pick = [&](int n) { return static_cast<int>(rng() % n); };
  ObjectSet c;
  const int zones = 1 + pick(5);
  for (int32_t i = 0; i < num_nodes; ++i) {
    std::string name = StrCat("node-", i);
    Labels labels = {{kZone, StrCat("zone-", pick(zones))}, {kRegion, "region-0"}, {kHostname, name}};
    labels["tier"] = std::string(1, static_cast<char>('a' + pick(3)));
    if (pick(3) > 0) labels["disk"] = pick(2) ? "ssd" : "hdd";
    static const char* kCpu[] = {"2", "4", "8"};
    static const char* kMem[] = {"4Gi", "8Gi", "16Gi"};
    static const char* kPods[] = {"3", "10", "110"};
    std::map<std::string, std::string> alloc = {{"cpu", kCpu[pick(3)]}, {"memory", kMem[pick(3)]}, {"pods", kPods[pick(3)]}};
    if (pick(8) == 0) alloc["example.com/gpu"] = pick(2) ? "1" : "2";
    Node n = MakeNode(name, alloc, labels);
    if (pick(10) == 0) n.taints.push_back(MakeTaint("dedicated", "infra", "NoSchedule"));
    if (pick(10) == 0) n.taints.push_back(MakeTaint("flaky", "", "PreferNoSchedule"));
    n.unschedulable = pick(33) == 0;
    if (pick(4) == 0) n.images.push_back(ContainerImage{{"registry.k8s.io/app:v1"}, 300LL << 20});
    c.nodes.push_back(std::move(n));
  }
  const int bound = num_nodes / 4;
  for (int j = 0; j < bound; ++j) {
    Pod p = MakePod(StrCat("bound-", j), {{"cpu", "100m"}, {"memory", "256Mi"}}, StrCat("node-", pick(num_nodes)));
    p.meta.labels["app"] = pick(2) ? "a" : "b";
    if (pick(6) == 0) p.containers[0].ports.push_back(MakeHostPort(8080));
    const bool terms = pick(12) == 0;
    if (terms && mix.bound == Mix::Bound::kRequiredAnti) {
      testing::ipa::RequireAnti(p, testing::ipa::Term(testing::MatchLabels({{"app", "c"}}), kHostname));
    }
    if (terms && mix.bound == Mix::Bound::kScoringTerms) {
      // Terms that select pending pods' apps, so they move those pods' scores.
      const PodAffinityTerm t = testing::ipa::Term(testing::MatchLabels({{"app", StrCat("g", pick(4))}}), kZone);
      const int kind = pick(3);
      if (kind == 0) testing::ipa::RequireAffinity(p, t);
      if (kind == 1) testing::ipa::PreferAffinity(p, 1 + pick(100), t);
      if (kind == 2) testing::ipa::PreferAnti(p, 1 + pick(100), t);
    }
    c.pods.push_back(std::move(p));
  }
  if (mix.services) c.workloads.push_back(testing::MakeService("g1", {{"app", "g1"}}));
  return c;
}

// A required node selector with one matchFields metadata.name term per name.
NodeSelector NamedNodes(const std::vector<std::string>& names) {
  NodeSelector s;
  for (const std::string& name : names) {
    NodeSelectorTerm t;
    t.match_fields.push_back(NodeSelectorRequirement{"metadata.name", "In", {name}});
    s.terms.push_back(t);
  }
  return s;
}

// Spread constraints, pod (anti-)affinity and (per `mix`) a disk: the features plugins
// that are not node-local read.
void AddClusterWideFeatures(std::mt19937_64& rng, const std::string& app, const Mix& mix, Pod& p) {
  auto pick = [&](int n) { return static_cast<int>(rng() % n); };
  if (mix.volumes && pick(6) == 0) p.volumes.push_back(GceDisk(StrCat("pd-", pick(3))));
  if (pick(8) == 0) {
    p.topology_spread_constraints.push_back(testing::HardSpread(1 + pick(2), kZone, testing::MatchLabels({{"app", app}})));
  }
  if (pick(8) == 0) {
    p.topology_spread_constraints.push_back(testing::SoftSpread(1, kHostname, testing::MatchLabels({{"app", app}})));
  }
  if (pick(9) == 0) {
    testing::ipa::RequireAnti(p, testing::ipa::Term(testing::MatchLabels({{"app", app}}), kHostname));
  }
  if (pick(9) == 0) {
    testing::ipa::PreferAffinity(p, 1 + pick(100), testing::ipa::Term(testing::MatchLabels({{"app", "a"}}), kZone));
  }
  if (pick(12) == 0) {
    testing::ipa::RequireAffinity(p, testing::ipa::Term(testing::MatchLabels({{"app", "b"}}), kZone));
  }
  if (pick(12) == 0) {
    testing::ipa::PreferAnti(p, 1 + pick(100), testing::ipa::Term(testing::MatchLabels({{"app", "b"}}), kHostname));
  }
}

// A pod template drawn from the features every default plugin reads, or (a share of
// `mix`) from those node-local plugins read.
Pod RandomTemplate(std::mt19937_64& rng, int group, int32_t num_nodes, const Mix& mix) {
  auto pick = [&](int n) { return static_cast<int>(rng() % n); };
  // Drawn only when asked for, so the original mix keeps its draws.
  const bool node_local = mix.node_local_percent > 0 && pick(100) < mix.node_local_percent;
  static const char* kCpu[] = {"100m", "500m", "1", "3"};
  static const char* kMem[] = {"100Mi", "1Gi", "3Gi"};
  std::map<std::string, std::string> requests;
  if (pick(6) > 0) requests = {{"cpu", kCpu[pick(4)]}, {"memory", kMem[pick(3)]}};
  if (pick(10) == 0) requests["example.com/gpu"] = "1";
  Pod p = MakePod("template", requests);
  const std::string app = pick(3) == 0 ? "a" : StrCat("g", group % 4);
  p.meta.labels["app"] = app;
  p.containers[0].image = pick(3) == 0 ? "registry.k8s.io/app:v1" : "registry.k8s.io/pause:3.10";
  if (pick(5) == 0) p.tolerations.push_back(MakeToleration("dedicated", "Equal", "infra", "NoSchedule"));
  if (pick(5) == 0) p.tolerations.push_back(MakeToleration("flaky", "Exists", "", "PreferNoSchedule"));
  if (pick(7) == 0) {
    p.node_selector["tier"] = "a";
    p.node_selector_set = true;
  }
  if (pick(8) == 0 || pick(6) == 0) {
    p.affinity.emplace();
    NodeAffinity& na = p.affinity->node_affinity.emplace();
    if (pick(2) == 0) {
      NodeSelectorTerm t;
      t.match_expressions.push_back(NodeSelectorRequirement{"tier", "In", {"a", "b"}});
      na.required = NodeSelector{{t}};
    }
    if (pick(25) == 0) {  // DaemonSet-style: PreFilter restricts to named nodes
      std::vector<std::string> names;
      for (int k = 0; k < 1 + pick(4); ++k) names.push_back(StrCat("node-", pick(num_nodes)));
      if (pick(4) == 0) names.push_back("absent-node");
      na.required = NamedNodes(names);
    }
    if (pick(2) == 0) {
      NodeSelectorTerm t;
      t.match_expressions.push_back(NodeSelectorRequirement{"disk", "In", {"ssd"}});
      na.preferred.push_back(PreferredSchedulingTerm{1 + pick(50), t});
      na.preferred_set = true;
    }
  }
  if (pick(8) == 0) p.containers[0].ports.push_back(MakeHostPort(pick(2) ? 8080 : 9090));
  if (!node_local) AddClusterWideFeatures(rng, app, mix, p);
  if (pick(node_local ? 12 : 40) == 0) p.node_name = StrCat("node-", pick(num_nodes));
  if (pick(5) == 0) p.scheduler_name = "packing-scheduler";
  return p;
}

// Runs of identical pods (lengths 1 to `max_run`) interleaved with one another and with
// single different pods.
Scenario RandomScenario(uint64_t seed, int32_t num_nodes, int32_t num_pods, int32_t max_run, const Mix& mix = {}) {
  std::mt19937_64 rng(seed);
  Scenario s;
  s.cluster = RandomCluster(rng, num_nodes, mix);
  std::vector<Pod> templates;
  for (int g = 0; g < 6; ++g) templates.push_back(RandomTemplate(rng, g, num_nodes, mix));
  int64_t created = 1000;
  while (static_cast<int32_t>(s.pending.size()) < num_pods) {
    const bool single = rng() % 4 == 0;
    const Pod& t = single ? RandomTemplate(rng, 100 + static_cast<int>(s.pending.size()), num_nodes, mix)
                          : templates[rng() % templates.size()];
    const int32_t run = single ? 1 : 1 + static_cast<int32_t>(rng() % max_run);
    for (int32_t r = 0; r < run && static_cast<int32_t>(s.pending.size()) < num_pods; ++r) {
      Pod p = t;
      p.meta.name = StrCat("pod-", s.pending.size());
      p.meta.uid = StrCat("uid-", s.pending.size());
      p.meta.creation_unix = created++;
      s.pending.push_back(std::move(p));
    }
  }
  return s;
}

// SchedulingBasic's shape: alike nodes (4 cpu, room for 40 pods each) in three zones and
// one run of identical plain pods (100m cpu).
Scenario PlainScenario(int32_t num_nodes, int32_t num_pods) {
  Scenario s;
  for (int i = 0; i < num_nodes; ++i) {
    s.cluster.nodes.push_back(MakeNode(StrCat("node-", i), {{"cpu", "4"}, {"memory", "32Gi"}, {"pods", "110"}},
                                       {{kZone, StrCat("zone-", i % 3)}, {kHostname, StrCat("node-", i)}}));
  }
  for (int i = 0; i < num_pods; ++i) {
    Pod p = MakePod(StrCat("p", i), {{"cpu", "100m"}, {"memory", "500Mi"}});
    p.meta.creation_unix = i;
    s.pending.push_back(p);
  }
  return s;
}

int64_t Placed(const std::vector<Placement>& placements) {
  return std::count_if(placements.begin(), placements.end(), [](const Placement& p) { return !p.node.empty(); });
}

// How many placed pods `placements` hold, expecting no node twice.
size_t DistinctNodes(const std::vector<Placement>& placements) {
  std::set<std::string> nodes;
  for (const Placement& p : placements) {
    if (!p.node.empty()) {
      EXPECT_TRUE(nodes.insert(p.node).second) << p.node;
    }
  }
  return nodes.size();
}

// Compares the two paths on `s`, expecting them the same and some pod placed (a scenario
// placing nothing would compare little), and returns the comparison (empty when it could
// not be made).
BatchComparison ExpectSame(const Scenario& s, const SchedulerConfig& config, const Options& options,
                           const std::string& what) {
  auto c = CompareBatched(s.cluster, config, options, s.pending);
  EXPECT_TRUE(c.ok()) << what << ": " << c.status();
  if (!c.ok()) return {};
  EXPECT_TRUE(c->same()) << what << ": " << c->mismatches << " of " << c->pods
                         << " placements differ; first: " << c->first_mismatch;
  EXPECT_GT(Placed(c->per_pod), 0) << what;
  return *std::move(c);
}

TEST(BatchTest, SignatureIgnoresNameUidAndCreationOnly) {
  Pod a = MakePod("a", {{"cpu", "1"}});
  a.meta.uid = "u1";
  a.meta.creation_unix = 5;
  a.meta.creation_timestamp = "2024-01-01T00:00:00Z";
  Pod b = a;
  b.meta.name = "b";
  b.meta.uid = "u2";
  b.meta.creation_unix = 6;
  b.meta.creation_timestamp = "2024-01-01T00:00:01Z";
  EXPECT_EQ(SchedulingSignature(a), SchedulingSignature(b));
  EXPECT_TRUE(HasSchedulingSignature(b, SchedulingSignature(a)));

  std::vector<Pod> variants(9, a);
  variants[0].meta.namespace_ = "other";
  variants[1].meta.labels["app"] = "x";
  variants[2].containers[0].requests["cpu"] = Q("1001m");
  variants[3].tolerations.push_back(MakeToleration("k", "Exists", "", ""));
  variants[4].scheduler_name = "other-scheduler";
  variants[5].node_selector_set = true;
  variants[6].containers[0].ports.push_back(MakeHostPort(80));
  variants[7].priority = 0;
  variants[8].topology_spread_constraints.push_back(testing::HardSpread(1, kZone, std::nullopt));
  for (size_t i = 0; i < variants.size(); ++i) {
    EXPECT_NE(SchedulingSignature(a), SchedulingSignature(variants[i])) << "variant " << i;
    EXPECT_FALSE(HasSchedulingSignature(variants[i], SchedulingSignature(a))) << "variant " << i;
    EXPECT_TRUE(HasSchedulingSignature(variants[i], SchedulingSignature(variants[i]))) << "variant " << i;
  }
  // A prefix or an extension of the encoding is not a match.
  const std::string sig = SchedulingSignature(a);
  EXPECT_FALSE(HasSchedulingSignature(a, sig.substr(0, sig.size() - 1)));
  EXPECT_FALSE(HasSchedulingSignature(a, sig + "x"));
  EXPECT_FALSE(HasSchedulingSignature(a, ""));
  // Field boundaries are encoded: moving a character between strings changes the bytes.
  Pod c = a, d = a;
  c.meta.labels = {{"ab", "c"}};
  d.meta.labels = {{"a", "bc"}};
  EXPECT_NE(SchedulingSignature(c), SchedulingSignature(d));
}

TEST(BatchTest, NodeLocalPluginsAreDeclared) {
  const std::vector<std::string> local = {"NodeResourcesFit", "NodeResourcesBalancedAllocation", "TaintToleration",
                                          "NodeAffinity",     "NodeName",                        "NodeUnschedulable",
                                          "NodePorts",        "ImageLocality"};
  const std::vector<std::string> global = {"PodTopologySpread", "InterPodAffinity"};
  for (engine::Backend b : testing::TestBackends()) {
    for (const auto& [names, want] : {std::make_pair(local, true), std::make_pair(global, false)}) {
      for (const std::string& name : names) {
        std::string error;
        auto p = engine::MakePlugin(b, name, PluginArgs{}, FeatureGates{}, &error);
        ASSERT_NE(p, nullptr) << name << ": " << error;
        EXPECT_EQ(p->NodeLocal(), want) << name << " on " << engine::BackendName(b);
      }
    }
  }
}

TEST(BatchTest, DefaultOptionsAreBatchedAndBatchOneIsPerPod) {
  EXPECT_EQ(Options{}.batch, kDefaultBatch);
  ObjectSet cluster;
  for (int i = 0; i < 4; ++i) cluster.nodes.push_back(MakeNode(StrCat("n", i), {{"cpu", "2"}, {"pods", "110"}}));
  std::vector<Pod> pods;
  for (int i = 0; i < 12; ++i) pods.push_back(MakePod(StrCat("p", i), {{"cpu", "500m"}}));
  Options options;
  options.batch = 1;
  auto c = CompareBatched(cluster, TwoProfiles(engine::Backend::kOmp, 0), options, pods);
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_TRUE(c->same()) << c->first_mismatch;
  // 4 nodes of 2 cpu hold 16 such pods: all 12 placed, 3 per node.
  std::map<std::string, int> per_node;
  for (const Placement& p : c->batched) ++per_node[p.node];
  EXPECT_EQ(per_node.size(), 4u);
  for (const auto& [node, count] : per_node) EXPECT_EQ(count, 3) << node;
}

TEST(BatchTest, FillingNodesAndFailingPodsMatchPerPod) {
  // Each bind makes its node infeasible (one pod per node), so the run's kept verdicts must
  // follow every bind; once the cluster is full every further pod fails with the same text
  // and the start index must end where the per-pod path leaves it.
  for (int32_t nodes : {5, 99, 100, 250}) {
    Scenario s;
    for (int i = 0; i < nodes; ++i) {
      s.cluster.nodes.push_back(MakeNode(StrCat("n", i), {{"cpu", i % 7 == 0 ? "1" : "4"}, {"pods", "1"}}));
    }
    for (int i = 0; i < nodes + 20; ++i) {
      Pod p = MakePod(StrCat("p", i), {{"cpu", "2"}});
      p.meta.creation_unix = i;
      s.pending.push_back(p);
    }
    for (int32_t batch : {2, 7, 2000}) {
      Options options;
      options.batch = batch;
      ExpectSame(s, TwoProfiles(engine::Backend::kOmp, 0), options, StrCat(nodes, " nodes, batch ", batch));
    }
    auto c = CompareBatched(s.cluster, TwoProfiles(engine::Backend::kOmp, 0), Options{}, s.pending);
    ASSERT_TRUE(c.ok());
    const std::string& last = c->batched.back().message;
    EXPECT_EQ(last.rfind(StrCat("0/", nodes, " nodes are available: "), 0), 0u) << last;
    EXPECT_NE(last.find(StrCat(nodes - (nodes + 6) / 7, " Too many pods")), std::string::npos) << last;
  }
}

TEST(BatchTest, HostPortsOnePodPerNode) {
  Scenario s;
  for (int i = 0; i < 40; ++i) s.cluster.nodes.push_back(MakeNode(StrCat("n", i), {{"cpu", "8"}, {"pods", "110"}}));
  // A run on the wildcard address, then one on a specific address the nodes first see
  // when these pods bind: both conflict with the wildcard, so one pod fits per node.
  for (int i = 0; i < 60; ++i) {
    Pod p = testing::MakePortPod(StrCat("p", i), {MakeHostPort(8080, "TCP", i < 30 ? "" : "10.0.0.1")});
    p.meta.creation_unix = i;
    s.pending.push_back(p);
  }
  BatchComparison c = ExpectSame(s, TwoProfiles(engine::Backend::kOmp, 0), Options{}, "host ports");
  ASSERT_EQ(c.pods, 60);
  EXPECT_EQ(DistinctNodes(c.batched), 40u);
  EXPECT_EQ(c.batched.back().message,
            "0/40 nodes are available: 40 node(s) didn't have free ports for the requested pod ports. preemption: 0/40 "
            "nodes are available: 40 No preemption victims found for incoming pod.");
}

TEST(BatchTest, PluginsWithoutFilterNodesMatchPerPod) {
  // VolumeRestrictions is not node-local: the batched cycle filters with it per pod on the
  // visited nodes only. A read-write GCE disk fits one pod per node.
  Scenario s;
  for (int i = 0; i < 30; ++i) s.cluster.nodes.push_back(MakeNode(StrCat("n", i), {{"cpu", "8"}, {"pods", "110"}}));
  for (int i = 0; i < 40; ++i) {
    Pod p = MakePod(StrCat("p", i), {{"cpu", "100m"}});
    p.volumes.push_back(GceDisk("pd-1"));
    p.meta.creation_unix = i;
    s.pending.push_back(p);
  }
  BatchComparison c = ExpectSame(s, TwoProfiles(engine::Backend::kOmp, 0), Options{}, "gce disk");
  ASSERT_EQ(c.pods, 40);
  EXPECT_EQ(DistinctNodes(c.batched), 30u) << c.batched.back().message;
}

TEST(BatchTest, RestrictedCandidatesAndExplainStayPerPod) {
  Scenario s;
  for (int i = 0; i < 30; ++i) s.cluster.nodes.push_back(MakeNode(StrCat("n", i), {{"cpu", "2"}, {"pods", "110"}}));
  Pod t = MakePod("t", {{"cpu", "1"}});
  t.affinity.emplace().node_affinity.emplace().required = NamedNodes({"n3", "n17", "n29", "gone"});
  for (int i = 0; i < 10; ++i) {
    Pod p = t;
    p.meta.name = StrCat("p", i);
    p.meta.creation_unix = i;
    s.pending.push_back(p);
  }
  BatchComparison c = ExpectSame(s, TwoProfiles(engine::Backend::kOmp, 0), Options{}, "restricted");
  ASSERT_EQ(c.pods, 10);
  EXPECT_EQ(c.batched.back().message,
            "0/30 nodes are available: 27 node(s) didn't satisfy plugin(s) [NodeAffinity], 3 Insufficient cpu. "
            "preemption: 0/30 nodes are available: 27 Preemption is not helpful for scheduling, 3 No preemption "
            "victims found for incoming pod.");

  Options explain;
  explain.explain = true;
  auto sched = Scheduler::Create(s.cluster, TwoProfiles(engine::Backend::kOmp, 0), explain);
  ASSERT_TRUE(sched.ok());
  Placement p = (*sched)->Schedule(s.pending[0]);
  ASSERT_NE(p.explanation, nullptr);
  EXPECT_FALSE(p.explanation->nodes.empty());
}

TEST(BatchTest, RandomizedSmallClusters) {
  const int seeds = Soak() ? 200 : 12;
  for (int seed = 1; seed <= seeds; ++seed) {
    const int32_t nodes = std::vector<int32_t>{50, 99, 137, 300}[seed % 4];
    Scenario s = RandomScenario(seed, nodes, 300, seed % 3 == 0 ? 60 : 12);
    for (int32_t percentage : {0, 100}) {
      Options options;
      options.batch = std::vector<int32_t>{2, 16, 2000}[seed % 3];
      options.tie_break = seed % 5 == 0 ? TieBreak::kRandom : TieBreak::kHeap;
      options.seed = seed;
      ExpectSame(s, TwoProfiles(engine::Backend::kOmp, percentage), options,
                 StrCat("seed ", seed, ", ", nodes, " nodes, percentage ", percentage, ", batch ", options.batch));
      if (HasFailure()) return;
    }
  }
}

// Runs of one and two pods: a run's first pod filters and scores as a single pod does,
// without the run's per-node caches, and its second fills them.
TEST(BatchTest, RandomizedRunsOfOneAndTwo) {
  for (int seed = 301; seed <= 306; ++seed) {
    const int32_t nodes = std::vector<int32_t>{60, 250, 1200}[seed % 3];
    Scenario s = RandomScenario(seed, nodes, 300, 2);
    Options options;
    options.tie_break = seed % 2 == 0 ? TieBreak::kRandom : TieBreak::kHeap;
    options.seed = seed;
    ExpectSame(s, TwoProfiles(engine::Backend::kOmp, seed % 3 == 0 ? 100 : 0), options,
               StrCat("seed ", seed, ", ", nodes, " nodes"));
    if (HasFailure()) return;
  }
}

TEST(BatchTest, RandomizedLargeClusters) {
  struct Case {
    int32_t nodes, pods, max_run;
  };
  std::vector<Case> cases = {{1000, 600, 200}, {5000, 400, 2000}};
  if (Soak()) cases.push_back({5000, 3000, 2000});
  uint64_t seed = 100;
  for (const Case& k : cases) {
    Scenario s = RandomScenario(++seed, k.nodes, k.pods, k.max_run);
    ExpectSame(s, TwoProfiles(engine::Backend::kOmp, 0), Options{}, StrCat(k.nodes, " nodes, seed ", seed));
  }
}

TEST(BatchTest, PlainPodsAtFiveThousandNodes) {
  // SchedulingBasic's shape: one long run of identical pods, batches of 1 to 2,000.
  Scenario s = PlainScenario(5000, 2000);
  for (int32_t batch : {1, 3, 2000}) {
    Options options;
    options.batch = batch;
    BatchComparison c = ExpectSame(s, TwoProfiles(engine::Backend::kOmp, 0), options, StrCat("batch ", batch));
    // Plain pods need node-local plugins only: every pod but each run's first goes the
    // local-only way (CompareBatched's batched side takes the default batch for 1).
    const int64_t run = batch > 1 ? batch : kDefaultBatch;
    const int64_t runs = (2000 + run - 1) / run;
    EXPECT_EQ(c.stats.runs, runs) << batch;
    EXPECT_EQ(c.stats.local_only, 2000 - runs) << batch;
  }
}

TEST(BatchTest, TenThousandPlainPodsInOneRun) {
  // One run of 10,000 identical pods under batch 10,000: in ctest on 200 nodes, which
  // hold 8,000 of them, so the run also fills the cluster and fails the last 2,000 with
  // one text; the soak adds 15,000 nodes, where all fit.
  struct Case {
    int32_t nodes, pods;
  };
  std::vector<Case> cases = {{200, 10000}};
  if (Soak()) cases.push_back({15000, 10000});
  for (const Case& k : cases) {
    Scenario s = PlainScenario(k.nodes, k.pods);
    Options options;
    options.batch = 10000;
    const std::string what = StrCat(k.nodes, " nodes, ", k.pods, " plain pods, batch ", options.batch);
    BatchComparison c = ExpectSame(s, TwoProfiles(engine::Backend::kOmp, 0), options, what);
    ASSERT_EQ(c.batched.size(), static_cast<size_t>(k.pods)) << what;
    EXPECT_EQ(Placed(c.batched), std::min<int64_t>(k.pods, 40LL * k.nodes)) << what;
    if (k.pods > 40LL * k.nodes) {
      EXPECT_EQ(c.batched.back().message,
                StrCat("0/", k.nodes, " nodes are available: ", k.nodes, " Insufficient cpu. preemption: 0/", k.nodes,
                       " nodes are available: ", k.nodes, " No preemption victims found for incoming pod."))
          << what;
    }
  }
}

TEST(BatchTest, RandomizedNodeLocalRuns) {
  // No pod bound at the start carries required anti-affinity, and most templates need
  // node-local plugins only: runs that every other plugin skips (PodTopologySpread,
  // InterPodAffinity, the volume plugins) interleave with runs and single pods that use
  // spread, (anti-)affinity or a disk, whose binds change what later runs may skip.
  // Bound pods' scoring terms and a Service's default spread make some pods without
  // terms of their own still need those plugins.
  // Local-only runs also check their premise on every pod here: a plugin that stops
  // skipping turns the pod's placement into an error, which the comparison reports.
  ScopedEnv self_check("KPLACE_BATCH_SELF_CHECK", "1");
  int64_t local_only = 0, batched = 0;
  const int seeds = Soak() ? 200 : 24;
  for (int seed = 1; seed <= seeds; ++seed) {
    Mix mix;
    mix.bound = seed % 2 == 0 ? Mix::Bound::kNoTerms : Mix::Bound::kScoringTerms;
    mix.node_local_percent = std::vector<int>{60, 85, 100}[seed % 3];
    mix.volumes = seed % 4 < 2;
    mix.services = seed % 5 < 2;
    const int32_t nodes = std::vector<int32_t>{50, 137, 300, 1000}[(seed / 2) % 4];
    const int32_t max_run = std::vector<int32_t>{12, 60, 400}[seed % 3];
    Scenario s = RandomScenario(1000 + seed, nodes, Soak() ? 1500 : 400, max_run, mix);
    for (int32_t percentage : {0, 100}) {
      Options options;
      options.batch = std::vector<int32_t>{2, 16, 1024, kDefaultBatch}[seed % 4];
      options.tie_break = (seed / 3) % 2 == 0 ? TieBreak::kRandom : TieBreak::kHeap;
      options.seed = seed;
      BatchComparison c = ExpectSame(s, TwoProfiles(engine::Backend::kOmp, percentage), options,
                                     StrCat("seed ", seed, ", ", nodes, " nodes, node-local ", mix.node_local_percent,
                                            "%, percentage ", percentage, ", batch ", options.batch));
      if (HasFailure()) return;
      local_only += c.stats.local_only;
      batched += c.stats.pods;
    }
  }
  // The fast path is taken, and not for every pod.
  EXPECT_GT(local_only, batched / 5);
  EXPECT_LT(local_only, batched);
}

TEST(BatchTest, RandomizedFifteenThousandNodes) {
  // The largest cluster of issue #7, with the original mix and with node-local runs. The
  // soak adds runs of thousands of identical pods. Seed 225 queues 11,127 alike
  // node-local pods, then 11,623 alike pods that need the other plugins, then 7,249
  // node-local ones: under batch 10,000 runs of 10,000 of both kinds.
  struct Case {
    uint64_t seed;
    int32_t pods, max_run, batch;
    Mix mix;
  };
  const Mix node_local = NodeLocalMix(70);
  std::vector<Case> cases = {{201, 1000, 100, kDefaultBatch, Mix{}}, {202, 1000, 100, kDefaultBatch, node_local}};
  if (Soak()) {
    cases.push_back({203, 4000, 2000, kDefaultBatch, Mix{}});
    cases.push_back({225, 30000, 10000, 10000, node_local});
  }
  for (const Case& k : cases) {
    Scenario s = RandomScenario(k.seed, 15000, k.pods, k.max_run, k.mix);
    Options options;
    options.batch = k.batch;
    options.tie_break = k.seed % 2 == 0 ? TieBreak::kRandom : TieBreak::kHeap;
    options.seed = k.seed;
    ExpectSame(s, TwoProfiles(engine::Backend::kOmp, 0), options,
               StrCat("15000 nodes, seed ", k.seed, ", ", k.pods, " pods, batch ", k.batch));
  }
}

// Distinct pods whose nodeSelector or required node affinity names a few nodes: the
// batched and the per-pod cycle scan only the nodes carrying the selected labels
// (SelectiveScan). Nodes
// failing an earlier Filter plugin (taints, unschedulable) sit among the skipped ones, some
// selectors name no node or only nodes every pod is kept off (the FitError counts every
// node), and node events in between move nodes into and out of the selected sets.
Scenario SelectiveScenario(uint64_t seed, int32_t num_nodes, int32_t num_pods) {
  std::mt19937_64 rng(seed);
  auto pick = [&](int n) { return static_cast<int>(rng() % n); };
  Scenario s;
  for (int32_t i = 0; i < num_nodes; ++i) {
    const std::string name = StrCat("node-", i);
    const int zone = pick(10);
    Labels labels = {{kZone, StrCat("zone-", zone)}, {kHostname, name}};
    if (pick(3) > 0) labels["disk"] = std::vector<std::string>{"ssd", "hdd", "nvme"}[pick(3)];
    if (pick(20) == 0) labels["pool"] = "batch";
    Node n = MakeNode(name, {{"cpu", pick(2) ? "4" : "8"}, {"memory", "16Gi"}, {"pods", "20"}}, labels);
    // zone-9 is all tainted: a pod selecting it without the toleration fits nowhere.
    if (zone == 9 || pick(8) == 0) n.taints.push_back(MakeTaint("dedicated", "infra", "NoSchedule"));
    n.unschedulable = pick(25) == 0;
    s.cluster.nodes.push_back(std::move(n));
  }
  for (int32_t j = 0; j < num_pods; ++j) {
    // Distinct requests: no two pods share a signature, every run is one pod long.
    Pod p = MakePod(StrCat("pod-", j), {{"cpu", StrCat(100 + j, "m")}, {"memory", StrCat(64 + pick(64), "Mi")}});
    p.meta.uid = StrCat("uid-", j);
    p.meta.creation_unix = 1000 + j;
    const std::string app = StrCat("app-", pick(4));
    p.meta.labels["app"] = app;
    const std::string zone = StrCat("zone-", pick(10));
    switch (pick(8)) {
      case 0:
        p.node_selector[kZone] = zone;
        break;
      case 1:
        p.node_selector["disk"] = pick(4) ? "ssd" : "absent";
        if (pick(2)) p.node_selector[kZone] = zone;
        break;
      case 2: {
        p.affinity.emplace();
        NodeSelector required;
        for (int t = 0; t < 1 + pick(2); ++t) {
          NodeSelectorTerm term;
          term.match_expressions.push_back(
              NodeSelectorRequirement{kZone, "In", {StrCat("zone-", pick(10)), StrCat("zone-", pick(10))}});
          if (pick(2)) term.match_expressions.push_back(NodeSelectorRequirement{"disk", "NotIn", {"hdd"}});
          required.terms.push_back(term);
        }
        p.affinity->node_affinity.emplace().required = required;
        break;
      }
      case 3: {
        p.affinity.emplace();
        NodeSelectorTerm term;
        term.match_expressions.push_back(NodeSelectorRequirement{"pool", "In", {"batch"}});
        term.match_expressions.push_back(NodeSelectorRequirement{kZone, "NotIn", {zone}});
        p.affinity->node_affinity.emplace().required = NodeSelector{{term}};
        break;
      }
      case 4: {  // one term bounded, one not: no skipping unless the selector bounds it
        p.affinity.emplace();
        NodeSelectorTerm a, b;
        a.match_expressions.push_back(NodeSelectorRequirement{kZone, "In", {zone}});
        b.match_expressions.push_back(NodeSelectorRequirement{"disk", "Exists", {}});
        p.affinity->node_affinity.emplace().required = NodeSelector{{a, b}};
        if (pick(2)) p.node_selector[kZone] = zone;
        break;
      }
      default:
        break;
    }
    if (pick(4) == 0) p.tolerations.push_back(MakeToleration("dedicated", "Equal", "infra", "NoSchedule"));
    if (pick(5) == 0) {
      p.topology_spread_constraints.push_back(testing::HardSpread(1 + pick(3), kZone, testing::MatchLabels({{"app", app}})));
    }
    if (pick(8) == 0) {
      testing::ipa::PreferAnti(p, 1 + pick(100), testing::ipa::Term(testing::MatchLabels({{"app", app}}), kHostname));
    }
    if (pick(12) == 0) {
      testing::ipa::RequireAnti(p, testing::ipa::Term(testing::MatchLabels({{"app", app}}), kZone));
    }
    s.pending.push_back(std::move(p));
  }
  return s;
}

// Schedules `s.pending` in `parts` parts on `sched`, calling `between(step)` after each.
absl::StatusOr<std::vector<Placement>> ScheduleInParts(Scheduler& sched, const Scenario& s, size_t parts,
                                                       const std::function<absl::Status(size_t)>& between) {
  std::vector<Placement> out;
  const size_t part = (s.pending.size() + parts - 1) / parts;
  for (size_t from = 0, step = 0; from < s.pending.size(); from += part, ++step) {
    std::vector<Pod> pods(s.pending.begin() + from, s.pending.begin() + std::min(s.pending.size(), from + part));
    const std::vector<Placement> some = sched.ScheduleAll(pods);
    out.insert(out.end(), some.begin(), some.end());
    KPLACE_RETURN_IF_ERROR(between(step));
  }
  return out;
}

// Schedules `s.pending` in four parts on a fresh scheduler, applying node events between
// them: a node's zone and disk labels changed, a node added with selected labels, a node
// deleted.
absl::StatusOr<std::vector<Placement>> ScheduleWithNodeEvents(Scheduler& sched, const Scenario& s) {
  return ScheduleInParts(sched, s, 4, [&](size_t step) -> absl::Status {
    const Node& first = s.cluster.nodes[step * 7 % s.cluster.nodes.size()];
    if (step == 0) {
      Node changed = *sched.state().FindNode(first.meta.name);
      changed.meta.labels[kZone] = "zone-3";
      changed.meta.labels["disk"] = "ssd";
      KPLACE_RETURN_IF_ERROR(sched.state().Apply(state::NodeEvent(state::EventType::kModified, changed)));
    } else if (step == 1) {
      for (int k = 0; k < 3; ++k) {
        Node added = MakeNode(StrCat("added-", k), {{"cpu", "16"}, {"memory", "64Gi"}, {"pods", "40"}},
                              {{kZone, StrCat("zone-", k)}, {kHostname, StrCat("added-", k)}, {"disk", "ssd"}, {"pool", "batch"}});
        KPLACE_RETURN_IF_ERROR(sched.state().Apply(state::NodeEvent(state::EventType::kAdded, added)));
      }
    } else if (step == 2) {
      KPLACE_RETURN_IF_ERROR(
          sched.state().Apply(state::NodeEvent(state::EventType::kDeleted, *sched.state().FindNode(first.meta.name))));
    }
    return absl::OkStatus();
  });
}

// Engine per pod against engine batched (CompareBatched), and each against the scalar
// reference, which scans every node: node, message, score, feasible count and the final start
// index. With `fills`, some pods fit nowhere (the cycle's fallbacks and FitErrors ran).
void ExpectPerPodBatchedAndReferenceAlike(
    const Scenario& s, const SchedulerConfig& config, uint64_t seed,
    const std::function<absl::StatusOr<std::vector<Placement>>(Scheduler&)>& run, const std::string& what,
    bool fills) {
  Options options;
  options.seed = seed;
  auto c = CompareBatched(s.cluster, config, options, run);
  ASSERT_TRUE(c.ok()) << what << ": " << c.status();
  EXPECT_TRUE(c->same()) << what << ": " << c->mismatches << " of " << c->pods << " differ; first: " << c->first_mismatch;
  Options ref_options = options;
  ref_options.reference = true;
  ref_options.batch = 1;
  auto ref = Scheduler::Create(s.cluster, config, ref_options);
  ASSERT_TRUE(ref.ok()) << what << ": " << ref.status();
  auto expected = run(**ref);
  ASSERT_TRUE(expected.ok()) << what << ": " << expected.status();
  for (const auto& [side, placements] : {std::pair{"per pod", &c->per_pod}, std::pair{"batched", &c->batched}}) {
    ASSERT_EQ(expected->size(), placements->size()) << what << ", " << side;
    int64_t placed = 0, unschedulable = 0;
    for (size_t j = 0; j < expected->size(); ++j) {
      const Placement& want = (*expected)[j];
      const Placement& got = (*placements)[j];
      EXPECT_EQ(want.node, got.node) << what << ", " << side << ", pod " << want.pod;
      EXPECT_EQ(want.message, got.message) << what << ", " << side << ", pod " << want.pod;
      EXPECT_EQ(want.score, got.score) << what << ", " << side << ", pod " << want.pod;
      EXPECT_EQ(want.feasible, got.feasible) << what << ", " << side << ", pod " << want.pod;
      if (::testing::Test::HasFailure()) return;
      placed += !want.node.empty();
      unschedulable += want.node.empty();
    }
    EXPECT_GT(placed, 0) << what;
    if (fills) {
      EXPECT_GT(unschedulable, 0) << what;
    }
  }
  EXPECT_EQ(c->per_pod_next_start, (*ref)->next_start_index()) << what;
  EXPECT_EQ(c->batched_next_start, (*ref)->next_start_index()) << what;
}

TEST(BatchTest, SelectiveNodeAffinityDistinctPodsMatchReference) {
  struct Case {
    uint64_t seed;
    int32_t nodes, pods, percentage;
    // Without PostFilter a pod that fits nowhere keeps the batched cycle's FitError (with
    // it, such a pod takes the per-pod cycle).
    bool post_filter;
  };
  std::vector<Case> cases = {
      {301, 120, 200, 0, true}, {302, 1500, 300, 0, false}, {303, 3000, 300, 10, true}, {304, 800, 300, 100, false}};
  if (Soak()) cases.push_back({305, 15000, 2000, 0, false});
  for (const Case& k : cases) {
    const Scenario s = SelectiveScenario(k.seed, k.nodes, k.pods);
    const std::string what = StrCat("seed ", k.seed, ", ", k.nodes, " nodes, percentage ", k.percentage);
    SchedulerConfig config = TwoProfiles(engine::Backend::kOmp, k.percentage);
    if (!k.post_filter) {
      for (Profile& p : config.profiles) p.post_filter.clear();
    }
    auto run = [&](Scheduler& sched) { return ScheduleWithNodeEvents(sched, s); };
    // Each side scans selectively (SelectiveScan); pods that fit nowhere take the fallback to
    // a full scan.
    ExpectPerPodBatchedAndReferenceAlike(s, config, k.seed, run, what, /*fills=*/true);
    if (HasFailure()) return;
  }
}

// SchedulingHeterogeneous's shape for the node-local plugins' per-node state (#35): every pod
// its own signature, over nodes whose resources (some with no cpu or memory allocatable, some
// with ephemeral storage or a GPU) and taints (every effect) differ, filling nodes so that
// windows lose nodes to rejections; between parts a node's taints and size change and a
// node joins. Engine per pod, engine batched and the scalar reference decide alike.
Scenario HeterogeneousScenario(uint64_t seed, int32_t num_nodes, int32_t num_pods) {
  std::mt19937_64 rng(seed);
  auto pick = [&](int n) { return static_cast<int>(rng() % n); };
  Scenario s;
  for (int32_t i = 0; i < num_nodes; ++i) {
    const std::string name = StrCat("node-", i);
    std::map<std::string, std::string> alloc = {{"cpu", std::vector<std::string>{"2", "4", "8", "0"}[pick(4)]},
                                                {"memory", pick(12) == 0 ? "0" : StrCat(4 << pick(4), "Gi")},
                                                {"pods", StrCat(3 + pick(12))}};
    if (pick(3) == 0) alloc["ephemeral-storage"] = StrCat(1 + pick(20), "Gi");
    if (pick(6) == 0) alloc["example.com/gpu"] = StrCat(1 + pick(4));
    Node n = MakeNode(name, alloc, {{kZone, StrCat("zone-", pick(5))}, {kHostname, name}});
    const int tainted = pick(8);
    if (tainted == 0) n.taints.push_back(MakeTaint("dedicated", "batch", "NoSchedule"));
    if (tainted == 1) n.taints.push_back(MakeTaint("workload", "highmem", "PreferNoSchedule"));
    if (tainted == 2) n.taints.push_back(MakeTaint("flaky", "", "NoExecute"));
    if (tainted == 3) {
      n.taints.push_back(MakeTaint("workload", "highmem", "PreferNoSchedule"));
      n.taints.push_back(MakeTaint("dedicated", "batch", "NoSchedule"));
    }
    n.unschedulable = pick(30) == 0;
    s.cluster.nodes.push_back(std::move(n));
  }
  for (int32_t j = 0; j < num_pods; ++j) {
    std::map<std::string, std::string> req = {{"cpu", StrCat(50 * (1 + j % 40), "m")},
                                              {"memory", StrCat(64 * (1 + pick(64)), "Mi")}};
    if (pick(5) == 0) req["ephemeral-storage"] = StrCat(1 + pick(4), "Gi");
    if (pick(8) == 0) req["example.com/gpu"] = "1";
    if (pick(25) == 0) req.clear();  // best effort: BalancedAllocation skips it
    Pod p = MakePod(StrCat("pod-", j), req);
    p.meta.uid = StrCat("uid-", j);
    p.meta.creation_unix = 1000 + j;
    if (pick(4) == 0) p.tolerations.push_back(MakeToleration("dedicated", "Equal", "batch", "NoSchedule"));
    if (pick(4) == 0) p.tolerations.push_back(MakeToleration("workload", "Exists", "", pick(2) ? "PreferNoSchedule" : ""));
    if (pick(10) == 0) p.tolerations.push_back(MakeToleration("flaky", "Exists", "", "NoExecute"));
    if (pick(6) == 0) p.node_selector[kZone] = StrCat("zone-", pick(5));
    s.pending.push_back(std::move(p));
  }
  return s;
}

// Schedules `s.pending` in three parts, changing nodes between them: two nodes' taints and
// cpu allocatable in place (their pods kept), then a tainted node joins.
absl::StatusOr<std::vector<Placement>> ScheduleWithNodeChanges(Scheduler& sched, const Scenario& s) {
  return ScheduleInParts(sched, s, 3, [&](size_t step) -> absl::Status {
    if (step == 0) {  // a node's taints and allocatable change in place, its pods kept
      for (size_t k = 0; k < 2; ++k) {
        Node changed = *sched.state().FindNode(s.cluster.nodes[k * 5 % s.cluster.nodes.size()].meta.name);
        changed.taints = k == 0 ? std::vector<Taint>{MakeTaint("workload", "highmem", "PreferNoSchedule")}
                                : std::vector<Taint>{MakeTaint("dedicated", "batch", "NoSchedule")};
        changed.allocatable["cpu"] = Q(k == 0 ? "16" : "1");
        changed.capacity["cpu"] = changed.allocatable["cpu"];
        KPLACE_RETURN_IF_ERROR(sched.state().Apply(state::NodeEvent(state::EventType::kModified, changed)));
      }
    } else if (step == 1) {  // a node joins
      Node added = MakeNode("added-0", {{"cpu", "32"}, {"memory", "64Gi"}, {"pods", "30"}, {"ephemeral-storage", "50Gi"}},
                            {{kZone, "zone-1"}, {kHostname, "added-0"}});
      added.taints.push_back(MakeTaint("workload", "highmem", "PreferNoSchedule"));
      KPLACE_RETURN_IF_ERROR(sched.state().Apply(state::NodeEvent(state::EventType::kAdded, added)));
    }
    return absl::OkStatus();
  });
}

TEST(BatchTest, HeterogeneousDistinctPodsMatchReference) {
  struct Case {
    uint64_t seed;
    int32_t nodes, pods, percentage;
    bool fills;  // the pods fill the cluster: some fit nowhere
  };
  std::vector<Case> cases = {
      {401, 33, 150, 0, true}, {402, 400, 600, 0, true}, {403, 1200, 700, 0, false}, {404, 900, 500, 100, false}};
  if (Soak()) cases.push_back({405, 6000, 3000, 0, false});
  for (const Case& k : cases) {
    const Scenario s = HeterogeneousScenario(k.seed, k.nodes, k.pods);
    const std::string what = StrCat("seed ", k.seed, ", ", k.nodes, " nodes, percentage ", k.percentage);
    SchedulerConfig config = TwoProfiles(engine::Backend::kOmp, k.percentage);
    for (Profile& p : config.profiles) p.post_filter.clear();  // a pod that fits nowhere keeps the batched FitError
    auto run = [&](Scheduler& sched) { return ScheduleWithNodeChanges(sched, s); };
    ExpectPerPodBatchedAndReferenceAlike(s, config, k.seed, run, what, k.fills);
    if (HasFailure()) return;
  }
}

TEST(BatchTest, ScheduleCommandVerifiesAndTakesBatch) {
  namespace fs = std::filesystem;
  using json = nlohmann::json;
  const fs::path dir = fs::temp_directory_path() / StrCat("kplace-batch-", ::getpid());
  fs::create_directories(dir);
  json nodes = json::array(), pods = json::array();
  for (int i = 0; i < 20; ++i) {
    nodes.push_back({{"kind", "Node"},
                     {"metadata", {{"name", StrCat("n", i)}, {"labels", {{kZone, StrCat("z", i % 2)}}}}},
                     {"status", {{"allocatable", {{"cpu", "2"}, {"memory", "8Gi"}, {"pods", "110"}}}}}});
  }
  for (int i = 0; i < 100; ++i) {
    pods.push_back({{"kind", "Pod"},
                    {"metadata", {{"name", StrCat("p", i)}, {"namespace", "default"}}},
                    {"spec", {{"containers", json::array({{{"name", "c"}, {"resources", {{"requests", {{"cpu", "500m"}}}}}}})}}}});
  }
  const std::string cluster = (dir / "cluster.json").string(), pending = (dir / "pods.json").string();
  std::ofstream(cluster) << json{{"kind", "List"}, {"items", nodes}}.dump();
  std::ofstream(pending) << json{{"kind", "List"}, {"items", pods}}.dump();
  auto run = [&](std::vector<std::string> args) {
    args.insert(args.begin(), {"kplace", "schedule", "--cluster", cluster, "--pods", pending, "--output-file",
                               (dir / "out.json").string()});
    std::vector<char*> argv;
    for (std::string& a : args) argv.push_back(a.data());
    return cli::Main(static_cast<int>(argv.size()), argv.data());
  };
  EXPECT_EQ(run({"--verify"}), 0);
  json out = json::parse(std::ifstream(dir / "out.json"));
  EXPECT_EQ(out["summary"]["scheduled"], 80);  // 20 nodes of 2 cpu hold 80 pods of 500m
  EXPECT_EQ(run({"--verify", "--batch", "1"}), 0);
  EXPECT_EQ(run({"--batch", "7"}), 0);
  EXPECT_EQ(json::parse(std::ifstream(dir / "out.json")), out);
  EXPECT_EQ(run({"--batch", "0"}), 2);
  EXPECT_EQ(run({"--verify", "--reference"}), 2);
  fs::remove_all(dir);
}

TEST(BatchTest, BenchCommandVerifies) {
  for (const char* workload : {"SchedulingBasic", "SchedulingPodAntiAffinity"}) {
    const std::string w = StrCat("--workload=", workload);
    const char* argv[] = {"bench", w.c_str(), "--nodes=120", "--pods=150", "--init-pods=30", "--no-reference", "--verify"};
    EXPECT_EQ(cli::RunBench(7, const_cast<char**>(argv)), 0) << workload;
  }
  const char* bad[] = {"bench", "--batch=0"};
  EXPECT_EQ(cli::RunBench(2, const_cast<char**>(bad)), 2);
}

TEST(BatchTest, CudaMatchesPerPodWhenPresent) {
  if (!engine::CudaAvailable()) GTEST_SKIP() << "no CUDA device";
  for (int seed = 1; seed <= 4; ++seed) {
    Scenario s = RandomScenario(seed, seed % 2 ? 300 : 2000, 300, 50, seed > 2 ? NodeLocalMix(80) : Mix{});
    Options options;
    options.backend = engine::Backend::kCuda;
    ExpectSame(s, TwoProfiles(engine::Backend::kCuda, 0), options, StrCat("cuda seed ", seed));
  }
}

}  // namespace
}  // namespace kplace::cycle
