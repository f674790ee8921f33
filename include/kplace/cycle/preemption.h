#pragma once
// DefaultPreemption, the PostFilter plugin of the default profile (shared/spec/preemption.md):
// who may preempt, which nodes are tried and how many, the victims on each node with
// PodDisruptionBudgets weighed in, the choice among candidates and the exact messages.
//
// The algorithm is host code over a DryRunHost: the cluster's nodes and pods, and the
// profile's filter chain run for the preemptor on one node with some of its pods removed.
// Upstream's randomness is fixed here: potential nodes are taken in snapshot order (upstream:
// Go map order), the dry run visits them one at a time (upstream: 16 workers, which may
// look at a few more nodes before they stop), the offset comes from the caller (upstream:
// rand.Int31n), and the last tie among candidates goes to the first one the dry run found.
#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "kplace/config/plugin_args.h"
#include "kplace/framework/types.h"
#include "kplace/model/objects.h"

namespace kplace::reference {
struct ClusterState;
class Plugin;
}  // namespace kplace::reference

namespace kplace::cycle {

/** Upstream's NodeToStatus: the statuses of the nodes a cycle rejected, and the status of
 *  every node not listed. By snapshot row: a row names one of `statuses`, which the rows a
 *  cycle rejected alike share (a failed cycle over 5,000 nodes holds a handful of statuses,
 *  not 5,000 named copies). */
struct NodeToStatus {
  std::vector<PluginStatus> statuses;  // distinct entries the rows point to
  std::vector<int32_t> of_row;         // index into statuses; -1 (or past the end): absent
  /** Statuses of node names the snapshot does not hold (a test's table): they count, as in
   *  upstream's map, but no row has them. */
  std::vector<PluginStatus> unplaced;
  PluginStatus absent{Code::kUnschedulableAndUnresolvable, {}};

  /** A status rows can share; its index. */
  int32_t Add(PluginStatus s) {
    statuses.push_back(std::move(s));
    return static_cast<int32_t>(statuses.size()) - 1;
  }
  /** Row `row` gets statuses[status]. */
  void Set(int32_t row, int32_t status) {
    if (static_cast<size_t>(row) >= of_row.size()) of_row.resize(static_cast<size_t>(row) + 1, -1);
    if (of_row[row] < 0) ++recorded_;
    of_row[row] = status;
  }
  void Set(int32_t row, PluginStatus s) { Set(row, Add(std::move(s))); }
  /** The status of row `row` (-1: a node the snapshot lacks, which has the absent one). */
  const PluginStatus& Get(int32_t row) const {
    if (row < 0 || static_cast<size_t>(row) >= of_row.size() || of_row[row] < 0) return absent;
    return statuses[of_row[row]];
  }
  bool Has(int32_t row) const { return row >= 0 && static_cast<size_t>(row) < of_row.size() && of_row[row] >= 0; }
  /** Nodes with a status of their own (upstream's map size). */
  int64_t size() const { return recorded_ + static_cast<int64_t>(unplaced.size()); }

 private:
  int64_t recorded_ = 0;
};

/** What DefaultPreemption needs of the framework it runs in. */
class DryRunHost {
 public:
  virtual ~DryRunHost() = default;
  virtual int32_t NumNodes() const = 0;
  virtual const Node& NodeAt(int32_t node) const = 0;
  /** Snapshot index of a node name; -1 when absent. */
  virtual int32_t IndexOf(const std::string& name) const = 0;
  /** The pods bound to `node`, in NodeInfo order. */
  virtual const std::vector<const Pod*>& PodsOn(int32_t node) const = 0;
  /** The whole filter chain for `pod` on `node` with the pods in `removed` gone from it, as
   *  RunFilterPluginsWithNominatedPods runs it (nominated pods of priority >= the pod's
   *  counted on their node first). The first rejecting plugin's status, or Success. */
  virtual PluginStatus Filter(const Pod& pod, int32_t node, const std::vector<const Pod*>& removed) = 0;
  /** Filter(pod, node, removed).IsSuccess(), which a host may tell without the status. */
  virtual bool Fits(const Pod& pod, int32_t node, const std::vector<const Pod*>& removed) {
    return Filter(pod, node, removed).IsSuccess();
  }
  /** The dry run will try `nodes` next, in this order (a host may prepare them at once). */
  virtual void Prefetch(const Pod& /*pod*/, const std::vector<int32_t>& /*nodes*/) {}
  /** Whole filter chain runs so far (FORMAT.md's filterCalls). */
  virtual int64_t filter_calls() const = 0;
};

/** A pod's priority: spec.priority, 0 when unset. */
inline int32_t PodPriority(const Pod& pod) { return pod.priority.value_or(0); }

/** The same pod: the same object, UID or namespace/name (upstream compares UIDs; kplace's
 *  inputs may leave them out). */
bool SamePod(const Pod& a, const Pod& b);

/** Whether a pod holding a nomination counts on its nominated node when filtering `pod`
 *  (RunFilterPluginsWithNominatedPods): it ranks at least as high and is another pod. */
inline bool NominatedCountsFor(const Pod& nominated, const Pod& pod) {
  return PodPriority(nominated) >= PodPriority(pod) && !SamePod(nominated, pod);
}

/** True when the pod is terminating because the scheduler preempted it: a deletion
 *  timestamp and a first DisruptionTarget condition True with reason PreemptionByScheduler. */
bool TerminatingByPreemption(const Pod& pod);

/** PodEligibleToPreemptOthers (§3). `nominated_status` is the status of the pod's nominated
 *  node (null: none, which counts as Success). On false, `*reason` is upstream's text. */
bool PodEligibleToPreemptOthers(const Pod& pod, const PluginStatus* nominated_status, const DryRunHost& host,
                                std::string* reason);

/** NodeToStatus.NodesForStatusCode (§4): snapshot indices of the nodes whose status is `code`,
 *  in snapshot list order: `order` (upstream's NodeInfos().List(), the node tree's zone
 *  round-robin order), or index order when null. */
std::vector<int32_t> NodesForStatusCode(const NodeToStatus& statuses, Code code, const DryRunHost& host,
                                        const std::vector<int32_t>* order = nullptr);

/** FilterPodsWithPDBViolation (§8) for `pods` in importance order: whether each, evicted after
 *  the ones before it, takes a PodDisruptionBudget below zero. Budgets are fresh per call. */
std::vector<bool> ViolatesPdb(const std::vector<const Pod*>& pods, const std::vector<PodDisruptionBudget>& pdbs);

/** numCandidates (§5). */
int32_t NumCandidates(int32_t potential, const DefaultPreemptionArgs& args);

/** The victims DefaultPreemption picked on one node. */
struct Candidate {
  int32_t node = -1;
  std::vector<const Pod*> victims;  // most important first
  int64_t num_pdb_violations = 0;
};

/** SelectVictimsOnNode (§7): Success with the candidate, or the status that rules the node
 *  out (an Error when every victim could be reprieved). With `generic_workload`, a victim
 *  that names a PodGroup ranks above a plain pod of its priority (MoreImportantVictim). */
PluginStatus SelectVictimsOnNode(DryRunHost& host, const Pod& pod, int32_t node,
                                 const std::vector<PodDisruptionBudget>& pdbs, Candidate* out,
                                 bool generic_workload = false);

struct DryRunResult {
  std::vector<Candidate> candidates;  // non-violating first, then violating, each in visit order
  NodeToStatus statuses;              // the nodes tried that are not candidates
  std::vector<std::string> errors;    // Error statuses' messages, in visit order
  /** Set when a node's filters refused (PluginStatus::refused): the dry run stops there and
   *  preemption decides nothing. */
  std::optional<PluginStatus> refusal;
};

/** DryRunPreemption (§6) over `potential` from `offset` (wrapping), stopping once a
 *  non-violating candidate exists and `num_candidates` are held. */
DryRunResult DryRunPreemption(DryRunHost& host, const Pod& pod, const std::vector<int32_t>& potential,
                              const std::vector<PodDisruptionBudget>& pdbs, int32_t offset, int32_t num_candidates,
                              bool generic_workload = false);

/** pickOneNodeForPreemption (§10): the index into `candidates` of the best one; -1 when empty.
 *  `decided_by`, when given, gets the criterion that left the best one alone: an index into
 *  kCandidateCriteria, or its size when the first found of the still tied ones was taken. */
int32_t SelectCandidate(const std::vector<Candidate>& candidates, int32_t* decided_by = nullptr);

/** The candidate criteria in order, as explain names them. */
constexpr const char* kCandidateCriteria[] = {"fewest PDB violations", "lowest highest victim priority",
                                              "lowest victim priority sum", "fewest victims",
                                              "latest start of the highest-priority victims"};
constexpr int32_t kNumCandidateCriteria = 5;

/** A candidate's value under criterion `c` (higher is better), as SelectCandidate compares it. */
int64_t CandidateScore(const Candidate& candidate, int32_t c);

/** A preemption-capable scheduler extender (§9). */
class PreemptionExtender {
 public:
  virtual ~PreemptionExtender() = default;
  virtual std::string Name() const = 0;
  virtual bool IsIgnorable() const = 0;
  virtual bool IsInterested(const Pod& pod) const = 0;
  /** Rewrites the node -> victims map; a non-OK return is the extender's error text. */
  virtual bool ProcessPreemption(const Pod& pod, std::map<std::string, Candidate>* candidates,
                                 std::string* error) = 0;
};

struct PostFilterResult {
  PluginStatus status;       // message with the "preemption: " prefix
  bool has_result = false;   // a nominating result: nominated_node ("" clears the nomination)
  std::string nominated_node;
  std::vector<const Pod*> victims;
  // For explain: the dry run's candidates and statuses, and the criterion that chose.
  std::vector<Candidate> candidates;
  int32_t decided_by = 0;
  NodeToStatus dry_run_statuses;
};

struct PostFilterOptions {
  DefaultPreemptionArgs args;
  /** Picks the dry run's start in [0, potential): upstream draws it uniformly at random. */
  std::function<int32_t(int32_t potential)> offset;
  std::vector<PreemptionExtender*> extenders;
  /** The snapshot's node list as node indices (node-tree order); empty: index order. */
  std::vector<int32_t> node_order;
  /** The GenericWorkload gate: victims that name a PodGroup rank above plain ones. */
  bool generic_workload = false;
};

/** DefaultPreemption's PostFilter (§2) for `pod` after the filter pass gave `statuses`. The
 *  victims are not removed: the caller actuates them (§12). */
PostFilterResult PostFilter(DryRunHost& host, const Pod& pod, const NodeToStatus& statuses,
                            const std::vector<PodDisruptionBudget>& pdbs, const PostFilterOptions& options);

/** DefaultPreemption's PreEnqueue (§12): with async preemption on, a pod whose victims are
 *  still being deleted (its UID in `preempting`) waits. */
PluginStatus PreEnqueue(const Pod& pod, bool async_preemption, const std::set<std::string>& preempting);

/** FitError.Error()'s histogram over `statuses` for `num_all_nodes` nodes:
 *  "0/N nodes are available: <sorted counted reasons>." */
std::string StatusesMessage(int32_t num_all_nodes, const NodeToStatus& statuses);

/** Plugins with PreFilter AddPod/RemovePod extensions upstream: their PreFilter state counts
 *  other pods (InterPodAffinity, PodTopologySpread, VolumeRestrictions). */
bool PodDependentPreFilter(const std::string& plugin);

/** A DryRunHost over the scalar reference: the filter chain is `filter` (name, plugin) in
 *  order, after the `pre_filter` plugins. PreFilter runs once for the pod; the plugins
 *  upstream gives AddPod/RemovePod extensions (pod-dependent PreFilter state) run it again
 *  on the changed cluster for every filter call, which is what those extensions compute
 *  incrementally. `nominated` are pending pods holding a nomination (status.nominatedNodeName). */
class ReferenceDryRunHost final : public DryRunHost {
 public:
  using Named = std::pair<std::string, reference::Plugin*>;
  ReferenceDryRunHost(const reference::ClusterState& state, std::vector<Named> pre_filter, std::vector<Named> filter,
                      std::vector<const Pod*> nominated);
  ~ReferenceDryRunHost() override;

  int32_t NumNodes() const override;
  const Node& NodeAt(int32_t node) const override;
  int32_t IndexOf(const std::string& name) const override;
  const std::vector<const Pod*>& PodsOn(int32_t node) const override;
  PluginStatus Filter(const Pod& pod, int32_t node, const std::vector<const Pod*>& removed) override;
  int64_t filter_calls() const override { return filter_calls_; }
  /** The plugin that rejected the pod in the last Filter ("" after a success or an
   *  earlier PreFilter rejection). */
  const std::string& last_rejector() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
  int64_t filter_calls_ = 0;
};

}  // namespace kplace::cycle
