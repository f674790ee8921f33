#pragma once
// The affinity cost sweep (`kplace bench --sweep affinity`): per-pod cost of inter-pod
// (anti-)affinity, required and preferred, as existing pods carrying such terms grow and
// as nodes grow, on the engine and on the scalar reference (whose runs are capped by a
// time budget). Also the synthetic clusters the plugin benchmarks under bench/ use.
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "kplace/engine/plugin.h"
#include "kplace/model/objects.h"

namespace kplace::bench {

/** What the existing and the incoming pods carry. */
enum class SweepKind {
  kNone,                   // no terms (baseline)
  kRequiredAffinity,       // podAffinity required, topology.kubernetes.io/zone
  kRequiredAntiAffinity,   // podAntiAffinity required, kubernetes.io/hostname
  kPreferredAffinity,      // podAffinity preferred (weight 1), kubernetes.io/hostname
  kPreferredAntiAffinity,  // podAntiAffinity preferred (weight 1), kubernetes.io/hostname
  kRequiredSpread,         // topologySpreadConstraints zone, DoNotSchedule, maxSkew 5
  kPreferredSpread,        // topologySpreadConstraints hostname, ScheduleAnyway, maxSkew 5
};
const char* SweepKindName(SweepKind k);
/** The inter-pod affinity kinds and the baseline, in sweep order. */
std::vector<SweepKind> AffinitySweepKinds();
/** Every kind, in declaration order. */
std::vector<SweepKind> AllSweepKinds();
/** @brief Kinds by name, comma-separated: SweepKindName's names, or their short forms
 *  without "-affinity" (required-anti, preferred-anti) or "-terms". "all" is every kind.
 *  InvalidArgument naming the unknown name and the known ones. */
absl::StatusOr<std::vector<SweepKind>> ParseSweepKinds(const std::string& list);

/** Replicas per group ("deployment"): existing pod i has label app=g<i / kSweepReplicas>
 *  and its terms select its own group, so 100,000 existing pods are 10,000 term sets. */
constexpr int32_t kSweepReplicas = 10;

/** @brief `nodes` nodes over 10 zones (room for any pod count: 4000 pods, 1000 CPU each)
 *  and `existing` pods of `kind` bound round-robin (pod i on node i % nodes); existing
 *  pods request nothing. */
absl::StatusOr<ObjectSet> SweepCluster(SweepKind kind, int32_t nodes, int64_t existing);
/** @brief `count` pending pods of `kind` (100m / 500Mi). With existing groups, pending pod
 *  j is one more replica of a different existing group each time (a fresh term set per
 *  pod); without, they form new groups of kSweepReplicas. */
absl::StatusOr<std::vector<Pod>> SweepPods(SweepKind kind, int32_t count, int64_t existing);

struct SweepPoint {
  std::string kind, side;  // side: "omp", "cuda" or "reference"
  int32_t nodes = 0;
  int64_t existing = 0;
  int32_t pods = 0;  // pods measured (0 when skipped)
  double mean_ms = 0, p50_ms = 0, first_ms = 0, max_ms = 0;
  double setup_s = 0;
  std::string note;  // "budget: 3 of 20 pods", "skipped: ...", ""
};

struct SweepOptions {
  std::vector<int32_t> nodes = {500, 1000, 5000, 15000, 50000};
  std::vector<int64_t> existing = {0, 1000, 10000, 100000};
  std::vector<SweepKind> kinds = AffinitySweepKinds();
  int32_t pods = 50;                 // measured pods per point and side
  double reference_budget_s = 2.0;   // per point: stop the reference after this long
  double engine_budget_s = 10.0;     // per point, for the engine
  engine::Backend backend = engine::Backend::kOmp;
  bool run_reference = true;
  /** Called after every point; may be empty. */
  std::function<void(const SweepPoint&)> on_point;
  /** Called before each point with (points done, points in the grid); may be empty. */
  std::function<void(int64_t, int64_t)> progress;
};

/** @brief Runs the grid nodes x existing x kinds on the engine and the reference with the
 *  default profile (every default plugin built on both sides). A reference point whose
 *  cost is predicted to exceed its budget for even one pod (a smaller point of the same
 *  kind already took longer) is skipped and says so. Placements of the pods both sides ran
 *  must be identical: Internal on a mismatch. */
absl::StatusOr<std::vector<SweepPoint>> RunAffinitySweep(const SweepOptions& options);

/** CSV with a header: kind,side,nodes,existing,pods,mean_ms,p50_ms,first_ms,max_ms,setup_s,note */
std::string SweepCsv(const std::vector<SweepPoint>& points);

}  // namespace kplace::bench
