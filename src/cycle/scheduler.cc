#include "kplace/cycle/scheduler.h"

#include <algorithm>
#include <deque>
#include <map>
#include <numeric>

#include "kplace/common/strings.h"
#include "kplace/common/status.h"
#include "kplace/cycle/batch.h"
#include "kplace/cycle/node_order.h"
#include "kplace/engine/framework.h"
#include "kplace/engine/snapshot.h"
#include "kplace/model/decode.h"
#include "kplace/reference/plugin.h"

namespace kplace::cycle {
namespace {

using engine::NodeIndex;

// What the cycle needs from a profile's plugins; one per profile, on the engine or the
// reference. Node indices are snapshot (input) order.
class Evaluator {
 public:
  struct PreFilterOutcome {
    PluginStatus status;
    bool restricted = false;
    std::vector<NodeIndex> allowed;  // sorted
    std::string absent_reason;       // "node(s) didn't satisfy plugin(s) [...]"
  };
  struct ScoreOutcome {
    PluginStatus status;
    std::vector<int64_t> total;
    std::vector<bool> skipped;
    std::vector<std::vector<int64_t>> raw, normalized;  // [plugin][k]
  };

  virtual ~Evaluator() = default;
  virtual const Profile& profile() const = 0;
  virtual PreFilterOutcome PreFilter(const Pod& pod) = 0;
  /** The status of node `i` for the current pod (Success when feasible); sets `plugin`. */
  virtual PluginStatus FilterNode(NodeIndex i, std::string* plugin) = 0;
  virtual ScoreOutcome Score(const std::vector<NodeIndex>& feasible) = 0;
};

std::string AbsentReason(std::vector<std::string> plugins) {
  std::sort(plugins.begin(), plugins.end());
  std::string out = "node(s) didn't satisfy plugin(s) [";
  for (size_t i = 0; i < plugins.size(); ++i) out += (i ? " " : "") + plugins[i];
  return out + "]";
}

class EngineEvaluator final : public Evaluator {
 public:
  explicit EngineEvaluator(std::unique_ptr<engine::Framework> fw) : fw_(std::move(fw)) {}
  const Profile& profile() const override { return fw_->profile(); }
  engine::Framework& framework() { return *fw_; }

  PreFilterOutcome PreFilter(const Pod& pod) override {
    pre_ = fw_->PreFilter(pod);
    filtered_ = false;
    PreFilterOutcome out;
    out.status = pre_.status;
    out.restricted = pre_.restricted;
    out.allowed = pre_.allowed;
    if (pre_.restricted) out.absent_reason = AbsentReason(pre_.restricting_plugins);
    return out;
  }

  PluginStatus FilterNode(NodeIndex i, std::string* plugin) override {
    if (!filtered_) {
      result_ = fw_->Filter(pre_);  // every node at once; the cycle reads the ones it visits
      filtered_ = true;
    }
    int16_t f = result_.failed_plugin[i];
    if (f == 0) return PluginStatus::Success();
    *plugin = fw_->filter_plugins()[f - 1];
    return fw_->Verdict(f - 1, result_.code[i]);
  }

  ScoreOutcome Score(const std::vector<NodeIndex>& feasible) override {
    engine::ScoreResult r = fw_->Score(feasible);
    return ScoreOutcome{r.status, r.total, r.skipped, r.raw, r.normalized};
  }

 private:
  std::unique_ptr<engine::Framework> fw_;
  engine::PreFilterResult pre_;
  engine::FilterResult result_;
  bool filtered_ = false;
};

class ReferenceEvaluator final : public Evaluator {
 public:
  ReferenceEvaluator(Profile profile, reference::ClusterState* state) : profile_(std::move(profile)), state_(state) {}

  absl::Status Init(const FeatureGates& gates) {
    for (const std::string& name : profile_.AllPlugins()) {
      auto p = reference::MakePlugin(name, profile_.args, gates);
      if (!p.ok()) return absl::InvalidArgumentError(StrCat("profile \"", profile_.scheduler_name, "\": ", std::string(p.status().message())));
      plugins_[name] = std::move(*p);
    }
    return absl::OkStatus();
  }
  const Profile& profile() const override { return profile_; }

  PreFilterOutcome PreFilter(const Pod& pod) override {
    pod_ = &pod;
    cycle_ = reference::CycleState();
    skip_filter_.clear();
    PreFilterOutcome out;
    std::vector<std::string> restricting;
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
        return out;
      }
      if (s.code == Code::kUnschedulable) {
        out.status = s;
        continue;
      }
      if (!s.IsSuccess()) {
        out.status = PluginStatus::Error(StrCat("running PreFilter plugin \"", name, "\": ", s.Message()));
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
          return out;
        }
      }
    }
    if (names) {
      out.restricted = true;
      out.absent_reason = AbsentReason(restricting);
      for (size_t i = 0; i < state_->nodes.size(); ++i) {
        if (names->count(state_->nodes[i].node->meta.name)) out.allowed.push_back(static_cast<NodeIndex>(i));
      }
    }
    return out;
  }

  PluginStatus FilterNode(NodeIndex i, std::string* plugin) override {
    for (const std::string& name : profile_.filter) {
      if (skip_filter_.count(name)) continue;
      PluginStatus s = plugins_[name]->Filter(cycle_, *pod_, state_->nodes[i], *state_);
      if (s.IsSuccess()) continue;
      *plugin = name;
      if (!s.IsRejected()) return PluginStatus::Error(StrCat("running \"", name, "\" filter plugin: ", s.Message()));
      return s;
    }
    return PluginStatus::Success();
  }

  ScoreOutcome Score(const std::vector<NodeIndex>& feasible) override {
    ScoreOutcome out;
    std::vector<const reference::NodeInfo*> nodes;
    for (NodeIndex i : feasible) nodes.push_back(&state_->nodes[i]);
    std::set<std::string> skipped;
    for (const std::string& name : profile_.pre_score) {
      PluginStatus s = plugins_[name]->PreScore(cycle_, *pod_, nodes, *state_);
      if (s.IsSkip()) {
        skipped.insert(name);
      } else if (!s.IsSuccess()) {
        out.status = PluginStatus::Error(StrCat("running PreScore plugin \"", name, "\": ", s.Message()));
        return out;
      }
    }
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

  /** Reserve on `host` when `pod` is the pod this evaluator just ran a cycle for. */
  void Reserve(const Pod& pod, NodeIndex host) {
    if (pod_ != &pod) return;
    for (const std::string& name : profile_.AllPlugins()) plugins_[name]->Reserve(cycle_, pod, state_->nodes[host], *state_);
  }

 private:
  Profile profile_;
  reference::ClusterState* state_;
  std::map<std::string, std::unique_ptr<reference::Plugin>> plugins_;
  reference::CycleState cycle_;
  std::set<std::string> skip_filter_;
  const Pod* pod_ = nullptr;
};

class CycleScheduler final : public Scheduler {
 public:
  CycleScheduler(const ObjectSet& cluster, const SchedulerConfig& config, const Options& options)
      : cluster_(cluster), config_(config), options_(options), rng_(options.seed) {}

  absl::Status Init() {
    std::vector<const Node*> nodes;
    for (const Node& n : cluster_.nodes) nodes.push_back(&n);
    order_ = ZoneRoundRobinOrder(nodes);
    if (options_.reference) {
      state_ = reference::MakeClusterState(cluster_, options_.gates);
      for (const Profile& p : config_.profiles) {
        auto e = std::make_unique<ReferenceEvaluator>(p, &state_);
        KPLACE_RETURN_IF_ERROR(e->Init(options_.gates));
        evaluators_.push_back(std::move(e));
      }
    } else {
      snapshot_ = std::make_unique<engine::Snapshot>(cluster_, options_.gates);
      for (const Profile& p : config_.profiles) {
        std::string error;
        auto fw = engine::Framework::Create(options_.backend, p, options_.gates, &error);
        if (!fw) return absl::InvalidArgumentError(StrCat("profile \"", p.scheduler_name, "\": ", error));
        fw->Prepare(*snapshot_);
        evaluators_.push_back(std::make_unique<EngineEvaluator>(std::move(fw)));
      }
      if (options_.batch > 1 && !options_.explain) {
        for (auto& e : evaluators_) {
          batches_.push_back(std::make_unique<BatchCycle>(&static_cast<EngineEvaluator*>(e.get())->framework(),
                                                          &order_, options_.batch));
        }
      }
    }
    return absl::OkStatus();
  }

  int32_t next_start_index() const override { return next_start_; }

  std::vector<plugins::volume::AssumedVolume> AssumedVolumes() const override {
    return (options_.reference ? *state_.volume_assume : snapshot_->volume_assume_cache()).assumed();
  }

  BatchStats batch_stats() const override {
    BatchStats out;
    for (const auto& b : batches_) b->AddStats(&out);
    return out;
  }

  std::vector<std::string> NodeOrder() const override {
    std::vector<std::string> out;
    for (int32_t i : order_) out.push_back(cluster_.nodes[i].meta.name);
    return out;
  }

  Placement Schedule(const Pod& pod) override {
    Placement out;
    out.pod = ObjectKey(pod.meta);
    Evaluator* ev = nullptr;
    size_t ev_index = 0;
    for (size_t e = 0; e < evaluators_.size(); ++e) {
      if (evaluators_[e]->profile().scheduler_name == pod.scheduler_name) {
        ev = evaluators_[e].get();
        ev_index = e;
      }
    }
    if (!ev) {
      out.code = Code::kUnschedulableAndUnresolvable;
      out.message = StrCat("no profile for schedulerName \"", pod.scheduler_name, "\"");
      return out;
    }
    const int32_t n = static_cast<int32_t>(order_.size());
    if (n == 0) {
      out.code = Code::kUnschedulableAndUnresolvable;
      out.message = "no nodes available to schedule pods";
      return out;
    }
    if (!batches_.empty()) return ScheduleBatched(pod, *batches_[ev_index], ev->profile(), std::move(out));
    std::shared_ptr<Explanation> explain;
    if (options_.explain) {
      explain = std::make_shared<Explanation>();
      for (const WeightedPlugin& w : ev->profile().score) {
        explain->score_plugins.push_back(w.name);
        explain->weights.push_back(w.weight);
      }
      out.explanation = explain;
    }

    Evaluator::PreFilterOutcome pre = ev->PreFilter(pod);
    if (pre.status.code == Code::kError) {
      out.code = Code::kError;
      out.message = pre.status.Message();
      return out;
    }
    if (pre.status.IsRejected()) {
      out.code = pre.status.code;
      out.message = FitErrorMessage(n, pre.status.Message(), {});
      return out;
    }

    // Candidates in scan order: the whole round-robin list, or the PreFilter subset.
    std::vector<NodeIndex> candidates;
    if (pre.restricted) {
      std::vector<bool> allowed(cluster_.nodes.size(), false);
      for (NodeIndex i : pre.allowed) allowed[i] = true;
      for (int32_t i : order_) {
        if (allowed[i]) candidates.push_back(i);
      }
    } else {
      candidates.assign(order_.begin(), order_.end());
    }
    const int32_t m = static_cast<int32_t>(candidates.size());
    const int32_t percentage = ev->profile().percentage_of_nodes_to_score.value_or(config_.percentage_of_nodes_to_score);
    const bool has_score = !ev->profile().score.empty();
    const int32_t k = has_score ? NumFeasibleNodesToFind(percentage, m) : std::min(1, m);

    std::vector<NodeIndex> feasible;
    std::map<std::string, int64_t> reasons;
    int32_t recorded = 0;
    int32_t processed = m;
    for (int32_t v = 0; v < m; ++v) {
      NodeIndex i = candidates[(next_start_ + v) % m];
      std::string plugin;
      PluginStatus s = ev->FilterNode(i, &plugin);
      if (s.code == Code::kError) {
        out.code = Code::kError;
        out.message = s.Message();
        return out;
      }
      if (s.IsSuccess()) {
        if (static_cast<int32_t>(feasible.size()) == k) {  // the (K+1)-th: evaluated, dropped
          processed = v;
          break;
        }
        feasible.push_back(i);
      } else {
        ++recorded;
        for (const std::string& r : s.reasons) ++reasons[r];
      }
      if (explain) {
        NodeExplanation ne;
        ne.node = cluster_.nodes[i].meta.name;
        ne.visited = true;
        ne.filter_plugin = plugin;
        ne.filter = s;
        explain->nodes.push_back(std::move(ne));
      }
    }
    next_start_ = static_cast<int32_t>((static_cast<int64_t>(next_start_) + processed) % n);
    out.feasible = static_cast<int32_t>(feasible.size());

    if (feasible.empty()) {
      if (pre.restricted && !pre.absent_reason.empty()) reasons[pre.absent_reason] += n - recorded;
      out.code = Code::kUnschedulable;
      out.message = FitErrorMessage(n, "", reasons);
      return out;
    }
    size_t chosen = 0;
    if (feasible.size() > 1) {
      Evaluator::ScoreOutcome scores;
      if (has_score) {
        scores = ev->Score(feasible);
        if (scores.status.code == Code::kError) {
          out.code = Code::kError;
          out.message = scores.status.Message();
          return out;
        }
      } else {
        scores.total.assign(feasible.size(), 1);
      }
      chosen = options_.tie_break == TieBreak::kHeap ? SelectHostHeap(scores.total)
                                                      : SelectHostRandom(scores.total, rng_);
      out.score = scores.total[chosen];
      if (explain) Explain(*explain, feasible, scores);
    }
    NodeIndex host = feasible[chosen];
    out.node = cluster_.nodes[host].meta.name;
    Bind(pod, host);
    return out;
  }

 private:
  void Explain(Explanation& ex, const std::vector<NodeIndex>& feasible, const Evaluator::ScoreOutcome& s) {
    ex.score_skipped = s.skipped;
    for (size_t k = 0; k < feasible.size(); ++k) {
      for (NodeExplanation& ne : ex.nodes) {
        if (ne.node != cluster_.nodes[feasible[k]].meta.name) continue;
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

  Placement ScheduleBatched(const Pod& pod, BatchCycle& batch, const Profile& profile, Placement out) {
    const int32_t percentage = profile.percentage_of_nodes_to_score.value_or(config_.percentage_of_nodes_to_score);
    BatchCycle::Decision d =
        batch.Schedule(pod, percentage, options_.tie_break, &rng_, &next_start_);
    out.code = d.code;
    out.message = std::move(d.message);
    out.feasible = d.feasible;
    out.score = d.score;
    if (d.host >= 0) {
      out.node = cluster_.nodes[d.host].meta.name;
      Bind(pod, d.host);
      for (auto& other : batches_) {
        if (other.get() != &batch) other->NoteOtherBind();
      }
    }
    return out;
  }

  void Bind(const Pod& pod, NodeIndex host) {
    if (options_.reference) {
      for (auto& e : evaluators_) static_cast<ReferenceEvaluator*>(e.get())->Reserve(pod, host);
      bound_.push_back(pod);
      bound_.back().node_name = cluster_.nodes[host].meta.name;
      state_.nodes[host].pods.push_back(&bound_.back());
      return;
    }
    const Pod& copy = snapshot_->Bind(pod, host);
    for (auto& e : evaluators_) static_cast<EngineEvaluator*>(e.get())->framework().Bind(copy, host);
  }

  const ObjectSet& cluster_;
  SchedulerConfig config_;
  Options options_;
  std::mt19937_64 rng_;
  std::vector<int32_t> order_;
  int32_t next_start_ = 0;
  std::vector<std::unique_ptr<Evaluator>> evaluators_;
  std::vector<std::unique_ptr<BatchCycle>> batches_;  // per evaluator, when batched
  std::unique_ptr<engine::Snapshot> snapshot_;
  reference::ClusterState state_;
  std::deque<Pod> bound_;
};

}  // namespace

std::vector<size_t> QueueOrder(const std::vector<Pod>& pods) {
  std::vector<size_t> idx(pods.size());
  std::iota(idx.begin(), idx.end(), 0);
  std::stable_sort(idx.begin(), idx.end(), [&](size_t a, size_t b) {
    int32_t pa = pods[a].priority.value_or(0), pb = pods[b].priority.value_or(0);
    if (pa != pb) return pa > pb;
    return pods[a].meta.creation_unix < pods[b].meta.creation_unix;
  });
  return idx;
}

std::vector<Placement> Scheduler::ScheduleAll(const std::vector<Pod>& pending) {
  std::vector<Placement> out;
  out.reserve(pending.size());
  for (size_t i : QueueOrder(pending)) out.push_back(Schedule(pending[i]));
  return out;
}

absl::StatusOr<std::unique_ptr<Scheduler>> Scheduler::Create(const ObjectSet& cluster, const SchedulerConfig& config,
                                                             const Options& options) {
  auto s = std::make_unique<CycleScheduler>(cluster, config, options);
  try {
    KPLACE_RETURN_IF_ERROR(s->Init());
  } catch (const std::exception& e) {
    return absl::InternalError(StrCat("building the scheduler: ", e.what()));
  }
  return std::unique_ptr<Scheduler>(std::move(s));
}

}  // namespace kplace::cycle
