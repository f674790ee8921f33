#include "evaluator.h"

#include <algorithm>
#include <chrono>
#include <iterator>
#include <optional>
#include <utility>

#include "kplace/common/strings.h"

namespace kplace::cycle {

std::string AbsentReason(std::vector<std::string> plugins) {
  std::sort(plugins.begin(), plugins.end());
  std::string out = "node(s) didn't satisfy plugin(s) [";
  for (size_t i = 0; i < plugins.size(); ++i) out += (i ? " " : "") + plugins[i];
  return out + "]";
}

Evaluator::PreFilterOutcome EngineEvaluator::PreFilter(const Pod& pod) {
  pre_ = fw_->PreFilter(pod);
  filtered_ = false;
  scan_ = nullptr;
  ++stamp_;
  PreFilterOutcome out;
  out.status = pre_.status;
  out.restricted = pre_.restricted;
  out.allowed = pre_.allowed;
  if (pre_.restricted) out.absent_reason = AbsentReason(pre_.restricting_plugins);
  out.rejectors = pre_.UnschedulablePlugins();
  return out;
}

void EngineEvaluator::BeginScan(const std::vector<NodeIndex>* candidates, int32_t start, int32_t k, int32_t rows) {
  EnsureRows(rows);
  scan_ = candidates;
  scan_start_ = start;
  scan_pos_ = 0;
  scan_k_ = k;
  scan_visited_ = 0;
  scan_feasible_ = 0;
}

int64_t EngineEvaluator::VerdictKey(NodeIndex i) {
  const int16_t f = FailedPlugin(i);
  if (f == 0) return 0;
  return static_cast<int64_t>(f) << 32 | (chunked_ ? code_[i] : result_.code[i]);
}

PluginStatus EngineEvaluator::FilterNode(NodeIndex i, std::string* plugin) {
  const int16_t f = FailedPlugin(i);
  if (f == 0) return PluginStatus::Success();
  *plugin = fw_->filter_plugins()[f - 1];
  return fw_->Verdict(f - 1, chunked_ ? code_[i] : result_.code[i]);
}

// The 1-based Filter plugin that rejected node `i` (0: feasible), filtering it first.
int16_t EngineEvaluator::FailedPlugin(NodeIndex i) {
  if (chunked_) {
    if (stamped_.size() <= static_cast<size_t>(i) || stamped_[i] != stamp_) FilterChunkAt(i);
    return failed_[i];
  }
  if (!filtered_) {
    result_ = fw_->Filter(pre_);  // every node at once; the cycle reads the ones it visits
    filtered_ = true;
  }
  return result_.failed_plugin[i];
}

Evaluator::ScoreOutcome EngineEvaluator::Score(const std::vector<NodeIndex>& feasible, bool per_plugin) {
  if (!per_plugin) {
    fw_->ScoreTotals(feasible, &totals_);
    return ScoreOutcome{totals_.status, totals_.total, totals_.skipped, {}, {}, totals_.pre_score_seconds};
  }
  engine::ScoreResult r = fw_->Score(feasible);
  return ScoreOutcome{r.status,           std::move(r.total),      std::move(r.skipped),
                      std::move(r.raw),   std::move(r.normalized), r.pre_score_seconds};
}

Evaluator::ScoreOutcome EngineEvaluator::Normalize(const std::vector<std::vector<int64_t>>& raw, const std::vector<bool>& skipped) {
  engine::ScoreResult r;
  fw_->Normalize(raw, skipped, &r);
  return ScoreOutcome{r.status, std::move(r.total), std::move(r.skipped), std::move(r.raw), std::move(r.normalized)};
}

// Filters `i`: with the next nodes of the scan when it is the scan's next unfiltered node
// (as many as the feasible rate so far says are still needed, a little more), else alone
// (a nominated node, a status asked again).
void EngineEvaluator::FilterChunkAt(NodeIndex i) {
  EnsureRows(i + 1);
  chunk_.clear();
  const int32_t m = scan_ ? static_cast<int32_t>(scan_->size()) : 0;
  auto at = [&](int32_t v) {  // scan_start_ < m and v < m: one wrap at most
    const int32_t p = scan_start_ + v;
    return (*scan_)[p >= m ? p - m : p];
  };
  while (scan_pos_ < m && stamped_[at(scan_pos_)] == stamp_) ++scan_pos_;
  if (scan_pos_ < m && at(scan_pos_) == i) {
    const int64_t needed = std::max<int64_t>(1, scan_k_ + 1 - scan_feasible_);  // the (k+1)-th ends the scan
    const double rate = (scan_feasible_ + 1.0) / (scan_visited_ + 1.0);
    const int64_t want = static_cast<int64_t>(needed / std::max(rate, 1.0 / 64) * 1.1) + 8;
    for (; scan_pos_ < m && static_cast<int64_t>(chunk_.size()) < want; ++scan_pos_) {
      const NodeIndex c = at(scan_pos_);
      if (stamped_[c] != stamp_) chunk_.push_back(c);
    }
  } else {
    chunk_.push_back(i);
  }
  fw_->FilterNodes(pre_, chunk_, &listed_);
  for (size_t j = 0; j < chunk_.size(); ++j) {
    const NodeIndex c = chunk_[j];
    stamped_[c] = stamp_;
    failed_[c] = listed_.failed_plugin[j];
    code_[c] = listed_.code[j];
    scan_feasible_ += listed_.failed_plugin[j] == 0;
  }
  scan_visited_ += static_cast<int64_t>(chunk_.size());
}

void EngineEvaluator::EnsureRows(size_t n) {
  if (stamped_.size() >= n) return;
  stamped_.resize(n, 0);
  failed_.resize(n);
  code_.resize(n);
}

absl::Status ReferenceEvaluator::Init(const FeatureGates& gates) {
  for (const std::string& name : profile_.AllPlugins()) {
    auto p = reference::MakePlugin(name, profile_.args, gates);
    if (!p.ok()) return absl::InvalidArgumentError(StrCat("profile \"", profile_.scheduler_name, "\": ", std::string(p.status().message())));
    plugins_[name] = std::move(*p);
  }
  return absl::OkStatus();
}

Evaluator::PreFilterOutcome ReferenceEvaluator::PreFilter(const Pod& pod) {
  pod_ = &pod;
  cycle_ = reference::CycleState();
  skip_filter_.clear();
  PreFilterOutcome out;
  std::vector<std::string> restricting;
  std::string failed;  // the last plugin that returned Unschedulable
  std::optional<std::set<std::string>> names;
  for (const std::string& name : profile_.pre_filter) {
    reference::NodeNameSet nodes;
    PluginStatus s = plugins_[name]->PreFilter(cycle_, pod, *state_, &nodes);
    if (s.IsSkip()) {
      skip_filter_.insert(name);
      continue;
    }
    if (s.code == Code::kUnschedulableAndUnresolvable) {
      out.status = s;
      out.rejectors = {name};
      return out;
    }
    if (s.code == Code::kUnschedulable) {
      out.status = s;
      failed = name;
      continue;
    }
    if (!s.IsSuccess()) {
      out.status = s.refused ? s : PluginStatus::Error(StrCat("running PreFilter plugin \"", name, "\": ", s.Message()));
      return out;
    }
    if (nodes) {
      restricting.push_back(name);
      if (!names) {
        names = *nodes;
      } else {
        std::set<std::string> both;
        std::set_intersection(names->begin(), names->end(), nodes->begin(), nodes->end(),
                              std::inserter(both, both.begin()));
        names = both;
      }
      if (names->empty()) {
        std::vector<std::string> sorted = restricting;
        std::sort(sorted.begin(), sorted.end());
        out.status = PluginStatus::Make(Code::kUnschedulableAndUnresolvable,
                                        sorted.size() == 1 ? "node(s) didn't satisfy plugin " + sorted[0]
                                                           : AbsentReason(sorted) + " simultaneously");
        out.rejectors = restricting;
        return out;
      }
    }
  }
  out.rejectors = restricting;
  if (!failed.empty()) out.rejectors.push_back(failed);
  if (names) {
    out.restricted = true;
    out.absent_reason = AbsentReason(restricting);
    for (size_t i = 0; i < state_->nodes.size(); ++i) {
      if (names->count(state_->nodes[i].node->meta.name)) out.allowed.push_back(static_cast<NodeIndex>(i));
    }
  }
  return out;
}

PluginStatus ReferenceEvaluator::FilterNode(NodeIndex i, std::string* plugin) {
  for (const std::string& name : profile_.filter) {
    if (skip_filter_.count(name)) continue;
    PluginStatus s = plugins_[name]->Filter(cycle_, *pod_, state_->nodes[i], *state_);
    if (s.IsSuccess()) continue;
    *plugin = name;
    if (!s.IsRejected() && !s.refused) return PluginStatus::Error(StrCat("running \"", name, "\" filter plugin: ", s.Message()));
    return s;
  }
  return PluginStatus::Success();
}

Evaluator::ScoreOutcome ReferenceEvaluator::Score(const std::vector<NodeIndex>& feasible, bool /*per_plugin*/) {
  ScoreOutcome out;
  std::vector<const reference::NodeInfo*> nodes;
  for (NodeIndex i : feasible) nodes.push_back(&state_->nodes[i]);
  std::set<std::string> skipped;
  const auto pre_score_start = std::chrono::steady_clock::now();
  for (const std::string& name : profile_.pre_score) {
    PluginStatus s = plugins_[name]->PreScore(cycle_, *pod_, nodes, *state_);
    if (s.IsSkip()) {
      skipped.insert(name);
    } else if (!s.IsSuccess()) {
      out.status = PluginStatus::Error(StrCat("running PreScore plugin \"", name, "\": ", s.Message()));
      return out;
    }
  }
  out.pre_score_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - pre_score_start).count();
  out.total.assign(feasible.size(), 0);
  for (const WeightedPlugin& w : profile_.score) {
    bool skip = skipped.count(w.name) > 0;
    out.skipped.push_back(skip);
    std::vector<int64_t> raw(feasible.size(), 0);
    if (!skip) {
      for (size_t k = 0; k < nodes.size(); ++k) plugins_[w.name]->Score(cycle_, *pod_, *nodes[k], *state_, &raw[k]);
    }
    std::vector<int64_t> normalized = raw;
    if (!skip) plugins_[w.name]->NormalizeScore(cycle_, *pod_, normalized);
    for (size_t k = 0; k < normalized.size(); ++k) out.total[k] += w.weight * normalized[k];
    out.raw.push_back(std::move(raw));
    out.normalized.push_back(std::move(normalized));
  }
  return out;
}

Evaluator::ScoreOutcome ReferenceEvaluator::Normalize(const std::vector<std::vector<int64_t>>& raw, const std::vector<bool>& skipped) {
  ScoreOutcome out;
  out.skipped = skipped;
  out.raw = raw;
  const size_t count = raw.empty() ? 0 : raw[0].size();
  out.total.assign(count, 0);
  for (size_t p = 0; p < profile_.score.size(); ++p) {
    std::vector<int64_t> normalized = skipped[p] ? std::vector<int64_t>(count, 0) : raw[p];
    if (!skipped[p]) plugins_[profile_.score[p].name]->NormalizeScore(cycle_, *pod_, normalized);
    for (size_t k = 0; k < count; ++k) out.total[k] += profile_.score[p].weight * normalized[k];
    out.normalized.push_back(std::move(normalized));
  }
  return out;
}

std::vector<ReferenceDryRunHost::Named> ReferenceEvaluator::Plugins(const std::vector<std::string>& names) {
  std::vector<ReferenceDryRunHost::Named> out;
  for (const std::string& name : names) out.emplace_back(name, plugins_[name].get());
  return out;
}

void ReferenceEvaluator::Reserve(const Pod& pod, NodeIndex host) {
  if (pod_ != &pod) return;
  for (const std::string& name : profile_.AllPlugins()) plugins_[name]->Reserve(cycle_, pod, state_->nodes[host], *state_);
}

}  // namespace kplace::cycle
