// Reference VolumeRestrictions, straight from volumes.md §5.
#include <algorithm>
#include <set>

#include "kplace/plugins/volume_common.h"
#include "kplace/reference/plugin.h"

namespace kplace::reference {
namespace {

namespace volume = plugins::volume;

constexpr char kName[] = "VolumeRestrictions";

struct RestrictionsState {
  int conflicts = 0;  // ReadWriteOncePod claims of the pod already used by a bound pod
};

bool IsRestricted(const Volume& v) {
  return v.source == "gcePersistentDisk" || v.source == "awsElasticBlockStore" || v.source == "rbd" ||
         v.source == "iscsi";
}

bool HaveOverlap(const std::vector<std::string>& a, const std::vector<std::string>& b) {
  for (const auto& x : a) {
    for (const auto& y : b) {
      if (x == y) return true;
    }
  }
  return false;
}

// Whether `v` conflicts with any volume of `existing` (upstream's isVolumeConflict).
bool Conflicts(const Volume& v, const Pod& existing) {
  for (const Volume& e : existing.volumes) {
    if (e.source != v.source) continue;
    if (v.source == "gcePersistentDisk" && v.disk_id == e.disk_id && !(v.read_only && e.read_only)) return true;
    if (v.source == "awsElasticBlockStore" && v.disk_id == e.disk_id) return true;
    if (v.source == "iscsi" && volume::IscsiIqn(v) == volume::IscsiIqn(e) && !(v.read_only && e.read_only)) return true;
    if (v.source == "rbd") {
      volume::RbdDisk a = volume::ParseRbd(v), b = volume::ParseRbd(e);
      if (HaveOverlap(a.monitors, b.monitors) && a.pool == b.pool && a.image == b.image && !(v.read_only && e.read_only)) {
        return true;
      }
    }
  }
  return false;
}

class VolumeRestrictions final : public Plugin {
 public:
  const char* Name() const override { return kName; }
  unsigned ExtensionPoints() const override { return kPreFilterPoint | kFilterPoint; }

  PluginStatus PreFilter(CycleState& state, const Pod& pod, const ClusterState& cluster, NodeNameSet*) override {
    bool needs_check = false;
    for (const Volume& v : pod.volumes) needs_check = needs_check || IsRestricted(v);
    std::set<std::string> rwop;
    for (const Volume& v : pod.volumes) {
      if (v.source != "persistentVolumeClaim") continue;
      const StorageObjects& storage = cache_.Get(*cluster.objects);
      if (!cache_.error().empty()) return PluginStatus::Error(cache_.error());
      const PersistentVolumeClaim* pvc = storage.FindPvc(pod.meta.namespace_, v.claim_name);
      if (!pvc) return PluginStatus::Make(Code::kUnschedulableAndUnresolvable, volume::ClaimNotFound(v.claim_name));
      for (const std::string& mode : pvc->access_modes) {
        if (mode == volume::kReadWriteOncePod) rwop.insert(pvc->meta.name);
      }
    }
    auto s = std::make_shared<RestrictionsState>();
    for (const std::string& name : rwop) {
      bool used = false;
      for (const NodeInfo& n : cluster.nodes) {
        for (const Pod* p : n.pods) {
          if (p->meta.namespace_ != pod.meta.namespace_) continue;
          for (const Volume& v : p->volumes) {
            used = used || (v.source == "persistentVolumeClaim" && v.claim_name == name);
          }
        }
      }
      if (used) ++s->conflicts;
    }
    if (!needs_check && s->conflicts == 0) return PluginStatus::Skip();
    state.Put(kName, s);
    return PluginStatus::Success();
  }

  PluginStatus Filter(CycleState& state, const Pod& pod, const NodeInfo& node, const ClusterState&) override {
    for (const Volume& v : pod.volumes) {
      if (!IsRestricted(v)) continue;
      for (const Pod* existing : node.pods) {
        if (Conflicts(v, *existing)) return PluginStatus::Make(Code::kUnschedulable, "node(s) had no available disk");
      }
    }
    // Without PreFilter state (PreFilter skipped or failed) nothing is in use.
    const RestrictionsState* s = state.Get<RestrictionsState>(kName);
    if (s && s->conflicts > 0) {
      return PluginStatus::Make(Code::kUnschedulable,
                                "node(s) unavailable due to PersistentVolumeClaim with ReadWriteOncePod access mode "
                                "already in-use by another pod");
    }
    return PluginStatus::Success();
  }

 private:
  volume::StorageCache cache_;
};

}  // namespace

KPLACE_REGISTER_REFERENCE_PLUGIN(VolumeRestrictions, [](const PluginArgs&, const FeatureGates&)
                                                         -> absl::StatusOr<std::unique_ptr<Plugin>> {
  return std::make_unique<VolumeRestrictions>();
});

}  // namespace kplace::reference
