// Reference VolumeZone, straight from volumes.md §3.
#include <algorithm>

#include "kplace/plugins/volume_common.h"
#include "kplace/reference/plugin.h"

namespace kplace::reference {
namespace {

namespace volume = plugins::volume;

constexpr char kName[] = "VolumeZone";

struct PvTopology {
  std::string key;
  std::vector<std::string> values;
};

struct ZoneState {
  std::vector<PvTopology> topologies;
};

class VolumeZone final : public Plugin {
 public:
  const char* Name() const override { return kName; }
  unsigned ExtensionPoints() const override { return kPreFilterPoint | kFilterPoint; }

  PluginStatus PreFilter(CycleState& state, const Pod& pod, const ClusterState& cluster, NodeNameSet*) override {
    auto s = std::make_shared<ZoneState>();
    PluginStatus status = Topologies(pod, cluster, &s->topologies);
    if (!status.IsSuccess()) return status;
    if (s->topologies.empty()) return PluginStatus::Skip();
    state.Put(kName, s);
    return PluginStatus::Success();
  }

  PluginStatus Filter(CycleState& state, const Pod& pod, const NodeInfo& node, const ClusterState& cluster) override {
    if (pod.volumes.empty()) return PluginStatus::Success();
    std::vector<PvTopology> computed;
    const std::vector<PvTopology>* topologies = &computed;
    if (const ZoneState* s = state.Get<ZoneState>(kName)) {
      topologies = &s->topologies;
    } else {
      // No PreFilter state: recompute, as upstream's Filter falls back to.
      PluginStatus status = Topologies(pod, cluster, &computed);
      if (!status.IsSuccess()) return status;
    }
    const Labels& labels = node.node->meta.labels;
    bool constrained = false;
    for (const char* key : volume::kTopologyKeys) constrained = constrained || labels.count(key);
    if (!constrained) return PluginStatus::Success();
    for (const PvTopology& t : *topologies) {
      auto it = labels.find(t.key);
      if (it == labels.end()) {
        // A beta key on the PV may be met by the node's GA key.
        std::string ga = t.key;
        if (t.key == volume::kTopologyKeys[0]) ga = volume::kTopologyKeys[2];
        if (t.key == volume::kTopologyKeys[1]) ga = volume::kTopologyKeys[3];
        it = labels.find(ga);
      }
      if (it == labels.end() || std::find(t.values.begin(), t.values.end(), it->second) == t.values.end()) {
        return PluginStatus::Make(Code::kUnschedulableAndUnresolvable, "node(s) had no available volume zone");
      }
    }
    return PluginStatus::Success();
  }

 private:
  PluginStatus Topologies(const Pod& pod, const ClusterState& cluster, std::vector<PvTopology>* out) {
    const Code uau = Code::kUnschedulableAndUnresolvable;
    for (const Volume& v : pod.volumes) {
      if (v.source != "persistentVolumeClaim") continue;
      if (v.claim_name.empty()) return PluginStatus::Make(uau, "PersistentVolumeClaim had no name");
      const StorageObjects& storage = cache_.Get(*cluster.objects);
      if (!cache_.error().empty()) return PluginStatus::Error(cache_.error());
      const PersistentVolumeClaim* pvc = storage.FindPvc(pod.meta.namespace_, v.claim_name);
      if (!pvc) return PluginStatus::Make(uau, volume::ClaimNotFound(v.claim_name));
      if (pvc->volume_name.empty()) {
        std::string class_name = volume::ClaimClass(*pvc);
        if (class_name.empty()) {
          return PluginStatus::Make(uau, "PersistentVolumeClaim had no pv name and storageClass name");
        }
        const StorageClass* sc = storage.FindClass(class_name);
        if (!sc) return PluginStatus::Make(uau, volume::ClassNotFound(class_name));
        if (!sc->volume_binding_mode) {
          return PluginStatus::Make(uau, "VolumeBindingMode not set for StorageClass \"" + class_name + "\"");
        }
        if (*sc->volume_binding_mode == volume::kWaitForFirstConsumer) continue;  // bound later, at this node
        return PluginStatus::Make(uau, "PersistentVolume had no name");
      }
      const PersistentVolume* pv = storage.FindPv(pvc->volume_name);
      if (!pv) return PluginStatus::Make(uau, volume::VolumeNotFound(pvc->volume_name));
      for (const char* key : volume::kTopologyKeys) {
        auto it = pv->meta.labels.find(key);
        if (it == pv->meta.labels.end()) continue;
        auto zones = volume::LabelZonesToSet(it->second);
        if (zones) out->push_back({key, *zones});  // an unparsable label is ignored
      }
    }
    return PluginStatus::Success();
  }

  volume::StorageCache cache_;
};

}  // namespace

KPLACE_REGISTER_REFERENCE_PLUGIN(VolumeZone, [](const PluginArgs&, const FeatureGates&)
                                                 -> absl::StatusOr<std::unique_ptr<Plugin>> {
  return std::make_unique<VolumeZone>();
});

}  // namespace kplace::reference
