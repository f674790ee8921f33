#include "kplace/serve/state_pool.h"

#include <atomic>
#include <random>
#include <thread>

#include <gtest/gtest.h>

#include "kplace/common/status.h"
#include "kplace/common/strings.h"

namespace kplace::serve {
namespace {

// Nodes in three zones; pods of two apps, some spread over zones, some anti-affine per node,
// so that decisions depend on what was bound before (and on the start index).
std::string NodeJson(const std::string& name, int cpu, int zone) {
  return StrCat(R"({"apiVersion":"v1","kind":"Node","metadata":{"name":")", name,
                R"(","labels":{"kubernetes.io/hostname":")", name, R"(","topology.kubernetes.io/zone":"z)", zone,
                R"("}},"status":{"allocatable":{"cpu":")", cpu, R"(","memory":"16Gi","pods":"110"}}})");
}

std::string PodJson(const std::string& name, int millicpu, int shape, const std::string& node = "") {
  const std::string app = shape % 2 ? "web" : "db";
  std::string constraints;
  if (shape % 3 == 1) {
    constraints = StrCat(R"("topologySpreadConstraints":[{"maxSkew":1,"topologyKey":"topology.kubernetes.io/zone",)",
                         R"("whenUnsatisfiable":"DoNotSchedule","labelSelector":{"matchLabels":{"app":")", app, R"("}}}],)");
  } else if (shape % 3 == 2) {
    constraints = StrCat(R"("affinity":{"podAntiAffinity":{"requiredDuringSchedulingIgnoredDuringExecution":[{)",
                         R"("topologyKey":"kubernetes.io/hostname","labelSelector":{"matchLabels":{"app":")", app,
                         R"("}}}]}},)");
  }
  return StrCat(R"({"apiVersion":"v1","kind":"Pod","metadata":{"name":")", name,
                R"(","namespace":"default","labels":{"app":")", app, R"("}},"spec":{)", constraints,
                node.empty() ? "" : StrCat(R"("nodeName":")", node, R"(",)"),
                R"("containers":[{"name":"c","image":"pause","resources":{"requests":{"cpu":")", millicpu, R"(m"}}}]}})");
}

std::string List(const std::vector<std::string>& items) {
  std::string out = R"({"apiVersion":"v1","kind":"List","items":[)";
  for (size_t i = 0; i < items.size(); ++i) out += (i ? "," : "") + items[i];
  return out + "]}";
}

std::string Event(const std::string& type, const std::string& object) {
  return StrCat(R"({"type":")", type, R"(","object":)", object, "}");
}

std::string Cluster(std::mt19937_64& rng, int nodes) {
  std::vector<std::string> items;
  for (int i = 0; i < nodes; ++i) items.push_back(NodeJson(StrCat("n", i), 2 + static_cast<int>(rng() % 4), i % 3));
  for (int i = 0; i < nodes; ++i) {
    if (rng() % 2) items.push_back(PodJson(StrCat("b", i), 200 + static_cast<int>(rng() % 800), static_cast<int>(rng() % 6), StrCat("n", i)));
  }
  return List(items);
}

std::string Placements(const std::vector<cycle::Placement>& ps) {
  std::string out;
  for (const cycle::Placement& p : ps) out += StrCat(p.pod, "@", p.node, " ", p.message, "\n");
  return out;
}

std::string Fits(const std::vector<cycle::NodeFit>& fits) {
  std::string out;
  for (const cycle::NodeFit& f : fits) out += StrCat(f.node, ":", f.status.IsSuccess() ? "fits" : f.status.Message(), "\n");
  return out;
}

// One random write, the same text for every state it is given to.
struct RandomWrite {
  enum Kind { kApply, kSchedule, kReserve } kind;
  std::vector<std::string> events;
  std::string pods;
  std::vector<std::string> nodes;
};

RandomWrite MakeWrite(std::mt19937_64& rng, int nodes, int* serial, bool reserve_ok) {
  RandomWrite w;
  const int pick = static_cast<int>(rng() % (reserve_ok ? 4 : 3));
  if (pick == 0) {
    w.kind = RandomWrite::kApply;
    const int n = 1 + static_cast<int>(rng() % 3);
    for (int k = 0; k < n; ++k) {
      const int i = (*serial)++;
      const int existing = static_cast<int>(rng() % nodes);
      if (rng() % 4 == 0) {  // a node of the cluster changes: more or less CPU, another zone
        w.events.push_back(Event("MODIFIED", NodeJson(StrCat("n", existing), 1 + static_cast<int>(rng() % 5), static_cast<int>(rng() % 3))));
      } else if (rng() % 4 == 0) {  // a bound pod of the cluster goes (an error when there is none: all or nothing)
        w.events.push_back(Event("DELETED", PodJson(StrCat("b", existing), 200, 0, StrCat("n", existing))));
      } else if (rng() % 3 == 0) {
        w.events.push_back(Event("ADDED", NodeJson(StrCat("x", i), 2 + static_cast<int>(rng() % 3), static_cast<int>(rng() % 3))));
      } else {
        w.events.push_back(Event("ADDED", PodJson(StrCat("e", i), 100 + static_cast<int>(rng() % 600), static_cast<int>(rng() % 6),
                                                  StrCat("n", rng() % nodes))));
      }
    }
  } else if (pick == 3) {
    w.kind = RandomWrite::kReserve;
    w.pods = PodJson(StrCat("r", (*serial)++), 300 + static_cast<int>(rng() % 900), static_cast<int>(rng() % 6));
    if (rng() % 2) {
      for (int k = 0; k < 4; ++k) w.nodes.push_back(StrCat("n", rng() % nodes));
      std::sort(w.nodes.begin(), w.nodes.end());
      w.nodes.erase(std::unique(w.nodes.begin(), w.nodes.end()), w.nodes.end());
    }
  } else {
    w.kind = RandomWrite::kSchedule;
    std::vector<std::string> pods;
    const int n = 1 + static_cast<int>(rng() % 4);
    for (int k = 0; k < n; ++k) {
      pods.push_back(PodJson(StrCat("p", (*serial)++), 300 + static_cast<int>(rng() % 1500), static_cast<int>(rng() % 6)));
    }
    w.pods = List(pods);
  }
  return w;
}

// What a write answered, as text, and the revision after it.
std::string Do(PlacementState& s, const RandomWrite& w) {
  switch (w.kind) {
    case RandomWrite::kApply: {
      const std::vector<std::string_view> events(w.events.begin(), w.events.end());
      auto r = s.Apply(events, std::nullopt);
      return r.ok() ? StrCat("revision ", *r) : r.status().ToString();
    }
    case RandomWrite::kSchedule: {
      auto r = s.Schedule(w.pods, false, std::nullopt);
      return r.ok() ? StrCat("revision ", r->revision, "\n", Placements(r->placements)) : r.status().ToString();
    }
    case RandomWrite::kReserve: {
      auto r = s.Fits(w.pods, w.nodes, true, std::nullopt, /*reserve=*/true);
      return r.ok() ? StrCat("revision ", s.revision(), "\n", Fits(*r)) : r.status().ToString();
    }
  }
  return "";
}

std::string Do(StatePool& pool, const std::string& fork, const RandomWrite& w) {
  switch (w.kind) {
    case RandomWrite::kApply: {
      const std::vector<std::string_view> events(w.events.begin(), w.events.end());
      auto r = pool.Apply(fork, events, std::nullopt);
      return r.ok() ? StrCat("revision ", *r) : r.status().ToString();
    }
    case RandomWrite::kSchedule: {
      auto r = pool.Schedule(fork, w.pods, false, std::nullopt, {}, false);
      return r.ok() ? StrCat("revision ", r->revision, "\n", Placements(r->placements)) : r.status().ToString();
    }
    case RandomWrite::kReserve: {
      uint64_t revision = 0;
      auto r = pool.Reserve(fork, w.pods, w.nodes, std::nullopt, &revision);
      return r.ok() ? StrCat("revision ", revision, "\n", Fits(*r)) : r.status().ToString();
    }
  }
  return "";
}

// The questions a read asks, answered as text: every kind of read call the pool serves.
std::string Ask(PlacementState& s, const Precondition& expected, int probe) {
  std::string out = StrCat("revision ", s.revision(), "\n");
  auto eval = s.Evaluate(List({PodJson(StrCat("q", probe), 700, probe % 6), PodJson("q-big", 2500, 1)}), expected);
  out += eval.ok() ? Placements(eval->placements) : eval.status().ToString();
  auto dry = s.Schedule(List({PodJson("d0", 900, probe % 6), PodJson("d1", 900, (probe + 1) % 6)}), true, expected);
  out += dry.ok() ? Placements(dry->placements) : dry.status().ToString();
  auto copies = s.Replicas(PodJson("copy", 800, probe % 3 == 0 ? 2 : 0), 40, expected);
  out += copies.ok() ? StrCat("replicas ", copies->replicas, "\n") : copies.status().ToString();
  auto fits = s.Fits(PodJson("f", 1200, probe % 6), {}, false, expected);
  out += fits.ok() ? Fits(*fits) : fits.status().ToString();
  return out;
}

std::string AskPool(StatePool& pool, const std::string& fork, int probe) {
  std::string out;
  const absl::Status s = pool.Read(fork, std::nullopt, [&](PlacementState& state, const Precondition& e) {
    out = Ask(state, e, probe);
    return absl::OkStatus();
  });
  return s.ok() ? out : s.ToString();
}

std::string SnapshotOf(StatePool& pool, const std::string& fork = "") {
  nlohmann::json list;
  uint64_t revision = 0;
  const absl::Status s = pool.Snapshot(fork, &list, &revision);
  return s.ok() ? StrCat(revision, " ", list.dump()) : s.ToString();
}

std::string SnapshotOf(const PlacementState& s) { return StrCat(s.revision(), " ", s.Snapshot().dump()); }

// A fork's writes undone leave the state byte-identical and deciding as before (start index
// and nominations included); kept, the state is the one the writes make without a fork.
TEST(PlacementStateForkTest, RevertIsExactAndCommitKeepsTheWrites) {
  for (uint64_t seed = 1; seed <= 6; ++seed) {
    std::mt19937_64 rng(seed);
    const int nodes = 6 + static_cast<int>(rng() % 20);
    const std::string cluster = Cluster(rng, nodes);
    PlacementState forked, plain;
    ASSERT_TRUE(forked.Reset(cluster, "").ok());
    ASSERT_TRUE(plain.Reset(cluster, "").ok());
    int serial = 0;
    for (int round = 0; round < 4; ++round) {
      const std::string before = SnapshotOf(forked);
      ASSERT_TRUE(forked.BeginFork().ok());
      EXPECT_TRUE(absl::IsFailedPrecondition(forked.BeginFork()));
      EXPECT_TRUE(absl::IsFailedPrecondition(forked.Reset(cluster, "").status()));
      std::vector<RandomWrite> writes;
      for (int k = 0; k < 6; ++k) writes.push_back(MakeWrite(rng, nodes, &serial, true));
      for (const RandomWrite& w : writes) Do(forked, w);
      EXPECT_NE(SnapshotOf(forked), before) << "seed " << seed;
      if (round % 2 == 0) {
        ASSERT_TRUE(forked.RevertFork().ok());
        EXPECT_EQ(SnapshotOf(forked), before) << "seed " << seed << " round " << round;
      } else {
        ASSERT_TRUE(forked.CommitFork().ok());
        for (const RandomWrite& w : writes) Do(plain, w);
        EXPECT_EQ(SnapshotOf(forked), SnapshotOf(plain)) << "seed " << seed << " round " << round;
      }
      // Both decide alike from here: what the scheduler keeps beside the objects came back too.
      EXPECT_EQ(Ask(forked, std::nullopt, round), Ask(plain, std::nullopt, round)) << "seed " << seed;
      const RandomWrite next = MakeWrite(rng, nodes, &serial, false);
      EXPECT_EQ(Do(forked, next), Do(plain, next)) << "seed " << seed << " round " << round;
    }
    EXPECT_TRUE(absl::IsFailedPrecondition(forked.RevertFork()));
  }
}

// Reads on replicas answer what the one state answers at the same revision, writes and
// reads interleaved at random, Resets among them.
TEST(StatePoolTest, ReplicasAnswerAsTheStateDoes) {
  for (uint64_t seed = 1; seed <= 4; ++seed) {
    std::mt19937_64 rng(seed * 7);
    StatePool pool({}, 2);
    PlacementState plain;
    EXPECT_TRUE(absl::IsFailedPrecondition(pool.Read("", std::nullopt, [](PlacementState& s, const Precondition& e) {
      return s.Check(e);
    })));
    int nodes = 8 + static_cast<int>(rng() % 12);
    std::string cluster = Cluster(rng, nodes);
    ASSERT_TRUE(pool.Reset(cluster, "").ok());
    ASSERT_TRUE(plain.Reset(cluster, "").ok());
    int serial = 0;
    for (int step = 0; step < 40; ++step) {
      if (step == 25) {  // a new cluster: the replicas start again from it
        nodes = 8 + static_cast<int>(rng() % 12);
        cluster = Cluster(rng, nodes);
        auto a = pool.Reset(cluster, "");
        ASSERT_TRUE(a.ok());
        auto b = plain.Reset(cluster, "");
        ASSERT_TRUE(b.ok());
        EXPECT_EQ(a->revision, b->revision);
      }
      if (rng() % 2) {
        const RandomWrite w = MakeWrite(rng, nodes, &serial, false);
        ASSERT_EQ(Do(pool, "", w), Do(plain, w)) << "seed " << seed << " step " << step;
      } else {
        ASSERT_EQ(AskPool(pool, "", step), Ask(plain, std::nullopt, step)) << "seed " << seed << " step " << step;
      }
    }
    EXPECT_EQ(SnapshotOf(pool), SnapshotOf(plain));
    // A precondition on a replica is the state's: the revision, and this instance only.
    const uint64_t now = plain.revision();
    auto at = [&](Precondition e) {
      return pool.Read("", e, [](PlacementState& s, const Precondition& p) { return s.Check(p); });
    };
    EXPECT_TRUE(at(Precondition(now, pool.instance())).ok());
    EXPECT_TRUE(absl::IsFailedPrecondition(at(Precondition(now - 1))));
    EXPECT_TRUE(absl::IsFailedPrecondition(at(Precondition(now, "another"))));
  }
}

// Readers on several threads while a writer writes: each answer is the one the state gave
// at the revision the answer names.
TEST(StatePoolTest, ConcurrentReadersSeeOneRevisionEach) {
  std::mt19937_64 rng(99);
  const int nodes = 16;
  const std::string cluster = Cluster(rng, nodes);
  StatePool pool({}, 2);
  ASSERT_TRUE(pool.Reset(cluster, "").ok());
  std::vector<RandomWrite> writes;
  int serial = 0;
  for (int k = 0; k < 30; ++k) writes.push_back(MakeWrite(rng, nodes, &serial, false));
  std::atomic<bool> done{false};
  struct Seen {
    std::string answer;
    int probe;
  };
  std::vector<std::vector<Seen>> seen(3);
  std::vector<std::thread> readers;
  for (int t = 0; t < 3; ++t) {
    readers.emplace_back([&, t] {
      for (int k = 0; !done.load() || k < 5; ++k) seen[t].push_back({AskPool(pool, "", k), k});
    });
  }
  for (const RandomWrite& w : writes) Do(pool, "", w);
  done = true;
  for (std::thread& r : readers) r.join();
  // The same writes on one state, the answers kept for each revision.
  PlacementState plain;
  ASSERT_TRUE(plain.Reset(cluster, "").ok());
  std::map<std::pair<uint64_t, int>, std::string> want;
  auto record = [&] {
    for (int k = 0; k < 64; ++k) want[{plain.revision(), k}] = Ask(plain, std::nullopt, k);
  };
  record();
  for (const RandomWrite& w : writes) {
    Do(plain, w);
    record();
  }
  size_t checked = 0;
  for (const auto& answers : seen) {
    for (const Seen& s : answers) {
      const uint64_t revision = std::stoull(s.answer.substr(9));
      auto it = want.find({revision, s.probe});
      if (it == want.end()) continue;  // a probe past those recorded
      EXPECT_EQ(s.answer, it->second);
      ++checked;
    }
  }
  EXPECT_GT(checked, 10u);
  EXPECT_EQ(SnapshotOf(pool), SnapshotOf(plain));
}

// A fork: its reads see its writes and the state's do not; committed, the state is what the
// same writes make; discarded or expired, nothing; refused when the state moved on.
TEST(StatePoolTest, ForksCommitDiscardAndExpire) {
  for (uint64_t seed = 1; seed <= 4; ++seed) {
    std::mt19937_64 rng(seed * 13);
    const int nodes = 8 + static_cast<int>(rng() % 12);
    const std::string cluster = Cluster(rng, nodes);
    StatePool pool({}, 2, ForkLimits{2, std::chrono::seconds(60), std::chrono::seconds(3600)});
    PlacementState plain;
    ASSERT_TRUE(pool.Reset(cluster, "").ok());
    ASSERT_TRUE(plain.Reset(cluster, "").ok());
    int serial = 0;
    // Committed: reserves, schedules and events in the fork become the state's.
    auto fork = pool.Fork(std::nullopt, 0, "client-a");
    ASSERT_TRUE(fork.ok()) << fork.status();
    EXPECT_EQ(fork->revision, plain.revision());
    EXPECT_EQ(fork->ttl_seconds, 60);
    const std::string untouched = SnapshotOf(pool);
    std::vector<RandomWrite> writes;
    for (int k = 0; k < 8; ++k) writes.push_back(MakeWrite(rng, nodes, &serial, true));
    PlacementState expect;
    ASSERT_TRUE(expect.Reset(cluster, "").ok());
    for (const RandomWrite& w : writes) ASSERT_EQ(Do(pool, fork->id, w), Do(expect, w)) << "seed " << seed;
    EXPECT_EQ(AskPool(pool, fork->id, 1), Ask(expect, std::nullopt, 1));
    EXPECT_EQ(SnapshotOf(pool, fork->id), SnapshotOf(expect));
    EXPECT_EQ(SnapshotOf(pool), untouched);  // the state does not see the fork
    EXPECT_EQ(AskPool(pool, "", 2), Ask(plain, std::nullopt, 2));
    auto committed = pool.Commit(fork->id);
    ASSERT_TRUE(committed.ok()) << committed.status();
    for (const RandomWrite& w : writes) Do(plain, w);
    EXPECT_EQ(*committed, plain.revision());
    EXPECT_EQ(SnapshotOf(pool), SnapshotOf(plain));
    EXPECT_EQ(AskPool(pool, "", 3), Ask(plain, std::nullopt, 3));
    EXPECT_TRUE(IsUnknownFork(pool.Commit(fork->id).status()));

    // Discarded: nothing of it stays.
    auto dropped = pool.Fork(Precondition(plain.revision(), pool.instance()), 0, "client-a");
    ASSERT_TRUE(dropped.ok()) << dropped.status();
    for (int k = 0; k < 4; ++k) Do(pool, dropped->id, MakeWrite(rng, nodes, &serial, true));
    ASSERT_TRUE(pool.Discard(dropped->id).ok());
    EXPECT_EQ(SnapshotOf(pool), SnapshotOf(plain));
    EXPECT_EQ(AskPool(pool, "", 4), Ask(plain, std::nullopt, 4));
    const absl::Status gone = pool.Apply(dropped->id, {}, std::nullopt).status();
    EXPECT_TRUE(IsUnknownFork(gone)) << gone;

    // The state moved on after the fork was made: its commit is refused, nothing applied.
    auto stale = pool.Fork(std::nullopt, 0, "client-a");
    ASSERT_TRUE(stale.ok());
    Do(pool, stale->id, MakeWrite(rng, nodes, &serial, true));
    const RandomWrite w = MakeWrite(rng, nodes, &serial, false);
    ASSERT_EQ(Do(pool, "", w), Do(plain, w));
    const absl::Status moved = pool.Commit(stale->id).status();
    EXPECT_TRUE(absl::IsFailedPrecondition(moved)) << moved;
    EXPECT_EQ(SnapshotOf(pool), SnapshotOf(plain));
    ASSERT_TRUE(pool.Discard(stale->id).ok());
    EXPECT_EQ(pool.forks(), 0);
  }
}

// stop_on_failure ends at the first pod not placed: the reply holds the pods up to it, the
// state those binds only, and a replica replays the same.
TEST(StatePoolTest, StopOnFailureEndsAtTheFirstPodNotPlaced) {
  StatePool pool({}, 1);
  PlacementState plain;
  const std::string cluster = List({NodeJson("a", 4, 0), NodeJson("b", 2, 1)});
  ASSERT_TRUE(pool.Reset(cluster, "").ok());
  ASSERT_TRUE(plain.Reset(cluster, "").ok());
  // 3 CPUs fits a; 3 CPUs again fits nowhere; the 1-CPU pod after it is not tried.
  const std::string pods = List({PodJson("s1", 3000, 0), PodJson("s2", 3000, 0), PodJson("s3", 1000, 0)});
  auto dry = pool.Schedule("", pods, true, std::nullopt, {}, false, /*stop_on_failure=*/true);
  ASSERT_TRUE(dry.ok()) << dry.status();
  EXPECT_TRUE(dry->stopped);
  ASSERT_EQ(dry->placements.size(), 2u);
  EXPECT_EQ(dry->placements[0].node, "a");
  EXPECT_EQ(dry->placements[1].pod, "default/s2");
  EXPECT_EQ(dry->placements[1].node, "");
  auto all = pool.Schedule("", pods, true, std::nullopt, {}, false, false);
  ASSERT_TRUE(all.ok());
  EXPECT_FALSE(all->stopped);
  EXPECT_EQ(all->placements.size(), 3u);
  EXPECT_EQ(all->placements[2].node, "b");
  auto done = pool.Schedule("", pods, false, std::nullopt, {}, false, true);
  ASSERT_TRUE(done.ok());
  auto want = plain.Schedule(pods, false, std::nullopt, {}, false, true);
  ASSERT_TRUE(want.ok());
  EXPECT_EQ(Placements(done->placements), Placements(want->placements));
  EXPECT_EQ(SnapshotOf(pool), SnapshotOf(plain));
  EXPECT_EQ(AskPool(pool, "", 1), Ask(plain, std::nullopt, 1));  // the replica replayed it alike
  auto none = pool.Schedule("", List({PodJson("s4", 500, 0)}), true, std::nullopt, {}, false, true);
  ASSERT_TRUE(none.ok());
  EXPECT_FALSE(none->stopped);
  EXPECT_EQ(none->placements.size(), 1u);
}

std::string Drains(const std::vector<whatif::DrainResult>& all) {
  std::string out;
  for (const whatif::DrainResult& r : all) {
    out += StrCat(r.nodes[0], r.drainable ? " drainable\n" : " stays\n");
    for (const cycle::Placement& p : r.pods) out += StrCat("  ", p.pod, "@", p.node, " ", p.message, "\n");
  }
  return out;
}

// Consolidation in shares on the replicas, side by side, is the one state's consolidation:
// every candidate's drain from the same state, in order; and its errors name the candidate
// by its place in the whole list.
TEST(StatePoolTest, ConsolidateInSharesEqualsOneState) {
  int split = 0;  // runs that took both replicas (the background catch-up may hold one)
  for (uint64_t seed = 1; seed <= 3; ++seed) {
    std::mt19937_64 rng(seed * 5);
    const int nodes = 10 + static_cast<int>(rng() % 15);
    const std::string cluster = Cluster(rng, nodes);
    StatePool pool({}, 2);
    PlacementState plain;
    ASSERT_TRUE(pool.Reset(cluster, "").ok());
    ASSERT_TRUE(plain.Reset(cluster, "").ok());
    int serial = 0;
    for (int step = 0; step < 3; ++step) {
      const RandomWrite w = MakeWrite(rng, nodes, &serial, false);
      ASSERT_EQ(Do(pool, "", w), Do(plain, w));
      for (const std::vector<std::string>& candidates :
           {std::vector<std::string>{}, std::vector<std::string>{"n3", "n0", "n5", "n1", "n2"}}) {
        auto want = plain.Consolidate(candidates, std::nullopt);
        ASSERT_TRUE(want.ok()) << want.status();
        std::vector<std::vector<whatif::DrainResult>> shares(2);
        std::atomic<int> used{0};
        const absl::Status s = pool.ReadShared("", std::nullopt, 2,
                                               [&](PlacementState& state, const Precondition& e, size_t part, size_t parts) {
                                                 ++used;
                                                 EXPECT_LE(parts, 2u);
                                                 KPLACE_ASSIGN_OR_RETURN(shares[part], state.Consolidate(candidates, e, part, parts));
                                                 return absl::OkStatus();
                                               });
        ASSERT_TRUE(s.ok()) << s;
        EXPECT_EQ(Drains(shares[0]) + Drains(shares[1]), Drains(*want)) << "seed " << seed << " step " << step;
        EXPECT_GE(used.load(), 1);
        split += used.load() == 2;
      }
    }
    const absl::Status bad = pool.ReadShared("", std::nullopt, 2, [&](PlacementState& state, const Precondition& e, size_t part, size_t parts) {
      return state.Consolidate({"n0", "n1", "n2", "nope"}, e, part, parts).status();
    });
    EXPECT_TRUE(absl::IsInvalidArgument(bad)) << bad;
    EXPECT_NE(std::string(bad.message()).find("candidates[3]"), std::string::npos) << bad;
    EXPECT_EQ(SnapshotOf(pool), SnapshotOf(plain));
  }
  EXPECT_GT(split, 0);
}

TEST(StatePoolTest, ForkLimitsAndErrors) {
  std::mt19937_64 rng(5);
  const std::string cluster = Cluster(rng, 6);
  StatePool none({}, 0);
  ASSERT_TRUE(none.Reset(cluster, "").ok());
  EXPECT_TRUE(absl::IsFailedPrecondition(none.Fork(std::nullopt, 0, "c").status()));
  EXPECT_NE(AskPool(none, "", 0).find("revision 1"), std::string::npos);  // reads on the one state

  StatePool pool({}, 2, ForkLimits{1, std::chrono::seconds(60), std::chrono::seconds(100)});
  EXPECT_TRUE(absl::IsFailedPrecondition(pool.Fork(std::nullopt, 0, "c").status()));  // no cluster yet
  ASSERT_TRUE(pool.Reset(cluster, "").ok());
  EXPECT_TRUE(absl::IsInvalidArgument(pool.Fork(std::nullopt, 101, "c").status()));
  EXPECT_TRUE(absl::IsInvalidArgument(pool.Fork(std::nullopt, -1, "c").status()));
  EXPECT_TRUE(absl::IsFailedPrecondition(pool.Fork(Precondition(7), 0, "c").status()));
  EXPECT_TRUE(absl::IsFailedPrecondition(pool.Fork(Precondition(std::nullopt, "other"), 0, "c").status()));
  uint64_t revision = 0;
  EXPECT_TRUE(absl::IsInvalidArgument(pool.Reserve("", PodJson("r", 100, 0), {}, std::nullopt, &revision).status()));
  EXPECT_TRUE(IsUnknownFork(pool.Read("fork-nope", std::nullopt, [](PlacementState&, const Precondition&) {
    return absl::OkStatus();
  })));
  auto a = pool.Fork(std::nullopt, 0, "c");
  ASSERT_TRUE(a.ok()) << a.status();
  EXPECT_TRUE(absl::IsResourceExhausted(pool.Fork(std::nullopt, 0, "c").status()));  // one per client
  auto b = pool.Fork(std::nullopt, 0, "d");
  ASSERT_TRUE(b.ok()) << b.status();
  EXPECT_TRUE(absl::IsResourceExhausted(pool.Fork(std::nullopt, 0, "e").status()));  // both replicas held
  // With every replica held by a fork, reads go to the state itself.
  EXPECT_NE(AskPool(pool, "", 0).find("revision 1"), std::string::npos);
  // A fork idle past its time to live ends; its replica serves again.
  ASSERT_TRUE(pool.Discard(a->id).ok());
  auto brief = pool.Fork(std::nullopt, 1, "c");
  ASSERT_TRUE(brief.ok()) << brief.status();
  ASSERT_TRUE(pool.Reserve(brief->id, PodJson("r", 100, 0), {}, std::nullopt, &revision).ok());
  EXPECT_EQ(revision, 2u);
  std::this_thread::sleep_for(std::chrono::milliseconds(2300));
  const absl::Status expired = pool.Apply(brief->id, {}, std::nullopt).status();
  EXPECT_TRUE(IsUnknownFork(expired)) << expired;
  EXPECT_NE(std::string(expired.message()).find("expired"), std::string::npos) << expired;
  EXPECT_EQ(pool.forks(), 1);
  EXPECT_EQ(pool.revision(), 1u);
  ASSERT_TRUE(pool.Discard(b->id).ok());
  EXPECT_EQ(pool.forks(), 0);
}

}  // namespace
}  // namespace kplace::serve
