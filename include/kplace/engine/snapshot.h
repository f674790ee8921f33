#pragma once
// The engine's host-side truth: nodes and bound pods with every string interned to a
// dense id, and a value-id column per node label key. Host-safe (no Abseil, no CUDA).
#include <cstdint>
#include <deque>
#include <memory>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "kplace/framework/types.h"
#include "kplace/model/objects.h"
#include "kplace/model/requests.h"

namespace kplace::plugins::volume {
class VolumeAssumeCache;
}  // namespace kplace::plugins::volume

namespace kplace::engine {

using NodeIndex = int32_t;
using PodIndex = int32_t;
constexpr int32_t kNoId = -1;

/** Dense ids for strings; ids are stable for the life of the interner. */
class Interner {
 public:
  Interner() = default;
  // Moves keep the deque's strings where they are; a copy would leave its keys viewing
  // the original's.
  Interner(Interner&&) = default;
  Interner& operator=(Interner&&) = default;
  Interner(const Interner&) = delete;
  Interner& operator=(const Interner&) = delete;

  int32_t Intern(std::string_view s);
  /** kNoId when never interned. */
  int32_t Find(std::string_view s) const;
  const std::string& Name(int32_t id) const { return names_[id]; }
  int32_t size() const { return static_cast<int32_t>(names_.size()); }

 private:
  // Keys view names_ (a deque: its strings never move), so a lookup allocates nothing.
  std::unordered_map<std::string_view, int32_t> ids_;
  std::deque<std::string> names_;
};

/** Nodes, bound pods and interned labels. Pods bound during scheduling are owned here. */
class Snapshot {
 public:
  /** Builds from decoded objects; the ObjectSet must outlive the snapshot. `volume_assume`:
   *  the VolumeBinding assumptions to carry on (a snapshot built again after a preemption);
   *  null starts empty. */
  Snapshot(const ObjectSet& objects, FeatureGates gates,
           std::shared_ptr<plugins::volume::VolumeAssumeCache> volume_assume = nullptr);

  /** Rows: every node index, removed nodes' included. */
  int32_t num_nodes() const { return static_cast<int32_t>(nodes_.size()); }
  /** Nodes in the cluster: rows less removed ones (what upstream's snapshot lists). */
  int32_t num_live_nodes() const { return num_nodes() - removed_; }
  const Node& node(NodeIndex i) const { return *nodes_[i]; }
  const std::vector<const Pod*>& pods_on(NodeIndex i) const { return pods_on_node_[i]; }
  /** kNoId when no node has that name. */
  NodeIndex FindNode(std::string_view name) const;
  const ObjectSet& objects() const { return *objects_; }
  const FeatureGates& gates() const { return gates_; }

  Interner& strings() { return strings_; }
  const Interner& strings() const { return strings_; }

  /** Value ids of label `key` per node (kNoId where the node lacks it); null when no
   *  node has the key. */
  const std::vector<int32_t>* LabelColumn(std::string_view key) const;
  /** Interned name id per node. */
  const std::vector<int32_t>& node_name_ids() const { return node_name_ids_; }

  /** Records `pod` as bound to node `i` (a copy is kept) and returns it. */
  const Pod& Bind(const Pod& pod, NodeIndex i);
  /** Takes `pod` (an element of pods_on(i)) off node `i`, keeping the others' order, and
   *  returns where it was. A copy Bind kept stays valid for the snapshot's life. */
  size_t Unbind(const Pod* pod, NodeIndex i);
  /** Records `pod` (bound to node `i`; the caller keeps it alive until it is unbound) at
   *  position `pos` of the node's pods: a live pod added, or put back where it was. */
  void Attach(const Pod& pod, NodeIndex i, size_t pos);
  /** What bound pod `pod` adds to its node's request sums (NodeResources::AddPod of an
   *  empty NodeResources): `pod` on node `i`, or the pod the last Unbind took off (until the
   *  next Attach or Unbind). Computed once per pod object, so both resource plugins read it
   *  on bind and on unbind; consecutive pods with the same requests share one. Any other
   *  pod is looked at afresh each call. Valid until the next call. */
  const NodeResources& RequestsOf(const Pod& pod, NodeIndex i) const;
  /** RequestsOf(*pods_on(i)[k], i) without the search: the columns' builds sum them. */
  const NodeResources& RequestsAt(NodeIndex i, size_t k) const;
  /** Node i's object changed in place: `old` is what it was. Its label values are written
   *  into the label columns. A node whose object is now nameless has left: its row stays
   *  (every column keeps its length) with no labels, out of FindNode and num_live_nodes();
   *  a nameless row given a name again comes back. */
  void UpdateNode(NodeIndex i, const Node& old);
  /** A node joins (no pods yet): it gets the next index, num_nodes() - 1 afterwards. `node`
   *  must outlive the snapshot. */
  NodeIndex AddNode(const Node* node);

  /** VolumeBinding's assume caches for the run over this snapshot
   *  (kplace/plugins/volume_binding_assume.h): the storage objects as the scheduler
   *  assumes them, written by VolumeBinding when it binds a pod, shared by every profile. */
  plugins::volume::VolumeAssumeCache& volume_assume_cache() const { return *volume_assume_; }
  const std::shared_ptr<plugins::volume::VolumeAssumeCache>& shared_volume_assume_cache() const { return volume_assume_; }

 private:
  const ObjectSet* objects_;
  FeatureGates gates_;
  std::vector<const Node*> nodes_;
  std::vector<std::vector<const Pod*>> pods_on_node_;
  using SharedRequests = std::shared_ptr<const NodeResources>;
  SharedRequests ComputeRequests(const Pod& pod) const;
  // [i][k]: what RequestsOf computed for pods_on_node_[i][k], null until asked.
  mutable std::vector<std::vector<SharedRequests>> requests_on_node_;
  const Pod* unbound_ = nullptr;  // the pod the last Unbind took off, and its requests
  mutable SharedRequests unbound_requests_;
  mutable Pod last_pod_;  // the request fields of the last pod computed, and the result
  mutable SharedRequests last_requests_, other_requests_;
  bool pod_level_ = true;
  std::unordered_map<std::string, NodeIndex> node_index_;
  Interner strings_;
  struct LabelColumnData {
    std::vector<int32_t> values;
    int32_t nodes = 0;  // how many nodes have the key: none reads as no column
  };
  std::unordered_map<int32_t, LabelColumnData> label_columns_;  // key id -> column
  std::vector<int32_t> node_name_ids_;
  int32_t removed_ = 0;  // nameless rows
  std::deque<Pod> bound_;  // copies Bind keeps (stable addresses)
  std::shared_ptr<plugins::volume::VolumeAssumeCache> volume_assume_;
};

}  // namespace kplace::engine
