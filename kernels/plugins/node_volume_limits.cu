// NodeVolumeLimits on the engine. Prepare decodes the storage objects once and builds,
// per CSI driver that some CSINode lists, node columns of the limit, "installed" and the
// number of distinct attached volumes (bound pods' volumes by "<driver>/<handle>", plus
// VolumeAttachments no pod accounts for); OnBind adds the bound pod's new volumes.
// PreFilter compiles the pod's counted volumes for nodes with and without a CSINode,
// and finds the few nodes where some of them are already attached; Filter is a
// per-node gather and compare (volumes.md §4).
#include <algorithm>
#include <map>
#include <set>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "kernels/backend.cuh"
#include "kplace/plugins/node_volume_limits.h"
#include "kplace/plugins/volume_common.h"

namespace kplace::KPLACE_BACKEND_NS {
namespace {

using engine::NodeIndex;
using engine::Snapshot;
using engine::VerdictCode;
namespace volume = plugins::volume;

// Stands in for upstream's random per-instance prefix of unbound claims' handles.
constexpr char kUnboundPrefix[] = "kplace00unbound00claim00handle00";

struct NvlFilterFn {
  plugins::NvlNodeView v;
  plugins::NvlParams p;
  KPLACE_HOST_DEVICE VerdictCode operator()(int32_t i) const { return plugins::NodeVolumeLimitsFilterNode(v, p, i); }
};

/** Counted volumes in first-seen order: unique key -> driver. */
struct Counted {
  std::vector<std::pair<std::string, std::string>> list;
  std::set<std::string> keys;
  void Add(std::string key, std::string driver) {
    if (keys.insert(key).second) list.emplace_back(std::move(key), std::move(driver));
  }
};

class NodeVolumeLimits final : public engine::Plugin {
 public:
  static std::unique_ptr<engine::Plugin> Create(const PluginArgs&, const FeatureGates& gates, std::string*) {
    return std::unique_ptr<engine::Plugin>(new NodeVolumeLimits(gates.Enabled("VolumeLimitScaling")));
  }

  const char* Name() const override { return "NodeVolumeLimits"; }
  unsigned ExtensionPoints() const override { return kPreFilterPoint | kFilterPoint; }

  void Prepare(const Snapshot& s) override {
    const StorageObjects& st = cache_.Get(s.objects());
    n_ = s.num_nodes();
    slots_.clear();
    for (const CSINode& c : st.csi_nodes) {
      for (const CSINodeDriver& d : c.drivers) slots_.emplace(d.name, static_cast<int32_t>(slots_.size()));
    }
    const size_t d = slots_.size();
    has_csinode_.host.assign(n_, 0);
    has_limits_.host.assign(n_, 0);
    error_.host.assign(n_, -1);
    limit_.host.assign(d * n_, -1);
    installed_.host.assign(d * n_, 0);
    count_.host.assign(d * n_, 0);
    errors_.clear();
    keys_ = engine::Interner();
    key_nodes_.clear();
    pod_keys_.assign(n_, {});
    va_keys_.assign(n_, {});
    for (NodeIndex i = 0; i < n_; ++i) {
      const CSINode* c = st.FindCsiNode(s.node(i).meta.name);
      if (!c) continue;
      has_csinode_.host[i] = 1;
      for (const CSINodeDriver& drv : c->drivers) {
        size_t at = slots_.at(drv.name) * n_ + i;
        installed_.host[at] = 1;
        if (drv.allocatable_count) {
          limit_.host[at] = static_cast<int32_t>(*drv.allocatable_count);
          has_limits_.host[i] = 1;
        }
      }
    }
    // VolumeAttachments first: a pod volume that is also attached is counted once.
    for (const VolumeAttachment& va : st.attachments) {
      NodeIndex i = s.FindNode(va.node_name);
      if (i == engine::kNoId || va.attacher.empty() || !va.persistent_volume_name) continue;
      const PersistentVolume* pv = st.FindPv(*va.persistent_volume_name);
      if (!pv || pv->source.kind != "csi") continue;
      int32_t key = keys_.Intern(va.attacher + "/" + pv->source.csi_volume_handle);
      if (va_keys_[i].count(key)) continue;
      int32_t slot = Slot(va.attacher);
      va_keys_[i][key] = slot;
      if (slot >= 0) ++count_.host[slot * n_ + i];
    }
    for (NodeIndex i = 0; i < n_; ++i) {
      for (const Pod* p : s.pods_on(i)) AddPod(*p, i, st, /*upload=*/false);
    }
    for (auto* c : {&has_csinode_, &has_limits_, &installed_}) c->Upload();
    for (auto* c : {&error_, &limit_, &count_}) c->Upload();
  }

  void OnBind(const Pod& pod, NodeIndex node, const Snapshot& s) override {
    AddPod(pod, node, cache_.Get(s.objects()), /*upload=*/true);
  }
  // A pod without counted volumes changed nothing; otherwise the plugin is built again
  // (a node's count is of distinct volumes, shared with its other pods and attachments).
  // Limits come from the node's CSINode (by name) and its pods, not from the Node object. A
  // node that left keeps its row (never read); one that comes back (a drain undone) takes
  // its row as a new node would, before its pods are bound again.
  bool OnNodeUpdate(NodeIndex node, const Node& old, const Snapshot& s) override {
    if (!old.meta.name.empty() || s.node(node).meta.name.empty()) return true;
    const StorageObjects& st = cache_.Get(s.objects());
    if (Attached(s.node(node).meta.name, st) || !s.pods_on(node).empty()) return false;
    pod_keys_[node].clear();
    va_keys_[node].clear();
    has_csinode_.Set(node, 0);
    has_limits_.Set(node, 0);
    error_.Set(node, -1);
    for (size_t d = 0; d < slots_.size(); ++d) {
      limit_.Set(d * n_ + node, -1);
      installed_.Set(d * n_ + node, 0);
      count_.Set(d * n_ + node, 0);
    }
    SetCsiNode(node, s.node(node).meta.name, st, /*upload=*/true);
    return true;
  }

  // The per-driver columns are laid out driver-major with n nodes each: laid out again with
  // one more. A node some VolumeAttachment names is built again with the rest.
  bool OnNodeAdd(NodeIndex node, const Snapshot& s) override {
    const StorageObjects& st = cache_.Get(s.objects());
    const std::string& name = s.node(node).meta.name;
    if (Attached(name, st)) return false;
    const int32_t old_n = n_;
    n_ = s.num_nodes();
    auto restride = [&](auto& column, auto fill) {
      auto& host = column.host;
      std::remove_reference_t<decltype(host)> out(slots_.size() * static_cast<size_t>(n_), fill);
      for (size_t d = 0; d < slots_.size(); ++d) {
        std::copy(host.begin() + static_cast<std::ptrdiff_t>(d * old_n), host.begin() + static_cast<std::ptrdiff_t>((d + 1) * old_n),
                  out.begin() + static_cast<std::ptrdiff_t>(d * n_));
      }
      host = std::move(out);
    };
    if (!slots_.empty()) {
      restride(limit_, int32_t{-1});
      restride(installed_, uint8_t{0});
      restride(count_, int32_t{0});
    }
    has_csinode_.Push(0);
    has_limits_.Push(0);
    error_.Push(-1);
    pod_keys_.emplace_back();
    va_keys_.emplace_back();
    SetCsiNode(node, name, st, /*upload=*/false);
    if (has_csinode_.host[node]) {
      has_csinode_.Set(node, 1);
      has_limits_.Set(node, has_limits_.host[node]);
    }
    if (!slots_.empty()) {  // driver-major columns: written whole
      for (auto* c : {&installed_}) c->Upload();
      for (auto* c : {&limit_, &count_}) c->Upload();
    }
    return true;
  }

  static bool Attached(const std::string& node, const StorageObjects& st) {
    for (const VolumeAttachment& va : st.attachments) {
      if (va.node_name == node) return true;
    }
    return false;
  }

  // Row `node`'s limits and installed drivers from the CSINode of its name (when there is
  // one), over a row that has none; `upload` writes each changed cell through.
  void SetCsiNode(NodeIndex node, const std::string& name, const StorageObjects& st, bool upload) {
    const CSINode* c = st.FindCsiNode(name);
    if (!c) return;
    auto set = [&](auto& column, size_t at, auto v) {
      if (upload) {
        column.Set(at, v);
      } else {
        column.host[at] = v;
      }
    };
    set(has_csinode_, node, uint8_t{1});
    for (const CSINodeDriver& drv : c->drivers) {
      const size_t at = slots_.at(drv.name) * n_ + node;
      set(installed_, at, uint8_t{1});
      if (drv.allocatable_count) {
        set(limit_, at, static_cast<int32_t>(*drv.allocatable_count));
        set(has_limits_, node, uint8_t{1});
      }
    }
  }

  bool OnUnbind(const Pod& pod, NodeIndex node, const Snapshot& s) override { return CountsNothing(pod, node, s); }
  // A pod without volumes passes everywhere; pods that count no volume there change no count.
  bool FilterWithout(NodeIndex node, const std::vector<const Pod*>& removed, VerdictCode current, const Snapshot& s,
                     VerdictCode* code) override {
    if (!params_.no_volumes) {
      for (const Pod* p : removed) {
        if (!CountsNothing(*p, node, s)) return false;
      }
    }
    *code = current;
    return true;
  }

  PluginStatus PreFilter(const Pod& pod, const Snapshot& s, std::vector<NodeIndex>*, bool*) override {
    params_ = plugins::NvlParams{};
    params_.no_volumes = pod.volumes.empty();
    bool counted = false;
    for (const Volume& v : pod.volumes) {
      counted = counted || v.source == "persistentVolumeClaim" || v.source == "ephemeral" ||
                volume::IsInlineMigratable(v);
    }
    dedup_nodes_.host.clear();
    dedup_counts_.host.clear();
    const StorageObjects& st = cache_.Get(s.objects());
    for (int variant = 0; variant < 2; ++variant) {
      plugins::NvlVariant& out = params_.variant[variant];
      Counted fresh;
      // Storage that failed to decode matters only to pods whose volumes are counted.
      status_[variant] = cache_.error().empty() || !counted ? Collect(pod, variant == 0, /*new_pod=*/true, st, &fresh)
                                                            : PluginStatus::Error(cache_.error());
      drivers_[variant].clear();
      if (!status_[variant].IsSuccess()) {
        out.error = true;
        continue;
      }
      for (const auto& [key, driver] : fresh.list) {
        auto at = std::find(drivers_[variant].begin(), drivers_[variant].end(), driver);
        int32_t d = static_cast<int32_t>(at - drivers_[variant].begin());
        if (at == drivers_[variant].end()) {
          if (d == plugins::kNvlMaxDrivers) {
            return PluginStatus::Error("NodeVolumeLimits: a pod may use at most 8 CSI drivers on the engine");
          }
          drivers_[variant].push_back(driver);
          out.num_drivers = d + 1;
          out.slot[d] = Slot(driver);
          const CSIDriver* csi = st.FindCsiDriver(driver);
          out.prevent[d] = limit_scaling_ && csi && csi->prevent_pod_scheduling_if_missing.value_or(false);
        }
        ++out.new_count[d];
        // Only nodes with a CSINode reach the count check (variant 0).
        if (variant == 0) Dedup(key, d);
      }
    }
    if (!dedup_nodes_.host.empty()) {  // the kernel reads host-size entries
      dedup_nodes_.Upload();
      dedup_counts_.Upload();
    }
    return counted ? PluginStatus::Success() : PluginStatus::Skip();
  }

  void Filter(int32_t n, VerdictCode* codes) override { ForEachNode(n, codes, FilterFn()); }
  bool FilterNodes(const NodeIndex* nodes, int32_t count, VerdictCode* codes) override {
    ForListedNodes(nodes, count, codes, FilterFn());
    return true;
  }
  NvlFilterFn FilterFn() const {
    plugins::NvlNodeView v{n_,          has_csinode_.ptr(), has_limits_.ptr(), error_.ptr(),
                           limit_.ptr(), installed_.ptr(),   count_.ptr()};
    plugins::NvlParams p = params_;
    p.dedup_nodes = dedup_nodes_.ptr();
    p.num_dedup = static_cast<int32_t>(dedup_nodes_.host.size());
    p.dedup_counts = dedup_counts_.ptr();
    return NvlFilterFn{v, p};
  }

  bool SkipHoldsForRun(const Pod& pod) const override { return !volume::UsesClaims(pod); }

  PluginStatus Verdict(VerdictCode code) const override {
    const uint32_t kind = code & ~plugins::kNvlIndexMask, index = code & plugins::kNvlIndexMask;
    if (kind == plugins::kNvlPodError) return status_[index];
    if (kind == plugins::kNvlNodeError) return PluginStatus::Error(errors_[index]);
    if (kind == plugins::kNvlNotInstalled) {
      const std::string& driver = drivers_[index / plugins::kNvlMaxDrivers][index % plugins::kNvlMaxDrivers];
      return PluginStatus::Make(Code::kUnschedulable, driver + " CSI driver is not installed on the node");
    }
    return PluginStatus::Make(Code::kUnschedulable, "node(s) exceed max volume count");
  }

 private:
  /** True when `pod` on `node` counts no volume against the node's limits. */
  bool CountsNothing(const Pod& pod, NodeIndex node, const Snapshot& s) {
    Counted counted;
    return Collect(pod, has_csinode_.host[node] != 0, /*new_pod=*/false, cache_.Get(s.objects()), &counted).IsSuccess() &&
           counted.list.empty();
  }
  explicit NodeVolumeLimits(bool limit_scaling) : limit_scaling_(limit_scaling) {}

  int32_t Slot(const std::string& driver) const {
    auto it = slots_.find(driver);
    return it == slots_.end() ? -1 : it->second;
  }

  // Adds the new pod volume `key` to the dedup rows of the nodes where it is attached.
  void Dedup(const std::string& key, int32_t d) {
    int32_t id = keys_.Find(key);
    if (id == engine::kNoId) return;
    auto it = key_nodes_.find(id);
    if (it == key_nodes_.end()) return;
    for (NodeIndex node : it->second) {
      auto pos = std::lower_bound(dedup_nodes_.host.begin(), dedup_nodes_.host.end(), node);
      size_t k = pos - dedup_nodes_.host.begin();
      if (pos == dedup_nodes_.host.end() || *pos != node) {
        dedup_nodes_.host.insert(pos, node);
        dedup_counts_.host.insert(dedup_counts_.host.begin() + k * plugins::kNvlMaxDrivers, plugins::kNvlMaxDrivers, 0);
      }
      ++dedup_counts_.host[k * plugins::kNvlMaxDrivers + d];
    }
  }

  // A bound pod's volumes join the node's attached set; its counting error is kept when first.
  void AddPod(const Pod& pod, NodeIndex i, const StorageObjects& st, bool upload) {
    Counted counted;
    PluginStatus s = Collect(pod, has_csinode_.host[i] != 0, /*new_pod=*/false, st, &counted);
    if (!s.IsSuccess() && error_.host[i] < 0) {
      errors_.push_back(s.Message());
      int32_t index = static_cast<int32_t>(errors_.size() - 1);
      if (upload) {
        error_.Set(i, index);
      } else {
        error_.host[i] = index;
      }
    }
    for (const auto& [key_text, driver] : counted.list) {
      int32_t key = keys_.Intern(key_text);
      if (pod_keys_[i][key]++ > 0) continue;
      key_nodes_[key].push_back(i);
      auto va = va_keys_[i].find(key);
      if (va != va_keys_[i].end() && va->second >= 0) Bump(va->second, i, -1, upload);  // now counted via the pod
      int32_t slot = Slot(driver);
      if (slot >= 0) Bump(slot, i, +1, upload);
    }
  }

  void Bump(int32_t slot, NodeIndex i, int32_t delta, bool upload) {
    size_t at = static_cast<size_t>(slot) * n_ + i;
    if (upload) {
      count_.Set(at, count_.host[at] + delta);
    } else {
      count_.host[at] += delta;
    }
  }

  // filterAttachableVolumes: the pod's counted volumes on a node with or without a CSINode.
  PluginStatus Collect(const Pod& pod, bool has_csinode, bool new_pod, const StorageObjects& st, Counted* out) const {
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
        int plugin = volume::MigratedPluginIndex(volume::InTreePluginOfSource(v.source));
        if (plugin < 0 || !has_csinode) continue;
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
        if (!new_pod) continue;  // an existing pod's missing claim is not counted
        return PluginStatus::Make(Code::kUnschedulableAndUnresolvable, "looking up PVC " + pod.meta.namespace_ + "/" +
                                                                            claim + ": " + volume::ClaimNotFound(claim));
      }
      if (ephemeral) {
        std::string err = volume::EphemeralOwnerError(pod, *pvc);
        if (!err.empty()) return PluginStatus::Error(err);
      }
      std::string driver, handle;
      DriverOf(*pvc, has_csinode, st, &driver, &handle);
      if (driver.empty() || handle.empty()) continue;
      out->Add(driver + "/" + handle, driver);
    }
    return PluginStatus::Success();
  }

  // getCSIDriverInfo: from the bound PV, else from the claim's class.
  static void DriverOf(const PersistentVolumeClaim& pvc, bool has_csinode, const StorageObjects& st,
                       std::string* driver, std::string* handle) {
    const PersistentVolume* pv = pvc.volume_name.empty() ? nullptr : st.FindPv(pvc.volume_name);
    if (pv) {
      if (pv->source.kind == "csi") {
        *driver = pv->source.csi_driver;
        *handle = pv->source.csi_volume_handle;
        return;
      }
      int plugin = volume::MigratedPluginIndex(volume::InTreePluginOfSource(pv->source.kind));
      if (plugin < 0 || !has_csinode) return;
      volume::CsiVolume csi = volume::TranslatePvToCsi(*pv);
      if (!csi.error.empty()) return;
      *driver = csi.driver;
      *handle = csi.handle;
      return;
    }
    std::string class_name = volume::ClaimClass(pvc);
    if (class_name.empty()) return;
    const StorageClass* sc = st.FindClass(class_name);
    if (!sc) return;
    std::string unbound = std::string(kUnboundPrefix) + "-" + pvc.meta.namespace_ + "/" + pvc.meta.name;
    if (volume::IsMigratableProvisioner(sc->provisioner)) {
      int plugin = volume::MigratedPluginIndex(sc->provisioner);
      if (plugin < 0 || !has_csinode) return;
      *driver = volume::MigratedDriverName(plugin);
      *handle = unbound;
      return;
    }
    *driver = sc->provisioner;
    *handle = unbound;
  }

  bool limit_scaling_;
  volume::StorageCache cache_;
  int32_t n_ = 0;
  std::unordered_map<std::string, int32_t> slots_;  // CSINode driver name -> column slot
  Column<uint8_t> has_csinode_, has_limits_, installed_;
  Column<int32_t> error_, limit_, count_;
  std::vector<std::string> errors_;
  engine::Interner keys_;                                         // "<driver>/<handle>"
  std::unordered_map<int32_t, std::vector<NodeIndex>> key_nodes_;  // key -> nodes whose pods use it
  std::vector<std::unordered_map<int32_t, int32_t>> pod_keys_;     // per node: key -> pods using it
  std::vector<std::unordered_map<int32_t, int32_t>> va_keys_;      // per node: attached key -> slot
  plugins::NvlParams params_{};
  PluginStatus status_[2];
  std::vector<std::string> drivers_[2];
  Column<int32_t> dedup_nodes_, dedup_counts_;
};

KPLACE_REGISTER_ENGINE_PLUGIN(NodeVolumeLimits, NodeVolumeLimits);

}  // namespace
}  // namespace kplace::KPLACE_BACKEND_NS
