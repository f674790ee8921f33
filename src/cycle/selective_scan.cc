#include "kplace/cycle/selective_scan.h"

#include <algorithm>
#include <utility>

namespace kplace::cycle {

SelectiveScan::SelectiveScan(const std::vector<std::string>& filter_plugins, const engine::Snapshot* snapshot,
                             const std::vector<int32_t>* order)
    : snapshot_(snapshot), order_(order) {
  // A skipped node fails NodeAffinity; the plugins before it in Filter order must be ones
  // whose verdicts never stand for an error.
  for (size_t f = 0; snapshot_ != nullptr && f < filter_plugins.size(); ++f) {
    if (filter_plugins[f] == "NodeAffinity") {
      affinity_filter_ = static_cast<int32_t>(f);
      break;
    }
    if (filter_plugins[f] != "NodeUnschedulable" && filter_plugins[f] != "NodeName" &&
        filter_plugins[f] != "TaintToleration") {
      break;
    }
  }
}

bool SelectiveScan::Select(const Pod& pod, int32_t pos) {
  const std::vector<int32_t>* positions = AffinityCandidates(pod);
  if (positions == nullptr) return false;
  const std::vector<int32_t>& order = *order_;
  const int32_t s = static_cast<int32_t>(positions->size());
  pos_ = pos;
  nodes_.resize(s);
  at_.resize(s);
  // The selected positions from pos on, then from the start.
  int32_t at = static_cast<int32_t>(std::lower_bound(positions->begin(), positions->end(), pos) - positions->begin());
  for (int32_t j = 0; j < s; ++j, ++at) {
    if (at == s) at = 0;
    at_[j] = (*positions)[at];
    nodes_[j] = order[at_[j]];
  }
  return true;
}

const std::vector<int32_t>& SelectiveScan::LabelPositions(const std::string& key, const std::string& value) {
  static const std::vector<int32_t> kNone;
  auto at = label_positions_.find(key);
  if (at == label_positions_.end()) {  // the key's index, once: one pass over the order
    at = label_positions_.emplace(key, std::unordered_map<std::string, std::vector<int32_t>>{}).first;
    const std::vector<int32_t>& order = *order_;
    for (int32_t p = 0; p < static_cast<int32_t>(order.size()); ++p) {
      const auto& labels = snapshot_->node(order[p]).meta.labels;
      auto label = labels.find(key);
      if (label != labels.end()) at->second[label->second].push_back(p);
    }
  }
  auto found = at->second.find(value);
  return found == at->second.end() ? kNone : found->second;
}

const std::vector<int32_t>* SelectiveScan::AffinityCandidates(const Pod& pod) {
  // A scan over a set this large visits most of the order anyway.
  const size_t most = order_->size() / 2;
  const std::vector<int32_t>* best = nullptr;
  for (const auto& [key, value] : pod.node_selector) {  // every pair must hold: the smallest
    const std::vector<int32_t>& these = LabelPositions(key, value);
    if (best == nullptr || these.size() < best->size()) best = &these;
  }
  const NodeSelector* required = pod.affinity && pod.affinity->node_affinity && pod.affinity->node_affinity->required
                                     ? &*pod.affinity->node_affinity->required
                                     : nullptr;
  if (required != nullptr && !required->terms.empty()) {
    // Some term must hold (terms are ORed): per term the smallest union over an In
    // requirement's values, united over the terms.
    std::vector<std::vector<const std::vector<int32_t>*>> lists;
    size_t total = 0;
    bool bounded = true;
    for (const NodeSelectorTerm& t : required->terms) {
      std::vector<const std::vector<int32_t>*> term_best;
      size_t term_size = 0;
      bool found = false;
      for (const NodeSelectorRequirement& r : t.match_expressions) {
        if (r.op != "In") continue;
        std::vector<const std::vector<int32_t>*> these;
        size_t size = 0;
        for (const std::string& v : r.values) {
          these.push_back(&LabelPositions(r.key, v));
          size += these.back()->size();
        }
        if (!found || size < term_size) {
          term_best = std::move(these);
          term_size = size;
          found = true;
        }
      }
      if (!found) {
        bounded = false;
        break;
      }
      total += term_size;
      lists.push_back(std::move(term_best));
    }
    if (bounded && total <= most && (best == nullptr || total < best->size())) {
      merged_.clear();
      for (const auto& term : lists) {
        for (const std::vector<int32_t>* l : term) {
          const size_t mid = merged_.size();
          merged_.insert(merged_.end(), l->begin(), l->end());
          std::inplace_merge(merged_.begin(), merged_.begin() + mid, merged_.end());
        }
      }
      merged_.erase(std::unique(merged_.begin(), merged_.end()), merged_.end());
      selected_.swap(merged_);
      return &selected_;
    }
  }
  return best != nullptr && best->size() <= most ? best : nullptr;
}

}  // namespace kplace::cycle
