#include "kplace/cycle/placement_json.h"

#include <limits>

#include "kplace/cycle/preemption.h"

namespace kplace::cycle {

using json = nlohmann::json;

// The simulator's per-pod annotations (filter, score, final score, selected node).
json Annotations(const Placement& p, const std::vector<std::string>& filter_plugins) {
  json filter = json::object(), score = json::object(), final_score = json::object();
  const Explanation& ex = *p.explanation;
  for (const NodeExplanation& n : ex.nodes) {
    json verdicts = json::object();
    for (const std::string& plugin : filter_plugins) {
      if (plugin == n.filter_plugin) {
        verdicts[plugin] = n.filter.Message();
        break;
      }
      verdicts[plugin] = "passed";
    }
    filter[n.node] = verdicts;
    if (!n.scored) continue;
    json raw = json::object(), weighted = json::object();
    for (size_t k = 0; k < ex.score_plugins.size(); ++k) {
      if (ex.score_skipped.size() > k && ex.score_skipped[k]) continue;
      raw[ex.score_plugins[k]] = std::to_string(n.raw[k]);
      weighted[ex.score_plugins[k]] = std::to_string(n.weighted[k]);
    }
    score[n.node] = raw;
    final_score[n.node] = weighted;
  }
  std::string prefix = kAnnotationPrefix;
  json a = {{prefix + "filter-result", filter.dump()},
            {prefix + "score-result", score.dump()},
            {prefix + "finalscore-result", final_score.dump()}};
  if (!p.node.empty()) a[prefix + "selected-node"] = p.node;
  return a;
}

json PlacementJson(const Placement& p, bool explain, const std::vector<std::string>& filter_plugins) {
  json j = {{"pod", p.pod}, {"node", p.node.empty() ? json(nullptr) : json(p.node)}};
  j["status"] = !p.node.empty()      ? "Scheduled"
                : p.gated            ? "SchedulingGated"
                : p.other_scheduler  ? "OtherScheduler"
                : p.code == Code::kError ? "Error"
                                     : "Unschedulable";
  if (!p.message.empty()) j["message"] = p.message;
  j["feasibleNodes"] = p.feasible;
  if (!p.node.empty()) j["score"] = p.score;
  if (p.attempts > 1) j["attempts"] = p.attempts;
  if (p.preempted) j["preemptedLater"] = true;
  if (p.preemption && !p.preemption->victims.empty()) {
    j["nominatedNode"] = p.preemption->nominated_node;
    j["victims"] = p.preemption->victims;
  }
  if (explain && p.preemption) {
    json candidates = json::array();
    for (const PreemptionOutcome::Candidate& c : p.preemption->candidates) {
      // The criteria as a person reads them (lower is better for all but the start time).
      json criteria = json::object();
      for (size_t k = 0; k + 1 < c.scores.size(); ++k) criteria[kCandidateCriteria[k]] = -c.scores[k];
      if (!c.scores.empty()) {  // nanoseconds since the epoch; "now" for victims without a start time
        int64_t start = c.scores.back();
        criteria[kCandidateCriteria[c.scores.size() - 1]] =
            start == std::numeric_limits<int64_t>::max() ? json("now") : json(start);
      }
      candidates.push_back({{"node", c.node}, {"victims", c.victims}, {"pdbViolations", c.pdb_violations},
                            {"criteria", criteria}});
    }
    j["postFilter"] = {{"plugin", "DefaultPreemption"},
                       {"candidates", candidates},
                       {"rejected", p.preemption->rejected},
                       {"chosen", p.preemption->nominated_node.empty() ? json(nullptr) : json(p.preemption->nominated_node)}};
    if (p.preemption->candidates.size() > 1) j["postFilter"]["decidedBy"] = p.preemption->decided_by;
  }
  if (explain && p.explanation) {
    json nodes = json::array();
    const Explanation& ex = *p.explanation;
    for (const NodeExplanation& n : ex.nodes) {
      json node = {{"node", n.node}};
      if (!n.filter_plugin.empty()) {
        node["filter"] = {{"plugin", n.filter_plugin}, {"code", CodeName(n.filter.code)}, {"reasons", n.filter.reasons}};
      } else {
        node["filter"] = "passed";
      }
      if (n.scored) {
        json plugins = json::object();
        for (size_t k = 0; k < ex.score_plugins.size(); ++k) {
          plugins[ex.score_plugins[k]] = {{"raw", n.raw[k]},
                                          {"normalized", n.normalized[k]},
                                          {"weight", ex.weights[k]},
                                          {"weighted", n.weighted[k]},
                                          {"skipped", ex.score_skipped.size() > k && ex.score_skipped[k]}};
        }
        node["scores"] = plugins;
        node["finalScore"] = n.total;
      }
      nodes.push_back(node);
    }
    j["nodes"] = nodes;
    j["annotations"] = Annotations(p, filter_plugins);
  }
  return j;
}

}  // namespace kplace::cycle
