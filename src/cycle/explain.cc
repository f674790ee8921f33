// What `kplace explain` adds to a cycle: each visited node's scores and the amounts behind
// its resource reasons, filled only when the scheduler explains.
#include <algorithm>
#include <map>
#include <string>
#include <vector>

#include "cycle_scheduler.h"
#include "kplace/model/requests.h"

namespace kplace::cycle {

void CycleScheduler::Explain(Explanation& ex, const std::vector<NodeIndex>& feasible, const Evaluator::ScoreOutcome& s) {
  ex.score_skipped = s.skipped;
  for (size_t k = 0; k < feasible.size(); ++k) {
    for (NodeExplanation& ne : ex.nodes) {
      if (ne.node != objects().nodes[feasible[k]].meta.name) continue;
      ne.scored = true;
      ne.total = s.total[k];
      for (size_t p = 0; p < s.raw.size(); ++p) {
        ne.raw.push_back(s.raw[p][k]);
        ne.normalized.push_back(s.normalized[p][k]);
        ne.weighted.push_back(s.normalized[p][k] * ex.weights[p]);
      }
    }
  }
}

// A resource reason ("Insufficient cpu", "Too many pods") gets its amounts: what the pod
// requests, what the node's pods use, what the node has (upstream's InsufficientResource).
// The node's pods are gathered once for every such node: one pass over the pods.
void CycleScheduler::ExplainShortfalls(const Pod& pod, Explanation* ex) const {
  std::vector<NodeExplanation*> short_of;
  std::vector<NodeIndex> rows;
  const bool pod_level = options_.gates.Enabled("PodLevelResources");
  const Resource request = Resource::From(PodRequests(pod, nullptr, pod_level), /*keep_pods=*/false);
  for (NodeExplanation& ne : ex->nodes) {
    if (std::none_of(ne.filter.reasons.begin(), ne.filter.reasons.end(), IsInsufficientReason)) continue;
    short_of.push_back(&ne);
    rows.push_back(state_.Row(ne.node));
  }
  if (short_of.empty()) return;
  std::map<std::string, std::vector<const Pod*>> on;
  for (const Pod* p : state_.PodsOn(rows)) on[p->node_name].push_back(p);
  for (size_t k = 0; k < short_of.size(); ++k) {
    NodeExplanation* ne = short_of[k];
    const NodeResources r = ComputeNodeResources(objects().nodes[rows[k]], on[ne->node], pod_level);
    for (InsufficientResource& x : InsufficientResources(request, r, nullptr)) {
      const std::string reason = InsufficientReason(x);
      if (std::find(ne->filter.reasons.begin(), ne->filter.reasons.end(), reason) != ne->filter.reasons.end()) {
        ne->insufficient.push_back(std::move(x));
      }
    }
  }
}

}  // namespace kplace::cycle
