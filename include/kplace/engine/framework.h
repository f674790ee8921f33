#pragma once
// The engine's per-pod framework on one backend: runs a profile's plugins as kernels
// over node columns. The cycle (node order, feasible window, selection) is host-side,
// in kplace/cycle. Host-safe.
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "kplace/config/profile.h"
#include "kplace/engine/plugin.h"
#include "kplace/engine/snapshot.h"

namespace kplace::engine {

struct PreFilterResult {
  /** Merged status: Success, Unschedulable(AndUnresolvable) (the cycle stops) or Error. */
  PluginStatus status;
  std::string failed_plugin;  // plugin that produced `status` when not Success
  /** Per Filter-point plugin: true when its PreFilter returned Skip. */
  std::vector<bool> skip_filter;
  bool restricted = false;
  std::vector<NodeIndex> allowed;  // sorted, when restricted
  std::vector<std::string> restricting_plugins;

  /** The plugins upstream records as rejecting the pod at PreFilter (its diagnosis'
   *  UnschedulablePlugins): the one that stopped the pass when it was unresolvable, else
   *  the restricting ones and the one that returned Unschedulable. */
  std::vector<std::string> UnschedulablePlugins() const {
    if (status.code == Code::kUnschedulableAndUnresolvable && !failed_plugin.empty()) return {failed_plugin};
    std::vector<std::string> out = restricting_plugins;
    if (status.IsRejected() && !failed_plugin.empty()) out.push_back(failed_plugin);
    return out;
  }
};

/** One PreFilter plugin's own answer, before the framework merges the answers. */
struct PluginPreFilter {
  std::string plugin;
  PluginStatus status;
  bool restricts = false;
  std::vector<NodeIndex> nodes;  // sorted, when restricts
  std::vector<std::string> names;  // sorted node names, when restricts (absent nodes included)
};

struct FilterResult {
  /** Per node: 1 + index into filter_plugins() of the first plugin that rejected it,
   *  or 0 when the node is feasible. */
  std::vector<int16_t> failed_plugin;
  std::vector<VerdictCode> code;  // that plugin's verdict code
};

struct ScoreResult {
  PluginStatus status;  // Error when a PreScore failed
  std::vector<bool> skipped;                     // per score plugin: PreScore returned Skip
  std::vector<std::vector<int64_t>> raw, normalized;  // [score plugin][k], k over feasible
  std::vector<int64_t> total;                    // weighted sum per feasible node
  /** Per PreScore plugin (profile().pre_score order): its own status, unwrapped. Plugins
   *  after one that failed did not run and stay Success. */
  std::vector<PluginStatus> pre_score_status;
  double pre_score_seconds = 0;  // Score/ScoreTotals: the time PreScore took
};

/** Nodes the Filter plugins rejected in one scan, per distinct (plugin, code). */
struct Rejection {
  int16_t plugin;  // 1 + index into filter_plugins()
  VerdictCode code;
  PluginStatus status;  // Framework::Verdict(plugin - 1, code)
  int64_t count;
};

/** The cycle's scan for one pod: from a start position in the candidate list, the first k
 *  feasible nodes, stopping at the (k+1)-th (evaluated, not taken) or at a rejection that
 *  stands for an error. */
struct Scan {
  std::vector<NodeIndex> feasible;   // scan order
  std::vector<Rejection> rejected;   // in the order first met
  int32_t processed = 0;  // candidates before the one the scan stopped at; all when it did not
  bool error = false;     // stopped at rejected.back(), an Error
  /** Set by ScanLocal when it also scored the window: total[j] is feasible[j]'s weighted
   *  total as ScoreRun gives it, max_total the largest. */
  bool scored = false;
  std::vector<int64_t> total;
  int64_t max_total = 0;
};

class Framework;
/** Counts a node that filter plugin `plugin` (1-based) rejected with `code` into `*scan`;
 *  false, with scan->error set, when that verdict stands for an error. */
bool CountRejection(const Framework& fw, int16_t plugin, VerdictCode code, Scan* scan);

class Framework {
 public:
  /** Creates the plugins of `profile` on `backend`; null with `*error` when a plugin is
   *  not available or its arguments are rejected. */
  static std::unique_ptr<Framework> Create(Backend backend, const Profile& profile,
                                           const FeatureGates& gates, std::string* error);
  virtual ~Framework() = default;

  virtual Backend backend() const = 0;
  virtual const Profile& profile() const = 0;
  /** Plugin names at the Filter point, in run order. */
  virtual const std::vector<std::string>& filter_plugins() const = 0;

  /** Builds every plugin's columns for the snapshot (once). */
  virtual void Prepare(const Snapshot& snapshot) = 0;

  /** Runs PreFilter for `pod` (which becomes the current pod of this cycle). */
  virtual PreFilterResult PreFilter(const Pod& pod) = 0;
  /** Runs every PreFilter plugin for `pod` on its own: no early stop, no merging, each
   *  plugin's status as it returned it (conform compares single plugins with upstream's
   *  plugin tests). `pod` becomes the current pod, as after PreFilter. */
  virtual std::vector<PluginPreFilter> PreFilterEach(const Pod& pod) = 0;
  /** Runs the Filter plugins not skipped, on every node; first failure wins per node. */
  virtual FilterResult Filter(const PreFilterResult& pre) = 0;
  /** What Filter(pre) gives, on the listed nodes only: out->failed_plugin[j] and
   *  out->code[j] are nodes[j]'s. The per-pod cycle asks for the nodes it visits, in chunks,
   *  instead of filtering the whole cluster. */
  virtual void FilterNodes(const PreFilterResult& pre, const std::vector<NodeIndex>& nodes, FilterResult* out) = 0;
  /** Every Filter plugin's verdict code on every node, independently (explain, conform). */
  virtual std::vector<std::vector<VerdictCode>> FilterEach() = 0;
  // Preemption's dry run (kplace/cycle/engine_dry_run.h), for the pod of the last PreFilter
  // with no bind or unbind since:
  /** Every Filter plugin's verdict on each listed node, each plugin on its own:
   *  (*out)[j * filter_plugins().size() + f] for nodes[j]; plugins `pre` skips give 0. */
  virtual void FilterEachOn(const PreFilterResult& pre, const std::vector<NodeIndex>& nodes,
                            std::vector<VerdictCode>* out) = 0;
  /** Filter plugin `f`'s verdict on `node` if the pods `removed` (bound there) were gone,
   *  given `current`, its verdict now (Plugin::FilterWithout); false when it cannot tell. */
  virtual bool FilterWithout(int f, NodeIndex node, const std::vector<const Pod*>& removed, VerdictCode current,
                             VerdictCode* code) = 0;
  /** False when filter plugin `f`'s verdicts read no pods (Plugin::FilterReadsPods): the
   *  dry run keeps them as they are. */
  virtual bool FilterReadsPods(int f) const = 0;
  /** The status that verdict `code` of filter plugin `plugin` stands for. */
  virtual PluginStatus Verdict(int plugin, VerdictCode code) const = 0;

  /** PreScore, Score and NormalizeScore over `feasible` (scan order), weighted. */
  virtual ScoreResult Score(const std::vector<NodeIndex>& feasible) = 0;
  /** Score without each plugin's raw and normalized scores (raw and normalized left empty),
   *  into `*out`, its buffers reused: the per-pod cycle when nothing is explained. */
  virtual void ScoreTotals(const std::vector<NodeIndex>& feasible, ScoreResult* out) = 0;
  /** NormalizeScore and weights over given raw scores (raw[score plugin][k], plugins marked
   *  in `skipped` left at 0), for the pod of the last Score: out->normalized and
   *  out->total. OpportunisticBatching's rescoring normalizes a cached ranking again. */
  virtual void Normalize(const std::vector<std::vector<int64_t>>& raw, const std::vector<bool>& skipped,
                         ScoreResult* out) = 0;

  /** Records a binding: the snapshot gets the pod, plugins update their columns. */
  virtual void Bind(const Pod& pod, NodeIndex node) = 0;
  /** Records that the snapshot took `pod` off `node` (Snapshot::Unbind): plugins undo
   *  what its bind added. False when some plugin had to be built again; a batched run must
   *  then start again (BeginRun), since that plugin forgot the run. */
  virtual bool Unbind(const Pod& pod, NodeIndex node) = 0;
  /** Records that node `node` changed in place (Snapshot::UpdateNode): plugins update its
   *  columns or are built again. A batched run must start again afterwards (a run's
   *  compiled pod may depend on which label keys exist at all). */
  virtual void UpdateNode(NodeIndex node, const Node& old) = 0;
  /** Records that node `node` joined (Snapshot::AddNode); the same rules as UpdateNode. */
  virtual void AddNode(NodeIndex node) = 0;
  /** Records that the snapshot's Namespace objects changed; a batched run starts again. */
  virtual void NamespacesChanged() = 0;

  // Batched cycles (kplace/cycle/batch.h). A run is a sequence of pods with one scheduling
  // signature; within it, node-local plugins (Plugin::NodeLocal) compile the pod once
  // (StartPod, PreFilter, PreScore) and keep their verdicts and raw scores per node, and
  // only nodes bound since (through Bind) are evaluated again. Every other plugin runs for
  // every pod, on the nodes the cycle visits.

  /** Starts a run of pods with `first`'s scheduling signature; node-local plugins compile
   *  `first`, which must stay alive and unchanged until the next BeginRun. The next
   *  FilterRun and ScoreRun evaluate every node they need afresh. */
  virtual void BeginRun(const Pod& first) = 0;
  /** PreFilter(pod) for the current pod of the run: node-local plugins give what they gave
   *  for the run's first pod (computed once), the others run on `pod`. */
  virtual const PreFilterResult& PreFilterRun(const Pod& pod) = 0;
  /** After BeginRun and the run's first pod: true when every plugin that is not node-local
   *  skips `pod` (of the run's signature) at each of its PreFilter and PreScore points (or
   *  scores a constant there) and says that holds across the run's binds
   *  (Plugin::SkipHoldsForRun). From then until the next BeginRun or LocalOnlyRun no such
   *  plugin runs for the run's pods (its OnBind still does), so they need node-local state
   *  only, and PreFilterRun's result is computed once. Only the run's own binds keep the
   *  premise: after any other bind the cycle must ask again. `candidates` stands in for the
   *  feasible nodes PreScore is given. False when a plugin that is not node-local has
   *  Filter or Score without the PreFilter or PreScore to skip. */
  virtual bool LocalOnlyRun(const Pod& pod, const std::vector<NodeIndex>& candidates) = 0;
  /** What Filter(pre) gives for the current pod of the run, on the listed nodes only:
   *  out->failed_plugin[j] and out->code[j] are node nodes[j]'s. The cycle asks for the
   *  nodes it visits, in chunks; plugins that are not node-local are evaluated on those. */
  virtual void FilterRun(const PreFilterResult& pre, const std::vector<NodeIndex>& nodes, FilterResult* out) = 0;
  /** In a local-only run (LocalOnlyRun): the scan itself, over the verdicts the run keeps
   *  per node, from candidates[pos] on (wrapping) for the first k feasible nodes. It also
   *  makes the run's kept sums of plain scores ready for those, so the ScoreRun that follows
   *  gathers only; once a ScoreRun of the run found every score plugin plain or constant,
   *  it writes the totals itself (out->scored) and no ScoreRun is needed. */
  virtual void ScanLocal(const PreFilterResult& pre, const std::vector<NodeIndex>& candidates, int32_t pos, int32_t k,
                         Scan* out) = 0;
  /** Score(feasible) for the current pod of the run into `*out` (its buffers reused across
   *  pods), with `total`, `skipped` and `status` only (raw, normalized and
   *  pre_score_status are left empty). */
  virtual void ScoreRun(const std::vector<NodeIndex>& feasible, ScoreResult* out) = 0;
};

/** True when a CUDA device is usable in this process (false when built without CUDA). */
bool CudaAvailable();

}  // namespace kplace::engine
