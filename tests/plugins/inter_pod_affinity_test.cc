#include <algorithm>
#include <random>

#include <gtest/gtest.h>

#include "kplace/plugins/inter_pod_affinity_common.h"
#include "tests/testing/inter_pod_affinity_builders.h"

namespace kplace {
namespace {

using testing::ipa::DiffOutcomes;
using testing::ipa::EngineRunner;
using testing::ipa::LabeledPod;
using testing::ipa::MakeNamespace;
using testing::ipa::Outcome;
using testing::ipa::PreferAffinity;
using testing::ipa::PreferAnti;
using testing::ipa::ReferenceRunner;
using testing::ipa::Req;
using testing::ipa::RequireAffinity;
using testing::ipa::RequireAnti;
using testing::ipa::Sel;
using testing::ipa::Term;
using testing::ipa::TopoNode;

constexpr char kAffinityReason[] = "node(s) didn't match pod affinity rules";
constexpr char kAntiReason[] = "node(s) didn't match pod anti-affinity rules";
constexpr char kExistingReason[] = "node(s) didn't satisfy existing pods anti-affinity rules";

PluginArgs Args(int32_t hard, bool ignore = false) {
  PluginArgs a;
  a.inter_pod_affinity.hard_pod_affinity_weight = hard;
  a.inter_pod_affinity.ignore_preferred_terms_of_existing_pods = ignore;
  return a;
}

// Runs the pod on the omp engine and on the reference; they must agree exactly, and the
// engine's outcome is returned for the case's own assertions.
Outcome RunBoth(const ObjectSet& cluster, const Pod& pod, const PluginArgs& args = Args(0),
                const FeatureGates& gates = {}) {
  Outcome e = EngineRunner(cluster, args, gates).Run(pod);
  Outcome r = ReferenceRunner(cluster, args, gates).Run(pod);
  EXPECT_EQ(DiffOutcomes(e, r), "");
  return e;
}

ObjectSet TeamNamespaces() {
  ObjectSet c;
  c.namespaces = {MakeNamespace("subteam1.team1", {{"team", "team1"}}), MakeNamespace("subteam2.team1", {{"team", "team1"}}),
                  MakeNamespace("subteam1.team2", {{"team", "team2"}}), MakeNamespace("subteam2.team2", {{"team", "team2"}})};
  return c;
}

TEST(InterPodAffinityTest, RequiredAffinityMatchesExistingPod) {
  ObjectSet c = TeamNamespaces();
  c.nodes.push_back(TopoNode("node1", {{"region", "r1"}, {"zone", "z11"}}));
  c.pods.push_back(LabeledPod("p1", "", {{"service", "securityscan"}}, "node1"));
  Pod pod = LabeledPod("incoming", "", {{"security", "S1"}});
  RequireAffinity(pod, Term(Sel({Req("service", "In", {"securityscan", "value2"})}), "region"));
  Outcome o = RunBoth(c, pod);
  EXPECT_EQ(o.pre_filter.code, Code::kSuccess);
  EXPECT_TRUE(o.filter[0].IsSuccess());

  // The same pod in another namespace does not count (vector 004).
  c.pods[0].meta.namespace_ = "ns";
  o = RunBoth(c, pod);
  EXPECT_EQ(o.filter[0], PluginStatus::Make(Code::kUnschedulableAndUnresolvable, kAffinityReason));
}

TEST(InterPodAffinityTest, FirstPodOfGroupAndTopologyKeys) {
  // Vector 028: nothing matches both terms, the pod matches its own terms: every node passes.
  ObjectSet c;
  c.nodes.push_back(TopoNode("nodeA", {{"zone", "az1"}, {"hostname", "h1"}}));
  c.nodes.push_back(TopoNode("nodeB", {{"zone", "az2"}, {"hostname", "h2"}}));
  c.nodes.push_back(TopoNode("nodeC", {{"hostname", "h3"}}));
  c.pods.push_back(LabeledPod("p1", "", {{"foo", "bar"}}, "nodeA"));
  Pod pod = LabeledPod("incoming", "", {{"foo", "bar"}, {"service", "securityscan"}});
  RequireAffinity(pod, Term(Sel({Req("foo", "In", {"bar"})}), "zone"));
  RequireAffinity(pod, Term(Sel({Req("service", "In", {"securityscan"})}), "zone"));
  Outcome o = RunBoth(c, pod);
  EXPECT_TRUE(o.filter[0].IsSuccess());
  EXPECT_TRUE(o.filter[1].IsSuccess());
  // A node without the topology key fails even for the first pod.
  EXPECT_EQ(o.filter[2], PluginStatus::Make(Code::kUnschedulableAndUnresolvable, kAffinityReason));

  // Once a pod matches both terms, only its zone passes.
  c.pods.push_back(LabeledPod("p2", "", {{"foo", "bar"}, {"service", "securityscan"}}, "nodeB"));
  o = RunBoth(c, pod);
  EXPECT_FALSE(o.filter[0].IsSuccess());
  EXPECT_TRUE(o.filter[1].IsSuccess());

  // A pod that does not match its own terms is not the first of a group.
  c.pods.pop_back();
  Pod other = pod;
  other.meta.labels = {{"foo", "bar"}};
  o = RunBoth(c, other);
  EXPECT_FALSE(o.filter[0].IsSuccess());
  EXPECT_FALSE(o.filter[1].IsSuccess());
}

TEST(InterPodAffinityTest, AntiAffinityBothWays) {
  ObjectSet c;
  c.nodes.push_back(TopoNode("nodeA", {{"region", "r1"}, {"zone", "z1"}, {"hostname", "nodeA"}}));
  c.nodes.push_back(TopoNode("nodeB", {{"region", "r1"}, {"zone", "z2"}, {"hostname", "nodeB"}}));
  c.nodes.push_back(TopoNode("nodeC", {{"region", "r2"}, {"zone", "z3"}, {"hostname", "nodeC"}}));
  Pod existing = LabeledPod("p1", "", {{"app", "db"}}, "nodeA");
  RequireAnti(existing, Term(Sel({Req("app", "In", {"web"})}), "zone"));
  c.pods.push_back(existing);

  // The existing pod's anti-affinity rejects a web pod in its zone (symmetry).
  Pod web = LabeledPod("web", "", {{"app", "web"}});
  Outcome o = RunBoth(c, web);
  EXPECT_EQ(o.pre_filter.code, Code::kSuccess);
  EXPECT_EQ(o.filter[0], PluginStatus::Make(Code::kUnschedulable, kExistingReason));
  EXPECT_TRUE(o.filter[1].IsSuccess());
  EXPECT_TRUE(o.filter[2].IsSuccess());

  // A pod it does not select: nothing to check, PreFilter skips.
  EXPECT_EQ(RunBoth(c, LabeledPod("api", "", {{"app", "api"}})).pre_filter.code, Code::kSkip);

  // The incoming pod's own anti-affinity by region rejects nodes A and B; it is checked
  // before the existing pods' rules.
  RequireAnti(web, Term(Sel({Req("app", "Exists")}), "region"));
  o = RunBoth(c, web);
  EXPECT_EQ(o.filter[0], PluginStatus::Make(Code::kUnschedulable, kAntiReason));
  EXPECT_EQ(o.filter[1], PluginStatus::Make(Code::kUnschedulable, kAntiReason));
  EXPECT_TRUE(o.filter[2].IsSuccess());
}

TEST(InterPodAffinityTest, NamespaceSelectors) {
  ObjectSet c = TeamNamespaces();
  c.nodes.push_back(TopoNode("n1", {{"zone", "z1"}}));
  c.nodes.push_back(TopoNode("n2", {{"zone", "z2"}}));
  c.nodes.push_back(TopoNode("n3", {{"zone", "z3"}}));
  c.pods.push_back(LabeledPod("a", "subteam1.team1", {{"app", "x"}}, "n1"));
  c.pods.push_back(LabeledPod("b", "subteam2.team2", {{"app", "x"}}, "n2"));
  c.pods.push_back(LabeledPod("c", "no-object", {{"app", "x"}}, "n3"));

  // team1's namespaces, resolved to names: only n1.
  Pod pod = LabeledPod("p", "subteam1.team2", {});
  RequireAnti(pod, Term(Sel({Req("app", "In", {"x"})}), "zone", {}, Sel({Req("team", "In", {"team1"})})));
  Outcome o = RunBoth(c, pod);
  EXPECT_FALSE(o.filter[0].IsSuccess());
  EXPECT_TRUE(o.filter[1].IsSuccess());
  EXPECT_TRUE(o.filter[2].IsSuccess());

  // The empty namespace selector selects every namespace, with or without an object.
  Pod all = LabeledPod("p", "subteam1.team2", {});
  RequireAnti(all, Term(Sel({Req("app", "In", {"x"})}), "zone", {}, Sel({})));
  o = RunBoth(c, all);
  for (int i = 0; i < 3; ++i) EXPECT_FALSE(o.filter[i].IsSuccess()) << i;

  // Listed names plus a selector: both count; the pod's own namespace is not added.
  Pod both = LabeledPod("p", "no-object", {});
  RequireAnti(both, Term(Sel({Req("app", "In", {"x"})}), "zone", {"subteam2.team2"}, Sel({Req("team", "In", {"team1"})})));
  o = RunBoth(c, both);
  EXPECT_FALSE(o.filter[0].IsSuccess());
  EXPECT_FALSE(o.filter[1].IsSuccess());
  EXPECT_TRUE(o.filter[2].IsSuccess());

  // An existing pod's namespace selector is matched against the incoming pod's namespace labels.
  ObjectSet d = TeamNamespaces();
  d.nodes = c.nodes;
  Pod guard = LabeledPod("g", "subteam1.team2", {}, "n2");
  RequireAnti(guard, Term(Sel({}), "zone", {}, Sel({Req("team", "In", {"team1"})})));
  d.pods.push_back(guard);
  o = RunBoth(d, LabeledPod("p", "subteam2.team1", {}));
  EXPECT_TRUE(o.filter[0].IsSuccess());
  EXPECT_EQ(o.filter[1], PluginStatus::Make(Code::kUnschedulable, kExistingReason));
  EXPECT_EQ(RunBoth(d, LabeledPod("p", "subteam2.team2", {})).pre_filter.code, Code::kSkip);
}

TEST(InterPodAffinityTest, ParseErrors) {
  ObjectSet c;
  c.nodes.push_back(TopoNode("node1", {{"region", "r1"}}));
  Pod pod = LabeledPod("incoming", "", {{"service", "securityscan"}});
  RequireAffinity(pod, Term(Sel({Req("service", "In", {"{{.bad-value.}}"})}), "region"));
  RequireAffinity(pod, Term(Sel({Req("service", "In", {"antivirusscan", "value2"})}), "node"));
  const std::string bad_value =
      "values[0][service]: Invalid value: \"{{.bad-value.}}\": a valid label must be an empty string or consist of "
      "alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. "
      "'MyValue',  or 'my_value',  or '12345', regex used for validation is "
      "'(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?')";
  Outcome o = RunBoth(c, pod);
  EXPECT_EQ(o.pre_filter,
            PluginStatus::Make(Code::kUnschedulableAndUnresolvable, "parsing pod: requiredAffinityTerms: " + bad_value));
  EXPECT_EQ(o.filter[0].code, Code::kError);

  // Several lists: "[a, b]"; several errors in one requirement nest the same way.
  PreferAnti(pod, 5, Term(Sel({Req("a/b/c", "NotIn")}), "region"));
  o = RunBoth(c, pod);
  EXPECT_EQ(o.pre_filter.reasons[0],
            "parsing pod: [requiredAffinityTerms: " + bad_value +
                ", preferredAntiAffinityTerms: [key: Invalid value: \"a/b/c\": a qualified name must consist of "
                "alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character "
                "(e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is "
                "'([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]') with an optional DNS subdomain prefix and '/' (e.g. "
                "'example.com/MyName'), values: Invalid value: []string(nil): for 'in', 'notin' operators, values "
                "set can't be empty]]");
  EXPECT_EQ(o.pre_score.code, Code::kError);

  Pod op = LabeledPod("incoming", "", {});
  RequireAnti(op, Term(Sel({Req("k", "Equals", {"v"})}), "region"));
  EXPECT_EQ(RunBoth(c, op).pre_filter.reasons[0],
            "parsing pod: requiredAntiAffinityTerms: \"Equals\" is not a valid label selector operator");

  // An existing pod loses the whole list with a bad term, the good terms too.
  Pod existing = LabeledPod("e", "", {}, "node1");
  RequireAnti(existing, Term(Sel({Req("x", "Exists", {"v"})}), "region"));
  RequireAnti(existing, Term(Sel({}), "region"));
  c.pods.push_back(existing);
  EXPECT_EQ(RunBoth(c, LabeledPod("p", "", {})).pre_filter.code, Code::kSkip);
  c.pods.back().affinity->pod_anti_affinity->required.erase(c.pods.back().affinity->pod_anti_affinity->required.begin());
  EXPECT_EQ(RunBoth(c, LabeledPod("p", "", {})).filter[0].reasons[0], kExistingReason);
}

TEST(InterPodAffinityTest, MatchLabelKeys) {
  ObjectSet c;
  c.nodes.push_back(TopoNode("n1", {{"zone", "z1"}}));
  c.nodes.push_back(TopoNode("n2", {{"zone", "z2"}}));
  c.nodes.push_back(TopoNode("n3", {{"zone", "z3"}}));
  c.pods.push_back(LabeledPod("a", "default", {{"app", "web"}, {"rev", "1"}}, "n1"));
  c.pods.push_back(LabeledPod("b", "default", {{"app", "web"}, {"rev", "2"}}, "n2"));
  c.pods.push_back(LabeledPod("c", "default", {{"app", "db"}, {"rev", "2"}}, "n3"));
  Pod pod = LabeledPod("p", "default", {{"app", "web"}, {"rev", "2"}});
  PodAffinityTerm t = Term(Sel({Req("rev", "Exists")}), "zone");
  t.match_label_keys = {"app"};       // + app In [web]
  t.mismatch_label_keys = {"rev", "absent"};  // + rev NotIn [2]; absent keys are ignored
  RequireAnti(pod, t);
  Outcome o = RunBoth(c, pod);
  EXPECT_FALSE(o.filter[0].IsSuccess());
  EXPECT_TRUE(o.filter[1].IsSuccess());
  EXPECT_TRUE(o.filter[2].IsSuccess());

  // With the gate off the selector is used as written.
  FeatureGates off;
  off.overrides["MatchLabelKeysInPodAffinity"] = false;
  o = RunBoth(c, pod, Args(0), off);
  for (int i = 0; i < 3; ++i) EXPECT_FALSE(o.filter[i].IsSuccess()) << i;

  // A nil selector stays nil (matches nothing).
  Pod nil_sel = LabeledPod("p", "default", {{"app", "web"}});
  PodAffinityTerm n = Term(std::nullopt, "zone");
  n.match_label_keys = {"app"};
  RequireAnti(nil_sel, n);
  o = RunBoth(c, nil_sel);
  for (int i = 0; i < 3; ++i) EXPECT_TRUE(o.filter[i].IsSuccess()) << i;
}

TEST(InterPodAffinityTest, PreferredScoresAndNormalization) {
  // Seed example: weight 50 toward role=cache by hostname; two on node1, one on node2.
  ObjectSet c;
  for (const char* n : {"node1", "node2", "node3"}) c.nodes.push_back(TopoNode(n, {{"kubernetes.io/hostname", n}}));
  c.pods.push_back(LabeledPod("cache-1", "default", {{"role", "cache"}}, "node1"));
  c.pods.push_back(LabeledPod("cache-2", "default", {{"role", "cache"}}, "node1"));
  c.pods.push_back(LabeledPod("cache-3", "default", {{"role", "cache"}}, "node2"));
  Pod pod = LabeledPod("incoming", "default", {});
  PreferAffinity(pod, 50, Term(Sel({Req("role", "In", {"cache"})}), "kubernetes.io/hostname"));
  Outcome o = RunBoth(c, pod, Args(1));
  EXPECT_EQ(o.pre_score.code, Code::kSuccess);
  EXPECT_EQ(o.raw, (std::vector<int64_t>{100, 50, 0}));
  EXPECT_EQ(o.normalized, (std::vector<int64_t>{100, 50, 0}));

  // Anti-affinity makes scores negative; min-max maps -5, 0, 0 to 0, 100, 100 (vector 052).
  Pod anti = LabeledPod("incoming", "default", {});
  PreferAnti(anti, 5, Term(Sel({Req("role", "In", {"cache"})}), "kubernetes.io/hostname"));
  c.pods.pop_back();
  c.pods.pop_back();
  o = RunBoth(c, anti, Args(1));
  EXPECT_EQ(o.raw, (std::vector<int64_t>{-5, 0, 0}));
  EXPECT_EQ(o.normalized, (std::vector<int64_t>{0, 100, 100}));

  // Float64: 100 * (29 / 100) truncates to 28.
  ObjectSet f;
  f.nodes = c.nodes;
  for (int i = 0; i < 29; ++i) f.pods.push_back(LabeledPod("a" + std::to_string(i), "default", {{"w", "1"}}, "node1"));
  for (int i = 0; i < 100; ++i) f.pods.push_back(LabeledPod("b" + std::to_string(i), "default", {{"w", "1"}}, "node2"));
  Pod w = LabeledPod("incoming", "default", {});
  PreferAffinity(w, 1, Term(Sel({Req("w", "Exists")}), "kubernetes.io/hostname"));
  o = RunBoth(f, w, Args(1));
  EXPECT_EQ(o.normalized, (std::vector<int64_t>{28, 100, 0}));

  // Rows that cancel still make an entry: Success, everything 0, not Skip.
  Pod both = LabeledPod("incoming", "default", {});
  PreferAffinity(both, 7, Term(Sel({Req("role", "Exists")}), "kubernetes.io/hostname"));
  PreferAnti(both, 7, Term(Sel({Req("role", "Exists")}), "kubernetes.io/hostname"));
  o = RunBoth(c, both, Args(1));
  EXPECT_EQ(o.pre_score.code, Code::kSuccess);
  EXPECT_EQ(o.normalized, (std::vector<int64_t>{0, 0, 0}));

  // No scored nodes: Skip.
  ObjectSet none;
  EXPECT_EQ(RunBoth(none, both, Args(1)).pre_score.code, Code::kSkip);
}

TEST(InterPodAffinityTest, ExistingPodsTermsInScoring) {
  ObjectSet c = TeamNamespaces();
  c.nodes.push_back(TopoNode("node1", {{"region", "China"}}));
  c.nodes.push_back(TopoNode("node2", {{"region", "India"}}));
  c.nodes.push_back(TopoNode("node3", {{"az", "az1"}}));
  Pod a = LabeledPod("a", "subteam1.team1", {}, "node1");
  RequireAffinity(a, Term(Sel({Req("service", "In", {"S1"})}), "region"));
  RequireAffinity(a, Term(Sel({Req("service", "Exists")}), "region"));
  c.pods.push_back(a);
  Pod b = LabeledPod("b", "subteam1.team1", {}, "node2");
  PreferAffinity(b, 3, Term(Sel({Req("service", "In", {"S1"})}), "region"));
  PreferAnti(b, 5, Term(Sel({Req("service", "In", {"S1"})}), "region"));
  c.pods.push_back(b);
  Pod pod = LabeledPod("p", "subteam1.team1", {{"service", "S1"}});

  // Two matching required terms add 2H; b adds 3 - 5.
  Outcome o = RunBoth(c, pod, Args(4));
  EXPECT_EQ(o.raw, (std::vector<int64_t>{8, -2, 0}));
  EXPECT_EQ(o.normalized, (std::vector<int64_t>{100, 0, 20}));

  // H = 0 drops the required terms; a pod without preferred terms with ignore: Skip.
  o = RunBoth(c, pod, Args(0));
  EXPECT_EQ(o.raw, (std::vector<int64_t>{0, -2, 0}));
  EXPECT_EQ(RunBoth(c, pod, Args(4, /*ignore=*/true)).pre_score.code, Code::kSkip);

  // ignore only skips when the pod has no preferred terms of its own; existing preferred
  // terms still count then.
  PreferAffinity(pod, 1, Term(Sel({Req("nothing", "Exists")}), "region"));
  o = RunBoth(c, pod, Args(4, /*ignore=*/true));
  EXPECT_EQ(o.raw, (std::vector<int64_t>{8, -2, 0}));

  // A pod with no namespace object behind its namespace: selectors see no labels.
  Pod guard = LabeledPod("g", "subteam1.team1", {}, "node2");
  PreferAffinity(guard, 9, Term(Sel({}), "region", {}, Sel({Req("team", "DoesNotExist")})));
  c.pods.push_back(guard);
  o = RunBoth(c, LabeledPod("p", "no-object", {}), Args(0));
  EXPECT_EQ(o.raw, (std::vector<int64_t>{0, 9, 0}));
}

// ---- randomized differential: engine vs reference, across many binds ----------------

struct Gen {
  std::mt19937_64 rng;
  explicit Gen(uint64_t seed) : rng(seed) {}
  int Int(int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(rng); }
  bool Chance(double p) { return std::uniform_real_distribution<double>(0, 1)(rng) < p; }
  template <typename T>
  const T& Pick(const std::vector<T>& v) { return v[Int(0, static_cast<int>(v.size()) - 1)]; }

  const std::vector<std::string> keys = {"app", "tier", "sec", "ver"};
  const std::vector<std::string> values = {"a", "b", "c"};
  const std::vector<std::string> topology = {"zone", "region", "kubernetes.io/hostname", "rack", "zone", "missing"};
  const std::vector<std::string> namespaces = {"ns1", "ns2", "ns3", "lonely"};

  Labels PodLabels() {
    Labels l;
    for (const std::string& k : keys) {
      if (Chance(0.6)) l[k] = Pick(values);
    }
    return l;
  }

  std::optional<LabelSelector> Selector(bool allow_nil, double invalid) {
    if (allow_nil && Chance(0.05)) return std::nullopt;
    LabelSelector s;
    if (Chance(0.08)) return s;  // everything
    if (Chance(0.3)) s.match_labels[Pick(keys)] = Pick(values);
    for (int i = Int(s.match_labels.empty() ? 1 : 0, 2); i > 0; --i) {
      static const std::vector<std::string> ops = {"In", "NotIn", "Exists", "DoesNotExist", "In", "NotIn"};
      LabelSelectorRequirement r{Pick(keys), Pick(ops), {}};
      if (r.op == "In" || r.op == "NotIn") {
        for (int v = Int(1, 2); v > 0; --v) r.values.push_back(Pick(values));
      }
      s.match_expressions.push_back(r);
    }
    if (Chance(invalid)) s.match_expressions.push_back({"bad key!", "Exists", {}});
    return s;
  }

  PodAffinityTerm RandomTerm(double invalid) {
    PodAffinityTerm t;
    t.label_selector = Selector(true, invalid);
    t.topology_key = Pick(topology);
    if (Chance(0.25)) {
      for (int i = Int(0, 2); i > 0; --i) t.namespaces.push_back(Pick(namespaces));
    }
    if (Chance(0.25)) {
      if (Chance(0.3)) {
        t.namespace_selector = LabelSelector{};
      } else {
        t.namespace_selector = Sel({Req("team", Chance(0.5) ? "In" : "NotIn", {Pick(std::vector<std::string>{"x", "y"})})});
      }
    }
    if (Chance(0.15)) t.match_label_keys.push_back(Pick(keys));
    if (Chance(0.1)) t.mismatch_label_keys.push_back(Pick(keys));
    return t;
  }

  Pod RandomPod(const std::string& name, double p_affinity, double invalid) {
    Pod p = LabeledPod(name, Pick(namespaces), PodLabels());
    if (!Chance(p_affinity)) return p;
    p.affinity.emplace();
    if (Chance(0.7)) p.affinity->pod_affinity.emplace();
    if (Chance(0.7)) p.affinity->pod_anti_affinity.emplace();
    for (std::optional<PodAffinity>* a : {&p.affinity->pod_affinity, &p.affinity->pod_anti_affinity}) {
      if (!*a) continue;
      for (int i = Int(0, 2) - (Chance(0.5) ? 1 : 0); i > 0; --i) (*a)->required.push_back(RandomTerm(invalid));
      for (int i = Int(0, 2); i > 0; --i) (*a)->preferred.push_back({Int(1, 100), RandomTerm(invalid)});
    }
    return p;
  }

  ObjectSet Cluster(int num_nodes, int zones, int num_pods) {
    ObjectSet c;
    c.namespaces = {MakeNamespace("ns1", {{"team", "x"}}), MakeNamespace("ns2", {{"team", "y"}}),
                    MakeNamespace("ns3", {})};
    for (int i = 0; i < num_nodes; ++i) {
      std::string name = "node-" + std::to_string(i);
      Labels l{{"kubernetes.io/hostname", name}};
      int z = Int(0, zones - 1);
      if (!Chance(0.04)) l["zone"] = "zone-" + std::to_string(z);
      if (!Chance(0.04)) l["region"] = "region-" + std::to_string(z / 2);
      if (Chance(0.5)) l["rack"] = "rack-" + std::to_string(Int(0, 5));
      if (Chance(0.02)) l.clear();
      c.nodes.push_back(TopoNode(name, l));
    }
    for (int i = 0; i < num_pods; ++i) {
      Pod p = RandomPod("e" + std::to_string(i), 0.3, 0.03);
      p.node_name = c.nodes[Int(0, num_nodes - 1)].meta.name;
      c.pods.push_back(p);
    }
    return c;
  }
};

// A seeded random cluster scheduled on the engine (Framework::Bind + Snapshot::Bind) and
// on the reference (ObjectSet); the bound cluster is kept for a fresh engine at the end.
struct Differential {
  Differential(uint64_t seed, int num_nodes, int zones, int num_pods)
      : seed(seed), g(seed), cluster(g.Cluster(num_nodes, zones, num_pods)), args(Args(g.Int(0, 3), g.Chance(0.2))),
        engine(cluster, args), reference(cluster, args), bound(cluster) {}

  void Bind(const Pod& pod, int32_t node) {
    engine.Bind(pod, node);
    reference.Bind(pod, node);
    bound.pods.push_back(pod);
    bound.pods.back().node_name = cluster.nodes[node].meta.name;
  }

  // Runs `pod` on both, which must agree in every phase, and binds it to a node drawn
  // from those that passed Filter (any node now and then, or when none did).
  void Schedule(const Pod& pod, bool feasible_only) {
    Outcome e = engine.Run(pod, feasible_only);
    ASSERT_EQ(DiffOutcomes(e, reference.Run(pod, feasible_only)), "") << "seed " << seed << " pod " << pod.meta.name;
    std::vector<int32_t> ok;
    for (int32_t i = 0; i < static_cast<int32_t>(e.filter.size()); ++i) {
      if (e.filter[i].IsSuccess()) ok.push_back(i);
    }
    Bind(pod, ok.empty() || g.Chance(0.1) ? g.Int(0, static_cast<int>(cluster.nodes.size()) - 1) : g.Pick(ok));
  }

  // A fresh engine over the bound cluster must agree with the incrementally updated one.
  void CheckFresh(int probes) {
    EngineRunner fresh(bound, args);
    for (int k = 0; k < probes; ++k) {
      Pod pod = g.RandomPod("probe" + std::to_string(k), 0.9, 0.0);
      ASSERT_EQ(DiffOutcomes(engine.Run(pod), fresh.Run(pod)), "") << "seed " << seed << " probe " << k;
    }
  }

  uint64_t seed;
  Gen g;
  ObjectSet cluster;
  PluginArgs args;
  EngineRunner engine;
  ReferenceRunner reference;
  ObjectSet bound;
};

// Schedules `incoming` random pods one by one, replicas of earlier ones among them.
void RunSequence(uint64_t seed, int num_nodes, int zones, int num_pods, int incoming) {
  Differential t(seed, num_nodes, zones, num_pods);
  Gen& g = t.g;
  std::vector<Pod> templates;
  for (int k = 0; k < incoming; ++k) {
    // Replicas of earlier pods reuse their term sets, and so the engine's cached tables.
    Pod pod = !templates.empty() && g.Chance(0.4) ? g.Pick(templates) : g.RandomPod("in", 0.85, 0.02);
    templates.push_back(pod);
    pod.meta.name = "in" + std::to_string(k);
    t.Schedule(pod, g.Chance(0.5));
    if (::testing::Test::HasFatalFailure()) return;
  }
  t.CheckFresh(10);
}

TEST(InterPodAffinityTest, EngineMatchesReferenceSmallClusters) {
  for (uint64_t seed = 1; seed <= 12; ++seed) {
    Gen g(seed * 7919);
    RunSequence(seed, g.Int(50, 120), g.Int(3, 10), g.Int(20, 200), 60);
    if (HasFatalFailure()) return;
  }
}

TEST(InterPodAffinityTest, EngineMatchesReferenceLargeClustersAfterManyBinds) {
  RunSequence(101, 2000, 10, 2500, 40);
  if (HasFatalFailure()) return;
  RunSequence(102, 800, 3, 1200, 120);
}

TEST(InterPodAffinityTest, CudaMatchesOmpAcrossBinds) {
  if (!engine::CudaAvailable()) GTEST_SKIP() << "no CUDA device";
  Gen g(4242);
  ObjectSet cluster = g.Cluster(1500, 7, 2000);
  PluginArgs args = Args(2);
  EngineRunner omp(cluster, args, {}, engine::Backend::kOmp);
  EngineRunner cuda(cluster, args, {}, engine::Backend::kCuda);
  for (int k = 0; k < 60; ++k) {
    Pod pod = g.RandomPod("in" + std::to_string(k), 0.85, 0.02);
    Outcome o = omp.Run(pod, k % 2 == 0);
    ASSERT_EQ(DiffOutcomes(cuda.Run(pod, k % 2 == 0), o), "") << k;
    int32_t node = g.Int(0, 1499);
    omp.Bind(pod, node);
    cuda.Bind(pod, node);
  }
}

// `n` nodes with a hostname each, in three zones.
ObjectSet HostsInThreeZones(int n) {
  ObjectSet c;
  for (int i = 0; i < n; ++i) {
    std::string name = "n" + std::to_string(i);
    c.nodes.push_back(TopoNode(name, {{"kubernetes.io/hostname", name}, {"zone", "z" + std::to_string(i % 3)}}));
  }
  return c;
}

// A replica that repels its peers per hostname and prefers their zone (weight 10).
Pod WebReplica(const std::string& name) {
  Pod pod = LabeledPod(name, "default", {{"app", "web"}});
  RequireAnti(pod, Term(Sel({Req("app", "In", {"web"})}), "kubernetes.io/hostname"));
  PreferAffinity(pod, 10, Term(Sel({Req("app", "In", {"web"})}), "zone"));
  return pod;
}

TEST(InterPodAffinityTest, ReplicasSpreadByHostnameAntiAffinity) {
  // The quadratic upstream case: every replica repels the others per hostname. After k
  // binds exactly k nodes are excluded, and the engine agrees with the reference.
  ObjectSet c = HostsInThreeZones(60);
  EngineRunner engine(c, Args(1));
  ReferenceRunner reference(c, Args(1));
  for (int k = 0; k < 40; ++k) {
    Pod pod = WebReplica("web-" + std::to_string(k));
    Outcome e = engine.Run(pod, true);
    ASSERT_EQ(DiffOutcomes(e, reference.Run(pod, true)), "") << k;
    ASSERT_EQ(static_cast<int>(e.scored.size()), 60 - k);
    int32_t node = e.scored[0];
    engine.Bind(pod, node);
    reference.Bind(pod, node);
  }
}

// Bound pods' terms are compiled once for a run of pods with the same affinity: a pod
// whose selector, namespace, weight or matchLabelKeys labels differ from the one before
// is compiled afresh, not counted with the other's terms.
TEST(InterPodAffinityTest, BoundPodsReuseCompiledTermsOnlyWhenTheSame) {
  ObjectSet c = HostsInThreeZones(8);
  EngineRunner engine(c, Args(1));
  ReferenceRunner reference(c, Args(1));
  auto bind = [&](const Pod& p, int32_t node) {
    engine.Bind(p, node);
    reference.Bind(p, node);
  };
  auto anti = [](const std::string& name, const std::string& ns, const Labels& labels, const std::string& app) {
    Pod p = LabeledPod(name, ns, labels);
    RequireAnti(p, Term(Sel({Req("app", "In", {app})}), "kubernetes.io/hostname"));
    return p;
  };
  bind(anti("a", "default", {}, "web"), 0);
  bind(anti("b", "default", {}, "db"), 1);      // another value
  bind(anti("c", "other", {}, "db"), 2);        // another namespace: selects pods there
  bind(anti("c2", "other", {}, "db"), 3);       // the same as c
  Pod d = LabeledPod("d", "default", {{"rev", "1"}});
  PodAffinityTerm by_rev = Term(Sel({Req("app", "Exists")}), "kubernetes.io/hostname");
  by_rev.match_label_keys = {"rev"};
  RequireAnti(d, by_rev);
  bind(d, 4);
  Pod e = d;
  e.meta.name = "e";
  e.meta.labels = {{"rev", "2"}};  // the same terms, other labels: rev In [2]
  bind(e, 5);
  Pod f = LabeledPod("f", "default", {});
  PreferAnti(f, 5, Term(Sel({Req("app", "In", {"web"})}), "kubernetes.io/hostname"));
  bind(f, 6);
  Pod g = LabeledPod("g", "default", {});
  PreferAnti(g, 7, Term(Sel({Req("app", "In", {"web"})}), "kubernetes.io/hostname"));  // another weight
  bind(g, 7);

  Pod web = LabeledPod("p", "default", {{"app", "web"}, {"rev", "1"}});
  Outcome o = engine.Run(web);
  ASSERT_EQ(DiffOutcomes(o, reference.Run(web)), "");
  std::vector<bool> fits;
  for (const PluginStatus& s : o.filter) fits.push_back(s.IsSuccess());
  EXPECT_EQ(fits, (std::vector<bool>{false, true, true, true, false, true, true, true}));
  EXPECT_EQ(o.filter[0].Message(), kExistingReason);
  EXPECT_EQ(o.raw, (std::vector<int64_t>{0, 0, 0, 0, 0, 0, -5, -7}));  // f's weight, then g's

  Pod db = LabeledPod("q", "default", {{"app", "db"}, {"rev", "2"}});
  o = engine.Run(db);
  ASSERT_EQ(DiffOutcomes(o, reference.Run(db)), "");
  fits.clear();
  for (const PluginStatus& s : o.filter) fits.push_back(s.IsSuccess());
  EXPECT_EQ(fits, (std::vector<bool>{true, false, true, true, true, false, true, true}));

  Pod other = LabeledPod("r", "other", {{"app", "db"}});
  o = engine.Run(other);
  ASSERT_EQ(DiffOutcomes(o, reference.Run(other)), "");
  fits.clear();
  for (const PluginStatus& s : o.filter) fits.push_back(s.IsSuccess());
  EXPECT_EQ(fits, (std::vector<bool>{true, true, false, false, true, true, true, true}));
}

// ---- replicas: incremental PreFilter/PreScore ----------------------------------------

// Turns on the engine's self-check (every replay also rebuilt in full and compared) for
// one test, and counts the calls by path from its start.
class IncrementalCheck {
 public:
  IncrementalCheck() : d_(plugins::IpaIncrementalDebugState()), start_(Now()) { d_.self_check = true; }
  ~IncrementalCheck() { d_.self_check = false; }
  struct Counts {
    int64_t prefilter_incremental, prefilter_rebuilt, prescore_incremental, prescore_rebuilt, mismatches;
  };
  Counts Since() const {
    Counts n = Now();
    return {n.prefilter_incremental - start_.prefilter_incremental, n.prefilter_rebuilt - start_.prefilter_rebuilt,
            n.prescore_incremental - start_.prescore_incremental, n.prescore_rebuilt - start_.prescore_rebuilt,
            n.mismatches - start_.mismatches};
  }

 private:
  Counts Now() const {
    return {d_.prefilter_incremental, d_.prefilter_rebuilt, d_.prescore_incremental, d_.prescore_rebuilt,
            d_.mismatches};
  }
  plugins::IpaIncrementalDebug& d_;
  Counts start_;
};

TEST(InterPodAffinityTest, ReplicasReplayBindsInsteadOfRebuilding) {
  IncrementalCheck check;
  ObjectSet c = HostsInThreeZones(30);
  EngineRunner engine(c, Args(1));
  ReferenceRunner reference(c, Args(1));
  const Pod web = WebReplica("web");
  auto run = [&](Pod pod, const std::string& name) {
    pod.meta.name = name;
    Outcome e = engine.Run(pod, true);
    EXPECT_EQ(DiffOutcomes(e, reference.Run(pod, true)), "") << name;
    if (e.scored.empty()) return;
    engine.Bind(pod, e.scored[0]);
    reference.Bind(pod, e.scored[0]);
  };
  // Replica 0 builds the tables; replica 1 rebuilds (its E and score tables appear with
  // replica 0's bind); replicas 2-9 replay one bind each.
  for (int k = 0; k < 10; ++k) run(web, "web-" + std::to_string(k));
  IncrementalCheck::Counts n = check.Since();
  EXPECT_EQ(n.prefilter_rebuilt, 2);
  EXPECT_EQ(n.prefilter_incremental, 8);
  EXPECT_EQ(n.prescore_rebuilt, 2);
  EXPECT_EQ(n.prescore_incremental, 8);

  // Another pod in between: it rebuilds, and so does the next replica; a replica with
  // other labels does not compile the same.
  run(LabeledPod("db", "default", {{"app", "db"}}), "db");
  run(web, "web-10");
  run(web, "web-11");
  Pod relabeled = web;
  relabeled.meta.labels["tier"] = "front";
  run(relabeled, "web-12");
  n = check.Since();
  EXPECT_EQ(n.prefilter_rebuilt, 2 + 3);  // db, web-10, web-12
  EXPECT_EQ(n.prefilter_incremental, 8 + 1);
  EXPECT_EQ(n.mismatches, 0);

  // Every node taken: the replicas fail Filter everywhere, replaying still.
  for (int k = 13; k < 40; ++k) run(web, "web-" + std::to_string(k));
  EXPECT_EQ(check.Since().mismatches, 0);
  EXPECT_EQ(engine.Run(web).filter[0], PluginStatus::Make(Code::kUnschedulable, kAntiReason));
}

// A scale-up's shape: a node joins before each replica, in a zone that exists or a new one.
// The PreFilter tables kept for the replicas take the joins' new domains instead of being
// rebuilt, and every replay equals a full rebuild (the self-check) and the reference.
TEST(InterPodAffinityTest, ReplicasKeepTheirTablesAcrossNodeJoins) {
  IncrementalCheck check;
  ObjectSet c = HostsInThreeZones(12);
  EngineRunner engine(c, Args(1));
  ReferenceRunner reference(c, Args(1));
  for (int k = 0; k < 30; ++k) {
    const std::string name = "joined-" + std::to_string(k);
    const Node node = TopoNode(name, {{"kubernetes.io/hostname", name}, {"zone", "z" + std::to_string(k % 5)}});
    const int32_t i = engine.AddNode(node);
    reference.AddNode(node);
    Pod pod = WebReplica("web-" + std::to_string(k));
    Outcome e = engine.Run(pod, true);
    ASSERT_EQ(DiffOutcomes(e, reference.Run(pod, true)), "") << k;
    ASSERT_EQ(e.filter[i], PluginStatus::Success()) << k;  // the new node repels nothing
    engine.Bind(pod, i);
    reference.Bind(pod, i);
  }
  const IncrementalCheck::Counts n = check.Since();
  EXPECT_EQ(n.mismatches, 0);
  EXPECT_EQ(n.prefilter_rebuilt, 2);  // the first replica, and the second (E appears with the first's bind)
  EXPECT_EQ(n.prefilter_incremental, 28);
}

// A template whose terms often select its own labels, so its replicas see each other.
Pod ReplicaTemplate(Gen& g) {
  Pod p = g.RandomPod("tmpl", 1.0, 0.0);
  const std::string app = g.Pick(g.values);
  p.meta.labels["app"] = app;
  if (!p.affinity) return p;
  for (std::optional<PodAffinity>* a : {&p.affinity->pod_affinity, &p.affinity->pod_anti_affinity}) {
    if (!*a) continue;
    std::vector<PodAffinityTerm*> terms;
    for (PodAffinityTerm& t : (*a)->required) terms.push_back(&t);
    for (WeightedPodAffinityTerm& wt : (*a)->preferred) terms.push_back(&wt.term);
    for (PodAffinityTerm* t : terms) {
      if (g.Chance(0.6)) t->label_selector = Sel({}, {{"app", app}});
    }
  }
  return p;
}

// Runs of identical replicas interleaved with other pods and with extra binds (pods of
// other profiles), on the engine with its self-check on and on the reference, compared
// phase by phase; a fresh engine over the final cluster must agree too.
void RunReplicaRuns(uint64_t seed, int num_nodes, int zones, int num_pods, int runs, IncrementalCheck::Counts* total) {
  IncrementalCheck check;
  Differential t(seed, num_nodes, zones, num_pods);
  Gen& g = t.g;
  int calls = 0;
  for (int run = 0; run < runs; ++run) {
    const Pod tmpl = ReplicaTemplate(g);
    for (int r = g.Int(2, 12); r > 0; --r) {
      Pod pod = g.Chance(0.12) ? g.RandomPod("other", 0.85, 0.02) : tmpl;
      pod.meta.name = "p" + std::to_string(calls++);
      t.Schedule(pod, g.Chance(0.6));
      if (::testing::Test::HasFatalFailure()) return;
      for (int extra = g.Chance(0.25) ? g.Int(1, 3) : 0; extra > 0; --extra) {
        Pod p = g.Chance(0.5) ? tmpl : g.RandomPod("x", 0.5, 0.02);
        p.meta.name = "x" + std::to_string(calls++);
        t.Bind(p, g.Int(0, num_nodes - 1));
      }
    }
  }
  t.CheckFresh(5);
  if (::testing::Test::HasFatalFailure()) return;
  IncrementalCheck::Counts n = check.Since();
  EXPECT_EQ(n.mismatches, 0) << "seed " << seed;
  total->prefilter_incremental += n.prefilter_incremental;
  total->prefilter_rebuilt += n.prefilter_rebuilt;
  total->prescore_incremental += n.prescore_incremental;
  total->prescore_rebuilt += n.prescore_rebuilt;
}

TEST(InterPodAffinityTest, ReplicaRunsMatchReferenceAndFullRebuild) {
  IncrementalCheck::Counts total{};
  for (uint64_t seed = 1; seed <= 10; ++seed) {
    Gen g(seed * 104729);
    RunReplicaRuns(seed, g.Int(50, 300), g.Int(3, 10), g.Int(0, 300), 8, &total);
    if (HasFatalFailure()) return;
  }
  RunReplicaRuns(501, 2000, 10, 1500, 6, &total);
  if (HasFatalFailure()) return;
  RunReplicaRuns(502, 1000, 3, 200, 6, &total);
  // Most replicas replay; the rest (first of a run, layout changes) rebuild.
  EXPECT_GT(total.prefilter_incremental, total.prefilter_rebuilt) << total.prefilter_rebuilt;
  EXPECT_GT(total.prescore_incremental, 100) << total.prescore_rebuilt;
}

TEST(InterPodAffinityTest, CudaMatchesOmpAcrossReplicaRuns) {
  if (!engine::CudaAvailable()) GTEST_SKIP() << "no CUDA device";
  IncrementalCheck check;
  Gen g(777);
  ObjectSet cluster = g.Cluster(1500, 7, 1000);
  PluginArgs args = Args(2);
  EngineRunner omp(cluster, args, {}, engine::Backend::kOmp);
  EngineRunner cuda(cluster, args, {}, engine::Backend::kCuda);
  int k = 0;
  for (int run = 0; run < 8; ++run) {
    const Pod tmpl = ReplicaTemplate(g);
    for (int r = 0; r < 10; ++r, ++k) {
      Pod pod = tmpl;
      pod.meta.name = "p" + std::to_string(k);
      Outcome o = omp.Run(pod, k % 2 == 0);
      ASSERT_EQ(DiffOutcomes(cuda.Run(pod, k % 2 == 0), o), "") << k;
      // Several binds between replicas now and then: more than one element changes.
      for (int b = r % 4 == 0 ? 20 : 1; b > 0; --b) {
        int32_t node = g.Int(0, 1499);
        omp.Bind(pod, node);
        cuda.Bind(pod, node);
      }
    }
  }
  EXPECT_EQ(check.Since().mismatches, 0);
  EXPECT_GT(check.Since().prefilter_incremental, 0);
}

}  // namespace
}  // namespace kplace
