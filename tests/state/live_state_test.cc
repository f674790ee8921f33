// Live state: events and transactions on a running scheduler, against the reference and
// against a scheduler built fresh from the objects the live one holds.
#include <cstdlib>
#include <map>
#include <memory>
#include <optional>
#include <random>
#include <set>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "kplace/common/strings.h"
#include "kplace/config/config.h"
#include "kplace/cycle/scheduler.h"
#include "kplace/model/decode.h"
#include "kplace/state/event.h"
#include "tests/testing/differential.h"

namespace kplace::state {
namespace {

using cycle::Options;
using cycle::Placement;
using cycle::Scheduler;
using testing::MakeNode;
using testing::MakePod;

bool Soak() {
  const char* v = std::getenv("KPLACE_SOAK");
  return v && std::string(v) == "1";
}

std::string Describe(const Placement& p) {
  std::string out = StrCat(p.pod, " -> ", p.node, " [", CodeName(p.code), "] ", p.message, " feasible=", p.feasible,
                           " score=", p.score, " rejected-by=");
  for (const std::string& r : p.unschedulable_plugins) out += r + ",";
  if (p.preemption) {
    out += " nominated=" + p.preemption->nominated_node + " victims=";
    for (const std::string& v : p.preemption->victims) out += v + ",";
  }
  return out;
}

// The three sides every differential test here runs: the reference, the engine per pod
// and the engine batched.
constexpr const char* kSide[] = {"reference", "engine per pod", "engine batched"};
Options SideOptions(int side) {
  Options o;
  o.reference = side == 0;
  o.batch = side == 2 ? cycle::kDefaultBatch : 1;
  return o;
}

// What the event stream and the pods are drawn from: zones, apps, a few shapes of pod.
class Generator {
 public:
  explicit Generator(uint64_t seed) : rng_(seed) {}
  int Pick(int n) { return static_cast<int>(rng_() % static_cast<uint64_t>(n)); }
  // `nodes` new nodes and `pods` pods bound among them.
  ObjectSet Cluster(int nodes, int pods) {
    ObjectSet c;
    for (int i = 0; i < nodes; ++i) c.nodes.push_back(NewNode());
    for (int k = 0; k < pods; ++k) c.pods.push_back(NewPod(c.nodes[Pick(nodes)].meta.name));
    return c;
  }

  Node NewNode() {
    const std::string name = StrCat("n", next_node_++);
    Node n = MakeNode(name, {{"cpu", std::to_string(2 + Pick(6))}, {"memory", StrCat(4 + Pick(8), "Gi")}, {"pods", "20"}},
                      {{"kubernetes.io/hostname", name}, {"topology.kubernetes.io/zone", StrCat("z", Pick(3))}});
    if (Pick(8) == 0) n.taints.push_back(Taint{"dedicated", "gpu", "NoSchedule"});
    if (Pick(3) == 0) n.images = {ContainerImage{{StrCat("img", Pick(3), ":v1")}, 300000000}};
    return n;
  }

  // A pod of one of several signatures: plain, spread, anti-affinity, preferred affinity,
  // host port, node selector, toleration, required affinity.
  Pod NewPod(const std::string& node, int shape = -1) {
    static const char* kApps[] = {"web", "db", "cache"};
    static const char* kCpu[] = {"100m", "250m", "500m", "1"};
    Pod p = MakePod(StrCat("p", next_pod_++), {{"cpu", kCpu[Pick(4)]}, {"memory", StrCat(128 << Pick(4), "Mi")}}, node);
    p.meta.uid = p.meta.name;
    p.containers[0].image = StrCat("img", Pick(3), ":v1");  // ImageLocality scores nodes that have it
    const std::string app = kApps[Pick(3)];
    p.meta.labels = {{"app", app}};
    if (shape < 0) shape = Pick(12);
    PodAffinityTerm term;
    term.label_selector = LabelSelector{{{"app", app}}, {}};
    switch (shape) {
      case 1: {
        static const char* kKeys[] = {"topology.kubernetes.io/zone", "kubernetes.io/hostname", "disk"};
        AddSpread(&p, kKeys[Pick(3)], 1 + Pick(2), term.label_selector);
        break;
      }
      case 2:
        AddAnti(&p, term, "kubernetes.io/hostname");
        break;
      case 3:
        term.topology_key = Pick(2) ? "topology.kubernetes.io/zone" : "disk";
        p.affinity.emplace().pod_affinity.emplace().preferred.push_back(WeightedPodAffinityTerm{1 + Pick(100), term});
        break;
      case 4: {
        ContainerPort port;
        port.container_port = 8080;
        port.host_port = 8000 + Pick(3);
        port.protocol = "TCP";
        p.containers[0].ports.push_back(port);
        break;
      }
      case 5:
        if (Pick(2)) {
          p.node_selector = {{"topology.kubernetes.io/zone", StrCat("z", Pick(3))}};
        } else {
          p.node_selector = {{"disk", Pick(2) ? "ssd" : "hdd"}};  // a label that comes and goes
        }
        break;
      case 6: {
        Toleration t;
        t.key = "dedicated";
        t.op = "Equal";
        t.value = "gpu";
        t.effect = "NoSchedule";
        p.tolerations.push_back(t);
        break;
      }
      case 7:  // node labels that come and go, through a selector, a spread key, an affinity key
        p.node_selector = {{"disk", Pick(2) ? "ssd" : "hdd"}};
        break;
      case 8:
        AddSpread(&p, "disk", 1, term.label_selector);
        break;
      case 9:  // keys that move with a node: existing anti-affinity cells change domain
        AddAnti(&p, term, Pick(2) ? "disk" : "topology.kubernetes.io/zone");
        break;
      case 10:  // with its own app in one zone (the first of its group goes anywhere)
        term.topology_key = "topology.kubernetes.io/zone";
        p.affinity.emplace().pod_affinity.emplace().required.push_back(term);
        break;
      case 11:  // terms over the namespaces labelled tier=gold, which come and go
        term.namespace_selector = LabelSelector{{{"tier", "gold"}}, {}};
        if (Pick(2)) {
          AddAnti(&p, term, "kubernetes.io/hostname");
        } else {
          term.topology_key = "topology.kubernetes.io/zone";
          p.affinity.emplace().pod_affinity.emplace().preferred.push_back(WeightedPodAffinityTerm{1 + Pick(50), term});
        }
        break;
      default:
        break;
    }
    return p;
  }

 private:
  void AddSpread(Pod* p, const std::string& key, int32_t skew, const std::optional<LabelSelector>& selector) {
    TopologySpreadConstraint c;
    c.max_skew = skew;
    c.topology_key = key;
    c.when_unsatisfiable = Pick(2) ? "DoNotSchedule" : "ScheduleAnyway";
    c.label_selector = selector;
    p->topology_spread_constraints.push_back(c);
  }
  static void AddAnti(Pod* p, PodAffinityTerm term, const std::string& key) {
    term.topology_key = key;
    p->affinity.emplace().pod_anti_affinity.emplace().required.push_back(term);
  }

  std::mt19937_64 rng_;
  int next_node_ = 0;
  int next_pod_ = 0;
};

struct Stream {
  ObjectSet cluster;
  std::vector<Node> nodes;  // alive, by the generator's view
};

// Drives one random stream of events and schedules on the reference, the engine per pod
// and the engine batched; every `sample` steps each is compared with a scheduler built
// fresh from its Objects(), on probe pods scheduled inside a transaction that is reverted.
void RunStream(uint64_t seed, int32_t nodes, int32_t steps, int32_t sample) {
  Generator g(seed);
  ObjectSet cluster;
  for (int32_t i = 0; i < nodes; ++i) cluster.nodes.push_back(g.NewNode());
  for (int32_t k = 0; k < nodes * 2; ++k) cluster.pods.push_back(g.NewPod(cluster.nodes[g.Pick(nodes)].meta.name));
  cluster.namespaces.push_back(Namespace{ObjectMeta{}});
  cluster.namespaces[0].meta.name = "default";
  const SchedulerConfig config = DefaultSchedulerConfig();
  std::vector<std::unique_ptr<Scheduler>> live;
  for (int side = 0; side < 3; ++side) {
    Options o = SideOptions(side);
    auto s = Scheduler::Create(cluster, config, o);
    ASSERT_TRUE(s.ok()) << s.status();
    live.push_back(std::move(*s));
  }
  std::vector<std::string> bound;  // keys of bound pods, as every side holds them
  for (const Pod& p : cluster.pods) bound.push_back(ObjectKey(p.meta));
  std::vector<Node> alive = cluster.nodes;
  auto apply_all = [&](const ClusterEvent& e, const std::string& what) {
    for (int side = 0; side < 3; ++side) {
      absl::Status st = live[side]->state().Apply(e);
      ASSERT_TRUE(st.ok()) << what << " on " << kSide[side] << ": " << st;
      // The reference's node tree is made afresh from the object set's list: the engine's
      // in-place moves must give the same scan order.
      if (e.kind == "Node" && side > 0) {
        ASSERT_EQ(live[side]->state().NodeOrder(), live[0]->state().NodeOrder()) << what << " on " << kSide[side];
      }
    }
  };
  auto schedule_all = [&](const std::vector<Pod>& pods, const std::string& what) {
    for (const Pod& pod : pods) {
      std::string first;
      for (int side = 0; side < 3; ++side) {
        Placement p = live[side]->Schedule(pod);
        std::string d = Describe(p);
        if (side == 0) {
          first = d;
          if (!p.node.empty()) bound.push_back(p.pod);
        } else {
          ASSERT_EQ(d, first) << what << " on " << kSide[side];
        }
      }
    }
  };
  int64_t placed_probes = 0;
  std::set<std::string> services;  // the Services there now, by name
  bool gold = false;  // whether the pods' namespace is labelled tier=gold
  for (int32_t step = 0; step < steps; ++step) {
    const std::string what = StrCat("seed ", seed, " step ", step);
    const int r = g.Pick(43);
    if (r < 10) {  // one pod
      schedule_all({g.NewPod("")}, what);
    } else if (r < 14) {  // a run of replicas
      Pod base = g.NewPod("");
      std::vector<Pod> run;
      for (int k = 0; k < 3 + g.Pick(6); ++k) {
        Pod p = base;
        p.meta.name = p.meta.uid = StrCat(base.meta.name, "-", k);
        run.push_back(p);
      }
      schedule_all(run, what);
    } else if (r < 24 && !bound.empty()) {  // delete a bound pod
      size_t at = static_cast<size_t>(g.Pick(static_cast<int>(bound.size())));
      Pod gone;
      std::string key = bound[at];
      gone.meta.namespace_ = key.substr(0, key.find('/'));
      gone.meta.name = key.substr(key.find('/') + 1);
      gone.node_name = "somewhere";
      bound.erase(bound.begin() + static_cast<std::ptrdiff_t>(at));
      apply_all(PodEvent(EventType::kDeleted, gone), what + " delete " + key);
    } else if (r < 29 && !alive.empty()) {  // a pod bound elsewhere
      Pod p = g.NewPod(alive[g.Pick(static_cast<int>(alive.size()))].meta.name);
      bound.push_back(ObjectKey(p.meta));
      apply_all(PodEvent(EventType::kAdded, p), what + " add " + p.meta.name);
    } else if (r < 31 && !bound.empty()) {  // relabel a bound pod
      const std::string key = bound[g.Pick(static_cast<int>(bound.size()))];
      ObjectSet now = live[0]->state().Objects();
      for (const Pod& p : now.pods) {
        if (ObjectKey(p.meta) != key) continue;
        Pod q = p;
        q.meta.labels["app"] = g.Pick(2) ? "web" : "batch";
        apply_all(PodEvent(EventType::kModified, q), what + " relabel " + key);
        break;
      }
    } else if (r < 32) {  // a node joins
      Node n = g.NewNode();
      alive.push_back(n);
      apply_all(NodeEvent(EventType::kAdded, n), what + " node add " + n.meta.name);
    } else if (r < 33 && alive.size() > 2) {  // a node leaves (its pods stay, counted nowhere)
      size_t at = static_cast<size_t>(g.Pick(static_cast<int>(alive.size())));
      Node n = alive[at];
      alive.erase(alive.begin() + static_cast<std::ptrdiff_t>(at));
      apply_all(NodeEvent(EventType::kDeleted, n), what + " node delete " + n.meta.name);
    } else if (r < 38 && !alive.empty()) {  // a node changes: zone, taints, labels, size, cordon
      size_t at = static_cast<size_t>(g.Pick(static_cast<int>(alive.size())));
      const int change = g.Pick(8);
      if (change == 7 && !bound.empty()) {  // one that has pods (most do), to re-zone
        const Pod* p = live[0]->state().FindBoundPod(bound[g.Pick(static_cast<int>(bound.size()))]);
        for (size_t k = 0; p && k < alive.size(); ++k) {
          if (alive[k].meta.name == p->node_name) at = k;
        }
      }
      Node& n = alive[at];
      switch (change) {
        case 0:
        case 7:
          n.meta.labels["topology.kubernetes.io/zone"] = StrCat("z", g.Pick(4));  // moves in the node tree
          break;
        case 1:
          n.taints = {Taint{"node.kubernetes.io/unreachable", "", "NoSchedule"}};
          break;
        case 2:
          n.taints = g.Pick(2) ? std::vector<Taint>{} : std::vector<Taint>{Taint{"spot", "", "PreferNoSchedule"},
                                                                           Taint{"dedicated", "gpu", "NoSchedule"},
                                                                           Taint{"x", "1", "PreferNoSchedule"}};
          break;
        case 3:
          if (g.Pick(3) == 0) {
            n.meta.labels.erase("disk");
          } else {
            n.meta.labels["disk"] = g.Pick(2) ? "ssd" : "hdd";
          }
          break;
        case 4:
          n.allocatable["cpu"] = testing::Q(std::to_string(1 + g.Pick(8)));
          break;
        case 5:
          n.unschedulable = !n.unschedulable;
          break;
        default:
          n.images = {ContainerImage{{StrCat("img", g.Pick(3), ":v1")}, 100000000}};
          break;
      }
      apply_all(NodeEvent(EventType::kModified, n), what + " node update " + n.meta.name);
    } else if (r == 42) {  // the pods' namespace gains or loses tier=gold: namespaceSelector terms flip
      gold = !gold;
      auto e = ParseWatchEvent(StrCat(R"({"type":"MODIFIED","object":{"kind":"Namespace","apiVersion":"v1","metadata":{"name":"default")",
                                      gold ? R"(,"labels":{"tier":"gold"})" : "", "}}}"),
                               "namespace");
      ASSERT_TRUE(e.ok() && e->has_value()) << e.status();
      apply_all(**e, what + (gold ? " namespace gold" : " namespace plain"));
    } else if (r >= 40) {  // a Service comes or goes: default spreading for the pods it selects
      const std::string app = g.Pick(2) ? "web" : "batch";
      const bool there = services.count(app) > 0;
      auto e = ParseWatchEvent(StrCat(R"({"type":")", there ? "DELETED" : "ADDED",
                                      R"(","object":{"kind":"Service","apiVersion":"v1","metadata":{"name":")", app,
                                      R"(","namespace":"default"},"spec":{"selector":{"app":")", app, R"("}}}})"),
                               "service");
      ASSERT_TRUE(e.ok() && e->has_value()) << e.status();
      if (there) {
        services.erase(app);
      } else {
        services.insert(app);
      }
      apply_all(**e, what + " service " + app);
    } else {  // compare with fresh schedulers, in a transaction that is then reverted
      if (step % sample != 0 && r != 39) continue;
      std::vector<Pod> probes;
      for (int shape = 0; shape < 12; ++shape) probes.push_back(g.NewPod("", shape));  // every plugin's state
      // What-if events inside the transaction: nodes leave (with their pods), join and
      // change, bound pods go.
      std::vector<ClusterEvent> what_if;
      std::vector<Node> staying = alive;
      for (int k = g.Pick(4); k > 0; --k) {
        const int kind = g.Pick(5);
        if (kind == 0 && staying.size() > 2) {
          size_t at = static_cast<size_t>(g.Pick(static_cast<int>(staying.size())));
          what_if.push_back(NodeEvent(EventType::kDeleted, staying[at]));
          staying.erase(staying.begin() + static_cast<std::ptrdiff_t>(at));
        } else if (kind == 1) {
          staying.push_back(g.NewNode());
          what_if.push_back(NodeEvent(EventType::kAdded, staying.back()));
        } else if ((kind == 2 || kind == 3) && !staying.empty()) {
          Node& n = staying[g.Pick(static_cast<int>(staying.size()))];
          if (kind == 2) {
            n.taints = g.Pick(2) ? std::vector<Taint>{} : std::vector<Taint>{Taint{"node.kubernetes.io/not-ready", "", "NoSchedule"}};
          } else {
            n.meta.labels["topology.kubernetes.io/zone"] = StrCat("z", g.Pick(4));  // moves in the node tree
          }
          what_if.push_back(NodeEvent(EventType::kModified, n));
        } else if (!bound.empty()) {
          const std::string key = bound[g.Pick(static_cast<int>(bound.size()))];
          Pod gone;
          gone.meta.namespace_ = key.substr(0, key.find('/'));
          gone.meta.name = key.substr(key.find('/') + 1);
          gone.node_name = "somewhere";
          what_if.push_back(PodEvent(EventType::kDeleted, gone));
        }
      }
      auto names = [](const ObjectSet& o) {
        std::vector<std::string> out;
        for (const Node& n : o.nodes) out.push_back(n.meta.name);
        for (const Pod& p : o.pods) out.push_back(ObjectKey(p.meta) + "@" + p.node_name);
        return out;
      };
      std::vector<std::string> reference_order;  // after the what-if events
      for (int side = 0; side < 3; ++side) {
        Options o = SideOptions(side);
        const ObjectSet before = live[side]->state().Objects();
        const int32_t start = live[side]->next_start_index();
        ASSERT_TRUE(live[side]->state().Begin().ok());
        std::set<std::string> deleted;
        for (const ClusterEvent& e : what_if) {
          if (e.kind == "Pod" && !deleted.insert(e.Key()).second) continue;  // picked twice
          absl::Status st = live[side]->state().Apply(e);
          ASSERT_TRUE(st.ok()) << what << " what-if on " << kSide[side] << ": " << st;
        }
        o.start_index = live[side]->next_start_index();
        ObjectSet objects = live[side]->state().Objects();
        auto fresh = Scheduler::Create(objects, config, o);
        ASSERT_TRUE(fresh.ok()) << fresh.status();
        if (side == 0) reference_order = live[0]->state().NodeOrder();
        ASSERT_EQ(live[side]->state().NodeOrder(), reference_order) << what << " what-if on " << kSide[side];
        ASSERT_EQ(live[side]->state().NodeOrder(), (*fresh)->state().NodeOrder()) << what << " what-if on " << kSide[side];
        for (const Pod& probe : probes) {
          Placement a = live[side]->Schedule(probe), b = (*fresh)->Schedule(probe);
          ASSERT_EQ(Describe(a), Describe(b)) << what << " probe on " << kSide[side] << " against a fresh scheduler";
          placed_probes += a.node.empty() ? 0 : 1;
        }
        EXPECT_EQ(live[side]->next_start_index(), (*fresh)->next_start_index()) << what;
        ASSERT_TRUE(live[side]->state().Revert().ok());
        EXPECT_EQ(live[side]->next_start_index(), start) << what;
        ASSERT_EQ(names(live[side]->state().Objects()), names(before)) << what << ": Revert did not restore " << kSide[side];
      }
    }
  }
  EXPECT_GT(placed_probes, 0);
}

TEST(LiveStateTest, EventStreamsMatchTheReferenceAndFreshSchedulers) {
  // ctest: small clusters; KPLACE_SOAK=1 adds larger ones and longer streams.
  RunStream(1, 12, 300, 10);
  RunStream(2, 40, 300, 25);
  RunStream(3, 150, 200, 40);
  if (Soak()) {
    RunStream(4, 1000, 2000, 100);
    RunStream(5, 5000, 1000, 200);
  }
}

TEST(LiveStateTest, DeletingABoundPodFreesItsNode) {
  ObjectSet cluster;
  cluster.nodes.push_back(MakeNode("n1", {{"cpu", "2"}, {"pods", "10"}}, {{"kubernetes.io/hostname", "n1"}}));
  cluster.pods.push_back(MakePod("big", {{"cpu", "2"}}, "n1"));
  for (bool reference : {true, false}) {
    Options o;
    o.reference = reference;
    auto s = Scheduler::Create(cluster, DefaultSchedulerConfig(), o);
    ASSERT_TRUE(s.ok()) << s.status();
    Pod want = MakePod("next", {{"cpu", "1"}});
    EXPECT_EQ((*s)->Schedule(want).node, "");
    Pod gone = cluster.pods[0];
    ASSERT_TRUE((*s)->state().Apply(PodEvent(EventType::kDeleted, gone)).ok());
    want.meta.name = "next2";
    Placement p = (*s)->Schedule(want);
    EXPECT_EQ(p.node, "n1") << p.message;
    // A second delete of the same pod names it.
    absl::Status again = (*s)->state().Apply(PodEvent(EventType::kDeleted, gone));
    EXPECT_TRUE(absl::IsNotFound(again)) << again;
    EXPECT_NE(std::string(again.message()).find("default/big"), std::string::npos) << again;
  }
}

// A per-pod scheduler over `cluster` that has taken one node change (the first builds its
// live objects once; the next ones are in place).
std::unique_ptr<Scheduler> Relabelled(const ObjectSet& cluster, bool reference) {
  Options o;
  o.reference = reference;
  o.batch = 1;
  auto s = Scheduler::Create(cluster, DefaultSchedulerConfig(), o);
  if (!s.ok() || !(*s)->state().Apply(NodeEvent(EventType::kModified, cluster.nodes.back())).ok()) return nullptr;
  return std::move(*s);
}

// A node relabelled in place moves its pods between spread domains.
TEST(LiveStateTest, NodeLabelChangeMovesSpreadDomains) {
  ObjectSet cluster;
  for (const auto& [name, disk] : std::vector<std::pair<std::string, std::string>>{{"n1", "ssd"}, {"n2", "ssd"}, {"n3", "hdd"}}) {
    cluster.nodes.push_back(MakeNode(name, {{"cpu", "8"}, {"pods", "20"}}, {{"kubernetes.io/hostname", name}, {"disk", disk}}));
  }
  for (int k = 0; k < 2; ++k) {
    Pod p = MakePod(StrCat("old", k), {{"cpu", "100m"}}, "n1");
    p.meta.labels = {{"app", "web"}};
    cluster.pods.push_back(p);
  }
  auto spread_pod = [](const std::string& name) {
    Pod p = MakePod(name, {{"cpu", "100m"}});
    p.meta.labels = {{"app", "web"}};
    TopologySpreadConstraint c;
    c.max_skew = 1;
    c.topology_key = "disk";
    c.when_unsatisfiable = "DoNotSchedule";
    c.label_selector = LabelSelector{{{"app", "web"}}, {}};
    p.topology_spread_constraints.push_back(c);
    return p;
  };
  for (bool reference : {true, false}) {
    std::unique_ptr<Scheduler> s = Relabelled(cluster, reference);
    ASSERT_TRUE(s);
    EXPECT_EQ(s->Schedule(spread_pod("a")).node, "n3");  // hdd has none
    Node n1 = cluster.nodes[0];
    n1.meta.labels["disk"] = "hdd";  // now hdd {n1, n3} holds 3, ssd {n2} none
    ASSERT_TRUE(s->state().Apply(NodeEvent(EventType::kModified, n1)).ok());
    EXPECT_EQ(s->Schedule(spread_pod("b")).node, "n2") << (reference ? "reference" : "engine");
  }
}

// A node without pods relabelled in place moves to another affinity domain (the engine
// writes its domain rather than rebuilding).
TEST(LiveStateTest, EmptyNodeLabelChangeMovesAffinityDomains) {
  ObjectSet cluster;
  for (const auto& [name, disk] : std::vector<std::pair<std::string, std::string>>{{"n1", "ssd"}, {"n2", "hdd"}, {"n3", "hdd"}}) {
    cluster.nodes.push_back(MakeNode(name, {{"cpu", "8"}, {"pods", "20"}}, {{"kubernetes.io/hostname", name}, {"disk", disk}}));
  }
  Pod web = MakePod("web", {{"cpu", "100m"}}, "n1");
  web.meta.labels = {{"app", "web"}};
  cluster.pods.push_back(web);
  auto near_web = [](const std::string& name) {
    Pod p = MakePod(name, {{"cpu", "100m"}});
    PodAffinityTerm term;
    term.label_selector = LabelSelector{{{"app", "web"}}, {}};
    term.topology_key = "disk";
    p.affinity.emplace().pod_affinity.emplace().required.push_back(term);
    return p;
  };
  for (bool reference : {true, false}) {
    std::unique_ptr<Scheduler> s = Relabelled(cluster, reference);
    ASSERT_TRUE(s);
    Placement a = s->Schedule(near_web("a"));
    EXPECT_EQ(a.node, "n1");
    EXPECT_EQ(a.feasible, 1);
    Node n2 = cluster.nodes[1];
    n2.meta.labels["disk"] = "ssd";  // n2 (empty) joins n1's domain
    ASSERT_TRUE(s->state().Apply(NodeEvent(EventType::kModified, n2)).ok());
    Node n3 = cluster.nodes[2];
    n3.meta.labels["disk"] = "nvme";  // a value no node had
    ASSERT_TRUE(s->state().Apply(NodeEvent(EventType::kModified, n3)).ok());
    Placement b = s->Schedule(near_web("b"));
    EXPECT_EQ(b.feasible, 2) << (reference ? "reference" : "engine") << ": " << b.message;
    const ObjectSet now = s->state().Objects();
    Options o;
    o.reference = reference;
    o.batch = 1;
    auto fresh = Scheduler::Create(now, DefaultSchedulerConfig(), o);
    ASSERT_TRUE(fresh.ok()) << fresh.status();
    for (const std::string& name : {"c", "d"}) {
      EXPECT_EQ(Describe(s->Schedule(near_web(name))), Describe((*fresh)->Schedule(near_web(name))));
    }
  }
}

// A node with pods moves to another zone (and a node whose zone empties moves to a new
// one): the node tree removes and appends it as upstream's does, its pods' spread and
// affinity counts move with it, and a Revert gives back the exact tree.
TEST(LiveStateTest, ZoneChangeMovesANodeWithItsPods) {
  ObjectSet cluster;
  for (const auto& [name, zone] : std::vector<std::pair<std::string, std::string>>{{"n1", "a"}, {"n2", "a"}, {"n3", "b"}, {"n4", "c"}}) {
    cluster.nodes.push_back(MakeNode(name, {{"cpu", "8"}, {"pods", "20"}},
                                     {{"kubernetes.io/hostname", name}, {"topology.kubernetes.io/zone", zone}}));
  }
  PodAffinityTerm web;
  web.label_selector = LabelSelector{{{"app", "web"}}, {}};
  web.topology_key = "topology.kubernetes.io/zone";
  for (int k = 0; k < 2; ++k) {  // on n1: web pods, one keeping other web pods out of its zone
    Pod p = MakePod(StrCat("old", k), {{"cpu", "100m"}}, "n1");
    p.meta.labels = {{"app", "web"}};
    if (k == 1) p.affinity.emplace().pod_anti_affinity.emplace().required.push_back(web);
    cluster.pods.push_back(p);
  }
  auto probes = [&] {
    std::vector<Pod> out;
    Pod near = MakePod("near", {{"cpu", "100m"}});
    near.affinity.emplace().pod_affinity.emplace().required.push_back(web);
    out.push_back(near);
    Pod apart = MakePod("apart", {{"cpu", "100m"}});
    apart.meta.labels = {{"app", "web"}};  // the existing anti-affinity term keeps it out
    out.push_back(apart);
    Pod spread = MakePod("spread", {{"cpu", "100m"}});
    spread.meta.labels = {{"app", "web"}};
    TopologySpreadConstraint c;
    c.max_skew = 1;
    c.topology_key = "topology.kubernetes.io/zone";
    c.when_unsatisfiable = "DoNotSchedule";
    c.label_selector = web.label_selector;
    spread.topology_spread_constraints.push_back(c);
    out.push_back(spread);
    Pod liked = MakePod("liked", {{"cpu", "100m"}});
    liked.affinity.emplace().pod_affinity.emplace().preferred.push_back(WeightedPodAffinityTerm{50, web});
    out.push_back(liked);
    return out;
  };
  auto rezoned = [&](int i, const std::string& zone) {
    Node n = cluster.nodes[i];
    n.meta.labels["topology.kubernetes.io/zone"] = zone;
    return NodeEvent(EventType::kModified, n);
  };
  using Names = std::vector<std::string>;
  for (int side = 0; side < 3; ++side) {
    Options o = SideOptions(side);
    auto made = Scheduler::Create(cluster, DefaultSchedulerConfig(), o);
    ASSERT_TRUE(made.ok()) << made.status();
    Scheduler& s = **made;
    ASSERT_TRUE(s.state().Apply(NodeEvent(EventType::kModified, cluster.nodes[3])).ok());  // builds once
    EXPECT_EQ(s.state().NodeOrder(), (Names{"n1", "n3", "n4", "n2"}));  // a: n1 n2, b: n3, c: n4
    ASSERT_TRUE(s.state().Begin().ok());
    ASSERT_TRUE(s.state().Apply(rezoned(0, "c")).ok());  // a: n2, b: n3, c: n4 n1
    EXPECT_EQ(s.state().NodeOrder(), (Names{"n2", "n3", "n4", "n1"})) << side;
    ASSERT_TRUE(s.state().Apply(rezoned(1, "d")).ok());  // zone a goes; d comes last
    EXPECT_EQ(s.state().NodeOrder(), (Names{"n3", "n4", "n2", "n1"})) << side;
    Options fresh_options = o;
    fresh_options.start_index = s.next_start_index();
    const ObjectSet objects = s.state().Objects();  // the scheduler keeps a reference
    auto fresh = Scheduler::Create(objects, DefaultSchedulerConfig(), fresh_options);
    ASSERT_TRUE(fresh.ok()) << fresh.status();
    EXPECT_EQ(s.state().NodeOrder(), (*fresh)->state().NodeOrder());
    for (const Pod& probe : probes()) {
      Placement a = s.Schedule(probe), b = (*fresh)->Schedule(probe);
      EXPECT_EQ(Describe(a), Describe(b)) << side;
      if (probe.meta.name == "near") {
        EXPECT_TRUE(a.node == "n4" || a.node == "n1") << side << ": " << Describe(a);
      } else if (probe.meta.name == "apart") {
        EXPECT_TRUE(a.node == "n2" || a.node == "n3") << side << ": " << Describe(a);
      }
    }
    ASSERT_TRUE(s.state().Revert().ok());
    EXPECT_EQ(s.state().NodeOrder(), (Names{"n1", "n3", "n4", "n2"})) << side;
    Placement apart = s.Schedule(probes()[1]);  // zone a holds the anti-affinity pod again
    EXPECT_TRUE(apart.node == "n3" || apart.node == "n4") << side << ": " << Describe(apart);
  }
}

// A Service that comes between two identical pods of a batched run gives the second one
// default spreading, as a fresh scheduler gives it.
TEST(LiveStateTest, ServiceChangeReachesABatchedRun) {
  ObjectSet cluster;
  for (const std::string zone : {"a", "b"}) {
    cluster.nodes.push_back(MakeNode(StrCat("n", zone), {{"cpu", "8"}, {"pods", "20"}},
                                     {{"kubernetes.io/hostname", StrCat("n", zone)}, {"topology.kubernetes.io/zone", zone}}));
  }
  for (int k = 0; k < 3; ++k) {
    Pod p = MakePod(StrCat("old", k), {{"cpu", "100m"}}, "na");
    p.meta.labels = {{"app", "web"}};
    cluster.pods.push_back(p);
  }
  auto web = [](const std::string& name) {
    Pod p = MakePod(name, {{"cpu", "100m"}});
    p.meta.labels = {{"app", "web"}};
    return p;
  };
  auto service = ParseWatchEvent(
      R"({"type":"ADDED","object":{"kind":"Service","apiVersion":"v1","metadata":{"name":"web","namespace":"default"},"spec":{"selector":{"app":"web"}}}})",
      "service");
  ASSERT_TRUE(service.ok() && service->has_value()) << service.status();
  Options o;
  o.batch = cycle::kDefaultBatch;
  auto s = Scheduler::Create(cluster, DefaultSchedulerConfig(), o);
  ASSERT_TRUE(s.ok()) << s.status();
  ASSERT_TRUE((*s)->state().Apply(NodeEvent(EventType::kModified, cluster.nodes[0])).ok());  // live objects, built once
  auto without = Scheduler::Create(cluster, DefaultSchedulerConfig(), o);  // the Service never comes
  ASSERT_TRUE(without.ok()) << without.status();
  EXPECT_EQ(Describe((*s)->Schedule(web("a"))), Describe((*without)->Schedule(web("a"))));
  ASSERT_TRUE((*s)->state().Apply(**service).ok());
  ObjectSet expected = (*without)->state().Objects();
  expected.workloads.push_back((*service)->object.workloads[0]);
  auto fresh = Scheduler::Create(expected, DefaultSchedulerConfig(), o);
  ASSERT_TRUE(fresh.ok()) << fresh.status();
  for (const std::string& name : {"b", "c"}) {
    const std::string got = Describe((*s)->Schedule(web(name)));
    EXPECT_EQ(got, Describe((*fresh)->Schedule(web(name))));
    EXPECT_NE(got, Describe((*without)->Schedule(web(name))));  // the spreading shows in the score
  }
}

// What the node lifecycle controller and kubectl do to a node, seen through events: a
// cordon, the not-ready taint, and removal with pods on it (the pods count again when the
// node comes back, as they stay in upstream's cache).
TEST(LiveStateTest, NodeLifecycleEvents) {
  ObjectSet cluster;
  cluster.nodes.push_back(MakeNode("n1", {{"cpu", "2"}, {"pods", "10"}}, {{"kubernetes.io/hostname", "n1"}}));
  cluster.pods.push_back(MakePod("resident", {{"cpu", "1"}}, "n1"));
  for (bool reference : {true, false}) {
    Options o;
    o.reference = reference;
    auto s = Scheduler::Create(cluster, DefaultSchedulerConfig(), o);
    ASSERT_TRUE(s.ok()) << s.status();
    const std::string side = reference ? "reference" : "engine";
    Node n1 = cluster.nodes[0];
    n1.unschedulable = true;
    ASSERT_TRUE((*s)->state().Apply(NodeEvent(EventType::kModified, n1)).ok());
    Placement p = (*s)->Schedule(MakePod("a", {{"cpu", "1"}}));
    EXPECT_EQ(p.node, "") << side;
    EXPECT_NE(p.message.find("1 node(s) were unschedulable"), std::string::npos) << side << ": " << p.message;
    n1.unschedulable = false;
    n1.taints = {Taint{"node.kubernetes.io/not-ready", "", "NoSchedule"}};
    ASSERT_TRUE((*s)->state().Apply(NodeEvent(EventType::kModified, n1)).ok());
    p = (*s)->Schedule(MakePod("b", {{"cpu", "1"}}));
    EXPECT_NE(p.message.find("1 node(s) had untolerated taint(s)"), std::string::npos) << side << ": " << p.message;
    ASSERT_TRUE((*s)->state().Apply(NodeEvent(EventType::kDeleted, n1)).ok());
    p = (*s)->Schedule(MakePod("c", {{"cpu", "1"}}));
    EXPECT_EQ(p.message, "no nodes available to schedule pods") << side;
    EXPECT_EQ((*s)->state().Objects().pods.size(), 1u) << side << ": the resident pod stays";
    ASSERT_TRUE((*s)->state().Apply(NodeEvent(EventType::kAdded, cluster.nodes[0])).ok());
    EXPECT_EQ((*s)->Schedule(MakePod("d", {{"cpu", "1"}})).node, "n1") << side;
    p = (*s)->Schedule(MakePod("e", {{"cpu", "1"}}));  // the resident and d fill it
    EXPECT_NE(p.message.find("1 Insufficient cpu"), std::string::npos) << side << ": " << p.message;
  }
}

// Nodes that join in place (after the first change of a non-pod kind) give every plugin's
// answers a fresh scheduler gives: images, taints, labels, new zones, pods left bound to a
// node of that name.
TEST(LiveStateTest, NodesThatJoinMatchAFreshScheduler) {
  for (uint64_t seed = 1; seed <= 4; ++seed) {
    Generator g(seed * 977);
    ObjectSet cluster = g.Cluster(6, 14);
    for (int k = 0; k < 2; ++k) cluster.pods.push_back(g.NewPod("n7"));  // waits for n7
    for (int side = 0; side < 3; ++side) {
      Options o = SideOptions(side);
      auto s = Scheduler::Create(cluster, DefaultSchedulerConfig(), o);
      ASSERT_TRUE(s.ok()) << s.status();
      ASSERT_TRUE((*s)->state().Apply(NodeEvent(EventType::kModified, cluster.nodes[0])).ok());  // builds once
      Generator nodes(seed);
      for (int k = 0; k < 12; ++k) {
        Node n = nodes.NewNode();
        n.meta.name = StrCat("n", 6 + k);
        n.meta.labels["kubernetes.io/hostname"] = n.meta.name;
        if (k % 3 == 0) n.meta.labels["topology.kubernetes.io/zone"] = StrCat("new", k);  // a zone of its own
        if (k % 2 == 0) n.meta.labels["disk"] = "ssd";
        if (k % 2 == 1) n.images = {ContainerImage{{"img0:v1"}, 600000000}};
        ASSERT_TRUE((*s)->state().Apply(NodeEvent(EventType::kAdded, n)).ok());
        if (k % 4 == 3) (void)(*s)->Schedule(g.NewPod(""));
      }
      Options fresh_options = o;
      fresh_options.start_index = (*s)->next_start_index();
      ObjectSet objects = (*s)->state().Objects();
      auto fresh = Scheduler::Create(objects, DefaultSchedulerConfig(), fresh_options);
      ASSERT_TRUE(fresh.ok()) << fresh.status();
      EXPECT_EQ((*s)->state().NodeOrder(), (*fresh)->state().NodeOrder());
      for (int round = 0; round < 3; ++round) {
        for (int shape = 0; shape < 10; ++shape) {
          Pod probe = g.NewPod("", shape);
          probe.containers[0].image = "img0:v1";  // on half the nodes that joined
          EXPECT_EQ(Describe((*s)->Schedule(probe)), Describe((*fresh)->Schedule(probe))) << "seed " << seed << " side " << side;
        }
      }
    }
  }
}

// A state taken live before its first node event (GoLive, as kplace bench does for churned
// workloads) decides as one that goes live at that event.
TEST(LiveStateTest, GoLiveDecidesAsTheFirstEventWould) {
  for (uint64_t seed = 1; seed <= 3; ++seed) {
    Generator g(seed * 1237);
    const ObjectSet cluster = g.Cluster(8, 20);
    for (int side = 0; side < 3; ++side) {
      Options o = SideOptions(side);
      auto early = Scheduler::Create(cluster, DefaultSchedulerConfig(), o);
      auto late = Scheduler::Create(cluster, DefaultSchedulerConfig(), o);
      ASSERT_TRUE(early.ok() && late.ok());
      ASSERT_TRUE((*early)->state().GoLive().ok());
      const ObjectSet* live = &(*early)->state().objects();
      EXPECT_NE(live, &cluster) << "GoLive keeps a copy of its own";
      ASSERT_TRUE((*early)->state().GoLive().ok());
      EXPECT_EQ(live, &(*early)->state().objects()) << "a second GoLive changes nothing";
      Generator events(seed);
      for (int k = 0; k < 10; ++k) {
        Pod probe = g.NewPod("", k % 10);
        EXPECT_EQ(Describe((*early)->Schedule(probe)), Describe((*late)->Schedule(probe))) << "seed " << seed << " side " << side;
        Node n = events.NewNode();
        n.meta.name = StrCat("joined", k);
        n.meta.labels["kubernetes.io/hostname"] = n.meta.name;
        const state::ClusterEvent e = k % 3 == 2 ? NodeEvent(EventType::kDeleted, cluster.nodes[k % 8]) : NodeEvent(EventType::kAdded, n);
        ASSERT_TRUE((*early)->state().Apply(state::ClusterEvent(e)).ok());
        ASSERT_TRUE((*late)->state().Apply(state::ClusterEvent(e)).ok());
      }
      EXPECT_EQ((*early)->state().NodeOrder(), (*late)->state().NodeOrder());
      EXPECT_EQ((*early)->next_start_index(), (*late)->next_start_index());
    }
  }
}

TEST(LiveStateTest, RevertUndoesPlacementsAndNodeChanges) {
  ObjectSet cluster;
  for (const char* n : {"a", "b"}) {
    cluster.nodes.push_back(MakeNode(n, {{"cpu", "1"}, {"pods", "10"}}, {{"kubernetes.io/hostname", n}}));
  }
  for (bool reference : {true, false}) {
    Options o;
    o.reference = reference;
    auto s = Scheduler::Create(cluster, DefaultSchedulerConfig(), o);
    ASSERT_TRUE(s.ok()) << s.status();
    ASSERT_TRUE((*s)->state().Begin().ok());
    EXPECT_FALSE((*s)->Schedule(MakePod("x", {{"cpu", "1"}})).node.empty());
    ASSERT_TRUE((*s)->state().Begin().ok());  // one level of nesting
    EXPECT_FALSE((*s)->state().Begin().ok());
    ASSERT_TRUE((*s)->state().Apply(NodeEvent(EventType::kDeleted, cluster.nodes[0])).ok());
    EXPECT_EQ((*s)->state().Objects().nodes.size(), 1u);
    ASSERT_TRUE((*s)->state().Revert().ok());  // the node is back
    EXPECT_EQ((*s)->state().Objects().nodes.size(), 2u);
    EXPECT_EQ((*s)->state().Objects().pods.size(), 1u);
    ASSERT_TRUE((*s)->state().Revert().ok());  // and x is gone
    EXPECT_EQ((*s)->state().Objects().pods.size(), 0u);
    EXPECT_EQ((*s)->next_start_index(), 0);
    EXPECT_FALSE((*s)->state().Revert().ok());
    // Both nodes take a 1-cpu pod again.
    EXPECT_FALSE((*s)->Schedule(MakePod("y", {{"cpu", "1"}})).node.empty());
    EXPECT_FALSE((*s)->Schedule(MakePod("z", {{"cpu", "1"}})).node.empty());
  }
}

// Every kind the scheduler reads can be added, changed and deleted; Objects() shows it and
// the engine and the reference still agree on a pod the change matters to.
TEST(LiveStateTest, EventsOfEveryKindApply) {
  ObjectSet cluster;
  cluster.nodes.push_back(MakeNode("n1", {{"cpu", "4"}, {"pods", "10"}}, {{"kubernetes.io/hostname", "n1"}}));
  const char* kObjects[] = {
      R"({"kind":"Namespace","apiVersion":"v1","metadata":{"name":"team","labels":{"tier":"gold"}}})",
      R"({"kind":"Service","apiVersion":"v1","metadata":{"name":"web","namespace":"default"},"spec":{"selector":{"app":"web"}}})",
      R"({"kind":"PersistentVolumeClaim","apiVersion":"v1","metadata":{"name":"data","namespace":"default"},"spec":{"accessModes":["ReadWriteOnce"],"resources":{"requests":{"storage":"1Gi"}}}})",
      R"({"kind":"PodDisruptionBudget","apiVersion":"policy/v1","metadata":{"name":"web","namespace":"default"},"spec":{"selector":{"matchLabels":{"app":"web"}}},"status":{"disruptionsAllowed":1}})",
      R"({"kind":"PriorityClass","apiVersion":"scheduling.k8s.io/v1","metadata":{"name":"high"},"value":1000})",
  };
  for (bool reference : {true, false}) {
    Options o;
    o.reference = reference;
    auto s = Scheduler::Create(cluster, DefaultSchedulerConfig(), o);
    ASSERT_TRUE(s.ok()) << s.status();
    std::vector<ClusterEvent> added;
    for (const char* text : kObjects) {
      auto e = ParseWatchEvent(StrCat(R"({"type":"ADDED","object":)", text, "}"), "test");
      ASSERT_TRUE(e.ok() && e->has_value()) << e.status();
      ASSERT_TRUE((*s)->state().Apply(**e).ok()) << text;
      added.push_back(**e);
      EXPECT_TRUE(absl::IsAlreadyExists((*s)->state().Apply(**e))) << text;
    }
    ObjectSet now = (*s)->state().Objects();
    EXPECT_EQ(now.namespaces.size(), 1u);
    EXPECT_EQ(now.workloads.size(), 1u);
    EXPECT_EQ(now.storage.size(), 1u);
    EXPECT_EQ(now.pdbs.size(), 1u);
    EXPECT_EQ(now.priority_classes.size(), 1u);
    // A pod whose claim now exists is placed; it could not be before the claim arrived.
    Pod with_claim = MakePod("uses-data", {{"cpu", "1"}});
    Volume v;
    v.name = "d";
    v.source = "persistentVolumeClaim";
    v.claim_name = "data";
    with_claim.volumes.push_back(v);
    Placement p = (*s)->Schedule(with_claim);
    EXPECT_NE(p.message.find("unbound immediate PersistentVolumeClaims"), std::string::npos)
        << (reference ? "reference: " : "engine: ") << Describe(p);
    for (ClusterEvent& e : added) {
      e.type = EventType::kDeleted;
      ASSERT_TRUE((*s)->state().Apply(e).ok()) << e.kind;
      EXPECT_TRUE(absl::IsNotFound((*s)->state().Apply(e))) << e.kind;
    }
    now = (*s)->state().Objects();
    EXPECT_TRUE(now.namespaces.empty() && now.workloads.empty() && now.storage.empty() && now.pdbs.empty() &&
                now.priority_classes.empty());
  }
}

// What a refused event leaves: nothing. Random streams mixing good events with bad ones
// (duplicate adds, changes and deletes of missing objects, a bound pod made pending) on
// the engine and the reference: a refused event changes no object, and afterwards both
// still decide a probe pod as a fresh scheduler over their objects does.
TEST(LiveStateTest, RefusedEventsChangeNothing) {
  auto fingerprint = [](const ObjectSet& o) {
    std::string out;
    for (const Node& n : o.nodes) out += StrCat("N", n.meta.name, n.unschedulable ? "u" : "", n.taints.size(), ";");
    for (const Pod& p : o.pods) out += StrCat("P", ObjectKey(p.meta), "@", p.node_name, ";");
    for (const Namespace& n : o.namespaces) out += StrCat("NS", n.meta.name, ";");
    return out;
  };
  for (uint64_t seed = 1; seed <= 3; ++seed) {
    Generator g(seed * 131);
    ObjectSet cluster;
    for (int i = 0; i < 8; ++i) cluster.nodes.push_back(g.NewNode());
    for (int k = 0; k < 16; ++k) cluster.pods.push_back(g.NewPod(cluster.nodes[g.Pick(8)].meta.name));
    for (bool reference : {true, false}) {
      Options o;
      o.reference = reference;
      auto s = Scheduler::Create(cluster, DefaultSchedulerConfig(), o);
      ASSERT_TRUE(s.ok()) << s.status();
      int64_t refused = 0;
      for (int step = 0; step < 200; ++step) {
        ObjectSet now = (*s)->state().Objects();
        ClusterEvent e;
        switch (g.Pick(8)) {
          case 0:  // an existing pod added again
            if (now.pods.empty()) continue;
            e = PodEvent(EventType::kAdded, now.pods[g.Pick(static_cast<int>(now.pods.size()))]);
            break;
          case 1:  // a missing pod deleted (a missing bound pod MODIFIED is one bound elsewhere: an add)
            e = PodEvent(EventType::kDeleted, g.NewPod(now.nodes.empty() ? "x" : now.nodes[0].meta.name));
            break;
          case 2: {  // a bound pod made pending
            if (now.pods.empty()) continue;
            Pod p = now.pods[g.Pick(static_cast<int>(now.pods.size()))];
            p.node_name.clear();
            e = PodEvent(EventType::kModified, p);
            break;
          }
          case 3:  // an existing node added again, a missing one changed or deleted
            if (now.nodes.empty()) continue;
            e = NodeEvent(EventType::kAdded, now.nodes[g.Pick(static_cast<int>(now.nodes.size()))]);
            break;
          case 4:
            e = NodeEvent(g.Pick(2) ? EventType::kModified : EventType::kDeleted, g.NewNode());
            break;
          case 5:  // good: a pod bound to some node, or to a node that is not there
            e = PodEvent(EventType::kAdded, g.NewPod(g.Pick(4) == 0 || now.nodes.empty()
                                                          ? "nowhere"
                                                          : now.nodes[g.Pick(static_cast<int>(now.nodes.size()))].meta.name));
            break;
          case 6:  // good: a node joins or leaves
            if (g.Pick(2) || now.nodes.size() < 3) {
              e = NodeEvent(EventType::kAdded, g.NewNode());
            } else {
              e = NodeEvent(EventType::kDeleted, now.nodes[g.Pick(static_cast<int>(now.nodes.size()))]);
            }
            break;
          default: {  // good: a pod is scheduled
            (void)(*s)->Schedule(g.NewPod(""));
            continue;
          }
        }
        const std::string before = fingerprint(now);
        absl::Status st = (*s)->state().Apply(e);
        if (!st.ok()) {
          ++refused;
          EXPECT_EQ(fingerprint((*s)->state().Objects()), before) << st;
          EXPECT_FALSE(std::string(st.message()).empty());
        }
      }
      EXPECT_GT(refused, 20);
      // Still exact: the same probe as a fresh scheduler over the same objects and start.
      Options fresh_options = o;
      fresh_options.start_index = (*s)->next_start_index();
      ObjectSet objects = (*s)->state().Objects();
      auto fresh = Scheduler::Create(objects, DefaultSchedulerConfig(), fresh_options);
      ASSERT_TRUE(fresh.ok()) << fresh.status();
      for (int shape = 0; shape < 10; ++shape) {
        Pod probe = g.NewPod("", shape);
        EXPECT_EQ(Describe((*s)->Schedule(probe)), Describe((*fresh)->Schedule(probe))) << "seed " << seed;
      }
    }
  }
}

TEST(EventTest, ParsesWatchLinesAndNamesWhatIsWrong) {
  auto e = ParseWatchEvent(R"({"type":"ADDED","object":{"kind":"Node","apiVersion":"v1","metadata":{"name":"n9"}}})", "ev:1");
  ASSERT_TRUE(e.ok()) << e.status();
  ASSERT_TRUE(e->has_value());
  EXPECT_EQ((*e)->kind, "Node");
  EXPECT_EQ((*e)->Key(), "n9");
  auto bookmark = ParseWatchEvent(R"({"type":"BOOKMARK","object":{"kind":"Pod","metadata":{}}})", "ev:2");
  ASSERT_TRUE(bookmark.ok());
  EXPECT_FALSE(bookmark->has_value());
  auto bad_type = ParseWatchEvent(R"({"type":"UPSERT","object":{"kind":"Node","metadata":{"name":"n"}}})", "ev:3");
  EXPECT_NE(std::string(bad_type.status().message()).find("ev:3: type: unknown event type \"UPSERT\""), std::string::npos)
      << bad_type.status();
  auto bad_kind = ParseWatchEvent(R"({"type":"ADDED","object":{"kind":"Gadget","metadata":{"name":"g"}}})", "ev:4");
  EXPECT_NE(std::string(bad_kind.status().message()).find("unsupported kind \"Gadget\""), std::string::npos)
      << bad_kind.status();
  auto list = ParseWatchEvent(R"({"type":"ADDED","object":{"kind":"PodList","items":[]}})", "ev:5");
  EXPECT_FALSE(list.ok());
  auto no_object = ParseWatchEvent(R"({"type":"DELETED"})", "ev:6");
  EXPECT_NE(std::string(no_object.status().message()).find("ev:6: object:"), std::string::npos) << no_object.status();
}

TEST(EventTest, NodesKeepTheNodeTreeOrder) {
  ObjectSet objects;
  auto node = [](const std::string& name, const std::string& zone) {
    return MakeNode(name, {}, {{"topology.kubernetes.io/zone", zone}});
  };
  objects.nodes = {node("x", "y"), node("b", "y"), node("a", "q")};  // the tree's list: y: x b; q: a
  ASSERT_TRUE(ApplyToObjects(NodeEvent(EventType::kAdded, node("c", "y")), &objects).ok());
  // x leaves zone y for a new zone: zone y keeps its place ahead of q, as in upstream's tree.
  Undo undo;
  ASSERT_TRUE(ApplyToObjects(NodeEvent(EventType::kModified, node("x", "w")), &objects, &undo).ok());
  std::vector<std::string> names;
  for (const Node& n : objects.nodes) names.push_back(n.meta.name);
  EXPECT_EQ(names, (std::vector<std::string>{"b", "c", "a", "x"}));
  ASSERT_TRUE(ApplyToObjects(undo.event, &objects, nullptr, undo.index).ok());
  names.clear();
  for (const Node& n : objects.nodes) names.push_back(n.meta.name);
  EXPECT_EQ(names, (std::vector<std::string>{"x", "b", "c", "a"}));
  EXPECT_TRUE(absl::IsAlreadyExists(ApplyToObjects(NodeEvent(EventType::kAdded, node("a", "q")), &objects)));
}

}  // namespace
}  // namespace kplace::state
