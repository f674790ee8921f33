#include "kplace/cycle/engine_dry_run.h"

#include <algorithm>
#include <utility>

namespace kplace::cycle {

EngineDryRunHost::EngineDryRunHost(engine::Framework& fw, const engine::PreFilterResult& pre, const Pod& pod,
                                   const engine::Snapshot& snapshot,
                                   std::function<int32_t(const std::string&)> index_of,
                                   std::vector<const Pod*> nominated,
                                   std::function<std::unique_ptr<DryRunHost>()> reference)
    : fw_(fw),
      pre_(pre),
      pod_(pod),
      snapshot_(snapshot),
      index_of_(std::move(index_of)),
      nominated_(std::move(nominated)),
      make_reference_(std::move(reference)),
      slot_(snapshot.num_nodes(), -1) {
  const std::vector<std::string>& names = fw_.filter_plugins();
  fixed_.assign(names.size(), 0);
  for (size_t f = 0; f < names.size(); ++f) {
    if (pre_.status.IsSuccess() && pre_.skip_filter[f]) continue;
    const bool dependent = PodDependentPreFilter(names[f]);
    if (dependent || fw_.FilterReadsPods(static_cast<int>(f))) {
      changing_.push_back({static_cast<int>(f), dependent});
    } else {
      fixed_[f] = 1;
    }
  }
}

EngineDryRunHost::~EngineDryRunHost() = default;

void EngineDryRunHost::Prefetch(const Pod& pod, const std::vector<int32_t>& nodes) {
  if (&pod != &pod_ || !pre_.status.IsSuccess()) return;
  fetch_.clear();
  for (int32_t i : nodes) {
    if (slot_[i] < 0) fetch_.push_back(i);
  }
  if (fetch_.empty()) return;
  const size_t num = fw_.filter_plugins().size();
  fw_.FilterEachOn(pre_, fetch_, &fetched_);
  for (size_t j = 0; j < fetch_.size(); ++j) {
    slot_[fetch_[j]] = static_cast<int32_t>(current_.size() / num) + static_cast<int32_t>(j);
    size_t fixed = 0;
    while (fixed < num && !(fixed_[fixed] && fetched_[j * num + fixed] != 0)) ++fixed;
    fixed_reject_.push_back(static_cast<int32_t>(fixed));
  }
  current_.insert(current_.end(), fetched_.begin(), fetched_.end());
}

bool EngineDryRunHost::NominatedCounts(const Pod& pod, int32_t node) const {
  const std::string& name = snapshot_.node(node).meta.name;
  for (const Pod* p : nominated_) {
    if (p->nominated_node_name == name && NominatedCountsFor(*p, pod)) return true;
  }
  return false;
}

PluginStatus EngineDryRunHost::Delegate(const Pod& pod, int32_t node, const std::vector<const Pod*>& removed) {
  if (!reference_) reference_ = make_reference_();
  ++delegated_;
  return reference_->Filter(pod, node, removed);
}

bool EngineDryRunHost::Rejects(int f, engine::VerdictCode code) {
  for (const auto& [key, rejected] : rejects_) {
    if (key.first == f && key.second == code) return rejected;
  }
  const bool rejected = fw_.Verdict(f, code).IsRejected();
  rejects_.push_back({{f, code}, rejected});
  return rejected;
}

int EngineDryRunHost::Check(const Pod& pod, int32_t node, const std::vector<const Pod*>& removed,
                            engine::VerdictCode* code) {
  if (&pod != &pod_ || !pre_.status.IsSuccess() || NominatedCounts(pod, node)) return kAskReference;
  if (slot_[node] < 0) Prefetch(pod, {node});
  const size_t num = fw_.filter_plugins().size();
  const engine::VerdictCode* current = &current_[static_cast<size_t>(slot_[node]) * num];
  const int fixed = fixed_reject_[slot_[node]];
  // The chain in order: the plugins the removal may change answer before the first fixed
  // rejection, which answers when none of them rejects.
  for (const Changing& c : changing_) {
    if (c.f > fixed) break;
    // The engine's InterPodAffinity verdict on a node an earlier plugin rejected can differ
    // from the reference's (found by this dry run; the cycle never reads it there), so the
    // plugins with cluster-wide PreFilter state leave such calls to the reference.
    if (c.pod_dependent) return kAskReference;
    if (!fw_.FilterWithout(c.f, node, removed, current[c.f], code)) return kAskReference;
    if (*code == 0) continue;
    return Rejects(c.f, *code) ? c.f : kAskReference;  // the reference words errors
  }
  if (fixed == static_cast<int>(num)) return kPasses;
  *code = current[fixed];
  return Rejects(fixed, *code) ? fixed : kAskReference;
}

PluginStatus EngineDryRunHost::Filter(const Pod& pod, int32_t node, const std::vector<const Pod*>& removed) {
  engine::VerdictCode code = 0;
  const int f = Check(pod, node, removed, &code);
  if (f == kAskReference) return Delegate(pod, node, removed);
  ++calls_;
  return f == kPasses ? PluginStatus::Success() : fw_.Verdict(f, code);
}

bool EngineDryRunHost::Fits(const Pod& pod, int32_t node, const std::vector<const Pod*>& removed) {
  engine::VerdictCode code = 0;
  const int f = Check(pod, node, removed, &code);
  if (f == kAskReference) return Delegate(pod, node, removed).IsSuccess();
  ++calls_;
  return f == kPasses;
}

}  // namespace kplace::cycle
