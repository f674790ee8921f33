#include "kplace/cycle/placement_json.h"

#include <algorithm>
#include <limits>

#include "kplace/cycle/preemption.h"

namespace kplace::cycle {

using json = nlohmann::json;

namespace {

constexpr char kPassed[] = "passed";    // the simulator's PassedFilterMessage
constexpr char kSuccess[] = "success";  // its SuccessMessage

// The profile's plugins that implement configuration point `point` (PluginConfigPoints).
std::vector<std::string> PluginsAt(const Profile& profile, unsigned point) {
  std::vector<std::string> out;
  for (const std::string& name : profile.AllPlugins()) {
    if (PluginConfigPoints(name) & point) out.push_back(name);
  }
  return out;
}

json Each(const std::vector<std::string>& plugins, const std::string& value) {
  json m = json::object();
  for (const std::string& name : plugins) m[name] = value;
  return m;
}

// The filter plugins run on one node, in order: each passed up to the one that rejected.
json FilterVerdicts(const std::vector<std::string>& filter, const NodeExplanation* n) {
  json verdicts = json::object();
  for (const std::string& plugin : filter) {
    if (n && plugin == n->filter_plugin) {
      verdicts[plugin] = n->filter.Message();
      break;
    }
    verdicts[plugin] = kPassed;
  }
  return verdicts;
}

// Whether PreFilter ended the cycle: no node was visited, and the rejecting plugins are recorded.
bool RejectedAtPreFilter(const Placement& p) {
  return p.node.empty() && p.explanation->nodes.empty() && !p.unschedulable_plugins.empty();
}

// PreFilter's message inside FitError's text, "0/N nodes are available: <message>.", which
// the PostFilter plugins' message may follow after a space.
std::string PreFilterMessage(const Placement& p) {
  std::string m = p.message;
  if (!p.post_filter_message.empty() && m.size() > p.post_filter_message.size()) {
    m.resize(m.size() - p.post_filter_message.size() - 1);
  }
  size_t colon = m.find(": ");
  if (colon != std::string::npos) m = m.substr(colon + 2);
  if (!m.empty() && m.back() == '.') m.pop_back();
  return m;
}

json PreFilterStatuses(const Placement& p, const Profile& profile) {
  json statuses = json::object();
  const bool rejected_here = RejectedAtPreFilter(p);
  for (const std::string& plugin : profile.pre_filter) {
    const bool rejected = rejected_here && std::binary_search(p.unschedulable_plugins.begin(),
                                                              p.unschedulable_plugins.end(), plugin);
    statuses[plugin] = rejected ? PreFilterMessage(p) : kSuccess;
    // UnschedulableAndUnresolvable ends PreFilter at once; Unschedulable lets the rest run.
    if (rejected && p.code == Code::kUnschedulableAndUnresolvable) break;
  }
  return statuses;
}

bool ScoreSkipped(const Explanation& ex, const std::string& plugin) {
  for (size_t k = 0; k < ex.score_plugins.size(); ++k) {
    if (ex.score_plugins[k] == plugin) return ex.score_skipped.size() > k && ex.score_skipped[k];
  }
  return false;
}

}  // namespace

std::string GoMarshal(const json& j) {
  const std::string s = j.dump(-1, ' ', false, json::error_handler_t::replace);
  std::string out;
  out.reserve(s.size());
  for (size_t i = 0; i < s.size(); ++i) {
    const char c = s[i];
    if (c == '<' || c == '>' || c == '&') {
      out += c == '<' ? "\\u003c" : c == '>' ? "\\u003e" : "\\u0026";
    } else if (c == '\xe2' && i + 2 < s.size() && s[i + 1] == '\x80' && (s[i + 2] == '\xa8' || s[i + 2] == '\xa9')) {
      out += s[i + 2] == '\xa8' ? "\\u2028" : "\\u2029";
      i += 2;
    } else {
      out += c;
    }
  }
  return out;
}

json Annotations(const Placement& p, const Profile& profile) {
  const Explanation& ex = *p.explanation;
  json filter = json::object(), post_filter = json::object(), pre_score = json::object(), score = json::object(),
       final_score = json::object();
  bool scored = false;
  for (const NodeExplanation& n : ex.nodes) {
    filter[n.node] = FilterVerdicts(profile.filter, &n);
    // PostFilter sees every node a filter rejected; the nominated one is marked.
    if (p.preemption && !n.filter_plugin.empty()) {
      json& marks = post_filter[n.node] = json::object();
      if (n.node == p.preemption->nominated_node) marks["DefaultPreemption"] = "preemption victim";
    }
    if (!n.scored) continue;
    scored = true;
    json raw = json::object(), weighted = json::object();
    for (size_t k = 0; k < ex.score_plugins.size(); ++k) {
      if (ex.score_skipped.size() > k && ex.score_skipped[k]) continue;
      raw[ex.score_plugins[k]] = std::to_string(n.raw[k]);
      weighted[ex.score_plugins[k]] = std::to_string(n.weighted[k]);
    }
    score[n.node] = raw;
    final_score[n.node] = weighted;
  }
  // A nominated node that passes is taken before any scan: only it was filtered.
  if (ex.nodes.empty() && !p.node.empty()) filter[p.node] = FilterVerdicts(profile.filter, nullptr);
  // PreScore runs only when there is more than one feasible node to score; a skipping
  // plugin's status (Skip) has no message.
  if (scored && !profile.score.empty()) {
    for (const std::string& plugin : profile.pre_score) pre_score[plugin] = ScoreSkipped(ex, plugin) ? "" : kSuccess;
  }
  // The binding cycle's plugins run only for a placed pod.
  const bool placed = !p.node.empty();
  auto after_placement = [&](unsigned point, const std::string& value) {
    return placed ? Each(PluginsAt(profile, point), value) : json::object();
  };
  const std::string prefix = kAnnotationPrefix;
  return {{prefix + "prefilter-result-status", GoMarshal(PreFilterStatuses(p, profile))},
          // PreFilterResult node sets are not kept by the cycle: none narrows here.
          {prefix + "prefilter-result", "{}"},
          {prefix + "filter-result", GoMarshal(filter)},
          {prefix + "postfilter-result", GoMarshal(post_filter)},
          {prefix + "prescore-result", GoMarshal(pre_score)},
          {prefix + "score-result", GoMarshal(score)},
          {prefix + "finalscore-result", GoMarshal(final_score)},
          {prefix + "reserve-result", GoMarshal(after_placement(kReserveConfigPoint, kSuccess))},
          {prefix + "permit-result", GoMarshal(after_placement(kPermitConfigPoint, kSuccess))},
          {prefix + "permit-result-timeout", GoMarshal(after_placement(kPermitConfigPoint, "0s"))},
          {prefix + "prebind-result", GoMarshal(after_placement(kPreBindConfigPoint, kSuccess))},
          {prefix + "bind-result", GoMarshal(placed ? json{{"DefaultBinder", kSuccess}} : json::object())},
          {prefix + "selected-node", p.node}};
}

std::optional<std::string> ResultHistory(const std::string& previous, const std::vector<json>& attempts) {
  json list = json::parse(previous, nullptr, false);
  if (!list.is_array()) return std::nullopt;
  for (const json& entry : list) {
    if (!entry.is_object() && !entry.is_null()) return std::nullopt;
  }
  for (const json& a : attempts) list.push_back(a);
  // The API server's TotalAnnotationSizeLimitB; newer entries matter more.
  constexpr size_t kLimit = 256 * 1024;
  for (size_t first = 0; first < list.size(); ++first) {
    std::string text = GoMarshal(json(list.begin() + static_cast<std::ptrdiff_t>(first), list.end()));
    if (text.size() <= kLimit) return text;
  }
  return std::nullopt;
}

json PodAnnotations(const Placement& p, const Profile& profile, const std::string& previous_history,
                    const std::vector<json>& attempts) {
  json annotations = Annotations(p, profile);
  auto history = ResultHistory(previous_history, attempts.empty() ? std::vector<json>{annotations} : attempts);
  if (history) annotations[kResultHistoryKey] = *history;
  return annotations;
}

json PlacementJson(const Placement& p, bool explain, const Profile& profile, const std::vector<json>& attempts) {
  json j = {{"pod", p.pod}, {"node", p.node.empty() ? json(nullptr) : json(p.node)}};
  j["status"] = !p.node.empty()      ? "Scheduled"
                : p.gated            ? (p.gating_plugin == "SchedulingGates" ? "SchedulingGated" : "Gated")
                : p.other_scheduler  ? "OtherScheduler"
                : p.code == Code::kError ? "Error"
                                     : "Unschedulable";
  if (!p.message.empty()) j["message"] = p.message;
  if (p.gated && p.gating_plugin != "SchedulingGates") j["gatingPlugin"] = p.gating_plugin;
  j["feasibleNodes"] = p.feasible;
  if (!p.node.empty()) j["score"] = p.score;
  if (p.hinted) j["hinted"] = true;  // OpportunisticBatching's hint: no filter pass, no scores
  if (p.attempts > 1) j["attempts"] = p.attempts;
  if (p.preempted) j["preemptedLater"] = true;
  if (p.pod_group) {  // the group's PodGroupInitiallyScheduled condition after its cycle
    j["podGroup"] = {{"name", p.pod_group->pod_group},
                     {"scheduled", p.pod_group->scheduled},
                     {"reason", p.pod_group->reason},
                     {"message", p.pod_group->message}};
    if (!p.pod_group->victims.empty()) j["podGroup"]["victims"] = p.pod_group->victims;  // its preemption's
  }
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
        // Upstream's InsufficientResource: cpu in millicores, the others in units.
        for (const InsufficientResource& x : n.insufficient) {
          node["filter"]["insufficient"].push_back(
              {{"resource", x.resource}, {"requested", x.requested}, {"used", x.used}, {"capacity", x.capacity}});
        }
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
    j["annotations"] = PodAnnotations(p, profile, "[]", attempts);
  }
  return j;
}

}  // namespace kplace::cycle
