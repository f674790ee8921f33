// Reference VolumeBinding, straight from volumes.md §2 (FindPodVolumes per node), and
// Reserve assuming what Filter found for the chosen node (§2.6).
#include <algorithm>
#include <cmath>
#include <map>
#include <vector>

#include "kplace/plugins/inter_pod_affinity_common.h"
#include "kplace/plugins/volume_binding_assume.h"
#include "kplace/plugins/volume_common.h"
#include "kplace/reference/plugin.h"

namespace kplace::reference {
namespace {

namespace volume = plugins::volume;

constexpr char kName[] = "VolumeBinding";

struct StaticBinding {
  const PersistentVolumeClaim* pvc;
  const PersistentVolume* pv;
};

struct DynamicProvision {
  const PersistentVolumeClaim* pvc;
  const CSIStorageCapacity* capacity;  // null when capacity was not checked
};

struct PodVolumes {
  std::vector<StaticBinding> static_bindings;
  std::vector<DynamicProvision> dynamic_provisions;
};

struct BindingState {
  std::vector<const PersistentVolumeClaim*> bound, delay;
  std::map<std::string, PodVolumes> by_node;  // what Filter found for nodes that passed
};

bool BoundToClaim(const PersistentVolume& pv, const PersistentVolumeClaim& pvc) {
  if (!pv.claim_ref) return false;
  if (pv.claim_ref->name != pvc.meta.name || pv.claim_ref->namespace_ != pvc.meta.namespace_) return false;
  return pv.claim_ref->uid.empty() || pv.claim_ref->uid == pvc.meta.uid;
}

bool AffinityMatches(const std::optional<NodeSelector>& affinity, const Labels& labels) {
  return !affinity || volume::NodeSelectorMatchesLabels(*affinity, labels);
}

Quantity RequestOf(const PersistentVolumeClaim& pvc) { return pvc.request.value_or(Quantity()); }

class VolumeBinding final : public Plugin {
 public:
  VolumeBinding(VolumeBindingArgs args, FeatureGates gates) : args_(std::move(args)), gates_(std::move(gates)) {}

  const char* Name() const override { return kName; }
  unsigned ExtensionPoints() const override { return kPreFilterPoint | kFilterPoint | kPreScorePoint | kScorePoint; }

  // The claims and PVs are read through the run's assume caches, where Reserve writes.
  volume::VolumeAssumeCache& Storage(const ClusterState& cluster) {
    return cluster.volume_assume ? *cluster.volume_assume : own_storage_;
  }

  PluginStatus PreFilter(CycleState& state, const Pod& pod, const ClusterState& cluster, NodeNameSet*) override {
    const Code uau = Code::kUnschedulableAndUnresolvable;
    std::vector<const PersistentVolumeClaim*> claims;
    for (const Volume& v : pod.volumes) {
      bool ephemeral = v.source == "ephemeral";
      if (v.source != "persistentVolumeClaim" && !ephemeral) continue;
      std::string name = ephemeral ? volume::EphemeralClaimName(pod, v) : v.claim_name;
      volume::VolumeAssumeCache& storage = Storage(cluster);
      const StorageObjects& st = storage.Get(*cluster.objects);
      if (!storage.error().empty()) return PluginStatus::Error(storage.error());
      const PersistentVolumeClaim* pvc = st.FindPvc(pod.meta.namespace_, name);
      if (!pvc) {
        if (ephemeral) {
          return PluginStatus::Make(uau, "waiting for ephemeral volume controller to create the persistentvolumeclaim \"" +
                                             name + "\"");
        }
        return PluginStatus::Make(uau, volume::ClaimNotFound(name));
      }
      if (pvc->phase == "Lost") {
        return PluginStatus::Make(uau, "persistentvolumeclaim \"" + pvc->meta.name +
                                           "\" bound to non-existent persistentvolume \"" + pvc->volume_name + "\"");
      }
      if (!pvc->meta.deletion_timestamp.empty()) {
        return PluginStatus::Make(uau, "persistentvolumeclaim \"" + pvc->meta.name + "\" is being deleted");
      }
      if (ephemeral) {
        std::string err = volume::EphemeralOwnerError(pod, *pvc);
        if (!err.empty()) return PluginStatus::Make(uau, err);
      }
      claims.push_back(pvc);
    }
    auto s = std::make_shared<BindingState>();
    if (claims.empty()) {
      state.Put(kName, s);
      return PluginStatus::Skip();
    }
    const StorageObjects& st = Storage(cluster).Get(*cluster.objects);
    bool immediate = false;
    for (const PersistentVolumeClaim* pvc : claims) {
      if (volume::IsFullyBound(*pvc)) {
        s->bound.push_back(pvc);
        continue;
      }
      bool delayed = false;
      std::string class_name = volume::ClaimClass(*pvc);
      if (!class_name.empty()) {
        if (const StorageClass* sc = st.FindClass(class_name)) {
          if (!sc->volume_binding_mode) {
            return PluginStatus::Error("VolumeBindingMode not set for StorageClass \"" + class_name + "\"");
          }
          delayed = *sc->volume_binding_mode == volume::kWaitForFirstConsumer;
        }
      }
      if (delayed && pvc->volume_name.empty()) {
        s->delay.push_back(pvc);
      } else {
        immediate = true;
      }
    }
    if (immediate) return PluginStatus::Make(uau, "pod has unbound immediate PersistentVolumeClaims");
    state.Put(kName, s);
    return PluginStatus::Success();
  }

  PluginStatus Filter(CycleState& state, const Pod&, const NodeInfo& node, const ClusterState& cluster) override {
    BindingState* s = state.Get<BindingState>(kName);
    if (!s) return PluginStatus::Error("not found");
    const StorageObjects& st = Storage(cluster).Get(*cluster.objects);
    const Node& n = *node.node;
    bool bound_ok = true, unbound_ok = true, space_ok = true, pvs_found = true;
    PodVolumes found;

    // Bound claims: the PV must exist and its (translated) node affinity admit the node.
    const CSINode* csi_node = st.FindCsiNode(n.meta.name);
    for (const PersistentVolumeClaim* pvc : s->bound) {
      const PersistentVolume* pv = st.FindPv(pvc->volume_name);
      if (!pv) {
        pvs_found = false;
        break;
      }
      std::optional<NodeSelector> affinity = pv->node_affinity;
      std::string plugin = volume::InTreePluginOfSource(pv->source.kind);
      if (volume::MigratedPluginIndex(plugin) >= 0 && csi_node && volume::CsiNodeMigrates(*csi_node, plugin)) {
        volume::CsiVolume csi = volume::TranslatePvToCsi(*pv);
        if (!csi.error.empty()) return PluginStatus::Error("could not translate pv: " + csi.error);
        affinity = csi.node_affinity;
      }
      if (!AffinityMatches(affinity, n.meta.labels)) {
        bound_ok = false;
        break;
      }
    }

    if (!s->delay.empty()) {
      std::vector<const PersistentVolumeClaim*> to_match, to_provision;
      bool selected_elsewhere = false;
      for (const PersistentVolumeClaim* pvc : s->delay) {
        auto it = pvc->meta.annotations.find(volume::kSelectedNodeAnnotation);
        if (it == pvc->meta.annotations.end()) {
          to_match.push_back(pvc);
        } else if (it->second != n.meta.name) {
          selected_elsewhere = true;
          break;
        } else {
          to_provision.push_back(pvc);
        }
      }
      if (selected_elsewhere) {
        unbound_ok = false;
      } else {
        if (!to_match.empty()) {
          std::stable_sort(to_match.begin(), to_match.end(), [](const PersistentVolumeClaim* a, const PersistentVolumeClaim* b) {
            return RequestOf(*a) < RequestOf(*b);
          });
          std::vector<const PersistentVolume*> chosen;
          for (const PersistentVolumeClaim* pvc : to_match) {
            const PersistentVolume* pv = nullptr;
            PluginStatus err = FindMatchingVolume(*pvc, st, n, chosen, &pv);
            if (!err.IsSuccess()) return err;
            if (!pv) {
              to_provision.push_back(pvc);
              unbound_ok = false;
              continue;
            }
            chosen.push_back(pv);
            found.static_bindings.push_back({pvc, pv});
          }
        }
        if (!to_provision.empty()) {
          unbound_ok = true;
          space_ok = true;
          for (const PersistentVolumeClaim* pvc : to_provision) {
            std::string class_name = volume::ClaimClass(*pvc);
            if (class_name.empty()) {
              return PluginStatus::Error("no class for claim \"" + pvc->meta.namespace_ + "/" + pvc->meta.name + "\"");
            }
            const StorageClass* sc = st.FindClass(class_name);
            if (!sc) return PluginStatus::Error("failed to find storage class \"" + class_name + "\"");
            if (sc->provisioner.empty() || sc->provisioner == volume::kNotSupportedProvisioner) {
              unbound_ok = false;
              break;
            }
            if (!volume::TopologyTermsMatch(sc->allowed_topologies, n.meta.labels)) {
              unbound_ok = false;
              break;
            }
            const CSIStorageCapacity* capacity = nullptr;
            if (!EnoughCapacity(*pvc, *sc, st, n, &capacity)) {
              space_ok = false;
              break;
            }
            found.dynamic_provisions.push_back({pvc, capacity});
          }
        }
      }
    }

    PluginStatus out{Code::kUnschedulableAndUnresolvable, {}};
    if (!bound_ok) out.reasons.push_back("node(s) didn't match PersistentVolume's node affinity");
    if (!unbound_ok) out.reasons.push_back("node(s) didn't find available persistent volumes to bind");
    if (!space_ok) out.reasons.push_back("node(s) did not have enough free storage");
    if (!pvs_found) out.reasons.push_back("node(s) unavailable due to one or more pvc(s) bound to non-existent pv(s)");
    if (!out.reasons.empty()) return out;
    s->by_node[n.meta.name] = std::move(found);
    return PluginStatus::Success();
  }

  // AssumePodVolumes with what Filter remembered for the node; nothing when the pod has
  // no claims to bind (no state, or the node has nothing remembered).
  void Reserve(CycleState& state, const Pod& pod, const NodeInfo& node, const ClusterState& cluster) override {
    BindingState* s = state.Get<BindingState>(kName);
    if (!s) return;
    auto it = s->by_node.find(node.node->meta.name);
    if (it == s->by_node.end()) return;
    volume::VolumeAssumeCache& storage = Storage(cluster);
    const StorageObjects& st = storage.Get(*cluster.objects);
    std::vector<std::pair<int32_t, int32_t>> bindings;
    std::vector<int32_t> provisions;
    for (const StaticBinding& b : it->second.static_bindings) {
      bindings.emplace_back(static_cast<int32_t>(b.pvc - st.pvcs.data()), static_cast<int32_t>(b.pv - st.pvs.data()));
    }
    for (const DynamicProvision& d : it->second.dynamic_provisions) {
      provisions.push_back(static_cast<int32_t>(d.pvc - st.pvcs.data()));
    }
    storage.Assume(pod, node.node->meta.name, bindings, provisions);
  }

  PluginStatus PreScore(CycleState& state, const Pod&, const std::vector<const NodeInfo*>&, const ClusterState&) override {
    if (!Scoring()) return PluginStatus::Skip();
    if (!state.Get<BindingState>(kName)) return PluginStatus::Error("not found");
    return PluginStatus::Success();
  }

  PluginStatus Score(CycleState& state, const Pod&, const NodeInfo& node, const ClusterState&, int64_t* score) override {
    *score = 0;
    BindingState* s = state.Get<BindingState>(kName);
    if (!Scoring() || !s) return PluginStatus::Success();
    auto it = s->by_node.find(node.node->meta.name);
    if (it == s->by_node.end()) return PluginStatus::Success();
    const PodVolumes& v = it->second;
    std::vector<std::string> classes;  // first-seen order; the mean does not depend on it
    std::map<std::string, std::pair<int64_t, int64_t>> by_class;  // requested, capacity
    if (!v.static_bindings.empty()) {
      for (const StaticBinding& b : v.static_bindings) {
        auto& r = by_class[b.pv->storage_class_name];
        r.first += RequestOf(*b.pvc).Value();
        r.second += b.pv->capacity.value_or(Quantity()).Value();
      }
    } else {
      for (const DynamicProvision& d : v.dynamic_provisions) {
        if (!d.capacity) continue;
        auto& r = by_class[d.pvc->storage_class_name.value_or("")];
        r.second = d.capacity->capacity.value_or(Quantity()).Value();  // assigned, not summed
        r.first += RequestOf(*d.pvc).Value();
      }
    }
    if (by_class.empty()) return PluginStatus::Success();
    int64_t total = 0;
    for (const auto& [name, r] : by_class) {
      auto [requested, capacity] = r;
      int64_t u = 100;
      if (capacity != 0 && requested <= capacity) {
        u = static_cast<int64_t>(static_cast<uint64_t>(requested) * 100u) / capacity;
      }
      total += Shape(u);
    }
    *score = static_cast<int64_t>(std::round(static_cast<double>(total) / static_cast<double>(by_class.size())));
    return PluginStatus::Success();
  }

 private:
  bool Scoring() const { return gates_.Enabled("StorageCapacityScoring") && !args_.shape.empty(); }

  int64_t Shape(int64_t u) const {
    const auto& pts = args_.shape;
    for (size_t j = 0; j < pts.size(); ++j) {
      if (u <= pts[j].utilization) {
        if (j == 0) return pts[0].score * 10;
        int64_t y0 = pts[j - 1].score * 10, y1 = pts[j].score * 10;
        return y0 + (y1 - y0) * (u - pts[j - 1].utilization) / (pts[j].utilization - pts[j - 1].utilization);
      }
    }
    return pts.back().score * 10;
  }

  // FindMatchingVolume on the scheduler path.
  PluginStatus FindMatchingVolume(const PersistentVolumeClaim& pvc, const StorageObjects& st, const Node& node,
                                  const std::vector<const PersistentVolume*>& excluded, const PersistentVolume** out) const {
    *out = nullptr;
    if (pvc.selector) {
      std::string err = plugins::IpaLabelSelectorError(*pvc.selector);
      if (!err.empty()) {
        return PluginStatus::Error("error creating internal label selector for claim: " + pvc.meta.namespace_ + "/" +
                                   pvc.meta.name + ": " + err);
      }
    }
    const std::string want_class = volume::ClaimClass(pvc);
    const Quantity request = RequestOf(pvc);
    const PersistentVolume* smallest = nullptr;
    for (const PersistentVolume& pv : st.pvs) {
      if (volume::VolumeClass(pv) != want_class) continue;  // the cache lists the claim's class only
      if (std::find(excluded.begin(), excluded.end(), &pv) != excluded.end()) continue;
      if (pv.claim_ref && !BoundToClaim(pv, pvc)) continue;
      Quantity cap = pv.capacity.value_or(Quantity());
      if (cap < request) continue;
      if (pv.volume_mode.value_or("Filesystem") != pvc.volume_mode.value_or("Filesystem")) continue;
      if (pv.volume_attributes_class_name != pvc.volume_attributes_class_name) continue;
      if (!pv.meta.deletion_timestamp.empty()) continue;
      bool affinity = AffinityMatches(pv.node_affinity, node.meta.labels);
      if (BoundToClaim(pv, pvc)) {
        if (affinity) *out = &pv;
        return PluginStatus::Success();
      }
      if (pv.phase != "Available") continue;
      if (pvc.selector && !volume::LabelSelectorMatches(*pvc.selector, pv.meta.labels)) continue;
      if (volume::VolumeClass(pv) != want_class || !affinity) continue;
      bool modes = true;
      for (const std::string& m : pvc.access_modes) {
        modes = modes && std::find(pv.access_modes.begin(), pv.access_modes.end(), m) != pv.access_modes.end();
      }
      if (!modes) continue;
      if (!smallest || cap < smallest->capacity.value_or(Quantity())) smallest = &pv;
    }
    *out = smallest;
    return PluginStatus::Success();
  }

  // hasEnoughCapacity: only for CSI drivers that opt in; the first fitting object wins.
  static bool EnoughCapacity(const PersistentVolumeClaim& pvc, const StorageClass& sc, const StorageObjects& st,
                             const Node& node, const CSIStorageCapacity** out) {
    *out = nullptr;
    if (!pvc.request) return true;
    const CSIDriver* driver = st.FindCsiDriver(sc.provisioner);
    if (!driver || !driver->storage_capacity.value_or(false)) return true;
    const int64_t size = pvc.request->Value();
    for (const CSIStorageCapacity& c : st.capacities) {
      if (c.storage_class_name != sc.meta.name) continue;
      const std::optional<Quantity>& limit = c.maximum_volume_size ? c.maximum_volume_size : c.capacity;
      if (!limit || limit->Value() < size) continue;
      if (!c.node_topology || !plugins::IpaLabelSelectorError(*c.node_topology).empty()) continue;
      if (!volume::LabelSelectorMatches(*c.node_topology, node.meta.labels)) continue;
      *out = &c;
      return true;
    }
    return false;
  }

  VolumeBindingArgs args_;
  FeatureGates gates_;
  volume::VolumeAssumeCache own_storage_;  // for a ClusterState made without caches
};

}  // namespace

KPLACE_REGISTER_REFERENCE_PLUGIN(VolumeBinding, [](const PluginArgs& args, const FeatureGates& gates)
                                                    -> absl::StatusOr<std::unique_ptr<Plugin>> {
  return std::make_unique<VolumeBinding>(args.volume_binding, gates);
});

}  // namespace kplace::reference
