#pragma once
// Builders and runners for the storage plugins' tests: objects written as JSON and
// decoded as kplace decodes input (so pod volumes and storage objects take the real
// path), and one-plugin runners for the engine and the reference that keep a cluster
// across binds.
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "kplace/config/profile.h"
#include "kplace/engine/framework.h"
#include "kplace/engine/snapshot.h"
#include "kplace/model/decode.h"
#include "kplace/plugins/volume_binding_assume.h"
#include "kplace/reference/plugin.h"

namespace kplace::testing::vol {

using json = nlohmann::json;

/** Decodes one Kubernetes object (with its "kind") into `set`. */
inline void Add(ObjectSet* set, const json& object) {
  absl::Status s = DecodeDocument(object, "test", set);
  if (!s.ok()) throw std::runtime_error(std::string(s.message()));
}

inline json Meta(const std::string& name, const std::string& ns = "") {
  json m = {{"name", name}};
  if (!ns.empty()) m["namespace"] = ns;
  return m;
}

inline json NodeJson(const std::string& name, const json& labels = json::object()) {
  return {{"kind", "Node"}, {"metadata", {{"name", name}, {"labels", labels}}}};
}

/** A pod in namespace "default" with the given volumes (a JSON list) on `node` ("" pending). */
inline json PodJson(const std::string& name, const json& volumes, const std::string& node = "",
                    const std::string& ns = "default", const std::string& uid = "") {
  json meta = Meta(name, ns);
  if (!uid.empty()) meta["uid"] = uid;
  json spec = {{"volumes", volumes}, {"containers", json::array({{{"name", "c"}, {"image", "busybox"}}})}};
  if (!node.empty()) spec["nodeName"] = node;
  return {{"kind", "Pod"}, {"metadata", meta}, {"spec", spec}};
}

inline Pod DecodedPod(const json& pod) {
  auto p = DecodePod(pod, "test");
  if (!p.ok()) throw std::runtime_error(std::string(p.status().message()));
  return *p;
}

inline json ClaimVolume(const std::string& claim, const std::string& name = "") {
  return {{"name", name.empty() ? claim : name}, {"persistentVolumeClaim", {{"claimName", claim}}}};
}
inline json EphemeralVolume(const std::string& name) {
  return {{"name", name}, {"ephemeral", {{"volumeClaimTemplate", {{"spec", json::object()}}}}}};
}

/** A node-affinity term requiring `key` In `values`. */
inline json InTerm(const std::string& key, const std::vector<std::string>& values) {
  return {{"matchExpressions", json::array({{{"key", key}, {"operator", "In"}, {"values", values}}})}};
}

inline json PvJson(const std::string& name, const std::string& class_name, const std::string& capacity,
                   const json& terms = nullptr, const json& labels = json::object()) {
  json spec = {{"storageClassName", class_name}, {"accessModes", {"ReadWriteOnce"}}};
  if (!capacity.empty()) spec["capacity"] = {{"storage", capacity}};
  if (!terms.is_null()) spec["nodeAffinity"] = {{"required", {{"nodeSelectorTerms", terms}}}};
  return {{"kind", "PersistentVolume"},
          {"metadata", {{"name", name}, {"labels", labels}}},
          {"spec", spec},
          {"status", {{"phase", "Available"}}}};
}

inline json PvcJson(const std::string& name, const std::string& class_name, const std::string& request,
                    const std::string& volume = "", bool bound = false, const std::string& ns = "default") {
  json meta = Meta(name, ns);
  if (bound) meta["annotations"] = {{"pv.kubernetes.io/bind-completed", "yes"}};
  json spec = {{"storageClassName", class_name}, {"accessModes", {"ReadWriteOnce"}}};
  if (!request.empty()) spec["resources"] = {{"requests", {{"storage", request}}}};
  if (!volume.empty()) spec["volumeName"] = volume;
  return {{"kind", "PersistentVolumeClaim"}, {"metadata", meta}, {"spec", spec}};
}

inline json ClassJson(const std::string& name, const std::string& mode, const std::string& provisioner = "",
                      const json& allowed_topologies = nullptr) {
  json c = {{"kind", "StorageClass"}, {"metadata", Meta(name)}};
  if (!mode.empty()) c["volumeBindingMode"] = mode;
  if (!provisioner.empty()) c["provisioner"] = provisioner;
  if (!allowed_topologies.is_null()) c["allowedTopologies"] = allowed_topologies;
  return c;
}

/** A CSINode with {driver, limit} pairs; a negative limit leaves allocatable unset. */
inline json CsiNodeJson(const std::string& node, const std::vector<std::pair<std::string, int>>& drivers,
                        const std::string& migrated = "") {
  json list = json::array();
  for (const auto& [name, limit] : drivers) {
    json d = {{"name", name}, {"nodeID", node}};
    if (limit >= 0) d["allocatable"] = {{"count", limit}};
    list.push_back(d);
  }
  json meta = Meta(node);
  if (!migrated.empty()) meta["annotations"] = {{"storage.alpha.kubernetes.io/migrated-plugins", migrated}};
  return {{"kind", "CSINode"}, {"metadata", meta}, {"spec", {{"drivers", list}}}};
}

/** Every phase of one plugin's cycle, every node scored. */
struct Outcome {
  PluginStatus pre_filter;
  std::vector<PluginStatus> filter;  // every node, whatever PreFilter said
  PluginStatus pre_score;
  std::vector<int64_t> raw;
};

inline std::string Describe(const PluginStatus& s) { return std::string(CodeName(s.code)) + " [" + s.Message() + "]"; }

/** The first difference between two outcomes, or "" when equal. */
inline std::string DiffOutcomes(const Outcome& e, const Outcome& r) {
  if (!(e.pre_filter == r.pre_filter)) {
    return "PreFilter: engine " + Describe(e.pre_filter) + " vs reference " + Describe(r.pre_filter);
  }
  if (e.filter.size() != r.filter.size()) return "filter node count differs";
  for (size_t i = 0; i < e.filter.size(); ++i) {
    if (!(e.filter[i] == r.filter[i])) {
      return "Filter node " + std::to_string(i) + ": engine " + Describe(e.filter[i]) + " vs reference " +
             Describe(r.filter[i]);
    }
  }
  if (!(e.pre_score == r.pre_score)) return "PreScore: engine " + Describe(e.pre_score) + " vs reference " + Describe(r.pre_score);
  for (size_t k = 0; k < e.raw.size() && k < r.raw.size(); ++k) {
    if (e.raw[k] != r.raw[k]) {
      return "score of node " + std::to_string(k) + ": engine " + std::to_string(e.raw[k]) + " vs reference " +
             std::to_string(r.raw[k]);
    }
  }
  return e.raw.size() == r.raw.size() ? "" : "score count differs";
}

/** The engine framework with one plugin, over a snapshot that takes binds. */
class EngineRunner {
 public:
  EngineRunner(const std::string& plugin, const ObjectSet& cluster, const PluginArgs& args = {},
               const FeatureGates& gates = {}, engine::Backend backend = engine::Backend::kOmp)
      : plugin_(plugin), snapshot_(cluster, gates) {
    Profile profile = SinglePluginsProfile({plugin});
    profile.args = args;
    std::string error;
    fw_ = engine::Framework::Create(backend, profile, gates, &error);
    if (!fw_) throw std::runtime_error(error);
    fw_->Prepare(snapshot_);
  }

  Outcome Run(const Pod& pod) {
    Outcome out;
    out.pre_filter = fw_->PreFilterEach(pod).at(0).status;
    std::vector<engine::VerdictCode> codes = fw_->FilterEach().at(0);
    for (engine::VerdictCode c : codes) out.filter.push_back(c == 0 ? PluginStatus::Success() : fw_->Verdict(0, c));
    std::vector<engine::NodeIndex> all(snapshot_.num_nodes());
    for (int32_t i = 0; i < snapshot_.num_nodes(); ++i) all[i] = i;
    engine::ScoreResult r = fw_->Score(all);
    if (!r.pre_score_status.empty()) out.pre_score = r.pre_score_status.at(0);
    if (r.raw.empty() || !out.pre_score.IsSuccess()) {
      out.raw.assign(all.size(), 0);
    } else {
      out.raw = r.raw.at(0);
    }
    return out;
  }

  void Bind(const Pod& pod, int32_t node) { fw_->Bind(snapshot_.Bind(pod, node), node); }

  /** What VolumeBinding's Reserve assumed so far. */
  const std::vector<plugins::volume::AssumedVolume>& assumed() const { return snapshot_.volume_assume_cache().assumed(); }

 private:
  std::string plugin_;
  engine::Snapshot snapshot_;
  std::unique_ptr<engine::Framework> fw_;
};

/** The reference plugin over its own copy of the objects; binds reserve the pod run last
 *  on its node and append it. The assume caches last across runs, as in one scheduler. */
class ReferenceRunner {
 public:
  ReferenceRunner(const std::string& plugin, const ObjectSet& cluster, const PluginArgs& args = {},
                  const FeatureGates& gates = {})
      : objects_(cluster), gates_(gates), assume_(std::make_shared<plugins::volume::VolumeAssumeCache>()) {
    auto p = reference::MakePlugin(plugin, args, gates);
    if (!p.ok()) throw std::runtime_error(std::string(p.status().message()));
    plugin_ = std::move(*p);
  }

  Outcome Run(const Pod& pod) {
    state_ = reference::MakeClusterState(objects_, gates_);
    state_.volume_assume = assume_;
    cycle_ = reference::CycleState();
    const reference::ClusterState& state = state_;
    reference::CycleState& cycle = cycle_;
    Outcome out;
    reference::NodeNameSet nodes;
    const unsigned points = plugin_->ExtensionPoints();
    if (points & kPreFilterPoint) out.pre_filter = plugin_->PreFilter(cycle, pod, state, &nodes);
    for (const auto& n : state.nodes) out.filter.push_back(plugin_->Filter(cycle, pod, n, state));
    std::vector<const reference::NodeInfo*> all;
    for (const auto& n : state.nodes) all.push_back(&n);
    out.raw.assign(all.size(), 0);
    if (points & kPreScorePoint) out.pre_score = plugin_->PreScore(cycle, pod, all, state);
    if ((points & kScorePoint) && out.pre_score.IsSuccess()) {
      for (size_t k = 0; k < all.size(); ++k) plugin_->Score(cycle, pod, *all[k], state, &out.raw[k]);
    }
    return out;
  }

  void Bind(const Pod& pod, int32_t node) {
    if (!state_.nodes.empty()) plugin_->Reserve(cycle_, pod, state_.nodes[node], state_);
    state_ = reference::ClusterState();  // its node infos point into objects_.pods
    objects_.pods.push_back(pod);
    objects_.pods.back().node_name = objects_.nodes[node].meta.name;
  }

  /** What Reserve assumed so far. */
  const std::vector<plugins::volume::AssumedVolume>& assumed() const { return assume_->assumed(); }

 private:
  ObjectSet objects_;
  FeatureGates gates_;
  std::shared_ptr<plugins::volume::VolumeAssumeCache> assume_;
  std::unique_ptr<reference::Plugin> plugin_;
  reference::ClusterState state_;  // of the last Run
  reference::CycleState cycle_;
};

/** Engine and reference side by side, kept in step across binds. */
struct Both {
  EngineRunner engine;
  ReferenceRunner reference;
  Both(const std::string& plugin, const ObjectSet& cluster, const PluginArgs& args = {}, const FeatureGates& gates = {})
      : engine(plugin, cluster, args, gates), reference(plugin, cluster, args, gates) {}
  void Bind(const Pod& pod, int32_t node) {
    engine.Bind(pod, node);
    reference.Bind(pod, node);
  }
};

}  // namespace kplace::testing::vol
