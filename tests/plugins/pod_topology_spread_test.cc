#include <algorithm>
#include <cmath>
#include <deque>
#include <memory>
#include <random>

#include <gtest/gtest.h>

#include "kplace/config/profile.h"
#include "kplace/engine/framework.h"
#include "kplace/plugins/pod_topology_spread_common.h"
#include "kplace/reference/plugin.h"
#include "tests/testing/pod_topology_spread_builders.h"

namespace kplace {
namespace {

using engine::NodeIndex;
using testing::HardSpread;
using testing::MatchExpression;
using testing::MatchLabels;
using testing::SoftSpread;
using testing::SpreadNode;
using testing::SpreadPod;

constexpr char kZone[] = "topology.kubernetes.io/zone";
constexpr char kHost[] = "kubernetes.io/hostname";
constexpr char kMissing[] = "node(s) didn't match pod topology spread constraints (missing required label)";
constexpr char kSkew[] = "node(s) didn't match pod topology spread constraints";
const std::vector<std::string> kSpread = {"PodTopologySpread"};

/** Every phase of the plugin for one pod: candidates are the nodes scored. */
struct Outcome {
  Code pre_filter = Code::kSuccess;
  std::vector<PluginStatus> filter;  // every node
  Code pre_score = Code::kSuccess;
  std::vector<int64_t> raw, normalized;  // per candidate

  std::string Diff(const Outcome& o) const {
    auto name = [](Code c) { return std::string(CodeName(c)); };
    if (pre_filter != o.pre_filter) return "preFilter " + name(pre_filter) + " vs " + name(o.pre_filter);
    for (size_t i = 0; i < filter.size() && i < o.filter.size(); ++i) {
      if (!(filter[i] == o.filter[i])) {
        return "filter node " + std::to_string(i) + ": " + name(filter[i].code) + " [" + filter[i].Message() +
               "] vs " + name(o.filter[i].code) + " [" + o.filter[i].Message() + "]";
      }
    }
    if (pre_score != o.pre_score) return "preScore " + name(pre_score) + " vs " + name(o.pre_score);
    for (size_t k = 0; k < raw.size() && k < o.raw.size(); ++k) {
      if (raw[k] != o.raw[k]) {
        return "raw score " + std::to_string(k) + ": " + std::to_string(raw[k]) + " vs " + std::to_string(o.raw[k]);
      }
      if (normalized[k] != o.normalized[k]) {
        return "normalized score " + std::to_string(k) + ": " + std::to_string(normalized[k]) + " vs " +
               std::to_string(o.normalized[k]);
      }
    }
    if (filter.size() != o.filter.size() || raw.size() != o.raw.size()) return "sizes differ";
    return "";
  }
};

Profile SpreadProfile(const PluginArgs& args) {
  Profile profile = SinglePluginsProfile(kSpread);
  profile.args = args;
  return profile;
}

/** The engine, kept across pods so that OnBind keeps its tables. */
class EngineRun {
 public:
  EngineRun(const ObjectSet& cluster, const PluginArgs& args, const FeatureGates& gates,
            engine::Backend backend = engine::Backend::kOmp)
      : snapshot_(cluster, gates) {
    std::string error;
    fw_ = engine::Framework::Create(backend, SpreadProfile(args), gates, &error);
    if (!fw_) throw std::runtime_error(error);
    fw_->Prepare(snapshot_);
  }

  Outcome Run(const Pod& pod, const std::vector<NodeIndex>& candidates) {
    Outcome out;
    engine::PreFilterResult pre = fw_->PreFilter(pod);
    out.pre_filter = pre.skip_filter[0] ? Code::kSkip : pre.status.code;
    std::vector<std::vector<engine::VerdictCode>> codes = fw_->FilterEach();
    for (engine::VerdictCode c : codes[0]) out.filter.push_back(c == 0 ? PluginStatus::Success() : fw_->Verdict(0, c));
    engine::ScoreResult scores = fw_->Score(candidates);
    out.pre_score = scores.skipped[0] ? Code::kSkip : scores.status.code;
    out.raw = scores.raw[0];
    out.normalized = scores.normalized[0];
    return out;
  }

  void Bind(const Pod& pod, NodeIndex node) {
    const Pod& bound = snapshot_.Bind(pod, node);
    fw_->Bind(bound, node);
  }

  /** Takes the k-th pod off `node`; returns its name. */
  std::string Unbind(NodeIndex node, size_t k) {
    const Pod* pod = snapshot_.pods_on(node)[k];
    snapshot_.Unbind(pod, node);
    fw_->Unbind(*pod, node);
    return pod->meta.name;
  }

  /** Node `node`'s object was changed in place; `old` is what it was. */
  void UpdateNode(NodeIndex node, const Node& old) {
    snapshot_.UpdateNode(node, old);
    fw_->UpdateNode(node, old);
  }

  /** `node` (kept alive by the caller) joins. */
  NodeIndex AddNode(const Node* node) {
    NodeIndex i = snapshot_.AddNode(node);
    fw_->AddNode(i);
    return i;
  }

  const engine::Snapshot& snapshot() const { return snapshot_; }

 private:
  engine::Snapshot snapshot_;
  std::unique_ptr<engine::Framework> fw_;
};

Outcome RunReference(const ObjectSet& cluster, const Pod& pod, const std::vector<NodeIndex>& candidates,
                     const PluginArgs& args, const FeatureGates& gates) {
  auto made = reference::MakePlugin("PodTopologySpread", args, gates);
  if (!made.ok()) throw std::runtime_error(std::string(made.status().message()));
  reference::Plugin& p = **made;
  reference::ClusterState state = reference::MakeClusterState(cluster, gates);
  reference::CycleState cycle;
  Outcome out;
  reference::NodeNameSet names;
  out.pre_filter = p.PreFilter(cycle, pod, state, &names).code;
  for (const auto& n : state.nodes) out.filter.push_back(p.Filter(cycle, pod, n, state));
  std::vector<const reference::NodeInfo*> filtered;
  for (NodeIndex i : candidates) filtered.push_back(&state.nodes[i]);
  out.pre_score = p.PreScore(cycle, pod, filtered, state).code;
  out.raw.assign(candidates.size(), 0);
  if (out.pre_score == Code::kSuccess) {
    for (size_t k = 0; k < filtered.size(); ++k) p.Score(cycle, pod, *filtered[k], state, &out.raw[k]);
  }
  out.normalized = out.raw;
  if (out.pre_score == Code::kSuccess) p.NormalizeScore(cycle, pod, out.normalized);
  return out;
}

std::vector<NodeIndex> AllNodes(const ObjectSet& cluster) {
  std::vector<NodeIndex> all(cluster.nodes.size());
  for (size_t i = 0; i < all.size(); ++i) all[i] = static_cast<NodeIndex>(i);
  return all;
}

/** Runs both implementations, checks they agree, and returns the engine's outcome. */
Outcome Both(const ObjectSet& cluster, const Pod& pod, const PluginArgs& args = {}, const FeatureGates& gates = {},
             std::vector<NodeIndex> candidates = {}) {
  if (candidates.empty()) candidates = AllNodes(cluster);
  EngineRun engine(cluster, args, gates);
  Outcome e = engine.Run(pod, candidates);
  Outcome r = RunReference(cluster, pod, candidates, args, gates);
  EXPECT_EQ(e.Diff(r), "") << "engine vs reference";
  return e;
}

PluginArgs ListArgs(std::vector<TopologySpreadConstraint> defaults) {
  PluginArgs args;
  args.pod_topology_spread.defaulting_type = "List";
  args.pod_topology_spread.default_constraints = std::move(defaults);
  return args;
}

std::vector<Code> Codes(const Outcome& o) {
  std::vector<Code> out;
  for (const PluginStatus& s : o.filter) out.push_back(s.code);
  return out;
}

constexpr Code kOk = Code::kSuccess;
constexpr Code kUn = Code::kUnschedulable;
constexpr Code kUAU = Code::kUnschedulableAndUnresolvable;

// Zones z1 = {a, b}, z2 = {c, d}; matching pods: a 1, b 1, c 1.
ObjectSet TwoZones() {
  ObjectSet c;
  c.nodes = {SpreadNode("a", {{kZone, "z1"}, {kHost, "a"}, {"disk", "ssd"}}),
             SpreadNode("b", {{kZone, "z1"}, {kHost, "b"}, {"disk", "ssd"}}),
             SpreadNode("c", {{kZone, "z2"}, {kHost, "c"}}), SpreadNode("d", {{kZone, "z2"}, {kHost, "d"}})};
  c.pods = {SpreadPod("p1", {{"foo", ""}}, "a"), SpreadPod("p2", {{"foo", ""}}, "b"),
            SpreadPod("p3", {{"foo", ""}}, "c")};
  return c;
}

Pod Incoming(std::vector<TopologySpreadConstraint> constraints, const Labels& labels = {{"foo", ""}}) {
  Pod p = SpreadPod("incoming", labels);
  p.topology_spread_constraints = std::move(constraints);
  return p;
}

TEST(PodTopologySpreadTest, FilterSkewAgainstGlobalMinimum) {
  // z1 has 2, z2 has 1: z1 would reach 3 - 1 = 2 > 1.
  Outcome o = Both(TwoZones(), Incoming({HardSpread(1, kZone, MatchExpression("foo", "Exists"))}));
  EXPECT_EQ(o.pre_filter, kOk);
  EXPECT_EQ(Codes(o), (std::vector<Code>{kUn, kUn, kOk, kOk}));
  EXPECT_EQ(o.filter[0].reasons, std::vector<std::string>{kSkew});
  // maxSkew 2 admits z1 too.
  o = Both(TwoZones(), Incoming({HardSpread(2, kZone, MatchExpression("foo", "Exists"))}));
  EXPECT_EQ(Codes(o), (std::vector<Code>{kOk, kOk, kOk, kOk}));
}

TEST(PodTopologySpreadTest, MissingLabelAndConstraintOrder) {
  ObjectSet c = TwoZones();
  c.nodes.push_back(SpreadNode("e", {{kHost, "e"}}));  // no zone: contributes nowhere
  c.pods.push_back(SpreadPod("p4", {{"foo", ""}}, "e"));
  c.pods.push_back(SpreadPod("p5", {{"foo", ""}}, "e"));
  Outcome o = Both(c, Incoming({HardSpread(1, kZone, MatchExpression("foo", "Exists"))}));
  EXPECT_EQ(Codes(o), (std::vector<Code>{kUn, kUn, kOk, kOk, kUAU}));
  EXPECT_EQ(o.filter[4].reasons, std::vector<std::string>{kMissing});
  // Only a and b carry "rack", so only they have every key and fill the tables:
  // zone {z1: 2}, rack {r1: 2}. The first failing constraint decides: f (z1, no rack)
  // fails the zone skew (2 + 1 - 2 > 0) before its missing rack is read; c and d pass
  // the zone (z2 is no domain: 0 + 1 - 2) and then miss the rack.
  c.nodes[0].meta.labels["rack"] = "r1";
  c.nodes[1].meta.labels["rack"] = "r1";
  c.nodes.push_back(SpreadNode("f", {{kZone, "z1"}, {kHost, "f"}}));
  o = Both(c, Incoming({HardSpread(0, kZone, MatchExpression("foo", "Exists")),
                        HardSpread(5, "rack", MatchExpression("foo", "Exists"))}));
  EXPECT_EQ(Codes(o), (std::vector<Code>{kUn, kUn, kUAU, kUAU, kUAU, kUn}));
  EXPECT_EQ(o.filter[2].reasons, std::vector<std::string>{kMissing});
  EXPECT_EQ(o.filter[5].reasons, std::vector<std::string>{kSkew});
  // Without a rack anywhere no node has every key: the tables are empty, the minimum
  // is 0, and every node reaches the rack check.
  c.nodes[0].meta.labels.erase("rack");
  c.nodes[1].meta.labels.erase("rack");
  o = Both(c, Incoming({HardSpread(1, kZone, MatchExpression("foo", "Exists")),
                        HardSpread(5, "rack", MatchExpression("foo", "Exists"))}));
  EXPECT_EQ(Codes(o), (std::vector<Code>{kUAU, kUAU, kUAU, kUAU, kUAU, kUAU}));
}

TEST(PodTopologySpreadTest, MinDomainsTurnsTheMinimumToZero) {
  TopologySpreadConstraint t = HardSpread(1, kZone, MatchExpression("foo", "Exists"));
  t.min_domains = 3;  // only 2 zones: the global minimum is 0
  Outcome o = Both(TwoZones(), Incoming({t}));
  EXPECT_EQ(Codes(o), (std::vector<Code>{kUn, kUn, kUn, kUn}));
  t.max_skew = 2;
  o = Both(TwoZones(), Incoming({t}));
  EXPECT_EQ(Codes(o), (std::vector<Code>{kUn, kUn, kOk, kOk}));
  t.min_domains = 2;
  t.max_skew = 1;
  o = Both(TwoZones(), Incoming({t}));
  EXPECT_EQ(Codes(o), (std::vector<Code>{kUn, kUn, kOk, kOk}));
}

TEST(PodTopologySpreadTest, SelfMatchNamespaceAndTerminatingPods) {
  ObjectSet c = TwoZones();
  // Pods in another namespace and terminating pods never count.
  c.pods.push_back(SpreadPod("other", {{"foo", ""}}, "c", "other"));
  c.pods.push_back(SpreadPod("other2", {{"foo", ""}}, "d", "other"));
  Pod dying = SpreadPod("dying", {{"foo", ""}}, "d");
  dying.meta.deletion_timestamp = "2024-01-01T00:00:00Z";
  c.pods.push_back(dying);
  Outcome o = Both(c, Incoming({HardSpread(1, kZone, MatchExpression("foo", "Exists"))}));
  EXPECT_EQ(Codes(o), (std::vector<Code>{kUn, kUn, kOk, kOk}));
  // An incoming pod its selector does not match adds no self count: 2 - 1 = 1.
  o = Both(c, Incoming({HardSpread(1, kZone, MatchExpression("foo", "Exists"))}, {{"bar", ""}}));
  EXPECT_EQ(Codes(o), (std::vector<Code>{kOk, kOk, kOk, kOk}));
}

TEST(PodTopologySpreadTest, NodeAffinityPolicy) {
  ObjectSet c = TwoZones();
  c.pods.push_back(SpreadPod("p4", {{"foo", ""}}, "a"));  // z1 = 3, z2 = 1
  Pod pod = Incoming({HardSpread(1, kZone, MatchExpression("foo", "Exists"))});
  pod.node_selector = {{"disk", "ssd"}};  // only z1 nodes
  // Honor (default): z2 is not eligible, the minimum is z1's own count (3 + 1 - 3), and
  // z2, absent from the table, reads 0 + 1 - 3.
  Outcome o = Both(c, pod);
  EXPECT_EQ(Codes(o), (std::vector<Code>{kOk, kOk, kOk, kOk}));
  // Ignore: z2 counts, z1 would reach 3 + 1 - 1.
  pod.topology_spread_constraints[0].node_affinity_policy = "Ignore";
  o = Both(c, pod);
  EXPECT_EQ(Codes(o), (std::vector<Code>{kUn, kUn, kOk, kOk}));
  // With the gate off the policy field is ignored: Honor again.
  FeatureGates off;
  off.overrides["NodeInclusionPolicyInPodTopologySpread"] = false;
  o = Both(c, pod, {}, off);
  EXPECT_EQ(Codes(o), (std::vector<Code>{kOk, kOk, kOk, kOk}));
}

TEST(PodTopologySpreadTest, NodeAffinityPolicyWithRequiredAffinity) {
  ObjectSet c = TwoZones();
  c.pods.push_back(SpreadPod("p4", {{"foo", ""}}, "a"));
  Pod pod = Incoming({HardSpread(1, kZone, MatchExpression("foo", "Exists"))});
  NodeSelectorTerm term;
  term.match_expressions.push_back(NodeSelectorRequirement{"disk", "In", {"ssd"}});
  pod.affinity = Affinity{};
  pod.affinity->node_affinity = NodeAffinity{};
  pod.affinity->node_affinity->required = NodeSelector{{term}};
  Outcome o = Both(c, pod);
  EXPECT_EQ(Codes(o), (std::vector<Code>{kOk, kOk, kOk, kOk}));
  pod.topology_spread_constraints[0].node_affinity_policy = "Ignore";
  o = Both(c, pod);
  EXPECT_EQ(Codes(o), (std::vector<Code>{kUn, kUn, kOk, kOk}));
  // matchFields metadata.name In [c] leaves z2 = {c} alone eligible, with 1 pod; z1 then
  // reads 0 + 1 - 1 and passes, and so does z2 (1 + 1 - 1). With maxSkew 0 only z1 passes.
  NodeSelectorTerm by_name;
  by_name.match_fields.push_back(NodeSelectorRequirement{"metadata.name", "In", {"c"}});
  pod.affinity->node_affinity->required = NodeSelector{{by_name}};
  pod.topology_spread_constraints[0].node_affinity_policy.reset();
  o = Both(c, pod);
  EXPECT_EQ(Codes(o), (std::vector<Code>{kOk, kOk, kOk, kOk}));
  pod.topology_spread_constraints[0].max_skew = 0;
  o = Both(c, pod);
  EXPECT_EQ(Codes(o), (std::vector<Code>{kOk, kOk, kUn, kUn}));
}

TEST(PodTopologySpreadTest, NodeTaintsPolicy) {
  ObjectSet c = TwoZones();
  c.pods.push_back(SpreadPod("p4", {{"foo", ""}}, "a"));  // z1 = 3, z2 = 1
  for (int i : {2, 3}) c.nodes[i].taints.push_back(Taint{"dedicated", "x", "NoSchedule"});
  c.nodes[0].taints.push_back(Taint{"soft", "", "PreferNoSchedule"});  // never matters
  Pod pod = Incoming({HardSpread(1, kZone, MatchExpression("foo", "Exists"))});
  Outcome o = Both(c, pod);  // Ignore by default
  EXPECT_EQ(Codes(o), (std::vector<Code>{kUn, kUn, kOk, kOk}));
  pod.topology_spread_constraints[0].node_taints_policy = "Honor";
  o = Both(c, pod);
  EXPECT_EQ(Codes(o), (std::vector<Code>{kOk, kOk, kOk, kOk}));  // z1 alone: 3 + 1 - 3
  // Tolerating the taint brings z2 back.
  Toleration t;
  t.key = "dedicated";
  t.op = "Exists";
  pod.tolerations.push_back(t);
  o = Both(c, pod);
  EXPECT_EQ(Codes(o), (std::vector<Code>{kUn, kUn, kOk, kOk}));
}

TEST(PodTopologySpreadTest, MatchLabelKeysAndEmptySelectors) {
  ObjectSet c = TwoZones();
  c.pods.clear();
  for (int i = 0; i < 2; ++i) c.pods.push_back(SpreadPod("x" + std::to_string(i), {{"app", "x"}}, "a"));
  for (int i = 0; i < 5; ++i) c.pods.push_back(SpreadPod("y" + std::to_string(i), {{"app", "y"}}, "c"));
  TopologySpreadConstraint t = HardSpread(1, kZone, LabelSelector{});
  t.match_label_keys = {"app", "absent"};
  Pod pod = Incoming({t}, {{"app", "x"}});
  // {} + matchLabelKeys [app] becomes app=x: z1 2, z2 0.
  Outcome o = Both(c, pod);
  EXPECT_EQ(Codes(o), (std::vector<Code>{kUn, kUn, kOk, kOk}));
  // Gate off: {} alone matches every pod of the namespace (v1.37): z1 2, z2 5.
  FeatureGates off;
  off.overrides["MatchLabelKeysInPodTopologySpread"] = false;
  o = Both(c, pod, {}, off);
  EXPECT_EQ(Codes(o), (std::vector<Code>{kOk, kOk, kUn, kUn}));
  // The v1.28..v1.35 behaviour counts nothing for {}: every node passes (1 - 0 <= 1).
  off.overrides[spread::kLegacyEmptySelectorGate] = true;
  o = Both(c, pod, {}, off);
  EXPECT_EQ(Codes(o), (std::vector<Code>{kOk, kOk, kOk, kOk}));
  // A null selector stays Nothing even with matchLabelKeys: no counts, no self match.
  t.label_selector.reset();
  o = Both(c, Incoming({t}, {{"app", "x"}}));
  EXPECT_EQ(Codes(o), (std::vector<Code>{kOk, kOk, kOk, kOk}));
}

TEST(PodTopologySpreadTest, InvalidSelectorIsAnError) {
  Pod pod = Incoming({HardSpread(1, kZone, MatchExpression("foo", "In"))});  // In without values
  Outcome o = Both(TwoZones(), pod);
  EXPECT_EQ(o.pre_filter, Code::kError);
  EXPECT_EQ(o.filter[0].code, Code::kError);
}

TEST(PodTopologySpreadTest, SkipWithoutConstraints) {
  ObjectSet c = TwoZones();
  Pod pod = SpreadPod("incoming", {{"foo", ""}});
  Outcome o = Both(c, pod);
  EXPECT_EQ(o.pre_filter, Code::kSkip);
  EXPECT_EQ(o.pre_score, Code::kSkip);
  EXPECT_EQ(Codes(o), (std::vector<Code>{kOk, kOk, kOk, kOk}));
  // A Service selecting the pod gives System defaults: soft only, so PreFilter still skips.
  c.workloads.push_back(testing::MakeService("svc", {{"foo", ""}}));
  o = Both(c, pod);
  EXPECT_EQ(o.pre_filter, Code::kSkip);
  EXPECT_EQ(o.pre_score, Code::kSuccess);
  // A Service in another namespace does not select it.
  c.workloads[0].meta.namespace_ = "other";
  o = Both(c, pod);
  EXPECT_EQ(o.pre_score, Code::kSkip);
  // Only hard constraints: PreScore skips (defaults are never mixed in).
  o = Both(c, Incoming({HardSpread(1, kZone, MatchExpression("foo", "Exists"))}));
  EXPECT_EQ(o.pre_score, Code::kSkip);
}

TEST(PodTopologySpreadTest, ScoreWorkedExamples) {
  // Vector 045/047: hostname, 4 candidates with 2/1/0/3 matching pods.
  ObjectSet c;
  const std::vector<int> per_node = {2, 1, 0, 3};
  for (int i = 0; i < 4; ++i) {
    std::string name = std::string(1, static_cast<char>('a' + i));
    c.nodes.push_back(SpreadNode(name, {{kHost, name}}));
    for (int k = 0; k < per_node[i]; ++k) c.pods.push_back(SpreadPod(name + std::to_string(k), {{"foo", ""}}, name));
  }
  Outcome o = Both(c, Incoming({SoftSpread(1, kHost, MatchExpression("foo", "Exists"))}));
  EXPECT_EQ(o.raw, (std::vector<int64_t>{4, 2, 0, 5}));
  EXPECT_EQ(o.normalized, (std::vector<int64_t>{20, 60, 100, 0}));
  o = Both(c, Incoming({SoftSpread(2, kHost, MatchExpression("foo", "Exists"))}));
  EXPECT_EQ(o.raw, (std::vector<int64_t>{5, 3, 1, 6}));
  EXPECT_EQ(o.normalized, (std::vector<int64_t>{33, 66, 100, 16}));
}

TEST(PodTopologySpreadTest, SystemDefaultsWithoutZones) {
  // Vector 049: 4/3/2/1 pods selected by a Service; no node has a zone label.
  ObjectSet c;
  const std::vector<int> per_node = {4, 3, 2, 1};
  for (int i = 0; i < 4; ++i) {
    std::string name = "node-" + std::string(1, static_cast<char>('a' + i));
    c.nodes.push_back(SpreadNode(name, {{kHost, name}}));
    for (int k = 0; k < per_node[i]; ++k) c.pods.push_back(SpreadPod(name + std::to_string(k), {{"foo", ""}}, name));
  }
  c.workloads.push_back(testing::MakeService("svc", {{"foo", ""}}));
  Outcome o = Both(c, SpreadPod("p", {{"foo", ""}}));
  EXPECT_EQ(o.pre_score, Code::kSuccess);
  EXPECT_EQ(o.normalized, (std::vector<int64_t>{44, 66, 77, 100}));
}

TEST(PodTopologySpreadTest, IgnoredNodesAndNonCandidateCounts) {
  ObjectSet c = TwoZones();  // z1: a 1, b 1; z2: c 1
  c.nodes.push_back(SpreadNode("e", {{kHost, "e"}}));
  for (int i = 0; i < 5; ++i) c.pods.push_back(SpreadPod("e" + std::to_string(i), {{"foo", ""}}, "e"));
  Pod pod = Incoming({SoftSpread(1, kZone, MatchExpression("foo", "Exists"))});
  // Weight ln(2 + 2); z1 = 2, z2 = 1; e lacks the zone: ignored, 0.
  Outcome o = Both(c, pod);
  EXPECT_EQ(o.raw, (std::vector<int64_t>{3, 3, 1, 1, 0}));
  EXPECT_EQ(o.normalized, (std::vector<int64_t>{33, 33, 100, 100, 0}));
  // Candidates a and c: b's pod still counts for z1 (2 * ln 4 = 2.77 -> 3).
  o = Both(c, pod, {}, {}, {0, 2});
  EXPECT_EQ(o.raw, (std::vector<int64_t>{3, 1}));
  EXPECT_EQ(o.normalized, (std::vector<int64_t>{33, 100}));
  // Candidate a only: one zone, weight ln 3, 2 * 1.0986 = 2.197 -> 2.
  o = Both(c, pod, {}, {}, {0});
  EXPECT_EQ(o.raw, (std::vector<int64_t>{2}));
  EXPECT_EQ(o.normalized, (std::vector<int64_t>{100}));
}

TEST(PodTopologySpreadTest, ListDefaultsWithReplicaSetOwner) {
  ObjectSet c = TwoZones();
  c.pods.clear();
  c.pods = {SpreadPod("p1", {{"app", "x"}}, "a"), SpreadPod("p2", {{"app", "x"}}, "b"),
            SpreadPod("p3", {{"app", "y"}}, "c")};
  PluginArgs args = ListArgs({HardSpread(1, kZone, std::nullopt), SoftSpread(1, kHost, std::nullopt)});
  Pod pod = SpreadPod("incoming", {{"app", "x"}});
  pod.meta.owner_references.push_back(testing::ControllerRef("apps/v1", "ReplicaSet", "rs"));
  // The owner does not exist: no default selector, so nothing applies.
  Outcome o = Both(c, pod, args);
  EXPECT_EQ(o.pre_filter, Code::kSkip);
  EXPECT_EQ(o.pre_score, Code::kSkip);
  c.workloads.push_back(testing::MakeReplicaSet("rs", MatchExpression("app", "In", {"x"})));
  o = Both(c, pod, args);
  EXPECT_EQ(o.pre_filter, kOk);
  EXPECT_EQ(Codes(o), (std::vector<Code>{kUn, kUn, kOk, kOk}));  // app=x: z1 2, z2 0
  EXPECT_EQ(o.pre_score, kOk);
  // A null ReplicaSet selector contributes nothing.
  c.workloads[0].selector.reset();
  o = Both(c, pod, args);
  EXPECT_EQ(o.pre_filter, Code::kSkip);
}

// ---- randomized differential, with binds ---------------------------------------------

struct RandomCluster {
  ObjectSet objects;
  std::vector<std::string> zones;
};

RandomCluster MakeRandomCluster(std::mt19937& rng, int num_nodes, int num_zones, int num_pods) {
  RandomCluster rc;
  auto pick = [&](int n) { return static_cast<int>(rng() % static_cast<unsigned>(n)); };
  for (int z = 0; z < num_zones; ++z) rc.zones.push_back("zone-" + std::to_string(z));
  for (int i = 0; i < num_nodes; ++i) {
    std::string name = "node-" + std::to_string(i);
    Labels labels{{kHost, name}};
    if (pick(20) != 0) labels[kZone] = rc.zones[pick(num_zones)];      // 5% without a zone
    if (pick(4) != 0) labels["rack"] = "rack-" + std::to_string(pick(8));  // 25% without a rack
    labels["region"] = "region-" + std::to_string(pick(2));
    if (pick(3) == 0) labels["disk"] = "ssd";
    if (pick(50) == 0) labels[kZone] = "";  // a real "" value
    Node n = SpreadNode(name, labels);
    if (pick(6) == 0) n.taints.push_back(Taint{"dedicated", pick(2) ? "a" : "b", pick(2) ? "NoSchedule" : "NoExecute"});
    if (pick(10) == 0) n.taints.push_back(Taint{"soft", "", "PreferNoSchedule"});
    rc.objects.nodes.push_back(n);
  }
  const std::vector<std::string> apps = {"web", "db", "cache"};
  for (int k = 0; k < num_pods; ++k) {
    Labels labels;
    if (pick(5) != 0) labels["app"] = apps[pick(3)];
    if (pick(2) == 0) labels["tier"] = pick(2) ? "fe" : "be";
    if (pick(3) == 0) labels["hash"] = "h" + std::to_string(pick(3));
    Pod p = SpreadPod("existing-" + std::to_string(k), labels, "node-" + std::to_string(pick(num_nodes)),
                      pick(6) == 0 ? "other" : "default");
    if (pick(25) == 0) p.meta.deletion_timestamp = "2024-01-01T00:00:00Z";
    rc.objects.pods.push_back(p);
  }
  rc.objects.workloads.push_back(testing::MakeService("web", {{"app", "web"}}));
  rc.objects.workloads.push_back(testing::MakeService("web-other", {{"app", "web"}}, "other"));
  rc.objects.workloads.push_back(testing::MakeReplicaSet("db-rs", MatchExpression("tier", "In", {"be", "fe"})));
  return rc;
}

std::optional<LabelSelector> RandomSelector(std::mt19937& rng) {
  switch (rng() % 8) {
    case 0: return std::nullopt;
    case 1: return LabelSelector{};
    case 2: return MatchLabels({{"app", "web"}});
    case 3: return MatchExpression("app", "In", {"web", "db"});
    case 4: return MatchExpression("tier", "Exists");
    case 5: return MatchExpression("app", "NotIn", {"cache"});
    case 6: return MatchExpression("tier", "DoesNotExist");
    default: {
      LabelSelector s = MatchLabels({{"tier", "fe"}});
      s.match_expressions.push_back(LabelSelectorRequirement{"app", "Exists", {}});
      return s;
    }
  }
}

/** A pod template: the constraints repeat across pods so that tables are reused. */
Pod RandomTemplate(std::mt19937& rng) {
  auto pick = [&](int n) { return static_cast<int>(rng() % static_cast<unsigned>(n)); };
  const std::vector<std::string> keys = {kZone, kHost, "rack", "region"};
  Pod p = SpreadPod("template", {});
  int n = pick(5) == 0 ? 0 : 1 + pick(3);
  for (int i = 0; i < n; ++i) {
    TopologySpreadConstraint c =
        testing::Spread(1 + pick(3), keys[pick(4)], pick(2) ? "DoNotSchedule" : "ScheduleAnyway", RandomSelector(rng));
    if (pick(4) == 0) c.min_domains = 1 + pick(12);
    if (pick(4) == 0) c.node_affinity_policy = pick(2) ? "Honor" : "Ignore";
    if (pick(4) == 0) c.node_taints_policy = pick(2) ? "Honor" : "Ignore";
    if (pick(4) == 0) c.match_label_keys = {pick(2) ? "hash" : "app"};
    p.topology_spread_constraints.push_back(c);
  }
  if (pick(4) == 0) p.node_selector["disk"] = "ssd";
  if (pick(5) == 0) {
    NodeSelectorTerm t;
    t.match_expressions.push_back(NodeSelectorRequirement{"region", "In", {"region-0"}});
    p.affinity = Affinity{};
    p.affinity->node_affinity = NodeAffinity{};
    p.affinity->node_affinity->required = NodeSelector{{t}};
  }
  if (pick(3) == 0) p.tolerations.push_back(Toleration{"dedicated", "Equal", "a", "", std::nullopt});
  if (pick(3) == 0) {
    p.meta.owner_references.push_back(testing::ControllerRef("apps/v1", "ReplicaSet", "db-rs"));
  }
  return p;
}

void RunDifferentialOn(engine::Backend backend, uint32_t seed, int num_nodes, int num_zones, int num_pods,
                       int scheduled, const PluginArgs& args, const FeatureGates& gates) {
  std::mt19937 rng(seed);
  auto pick = [&](int n) { return static_cast<int>(rng() % static_cast<unsigned>(n)); };
  RandomCluster rc = MakeRandomCluster(rng, num_nodes, num_zones, num_pods);
  ObjectSet reference_objects = rc.objects;  // grows with binds; the engine's stays put
  EngineRun engine(rc.objects, args, gates, backend);
  std::vector<Pod> templates;
  for (int i = 0; i < 6; ++i) templates.push_back(RandomTemplate(rng));
  const std::vector<std::string> apps = {"web", "db", "cache"};
  for (int k = 0; k < scheduled; ++k) {
    Pod pod = templates[pick(static_cast<int>(templates.size()))];
    pod.meta.name = "scheduled-" + std::to_string(k);
    if (pick(8) == 0) pod.meta.namespace_ = "other";
    if (pick(5) != 0) pod.meta.labels["app"] = apps[pick(3)];
    if (pick(2) == 0) pod.meta.labels["tier"] = pick(2) ? "fe" : "be";
    if (pick(2) == 0) pod.meta.labels["hash"] = "h" + std::to_string(pick(3));
    // Candidates: every node, or a random subset in scan order.
    std::vector<NodeIndex> candidates;
    for (NodeIndex i = 0; i < num_nodes; ++i) {
      if (k % 3 == 0 || pick(3) != 0) candidates.push_back(i);
    }
    Outcome e = engine.Run(pod, candidates);
    Outcome r = RunReference(reference_objects, pod, candidates, args, gates);
    std::string diff = e.Diff(r);
    ASSERT_EQ(diff, "") << "pod " << k;
    // Bind where the pod fits, or anywhere when nothing does.
    std::vector<NodeIndex> fits;
    for (NodeIndex i = 0; i < num_nodes; ++i) {
      if (e.filter[i].IsSuccess()) fits.push_back(i);
    }
    NodeIndex node = fits.empty() ? pick(num_nodes) : fits[pick(static_cast<int>(fits.size()))];
    if (pick(3) == 0 && !fits.empty() && !e.raw.empty()) {
      // Sometimes the best-scoring candidate, to pile pods up as the scheduler would.
      size_t best = std::max_element(e.normalized.begin(), e.normalized.end()) - e.normalized.begin();
      node = candidates[best];
    }
    Pod bound = pod;
    bound.node_name = rc.objects.nodes[node].meta.name;
    engine.Bind(bound, node);
    reference_objects.pods.push_back(bound);
  }
}

/** The omp backend, and cuda when a device is present. */
std::vector<engine::Backend> Backends() {
  std::vector<engine::Backend> out = {engine::Backend::kOmp};
  if (engine::CudaAvailable()) out.push_back(engine::Backend::kCuda);
  return out;
}

void RunDifferential(uint32_t seed, int num_nodes, int num_zones, int num_pods, int scheduled,
                     const PluginArgs& args, const FeatureGates& gates = {}) {
  for (engine::Backend backend : Backends()) {
    SCOPED_TRACE(std::string(engine::BackendName(backend)) + " seed " + std::to_string(seed) + " nodes " +
                 std::to_string(num_nodes));
    RunDifferentialOn(backend, seed, num_nodes, num_zones, num_pods, scheduled, args, gates);
  }
}

TEST(PodTopologySpreadTest, RandomizedDifferentialWithBinds) {
  PluginArgs system;
  RunDifferential(1, 50, 3, 150, 60, system);
  RunDifferential(2, 200, 5, 600, 50, system);
  RunDifferential(3, 700, 10, 1500, 25, system);
  RunDifferential(4, 2000, 7, 3000, 10, system);
}

TEST(PodTopologySpreadTest, TableCacheEvictionStaysExact) {
  // matchLabelKeys over a label with many values gives more distinct selectors than the
  // cache holds; tables rebuilt after eviction must still see every earlier bind.
  std::mt19937 rng(21);
  RandomCluster rc = MakeRandomCluster(rng, 24, 3, 60);
  ObjectSet reference_objects = rc.objects;
  EngineRun engine(rc.objects, PluginArgs{}, FeatureGates{});
  TopologySpreadConstraint hard = HardSpread(1, kZone, LabelSelector{});
  hard.match_label_keys = {"hash"};
  TopologySpreadConstraint soft = SoftSpread(1, kHost, LabelSelector{});
  soft.match_label_keys = {"hash"};
  TopologySpreadConstraint rack = SoftSpread(2, "rack", MatchExpression("app", "Exists"));
  rack.match_label_keys = {"hash"};
  for (int k = 0; k < 420; ++k) {
    // 300 distinct values, then values seen (and evicted) long ago.
    Pod pod = Incoming({hard, soft, rack}, {{"app", "web"}, {"hash", "h" + std::to_string((k * 7) % 300)}});
    pod.meta.name = "p" + std::to_string(k);
    std::vector<NodeIndex> all = AllNodes(rc.objects);
    Outcome e = engine.Run(pod, all);
    Outcome r = RunReference(reference_objects, pod, all, PluginArgs{}, FeatureGates{});
    ASSERT_EQ(e.Diff(r), "") << "pod " << k;
    NodeIndex node = static_cast<NodeIndex>(rng() % all.size());
    Pod bound = pod;
    bound.node_name = rc.objects.nodes[node].meta.name;
    engine.Bind(bound, node);
    reference_objects.pods.push_back(bound);
  }
}

TEST(PodTopologySpreadTest, RandomizedDifferentialListDefaultsAndGates) {
  PluginArgs list = ListArgs({HardSpread(2, kZone, std::nullopt), SoftSpread(1, kHost, std::nullopt),
                              SoftSpread(2, "rack", std::nullopt)});
  RunDifferential(11, 120, 4, 400, 50, list);
  RunDifferential(12, 500, 6, 1200, 30, list);
  FeatureGates off;
  off.overrides["NodeInclusionPolicyInPodTopologySpread"] = false;
  off.overrides["MatchLabelKeysInPodTopologySpread"] = false;
  RunDifferential(13, 300, 3, 900, 40, PluginArgs{}, off);
  FeatureGates legacy;
  legacy.overrides[spread::kLegacyEmptySelectorGate] = true;
  RunDifferential(14, 150, 9, 500, 40, list, legacy);
}

// ---- randomized differential: required node placement and events ---------------------

// Node affinity terms of every operator, over labels some nodes lack, with matchFields,
// empty and unparsable terms: the engine compiles the placement to label ids (§3).
NodeSelectorRequirement RandomNodeRequirement(std::mt19937& rng) {
  switch (rng() % 10) {
    case 0: return NodeSelectorRequirement{"region", "In", {"region-0"}};
    case 1: return NodeSelectorRequirement{"rack", "NotIn", {"rack-1", "rack-2"}};
    case 2: return NodeSelectorRequirement{"disk", "Exists", {}};
    case 3: return NodeSelectorRequirement{"disk", "DoesNotExist", {}};
    case 4: return NodeSelectorRequirement{"cpus", "Gt", {"6"}};
    case 5: return NodeSelectorRequirement{"cpus", "Lt", {"10"}};
    case 6: return NodeSelectorRequirement{kZone, "In", {"zone-0", "zone-1", ""}};
    case 7: return NodeSelectorRequirement{"gpu", "In", {"a"}};  // no node has it
    case 8: return NodeSelectorRequirement{"gpu", "DoesNotExist", {}};
    default: return NodeSelectorRequirement{"cpus", "Gt", {"x"}};  // does not parse
  }
}

Pod RandomPlacedPod(std::mt19937& rng, int num_nodes) {
  auto pick = [&](int n) { return static_cast<int>(rng() % static_cast<unsigned>(n)); };
  const std::vector<std::string> keys = {kZone, kHost, "rack"};
  Pod p = SpreadPod("template", {});
  for (int i = 0, n = 1 + pick(2); i < n; ++i) {
    TopologySpreadConstraint c =
        testing::Spread(1 + pick(3), keys[pick(3)], pick(2) ? "DoNotSchedule" : "ScheduleAnyway",
                        pick(3) ? MatchLabels({{"app", pick(2) ? "web" : "db"}}) : MatchExpression("tier", "Exists"));
    if (pick(5) == 0) c.node_affinity_policy = "Ignore";
    if (pick(5) == 0) c.min_domains = 1 + pick(6);
    p.topology_spread_constraints.push_back(c);
  }
  if (pick(3) == 0) p.node_selector[pick(2) ? "disk" : "region"] = pick(2) ? "ssd" : "region-1";
  if (pick(3) != 0) {
    NodeSelector required;
    for (int t = 0, n = 1 + pick(2); t < n; ++t) {
      NodeSelectorTerm term;
      if (pick(12) != 0) {  // else an empty term, which never matches
        for (int r = 0, m = 1 + pick(2); r < m; ++r) term.match_expressions.push_back(RandomNodeRequirement(rng));
      }
      if (pick(6) == 0) {
        const std::string name = "node-" + std::to_string(pick(num_nodes));
        term.match_fields.push_back(NodeSelectorRequirement{"metadata.name", pick(2) ? "In" : "NotIn", {name}});
      }
      required.terms.push_back(term);
    }
    p.affinity = Affinity{};
    p.affinity->node_affinity = NodeAffinity{};
    p.affinity->node_affinity->required = required;
  }
  return p;
}

// Every pod a distinct placement, as SchedulingHeterogeneous: tables are built afresh from
// the shared per-selector counts while pods are bound and deleted and nodes change labels or
// join. The engine keeps its state across events; the reference starts from the objects.
// With `placement_pool` > 0 the pods' constraints and placements come from that many
// templates, so that tables of several selectors share a node placement's eligible nodes.
void RunEventsDifferential(engine::Backend backend, uint32_t seed, int num_nodes, int steps, int placement_pool = 0) {
  std::mt19937 rng(seed);
  auto pick = [&](int n) { return static_cast<int>(rng() % static_cast<unsigned>(n)); };
  RandomCluster rc = MakeRandomCluster(rng, num_nodes, 4, 3 * num_nodes);
  const std::vector<std::string> cpus = {"4", "8", "16", "x"};
  for (Node& n : rc.objects.nodes) {
    if (pick(4) != 0) n.meta.labels["cpus"] = cpus[pick(4)];
  }
  ObjectSet reference_objects = rc.objects;
  std::deque<Node> joined;  // nodes added later: the snapshot keeps pointers to them
  EngineRun engine(rc.objects, PluginArgs{}, FeatureGates{}, backend);
  auto node_object = [&](NodeIndex i) -> Node& {
    return i < static_cast<NodeIndex>(rc.objects.nodes.size()) ? rc.objects.nodes[i] : joined[i - rc.objects.nodes.size()];
  };
  const std::vector<std::string> apps = {"web", "db", "cache"};
  std::vector<Pod> pool;
  for (int k = 0; k < placement_pool; ++k) pool.push_back(RandomPlacedPod(rng, num_nodes));
  for (int k = 0; k < steps; ++k) {
    const int nodes_now = engine.snapshot().num_nodes();
    const int event = pick(10);
    if (event == 0) {  // a node's labels change
      const NodeIndex i = pick(nodes_now);
      Node& n = node_object(i);
      const Node old = n;
      n.meta.labels[kZone] = rc.zones[pick(static_cast<int>(rc.zones.size()))];
      if (pick(2) == 0) n.meta.labels["cpus"] = cpus[pick(4)];
      if (pick(3) == 0) n.meta.labels.erase("disk");
      engine.UpdateNode(i, old);
      reference_objects.nodes[i] = n;
      continue;
    }
    if (event == 1 && pick(3) == 0) {  // a node joins
      const std::string name = "node-" + std::to_string(nodes_now);
      joined.push_back(SpreadNode(name, {{kHost, name}, {kZone, rc.zones[pick(4)]}, {"cpus", cpus[pick(4)]},
                                         {"region", "region-" + std::to_string(pick(2))}}));
      engine.AddNode(&joined.back());
      reference_objects.nodes.push_back(joined.back());
      continue;
    }
    if (event == 2) {  // a bound pod is deleted
      const NodeIndex i = pick(nodes_now);
      const size_t on = engine.snapshot().pods_on(i).size();
      if (on == 0) continue;
      const std::string gone = engine.Unbind(i, static_cast<size_t>(pick(static_cast<int>(on))));
      auto& pods = reference_objects.pods;
      pods.erase(std::find_if(pods.begin(), pods.end(), [&](const Pod& p) { return p.meta.name == gone; }));
      continue;
    }
    Pod pod = pool.empty() ? RandomPlacedPod(rng, nodes_now) : pool[pick(placement_pool)];
    pod.meta.name = "scheduled-" + std::to_string(k);
    if (pick(5) != 0) pod.meta.labels["app"] = apps[pick(3)];
    if (pick(2) == 0) pod.meta.labels["tier"] = "fe";
    std::vector<NodeIndex> candidates;
    for (NodeIndex i = 0; i < nodes_now; ++i) {
      if (pick(3) != 0) candidates.push_back(i);
    }
    Outcome e = engine.Run(pod, candidates);
    Outcome r = RunReference(reference_objects, pod, candidates, PluginArgs{}, FeatureGates{});
    ASSERT_EQ(e.Diff(r), "") << "step " << k;
    std::vector<NodeIndex> fits;
    for (NodeIndex i = 0; i < nodes_now; ++i) {
      if (e.filter[i].IsSuccess()) fits.push_back(i);
    }
    const NodeIndex node = fits.empty() ? pick(nodes_now) : fits[pick(static_cast<int>(fits.size()))];
    Pod bound = pod;
    bound.node_name = node_object(node).meta.name;
    engine.Bind(bound, node);
    reference_objects.pods.push_back(bound);
  }
}

TEST(PodTopologySpreadTest, RandomizedDifferentialPlacementAndEvents) {
  struct Case {
    uint32_t seed;
    int nodes, steps;
  };
  for (engine::Backend backend : Backends()) {
    // 2,100 nodes: above the omp backend's old parallel threshold; 17,000: above its current
    // one (kOmpSerialBelow), so that per-node passes run threaded and on one thread alike.
    for (const Case& c : {Case{31, 1, 30}, Case{32, 33, 150}, Case{33, 300, 150}, Case{34, 2100, 40},
                          Case{35, 17000, 6}}) {
      SCOPED_TRACE(std::string(engine::BackendName(backend)) + " seed " + std::to_string(c.seed));
      RunEventsDifferential(backend, c.seed, c.nodes, c.steps);
    }
  }
}

// Few node placements under many selectors, while node labels change and nodes join: the
// tables of one placement share its eligible nodes, which must go with the tables.
TEST(PodTopologySpreadTest, SharedEligibilityFollowsNodeEvents) {
  for (engine::Backend backend : Backends()) {
    for (uint32_t seed : {41u, 42u, 43u}) {
      SCOPED_TRACE(std::string(engine::BackendName(backend)) + " seed " + std::to_string(seed));
      RunEventsDifferential(backend, seed, 40, 200, /*placement_pool=*/3);
    }
  }
}

// Pods with labels of their own (a label class each) bound and deleted by the thousand:
// the engine matches a new selector once per label class, and drops the classes of pods no
// longer counted when they pile up. Every check asks for selectors not seen before, over
// those pods' own labels, so the per-selector counts are built from the classes afresh.
TEST(PodTopologySpreadTest, LabelClassesStayExactUnderChurn) {
  for (engine::Backend backend : Backends()) {
    SCOPED_TRACE(engine::BackendName(backend));
    std::mt19937 rng(41);
    auto pick = [&](int n) { return static_cast<int>(rng() % static_cast<unsigned>(n)); };
    const int num_nodes = 20;
    RandomCluster rc = MakeRandomCluster(rng, num_nodes, 4, 40);
    ObjectSet reference_objects = rc.objects;
    EngineRun engine(rc.objects, PluginArgs{}, FeatureGates{}, backend);
    std::vector<NodeIndex> all(num_nodes);
    for (NodeIndex i = 0; i < num_nodes; ++i) all[i] = i;
    const std::vector<std::string> apps = {"web", "db", "cache"};
    for (int k = 0; k < 2600; ++k) {
      const std::string name = "churn-" + std::to_string(k);
      if (k % 100 == 99) {
        Pod check = SpreadPod("check-" + std::to_string(k), {{"app", apps[pick(3)]}});
        const std::string earlier = "churn-" + std::to_string(pick(k));
        check.topology_spread_constraints.push_back(
            testing::Spread(1 + pick(2), pick(2) ? kZone : kHost, pick(2) ? "DoNotSchedule" : "ScheduleAnyway",
                            MatchLabels({{"own", earlier}})));
        // A third of the pods, under a selector never asked before.
        check.topology_spread_constraints.push_back(testing::Spread(
            1, kZone, "ScheduleAnyway", MatchExpression("app", "In", {apps[pick(3)], "nonce-" + std::to_string(k)})));
        Outcome e = engine.Run(check, all);
        Outcome r = RunReference(reference_objects, check, all, PluginArgs{}, FeatureGates{});
        ASSERT_EQ(e.Diff(r), "") << "step " << k;
      }
      Pod pod = SpreadPod(name, {{"app", apps[k % 3]}, {"own", name}}, "");
      const NodeIndex node = pick(num_nodes);
      pod.node_name = rc.objects.nodes[node].meta.name;
      engine.Bind(pod, node);
      reference_objects.pods.push_back(pod);
      if (k % 4 == 0) continue;  // three of four are deleted again
      const auto& on = engine.snapshot().pods_on(node);
      for (size_t j = 0; j < on.size(); ++j) {
        if (on[j]->meta.name != name) continue;
        engine.Unbind(node, j);
        auto& pods = reference_objects.pods;
        pods.erase(std::find_if(pods.begin(), pods.end(), [&](const Pod& p) { return p.meta.name == name; }));
        break;
      }
    }
  }
}

}  // namespace
}  // namespace kplace
