#include <random>

#include <gtest/gtest.h>

#include "kplace/plugins/node_affinity_common.h"
#include "tests/testing/differential.h"
#include "tests/testing/single_plugin_calls.h"

namespace kplace {
namespace {

using testing::MakeNode;
using testing::MakePod;

const std::vector<std::string> kNa = {"NodeAffinity"};
constexpr char kReasonPod[] = "node(s) didn't match Pod's node affinity/selector";
constexpr char kReasonEnforced[] = "node(s) didn't match scheduler-enforced node affinity";

NodeSelectorRequirement Req(const std::string& key, const std::string& op, std::vector<std::string> values = {}) {
  return NodeSelectorRequirement{key, op, std::move(values)};
}

NodeSelectorTerm Term(std::vector<NodeSelectorRequirement> exprs, std::vector<NodeSelectorRequirement> fields = {}) {
  return NodeSelectorTerm{std::move(exprs), std::move(fields)};
}

Pod WithRequired(Pod pod, std::vector<NodeSelectorTerm> terms) {
  if (!pod.affinity) pod.affinity.emplace();
  if (!pod.affinity->node_affinity) pod.affinity->node_affinity.emplace();
  pod.affinity->node_affinity->required = NodeSelector{std::move(terms)};
  return pod;
}

Pod WithPreferred(Pod pod, std::vector<PreferredSchedulingTerm> terms) {
  if (!pod.affinity) pod.affinity.emplace();
  if (!pod.affinity->node_affinity) pod.affinity->node_affinity.emplace();
  pod.affinity->node_affinity->preferred = std::move(terms);
  pod.affinity->node_affinity->preferred_set = true;
  return pod;
}

// Filter status of the single node, on both sides; they must agree.
PluginStatus FilterOne(const Node& node, const Pod& pod, const PluginArgs& args = {}) {
  ObjectSet cluster;
  cluster.nodes.push_back(node);
  auto e = testing::RunEngine(engine::Backend::kOmp, cluster, pod, kNa, args);
  auto r = testing::RunReference(cluster, pod, kNa, args);
  EXPECT_EQ(testing::Diff(e, r), "");
  return e.filter[0][0];
}

bool Fits(const Node& node, const Pod& pod, const PluginArgs& args = {}) { return FilterOne(node, pod, args).IsSuccess(); }

TEST(NodeAffinityTest, NodeSelectorIsAnAndOfEqualities) {
  Node node = MakeNode("n", {}, {{"foo", "bar"}, {"baz", "blah"}});
  Pod pod = MakePod("p", {});
  pod.node_selector = {{"foo", "bar"}};
  EXPECT_TRUE(Fits(node, pod));
  pod.node_selector = {{"foo", "bar"}, {"zone", "a"}};
  PluginStatus s = FilterOne(node, pod);
  EXPECT_EQ(s.code, Code::kUnschedulableAndUnresolvable);
  EXPECT_EQ(s.reasons, std::vector<std::string>{kReasonPod});
  pod.node_selector = {{"foo", "barr"}};
  EXPECT_FALSE(Fits(node, pod));
}

TEST(NodeAffinityTest, Operators) {
  Node node = MakeNode("n", {}, {{"kernel", "0206"}, {"gpu", "k1"}, {"neg", "-5"}, {"word", "abc"}});
  Pod p = MakePod("p", {});
  auto fits = [&](NodeSelectorRequirement r) { return Fits(node, WithRequired(p, {Term({r})})); };
  EXPECT_TRUE(fits(Req("gpu", "In", {"k0", "k1"})));
  EXPECT_FALSE(fits(Req("gpu", "In", {"k0"})));
  EXPECT_FALSE(fits(Req("absent", "In", {"k1"})));
  EXPECT_TRUE(fits(Req("gpu", "NotIn", {"k0"})));
  EXPECT_FALSE(fits(Req("gpu", "NotIn", {"k1"})));
  EXPECT_TRUE(fits(Req("absent", "NotIn", {"k1"})));
  EXPECT_TRUE(fits(Req("gpu", "Exists")));
  EXPECT_FALSE(fits(Req("absent", "Exists")));
  EXPECT_TRUE(fits(Req("absent", "DoesNotExist")));
  EXPECT_FALSE(fits(Req("gpu", "DoesNotExist")));
  // ParseInt accepts leading zeros on both sides.
  EXPECT_TRUE(fits(Req("kernel", "Gt", {"0204"})));
  EXPECT_FALSE(fits(Req("kernel", "Gt", {"206"})));
  EXPECT_TRUE(fits(Req("kernel", "Lt", {"207"})));
  EXPECT_FALSE(fits(Req("kernel", "Lt", {"206"})));
  EXPECT_TRUE(fits(Req("neg", "Lt", {"0"})));
  EXPECT_FALSE(fits(Req("word", "Gt", {"0"})));   // node value is not an integer
  EXPECT_FALSE(fits(Req("absent", "Lt", {"9"})));
  // Parse errors make the term match nothing, not even where it would.
  EXPECT_FALSE(fits(Req("gpu", "Exists", {"k1"})));
  EXPECT_FALSE(fits(Req("gpu", "In", {})));
  EXPECT_FALSE(fits(Req("kernel", "Gt", {"1", "2"})));
  EXPECT_FALSE(fits(Req("kernel", "Gt", {"x"})));
  EXPECT_FALSE(fits(Req("neg", "Lt", {"-1"})));  // "-1" is not a valid label value
  EXPECT_FALSE(fits(Req("gpu", "NotIn", {"bad value!"})));
  EXPECT_FALSE(fits(Req("bad key", "DoesNotExist")));
  EXPECT_FALSE(fits(Req("gpu", "Equals", {"k1"})));
}

TEST(NodeAffinityTest, TermsOrExpressionsAnd) {
  Node node = MakeNode("n1", {}, {{"foo", "bar"}});
  Pod p = MakePod("p", {});
  // A bad term only kills itself.
  EXPECT_TRUE(Fits(node, WithRequired(p, {Term({Req("foo", "In", {})}), Term({Req("foo", "In", {"bar"})})})));
  EXPECT_FALSE(Fits(node, WithRequired(p, {Term({Req("foo", "Exists"), Req("foo", "In", {"x"})})})));
  // No terms, or only empty ones, match nothing.
  EXPECT_FALSE(Fits(node, WithRequired(p, {})));
  EXPECT_FALSE(Fits(node, WithRequired(p, {Term({})})));
  // nodeSelector and required affinity must both hold.
  Pod both = WithRequired(p, {Term({Req("foo", "Exists")})});
  both.node_selector = {{"foo", "other"}};
  EXPECT_FALSE(Fits(node, both));
}

TEST(NodeAffinityTest, MatchFields) {
  Pod p = MakePod("p", {});
  Node n1 = MakeNode("n1", {}, {{"foo", "bar"}});
  EXPECT_TRUE(Fits(n1, WithRequired(p, {Term({}, {Req("metadata.name", "In", {"n1"})})})));
  EXPECT_FALSE(Fits(n1, WithRequired(p, {Term({}, {Req("metadata.name", "In", {"n2"})})})));
  EXPECT_TRUE(Fits(n1, WithRequired(p, {Term({}, {Req("metadata.name", "NotIn", {"n2"})})})));
  EXPECT_FALSE(Fits(n1, WithRequired(p, {Term({}, {Req("metadata.name", "NotIn", {"n1"})})})));
  // Multi-value In and other operators do not parse.
  EXPECT_FALSE(Fits(n1, WithRequired(p, {Term({}, {Req("metadata.name", "In", {"n1", "n2"})})})));
  EXPECT_FALSE(Fits(n1, WithRequired(p, {Term({}, {Req("metadata.name", "Exists")})})));
  // Other keys read as "".
  EXPECT_TRUE(Fits(n1, WithRequired(p, {Term({}, {Req("metadata.uid", "In", {""})})})));
  EXPECT_FALSE(Fits(n1, WithRequired(p, {Term({}, {Req("metadata.uid", "NotIn", {""})})})));
  // Expressions and fields of one term are ANDed.
  EXPECT_FALSE(Fits(n1, WithRequired(p, {Term({Req("foo", "In", {"x"})}, {Req("metadata.name", "In", {"n1"})})})));
  // A nameless node has no fields: matchFields are not checked.
  Node nameless = MakeNode("", {}, {{"foo", "bar"}});
  EXPECT_TRUE(Fits(nameless, WithRequired(p, {Term({}, {Req("metadata.name", "In", {"n9"})})})));
}

TEST(NodeAffinityTest, AddedAffinityIsCheckedFirst) {
  PluginArgs args;
  args.node_affinity.added_affinity.emplace();
  args.node_affinity.added_affinity->required = NodeSelector{{Term({Req("zone", "In", {"a"})})}};
  Node node = MakeNode("n", {}, {{"zone", "b"}});
  Pod p = WithRequired(MakePod("p", {}), {Term({Req("zone", "In", {"c"})})});
  PluginStatus s = FilterOne(node, p, args);
  EXPECT_EQ(s.code, Code::kUnschedulableAndUnresolvable);
  EXPECT_EQ(s.reasons, std::vector<std::string>{kReasonEnforced});
  Node good = MakeNode("n", {}, {{"zone", "a"}});
  EXPECT_EQ(FilterOne(good, p, args).reasons, std::vector<std::string>{kReasonPod});
  EXPECT_TRUE(Fits(good, MakePod("q", {}), args));
  // Strict parsing: a bad added term rejects the plugin on both sides.
  args.node_affinity.added_affinity->required = NodeSelector{{Term({Req("zone", "In", {})})}};
  EXPECT_THROW(testing::MakeEnginePlugin("NodeAffinity", args, {}), std::runtime_error);
  EXPECT_THROW(testing::MakeReferencePlugin("NodeAffinity", args, {}), std::runtime_error);
}

TEST(NodeAffinityTest, PreFilterSkipAndRestriction) {
  ObjectSet cluster;
  for (const char* n : {"n1", "n2", "n3"}) cluster.nodes.push_back(MakeNode(n, {}));
  auto both = [&](const Pod& pod, const PluginArgs& args = {}) {
    testing::PreFilterOutcome e = testing::EnginePreFilter("NodeAffinity", cluster, pod, args);
    testing::PreFilterOutcome r = testing::ReferencePreFilter("NodeAffinity", cluster, pod, args);
    EXPECT_EQ(e.status, r.status);
    EXPECT_EQ(e.nodes, r.nodes);
    return e;
  };
  Pod p = MakePod("p", {});
  EXPECT_TRUE(both(p).status.IsSkip());
  Pod empty_selector = p;
  empty_selector.node_selector_set = true;  // nodeSelector: {} is not nil
  EXPECT_TRUE(both(empty_selector).status.IsSuccess());
  PluginArgs added;
  added.node_affinity.added_affinity.emplace();
  added.node_affinity.added_affinity->required = NodeSelector{};
  EXPECT_TRUE(both(p, added).status.IsSuccess());

  auto name_in = [](std::vector<std::string> v) { return Req("metadata.name", "In", std::move(v)); };
  auto r = both(WithRequired(p, {Term({}, {name_in({"n1", "n3"}), name_in({"n3", "n2"})}), Term({}, {name_in({"n2"})})}));
  EXPECT_TRUE(r.status.IsSuccess());
  EXPECT_EQ(r.nodes, (std::vector<std::string>{"n2", "n3"}));
  // A term without a name constraint allows any node.
  r = both(WithRequired(p, {Term({}, {name_in({"n1"})}), Term({Req("foo", "Exists")})}));
  EXPECT_FALSE(r.nodes.has_value());
  // NotIn and other keys are ignored here.
  r = both(WithRequired(p, {Term({}, {Req("metadata.name", "NotIn", {"n1"})})}));
  EXPECT_FALSE(r.nodes.has_value());
  r = both(WithRequired(p, {Term({}, {name_in({"n1"}), name_in({"n2"})})}));
  EXPECT_EQ(r.status, PluginStatus::Make(Code::kUnschedulableAndUnresolvable, "pod affinity terms conflict"));
}

TEST(NodeAffinityTest, PreScoreSkipAndErrors) {
  ObjectSet cluster;
  cluster.nodes.push_back(MakeNode("n1", {}, {{"foo", "bar"}}));
  auto both = [&](const Pod& pod, const PluginArgs& args = {}) {
    PluginStatus e = testing::EnginePreScore("NodeAffinity", cluster, pod, args);
    EXPECT_EQ(e, testing::ReferencePreScore("NodeAffinity", cluster, pod, args));
    return e;
  };
  Pod p = MakePod("p", {});
  EXPECT_TRUE(both(p).IsSkip());
  EXPECT_TRUE(both(WithPreferred(p, {})).IsSuccess());  // [] is not nil
  PluginArgs added;
  added.node_affinity.added_affinity.emplace();
  added.node_affinity.added_affinity->preferred = {{3, Term({Req("foo", "Exists")})}};
  EXPECT_TRUE(both(p, added).IsSuccess());

  // Zero-weight and empty terms are never parsed.
  EXPECT_TRUE(both(WithPreferred(p, {{0, Term({Req("bad key", "In", {"x"})})}, {5, Term({})}})).IsSuccess());
  PluginStatus s = both(WithPreferred(p, {{2, Term({Req("invalid key", "In", {"bar"})})}}));
  EXPECT_EQ(s.code, Code::kError);
  EXPECT_EQ(s.Message(),
            "[0].matchExpressions[0].key: Invalid value: \"invalid key\": name part must consist of alphanumeric "
            "characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyName',  or "
            "'my.name',  or '123-abc', regex used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')");
  s = both(WithPreferred(p, {{2, Term({Req("foo", "Gt", {"x"})}, {Req("metadata.name", "In", {"a", "b"})})},
                             {1, Term({Req("foo", "Bad", {})})}}));
  EXPECT_EQ(s.Message(),
            "[[0].matchExpressions[0].values[0]: Invalid value: \"x\": for 'Gt', 'Lt' operators, the value must be "
            "an integer, [0].matchFields[0].values: Invalid value: []string{\"a\", \"b\"}: must have one element, "
            "[1].matchExpressions[0].operator: Unsupported value: \"Bad\"]");
}

TEST(NodeAffinityTest, RequirementErrorTexts) {
  using plugins::node_affinity::LabelRequirementErrors;
  EXPECT_EQ(LabelRequirementErrors(Req("a/b/c", "Exists"), "p"),
            std::vector<std::string>{
                "p.key: Invalid value: \"a/b/c\": a qualified name must consist of alphanumeric characters, '-', '_' "
                "or '.', and must start and end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or "
                "'123-abc', regex used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]') with an "
                "optional DNS subdomain prefix and '/' (e.g. 'example.com/MyName')"});
  EXPECT_EQ(LabelRequirementErrors(Req("k", "In", {"-x"}), "p"),
            std::vector<std::string>{
                "p.values[0][k]: Invalid value: \"-x\": a valid label must be an empty string or consist of "
                "alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character "
                "(e.g. 'MyValue',  or 'my_value',  or '12345', regex used for validation is "
                "'(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?')"});
  EXPECT_EQ(LabelRequirementErrors(Req("Example.com/k", "DoesNotExist", {"v"}), "p").size(), 2u);
  EXPECT_TRUE(LabelRequirementErrors(Req("example.com/k", "Gt", {"007"}), "p").empty());
  EXPECT_EQ(LabelRequirementErrors(Req("k", "Gt", {"+7"}), "p").size(), 1u);  // parses, but no label value
  int64_t v = 0;
  EXPECT_TRUE(plugins::node_affinity::ParseGoInt64("-9223372036854775808", &v));
  EXPECT_EQ(v, INT64_MIN);
  EXPECT_FALSE(plugins::node_affinity::ParseGoInt64("9223372036854775808", &v));
  EXPECT_FALSE(plugins::node_affinity::ParseGoInt64("1_000", &v));
  EXPECT_FALSE(plugins::node_affinity::ParseGoInt64("+", &v));
}

TEST(NodeAffinityTest, PreferredScores) {
  // small-plugins.md §4: weights {2, 4, 5} with matches {2, 11, 4} normalize to {18, 100, 36}.
  ObjectSet cluster;
  cluster.nodes.push_back(MakeNode("node1", {}, {{"foo", "bar"}}));
  cluster.nodes.push_back(MakeNode("node5", {}, {{"foo", "bar"}, {"key", "value"}, {"az", "az1"}}));
  cluster.nodes.push_back(MakeNode("node2", {}, {{"key", "value"}}));
  Pod pod = WithPreferred(MakePod("p", {}), {{2, Term({Req("foo", "In", {"bar"})})},
                                              {4, Term({Req("key", "In", {"value"})})},
                                              {5, Term({Req("foo", "In", {"bar"}), Req("key", "In", {"value"}),
                                                        Req("az", "In", {"az1"})})}});
  auto e = testing::RunEngine(engine::Backend::kOmp, cluster, pod, kNa);
  EXPECT_EQ(testing::Diff(e, testing::RunReference(cluster, pod, kNa)), "");
  EXPECT_EQ(e.raw[0], (std::vector<int64_t>{2, 11, 4}));
  EXPECT_EQ(e.normalized[0], (std::vector<int64_t>{18, 100, 36}));
  // Added weight 3 plus pod weight 2: raw {2, 3, 5} -> {40, 60, 100}.
  PluginArgs args;
  args.node_affinity.added_affinity.emplace();
  args.node_affinity.added_affinity->preferred = {{3, Term({Req("key", "Exists")})}};
  Pod two = WithPreferred(MakePod("p", {}), {{2, Term({Req("foo", "Exists")})}});
  auto a = testing::RunEngine(engine::Backend::kOmp, cluster, two, kNa, args);
  EXPECT_EQ(testing::Diff(a, testing::RunReference(cluster, two, kNa, args)), "");
  EXPECT_EQ(a.raw[0], (std::vector<int64_t>{2, 5, 3}));
  EXPECT_EQ(a.normalized[0], (std::vector<int64_t>{40, 100, 60}));
}

// Random labels and selectors: engine vs reference on every verdict, restriction and score.
TEST(NodeAffinityTest, EngineMatchesReferenceOnRandomPairs) {
  std::mt19937_64 rng(20261130);
  auto pick = [&](const std::vector<std::string>& v) { return v[rng() % v.size()]; };
  const std::vector<std::string> keys = {"zone", "disk", "gpu", "rank", "example.com/tier", "never"};
  const std::vector<std::string> values = {"a", "b", "c", "1", "07", "12", "-3", "x.y", "ghost"};
  const std::vector<std::string> ops = {"In", "NotIn", "Exists", "DoesNotExist", "Gt", "Lt"};
  ObjectSet cluster;
  for (int i = 0; i < 60; ++i) {
    Labels labels;
    for (const std::string& k : keys) {
      if (k != "never" && rng() % 3) labels[k] = pick(values);
    }
    cluster.nodes.push_back(MakeNode(i == 7 ? "" : "n" + std::to_string(i), {}, labels));
  }
  auto random_req = [&] {
    std::string op = pick(ops);
    std::vector<std::string> vals;
    if (op == "In" || op == "NotIn") {
      for (int k = 1 + rng() % 3; k > 0; --k) vals.push_back(pick(values));
    } else if (op == "Gt" || op == "Lt") {
      vals.push_back(pick({"0", "5", "10", "07", "x"}));
    } else if (rng() % 10 == 0) {
      vals.push_back("a");  // a parse error
    }
    return Req(pick(keys), op, vals);
  };
  auto random_term = [&] {
    NodeSelectorTerm t;
    for (int k = rng() % 3; k > 0; --k) t.match_expressions.push_back(random_req());
    if (rng() % 3 == 0) {
      t.match_fields.push_back(Req("metadata.name", rng() % 4 ? "In" : "NotIn", {"n" + std::to_string(rng() % 70)}));
    }
    return t;
  };
  for (int j = 0; j < 300; ++j) {
    Pod pod = MakePod("p" + std::to_string(j), {});
    if (rng() % 3 == 0) pod.node_selector[pick(keys)] = pick(values);
    pod.node_selector_set = rng() % 2;
    if (rng() % 2) {
      std::vector<NodeSelectorTerm> terms;
      for (int k = rng() % 3; k > 0; --k) terms.push_back(random_term());
      pod = WithRequired(pod, terms);
    }
    if (rng() % 2) {
      std::vector<PreferredSchedulingTerm> pref;
      for (int k = rng() % 4; k > 0; --k) {
        NodeSelectorTerm t = random_term();
        // Keep preferred terms parsable: a parse error fails PreScore (tested above).
        bool ok = plugins::node_affinity::NodeSelectorTermErrors(t, "").empty();
        if (ok) pref.push_back({static_cast<int32_t>(rng() % 4 * 10), t});
      }
      pod = WithPreferred(pod, pref);
    }
    PluginArgs args;
    if (rng() % 4 == 0) {
      args.node_affinity.added_affinity.emplace();
      NodeSelectorTerm t = random_term();
      if (plugins::node_affinity::NodeSelectorTermErrors(t, "").empty()) {
        args.node_affinity.added_affinity->required = NodeSelector{{t}};
      }
      NodeSelectorTerm u = random_term();
      if (plugins::node_affinity::NodeSelectorTermErrors(u, "").empty()) {
        args.node_affinity.added_affinity->preferred = {{7, u}};
      }
    }
    auto e = testing::RunEngine(engine::Backend::kOmp, cluster, pod, kNa, args);
    auto r = testing::RunReference(cluster, pod, kNa, args);
    ASSERT_EQ(testing::Diff(e, r), "") << "pod " << j;
    auto pe = testing::EnginePreFilter("NodeAffinity", cluster, pod, args);
    auto pr = testing::ReferencePreFilter("NodeAffinity", cluster, pod, args);
    if (pr.nodes) {
      // The engine restricts to snapshot indices, so names of absent nodes drop out.
      std::vector<std::string> present;
      for (const std::string& n : *pr.nodes) {
        for (const Node& node : cluster.nodes) {
          if (node.meta.name == n) present.push_back(n);
        }
      }
      pr.nodes = present;
    }
    ASSERT_EQ(pe.status, pr.status) << "pod " << j;
    ASSERT_EQ(pe.nodes, pr.nodes) << "pod " << j;
    ASSERT_EQ(testing::EnginePreScore("NodeAffinity", cluster, pod, args),
              testing::ReferencePreScore("NodeAffinity", cluster, pod, args))
        << "pod " << j;
  }
}

}  // namespace
}  // namespace kplace
