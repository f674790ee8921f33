// Reference NodeVolumeLimits (CSILimits), straight from volumes.md §4.
#include <algorithm>
#include <map>
#include <vector>

#include "kplace/plugins/volume_common.h"
#include "kplace/reference/plugin.h"

namespace kplace::reference {
namespace {

namespace volume = plugins::volume;

constexpr char kName[] = "NodeVolumeLimits";
constexpr char kRandomPrefix[] = "reference-prefix-of-32-chars-000";

// Counted volumes: unique name -> driver, plus the drivers in first-seen order.
struct Volumes {
  std::map<std::string, std::string> by_name;
  std::vector<std::string> order;  // names in first-seen order
  void Add(const std::string& name, const std::string& driver) {
    if (by_name.emplace(name, driver).second) order.push_back(name);
  }
};

class NodeVolumeLimits final : public Plugin {
 public:
  explicit NodeVolumeLimits(FeatureGates gates) : gates_(std::move(gates)) {}

  const char* Name() const override { return kName; }
  unsigned ExtensionPoints() const override { return kPreFilterPoint | kFilterPoint; }

  PluginStatus PreFilter(CycleState&, const Pod& pod, const ClusterState&, NodeNameSet*) override {
    for (const Volume& v : pod.volumes) {
      if (v.source == "persistentVolumeClaim" || v.source == "ephemeral" || volume::IsInlineMigratable(v)) {
        return PluginStatus::Success();
      }
    }
    return PluginStatus::Skip();
  }

  PluginStatus Filter(CycleState&, const Pod& pod, const NodeInfo& node, const ClusterState& cluster) override {
    if (pod.volumes.empty()) return PluginStatus::Success();
    const StorageObjects& st = cache_.Get(*cluster.objects);
    bool counted = false;
    for (const Volume& v : pod.volumes) {
      counted = counted || v.source == "persistentVolumeClaim" || v.source == "ephemeral" || volume::IsInlineMigratable(v);
    }
    if (counted && !cache_.error().empty()) return PluginStatus::Error(cache_.error());
    const CSINode* csi_node = st.FindCsiNode(node.node->meta.name);

    Volumes fresh;
    PluginStatus s = Attachable(pod, csi_node, true, st, &fresh);
    if (!s.IsSuccess()) return s;
    if (fresh.by_name.empty()) return PluginStatus::Success();

    if (gates_.Enabled("VolumeLimitScaling")) {
      std::vector<std::string> drivers;
      for (const std::string& name : fresh.order) {
        const std::string& d = fresh.by_name[name];
        if (std::find(drivers.begin(), drivers.end(), d) == drivers.end()) drivers.push_back(d);
      }
      for (const std::string& d : drivers) {
        const CSIDriver* driver = st.FindCsiDriver(d);
        if (!driver || !driver->prevent_pod_scheduling_if_missing.value_or(false)) continue;
        bool installed = false;
        if (csi_node) {
          for (const CSINodeDriver& cd : csi_node->drivers) installed = installed || cd.name == d;
        }
        if (!installed) return PluginStatus::Make(Code::kUnschedulable, d + " CSI driver is not installed on the node");
      }
    }

    std::map<std::string, int64_t> limits;
    if (csi_node) {
      for (const CSINodeDriver& d : csi_node->drivers) {
        if (d.allocatable_count) limits[d.name] = *d.allocatable_count;
      }
    }
    if (limits.empty()) return PluginStatus::Success();

    Volumes attached;
    for (const Pod* existing : node.pods) {
      PluginStatus es = Attachable(*existing, csi_node, false, st, &attached);
      if (!es.IsSuccess()) return PluginStatus::Error(es.Message());
    }
    std::map<std::string, int64_t> count;
    for (const auto& [name, driver] : attached.by_name) ++count[driver];
    std::map<std::string, std::string> attachments;
    for (const VolumeAttachment& va : st.attachments) {
      if (va.node_name != node.node->meta.name || va.attacher.empty() || !va.persistent_volume_name) continue;
      const PersistentVolume* pv = st.FindPv(*va.persistent_volume_name);
      if (!pv || pv->source.kind != "csi") continue;
      attachments[va.attacher + "/" + pv->source.csi_volume_handle] = va.attacher;
    }
    for (const auto& [name, driver] : attachments) {
      if (!attached.by_name.count(name)) ++count[driver];
    }
    std::map<std::string, int64_t> wanted;
    for (const auto& [name, driver] : fresh.by_name) {
      if (!attached.by_name.count(name)) ++wanted[driver];
    }
    for (const auto& [driver, n] : wanted) {
      auto limit = limits.find(driver);
      if (limit != limits.end() && count[driver] + n > limit->second) {
        return PluginStatus::Make(Code::kUnschedulable, "node(s) exceed max volume count");
      }
    }
    return PluginStatus::Success();
  }

 private:
  // filterAttachableVolumes.
  PluginStatus Attachable(const Pod& pod, const CSINode* csi_node, bool new_pod, const StorageObjects& st,
                          Volumes* out) const {
    for (const Volume& v : pod.volumes) {
      std::string claim;
      bool ephemeral = false;
      if (v.source == "persistentVolumeClaim") {
        claim = v.claim_name;
      } else if (v.source == "ephemeral") {
        claim = volume::EphemeralClaimName(pod, v);
        ephemeral = true;
      } else {
        if (!volume::IsInlineMigratable(v)) continue;
        std::string plugin = volume::InTreePluginOfSource(v.source);
        if (!MigrationOn(csi_node, plugin)) continue;
        volume::CsiVolume csi = volume::TranslateInlineToCsi(v);
        if (!csi.error.empty()) {
          return PluginStatus::Error("converting volume(" + v.name + ") from inline to csi: " + csi.error);
        }
        out->Add(csi.driver + "/" + csi.handle, csi.driver);
        continue;
      }
      if (claim.empty()) return PluginStatus::Error("PersistentVolumeClaim had no name");
      const PersistentVolumeClaim* pvc = st.FindPvc(pod.meta.namespace_, claim);
      if (!pvc) {
        if (new_pod) {
          return PluginStatus::Make(Code::kUnschedulableAndUnresolvable,
                                    "looking up PVC " + pod.meta.namespace_ + "/" + claim + ": " + volume::ClaimNotFound(claim));
        }
        continue;
      }
      if (ephemeral) {
        std::string err = volume::EphemeralOwnerError(pod, *pvc);
        if (!err.empty()) return PluginStatus::Error(err);
      }
      auto [driver, handle] = DriverInfo(csi_node, *pvc, st);
      if (driver.empty() || handle.empty()) continue;
      out->Add(driver + "/" + handle, driver);
    }
    return PluginStatus::Success();
  }

  static bool MigrationOn(const CSINode* csi_node, const std::string& plugin) {
    return csi_node != nullptr && volume::MigratedPluginIndex(plugin) >= 0;
  }

  std::pair<std::string, std::string> DriverInfo(const CSINode* csi_node, const PersistentVolumeClaim& pvc,
                                                 const StorageObjects& st) const {
    if (!pvc.volume_name.empty()) {
      if (const PersistentVolume* pv = st.FindPv(pvc.volume_name)) {
        if (pv->source.kind == "csi") return {pv->source.csi_driver, pv->source.csi_volume_handle};
        std::string plugin = volume::InTreePluginOfSource(pv->source.kind);
        if (plugin.empty() || !MigrationOn(csi_node, plugin)) return {};
        volume::CsiVolume csi = volume::TranslatePvToCsi(*pv);
        if (!csi.error.empty()) return {};
        return {csi.driver, csi.handle};
      }
    }
    // No PV (yet): count by the class's provisioner.
    std::string class_name = volume::ClaimClass(pvc);
    if (class_name.empty()) return {};
    const StorageClass* sc = st.FindClass(class_name);
    if (!sc) return {};
    std::string handle = std::string(kRandomPrefix) + "-" + pvc.meta.namespace_ + "/" + pvc.meta.name;
    if (volume::IsMigratableProvisioner(sc->provisioner)) {
      if (!MigrationOn(csi_node, sc->provisioner)) return {};
      return {volume::MigratedDriverName(volume::MigratedPluginIndex(sc->provisioner)), handle};
    }
    return {sc->provisioner, handle};
  }

  FeatureGates gates_;
  mutable volume::StorageCache cache_;
};

}  // namespace

KPLACE_REGISTER_REFERENCE_PLUGIN(NodeVolumeLimits, [](const PluginArgs&, const FeatureGates& gates)
                                                       -> absl::StatusOr<std::unique_ptr<Plugin>> {
  return std::make_unique<NodeVolumeLimits>(gates);
});

}  // namespace kplace::reference
