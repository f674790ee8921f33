#include "kplace/cycle/scheduler.h"

#include <algorithm>
#include <chrono>
#include <deque>
#include <map>
#include <numeric>
#include <set>
#include <stdexcept>
#include <string_view>
#include <unordered_map>
#include <utility>

#if defined(_OPENMP)
#include <omp.h>
#endif

#include "absl/container/flat_hash_map.h"
#include "kplace/common/strings.h"
#include "kplace/common/status.h"
#include "kplace/cycle/batch.h"
#include "kplace/cycle/engine_dry_run.h"
#include "kplace/cycle/node_order.h"
#include "kplace/cycle/opportunistic_batch.h"
#include "kplace/cycle/preemption.h"
#include "kplace/engine/framework.h"
#include "kplace/engine/snapshot.h"
#include "kplace/model/decode.h"
#include "kplace/plugins/dynamic_resources_common.h"
#include "kplace/reference/plugin.h"
#include "kplace/state/event.h"

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
    std::vector<std::string> rejectors;  // engine::PreFilterResult::UnschedulablePlugins
  };
  struct ScoreOutcome {
    PluginStatus status;
    std::vector<int64_t> total;
    std::vector<bool> skipped;
    std::vector<std::vector<int64_t>> raw, normalized;  // [plugin][k]
    double pre_score_seconds = 0;  // of the call's time, PreScore's
  };

  virtual ~Evaluator() = default;
  virtual const Profile& profile() const = 0;
  virtual PreFilterOutcome PreFilter(const Pod& pod) = 0;
  /** The scan that follows: candidates[(start + v) % size] for v = 0, 1, ... until `k`
   *  nodes are feasible, on a snapshot of `rows` node rows (a hint: FilterNode may be
   *  asked for any node). */
  virtual void BeginScan(const std::vector<NodeIndex>* /*candidates*/, int32_t /*start*/, int32_t /*k*/,
                         int32_t /*rows*/) {}
  /** The status of node `i` for the current pod (Success when feasible); sets `plugin`. */
  virtual PluginStatus FilterNode(NodeIndex i, std::string* plugin) = 0;
  /** Node `i`'s verdict without building its status: 0 when it passes, a key > 0 that is
   *  equal for nodes rejected by one plugin with one verdict (their statuses are equal),
   *  -1 when not known (ask FilterNode). The scan's fast path. */
  virtual int64_t VerdictKey(NodeIndex /*i*/) { return -1; }
  /** `per_plugin`: also each plugin's raw and normalized scores (explanations). */
  virtual ScoreOutcome Score(const std::vector<NodeIndex>& feasible, bool per_plugin) = 0;
  /** NormalizeScore and weights over given raw scores ([plugin][k]; `skipped` plugins stay
   *  0) for the pod of the last Score: normalized and total. */
  virtual ScoreOutcome Normalize(const std::vector<std::vector<int64_t>>& raw, const std::vector<bool>& skipped) = 0;
};

bool Has(const std::vector<std::string>& plugins, const char* name) {
  return std::find(plugins.begin(), plugins.end(), name) != plugins.end();
}

// resource.k8s.io objects: DynamicResources looks them up afresh in each cycle.
bool HasResourceObjects(const ObjectSet& o) {
  return !o.resource_claims.empty() || !o.resource_claim_templates.empty() || !o.device_classes.empty() ||
         !o.resource_slices.empty();
}

std::string AbsentReason(std::vector<std::string> plugins) {
  std::sort(plugins.begin(), plugins.end());
  std::string out = "node(s) didn't satisfy plugin(s) [";
  for (size_t i = 0; i < plugins.size(); ++i) out += (i ? " " : "") + plugins[i];
  return out + "]";
}

class EngineEvaluator final : public Evaluator {
 public:
  /** `chunked`: filter the nodes the scan visits, in chunks of the visit order sized to
   *  what is still needed (omp); else every node at once (cuda, where one launch over the
   *  cluster costs less than many small ones). */
  EngineEvaluator(std::unique_ptr<engine::Framework> fw, bool chunked) : fw_(std::move(fw)), chunked_(chunked) {}
  const Profile& profile() const override { return fw_->profile(); }
  engine::Framework& framework() { return *fw_; }
  /** The current pod's PreFilter result. */
  const engine::PreFilterResult& pre_filter() const { return pre_; }

  PreFilterOutcome PreFilter(const Pod& pod) override {
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

  void BeginScan(const std::vector<NodeIndex>* candidates, int32_t start, int32_t k, int32_t rows) override {
    EnsureRows(rows);
    scan_ = candidates;
    scan_start_ = start;
    scan_pos_ = 0;
    scan_k_ = k;
    scan_visited_ = 0;
    scan_feasible_ = 0;
  }

  int64_t VerdictKey(NodeIndex i) override {
    const int16_t f = FailedPlugin(i);
    if (f == 0) return 0;
    return static_cast<int64_t>(f) << 32 | (chunked_ ? code_[i] : result_.code[i]);
  }

  PluginStatus FilterNode(NodeIndex i, std::string* plugin) override {
    const int16_t f = FailedPlugin(i);
    if (f == 0) return PluginStatus::Success();
    *plugin = fw_->filter_plugins()[f - 1];
    return fw_->Verdict(f - 1, chunked_ ? code_[i] : result_.code[i]);
  }

  // The 1-based Filter plugin that rejected node `i` (0: feasible), filtering it first.
  int16_t FailedPlugin(NodeIndex i) {
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

  ScoreOutcome Score(const std::vector<NodeIndex>& feasible, bool per_plugin) override {
    if (!per_plugin) {
      fw_->ScoreTotals(feasible, &totals_);
      return ScoreOutcome{totals_.status, totals_.total, totals_.skipped, {}, {}, totals_.pre_score_seconds};
    }
    engine::ScoreResult r = fw_->Score(feasible);
    return ScoreOutcome{r.status,           std::move(r.total),      std::move(r.skipped),
                        std::move(r.raw),   std::move(r.normalized), r.pre_score_seconds};
  }

  ScoreOutcome Normalize(const std::vector<std::vector<int64_t>>& raw, const std::vector<bool>& skipped) override {
    engine::ScoreResult r;
    fw_->Normalize(raw, skipped, &r);
    return ScoreOutcome{r.status, std::move(r.total), std::move(r.skipped), std::move(r.raw), std::move(r.normalized)};
  }

 private:
  // Filters `i`: with the next nodes of the scan when it is the scan's next unfiltered node
  // (as many as the feasible rate so far says are still needed, a little more), else alone
  // (a nominated node, a status asked again).
  void FilterChunkAt(NodeIndex i) {
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

  void EnsureRows(size_t n) {
    if (stamped_.size() >= n) return;
    stamped_.resize(n, 0);
    failed_.resize(n);
    code_.resize(n);
  }

  std::unique_ptr<engine::Framework> fw_;
  const bool chunked_;
  engine::PreFilterResult pre_;
  engine::FilterResult result_;
  bool filtered_ = false;
  // The chunked scan: which nodes hold this pod's verdict (stamped_[i] == stamp_), and where
  // the scan stands.
  uint64_t stamp_ = 0;
  std::vector<uint64_t> stamped_;
  std::vector<int16_t> failed_;
  std::vector<engine::VerdictCode> code_;
  std::vector<NodeIndex> chunk_;
  engine::FilterResult listed_;
  engine::ScoreResult totals_;
  const std::vector<NodeIndex>* scan_ = nullptr;
  int32_t scan_start_ = 0, scan_pos_ = 0, scan_k_ = 0;
  int64_t scan_visited_ = 0, scan_feasible_ = 0;
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

  PluginStatus FilterNode(NodeIndex i, std::string* plugin) override {
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

  ScoreOutcome Score(const std::vector<NodeIndex>& feasible, bool /*per_plugin*/) override {
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

  ScoreOutcome Normalize(const std::vector<std::vector<int64_t>>& raw, const std::vector<bool>& skipped) override {
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

  /** The profile's PreFilter and Filter plugins in run order, for a ReferenceDryRunHost. */
  std::vector<ReferenceDryRunHost::Named> Plugins(const std::vector<std::string>& names) {
    std::vector<ReferenceDryRunHost::Named> out;
    for (const std::string& name : names) out.emplace_back(name, plugins_[name].get());
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
 private:
  // A pod with a node, as the scheduler holds it: where it is stored, the node that counts
  // it (kNoId: none) and its entry number (the cluster's pod order, kept by every rebuild).
  // Pods added after the build are the entry's own (`own`; empty for the objects' pods).
  // An owned pod sits in a one-element vector: an event's decoded pod is taken over with
  // its vector, which costs less than moving a Pod member by member into an allocation.
  using PodBox = std::vector<Pod>;
  struct LivePod {
    const Pod* pod;
    NodeIndex node;
    uint64_t seq;
    PodBox own;
  };
  // One step of a transaction's undo log.
  // Small for the common step (a bind's undo is a key): the rest lives behind pointers.
  struct UndoEntry {
    enum What { kRemovePod, kRestorePod, kObjects, kRestoreNode, kMoveNode } what;
    std::string key;                        // kRemovePod
    PodBox pod;                             // kRestorePod: the pod as it was, with its entry number
    uint64_t seq = 0;
    std::unique_ptr<state::Undo> objects;   // kObjects; kRestoreNode: the node's add at its list place;
                                            // kMoveNode: its old version's update at its list place
    NodeIndex row = engine::kNoId;          // kRestoreNode: the row it left; with kMoveNode: its zone's
    uint32_t zone = 0, zone_pos = 0;        // place in the node tree and its place in the zone
  };
  struct Savepoint {
    size_t undo_size = 0;
    int32_t next_start = 0;
    std::mt19937_64 rng, preempt_rng;
    std::map<std::string, Pod> nominated;
    std::set<std::string> terminating;
    std::unique_ptr<plugins::volume::VolumeAssumeCache> assume;  // when there is storage
    std::vector<OpportunisticBatch> opp;
    int64_t cycle = 0;
  };


 public:
 public:
  CycleScheduler(const ObjectSet& cluster, const SchedulerConfig& config, const Options& options)
      : cluster_(cluster),
        config_(config),
        options_(options),
        rng_(options.seed),
        preempt_rng_(options.seed),
        next_start_(options.start_index) {}

  absl::Status Init() {
    for (const Profile& p : config_.profiles) {
      auto e = std::make_unique<ReferenceEvaluator>(p, &state_);
      KPLACE_RETURN_IF_ERROR(e->Init(options_.gates));
      dry_.push_back(std::move(e));
      // Upstream's hints pick by its heap, so a run with random tie-breaks has none.
      const bool unsigned_plugin = std::find(options_.unsigned_profiles.begin(), options_.unsigned_profiles.end(),
                                             p.scheduler_name) != options_.unsigned_profiles.end();
      signs_.push_back(options_.gates.Enabled("OpportunisticBatching") && options_.tie_break == TieBreak::kHeap &&
                       ProfileSignsPods(p, options_.gates, unsigned_plugin));
      signers_.emplace_back(p, options_.gates);
    }
    opp_.resize(config_.profiles.size());
    return Build(cluster_);
  }

  int32_t next_start_index() const override { return next_start_; }

  std::vector<plugins::volume::AssumedVolume> AssumedVolumes() const override {
    return (options_.reference ? *state_.volume_assume : snapshot_->volume_assume_cache()).assumed();
  }

  void ExpireBatchState() override { expire_batch_ = true; }

  int64_t hinted_pods() const override {
    int64_t n = 0;
    for (const OpportunisticBatch& b : opp_) n += b.hinted_pods();
    return n;
  }

  BatchStats batch_stats() const override {
    BatchStats out = retired_stats_;
    for (const auto& b : batches_) b->AddStats(&out);
    return out;
  }

  std::vector<std::string> NodeOrder() const override {
    std::vector<std::string> out;
    for (int32_t i : order_) out.push_back(objects().nodes[i].meta.name);
    return out;
  }

  void Nominate(const Pod& pod) override {
    if (pod.nominated_node_name.empty()) {
      nominated_.erase(ObjectKey(pod.meta));
    } else {
      nominated_[ObjectKey(pod.meta)] = pod;
    }
  }

  const Pod* Nomination(const std::string& key) const override {
    auto it = nominated_.find(key);
    return it == nominated_.end() ? nullptr : &it->second;
  }

  const Node* FindNode(const std::string& name) const override {
    auto it = node_index_.find(name);
    return it == node_index_.end() ? nullptr : &objects().nodes[it->second];
  }

  const Pod* FindBoundPod(const std::string& key) const override {
    auto it = pods_.find(key);
    return it == pods_.end() ? nullptr : it->second.pod;
  }

  const SchedulerConfig& config() const override { return config_; }
  const Options& options() const override { return options_; }

  void SetExplain(bool on) override {
    if (on == options_.explain) return;
    options_.explain = on;
    if (on) {
      for (auto& b : batches_) {
        if (b) b->AddStats(&retired_stats_);
      }
      batches_.clear();
    } else if (options_.batch > 1 && !options_.reference && !evaluators_.empty()) {
      batches_.resize(evaluators_.size());
      for (size_t e = 0; e < evaluators_.size(); ++e) RestartBatch(e);
    }
  }

  std::vector<std::string> CompleteDeletions() override {
    std::vector<std::string> gone;
    // In the order the pods entered the cluster, as a fresh scheduler would list them.
    std::vector<std::pair<uint64_t, std::string>> keys;
    for (const std::string& key : terminating_) {
      auto it = pods_.find(key);
      if (it != pods_.end()) keys.emplace_back(it->second.seq, key);
    }
    std::sort(keys.begin(), keys.end());
    for (const auto& [seq, key] : keys) {
      RemovePod(key);
      gone.push_back(key);
    }
    terminating_.clear();
    return gone;
  }

  using Scheduler::Apply;
  absl::Status Apply(state::ClusterEvent&& event) override {
    try {
      if (std::string_view(event.kind) == "Pod") return ApplyPod(std::move(event));  // inline, no strlen
      return ApplyObjects(event);
    } catch (const std::exception& e) {
      // An added pod is taken over (ApplyPod) before it is counted in: then the key is gone.
      const bool taken = event.kind == "Pod" && event.object.pods.empty();
      return absl::InternalError(StrCat(event.where, ": applying ", state::EventTypeName(event.type), " ", event.kind,
                                        " ", taken ? std::string() : event.Key(), ": ", e.what()));
    }
  }

  absl::Status Begin() override {
    if (savepoints_.size() >= 2) return absl::FailedPreconditionError("Begin: transactions nest one level deep");
    Savepoint sp;
    sp.undo_size = undo_.size();
    sp.next_start = next_start_;
    sp.rng = rng_;
    sp.preempt_rng = preempt_rng_;
    sp.nominated = nominated_;
    sp.terminating = terminating_;
    sp.opp = opp_;
    sp.cycle = cycle_;
    const auto& cache = AssumeCache();
    if (!objects().storage.empty()) sp.assume = std::make_unique<plugins::volume::VolumeAssumeCache>(*cache);
    savepoints_.push_back(std::move(sp));
    return absl::OkStatus();
  }

  absl::Status Commit() override {
    if (savepoints_.empty()) return absl::FailedPreconditionError("Commit: no transaction (Begin first)");
    savepoints_.pop_back();
    if (savepoints_.empty()) undo_.clear();
    return absl::OkStatus();
  }

  absl::Status Revert() override {
    if (savepoints_.empty()) return absl::FailedPreconditionError("Revert: no transaction (Begin first)");
    Savepoint sp = std::move(savepoints_.back());
    savepoints_.pop_back();
    // First, so that a rebuild while undoing renumbers its nodes.
    opp_ = std::move(sp.opp);
    cycle_ = sp.cycle;
    try {
      std::vector<UndoEntry> entries(std::make_move_iterator(undo_.begin() + static_cast<std::ptrdiff_t>(sp.undo_size)),
                                     std::make_move_iterator(undo_.end()));
      undo_.resize(sp.undo_size);
      // Undone last first, without logging (the outer transaction keeps its own log).
      std::vector<Savepoint> outer = std::move(savepoints_);
      savepoints_.clear();
      for (size_t k = entries.size(); k-- > 0;) {
        UndoEntry& u = entries[k];
        switch (u.what) {
          case UndoEntry::kRemovePod:
            RemovePod(u.key);
            break;
          case UndoEntry::kRestorePod:
            AddPod(std::move(u.pod), u.seq, std::move(u.key));
            break;
          case UndoEntry::kObjects:
            KPLACE_RETURN_IF_ERROR(ApplyObjects(u.objects->event, u.objects->index));
            break;
          case UndoEntry::kRestoreNode: {
            // Its row, unless a rebuild since has dropped the rows of nodes that left.
            auto row = removed_rows_.find(u.row);
            const Node& node = u.objects->event.object.nodes[0];
            if (row != removed_rows_.end() && row->second == node.meta.name) {
              ReviveNode(u.row, node, u.zone, u.zone_pos);
            } else {
              KPLACE_RETURN_IF_ERROR(ApplyObjects(u.objects->event, u.objects->index));
            }
            break;
          }
          case UndoEntry::kMoveNode: {
            // Back to its old place in its old zone (the tree is as the move left it: a
            // rebuild since lists the nodes zone after zone, so it keeps zones and places).
            const Node& node = u.objects->event.object.nodes[0];
            auto it = node_index_.find(node.meta.name);
            if (it != node_index_.end()) {
              MoveNode(it->second, node, TreePlace{u.zone, u.zone_pos, u.objects->index});
            } else {
              KPLACE_RETURN_IF_ERROR(ApplyObjects(u.objects->event, u.objects->index));
            }
            break;
          }
        }
      }
      savepoints_ = std::move(outer);
    } catch (const std::exception& e) {
      return absl::InternalError(StrCat("Revert: ", e.what()));
    }
    next_start_ = sp.next_start;
    rng_ = sp.rng;
    preempt_rng_ = sp.preempt_rng;
    nominated_ = std::move(sp.nominated);
    terminating_ = std::move(sp.terminating);
    if (sp.assume) *AssumeCache() = *sp.assume;
    return absl::OkStatus();
  }

  ObjectSet Objects() const override {
    ObjectSet out = NonPods();
    for (const LivePod* p : PodsInOrder()) out.pods.push_back(*p->pod);
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
      out.other_scheduler = true;
      out.code = Code::kSkip;
      out.message = StrCat("left alone: no profile has schedulerName \"", pod.scheduler_name, "\"");
      return out;
    }
    if (const Pod* bound = FindBoundPod(out.pod)) {  // binding it again would lose the pod it has
      out.code = Code::kError;
      out.message = StrCat("Pod ", out.pod, " is already bound to node ", bound->node_name);
      return out;
    }
    // PreEnqueue (MultiPoint order: SchedulingGates first): a rejected pod never enters a cycle.
    if (!pod.scheduling_gates.empty()) {
      out.gated = true;
      out.gating_plugin = "SchedulingGates";
      out.code = Code::kUnschedulableAndUnresolvable;
      out.message = "waiting for scheduling gates: [";
      for (size_t g = 0; g < pod.scheduling_gates.size(); ++g) out.message += (g ? " " : "") + pod.scheduling_gates[g];
      out.message += "]";
      return out;
    }
    if (Has(ev->profile().pre_enqueue, plugins::dra::kName)) {
      plugins::dra::PodClaims claims = plugins::dra::ResolveClaims(pod, objects(), &dra_index_);
      if (!claims.status.IsSuccess()) {
        out.gated = true;
        out.gating_plugin = plugins::dra::kName;
        out.code = claims.status.code;
        out.message = claims.status.Message();
        return out;
      }
    }
    ++cycle_;  // upstream's scheduling cycle counter, shared by the profiles
    expired_cycle_ = std::exchange(expire_batch_, false) ? cycle_ : -1;
    const int32_t n = static_cast<int32_t>(order_.size());
    if (n == 0) {
      out.code = Code::kUnschedulableAndUnresolvable;
      out.message = "no nodes available to schedule pods";
      return out;
    }
    // The pod's own nomination from an earlier cycle, when it has one.
    const Pod* nominated_self = Nomination(out.pod);
    const Pod& p = nominated_self ? *nominated_self : pod;
    if (!batches_.empty()) {
      // Batched runs know nothing of nominated pods: while any exist, pods go one at a time.
      // Nor of OpportunisticBatching's hints, which change decisions: profiles that sign
      // pods take the per-pod cycle, which gives them.
      // Nor of claims, which a bind changes (DynamicResources' PreBind): such pods go alone.
      if (nominated_.empty() && !signs_[ev_index] && pod.resource_claims.empty()) {
        const int32_t start = next_start_;
        Placement b = ScheduleBatched(p, *batches_[ev_index], ev->profile(), out);
        // A failed pod of a profile with PostFilter takes the per-pod cycle, which keeps
        // every node's status for preemption; its run ends there.
        if (!b.node.empty() || b.code == Code::kError || ev->profile().post_filter.empty()) return b;
        next_start_ = start;
      }
      // The per-pod cycle compiles its pod into the same plugins: the run starts again.
      RestartBatch(ev_index);
      for (auto& other : batches_) other->NoteOtherBind();
    }
    return ScheduleOne(p, *ev, ev_index, std::move(out));
  }

 private:
  // The objects the scheduler holds now: the input's, or those rebuilt after a preemption.
  const ObjectSet& objects() const { return live_ ? *live_ : cluster_; }

  // The cluster as the reference sees it: state_ on the reference, rebuilt from the engine's
  // snapshot otherwise (sharing its volume assume cache).
  const reference::ClusterState& DryRunState() {
    if (options_.reference) return state_;
    dry_state_.objects = &objects();
    dry_state_.gates = options_.gates;
    dry_state_.volume_assume = std::shared_ptr<plugins::volume::VolumeAssumeCache>(
        std::shared_ptr<void>(), &snapshot_->volume_assume_cache());
    dry_state_.nodes.resize(snapshot_->num_nodes());
    for (NodeIndex i = 0; i < snapshot_->num_nodes(); ++i) {
      dry_state_.nodes[i] = reference::NodeInfo{&snapshot_->node(i), snapshot_->pods_on(i)};
    }
    return dry_state_;
  }

  std::unique_ptr<ReferenceDryRunHost> MakeHost(size_t ev_index) {
    std::vector<const Pod*> nominated;
    for (const auto& [key, q] : nominated_) nominated.push_back(&q);
    ReferenceEvaluator& r = *dry_[ev_index];
    return std::make_unique<ReferenceDryRunHost>(DryRunState(), r.Plugins(r.profile().pre_filter),
                                                 r.Plugins(r.profile().filter), std::move(nominated));
  }

  // Per node: whether a pending pod nominated there counts when filtering `pod` (empty when
  // no node has one).
  std::vector<bool> NominatedFor(const Pod& pod) const {
    std::vector<bool> out;
    for (const auto& [key, q] : nominated_) {
      if (!NominatedCountsFor(q, pod)) continue;
      auto it = node_index_.find(q.nominated_node_name);
      if (it == node_index_.end()) continue;
      out.resize(objects().nodes.size(), false);  // by row
      out[it->second] = true;
    }
    return out;
  }

  // The per-pod cycle runs a parallel region per plugin and per step over the whole
  // cluster, each of little work: on omp their wake-ups cost more than the work saves
  // (measured on 2 cores at 5,000 and 50,000 nodes: 3-11x faster on one thread;
  // docs/benchmarks.md), so it runs on the calling thread. Batched runs keep their threads.
  class OnOneThread {
   public:
    explicit OnOneThread(bool on) : on_(on) {
#if defined(_OPENMP)
      if (on_) {
        was_ = omp_get_max_threads();
        omp_set_num_threads(1);
      }
#endif
    }
    ~OnOneThread() {
#if defined(_OPENMP)
      if (on_) omp_set_num_threads(was_);
#endif
    }
    OnOneThread(const OnOneThread&) = delete;
    OnOneThread& operator=(const OnOneThread&) = delete;

   private:
    bool on_;
    int was_ = 1;
  };

  Placement ScheduleOne(const Pod& pod, Evaluator& ev_ref, size_t ev_index, Placement out) {
    const OnOneThread serial(!options_.reference && options_.backend == engine::Backend::kOmp);
    Evaluator* ev = &ev_ref;
    const int32_t n = static_cast<int32_t>(order_.size());
    std::shared_ptr<Explanation> explain;
    if (options_.explain) {
      explain = std::make_shared<Explanation>();
      for (const WeightedPlugin& w : ev->profile().score) {
        explain->score_plugins.push_back(w.name);
        explain->weights.push_back(w.weight);
      }
      out.explanation = explain;
    }

    PointTimes* times = options_.time_extension_points ? &out.times : nullptr;
    NodeToStatus statuses;
    Evaluator::PreFilterOutcome pre;
    {
      const PointTimer timer(times, kTimedPreFilter);
      pre = ev->PreFilter(pod);
    }
    if (pre.status.code == Code::kError) {
      out.code = Code::kError;
      out.message = pre.status.Message();
      return out;
    }
    if (pre.status.IsRejected()) {
      out.code = pre.status.code;
      out.message = FitErrorMessage(n, pre.status.Message(), {});
      out.unschedulable_plugins = SortedUnique(pre.rejectors);
      statuses.absent = pre.status;
      return TimedPostFilter(pod, ev, ev_index, statuses, DraPreFilterRan(ev->profile(), pre), {}, std::move(out));
    }

    // A node's status for this pod: nominated pods that count there make the reference
    // filter it with them (RunFilterPluginsWithNominatedPods).
    std::unique_ptr<ReferenceDryRunHost> host;
    const std::vector<bool> nominated_on = NominatedFor(pod);
    auto node_status = [&](NodeIndex i, std::string* plugin) {
      if (nominated_on.empty() || !nominated_on[i]) return ev->FilterNode(i, plugin);
      if (!host) host = MakeHost(ev_index);
      PluginStatus s = host->Filter(pod, i, {});
      if (!s.IsSuccess()) *plugin = host->last_rejector();
      return s;
    };

    // OpportunisticBatching: a hint from the profile's last ranking, asked even when the
    // pod has a nominated node (which then wins).
    OpportunisticBatch* batch = signs_[ev_index] ? &opp_[ev_index] : nullptr;
    // The pod's signature, taken when a check or a new state needs it (upstream takes it
    // when the pod is queued; it is the same pod).
    std::optional<std::optional<std::string>> signature;
    auto sign = [&]() -> const std::optional<std::string>& {
      if (!signature) signature = signers_[ev_index].Sign(pod);
      return *signature;
    };
    NodeIndex hint = engine::kNoId;
    if (batch) hint = BatchHint(pod, *ev, ev_index, *batch);

    // The nominated (else the hinted) node first: when it fits it is taken at once,
    // unscored, and the start index stays. When it does not, its status stays among the
    // cycle's (it counts in the start index's advance unless the scan rejects it again).
    std::optional<PointTimer> filter_timer;  // the fast path and the scan
    filter_timer.emplace(times, kTimedFilter);
    NodeIndex fast_failed = engine::kNoId;
    PluginStatus fast_status;
    std::string fast_plugin;
    {
      NodeIndex target = hint;
      if (!pod.nominated_node_name.empty()) {
        auto it = node_index_.find(pod.nominated_node_name);
        target = it != node_index_.end() ? it->second : engine::kNoId;
      }
      if (target != engine::kNoId) {
        PluginStatus s = node_status(target, &fast_plugin);
        if (s.code == Code::kError) {
          out.code = Code::kError;
          out.message = s.Message();
          return out;
        }
        if (s.IsSuccess()) {
          std::vector<ResourceClaim> reserved;
          if (!PreBindClaims(pod, ev->profile(), &reserved, &out)) return out;
          out.feasible = 1;
          out.node = objects().nodes[target].meta.name;
          out.hinted = target == hint;
          filter_timer.reset();
          {
            const PointTimer timer(times, kTimedReserve);
            Bind(pod, target);
          }
          if (batch) batch->Store(cycle_, std::nullopt, hint, target, nullptr, {});  // no ranking to keep
          WriteClaims(std::move(reserved), &out);
          return out;
        }
        fast_failed = target;
        fast_status = std::move(s);
      }
    }

    // Candidates in scan order: the whole round-robin list, or the PreFilter subset.
    std::vector<NodeIndex> restricted;
    if (pre.restricted) restricted = RestrictedOrder(order_, pre.allowed);
    const std::vector<NodeIndex>& candidates = pre.restricted ? restricted : order_;
    const int32_t m = static_cast<int32_t>(candidates.size());
    const int32_t percentage = ev->profile().percentage_of_nodes_to_score.value_or(config_.percentage_of_nodes_to_score);
    const bool has_score = !ev->profile().score.empty();
    const int32_t k = has_score ? NumFeasibleNodesToFind(percentage, m) : std::min(1, m);

    std::vector<NodeIndex> feasible, rejected;
    std::map<std::string, int64_t> reasons;
    std::vector<std::string> rejectors = pre.rejectors;
    int32_t processed = m;
    if (m > 0) ev->BeginScan(&candidates, next_start_ % m, k, snapshot_ ? snapshot_->num_nodes() : 0);
    // Rejections by verdict (plugin and code) when the evaluator can name them: a status and
    // its reasons are built once per distinct verdict, not once per rejected node. Rejected
    // nodes it cannot name get an entry each.
    struct Verdicts {
      int64_t key;
      std::string plugin;
      PluginStatus status;
      int64_t nodes;
    };
    std::vector<Verdicts> verdicts;
    std::vector<int32_t> verdict_of;  // per rejected node, its entry of verdicts
    // A failing scan rejects every node, mostly alike: the last verdict seen answers first.
    int64_t last_key = -1;
    int32_t last_entry = -1;
    const bool any_nominated = !nominated_on.empty();
    for (int32_t v = 0, at = m > 0 ? next_start_ % m : 0; v < m; ++v, at = at + 1 == m ? 0 : at + 1) {
      const NodeIndex i = candidates[at];
      const bool plain = !explain && (!any_nominated || !nominated_on[i]);
      const int64_t key = plain ? ev->VerdictKey(i) : -1;
      if (key > 0) {
        int32_t entry = key == last_key ? last_entry : -1;
        for (size_t e = 0; entry < 0 && e < verdicts.size(); ++e) {
          if (verdicts[e].key == key) entry = static_cast<int32_t>(e);
        }
        if (entry >= 0) {
          ++verdicts[entry].nodes;
          rejected.push_back(i);
          verdict_of.push_back(entry);
          last_key = key;
          last_entry = entry;
          continue;
        }
      }
      std::string plugin;
      PluginStatus s;  // Success: a node that passes needs no status built
      if (key != 0) s = node_status(i, &plugin);
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
        rejected.push_back(i);
        verdict_of.push_back(static_cast<int32_t>(verdicts.size()));
        verdicts.push_back({key, plugin, explain ? s : std::move(s), 1});  // key -1: this node's alone
      }
      if (explain) {
        NodeExplanation ne;
        ne.node = objects().nodes[i].meta.name;
        ne.visited = true;
        ne.filter_plugin = plugin;
        ne.filter = s;
        explain->nodes.push_back(std::move(ne));
      }
    }
    filter_timer.reset();
    // The fast path's node, when the scan did not reject it too, is one more status.
    const bool fast_extra =
        fast_failed != engine::kNoId && std::find(rejected.begin(), rejected.end(), fast_failed) == rejected.end();
    if (fast_extra) {
      verdict_of.push_back(static_cast<int32_t>(verdicts.size()));
      verdicts.push_back({-1, fast_plugin, fast_status, 1});
    }
    for (const Verdicts& e : verdicts) {
      if (std::find(rejectors.begin(), rejectors.end(), e.plugin) == rejectors.end()) rejectors.push_back(e.plugin);
      for (const std::string& r : e.status.reasons) reasons[r] += e.nodes;
    }
    next_start_ = static_cast<int32_t>((static_cast<int64_t>(next_start_) + processed + (fast_extra ? 1 : 0)) % n);
    out.feasible = static_cast<int32_t>(feasible.size());

    if (feasible.empty()) {
      if (fast_extra) rejected.push_back(fast_failed);
      const int32_t recorded = static_cast<int32_t>(rejected.size());
      if (pre.restricted && !pre.absent_reason.empty()) {
        reasons[pre.absent_reason] += n - recorded;
        statuses.absent = PluginStatus::Make(Code::kUnschedulableAndUnresolvable, pre.absent_reason);
      }
      out.code = Code::kUnschedulable;
      out.message = FitErrorMessage(n, "", reasons);
      out.unschedulable_plugins = SortedUnique(std::move(rejectors));
      if (ev->profile().post_filter.empty()) return out;
      std::vector<NodeIndex> dra_rejected;  // where DynamicResources' Filter ran and rejected
      std::vector<char> by_dra(verdicts.size());  // per verdict, not per node: one name compare each
      for (size_t e = 0; e < verdicts.size(); ++e) by_dra[e] = verdicts[e].plugin == plugins::dra::kName;
      if (std::find(by_dra.begin(), by_dra.end(), 1) != by_dra.end()) {
        for (size_t j = 0; j < rejected.size(); ++j) {
          if (by_dra[verdict_of[j]]) dra_rejected.push_back(rejected[j]);
        }
      }
      // Nodes rejected alike share their verdict's status (VerdictKey: equal statuses).
      for (Verdicts& e : verdicts) statuses.Add(std::move(e.status));
      statuses.of_row.assign(objects().nodes.size(), -1);  // one allocation, not one per row
      for (size_t j = 0; j < rejected.size(); ++j) statuses.Set(rejected[j], verdict_of[j]);
      return TimedPostFilter(pod, ev, ev_index, statuses, /*dra_ran=*/true, dra_rejected, std::move(out));
    }
    size_t chosen = 0;
    ScoreHeap rest;  // with a batch: the ranking without the chosen node
    std::vector<bool> skipped;
    if (feasible.size() > 1) {
      Evaluator::ScoreOutcome scores;
      if (has_score) {
        {
          const PointTimer timer(times, kTimedScore);
          scores = ev->Score(feasible, explain != nullptr || batch != nullptr);
        }
        if (times) {  // Score's call ran PreScore first
          times->seconds[kTimedScore] -= scores.pre_score_seconds;
          times->Add(kTimedPreScore, scores.pre_score_seconds);
        }
        if (scores.status.code == Code::kError) {
          out.code = Code::kError;
          out.message = scores.status.Message();
          return out;
        }
      } else {
        scores.total.assign(feasible.size(), 1);
      }
      if (batch) {
        chosen = RankForBatch(feasible, scores, &rest);
        skipped = scores.skipped;
      } else {
        chosen = options_.tie_break == TieBreak::kHeap ? SelectHostHeap(scores.total)
                                                        : SelectHostRandom(scores.total, rng_);
      }
      out.score = scores.total[chosen];
      if (explain) Explain(*explain, feasible, scores);
    }
    std::vector<ResourceClaim> reserved;
    if (!PreBindClaims(pod, ev->profile(), &reserved, &out)) return out;
    NodeIndex host_node = feasible[chosen];
    out.node = objects().nodes[host_node].meta.name;
    {
      const PointTimer timer(times, kTimedReserve);
      Bind(pod, host_node);
    }
    if (batch) {
      const bool ranked = feasible.size() > 1 && host_node != hint;  // a new state, if the pod signs
      batch->Store(cycle_, ranked ? sign() : std::nullopt, hint, host_node, ranked ? &rest : nullptr, skipped);
    }
    WriteClaims(std::move(reserved), &out);
    return out;
  }

  // Whether DynamicResources' PreFilter ran for the pod of `pre` (it writes its cycle state
  // even when it rejects): an UnschedulableAndUnresolvable PreFilter ends the pass at the
  // plugin that returned it (the last of the restricting ones when their node sets did not
  // meet).
  static bool DraPreFilterRan(const Profile& profile, const Evaluator::PreFilterOutcome& pre) {
    auto at = [&](const std::string& name) {
      return std::find(profile.pre_filter.begin(), profile.pre_filter.end(), name) - profile.pre_filter.begin();
    };
    const auto dra = at(plugins::dra::kName);
    if (dra == static_cast<std::ptrdiff_t>(profile.pre_filter.size())) return false;
    if (pre.status.code != Code::kUnschedulableAndUnresolvable) return true;
    std::ptrdiff_t stop = -1;
    for (const std::string& r : pre.rejectors) stop = std::max(stop, at(r));
    return dra <= stop;
  }

  // DynamicResources' PreBind for `pod`, about to be bound: the claims it writes (the pod
  // joins their status.reservedFor), applied by WriteClaims once the pod is bound. False,
  // with `out` the refusal, when that write would fail the binding.
  bool PreBindClaims(const Pod& pod, const Profile& profile, std::vector<ResourceClaim>* reserved, Placement* out) {
    if (pod.resource_claims.empty() || !Has(profile.AllPlugins(), plugins::dra::kName)) return true;
    const plugins::dra::PreFilterPlan plan = plugins::dra::PreFilter(pod, objects(), options_.gates, &dra_index_);
    PluginStatus refusal;
    *reserved = plugins::dra::ReserveClaims(pod, plan, &refusal);
    if (!refusal.refused) return true;
    out->code = Code::kError;
    out->message = refusal.Message();
    return false;
  }

  // ResourceClaims the scheduler wrote (PreBind's reservations, PostFilter's deallocation):
  // later cycles see them as the informer would deliver the update.
  void WriteClaims(std::vector<ResourceClaim> claims, Placement* out) {
    for (ResourceClaim& c : claims) {
      state::ClusterEvent e;
      e.type = state::EventType::kModified;
      e.kind = "ResourceClaim";
      e.where = "kplace";
      e.object.resource_claims.push_back(std::move(c));
      absl::Status s = ApplyObjects(e);
      if (!s.ok()) {
        out->code = Code::kError;
        out->message = StrCat("writing ResourceClaim ", e.Key(), ": ", s.message());
        return;
      }
    }
  }

  // The cycle's ranking as upstream's heap (feasible order): pops the chosen node, leaves
  // the rest in `*rest` with each node's raw scores for a later rescoring.
  static size_t RankForBatch(const std::vector<NodeIndex>& feasible, const Evaluator::ScoreOutcome& scores,
                             ScoreHeap* rest) {
    std::vector<ScoredNode> nodes(feasible.size());
    for (size_t k = 0; k < feasible.size(); ++k) {
      nodes[k].node = static_cast<int32_t>(k);  // position first, the node after the pop
      nodes[k].total = scores.total[k];
      nodes[k].raw.resize(scores.raw.size());
      for (size_t p = 0; p < scores.raw.size(); ++p) nodes[k].raw[p] = scores.raw[p][k];
    }
    rest->Init(std::move(nodes));
    const size_t chosen = static_cast<size_t>(rest->Pop().node);
    for (ScoredNode& e : rest->mutable_entries()) e.node = feasible[static_cast<size_t>(e.node)];
    return chosen;
  }

  // GetNodeHint: the head of the profile's ranking when the pod may take it, after the last
  // chosen node is filtered for it and, still feasible, scored again and ranked anew.
  NodeIndex BatchHint(const Pod& pod, Evaluator& ev, size_t ev_index, OpportunisticBatch& batch) {
    const bool expired = expired_cycle_ == cycle_ ||
                         (options_.batch_max_age > 0 && cycle_ - batch.created() > options_.batch_max_age);
    // Any failed check drops the state (upstream's newest batch.go).
    auto none = [&] {
      batch.Drop();
      return engine::kNoId;
    };
    if (!batch.Chained(cycle_, !pod.nominated_node_name.empty(), expired) || !batch.signature() ||
        !signers_[ev_index].Matches(pod, *batch.signature())) {
      return none();
    }
    const NodeIndex last = batch.last_chosen();
    if (!LiveRow(last)) return none();
    std::string plugin;
    const PluginStatus fits = ev.FilterNode(last, &plugin);
    if (fits.code == Code::kError) return none();
    if (fits.IsSuccess()) {
      // Still feasible: it competes again with its fresh scores, every entry normalized anew.
      Evaluator::ScoreOutcome fresh = ev.Score({last}, /*per_plugin=*/true);
      if (!fresh.status.IsSuccess() || fresh.skipped != batch.skipped()) return none();
      std::vector<ScoredNode> nodes = batch.heap().entries();
      ScoredNode again;
      again.node = last;
      for (const std::vector<int64_t>& r : fresh.raw) again.raw.push_back(r[0]);
      nodes.push_back(std::move(again));
      std::vector<std::vector<int64_t>> raw(fresh.raw.size(), std::vector<int64_t>(nodes.size()));
      for (size_t k = 0; k < nodes.size(); ++k) {
        for (size_t p = 0; p < raw.size(); ++p) raw[p][k] = nodes[k].raw[p];
      }
      const Evaluator::ScoreOutcome normalized = ev.Normalize(raw, fresh.skipped);
      for (size_t k = 0; k < nodes.size(); ++k) nodes[k].total = normalized.total[k];
      batch.heap().Init(std::move(nodes));
    }
    const NodeIndex top = batch.heap().Pop().node;
    return LiveRow(top) ? top : engine::kNoId;
  }

  // A row that holds a node now (not one that left).
  bool LiveRow(NodeIndex i) const {
    return i >= 0 && static_cast<size_t>(i) < objects().nodes.size() && removed_rows_.count(i) == 0;
  }

  // PostFilter, timed when the profile has PostFilter plugins (upstream observes it then only).
  Placement TimedPostFilter(const Pod& pod, Evaluator* ev, size_t ev_index, const NodeToStatus& statuses, bool dra_ran,
                            const std::vector<NodeIndex>& dra_rejected, Placement out) {
    if (!options_.time_extension_points || ev->profile().post_filter.empty()) {
      return PostFilter(pod, ev, ev_index, statuses, dra_ran, dra_rejected, std::move(out));
    }
    PointTimes spent;
    Placement result;
    {
      const PointTimer timer(&spent, kTimedPostFilter);
      result = PostFilter(pod, ev, ev_index, statuses, dra_ran, dra_rejected, std::move(out));
    }
    result.times.Add(kTimedPostFilter, spent.seconds[kTimedPostFilter]);
    return result;
  }

  // The profile's PostFilter plugins after a failed cycle (`out` holds the FitError), as
  // RunPostFilterPlugins runs them in order: the first Success or UnschedulableAndUnresolvable
  // answers, an Error ends the pass, Unschedulable reasons are joined. DynamicResources
  // deallocates a claim only this pod holds that some node found unavailable;
  // DefaultPreemption nominates, and its victims start terminating. `dra_ran`: its PreFilter
  // ran; `dra_rejected`: the nodes its Filter rejected.
  Placement PostFilter(const Pod& pod, Evaluator* ev, size_t ev_index, const NodeToStatus& statuses, bool dra_ran,
                       const std::vector<NodeIndex>& dra_rejected, Placement out) {
    const Profile& profile = dry_[ev_index]->profile();
    std::vector<std::string> reasons;
    std::vector<ResourceClaim> deallocated;
    auto finish = [&](std::string message) {
      out.post_filter_message = std::move(message);
      if (!out.post_filter_message.empty()) out.message += " " + out.post_filter_message;
      WriteClaims(std::move(deallocated), &out);
      return std::move(out);
    };
    const bool preemption = Has(profile.post_filter, "DefaultPreemption");
    for (const std::string& plugin : profile.post_filter) {
      if (plugin != plugins::dra::kName) continue;
      const plugins::dra::PreFilterPlan plan =
          dra_ran ? plugins::dra::PreFilter(pod, objects(), options_.gates, &dra_index_) : plugins::dra::PreFilterPlan{};
      std::vector<int32_t> unavailable;
      for (NodeIndex i : dra_rejected) plugins::dra::Filter(plan, objects().nodes[i], &unavailable);
      plugins::dra::PostFilterOutcome dra = plugins::dra::PostFilter(pod, dra_ran, plan, unavailable);
      if (dra.deallocated) deallocated.push_back(std::move(*dra.deallocated));
      // Runs before DefaultPreemption: an Error keeps it from running (and keeps any
      // nomination: no PostFilter result).
      if (!dra.status.IsRejected()) return finish(dra.status.Message());
      reasons.insert(reasons.end(), dra.status.reasons.begin(), dra.status.reasons.end());
    }
    auto joined = [&] {
      std::string m;
      for (const std::string& r : reasons) m += (m.empty() ? "" : ", ") + r;
      return m;
    };
    if (!preemption) {
      if (!profile.post_filter.empty() || Nomination(out.pod)) ClearNomination(pod);
      return finish(joined());
    }
    std::unique_ptr<DryRunHost> host;
    if (auto* engine_ev = dynamic_cast<EngineEvaluator*>(ev); engine_ev && snapshot_) {
      // The engine answers the dry run's filter calls it can (the pod's PreFilter is current).
      std::vector<const Pod*> nominated;
      for (const auto& [key, q] : nominated_) nominated.push_back(&q);
      host = std::make_unique<EngineDryRunHost>(
          engine_ev->framework(), engine_ev->pre_filter(), pod, *snapshot_,
          [this](const std::string& name) {
            auto it = node_index_.find(name);
            return it == node_index_.end() ? -1 : static_cast<int32_t>(it->second);
          },
          std::move(nominated), [this, ev_index] { return std::unique_ptr<DryRunHost>(MakeHost(ev_index)); });
    } else {
      host = MakeHost(ev_index);
    }
    PostFilterOptions options;
    options.args = profile.args.default_preemption;
    options.node_order = order_;
    options.offset = [this](int32_t potential) {
      return static_cast<int32_t>(preempt_rng_() % static_cast<uint64_t>(potential));
    };
    const std::vector<PodDisruptionBudget>& pdbs = objects().pdbs;
    PostFilterResult r = cycle::PostFilter(*host, pod, statuses, pdbs, options);
    if (r.status.refused) {  // the dry run reached what kplace does not model
      out.code = Code::kError;
      out.message = r.status.Message();
      return std::move(out);
    }
    // Success and anything but Unschedulable answer alone; Unschedulable joins the reasons.
    if (r.status.code == Code::kUnschedulable) reasons.insert(reasons.end(), r.status.reasons.begin(), r.status.reasons.end());
    std::string msg = r.status.code == Code::kUnschedulable ? joined() : r.status.Message();
    if (r.status.code == Code::kError) out.code = Code::kError;
    PreemptionOutcome& po = out.preemption.emplace();
    if (options_.explain) ExplainPostFilter(r, &po);  // only explain reads the dry run's details
    if (!r.has_result) return finish(std::move(msg));
    if (!r.status.IsSuccess()) {
      ClearNomination(pod);
      return finish(std::move(msg));
    }
    po.nominated_node = r.nominated_node;
    for (const Pod* v : r.victims) po.victims.push_back(ObjectKey(v->meta));
    Pod nominated = pod;
    nominated.nominated_node_name = r.nominated_node;
    // Lower-priority pods nominated to the same node lose their nomination.
    for (auto it = nominated_.begin(); it != nominated_.end();) {
      bool lower = it->second.nominated_node_name == r.nominated_node && PodPriority(it->second) < PodPriority(pod);
      it = lower ? nominated_.erase(it) : std::next(it);
    }
    Nominate(nominated);
    Actuate(r.victims, profile.scheduler_name);
    return finish(std::move(msg));
  }

  // The dry run's candidates, their criteria and the nodes it ruled out, by name.
  void ExplainPostFilter(const PostFilterResult& r, PreemptionOutcome* po) const {
    for (const Candidate& c : r.candidates) {
      PreemptionOutcome::Candidate pc{objects().nodes[c.node].meta.name, {}, c.num_pdb_violations, {}};
      for (const Pod* v : c.victims) pc.victims.push_back(ObjectKey(v->meta));
      for (int32_t k = 0; k < kNumCandidateCriteria; ++k) pc.scores.push_back(CandidateScore(c, k));
      po->candidates.push_back(std::move(pc));
    }
    po->decided_by = r.decided_by < kNumCandidateCriteria ? kCandidateCriteria[r.decided_by] : "first found";
    for (size_t row = 0; row < r.dry_run_statuses.of_row.size(); ++row) {
      const int32_t row_i = static_cast<int32_t>(row);
      if (r.dry_run_statuses.Has(row_i)) po->rejected[objects().nodes[row].meta.name] = r.dry_run_statuses.Get(row_i).Message();
    }
  }

  void ClearNomination(const Pod& pod) { nominated_.erase(ObjectKey(pod.meta)); }

  // The victims get DisruptionTarget and a deletion timestamp (a pod update); they leave the
  // cluster when CompleteDeletions runs (the caller's model of graceful termination).
  void Actuate(const std::vector<const Pod*>& victims, const std::string& scheduler_name) {
    for (const Pod* v : victims) {
      if (!v->meta.deletion_timestamp.empty()) continue;
      const std::string key = ObjectKey(v->meta);
      auto it = pods_.find(key);
      if (it == pods_.end()) continue;
      PodBox p = RemovePod(it, /*keep=*/true);
      p[0].meta.deletion_timestamp = "1970-01-01T00:00:00Z";
      p[0].conditions.insert(p[0].conditions.begin(), PodCondition{"DisruptionTarget", "True", "PreemptionByScheduler",
                                                               StrCat(scheduler_name, ": preempting to accommodate a higher priority pod")});
      AddPod(std::move(p), next_seq_++, key);
      terminating_.insert(key);
    }
  }

  // Builds the state of every profile over `objects` (kept alive by the scheduler); `seqs`
  // (when not empty) are the pods' entry numbers, else their positions.
  absl::Status Build(const ObjectSet& objects, const std::vector<uint64_t>& seqs = {}) {
    pods_.clear();
    waiting_for_node_ = 0;
    evaluators_.clear();
    for (auto& b : batches_) b->AddStats(&retired_stats_);
    batches_.clear();
    node_index_.clear();
    std::vector<const Node*> nodes;
    for (const Node& n : objects.nodes) {
      node_index_.emplace(n.meta.name, static_cast<NodeIndex>(nodes.size()));
      nodes.push_back(&n);
    }
    zones_.clear();
    zone_of_.clear();
    for (NodeIndex i = 0; i < static_cast<NodeIndex>(nodes.size()); ++i) {
      if (node_index_.at(nodes[i]->meta.name) == i) JoinZone(*nodes[i], i);  // the tree ignores a repeated add
    }
    InterleaveZones();
    if (options_.reference) {
      auto volume_assume = state_.volume_assume;
      state_ = reference::MakeClusterState(objects, options_.gates);
      if (volume_assume) state_.volume_assume = volume_assume;  // what Reserve assumed so far stays
      for (const Profile& p : config_.profiles) {
        auto e = std::make_unique<ReferenceEvaluator>(p, &state_);
        KPLACE_RETURN_IF_ERROR(e->Init(options_.gates));
        evaluators_.push_back(std::move(e));
      }
    } else {
      // What VolumeBinding assumed for pods bound so far stays across a rebuild.
      std::shared_ptr<plugins::volume::VolumeAssumeCache> assumed = std::move(carried_assume_);
      if (!assumed && snapshot_) assumed = snapshot_->shared_volume_assume_cache();
      snapshot_.reset();
      snapshot_ = std::make_unique<engine::Snapshot>(objects, options_.gates, std::move(assumed));
      for (const Profile& p : config_.profiles) {
        std::string error;
        auto fw = engine::Framework::Create(options_.backend, p, options_.gates, &error);
        if (!fw) return absl::InvalidArgumentError(StrCat("profile \"", p.scheduler_name, "\": ", error));
        fw->Prepare(*snapshot_);
        evaluators_.push_back(
            std::make_unique<EngineEvaluator>(std::move(fw), options_.backend == engine::Backend::kOmp));
      }
      if (options_.batch > 1 && !options_.explain) {
        batches_.resize(evaluators_.size());
        for (size_t e = 0; e < evaluators_.size(); ++e) RestartBatch(e);
      }
    }
    // Every pod with a node is the scheduler's; pending ones are the caller's queue.
    for (size_t k = 0; k < objects.pods.size(); ++k) {
      const Pod& p = objects.pods[k];
      if (p.node_name.empty()) continue;
      const uint64_t seq = seqs.empty() ? k : seqs[k];
      const NodeIndex node = InSnapshot(p);
      pods_[ObjectKey(p.meta)] = LivePod{&p, node, seq, {}};
      waiting_for_node_ += WaitsForNode(p, node);
      next_seq_ = std::max(next_seq_, seq + 1);
    }
    return absl::OkStatus();
  }

  // The node a bound pod counts on, kNoId when none does (a node not in the cluster, a pod
  // that finished): where Snapshot and MakeClusterState place it.
  // A pod bound to a node the cluster does not have (yet): it counts when that node joins.
  // Compared as views: inline, with no strlen per pod event.
  static bool Finished(const Pod& p) {
    const std::string_view phase = p.phase;
    return phase == "Succeeded" || phase == "Failed";
  }
  static bool WaitsForNode(const Pod& p, NodeIndex node) {
    return node == engine::kNoId && !p.node_name.empty() && !Finished(p);
  }

  NodeIndex InSnapshot(const Pod& p) const {
    if (p.node_name.empty() || Finished(p)) return engine::kNoId;
    auto it = node_index_.find(p.node_name);
    return it == node_index_.end() ? engine::kNoId : it->second;
  }

  // The scheduler's pods in the order they entered: what a fresh scheduler is built from.
  std::vector<const LivePod*> PodsInOrder() const {
    std::vector<const LivePod*> out;
    out.reserve(pods_.size());
    for (const auto& [key, p] : pods_) out.push_back(&p);
    std::sort(out.begin(), out.end(), [](const LivePod* a, const LivePod* b) { return a->seq < b->seq; });
    return out;
  }

  // Every object but pods, the nodes in the node tree's order (zone after zone): a fresh
  // scheduler builds the same tree from this list. Rows of nodes that left are not in it.
  ObjectSet NonPods() const {
    const ObjectSet& o = objects();
    ObjectSet out;
    out.nodes.reserve(order_.size());
    for (const auto& zone : zones_) {
      for (NodeIndex i : zone) out.nodes.push_back(o.nodes[i]);
    }
    out.namespaces = o.namespaces;
    out.workloads = o.workloads;
    out.storage = o.storage;
    out.configs = o.configs;
    out.pdbs = o.pdbs;
    out.priority_classes = o.priority_classes;
    out.resource_claims = o.resource_claims;
    out.resource_claim_templates = o.resource_claim_templates;
    out.device_classes = o.device_classes;
    out.resource_slices = o.resource_slices;
    return out;
  }

  const std::shared_ptr<plugins::volume::VolumeAssumeCache>& AssumeCache() const {
    return options_.reference ? state_.volume_assume : snapshot_->shared_volume_assume_cache();
  }

  // Puts `pod` (bound: node_name set) into the cluster with entry number `seq`: on its node
  // at the place its number gives, or kept aside when no node counts it.
  void AddPod(PodBox pod, uint64_t seq, std::string key) {
    const NodeIndex node = InSnapshot(pod[0]);
    const Pod* stored = pod.data();
    if (node == engine::kNoId) {
      waiting_for_node_ += WaitsForNode(*stored, node);
    } else {
      const std::vector<const Pod*>& on = options_.reference ? state_.nodes[node].pods : snapshot_->pods_on(node);
      size_t pos = on.size();
      // A new pod goes last; an undone removal goes back between its neighbours.
      if (seq + 1 < next_seq_) {
        while (pos > 0 && SeqOf(*on[pos - 1]) > seq) --pos;
      }
      if (options_.reference) {
        auto& list = state_.nodes[node].pods;
        list.insert(list.begin() + static_cast<std::ptrdiff_t>(pos), stored);
      } else {
        snapshot_->Attach(*stored, node, pos);
        for (auto& e : evaluators_) static_cast<EngineEvaluator*>(e.get())->framework().Bind(*stored, node);
        for (auto& b : batches_) b->NoteOtherBind();
      }
    }
    next_seq_ = std::max(next_seq_, seq + 1);
    if (Logging()) undo_.push_back(UndoEntry{UndoEntry::kRemovePod, key, {}, 0, nullptr});
    pods_[std::move(key)] = LivePod{stored, node, seq, std::move(pod)};
  }

  uint64_t SeqOf(const Pod& p) const {
    auto it = pods_.find(ObjectKey(p.meta));
    return it == pods_.end() ? 0 : it->second.seq;
  }

  // Takes the pod with `key` out of the cluster: its node gets back what it held. Returns
  // the pod when `keep` (else null).
  PodBox RemovePod(const std::string& key, bool keep = false) {
    auto it = pods_.find(key);
    if (it == pods_.end()) return {};
    return RemovePod(it, keep);
  }

  PodBox RemovePod(absl::flat_hash_map<std::string, LivePod>::iterator it, bool keep = false) {
    const std::string& key = it->first;
    LivePod& live = it->second;
    waiting_for_node_ -= WaitsForNode(*live.pod, live.node);
    if (live.node != engine::kNoId) {
      if (options_.reference) {
        auto& list = state_.nodes[live.node].pods;
        list.erase(std::find(list.begin(), list.end(), live.pod));
      } else {
        snapshot_->Unbind(live.pod, live.node);
        bool kept = true;
        for (auto& e : evaluators_) kept = static_cast<EngineEvaluator*>(e.get())->framework().Unbind(*live.pod, live.node) && kept;
        for (size_t e = 0; e < batches_.size(); ++e) {
          if (kept) {
            batches_[e]->NoteOtherBind();
          } else {
            RestartBatch(e);
          }
        }
      }
    }
    PodBox pod = std::move(live.own);
    if (pod.empty() && (keep || Logging())) pod = PodBox(1, *live.pod);
    if (Logging()) {
      undo_.push_back(UndoEntry{UndoEntry::kRestorePod, key, keep ? pod : std::move(pod), live.seq, nullptr});
    }
    pods_.erase(it);
    return pod;
  }

  // Inside a transaction every step logs its inverse.
  bool Logging() const { return !savepoints_.empty(); }

  absl::Status ApplyPod(state::ClusterEvent&& event) {
    Pod& pod = event.object.pods[0];
    probe_.clear();
    if (!pod.meta.namespace_.empty()) probe_.append(pod.meta.namespace_).append(1, '/');
    probe_.append(pod.meta.name);  // ObjectKey's text
    const std::string& key = probe_;
    auto it = pods_.find(key);
    const bool known = it != pods_.end();
    const bool bound = !pod.node_name.empty();
    switch (event.type) {
      case state::EventType::kAdded:
        if (known) return absl::AlreadyExistsError(StrCat(event.where, ": Pod ", key, " already exists"));
        if (!bound) return NotePending(pod);
        break;
      case state::EventType::kModified:
        if (!known && !bound) return NotePending(pod);
        if (known && !bound) {
          return absl::InvalidArgumentError(StrCat(event.where, ": Pod ", key, ": spec.nodeName: a bound pod cannot become unbound (node \"",
                                                   it->second.pod->node_name, "\")"));
        }
        if (known) RemovePod(it);  // upstream's cache: an update removes, then adds
        break;
      case state::EventType::kDeleted:
        if (!known) {
          if (nominated_.count(key) || !bound) {
            ClearNomination(pod);
            return absl::OkStatus();
          }
          return absl::NotFoundError(StrCat(event.where, ": Pod ", key, " not found (DELETED)"));
        }
        RemovePod(it);
        if (!terminating_.empty()) terminating_.erase(key);
        return absl::OkStatus();
    }
    if (nominated_.count(key)) ClearNomination(pod);  // bound by someone else
    if (!pod.meta.deletion_timestamp.empty()) terminating_.insert(key);
    pod.nominated_node_name.clear();
    PodBox box;
    if (event.object.pods.size() == 1) {
      box = std::move(event.object.pods);
    } else {
      box.push_back(std::move(pod));
    }
    AddPod(std::move(box), next_seq_++, std::string(key));
    return absl::OkStatus();
  }

  // A pending pod's change: only its nomination is the scheduler's (the queue is the caller's).
  absl::Status NotePending(const Pod& pod) {
    if (!pod.nominated_node_name.empty()) {
      Nominate(pod);
    } else if (nominated_.count(ObjectKey(pod.meta))) {
      ClearNomination(pod);
    }
    return absl::OkStatus();
  }

  // A change of a kind other than Pod. On the engine a node that joins, leaves or changes
  // (within its zone or to another) is changed in place (its columns and its place in the
  // node tree), on the reference it joins or changes within its zone in place; Services,
  // workloads, PodDisruptionBudgets and PriorityClasses change in place on both; anything
  // else rebuilds. `at`: a position to put an object back at (an undo).
  absl::Status ApplyObjects(const state::ClusterEvent& event, std::optional<size_t> at = std::nullopt) {
    if (live_ && !at && event.type == state::EventType::kAdded && !event.object.nodes.empty() &&
        live_->nodes.size() < live_->nodes.capacity()) {
      const Node& node = event.object.nodes[0];
      if (node_index_.count(node.meta.name)) {
        return absl::AlreadyExistsError(StrCat(event.where, ": Node ", node.meta.name, " already exists"));
      }
      AddNode(node);
      return absl::OkStatus();
    }
    if (live_ && !options_.reference && event.type == state::EventType::kDeleted && !event.object.nodes.empty()) {
      auto it = node_index_.find(event.object.nodes[0].meta.name);
      if (it != node_index_.end()) return RemoveNode(it->second);  // else the object set's NotFound below
    }
    if (live_ && (!event.object.workloads.empty() || !event.object.pdbs.empty() || !event.object.priority_classes.empty() ||
                  HasResourceObjects(event.object))) {
      // Read afresh in each cycle (default spread selectors, preemption's budgets,
      // DynamicResources' claims and classes), kept by no plugin: changed in place.
      return ChangeInPlace(event, at, /*namespaces=*/false);
    }
    if (live_ && !options_.reference && !event.object.namespaces.empty()) {
      // Only InterPodAffinity reads namespaces (their labels): it reads them again. The
      // reference rebuilds, so the differential tests check this against a fresh state.
      return ChangeInPlace(event, at, /*namespaces=*/true);
    }
    if (live_ && event.type == state::EventType::kModified && !event.object.nodes.empty()) {
      const Node& node = event.object.nodes[0];
      auto it = node_index_.find(node.meta.name);
      if (it != node_index_.end() && ZoneKey(live_->nodes[it->second]) == ZoneKey(node)) {
        UpdateNode(it->second, node);
        return absl::OkStatus();
      }
      // Another zone: in place on the engine. The reference rebuilds, its tree made afresh
      // from the object set's list (state::ApplyToObjects moves the node there), so the
      // differential tests check this move against an independent one.
      if (it != node_index_.end() && !options_.reference && !at) {
        MoveNode(it->second, node);
        return absl::OkStatus();
      }
    }
    return RebuildWith(event, at);
  }

  // An object no plugin keeps (or, `namespaces`, that only InterPodAffinity reads again)
  // changed in the live object set; batched runs compiled against the old one start again.
  absl::Status ChangeInPlace(const state::ClusterEvent& event, std::optional<size_t> at, bool namespaces) {
    auto undo = std::make_unique<state::Undo>();
    KPLACE_RETURN_IF_ERROR(state::ApplyToObjects(event, live_.get(), undo.get(), at));
    if (namespaces) {
      for (auto& e : evaluators_) static_cast<EngineEvaluator*>(e.get())->framework().NamespacesChanged();
    }
    for (size_t e = 0; e < batches_.size(); ++e) RestartBatch(e);
    if (Logging()) undo_.push_back(UndoEntry{UndoEntry::kObjects, "", {}, 0, std::move(undo)});
    return absl::OkStatus();
  }

  void JoinZone(const Node& node, NodeIndex i) {
    auto [it, fresh] = zone_of_.emplace(ZoneKey(node), zones_.size());
    if (fresh) zones_.emplace_back();
    zones_[it->second].push_back(i);
  }

  // The node tree's list: one node of each zone in turn (ZoneRoundRobinOrder).
  void InterleaveZones() {
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

  // A node joins in place: the last index everywhere, the end of its zone in the node tree
  // (which is also where a fresh tree built from Objects() puts it). Pods already bound to
  // its name (left by an earlier node of that name) count on it again.
  void AddNode(const Node& node) {
    live_->nodes.push_back(node);  // capacity was reserved: the others do not move
    const Node* stored = &live_->nodes.back();
    const NodeIndex i = static_cast<NodeIndex>(live_->nodes.size() - 1);
    node_index_.emplace(node.meta.name, i);
    // Its place in the tree's list: after every node of earlier rounds, and after the nodes
    // of this round in zones before its own.
    const size_t zone = zone_of_.count(ZoneKey(node)) ? zone_of_.at(ZoneKey(node)) : zones_.size();
    const size_t round = zone < zones_.size() ? zones_[zone].size() : 0;
    size_t pos = 0;
    for (size_t z = 0; z < zones_.size(); ++z) {
      pos += std::min(zones_[z].size(), round);
      if (z < zone && zones_[z].size() > round) ++pos;
    }
    JoinZone(node, i);
    order_.insert(order_.begin() + static_cast<std::ptrdiff_t>(pos), i);
    if (options_.reference) {
      state_.nodes.push_back(reference::NodeInfo{stored, {}});
    } else {
      snapshot_->AddNode(stored);
      for (auto& e : evaluators_) static_cast<EngineEvaluator*>(e.get())->framework().AddNode(i);
      for (size_t e = 0; e < batches_.size(); ++e) RestartBatch(e);
    }
    if (Logging()) {
      auto undo = std::make_unique<state::Undo>();
      undo->event = state::NodeEvent(state::EventType::kDeleted, node);
      undo_.push_back(UndoEntry{UndoEntry::kObjects, "", {}, 0, std::move(undo)});
    }
    if (waiting_for_node_ == 0) return;
    std::vector<std::pair<uint64_t, std::string>> back;
    for (const auto& [key, p] : pods_) {
      if (p.node == engine::kNoId && p.pod->node_name == node.meta.name) back.emplace_back(p.seq, key);
    }
    std::sort(back.begin(), back.end());
    Reseat(back);
  }

  // Takes each pod (entry number, key) out and puts it back with its number: it lands where
  // its node name now leads (a node, or waiting for one).
  void Reseat(const std::vector<std::pair<uint64_t, std::string>>& pods) {
    for (const auto& [seq, key] : pods) {
      AddPod(RemovePod(key, /*keep=*/true), seq, key);
    }
  }

  // zone_of_ after zones_ changed.
  void IndexZones() {
    zone_of_.clear();
    for (size_t z = 0; z < zones_.size(); ++z) zone_of_.emplace(ZoneKey(objects().nodes[zones_[z].front()]), z);
  }

  // A node leaves in place (the engine's path): its row stays, nameless and empty, so no
  // other node moves; it leaves the node tree (its zone too, when it was the last there)
  // and every count. Its pods wait for a node of its name, as upstream's cache keeps them.
  absl::Status RemoveNode(NodeIndex i) {
    const std::string name = live_->nodes[i].meta.name;
    node_index_.erase(name);
    std::vector<std::pair<uint64_t, std::string>> on;
    for (const Pod* p : snapshot_->pods_on(i)) {
      std::string key = ObjectKey(p->meta);
      on.emplace_back(pods_.at(key).seq, std::move(key));
    }
    Reseat(on);  // counted out while the node still has its labels
    const TreePlace was = LeaveZone(i);
    InterleaveZones();
    Node old = std::exchange(live_->nodes[i], Node{});
    ChangeRow(i, old);
    removed_rows_.emplace(i, name);
    if (Logging()) {
      LogTreeUndo(UndoEntry::kRestoreNode, state::EventType::kAdded, std::move(old), i, was);
      return absl::OkStatus();
    }
    // Rows of nodes that left cost every pass over all rows: dropped by a rebuild once they
    // are as many as the nodes (amortized, a rebuild's cost per node).
    if (removed_rows_.size() >= 64 && 2 * removed_rows_.size() >= live_->nodes.size()) return Rebuild(NonPods(), false);
    return absl::OkStatus();
  }

  // The undo of RemoveNode: `node` takes row i back, at its old place in the node tree
  // (`zone`: its zone's place, made again when it was gone; `pos`: its place in the zone).
  void ReviveNode(NodeIndex i, const Node& node, size_t zone, size_t pos) {
    removed_rows_.erase(i);
    Node blank = std::exchange(live_->nodes[i], node);
    node_index_.emplace(node.meta.name, i);
    EnterZone(i, zone, pos);
    InterleaveZones();
    ChangeRow(i, blank);
  }

  // A node's place in the node tree: its zone's index in zones_, its index in the zone,
  // and its index in the list Objects() gives (zone after zone).
  struct TreePlace {
    size_t zone = 0, pos = 0, list_pos = 0;
  };

  // Node i leaves its zone in the node tree (upstream's nodeTree.removeNode): a zone left
  // empty is dropped. Returns where it was. order_ is the caller's (InterleaveZones).
  TreePlace LeaveZone(NodeIndex i) {
    TreePlace was;
    was.zone = zone_of_.at(ZoneKey(live_->nodes[i]));
    std::vector<NodeIndex>& zone = zones_[was.zone];
    was.pos = static_cast<size_t>(std::find(zone.begin(), zone.end(), i) - zone.begin());
    was.list_pos = was.pos;
    for (size_t k = 0; k < was.zone; ++k) was.list_pos += zones_[k].size();
    zone.erase(zone.begin() + static_cast<std::ptrdiff_t>(was.pos));
    if (zone.empty()) {
      zones_.erase(zones_.begin() + static_cast<std::ptrdiff_t>(was.zone));
      IndexZones();
    }
    return was;
  }

  // The undo of LeaveZone: node i (its labels name the zone) goes back to place `pos` of
  // zone `zone`, the zone made again at its index when it was dropped.
  void EnterZone(NodeIndex i, size_t zone, size_t pos) {
    if (zone_of_.count(ZoneKey(live_->nodes[i]))) {
      std::vector<NodeIndex>& members = zones_[zone];
      members.insert(members.begin() + static_cast<std::ptrdiff_t>(pos), i);
    } else {
      zones_.insert(zones_.begin() + static_cast<std::ptrdiff_t>(zone), std::vector<NodeIndex>{i});
      IndexZones();
    }
  }

  // Logs a node-tree step's undo: `old` (the node as it was) applied as `type` at its list
  // place, with its place in the tree.
  void LogTreeUndo(UndoEntry::What what, state::EventType type, Node old, NodeIndex row, const TreePlace& was) {
    auto undo = std::make_unique<state::Undo>();
    undo->event = state::NodeEvent(type, std::move(old));
    undo->index = was.list_pos;
    undo_.push_back(UndoEntry{what, "", {}, 0, std::move(undo), row, static_cast<uint32_t>(was.zone),
                              static_cast<uint32_t>(was.pos)});
  }

  // Node i's zone changes (the engine's path): the node tree removes it from its zone and
  // adds it to the new one, last there (a new zone last), as upstream's nodeTree.updateNode
  // does; every plugin sees an ordinary in-place update of its labels. `back` (an undo)
  // puts it at that place in the tree instead.
  void MoveNode(NodeIndex i, const Node& node, std::optional<TreePlace> back = std::nullopt) {
    const TreePlace was = LeaveZone(i);
    Node old = std::exchange(live_->nodes[i], node);
    if (back) {
      EnterZone(i, back->zone, back->pos);
    } else {
      JoinZone(node, i);
    }
    InterleaveZones();
    ChangeRow(i, old);
    if (Logging()) LogTreeUndo(UndoEntry::kMoveNode, state::EventType::kModified, std::move(old), i, was);
  }

  // Row i's Node object changed (from `old`): the snapshot and every profile's plugins.
  void ChangeRow(NodeIndex i, const Node& old) {
    snapshot_->UpdateNode(i, old);
    for (auto& e : evaluators_) static_cast<EngineEvaluator*>(e.get())->framework().UpdateNode(i, old);
    for (size_t e = 0; e < batches_.size(); ++e) RestartBatch(e);
  }

  // Node i changes in place: the snapshot, the reference and every plugin keep the same
  // Node object, now holding `node`.
  void UpdateNode(NodeIndex i, const Node& node) {
    Node old = live_->nodes[i];
    live_->nodes[i] = node;
    if (!options_.reference) ChangeRow(i, old);
    if (Logging()) {
      auto undo = std::make_unique<state::Undo>();
      undo->event = state::NodeEvent(state::EventType::kModified, old);
      undo->index = static_cast<size_t>(i);
      undo_.push_back(UndoEntry{UndoEntry::kObjects, "", {}, 0, std::move(undo)});
    }
  }

  // Applies a change of a kind other than Pod and builds every profile's state again over
  // the result (O(cluster)); `at` puts the object back at a position (an undo).
  absl::Status RebuildWith(const state::ClusterEvent& event, std::optional<size_t> at) {
    ObjectSet next = NonPods();
    state::Undo undo;
    KPLACE_RETURN_IF_ERROR(state::ApplyToObjects(event, &next, &undo, at));
    KPLACE_RETURN_IF_ERROR(Rebuild(std::move(next), /*storage_changed=*/!event.object.storage.empty()));
    if (Logging()) undo_.push_back(UndoEntry{UndoEntry::kObjects, "", {}, 0, std::make_unique<state::Undo>(std::move(undo))});
    return absl::OkStatus();
  }

  // Every profile's state built again over `next` (every object but pods) and the pods the
  // scheduler holds, in their entry order.
  absl::Status Rebuild(ObjectSet next, bool storage_changed) {
    // The batch states name nodes by row; rows are renumbered below.
    std::vector<std::string> row_names(objects().nodes.size());
    for (size_t i = 0; i < row_names.size(); ++i) {
      if (LiveRow(static_cast<NodeIndex>(i))) row_names[i] = objects().nodes[i].meta.name;
    }
    absl::Status built = RebuildRows(std::move(next), storage_changed);
    auto row = [&](int32_t old) {
      if (old < 0 || static_cast<size_t>(old) >= row_names.size() || row_names[old].empty()) return -1;
      auto it = node_index_.find(row_names[old]);
      return it == node_index_.end() ? -1 : it->second;
    };
    for (OpportunisticBatch& b : opp_) b.Remap(row);
    for (Savepoint& sp : savepoints_) {
      for (OpportunisticBatch& b : sp.opp) b.Remap(row);
    }
    return built;
  }

  absl::Status RebuildRows(ObjectSet next, bool storage_changed) {
    std::vector<uint64_t> seqs;
    for (const LivePod* p : PodsInOrder()) {
      next.pods.push_back(*p->pod);
      seqs.push_back(p->seq);
    }
    // Storage changed: VolumeBinding's assumptions were made against the old objects.
    std::shared_ptr<plugins::volume::VolumeAssumeCache> keep = storage_changed ? nullptr : AssumeCache();
    evaluators_.clear();
    batches_.clear();
    snapshot_.reset();
    state_ = reference::ClusterState{};
    pods_.clear();
    if (!live_) live_ = std::make_unique<ObjectSet>();
    *live_ = std::move(next);
    live_->nodes.reserve(2 * live_->nodes.size() + 64);  // room for nodes that join in place
    if (options_.reference) {
      state_.volume_assume = keep;
    } else {
      carried_assume_ = keep;  // null: the snapshot starts a new one
    }
    removed_rows_.clear();
    return Build(*live_, seqs);
  }

  void RestartBatch(size_t e) {
    if (batches_.empty()) return;
    if (batches_[e]) batches_[e]->AddStats(&retired_stats_);
    batches_[e] = std::make_unique<BatchCycle>(&static_cast<EngineEvaluator*>(evaluators_[e].get())->framework(),
                                               &order_, options_.batch);
  }

  void Explain(Explanation& ex, const std::vector<NodeIndex>& feasible, const Evaluator::ScoreOutcome& s) {
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

  Placement ScheduleBatched(const Pod& pod, BatchCycle& batch, const Profile& profile, Placement out) {
    const int32_t percentage = profile.percentage_of_nodes_to_score.value_or(config_.percentage_of_nodes_to_score);
    BatchCycle::Decision d = batch.Schedule(pod, percentage, options_.tie_break, &rng_, &next_start_,
                                            options_.time_extension_points ? &out.times : nullptr);
    out.code = d.code;
    out.message = std::move(d.message);
    out.feasible = d.feasible;
    out.score = d.score;
    out.unschedulable_plugins = std::move(d.unschedulable_plugins);
    if (d.host >= 0) {
      out.node = objects().nodes[d.host].meta.name;
      {
        const PointTimer timer(options_.time_extension_points ? &out.times : nullptr, kTimedReserve);
        Bind(pod, d.host);
      }
      for (auto& other : batches_) {
        if (other.get() != &batch) other->NoteOtherBind();
      }
    }
    return out;
  }

  void Bind(const Pod& pod, NodeIndex host) {
    PodBox own(1, pod);  // one copy (a braced list would copy twice)
    own[0].node_name = objects().nodes[host].meta.name;
    const Pod* stored = own.data();
    if (options_.reference) {
      for (auto& e : evaluators_) static_cast<ReferenceEvaluator*>(e.get())->Reserve(pod, host);
      own[0].nominated_node_name.clear();
      state_.nodes[host].pods.push_back(stored);
    } else {
      snapshot_->Attach(*stored, host, snapshot_->pods_on(host).size());
      for (auto& e : evaluators_) static_cast<EngineEvaluator*>(e.get())->framework().Bind(*stored, host);
    }
    const std::string key = ObjectKey(pod.meta);
    pods_[key] = LivePod{stored, host, next_seq_++, std::move(own)};
    if (Logging()) undo_.push_back(UndoEntry{UndoEntry::kRemovePod, key, {}, 0, nullptr});
    // Last: `pod` may be the nomination itself.
    if (!nominated_.empty()) ClearNomination(pod);
  }

  const ObjectSet& cluster_;
  std::unique_ptr<ObjectSet> live_;  // the objects after the first change to a kind other than Pod
  SchedulerConfig config_;
  Options options_;
  std::mt19937_64 rng_;
  std::mt19937_64 preempt_rng_;  // the dry run's start offset (upstream: rand.Int31n)
  std::vector<int32_t> order_;
  std::vector<std::vector<int32_t>> zones_;  // the node tree: zones in order, nodes in each
  std::unordered_map<std::string, size_t> zone_of_;  // zone key -> index in zones_
  std::unordered_map<std::string, NodeIndex> node_index_;
  std::unordered_map<NodeIndex, std::string> removed_rows_;  // rows of nodes that left, their names
  int32_t next_start_ = 0;
  std::vector<std::unique_ptr<Evaluator>> evaluators_;
  std::vector<std::unique_ptr<ReferenceEvaluator>> dry_;  // per profile: the dry run's plugins
  std::vector<std::unique_ptr<BatchCycle>> batches_;      // per evaluator, when batched
  BatchStats retired_stats_;                              // of runs replaced by RestartBatch
  std::unique_ptr<engine::Snapshot> snapshot_;
  reference::ClusterState state_;
  reference::ClusterState dry_state_;  // the engine's snapshot as the reference sees it
  // Every pod with a node, by key: flat (no node allocated per pod event), pointers to
  // entries are not kept across changes.
  absl::flat_hash_map<std::string, LivePod> pods_;
  std::string probe_;  // ApplyPod's key, built without an allocation once it has grown
  int64_t waiting_for_node_ = 0;  // of those, bound to a node the cluster lacks
  uint64_t next_seq_ = 0;
  std::shared_ptr<plugins::volume::VolumeAssumeCache> carried_assume_;  // across RebuildWith
  std::vector<Savepoint> savepoints_;  // open transactions, outermost first
  std::vector<UndoEntry> undo_;
  std::map<std::string, Pod> nominated_;  // pending pods holding a nomination, by key
  plugins::dra::ResourceIndex dra_index_;  // DynamicResources' claim lookups in PreEnqueue, PreBind, PostFilter
  std::set<std::string> terminating_;     // victims whose deletion is pending
  // OpportunisticBatching, per profile: whether it signs pods, and its batch state.
  std::vector<bool> signs_;
  std::vector<PodSigner> signers_;
  std::vector<OpportunisticBatch> opp_;
  int64_t cycle_ = 0;          // scheduling cycles so far, every profile's
  bool expire_batch_ = false;  // ExpireBatchState, for the next cycle
  int64_t expired_cycle_ = -1;
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

std::vector<Placement> Scheduler::ScheduleAll(const std::vector<Pod>& pending,
                                             const std::function<bool(const Placement&)>& each) {
  const std::vector<size_t> order = QueueOrder(pending);
  std::vector<Placement> out(order.size());
  for (size_t q = 0; q < order.size(); ++q) out[q].attempts = 0;
  std::map<std::string, size_t> slot;
  for (size_t q = 0; q < order.size(); ++q) {
    const Pod& pod = pending[order[q]];
    slot[ObjectKey(pod.meta)] = q;
    if (!pod.nominated_node_name.empty() && pod.node_name.empty()) Nominate(pod);
  }
  std::vector<size_t> queue(order.size());
  std::iota(queue.begin(), queue.end(), 0);
  std::vector<int32_t> attempts(order.size(), 0);
  while (!queue.empty()) {
    std::vector<size_t> failed;
    bool preempted = false;
    bool stop = false;
    for (size_t q : queue) {
      Placement p = Schedule(pending[order[q]]);
      stop = each && !each(p);
      if (p.node.empty() && !p.gated && !p.other_scheduler) failed.push_back(q);
      bool preempts = p.preemption && !p.preemption->victims.empty();
      preempted = preempted || preempts;
      // A retry that did not preempt keeps the record of the preemption that led to it.
      if (!preempts && out[q].preemption && !out[q].preemption->victims.empty()) p.preemption = out[q].preemption;
      p.attempts = ++attempts[q];
      out[q] = std::move(p);
      if (stop) break;
    }
    if (!preempted || stop) break;
    // The victims' deletion completes; every pod that failed in the round is tried again.
    for (const std::string& gone : CompleteDeletions()) {
      auto it = slot.find(gone);
      if (it != slot.end()) out[it->second].preempted = true;
    }
    queue = std::move(failed);
  }
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
