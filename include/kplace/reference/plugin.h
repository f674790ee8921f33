#pragma once
// The scalar reference: plain per-node plugins written from the spec, structured
// like upstream's framework. It is the oracle for differential tests and the
// in-run baseline for throughput.
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "kplace/config/plugin_args.h"
#include "kplace/framework/types.h"
#include "kplace/model/objects.h"

namespace kplace::plugins::volume {
class VolumeAssumeCache;
}  // namespace kplace::plugins::volume

namespace kplace::reference {

/** A node and the pods bound to it, as upstream's NodeInfo. */
struct NodeInfo {
  const Node* node = nullptr;
  std::vector<const Pod*> pods;
};

/** The cluster as the reference sees it for one scheduling cycle. */
struct ClusterState {
  std::vector<NodeInfo> nodes;         // snapshot order
  const ObjectSet* objects = nullptr;  // namespaces, workloads, storage objects
  FeatureGates gates;
  /** VolumeBinding's assume caches (kplace/plugins/volume_binding_assume.h): the storage
   *  objects as the scheduler assumes them, written by Reserve. MakeClusterState makes
   *  one; copies share it. */
  std::shared_ptr<plugins::volume::VolumeAssumeCache> volume_assume;
};

/** Per-cycle plugin state, keyed by plugin name. */
class CycleState {
 public:
  template <typename T>
  T* Get(const std::string& key) const {
    auto it = data_.find(key);
    return it == data_.end() ? nullptr : static_cast<T*>(it->second.get());
  }
  template <typename T>
  T* Put(const std::string& key, std::shared_ptr<T> value) {
    T* raw = value.get();
    data_[key] = std::move(value);
    return raw;
  }

 private:
  std::map<std::string, std::shared_ptr<void>> data_;
};

/** PreFilter's optional restriction of candidate nodes (names; nullopt = all). */
using NodeNameSet = std::optional<std::set<std::string>>;

/** A reference plugin. Default implementations are the framework's "not implemented". */
class Plugin {
 public:
  virtual ~Plugin() = default;
  virtual const char* Name() const = 0;
  /** Bits of ExtensionPoint. */
  virtual unsigned ExtensionPoints() const = 0;

  virtual PluginStatus PreFilter(CycleState&, const Pod&, const ClusterState&, NodeNameSet*) {
    return PluginStatus::Success();
  }
  virtual PluginStatus Filter(CycleState&, const Pod&, const NodeInfo&, const ClusterState&) {
    return PluginStatus::Success();
  }
  /** `feasible` are the nodes that passed Filter, in scan order. */
  virtual PluginStatus PreScore(CycleState&, const Pod&, const std::vector<const NodeInfo*>&,
                                const ClusterState&) {
    return PluginStatus::Success();
  }
  virtual PluginStatus Score(CycleState&, const Pod&, const NodeInfo&, const ClusterState&,
                             int64_t* score) {
    *score = 0;
    return PluginStatus::Success();
  }
  /** Rewrites `scores` (one per scored node, in scored order) in place. */
  virtual PluginStatus NormalizeScore(CycleState&, const Pod&, std::vector<int64_t>&) {
    return PluginStatus::Success();
  }
  /** Reserve: the pod of this cycle goes to `node` (which passed Filter). Plugins that
   *  remember decisions across pods (VolumeBinding's assume caches) record them here.
   *  Cannot fail: upstream's only Reserve plugin fails on API conversion errors alone. */
  virtual void Reserve(CycleState&, const Pod&, const NodeInfo& /*node*/, const ClusterState&) {}
};

using PluginFactory = std::function<absl::StatusOr<std::unique_ptr<Plugin>>(
    const PluginArgs& args, const FeatureGates& gates)>;

/** @brief Registers a reference plugin factory under its upstream name. */
bool RegisterPlugin(const std::string& name, PluginFactory factory);
/** @brief Creates a plugin. NotFound for unknown names; InvalidArgument for bad args. */
absl::StatusOr<std::unique_ptr<Plugin>> MakePlugin(const std::string& name, const PluginArgs& args,
                                                   const FeatureGates& gates);
/** @brief Names of the registered reference plugins, sorted. */
std::vector<std::string> RegisteredPlugins();

/** @brief Builds NodeInfos from nodes and bound pods (pods with spec.nodeName of a known
 *  node; terminal Succeeded/Failed pods are left out, as the scheduler's cache does). */
ClusterState MakeClusterState(const ObjectSet& objects, const FeatureGates& gates = {});

/** DefaultNormalize: scale to [0, 100] by the maximum, optionally reversed. */
void DefaultNormalizeScore(std::vector<int64_t>& scores, bool reverse);

}  // namespace kplace::reference

#define KPLACE_REGISTER_REFERENCE_PLUGIN(name, factory)                  \
  static const bool kplace_reference_registered_##name [[maybe_unused]] = \
      ::kplace::reference::RegisterPlugin(#name, factory)
