#pragma once
// The live cluster, as kube-scheduler's cache and snapshot hold it: the objects, the node
// tree, every pod with a node, the engine's columns (or the reference's node list) as those
// pods change them, the pending pods' nominations, events, and transactions with their undo
// log. It knows nothing of profiles, queues or scores: whoever keeps per-node state derived
// from it (a scheduler's plugins) listens to its changes.
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/status/status.h"
#include "kplace/engine/snapshot.h"
#include "kplace/framework/types.h"
#include "kplace/model/objects.h"
#include "kplace/plugins/volume_binding_assume.h"
#include "kplace/reference/plugin.h"
#include "kplace/state/event.h"
#include "kplace/state/node_tree.h"

namespace kplace::state {

using engine::NodeIndex;

class ClusterState {
 public:
  /** What keeps state derived from the cluster hears of each change, in the order made. */
  class Listener {
   public:
    virtual ~Listener() = default;
    /** The engine's columns are about to be built again: drop what refers to them. */
    virtual void Rebuilding() {}
    /** The cluster was built (again) over objects(): derive everything afresh. An error
     *  fails the change that rebuilt. */
    virtual absl::Status Rebuilt() = 0;
    /** Node rows were renumbered by a rebuild: `row(old)` is the new row, -1 when gone. */
    virtual void RowsRenumbered(const std::function<int32_t(int32_t)>& /*row*/) {}
    /** Engine only: `pod` now counts on node `i`; `assumed`: the scheduler placed it
     *  (AssumePod), else an event brought it. */
    virtual void PodAdded(const Pod& pod, NodeIndex i, bool assumed) = 0;
    /** Engine only: `pod` no longer counts on node `i`. */
    virtual void PodRemoved(const Pod& pod, NodeIndex i) = 0;
    /** Engine only: row `i` joined, or its Node changed from `old`. */
    virtual void NodeAdded(NodeIndex i) = 0;
    virtual void NodeChanged(NodeIndex i, const Node& old) = 0;
    /** An object no plugin keeps changed in place (namespaces: their labels). */
    virtual void ObjectsChanged(bool namespaces) = 0;
    /** A transaction opened; Revert calls Reverting (before any step is undone) for it and
     *  Commit calls Committed. */
    virtual void Begun() {}
    virtual void Committed() {}
    virtual void Reverting() {}
  };

  /** The cluster over `cluster` (which must outlive it), on the engine's snapshot or, with
   *  `reference`, on the scalar reference's node list. Build it with Attach. */
  ClusterState(const ObjectSet& cluster, FeatureGates gates, bool reference);
  ClusterState(const ClusterState&) = delete;
  ClusterState& operator=(const ClusterState&) = delete;

  /** Builds the cluster and tells `listener` (which must outlive it) of every change from
   *  here on, starting with Rebuilt. */
  absl::Status Attach(Listener* listener);

  /** @brief Applies one cluster change as the scheduler's cache does. Pods: a bound pod
   *  added, updated (removed, then added, as upstream's cache does) or deleted changes only
   *  what it touches. A pending pod's event only records or clears its nomination. Nodes
   *  (added, changed, re-zoned, deleted), workloads, PDBs and PriorityClasses change in
   *  place (docs/live-state.md); namespaces and storage objects build the cluster again.
   *  Afterwards the cluster equals one built from Objects().
   *  @return AlreadyExists / NotFound naming the object for an ADDED of an existing or a
   *  change of a missing object; nothing is applied then. */
  absl::Status Apply(ClusterEvent&& event);
  absl::Status Apply(const ClusterEvent& event) { return Apply(ClusterEvent(event)); }

  /** @brief Opens a transaction (one level of nesting inside another): every change from
   *  here is logged, so Revert can undo it exactly, and listeners save their own state. */
  absl::Status Begin();
  /** Keeps what the innermost transaction did (an outer one can still revert it). */
  absl::Status Commit();
  /** Undoes the innermost transaction, last step first, to the state Begin saw. */
  absl::Status Revert();

  /** The scheduler placed `pod` on row `host` (upstream's AssumePod, then binding): a copy
   *  with spec.nodeName set joins the cluster, and its nomination ends. */
  void AssumePod(const Pod& pod, NodeIndex host);
  /** Victims of a preemption get DisruptionTarget (by `scheduler_name`) and a deletion
   *  timestamp; they leave the cluster when CompleteDeletions runs. */
  void MarkTerminating(const std::vector<const Pod*>& victims, const std::string& scheduler_name);
  /** The deletion of the pods MarkTerminating marked completes. Returns their keys. */
  std::vector<std::string> CompleteDeletions();

  /** Records `pod` as pending with the nomination in status.nominatedNodeName (none:
   *  clears it). */
  void Nominate(const Pod& pod);
  void ClearNomination(const std::string& key) { nominated_.erase(key); }
  /** The recorded nomination of the pod with key namespace/name; null when none. */
  const Pod* Nomination(const std::string& key) const;
  /** Pending pods holding a nomination, by key. */
  const std::map<std::string, Pod>& nominated() const { return nominated_; }

  /** The cluster now: the input's other objects with every change applied, nodes in
   *  node-tree order, and the pods with a node in the order they entered. */
  ObjectSet Objects() const;
  /** The objects as held now, rows of nodes that left included (blank). */
  const ObjectSet& objects() const { return live_ ? *live_ : cluster_; }
  /** @brief Takes the objects live now, as the first change of a node or of a kind other
   *  than Pod would (the cluster built again over its own copy of the objects, with room for
   *  nodes to join), so that such changes are applied in place from the first. For a caller
   *  that knows changes will come: it pays the copy before they do. No-op when live. */
  absl::Status GoLive();
  /** The node named `name`; null when none. Valid until the next change. */
  const Node* FindNode(const std::string& name) const;
  /** Its row; engine::kNoId when none. */
  NodeIndex Row(const std::string& name) const;
  /** The pod with a node (bound, or waiting for its node) with key namespace/name; null
   *  when none. Valid until the next change. */
  const Pod* FindBoundPod(const std::string& key) const;
  /** The pods with a node whose spec.schedulingGroup names PodGroup `key` (namespace/name),
   *  in the order they entered. */
  std::vector<const Pod*> PodGroupMembers(const std::string& key) const;
  /** The PodGroup with key namespace/name; null when none. Valid until the next change. */
  const PodGroup* FindPodGroup(const std::string& key) const;
  /** The pods with a node among `rows` (bound, or waiting for their node), in the order
   *  they entered. Valid until the next change. */
  std::vector<const Pod*> PodsOn(const std::vector<NodeIndex>& rows) const;
  /** A row that holds a node now (not one that left). */
  bool LiveRow(NodeIndex i) const {
    return i >= 0 && static_cast<size_t>(i) < objects().nodes.size() && removed_rows_.count(i) == 0;
  }
  /** Rows in scan (zone round-robin) order. */
  const std::vector<int32_t>& order() const { return tree_.order(); }
  /** Node names in scan order. */
  std::vector<std::string> NodeOrder() const;
  /** What VolumeBinding's Reserve assumed so far, in bind order. */
  std::vector<plugins::volume::AssumedVolume> AssumedVolumes() const;

  /** The engine's columns (null on the reference). */
  engine::Snapshot* snapshot() { return snapshot_.get(); }
  const engine::Snapshot* snapshot() const { return snapshot_.get(); }
  /** The reference's node list (on the reference). */
  reference::ClusterState& reference_state() { return ref_; }
  /** The cluster as the reference sees it, on either side (the engine's shares its
   *  columns' pods and volume assumptions). Valid until the next change. */
  const reference::ClusterState& ReferenceView();
  bool reference() const { return reference_; }
  const FeatureGates& gates() const { return gates_; }

 private:
  // A pod with a node: where it is stored, the node that counts it (kNoId: none) and its
  // entry number (the cluster's pod order, kept by every rebuild). Pods added after the
  // build are the entry's own (`own`; empty for the objects' pods), in a one-element
  // vector: an event's decoded pod is taken over with its vector, which costs less than
  // moving a Pod member by member into an allocation.
  using PodBox = std::vector<Pod>;
  struct LivePod {
    const Pod* pod;
    NodeIndex node;
    uint64_t seq;
    PodBox own;
  };
  // One step of a transaction's undo log. Small for the common step (a bind's undo is a
  // key): the rest lives behind pointers.
  struct UndoEntry {
    enum What { kRemovePod, kRestorePod, kObjects, kRestoreNode, kMoveNode } what;
    std::string key;                       // kRemovePod
    PodBox pod;                            // kRestorePod: the pod as it was, with its entry number
    uint64_t seq = 0;
    std::unique_ptr<Undo> objects;         // kObjects; kRestoreNode: the node's add at its list place;
                                           // kMoveNode: its old version's update at its list place
    NodeIndex row = engine::kNoId;         // kRestoreNode: the row it left; with kMoveNode: its zone's
    uint32_t zone = 0, zone_pos = 0;       // place in the node tree and its place in the zone
  };
  struct Savepoint {
    size_t undo_size = 0;
    std::map<std::string, Pod> nominated;
    std::set<std::string> terminating;
    std::unique_ptr<plugins::volume::VolumeAssumeCache> assume;  // when there is storage
  };

  absl::Status Build(const ObjectSet& objects, const std::vector<uint64_t>& seqs = {});
  NodeIndex InSnapshot(const Pod& p) const;
  std::vector<const LivePod*> PodsInOrder() const;
  ObjectSet NonPods() const;
  const std::shared_ptr<plugins::volume::VolumeAssumeCache>& AssumeCache() const;
  void AddPod(PodBox pod, uint64_t seq, std::string key);
  uint64_t SeqOf(const Pod& p) const;
  PodBox RemovePod(const std::string& key, bool keep = false);
  PodBox RemovePod(absl::flat_hash_map<std::string, LivePod>::iterator it, bool keep = false);
  bool Logging() const { return !savepoints_.empty(); }
  absl::Status ApplyPod(ClusterEvent&& event);
  absl::Status NotePending(const Pod& pod);
  absl::Status ApplyObjects(const ClusterEvent& event, std::optional<size_t> at = std::nullopt);
  absl::Status ChangeInPlace(const ClusterEvent& event, std::optional<size_t> at, bool namespaces);
  void AddNode(const Node& node);
  void Reseat(const std::vector<std::pair<uint64_t, std::string>>& pods);
  absl::Status RemoveNode(NodeIndex i);
  void ReviveNode(NodeIndex i, const Node& node, size_t zone, size_t pos);
  void LogTreeUndo(UndoEntry::What what, EventType type, Node old, NodeIndex row, const NodeTree::Place& was);
  void MoveNode(NodeIndex i, const Node& node, std::optional<NodeTree::Place> back = std::nullopt);
  void ChangeRow(NodeIndex i, const Node& old);
  void UpdateNode(NodeIndex i, const Node& node);
  absl::Status RebuildWith(const ClusterEvent& event, std::optional<size_t> at);
  absl::Status Rebuild(ObjectSet next, bool storage_changed);
  absl::Status RebuildRows(ObjectSet next, bool storage_changed);

  const ObjectSet& cluster_;
  std::unique_ptr<ObjectSet> live_;  // the objects after the first change to a kind other than Pod
  FeatureGates gates_;
  bool reference_;
  Listener* listener_ = nullptr;
  NodeTree tree_;
  std::unordered_map<std::string, NodeIndex> node_index_;
  std::unordered_map<NodeIndex, std::string> removed_rows_;  // rows of nodes that left, their names
  std::unique_ptr<engine::Snapshot> snapshot_;
  reference::ClusterState ref_;
  reference::ClusterState view_;  // the engine's snapshot as the reference sees it
  // Every pod with a node, by key: flat (no node allocated per pod event), pointers to
  // entries are not kept across changes.
  absl::flat_hash_map<std::string, LivePod> pods_;
  std::string probe_;  // ApplyPod's key, built without an allocation once it has grown
  int64_t waiting_for_node_ = 0;  // of those, bound to a node the cluster lacks
  uint64_t next_seq_ = 0;
  std::shared_ptr<plugins::volume::VolumeAssumeCache> carried_assume_;  // across a rebuild
  std::vector<Savepoint> savepoints_;  // open transactions, outermost first
  std::vector<UndoEntry> undo_;
  std::map<std::string, Pod> nominated_;  // pending pods holding a nomination, by key
  std::set<std::string> terminating_;     // victims whose deletion is pending
};

}  // namespace kplace::state
