#include "kplace/cycle/scheduler.h"

#include <algorithm>
#include <chrono>
#include <map>
#include <optional>
#include <stdexcept>
#include <utility>

#if defined(_OPENMP)
#include <omp.h>
#endif

#include "cycle_scheduler.h"
#include "kplace/common/status.h"
#include "kplace/common/strings.h"
#include "kplace/cycle/engine_dry_run.h"
#include "kplace/cycle/node_order.h"
#include "kplace/model/decode.h"

namespace kplace::cycle {
namespace {

// The cycle's ranking as upstream's heap (feasible order): pops the chosen node, leaves
// the rest in `*rest` with each node's raw scores for a later rescoring.
size_t RankForBatch(const std::vector<NodeIndex>& feasible, const Evaluator::ScoreOutcome& scores, ScoreHeap* rest) {
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

}  // namespace

CycleScheduler::CycleScheduler(const ObjectSet& cluster, const SchedulerConfig& config, const Options& options)
    : config_(config),
      options_(options),
      state_(cluster, options.gates, options.reference),
      rng_(options.seed),
      preempt_rng_(options.seed),
      next_start_(options.start_index) {}

absl::Status CycleScheduler::Init() {
  // Alpha gates of the PodGroup cycle kplace does not model: on, decisions would differ.
  for (const char* gate : {"TopologyAwareWorkloadScheduling", "CompositePodGroup", "PodGroupPreemptionPolicy"}) {
    if (options_.gates.Enabled(gate)) {
      return absl::InvalidArgumentError(
          StrCat("feature gate ", gate, "=true is not modelled by kplace (alpha in v1.37, off by default; docs/podgroup.md)"));
    }
  }
  for (const Profile& p : config_.profiles) {
    auto e = std::make_unique<ReferenceEvaluator>(p, &state_.reference_state());
    KPLACE_RETURN_IF_ERROR(e->Init(options_.gates));
    dry_.push_back(std::move(e));
    // Upstream's hints pick by its heap, so a run with random tie-breaks has none.
    const bool unsigned_plugin = std::find(options_.unsigned_profiles.begin(), options_.unsigned_profiles.end(),
                                           p.scheduler_name) != options_.unsigned_profiles.end();
    signs_.push_back(options_.gates.Enabled("OpportunisticBatching") && options_.tie_break == TieBreak::kHeap &&
                     ProfileSignsPods(p, options_.gates, unsigned_plugin));
    signers_.emplace_back(p, options_.gates);
    host_.push_back(HostPlugins::For(p, options_.gates));
  }
  opp_.resize(config_.profiles.size());
  return state_.Attach(this);
}

// --- what the cluster tells ----------------------------------------------------------

void CycleScheduler::Rebuilding() {
  evaluators_.clear();
  batches_.clear();
  selective_.clear();
}

absl::Status CycleScheduler::Rebuilt() {
  for (auto& b : batches_) b->AddStats(&retired_stats_);
  batches_.clear();
  selective_.clear();
  evaluators_.clear();
  if (options_.reference) {
    for (const Profile& p : config_.profiles) {
      auto e = std::make_unique<ReferenceEvaluator>(p, &state_.reference_state());
      KPLACE_RETURN_IF_ERROR(e->Init(options_.gates));
      evaluators_.push_back(std::move(e));
    }
    return absl::OkStatus();
  }
  for (const Profile& p : config_.profiles) {
    std::string error;
    auto fw = engine::Framework::Create(options_.backend, p, options_.gates, &error);
    if (!fw) return absl::InvalidArgumentError(StrCat("profile \"", p.scheduler_name, "\": ", error));
    fw->Prepare(*state_.snapshot());
    evaluators_.push_back(std::make_unique<EngineEvaluator>(std::move(fw), options_.backend == engine::Backend::kOmp));
  }
  selective_.resize(evaluators_.size());
  RestartAllBatches();
  if (options_.batch > 1 && !options_.explain) {
    batches_.resize(evaluators_.size());
    for (size_t e = 0; e < evaluators_.size(); ++e) RestartBatch(e);
  }
  return absl::OkStatus();
}

void CycleScheduler::RowsRenumbered(const std::function<int32_t(int32_t)>& row) {
  for (OpportunisticBatch& b : opp_) b.Remap(row);
  for (Savepoint& sp : savepoints_) {
    for (OpportunisticBatch& b : sp.opp) b.Remap(row);
  }
}

void CycleScheduler::PodAdded(const Pod& pod, NodeIndex i, bool assumed) {
  for (size_t e = 0; e < evaluators_.size(); ++e) engine_evaluator(e).framework().Bind(pod, i);
  // The cycle that assumed the pod keeps its batched runs as they are (ScheduleBatched).
  if (!assumed) {
    for (auto& b : batches_) b->NoteOtherBind();
  }
}

void CycleScheduler::PodRemoved(const Pod& pod, NodeIndex i) {
  bool kept = true;
  for (size_t e = 0; e < evaluators_.size(); ++e) kept = engine_evaluator(e).framework().Unbind(pod, i) && kept;
  for (size_t e = 0; e < batches_.size(); ++e) {
    if (kept) {
      batches_[e]->NoteOtherBind();
    } else {
      RestartBatch(e);
    }
  }
}

void CycleScheduler::NodeAdded(NodeIndex i) {
  for (size_t e = 0; e < evaluators_.size(); ++e) engine_evaluator(e).framework().AddNode(i);
  RestartAllBatches();
}

void CycleScheduler::NodeChanged(NodeIndex i, const Node& old) {
  for (size_t e = 0; e < evaluators_.size(); ++e) engine_evaluator(e).framework().UpdateNode(i, old);
  RestartAllBatches();
}

void CycleScheduler::ObjectsChanged(bool namespaces) {
  if (namespaces) {
    for (size_t e = 0; e < evaluators_.size(); ++e) engine_evaluator(e).framework().NamespacesChanged();
  }
  RestartAllBatches();  // runs compiled against the old objects start again
}

void CycleScheduler::Begun() {
  savepoints_.push_back(Savepoint{next_start_, rng_, preempt_rng_, opp_, cycle_});
}

void CycleScheduler::Committed() { savepoints_.pop_back(); }

void CycleScheduler::Reverting() {
  Savepoint sp = std::move(savepoints_.back());
  savepoints_.pop_back();
  next_start_ = sp.next_start;
  rng_ = sp.rng;
  preempt_rng_ = sp.preempt_rng;
  opp_ = std::move(sp.opp);
  cycle_ = sp.cycle;
}

// --- the scheduler's own state ---------------------------------------------------------

int64_t CycleScheduler::hinted_pods() const {
  int64_t n = 0;
  for (const OpportunisticBatch& b : opp_) n += b.hinted_pods();
  return n;
}

BatchStats CycleScheduler::batch_stats() const {
  BatchStats out = retired_stats_;
  for (const auto& b : batches_) b->AddStats(&out);
  return out;
}

void CycleScheduler::SetExplain(bool on) {
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

void CycleScheduler::RestartBatch(size_t e) {
  if (batches_.empty()) return;
  if (batches_[e]) batches_[e]->AddStats(&retired_stats_);
  batches_[e] = std::make_unique<BatchCycle>(&engine_evaluator(e).framework(), &state_.order(), options_.batch,
                                             state_.snapshot());
}

void CycleScheduler::RestartAllBatches() {
  for (size_t e = 0; e < batches_.size(); ++e) RestartBatch(e);
  for (size_t e = 0; e < selective_.size(); ++e) {
    selective_[e] = std::make_unique<SelectiveScan>(engine_evaluator(e).framework().filter_plugins(),
                                                    state_.snapshot(), &state_.order());
  }
}

// --- the cycle ---------------------------------------------------------------------------

Placement CycleScheduler::Schedule(const Pod& pod) {
  Placement out;
  out.pod = ObjectKey(pod.meta);
  const size_t ev_index = ProfileOf(pod);
  if (ev_index == evaluators_.size()) {
    out.other_scheduler = true;
    out.code = Code::kSkip;
    out.message = StrCat("left alone: no profile has schedulerName \"", pod.scheduler_name, "\"");
    return out;
  }
  if (const Pod* bound = state_.FindBoundPod(out.pod)) {  // binding it again would lose the pod it has
    out.code = Code::kError;
    out.message = StrCat("Pod ", out.pod, " is already bound to node ", bound->node_name);
    return out;
  }
  if (!PreEnqueue(pod, ev_index, &out)) return out;  // a rejected pod never enters a cycle
  return ScheduleAdmitted(pod, *evaluators_[ev_index], ev_index, std::move(out));
}

Placement CycleScheduler::ScheduleAdmitted(const Pod& pod, Evaluator& ev_ref, size_t ev_index, Placement out) {
  Evaluator* ev = &ev_ref;
  ++cycle_;  // upstream's scheduling cycle counter, shared by the profiles
  expired_cycle_ = std::exchange(expire_batch_, false) ? cycle_ : -1;
  const int32_t n = static_cast<int32_t>(state_.order().size());
  if (n == 0) {
    out.code = Code::kUnschedulableAndUnresolvable;
    out.message = "no nodes available to schedule pods";
    return out;
  }
  // The pod's own nomination from an earlier cycle, when it has one.
  const Pod* nominated_self = state_.Nomination(out.pod);
  const Pod& p = nominated_self ? *nominated_self : pod;
  if (!batches_.empty()) {
    // Batched runs know nothing of nominated pods: while any exist, pods go one at a time.
    // Nor of OpportunisticBatching's hints, which change decisions: profiles that sign
    // pods take the per-pod cycle, which gives them.
    // Nor of objects a bind writes (PreBind), which later pods see: such pods go alone.
    if (state_.nominated().empty() && !signs_[ev_index] && !host_[ev_index].WritesAtBind(pod)) {
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

// Per node: whether a pending pod nominated there counts when filtering `pod` (empty when
// no node has one).
std::vector<bool> CycleScheduler::NominatedFor(const Pod& pod) const {
  std::vector<bool> out;
  for (const auto& [key, q] : state_.nominated()) {
    if (!NominatedCountsFor(q, pod)) continue;
    const NodeIndex i = state_.Row(q.nominated_node_name);
    if (i == engine::kNoId) continue;
    out.resize(objects().nodes.size(), false);  // by row
    out[i] = true;
  }
  return out;
}

std::unique_ptr<ReferenceDryRunHost> CycleScheduler::MakeHost(size_t ev_index) {
  std::vector<const Pod*> nominated;
  for (const auto& [key, q] : state_.nominated()) nominated.push_back(&q);
  ReferenceEvaluator& r = *dry_[ev_index];
  return std::make_unique<ReferenceDryRunHost>(state_.ReferenceView(), r.Plugins(r.profile().pre_filter),
                                               r.Plugins(r.profile().filter), std::move(nominated));
}

Placement CycleScheduler::ScheduleOne(const Pod& pod, Evaluator& ev_ref, size_t ev_index, Placement out) {
  const OnOneThread serial(!options_.reference && options_.backend == engine::Backend::kOmp);
  Evaluator* ev = &ev_ref;
  const int32_t n = static_cast<int32_t>(state_.order().size());
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
    return TimedPostFilter(pod, ev, ev_index, statuses,
                           host_[ev_index].AfterPreFilter(ev->profile(), pre.status.code, pre.rejectors),
                           std::move(out));
  }

  // A node's status for this pod: nominated pods that count there make the reference
  // filter it with them (RunFilterPluginsWithNominatedPods).
  std::unique_ptr<ReferenceDryRunHost> host;
  const std::vector<bool> nominated_on = NominatedFor(pod);
  auto node_status = [&](NodeIndex i, std::string* plugin) {
    return NodeStatus(pod, ev, ev_index, nominated_on, &host, i, plugin);
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
    if (!pod.nominated_node_name.empty()) target = state_.Row(pod.nominated_node_name);
    if (target != engine::kNoId) {
      PluginStatus s = node_status(target, &fast_plugin);
      if (s.code == Code::kError) {
        out.code = Code::kError;
        out.message = s.Message();
        return out;
      }
      if (s.IsSuccess()) {
        ObjectSet writes;
        if (!PreBind(pod, ev_index, &writes, &out)) return out;
        out.feasible = 1;
        out.node = objects().nodes[target].meta.name;
        out.hinted = target == hint;
        filter_timer.reset();
        {
          const PointTimer timer(times, kTimedReserve);
          Bind(pod, target);
        }
        if (batch) batch->Store(cycle_, std::nullopt, hint, target, nullptr, {});  // no ranking to keep
        Write(std::move(writes), &out);
        return out;
      }
      fast_failed = target;
      fast_status = std::move(s);
    }
  }

  // Candidates in scan order: the whole round-robin list, or the PreFilter subset.
  std::vector<NodeIndex> restricted;
  if (pre.restricted) restricted = RestrictedOrder(state_.order(), pre.allowed);
  const std::vector<NodeIndex>& candidates = pre.restricted ? restricted : state_.order();
  const int32_t m = static_cast<int32_t>(candidates.size());
  const int32_t percentage = ev->profile().percentage_of_nodes_to_score.value_or(config_.percentage_of_nodes_to_score);
  const bool has_score = !ev->profile().score.empty();
  const int32_t k = has_score ? NumFeasibleNodesToFind(percentage, m) : std::min(1, m);

  std::vector<NodeIndex> feasible, rejected;
  std::map<std::string, int64_t> reasons;
  std::vector<std::string> rejectors = pre.rejectors;
  int32_t processed = m;
  const bool any_nominated = !nominated_on.empty();
  // The nodes the pod's node affinity names, when only those can pass (SelectiveScan): the
  // same feasible nodes, stop and advance, with no status kept for the nodes left out, so
  // not when a node's status is shown (explain), filtered with nominated pods, or asked
  // before the scan (fast_failed, which counts unless the scan rejects it).
  SelectiveScan* selective = nullptr;
  if (!explain && !any_nominated && fast_failed == engine::kNoId && m > 0 && !selective_.empty() &&
      selective_[ev_index]->Applies(engine_evaluator(ev_index).pre_filter()) &&
      selective_[ev_index]->Select(pod, next_start_ % m)) {
    selective = selective_[ev_index].get();
  }
  // Visited: visit[(visit_start + v) % size] for v = 0, 1, ...
  const std::vector<NodeIndex>* visit = selective ? &selective->nodes() : &candidates;
  int32_t visit_start = selective || m == 0 ? 0 : next_start_ % m;
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
  for (;;) {
    const int32_t len = static_cast<int32_t>(visit->size());
    if (len > 0) ev->BeginScan(visit, visit_start, k, state_.snapshot() ? state_.snapshot()->num_nodes() : 0);
    for (int32_t v = 0, at = visit_start; v < len; ++v, at = at + 1 == len ? 0 : at + 1) {
      const NodeIndex i = (*visit)[at];
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
          processed = selective ? selective->Processed(v) : v;
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
    if (selective == nullptr || !feasible.empty()) break;
    // Nothing fits among the selected nodes: the scan over every candidate counts every
    // rejection for the FitError and PostFilter (the evaluator keeps the verdicts it found).
    selective = nullptr;
    visit = &candidates;
    visit_start = next_start_ % m;
    rejected.clear();
    verdicts.clear();
    verdict_of.clear();
    last_key = -1;
    last_entry = -1;
  }
  if (explain) ExplainShortfalls(pod, explain.get());
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
    // Each PostFilter plugin on the host learns which nodes its own Filter rejected.
    std::vector<HostPlugin::PostFilterInput> inputs = host_[ev_index].AfterFilter();
    for (size_t h = 0; h < inputs.size(); ++h) {
      const std::string& name = host_[ev_index].post_filter()[h]->name();
      std::vector<char> by_it(verdicts.size());  // per verdict, not per node: one name compare each
      for (size_t e = 0; e < verdicts.size(); ++e) by_it[e] = verdicts[e].plugin == name;
      if (std::find(by_it.begin(), by_it.end(), 1) == by_it.end()) continue;
      for (size_t j = 0; j < rejected.size(); ++j) {
        if (by_it[verdict_of[j]]) inputs[h].rejected.push_back(&objects().nodes[rejected[j]]);
      }
    }
    // Nodes rejected alike share their verdict's status (VerdictKey: equal statuses).
    for (Verdicts& e : verdicts) statuses.Add(std::move(e.status));
    statuses.of_row.assign(objects().nodes.size(), -1);  // one allocation, not one per row
    for (size_t j = 0; j < rejected.size(); ++j) statuses.Set(rejected[j], verdict_of[j]);
    return TimedPostFilter(pod, ev, ev_index, statuses, std::move(inputs), std::move(out));
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
  ObjectSet writes;
  if (!PreBind(pod, ev_index, &writes, &out)) return out;
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
  Write(std::move(writes), &out);
  return out;
}

// GetNodeHint: the head of the profile's ranking when the pod may take it, after the last
// chosen node is filtered for it and, still feasible, scored again and ranked anew.
NodeIndex CycleScheduler::BatchHint(const Pod& pod, Evaluator& ev, size_t ev_index, OpportunisticBatch& batch) {
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
  if (!state_.LiveRow(last)) return none();
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
  return state_.LiveRow(top) ? top : engine::kNoId;
}

// Reserve and bind: the reference's Reserve plugins (VolumeBinding's assumptions) run
// before the pod joins its node; on the engine the cluster tells every profile's plugins.
void CycleScheduler::Bind(const Pod& pod, NodeIndex host) {
  if (options_.reference) {
    for (auto& e : evaluators_) static_cast<ReferenceEvaluator*>(e.get())->Reserve(pod, host);
  }
  state_.AssumePod(pod, host);
}

Placement CycleScheduler::ScheduleBatched(const Pod& pod, BatchCycle& batch, const Profile& profile, Placement out) {
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
