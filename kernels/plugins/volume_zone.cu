// VolumeZone on the engine: the four topology label columns and a "has any" column are
// built once; PreFilter resolves the pod's claims to PV zone label sets on the host and
// merges them per key into allowed value ids; Filter is a per-node gather and compare
// (volumes.md §3).
#include <algorithm>
#include <set>
#include <string>
#include <vector>

#include "kernels/backend.cuh"
#include "kplace/plugins/volume_common.h"
#include "kplace/plugins/volume_zone.h"

namespace kplace::KPLACE_BACKEND_NS {
namespace {

using engine::NodeIndex;
using engine::Snapshot;
using engine::VerdictCode;
namespace volume = plugins::volume;

constexpr char kZoneConflict[] = "node(s) had no available volume zone";

struct VzFilterFn {
  plugins::VolumeZoneNodeView v;
  plugins::VolumeZoneParams p;
  KPLACE_HOST_DEVICE VerdictCode operator()(int32_t i) const { return plugins::VolumeZoneFilterNode(v, p, i); }
};

class VolumeZone final : public engine::Plugin {
 public:
  static std::unique_ptr<engine::Plugin> Create(const PluginArgs&, const FeatureGates&, std::string*) {
    return std::unique_ptr<engine::Plugin>(new VolumeZone());
  }

  const char* Name() const override { return "VolumeZone"; }
  unsigned ExtensionPoints() const override { return kPreFilterPoint | kFilterPoint; }

  // Columns of node objects only: nothing to undo.
  bool OnUnbind(const Pod&, NodeIndex, const Snapshot&) override { return true; }
  bool FilterReadsPods() const override { return false; }
  bool OnNodeAdd(NodeIndex node, const Snapshot& s) override {
    for (int k = 0; k < plugins::kVzNumKeys; ++k) values_[k].Push(engine::kNoId);
    has_any_.Push(0);
    return OnNodeUpdate(node, Node{}, s);
  }
  bool OnNodeUpdate(NodeIndex node, const Node&, const Snapshot& s) override {
    uint8_t any = 0;
    for (int k = 0; k < plugins::kVzNumKeys; ++k) {
      const std::vector<int32_t>* column = s.LabelColumn(volume::kTopologyKeys[k]);
      const int32_t v = column ? (*column)[node] : engine::kNoId;
      values_[k].Set(node, v);
      any |= v >= 0 ? 1 : 0;
    }
    has_any_.Set(node, any);
    return true;
  }
  void Prepare(const Snapshot& s) override {
    const int32_t n = s.num_nodes();
    has_any_.host.assign(n, 0);
    for (int k = 0; k < plugins::kVzNumKeys; ++k) {
      const std::vector<int32_t>* column = s.LabelColumn(volume::kTopologyKeys[k]);
      values_[k].host = column ? *column : std::vector<int32_t>(n, engine::kNoId);
      for (int32_t i = 0; i < n; ++i) has_any_.host[i] |= values_[k].host[i] >= 0 ? 1 : 0;
      values_[k].Upload();
    }
    has_any_.Upload();
    // Decode the storage objects now rather than in the first pod's cycle; a decode error
    // is kept and reported to pods with claims, as before.
    cache_.Get(s.objects());
  }

  PluginStatus PreFilter(const Pod& pod, const Snapshot& s, std::vector<NodeIndex>*, bool*) override {
    params_ = plugins::VolumeZoneParams{};
    params_.no_volumes = pod.volumes.empty();
    std::vector<std::pair<int, std::vector<std::string>>> records;
    status_ = Records(pod, s, &records);
    if (!status_.IsSuccess()) {
      params_.failed = true;
      return status_;
    }
    if (records.empty()) return PluginStatus::Skip();
    // The node's value for a key must be in every record of that key: intersect.
    std::vector<int32_t> allowed;
    for (int k = 0; k < plugins::kVzNumKeys; ++k) {
      std::set<int32_t> ids;
      bool seen = false;
      for (const auto& [key, values] : records) {
        if (key != k) continue;
        std::set<int32_t> these;
        for (const auto& v : values) {
          int32_t id = s.strings().Find(v);
          if (id != engine::kNoId) these.insert(id);
        }
        if (!seen) {
          ids = std::move(these);
        } else {
          std::set<int32_t> both;
          std::set_intersection(ids.begin(), ids.end(), these.begin(), these.end(), std::inserter(both, both.end()));
          ids = std::move(both);
        }
        seen = true;
      }
      if (!seen) continue;
      int32_t r = params_.num_records++;
      params_.key[r] = k;
      params_.fallback[r] = k < 2 ? k + 2 : -1;  // beta zone/region fall back to GA
      params_.offset[r] = static_cast<int32_t>(allowed.size());
      params_.count[r] = static_cast<int32_t>(ids.size());
      allowed.insert(allowed.end(), ids.begin(), ids.end());
    }
    allowed_.host = std::move(allowed);
    allowed_.Upload();
    return PluginStatus::Success();
  }

  void Filter(int32_t n, VerdictCode* codes) override { ForEachNode(n, codes, FilterFn()); }
  bool FilterNodes(const NodeIndex* nodes, int32_t count, VerdictCode* codes) override {
    ForListedNodes(nodes, count, codes, FilterFn());
    return true;
  }
  VzFilterFn FilterFn() const {
    plugins::VolumeZoneNodeView v{};
    for (int k = 0; k < plugins::kVzNumKeys; ++k) v.value[k] = values_[k].ptr();
    v.has_any = has_any_.ptr();
    plugins::VolumeZoneParams p = params_;
    p.allowed = allowed_.ptr();
    return VzFilterFn{v, p};
  }

  bool SkipHoldsForRun(const Pod& pod) const override { return !volume::UsesClaims(pod); }

  PluginStatus Verdict(VerdictCode code) const override {
    if (code == plugins::kVzPreFilterFailed) return status_;
    return PluginStatus::Make(Code::kUnschedulableAndUnresolvable, kZoneConflict);
  }

 private:
  // getPVbyPod: (key index, zone set) per topology label of each claim's PV.
  PluginStatus Records(const Pod& pod, const Snapshot& s, std::vector<std::pair<int, std::vector<std::string>>>* out) {
    const Code uau = Code::kUnschedulableAndUnresolvable;
    for (const Volume& v : pod.volumes) {
      if (v.source != "persistentVolumeClaim") continue;
      if (v.claim_name.empty()) return PluginStatus::Make(uau, "PersistentVolumeClaim had no name");
      const StorageObjects& storage = cache_.Get(s.objects());
      if (!cache_.error().empty()) return PluginStatus::Error(cache_.error());
      const PersistentVolumeClaim* pvc = storage.FindPvc(pod.meta.namespace_, v.claim_name);
      if (!pvc) return PluginStatus::Make(uau, volume::ClaimNotFound(v.claim_name));
      if (pvc->volume_name.empty()) {
        std::string class_name = volume::ClaimClass(*pvc);
        if (class_name.empty()) return PluginStatus::Make(uau, "PersistentVolumeClaim had no pv name and storageClass name");
        const StorageClass* sc = storage.FindClass(class_name);
        if (!sc) return PluginStatus::Make(uau, volume::ClassNotFound(class_name));
        if (!sc->volume_binding_mode) {
          return PluginStatus::Make(uau, "VolumeBindingMode not set for StorageClass \"" + class_name + "\"");
        }
        if (*sc->volume_binding_mode == volume::kWaitForFirstConsumer) continue;
        return PluginStatus::Make(uau, "PersistentVolume had no name");
      }
      const PersistentVolume* pv = storage.FindPv(pvc->volume_name);
      if (!pv) return PluginStatus::Make(uau, volume::VolumeNotFound(pvc->volume_name));
      for (int k = 0; k < plugins::kVzNumKeys; ++k) {
        auto it = pv->meta.labels.find(volume::kTopologyKeys[k]);
        if (it == pv->meta.labels.end()) continue;
        auto zones = volume::LabelZonesToSet(it->second);
        if (zones) out->emplace_back(k, std::move(*zones));
      }
    }
    return PluginStatus::Success();
  }

  volume::StorageCache cache_;
  Column<int32_t> values_[plugins::kVzNumKeys];
  Column<uint8_t> has_any_;
  Column<int32_t> allowed_;
  plugins::VolumeZoneParams params_{};
  PluginStatus status_;
};

KPLACE_REGISTER_ENGINE_PLUGIN(VolumeZone, VolumeZone);

}  // namespace
}  // namespace kplace::KPLACE_BACKEND_NS
