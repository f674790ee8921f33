#include "kplace/state/node_tree.h"

#include <algorithm>
#include <cstdint>
#include <iterator>
#include <unordered_map>
#include <utility>

namespace kplace::state {
namespace {

std::string LabelOr(const Node& node, const char* beta, const char* ga) {
  auto it = node.meta.labels.find(beta);
  if (it != node.meta.labels.end()) return it->second;  // presence of the key decides
  it = node.meta.labels.find(ga);
  return it == node.meta.labels.end() ? "" : it->second;
}

}  // namespace

std::string ZoneKey(const Node& node) {
  std::string zone = LabelOr(node, "failure-domain.beta.kubernetes.io/zone", "topology.kubernetes.io/zone");
  std::string region = LabelOr(node, "failure-domain.beta.kubernetes.io/region", "topology.kubernetes.io/region");
  if (region.empty() && zone.empty()) return "";
  return region + std::string(":\x00:", 3) + zone;
}

std::vector<int32_t> ZoneRoundRobinOrder(const std::vector<const Node*>& nodes) {
  std::vector<std::vector<int32_t>> zones;
  std::unordered_map<std::string, size_t> zone_index;
  std::unordered_map<std::string, bool> seen;
  for (int32_t i = 0; i < static_cast<int32_t>(nodes.size()); ++i) {
    if (seen[nodes[i]->meta.name]) continue;  // the tree ignores a repeated add
    seen[nodes[i]->meta.name] = true;
    auto [it, inserted] = zone_index.emplace(ZoneKey(*nodes[i]), zones.size());
    if (inserted) zones.emplace_back();
    zones[it->second].push_back(i);
  }
  std::vector<int32_t> out;
  out.reserve(nodes.size());
  for (size_t round = 0; out.size() < seen.size(); ++round) {
    for (const auto& z : zones) {
      if (round < z.size()) out.push_back(z[round]);
    }
  }
  return out;
}

void NodeTree::Clear() {
  order_.clear();
  zones_.clear();
  zone_of_.clear();
}

void NodeTree::Join(const Node& node, int32_t i) {
  auto [it, fresh] = zone_of_.emplace(ZoneKey(node), zones_.size());
  if (fresh) zones_.emplace_back();
  zones_[it->second].push_back(i);
}

void NodeTree::Interleave() {
  order_.clear();
  size_t total = 0;
  for (const auto& z : zones_) total += z.size();
  order_.reserve(total);
  for (size_t round = 0; order_.size() < total; ++round) {
    for (const auto& z : zones_) {
      if (round < z.size()) order_.push_back(z[round]);
    }
  }
}

void NodeTree::Append(const Node& node, int32_t i) {
  // Its place in the list: after every node of earlier rounds, and after the nodes of this
  // round in zones before its own.
  auto found = zone_of_.find(ZoneKey(node));
  const size_t zone = found != zone_of_.end() ? found->second : zones_.size();
  const size_t round = zone < zones_.size() ? zones_[zone].size() : 0;
  size_t pos = 0;
  for (size_t z = 0; z < zones_.size(); ++z) {
    pos += std::min(zones_[z].size(), round);
    if (z < zone && zones_[z].size() > round) ++pos;
  }
  Join(node, i);
  order_.insert(order_.begin() + static_cast<std::ptrdiff_t>(pos), i);
}

NodeTree::Place NodeTree::Leave(const Node& node, int32_t i, const std::vector<Node>& nodes) {
  Place was;
  was.zone = zone_of_.at(ZoneKey(node));
  std::vector<int32_t>& zone = zones_[was.zone];
  was.pos = static_cast<size_t>(std::find(zone.begin(), zone.end(), i) - zone.begin());
  was.list_pos = was.pos;
  for (size_t k = 0; k < was.zone; ++k) was.list_pos += zones_[k].size();
  // The last of its zone: every other row keeps its round, so the scan order loses just
  // this row (from the back: the rows that joined last leave first when joins are undone).
  if (was.pos + 1 == zone.size()) {
    auto at = std::find(order_.rbegin(), order_.rend(), i);
    if (at != order_.rend()) {
      order_.erase(std::next(at).base());
      was.listed = true;
    }
  }
  zone.erase(zone.begin() + static_cast<std::ptrdiff_t>(was.pos));
  if (zone.empty()) {
    zones_.erase(zones_.begin() + static_cast<std::ptrdiff_t>(was.zone));
    IndexZones(nodes);
  }
  return was;
}

void NodeTree::Enter(const Node& node, int32_t i, size_t zone, size_t pos, const std::vector<Node>& nodes) {
  if (zone_of_.count(ZoneKey(node))) {
    std::vector<int32_t>& members = zones_[zone];
    members.insert(members.begin() + static_cast<std::ptrdiff_t>(pos), i);
  } else {
    zones_.insert(zones_.begin() + static_cast<std::ptrdiff_t>(zone), std::vector<int32_t>{i});
    IndexZones(nodes);
  }
}

void NodeTree::IndexZones(const std::vector<Node>& nodes) {
  zone_of_.clear();
  for (size_t z = 0; z < zones_.size(); ++z) zone_of_.emplace(ZoneKey(nodes[zones_[z].front()]), z);
}

}  // namespace kplace::state
