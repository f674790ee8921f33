#include "kplace/conform/runner.h"

#include <algorithm>
#include <exception>
#include <memory>
#include <optional>
#include <set>

#include "kplace/common/status.h"
#include "kplace/common/strings.h"
#include "kplace/config/profile.h"
#include "kplace/engine/framework.h"
#include "kplace/engine/snapshot.h"
#include "kplace/reference/plugin.h"

namespace kplace::conform {
namespace {

using engine::NodeIndex;
using reference::NodeInfo;

// ---- formatting ---------------------------------------------------------------

std::string QuoteList(const std::vector<std::string>& items) {
  std::string out = "[";
  for (size_t i = 0; i < items.size(); ++i) out += StrCat(i ? ", " : "", "\"", items[i], "\"");
  return out + "]";
}

std::string Describe(Code code, const std::vector<std::string>& reasons) {
  return reasons.empty() ? std::string(CodeName(code)) : StrCat(CodeName(code), QuoteList(reasons));
}

std::string Describe(const PluginStatus& s) { return Describe(s.code, s.reasons); }

// ---- comparison ---------------------------------------------------------------

bool ReasonsMatch(const std::vector<std::string>& want, const std::vector<std::string>& got, bool unordered) {
  if (want == got) return true;
  if (!unordered) return false;
  std::vector<std::string> a = want, b = got;
  std::sort(a.begin(), a.end());
  std::sort(b.begin(), b.end());
  return a == b;
}

void CompareStatus(const std::string& what, const StatusExpectation& want, const PluginStatus& got,
                   bool unordered, std::vector<std::string>* diffs) {
  if (want.code != got.code) {
    diffs->push_back(StrCat(what, ": expected ", Describe(want.code, want.reasons), ", got ", Describe(got)));
    return;
  }
  // An empty list means upstream did not assert the reasons (FORMAT.md).
  if (want.reasons.empty() || ReasonsMatch(want.reasons, got.reasons, unordered)) return;
  diffs->push_back(StrCat(what, " reasons: expected ", QuoteList(want.reasons), ", got ", QuoteList(got.reasons)));
}

// Compares per-node scores in the case's node order.
void CompareScores(const Case& c, const std::string& what, const std::map<std::string, int64_t>& want,
                   const std::map<std::string, int64_t>& got, const std::string& why_missing,
                   std::vector<std::string>* diffs) {
  for (const Node& node : c.objects.nodes) {
    const std::string& name = node.meta.name;
    auto w = want.find(name);
    if (w == want.end()) continue;
    auto g = got.find(name);
    if (g == got.end()) {
      diffs->push_back(StrCat(what, " ", name, ": expected ", w->second, ", got no score",
                              why_missing.empty() ? "" : StrCat(" (", why_missing, ")")));
    } else if (g->second != w->second) {
      diffs->push_back(StrCat(what, " ", name, ": expected ", w->second, ", got ", g->second));
    }
  }
}

// ---- helpers shared by both implementations -------------------------------------

// The first status that is not Success wins, as the phase result for several plugins.
void KeepFirstFailure(PluginStatus* kept, const PluginStatus& s) {
  if (kept->IsSuccess() && !s.IsSuccess()) *kept = s;
}

// Upstream's score tests pass the node list they assert on (PodTopologySpread's "3 out
// of 4 nodes are candidates" cases leave the filtered-out node out); with no scores
// asserted, every node.
std::vector<size_t> ScoredNodes(const Case& c) {
  std::vector<size_t> out;
  for (size_t i = 0; i < c.objects.nodes.size(); ++i) {
    if (c.expect.score.empty() || c.expect.score.count(c.objects.nodes[i].meta.name)) out.push_back(i);
  }
  return out;
}

// Highest total wins; the first in node order on ties (upstream samples ties at random,
// the pipeline cases have none).
std::string SelectHost(const std::vector<std::string>& nodes, const std::vector<int64_t>& totals) {
  std::string best;
  int64_t best_score = 0;
  for (size_t j = 0; j < nodes.size(); ++j) {
    if (best.empty() || totals[j] > best_score) {
      best = nodes[j];
      best_score = totals[j];
    }
  }
  return best;
}

std::string CycleFailure(const std::string& phase, const std::string& plugin, const PluginStatus& s) {
  return StrCat(phase, plugin.empty() ? "" : StrCat(" ", plugin), " returned ", Describe(s));
}

// ---- the reference -------------------------------------------------------------

using ReferencePlugins = std::vector<std::unique_ptr<reference::Plugin>>;

absl::StatusOr<ReferencePlugins> MakeReferencePlugins(const std::vector<std::string>& names, const Case& c) {
  const std::vector<std::string> registered = reference::RegisteredPlugins();
  ReferencePlugins out;
  for (const std::string& name : names) {
    if (!std::binary_search(registered.begin(), registered.end(), name)) {
      return absl::UnavailableError(StrCat("plugin ", name, " is not registered on the reference"));
    }
    auto plugin = reference::MakePlugin(name, c.args, c.gates);
    if (!plugin.ok()) {
      return absl::InvalidArgumentError(
          StrCat("creating reference plugin ", name, ": ", std::string(plugin.status().message())));
    }
    out.push_back(std::move(*plugin));
  }
  return out;
}

bool Implements(const reference::Plugin& p, ExtensionPoint point) { return (p.ExtensionPoints() & point) != 0; }

// Score, then NormalizeScore when the plugin has it, over `nodes`.
absl::Status ReferenceScores(reference::Plugin& p, reference::CycleState& cycle, const Case& c,
                             const std::vector<const NodeInfo*>& nodes, const reference::ClusterState& state,
                             std::vector<int64_t>* raw, std::vector<int64_t>* normalized) {
  raw->assign(nodes.size(), 0);
  if (Implements(p, kScorePoint)) {
    for (size_t j = 0; j < nodes.size(); ++j) {
      PluginStatus s = p.Score(cycle, c.pod, *nodes[j], state, &(*raw)[j]);
      if (!s.IsSuccess()) {
        return absl::AbortedError(
            StrCat("Score of ", p.Name(), " on ", nodes[j]->node->meta.name, " returned ", Describe(s)));
      }
    }
  }
  *normalized = *raw;
  if (Implements(p, kNormalizeScorePoint)) {
    PluginStatus s = p.NormalizeScore(cycle, c.pod, *normalized);
    if (!s.IsSuccess()) return absl::AbortedError(StrCat("NormalizeScore of ", p.Name(), " returned ", Describe(s)));
  }
  return absl::OkStatus();
}

// Each asserted phase on its own, as the upstream plugin tests call them.
absl::StatusOr<Observed> ObserveReferencePlugins(const Case& c) {
  KPLACE_ASSIGN_OR_RETURN(ReferencePlugins plugins, MakeReferencePlugins(c.plugins, c));
  const reference::ClusterState state = reference::MakeClusterState(c.objects, c.gates);
  reference::CycleState cycle;  // one per case, as one test's cycle
  const Expectations& e = c.expect;
  Observed got;

  if (e.pre_filter || !e.filter.empty()) {
    std::optional<std::set<std::string>> allowed;
    for (auto& p : plugins) {
      if (!Implements(*p, kPreFilterPoint)) continue;
      reference::NodeNameSet nodes;
      KeepFirstFailure(&got.pre_filter, p->PreFilter(cycle, c.pod, state, &nodes));
      if (!nodes) continue;
      if (!allowed) {
        allowed = *nodes;
      } else {
        std::set<std::string> both;
        std::set_intersection(allowed->begin(), allowed->end(), nodes->begin(), nodes->end(),
                              std::inserter(both, both.end()));
        allowed = std::move(both);
      }
    }
    got.pre_filter_restricts = allowed.has_value();
    if (allowed) got.pre_filter_nodes.assign(allowed->begin(), allowed->end());
    // Upstream's filter tests call Filter on every node whatever PreFilter said.
    for (const NodeInfo& info : state.nodes) {
      PluginStatus& out = got.filter[info.node->meta.name];
      for (auto& p : plugins) {
        if (!Implements(*p, kFilterPoint)) continue;
        PluginStatus s = p->Filter(cycle, c.pod, info, state);
        if (!s.IsSuccess()) {
          out = std::move(s);
          break;
        }
      }
    }
  }

  if (e.pre_score || !e.score.empty()) {
    std::vector<const NodeInfo*> scored;
    for (size_t i : ScoredNodes(c)) scored.push_back(&state.nodes[i]);
    std::vector<bool> skipped(plugins.size(), false);
    for (size_t k = 0; k < plugins.size(); ++k) {
      if (!Implements(*plugins[k], kPreScorePoint)) continue;
      PluginStatus s = plugins[k]->PreScore(cycle, c.pod, scored, state);
      KeepFirstFailure(&got.pre_score, s);
      if (s.IsSkip()) {
        skipped[k] = true;  // the framework leaves the plugin out of scoring: 0
      } else if (!s.IsSuccess() && got.score_error.empty()) {
        got.score_error = CycleFailure("PreScore", plugins[k]->Name(), s);
      }
    }
    if (!e.score.empty() && got.score_error.empty()) {
      std::vector<int64_t> sum(scored.size(), 0), raw, normalized;
      absl::Status failed;
      for (size_t k = 0; k < plugins.size() && failed.ok(); ++k) {
        if (skipped[k]) continue;
        failed = ReferenceScores(*plugins[k], cycle, c, scored, state, &raw, &normalized);
        const std::vector<int64_t>& stage = e.score_stage == ScoreStage::kRaw ? raw : normalized;
        // Single-plugin profiles weigh every plugin 1, so weighted == normalized summed.
        for (size_t j = 0; j < scored.size() && failed.ok(); ++j) sum[j] += stage[j];
      }
      if (!failed.ok()) {
        got.score_error = std::string(failed.message());
      } else {
        for (size_t j = 0; j < scored.size(); ++j) got.score[scored[j]->node->meta.name] = sum[j];
      }
    }
  }
  return got;
}

}  // namespace

// Framework semantics of cycle-and-config.md §3.2–3.6. Every node is searched: the
// pipeline clusters are far below the 100-node floor of numFeasibleNodesToFind.
absl::StatusOr<Observed> ObserveReferenceCycle(const Case& c, const Profile& profile) {
  const std::vector<std::string> names = profile.AllPlugins();
  KPLACE_ASSIGN_OR_RETURN(ReferencePlugins made, MakeReferencePlugins(names, c));
  std::map<std::string, reference::Plugin*> plugin;
  for (size_t i = 0; i < names.size(); ++i) plugin[names[i]] = made[i].get();
  const reference::ClusterState state = reference::MakeClusterState(c.objects, c.gates);
  reference::CycleState cycle;
  Observed got;

  std::set<std::string> skip_filter;
  std::optional<std::set<std::string>> allowed;
  std::vector<std::string> restricting;
  for (const std::string& name : profile.pre_filter) {
    reference::NodeNameSet nodes;
    PluginStatus s = plugin[name]->PreFilter(cycle, c.pod, state, &nodes);
    if (s.IsSkip()) {
      skip_filter.insert(name);
      continue;
    }
    if (s.code == Code::kUnschedulable) {
      got.cycle_error = CycleFailure("PreFilter", name, s);
      continue;  // remembered (a later one replaces it); the other PreFilter plugins still run
    }
    if (!s.IsSuccess()) {
      got.cycle_error = CycleFailure("PreFilter", name, s);
      return got;
    }
    if (!nodes) continue;
    restricting.push_back(name);
    if (!allowed) {
      allowed = *nodes;
    } else {
      std::set<std::string> both;
      std::set_intersection(allowed->begin(), allowed->end(), nodes->begin(), nodes->end(),
                            std::inserter(both, both.end()));
      allowed = std::move(both);
    }
    if (allowed->empty()) {
      got.cycle_error = StrCat("PreFilter: no node satisfies ", QuoteList(restricting));
      return got;
    }
  }
  if (!got.cycle_error.empty()) return got;

  std::vector<const NodeInfo*> feasible;
  std::vector<std::string> feasible_names;
  for (const NodeInfo& info : state.nodes) {
    if (allowed && !allowed->count(info.node->meta.name)) continue;
    bool passed = true;
    for (const std::string& name : profile.filter) {
      if (skip_filter.count(name)) continue;
      if (!plugin[name]->Filter(cycle, c.pod, info, state).IsSuccess()) {
        passed = false;  // the first failure decides the node
        break;
      }
    }
    if (passed) {
      feasible.push_back(&info);
      feasible_names.push_back(info.node->meta.name);
    }
  }
  if (feasible.empty()) {
    got.cycle_error = "no node passed Filter";
    return got;
  }

  std::set<std::string> skip_score;
  for (const std::string& name : profile.pre_score) {
    PluginStatus s = plugin[name]->PreScore(cycle, c.pod, feasible, state);
    if (s.IsSkip()) {
      skip_score.insert(name);
    } else if (!s.IsSuccess()) {
      got.cycle_error = CycleFailure("PreScore", name, s);
      return got;
    }
  }

  std::vector<int64_t> totals(feasible.size(), 0), raw, normalized;
  for (const WeightedPlugin& w : profile.score) {
    std::map<std::string, int64_t>& out = got.plugin_scores[w.name];
    if (skip_score.count(w.name)) {
      for (const std::string& n : feasible_names) out[n] = 0;
      continue;
    }
    absl::Status s = ReferenceScores(*plugin[w.name], cycle, c, feasible, state, &raw, &normalized);
    if (!s.ok()) {
      got.cycle_error = std::string(s.message());
      return got;
    }
    for (size_t j = 0; j < feasible.size(); ++j) {
      if (normalized[j] < kMinNodeScore || normalized[j] > kMaxNodeScore) {
        got.cycle_error = StrCat("plugin ", w.name, " returns an invalid score ", normalized[j]);
        return got;
      }
      out[feasible_names[j]] = normalized[j];
      totals[j] += w.weight * normalized[j];
    }
  }
  for (size_t j = 0; j < feasible.size(); ++j) got.final_score[feasible_names[j]] = totals[j];
  got.selected = SelectHost(feasible_names, totals);
  return got;
}

namespace {

// ---- the engine -----------------------------------------------------------------

absl::Status CheckEngineHas(engine::Backend backend, const std::vector<std::string>& names) {
  const std::vector<std::string> built = engine::RegisteredPlugins(backend);
  for (const std::string& name : names) {
    if (PluginExtensionPoints(name) == 0) {
      return absl::UnavailableError(StrCat("plugin ", name, " is not an in-tree plugin the engine knows"));
    }
    if (!std::binary_search(built.begin(), built.end(), name)) {
      return absl::UnavailableError(
          StrCat("plugin ", name, " is not built for the ", engine::BackendName(backend), " backend"));
    }
  }
  return absl::OkStatus();
}

// `plugins`: the names to check, which for single plugins are the case's own (a profile
// silently drops names it does not know).
absl::StatusOr<std::unique_ptr<engine::Framework>> CreateFramework(engine::Backend backend, Profile profile,
                                                                   const std::vector<std::string>& plugins,
                                                                   const Case& c) {
  profile.args = c.args;
  KPLACE_RETURN_IF_ERROR(CheckEngineHas(backend, plugins));
  std::string error;
  auto fw = engine::Framework::Create(backend, profile, c.gates, &error);
  if (!fw) return absl::InvalidArgumentError(StrCat("creating the ", engine::BackendName(backend), " framework: ", error));
  return fw;
}

absl::StatusOr<Observed> ObserveEnginePlugins(const Case& c, engine::Backend backend) {
  KPLACE_ASSIGN_OR_RETURN(std::unique_ptr<engine::Framework> fw,
                          CreateFramework(backend, SinglePluginsProfile(c.plugins), c.plugins, c));
  engine::Snapshot snapshot(c.objects, c.gates);
  fw->Prepare(snapshot);
  const Expectations& e = c.expect;
  Observed got;

  // Engine plugins compile the pod at PreFilter, so it runs whatever is asserted.
  std::optional<std::vector<std::string>> allowed;  // by name, as upstream's PreFilterResult
  for (const engine::PluginPreFilter& one : fw->PreFilterEach(c.pod)) {
    KeepFirstFailure(&got.pre_filter, one.status);
    if (!one.restricts) continue;
    if (!allowed) {
      allowed = one.names;
    } else {
      std::vector<std::string> both;
      std::set_intersection(allowed->begin(), allowed->end(), one.names.begin(), one.names.end(),
                            std::back_inserter(both));
      allowed = std::move(both);
    }
  }
  got.pre_filter_restricts = allowed.has_value();
  if (allowed) got.pre_filter_nodes = *allowed;

  if (!e.filter.empty()) {
    const std::vector<std::vector<engine::VerdictCode>> codes = fw->FilterEach();
    for (NodeIndex i = 0; i < snapshot.num_nodes(); ++i) {
      PluginStatus& out = got.filter[snapshot.node(i).meta.name];
      for (size_t f = 0; f < codes.size(); ++f) {
        if (codes[f][i] != 0) {
          out = fw->Verdict(static_cast<int>(f), codes[f][i]);
          break;
        }
      }
    }
  }

  if (e.pre_score || !e.score.empty()) {
    std::vector<NodeIndex> scored;
    for (size_t i : ScoredNodes(c)) scored.push_back(static_cast<NodeIndex>(i));
    const engine::ScoreResult r = fw->Score(scored);
    for (const PluginStatus& s : r.pre_score_status) KeepFirstFailure(&got.pre_score, s);
    if (!r.status.IsSuccess()) {
      got.score_error = r.status.Message();
    } else if (!e.score.empty()) {
      for (size_t j = 0; j < scored.size(); ++j) {
        int64_t sum = 0;
        if (e.score_stage == ScoreStage::kWeighted) {
          sum = r.total[j];
        } else {
          const auto& stage = e.score_stage == ScoreStage::kRaw ? r.raw : r.normalized;
          for (const auto& plugin_scores : stage) sum += plugin_scores[j];
        }
        got.score[snapshot.node(scored[j]).meta.name] = sum;
      }
    }
  }
  return got;
}

}  // namespace

absl::StatusOr<Observed> ObserveEngineCycle(const Case& c, engine::Backend backend, const Profile& profile) {
  KPLACE_ASSIGN_OR_RETURN(std::unique_ptr<engine::Framework> fw,
                          CreateFramework(backend, profile, profile.AllPlugins(), c));
  engine::Snapshot snapshot(c.objects, c.gates);
  fw->Prepare(snapshot);
  Observed got;

  const engine::PreFilterResult pre = fw->PreFilter(c.pod);
  if (!pre.status.IsSuccess()) {
    got.cycle_error = CycleFailure("PreFilter", pre.failed_plugin, pre.status);
    return got;
  }
  const engine::FilterResult filtered = fw->Filter(pre);
  std::vector<NodeIndex> feasible;
  std::vector<std::string> feasible_names;
  for (NodeIndex i = 0; i < snapshot.num_nodes(); ++i) {
    if (filtered.failed_plugin[i] != 0) continue;
    if (pre.restricted && !std::binary_search(pre.allowed.begin(), pre.allowed.end(), i)) continue;
    feasible.push_back(i);
    feasible_names.push_back(snapshot.node(i).meta.name);
  }
  if (feasible.empty()) {
    got.cycle_error = "no node passed Filter";
    return got;
  }
  const engine::ScoreResult r = fw->Score(feasible);
  if (!r.status.IsSuccess()) {
    got.cycle_error = r.status.Message();
    return got;
  }
  for (size_t k = 0; k < profile.score.size(); ++k) {
    for (size_t j = 0; j < feasible.size(); ++j) {
      got.plugin_scores[profile.score[k].name][feasible_names[j]] = r.normalized[k][j];
    }
  }
  for (size_t j = 0; j < feasible.size(); ++j) got.final_score[feasible_names[j]] = r.total[j];
  got.selected = SelectHost(feasible_names, r.total);
  return got;
}

std::string CaseResult::Summary(bool all_diffs) const {
  if (outcome == Outcome::kSkipped) return StrCat("skipped: ", why);
  if (outcome == Outcome::kPass) return "ok";
  if (diffs.empty()) return why;
  if (!all_diffs) {
    return diffs.size() == 1 ? diffs[0] : StrCat(diffs[0], " (+", diffs.size() - 1, " more)");
  }
  std::string out;
  for (size_t i = 0; i < diffs.size(); ++i) out += StrCat(i ? "; " : "", diffs[i]);
  return out;
}

CaseResult Compare(const Case& c, const Observed& got) {
  const Expectations& e = c.expect;
  CaseResult result;
  std::vector<std::string>& diffs = result.diffs;

  if (e.pre_filter) {
    CompareStatus("preFilter", e.pre_filter->status, got.pre_filter, /*unordered=*/false, &diffs);
    if (e.pre_filter->node_names_asserted) {
      const auto& want = e.pre_filter->node_names;
      if (!want && got.pre_filter_restricts) {
        diffs.push_back(StrCat("preFilter nodeNames: expected all nodes, got ", QuoteList(got.pre_filter_nodes)));
      } else if (want && !got.pre_filter_restricts) {
        diffs.push_back(StrCat("preFilter nodeNames: expected ", QuoteList(*want), ", got all nodes"));
      } else if (want && *want != got.pre_filter_nodes) {
        diffs.push_back(StrCat("preFilter nodeNames: expected ", QuoteList(*want), ", got ",
                               QuoteList(got.pre_filter_nodes)));
      }
    }
  }

  // NodeResourcesFit appends extended-resource reasons while ranging over a Go map, so
  // their order in upstream's status is unspecified; everything else keeps its order.
  const bool unordered_filter_reasons =
      std::find(c.plugins.begin(), c.plugins.end(), "NodeResourcesFit") != c.plugins.end();
  for (const Node& node : c.objects.nodes) {
    auto want = e.filter.find(node.meta.name);
    if (want == e.filter.end()) continue;
    auto g = got.filter.find(node.meta.name);
    const std::string what = StrCat("filter ", node.meta.name);
    if (g == got.filter.end()) {
      diffs.push_back(StrCat(what, ": expected ", Describe(want->second.code, want->second.reasons),
                             ", got no verdict"));
    } else {
      CompareStatus(what, want->second, g->second, unordered_filter_reasons, &diffs);
    }
  }

  if (e.pre_score) CompareStatus("preScore", *e.pre_score, got.pre_score, /*unordered=*/false, &diffs);
  if (!e.score.empty()) {
    CompareScores(c, StrCat("score[", ScoreStageName(e.score_stage), "]"), e.score, got.score, got.score_error,
                  &diffs);
  }

  for (const auto& [plugin, want] : e.plugin_scores) {
    auto g = got.plugin_scores.find(plugin);
    if (g == got.plugin_scores.end()) {
      diffs.push_back(StrCat("pluginScores ", plugin, ": expected scores, got none",
                             got.cycle_error.empty() ? " (not a Score plugin of the profile)"
                                                     : StrCat(" (", got.cycle_error, ")")));
      continue;
    }
    CompareScores(c, StrCat("pluginScores ", plugin), want, g->second, got.cycle_error, &diffs);
  }
  if (!e.final_score.empty()) CompareScores(c, "finalScore", e.final_score, got.final_score, got.cycle_error, &diffs);
  if (e.selected && *e.selected != got.selected) {
    diffs.push_back(StrCat("selected: expected ", *e.selected, ", got ",
                           got.selected.empty() ? StrCat("none (", got.cycle_error, ")") : got.selected));
  }

  result.outcome = diffs.empty() ? Outcome::kPass : Outcome::kFail;
  return result;
}

absl::StatusOr<Observed> ObserveReference(const Case& c) {
  return c.default_profile ? ObserveReferenceCycle(c, DefaultProfile()) : ObserveReferencePlugins(c);
}

absl::StatusOr<Observed> ObserveEngine(const Case& c, engine::Backend backend) {
  return c.default_profile ? ObserveEngineCycle(c, backend, DefaultProfile()) : ObserveEnginePlugins(c, backend);
}

CaseResult RunCase(const Case& c, const RunOptions& options) {
  CaseResult result;
  absl::StatusOr<Observed> got = absl::UnknownError("not run");
  try {
    if (c.sequence) {
      absl::StatusOr<CaseResult> r = RunSequenceCase(c, options);
      if (r.ok()) return *r;
      got = r.status();
    } else if (c.preemption) {
      absl::StatusOr<CaseResult> r = RunPreemptionCase(c);
      if (r.ok()) return *r;
      got = r.status();
    } else {
      got = options.reference ? ObserveReference(c) : ObserveEngine(c, options.backend);
    }
  } catch (const std::exception& e) {
    // Thrust and plugin code may throw; a case that does fails, the run goes on.
    got = absl::InternalError(StrCat("internal error: ", e.what()));
  }
  if (!got.ok()) {
    result.outcome = absl::IsUnavailable(got.status()) ? Outcome::kSkipped : Outcome::kFail;
    result.why = std::string(got.status().message());
    return result;
  }
  return Compare(c, *got);
}

}  // namespace kplace::conform
