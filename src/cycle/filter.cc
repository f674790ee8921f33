// Scheduler::Filter: PreFilter, then Filter on named nodes as the cycle's scan filters them
// (what-ifs' CanSchedulePod and FirstFit), and the per-node status the scan shares with it.
#include <algorithm>
#include <memory>
#include <string>
#include <vector>

#include "cycle_scheduler.h"
#include "kplace/common/status.h"
#include "kplace/common/strings.h"
#include "kplace/model/decode.h"

namespace kplace::cycle {

PluginStatus CycleScheduler::NodeStatus(const Pod& pod, Evaluator* ev, size_t ev_index,
                                       const std::vector<bool>& nominated_on,
                                       std::unique_ptr<ReferenceDryRunHost>* host, NodeIndex i, std::string* plugin) {
  if (nominated_on.empty() || !nominated_on[i]) return ev->FilterNode(i, plugin);
  if (!*host) *host = MakeHost(ev_index);
  PluginStatus s = (*host)->Filter(pod, i, {});
  if (!s.IsSuccess()) *plugin = (*host)->last_rejector();
  return s;
}

size_t CycleScheduler::ProfileOf(const Pod& pod) const {
  size_t ev_index = evaluators_.size();
  for (size_t e = 0; e < evaluators_.size(); ++e) {
    if (evaluators_[e]->profile().scheduler_name == pod.scheduler_name) ev_index = e;
  }
  return ev_index;
}

absl::StatusOr<size_t> CycleScheduler::PendingProfile(const Pod& pod) const {
  const size_t ev_index = ProfileOf(pod);
  const std::string key = ObjectKey(pod.meta);
  if (ev_index == evaluators_.size()) {
    return absl::InvalidArgumentError(StrCat("Pod ", key, ": no profile has schedulerName \"", pod.scheduler_name, "\""));
  }
  if (const Pod* bound = state_.FindBoundPod(key)) {
    return absl::InvalidArgumentError(StrCat("Pod ", key, " is already bound to node ", bound->node_name));
  }
  return ev_index;
}

absl::Status CycleScheduler::Assume(const Pod& pod, const std::string& node) {
  KPLACE_RETURN_IF_ERROR(PendingProfile(pod).status());
  const NodeIndex i = state_.Row(node);
  if (i == engine::kNoId) return absl::InvalidArgumentError(StrCat("Node ", node, " is not in the cluster"));
  if (!batches_.empty()) RestartAllBatches();  // a bind no run made: runs start again
  Bind(pod, i);
  return absl::OkStatus();
}

absl::StatusOr<std::vector<NodeFit>> CycleScheduler::Filter(const Pod& pod, const std::vector<std::string>& nodes,
                                                            bool first_fit) {
  std::vector<NodeFit> out;
  KPLACE_RETURN_IF_ERROR(WalkFilter(pod, nodes, first_fit, &out).status());
  return out;
}

absl::StatusOr<std::optional<std::string>> CycleScheduler::FirstFit(const Pod& pod, const std::vector<std::string>& nodes) {
  KPLACE_ASSIGN_OR_RETURN(std::string fit, WalkFilter(pod, nodes, true, nullptr));
  if (fit.empty()) return std::optional<std::string>();
  return std::optional<std::string>(std::move(fit));
}

absl::StatusOr<std::string> CycleScheduler::WalkFilter(const Pod& pod, const std::vector<std::string>& nodes,
                                                       bool first_fit, std::vector<NodeFit>* out) {
  KPLACE_ASSIGN_OR_RETURN(const size_t ev_index, PendingProfile(pod));
  std::vector<NodeIndex> rows;
  if (nodes.empty()) {  // every node in scan order: no name to look up
    rows.assign(state_.order().begin(), state_.order().end());
  } else {
    rows.reserve(nodes.size());
    for (size_t k = 0; k < nodes.size(); ++k) {
      const NodeIndex i = state_.Row(nodes[k]);
      if (i == engine::kNoId) return absl::InvalidArgumentError(StrCat("nodes[", k, "]: Node ", nodes[k], " is not in the cluster"));
      rows.push_back(i);
    }
  }
  auto name = [&](size_t k) -> const std::string& {
    return nodes.empty() ? state_.objects().nodes[rows[k]].meta.name : nodes[k];
  };
  const OnOneThread serial(!options_.reference && options_.backend == engine::Backend::kOmp);
  if (!batches_.empty()) RestartBatch(ev_index);  // the evaluator takes this pod: a run starts again
  Evaluator* ev = evaluators_[ev_index].get();
  const Evaluator::PreFilterOutcome pre = ev->PreFilter(pod);
  if (!pre.status.IsSuccess()) {
    if (!out) return std::string();
    const std::string plugin = pre.rejectors.empty() ? "" : pre.rejectors[0];
    out->reserve(rows.size());
    for (size_t k = 0; k < rows.size(); ++k) out->push_back(NodeFit{name(k), pre.status, plugin});
    return std::string();
  }
  auto allowed = [&](NodeIndex i) {
    return !pre.restricted || std::binary_search(pre.allowed.begin(), pre.allowed.end(), i);
  };
  std::vector<NodeIndex> candidates;
  for (NodeIndex i : rows) {
    if (allowed(i)) candidates.push_back(i);
  }
  if (!candidates.empty()) {
    ev->BeginScan(&candidates, 0, first_fit ? 1 : static_cast<int32_t>(candidates.size()),
                  state_.snapshot() ? state_.snapshot()->num_nodes() : 0);
  }
  std::unique_ptr<ReferenceDryRunHost> host;
  const std::vector<bool> nominated_on = NominatedFor(pod);
  if (out) out->reserve(first_fit ? 1 : rows.size());
  for (size_t k = 0; k < rows.size(); ++k) {
    if (!out) {  // the first fit only: a node's verdict key answers without its status
      if (!allowed(rows[k])) continue;
      const int64_t key = nominated_on.empty() || !nominated_on[rows[k]] ? ev->VerdictKey(rows[k]) : -1;
      if (key > 0) continue;
      std::string plugin;
      if (key == 0 || NodeStatus(pod, ev, ev_index, nominated_on, &host, rows[k], &plugin).IsSuccess()) return name(k);
      continue;
    }
    NodeFit fit{name(k), PluginStatus::Success(), ""};
    if (!allowed(rows[k])) {
      fit.status = PluginStatus::Make(Code::kUnschedulableAndUnresolvable, pre.absent_reason);
    } else {
      fit.status = NodeStatus(pod, ev, ev_index, nominated_on, &host, rows[k], &fit.plugin);
    }
    if (fit.status.IsSuccess()) fit.plugin.clear();
    const bool fits = fit.status.IsSuccess();
    out->push_back(std::move(fit));
    if (first_fit && fits) return out->back().node;
  }
  return std::string();
}

}  // namespace kplace::cycle
