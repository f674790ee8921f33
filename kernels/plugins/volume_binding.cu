// VolumeBinding on the engine. Storage objects are decoded once; every PV node
// affinity (as given and CSI-translated), class allowedTopologies and CSIStorageCapacity
// nodeTopology a pod needs becomes a per-node verdict table the first time, and stays.
// PreFilter classifies the pod's claims and compiles the node-independent part of
// FindPodVolumes (which PVs each claim may take, in which order, which capacity objects
// fit) into flat arrays; Filter runs the per-node rest and leaves the node's score for
// Score to gather (volumes.md §2). When the pod is bound, the same per-node function on
// the chosen node alone says what Reserve assumes, and the run's assume caches (held by
// the Snapshot) take it for the next pod's PreFilter to read (§2.6).
#include <algorithm>
#include <map>
#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

#include "kernels/backend.cuh"
#include "kplace/plugins/inter_pod_affinity_common.h"
#include "kplace/plugins/volume_binding.h"
#include "kplace/plugins/volume_binding_assume.h"
#include "kplace/plugins/volume_common.h"

namespace kplace::KPLACE_BACKEND_NS {
namespace {

using engine::NodeIndex;
using engine::Snapshot;
using engine::VerdictCode;
namespace volume = plugins::volume;
using plugins::VbBound;
using plugins::VbCandidate;
using plugins::VbCapacity;
using plugins::VbClaim;
using plugins::VbPv;

struct VbFilterFn {
  plugins::VbNodeView v;
  plugins::VbParams p;
  KPLACE_HOST_DEVICE VerdictCode operator()(int32_t i) const { return plugins::VolumeBindingFilterNode(v, p, i); }
};

struct GatherScoreFn {
  const int64_t* score;
  KPLACE_HOST_DEVICE int64_t operator()(int32_t i) const { return score ? score[i] : 0; }
};

bool BoundToClaim(const PersistentVolume& pv, const PersistentVolumeClaim& pvc) {
  if (!pv.claim_ref) return false;
  const ObjectReference& ref = *pv.claim_ref;
  return ref.name == pvc.meta.name && ref.namespace_ == pvc.meta.namespace_ && (ref.uid.empty() || ref.uid == pvc.meta.uid);
}

bool HasModes(const PersistentVolume& pv, const PersistentVolumeClaim& pvc) {
  for (const std::string& m : pvc.access_modes) {
    if (std::find(pv.access_modes.begin(), pv.access_modes.end(), m) == pv.access_modes.end()) return false;
  }
  return true;
}

std::string ClaimKey(const PersistentVolumeClaim& pvc) { return pvc.meta.namespace_ + "/" + pvc.meta.name; }

// Which pod a PreFilter compiled: the bind that follows is that pod's when all match (a
// pod of another profile differs at least in schedulerName).
std::string PodIdentity(const Pod& pod) {
  return pod.meta.namespace_ + "/" + pod.meta.name + "\n" + pod.meta.uid + "\n" + pod.scheduler_name;
}

Quantity Request(const PersistentVolumeClaim& pvc) { return pvc.request.value_or(Quantity()); }

class VolumeBinding final : public engine::Plugin {
 public:
  static std::unique_ptr<engine::Plugin> Create(const PluginArgs& args, const FeatureGates& gates, std::string* error) {
    if (args.volume_binding.shape.size() > static_cast<size_t>(plugins::kVbMaxShapePoints)) {
      *error = "VolumeBinding: at most 101 shape points are supported";
      return nullptr;
    }
    return std::unique_ptr<engine::Plugin>(new VolumeBinding(args.volume_binding, gates));
  }

  const char* Name() const override { return "VolumeBinding"; }
  unsigned ExtensionPoints() const override { return kPreFilterPoint | kFilterPoint | kPreScorePoint | kScorePoint; }

  void Prepare(const Snapshot& s) override {
    const StorageObjects& st = s.volume_assume_cache().Get(s.objects());
    n_ = s.num_nodes();
    tables_.clear();
    by_class_.clear();
    for (size_t k = 0; k < st.pvs.size(); ++k) by_class_[volume::VolumeClass(st.pvs[k])].push_back(static_cast<int32_t>(k));
    migrated_.host.assign(n_, 0);
    any_migrated_ = 0;
    for (NodeIndex i = 0; i < n_; ++i) {
      const CSINode* c = st.FindCsiNode(s.node(i).meta.name);
      if (!c) continue;
      for (int p = 0; p < volume::kNumMigratedPlugins; ++p) {
        if (volume::CsiNodeMigrates(*c, volume::MigratedPluginName(p))) migrated_.host[i] |= static_cast<uint8_t>(1u << p);
      }
      any_migrated_ |= migrated_.host[i];
    }
    migrated_.Upload();
    node_score_.assign(n_, 0);
  }

  PluginStatus PreFilter(const Pod& pod, const Snapshot& s, std::vector<NodeIndex>*, bool*) override {
    Reset();
    PluginStatus status = Compile(pod, s);
    has_state_ = status.IsSuccess() || status.IsSkip();
    if (!has_state_) no_state_error_ = Message("not found");
    // Only claims waiting for their first consumer have anything to assume.
    reserve_pending_ = status.IsSuccess() && !claims_.host.empty();
    compiled_pod_ = PodIdentity(pod);
    if (status.IsSuccess()) {
      // Pods without claims upload nothing: the kernel reads only what the sizes say.
      for (auto* c : {&match_order_, &selected_}) c->Upload();
      bound_.Upload();
      claims_.Upload();
      pvs_.Upload();
      cands_.Upload();
      caps_.Upload();
    }
    return status;
  }

  void Filter(int32_t n, VerdictCode* codes) override {
    ForEachNode(n, codes, VbFilterFn{plugins::VbNodeView{migrated_.ptr()}, Params()});
    filter_ran_ = true;
  }
  // Each node's verdict and score are its own; Score reads only nodes that passed Filter.
  bool FilterNodes(const NodeIndex* nodes, int32_t count, VerdictCode* codes) override {
    ForListedNodes(nodes, count, codes, VbFilterFn{plugins::VbNodeView{migrated_.ptr()}, Params()});
    filter_ran_ = true;
    return true;
  }

  bool SkipHoldsForRun(const Pod& pod) const override { return !volume::UsesClaims(pod); }

  PluginStatus Verdict(VerdictCode code) const override {
    if (code & plugins::kVbError) return PluginStatus::Error(errors_[code & ~plugins::kVbError]);
    PluginStatus s{Code::kUnschedulableAndUnresolvable, {}};
    if (code & plugins::kVbNodeConflict) s.reasons.push_back("node(s) didn't match PersistentVolume's node affinity");
    if (code & plugins::kVbUnbound) s.reasons.push_back("node(s) didn't find available persistent volumes to bind");
    if (code & plugins::kVbNoSpace) s.reasons.push_back("node(s) did not have enough free storage");
    if (code & plugins::kVbPvMissing) {
      s.reasons.push_back("node(s) unavailable due to one or more pvc(s) bound to non-existent pv(s)");
    }
    return s;
  }

  PluginStatus PreScore(const Pod&, const Snapshot&, const std::vector<NodeIndex>&) override {
    if (!scoring_) return PluginStatus::Skip();
    if (!has_state_) return PluginStatus::Error("not found");
    return PluginStatus::Success();
  }

  // A pod without claims has nothing to score: 0 on every node.
  bool ConstantScore(int64_t* normalized) const override {
    if (!has_state_ || !claims_.host.empty()) return false;
    *normalized = 0;
    return true;
  }

  void Score(const NodeIndex* nodes, int32_t count, int64_t* scores) override {
    // Nothing remembered (Filter did not run for this pod): every node scores 0.
    ForListedNodes(nodes, count, scores, GatherScoreFn{filter_ran_ ? Ptr(node_score_) : nullptr});
  }

  // Reserve for the pod compiled last (a bind of any other pod changes nothing here):
  // FindPodVolumes on the chosen node alone gives each claim's PV or provisioning, and
  // AssumePodVolumes writes them, static bindings in matching order, then provisions
  // (selected claims, then unmatched ones), as upstream's lists run.
  // What Reserve assumed stays (the claims stay bound when the pod goes); the columns
  // are of storage objects and nodes.
  bool OnUnbind(const Pod&, NodeIndex, const Snapshot&) override { return true; }
  bool FilterReadsPods() const override { return false; }
  // PVs' node affinity reads node labels: the verdict tables built from them go (they are
  // built again on first use).
  bool OnNodeUpdate(NodeIndex node, const Node& old, const Snapshot& s) override {
    const Node& now = s.node(node);
    if (old.meta.labels != now.meta.labels || old.meta.name != now.meta.name) tables_.clear();  // PV affinity reads both
    return true;
  }
  bool OnNodeAdd(NodeIndex node, const Snapshot& s) override {
    const StorageObjects& st = s.volume_assume_cache().Get(s.objects());
    n_ = s.num_nodes();
    tables_.clear();
    uint8_t migrated = 0;
    if (const CSINode* c = st.FindCsiNode(s.node(node).meta.name)) {
      for (int p = 0; p < volume::kNumMigratedPlugins; ++p) {
        if (volume::CsiNodeMigrates(*c, volume::MigratedPluginName(p))) migrated |= static_cast<uint8_t>(1u << p);
      }
    }
    migrated_.Push(migrated);
    any_migrated_ |= migrated;
    return true;  // node_score_ grows when a pod's parameters are built (Params)
  }
  void OnBind(const Pod& pod, NodeIndex node, const Snapshot& s) override {
    if (!reserve_pending_ || PodIdentity(pod) != compiled_pod_) return;
    reserve_pending_ = false;
    const int32_t num_delay = static_cast<int32_t>(claims_.host.size());
    plugins::VbParams p = Params();
    p.picks = Scratch(&picks_, num_delay);
    const NodeIndex* one = UploadScratch(std::vector<NodeIndex>{node}, &reserve_node_);
    ForListedNodes(one, 1, Scratch(&reserve_code_, 1), VbFilterFn{plugins::VbNodeView{migrated_.ptr()}, p});
    VerdictCode code = 0;
    Download(reserve_code_, 1, &code);
    if (code != 0) return;  // not a node the pod passed: upstream remembered nothing for it
    std::vector<int32_t> picks(num_delay);
    Download(picks_, num_delay, picks.data());
    std::vector<std::pair<int32_t, int32_t>> bindings;
    std::vector<int32_t> provisions;
    for (int32_t m : match_order_.host) {
      if (picks[m] >= 0) bindings.emplace_back(delay_pvc_[m], pv_global_[picks[m]]);
    }
    for (int32_t m : selected_.host) provisions.push_back(delay_pvc_[m]);
    for (int32_t m : match_order_.host) {
      if (picks[m] < 0) provisions.push_back(delay_pvc_[m]);
    }
    s.volume_assume_cache().Assume(pod, s.node(node).meta.name, bindings, provisions);
  }

 private:
  VolumeBinding(const VolumeBindingArgs& args, const FeatureGates& gates)
      : scoring_(gates.Enabled("StorageCapacityScoring")) {
    params_ = plugins::VbParams{};
    params_.num_points = static_cast<int32_t>(args.shape.size());
    for (int32_t j = 0; j < params_.num_points; ++j) {
      params_.shape_utilization[j] = args.shape[j].utilization;
      params_.shape_score[j] = static_cast<int64_t>(args.shape[j].score) * (kMaxNodeScore / 10);
    }
    if (params_.num_points == 0) scoring_ = false;
  }

  // The parameter block of the compiled pod.
  plugins::VbParams Params() {
    plugins::VbParams p = params_;
    p.has_state = has_state_;
    p.no_state_error = no_state_error_;
    p.scoring = scoring_;
    p.num_bound = static_cast<int32_t>(bound_.host.size());
    p.bound = bound_.ptr();
    p.claims = claims_.ptr();
    p.num_delay = static_cast<int32_t>(claims_.host.size());
    p.match_order = match_order_.ptr();
    p.num_match = static_cast<int32_t>(match_order_.host.size());
    p.selected = selected_.ptr();
    p.num_selected = static_cast<int32_t>(selected_.host.size());
    p.pvs = pvs_.ptr();
    p.cands = cands_.ptr();
    p.caps = caps_.ptr();
    if (node_score_.size() < static_cast<size_t>(n_)) node_score_.resize(n_, 0);  // nodes that joined
    p.score = Ptr(node_score_);
    p.picks = nullptr;
    return p;
  }

  void Reset() {
    errors_.clear();
    filter_ran_ = false;
    has_state_ = false;
    no_state_error_ = -1;
    params_.selected_node = -1;
    params_.match_error = -1;
    bound_.host.clear();
    claims_.host.clear();
    match_order_.host.clear();
    selected_.host.clear();
    pvs_.host.clear();
    cands_.host.clear();
    caps_.host.clear();
    pv_local_.clear();
    pv_global_.clear();
    delay_pvc_.clear();
    class_ids_.clear();
  }

  int32_t Message(std::string text) {
    errors_.push_back(std::move(text));
    return static_cast<int32_t>(errors_.size() - 1);
  }

  int32_t ClassId(const std::string& name) { return class_ids_.emplace(name, static_cast<int32_t>(class_ids_.size())).first->second; }

  // A node verdict table, built on first use from the node labels and kept.
  template <typename Match>
  const uint8_t* Table(const std::string& key, const Snapshot& s, Match match) {
    auto it = tables_.find(key);
    if (it == tables_.end()) {
      std::vector<uint8_t> host(n_);
      for (NodeIndex i = 0; i < n_; ++i) host[i] = match(s.node(i).meta.labels) ? 1 : 0;
      auto dev = std::make_unique<vector<uint8_t>>();
      Upload(host, dev.get());
      it = tables_.emplace(key, std::move(dev)).first;
    }
    return Ptr(*it->second);
  }

  const uint8_t* AffinityTable(const std::string& key, const std::optional<NodeSelector>& affinity, const Snapshot& s) {
    if (!affinity) return nullptr;
    return Table(key, s, [&](const Labels& l) { return volume::NodeSelectorMatchesLabels(*affinity, l); });
  }

  // podHasPVCs and GetPodVolumeClaims (§2.1), then the node-independent part of §2.2.
  PluginStatus Compile(const Pod& pod, const Snapshot& s) {
    const Code uau = Code::kUnschedulableAndUnresolvable;
    std::vector<const PersistentVolumeClaim*> claims;
    for (const Volume& v : pod.volumes) {
      bool ephemeral = v.source == "ephemeral";
      if (v.source != "persistentVolumeClaim" && !ephemeral) continue;
      std::string name = ephemeral ? volume::EphemeralClaimName(pod, v) : v.claim_name;
      volume::VolumeAssumeCache& storage = s.volume_assume_cache();
      const StorageObjects& st = storage.Get(s.objects());
      if (!storage.error().empty()) return PluginStatus::Error(storage.error());
      const PersistentVolumeClaim* pvc = st.FindPvc(pod.meta.namespace_, name);
      if (!pvc) {
        return PluginStatus::Make(uau, ephemeral ? "waiting for ephemeral volume controller to create the persistentvolumeclaim \"" + name + "\""
                                                 : volume::ClaimNotFound(name));
      }
      if (pvc->phase == "Lost") {
        return PluginStatus::Make(uau, "persistentvolumeclaim \"" + pvc->meta.name + "\" bound to non-existent persistentvolume \"" +
                                           pvc->volume_name + "\"");
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
    if (claims.empty()) return PluginStatus::Skip();
    const StorageObjects& st = s.volume_assume_cache().Get(s.objects());

    std::vector<const PersistentVolumeClaim*> bound, delay;
    bool immediate = false;
    for (const PersistentVolumeClaim* pvc : claims) {
      if (volume::IsFullyBound(*pvc)) {
        bound.push_back(pvc);
        continue;
      }
      bool delayed = false;
      std::string class_name = volume::ClaimClass(*pvc);
      if (const StorageClass* sc = class_name.empty() ? nullptr : st.FindClass(class_name)) {
        if (!sc->volume_binding_mode) {
          return PluginStatus::Error("VolumeBindingMode not set for StorageClass \"" + class_name + "\"");
        }
        delayed = *sc->volume_binding_mode == volume::kWaitForFirstConsumer;
      }
      if (delayed && pvc->volume_name.empty()) {
        delay.push_back(pvc);
      } else {
        immediate = true;  // pre-bound claims too
      }
    }
    if (immediate) return PluginStatus::Make(uau, "pod has unbound immediate PersistentVolumeClaims");
    if (delay.size() > static_cast<size_t>(plugins::kVbMaxDelayClaims)) {
      return PluginStatus::Error("VolumeBinding: the engine takes at most 64 WaitForFirstConsumer claims per pod");
    }

    for (const PersistentVolumeClaim* pvc : bound) {
      VbBound b{false, -1, nullptr, nullptr, -1};
      int32_t index = st.PvIndex(pvc->volume_name);
      if (index < 0) {
        b.missing = true;
        bound_.host.push_back(b);
        continue;
      }
      const PersistentVolume& pv = st.pvs[index];
      b.affinity = AffinityTable("a" + std::to_string(index), pv.node_affinity, s);
      b.plugin = volume::MigratedPluginIndex(volume::InTreePluginOfSource(pv.source.kind));
      if (b.plugin >= 0 && !((any_migrated_ >> b.plugin) & 1u)) b.plugin = -1;  // no node translates it
      if (b.plugin >= 0) {
        volume::CsiVolume csi = volume::TranslatePvToCsi(pv);
        if (!csi.error.empty()) {
          b.translate_error = Message("could not translate pv: " + csi.error);
        } else {
          b.translated = AffinityTable("t" + std::to_string(index), csi.node_affinity, s);
        }
      }
      bound_.host.push_back(b);
    }

    std::vector<int32_t> to_match;
    std::vector<std::string> selected_nodes;
    std::vector<Quantity> capacities;
    for (size_t m = 0; m < delay.size(); ++m) {
      const PersistentVolumeClaim& pvc = *delay[m];
      VbClaim c{};
      c.request = Request(pvc).Value();
      c.class_id = ClassId(pvc.storage_class_name.value_or(""));
      c.provision_error = -1;
      auto sel = pvc.meta.annotations.find(volume::kSelectedNodeAnnotation);
      if (sel != pvc.meta.annotations.end()) {
        selected_nodes.push_back(sel->second);
        selected_.host.push_back(static_cast<int32_t>(m));
      } else {
        to_match.push_back(static_cast<int32_t>(m));
        if (pvc.selector) {
          std::string err = plugins::IpaLabelSelectorError(*pvc.selector);
          if (!err.empty()) {
            selector_errors_[m] = "error creating internal label selector for claim: " + ClaimKey(pvc) + ": " + err;
          }
        }
      }
      Candidates(pvc, st, s, &c, &capacities);
      Provisioning(pvc, st, s, &c);
      claims_.host.push_back(c);
      delay_pvc_.push_back(static_cast<int32_t>(delay[m] - st.pvcs.data()));
    }
    std::stable_sort(to_match.begin(), to_match.end(),
                     [&](int32_t a, int32_t b) { return Request(*delay[a]) < Request(*delay[b]); });
    match_order_.host = to_match;
    for (int32_t m : to_match) {
      auto it = selector_errors_.find(m);
      if (it != selector_errors_.end()) {
        params_.match_error = Message(it->second);
        break;
      }
    }
    selector_errors_.clear();
    if (!selected_nodes.empty()) {
      bool same = std::all_of(selected_nodes.begin(), selected_nodes.end(),
                              [&](const std::string& n) { return n == selected_nodes[0]; });
      NodeIndex node = s.FindNode(selected_nodes[0]);
      params_.selected_node = same && node != engine::kNoId ? node : -2;
    }
    // Capacity ranks: smaller capacity, smaller rank; equal capacities tie.
    std::sort(capacities.begin(), capacities.end());
    for (const auto& [index, local] : pv_local_) {
      const Quantity cap = st.pvs[index].capacity.value_or(Quantity());
      pvs_.host[local].rank = static_cast<int32_t>(std::lower_bound(capacities.begin(), capacities.end(), cap) -
                                                   capacities.begin());
    }
    return PluginStatus::Success();
  }

  // FindMatchingVolume's node-independent checks, in PV cache order.
  void Candidates(const PersistentVolumeClaim& pvc, const StorageObjects& st, const Snapshot& s, VbClaim* c,
                  std::vector<Quantity>* capacities) {
    c->cand_offset = static_cast<int32_t>(cands_.host.size());
    const std::string class_name = volume::ClaimClass(pvc);
    auto list = by_class_.find(class_name);
    const Quantity request = Request(pvc);
    const bool selector_ok = !pvc.selector || plugins::IpaLabelSelectorError(*pvc.selector).empty();
    if (list != by_class_.end()) {
      for (int32_t index : list->second) {
        const PersistentVolume& pv = st.pvs[index];
        if (pv.claim_ref && !BoundToClaim(pv, pvc)) continue;
        if (pv.capacity.value_or(Quantity()) < request) continue;
        if (pv.volume_mode.value_or("Filesystem") != pvc.volume_mode.value_or("Filesystem")) continue;
        if (pv.volume_attributes_class_name != pvc.volume_attributes_class_name) continue;
        if (!pv.meta.deletion_timestamp.empty()) continue;
        bool prebound = BoundToClaim(pv, pvc);
        if (!prebound) {
          if (pv.phase != "Available") continue;
          if (pvc.selector && (!selector_ok || !volume::LabelSelectorMatches(*pvc.selector, pv.meta.labels))) continue;
          if (volume::VolumeClass(pv) != class_name || !HasModes(pv, pvc)) continue;
        }
        cands_.host.push_back(VbCandidate{LocalPv(index, st, s, capacities), prebound});
      }
    }
    c->cand_count = static_cast<int32_t>(cands_.host.size()) - c->cand_offset;
  }

  int32_t LocalPv(int32_t index, const StorageObjects& st, const Snapshot& s, std::vector<Quantity>* capacities) {
    auto it = pv_local_.find(index);
    if (it != pv_local_.end()) return it->second;
    const PersistentVolume& pv = st.pvs[index];
    VbPv out{};
    out.affinity = AffinityTable("a" + std::to_string(index), pv.node_affinity, s);
    out.class_id = ClassId(pv.storage_class_name);
    out.capacity = pv.capacity.value_or(Quantity()).Value();
    capacities->push_back(pv.capacity.value_or(Quantity()));
    int32_t local = static_cast<int32_t>(pvs_.host.size());
    pvs_.host.push_back(out);
    pv_local_.emplace(index, local);
    pv_global_.push_back(index);
    return local;
  }

  // checkVolumeProvisions' and hasEnoughCapacity's node-independent checks.
  void Provisioning(const PersistentVolumeClaim& pvc, const StorageObjects& st, const Snapshot& s, VbClaim* c) {
    c->cap_offset = static_cast<int32_t>(caps_.host.size());
    c->cap_count = 0;
    const std::string class_name = volume::ClaimClass(pvc);
    const StorageClass* sc = class_name.empty() ? nullptr : st.FindClass(class_name);
    if (class_name.empty()) {
      c->provision_error = Message("no class for claim \"" + ClaimKey(pvc) + "\"");
      return;
    }
    if (!sc) {
      c->provision_error = Message("failed to find storage class \"" + class_name + "\"");
      return;
    }
    c->can_provision = !sc->provisioner.empty() && sc->provisioner != volume::kNotSupportedProvisioner;
    const int32_t class_index = static_cast<int32_t>(sc - st.classes.data());
    if (!sc->allowed_topologies.empty()) {
      c->topology = Table("s" + std::to_string(class_index), s,
                          [&](const Labels& l) { return volume::TopologyTermsMatch(sc->allowed_topologies, l); });
    }
    if (!pvc.request) return;
    const CSIDriver* driver = st.FindCsiDriver(sc->provisioner);
    if (!driver || !driver->storage_capacity.value_or(false)) return;
    c->check_capacity = true;
    const int64_t want = pvc.request->Value();
    for (size_t k = 0; k < st.capacities.size(); ++k) {
      const CSIStorageCapacity& cap = st.capacities[k];
      const std::optional<Quantity>& limit = cap.maximum_volume_size ? cap.maximum_volume_size : cap.capacity;
      if (cap.storage_class_name != sc->meta.name || !limit || limit->Value() < want) continue;
      VbCapacity out{nullptr, cap.capacity ? cap.capacity->Value() : 0};
      if (cap.node_topology && plugins::IpaLabelSelectorError(*cap.node_topology).empty()) {
        const LabelSelector& sel = *cap.node_topology;
        out.topology = Table("c" + std::to_string(k), s, [&](const Labels& l) { return volume::LabelSelectorMatches(sel, l); });
      }
      caps_.host.push_back(out);
    }
    c->cap_count = static_cast<int32_t>(caps_.host.size()) - c->cap_offset;
  }

  bool scoring_;
  int32_t n_ = 0;
  std::unordered_map<std::string, std::vector<int32_t>> by_class_;  // class(PV) -> PV indices, cache order
  std::unordered_map<std::string, std::unique_ptr<vector<uint8_t>>> tables_;
  Column<uint8_t> migrated_;
  uint8_t any_migrated_ = 0;  // union of migrated_
  vector<int64_t> node_score_;
  // The pod being scheduled.
  plugins::VbParams params_{};
  bool has_state_ = false, filter_ran_ = false;
  int32_t no_state_error_ = -1;
  std::vector<std::string> errors_;
  Column<VbBound> bound_;
  Column<VbClaim> claims_;
  Column<int32_t> match_order_, selected_;
  Column<VbPv> pvs_;
  Column<VbCandidate> cands_;
  Column<VbCapacity> caps_;
  std::map<int32_t, int32_t> pv_local_;  // PV index -> index into pvs_
  std::vector<int32_t> pv_global_;       // index into pvs_ -> PV index
  std::vector<int32_t> delay_pvc_;       // per claims_ entry: its PVC index
  std::map<int32_t, std::string> selector_errors_;
  // Reserve: the pod compiled last and whether its bind has claims to assume.
  std::string compiled_pod_;
  bool reserve_pending_ = false;
  vector<int32_t> picks_;
  vector<NodeIndex> reserve_node_;
  vector<VerdictCode> reserve_code_;
  std::unordered_map<std::string, int32_t> class_ids_;
};

KPLACE_REGISTER_ENGINE_PLUGIN(VolumeBinding, VolumeBinding);

}  // namespace
}  // namespace kplace::KPLACE_BACKEND_NS
