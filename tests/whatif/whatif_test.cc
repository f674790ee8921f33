#include "kplace/whatif/whatif.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <optional>
#include <random>
#include <set>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "absl/strings/str_join.h"
#include "kplace/common/strings.h"
#include "kplace/config/config.h"
#include "kplace/model/decode.h"
#include "kplace/state/event.h"
#include "tests/testing/differential.h"
#include "tests/testing/model_json.h"

namespace kplace::whatif {
namespace {

using testing::MakePdb;

using json = nlohmann::json;

Node MakeNode(const std::string& name, const std::string& zone, const std::string& cpu, bool tainted = false) {
  json j = {{"metadata", {{"name", name}, {"labels", {{"kubernetes.io/hostname", name}, {"topology.kubernetes.io/zone", zone}}}}},
            {"status", {{"allocatable", {{"cpu", cpu}, {"memory", "16Gi"}, {"pods", "20"}}}}}};
  if (tainted) j["spec"]["taints"] = json::array({{{"key", "dedicated"}, {"value", "gpu"}, {"effect", "NoSchedule"}}});
  return *DecodeNode(j, "test");
}

json PodJson(const std::string& name, const std::string& node, const std::string& cpu, const std::string& app) {
  json j = {{"metadata", {{"name", name}, {"namespace", "default"}, {"uid", name}, {"labels", {{"app", app}}}}},
            {"spec", {{"containers", json::array({{{"name", "c"}, {"resources", {{"requests", {{"cpu", cpu}}}}}}})}}}};
  if (!node.empty()) j["spec"]["nodeName"] = node;
  return j;
}

Pod MakePod(const std::string& name, const std::string& node, const std::string& cpu, const std::string& app = "web") {
  return *DecodePod(PodJson(name, node, cpu, app), "test");
}

std::string Describe(const cycle::Placement& p) {
  std::string out = StrCat(p.pod, " -> ", p.node, " [", CodeName(p.code), "] ", p.message, " score=", p.score,
                           " feasible=", p.feasible, " attempts=", p.attempts);
  if (p.preemption) out += StrCat(" nominated=", p.preemption->nominated_node, " victims=", p.preemption->victims.size());
  return out;
}

std::string StateOf(const cycle::Scheduler& s) {
  return StrCat(testing::ToJson(s.state().Objects()).dump(), " start=", s.next_start_index());
}

std::unique_ptr<cycle::Scheduler> Make(const ObjectSet& cluster, bool reference) {
  cycle::Options o;
  o.reference = reference;
  auto s = cycle::Scheduler::Create(cluster, DefaultSchedulerConfig(), o);
  EXPECT_TRUE(s.ok()) << s.status();
  return std::move(*s);
}

TEST(WhatIfTest, EvictedLeavesDaemonSetMirrorCompletedAndTerminatingPods) {
  Pod plain = MakePod("p", "n", "1");
  EXPECT_TRUE(Evicted(plain));
  Pod ds = plain;
  ds.meta.owner_references.push_back(OwnerReference{"apps/v1", "DaemonSet", "agent", "u1", true});
  EXPECT_FALSE(Evicted(ds));
  Pod rs = plain;
  rs.meta.owner_references.push_back(OwnerReference{"apps/v1", "ReplicaSet", "web", "u2", true});
  EXPECT_TRUE(Evicted(rs));
  Pod mirror = plain;
  mirror.meta.annotations["kubernetes.io/config.mirror"] = "abc";
  EXPECT_FALSE(Evicted(mirror));
  Pod done = plain;
  done.phase = "Succeeded";
  EXPECT_FALSE(Evicted(done));
  Pod going = plain;
  going.meta.deletion_timestamp = "2026-12-07T10:00:00Z";
  EXPECT_FALSE(Evicted(going));
}

// By hand: a (4 CPU) holds web-0 (2) and a DaemonSet pod; b (4) holds web-1 (3); c (2)
// is empty. Draining a: web-0 fits only on c; the DaemonSet pod goes with the node.
TEST(WhatIfTest, DrainByHand) {
  for (bool reference : {false, true}) {
    ObjectSet cluster;
    cluster.nodes = {MakeNode("a", "z1", "4"), MakeNode("b", "z1", "4"), MakeNode("c", "z2", "2")};
    Pod agent = MakePod("agent-a", "a", "100m", "agent");
    agent.meta.owner_references.push_back(OwnerReference{"apps/v1", "DaemonSet", "agent", "u1", true});
    cluster.pods = {MakePod("web-0", "a", "2"), agent, MakePod("web-1", "b", "3")};
    cluster.pdbs = {MakePdb("web", 1)};
    auto s = Make(cluster, reference);
    const std::string before = StateOf(*s);
    auto r = Drain(s.get(), {"a"});
    ASSERT_TRUE(r.ok()) << r.status();
    ASSERT_EQ(r->pods.size(), 1u);
    EXPECT_EQ(r->pods[0].pod, "default/web-0");
    EXPECT_EQ(r->pods[0].node, "c");
    EXPECT_TRUE(r->drainable);
    EXPECT_TRUE(r->pdb_violations.empty());
    EXPECT_EQ(StateOf(*s), before);

    // Draining a and c: web-0 fits nowhere (b has 1 CPU left).
    auto both = Drain(s.get(), {"a", "c"});
    ASSERT_TRUE(both.ok()) << both.status();
    ASSERT_EQ(both->pods.size(), 1u);
    EXPECT_EQ(both->pods[0].node, "");
    EXPECT_EQ(both->pods[0].message, "0/1 nodes are available: 1 Insufficient cpu. preemption: 0/1 nodes are available: 1 No preemption victims found for incoming pod.");
    EXPECT_FALSE(both->drainable);
    EXPECT_EQ(StateOf(*s), before);

    // Both web pods evicted: two against a budget of one.
    auto all = Drain(s.get(), {"a", "b"});
    ASSERT_TRUE(all.ok()) << all.status();
    ASSERT_EQ(all->pdb_violations.size(), 1u);
    EXPECT_EQ(all->pdb_violations[0].pdb, "default/pdb-web");
    EXPECT_EQ(all->pdb_violations[0].evicted, 2);
    EXPECT_EQ(all->pdb_violations[0].allowed, 1);
    EXPECT_FALSE(all->drainable);

    EXPECT_TRUE(absl::IsInvalidArgument(Drain(s.get(), {"nope"}).status()));
    EXPECT_TRUE(absl::IsInvalidArgument(Drain(s.get(), {"a", "a"}).status()));
    EXPECT_EQ(StateOf(*s), before);
  }
}

struct Random {
  ObjectSet cluster;
  std::vector<std::string> node_names;
};

// Zones, taints, spread and anti-affinity among the bound pods, DaemonSet pods, budgets and
// priorities: the pods a drain evicts meet every kind of constraint.
Random MakeRandom(uint64_t seed, int32_t nodes) {
  std::mt19937_64 rng(seed);
  auto pick = [&](int n) { return static_cast<int>(rng() % static_cast<uint64_t>(n)); };
  static const char* kApps[] = {"web", "db", "cache"};
  Random r;
  for (int32_t i = 0; i < nodes; ++i) {
    r.node_names.push_back(StrCat("n", i));
    r.cluster.nodes.push_back(MakeNode(StrCat("n", i), StrCat("z", pick(3)), std::to_string(2 + pick(6)), pick(8) == 0));
  }
  std::vector<int64_t> free(static_cast<size_t>(nodes));
  for (int32_t i = 0; i < nodes; ++i) free[i] = r.cluster.nodes[i].allocatable.at("cpu").MilliValue();
  for (int32_t k = 0; k < nodes * 3; ++k) {
    const int32_t node = pick(nodes);
    const int64_t milli = 250 * (1 + pick(6));
    if (free[node] < milli) continue;
    free[node] -= milli;
    json j = PodJson(StrCat("e", k), StrCat("n", node), StrCat(milli, "m"), kApps[pick(3)]);
    j["spec"]["priority"] = pick(3) * 100;
    if (pick(5) == 0) {
      j["spec"]["topologySpreadConstraints"] = json::array(
          {{{"maxSkew", 1 + pick(2)}, {"topologyKey", "topology.kubernetes.io/zone"},
            {"whenUnsatisfiable", pick(2) ? "DoNotSchedule" : "ScheduleAnyway"},
            {"labelSelector", {{"matchLabels", {{"app", j["metadata"]["labels"]["app"]}}}}}}});
    }
    if (pick(6) == 0) {
      j["spec"]["affinity"]["podAntiAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"] = json::array(
          {{{"labelSelector", {{"matchLabels", {{"app", j["metadata"]["labels"]["app"]}}}}},
            {"topologyKey", "kubernetes.io/hostname"}}});
    }
    if (pick(6) == 0) {
      j["spec"]["tolerations"] = json::array({{{"key", "dedicated"}, {"operator", "Exists"}, {"effect", "NoSchedule"}}});
    }
    if (pick(10) == 0) {
      j["metadata"]["ownerReferences"] =
          json::array({{{"apiVersion", "apps/v1"}, {"kind", "DaemonSet"}, {"name", "agent"}, {"uid", "ds"}, {"controller", true}}});
    }
    r.cluster.pods.push_back(*DecodePod(j, "test"));
  }
  r.cluster.pdbs = {MakePdb("web", pick(4)), MakePdb("db", pick(2))};
  return r;
}

// What a drain must equal: the evicted pods scheduled by a fresh scheduler on the cluster
// the deletions leave (its objects, nodes in the tree's order, as a new cluster).
std::vector<cycle::Placement> ScheduleWithout(const ObjectSet& cluster, const std::vector<std::string>& drained, bool reference) {
  auto live = Make(cluster, reference);
  state::ClusterState& st = live->state();
  std::set<std::string> names(drained.begin(), drained.end());
  std::vector<Pod> evicted;
  for (const Pod& p : cluster.pods) {
    if (!names.count(p.node_name)) continue;
    EXPECT_TRUE(st.Apply(state::PodEvent(state::EventType::kDeleted, p)).ok());
    if (!Evicted(p)) continue;
    Pod again = p;
    again.node_name.clear();
    evicted.push_back(std::move(again));
  }
  for (const std::string& n : drained) EXPECT_TRUE(st.Apply(state::NodeEvent(state::EventType::kDeleted, *st.FindNode(n))).ok());
  const ObjectSet without = st.Objects();
  auto fresh = Make(without, reference);
  return fresh->ScheduleAll(evicted);
}

TEST(WhatIfTest, DrainEqualsScheduleOnTheClusterWithoutTheNodesRandomized) {
  int64_t placed = 0, unplaced = 0, drainable = 0, violations = 0;
  for (int32_t size : {12, 40, 150, 1000}) {
    for (uint64_t seed = 1; seed <= (size >= 1000 ? 1u : 4u); ++seed) {
      Random rc = MakeRandom(seed * 131 + static_cast<uint64_t>(size), size);
      std::mt19937_64 rng(seed);
      std::vector<std::vector<std::string>> sides_results;
      for (bool reference : {false, true}) {
        auto s = Make(rc.cluster, reference);
        const std::string before = StateOf(*s);
        std::vector<std::string> lines;
        for (int q = 0; q < 4; ++q) {
          std::vector<std::string> drained;
          std::mt19937_64 pick_rng(seed * 1000 + static_cast<uint64_t>(q));
          for (int n = 0; n < 1 + q % 3; ++n) {
            const std::string name = rc.node_names[pick_rng() % rc.node_names.size()];
            if (std::find(drained.begin(), drained.end(), name) == drained.end()) drained.push_back(name);
          }
          auto r = Drain(s.get(), drained);
          ASSERT_TRUE(r.ok()) << r.status();
          const std::string what = StrCat(size, " nodes, seed ", seed, ", drain ", absl::StrJoin(drained, ","),
                                          reference ? " (reference)" : " (engine)");
          ASSERT_EQ(StateOf(*s), before) << what;
          const std::vector<cycle::Placement> want = ScheduleWithout(rc.cluster, drained, reference);
          ASSERT_EQ(r->pods.size(), want.size()) << what;
          for (size_t k = 0; k < want.size(); ++k) {
            ASSERT_EQ(Describe(r->pods[k]), Describe(want[k])) << what;
            lines.push_back(Describe(r->pods[k]));
            (r->pods[k].node.empty() ? unplaced : placed) += 1;
          }
          drainable += r->drainable;
          violations += static_cast<int64_t>(r->pdb_violations.size());
        }
        sides_results.push_back(lines);
      }
      EXPECT_EQ(sides_results[0], sides_results[1]) << "engine and reference differ, seed " << seed;
    }
  }
  // The inputs must exercise what they test.
  EXPECT_GT(placed, 50);
  EXPECT_GT(unplaced, 5);
  EXPECT_GT(drainable, 3);
  EXPECT_GT(violations, 3);
}

TEST(WhatIfTest, ConsolidateIsOneDrainPerCandidate) {
  Random rc = MakeRandom(77, 30);
  auto s = Make(rc.cluster, false);
  const std::string before = StateOf(*s);
  std::vector<std::pair<size_t, size_t>> heard;  // the progress callback, once per candidate
  auto all = Consolidate(s.get(), {}, [&](size_t done, size_t total) { heard.push_back({done, total}); });
  ASSERT_TRUE(all.ok()) << all.status();
  ASSERT_EQ(all->size(), 30u);
  ASSERT_EQ(heard.size(), 30u);
  for (size_t k = 0; k < heard.size(); ++k) EXPECT_EQ(heard[k], std::make_pair(k + 1, size_t{30}));
  EXPECT_EQ(StateOf(*s), before);
  const std::vector<std::string> order = s->state().NodeOrder();
  int64_t removable = 0;
  for (size_t k = 0; k < all->size(); ++k) {
    const DrainResult& c = (*all)[k];
    ASSERT_EQ(c.nodes, std::vector<std::string>{order[k]});
    auto one = Drain(s.get(), c.nodes);
    ASSERT_TRUE(one.ok());
    EXPECT_EQ(one->drainable, c.drainable) << order[k];
    ASSERT_EQ(one->pods.size(), c.pods.size());
    for (size_t p = 0; p < c.pods.size(); ++p) EXPECT_EQ(Describe(one->pods[p]), Describe(c.pods[p]));
    removable += c.drainable;
  }
  EXPECT_GT(removable, 0);
  EXPECT_LT(removable, 30);
  auto some = Consolidate(s.get(), {"n3", "nope"});
  EXPECT_TRUE(absl::IsInvalidArgument(some.status()));
  EXPECT_NE(std::string(some.status().message()).find("candidates[1]"), std::string::npos) << some.status();
}

// Candidates shared among copies of one state, on threads of their own, give the list one
// state gives: every node's drain, in order, engine and reference; progress adds up.
TEST(WhatIfTest, ConsolidateSharedAmongCopiesEqualsOneStateRandomized) {
  for (bool reference : {false, true}) {
    for (uint64_t seed = 1; seed <= 3; ++seed) {
      const Random rc = MakeRandom(seed * 41, 24 + static_cast<int32_t>(seed) * 7);
      auto one = Make(rc.cluster, reference);
      auto want = Consolidate(one.get(), {});
      ASSERT_TRUE(want.ok()) << want.status();
      for (size_t copies : {1, 2, 3}) {
        std::vector<std::unique_ptr<cycle::Scheduler>> owned;
        std::vector<cycle::Scheduler*> states;
        for (size_t k = 0; k < copies; ++k) {
          owned.push_back(Make(rc.cluster, reference));
          states.push_back(owned.back().get());
        }
        std::vector<std::string> order = one->state().NodeOrder();
        size_t last = 0, calls = 0;
        auto got = Consolidate(states, {}, [&](size_t done, size_t total) {
          EXPECT_EQ(total, order.size());
          EXPECT_EQ(done, last + 1);  // serialized, one candidate at a time
          last = done;
          ++calls;
        });
        ASSERT_TRUE(got.ok()) << got.status();
        ASSERT_EQ(got->size(), want->size());
        EXPECT_EQ(calls, order.size());
        for (size_t c = 0; c < want->size(); ++c) {
          const DrainResult& a = (*got)[c];
          const DrainResult& b = (*want)[c];
          ASSERT_EQ(a.nodes, b.nodes) << copies << " copies, seed " << seed;
          EXPECT_EQ(a.drainable, b.drainable) << a.nodes[0];
          ASSERT_EQ(a.pods.size(), b.pods.size()) << a.nodes[0];
          for (size_t p = 0; p < a.pods.size(); ++p) EXPECT_EQ(Describe(a.pods[p]), Describe(b.pods[p]));
        }
        auto bad = Consolidate(states, {order[0], order[1], order[2], "nope"});
        EXPECT_TRUE(absl::IsInvalidArgument(bad.status()));
        EXPECT_NE(std::string(bad.status().message()).find("candidates[3]"), std::string::npos) << bad.status();
      }
    }
  }
  EXPECT_TRUE(absl::IsInvalidArgument(Consolidate(std::vector<cycle::Scheduler*>{}, {}).status()));
}

TEST(WhatIfTest, ReplicasEqualCopiesScheduledWithoutPreemption) {
  for (bool reference : {false, true}) {
    for (uint64_t seed = 1; seed <= 3; ++seed) {
      Random rc = MakeRandom(seed + 500, 40);
      for (const std::string cpu : {"500m", "2"}) {
        json j = PodJson("tmpl", "", cpu, "web");
        j["spec"]["priority"] = 1000;  // would preempt, were it allowed
        if (seed == 2) {
          j["spec"]["topologySpreadConstraints"] = json::array(
              {{{"maxSkew", 1}, {"topologyKey", "topology.kubernetes.io/zone"}, {"whenUnsatisfiable", "DoNotSchedule"},
                {"labelSelector", {{"matchLabels", {{"app", "web"}}}}}}});
        }
        const Pod tmpl = *DecodePod(j, "test");
        auto s = Make(rc.cluster, reference);
        const std::string before = StateOf(*s);
        auto r = Replicas(s.get(), tmpl, 100000);
        ASSERT_TRUE(r.ok()) << r.status();
        EXPECT_EQ(StateOf(*s), before);
        ASSERT_TRUE(r->stopped_by.has_value());
        EXPECT_GT(r->replicas, 0);
        EXPECT_FALSE(r->stopped_by->preemption.has_value() && !r->stopped_by->preemption->victims.empty());
        // The same copies scheduled by a fresh scheduler: the first replicas+1 decide alike.
        std::vector<Pod> copies;
        for (int64_t k = 0; k <= r->replicas; ++k) {
          Pod c = tmpl;
          c.meta.name = StrCat("tmpl-whatif-", k);
          c.meta.uid.clear();
          c.preemption_policy = "Never";
          copies.push_back(c);
        }
        auto fresh = Make(rc.cluster, reference);
        const std::vector<cycle::Placement> want = fresh->ScheduleAll(copies);
        std::map<std::string, int64_t> per_node;
        for (int64_t k = 0; k < r->replicas; ++k) {
          ASSERT_FALSE(want[k].node.empty()) << k;
          ++per_node[want[k].node];
        }
        EXPECT_EQ(r->per_node, per_node);
        EXPECT_EQ(Describe(*r->stopped_by), Describe(want[r->replicas]));
        // A smaller max stops there.
        auto capped = Replicas(s.get(), tmpl, 3);
        ASSERT_TRUE(capped.ok());
        EXPECT_EQ(capped->replicas, std::min<int64_t>(3, r->replicas));
        EXPECT_EQ(capped->stopped_by.has_value(), r->replicas < 3);
      }
    }
  }
  const Random small = MakeRandom(1, 5);  // outlives the scheduler over it
  auto s = Make(small.cluster, false);
  EXPECT_TRUE(absl::IsInvalidArgument(Replicas(s.get(), MakePod("x", "n0", "1"), 3).status()));
  EXPECT_TRUE(absl::IsInvalidArgument(Replicas(s.get(), MakePod("x", "", "1"), 0).status()));
}

std::string Verdict(const cycle::NodeFit& f) {
  return StrCat(f.node, ": ", CodeName(f.status.code), " ", f.status.Message(), " (", f.plugin, ")");
}

// CanSchedulePod's verdicts equal the cycle's for every node the cycle visits (its
// explanation), the reference's for every node, and the cycle's choice is among the fits.
// Up to six pending pods with the constraints of the cluster's bound pods (every
// `stride`-th), named like-<k>.
std::vector<Pod> LikeExisting(const ObjectSet& cluster, size_t stride) {
  std::vector<Pod> out;
  for (size_t k = 0; k < 6 && k < cluster.pods.size(); ++k) {
    Pod like = cluster.pods[k * stride % cluster.pods.size()];
    like.meta.name = StrCat("like-", k);
    like.meta.uid.clear();
    like.node_name.clear();
    out.push_back(std::move(like));
  }
  return out;
}

TEST(WhatIfTest, CanSchedulePodAgreesWithTheCycleAndTheReferenceRandomized) {
  int64_t fits = 0, rejected = 0, compared = 0;
  for (int32_t size : {40, 150}) {
    for (uint64_t seed = 1; seed <= 3; ++seed) {
      Random rc = MakeRandom(seed * 17 + static_cast<uint64_t>(size), size);
      std::vector<Pod> probes;
      for (const std::string cpu : {"500m", "3", "7"}) probes.push_back(MakePod("probe-" + cpu, "", cpu));
      for (Pod& like : LikeExisting(rc.cluster, 5)) probes.push_back(std::move(like));
      std::vector<std::vector<std::string>> sides;
      for (bool reference : {false, true}) {
        auto s = Make(rc.cluster, reference);
        s->SetExplain(true);
        const std::string before = StateOf(*s);
        std::vector<std::string> lines;
        for (const Pod& pod : probes) {
          auto got = CanSchedulePod(s.get(), pod);
          ASSERT_TRUE(got.ok()) << got.status();
          ASSERT_EQ(got->size(), static_cast<size_t>(size));
          std::map<std::string, const cycle::NodeFit*> by_node;
          std::set<std::string> feasible;
          for (const cycle::NodeFit& f : *got) {
            by_node[f.node] = &f;
            if (f.status.IsSuccess()) feasible.insert(f.node);
            lines.push_back(Verdict(f));
          }
          fits += static_cast<int64_t>(feasible.size());
          rejected += size - static_cast<int64_t>(feasible.size());
          ASSERT_EQ(StateOf(*s), before);
          // The cycle on the same state, undone.
          ASSERT_TRUE(s->state().Begin().ok());
          const cycle::Placement p = s->Schedule(pod);
          ASSERT_TRUE(s->state().Revert().ok());
          ASSERT_EQ(StateOf(*s), before);
          if (p.node.empty()) {
            EXPECT_TRUE(feasible.empty()) << pod.meta.name << ": " << p.message;
          } else {
            EXPECT_TRUE(feasible.count(p.node)) << pod.meta.name << " -> " << p.node;
          }
          ASSERT_NE(p.explanation, nullptr);
          for (const cycle::NodeExplanation& n : p.explanation->nodes) {
            if (!n.visited) continue;
            const cycle::NodeFit& f = *by_node.at(n.node);
            EXPECT_EQ(CodeName(f.status.code), CodeName(n.filter.code)) << pod.meta.name << " on " << n.node;
            EXPECT_EQ(f.status.Message(), n.filter.Message()) << pod.meta.name << " on " << n.node;
            EXPECT_EQ(f.plugin, n.filter_plugin) << pod.meta.name << " on " << n.node;
            ++compared;
          }
          // FirstFit in reverse scan order: the last feasible node of the scan order.
          std::vector<std::string> reversed = s->state().NodeOrder();
          std::reverse(reversed.begin(), reversed.end());
          auto first = FirstFit(s.get(), pod, reversed);
          ASSERT_TRUE(first.ok()) << first.status();
          std::optional<std::string> want;
          for (const std::string& n : reversed) {
            if (feasible.count(n)) {
              want = n;
              break;
            }
          }
          EXPECT_EQ(*first, want) << pod.meta.name;
        }
        sides.push_back(lines);
      }
      EXPECT_EQ(sides[0], sides[1]) << "engine and reference differ: " << size << " nodes, seed " << seed;
    }
  }
  EXPECT_GT(fits, 100);
  EXPECT_GT(rejected, 100);
  EXPECT_GT(compared, 200);
  const Random small = MakeRandom(3, 5);  // outlives the scheduler over it
  auto s = Make(small.cluster, false);
  EXPECT_TRUE(absl::IsInvalidArgument(CanSchedulePod(s.get(), MakePod("p", "", "1"), {"n0", "nope"}).status()));
  Pod other = MakePod("p", "", "1");
  other.scheduler_name = "batch";
  EXPECT_TRUE(absl::IsInvalidArgument(CanSchedulePod(s.get(), other).status()));
}

// FirstFit with a reservation binds each pod where it fits, so the next pod's check counts
// it: the state afterwards is the one the same pods added bound there give, engine and
// reference alike, and a transaction takes it all back.
TEST(WhatIfTest, FirstFitReserveBindsWhereItFitsRandomized) {
  int64_t reserved = 0, unplaced = 0;
  for (uint64_t seed = 1; seed <= 4; ++seed) {
    for (int32_t size : {7, 40}) {
      const Random rc = MakeRandom(seed * 31 + static_cast<uint64_t>(size), size);
      std::vector<Pod> pods;
      for (int k = 0; k < 16; ++k) pods.push_back(MakePod(StrCat("r", k), "", k % 3 == 0 ? "2" : k % 3 == 1 ? "1" : "500m"));
      for (Pod& like : LikeExisting(rc.cluster, 7)) pods.push_back(std::move(like));
      std::vector<std::string> sides;
      for (bool reference : {false, true}) {
        auto s = Make(rc.cluster, reference);
        const std::string before = StateOf(*s);
        ASSERT_TRUE(s->state().Begin().ok());
        std::string lines;
        std::vector<Pod> bound;
        for (size_t k = 0; k < pods.size(); ++k) {
          std::vector<std::string> order = s->state().NodeOrder();
          if (k % 2) std::reverse(order.begin(), order.end());
          auto got = FirstFit(s.get(), pods[k], order, /*reserve=*/true);
          ASSERT_TRUE(got.ok()) << got.status();
          lines += StrCat(pods[k].meta.name, "->", got->value_or("-"), "\n");
          if (!*got) {
            if (!reference) ++unplaced;
            continue;
          }
          if (!reference) ++reserved;
          const Pod* now = s->state().FindBoundPod(ObjectKey(pods[k].meta));
          ASSERT_NE(now, nullptr) << pods[k].meta.name;
          EXPECT_EQ(now->node_name, **got);
          bound.push_back(pods[k]);
          bound.back().node_name = **got;
        }
        const std::string after = StateOf(*s);
        ASSERT_TRUE(s->state().Revert().ok());
        EXPECT_EQ(StateOf(*s), before);
        ASSERT_TRUE(s->state().Begin().ok());
        for (const Pod& p : bound) {
          state::ClusterEvent e;
          e.type = state::EventType::kAdded;
          e.kind = "Pod";
          e.where = "test";
          e.object.pods.push_back(p);
          ASSERT_TRUE(s->state().Apply(std::move(e)).ok());
        }
        EXPECT_EQ(StateOf(*s), after) << "seed " << seed << ", " << size << " nodes";
        ASSERT_TRUE(s->state().Revert().ok());
        sides.push_back(lines);
      }
      EXPECT_EQ(sides[0], sides[1]) << "engine and reference differ: " << size << " nodes, seed " << seed;
    }
  }
  EXPECT_GT(reserved, 40);
  EXPECT_GT(unplaced, 5);
}

// --- scale-up ------------------------------------------------------------------------

// A pending pod of ReplicaSet `rs` (empty: no controller).
json PendingJson(const std::string& name, const std::string& cpu, const std::string& app, const std::string& rs) {
  json j = PodJson(name, "", cpu, app);
  if (!rs.empty()) {
    j["metadata"]["ownerReferences"] =
        json::array({{{"apiVersion", "apps/v1"}, {"kind", "ReplicaSet"}, {"name", rs}, {"uid", rs}, {"controller", true}}});
  }
  return j;
}

void AntiAffineOnHostname(json* j) {
  (*j)["spec"]["affinity"]["podAntiAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"] = json::array(
      {{{"labelSelector", {{"matchLabels", {{"app", (*j)["metadata"]["labels"]["app"]}}}}}, {"topologyKey", "kubernetes.io/hostname"}}});
}

std::string Plan(const ScaleUpResult& r) {
  std::string out;
  for (const auto& [t, n] : r.new_nodes) out += StrCat(t, "=", n, " ");
  for (const cycle::Placement& p : r.pods) {
    out += StrCat("\n", p.pod, " -> ", p.node, " [", CodeName(p.code), "] ", p.message, p.gated ? " gated" : "",
                  p.other_scheduler ? " other" : "");
  }
  return out;
}

// By hand: a (4 CPU) holds 2 CPU, b (4 CPU) is empty; the template has 4 CPU. The 8-CPU pod
// is tried first (largest) and fits not even an empty template node; web's three 3-CPU
// pods: one on b, then a new node each.
TEST(ScaleUpTest, ByHand) {
  for (bool reference : {false, true}) {
    ObjectSet cluster;
    cluster.nodes = {MakeNode("a", "z1", "4"), MakeNode("b", "z1", "4")};
    cluster.pods = {MakePod("used", "a", "2")};
    auto s = Make(cluster, reference);
    const std::string before = StateOf(*s);
    std::vector<Pod> pending;
    for (int k = 0; k < 3; ++k) pending.push_back(*DecodePod(PendingJson(StrCat("web-", k), "3", "web", "web"), "test"));
    pending.push_back(*DecodePod(PendingJson("huge", "8", "batch", ""), "test"));
    Pod gated = *DecodePod(PendingJson("gated", "1", "web", ""), "test");
    gated.scheduling_gates = {"example.com/wait"};
    pending.push_back(gated);
    Pod other = *DecodePod(PendingJson("other", "1", "web", ""), "test");
    other.scheduler_name = "batch";
    pending.push_back(other);
    const std::vector<Node> templates = {MakeNode("pool", "z1", "4")};
    auto r = ScaleUp(s.get(), pending, templates);
    ASSERT_TRUE(r.ok()) << r.status();
    EXPECT_EQ(StateOf(*s), before);
    EXPECT_EQ(Plan(*r),
              "pool=2 "
              "\ndefault/huge ->  [Unschedulable] 0/1 nodes are available: 1 Insufficient cpu."
              "\ndefault/web-0 -> b [Success] "
              "\ndefault/web-1 -> pool-0 [Success] "
              "\ndefault/web-2 -> pool-1 [Success] "
              "\ndefault/gated ->  [UnschedulableAndUnresolvable] waiting for scheduling gates: [example.com/wait] gated"
              "\ndefault/other ->  [Skip] left alone: no profile has schedulerName \"batch\" other");
    // Nested in an open transaction, as the other what-ifs.
    ASSERT_TRUE(s->state().Begin().ok());
    auto nested = ScaleUp(s.get(), pending, templates);
    ASSERT_TRUE(nested.ok()) << nested.status();
    EXPECT_EQ(Plan(*nested), Plan(*r));
    ASSERT_TRUE(s->state().Revert().ok());
    ASSERT_EQ(r->nodes.size(), 2u);
    EXPECT_EQ(r->nodes[1].meta.labels.at("kubernetes.io/hostname"), "pool-1");
    // The limit: one new node, the third web pod stays pending.
    auto one = ScaleUp(s.get(), pending, templates, ScaleUpOptions{1});
    ASSERT_TRUE(one.ok());
    ASSERT_EQ(one->pods.size(), 6u);
    EXPECT_EQ(one->new_nodes.at("pool"), 1);
    EXPECT_EQ(one->pods[3].message, "no new node: the scale-up's limit of 1 new nodes is reached");
    EXPECT_EQ(StateOf(*s), before);
    // Inputs named in errors.
    std::vector<Pod> twice = {pending[0], pending[0]};
    EXPECT_NE(std::string(ScaleUp(s.get(), twice, templates).status().message()).find("pods[1]"), std::string::npos);
    EXPECT_TRUE(absl::IsInvalidArgument(ScaleUp(s.get(), {MakePod("x", "a", "1")}, templates).status()));
    EXPECT_NE(std::string(ScaleUp(s.get(), pending, {templates[0], templates[0]}).status().message()).find("templates[1]"),
              std::string::npos);
    EXPECT_TRUE(absl::IsInvalidArgument(ScaleUp(s.get(), pending, templates, ScaleUpOptions{-1}).status()));
    EXPECT_EQ(StateOf(*s), before);
  }
}

// Several templates: the first in the given order whose empty node the pod fits. gpu nodes
// are tainted: pods without the toleration go to the cpu template.
TEST(ScaleUpTest, FirstTemplateWhoseEmptyNodeFits) {
  ObjectSet cluster;
  cluster.nodes = {MakeNode("a", "z1", "1")};
  auto s = Make(cluster, false);
  json tol = PendingJson("trainer-0", "2", "train", "train");
  tol["spec"]["tolerations"] = json::array({{{"key", "dedicated"}, {"operator", "Exists"}, {"effect", "NoSchedule"}}});
  std::vector<Pod> pending = {*DecodePod(tol, "test"), *DecodePod(PendingJson("web-0", "2", "web", "web"), "test")};
  const std::vector<Node> templates = {MakeNode("gpu", "z1", "4", /*tainted=*/true), MakeNode("cpu", "z1", "4")};
  auto r = ScaleUp(s.get(), pending, templates);
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(Plan(*r), "cpu=1 gpu=1 \ndefault/trainer-0 -> gpu-0 [Success] \ndefault/web-0 -> cpu-0 [Success] ");
  // A pod for no template: each template's reason counted.
  json big = PendingJson("big", "6", "web", "");
  auto none = ScaleUp(s.get(), {*DecodePod(big, "test")}, templates);
  ASSERT_TRUE(none.ok());
  EXPECT_EQ(none->pods[0].message,
            "0/2 nodes are available: 1 Insufficient cpu, 1 node(s) had untolerated taint(s).");
  EXPECT_EQ(none->pods[0].unschedulable_plugins, (std::vector<std::string>{"NodeResourcesFit", "TaintToleration"}));
}

// Cluster Autoscaler's anti-affinity surge: every pending pod anti-affine on hostname with
// its app, whose pods hold every existing node: one new node each, the equivalence group
// going the last-node path (no scan of the cluster per pod).
TEST(ScaleUpTest, AntiAffinitySurgeNeedsOneNodeEach) {
  constexpr int kNodes = 2000, kPending = 300;
  ObjectSet cluster;
  for (int i = 0; i < kNodes; ++i) {
    cluster.nodes.push_back(MakeNode(StrCat("n", i), StrCat("z", i % 3), "8"));
    json j = PodJson(StrCat("web-old-", i), StrCat("n", i), "500m", "web");
    AntiAffineOnHostname(&j);
    cluster.pods.push_back(*DecodePod(j, "test"));
  }
  std::vector<Pod> pending;
  for (int k = 0; k < kPending; ++k) {
    json j = PendingJson(StrCat("web-", k), "500m", "web", "web");
    AntiAffineOnHostname(&j);
    pending.push_back(*DecodePod(j, "test"));
  }
  for (bool reference : {false, true}) {
    auto s = Make(cluster, reference);
    const std::string before = StateOf(*s);
    auto r = ScaleUp(s.get(), pending, {MakeNode("pool", "z1", "8")}, ScaleUpOptions{100000});
    ASSERT_TRUE(r.ok()) << r.status();
    EXPECT_EQ(r->new_nodes.at("pool"), kPending);
    for (int k = 0; k < kPending; ++k) EXPECT_EQ(r->pods[k].node, StrCat("pool-", k));
    if (reference) continue;  // the limit once
    auto capped = ScaleUp(s.get(), pending, {MakeNode("pool", "z1", "8")}, ScaleUpOptions{100});
    ASSERT_TRUE(capped.ok());
    EXPECT_EQ(capped->new_nodes.at("pool"), 100);
    EXPECT_EQ(capped->pods.back().message, "no new node: the scale-up's limit of 100 new nodes is reached");
    EXPECT_EQ(StateOf(*s), before);
  }
}

// Pending pods in ReplicaSets and alone, with the random cluster's kinds of constraint:
// zone spread, hostname anti-affinity, tolerations, node selectors (on a template's label).
std::vector<Pod> RandomPending(uint64_t seed, int32_t count) {
  std::mt19937_64 rng(seed);
  auto pick = [&](int n) { return static_cast<int>(rng() % static_cast<uint64_t>(n)); };
  static const char* kApps[] = {"web", "db", "cache"};
  std::vector<Pod> out;
  int32_t made = 0;
  for (int g = 0; made < count; ++g) {
    const bool alone = pick(4) == 0;
    const int n = alone ? 1 : 1 + pick(12);
    const std::string app = kApps[pick(3)];
    const std::string cpu = StrCat(250 * (1 + pick(12)), "m");
    const int spread = pick(5), anti = pick(5), tolerate = pick(5), select = pick(8);
    for (int k = 0; k < n && made < count; ++k, ++made) {
      json j = PendingJson(StrCat("p", g, "-", k), cpu, app, alone ? "" : StrCat("rs", g));
      if (spread == 0) {
        j["spec"]["topologySpreadConstraints"] = json::array(
            {{{"maxSkew", 1 + g % 2}, {"topologyKey", "topology.kubernetes.io/zone"},
              {"whenUnsatisfiable", g % 3 ? "DoNotSchedule" : "ScheduleAnyway"},
              {"labelSelector", {{"matchLabels", {{"app", app}}}}}}});
      }
      if (anti == 0) AntiAffineOnHostname(&j);
      if (tolerate == 0) {
        j["spec"]["tolerations"] = json::array({{{"key", "dedicated"}, {"operator", "Exists"}, {"effect", "NoSchedule"}}});
      }
      if (select == 0) j["spec"]["nodeSelector"] = {{"pool", "big"}};
      if (select == 1) j["spec"]["nodeSelector"] = {{"topology.kubernetes.io/zone", "z1"}};
      out.push_back(*DecodePod(j, "test"));
    }
  }
  return out;
}

std::vector<Node> RandomTemplates(uint64_t seed) {
  Node small = MakeNode("small", "z1", "4");
  Node big = MakeNode("big", "z2", "8");
  big.meta.labels["pool"] = "big";
  Node gpu = MakeNode("gpu", "z0", "8", /*tainted=*/true);
  if (seed % 3 == 0) return {small};
  if (seed % 3 == 1) return {small, big};
  return {gpu, big, small};
}

// The plan replayed on the scalar reference: each placement, in the plan's order, must pass
// the reference's PreFilter and Filter on its node. `upfront`: every reported node is in the
// cluster from the start (the nodes the plan reports suffice for every pod it places);
// otherwise each joins when the plan first uses it (the cluster as it stood at that step).
void Replay(const ObjectSet& cluster, const std::vector<Pod>& pending, const ScaleUpResult& r, bool upfront,
            const std::string& what) {
  std::map<std::string, const Pod*> by_key;
  for (const Pod& p : pending) by_key[ObjectKey(p.meta)] = &p;
  std::map<std::string, const Node*> added;
  for (const Node& n : r.nodes) added[n.meta.name] = &n;
  ObjectSet start = cluster;
  if (upfront) start.nodes.insert(start.nodes.end(), r.nodes.begin(), r.nodes.end());
  auto ref = Make(start, true);
  std::map<std::string, int64_t> used;  // template -> new nodes holding a pod
  for (const cycle::Placement& p : r.pods) {
    if (p.node.empty()) continue;
    if (auto it = added.find(p.node); it != added.end() && !used.count(p.node)) {
      if (!upfront) ASSERT_TRUE(ref->state().Apply(state::NodeEvent(state::EventType::kAdded, *it->second)).ok()) << what;
      used[p.node] = 1;
    }
    auto fits = ref->Filter(*by_key.at(p.pod), {p.node}, false);
    ASSERT_TRUE(fits.ok()) << fits.status() << " " << what;
    ASSERT_TRUE((*fits)[0].status.IsSuccess()) << p.pod << " on " << p.node << ": " << (*fits)[0].status.Message() << " "
                                               << what << (upfront ? " (nodes upfront)" : " (nodes as used)");
    ASSERT_TRUE(ref->Assume(*by_key.at(p.pod), p.node).ok()) << what;
  }
  EXPECT_EQ(used.size(), r.nodes.size()) << "every new node holds a pod " << what;
  int64_t total = 0;
  for (const auto& [t, n] : r.new_nodes) total += n;
  EXPECT_EQ(total, static_cast<int64_t>(r.nodes.size())) << what;
}

TEST(ScaleUpTest, PlanPassesTheReferenceFilterStepByStepRandomized) {
  int64_t on_existing = 0, on_new = 0, pending_left = 0, nodes_added = 0;
  for (int32_t size : {12, 40, 150, 1000}) {
    for (uint64_t seed = 1; seed <= (size >= 1000 ? 2u : 5u); ++seed) {
      const Random rc = MakeRandom(seed * 977 + static_cast<uint64_t>(size), size);
      const std::vector<Pod> pending = RandomPending(seed * 31 + static_cast<uint64_t>(size), size >= 1000 ? 300 : 60);
      const std::vector<Node> templates = RandomTemplates(seed);
      std::vector<std::string> plans;
      for (bool reference : {false, true}) {
        auto s = Make(rc.cluster, reference);
        const std::string before = StateOf(*s);
        const ScaleUpOptions options{seed == 2 ? 5 : 1000};
        auto r = ScaleUp(s.get(), pending, templates, options);
        ASSERT_TRUE(r.ok()) << r.status();
        const std::string what = StrCat(size, " nodes, seed ", seed, reference ? " (reference)" : " (engine)");
        ASSERT_EQ(StateOf(*s), before) << what;
        ASSERT_EQ(r->pods.size(), pending.size()) << what;
        plans.push_back(Plan(*r));
        if (reference) continue;
        Replay(rc.cluster, pending, *r, /*upfront=*/false, what);
        Replay(rc.cluster, pending, *r, /*upfront=*/true, what);
        for (const cycle::Placement& p : r->pods) {
          if (p.node.empty()) {
            ++pending_left;
          } else {
            (s->state().FindNode(p.node) ? on_existing : on_new) += 1;
          }
        }
        nodes_added += static_cast<int64_t>(r->nodes.size());
      }
      EXPECT_EQ(plans[0], plans[1]) << "engine and reference differ: " << size << " nodes, seed " << seed;
    }
  }
  // The inputs must exercise what they test.
  EXPECT_GT(on_existing, 100);
  EXPECT_GT(on_new, 100);
  EXPECT_GT(pending_left, 20);
  EXPECT_GT(nodes_added, 50);
}

}  // namespace
}  // namespace kplace::whatif
