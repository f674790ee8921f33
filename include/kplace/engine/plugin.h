#pragma once
// An engine plugin: host-side preparation plus kernels over node columns. Each plugin
// is compiled once per backend (kernels/plugins/<name>.cu) and registered per backend.
// Host-safe: no Abseil, no CUDA headers.
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "kplace/config/plugin_args.h"
#include "kplace/engine/snapshot.h"
#include "kplace/framework/types.h"

namespace kplace::engine {

enum class Backend : uint8_t { kOmp, kCuda };
const char* BackendName(Backend b);

/** A filter verdict code per node: 0 passes; other values are plugin-defined. */
using VerdictCode = uint32_t;

/**
 * An engine plugin. Pointers passed to Filter/Score/NormalizeScore address memory of
 * the plugin's backend (host memory for omp, device memory for cuda).
 */
class Plugin {
 public:
  virtual ~Plugin() = default;
  virtual const char* Name() const = 0;
  /** Bits of ExtensionPoint. */
  virtual unsigned ExtensionPoints() const = 0;

  /** Builds the plugin's node columns. Called once before any pod. */
  virtual void Prepare(const Snapshot&) {}
  /** Called on every plugin of the profile when a pod's cycle starts, before any
   *  PreFilter: plugins whose Filter or Score needs the pod but that have no PreFilter
   *  (or PreScore) point, like upstream's Filter-only plugins, compile it here. */
  virtual void StartPod(const Pod&, const Snapshot&) {}
  /** Compiles the pod into the plugin's parameter block. When the plugin narrows the
   *  candidate nodes it sets `*restricts` and fills `nodes` (sorted snapshot indices). */
  virtual PluginStatus PreFilter(const Pod&, const Snapshot&, std::vector<NodeIndex>* /*nodes*/,
                                 bool* /*restricts*/) {
    return PluginStatus::Success();
  }
  /** The node names the last PreFilter restricted to, as upstream's PreFilterResult holds
   *  them (names absent from the snapshot included); null when it reports only indices. */
  virtual const std::vector<std::string>* PreFilterNodeNames() const { return nullptr; }
  /** Writes a verdict code for every node in [0, num_nodes). */
  virtual void Filter(int32_t /*num_nodes*/, VerdictCode* /*codes*/) {}
  /** The status a non-zero verdict code stands for. */
  virtual PluginStatus Verdict(VerdictCode) const {
    return PluginStatus::Make(Code::kUnschedulable, Name());
  }
  /** `feasible` is the host list of nodes that passed Filter, in scan order. */
  virtual PluginStatus PreScore(const Pod&, const Snapshot&, const std::vector<NodeIndex>& /*feasible*/) {
    return PluginStatus::Success();
  }
  /** Raw scores of the `count` nodes listed in `nodes`. */
  virtual void Score(const NodeIndex* /*nodes*/, int32_t /*count*/, int64_t* /*scores*/) {}
  /** Normalizes `count` raw scores in place (a reduction over them, then a map). */
  virtual void NormalizeScore(int32_t /*count*/, int64_t* /*scores*/) {}
  /** After PreScore: true when NormalizeScore gives every node `*normalized` for this pod,
   *  whichever nodes are scored (say, no node can score). Batched runs then add it to every
   *  total without calling Score; the per-pod path still scores. */
  virtual bool ConstantScore(int64_t* /*normalized*/) const { return false; }
  /** Called after the snapshot records `pod` on `node`; update node columns. */
  virtual void OnBind(const Pod&, NodeIndex, const Snapshot&) {}
  /** Called after the snapshot took `pod` off `node` (a deletion, an unbind or the old
   *  version of an update); `pod` stays valid. Undo what OnBind added and return true, or
   *  return false when that cannot be done exactly in place: the framework then creates
   *  and prepares the plugin again over the snapshot. Plugins whose columns never depend
   *  on pods return true. Default false: a plugin that keeps pod state must opt in. */
  virtual bool OnUnbind(const Pod&, NodeIndex, const Snapshot&) { return false; }
  /** Called after node `node`'s object changed in place (any labels, its zone and other
   *  topology domains included, with its pods still on it; the snapshot's label columns
   *  already updated); `old` is what it was. The name changes only when the node
   *  leaves (its row becomes a nameless, unlabelled node without pods, never evaluated
   *  again) or comes back under the name it had. Update that node's columns and return
   *  true, or return false to be created and prepared again. Default false. */
  virtual bool OnNodeUpdate(NodeIndex /*node*/, const Node& /*old*/, const Snapshot&) { return false; }
  /** Called after the cluster's Namespace objects changed (Snapshot::objects() holds them
   *  now). Default true: only InterPodAffinity reads namespaces (their labels, for
   *  namespaceSelector terms); a plugin that keeps them returns false to be built again. */
  virtual bool OnNamespacesChange(const Snapshot&) { return true; }
  /** Called after node `node` joined the snapshot as its last index, without pods. Grow
   *  the columns by it and return true, or return false to be created and prepared
   *  again. Default false. */
  virtual bool OnNodeAdd(NodeIndex /*node*/, const Snapshot&) { return false; }

  /**
   * True when binding a pod to node h can change this plugin's answers for node h alone.
   * Precisely, for a fixed pod:
   *  - StartPod, PreFilter and PreScore give the same outcome (status, Skip, node
   *    restriction, and parameters with the same meaning) whatever was bound meanwhile;
   *  - Filter's verdict and Score's raw score for node i depend only on node i's own state
   *    (its Node object and the pods bound to it) and on state no bind changes;
   *  - OnBind(pod, h) changes what Filter and Score report for node h only;
   *  - NormalizeScore reads only the scores it is given.
   * The batched cycle (kplace/cycle/batch.h) then keeps this plugin's verdicts and raw
   * scores across consecutive pods of one scheduling signature and re-evaluates only the
   * nodes bound since; normalization still runs per pod over that pod's feasible window.
   * Default false: the plugin is re-evaluated on every node for every pod.
   */
  virtual bool NodeLocal() const { return false; }
  /**
   * Asked only when this plugin's PreFilter (where the profile enables it) returned Skip
   * for `pod` and its PreScore returned Skip or left a ConstantScore: true when a pod with
   * `pod`'s scheduling signature would get the same after any number of such pods are
   * bound. A batched run whose pods every plugin that is not node-local skips this way
   * needs node-local state only (Framework::LocalOnlyRun). Default false.
   */
  virtual bool SkipHoldsForRun(const Pod& /*pod*/) const { return false; }
  /** Verdict codes of the `count` nodes listed in `nodes` (backend memory), exactly as
   *  Filter writes them. Returns false when the plugin only filters all nodes at once (the
   *  default); the framework then runs Filter and gathers. */
  virtual bool FilterNodes(const NodeIndex* /*nodes*/, int32_t /*count*/, VerdictCode* /*codes*/) { return false; }
  /**
   * Preemption's dry run (DefaultPreemption's SelectVictimsOnNode), for the pod of the last
   * PreFilter with no bind or unbind since: the verdict Filter would give node `node` if the
   * pods `removed` (bound there) were gone, where `current` is its verdict now. Host code over
   * host state only (it runs for every node the dry run tries, on either backend). False
   * when the plugin cannot tell in place; the dry run then runs that node's filter chain on
   * the reference. Not asked of the plugins whose PreFilter state counts the cluster's pods
   * (InterPodAffinity, PodTopologySpread, VolumeRestrictions): the dry run keeps their
   * verdict when the removed pods cannot change that state and asks the reference otherwise.
   * Nor of plugins whose verdict reads no pods (FilterReadsPods): theirs stays. Default false.
   */
  virtual bool FilterWithout(NodeIndex /*node*/, const std::vector<const Pod*>& /*removed*/, VerdictCode /*current*/,
                             const Snapshot&, VerdictCode* /*code*/) {
    return false;
  }
  /** False when no Filter verdict of this plugin depends on which pods a node holds (only
   *  on its Node object and on other kinds of objects). Default true. */
  virtual bool FilterReadsPods() const { return true; }
};

using PluginFactory = std::function<std::unique_ptr<Plugin>(const PluginArgs&, const FeatureGates&,
                                                             std::string* error)>;

/** Registers a plugin for a backend; called from static initializers. */
bool RegisterPlugin(Backend backend, const std::string& name, PluginFactory factory);
/** Creates a plugin; null with `*error` set when unknown or when args are rejected. */
std::unique_ptr<Plugin> MakePlugin(Backend backend, const std::string& name, const PluginArgs& args,
                                   const FeatureGates& gates, std::string* error);
/** Names registered for a backend, sorted. */
std::vector<std::string> RegisteredPlugins(Backend backend);

}  // namespace kplace::engine

// Used inside kernels/plugins/*.cu; KPLACE_BACKEND_ID is set by kernels/backend.cuh.
#define KPLACE_REGISTER_ENGINE_PLUGIN(name, type)                                        \
  static const bool kplace_engine_registered_##name [[maybe_unused]] =                    \
      ::kplace::engine::RegisterPlugin(                                                   \
          KPLACE_BACKEND_ID, #name,                                                       \
          [](const ::kplace::PluginArgs& args, const ::kplace::FeatureGates& gates,       \
             std::string* error) -> std::unique_ptr<::kplace::engine::Plugin> {           \
            return type::Create(args, gates, error);                                      \
          })
