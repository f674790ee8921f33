// VolumeRestrictions on the engine: an index from restricted-disk identity to the nodes
// whose bound pods mount it, and a cluster-wide use count per claim, both kept exact on
// bind. PreFilter turns the pod's restricted volumes into a sorted list of conflicting
// nodes; Filter gathers from it (volumes.md §5).
#include <algorithm>
#include <set>
#include <string>
#include <unordered_map>
#include <vector>

#include "kernels/backend.cuh"
#include "kplace/plugins/volume_common.h"
#include "kplace/plugins/volume_restrictions.h"

namespace kplace::KPLACE_BACKEND_NS {
namespace {

using engine::NodeIndex;
using engine::Snapshot;
using engine::VerdictCode;
namespace volume = plugins::volume;

constexpr char kDiskConflict[] = "node(s) had no available disk";
constexpr char kRwopConflict[] =
    "node(s) unavailable due to PersistentVolumeClaim with ReadWriteOncePod access mode already in-use by another pod";

struct VrFilterFn {
  plugins::VolumeRestrictionsParams p;
  KPLACE_HOST_DEVICE VerdictCode operator()(int32_t i) const { return plugins::VolumeRestrictionsFilterNode(p, i); }
};

// One mount of a restricted disk by a bound pod.
struct DiskUse {
  NodeIndex node;
  bool read_only;
  std::vector<std::string> monitors;  // rbd only
};

bool IsRestricted(const Volume& v) {
  return v.source == "gcePersistentDisk" || v.source == "awsElasticBlockStore" || v.source == "rbd" ||
         v.source == "iscsi";
}

// The identity under which two mounts of the same disk meet; monitors are compared apart.
std::string DiskKey(const Volume& v, std::vector<std::string>* monitors) {
  if (v.source == "gcePersistentDisk") return "gce\n" + v.disk_id;
  if (v.source == "awsElasticBlockStore") return "aws\n" + v.disk_id;
  if (v.source == "iscsi") return "iscsi\n" + volume::IscsiIqn(v);
  volume::RbdDisk rbd = volume::ParseRbd(v);
  if (monitors) *monitors = rbd.monitors;
  return "rbd\n" + rbd.pool + "\n" + rbd.image;
}

bool Overlap(const std::vector<std::string>& a, const std::vector<std::string>& b) {
  for (const auto& x : a) {
    if (std::find(b.begin(), b.end(), x) != b.end()) return true;
  }
  return false;
}

class VolumeRestrictions final : public engine::Plugin {
 public:
  static std::unique_ptr<engine::Plugin> Create(const PluginArgs&, const FeatureGates&, std::string*) {
    return std::unique_ptr<engine::Plugin>(new VolumeRestrictions());
  }

  const char* Name() const override { return "VolumeRestrictions"; }
  unsigned ExtensionPoints() const override { return kPreFilterPoint | kFilterPoint; }

  void Prepare(const Snapshot& s) override {
    disks_.clear();
    claim_users_.clear();
    for (NodeIndex i = 0; i < s.num_nodes(); ++i) {
      for (const Pod* p : s.pods_on(i)) AddPod(*p, i);
    }
    cache_.Get(s.objects());  // decoded up front, as VolumeZone (errors still reach pods with claims)
  }

  void OnBind(const Pod& pod, NodeIndex node, const Snapshot&) override { AddPod(pod, node); }
  bool OnNodeUpdate(NodeIndex, const Node&, const Snapshot&) override { return true; }  // pods' volumes only
  bool OnNodeAdd(NodeIndex, const Snapshot&) override { return true; }
  bool OnUnbind(const Pod& pod, NodeIndex node, const Snapshot&) override {
    for (const Volume& v : pod.volumes) {
      if (v.source == "persistentVolumeClaim") {
        auto it = claim_users_.find(pod.meta.namespace_ + "/" + v.claim_name);
        if (it != claim_users_.end() && --it->second <= 0) claim_users_.erase(it);
      }
      if (!IsRestricted(v)) continue;
      DiskUse use{node, v.read_only, {}};
      auto it = disks_.find(DiskKey(v, &use.monitors));
      if (it == disks_.end()) continue;
      std::vector<DiskUse>& uses = it->second;
      for (size_t k = 0; k < uses.size(); ++k) {  // one use of this pod's, any of equal ones
        if (uses[k].node == node && uses[k].read_only == use.read_only && uses[k].monitors == use.monitors) {
          uses.erase(uses.begin() + static_cast<std::ptrdiff_t>(k));
          break;
        }
      }
      if (uses.empty()) disks_.erase(it);
    }
    return true;
  }

  PluginStatus PreFilter(const Pod& pod, const Snapshot& s, std::vector<NodeIndex>*, bool*) override {
    // Disk conflicts first: Filter checks them whatever PreFilter decides.
    std::set<NodeIndex> nodes;
    bool restricted = false;
    for (const Volume& v : pod.volumes) {
      if (!IsRestricted(v)) continue;
      restricted = true;
      std::vector<std::string> monitors;
      auto it = disks_.find(DiskKey(v, &monitors));
      if (it == disks_.end()) continue;
      bool rbd = v.source == "rbd", shares_read_only = v.source != "awsElasticBlockStore";
      for (const DiskUse& use : it->second) {
        if (rbd && !Overlap(monitors, use.monitors)) continue;
        if (shares_read_only && v.read_only && use.read_only) continue;
        nodes.insert(use.node);
      }
    }
    conflict_nodes_.host.assign(nodes.begin(), nodes.end());
    if (!nodes.empty()) conflict_nodes_.Upload();  // the kernel reads host-size entries
    rwop_conflict_ = false;

    std::set<std::string> rwop;
    for (const Volume& v : pod.volumes) {
      if (v.source != "persistentVolumeClaim") continue;
      const StorageObjects& storage = cache_.Get(s.objects());
      if (!cache_.error().empty()) return PluginStatus::Error(cache_.error());
      const PersistentVolumeClaim* pvc = storage.FindPvc(pod.meta.namespace_, v.claim_name);
      if (!pvc) return PluginStatus::Make(Code::kUnschedulableAndUnresolvable, volume::ClaimNotFound(v.claim_name));
      const auto& modes = pvc->access_modes;
      if (std::find(modes.begin(), modes.end(), volume::kReadWriteOncePod) != modes.end()) rwop.insert(pvc->meta.name);
    }
    int conflicts = 0;
    for (const std::string& name : rwop) {
      auto it = claim_users_.find(pod.meta.namespace_ + "/" + name);
      if (it != claim_users_.end() && it->second > 0) ++conflicts;
    }
    if (!restricted && conflicts == 0) return PluginStatus::Skip();
    rwop_conflict_ = conflicts > 0;
    return PluginStatus::Success();
  }

  void Filter(int32_t n, VerdictCode* codes) override { ForEachNode(n, codes, FilterFn()); }
  bool FilterNodes(const NodeIndex* nodes, int32_t count, VerdictCode* codes) override {
    ForListedNodes(nodes, count, codes, FilterFn());
    return true;
  }
  VrFilterFn FilterFn() const {
    return VrFilterFn{plugins::VolumeRestrictionsParams{
        conflict_nodes_.ptr(), static_cast<int32_t>(conflict_nodes_.host.size()), rwop_conflict_}};
  }

  bool SkipHoldsForRun(const Pod& pod) const override { return !volume::UsesClaims(pod); }

  PluginStatus Verdict(VerdictCode code) const override {
    return PluginStatus::Make(Code::kUnschedulable, code == plugins::kVrDiskConflict ? kDiskConflict : kRwopConflict);
  }

 private:
  void AddPod(const Pod& pod, NodeIndex node) {
    for (const Volume& v : pod.volumes) {
      if (v.source == "persistentVolumeClaim") ++claim_users_[pod.meta.namespace_ + "/" + v.claim_name];
      if (!IsRestricted(v)) continue;
      DiskUse use{node, v.read_only, {}};
      disks_[DiskKey(v, &use.monitors)].push_back(std::move(use));
    }
  }

  volume::StorageCache cache_;
  std::unordered_map<std::string, std::vector<DiskUse>> disks_;
  std::unordered_map<std::string, int32_t> claim_users_;  // "ns/claim" -> bound pods using it
  Column<int32_t> conflict_nodes_;
  bool rwop_conflict_ = false;
};

KPLACE_REGISTER_ENGINE_PLUGIN(VolumeRestrictions, VolumeRestrictions);

}  // namespace
}  // namespace kplace::KPLACE_BACKEND_NS
