#include "kplace/state/cluster_state.h"

#include <algorithm>
#include <stdexcept>
#include <string_view>
#include <utility>

#include "kplace/common/status.h"
#include "kplace/common/strings.h"
#include "kplace/model/decode.h"

namespace kplace::state {
namespace {

// resource.k8s.io objects: DynamicResources looks them up afresh in each cycle.
bool HasResourceObjects(const ObjectSet& o) {
  return !o.resource_claims.empty() || !o.resource_claim_templates.empty() || !o.device_classes.empty() ||
         !o.resource_slices.empty();
}

// A pod that finished counts nowhere. Compared as views: inline, with no strlen per pod event.
bool Finished(const Pod& p) {
  const std::string_view phase = p.phase;
  return phase == "Succeeded" || phase == "Failed";
}

// A pod bound to a node the cluster does not have (yet): it counts when that node joins.
bool WaitsForNode(const Pod& p, NodeIndex node) {
  return node == engine::kNoId && !p.node_name.empty() && !Finished(p);
}

// Whether `key` is namespace/name, compared in place (no key built per object).
bool IsKey(const std::string& key, const std::string& ns, const std::string& name) {
  return key.size() == ns.size() + 1 + name.size() && key.compare(0, ns.size(), ns) == 0 && key[ns.size()] == '/' &&
         key.compare(ns.size() + 1, name.size(), name) == 0;
}

}  // namespace

ClusterState::ClusterState(const ObjectSet& cluster, FeatureGates gates, bool reference)
    : cluster_(cluster), gates_(std::move(gates)), reference_(reference) {}

absl::Status ClusterState::Attach(Listener* listener) {
  listener_ = listener;
  return Build(cluster_);
}

// Builds the cluster over `objects` (kept alive by this state); `seqs` (when not empty) are
// the pods' entry numbers, else their positions.
absl::Status ClusterState::Build(const ObjectSet& objects, const std::vector<uint64_t>& seqs) {
  pods_.clear();
  waiting_for_node_ = 0;
  node_index_.clear();
  std::vector<const Node*> nodes;
  for (const Node& n : objects.nodes) {
    node_index_.emplace(n.meta.name, static_cast<NodeIndex>(nodes.size()));
    nodes.push_back(&n);
  }
  tree_.Clear();
  for (NodeIndex i = 0; i < static_cast<NodeIndex>(nodes.size()); ++i) {
    if (node_index_.at(nodes[i]->meta.name) == i) tree_.Join(*nodes[i], i);  // the tree ignores a repeated add
  }
  tree_.Interleave();
  if (reference_) {
    auto volume_assume = ref_.volume_assume;
    ref_ = reference::MakeClusterState(objects, gates_);
    if (volume_assume) ref_.volume_assume = volume_assume;  // what Reserve assumed so far stays
  } else {
    // What VolumeBinding assumed for pods bound so far stays across a rebuild.
    std::shared_ptr<plugins::volume::VolumeAssumeCache> assumed = std::move(carried_assume_);
    if (!assumed && snapshot_) assumed = snapshot_->shared_volume_assume_cache();
    snapshot_.reset();
    snapshot_ = std::make_unique<engine::Snapshot>(objects, gates_, std::move(assumed));
  }
  if (listener_) KPLACE_RETURN_IF_ERROR(listener_->Rebuilt());
  // Every pod with a node is the cluster's; pending ones are the caller's queue.
  for (size_t k = 0; k < objects.pods.size(); ++k) {
    const Pod& p = objects.pods[k];
    if (p.node_name.empty()) continue;
    const uint64_t seq = seqs.empty() ? k : seqs[k];
    const NodeIndex node = InSnapshot(p);
    pods_[ObjectKey(p.meta)] = LivePod{&p, node, seq, {}};
    waiting_for_node_ += WaitsForNode(p, node);
    next_seq_ = std::max(next_seq_, seq + 1);
  }
  return absl::OkStatus();
}

// The node a bound pod counts on, kNoId when none does (a node not in the cluster, a pod
// that finished): where Snapshot and MakeClusterState place it.
NodeIndex ClusterState::InSnapshot(const Pod& p) const {
  if (p.node_name.empty() || Finished(p)) return engine::kNoId;
  auto it = node_index_.find(p.node_name);
  return it == node_index_.end() ? engine::kNoId : it->second;
}

// The pods in the order they entered: what a fresh cluster is built from.
std::vector<const ClusterState::LivePod*> ClusterState::PodsInOrder() const {
  std::vector<const LivePod*> out;
  out.reserve(pods_.size());
  for (const auto& [key, p] : pods_) out.push_back(&p);
  std::sort(out.begin(), out.end(), [](const LivePod* a, const LivePod* b) { return a->seq < b->seq; });
  return out;
}

// Every object but pods, the nodes in the node tree's order (zone after zone): a fresh
// cluster builds the same tree from this list. Rows of nodes that left are not in it.
ObjectSet ClusterState::NonPods() const {
  const ObjectSet& o = objects();
  ObjectSet out;
  out.nodes.reserve(tree_.order().size());
  for (const auto& zone : tree_.zones()) {
    for (NodeIndex i : zone) out.nodes.push_back(o.nodes[i]);
  }
  out.namespaces = o.namespaces;
  out.workloads = o.workloads;
  out.storage = o.storage;
  out.configs = o.configs;
  out.pdbs = o.pdbs;
  out.priority_classes = o.priority_classes;
  out.pod_groups = o.pod_groups;
  out.resource_claims = o.resource_claims;
  out.resource_claim_templates = o.resource_claim_templates;
  out.device_classes = o.device_classes;
  out.resource_slices = o.resource_slices;
  return out;
}

ObjectSet ClusterState::Objects() const {
  ObjectSet out = NonPods();
  for (const LivePod* p : PodsInOrder()) out.pods.push_back(*p->pod);
  return out;
}

std::vector<const Pod*> ClusterState::PodsOn(const std::vector<NodeIndex>& rows) const {
  std::vector<const LivePod*> on;
  for (const auto& [key, p] : pods_) {
    if (std::find(rows.begin(), rows.end(), p.node) != rows.end()) on.push_back(&p);
  }
  std::sort(on.begin(), on.end(), [](const LivePod* a, const LivePod* b) { return a->seq < b->seq; });
  std::vector<const Pod*> out;
  out.reserve(on.size());
  for (const LivePod* p : on) out.push_back(p->pod);
  return out;
}

std::vector<const Pod*> ClusterState::PodGroupMembers(const std::string& key) const {
  std::vector<const LivePod*> in;
  for (const auto& [k, p] : pods_) {
    const Pod& pod = *p.pod;
    if (!pod.scheduling_group.empty() && IsKey(key, pod.meta.namespace_, pod.scheduling_group)) {
      in.push_back(&p);
    }
  }
  std::sort(in.begin(), in.end(), [](const LivePod* a, const LivePod* b) { return a->seq < b->seq; });
  std::vector<const Pod*> out;
  out.reserve(in.size());
  for (const LivePod* p : in) out.push_back(p->pod);
  return out;
}

const PodGroup* ClusterState::FindPodGroup(const std::string& key) const {
  for (const PodGroup& g : objects().pod_groups) {
    if (IsKey(key, g.meta.namespace_, g.meta.name)) return &g;
  }
  return nullptr;
}

const Node* ClusterState::FindNode(const std::string& name) const {
  auto it = node_index_.find(name);
  return it == node_index_.end() ? nullptr : &objects().nodes[it->second];
}

NodeIndex ClusterState::Row(const std::string& name) const {
  auto it = node_index_.find(name);
  return it == node_index_.end() ? engine::kNoId : it->second;
}

const Pod* ClusterState::FindBoundPod(const std::string& key) const {
  auto it = pods_.find(key);
  return it == pods_.end() ? nullptr : it->second.pod;
}

std::vector<std::string> ClusterState::NodeOrder() const {
  std::vector<std::string> out;
  for (int32_t i : tree_.order()) out.push_back(objects().nodes[i].meta.name);
  return out;
}

std::vector<plugins::volume::AssumedVolume> ClusterState::AssumedVolumes() const {
  return (reference_ ? *ref_.volume_assume : snapshot_->volume_assume_cache()).assumed();
}

const std::shared_ptr<plugins::volume::VolumeAssumeCache>& ClusterState::AssumeCache() const {
  return reference_ ? ref_.volume_assume : snapshot_->shared_volume_assume_cache();
}

const reference::ClusterState& ClusterState::ReferenceView() {
  if (reference_) return ref_;
  view_.objects = &objects();
  view_.gates = gates_;
  view_.volume_assume = std::shared_ptr<plugins::volume::VolumeAssumeCache>(std::shared_ptr<void>(),
                                                                            &snapshot_->volume_assume_cache());
  view_.nodes.resize(snapshot_->num_nodes());
  for (NodeIndex i = 0; i < snapshot_->num_nodes(); ++i) {
    view_.nodes[i] = reference::NodeInfo{&snapshot_->node(i), snapshot_->pods_on(i)};
  }
  return view_;
}

void ClusterState::Nominate(const Pod& pod) {
  if (pod.nominated_node_name.empty()) {
    nominated_.erase(ObjectKey(pod.meta));
  } else {
    nominated_[ObjectKey(pod.meta)] = pod;
  }
}

const Pod* ClusterState::Nomination(const std::string& key) const {
  auto it = nominated_.find(key);
  return it == nominated_.end() ? nullptr : &it->second;
}

// --- pods ----------------------------------------------------------------------------

void ClusterState::AssumePod(const Pod& pod, NodeIndex host) {
  PodBox own(1, pod);  // one copy (a braced list would copy twice)
  own[0].node_name = objects().nodes[host].meta.name;
  const Pod* stored = own.data();
  if (reference_) {
    own[0].nominated_node_name.clear();
    ref_.nodes[host].pods.push_back(stored);
  } else {
    snapshot_->Attach(*stored, host, snapshot_->pods_on(host).size());
    listener_->PodAdded(*stored, host, /*assumed=*/true);
  }
  const std::string key = ObjectKey(pod.meta);
  pods_[key] = LivePod{stored, host, next_seq_++, std::move(own)};
  if (Logging()) undo_.push_back(UndoEntry{UndoEntry::kRemovePod, key, {}, 0, nullptr});
  // Last: `pod` may be the nomination itself.
  if (!nominated_.empty()) nominated_.erase(key);
}

void ClusterState::MarkTerminating(const std::vector<const Pod*>& victims, const std::string& scheduler_name) {
  for (const Pod* v : victims) {
    if (!v->meta.deletion_timestamp.empty()) continue;
    const std::string key = ObjectKey(v->meta);
    auto it = pods_.find(key);
    if (it == pods_.end()) continue;
    PodBox p = RemovePod(it, /*keep=*/true);
    p[0].meta.deletion_timestamp = "1970-01-01T00:00:00Z";
    p[0].conditions.insert(p[0].conditions.begin(),
                           PodCondition{"DisruptionTarget", "True", "PreemptionByScheduler",
                                        StrCat(scheduler_name, ": preempting to accommodate a higher priority pod")});
    AddPod(std::move(p), next_seq_++, key);
    terminating_.insert(key);
  }
}

std::vector<std::string> ClusterState::CompleteDeletions() {
  std::vector<std::string> gone;
  // In the order the pods entered the cluster, as a fresh cluster would list them.
  std::vector<std::pair<uint64_t, std::string>> keys;
  for (const std::string& key : terminating_) {
    auto it = pods_.find(key);
    if (it != pods_.end()) keys.emplace_back(it->second.seq, key);
  }
  std::sort(keys.begin(), keys.end());
  for (const auto& [seq, key] : keys) {
    RemovePod(key);
    gone.push_back(key);
  }
  terminating_.clear();
  return gone;
}

// Puts `pod` (bound: node_name set) into the cluster with entry number `seq`: on its node
// at the place its number gives, or kept aside when no node counts it.
void ClusterState::AddPod(PodBox pod, uint64_t seq, std::string key) {
  const NodeIndex node = InSnapshot(pod[0]);
  const Pod* stored = pod.data();
  if (node == engine::kNoId) {
    waiting_for_node_ += WaitsForNode(*stored, node);
  } else {
    const std::vector<const Pod*>& on = reference_ ? ref_.nodes[node].pods : snapshot_->pods_on(node);
    size_t pos = on.size();
    // A new pod goes last; an undone removal goes back between its neighbours.
    if (seq + 1 < next_seq_) {
      while (pos > 0 && SeqOf(*on[pos - 1]) > seq) --pos;
    }
    if (reference_) {
      auto& list = ref_.nodes[node].pods;
      list.insert(list.begin() + static_cast<std::ptrdiff_t>(pos), stored);
    } else {
      snapshot_->Attach(*stored, node, pos);
      listener_->PodAdded(*stored, node, /*assumed=*/false);
    }
  }
  next_seq_ = std::max(next_seq_, seq + 1);
  if (Logging()) undo_.push_back(UndoEntry{UndoEntry::kRemovePod, key, {}, 0, nullptr});
  pods_[std::move(key)] = LivePod{stored, node, seq, std::move(pod)};
}

uint64_t ClusterState::SeqOf(const Pod& p) const {
  auto it = pods_.find(ObjectKey(p.meta));
  return it == pods_.end() ? 0 : it->second.seq;
}

// Takes the pod with `key` out of the cluster: its node gets back what it held. Returns
// the pod when `keep` (else null).
ClusterState::PodBox ClusterState::RemovePod(const std::string& key, bool keep) {
  auto it = pods_.find(key);
  if (it == pods_.end()) return {};
  return RemovePod(it, keep);
}

ClusterState::PodBox ClusterState::RemovePod(absl::flat_hash_map<std::string, LivePod>::iterator it, bool keep) {
  const std::string& key = it->first;
  LivePod& live = it->second;
  waiting_for_node_ -= WaitsForNode(*live.pod, live.node);
  if (live.node != engine::kNoId) {
    if (reference_) {
      auto& list = ref_.nodes[live.node].pods;
      list.erase(std::find(list.begin(), list.end(), live.pod));
    } else {
      snapshot_->Unbind(live.pod, live.node);
      listener_->PodRemoved(*live.pod, live.node);
    }
  }
  PodBox pod = std::move(live.own);
  if (pod.empty() && (keep || Logging())) pod = PodBox(1, *live.pod);
  if (Logging()) {
    undo_.push_back(UndoEntry{UndoEntry::kRestorePod, key, keep ? pod : std::move(pod), live.seq, nullptr});
  }
  pods_.erase(it);
  return pod;
}

// Takes each pod (entry number, key) out and puts it back with its number: it lands where
// its node name now leads (a node, or waiting for one).
void ClusterState::Reseat(const std::vector<std::pair<uint64_t, std::string>>& pods) {
  for (const auto& [seq, key] : pods) {
    AddPod(RemovePod(key, /*keep=*/true), seq, key);
  }
}

// --- events --------------------------------------------------------------------------

absl::Status ClusterState::Apply(ClusterEvent&& event) {
  try {
    if (std::string_view(event.kind) == "Pod") return ApplyPod(std::move(event));  // inline, no strlen
    return ApplyObjects(event);
  } catch (const std::exception& e) {
    // An added pod is taken over (ApplyPod) before it is counted in: then the key is gone.
    const bool taken = event.kind == "Pod" && event.object.pods.empty();
    return absl::InternalError(StrCat(event.where, ": applying ", EventTypeName(event.type), " ", event.kind, " ",
                                      taken ? std::string() : event.Key(), ": ", e.what()));
  }
}

absl::Status ClusterState::ApplyPod(ClusterEvent&& event) {
  Pod& pod = event.object.pods[0];
  probe_.clear();
  if (!pod.meta.namespace_.empty()) probe_.append(pod.meta.namespace_).append(1, '/');
  probe_.append(pod.meta.name);  // ObjectKey's text
  const std::string& key = probe_;
  auto it = pods_.find(key);
  const bool known = it != pods_.end();
  const bool bound = !pod.node_name.empty();
  switch (event.type) {
    case EventType::kAdded:
      if (known) return absl::AlreadyExistsError(StrCat(event.where, ": Pod ", key, " already exists"));
      if (!bound) return NotePending(pod);
      break;
    case EventType::kModified:
      if (!known && !bound) return NotePending(pod);
      if (known && !bound) {
        return absl::InvalidArgumentError(StrCat(event.where, ": Pod ", key,
                                                 ": spec.nodeName: a bound pod cannot become unbound (node \"",
                                                 it->second.pod->node_name, "\")"));
      }
      if (known) RemovePod(it);  // upstream's cache: an update removes, then adds
      break;
    case EventType::kDeleted:
      if (!known) {
        if (nominated_.count(key) || !bound) {
          nominated_.erase(key);
          return absl::OkStatus();
        }
        return absl::NotFoundError(StrCat(event.where, ": Pod ", key, " not found (DELETED)"));
      }
      RemovePod(it);
      if (!terminating_.empty()) terminating_.erase(key);
      return absl::OkStatus();
  }
  if (nominated_.count(key)) nominated_.erase(key);  // bound by someone else
  if (!pod.meta.deletion_timestamp.empty()) terminating_.insert(key);
  pod.nominated_node_name.clear();
  PodBox box;
  if (event.object.pods.size() == 1) {
    box = std::move(event.object.pods);
  } else {
    box.push_back(std::move(pod));
  }
  AddPod(std::move(box), next_seq_++, std::string(key));
  return absl::OkStatus();
}

// A pending pod's change: only its nomination is the cluster's (the queue is the caller's).
absl::Status ClusterState::NotePending(const Pod& pod) {
  if (!pod.nominated_node_name.empty()) {
    Nominate(pod);
  } else if (nominated_.count(ObjectKey(pod.meta))) {
    nominated_.erase(ObjectKey(pod.meta));
  }
  return absl::OkStatus();
}

// A change of a kind other than Pod. On the engine a node that joins, leaves or changes
// (within its zone or to another) is changed in place (its columns and its place in the
// node tree), on the reference it joins or changes within its zone in place; Services,
// workloads, PodDisruptionBudgets and PriorityClasses change in place on both; anything
// else rebuilds. `at`: a position to put an object back at (an undo).
absl::Status ClusterState::ApplyObjects(const ClusterEvent& event, std::optional<size_t> at) {
  if (live_ && !at && event.type == EventType::kAdded && !event.object.nodes.empty() &&
      live_->nodes.size() < live_->nodes.capacity()) {
    const Node& node = event.object.nodes[0];
    if (node_index_.count(node.meta.name)) {
      return absl::AlreadyExistsError(StrCat(event.where, ": Node ", node.meta.name, " already exists"));
    }
    AddNode(node);
    return absl::OkStatus();
  }
  if (live_ && !reference_ && event.type == EventType::kDeleted && !event.object.nodes.empty()) {
    auto it = node_index_.find(event.object.nodes[0].meta.name);
    if (it != node_index_.end()) return RemoveNode(it->second);  // else the object set's NotFound below
  }
  if (live_ && (!event.object.workloads.empty() || !event.object.pdbs.empty() ||
                !event.object.priority_classes.empty() || !event.object.pod_groups.empty() ||
                HasResourceObjects(event.object))) {
    // Read afresh in each cycle (default spread selectors, preemption's budgets, PodGroups,
    // DynamicResources' claims and classes), kept by no plugin: changed in place.
    return ChangeInPlace(event, at, /*namespaces=*/false);
  }
  if (live_ && !reference_ && !event.object.namespaces.empty()) {
    // Only InterPodAffinity reads namespaces (their labels): it reads them again. The
    // reference rebuilds, so the differential tests check this against a fresh state.
    return ChangeInPlace(event, at, /*namespaces=*/true);
  }
  if (live_ && event.type == EventType::kModified && !event.object.nodes.empty()) {
    const Node& node = event.object.nodes[0];
    auto it = node_index_.find(node.meta.name);
    if (it != node_index_.end() && ZoneKey(live_->nodes[it->second]) == ZoneKey(node)) {
      UpdateNode(it->second, node);
      return absl::OkStatus();
    }
    // Another zone: in place on the engine. The reference rebuilds, its tree made afresh
    // from the object set's list (ApplyToObjects moves the node there), so the
    // differential tests check this move against an independent one.
    if (it != node_index_.end() && !reference_ && !at) {
      MoveNode(it->second, node);
      return absl::OkStatus();
    }
  }
  return RebuildWith(event, at);
}

// An object no plugin keeps (or, `namespaces`, that only InterPodAffinity reads again)
// changed in the live object set.
absl::Status ClusterState::ChangeInPlace(const ClusterEvent& event, std::optional<size_t> at, bool namespaces) {
  auto undo = std::make_unique<Undo>();
  KPLACE_RETURN_IF_ERROR(ApplyToObjects(event, live_.get(), undo.get(), at));
  listener_->ObjectsChanged(namespaces);
  if (Logging()) undo_.push_back(UndoEntry{UndoEntry::kObjects, "", {}, 0, std::move(undo)});
  return absl::OkStatus();
}

// --- nodes ---------------------------------------------------------------------------

// A node joins in place: the last index everywhere, the end of its zone in the node tree
// (which is also where a fresh tree built from Objects() puts it). Pods already bound to
// its name (left by an earlier node of that name) count on it again.
void ClusterState::AddNode(const Node& node) {
  live_->nodes.push_back(node);  // capacity was reserved: the others do not move
  const Node* stored = &live_->nodes.back();
  const NodeIndex i = static_cast<NodeIndex>(live_->nodes.size() - 1);
  node_index_.emplace(node.meta.name, i);
  tree_.Append(node, i);
  if (reference_) {
    ref_.nodes.push_back(reference::NodeInfo{stored, {}});
  } else {
    snapshot_->AddNode(stored);
    listener_->NodeAdded(i);
  }
  if (Logging()) {
    auto undo = std::make_unique<Undo>();
    undo->event = NodeEvent(EventType::kDeleted, node);
    undo_.push_back(UndoEntry{UndoEntry::kObjects, "", {}, 0, std::move(undo)});
  }
  if (waiting_for_node_ == 0) return;
  std::vector<std::pair<uint64_t, std::string>> back;
  for (const auto& [key, p] : pods_) {
    if (p.node == engine::kNoId && p.pod->node_name == node.meta.name) back.emplace_back(p.seq, key);
  }
  std::sort(back.begin(), back.end());
  Reseat(back);
}

// A node leaves in place (the engine's path): its row stays, nameless and empty, so no
// other node moves; it leaves the node tree (its zone too, when it was the last there)
// and every count. Its pods wait for a node of its name, as upstream's cache keeps them.
absl::Status ClusterState::RemoveNode(NodeIndex i) {
  const std::string name = live_->nodes[i].meta.name;
  node_index_.erase(name);
  std::vector<std::pair<uint64_t, std::string>> on;
  for (const Pod* p : snapshot_->pods_on(i)) {
    std::string key = ObjectKey(p->meta);
    on.emplace_back(pods_.at(key).seq, std::move(key));
  }
  Reseat(on);  // counted out while the node still has its labels
  const NodeTree::Place was = tree_.Leave(live_->nodes[i], i, live_->nodes);
  if (!was.listed) tree_.Interleave();
  Node old = std::exchange(live_->nodes[i], Node{});
  ChangeRow(i, old);
  removed_rows_.emplace(i, name);
  if (Logging()) {
    LogTreeUndo(UndoEntry::kRestoreNode, EventType::kAdded, std::move(old), i, was);
    return absl::OkStatus();
  }
  // Rows of nodes that left cost every pass over all rows: dropped by a rebuild once they
  // are as many as the nodes (amortized, a rebuild's cost per node).
  if (removed_rows_.size() >= 64 && 2 * removed_rows_.size() >= live_->nodes.size()) return Rebuild(NonPods(), false);
  return absl::OkStatus();
}

// The undo of RemoveNode: `node` takes row i back, at its old place in the node tree
// (`zone`: its zone's place, made again when it was gone; `pos`: its place in the zone).
void ClusterState::ReviveNode(NodeIndex i, const Node& node, size_t zone, size_t pos) {
  removed_rows_.erase(i);
  Node blank = std::exchange(live_->nodes[i], node);
  node_index_.emplace(node.meta.name, i);
  tree_.Enter(live_->nodes[i], i, zone, pos, live_->nodes);
  tree_.Interleave();
  ChangeRow(i, blank);
}

// Logs a node-tree step's undo: `old` (the node as it was) applied as `type` at its list
// place, with its place in the tree.
void ClusterState::LogTreeUndo(UndoEntry::What what, EventType type, Node old, NodeIndex row,
                               const NodeTree::Place& was) {
  auto undo = std::make_unique<Undo>();
  undo->event = NodeEvent(type, std::move(old));
  undo->index = was.list_pos;
  undo_.push_back(UndoEntry{what, "", {}, 0, std::move(undo), row, static_cast<uint32_t>(was.zone),
                            static_cast<uint32_t>(was.pos)});
}

// Node i's zone changes (the engine's path): the node tree removes it from its zone and
// adds it to the new one, last there (a new zone last), as upstream's nodeTree.updateNode
// does; every plugin sees an ordinary in-place update of its labels. `back` (an undo)
// puts it at that place in the tree instead.
void ClusterState::MoveNode(NodeIndex i, const Node& node, std::optional<NodeTree::Place> back) {
  const NodeTree::Place was = tree_.Leave(live_->nodes[i], i, live_->nodes);
  Node old = std::exchange(live_->nodes[i], node);
  if (back) {
    tree_.Enter(live_->nodes[i], i, back->zone, back->pos, live_->nodes);
  } else {
    tree_.Join(node, i);
  }
  tree_.Interleave();
  ChangeRow(i, old);
  if (Logging()) LogTreeUndo(UndoEntry::kMoveNode, EventType::kModified, std::move(old), i, was);
}

// Row i's Node object changed (from `old`): the snapshot and every listener.
void ClusterState::ChangeRow(NodeIndex i, const Node& old) {
  snapshot_->UpdateNode(i, old);
  listener_->NodeChanged(i, old);
}

// Node i changes in place: the snapshot, the reference and every plugin keep the same
// Node object, now holding `node`.
void ClusterState::UpdateNode(NodeIndex i, const Node& node) {
  Node old = live_->nodes[i];
  live_->nodes[i] = node;
  if (!reference_) ChangeRow(i, old);
  if (Logging()) {
    auto undo = std::make_unique<Undo>();
    undo->event = NodeEvent(EventType::kModified, old);
    undo->index = static_cast<size_t>(i);
    undo_.push_back(UndoEntry{UndoEntry::kObjects, "", {}, 0, std::move(undo)});
  }
}

// --- rebuilds ------------------------------------------------------------------------

// Applies a change of a kind other than Pod and builds the cluster again over the result
// (O(cluster)); `at` puts the object back at a position (an undo).
absl::Status ClusterState::GoLive() {
  if (live_) return absl::OkStatus();
  return Rebuild(NonPods(), /*storage_changed=*/false);
}

absl::Status ClusterState::RebuildWith(const ClusterEvent& event, std::optional<size_t> at) {
  ObjectSet next = NonPods();
  Undo undo;
  KPLACE_RETURN_IF_ERROR(ApplyToObjects(event, &next, &undo, at));
  KPLACE_RETURN_IF_ERROR(Rebuild(std::move(next), /*storage_changed=*/!event.object.storage.empty()));
  if (Logging()) undo_.push_back(UndoEntry{UndoEntry::kObjects, "", {}, 0, std::make_unique<Undo>(std::move(undo))});
  return absl::OkStatus();
}

// The cluster built again over `next` (every object but pods) and the pods it holds, in
// their entry order.
absl::Status ClusterState::Rebuild(ObjectSet next, bool storage_changed) {
  // Listeners name nodes by row; rows are renumbered below.
  std::vector<std::string> row_names(objects().nodes.size());
  for (size_t i = 0; i < row_names.size(); ++i) {
    if (LiveRow(static_cast<NodeIndex>(i))) row_names[i] = objects().nodes[i].meta.name;
  }
  absl::Status built = RebuildRows(std::move(next), storage_changed);
  listener_->RowsRenumbered([&](int32_t old) {
    if (old < 0 || static_cast<size_t>(old) >= row_names.size() || row_names[old].empty()) return -1;
    auto it = node_index_.find(row_names[old]);
    return it == node_index_.end() ? -1 : it->second;
  });
  return built;
}

absl::Status ClusterState::RebuildRows(ObjectSet next, bool storage_changed) {
  std::vector<uint64_t> seqs;
  for (const LivePod* p : PodsInOrder()) {
    next.pods.push_back(*p->pod);
    seqs.push_back(p->seq);
  }
  // Storage changed: VolumeBinding's assumptions were made against the old objects.
  std::shared_ptr<plugins::volume::VolumeAssumeCache> keep = storage_changed ? nullptr : AssumeCache();
  listener_->Rebuilding();
  snapshot_.reset();
  ref_ = reference::ClusterState{};
  pods_.clear();
  if (!live_) live_ = std::make_unique<ObjectSet>();
  *live_ = std::move(next);
  live_->nodes.reserve(2 * live_->nodes.size() + 64);  // room for nodes that join in place
  if (reference_) {
    ref_.volume_assume = keep;
  } else {
    carried_assume_ = keep;  // null: the snapshot starts a new one
  }
  removed_rows_.clear();
  return Build(*live_, seqs);
}

// --- transactions --------------------------------------------------------------------

absl::Status ClusterState::Begin() {
  if (savepoints_.size() >= 2) return absl::FailedPreconditionError("Begin: transactions nest one level deep");
  Savepoint sp;
  sp.undo_size = undo_.size();
  sp.nominated = nominated_;
  sp.terminating = terminating_;
  const auto& cache = AssumeCache();
  if (!objects().storage.empty()) sp.assume = std::make_unique<plugins::volume::VolumeAssumeCache>(*cache);
  savepoints_.push_back(std::move(sp));
  listener_->Begun();
  return absl::OkStatus();
}

absl::Status ClusterState::Commit() {
  if (savepoints_.empty()) return absl::FailedPreconditionError("Commit: no transaction (Begin first)");
  savepoints_.pop_back();
  if (savepoints_.empty()) undo_.clear();
  listener_->Committed();
  return absl::OkStatus();
}

absl::Status ClusterState::Revert() {
  if (savepoints_.empty()) return absl::FailedPreconditionError("Revert: no transaction (Begin first)");
  Savepoint sp = std::move(savepoints_.back());
  savepoints_.pop_back();
  // First, so that a rebuild while undoing renumbers the listeners' rows.
  listener_->Reverting();
  try {
    std::vector<UndoEntry> entries(std::make_move_iterator(undo_.begin() + static_cast<std::ptrdiff_t>(sp.undo_size)),
                                   std::make_move_iterator(undo_.end()));
    undo_.resize(sp.undo_size);
    // Undone last first, without logging (the outer transaction keeps its own log).
    std::vector<Savepoint> outer = std::move(savepoints_);
    savepoints_.clear();
    for (size_t k = entries.size(); k-- > 0;) {
      UndoEntry& u = entries[k];
      switch (u.what) {
        case UndoEntry::kRemovePod:
          RemovePod(u.key);
          break;
        case UndoEntry::kRestorePod:
          AddPod(std::move(u.pod), u.seq, std::move(u.key));
          break;
        case UndoEntry::kObjects:
          KPLACE_RETURN_IF_ERROR(ApplyObjects(u.objects->event, u.objects->index));
          break;
        case UndoEntry::kRestoreNode: {
          // Its row, unless a rebuild since has dropped the rows of nodes that left.
          auto row = removed_rows_.find(u.row);
          const Node& node = u.objects->event.object.nodes[0];
          if (row != removed_rows_.end() && row->second == node.meta.name) {
            ReviveNode(u.row, node, u.zone, u.zone_pos);
          } else {
            KPLACE_RETURN_IF_ERROR(ApplyObjects(u.objects->event, u.objects->index));
          }
          break;
        }
        case UndoEntry::kMoveNode: {
          // Back to its old place in its old zone (the tree is as the move left it: a
          // rebuild since lists the nodes zone after zone, so it keeps zones and places).
          const Node& node = u.objects->event.object.nodes[0];
          auto it = node_index_.find(node.meta.name);
          if (it != node_index_.end()) {
            MoveNode(it->second, node, NodeTree::Place{u.zone, u.zone_pos, u.objects->index});
          } else {
            KPLACE_RETURN_IF_ERROR(ApplyObjects(u.objects->event, u.objects->index));
          }
          break;
        }
      }
    }
    savepoints_ = std::move(outer);
  } catch (const std::exception& e) {
    return absl::InternalError(StrCat("Revert: ", e.what()));
  }
  nominated_ = std::move(sp.nominated);
  terminating_ = std::move(sp.terminating);
  if (sp.assume) *AssumeCache() = *sp.assume;
  return absl::OkStatus();
}

}  // namespace kplace::state
