// The per-pod framework, compiled once per backend.
#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <limits>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>

#include <thrust/gather.h>
#include <thrust/scatter.h>

#include "kernels/backend.cuh"
#include "kplace/common/strings.h"
#include "kplace/engine/framework.h"

namespace kplace::KPLACE_BACKEND_NS {
namespace {

using engine::FilterResult;
using engine::NodeIndex;
using engine::PluginPreFilter;
using engine::PreFilterResult;
using engine::ScoreResult;
using engine::VerdictCode;

// Keeps the first failure per node: a plugin later in Filter order only fills nodes
// that every earlier plugin passed.
struct FirstFailureFn {
  int16_t plugin;
  KPLACE_HOST_DEVICE thrust::tuple<int16_t, VerdictCode> operator()(
      const thrust::tuple<int16_t, VerdictCode>& prev, VerdictCode code) const {
    if (thrust::get<0>(prev) != 0 || code == 0) return prev;
    return thrust::make_tuple(plugin, code);
  }
};

struct GatherPlusFn {
  const int64_t* values;
  int64_t offset;
  KPLACE_HOST_DEVICE int64_t operator()(NodeIndex i) const { return values[i] + offset; }
};

struct AddWeightedFn {
  int64_t weight;
  KPLACE_HOST_DEVICE int64_t operator()(int64_t total, int64_t s) const { return total + weight * s; }
};

/** Per-node marks ("held for this run") cleared in O(1): a node is marked when its stamp is
 *  the current epoch, so starting over bumps the epoch instead of writing every node (a
 *  distinct pod starts a run, and at 100,000 nodes clearing per-node bytes and sums cost
 *  more than its window). */
class NodeMarks {
 public:
  /** Not started since the last Stop. */
  bool empty() const { return !active_; }
  void Stop() { active_ = false; }
  /** Every one of `n` nodes unmarked. */
  void Start(int32_t n) {
    active_ = true;
    if (stamp_.size() != static_cast<size_t>(n) || ++epoch_ == 0) {
      stamp_.assign(n, 0);
      epoch_ = 1;
    }
  }
  bool held(NodeIndex i) const { return stamp_[i] == epoch_; }
  void Mark(NodeIndex i) { stamp_[i] = epoch_; }
  void Unmark(NodeIndex i) {
    if (static_cast<size_t>(i) < stamp_.size()) stamp_[i] = 0;
  }
  // For loops that read and mark through raw pointers: node i is held when stamps()[i] == epoch().
  uint32_t* stamps() { return stamp_.data(); }
  uint32_t epoch() const { return epoch_; }

 private:
  std::vector<uint32_t> stamp_;
  uint32_t epoch_ = 1;  // never 0, the stamp of a node unmarked
  bool active_ = false;
};

class BackendFramework final : public engine::Framework {
 public:
  BackendFramework(const Profile& profile, const FeatureGates& gates) : profile_(profile), gates_(gates) {}

  bool Init(std::string* error) {
    for (const std::string& name : profile_.AllPlugins()) {
      auto plugin = engine::MakePlugin(KPLACE_BACKEND_ID, name, profile_.args, gates_, error);
      if (!plugin) return false;
      by_name_.emplace_back(name, std::move(plugin));
    }
    for (const auto& n : profile_.pre_filter) pre_filter_.push_back(Find(n));
    for (const auto& n : profile_.filter) filter_.push_back(Find(n));
    for (const auto& n : profile_.pre_score) pre_score_.push_back(Find(n));
    for (const auto& w : profile_.score) score_.push_back(Find(w.name));
    return true;
  }

  engine::Backend backend() const override { return KPLACE_BACKEND_ID; }
  const Profile& profile() const override { return profile_; }
  const std::vector<std::string>& filter_plugins() const override { return profile_.filter; }

  void Prepare(const engine::Snapshot& snapshot) override {
    snapshot_ = &snapshot;
    for (auto& [name, plugin] : by_name_) plugin->Prepare(snapshot);
  }

  PreFilterResult PreFilter(const Pod& pod) override {
    StartPod(pod);
    return RunPreFilter(pod, /*in_run=*/false);
  }

  const PreFilterResult& PreFilterRun(const Pod& pod) override {
    pod_ = &pod;
    ++pod_count_;
    ++run_pods_;
    if (local_only_ && self_check_) {
      // Every pod of a local-only run asks the other plugins again: they must still skip.
      std::vector<std::pair<const engine::Plugin*, int64_t>> constant;
      std::string which;
      if (!OthersSkip(pod, *local_candidates_, &constant, &which) || constant != local_constant_) {
        run_pre_valid_ = false;
        run_pre_ = PreFilterResult{};
        run_pre_.status = PluginStatus::Error(StrCat("batched run: ", which, " no longer skips pod ", pod.meta.namespace_,
                                                     "/", pod.meta.name, " of a run only node-local plugins decide"));
        return run_pre_;
      }
    }
    if (local_only_ && run_pre_valid_) return run_pre_;
    if (!local_only_) {
      for (auto& [name, plugin] : by_name_) {
        if (!plugin->NodeLocal()) plugin->StartPod(pod, *snapshot_);
      }
    }
    run_pre_ = RunPreFilter(pod, /*in_run=*/true);
    run_pre_valid_ = local_only_;
    return run_pre_;
  }

  bool LocalOnlyRun(const Pod& pod, const std::vector<NodeIndex>& candidates) override {
    LeaveLocalOnly();
    std::vector<std::pair<const engine::Plugin*, int64_t>> constant;
    if (!OthersSkip(pod, candidates, &constant, nullptr)) return false;
    local_constant_ = std::move(constant);
    local_candidates_ = &candidates;
    local_only_ = true;
    return true;
  }

 private:
  /** What a PreFilter plugin gave; kept for node-local ones across a run. */
  struct PreFilterMemo {
    bool valid = false;
    PluginStatus status;
    std::vector<NodeIndex> nodes;
    bool restricts = false;
  };

  /** PreFilter plugin i on `pod`, or in a run on the run's first pod, once, when node-local. */
  PluginStatus CallPreFilter(size_t i, const Pod& pod, bool in_run, std::vector<NodeIndex>* nodes, bool* restricts) {
    engine::Plugin* p = pre_filter_[i];
    if (in_run && local_only_ && !p->NodeLocal()) return PluginStatus::Skip();
    if (!in_run || !p->NodeLocal()) return p->PreFilter(pod, *snapshot_, nodes, restricts);
    PreFilterMemo& m = run_pre_filter_[i];
    if (!m.valid) {
      m.status = p->PreFilter(*run_first_, *snapshot_, &m.nodes, &m.restricts);
      m.valid = true;
    }
    *nodes = m.nodes;
    *restricts = m.restricts;
    return m.status;
  }

  PreFilterResult RunPreFilter(const Pod& pod, bool in_run) {
    PreFilterResult out;
    out.skip_filter.assign(filter_.size(), false);
    std::vector<std::string_view>& skipped = pre_skipped_;  // names compared, never copied
    skipped.clear();
    for (size_t i = 0; i < pre_filter_.size(); ++i) {
      engine::Plugin* p = pre_filter_[i];
      std::vector<NodeIndex>& nodes = pre_nodes_;  // cleared per plugin, as a fresh vector would be
      nodes.clear();
      bool restricts = false;
      PluginStatus s = CallPreFilter(i, pod, in_run, &nodes, &restricts);
      if (s.IsSkip()) {
        skipped.push_back(p->Name());
        continue;
      }
      if (s.code == Code::kUnschedulableAndUnresolvable) {
        out.status = s;
        out.failed_plugin = p->Name();
        break;
      }
      if (s.code == Code::kUnschedulable) {
        out.status = s;  // a later Unschedulable replaces an earlier one; keep going
        out.failed_plugin = p->Name();
        continue;
      }
      if (!s.IsSuccess()) {
        out.status = s.refused ? s : PluginStatus::Error("running PreFilter plugin \"" + std::string(p->Name()) + "\": " + s.Message());
        out.failed_plugin = p->Name();
        break;
      }
      if (restricts) {
        std::sort(nodes.begin(), nodes.end());
        if (!out.restricted) {
          out.allowed = std::move(nodes);
        } else {
          std::vector<NodeIndex> both;
          std::set_intersection(out.allowed.begin(), out.allowed.end(), nodes.begin(), nodes.end(),
                                std::back_inserter(both));
          out.allowed = std::move(both);
        }
        out.restricted = true;
        out.restricting_plugins.push_back(p->Name());
        if (out.allowed.empty()) {
          std::vector<std::string> names = out.restricting_plugins;
          std::sort(names.begin(), names.end());
          std::string msg;
          if (names.size() == 1) {
            msg = "node(s) didn't satisfy plugin " + names[0];
          } else {
            msg = "node(s) didn't satisfy plugin(s) [";
            for (size_t k = 0; k < names.size(); ++k) msg += (k ? " " : "") + names[k];
            msg += "] simultaneously";
          }
          out.status = PluginStatus::Make(Code::kUnschedulableAndUnresolvable, msg);
          out.failed_plugin.clear();
          break;
        }
      }
    }
    for (size_t f = 0; f < filter_.size(); ++f) {
      out.skip_filter[f] =
          std::find(skipped.begin(), skipped.end(), std::string_view(filter_[f]->Name())) != skipped.end();
    }
    return out;
  }

 public:
  std::vector<PluginPreFilter> PreFilterEach(const Pod& pod) override {
    StartPod(pod);
    std::vector<PluginPreFilter> out;
    out.reserve(pre_filter_.size());
    for (engine::Plugin* p : pre_filter_) {
      PluginPreFilter one;
      one.plugin = p->Name();
      one.status = p->PreFilter(pod, *snapshot_, &one.nodes, &one.restricts);
      if (!one.restricts) one.nodes.clear();
      std::sort(one.nodes.begin(), one.nodes.end());
      if (one.restricts) {
        if (const std::vector<std::string>* names = p->PreFilterNodeNames()) {
          one.names = *names;
        } else {
          for (NodeIndex i : one.nodes) one.names.push_back(snapshot_->node(i).meta.name);
        }
        std::sort(one.names.begin(), one.names.end());
      }
      out.push_back(std::move(one));
    }
    return out;
  }

  FilterResult Filter(const PreFilterResult& pre) override {
    const int32_t n = snapshot_->num_nodes();
    failed_.assign(n, int16_t{0});
    code_.assign(n, VerdictCode{0});
    codes_.resize(n);
    auto first = thrust::make_zip_iterator(thrust::make_tuple(failed_.begin(), code_.begin()));
    for (size_t f = 0; f < filter_.size(); ++f) {
      if (pre.skip_filter[f]) continue;
      filter_[f]->Filter(n, Ptr(codes_));
      thrust::transform(policy(), first, first + n, codes_.begin(), first,
                        FirstFailureFn{static_cast<int16_t>(f + 1)});
    }
    FilterResult out;
    out.failed_plugin.resize(n);
    out.code.resize(n);
    if (n > 0) {  // Thrust binds a reference to the first output element even for none
      thrust::copy(failed_.begin(), failed_.end(), out.failed_plugin.begin());
      thrust::copy(code_.begin(), code_.end(), out.code.begin());
    }
    return out;
  }

  void FilterNodes(const PreFilterResult& pre, const std::vector<NodeIndex>& nodes, FilterResult* out) override {
    out->failed_plugin.clear();
    out->code.clear();
    if (nodes.empty()) return;
    FirstFailureOn(pre.skip_filter, nodes);
    out->failed_plugin.assign(listed_failed_.begin(), listed_failed_.end());
    out->code.assign(listed_code_.begin(), listed_code_.end());
  }

  void FilterEachOn(const PreFilterResult& pre, const std::vector<NodeIndex>& nodes,
                    std::vector<VerdictCode>* out) override {
    const size_t num = filter_.size();
    const int32_t c = static_cast<int32_t>(nodes.size());
    out->assign(nodes.size() * num, VerdictCode{0});
    if (c == 0) return;
    const NodeIndex* listed = UploadScratch(nodes, &listed_nodes_);
    VerdictCode* codes = Scratch(&listed_codes_dev_, c);
    std::vector<VerdictCode>& host = listed_code_;
    host.resize(c);
    for (size_t f = 0; f < num; ++f) {
      if (pre.skip_filter[f]) continue;
      PluginCodesOn(f, listed, c, codes);
      Download(listed_codes_dev_, c, host.data());
      for (int32_t j = 0; j < c; ++j) (*out)[j * num + f] = host[j];
    }
  }

  bool FilterReadsPods(int f) const override { return filter_[f]->FilterReadsPods(); }

  bool FilterWithout(int f, NodeIndex node, const std::vector<const Pod*>& removed, VerdictCode current,
                     VerdictCode* code) override {
    if (!filter_[f]->FilterReadsPods()) {
      *code = current;
      return true;
    }
    return filter_[f]->FilterWithout(node, removed, current, *snapshot_, code);
  }

  std::vector<std::vector<VerdictCode>> FilterEach() override {
    const int32_t n = snapshot_->num_nodes();
    codes_.resize(n);
    std::vector<std::vector<VerdictCode>> out(filter_.size(), std::vector<VerdictCode>(n));
    for (size_t f = 0; n > 0 && f < filter_.size(); ++f) {
      filter_[f]->Filter(n, Ptr(codes_));
      thrust::copy(codes_.begin(), codes_.end(), out[f].begin());
    }
    return out;
  }

  PluginStatus Verdict(int plugin, VerdictCode code) const override {
    return filter_[plugin]->Verdict(code);
  }

  ScoreResult Score(const std::vector<NodeIndex>& feasible) override {
    ScoreResult out;
    ScoreInto(feasible, /*per_plugin=*/true, &out);
    return out;
  }

  void ScoreTotals(const std::vector<NodeIndex>& feasible, ScoreResult* out) override {
    ScoreInto(feasible, /*per_plugin=*/false, out);
  }

  void Normalize(const std::vector<std::vector<int64_t>>& raw, const std::vector<bool>& skipped,
                 ScoreResult* out) override {
    const int32_t count = raw.empty() ? 0 : static_cast<int32_t>(raw[0].size());
    out->status = PluginStatus::Success();
    out->skipped = skipped;
    out->raw = raw;
    out->normalized.assign(score_.size(), std::vector<int64_t>(count, 0));
    out->total.assign(count, 0);
    Resize(&scores_, static_cast<size_t>(count));
    for (size_t k = 0; k < score_.size() && count > 0; ++k) {
      if (skipped[k]) continue;
      thrust::copy(raw[k].begin(), raw[k].end(), scores_.begin());
      score_[k]->NormalizeScore(count, Ptr(scores_));
      thrust::copy(scores_.begin(), scores_.end(), out->normalized[k].begin());
      for (int32_t j = 0; j < count; ++j) out->total[j] += profile_.score[k].weight * out->normalized[k][j];
    }
  }

  void Bind(const Pod& pod, NodeIndex node) override {
    // The controller owns the snapshot; it records the pod before notifying plugins.
    for (auto& [name, plugin] : by_name_) plugin->OnBind(pod, node, *snapshot_);
    ForgetNode(node);
  }

  bool Unbind(const Pod& pod, NodeIndex node) override {
    bool kept = true;
    for (auto& entry : by_name_) {
      if (entry.second->OnUnbind(pod, node, *snapshot_)) continue;
      Remake(&entry);
      kept = false;
    }
    ForgetNode(node);
    return kept;
  }

  void UpdateNode(NodeIndex node, const Node& old) override {
    for (auto& entry : by_name_) {
      if (!entry.second->OnNodeUpdate(node, old, *snapshot_)) Remake(&entry);
    }
    ForgetNode(node);
  }

  void AddNode(NodeIndex node) override {
    for (auto& entry : by_name_) {
      if (!entry.second->OnNodeAdd(node, *snapshot_)) Remake(&entry);
    }
  }

  void NamespacesChanged() override {
    for (auto& entry : by_name_) {
      if (!entry.second->OnNamespacesChange(*snapshot_)) Remake(&entry);
    }
  }

 private:
  // A plugin that could not undo a bind in place is created and prepared again over the
  // snapshot, which is what a fresh framework would hold.
  void Remake(std::pair<std::string, std::unique_ptr<engine::Plugin>>* entry) {
    std::string error;
    auto fresh = engine::MakePlugin(KPLACE_BACKEND_ID, entry->first, profile_.args, gates_, &error);
    if (!fresh) throw std::runtime_error("creating " + entry->first + " again: " + error);  // it was created before
    fresh->Prepare(*snapshot_);
    engine::Plugin* old = entry->second.get();
    for (auto* list : {&pre_filter_, &filter_, &pre_score_, &score_}) std::replace(list->begin(), list->end(), old, fresh.get());
    entry->second = std::move(fresh);
  }

  // What the current run keeps about `node` is stale after a bind or unbind there.
  void ForgetNode(NodeIndex node) {
    run_local_valid_.Unmark(node);
    for (ScoreCache& c : run_scores_) c.valid.Unmark(node);
    static_valid_.Unmark(node);
    if (static_cast<size_t>(node) < ready_.size()) {
      ready_[node] = -1;
      bound_since_.push_back(node);
    }
  }

 public:
  void BeginRun(const Pod& first) override {
    run_first_ = &first;
    after_single_ = run_pods_ == 1;
    run_pods_ = 0;
    for (auto& [name, plugin] : by_name_) {
      if (plugin->NodeLocal()) plugin->StartPod(first, *snapshot_);
    }
    run_pre_filter_.assign(pre_filter_.size(), PreFilterMemo{});
    run_pre_score_.assign(pre_score_.size(), std::nullopt);
    run_filter_valid_ = false;
    LeaveLocalOnly();
    window_sums_held_ = false;
    for (ScoreCache& c : run_scores_) c.valid.Stop();
    static_valid_.Stop();
  }

  void FilterRun(const PreFilterResult& pre, const std::vector<NodeIndex>& nodes, FilterResult* out) override {
    if (Unkept()) {
      FilterNodes(pre, nodes, out);
      return;
    }
    const bool any_other = HoldLocal(pre, nodes.data(), static_cast<int32_t>(nodes.size()));
    const size_t c = nodes.size();
    out->failed_plugin.resize(c);
    out->code.resize(c);
    for (size_t j = 0; j < c; ++j) {
      out->failed_plugin[j] = run_local_.failed_plugin[nodes[j]];
      out->code[j] = run_local_.code[nodes[j]];
    }
    if (!any_other || c == 0) return;
    // The other plugins on the listed nodes; per node the earlier plugin in Filter order
    // wins, as in Filter.
    FirstFailureOn(run_skip_other_, nodes);
    for (size_t j = 0; j < c; ++j) {
      const int16_t other = listed_failed_[j];
      if (other != 0 && (out->failed_plugin[j] == 0 || other < out->failed_plugin[j])) {
        out->failed_plugin[j] = other;
        out->code[j] = listed_code_[j];
      }
    }
  }

  void ScanLocal(const PreFilterResult& pre, const std::vector<NodeIndex>& cand, int32_t pos, int32_t k,
                 engine::Scan* out) override {
    const int32_t m = static_cast<int32_t>(cand.size());
    out->feasible.clear();
    out->rejected.clear();
    out->total.clear();
    out->error = false;
    out->processed = m;
    HoldLocal(pre, nullptr, 0);  // lays out the run's verdict arrays
    // After the run's first ScoreRun the plain sums it keeps are known: the scan holds them
    // for the feasible nodes, and when every score plugin of the run adds a plain or a
    // constant score it writes the totals too (ScoreRun is then not needed).
    const bool sums = local_only_ && !static_valid_.empty();
    const bool totals = sums && local_totals_;
    out->scored = totals;
    std::vector<NodeIndex>& unsummed = sums_missing_;
    std::vector<int32_t>& unsummed_at = sums_missing_at_;
    unsummed.clear();
    unsummed_at.clear();
    // Written through raw pointers into buffers that only grow: the loop is the batched
    // path's per-pod pass. Copied out at the end.
    const size_t most = static_cast<size_t>(std::max(0, std::min(k, m)));
    if (scan_nodes_.size() < most) scan_nodes_.resize(most);
    if (scan_totals_.size() < most) scan_totals_.resize(most);
    NodeIndex* feasible = scan_nodes_.data();
    int64_t* total = scan_totals_.data();
    const NodeIndex* list = cand.data();
    const uint32_t* held = run_local_valid_.stamps();
    const uint32_t held_epoch = run_local_valid_.epoch();
    const int16_t* failed = run_local_.failed_plugin.data();
    const VerdictCode* code = run_local_.code.data();
    uint32_t* sum_held = static_valid_.stamps();
    const uint32_t sum_epoch = static_valid_.epoch();
    const int64_t* sum = static_sum_host_.data();
    const int64_t offset = local_offset_;
    if (totals && ready_.size() != static_cast<size_t>(snapshot_->num_nodes())) {
      ready_.assign(snapshot_->num_nodes(), -1);
    }
    int64_t* ready = ready_.data();
    if (totals && bound_since_.size() >= kReadyAgainBatch) ReadyAgain(pre);
    int64_t max_total = std::numeric_limits<int64_t>::min();
    int32_t found = 0;
    bool stop = false;
    // The list from pos to its end, then from its start to pos; v counts the visited.
    for (int32_t part = 0, v = 0; part < 2 && !stop; ++part) {
      const int32_t to = part == 0 ? m : pos;
      for (int32_t p = part == 0 ? pos : 0; p < to; ++p, ++v) {
        if (totals) {
          // The common case in a tight loop: feasible nodes whose total is known, up to k.
          // The node it stops at (total not known, or the k found) takes the general path.
          int32_t q = p;
          for (int64_t t; q < to && found < k && (t = ready[list[q]]) >= 0; ++q, ++found) {
            feasible[found] = list[q];
            total[found] = t;
            max_total = std::max(max_total, t);
          }
          v += q - p;
          p = q;
          if (p == to) break;
        }
        const NodeIndex i = list[p];
        if (held[i] != held_epoch) {  // this node and the next ones in scan order, at once
          const int32_t c = std::min<int32_t>(kHoldAhead, m - v);
          ahead_.resize(c);
          for (int32_t j = 0, q = p; j < c; ++j, q = q + 1 == m ? 0 : q + 1) ahead_[j] = list[q];
          HoldLocal(pre, ahead_.data(), c);
        }
        const int16_t f = failed[i];
        if (f != 0) {
          if (!engine::CountRejection(*this, f, code[i], out)) {
            stop = true;
            break;
          }
          continue;
        }
        if (found == k) {  // the (k+1)-th: evaluated, dropped
          out->processed = v;
          stop = true;
          break;
        }
        feasible[found] = i;
        if (sums && sum_held[i] != sum_epoch) {
          sum_held[i] = sum_epoch;
          unsummed.push_back(i);
          unsummed_at.push_back(found);
        } else if (totals) {
          total[found] = ready[i] = sum[i] + offset;
          max_total = std::max(max_total, total[found]);
        }
        ++found;
      }
    }
    out->feasible.assign(feasible, feasible + found);
    if (!sums) {
      window_sums_held_ = false;
      return;
    }
    ScoreStatic(unsummed);
    window_sums_held_ = true;
    if (!totals) return;
    for (size_t j = 0; j < unsummed.size(); ++j) {
      const int64_t t = ready[unsummed[j]] = sum[unsummed[j]] + offset;
      total[unsummed_at[j]] = t;
      max_total = std::max(max_total, t);
    }
    out->total.assign(total, total + found);
    out->max_total = max_total;
  }

  void ScoreRun(const std::vector<NodeIndex>& feasible, ScoreResult* result) override {
    if (Unkept()) {
      ScoreInto(feasible, /*per_plugin=*/false, result);
      return;
    }
    ScoreResult& out = *result;
    out.status = PluginStatus::Success();
    const int32_t count = static_cast<int32_t>(feasible.size());
    out.skipped.assign(score_.size(), false);
    if (!RunPreScore(feasible, &out, /*in_run=*/true)) return;
    const NodeIndex* window = UploadScratch(feasible, &run_window_);
    int64_t* scores = Scratch(&run_window_scores_, count);
    int64_t* total = Scratch(&run_total_, count);
    // Node-local plugins without NormalizeScore add weight * raw whatever the window is:
    // their weighted sum is kept per node for the run and gathered as the starting total.
    // Plugins whose normalized score is the same on every node add a constant.
    uint64_t plain = 0, constant = 0;
    int64_t offset = 0;
    for (size_t k = 0; k < score_.size(); ++k) {
      if (out.skipped[k]) continue;
      int64_t value = 0;
      if (k < 64 && (score_[k]->NodeLocal() ? score_[k]->ConstantScore(&value) : LocalOnlyConstant(score_[k], &value))) {
        constant |= uint64_t{1} << k;
        offset += profile_.score[k].weight * value;
      } else if (PlainScore(k)) {
        plain |= uint64_t{1} << k;
      }
    }
    if (plain != 0) {
      StaticTotals(plain, feasible, window, offset, total);
    } else {
      FillN(total, count, offset);
    }
    if (local_only_ && plain != 0) {
      bool all = true;
      for (size_t k = 0; k < score_.size(); ++k) all = all && (out.skipped[k] || ((plain | constant) >> k & 1));
      if (all != local_totals_ || offset != local_offset_) ForgetReady();
      local_totals_ = all;
      local_offset_ = offset;
    }
    if (run_scores_.size() != score_.size()) run_scores_.assign(score_.size(), ScoreCache{});
    for (size_t k = 0; k < score_.size(); ++k) {
      if (out.skipped[k] || ((plain | constant) >> k & 1)) continue;
      if (score_[k]->NodeLocal()) {
        CachedRawScores(k, feasible, window, scores);
      } else {
        score_[k]->Score(window, count, scores);
      }
      score_[k]->NormalizeScore(count, scores);
      WithPolicy(
          count, [&](auto p) { thrust::transform(p, total, total + count, scores, total, AddWeightedFn{profile_.score[k].weight}); },
          kOmpLightSerialBelow);
    }
    out.total.resize(count);
    Download(run_total_, count, out.total.data());
  }

 private:
  /** Raw scores of one node-local score plugin, per node, for the current run. */
  struct ScoreCache {
    NodeMarks valid;  // host; empty until the run first scores with the plugin
    vector<int64_t> raw;         // backend, indexed by node
  };

  /** The run's first pod after a run of one pod: likely one of a stream of distinct pods,
   *  for which the per-node caches of a run cost more than they save (a pod after a longer
   *  run fills them, as the run's later pods read them). */
  bool Unkept() const { return run_pods_ == 1 && after_single_; }

  /** Makes run_local_ hold the node-local Filter plugins' first failure for the listed
   *  nodes (computed on a node's first visit in the run, and again after a bind to it);
   *  sets run_skip_other_ to the plugins that are not node-local and `pre` skips, and
   *  returns whether any of them runs. */
  bool HoldLocal(const PreFilterResult& pre, const NodeIndex* nodes, int32_t count) {
    const int32_t n = snapshot_->num_nodes();
    std::vector<bool>& local_skip = run_skip_local_;  // node-local plugins this pod does not run
    std::vector<bool>& other_skip = run_skip_other_;  // the other plugins it does not run
    local_skip.assign(filter_.size(), true);
    other_skip.assign(filter_.size(), true);
    bool any_other = false;
    for (size_t f = 0; f < filter_.size(); ++f) {
      if (pre.skip_filter[f]) continue;
      if (filter_[f]->NodeLocal()) {
        local_skip[f] = false;
      } else {
        other_skip[f] = false;
        any_other = true;
      }
    }
    if (!run_filter_valid_ || local_skip != run_local_skip_) {
      run_local_skip_ = local_skip;
      run_filter_valid_ = true;
      run_local_valid_.Start(n);
      ForgetReady();
      run_local_.failed_plugin.resize(n);
      run_local_.code.resize(n);
    }
    CollectMissing(nodes, count, &run_local_valid_);
    if (!missing_.empty()) {
      FirstFailureOn(local_skip, missing_);
      for (size_t j = 0; j < missing_.size(); ++j) {
        run_local_.failed_plugin[missing_[j]] = listed_failed_[j];
        run_local_.code[missing_[j]] = listed_code_[j];
      }
    }
    return any_other;
  }

  /** PreScore of every PreScore plugin, in order; false (with out->status) on an error. */
  bool RunPreScore(const std::vector<NodeIndex>& feasible, ScoreResult* out, bool in_run = false) {
    for (size_t i = 0; i < pre_score_.size(); ++i) {
      engine::Plugin* p = pre_score_[i];
      PluginStatus s;
      if (in_run && p->NodeLocal()) {  // PreScore of the run's first pod, once
        std::optional<PluginStatus>& memo = run_pre_score_[i];
        if (!memo) memo = p->PreScore(*run_first_, *snapshot_, feasible);
        s = *memo;
      } else if (in_run && local_only_) {
        s = LocalOnlyConstant(p, nullptr) ? PluginStatus::Success() : PluginStatus::Skip();
      } else {
        s = p->PreScore(*pod_, *snapshot_, feasible);
      }
      if (!out->pre_score_status.empty()) out->pre_score_status[i] = s;
      if (s.IsSkip()) {
        for (size_t k = 0; k < score_.size(); ++k) {
          if (score_[k] == p) out->skipped[k] = true;
        }
        continue;
      }
      if (!s.IsSuccess()) {
        out->status = PluginStatus::Error("running PreScore plugin \"" + std::string(p->Name()) + "\": " + s.Message());
        return false;
      }
    }
    return true;
  }

  // Score, with each plugin's raw and normalized scores kept only when `per_plugin`; `out`'s
  // buffers are reused. The weighted sum is serial below kOmpLightSerialBelow nodes: a
  // parallel region per plugin costs more than the adds.
  void ScoreInto(const std::vector<NodeIndex>& feasible, bool per_plugin, ScoreResult* out) {
    const int32_t count = static_cast<int32_t>(feasible.size());
    out->status = PluginStatus::Success();
    out->skipped.assign(score_.size(), false);
    if (per_plugin) {
      out->raw.assign(score_.size(), std::vector<int64_t>(count, 0));
      out->normalized = out->raw;
    } else {  // totals alone: no per-node row to build and drop for every pod
      out->raw.clear();
      out->normalized.clear();
    }
    out->total.assign(count, 0);
    out->pre_score_status.assign(pre_score_.size(), PluginStatus::Success());
    const auto pre_score_start = std::chrono::steady_clock::now();
    const bool pre_scored = RunPreScore(feasible, out);
    out->pre_score_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - pre_score_start).count();
    if (!pre_scored || count == 0) return;  // nothing to score or copy
    Upload(feasible, &nodes_);
    Resize(&scores_, static_cast<size_t>(count));
    int64_t* total = Scratch(&total_, count);
    // For totals alone, a plugin whose normalized score is one value on every node
    // (ConstantScore) adds it to the start of every total instead of scoring each node.
    uint64_t constant = 0;
    int64_t offset = 0;
    for (size_t k = 0; k < score_.size() && k < 64 && !per_plugin; ++k) {
      int64_t value = 0;
      if (out->skipped[k] || !score_[k]->ConstantScore(&value)) continue;
      constant |= uint64_t{1} << k;
      offset += profile_.score[k].weight * value;
    }
    FillN(total, count, offset);
    int64_t* scores = Ptr(scores_);
    for (size_t k = 0; k < score_.size(); ++k) {
      if (out->skipped[k] || (k < 64 && (constant >> k & 1))) continue;
      score_[k]->Score(Ptr(nodes_), count, scores);
      if (per_plugin) thrust::copy(scores_.begin(), scores_.end(), out->raw[k].begin());
      score_[k]->NormalizeScore(count, scores);
      if (per_plugin) thrust::copy(scores_.begin(), scores_.end(), out->normalized[k].begin());
      WithPolicy(
          count,
          [&](auto p) { thrust::transform(p, total, total + count, scores, total, AddWeightedFn{profile_.score[k].weight}); },
          kOmpLightSerialBelow);
    }
    Download(total_, count, out->total.data());
  }

  /** Filter plugin f's verdict codes of the `c` nodes at `listed` (backend memory) into
   *  `codes`. Plugins without FilterNodes filter every node once per pod and are gathered. */
  void PluginCodesOn(size_t f, const NodeIndex* listed, int32_t c, VerdictCode* codes) {
    if (pod_full_.size() != filter_.size()) pod_full_.resize(filter_.size());
    if (filter_[f]->FilterNodes(listed, c, codes)) return;
    PodFilter& full = pod_full_[f];
    if (full.pod != pod_count_) {
      const int32_t n = snapshot_->num_nodes();
      filter_[f]->Filter(n, Scratch(&full.codes, n));
      full.pod = pod_count_;
    }
    const VerdictCode* all = Ptr(full.codes);
    WithPolicy(c, [&](auto p) { thrust::gather(p, listed, listed + c, all, codes); }, kOmpLightSerialBelow);
  }

  /** First failure per listed node over the Filter plugins not marked in `skip`, into
   *  listed_failed_ / listed_code_ (host). Plugins without FilterNodes filter every node
   *  once per pod and are gathered. */
  void FirstFailureOn(const std::vector<bool>& skip, const std::vector<NodeIndex>& nodes) {
    const int32_t c = static_cast<int32_t>(nodes.size());
    const NodeIndex* listed = UploadScratch(nodes, &listed_nodes_);
    int16_t* failed = Scratch(&listed_failed_dev_, c);
    VerdictCode* code = Scratch(&listed_code_dev_, c);
    VerdictCode* codes = Scratch(&listed_codes_dev_, c);
    FillN(failed, c, int16_t{0});
    FillN(code, c, VerdictCode{0});
    auto first = thrust::make_zip_iterator(thrust::make_tuple(failed, code));
    for (size_t f = 0; f < filter_.size(); ++f) {
      if (skip[f]) continue;
      PluginCodesOn(f, listed, c, codes);
      WithPolicy(
          c, [&](auto p) { thrust::transform(p, first, first + c, codes, first, FirstFailureFn{static_cast<int16_t>(f + 1)}); },
          kOmpLightSerialBelow);
    }
    listed_failed_.resize(c);
    listed_code_.resize(c);
    Download(listed_failed_dev_, c, listed_failed_.data());
    Download(listed_code_dev_, c, listed_code_.data());
  }

  /** Writes score plugin k's raw scores of `feasible` (also at `window` in backend memory)
   *  to `scores` from the run's cache, scoring the nodes it does not hold yet. */
  void CachedRawScores(size_t k, const std::vector<NodeIndex>& feasible, const NodeIndex* window, int64_t* scores) {
    const int32_t n = snapshot_->num_nodes();
    ScoreCache& c = run_scores_[k];
    if (c.valid.empty()) {
      c.valid.Start(n);
      Scratch(&c.raw, n);
    }
    CollectMissing(feasible, &c.valid);
    int64_t* raw = Ptr(c.raw);
    if (!missing_.empty()) {
      const int32_t m = static_cast<int32_t>(missing_.size());
      const NodeIndex* at = UploadScratch(missing_, &missing_nodes_);
      int64_t* scored = Scratch(&missing_scores_, m);
      score_[k]->Score(at, m, scored);
      WithPolicy(m, [&](auto p) { thrust::scatter(p, scored, scored + m, at, raw); }, kOmpLightSerialBelow);
    }
    const int32_t count = static_cast<int32_t>(feasible.size());
    WithPolicy(count, [&](auto p) { thrust::gather(p, window, window + count, raw, scores); }, kOmpLightSerialBelow);
  }

  /** Sets missing_ to the listed nodes `held` does not mark yet, and marks them: what a
   *  run-wide per-node cache must compute before it is read. */
  void CollectMissing(const NodeIndex* nodes, int32_t count, NodeMarks* held) {
    missing_.clear();
    for (int32_t j = 0; j < count; ++j) {
      const NodeIndex i = nodes[j];
      if (!held->held(i)) {
        held->Mark(i);
        missing_.push_back(i);
      }
    }
  }
  void CollectMissing(const std::vector<NodeIndex>& nodes, NodeMarks* held) {
    CollectMissing(nodes.data(), static_cast<int32_t>(nodes.size()), held);
  }

  /** Whether every plugin that is not node-local skips `pod` at its PreFilter and PreScore
   *  points (or scores a constant there, noted in `*constant`) and says that holds for the
   *  run (Plugin::SkipHoldsForRun); when not, `*which` (if given) names the plugin. */
  bool OthersSkip(const Pod& pod, const std::vector<NodeIndex>& candidates,
                  std::vector<std::pair<const engine::Plugin*, int64_t>>* constant, std::string* which) {
    auto has = [](const std::vector<engine::Plugin*>& at, engine::Plugin* p) {
      return std::find(at.begin(), at.end(), p) != at.end();
    };
    for (auto& [name, plugin] : by_name_) {
      engine::Plugin* p = plugin.get();
      if (p->NodeLocal()) continue;
      if (which) *which = name;
      const bool pre_filter = has(pre_filter_, p), pre_score = has(pre_score_, p);
      if ((has(filter_, p) && !pre_filter) || (has(score_, p) && !pre_score)) return false;
      if (!pre_filter && !pre_score) continue;
      p->StartPod(pod, *snapshot_);
      std::vector<NodeIndex> nodes;
      bool restricts = false;
      if (pre_filter && !p->PreFilter(pod, *snapshot_, &nodes, &restricts).IsSkip()) return false;
      if (pre_score) {
        const PluginStatus s = p->PreScore(pod, *snapshot_, candidates);
        int64_t value = 0;
        if (s.IsSuccess() && p->ConstantScore(&value)) {
          constant->emplace_back(p, value);
        } else if (!s.IsSkip()) {
          return false;
        }
      }
      if (!p->SkipHoldsForRun(pod)) return false;
    }
    return true;
  }

  /** In a local-only run: plugin p (not node-local) scores `*value` on every node. */
  bool LocalOnlyConstant(const engine::Plugin* p, int64_t* value) const {
    if (!local_only_) return false;
    for (const auto& [plugin, v] : local_constant_) {
      if (plugin != p) continue;
      if (value) *value = v;
      return true;
    }
    return false;
  }

  /** Score plugin k keeps raw scores across a run and has no NormalizeScore. */
  bool PlainScore(size_t k) const {
    return k < 64 && score_[k]->NodeLocal() && !(score_[k]->ExtensionPoints() & kNormalizeScorePoint);
  }

  /** Writes to `total` `offset` plus the weighted sum of the `plain` plugins' raw scores of
   *  `feasible` (also at `window`), from the run's per-node sums, scoring the nodes not
   *  held yet. */
  void StaticTotals(uint64_t plain, const std::vector<NodeIndex>& feasible, const NodeIndex* window, int64_t offset,
                    int64_t* total) {
    const int32_t n = snapshot_->num_nodes();
    if (static_valid_.empty() || static_plugins_ != plain) {
      static_valid_.Start(n);
      static_plugins_ = plain;
      Scratch(&static_sum_, n);
      static_sum_host_.resize(n);  // read only where static_valid_ holds the node
      ForgetReady();
      window_sums_held_ = false;
    }
    if (!window_sums_held_) {  // else ScanLocal saw to it
      CollectMissing(feasible, &static_valid_);
      ScoreStatic(missing_);
    }
    window_sums_held_ = false;
    const int64_t* sums = Ptr(static_sum_);
    const int32_t count = static_cast<int32_t>(feasible.size());
    WithPolicy(
        count, [&](auto p) { thrust::transform(p, window, window + count, total, GatherPlusFn{sums, offset}); },
        kOmpLightSerialBelow);
  }

  /** Drops what a local-only run keeps beyond the node-local caches. */
  void LeaveLocalOnly() {
    local_only_ = false;
    run_pre_valid_ = false;
    local_totals_ = false;
    ForgetReady();
  }

  void ForgetReady() {
    ready_.clear();
    bound_since_.clear();
  }

  /** Makes the nodes bound since the last call ready again (verdict, sum and total), all in
   *  one pass of each plugin: a bind makes one node a pod stale, and the scan reaches it
   *  only pods later (the window has moved on), so evaluating them together costs each
   *  kernel's per-call overhead once for several nodes. */
  void ReadyAgain(const PreFilterResult& pre) {
    HoldLocal(pre, bound_since_.data(), static_cast<int32_t>(bound_since_.size()));
    std::vector<NodeIndex>& unsummed = ready_again_;
    unsummed.clear();
    for (NodeIndex i : bound_since_) {
      if (run_local_.failed_plugin[i] == 0 && !static_valid_.held(i)) {
        static_valid_.Mark(i);
        unsummed.push_back(i);
      }
    }
    ScoreStatic(unsummed);
    for (NodeIndex i : bound_since_) {
      if (run_local_.failed_plugin[i] == 0) ready_[i] = static_sum_host_[i] + local_offset_;
    }
    bound_since_.clear();
  }

  /** Scores the listed nodes with the plain plugins of static_plugins_ into static_sum_. */
  void ScoreStatic(const std::vector<NodeIndex>& nodes) {
    if (nodes.empty()) return;
    const int32_t m = static_cast<int32_t>(nodes.size());
    const NodeIndex* at = UploadScratch(nodes, &missing_nodes_);
    int64_t* scored = Scratch(&missing_scores_, m);
    int64_t* sum = Scratch(&missing_sum_, m);
    FillN(sum, m, int64_t{0});
    for (size_t k = 0; k < score_.size(); ++k) {
      if (!(static_plugins_ >> k & 1)) continue;
      score_[k]->Score(at, m, scored);
      WithPolicy(
          m, [&](auto p) { thrust::transform(p, sum, sum + m, scored, sum, AddWeightedFn{profile_.score[k].weight}); },
          kOmpLightSerialBelow);
    }
    int64_t* sums = Ptr(static_sum_);
    WithPolicy(m, [&](auto p) { thrust::scatter(p, sum, sum + m, at, sums); }, kOmpLightSerialBelow);
    // The host copy ScanLocal reads.
    summed_.resize(m);
    Download(missing_sum_, m, summed_.data());
    for (int32_t j = 0; j < m; ++j) static_sum_host_[nodes[j]] = summed_[j];
  }

  void StartPod(const Pod& pod) {
    pod_ = &pod;
    ++pod_count_;
    for (auto& [name, plugin] : by_name_) plugin->StartPod(pod, *snapshot_);
  }

  engine::Plugin* Find(const std::string& name) {
    for (auto& [n, p] : by_name_) {
      if (n == name) return p.get();
    }
    return nullptr;
  }

  Profile profile_;
  FeatureGates gates_;
  const engine::Snapshot* snapshot_ = nullptr;
  const Pod* pod_ = nullptr;
  std::vector<std::pair<std::string, std::unique_ptr<engine::Plugin>>> by_name_;
  std::vector<engine::Plugin*> pre_filter_, filter_, pre_score_, score_;
  vector<int16_t> failed_;
  vector<VerdictCode> code_, codes_;
  vector<NodeIndex> nodes_;
  vector<int64_t> scores_, total_;

  // The current batched run (BeginRun): the node-local plugins' compiled pod, their first
  // failure per node and raw or summed scores per node, each with a per-node flag saying
  // it is held (cleared by a bind to the node). Backend buffers here only grow.
  const Pod* run_first_ = nullptr;
  // The run's pods so far (PreFilterRun), and whether the run before it had one (Unkept).
  int32_t run_pods_ = 0;
  bool after_single_ = false;
  std::vector<PreFilterMemo> run_pre_filter_;
  std::vector<std::optional<PluginStatus>> run_pre_score_;
  bool run_filter_valid_ = false;
  // A run only node-local plugins decide (LocalOnlyRun): plugins that are not node-local
  // are skipped, or add the constant kept here; the PreFilter result is computed once.
  bool local_only_ = false;
  std::vector<std::pair<const engine::Plugin*, int64_t>> local_constant_;
  const std::vector<NodeIndex>* local_candidates_ = nullptr;
  // KPLACE_BATCH_SELF_CHECK=1: local-only runs check their premise on every pod.
  const bool self_check_ = [] {
    const char* v = std::getenv("KPLACE_BATCH_SELF_CHECK");
    return v != nullptr && std::string(v) == "1";
  }();
  bool run_pre_valid_ = false;
  PreFilterResult run_pre_;
  std::vector<std::string_view> pre_skipped_;  // RunPreFilter's buffers, kept across pods
  std::vector<NodeIndex> pre_nodes_;
  std::vector<bool> run_local_skip_, run_skip_local_, run_skip_other_;
  FilterResult run_local_;
  NodeMarks run_local_valid_;  // run_local_ holds node i's verdict
  std::vector<NodeIndex> missing_;
  std::vector<ScoreCache> run_scores_;
  vector<NodeIndex> run_window_, listed_nodes_, missing_nodes_;
  vector<int64_t> run_window_scores_, run_total_, missing_scores_, missing_sum_;
  // The run's weighted sum of plain (node-local, not normalized) raw scores per node.
  NodeMarks static_valid_;
  uint64_t static_plugins_ = 0;
  std::vector<int64_t> static_sum_host_, summed_;  // static_sum_ in host memory
  bool window_sums_held_ = false;  // ScanLocal made the current window's sums held
  std::vector<NodeIndex> sums_missing_, ahead_;
  std::vector<int32_t> sums_missing_at_;
  // A local-only run whose score plugins all add plain or constant scores: ScanLocal
  // writes the totals, the plain sum plus this offset.
  bool local_totals_ = false;
  int64_t local_offset_ = 0;
  // In that case, per node: its total when it is feasible and its verdict and sum are
  // held, else -1 (totals are never negative). Empty until the run's first such scan.
  std::vector<int64_t> ready_;
  std::vector<NodeIndex> bound_since_, ready_again_;  // bound since ready_ last saw to them
  static constexpr size_t kReadyAgainBatch = 8;
  std::vector<NodeIndex> scan_nodes_;  // ScanLocal's buffers
  std::vector<int64_t> scan_totals_;
  // ScanLocal evaluates a node not held yet together with this many after it.
  static constexpr int32_t kHoldAhead = 64;
  vector<int64_t> static_sum_;
  vector<int16_t> listed_failed_dev_;
  vector<VerdictCode> listed_code_dev_, listed_codes_dev_;
  std::vector<int16_t> listed_failed_;
  std::vector<VerdictCode> listed_code_;
  // Plugins that are not node-local and filter only every node at once: their codes for the
  // current pod (pod == pod_count_), computed on the first chunk that needs them.
  struct PodFilter {
    uint64_t pod = 0;
    vector<VerdictCode> codes;
  };
  std::vector<PodFilter> pod_full_;
  uint64_t pod_count_ = 0;  // pods seen by PreFilter/PreFilterEach
};

}  // namespace

std::unique_ptr<engine::Framework> MakeFramework(const Profile& profile, const FeatureGates& gates,
                                                 std::string* error) {
  auto fw = std::make_unique<BackendFramework>(profile, gates);
  if (!fw->Init(error)) return nullptr;
  return fw;
}

}  // namespace kplace::KPLACE_BACKEND_NS
