#include "kplace/engine/snapshot.h"

#include <algorithm>
#include <cstddef>

#include "kplace/plugins/volume_binding_assume.h"

namespace kplace::engine {

int32_t Interner::Intern(std::string_view s) {
  auto it = ids_.find(s);
  if (it != ids_.end()) return it->second;
  int32_t id = static_cast<int32_t>(names_.size());
  names_.emplace_back(s);
  ids_.emplace(std::string_view(names_.back()), id);
  return id;
}

int32_t Interner::Find(std::string_view s) const {
  auto it = ids_.find(s);
  return it == ids_.end() ? kNoId : it->second;
}

Snapshot::Snapshot(const ObjectSet& objects, FeatureGates gates,
                   std::shared_ptr<plugins::volume::VolumeAssumeCache> volume_assume)
    : objects_(&objects),
      gates_(std::move(gates)),
      volume_assume_(volume_assume ? std::move(volume_assume) : std::make_shared<plugins::volume::VolumeAssumeCache>()) {
  nodes_.reserve(objects.nodes.size());
  for (const Node& n : objects.nodes) {
    NodeIndex i = static_cast<NodeIndex>(nodes_.size());
    node_index_.emplace(n.meta.name, i);
    nodes_.push_back(&n);
    node_name_ids_.push_back(strings_.Intern(n.meta.name));
  }
  pod_level_ = gates_.Enabled("PodLevelResources");
  pods_on_node_.resize(nodes_.size());
  for (NodeIndex i = 0; i < num_nodes(); ++i) {
    for (const auto& [key, value] : nodes_[i]->meta.labels) {
      auto& column = label_columns_[strings_.Intern(key)];
      if (column.values.empty()) column.values.assign(nodes_.size(), kNoId);
      column.values[i] = strings_.Intern(value);
      ++column.nodes;
    }
  }
  for (const Pod& p : objects.pods) {
    if (p.node_name.empty() || p.phase == "Succeeded" || p.phase == "Failed") continue;
    NodeIndex i = FindNode(p.node_name);
    if (i != kNoId) pods_on_node_[i].push_back(&p);
  }
  requests_on_node_.resize(nodes_.size());
  for (NodeIndex i = 0; i < num_nodes(); ++i) requests_on_node_[i].resize(pods_on_node_[i].size());
}

NodeIndex Snapshot::FindNode(std::string_view name) const {
  auto it = node_index_.find(std::string(name));
  return it == node_index_.end() ? kNoId : it->second;
}

const std::vector<int32_t>* Snapshot::LabelColumn(std::string_view key) const {
  int32_t id = strings_.Find(key);
  if (id == kNoId) return nullptr;
  auto it = label_columns_.find(id);
  return it == label_columns_.end() || it->second.nodes == 0 ? nullptr : &it->second.values;
}

NodeIndex Snapshot::AddNode(const Node* node) {
  const NodeIndex i = num_nodes();
  nodes_.push_back(node);
  node_index_.emplace(node->meta.name, i);
  node_name_ids_.push_back(strings_.Intern(node->meta.name));
  pods_on_node_.emplace_back();
  requests_on_node_.emplace_back();
  for (auto& [key, column] : label_columns_) column.values.push_back(kNoId);
  for (const auto& [key, value] : node->meta.labels) {
    LabelColumnData& column = label_columns_[strings_.Intern(key)];
    if (column.values.empty()) column.values.assign(nodes_.size(), kNoId);
    column.values[i] = strings_.Intern(value);
    ++column.nodes;
  }
  return i;
}

void Snapshot::UpdateNode(NodeIndex i, const Node& old) {
  const std::string& name = nodes_[i]->meta.name;
  if (name != old.meta.name) {
    if (!old.meta.name.empty()) node_index_.erase(old.meta.name);
    if (!name.empty()) node_index_.emplace(name, i);
    removed_ += (name.empty() ? 1 : 0) - (old.meta.name.empty() ? 1 : 0);
    node_name_ids_[i] = strings_.Intern(name);
  }
  const Labels& now = nodes_[i]->meta.labels;
  // Keys the node no longer has, then the keys it has now.
  for (const auto& [key, value] : old.meta.labels) {
    if (now.count(key)) continue;
    LabelColumnData& column = label_columns_[strings_.Intern(key)];
    column.values[i] = kNoId;
    --column.nodes;
  }
  for (const auto& [key, value] : now) {
    LabelColumnData& column = label_columns_[strings_.Intern(key)];
    if (column.values.empty()) column.values.assign(nodes_.size(), kNoId);
    if (column.values[i] == kNoId) ++column.nodes;
    column.values[i] = strings_.Intern(value);
  }
}

const Pod& Snapshot::Bind(const Pod& pod, NodeIndex i) {
  bound_.push_back(pod);
  Pod& copy = bound_.back();
  copy.node_name = nodes_[i]->meta.name;
  Attach(copy, i, pods_on_node_[i].size());
  return copy;
}

size_t Snapshot::Unbind(const Pod* pod, NodeIndex i) {
  std::vector<const Pod*>& on = pods_on_node_[i];
  // Most unbinds are of recent binds: search from the back.
  unbound_ = nullptr;
  unbound_requests_.reset();
  for (size_t k = on.size(); k-- > 0;) {
    if (on[k] != pod) continue;
    on.erase(on.begin() + static_cast<std::ptrdiff_t>(k));
    std::vector<SharedRequests>& requests = requests_on_node_[i];
    unbound_ = pod;
    unbound_requests_ = std::move(requests[k]);
    requests.erase(requests.begin() + static_cast<std::ptrdiff_t>(k));
    return k;
  }
  return on.size();
}

void Snapshot::Attach(const Pod& pod, NodeIndex i, size_t pos) {
  // The pod the last Unbind took off may be gone, and its address taken by this one.
  unbound_ = nullptr;
  unbound_requests_.reset();
  std::vector<const Pod*>& on = pods_on_node_[i];
  const size_t at = std::min(pos, on.size());
  on.insert(on.begin() + static_cast<std::ptrdiff_t>(at), &pod);
  std::vector<SharedRequests>& requests = requests_on_node_[i];
  requests.insert(requests.begin() + static_cast<std::ptrdiff_t>(at), nullptr);
}

const NodeResources& Snapshot::RequestsAt(NodeIndex i, size_t k) const {
  SharedRequests& slot = requests_on_node_[i][k];
  if (!slot) slot = ComputeRequests(*pods_on_node_[i][k]);
  return *slot;
}

const NodeResources& Snapshot::RequestsOf(const Pod& pod, NodeIndex i) const {
  SharedRequests* slot = nullptr;
  if (&pod == unbound_) {
    slot = &unbound_requests_;
  } else {
    const std::vector<const Pod*>& on = pods_on_node_[i];
    for (size_t k = on.size(); k-- > 0;) {
      if (on[k] == &pod) return RequestsAt(i, k);
    }
  }
  if (!slot) slot = &other_requests_;  // not the snapshot's pod: no telling whether it changes
  if (!*slot || slot == &other_requests_) *slot = ComputeRequests(pod);
  return **slot;
}

Snapshot::SharedRequests Snapshot::ComputeRequests(const Pod& pod) const {
  if (last_requests_ && SameRequests(pod, last_pod_)) return last_requests_;
  auto r = std::make_shared<NodeResources>();
  r->AddPod(pod, pod_level_);
  // Only what SameRequests reads is kept.
  last_pod_ = Pod{};
  last_pod_.containers = pod.containers;
  last_pod_.init_containers = pod.init_containers;
  last_pod_.overhead = pod.overhead;
  last_pod_.pod_requests = pod.pod_requests;
  last_pod_.pod_limits = pod.pod_limits;
  last_requests_ = std::move(r);
  return last_requests_;
}

}  // namespace kplace::engine
