#pragma once
// What the cycle asks of a profile's plugins, on the engine (kernels over the columns) or
// on the scalar reference. Node indices are rows of the cluster's snapshot.
#include <cstdint>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "kplace/config/config.h"
#include "kplace/cycle/preemption.h"
#include "kplace/engine/framework.h"
#include "kplace/reference/plugin.h"

namespace kplace::cycle {

using engine::NodeIndex;

class Evaluator {
 public:
  struct PreFilterOutcome {
    PluginStatus status;
    bool restricted = false;
    std::vector<NodeIndex> allowed;      // sorted
    std::string absent_reason;           // "node(s) didn't satisfy plugin(s) [...]"
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

/** "node(s) didn't satisfy plugin(s) [A B]" for the restricting PreFilter plugins. */
std::string AbsentReason(std::vector<std::string> plugins);

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

  PreFilterOutcome PreFilter(const Pod& pod) override;
  void BeginScan(const std::vector<NodeIndex>* candidates, int32_t start, int32_t k, int32_t rows) override;
  int64_t VerdictKey(NodeIndex i) override;
  PluginStatus FilterNode(NodeIndex i, std::string* plugin) override;
  ScoreOutcome Score(const std::vector<NodeIndex>& feasible, bool per_plugin) override;
  ScoreOutcome Normalize(const std::vector<std::vector<int64_t>>& raw, const std::vector<bool>& skipped) override;

 private:
  int16_t FailedPlugin(NodeIndex i);
  void FilterChunkAt(NodeIndex i);
  void EnsureRows(size_t n);

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
  /** @return InvalidArgument naming the profile when a plugin is unknown. */
  absl::Status Init(const FeatureGates& gates);
  const Profile& profile() const override { return profile_; }

  PreFilterOutcome PreFilter(const Pod& pod) override;
  PluginStatus FilterNode(NodeIndex i, std::string* plugin) override;
  ScoreOutcome Score(const std::vector<NodeIndex>& feasible, bool per_plugin) override;
  ScoreOutcome Normalize(const std::vector<std::vector<int64_t>>& raw, const std::vector<bool>& skipped) override;

  /** The profile's PreFilter and Filter plugins in run order, for a ReferenceDryRunHost. */
  std::vector<ReferenceDryRunHost::Named> Plugins(const std::vector<std::string>& names);
  /** Reserve on `host` when `pod` is the pod this evaluator just ran a cycle for. */
  void Reserve(const Pod& pod, NodeIndex host);

 private:
  Profile profile_;
  reference::ClusterState* state_;
  std::map<std::string, std::unique_ptr<reference::Plugin>> plugins_;
  reference::CycleState cycle_;
  std::set<std::string> skip_filter_;
  const Pod* pod_ = nullptr;
};

}  // namespace kplace::cycle
